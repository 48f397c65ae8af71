"""Session and run configuration with TensorFlow 1's field names and defaults.

>>> import opweave as ow
>>> cfg = ow.ConfigProto(intra_op_parallelism_threads=2, inter_op_parallelism_threads=2,
...                      allow_soft_placement=True, device_count={"CPU": 2})
>>> cfg.device_count
{'CPU': 2}
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import ClassVar

__all__ = [
    "ConfigProto",
    "DeviceStepStats",
    "IntraOpChunk",
    "NodeExecStats",
    "PoolConfigWarning",
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

    def _checked(self, name: str, value: object) -> object:
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
    each.
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
class RunMetadata:
    """Filled by :meth:`opweave.Session.run` when ``RunOptions.trace_level`` asks for it.

    Examples
    --------
    >>> RunMetadata().step_stats.dev_stats
    []
    """

    step_stats: StepStats = field(default_factory=StepStats)

    def clear(self) -> None:
        """Forget the previous run's data."""
        self.step_stats = StepStats()
