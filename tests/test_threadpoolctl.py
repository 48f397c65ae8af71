"""threadpoolctl sees and limits opweave's intra-op pool like any BLAS or OpenMP runtime."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import opweave
import pytest
from opweave import _opweave_core, _runtime

threadpoolctl = pytest.importorskip("threadpoolctl", reason="threadpoolctl is not installed")


@pytest.fixture(autouse=True)
def _restore_pool_sizes() -> Iterator[None]:
    saved = _runtime.snapshot("intra"), _runtime.snapshot("inter")
    yield
    _runtime.restore("intra", saved[0])
    _runtime.restore("inter", saved[1])


def _opweave_entries() -> list[dict[str, Any]]:
    return [i for i in threadpoolctl.threadpool_info() if i["internal_api"] == "opweave"]


def _blas_threads() -> list[int]:
    return [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]


def test_threadpool_info_lists_opweave_once_with_its_intra_op_size() -> None:
    opweave.set_num_threads(3)
    (entry,) = _opweave_entries()
    assert entry["user_api"] == "opweave"
    assert entry["num_threads"] == 3
    assert entry["version"] == opweave.__version__
    assert os.path.samefile(entry["filepath"], _opweave_core.__file__)


def test_threadpool_limits_1_limits_opweave_inside_the_block_and_restores_after() -> None:
    opweave.set_num_threads(2)
    with threadpoolctl.threadpool_limits(1):
        assert opweave.get_num_threads() == 1
        assert _opweave_entries()[0]["num_threads"] == 1
    assert opweave.get_num_threads() == 2
    assert opweave.config.threading.get_intra_op_parallelism_threads() == 2


def test_threadpool_limits_with_user_api_opweave_limits_opweave_and_nothing_else() -> None:
    opweave.set_num_threads(3)
    blas_before = _blas_threads()
    with threadpoolctl.threadpool_limits(2, user_api="opweave"):
        assert opweave.get_num_threads() == 2
        assert _blas_threads() == blas_before
    assert opweave.get_num_threads() == 3


def test_threadpool_limits_for_blas_leaves_opweave_alone() -> None:
    opweave.set_num_threads(3)
    with threadpoolctl.threadpool_limits(1, user_api="blas"):
        assert opweave.get_num_threads() == 3


def test_threadpool_limits_restores_a_size_the_system_chose_as_unset() -> None:
    opweave.config.threading.set_intra_op_parallelism_threads(0)
    source, size = _runtime.intra_source(), opweave.get_num_threads()
    with threadpoolctl.threadpool_limits(1):
        assert opweave.config.threading.get_intra_op_parallelism_threads() == 1
    assert opweave.config.threading.get_intra_op_parallelism_threads() == 0
    assert (_runtime.intra_source(), opweave.get_num_threads()) == (source, size)


def test_nested_threadpool_limits_restore_each_level() -> None:
    opweave.set_num_threads(3)
    with threadpoolctl.threadpool_limits(2, user_api="opweave"):
        with threadpoolctl.threadpool_limits(1):
            assert opweave.get_num_threads() == 1
        assert opweave.get_num_threads() == 2
    assert opweave.get_num_threads() == 3
    assert _runtime.intra_source() == "opweave.set_num_threads(3)"


def test_threadpool_limits_work_as_a_decorator() -> None:
    @threadpoolctl.threadpool_limits.wrap(limits=1, user_api="opweave")
    def inside() -> int:
        return opweave.get_num_threads()

    opweave.set_num_threads(2)
    assert inside() == 1
    assert opweave.get_num_threads() == 2


def test_threadpool_controller_select_limits_opweave() -> None:
    opweave.set_num_threads(2)
    controller = threadpoolctl.ThreadpoolController().select(internal_api="opweave")
    with controller.limit(limits=1):
        assert opweave.get_num_threads() == 1
    assert opweave.get_num_threads() == 2


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )


def test_registration_happens_on_import_whatever_the_import_order() -> None:
    opweave_first = "import opweave, threadpoolctl"
    # threadpoolctl caches what it found; opweave's registration must refresh that cache.
    threadpoolctl_first = "import threadpoolctl; threadpoolctl.threadpool_info(); import opweave"
    for imports in (opweave_first, threadpoolctl_first):
        code = f"{imports}\nprint([i['user_api'] for i in threadpoolctl.threadpool_info()])"
        assert "'opweave'" in _run(code).stdout, imports


def test_opweave_imports_without_threadpoolctl() -> None:
    code = (
        "import sys; sys.modules['threadpoolctl'] = None\n"
        "import opweave; opweave.set_num_threads(1); print(opweave.get_num_threads())"
    )
    assert _run(code).stdout.strip() == "1"
