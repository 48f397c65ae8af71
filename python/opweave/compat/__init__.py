"""``opweave.compat``: TensorFlow's compatibility namespaces.

``import opweave.compat.v1 as tf`` gives the same API as ``import opweave as tf``: opweave is
TensorFlow 1's API, so ``compat.v1`` is opweave itself.

>>> import opweave.compat.v1 as tf
>>> tf.placeholder is __import__("opweave").placeholder
True
"""

from __future__ import annotations

from . import v1

__all__ = ["v1"]
