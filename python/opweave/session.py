"""Session: runs a Graph on the intra-op and inter-op pools.

>>> import opweave as ow
>>> g = ow.Graph()
>>> with g.as_default():
...     x = ow.placeholder(ow.float32, shape=(None,), name="x")
...     y = x * 2.0
>>> with ow.Session(graph=g) as sess:
...     sess.run({"y": y, "pair": (y, "x:0")}, feed_dict={x: [1.0, 2.0]})["y"]
array([2., 4.], dtype=float32)
"""

from __future__ import annotations

import collections
import contextlib
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, cast

import numpy as np

from . import _default_session, _optimizer, _runtime, errors
from . import _opweave_core as _core
from ._core_errors import call_core, raise_core_error
from ._flops import op_flops
from .config import (
    ConfigProto,
    DeviceStepStats,
    IntraOpChunk,
    NodeExecStats,
    PartitionGraph,
    RunMetadata,
    RunOptions,
    StepStats,
)
from .dtypes import implicit_array
from .framework import Graph, Operation, Shape, Tensor, get_default_graph

__all__ = ["InteractiveSession", "Session", "get_default_session"]

Fetchable = Tensor | Operation | str


def _tf_shape(shape: Shape) -> str:
    if shape is None:
        return "<unknown>"
    dims = ["?" if d is None else str(d) for d in shape]
    return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"


def _check_target(target: Any) -> None:
    """Only the in-process target exists: opweave has no distributed runtime to connect to."""
    if isinstance(target, bytes):
        target = _decode_name(target, "target")
    if not isinstance(target, str):
        raise TypeError(
            f"Session's first argument is TensorFlow's `target` (a str, '' for this process), "
            f"got {type(target).__name__}; pass the graph as graph=..."
        )
    if target not in ("", "local"):
        raise ValueError(
            f"opweave runs graphs in this process only: target must be '', got {target!r}"
        )


def _decode_name(name: bytes, what: str) -> str:
    try:
        return name.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{what} name {name!r} is not UTF-8") from None


def _compatible(shape: Shape, value_shape: tuple[int, ...]) -> bool:
    if shape is None:
        return True
    return len(shape) == len(value_shape) and all(
        d is None or d == v for d, v in zip(shape, value_shape, strict=True)
    )


class _Fetches:
    """A nested fetch structure, flattened once into unique tensors and target ops."""

    def __init__(self, graph: Graph, fetches: Any) -> None:
        self.graph = graph
        self.tensors: list[Tensor] = []
        self.targets: list[Operation] = []
        self._tensor_index: dict[int, int] = {}
        self._target_ids: set[int] = set()
        self.rebuild = self._flatten(fetches)
        # What Executor.run takes, computed once (make_callable reuses this object).
        self.fetch_ids = [(t.op._id, t.value_index) for t in self.tensors]
        self.target_ids = [op._id for op in self.targets]

    def _leaf(self, fetch: Fetchable) -> Callable[[list[np.ndarray]], Any]:
        try:
            el = self.graph.as_graph_element(fetch)
        except TypeError:
            raise TypeError(
                f"Fetch argument {fetch!r} has invalid type {type(fetch)}, must be a string or "
                "Tensor/Operation."
            ) from None
        except (KeyError, ValueError) as e:
            raise ValueError(f"Fetch argument {fetch!r} cannot be interpreted: {e}") from None
        if isinstance(el, Operation):
            if el._id not in self._target_ids:
                self._target_ids.add(el._id)
                self.targets.append(el)
            return lambda values: None
        index = self._tensor_index.get(id(el))
        if index is None:
            index = len(self.tensors)
            self._tensor_index[id(el)] = index
            self.tensors.append(el)
        i = index
        # As TensorFlow: a 0-d value comes back as a NumPy scalar (numpy.float32, ...), which
        # owns its memory like any fetch; other values as arrays.
        return lambda values: values[i][()] if values[i].ndim == 0 else values[i]

    def _flatten(self, fetches: Any) -> Callable[[list[np.ndarray]], Any]:
        if isinstance(fetches, bytes):  # TensorFlow takes names as bytes too
            fetches = _decode_name(fetches, "Fetch")
        if isinstance(fetches, (Tensor, Operation, str)) or hasattr(fetches, "_as_graph_element"):
            return self._leaf(fetches)  # a Variable stands for its value, as in TensorFlow 1
        if isinstance(fetches, Mapping):
            parts = {k: self._flatten(v) for k, v in fetches.items()}
            kind = type(fetches)
            # A defaultdict comes back as one with the same default_factory, as in TensorFlow.
            factory = (
                (fetches.default_factory,) if isinstance(fetches, collections.defaultdict) else ()
            )

            def build_dict(values: list[np.ndarray]) -> Any:
                built = {k: f(values) for k, f in parts.items()}
                return built if kind is dict else kind(*factory, built)  # type: ignore[call-arg]

            return build_dict
        if isinstance(fetches, (list, tuple)):
            items = [self._flatten(v) for v in fetches]
            if isinstance(fetches, tuple) and hasattr(fetches, "_fields"):  # namedtuple
                ntype = type(fetches)
                return lambda values: ntype(*[f(values) for f in items])
            seq_type = type(fetches)
            return lambda values: seq_type(f(values) for f in items)
        if fetches is None:
            raise TypeError("Fetch argument None has invalid type <class 'NoneType'>")
        raise TypeError(
            f"Fetch argument {fetches!r} has invalid type {type(fetches)}, must be a string or "
            "Tensor/Operation."
        )


_FETCH_CACHE_SIZE = 256  # single fetches remembered per session (cleared when full)


def get_default_session() -> Session | None:
    """The innermost session entered with ``with`` in this thread, or None."""
    return cast("Session | None", _default_session.innermost())


class Session:
    """Runs ops of a :class:`Graph`.

    Parameters
    ----------
    target : str, optional
        TensorFlow's execution engine address. opweave runs in this process only, so it must be
        ``""`` (the default), as for a local TensorFlow session.
    graph : Graph, optional
        Defaults to the default graph.
    config : ConfigProto, optional
        Pool sizes, placement and timeouts. The global pools are sized by the first session
        that uses them; a later session asking for other sizes gets a
        :class:`~opweave.config.PoolConfigWarning` naming the size in effect.

    Notes
    -----
    ``run`` releases the GIL for the whole run, so many Python threads may run one session at
    once. Ctrl-C during a run cancels it and raises ``KeyboardInterrupt``.

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     c = ow.constant([1.0, 2.0]) + 1.0
    ...     with ow.Session(config=ow.ConfigProto(inter_op_parallelism_threads=-1)) as s:
    ...         s.run(c)
    array([2., 3.], dtype=float32)
    """

    def __init__(
        self, target: str = "", graph: Graph | None = None, config: ConfigProto | None = None
    ) -> None:
        _check_target(target)
        if graph is None:
            graph = get_default_graph()
        if not isinstance(graph, Graph):
            raise TypeError(f"graph must be an opweave.Graph, got {type(graph).__name__}")
        if config is None:
            config = ConfigProto()
        if not isinstance(config, ConfigProto):
            raise TypeError(f"config must be an opweave.ConfigProto, got {type(config).__name__}")
        config._check_all()  # fields are checked when set; this catches containers changed since
        self._graph = graph
        self._config = config
        self._closed = False
        # Also records where each node is placed; the graph optimizer's switches are read now.
        self._executor = _core.Executor(graph._core, _optimizer.core_options(config))
        self._lock = threading.Lock()  # guards placement bookkeeping
        self._placed = 0
        n_cpu = max(1, config.device_count.get("CPU", 1))
        self._devices = [f"/device:CPU:{i}" for i in range(n_cpu)]
        self._exit_stack: contextlib.ExitStack | None = None
        self._fetch_cache: dict[Tensor | Operation | str, _Fetches] = {}
        self._pools = _runtime.SessionPools(config)

    @property
    def graph(self) -> Graph:
        """The graph this session runs."""
        return self._graph

    @property
    def graph_def(self) -> Any:
        """The session's graph as a TensorFlow ``GraphDef`` (``graph.as_graph_def()``)."""
        return self._graph.as_graph_def()

    @property
    def config(self) -> ConfigProto:
        """The ConfigProto the session was created with."""
        return self._config

    def list_devices(self) -> list[str]:
        """The devices ops may be placed on (``/device:CPU:0`` ...)."""
        return list(self._devices)

    # -- placement ------------------------------------------------------------------------------
    def _place_new_ops(self) -> None:
        if len(self._graph._ops) == self._placed:
            return  # fast path: nothing new (a racy read only delays the check to the lock)
        with self._lock:
            ops = self._graph.get_operations()[self._placed :]
            for op in ops:
                device = op.device or self._devices[0]
                if device not in self._devices:
                    if not self._config.allow_soft_placement:
                        raise errors.InvalidArgumentError(
                            op.name,
                            op.type,
                            f"Cannot assign a device for operation {op.name}: Could not satisfy "
                            f"explicit device specification '{op.device}' because no such device "
                            f"exists. Available devices: {', '.join(self._devices)}. Set "
                            "allow_soft_placement=True to place it on /device:CPU:0 instead.",
                        )
                    device = self._devices[0]
                self._executor.place(op.name, device)
                if self._config.log_device_placement:
                    print(
                        f"{op.name}: ({op.type}): /job:localhost/replica:0/task:0{device}",
                        file=sys.stderr,
                    )
                self._placed += 1

    # -- running --------------------------------------------------------------------------------
    def _feed_key(self, key: Any, where: str = "feed_dict") -> Tensor:
        """The tensor a feed key (tensor or ``"name:0"``) names; TypeError for anything else."""
        if isinstance(key, bytes):
            key = _decode_name(key, "Feed")
        try:
            t = self._graph.as_graph_element(key)
        except (TypeError, KeyError, ValueError) as e:
            raise TypeError(f"Cannot interpret {where} key {key!r} as a Tensor: {e}") from None
        if not isinstance(t, Tensor):
            raise TypeError(f"Cannot interpret {where} key {key!r} as a Tensor.")
        return t

    @staticmethod
    def _feed_value(t: Tensor, value: Any) -> tuple[int, int, np.ndarray]:
        dt = t.dtype
        if type(value) is np.ndarray and value.dtype == dt.as_numpy_dtype and dt.name != "string":
            arr = value  # already what implicit_array would return: skip its conversions
        elif isinstance(value, (Tensor, Operation)):
            raise TypeError(
                f"The value of a feed cannot be an opweave.{type(value).__name__} (feeding "
                f"{value.name!r} to {t.name!r}): feed a NumPy array, list or scalar, or run "
                "the tensor first."
            )
        else:
            try:
                arr = implicit_array(value, dt)
            except (TypeError, ValueError, OverflowError) as e:
                raise TypeError(
                    f"Cannot feed value for Tensor {t.name!r} of dtype {dt.name}: {e}"
                ) from None
        if not _compatible(t._shape, arr.shape):
            raise ValueError(
                f"Cannot feed value of shape {arr.shape} for Tensor {t.name!r}, which has "
                f"shape '{_tf_shape(t._shape)}'"
            )
        return (t.op._id, t.value_index, arr)

    def _feeds(self, feed_dict: Mapping[Any, Any] | None) -> list[tuple[int, int, np.ndarray]]:
        if not feed_dict:
            return []
        return [self._feed_value(self._feed_key(k), v) for k, v in feed_dict.items()]

    def _run(
        self,
        fetches: _Fetches,
        feeds: list[tuple[int, int, np.ndarray]],
        options: RunOptions | None,
        run_metadata: RunMetadata | None,
    ) -> Any:
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        if options is not None and not isinstance(options, RunOptions):
            raise TypeError("options must be an opweave.RunOptions")
        if run_metadata is not None and not isinstance(run_metadata, RunMetadata):
            raise TypeError("run_metadata must be an opweave.RunMetadata")
        self._place_new_ops()
        pool = self._pools.for_run(options.inter_op_thread_pool if options is not None else 0)
        timeout = self._config.operation_timeout_in_ms
        if options is not None and options.timeout_in_ms > 0:
            timeout = options.timeout_in_ms
        trace = (
            options is not None
            and options.trace_level != RunOptions.NO_TRACE
            and run_metadata is not None
        )
        partitions = (
            options is not None and options.output_partition_graphs and run_metadata is not None
        )
        # The graph the run executed: its structure for a trace (inputs of rewritten nodes), with
        # attribute values for partition_graphs.
        export = 2 if partitions else 1 if trace else 0
        try:
            values, stats, graph_nodes = call_core(
                self._executor.run,
                feeds,
                fetches.fetch_ids,
                fetches.target_ids,
                pool,
                timeout,
                trace,
                export,
            )
        except errors.OpError as e:
            e._attach_graph(self._graph)  # .op and .node_def, as TensorFlow's errors carry
            raise
        if trace and run_metadata is not None:
            run_metadata.step_stats = self._step_stats(stats or ([], {}), graph_nodes or [])
        if partitions and run_metadata is not None:
            run_metadata.partition_graphs = [PartitionGraph(list(graph_nodes or []))]
        return fetches.rebuild(values)

    def optimizer_report(self) -> _optimizer.OptimizerReport | None:
        """What the graph optimizer did to the signature this session compiled last.

        A signature (the feeds, fetches and targets of a run) is compiled, and optimized, on
        its first run; later runs reuse it. The report lists each pass with the node counts
        before and after it and each change it made (folded, merged, removed, rewritten), or
        says why nothing ran (``ConfigProto.graph_options`` switched the passes off, or the
        signature has fewer than ``min_graph_nodes`` nodes). None before the first run.

        Examples
        --------
        >>> import opweave as ow
        >>> with ow.Graph().as_default():
        ...     y = ow.identity(ow.constant(2.0) * 3.0 + 1.0, name="y")
        ...     with ow.Session() as sess:
        ...         print(sess.run(y))
        ...         print(sess.optimizer_report().nodes_after)
        7.0
        1
        """
        report = self._executor.optimizer_report()
        return None if report is None else _optimizer.OptimizerReport._from_core(report)

    def _step_stats(
        self,
        stats: tuple[list[_core.NodeStats], dict[int, str]],
        graph_nodes: list[dict[str, Any]],
    ) -> StepStats:
        nodes, thread_names = stats
        # Inputs as the executed graph has them (the optimizer may have rewired a node), a feed
        # named by the tensor fed rather than by the _Arg node that holds it.
        fed = {n["name"]: n["attr"]["tensor_name"] for n in graph_nodes if n["op"] == "_Arg"}

        def tensor_name(i: str) -> str:
            if i.startswith("^"):
                return i
            node, _, index = i.partition(":")
            return fed.get(node) or f"{node}:{index or 0}"

        inputs_of = {n["name"]: [tensor_name(i) for i in n["input"]] for n in graph_nodes}
        by_device: dict[str, list[NodeExecStats]] = {}
        for node in nodes:
            try:
                op: Operation | None = self._graph.get_operation_by_name(node.node_name)
            except KeyError:  # a node the optimizer made (a folded constant of a new name)
                op = None
            tid, ins, outs = node.thread_id, node.input_shapes, node.output_shapes
            inputs = inputs_of.get(node.node_name)
            if inputs is None:
                inputs = [] if op is None else [t.name for t in op.inputs]
                inputs += [] if op is None else [f"^{c.name}" for c in op.control_inputs]
            attrs = op.attrs if op is not None and op.type == node.op else {}
            by_device.setdefault(node.device, []).append(
                NodeExecStats(
                    node_name=node.node_name,
                    op=node.op,
                    scheduled_nanos=node.scheduled_nanos,
                    all_start_nanos=node.start_nanos,
                    all_end_nanos=node.end_nanos,
                    thread_id=tid,
                    thread_name=thread_names.get(tid, f"thread {tid}"),
                    device=node.device,
                    inputs=inputs,
                    input_shapes=list(ins),
                    output_shapes=list(outs),
                    output_dtypes=list(node.output_dtypes),
                    flops=op_flops(node.op, attrs, ins, outs),
                    intra_op_chunks=[
                        IntraOpChunk(c.begin, c.end, c.start_nanos, c.end_nanos, c.thread_id)
                        for c in node.chunks
                    ],
                    original_nodes=list(node.original_nodes),
                )
            )
        return StepStats(
            [
                DeviceStepStats(f"/job:localhost/replica:0/task:0{d}", s)
                for d, s in by_device.items()
            ],
            dict(thread_names),
        )

    def run(
        self,
        fetches: Any,
        feed_dict: Mapping[Any, Any] | None = None,
        options: RunOptions | None = None,
        run_metadata: RunMetadata | None = None,
    ) -> Any:
        """Run the ops needed for ``fetches`` and return their values.

        Parameters
        ----------
        fetches : Tensor, Operation, str, or nested list/tuple/dict of them
            ``"x:0"`` names a tensor and ``"x"`` an op. Ops come back as None, tensors as
            NumPy arrays, 0-d tensors as NumPy scalars (``numpy.float32`` ...), as in
            TensorFlow; the result has the structure of ``fetches``.
        feed_dict : dict, optional
            Tensor (or tensor name) -> value. Any tensor may be fed, not only placeholders;
            whatever lies only upstream of fed tensors does not run. Arrays whose dtype and
            layout fit are used without copying.
        options : RunOptions, optional
        run_metadata : RunMetadata, optional
            Receives ``step_stats`` when ``options.trace_level`` asks for tracing, and
            ``partition_graphs`` (the graph the run executed, after the graph optimizer) when
            ``options.output_partition_graphs`` is set.

        Returns
        -------
        The fetched values in the structure of ``fetches``.

        Raises
        ------
        opweave.errors.OpError
            A subclass naming the failing node and op; ``DeadlineExceededError`` when the run
            takes longer than the timeout. An exception raised in a py_function is re-raised as
            itself.
        KeyboardInterrupt
            On Ctrl-C; the run is cancelled first.

        Notes
        -----
        A deadline (``options.timeout_in_ms``, ``ConfigProto.operation_timeout_in_ms``) holds:
        the ops not started are cancelled, running kernels stop between the pieces of their
        parallel loops, and an op that cannot stop (a py_function that sleeps) is left to finish
        in the background -- its outputs dropped, the session usable, :meth:`close` waiting for
        it -- so ``DeadlineExceededError`` is raised within 100 ms of the deadline. In
        caller-thread mode (``inter_op_parallelism_threads < 0``, or a run made from inside a
        py_function) the deadline is checked between ops only. Ctrl-C cancels the ops not started
        and raises ``KeyboardInterrupt`` once the running ones return. A py_function may call
        ``run`` itself (it runs in that thread); calling it from a helper thread that the
        py_function waits for can hang when the inter-op pool is small, as in TensorFlow -- see
        :func:`opweave.py_function`.

        Examples
        --------
        >>> import opweave as ow
        >>> with ow.Graph().as_default():
        ...     a = ow.constant(3.0, name="a")
        ...     b = ow.identity(a, name="b")
        ...     with ow.Session() as s:
        ...         b_value, a_dict = s.run(["b:0", {"a": a}], feed_dict={a: 5.0})
        >>> print(b_value, type(b_value).__name__, a_dict["a"])
        5.0 float32 5.0
        """
        return self._run(self._fetches(fetches), self._feeds(feed_dict), options, run_metadata)

    def _fetches(self, fetches: Any) -> _Fetches:
        # A single tensor, op or name (the common case) is resolved once per session: the graph
        # only grows, so what a name resolves to never changes.
        if not isinstance(fetches, (Tensor, Operation, str)):
            return _Fetches(self._graph, fetches)
        prepared = self._fetch_cache.get(fetches)
        if prepared is None:
            prepared = _Fetches(self._graph, fetches)
            if len(self._fetch_cache) >= _FETCH_CACHE_SIZE:
                self._fetch_cache.clear()
            self._fetch_cache[fetches] = prepared
        return prepared

    def make_callable(
        self,
        fetches: Any,
        feed_list: Sequence[Any] | None = None,
        accept_options: bool = False,
    ) -> Callable[..., Any]:
        """A function that runs ``fetches`` with positional values for ``feed_list``.

        The fetch structure and the ``feed_list`` keys are resolved once, here, so repeated calls
        skip that work and a key that names no tensor is a TypeError at once (TensorFlow accepts
        it until the first call).

        Examples
        --------
        >>> import opweave as ow
        >>> with ow.Graph().as_default():
        ...     x = ow.placeholder(ow.int32, shape=())
        ...     with ow.Session() as s:
        ...         double = s.make_callable(x * 2, [x])
        ...         print(double(21))
        42
        """
        prepared = _Fetches(self._graph, fetches)
        if feed_list is not None and not isinstance(feed_list, (list, tuple)):
            raise TypeError(
                f"Argument `feed_list` must be a list or tuple. Received: feed_list={feed_list}"
            )
        targets = [self._feed_key(key, "feed_list") for key in feed_list or ()]
        # A tensor listed twice: as with a dict, the last value wins (the slow path below).
        distinct = len({id(t) for t in targets}) == len(targets)

        def call(
            *args: Any,
            options: RunOptions | None = None,
            run_metadata: RunMetadata | None = None,
        ) -> Any:
            if len(args) != len(targets):
                raise ValueError(f"expected {len(targets)} feed values, got {len(args)}")
            if not accept_options and (options is not None or run_metadata is not None):
                raise TypeError("this callable was made with accept_options=False")
            if distinct:
                feeds = [self._feed_value(t, v) for t, v in zip(targets, args, strict=True)]
            else:
                feeds = self._feeds(dict(zip(targets, args, strict=True)))
            return self._run(prepared, feeds, options, run_metadata)

        if not distinct:
            return call
        return self._fast_callable(prepared, targets, call)

    def _fast_callable(
        self, prepared: _Fetches, targets: list[Tensor], call: Callable[..., Any]
    ) -> Callable[..., Any]:
        """``call`` with a fast path for plain calls (no options): the signature goes to the core
        once (``PreparedRun``), which takes arrays (and NumPy scalars) of the right dtype and
        shape as they are and runs a small cheap graph in this thread. Anything else (options,
        values to convert, a wrong count, a closed session, new ops to place) takes ``call``,
        which checks and converts as ``Session.run`` does."""
        core = _core.PreparedRun(
            self._executor,
            [(t.op._id, t.value_index) for t in targets],
            prepared.fetch_ids,
            prepared.target_ids,
            [t.dtype._core for t in targets],
            [
                None if t._shape is None else [-1 if d is None else d for d in t._shape]
                for t in targets
            ],
        )
        rebuild = prepared.rebuild
        pools = self._pools
        graph = self._graph
        config = self._config

        def fast(*args: Any, **kwargs: Any) -> Any:
            if kwargs or self._closed or len(graph._ops) != self._placed:
                return call(*args, **kwargs)
            try:
                values = core.run(pools.for_run(0), config.operation_timeout_in_ms, *args)
            except _core.CoreError as exc:
                failure: BaseException = exc
            else:
                return call(*args) if values is None else rebuild(values)
            try:
                raise_core_error(failure)
            except errors.OpError as e:
                e._attach_graph(graph)  # .op and .node_def, as TensorFlow's errors carry
                raise

        return fast

    def as_default(self) -> contextlib.AbstractContextManager[Session]:
        """Make this the default session of this thread inside a ``with`` block.

        :meth:`Tensor.eval` and :meth:`Operation.run` without ``session=`` use the default
        session. Unlike ``with Session() as sess:``, leaving the block does not close the
        session. As in TensorFlow, the default graph is unchanged: to add ops to ``sess.graph``
        when it is not the default graph, also enter ``sess.graph.as_default()``.

        Examples
        --------
        >>> import opweave as ow
        >>> with ow.Graph().as_default():
        ...     c = ow.constant(2.0)
        ...     sess = ow.Session()
        >>> with sess.as_default():
        ...     print(c.eval())
        2.0
        >>> print(sess.run(c))  # still open
        2.0
        >>> sess.close()
        """
        return _default_session.entered(self)

    def close(self) -> None:
        """Cancel the runs in flight, release the session's own pools. Idempotent.

        Runs in flight in other threads raise ``CancelledError`` once their running ops return
        (as in TensorFlow); later runs raise RuntimeError. An op left running by a run that timed
        out (see :meth:`run`) is waited for: when ``close`` returns, nothing of this session runs.
        """
        self._closed = True
        self._executor.close()
        self._pools.close()

    def __enter__(self) -> Session:
        stack = contextlib.ExitStack()
        stack.enter_context(self._graph.as_default())
        stack.enter_context(_default_session.entered(self))
        self._exit_stack = stack
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._exit_stack is not None:
            self._exit_stack.close()
            self._exit_stack = None
        self.close()


class InteractiveSession(Session):
    """A Session that makes itself the default session when created, for shells and notebooks.

    As in TensorFlow 1, :meth:`Tensor.eval` and :meth:`Operation.run` work without a ``with``
    block once one exists; :meth:`close` stops it being the default. Its graph must be the
    default graph when ops are added to it (it is, unless ``graph=`` names another).

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     sess = ow.InteractiveSession()
    ...     c = ow.constant([1.0, 2.0]) * 2.0
    ...     print(c.eval())
    ...     sess.close()
    [2. 4.]
    """

    def __init__(
        self, target: str = "", graph: Graph | None = None, config: ConfigProto | None = None
    ) -> None:
        super().__init__(target, graph, config)
        self._default_thread: int | None = threading.get_ident()
        _default_session.push(self)

    def close(self) -> None:
        """Close the session and stop it being the default session. Idempotent; may be called
        from any thread."""
        thread, self._default_thread = self._default_thread, None
        if thread is not None:
            _default_session.remove(self, thread)
        super().close()
