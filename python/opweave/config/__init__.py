"""Configuration: TensorFlow 1's protos and TensorFlow 2's ``tf.config.threading``.

- :class:`ConfigProto`, :class:`ThreadPoolOptionProto`, :class:`RunOptions`,
  :class:`RunMetadata` (and the step stats it holds): how a Session runs, with TensorFlow 1's
  field names and defaults (``opweave.ConfigProto`` is the same class); :class:`GraphOptions`,
  :class:`OptimizerOptions` and :class:`RewriterConfig`: the graph optimizer's switches;
- :mod:`opweave.config.threading`: ``tf.config.threading``'s four functions on opweave's pools.

>>> import opweave
>>> opweave.config.ConfigProto is opweave.ConfigProto
True
>>> opweave.config.threading.get_intra_op_parallelism_threads()  # doctest: +SKIP
0
"""

from __future__ import annotations

from . import threading
from ._protos import (
    ConfigProto,
    DeviceStepStats,
    GraphOptions,
    IntraOpChunk,
    NodeExecStats,
    OptimizerOptions,
    PartitionGraph,
    PoolConfigWarning,
    RewriterConfig,
    RunMetadata,
    RunOptions,
    StepStats,
    ThreadPoolOptionList,
    ThreadPoolOptionProto,
)

__all__ = [
    "ConfigProto",
    "DeviceStepStats",
    "GraphOptions",
    "IntraOpChunk",
    "NodeExecStats",
    "OptimizerOptions",
    "PartitionGraph",
    "PoolConfigWarning",
    "RewriterConfig",
    "RunMetadata",
    "RunOptions",
    "StepStats",
    "ThreadPoolOptionList",
    "ThreadPoolOptionProto",
    "threading",
]
