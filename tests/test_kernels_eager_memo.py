"""opweave.kernels' memo of calls made with arrays only (each op's signature run in C++) gives
exactly what the whole path gives: the same bits, dtypes, shapes and errors."""

from __future__ import annotations

import ast
import builtins
from pathlib import Path
from typing import Any

import numpy as np
import opweave
import pytest
from opweave import kernels
from opweave.ops._op_def import PUBLIC

RNG = np.random.default_rng(7)


def _arrays(shape: tuple[int, ...], dtype: Any, n: int) -> list[Any]:
    if np.dtype(dtype).kind == "f":
        return [RNG.standard_normal(shape).astype(dtype) for _ in range(n)]
    return [RNG.integers(-50, 50, size=shape).astype(dtype) for _ in range(n)]


def _same(a: Any, b: Any) -> None:
    assert type(a) is type(b) is np.ndarray
    assert a.dtype == b.dtype
    assert a.shape == b.shape
    np.testing.assert_array_equal(a, b)
    assert a.tobytes() == b.tobytes()


UNARY = ["abs", "negative", "exp", "tanh", "reduce_sum", "reduce_max", "reduce_mean"]
BINARY = ["add", "subtract", "multiply", "maximum", "minimum", "equal", "less", "pow"]


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("shape", [(10,), (3, 4), (70, 70)])
def test_memoized_unary_calls_give_what_keyword_calls_give(name: str, shape: Any) -> None:
    fn = getattr(kernels, name)
    for x in _arrays(shape, np.float32, 3):
        # A keyword call never takes the memo; a positional call takes it after the first one.
        _same(fn(x), fn(x=x) if name in ("abs", "negative", "exp", "tanh") else fn(input_tensor=x))
    assert len(fn._eager_memo) >= 1


@pytest.mark.parametrize(
    ("name", "dtype"),
    # Integers to negative powers are an error: pow on floats only.
    [(n, np.float64) for n in BINARY] + [(n, np.int32) for n in BINARY if n != "pow"],
)
def test_memoized_binary_calls_give_what_keyword_calls_give(name: str, dtype: Any) -> None:
    fn = getattr(kernels, name)
    for x, y in zip(_arrays((4, 5), dtype, 3), _arrays((5,), dtype, 3), strict=True):
        _same(fn(x, y), fn(x=x, y=y))
    assert len(fn._eager_memo) >= 1


def test_memoized_gather_gives_the_whole_paths_result_and_errors() -> None:
    params = np.arange(12, dtype=np.float32).reshape(4, 3)
    for idx in ([3, 0], [1, 1], [0, 2]):
        indices = np.array(idx, dtype=np.int32)
        _same(kernels.gather(params, indices), kernels.gather(params, indices=indices))
    assert len(kernels.gather._eager_memo) >= 1
    bad = np.array([0, 4], dtype=np.int32)
    with pytest.raises(opweave.errors.InvalidArgumentError) as memoized:
        kernels.gather(params, bad)
    with pytest.raises(opweave.errors.InvalidArgumentError) as whole:
        kernels.gather(params, indices=bad)
    assert str(memoized.value) == str(whole.value)
    assert memoized.value.__context__ is None


def test_an_array_given_twice_is_keyed_apart_from_two_arrays() -> None:
    x = np.arange(6.0).reshape(2, 3)
    a, b = np.full((2, 3), 5.0), np.ones((2, 3))
    for _ in range(2):
        _same(kernels.subtract(x, x), np.zeros((2, 3)))
        _same(kernels.subtract(a, b), np.full((2, 3), 4.0))
        _same(kernels.subtract(b, b), np.zeros((2, 3)))


def test_shapes_and_dtypes_the_memo_has_not_seen_take_the_whole_path() -> None:
    x = np.arange(4, dtype=np.float32)
    kernels.add(x, x + 1)
    with pytest.raises(TypeError, match="float64"):
        kernels.add(x, x.astype(np.float64))
    with pytest.raises(ValueError, match=r"\[4\], \[5\]"):
        kernels.add(x, np.arange(5, dtype=np.float32))


class _Sub(np.ndarray):  # type: ignore[type-arg]
    pass


def test_subclasses_0d_byte_swapped_and_misaligned_arrays_are_not_memoized() -> None:
    x = np.arange(8, dtype=np.float64) - 3.0
    fn = kernels.abs
    fn(x)
    before = len(fn._eager_memo)
    swapped = x.astype(x.dtype.newbyteorder())
    buf = np.zeros(8 * 8 + 1, dtype=np.uint8)[1:].view(np.float64)  # not aligned
    buf[:] = x
    for odd in (x.view(_Sub), np.array(-2.5), swapped, buf):
        np.testing.assert_array_equal(fn(odd), np.abs(np.asarray(odd)), strict=False)
    assert len(fn._eager_memo) == before


def test_values_a_shape_function_reads_are_never_memoized_by_shape() -> None:
    x = np.arange(10, dtype=np.int32)
    assert kernels.reshape(x, np.array([2, 5])).shape == (2, 5)
    assert kernels.reshape(x, np.array([5, 2])).shape == (5, 2)


@pytest.mark.parametrize("n", [10, 5000, 100_003])
def test_memoized_calls_give_the_same_bits_for_any_thread_count(n: int) -> None:
    x = RNG.standard_normal(n)
    sums = {kernels.reduce_sum(x, _num_threads=t).tobytes() for t in (1, 2, 3, 1, 2, 3)}
    assert len(sums) == 1


def test_kernels_module_uses_no_builtin_a_kernel_shadows() -> None:
    # opweave.kernels caches kernel functions as module attributes, abs and round included: its
    # own code must not call those builtins by their bare names.
    shadowed = set(PUBLIC) & set(dir(builtins))
    tree = ast.parse(Path(kernels.__file__).read_text())
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    assert not used & shadowed


def test_memoized_keyword_and_python_value_calls_give_what_the_whole_path_gives() -> None:
    # A str argument (name) is never keyed: those calls take the whole path.
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    for _ in range(2):
        _same(kernels.reduce_sum(x, axis=1), kernels.reduce_sum(x, axis=1, name="s"))
        _same(
            kernels.reduce_max(x, keepdims=True, axis=[0, 1]),
            kernels.reduce_max(x, axis=[0, 1], keepdims=True, name="m"),
        )
        _same(kernels.add(x, 2.5), kernels.add(x, 2.5, name="a"))
        _same(kernels.slice(x, [1, 0], [2, 3]), kernels.slice(x, [1, 0], [2, 3], name="s"))
        _same(kernels.transpose(x), kernels.transpose(x, name="t"))
        _same(kernels.reshape(x, [2, 6]), kernels.reshape(x, (2, 6), name="r"))
        _same(kernels.concat([x, x + 1], 0), kernels.concat([x, x + 1], 0, name="c"))
    assert kernels.reduce_sum(x, axis=0).shape == (4,)
    assert kernels.reduce_sum(x, axis=1).shape == (3,)


def test_python_values_are_keyed_by_type_and_exact_value() -> None:
    x = np.array([-0.0, 1.0], dtype=np.float64)
    for _ in range(2):
        assert np.signbit(kernels.add(x, -0.0)[0])
        assert not np.signbit(kernels.add(x, 0.0)[0])
    small = np.arange(3, dtype=np.int8)
    _same(kernels.add(small, 3), np.arange(3, 6, dtype=np.int8))
    with pytest.raises(TypeError):
        kernels.add(small, 300)
    with pytest.raises(TypeError):
        kernels.add(small, 3.0)
    with pytest.raises(TypeError, match="bool"):  # True is not a number for an op argument
        kernels.add(small, True)


def test_an_array_twice_in_a_list_is_keyed_apart_from_two_arrays() -> None:
    x = np.arange(3.0)
    _same(kernels.concat([x, x], 0), np.concatenate([x, x]))
    _same(kernels.concat([x, x + 10], 0), np.concatenate([x, x + 10]))
    _same(kernels.concat([x + 20, x], 0), np.concatenate([x + 20, x]))


def test_str_arguments_are_keyed_by_value() -> None:
    x = np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)
    for _ in range(2):
        same = kernels.max_pool(x, [1, 3, 3, 1], [1, 1, 1, 1], "SAME")
        valid = kernels.max_pool(x, [1, 3, 3, 1], [1, 1, 1, 1], "VALID")
        assert same.shape == (1, 4, 4, 1)
        assert valid.shape == (1, 2, 2, 1)
        # A str equal to an earlier one but another object.
        padding = "".join(["SA", "ME"])
        _same(kernels.max_pool(x, [1, 3, 3, 1], [1, 1, 1, 1], padding), same)


def test_an_array_argument_the_function_reads_by_value_is_never_memoized_by_shape() -> None:
    # leaky_relu takes alpha's value (alpha.item()) and pad its paddings' values: neither array
    # is an input of the op, so calls with other values must not reuse the first call's plan.
    x = np.array([-1.0, 2.0])
    assert kernels.leaky_relu(x, np.array([0.5]))[0] == -0.5
    assert kernels.leaky_relu(x, np.array([0.25]))[0] == -0.25
    assert kernels.pad(x, np.array([[1, 0]])).shape == (3,)
    assert kernels.pad(x, np.array([[2, 3]])).shape == (7,)


def test_a_call_that_cannot_be_remembered_is_remembered_as_such() -> None:
    # truediv of integers runs three ops (two casts and a division): never one plan.
    x, y = np.arange(1, 5, dtype=np.int32), np.full(4, 2, dtype=np.int32)
    for _ in range(3):
        _same(kernels.truediv(x, y), x / y)
    assert kernels.truediv._eager_memo.call((x, y), {}, 0) is False
