"""Session and run configuration with TensorFlow 1's field names and defaults.

>>> import opweave as ow
>>> cfg = ow.ConfigProto(intra_op_parallelism_threads=2, inter_op_parallelism_threads=2,
...                      allow_soft_placement=True, device_count={"CPU": 2})
>>> cfg.device_count
{'CPU': 2}
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

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
]


class PoolConfigWarning(UserWarning):
    """A Session's ConfigProto asks for pool sizes that cannot take effect (and says which do)."""


# Most threads any one pool may have: opweave::kMaxThreads, the global pools' limit.
MAX_THREADS = 4096
# Longest deadline: about 31 years. The core adds it to a nanosecond clock, which a larger value
# would overflow; a value this large means "no deadline" in practice.
MAX_TIMEOUT_MS = 10**12
# Longest spin of an idle worker before it sleeps (1 s): more only burns CPU while idle.
MAX_SPIN_TIME_US = 1_000_000


def _check_int(
    owner: str, name: str, value: object, lo: int = -(2**63), hi: int = 2**63 - 1
) -> int:
    """An exact int (not a bool) in [lo, hi], else TypeError / ValueError naming the field."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{owner}.{name} must be an int, got {value!r}")
    if not lo <= value <= hi:
        raise ValueError(f"{owner}.{name} must be in [{lo}, {hi}], got {value}")
    return value


def _check_bool(owner: str, name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{owner}.{name} must be a bool (True or False), got {value!r}")
    return value


class _CheckedFields:
    """Base of the config dataclasses: every assignment to a field, in ``__init__`` and later
    (``cfg.inter_op_parallelism_threads = 2``, TensorFlow users' idiom), goes through
    ``_checked``, so a bad value fails where it is set, not when a Session reads it. As with
    TensorFlow's protos, assigning a name that is not a field is an AttributeError (a typo would
    otherwise be silently ignored)."""

    def __setattr__(self, name: str, value: object) -> None:
        if name not in {f.name for f in fields(self)}:  # type: ignore[arg-type]
            raise AttributeError(
                f'Assignment not allowed (no field "{name}" in {type(self).__name__}).'
            )
        object.__setattr__(self, name, self._checked(name, value))

    def _checked(self, name: str, value: object) -> object:
        """``value`` (possibly normalised, e.g. a dict copied) if it is valid for field ``name``;
        raises TypeError or ValueError otherwise."""
        return value

    def _check_all(self) -> None:
        """Check every field again: catches containers changed in place since assignment."""
        for f in fields(self):  # type: ignore[arg-type]
            self._checked(f.name, getattr(self, f.name))


@dataclass
class ThreadPoolOptionProto(_CheckedFields):
    """One inter-op pool of a session (``ConfigProto.session_inter_op_thread_pool``).

    Parameters
    ----------
    num_threads : int
        Worker threads; 0 = the system picks (the CPUs this process may use).
    global_name : str
        Empty: the pool belongs to the session. Otherwise the pool is process-global under this
        name and shared by every session naming it; another size for the same name is an
        ``InvalidArgumentError``.

    Examples
    --------
    >>> ThreadPoolOptionProto(num_threads=2, global_name="io")
    ThreadPoolOptionProto(num_threads=2, global_name='io')
    """

    num_threads: int = 0
    global_name: str = ""

    def _checked(self, name: str, value: object) -> object:
        if name == "num_threads":
            if _check_int("ThreadPoolOptionProto", "num_threads", value, hi=MAX_THREADS) < 0:
                raise ValueError(f"ThreadPoolOptionProto.num_threads must be >= 0, got {value}")
        elif name == "global_name" and not isinstance(value, str):
            raise TypeError("ThreadPoolOptionProto.global_name must be a str")
        return value


class ThreadPoolOptionList(list[ThreadPoolOptionProto]):
    """``ConfigProto.session_inter_op_thread_pool``: a list with TensorFlow's repeated-field
    ``add()``.

    Examples
    --------
    >>> cfg = ConfigProto()
    >>> cfg.session_inter_op_thread_pool.add(num_threads=2, global_name="io")
    ThreadPoolOptionProto(num_threads=2, global_name='io')
    >>> cfg.session_inter_op_thread_pool
    [ThreadPoolOptionProto(num_threads=2, global_name='io')]
    """

    def add(self, *, num_threads: int = 0, global_name: str = "") -> ThreadPoolOptionProto:
        """Append a new :class:`ThreadPoolOptionProto` with these fields and return it."""
        pool = ThreadPoolOptionProto(num_threads=num_threads, global_name=global_name)
        self.append(pool)
        return pool


@dataclass
class _Experimental(_CheckedFields):
    """``ConfigProto.experimental``: knobs beyond TensorFlow 1's fields.

    Parameters
    ----------
    spin_time_us : int, optional
        Microseconds an idle pool worker spins looking for work before it sleeps (like
        ``KMP_BLOCKTIME``; 0 = never spin). ``None`` (the default) keeps ``OPWEAVE_SPIN_TIME_US``
        or the built-in 50 us. Like the pool sizes, it applies when this is the first Session
        (a later session that asks for another spin time gets a ``PoolConfigWarning``); pools
        created afterwards (named, per-session) use the spin time in effect.

    Examples
    --------
    >>> cfg = ConfigProto(experimental=ConfigProto.Experimental(spin_time_us=0))
    >>> cfg.experimental.spin_time_us
    0
    >>> cfg = ConfigProto()
    >>> cfg.experimental.spin_time_us = 200  # TensorFlow users' attribute spelling
    """

    spin_time_us: int | None = None

    def _checked(self, name: str, value: object) -> object:
        spin = name == "spin_time_us" and value is not None
        if (
            spin
            and _check_int("ConfigProto.experimental", "spin_time_us", value, hi=MAX_SPIN_TIME_US)
            < 0
        ):
            raise ValueError("ConfigProto.experimental.spin_time_us must be >= 0 (0 = never spin)")
        return value


def _check_enum(owner: str, name: str, value: object, allowed: tuple[int, ...]) -> int:
    """An int among ``allowed`` (a proto enum's numbers), else TypeError / ValueError."""
    v = _check_int(owner, name, value)
    if v not in allowed:
        raise ValueError(f"{owner}.{name} must be one of {sorted(allowed)}, got {v}")
    return v


@dataclass
class OptimizerOptions(_CheckedFields):
    """TensorFlow 1's classic graph optimizer switches (``GraphOptions.optimizer_options``).

    ``opt_level`` ``L1`` (the default) folds constants and merges common subexpressions;
    ``L0`` runs the graph as written, unless a switch turns a pass on explicitly
    (``do_constant_folding=True`` or a ``RewriterConfig`` toggle set to ``ON``).
    ``max_folded_constant_in_bytes`` caps what folding may create (0: 10 MiB, TensorFlow's
    default). ``do_function_inlining``, ``global_jit_level`` and ``cpu_global_jit`` are accepted
    and ignored (opweave has no functions and no XLA). docs/optimizer.md says what each does.

    Examples
    --------
    >>> import opweave as ow
    >>> cfg = ow.ConfigProto(graph_options=ow.GraphOptions(
    ...     optimizer_options=ow.OptimizerOptions(opt_level=ow.OptimizerOptions.L0)))
    >>> cfg.graph_options.optimizer_options.opt_level
    -1
    """

    L1 = 0
    L0 = -1
    DEFAULT = 0
    OFF = -1
    ON_1 = 1
    ON_2 = 2

    do_common_subexpression_elimination: bool = False
    do_constant_folding: bool = False
    max_folded_constant_in_bytes: int = 0
    do_function_inlining: bool = False
    opt_level: int = 0
    global_jit_level: int = 0
    cpu_global_jit: bool = False

    def _checked(self, name: str, value: object) -> object:
        owner = "OptimizerOptions"
        if name in (
            "do_common_subexpression_elimination",
            "do_constant_folding",
            "do_function_inlining",
            "cpu_global_jit",
        ):
            _check_bool(owner, name, value)
        elif name == "max_folded_constant_in_bytes":
            if _check_int(owner, name, value) < 0:
                raise ValueError(f"{owner}.{name} must be >= 0 (0 = the default, 10 MiB)")
        elif name == "opt_level":
            _check_enum(owner, name, value, (0, -1))
        elif name == "global_jit_level":
            _check_enum(owner, name, value, (-1, 0, 1, 2))
        return value


# RewriterConfig fields that are Toggles (DEFAULT / ON / OFF / AGGRESSIVE / EXPERIMENTAL_*).
_TOGGLES = (
    "layout_optimizer",
    "constant_folding",
    "shape_optimization",
    "remapping",
    "common_subgraph_elimination",
    "arithmetic_optimization",
    "dependency_optimization",
    "loop_optimization",
    "function_optimization",
    "debug_stripper",
    "scoped_allocator_optimization",
    "pin_to_host_optimization",
    "implementation_selector",
    "auto_mixed_precision",
    "auto_mixed_precision_mkl",
    "auto_mixed_precision_onednn_bfloat16",
    "auto_mixed_precision_cpu",
    "use_plugin_optimizers",
    "experimental_conditional_code_motion",
)


@dataclass
class RewriterConfig(_CheckedFields):
    """TensorFlow's Grappler switches (``GraphOptions.rewrite_options``), with its field names.

    Each toggle is ``DEFAULT`` (0), ``ON`` (1), ``OFF`` (2) or ``AGGRESSIVE`` (3). The ones that
    act: ``constant_folding``, ``common_subgraph_elimination``, ``arithmetic_optimization``,
    ``dependency_optimization`` (Identity / NoOp removal), ``disable_model_pruning``,
    ``disable_meta_optimizer`` (every Grappler pass off), ``meta_optimizer_iterations``,
    ``min_graph_nodes``, ``fail_on_optimizer_errors`` and ``optimizers`` (TensorFlow's pass
    names; only ``pruning``, ``constfold``, ``arithmetic``, ``common_subgraph_elimination`` and
    ``dependency`` exist here). The others (layout, remapping, memory, loop, mixed precision...)
    are accepted and ignored: they would not change results. docs/optimizer.md has the table.

    Examples
    --------
    >>> import opweave as ow
    >>> cfg = ow.ConfigProto()
    >>> cfg.graph_options.rewrite_options.constant_folding = ow.RewriterConfig.OFF
    >>> cfg.graph_options.rewrite_options.constant_folding
    2
    """

    DEFAULT = 0
    ON = 1
    OFF = 2
    AGGRESSIVE = 3
    EXPERIMENTAL_MLIR = 4
    EXPERIMENTAL_BOTH = 5
    # meta_optimizer_iterations
    DEFAULT_NUM_ITERS = 0
    ONE = 1
    TWO = 2
    # memory_optimization
    DEFAULT_MEM_OPT = 0
    NO_MEM_OPT = 1
    MANUAL = 2
    HEURISTICS = 3
    SWAPPING_HEURISTICS = 4
    RECOMPUTATION_HEURISTICS = 5
    SCHEDULING_HEURISTICS = 6
    # cpu_layout_conversion
    NO_CONVERSION_ON_CPU = 0
    NCHW_TO_NHWC = 1
    NHWC_TO_NCHW = 2

    layout_optimizer: int = 0
    constant_folding: int = 0
    shape_optimization: int = 0
    remapping: int = 0
    common_subgraph_elimination: int = 0
    arithmetic_optimization: int = 0
    dependency_optimization: int = 0
    loop_optimization: int = 0
    function_optimization: int = 0
    debug_stripper: int = 0
    disable_model_pruning: bool = False
    scoped_allocator_optimization: int = 0
    pin_to_host_optimization: int = 0
    implementation_selector: int = 0
    auto_mixed_precision: int = 0
    auto_mixed_precision_mkl: int = 0
    auto_mixed_precision_onednn_bfloat16: int = 0
    auto_mixed_precision_cpu: int = 0
    disable_meta_optimizer: bool = False
    disable_tfg_optimizer: bool = False
    use_plugin_optimizers: int = 0
    experimental_conditional_code_motion: int = 0
    meta_optimizer_iterations: int = 0
    min_graph_nodes: int = 0
    experimental_disable_compressed_tensor_optimization: bool = False
    experimental_disable_folding_quantization_emulation: bool = False
    memory_optimization: int = 0
    memory_optimizer_target_node_name_scope: str = ""
    meta_optimizer_timeout_ms: int = 0
    fail_on_optimizer_errors: bool = False
    cpu_layout_conversion: int = 0
    optimizers: list[str] = field(default_factory=list)

    def _checked(self, name: str, value: object) -> object:
        owner = "RewriterConfig"
        if name in _TOGGLES:
            _check_enum(owner, name, value, (0, 1, 2, 3, 4, 5))
        elif name in (
            "disable_model_pruning",
            "disable_meta_optimizer",
            "disable_tfg_optimizer",
            "experimental_disable_compressed_tensor_optimization",
            "experimental_disable_folding_quantization_emulation",
            "fail_on_optimizer_errors",
        ):
            _check_bool(owner, name, value)
        elif name == "meta_optimizer_iterations":
            _check_enum(owner, name, value, (0, 1, 2))
        elif name == "memory_optimization":
            _check_enum(owner, name, value, (0, 1, 2, 3, 4, 5, 6))
        elif name == "cpu_layout_conversion":
            _check_enum(owner, name, value, (0, 1, 2))
        elif name == "min_graph_nodes":
            _check_int(owner, name, value, lo=-(2**31), hi=2**31 - 1)
        elif name == "meta_optimizer_timeout_ms":
            _check_int(owner, name, value)
        elif name == "memory_optimizer_target_node_name_scope":
            if not isinstance(value, str):
                raise TypeError(f"{owner}.{name} must be a str")
        elif name == "optimizers":
            if isinstance(value, str) or not isinstance(value, (list, tuple)):
                raise TypeError(f"{owner}.optimizers must be a list of str")
            names = list(value)
            if not all(isinstance(n, str) for n in names):
                raise TypeError(f"{owner}.optimizers must be a list of str")
            return names
        return value


@dataclass
class GraphOptions(_CheckedFields):
    """``ConfigProto.graph_options``: how a Session's graph is optimized.

    ``optimizer_options`` (:class:`OptimizerOptions`) and ``rewrite_options``
    (:class:`RewriterConfig`) act; the other fields (``enable_recv_scheduling``,
    ``build_cost_model``, ``build_cost_model_after``, ``infer_shapes``, ``place_pruned_graph``,
    ``enable_bfloat16_sendrecv``, ``timeline_step``) are accepted and ignored.

    Examples
    --------
    >>> GraphOptions().rewrite_options.disable_meta_optimizer
    False
    """

    enable_recv_scheduling: bool = False
    optimizer_options: OptimizerOptions = field(default_factory=OptimizerOptions)
    build_cost_model: int = 0
    build_cost_model_after: int = 0
    infer_shapes: bool = False
    place_pruned_graph: bool = False
    enable_bfloat16_sendrecv: bool = False
    timeline_step: int = 0
    rewrite_options: RewriterConfig = field(default_factory=RewriterConfig)

    def _checked(self, name: str, value: object) -> object:
        owner = "GraphOptions"
        if name in (
            "enable_recv_scheduling",
            "infer_shapes",
            "place_pruned_graph",
            "enable_bfloat16_sendrecv",
        ):
            _check_bool(owner, name, value)
        elif name in ("build_cost_model", "build_cost_model_after"):
            _check_int(owner, name, value)
        elif name == "timeline_step":
            _check_int(owner, name, value, lo=-(2**31), hi=2**31 - 1)
        elif name == "optimizer_options":
            if not isinstance(value, OptimizerOptions):
                raise TypeError(f"{owner}.optimizer_options must be an OptimizerOptions")
            value._check_all()
        elif name == "rewrite_options":
            if not isinstance(value, RewriterConfig):
                raise TypeError(f"{owner}.rewrite_options must be a RewriterConfig")
            value._check_all()
        return value


@dataclass
class ConfigProto(_CheckedFields):
    """How a :class:`opweave.Session` runs (TensorFlow 1 fields and defaults).

    Every field is checked when it is set, at construction or by assignment afterwards.

    Parameters
    ----------
    intra_op_parallelism_threads : int
        Threads one op may compute on, the calling thread included; 0 = the system picks. The
        intra-op pool is process-global: the first session sizes it.
    inter_op_parallelism_threads : int
        Ops that may run at once; 0 = the system picks; negative = every op runs in the thread
        that called ``Session.run``. The global inter-op pool is sized by the first session.
    use_per_session_threads : bool
        Give this session its own inter-op pool of ``inter_op_parallelism_threads`` threads.
    session_inter_op_thread_pool : list of ThreadPoolOptionProto
        The session's inter-op pools; ``RunOptions.inter_op_thread_pool`` picks one (default 0).
        Stored as a :class:`ThreadPoolOptionList`, so TensorFlow's
        ``cfg.session_inter_op_thread_pool.add(num_threads=2, global_name="io")`` works.
    allow_soft_placement : bool
        Place ops requested on a device that does not exist on ``/device:CPU:0`` instead of
        failing.
    log_device_placement : bool
        Print each node's placement (to stderr) when the session first places it.
    device_count : dict of str to int
        ``{'CPU': n}`` gives devices ``/device:CPU:0`` .. ``/device:CPU:n-1`` (default 1).
        CPU devices are logical: they all share the intra-op and inter-op pools.
    operation_timeout_in_ms : int
        Default deadline of every run (0 = none); a run past it is cancelled with
        ``DeadlineExceededError``.
    experimental : ConfigProto.Experimental
        ``spin_time_us``: how long idle pool workers spin before they sleep (see
        :class:`ConfigProto.Experimental`).
    graph_options : GraphOptions
        The graph optimizer's switches, TensorFlow's (:class:`GraphOptions`,
        :class:`OptimizerOptions`, :class:`RewriterConfig`); by default every pass runs. Read
        when the Session is created.

    Raises
    ------
    TypeError, ValueError
        When a field is given or assigned a value of the wrong type or out of range.
    AttributeError
        When assigning a name that is not a field (e.g. a misspelt one).

    Examples
    --------
    >>> ConfigProto(inter_op_parallelism_threads=-1).inter_op_parallelism_threads
    -1
    >>> cfg = ConfigProto()
    >>> cfg.intra_op_parallelism_threads = -5
    Traceback (most recent call last):
    ...
    ValueError: ConfigProto.intra_op_parallelism_threads must be >= 0
    """

    intra_op_parallelism_threads: int = 0
    inter_op_parallelism_threads: int = 0
    use_per_session_threads: bool = False
    session_inter_op_thread_pool: list[ThreadPoolOptionProto] = field(
        default_factory=ThreadPoolOptionList
    )
    allow_soft_placement: bool = False
    log_device_placement: bool = False
    device_count: dict[str, int] = field(default_factory=dict)
    operation_timeout_in_ms: int = 0
    experimental: _Experimental = field(default_factory=_Experimental)
    graph_options: GraphOptions = field(default_factory=GraphOptions)

    Experimental: ClassVar[type[_Experimental]] = _Experimental

    def _checked(self, name: str, value: object) -> object:
        if name == "intra_op_parallelism_threads":
            if _check_int("ConfigProto", name, value, hi=MAX_THREADS) < 0:
                raise ValueError("ConfigProto.intra_op_parallelism_threads must be >= 0")
        elif name == "inter_op_parallelism_threads":
            # Any negative value means "run every op in the caller's thread".
            _check_int("ConfigProto", name, value, lo=-(2**31), hi=MAX_THREADS)
        elif name == "operation_timeout_in_ms":
            _check_int("ConfigProto", name, value, lo=-(2**31), hi=MAX_TIMEOUT_MS)
        elif name in ("use_per_session_threads", "allow_soft_placement", "log_device_placement"):
            _check_bool("ConfigProto", name, value)
        elif name == "experimental":
            if not isinstance(value, _Experimental):
                raise TypeError("ConfigProto.experimental must be a ConfigProto.Experimental")
            value._check_all()
        elif name == "graph_options":
            if not isinstance(value, GraphOptions):
                raise TypeError("ConfigProto.graph_options must be a GraphOptions")
            value._check_all()
        elif name == "session_inter_op_thread_pool":
            pools = ThreadPoolOptionList(value)  # type: ignore[call-overload]
            for p in pools:
                if not isinstance(p, ThreadPoolOptionProto):
                    raise TypeError(
                        "ConfigProto.session_inter_op_thread_pool must hold ThreadPoolOptionProto"
                    )
                p._check_all()
            return pools
        elif name == "device_count":
            counts = dict(value)  # type: ignore[call-overload]
            for k, v in counts.items():
                if not isinstance(k, str):
                    raise TypeError("ConfigProto.device_count keys must be device types like 'CPU'")
                if _check_int("ConfigProto", f"device_count[{k!r}]", v, hi=MAX_THREADS) < 0:
                    raise ValueError(f"ConfigProto.device_count[{k!r}] must be >= 0")
            return counts
        return value


@dataclass
class RunOptions(_CheckedFields):
    """Options for one :meth:`opweave.Session.run`.

    Every field is checked when it is set, at construction or by assignment afterwards.

    Parameters
    ----------
    trace_level : int
        ``NO_TRACE`` (default) or ``SOFTWARE_TRACE`` / ``HARDWARE_TRACE`` / ``FULL_TRACE``: any
        of these fills ``RunMetadata.step_stats``.
    timeout_in_ms : int
        Deadline of this run (0 = the session's ``operation_timeout_in_ms``).
    inter_op_thread_pool : int
        Which of the session's inter-op pools runs the ops; -1 = the calling thread.
    output_partition_graphs : bool
        Fill ``RunMetadata.partition_graphs`` with the graph the run executed, as the graph
        optimizer left it (see :class:`PartitionGraph`).

    Examples
    --------
    >>> RunOptions(trace_level=RunOptions.FULL_TRACE).trace_level
    3
    """

    NO_TRACE = 0
    SOFTWARE_TRACE = 1
    HARDWARE_TRACE = 2
    FULL_TRACE = 3

    trace_level: int = 0
    timeout_in_ms: int = 0
    inter_op_thread_pool: int = 0
    output_partition_graphs: bool = False

    def _checked(self, name: str, value: object) -> object:
        if name == "output_partition_graphs":
            _check_bool("RunOptions", name, value)
        if name == "trace_level":
            _check_int("RunOptions", name, value)
        elif name == "timeout_in_ms":
            _check_int("RunOptions", name, value, lo=-(2**31), hi=MAX_TIMEOUT_MS)
        elif name == "inter_op_thread_pool":
            # An int32 as in TensorFlow's proto; whether the session has that pool is checked
            # by the run (InvalidArgumentError).
            _check_int("RunOptions", name, value, lo=-(2**31), hi=2**31 - 1)
        if name == "trace_level" and value not in (0, 1, 2, 3):
            raise ValueError(f"RunOptions.trace_level must be 0..3, got {value}")
        return value


@dataclass
class IntraOpChunk:
    """One piece ``[begin, end)`` of an op's parallel loop, run by one thread without a break.

    Times are nanoseconds since the Unix epoch; ``thread_id`` is the kernel thread id.
    """

    begin: int
    end: int
    start_nanos: int
    end_nanos: int
    thread_id: int


@dataclass
class NodeExecStats:
    """What one node did in one traced run.

    Times are kept in nanoseconds since the Unix epoch; the ``*_micros`` properties give them
    in microseconds, as TensorFlow's ``NodeExecStats`` does. ``thread_id`` is the kernel thread id
    (``gettid``) of the thread that ran the node's kernel, and ``thread_name`` its role in the run
    (``"caller"``, ``"inter-op 0"``, ``"intra-op 1"``, ...).

    ``inputs`` names the tensors the node read (``"producer:index"``), ``input_shapes`` and
    ``output_shapes`` are the shapes seen at run time, ``flops`` the floating-point operations
    of the op where opweave knows them (``2*m*n*k`` for a matmul, one per output element for
    element-wise ops, one per input element for reductions; ``None`` otherwise), and
    ``intra_op_chunks`` the pieces its parallel loops were cut into, with the thread that ran
    each. ``original_nodes`` names the nodes of the graph as written that this node stands for
    when the graph optimizer made or rewrote it (a folded constant, a merged node, a rewritten
    chain); it is empty for a node that runs as written.
    """

    node_name: str = ""
    op: str = ""
    scheduled_nanos: int = 0
    all_start_nanos: int = 0
    all_end_nanos: int = 0
    thread_id: int = 0
    thread_name: str = ""
    device: str = ""
    inputs: list[str] = field(default_factory=list)
    input_shapes: list[tuple[int, ...]] = field(default_factory=list)
    output_shapes: list[tuple[int, ...]] = field(default_factory=list)
    output_dtypes: list[str] = field(default_factory=list)
    flops: int | None = None
    intra_op_chunks: list[IntraOpChunk] = field(default_factory=list)
    original_nodes: list[str] = field(default_factory=list)

    @property
    def scheduled_micros(self) -> int:
        """When the node became ready to run (all its inputs existed)."""
        return self.scheduled_nanos // 1000

    @property
    def all_start_micros(self) -> int:
        """When its kernel started."""
        return self.all_start_nanos // 1000

    @property
    def all_end_micros(self) -> int:
        """When its kernel returned."""
        return self.all_end_nanos // 1000

    @property
    def timeline_label(self) -> str:
        """``"<name> = <op>(<inputs>)"``, as TensorFlow's timeline shows it."""
        return f"{self.node_name} = {self.op}({', '.join(self.inputs)})"

    @property
    def op_start_rel_micros(self) -> int:
        """Start relative to ``all_start_micros`` (always 0 here)."""
        return 0

    @property
    def op_end_rel_micros(self) -> int:
        """End relative to ``all_start_micros``."""
        return self.all_end_micros - self.all_start_micros

    @property
    def all_end_rel_micros(self) -> int:
        """Same as :attr:`op_end_rel_micros`."""
        return self.all_end_micros - self.all_start_micros


@dataclass
class DeviceStepStats:
    """The nodes one device ran."""

    device: str = ""
    node_stats: list[NodeExecStats] = field(default_factory=list)


@dataclass
class StepStats:
    """Per-device node timings of one run, and the role of every thread that took part.

    ``thread_names`` maps kernel thread ids to ``"caller"`` (the thread that called
    ``Session.run``), ``"inter-op <i>"`` (workers of the run's inter-op pool) and
    ``"intra-op <i>"`` (workers of the intra-op pool, numbered from 1: the thread that starts a
    parallel loop is the op's first thread).
    """

    dev_stats: list[DeviceStepStats] = field(default_factory=list)
    thread_names: dict[int, str] = field(default_factory=dict)

    @property
    def node_stats(self) -> list[NodeExecStats]:
        """Every device's node stats in one list."""
        return [n for d in self.dev_stats for n in d.node_stats]


@dataclass
class PartitionGraph:
    """The graph one run executed, after the graph optimizer (``RunMetadata.partition_graphs``).

    ``node`` lists the nodes in the order they may run, each a dict with TensorFlow's NodeDef
    fields -- ``name``, ``op``, ``input`` (``"a"``, ``"a:1"``, ``"^c"`` for a control input),
    ``device``, ``attr`` (constants as NumPy arrays) -- and ``original_nodes``, the nodes of the
    graph as written a node stands for (TensorFlow's ``experimental_debug_info``). Fed tensors
    appear as ``_Arg`` nodes, as in TensorFlow's optimized graphs.
    """

    node: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class RunMetadata:
    """Filled by :meth:`opweave.Session.run` when ``RunOptions`` asks for it:
    ``step_stats`` when ``trace_level`` is set, ``partition_graphs`` (one
    :class:`PartitionGraph`) when ``output_partition_graphs`` is.

    Examples
    --------
    >>> RunMetadata().step_stats.dev_stats
    []
    """

    step_stats: StepStats = field(default_factory=StepStats)
    partition_graphs: list[PartitionGraph] = field(default_factory=list)

    def clear(self) -> None:
        """Forget the previous run's data."""
        self.step_stats = StepStats()
        self.partition_graphs = []
