"""opweave.config.threading: tf.config.threading's four functions, with TensorFlow's meanings."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator

import numpy as np
import opweave
import pytest
from opweave import _runtime
from opweave.config import threading as tfthreading


@pytest.fixture(autouse=True)
def _restore_pool_sizes() -> Iterator[None]:
    saved = _runtime.snapshot("intra"), _runtime.snapshot("inter")
    yield
    _runtime.restore("intra", saved[0])
    _runtime.restore("inter", saved[1])


def _fresh_process(code: str, **env: str) -> object:
    """Run ``code`` in a fresh interpreter with a clean opweave environment; return its JSON."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OPWEAVE_", "OMP_"))}
    out = subprocess.run(
        [sys.executable, "-c", "import json, opweave\n" + code],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_getters_return_0_when_nothing_was_set() -> None:
    code = """
t = opweave.config.threading
print(json.dumps([t.get_intra_op_parallelism_threads(), t.get_inter_op_parallelism_threads()]))
"""
    assert _fresh_process(code) == [0, 0]


def test_getters_return_what_was_set_not_the_size_the_environment_chose() -> None:
    code = """
t = opweave.config.threading
print(json.dumps([t.get_intra_op_parallelism_threads(), opweave.get_num_threads()]))
"""
    assert _fresh_process(code, OPWEAVE_NUM_INTRAOP_THREADS="3") == [0, 3]


def test_set_intra_op_parallelism_threads_sizes_the_intra_op_pool() -> None:
    tfthreading.set_intra_op_parallelism_threads(3)
    assert tfthreading.get_intra_op_parallelism_threads() == 3
    assert opweave.get_num_threads() == 3


def test_set_inter_op_parallelism_threads_sizes_the_inter_op_pool() -> None:
    tfthreading.set_inter_op_parallelism_threads(2)
    assert tfthreading.get_inter_op_parallelism_threads() == 2
    assert opweave.get_num_interop_threads() == 2


def test_zero_means_the_system_picks_again() -> None:
    code = """
t = opweave.config.threading
t.set_intra_op_parallelism_threads(1)
t.set_inter_op_parallelism_threads(1)
during = [opweave.get_num_threads(), opweave.get_num_interop_threads()]
t.set_intra_op_parallelism_threads(0)
t.set_inter_op_parallelism_threads(0)
after = [opweave.get_num_threads(), opweave.get_num_interop_threads(),
         t.get_intra_op_parallelism_threads(), t.get_inter_op_parallelism_threads()]
print(json.dumps([during, after]))
"""
    env = {"OPWEAVE_NUM_INTRAOP_THREADS": "3", "OPWEAVE_NUM_INTEROP_THREADS": "4"}
    assert _fresh_process(code, **env) == [[1, 1], [3, 4, 0, 0]]


def test_pytorch_style_calls_and_tf_style_calls_act_on_the_same_pool() -> None:
    opweave.set_num_threads(2)
    assert tfthreading.get_intra_op_parallelism_threads() == 2
    tfthreading.set_intra_op_parallelism_threads(1)
    assert opweave.get_num_threads() == 1


def test_modifying_after_initialization_resizes_instead_of_raising_like_tensorflow() -> None:
    a = np.ones((200, 300), dtype=np.float64)
    tfthreading.set_intra_op_parallelism_threads(2)
    expected = opweave.kernels.matmul(a, a.T)  # the pool now exists and has run work
    tfthreading.set_intra_op_parallelism_threads(1)  # TF: "cannot be modified after init..."
    tfthreading.set_inter_op_parallelism_threads(3)
    assert opweave.get_num_threads() == 1
    np.testing.assert_array_equal(opweave.kernels.matmul(a, a.T), expected)


@pytest.mark.parametrize(
    "func", ["set_intra_op_parallelism_threads", "set_inter_op_parallelism_threads"]
)
def test_a_negative_count_is_a_value_error(func: str) -> None:
    with pytest.raises(ValueError, match="non-negative integer"):
        getattr(tfthreading, func)(-1)


@pytest.mark.parametrize(
    "func", ["set_intra_op_parallelism_threads", "set_inter_op_parallelism_threads"]
)
@pytest.mark.parametrize("value", [2.0, True, "2"])
def test_a_non_int_count_is_a_type_error(func: str, value: object) -> None:
    with pytest.raises(TypeError, match=f"{func} expects an int, but got {type(value).__name__}"):
        getattr(tfthreading, func)(value)


def test_opweave_config_holds_both_the_tf1_protos_and_tf2_threading() -> None:
    import importlib

    module = importlib.import_module("opweave.config.threading")
    assert module is opweave.config.threading
    assert opweave.config.ConfigProto is opweave.ConfigProto
