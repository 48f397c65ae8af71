"""opweave.set_num_threads & co.: PyTorch's calls, checks and messages; resizing at any time."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator

import numpy as np
import opweave
import pytest
from opweave import _runtime


@pytest.fixture(autouse=True)
def _restore_pool_sizes() -> Iterator[None]:
    saved = _runtime.snapshot("intra"), _runtime.snapshot("inter")
    yield
    _runtime.restore("intra", saved[0])
    _runtime.restore("inter", saved[1])


def _parallel_work() -> None:
    """Work that uses the intra-op pool (a matmul big enough to be split)."""
    a = np.ones((256, 256), dtype=np.float32)
    np.testing.assert_allclose(opweave.kernels.matmul(a, a), a @ a)


@pytest.mark.parametrize("n", [1, 2, 3, 8])
def test_set_num_threads_sets_the_size_get_num_threads_reports(n: int) -> None:
    opweave.set_num_threads(n)
    assert opweave.get_num_threads() == n


@pytest.mark.parametrize("n", [1, 2, 5])
def test_set_num_interop_threads_sets_the_size_get_num_interop_threads_reports(n: int) -> None:
    opweave.set_num_interop_threads(n)
    assert opweave.get_num_interop_threads() == n


def test_the_two_pools_are_sized_independently() -> None:
    opweave.set_num_threads(3)
    opweave.set_num_interop_threads(1)
    assert (opweave.get_num_threads(), opweave.get_num_interop_threads()) == (3, 1)


@pytest.mark.parametrize(
    ("func", "value", "message"),
    [
        ("set_num_threads", 2.0, "set_num_threads expects an int, but got float"),
        ("set_num_threads", "2", "set_num_threads expects an int, but got str"),
        ("set_num_threads", True, "set_num_threads expects an int, but got bool"),
        ("set_num_threads", None, "set_num_threads expects an int, but got NoneType"),
        ("set_num_interop_threads", 1.5, "set_num_interop_threads expects an int, but got float"),
        ("set_num_interop_threads", False, "set_num_interop_threads expects an int, but got bool"),
    ],
)
def test_a_non_int_is_rejected_with_pytorchs_message(
    func: str, value: object, message: str
) -> None:
    before = opweave.get_num_threads(), opweave.get_num_interop_threads()
    with pytest.raises(TypeError, match=f"^{message}$") as info:
        getattr(opweave, func)(value)
    assert isinstance(info.value, RuntimeError), "PyTorch raises RuntimeError: catchable as both"
    assert (opweave.get_num_threads(), opweave.get_num_interop_threads()) == before


@pytest.mark.parametrize("func", ["set_num_threads", "set_num_interop_threads"])
@pytest.mark.parametrize("value", [0, -1, -8])
def test_a_non_positive_count_is_rejected_with_pytorchs_message(func: str, value: int) -> None:
    with pytest.raises(ValueError, match=f"^{func} expects a positive integer$") as info:
        getattr(opweave, func)(value)
    assert isinstance(info.value, RuntimeError)


@pytest.mark.parametrize("func", ["set_num_threads", "set_num_interop_threads"])
def test_a_count_above_the_limit_is_rejected(func: str) -> None:
    with pytest.raises(ValueError, match="at most 4096"):
        getattr(opweave, func)(4097)


def test_numpy_integers_are_accepted_like_in_pytorch() -> None:
    opweave.set_num_threads(np.int64(2))
    opweave.set_num_interop_threads(np.int32(3))
    assert (opweave.get_num_threads(), opweave.get_num_interop_threads()) == (2, 3)
    assert type(opweave.get_num_threads()) is int


def test_resizing_after_parallel_work_has_started_is_allowed_unlike_pytorch() -> None:
    opweave.set_num_threads(2)
    opweave.set_num_interop_threads(2)
    _parallel_work()
    opweave.set_num_threads(1)
    opweave.set_num_interop_threads(3)  # PyTorch: "cannot set number of interop threads ..."
    _parallel_work()
    assert (opweave.get_num_threads(), opweave.get_num_interop_threads()) == (1, 3)
    opweave.set_num_threads(3)
    _parallel_work()
    assert opweave.get_num_threads() == 3


def test_threads_context_manager_sets_inside_and_restores_after() -> None:
    opweave.set_num_threads(2)
    opweave.set_num_interop_threads(2)
    with opweave.threads(intra=1, inter=3):
        assert (opweave.get_num_threads(), opweave.get_num_interop_threads()) == (1, 3)
        _parallel_work()
    assert (opweave.get_num_threads(), opweave.get_num_interop_threads()) == (2, 2)


def test_threads_context_manager_leaves_an_unnamed_pool_alone() -> None:
    opweave.set_num_interop_threads(2)
    with opweave.threads(intra=1):
        assert opweave.get_num_interop_threads() == 2
        opweave.set_num_interop_threads(3)  # not restored: the block did not set it
    assert opweave.get_num_interop_threads() == 3


def test_threads_context_manager_restores_after_an_exception() -> None:
    opweave.set_num_threads(2)
    with pytest.raises(KeyError), opweave.threads(intra=1):
        raise KeyError("boom")
    assert opweave.get_num_threads() == 2


def test_threads_context_manager_restores_the_rule_that_chose_the_size() -> None:
    opweave.config.threading.set_intra_op_parallelism_threads(0)  # back to the system's choice
    source = _runtime.intra_source()
    size = opweave.get_num_threads()
    with opweave.threads(intra=size + 1):
        assert opweave.config.threading.get_intra_op_parallelism_threads() == size + 1
    assert (_runtime.intra_source(), opweave.get_num_threads()) == (source, size)
    assert opweave.config.threading.get_intra_op_parallelism_threads() == 0


def test_threads_context_managers_nest() -> None:
    opweave.set_num_threads(2)
    with opweave.threads(intra=3):
        with opweave.threads(intra=1):
            assert opweave.get_num_threads() == 1
        assert opweave.get_num_threads() == 3
    assert opweave.get_num_threads() == 2


def test_threads_works_as_a_decorator() -> None:
    @opweave.threads(intra=1)
    def inside() -> int:
        return opweave.get_num_threads()

    opweave.set_num_threads(2)
    assert inside() == 1
    assert opweave.get_num_threads() == 2


def test_threads_checks_its_arguments_before_changing_anything() -> None:
    opweave.set_num_threads(2)
    with pytest.raises(ValueError, match="positive integer"), opweave.threads(intra=3, inter=0):
        pass  # pragma: no cover - never entered
    with pytest.raises(TypeError, match="expects an int, but got float"):
        opweave.threads(intra=1.0)  # type: ignore[arg-type]
    assert opweave.get_num_threads() == 2


def _package_functions_named(name: str) -> dict[str, Callable[[int], None]]:
    """Every function called ``name`` in the opweave modules loaded by ``import opweave``."""
    found: dict[int, tuple[str, Callable[[int], None]]] = {}
    for module_name, module in list(sys.modules.items()):
        if module_name == "opweave" or module_name.startswith("opweave."):
            fn = getattr(module, name, None)
            if callable(fn):
                found.setdefault(id(fn), (f"{module_name}.{name}", fn))
    return dict(found.values())


@pytest.mark.parametrize(
    ("name", "pool"), [("set_num_threads", "intra"), ("set_num_interop_threads", "inter")]
)
def test_every_setter_of_that_name_in_the_package_is_the_one_public_path(
    name: str, pool: str
) -> None:
    # A second setter beside the public one (opweave._pool had one) resized the pool without
    # recording it: TensorFlow's getter and a later threads() block then disagreed with the size.
    setters = _package_functions_named(name)
    assert list(setters.values()) == [getattr(opweave, name)], sorted(setters)
    getters = {
        "intra": (
            opweave.get_num_threads,
            opweave.config.threading.get_intra_op_parallelism_threads,
        ),
        "inter": (
            opweave.get_num_interop_threads,
            opweave.config.threading.get_inter_op_parallelism_threads,
        ),
    }[pool]
    for qualified, setter in setters.items():
        setter(3)
        assert (getters[0](), getters[1]()) == (3, 3), qualified
        with opweave.threads(**{pool: 1}):
            pass
        assert (getters[0](), getters[1]()) == (3, 3), qualified
