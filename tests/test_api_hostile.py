"""A mechanical walk over the public API with hostile values, one argument at a time.

For every op row of the ``tests/test_ops_*.py`` tables (so every op, as test_op_coverage.py
guarantees) the op is first built with valid arguments; then each argument in turn is replaced
with values that are wrong for its kind -- huge, negative where sizes are, bool, float, str, None,
arbitrary objects, a tensor of another graph -- and the call must fail with a clear Python or
opweave error: ``TypeError``, ``ValueError`` or an ``opweave.errors.OpError`` subclass, never the
core's raw ``CoreError``, never a pybind11 conversion message, never a crash, and never silently
accept the value. The eager functions (``opweave.kernels``), ``ConfigProto`` / ``RunOptions``
fields and the thread controls get the same treatment. After all of it, a session still runs.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import opweave as ow
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from op_testing import OpCase, all_cases, draw_inputs

RAW_MESSAGES = ("incompatible function arguments", "Unable to cast", "CoreError")
CLEAR = (TypeError, ValueError, ow.errors.OpError)


class _Foreign:
    """A value of no kind any argument accepts."""


def _hostile_for(valid: Any) -> list[Any]:
    """Values that are wrong for an argument whose valid value is ``valid``."""
    if isinstance(valid, (bool, np.bool_)):
        return [2, "yes", 1.5, _Foreign()]
    if isinstance(valid, (int, np.integer)):
        return [2**64, -(2**64), 10**30, True, 1.5, "1", _Foreign()]
    if isinstance(valid, ow.DType) or (isinstance(valid, type) and issubclass(valid, np.generic)):
        return ["float128", np.complex64, 5, "not a dtype", _Foreign()]
    if isinstance(valid, (list, tuple)) and all(
        isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in valid
    ):
        return [[2**64], [True] * max(len(valid), 1), [1.5], "1", _Foreign(), [[1]] * 2]
    return [_Foreign()]


def _assert_clear(exc: BaseException, what: str) -> None:
    assert isinstance(exc, CLEAR), f"{what}: {type(exc).__name__}: {exc}"
    assert type(exc).__name__ != "CoreError", f"{what}: raw CoreError: {exc}"
    text = str(exc)
    for raw in RAW_MESSAGES:
        assert raw not in text, f"{what}: raw message {raw!r}: {text}"


def _must_fail(fn: Any, what: str) -> None:
    try:
        fn()
    except BaseException as exc:  # every failure is checked, none is swallowed
        _assert_clear(exc, what)
        return
    pytest.fail(f"{what}: accepted silently")


HOSTILE_SETTINGS = settings(
    max_examples=1, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True
)


@pytest.mark.parametrize("case", all_cases(), ids=repr)
@HOSTILE_SETTINGS
@given(data=st.data())
def test_hostile_arguments_to_every_op_are_clear_errors(case: OpCase, data: st.DataObject) -> None:
    arrays, kwargs, _ = draw_inputs(case, data.draw)
    # A row whose function is a test lambda wraps the public function with arguments of its own;
    # its inputs are walked through the rows that call public functions directly.
    walk_inputs = case.fn.__name__ != "<lambda>"
    other = ow.Graph()
    with other.as_default():
        foreign = ow.constant(np.zeros(arrays[0].shape, arrays[0].dtype) if arrays else 0.0)
    with ow.Graph().as_default():
        phs = [ow.placeholder(ow.as_dtype(a.dtype), shape=a.shape) for a in arrays]
        case.fn(*phs, **kwargs)  # the valid call builds
        for i in range(len(phs) if walk_inputs else 0):
            for bad in [None, _Foreign(), foreign]:
                args = list(phs)
                args[i] = bad
                _must_fail(lambda a=args: case.fn(*a, **kwargs), f"{case.id} input {i}={bad!r}")
        for key, valid in kwargs.items():
            for bad in _hostile_for(valid):
                if valid is None:
                    continue
                bad_kwargs = {**kwargs, key: bad}
                _must_fail(lambda k=bad_kwargs: case.fn(*phs, **k), f"{case.id} {key}={bad!r}")
    eager_name = case.eager_name
    if eager_name is not None and eager_name in dir(ow.kernels):
        eager = getattr(ow.kernels, eager_name)
        for i in range(len(arrays)):
            for bad_array in [
                np.zeros(arrays[i].shape, np.complex64),
                np.zeros(arrays[i].shape, np.uint16),
                np.array([_Foreign()], object),
            ]:
                args = list(arrays)
                args[i] = bad_array
                _must_fail(lambda a=args: eager(*a, **kwargs), f"kernels.{eager_name}[{i}]")
        for bad_threads in [0, -1, 10**12, True, 1.5, "2"]:
            _must_fail(
                lambda t=bad_threads: eager(*arrays, **kwargs, _num_threads=t),
                f"kernels.{eager_name} _num_threads={bad_threads!r}",
            )


# Each integer field with values out of its range (thread counts stop at 4096, deadlines at
# 10**12 ms, pool indices at -1) and values of the wrong kind.
WRONG_KIND = [1.5, "3", True, None, _Foreign()]
INT_FIELDS = {
    ("ConfigProto", "intra_op_parallelism_threads"): [5000, 2**31, 2**64, -1],
    ("ConfigProto", "inter_op_parallelism_threads"): [5000, 2**31, 2**64, -(2**63)],
    ("ConfigProto", "operation_timeout_in_ms"): [2**63, 2**64, 10**13, -(2**63) - 1],
    ("RunOptions", "timeout_in_ms"): [2**63, 2**64, 10**13, -(2**63) - 1],
    ("RunOptions", "inter_op_thread_pool"): [2**31, 2**64, -(2**31) - 1],
    ("ThreadPoolOptionProto", "num_threads"): [10**9, 20000, 2**31, -1],
    ("ConfigProto.Experimental", "spin_time_us"): [10**12, -1],
}


@pytest.mark.parametrize(
    ("owner", "field", "bad"),
    [(o, f, b) for (o, f), values in INT_FIELDS.items() for b in values + WRONG_KIND[:-2]],
)
def test_hostile_config_and_run_option_values_are_clear_errors_where_given(
    owner: str, field: str, bad: Any
) -> None:
    cls = {
        "ConfigProto": ow.ConfigProto,
        "RunOptions": ow.RunOptions,
        "ThreadPoolOptionProto": ow.ThreadPoolOptionProto,
        "ConfigProto.Experimental": ow.ConfigProto.Experimental,
    }[owner]
    _must_fail(lambda: cls(**{field: bad}), f"{owner}({field}={bad!r})")


@pytest.mark.parametrize(
    "field", ["allow_soft_placement", "log_device_placement", "use_per_session_threads"]
)
@pytest.mark.parametrize("bad", ["yes", 1, None, _Foreign()])
def test_a_non_bool_flag_is_a_type_error(field: str, bad: Any) -> None:
    _must_fail(lambda: ow.ConfigProto(**{field: bad}), f"{field}={bad!r}")


@pytest.mark.parametrize(
    "call",
    [
        lambda v: ow.set_num_threads(v),
        lambda v: ow.set_num_interop_threads(v),
        lambda v: ow.config.threading.set_intra_op_parallelism_threads(v),
        lambda v: ow.config.threading.set_inter_op_parallelism_threads(v),
    ],
)
@pytest.mark.parametrize("bad", [2**31, 10**12, -5, 1.5, "2", True, None, _Foreign()])
def test_hostile_thread_counts_are_clear_errors(call: Any, bad: Any) -> None:
    before = (ow.get_num_threads(), ow.get_num_interop_threads())
    _must_fail(lambda: call(bad), f"thread control({bad!r})")
    assert (ow.get_num_threads(), ow.get_num_interop_threads()) == before


@pytest.mark.parametrize("func", [5, None, "print", _Foreign()])
def test_a_py_function_body_that_is_not_callable_is_a_type_error(func: Any) -> None:
    with ow.Graph().as_default():
        _must_fail(lambda: ow.py_function(func, [ow.constant(1.0)], ow.float32), f"func={func!r}")


@pytest.mark.parametrize("tout", ["float128", [ow.float32, "nope"], None, _Foreign()])
def test_a_py_function_with_hostile_output_dtypes_is_a_clear_error(tout: Any) -> None:
    with ow.Graph().as_default():
        _must_fail(lambda: ow.py_function(abs, [ow.constant(1.0)], tout), f"Tout={tout!r}")


def test_the_session_still_runs_after_the_walk() -> None:
    with ow.Graph().as_default():
        x = ow.placeholder(ow.float32, (None, 2))
        y = ow.reduce_sum(ow.nn.relu(x) * 2.0)
        with ow.Session() as s:
            assert s.run(y, {x: np.ones((3, 2), np.float32)}) == 12.0
