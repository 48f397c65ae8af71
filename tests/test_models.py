"""The built-in models compute what their docstrings say, the same in every process."""

from __future__ import annotations

import numpy as np
import opweave as ow
import pytest
from opweave import models


def _run(m: models.Model) -> np.ndarray:
    with ow.Session(graph=m.graph) as sess:
        return np.asarray(sess.run(m.fetches, m.feed_dict))


def test_mlp_towers_matches_numpy_forward_pass() -> None:
    m = models.mlp_towers(towers=3, layers=2, batch=5, width=7, dtype="float64", seed=3)
    x = next(iter(m.feed_dict.values()))
    consts = {op.name: op.outputs[0] for op in m.graph.get_operations() if op.type == "Const"}
    with ow.Session(graph=m.graph) as sess:
        values = sess.run(consts)
    total = np.zeros((5, 7))
    for t in range(3):
        h = x
        for layer in range(2):
            w = values[f"tower_{t}/dense_{layer}/w"]
            b = values[f"tower_{t}/dense_{layer}/b"]
            h = np.maximum(h @ w + b, 0.0)
        total += h
    np.testing.assert_allclose(_run(m), total.sum(axis=1), rtol=1e-12)


def test_wide_reductions_matches_numpy() -> None:
    m = models.wide_reductions(branches=4, rows=6, cols=3, dtype="float64", seed=1)
    x = next(iter(m.feed_dict.values()))
    expected = sum(np.tanh(x * (1.0 + i / 4)).sum(axis=i % 2).sum() for i in range(4))
    np.testing.assert_allclose(_run(m), expected, rtol=1e-12)


@pytest.mark.parametrize("length", [1, 2, 7])
def test_tiny_chain_adds_one_every_other_op(length: int) -> None:
    m = models.tiny_chain(length=length, size=3)
    assert len([op for op in m.graph.get_operations() if op.type in ("Add", "Mul")]) == length
    np.testing.assert_array_equal(_run(m), np.full(3, (length + 1) // 2, dtype=np.float32))


def test_same_seed_builds_the_same_model() -> None:
    a, b = models.mlp_towers(batch=4, width=8, seed=5), models.mlp_towers(batch=4, width=8, seed=5)
    np.testing.assert_array_equal(_run(a), _run(b))
    c = models.mlp_towers(batch=4, width=8, seed=6)
    assert not np.array_equal(_run(a), _run(c))


def test_builtin_names_the_three_models() -> None:
    assert {
        "mlp": models.mlp_towers,
        "wide": models.wide_reductions,
        "chain": models.tiny_chain,
    } == models.BUILTIN


@pytest.mark.parametrize("bad", [0, -1, 2.0, True])
def test_sizes_must_be_positive_ints(bad: object) -> None:
    with pytest.raises(ValueError, match="towers must be a positive int"):
        models.mlp_towers(towers=bad)  # type: ignore[arg-type]


def test_integer_dtype_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="float32 or float64, not int32"):
        models.tiny_chain(dtype="int32")


@pytest.mark.parametrize("name", list(models.BUILTIN))
def test_small_sizes_build_each_builtin_smaller_than_the_default(name: str) -> None:
    assert set(models.SMALL) == set(models.BUILTIN)
    small = models.BUILTIN[name](**models.SMALL[name])
    default = models.BUILTIN[name]()
    size = sum(a.size for a in small.feed_dict.values())
    assert size < sum(a.size for a in default.feed_dict.values()) or len(
        small.graph.get_operations()
    ) < len(default.graph.get_operations())
    assert np.all(np.isfinite(_run(small)))
