"""``export_meta_graph`` and ``import_meta_graph``: a graph, its saver and its collections in one
file (TensorFlow's ``MetaGraphDef``, the ``.meta`` files ``Saver.save`` writes), so that a new
process can rebuild the model and go on training it from a checkpoint with nothing else built.

What travels: every op (the GraphDef), the saver (its ``SaverDef``), and the collections TensorFlow
1 programs use -- the variables of ``GLOBAL_VARIABLES``, ``TRAINABLE_VARIABLES``,
``LOCAL_VARIABLES``, ``MODEL_VARIABLES``, ... as TensorFlow's ``VariableDef`` messages (so
``global_variables()``, ``trainable_variables()`` and ``global_variables_initializer()`` work after
an import, optimizers' slots and the global step included), ops and tensors by name
(``train_op``, losses, summaries, anything added with ``add_to_collection``), numbers and
strings. What does not: Python objects other than those (a collection of them is left out with a
warning), the graph-level random seed, and ops a GraphDef cannot hold (``py_function``).

The files are TensorFlow's: a meta graph opweave writes imports into TensorFlow 1
(``tf.compat.v1.train.import_meta_graph``), graph and collections, and one TensorFlow writes
imports into opweave for the ops opweave has. The checkpoint files differ
(``docs/checkpoint_format.md``): TensorFlow's saver ops are replaced by an opweave saver over the
same variables under the same keys, which reads and writes opweave's checkpoints.

>>> import os, tempfile, opweave as tf
>>> d = tempfile.mkdtemp()
>>> with tf.Graph().as_default():
...     w = tf.Variable([1.0, 2.0], name="w")
...     tf.add_to_collection("outputs", tf.identity(w * 2.0, name="doubled"))
...     saver = tf.train.Saver()
...     with tf.Session() as sess:
...         sess.run(tf.global_variables_initializer())
...         path = saver.save(sess, os.path.join(d, "model.ckpt"))
>>> with tf.Graph().as_default():
...     saver = tf.train.import_meta_graph(path + ".meta")
...     with tf.Session() as sess:
...         saver.restore(sess, path)
...         print([v.name for v in tf.global_variables()], sess.run(tf.get_collection("outputs")))
['w:0'] [array([2., 4.], dtype=float32)]
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .. import _tf_logging as logging
from ..framework import Graph, Tensor, get_default_graph
from ..graphdef._meta_graph import (
    SaverPlan,
    as_meta_graph_def,
    create_meta_graph_def,
    import_meta_graph_into,
)
from ..ops.variables import global_variables
from ._checkpoint_format import atomic_write_bytes
from .saver import Saver

__all__ = ["export_meta_graph", "import_meta_graph"]

_EXPORT_KWARGS = ("unbound_inputs_col_name",)
_IMPORT_KWARGS = (
    "graph",
    "input_map",
    "unbound_inputs_col_name",
    "restore_collections_predicate",
    "return_elements",
)


def _unexpected(function: str, kwargs: Mapping[str, Any], allowed: Iterable[str]) -> None:
    for key in kwargs:
        if key not in allowed:
            raise TypeError(f"{function}() got an unexpected keyword argument {key!r}")


def export_meta_graph(
    filename: str | os.PathLike[str] | None = None,
    meta_info_def: Any = None,
    graph_def: Any = None,
    saver_def: Any = None,
    collection_list: Iterable[str] | None = None,
    as_text: bool = False,
    graph: Graph | None = None,
    export_scope: str | None = None,
    clear_devices: bool = False,
    clear_extraneous_savers: bool = False,
    strip_default_attrs: bool = False,
    save_debug_info: bool = False,
    **kwargs: Any,
) -> Any:
    """The graph, a saver and the collections as a ``MetaGraphDef``, written to ``filename``
    when given (TensorFlow 1's ``tf.train.export_meta_graph``).

    Parameters
    ----------
    filename : str or path, optional
        Where to write it (binary, or text format with ``as_text``). The file is replaced
        atomically: a temporary file beside it, flushed to the disk, renamed. Its folder is
        created when missing.
    meta_info_def : MetaGraphDef.MetaInfoDef, optional
        Tags and other metadata to record.
    graph_def : GraphDef, optional
        The graph to write (default: ``graph``'s, with its static shapes).
    saver_def : SaverDef, optional
        The saver to record (``saver.saver_def``; ``Saver.export_meta_graph`` passes its own).
    collection_list : list of str, optional
        The collections to write (default: all). A collection whose items have no
        ``CollectionDef`` form is left out with a warning.
    as_text : bool, default False
    graph : Graph, optional
        Default: the default graph.
    export_scope : str, optional
        Write only the ops under this name scope, without it in their names; inputs from
        outside become ``$unbound_inputs_<name>``, listed in the ``unbound_inputs`` collection
        (``import_meta_graph`` then needs them in ``input_map``).
    clear_devices : bool, default False
        Write no device placements.
    clear_extraneous_savers : bool, default False
        Leave out the ops and ``SAVERS`` entries of savers other than ``saver_def``'s.
    strip_default_attrs : bool, default False
        Leave out attributes whose value is their op's default.
    save_debug_info : bool, default False
        Accepted; opweave records no creation stack traces for ops, so no ``.debug`` file is
        written.
    **kwargs
        ``unbound_inputs_col_name`` (default ``"unbound_inputs"``).

    Returns
    -------
    MetaGraphDef

    Raises
    ------
    TypeError
        An argument of the wrong type (a ``saver_def`` that is not a SaverDef, ...).
    ValueError
        The graph holds an op a GraphDef cannot hold (a ``py_function``).
    ImportError
        The ``protobuf`` package is not installed.

    Examples
    --------
    >>> import opweave as tf
    >>> with tf.Graph().as_default():
    ...     v = tf.Variable(1.0, name="v")
    ...     meta = tf.train.export_meta_graph()
    >>> sorted(meta.collection_def), [n.name for n in meta.graph_def.node]
    (['trainable_variables', 'variables'], ['v/initial_value', 'v', 'v/Assign', 'v/read'])
    """
    del save_debug_info
    _unexpected("export_meta_graph", kwargs, _EXPORT_KWARGS)
    if graph is None:
        graph = get_default_graph()
    elif not isinstance(graph, Graph):
        raise TypeError(f"graph must be of type Graph. Received type: {type(graph)}.")
    if export_scope is not None and not isinstance(export_scope, str):
        raise TypeError(f"export_scope must be a string, got {export_scope!r}")
    if collection_list is not None:
        if isinstance(collection_list, str):
            raise TypeError("collection_list must be a list of collection names, not a string")
        collection_list = list(collection_list)
    meta = create_meta_graph_def(
        graph,
        graph_def=graph_def,
        meta_info_def=meta_info_def,
        saver_def=saver_def,
        collection_list=collection_list,
        export_scope=export_scope,
        clear_devices=bool(clear_devices),
        clear_extraneous_savers=bool(clear_extraneous_savers),
        strip_default_attrs=bool(strip_default_attrs),
        unbound_inputs_col_name=kwargs.get("unbound_inputs_col_name", "unbound_inputs"),
    )
    if filename is not None:
        path = os.fsdecode(os.fspath(filename))
        if as_text:
            from google.protobuf import text_format

            data = text_format.MessageToString(meta).encode("utf-8")
        else:
            data = meta.SerializeToString()
        folder = os.path.dirname(path)
        if folder:
            os.makedirs(folder, exist_ok=True)
        atomic_write_bytes(path, data)
    return meta


def _make_saver(plan: SaverPlan) -> Saver:
    """The saver of a meta graph, in the graph it was imported into (the default graph)."""
    sd = plan.saver_def
    if plan.opweave_names is not None:
        restore_op, names_op, filename, save_tensor = plan.elements
        return Saver._from_graph_elements(sd, restore_op, names_op, filename, save_tensor)
    # TensorFlow's saver: the same variables under the same keys, in the same name scope, in
    # opweave's checkpoint format.
    g = get_default_graph()
    with g.name_scope(None):
        return Saver(
            var_list=dict(plan.variables),
            name=plan.target_scope or None,
            max_to_keep=int(sd.max_to_keep),
            keep_checkpoint_every_n_hours=float(sd.keep_checkpoint_every_n_hours),
            sharded=bool(sd.sharded),
            write_version=int(sd.version),
        )


def import_meta_graph(
    meta_graph_or_file: Any,
    clear_devices: bool = False,
    import_scope: str | None = None,
    **kwargs: Any,
) -> Saver | None:
    """Rebuild a graph from a ``MetaGraphDef`` in the default graph, with its collections, and
    return its saver (TensorFlow 1's ``tf.train.import_meta_graph``).

    Parameters
    ----------
    meta_graph_or_file : MetaGraphDef, bytes or str
        The message (opweave's or TensorFlow's), its bytes, or a file (``model.ckpt-100.meta``;
        binary or text format).
    clear_devices : bool, default False
        Drop the device placements.
    import_scope : str, optional
        Import under this name scope (made unique). Default: the current name scope, with the
        meta graph's names (a name the graph already has gets ``_1``).
    **kwargs
        ``graph`` (import there instead), ``input_map`` (as :func:`opweave.import_graph_def`;
        required for the ``unbound_inputs`` of a scoped export), ``unbound_inputs_col_name``,
        ``restore_collections_predicate`` (a function of the collection name: restore it or
        not), ``return_elements`` (checked, not returned, as in TensorFlow).

    Returns
    -------
    Saver or None
        The saver the meta graph records, rebuilt over the imported variables; without one, a
        new ``Saver()`` when the graph has global variables, else None (TensorFlow's rule).
        Restoring it from a checkpoint gives the variables their values in a session.

    Raises
    ------
    OSError
        The file does not exist.
    opweave.errors.DataLossError
        The file or bytes are not a MetaGraphDef, or a collection holds bytes that are not the
        message it should.
    opweave.graphdef.GraphDefError
        An ``InvalidArgumentError`` (and ValueError): the graph cannot be built, or a
        collection, variable or saver names what the graph does not have or is not what it
        says.
    opweave.errors.NotFoundError
        The graph uses an op opweave lacks (every missing op type is named).
    ValueError
        Unbound inputs without ``input_map``.

    On any error nothing is imported: the graph is as it was.

    Notes
    -----
    A meta graph TensorFlow wrote has TensorFlow's saver ops (``SaveV2``, ``RestoreV2``),
    which read TensorFlow's checkpoint files; opweave does not read those
    (``docs/checkpoint_format.md``). They are left out, and the returned saver is an opweave
    saver over the same variables with the same checkpoint keys, in the same name scope.

    Examples
    --------
    >>> import opweave as tf
    >>> with tf.Graph().as_default():
    ...     step = tf.train.get_or_create_global_step()
    ...     meta = tf.train.export_meta_graph()
    >>> with tf.Graph().as_default():
    ...     _ = tf.train.import_meta_graph(meta, import_scope="restored")
    ...     print(tf.train.get_global_step().name, tf.global_variables()[0].trainable)
    restored/global_step:0 False
    """
    _unexpected("import_meta_graph", kwargs, _IMPORT_KWARGS)
    if import_scope is not None and not isinstance(import_scope, str):
        raise TypeError(f"import_scope must be a string, got {import_scope!r}")
    graph = kwargs.get("graph") or get_default_graph()
    if not isinstance(graph, Graph):
        raise TypeError(f"graph must be of type Graph. Received type: {type(graph)}.")
    predicate: Callable[[str], bool] = kwargs.get("restore_collections_predicate", lambda key: True)
    meta = as_meta_graph_def(meta_graph_or_file)
    input_map: Mapping[str, Tensor] | None = kwargs.get("input_map")
    with graph.as_default():
        imported = import_meta_graph_into(
            graph,
            meta,
            _make_saver,
            import_scope=import_scope,
            input_map=input_map,
            clear_devices=bool(clear_devices),
            unbound_inputs_col_name=kwargs.get("unbound_inputs_col_name", "unbound_inputs"),
            restore_collections_predicate=predicate,
            return_elements=list(kwargs.get("return_elements") or ()),
        )
        if imported.saver is not None:
            return imported.saver  # type: ignore[no-any-return]
        if global_variables(imported.result.prefix or None):
            return Saver()
    logging.info("Saver not created because there are no variables in the graph to restore")
    return None
