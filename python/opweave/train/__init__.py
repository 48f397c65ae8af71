"""``opweave.train``: TensorFlow 1's optimizers, the global step, checkpoints (``Saver``), meta
graphs (``export_meta_graph``, ``import_meta_graph``) and ``write_graph``.

>>> import opweave as tf
>>> with tf.Graph().as_default():
...     x = tf.placeholder(tf.float32, [None, 1])
...     y = tf.placeholder(tf.float32, [None, 1])
...     w = tf.Variable([[0.0]])
...     loss = tf.reduce_mean((tf.matmul(x, w) - y) * (tf.matmul(x, w) - y))
...     step = tf.train.get_or_create_global_step()
...     train = tf.train.AdamOptimizer(0.1).minimize(loss, global_step=step)
...     with tf.Session() as sess:
...         sess.run(tf.global_variables_initializer())
...         for _ in range(200):
...             _ = sess.run(train, {x: [[1.0], [2.0]], y: [[3.0], [6.0]]})
...         print(round(float(sess.run(w)[0, 0]), 2), sess.run(step))
3.0 200
>>> tf.train.write_graph is tf.graphdef.write_graph
True
"""

from __future__ import annotations

from ..graphdef import write_graph
from .adagrad import AdagradOptimizer
from .adam import AdamOptimizer
from .checkpoint_management import (
    checkpoint_exists,
    generate_checkpoint_state_proto,
    get_checkpoint_mtimes,
    get_checkpoint_state,
    latest_checkpoint,
    remove_checkpoint,
    update_checkpoint_state,
)
from .checkpoint_utils import (
    NewCheckpointReader,
    list_variables,
    load_checkpoint,
    load_variable,
)
from .gradient_descent import GradientDescentOptimizer
from .meta_graph import export_meta_graph, import_meta_graph
from .momentum import MomentumOptimizer
from .optimizer import Optimizer
from .rmsprop import RMSPropOptimizer
from .saver import Saver, SaverDef
from .training_util import (
    create_global_step,
    get_global_step,
    get_or_create_global_step,
    global_step,
)

__all__ = [
    "AdagradOptimizer",
    "AdamOptimizer",
    "GradientDescentOptimizer",
    "MomentumOptimizer",
    "NewCheckpointReader",
    "Optimizer",
    "RMSPropOptimizer",
    "Saver",
    "SaverDef",
    "checkpoint_exists",
    "create_global_step",
    "export_meta_graph",
    "generate_checkpoint_state_proto",
    "get_checkpoint_mtimes",
    "get_checkpoint_state",
    "get_global_step",
    "get_or_create_global_step",
    "global_step",
    "import_meta_graph",
    "latest_checkpoint",
    "list_variables",
    "load_checkpoint",
    "load_variable",
    "remove_checkpoint",
    "update_checkpoint_state",
    "write_graph",
]
