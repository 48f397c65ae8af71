"""The shared harness of the op tests: one row (:class:`OpCase`) per op, four checks for each.

Each op family's test file (``tests/test_ops_*.py``) lists its ops as ``CASES`` and runs
:func:`check_case` on them. For every case, on random shapes, broadcasts, strides and dtypes
(hypothesis):

1. the graph op, run in a Session, matches the NumPy reference;
2. the eager function ``opweave.kernels.<name>`` gives the same values;
3. the results are bit-identical on 1 and 3 threads (arrays large enough to be split);
4. the gradient (``opweave.gradients``) matches central finite differences in float64, for every
   floating input (when the case says the op is differentiable), and, with ``grad2``, so does
   the gradient of the gradient.

``tests/test_op_coverage.py`` fails when an op definition has no row anywhere, so adding an op
means adding its row.

OPWEAVE_HYPOTHESIS_EXAMPLES raises the number of examples per case (default 6).
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import pathlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import opweave as ow
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

EXAMPLES = int(os.environ.get("OPWEAVE_HYPOTHESIS_EXAMPLES", "6"))
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=os.environ.get("OPWEAVE_HYPOTHESIS_RANDOM") is None,
)

FLOATS = (np.float32, np.float64)
INTS = (np.int32, np.int64)
SMALL_INTS = (np.int8, np.int16, np.uint8)
REALS = FLOATS + INTS

Shapes = Callable[[st.DrawFn], list[tuple[int, ...]]]


@dataclasses.dataclass
class OpCase:
    """One op under test.

    Attributes
    ----------
    op_type : str
        The OpDef type it covers (``"Relu"``).
    fn : callable
        The public function: ``fn(*tensors, **kwargs)`` (``opweave.nn.relu``).
    ref : callable
        The NumPy reference: ``ref(*arrays, **kwargs)`` -> array (or list of arrays).
    shapes : callable
        ``shapes(draw) -> list of input shapes`` (a hypothesis draw function).
    dtypes : sequence of numpy dtype
        The dtypes tried (all inputs share one, unless ``input_dtypes`` says otherwise).
    domain : (low, high)
        Range of the random values (e.g. positive for ``log``).
    kwargs : dict, or callable ``(draw, shapes) -> dict``
        Extra arguments (axes, flags), possibly drawn.
    grad : bool
        Check the gradient of every floating input against finite differences.
    grad2 : bool
        Also check the second derivative (gradient of the gradient).
    rtol : float
        Tolerance against the reference for float32 (float64 uses rtol / 1e6).
    eager_name : str or None
        The ``opweave.kernels`` name (default ``fn.__name__``); None skips the eager check.
    input_dtypes : callable, optional
        ``input_dtypes(dtype) -> list of dtypes``, one per input, for ops whose inputs differ
        (indices, conditions).
    int_inputs : set of int
        Inputs that are integer values of their own (indices): not perturbed for gradients.
    values : callable, optional
        ``values(rng, shapes, dtypes) -> list of arrays`` for inputs with constraints the domain
        cannot express (a permutation, distinct values).
    threads : bool
        Check 1 against 3 threads on inputs grown by :func:`scaled_up` (False where growing the
        leftmost axis does not keep the inputs valid, e.g. matmul's inner dimension).
    """

    op_type: str
    fn: Callable[..., Any]
    ref: Callable[..., Any]
    shapes: Shapes
    dtypes: Sequence[Any] = FLOATS
    domain: tuple[float, float] = (-3.0, 3.0)
    kwargs: dict[str, Any] | Callable[[st.DrawFn, list[tuple[int, ...]]], dict[str, Any]] = (
        dataclasses.field(default_factory=dict)
    )
    grad: bool = True
    grad2: bool = False
    rtol: float = 2e-5
    eager_name: str | None = ""
    input_dtypes: Callable[[Any], list[Any]] | None = None
    int_inputs: frozenset[int] = frozenset()
    values: Callable[..., list[np.ndarray]] | None = None
    threads: bool = True
    id: str = ""

    def __post_init__(self) -> None:
        if not self.id:
            self.id = self.op_type
        if self.eager_name == "":
            self.eager_name = self.fn.__name__

    def __repr__(self) -> str:
        return self.id


# -- shape strategies ------------------------------------------------------------------------


def _shape(
    draw: st.DrawFn, min_rank: int = 0, max_rank: int = 3, max_side: int = 5
) -> tuple[int, ...]:
    rank = draw(st.integers(min_rank, max_rank))
    return tuple(draw(st.integers(1, max_side)) for _ in range(rank))


def same_shape(n: int = 1, min_rank: int = 0, max_rank: int = 3) -> Shapes:
    """``n`` inputs of one random shape."""

    def draw_shapes(draw: st.DrawFn) -> list[tuple[int, ...]]:
        s = _shape(draw, min_rank, max_rank)
        return [s] * n

    return draw_shapes


def broadcastable(n: int = 2, max_rank: int = 3) -> Shapes:
    """``n`` shapes that broadcast together (dims dropped or set to 1 at random)."""

    def draw_shapes(draw: st.DrawFn) -> list[tuple[int, ...]]:
        full = _shape(draw, 0, max_rank)
        out = []
        for _ in range(n):
            drop = draw(st.integers(0, len(full)))
            dims = [1 if draw(st.booleans()) and draw(st.booleans()) else d for d in full[drop:]]
            out.append(tuple(dims))
        return out

    return draw_shapes


def fixed(*shapes: tuple[int, ...]) -> Shapes:
    """Exactly these shapes."""
    return lambda draw: [tuple(s) for s in shapes]


def scaled_up(shapes: list[tuple[int, ...]], factor: int = 4096) -> list[tuple[int, ...]]:
    """The shapes grown so the kernels split them over threads: the leftmost axis of the
    highest-rank shapes is multiplied by ``factor`` (a scalar shape gains that axis), which keeps
    broadcasting valid. Cases whose inputs are related otherwise give ``large=None``."""
    rank = max(len(s) for s in shapes)
    if rank == 0:
        return [(factor,) for _ in shapes]
    return [(s[0] * factor, *s[1:]) if len(s) == rank and s[0] != 1 else s for s in shapes]


# -- values ----------------------------------------------------------------------------------


def random_values(
    rng: np.random.Generator, shape: tuple[int, ...], dtype: Any, domain: tuple[float, float]
) -> np.ndarray:
    """Random values of ``dtype`` in ``domain``, away from the domain's edges."""
    dt = np.dtype(dtype)
    lo, hi = domain
    if dt.kind == "b":
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        info = np.iinfo(dt)
        lo_i, hi_i = max(int(lo), int(info.min)), min(int(hi), int(info.max))
        return rng.integers(lo_i, hi_i + 1, size=shape).astype(dt)
    return rng.uniform(lo, hi, size=shape).astype(dt)


def maybe_strided(rng: np.random.Generator, a: np.ndarray) -> np.ndarray:
    """``a`` itself, or the same values as a non-contiguous view (reversed / stepped)."""
    if a.ndim == 0 or rng.random() < 0.5:
        return a
    big = np.empty(tuple(2 * d for d in a.shape), a.dtype)
    view = big[tuple(slice(None, None, 2) for _ in a.shape)]
    view[...] = a
    if rng.random() < 0.5:
        view = view[::-1][::-1]  # same values, negative-stride detour
    return view


def draw_inputs(
    case: OpCase, draw: st.DrawFn, large: bool = False
) -> tuple[list[np.ndarray], dict[str, Any], Any]:
    """Random inputs of one dtype drawn from the case's strategies, and its kwargs."""
    dtype = draw(st.sampled_from(list(case.dtypes)))
    shapes = case.shapes(draw)
    if large:
        shapes = scaled_up(shapes)
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    dtypes = case.input_dtypes(dtype) if case.input_dtypes else [dtype] * len(shapes)
    if case.values is not None:
        arrays = case.values(rng, shapes, dtypes)
    else:
        arrays = [
            random_values(rng, s, d, case.domain) for s, d in zip(shapes, dtypes, strict=True)
        ]
    kwargs = case.kwargs(draw, shapes) if callable(case.kwargs) else dict(case.kwargs)
    return arrays, kwargs, dtype


# -- the checks ------------------------------------------------------------------------------


def _as_list(v: Any) -> list[Any]:
    return list(v) if isinstance(v, (list, tuple)) else [v]


def run_graph(case: OpCase, arrays: Sequence[np.ndarray], kwargs: dict[str, Any]) -> list[Any]:
    """The op built on placeholders and run in a fresh session."""
    with ow.Graph().as_default():
        phs = [ow.placeholder(ow.as_dtype(a.dtype), shape=a.shape) for a in arrays]
        out = case.fn(*phs, **kwargs)
        with ow.Session() as sess:
            return _as_list(sess.run(out, feed_dict=dict(zip(phs, arrays, strict=True))))


def assert_matches(got: Sequence[Any], want: Sequence[Any], rtol: float, dtype: Any) -> None:
    assert len(got) == len(want), (len(got), len(want))
    for g, w in zip(got, want, strict=True):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape, (g.shape, w.shape)
        if w.dtype.kind in "fc":
            tol = rtol if np.dtype(dtype) != np.float64 else rtol / 1e6 * 10
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol)
        else:
            np.testing.assert_array_equal(g, w)
            assert g.dtype == w.dtype or w.dtype == np.dtype(object), (g.dtype, w.dtype)


def check_forward(case: OpCase, draw: st.DrawFn) -> None:
    """Graph and eager results match the NumPy reference."""
    arrays, kwargs, dtype = draw_inputs(case, draw)
    rng = np.random.default_rng(len(arrays))
    want = _as_list(case.ref(*arrays, **kwargs))
    assert_matches(run_graph(case, arrays, kwargs), want, case.rtol, dtype)
    if case.eager_name is not None:
        eager = getattr(ow.kernels, case.eager_name)
        strided = [maybe_strided(rng, a) for a in arrays]
        assert_matches(_as_list(eager(*strided, **kwargs)), want, case.rtol, dtype)


def check_threads(case: OpCase, draw: st.DrawFn) -> None:
    """The same bits on 1 and 3 threads, on inputs large enough to be split."""
    if case.eager_name is None or not case.threads:
        return
    arrays, kwargs, _ = draw_inputs(case, draw, large=True)
    eager = getattr(ow.kernels, case.eager_name)
    one = _as_list(eager(*arrays, **kwargs, _num_threads=1))
    three = _as_list(eager(*arrays, **kwargs, _num_threads=3))
    for a, b in zip(one, three, strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def numeric_jacobian_check(
    case: OpCase, arrays: list[np.ndarray], kwargs: dict[str, Any], order: int = 1
) -> None:
    """Symbolic gradients of ``sum(v * y)`` against central differences, in float64.

    ``order=2`` differentiates ``sum(w * dy/dx)`` instead: the gradient of the gradient.
    """
    arrays = [a.astype(np.float64) if a.dtype.kind == "f" else a for a in arrays]
    rng = np.random.default_rng(7)
    with ow.Graph().as_default():
        phs = [ow.placeholder(ow.as_dtype(a.dtype), shape=a.shape) for a in arrays]
        outs = [o for o in _as_list(case.fn(*phs, **kwargs)) if o.dtype.is_floating]
        if not outs:
            return
        vs = [ow.constant(rng.standard_normal(o.shape.as_list())) for o in outs]
        target = ow.add_n([ow.reduce_sum(o * v) for o, v in zip(outs, vs, strict=True)])
        diff = [
            i
            for i, a in enumerate(arrays)
            if a.dtype.kind == "f" and i not in case.int_inputs and a.size > 0
        ]
        if order == 2:
            firsts = ow.gradients(target, [phs[i] for i in diff])
            terms = [
                ow.reduce_sum(g * ow.constant(rng.standard_normal(arrays[i].shape)))
                for g, i in zip(firsts, diff, strict=True)
                if g is not None
            ]
            if not terms:
                return
            target = ow.add_n(terms)
        grads = ow.gradients(target, [phs[i] for i in diff])
        with ow.Session() as sess:
            feed = dict(zip(phs, arrays, strict=True))
            fetch = [g for g in grads if g is not None]
            symbolic = iter(sess.run(fetch, feed)) if fetch else iter(())
            for i, g in zip(diff, grads, strict=True):
                got = np.zeros(arrays[i].shape) if g is None else next(symbolic)
                want = np.zeros(arrays[i].size)
                base = arrays[i]
                for k in range(base.size):
                    h = 1e-6 * max(1.0, abs(float(base.flat[k])))
                    plus, minus = base.copy(), base.copy()
                    plus.flat[k] += h
                    minus.flat[k] -= h
                    fp = sess.run(target, {**feed, phs[i]: plus})
                    fm = sess.run(target, {**feed, phs[i]: minus})
                    want[k] = (fp - fm) / (2 * h)
                np.testing.assert_allclose(
                    np.asarray(got).reshape(-1),
                    want,
                    rtol=1e-4,
                    atol=1e-5,
                    err_msg=f"{case.id}: d/d input {i} (order {order})",
                )


def check_gradient(case: OpCase, draw: st.DrawFn) -> None:
    """Gradients (and with ``grad2`` second derivatives) against finite differences."""
    if not case.grad:
        return
    floats = [d for d in case.dtypes if np.dtype(d).kind == "f"]
    if not floats:
        return
    arrays, kwargs, _ = draw_inputs(dataclasses.replace(case, dtypes=[np.float64]), draw)
    if sum(a.size for a in arrays) > 60:
        return  # finite differences cost two runs per element
    numeric_jacobian_check(case, arrays, kwargs)
    if case.grad2:
        numeric_jacobian_check(case, arrays, kwargs, order=2)


def check_case(case: OpCase, data: st.DataObject) -> None:
    """All four checks of one case on one hypothesis draw."""
    check_forward(case, data.draw)
    check_threads(case, data.draw)
    check_gradient(case, data.draw)


def all_cases() -> list[OpCase]:
    """Every row of every ``tests/test_ops_*.py`` table. The ``*_tf.py`` modules (comparisons
    against TensorFlow, which they import) hold no rows and are not imported."""
    cases: list[OpCase] = []
    for path in sorted(pathlib.Path(__file__).parent.glob("test_ops_*.py")):
        if path.stem.endswith("_tf"):
            continue
        cases.extend(getattr(importlib.import_module(path.stem), "CASES", []))
    return cases
