"""The random ops, dropout and the initializers: one row per op (for the coverage and hostile
walks; random values have no NumPy reference, so each row checks shape, dtype and seeding), then
their distributions against generous but meaningful bounds (mean, spread, Kolmogorov-Smirnov
distance, chi-square of frequencies), TensorFlow 1's seed rules, the same bits for 1 and 3
intra-op threads (fresh processes), dropout's scaling, arguments and gradient, and the
initializers' statistics and fans.

Every check uses fixed seeds, so none is flaky: a bound that holds holds on every run."""

from __future__ import annotations

import doctest
import importlib
import json
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import opweave as ow
import pytest
from _subprocess import run_python
from op_testing import OpCase, fixed
from opweave import errors
from opweave.ops import init_ops

# -- one row per op --------------------------------------------------------------------------


def _shape_values(shape: list[int]) -> Callable[..., list[np.ndarray]]:
    return lambda rng, shapes, dtypes: [np.array(shape, dtypes[0])]


def _zeros(shape: tuple[int, ...], dtype: Any) -> Callable[..., np.ndarray]:
    """The reference of a random op: its shape and dtype (the values are checked elsewhere)."""
    return lambda *arrays, **kwargs: np.zeros(shape, dtype)


CASES = [
    OpCase(
        "RandomStandardNormal",
        ow.random_normal,
        _zeros((3, 5), np.float64),
        fixed((2,)),
        dtypes=(np.int32, np.int64),
        values=_shape_values([3, 5]),
        kwargs={"mean": 1.0, "stddev": 2.0, "dtype": ow.float64, "seed": 11},
        grad=False,
        eager_name=None,
    ),
    OpCase(
        "TruncatedNormal",
        ow.truncated_normal,
        _zeros((4, 2), np.float32),
        fixed((2,)),
        dtypes=(np.int32,),
        values=_shape_values([4, 2]),
        kwargs={"stddev": 0.5, "seed": 12},
        grad=False,
        eager_name=None,
    ),
    OpCase(
        "RandomUniform",
        ow.random_uniform,
        _zeros((7,), np.float16),
        fixed((1,)),
        dtypes=(np.int64,),
        values=_shape_values([7]),
        kwargs={"minval": -1.0, "maxval": 2.0, "dtype": ow.float16, "seed": 13},
        grad=False,
        eager_name=None,
    ),
    OpCase(
        "RandomUniformInt",
        ow.random_uniform,
        _zeros((2, 6), np.int64),
        fixed((2,)),
        dtypes=(np.int32,),
        values=_shape_values([2, 6]),
        kwargs={"minval": -3, "maxval": 5, "dtype": ow.int64, "seed": 14},
        grad=False,
        eager_name=None,
    ),
    OpCase(
        "RandomShuffle",
        ow.random_shuffle,
        lambda x, **kwargs: np.zeros_like(x),
        fixed((12, 2)),
        dtypes=(np.float32, np.int64, np.uint8),
        values=lambda rng, shapes, dtypes: [np.arange(24).reshape(12, 2).astype(dtypes[0])],
        kwargs={"seed": 15},
        grad=False,
        eager_name=None,
    ),
    OpCase(
        "Multinomial",
        ow.multinomial,
        _zeros((2, 4), np.int32),
        fixed((2, 3)),
        dtypes=(np.float32, np.float64),
        kwargs={"num_samples": 4, "seed": 16, "output_dtype": ow.int32},
        grad=False,
        eager_name=None,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_row_has_its_shape_and_dtype_and_its_seed_repeats_in_a_fresh_session(
    case: OpCase,
) -> None:
    shapes = case.shapes(None)  # type: ignore[arg-type]
    dtypes = [case.dtypes[0]] * len(shapes)
    rng = np.random.default_rng(0)
    assert case.values is not None or len(shapes) == 1
    arrays = (
        case.values(rng, shapes, dtypes)
        if case.values
        else [rng.standard_normal(s).astype(d) for s, d in zip(shapes, dtypes, strict=True)]
    )
    kwargs = dict(case.kwargs) if isinstance(case.kwargs, dict) else {}
    want = case.ref(*arrays, **kwargs)
    with ow.Graph().as_default():
        phs = [ow.placeholder(ow.as_dtype(a.dtype), shape=a.shape) for a in arrays]
        out = case.fn(*phs, **kwargs)
        feed = dict(zip(phs, arrays, strict=True))
        with ow.Session() as s1:
            first, second = s1.run(out, feed), s1.run(out, feed)
        with ow.Session() as s2:
            again = s2.run(out, feed)
    assert first.shape == want.shape
    assert first.dtype == want.dtype
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, second), "a second run continues the sequence"


def test_random_ops_are_stateful_not_differentiable_and_not_offered_eagerly() -> None:
    for case in CASES:
        d = ow.ops.REGISTRY[case.op_type]
        assert d.stateful, case.op_type
        assert d.not_differentiable, case.op_type
    for name in ["random_normal", "random_uniform", "truncated_normal", "random_shuffle"]:
        with pytest.raises(AttributeError):
            getattr(ow.kernels, name)
    with ow.Graph().as_default():
        w = ow.placeholder(ow.float32, [3])
        x = ow.placeholder(ow.float32, [3])
        y = ow.reduce_sum(ow.random_normal([3]) * w + ow.random_shuffle(x))
        gw, gx = ow.gradients(y, [w, x])
        assert gx is None
        with ow.Session() as s:
            g, r = s.run([gw, y], {w: np.ones(3, np.float32), x: np.zeros(3, np.float32)})
        assert g.shape == (3,)
        assert np.isclose(g.sum(), r)


def test_docstring_examples_hold() -> None:
    for module in ["opweave.ops.random_ops", "opweave.ops.init_ops", "opweave.random"]:
        result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
        assert result.attempted > 0, module
        assert result.failed == 0, module
    result = doctest.testmod(importlib.import_module("opweave.initializers"))
    assert result.failed == 0


# -- distributions ---------------------------------------------------------------------------


def _run(t: Any, runs: int = 1) -> Any:
    with ow.Session() as s:
        values = [s.run(t) for _ in range(runs)]
    return values[0] if runs == 1 else values


def _ks(sample: np.ndarray, cdf: Callable[[np.ndarray], np.ndarray]) -> float:
    """The Kolmogorov-Smirnov distance between a sample and a distribution."""
    x = np.sort(sample.astype(np.float64))
    n = x.size
    f = cdf(x)
    return float(max((np.arange(1, n + 1) / n - f).max(), (f - np.arange(n) / n).max()))


_erf = np.vectorize(math.erf)


def _normal_cdf(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + _erf(x / math.sqrt(2.0)))


# The 99.9% critical value of the KS distance is 1.95 / sqrt(n).
def _ks_bound(n: int) -> float:
    return 1.95 / math.sqrt(n)


@pytest.mark.parametrize("dtype", [ow.float32, ow.float64, ow.float16])
def test_normal_has_its_mean_stddev_and_shape(dtype: ow.DType) -> None:
    n = 40000
    with ow.Graph().as_default():
        x = _run(ow.random_normal([200, n // 200], mean=3.0, stddev=2.0, dtype=dtype, seed=1))
    assert x.shape == (200, n // 200)
    assert x.dtype == dtype.as_numpy_dtype
    z = (x.astype(np.float64) - 3.0) / 2.0
    assert abs(z.mean()) < 5 / math.sqrt(n)
    assert abs(z.std() - 1.0) < 0.02
    assert _ks(z.reshape(-1)[:10000], _normal_cdf) < _ks_bound(10000) + (
        0.01 if dtype is ow.float16 else 0.0
    )


@pytest.mark.parametrize("dtype", [ow.float32, ow.float64, ow.float16])
def test_truncated_normal_stays_within_two_stddev_with_the_truncated_spread(
    dtype: ow.DType,
) -> None:
    n = 40000
    with ow.Graph().as_default():
        x = _run(ow.truncated_normal([n], mean=-1.0, stddev=0.5, dtype=dtype, seed=2))
    z = (x.astype(np.float64) + 1.0) / 0.5
    if dtype is ow.float16:
        assert np.all(np.abs(z) <= 2.0 + 2e-3)  # rounding to half may touch the bound
    else:
        assert np.all(np.abs(z) < 2.0)
    assert abs(z.mean()) < 5 / math.sqrt(n)
    assert abs(z.std() - init_ops.TRUNCATED_STDDEV) < 0.02
    mass = _normal_cdf(np.array([2.0]))[0] - _normal_cdf(np.array([-2.0]))[0]

    def truncated_cdf(v: np.ndarray) -> np.ndarray:
        return (_normal_cdf(v) - _normal_cdf(np.array([-2.0]))[0]) / mass

    bound = _ks_bound(10000) + (0.01 if dtype is ow.float16 else 0.0)
    assert _ks(z[:10000], truncated_cdf) < bound


@pytest.mark.parametrize("dtype", [ow.float32, ow.float64, ow.float16])
def test_uniform_floats_stay_in_range_and_are_uniform(dtype: ow.DType) -> None:
    with ow.Graph().as_default():
        unit = ow.random_uniform([20000], dtype=dtype, seed=3)
        wide = ow.random_uniform([20000], minval=-2.0, maxval=6.0, dtype=dtype, seed=4)
        u, w = _run([unit, wide])
        assert unit.op.type == "RandomUniform"  # [0, 1) needs no scaling ops
    assert u.dtype == dtype.as_numpy_dtype
    assert u.min() >= 0.0
    assert u.max() < 1.0 + (1e-3 if dtype is ow.float16 else 0.0)
    assert w.min() >= -2.0
    assert w.max() <= 6.0
    assert _ks(u[:10000], lambda v: np.clip(v, 0, 1)) < _ks_bound(10000) + 1e-3
    assert _ks((w[:10000] + 2.0) / 8.0, lambda v: np.clip(v, 0, 1)) < _ks_bound(10000) + 1e-3


@pytest.mark.parametrize("dtype", [ow.int32, ow.int64])
def test_uniform_integers_cover_their_range_evenly(dtype: ow.DType) -> None:
    n = 16000
    with ow.Graph().as_default():
        x = _run(ow.random_uniform([n], minval=-3, maxval=5, dtype=dtype, seed=5))
    assert x.dtype == dtype.as_numpy_dtype
    assert x.min() == -3
    assert x.max() == 4
    counts = np.bincount(x + 3, minlength=8)
    chi2 = float(((counts - n / 8) ** 2 / (n / 8)).sum())
    assert chi2 < 30.0  # 7 degrees of freedom: p < 1e-4


def test_uniform_integers_over_the_whole_dtype_range() -> None:
    with ow.Graph().as_default():
        a = ow.random_uniform([4000], minval=-(2**31), maxval=2**31 - 1, dtype=ow.int32, seed=6)
        b = ow.random_uniform([4000], minval=-(2**63), maxval=2**63 - 1, dtype=ow.int64, seed=7)
        x, y = _run([a, b])
    assert x.min() < -(2**30)
    assert x.max() > 2**30
    assert x.max() < 2**31 - 1
    assert y.min() < -(2**61)
    assert y.max() > 2**61
    assert y.max() < 2**63 - 1
    assert abs(y.astype(np.float64).mean()) < 0.1 * 2**63


def test_uniform_integer_arguments_are_checked() -> None:
    with ow.Graph().as_default():
        with pytest.raises(ValueError, match="Must specify maxval for integer dtype"):
            ow.random_uniform([2], dtype=ow.int32)
        with pytest.raises(ValueError, match="invalid value"):
            ow.random_uniform([2], maxval=3, dtype=ow.uint8)
        lo = ow.placeholder(ow.int32, [])
        x = ow.random_uniform([3], minval=lo, maxval=5, dtype=ow.int32)
        with ow.Session() as s:
            assert s.run(x, {lo: 4}).tolist() == [4, 4, 4]
            for bad in (5, 9):
                with pytest.raises(errors.InvalidArgumentError, match="Need minval < maxval"):
                    s.run(x, {lo: bad})


def test_shape_arguments_are_checked_at_build_and_run_time() -> None:
    with ow.Graph().as_default():
        with pytest.raises(ValueError, match="Shape must be rank 1 but is rank 0"):
            ow.random_normal(5)
        with pytest.raises(ValueError, match="Dimension -5 must be >= 0"):
            ow.random_normal([2, -5])
        with pytest.raises(TypeError, match="float16, float32 or float64"):
            ow.random_normal([2], dtype=ow.int32)
        assert ow.random_uniform(ow.TensorShape([2, 3])).shape.as_list() == [2, 3]
        with pytest.raises(ValueError, match="partially known"):
            ow.random_uniform(ow.TensorShape([None, 3]))
        dims = ow.placeholder(ow.int32, [None])
        x = ow.random_normal(dims, seed=1)
        assert x.shape.ndims is None
        with ow.Session() as s:
            assert s.run(x, {dims: [2, 0]}).shape == (2, 0)
            with pytest.raises(errors.InvalidArgumentError, match="Dimension -1 must be >= 0"):
                s.run(x, {dims: [2, -1]})


def test_shuffle_permutes_the_first_dimension() -> None:
    x = np.arange(40).reshape(10, 4)
    with ow.Graph().as_default():
        t = ow.random_shuffle(x, seed=8)
        words = ow.random_shuffle(np.array([b"a", b"b", b"c", b"d"], object), seed=9)
        scalar = ow.random_shuffle(3.5)
        runs = _run([t, words, scalar], runs=6)
    seen = set()
    for y, w, s in runs:
        assert sorted(map(tuple, y.tolist())) == sorted(map(tuple, x.tolist()))
        assert sorted(w.tolist()) == [b"a", b"b", b"c", b"d"]
        assert s == 3.5
        seen.add(tuple(y[:, 0].tolist()))
    assert len(seen) == 6  # every run draws a new permutation


def test_shuffle_positions_are_uniform() -> None:
    # Where element 0 lands, over 2000 runs of one shuffle op.
    with ow.Graph().as_default():
        t = ow.random_shuffle(np.arange(4), seed=4)
        with ow.Session() as s:
            where = [int(np.argmax(s.run(t) == 0)) for _ in range(2000)]
    counts = np.bincount(where, minlength=4)
    chi2 = float(((counts - 500) ** 2 / 500).sum())
    assert chi2 < 21.0  # 3 degrees of freedom: p < 1e-4


def test_multinomial_frequencies_track_softmax_of_the_logits() -> None:
    probs = np.array([0.1, 0.2, 0.7])
    logits = np.stack([np.log(probs), [0.0, 0.0, -np.inf], [-np.inf] * 3]).astype(np.float32)
    n = 20000
    with ow.Graph().as_default():
        x = _run(ow.multinomial(logits, n, seed=10))
        c = ow.random.categorical(logits[:1], 5, dtype=ow.int32)
        assert c.dtype is ow.int32
        assert c.shape.as_list() == [1, 5]
    assert x.shape == (3, n)
    assert x.dtype == np.int64
    counts = np.bincount(x[0], minlength=3)
    chi2 = float(((counts - n * probs) ** 2 / (n * probs)).sum())
    assert chi2 < 20.0  # 2 degrees of freedom: p < 1e-4
    assert set(np.unique(x[1]).tolist()) == {0, 1}  # -inf is never drawn
    assert abs(np.mean(x[1]) - 0.5) < 0.02
    assert set(x[2].tolist()) == {3}  # no finite logit: num_classes, as TensorFlow


def test_multinomial_arguments_are_checked() -> None:
    with ow.Graph().as_default():
        with pytest.raises(ValueError, match="Shape must be rank 2 but is rank 1"):
            ow.multinomial([1.0, 2.0], 3)
        with pytest.raises(ValueError, match="must be non-negative but is -1"):
            ow.multinomial([[1.0, 2.0]], -1)
        with pytest.raises(ValueError, match="invalid value"):
            ow.multinomial([[1.0, 2.0]], 1, output_dtype=ow.float32)
        empty = ow.multinomial(np.zeros((2, 3), np.float32), 0)
        no_classes = ow.multinomial(np.zeros((2, 0), np.float32), 2)
        with ow.Session() as s:
            assert s.run(empty).shape == (2, 0)
            with pytest.raises(errors.InvalidArgumentError, match="num_classes should be positive"):
                s.run(no_classes)


# -- seeds -----------------------------------------------------------------------------------


def _program(graph_seed: int | None, op_seed: int | None) -> list[np.ndarray]:
    """Two random ops of a small program built in a fresh graph, run once in a fresh session."""
    with ow.Graph().as_default():
        if graph_seed is not None:
            ow.set_random_seed(graph_seed)
        a = ow.random_normal([5], seed=op_seed)
        b = ow.random_uniform([5], seed=op_seed)
        return list(_run([a, b]))


def test_get_seed_follows_tensorflow_1_rules() -> None:
    with ow.Graph().as_default() as g:
        assert ow.get_seed(None) == (None, None)
        assert ow.get_seed(5) == (87654321, 5)
        assert ow.get_seed(2**31 + 3) == (87654321, 4)
        ow.set_random_seed(0)
        assert ow.get_seed(0) == (0, 2**31 - 1)  # (0, 0) means "no seed" to the kernels
        ow.set_random_seed(7)
        assert g.seed == 7
        assert ow.get_seed(3) == (7, 3)
        ow.constant(1.0)
        n = len(g.get_operations())
        assert ow.get_seed(None) == (7, n)  # the op count when the op is made
        x = ow.random_normal([2])
        op = next(o for o in g.get_operations() if o.type == "RandomStandardNormal")
        assert (op.get_attr("seed"), op.get_attr("seed2")) == (7, n)
        assert x.op is op  # mean 0 and stddev 1: the op itself, no scaling ops
        for bad in (1.5, True, "3", 2**64):
            with pytest.raises((TypeError, ValueError)):
                ow.set_random_seed(bad)
            with pytest.raises((TypeError, ValueError)):
                ow.random_normal([2], seed=bad)
        ow.set_random_seed(None)
        assert g.seed is None


def test_the_same_seeds_give_the_same_numbers_in_fresh_graphs_and_sessions() -> None:
    for graph_seed, op_seed in [(None, 4), (3, None), (3, 4)]:
        first, again = _program(graph_seed, op_seed), _program(graph_seed, op_seed)
        for x, y in zip(first, again, strict=True):
            np.testing.assert_array_equal(x, y)
    # Graph seed only: the two ops of one program get different sequences.
    _a, _b = _program(3, None)
    with ow.Graph().as_default():
        ow.set_random_seed(3)
        x = ow.random_uniform([5])
        y = ow.random_uniform([5])
        u, v = _run([x, y])
    assert not np.array_equal(u, v)


def test_different_seeds_give_different_numbers() -> None:
    outcomes = [_program(g, o)[0].tobytes() for g, o in [(None, 4), (None, 5), (1, 4), (2, 4)]]
    assert len(set(outcomes)) == 4
    # No seed at all: each session draws its own.
    with ow.Graph().as_default():
        x = ow.random_normal([8])
        assert (x.op.get_attr("seed"), x.op.get_attr("seed2")) == (0, 0)
        assert not np.array_equal(_run(x), _run(x))


def test_runs_continue_the_sequence_and_sessions_are_independent() -> None:
    with ow.Graph().as_default():
        x = ow.random_normal([4], seed=1)
        y = ow.random_normal([4], seed=1)  # the same seeds: the same sequence as x
        with ow.Session() as s1, ow.Session() as s2:
            one = [s1.run(x) for _ in range(3)]
            interleaved = [s2.run(x) if i % 2 == 0 else s1.run(y) for i in range(6)]
            # y in s1 starts its own sequence, x in s2 too.
            np.testing.assert_array_equal(np.array(interleaved[0::2]), np.array(one))
            np.testing.assert_array_equal(np.array(interleaved[1::2]), np.array(one))
            assert len({v.tobytes() for v in one}) == 3
            # Fetched together with something else (another compiled signature), x goes on.
            fourth, _ = s1.run([x, y])
            assert not any(np.array_equal(fourth, v) for v in one)


# Runs every random op (large enough to be split over threads) twice and prints a digest.
THREADS_PROBE = """
import hashlib, sys
import numpy as np
import opweave as ow
config = ow.ConfigProto(intra_op_parallelism_threads={threads})
with ow.Graph().as_default():
    ow.set_random_seed(5)
    outs = [
        ow.random_normal([300000]),
        ow.random_normal([100001], dtype=ow.float64),
        ow.truncated_normal([300000]),
        ow.truncated_normal([100001], dtype=ow.float64),
        ow.random_uniform([300001]),
        ow.random_uniform([100000], dtype=ow.float16),
        ow.random_uniform([300000], maxval=1000, dtype=ow.int32),
        ow.random_uniform([100001], minval=-7, maxval=2**40, dtype=ow.int64),
        ow.random_shuffle(np.arange(400000).reshape(100000, 4)),
        ow.multinomial(np.random.default_rng(0).standard_normal((4000, 30)), 50),
        ow.nn.dropout(np.ones((1000, 300), np.float32), rate=0.3),
    ]
    with ow.Session(config=config) as s:
        digest = hashlib.sha256()
        for _ in range(2):
            for v in s.run(outs):
                digest.update(v.tobytes())
        print(ow.get_num_threads(), digest.hexdigest())
"""


def test_the_same_bits_for_one_and_three_intra_op_threads() -> None:
    results = []
    for threads in (1, 3):
        done = run_python(THREADS_PROBE.replace("{threads}", str(threads)), timeout=120)
        assert done.returncode == 0, done.stderr
        used, digest = done.stdout.split()
        assert int(used) == threads
        results.append(digest)
    assert results[0] == results[1]


# -- dropout ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "keep"), [({"keep_prob": 0.5}, 0.5), ({"rate": 0.25}, 0.75), ({"rate": 0.9}, 0.1)]
)
def test_dropout_keeps_the_fraction_and_scales_by_its_inverse(
    kwargs: dict[str, float], keep: float
) -> None:
    with ow.Graph().as_default():
        y = _run(ow.nn.dropout(np.full((100, 100), 3.0, np.float32), seed=1, **kwargs))
    assert np.all((y == 0) | np.isclose(y, 3.0 / keep, rtol=1e-6))
    kept = float(np.mean(y != 0))
    assert abs(kept - keep) < 5 * math.sqrt(keep * (1 - keep) / y.size)


def test_dropout_with_keep_prob_one_returns_x_itself() -> None:
    with ow.Graph().as_default():
        x = ow.placeholder(ow.float32, [3])
        assert ow.nn.dropout(x, keep_prob=1.0) is x
        assert ow.nn.dropout(x, rate=0) is x


def test_dropout_keep_prob_may_be_fed() -> None:
    with ow.Graph().as_default():
        x = np.arange(1, 2001, dtype=np.float64)
        keep = ow.placeholder(ow.float64, [])
        y = ow.nn.dropout(x, keep_prob=keep, seed=2)
        assert y.shape.as_list() == [2000]
        with ow.Session() as s:
            np.testing.assert_array_equal(s.run(y, {keep: 1.0}), x)
            half = s.run(y, {keep: 0.5})
    assert np.all((half == 0) | (half == 2 * x))
    assert 0.4 < np.mean(half != 0) < 0.6


def test_dropout_noise_shape_broadcasts_decisions() -> None:
    with ow.Graph().as_default():
        x = ow.placeholder(ow.float32, [50, 8])
        rows = ow.nn.dropout(x, rate=0.5, noise_shape=[50, 1], seed=3)
        cols = ow.nn.dropout(x, rate=0.5, noise_shape=[None, 1], seed=3)
        with ow.Session() as s:
            a, b = s.run([rows, cols], {x: np.ones((50, 8), np.float32)})
    for y in (a, b):
        assert np.all((y == 0).all(axis=1) | (y == 2).all(axis=1))
        assert 0 < np.mean(y[:, 0] == 0) < 1
    np.testing.assert_array_equal(a, b)  # the same seed and noise shape: the same mask
    with ow.Graph().as_default(), pytest.raises(ValueError, match="partially known"):
        ow.nn.dropout(ow.placeholder(ow.float32, [None, 8]), rate=0.5, noise_shape=[None, 1])


def test_dropout_gradient_is_the_mask_times_the_scale() -> None:
    with ow.Graph().as_default():
        x = ow.placeholder(ow.float32, [400])
        w = np.linspace(-1, 1, 400).astype(np.float32)
        y = ow.nn.dropout(x, keep_prob=0.8, seed=4)
        (g,) = ow.gradients(ow.reduce_sum(y * w), [x])
        with ow.Session() as s:
            out, grad = s.run([y, g], {x: np.ones(400, np.float32)})
    np.testing.assert_allclose(grad, np.where(out != 0, w / 0.8, 0.0), rtol=1e-6)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"keep_prob": 0.5, "rate": 0.5}, "Cannot specify both"),
        ({}, "must be provided"),
        ({"keep_prob": 0.0}, r"range \[0, 1\)"),
        ({"rate": 1.5}, r"range \[0, 1\)"),
        ({"rate": -0.1}, r"range \[0, 1\)"),
        ({"keep_prob": "a"}, "keep_prob"),
        ({"rate": True}, "rate"),
        ({"rate": np.array([0.5, 0.5])}, "rate"),
    ],
)
def test_dropout_argument_errors(kwargs: dict[str, Any], message: str) -> None:
    with ow.Graph().as_default(), pytest.raises(ValueError, match=message):
        ow.nn.dropout(ow.placeholder(ow.float32, [3]), **kwargs)


def test_dropout_needs_floats_and_a_scalar_rate() -> None:
    with ow.Graph().as_default():
        with pytest.raises(ValueError, match="floating point"):
            ow.nn.dropout([1, 2], rate=0.5)
        with pytest.raises(ValueError, match="scalar"):
            ow.nn.dropout([1.0, 2.0], rate=ow.placeholder(ow.float32, [2]))
        half = ow.nn.dropout(np.ones(8, np.float16), rate=ow.constant(0.5, ow.float64), seed=1)
        assert half.dtype is ow.float16
        assert set(_run(half).tolist()) <= {0.0, 2.0}


# -- initializers ----------------------------------------------------------------------------


def test_constant_zeros_and_ones_initializers() -> None:
    with ow.Graph().as_default():
        z = ow.zeros_initializer()([2, 3], ow.int32)
        o = ow.ones_initializer(dtype=ow.float64)(ow.TensorShape([2]))
        c = ow.constant_initializer([1, 2, 3, 4])([2, 3])
        scalar = ow.constant_initializer(7)([2, 2], ow.int64)
        zv, ov, cv, sv = _run([z, o, c, scalar])
        with pytest.raises(ValueError, match=r"Too many elements provided\. Needed at most 2"):
            ow.constant_initializer([1, 2, 3])([2])
        with pytest.raises(TypeError, match="Expected Tensor's shape"):
            ow.constant_initializer([1.0, 2.0], verify_shape=True)([1, 2])
        with pytest.raises(TypeError, match="Expected int32"):
            ow.constant_initializer(2.5)([2], ow.int32)
        with pytest.raises(TypeError, match="Invalid type for initial value"):
            ow.constant_initializer({"a": 1})
    assert zv.dtype == np.int32
    assert zv.tolist() == [[0] * 3] * 2
    assert ov.dtype == np.float64
    assert ov.tolist() == [1.0, 1.0]
    assert cv.dtype == np.float32
    assert cv.tolist() == [[1, 2, 3], [4, 4, 4]]
    assert sv.dtype == np.int64
    assert sv.tolist() == [[7, 7], [7, 7]]


def test_fans_of_vectors_matrices_and_convolution_kernels() -> None:
    fans = init_ops._compute_fans
    assert fans([]) == (1, 1)
    assert fans([5]) == (5, 5)
    assert fans([3, 4]) == (3, 4)
    assert fans([3, 3, 16, 32]) == (144, 288)  # 3x3 receptive field
    assert fans([5, 8, 4]) == (40, 20)


def _stats(init: Any, shape: list[int], partition_info: Any = None) -> np.ndarray:
    with ow.Graph().as_default():
        return _run(init(shape, partition_info=partition_info))  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("mode", "n"), [("fan_in", 3 * 3 * 64), ("fan_out", 3 * 3 * 32), ("fan_avg", 3 * 3 * 48)]
)
def test_variance_scaling_modes_and_distributions(mode: str, n: int) -> None:
    shape = [3, 3, 64, 32]
    uniform = _stats(ow.variance_scaling_initializer(2.0, mode, "uniform", seed=1), shape)
    limit = math.sqrt(3.0 * 2.0 / n)
    assert np.all(np.abs(uniform) <= limit)
    assert np.abs(uniform).max() > 0.99 * limit
    truncated = _stats(ow.variance_scaling_initializer(2.0, mode, seed=1), shape)
    target = math.sqrt(2.0 / n)
    assert abs(truncated.std() / target - 1) < 0.03  # the truncation correction holds
    assert np.all(np.abs(truncated) < 2 * target / init_ops.TRUNCATED_STDDEV)
    plain = _stats(ow.variance_scaling_initializer(2.0, mode, "untruncated_normal", seed=1), shape)
    assert abs(plain.std() / target - 1) < 0.03
    assert np.abs(plain).max() > 2 * target / init_ops.TRUNCATED_STDDEV


def test_variance_scaling_normal_is_tensorflow_1s_alias_of_truncated_normal() -> None:
    a = _stats(ow.variance_scaling_initializer(distribution="normal", seed=3), [30, 20])
    b = _stats(ow.variance_scaling_initializer(distribution="truncated_normal", seed=3), [30, 20])
    np.testing.assert_array_equal(a, b)


def test_variance_scaling_arguments_are_checked() -> None:
    for kwargs, what in [
        ({"scale": 0.0}, "scale"),
        ({"mode": "fan"}, "mode"),
        ({"distribution": "cauchy"}, "distribution"),
    ]:
        with pytest.raises(ValueError, match=what):
            ow.variance_scaling_initializer(**kwargs)
    with pytest.raises(ValueError, match="floating point"):
        ow.variance_scaling_initializer(dtype=ow.int32)
    with pytest.raises(ValueError, match="floating point"):
        ow.random_normal_initializer(dtype=ow.int64)


def test_glorot_initializers_and_partitioned_fans() -> None:
    u = _stats(ow.glorot_uniform_initializer(seed=2), [200, 100])
    limit = math.sqrt(6.0 / 300)
    assert np.all(np.abs(u) <= limit)
    assert abs(u.std() - limit / math.sqrt(3)) < 0.02 * limit
    nrm = _stats(ow.glorot_normal_initializer(seed=2), [200, 100])
    assert abs(nrm.std() / math.sqrt(2.0 / 300) - 1) < 0.03

    class Partition:
        full_shape = (200, 100)
        var_offset = (100, 0)

    part = _stats(ow.glorot_uniform_initializer(seed=2), [100, 100], Partition())
    assert part.shape == (100, 100)
    assert np.abs(part).max() <= limit
    assert np.abs(part).max() > 0.99 * limit


def test_random_initializers_use_their_arguments_and_seeds() -> None:
    n = _stats(ow.random_normal_initializer(1.0, 0.5, seed=4), [10000])
    assert abs(n.mean() - 1.0) < 0.03
    assert abs(n.std() - 0.5) < 0.02
    t = _stats(ow.truncated_normal_initializer(stddev=0.1, seed=4), [10000])
    assert np.abs(t).max() < 0.2
    u = _stats(ow.random_uniform_initializer(-0.5, 0.5, seed=4), [10000])
    assert u.min() >= -0.5
    assert u.max() < 0.5
    assert u.min() < -0.49
    ints = _stats(
        lambda s, partition_info: ow.random_uniform_initializer(0, 3, dtype=ow.int32)(s), [100]
    )
    assert set(ints.tolist()) == {0, 1, 2}
    np.testing.assert_array_equal(
        n, _stats(ow.random_normal_initializer(1.0, 0.5, seed=4), [10000])
    )
    uu = _stats(ow.uniform_unit_scaling_initializer(seed=1), [300, 10])
    assert np.abs(uu).max() < math.sqrt(3 / 300)


@pytest.mark.parametrize("shape", [[6, 6], [3, 8], [8, 3], [2, 3, 5]])
def test_orthogonal_initializer_gives_orthonormal_rows_or_columns(shape: list[int]) -> None:
    q = _stats(ow.orthogonal_initializer(gain=2.0, seed=5), shape)
    assert list(q.shape) == shape
    flat = q.reshape(-1, shape[-1]) / 2.0
    small = flat.T @ flat if flat.shape[0] >= flat.shape[1] else flat @ flat.T
    np.testing.assert_allclose(small, np.eye(small.shape[0]), atol=1e-5)
    with pytest.raises(ValueError, match="two-dimensional"):
        ow.orthogonal_initializer()([4])


def test_identity_initializer_and_its_partitions() -> None:
    init = ow.initializers.identity(gain=3.0)
    np.testing.assert_array_equal(_stats(init, [2, 3]), 3.0 * np.eye(2, 3))

    class Partition:
        full_shape = (4, 4)
        var_offset = (2, 0)

    np.testing.assert_array_equal(_stats(init, [2, 4], Partition()), 3.0 * np.eye(4)[2:])


def test_initializer_configs_round_trip_and_namespaces() -> None:
    for init in [
        ow.zeros_initializer(),
        ow.constant_initializer(3.0),
        ow.random_uniform_initializer(-1.0, 1.0, seed=2),
        ow.truncated_normal_initializer(0.0, 0.1, seed=3),
        ow.variance_scaling_initializer(2.0, "fan_out", "uniform", seed=4),
        ow.glorot_uniform_initializer(seed=5),
        ow.orthogonal_initializer(seed=6),
    ]:
        again = type(init).from_config(init.get_config())
        assert again.get_config() == init.get_config()
        json.dumps(init.get_config())
    assert ow.initializers.glorot_uniform is ow.glorot_uniform_initializer
    he = ow.initializers.he_normal(seed=1)
    assert (he.scale, he.mode, he.distribution) == (2.0, "fan_in", "truncated_normal")
    lecun = ow.initializers.lecun_uniform()
    assert (lecun.scale, lecun.mode, lecun.distribution) == (1.0, "fan_in", "uniform")
    target = getattr(ow, "global_variables_initializer", None)
    if target is None:
        with pytest.raises(AttributeError):
            ow.initializers.global_variables  # noqa: B018
    else:
        assert ow.initializers.global_variables is target


def test_tensorflow_1_names_are_available() -> None:
    import opweave.compat.v1 as tf

    for name in [
        "random_normal",
        "truncated_normal",
        "random_uniform",
        "random_shuffle",
        "multinomial",
        "set_random_seed",
        "get_seed",
        "zeros_initializer",
        "glorot_uniform_initializer",
        "variance_scaling_initializer",
    ]:
        assert getattr(tf, name) is getattr(ow, name), name
    assert tf.random.normal is ow.random_normal
    assert tf.random.uniform is ow.random_uniform
    assert tf.random.shuffle is ow.random_shuffle
    assert tf.random.truncated_normal is ow.truncated_normal
    assert tf.random.set_random_seed is ow.set_random_seed
    assert tf.nn.dropout is ow.nn.dropout
    assert "dropout" in ow.nn.__all__
    assert tf.initializers.zeros is ow.zeros_initializer
