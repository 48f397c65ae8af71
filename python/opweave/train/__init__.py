"""``opweave.train``: TensorFlow 1's ``tf.train`` names opweave has.

>>> import opweave as ow
>>> ow.train.write_graph is ow.graphdef.write_graph
True
"""

from __future__ import annotations

from ..graphdef import write_graph

__all__ = ["write_graph"]
