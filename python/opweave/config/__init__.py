"""TensorFlow-2-style configuration: ``opweave.config.threading`` mirrors ``tf.config.threading``.

>>> import opweave
>>> opweave.config.threading.get_intra_op_parallelism_threads()  # doctest: +SKIP
0
"""

from __future__ import annotations

from . import threading

__all__ = ["threading"]
