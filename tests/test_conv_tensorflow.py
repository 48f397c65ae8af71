"""Convolutions and pooling against TensorFlow itself (``tf.compat.v1``), when it is installed:
forward results and both gradients for random shapes, strides, dilations and paddings, in
float64 (where both compute exactly enough to compare tightly) and float32.

TensorFlow runs in a child process (its thread pools and memory stay out of the test process, where
fork and thread-count tests run); inputs and results travel as .npz files (no pickle).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import opweave as ow
import pytest

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("tensorflow") is None, reason="tensorflow is not installed"
)

# The child: builds each case in tf.compat.v1, runs the op and the gradients of sum(y * v).
_CHILD = textwrap.dedent(
    """
    import json, os, sys
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    import numpy as np
    import tensorflow as tf
    tf1 = tf.compat.v1
    tf1.disable_eager_execution()
    cases = json.loads(open(sys.argv[1]).read())
    arrays = np.load(sys.argv[2], allow_pickle=False)
    out = {}
    for i, case in enumerate(cases):
        g = tf1.Graph()
        with g.as_default():
            ins = [tf1.constant(arrays[f"{i}_{k}"]) for k in range(case["n_inputs"])]
            fn = getattr(tf1.nn, case["op"])
            y = fn(*ins, **case["kwargs"])
            v = tf1.constant(arrays[f"{i}_v"])
            grads = tf1.gradients(tf1.reduce_sum(y * v), ins) if case["grad"] else []
            with tf1.Session() as s:
                res = s.run([y, *grads])
        for j, r in enumerate(res):
            out[f"{i}_{j}"] = r
    np.savez(sys.argv[3], **out)
    """
)


def _random_case(rng: np.random.Generator, dtype: Any) -> dict[str, Any]:
    op = rng.choice(["conv2d", "conv2d_transpose", "depthwise_conv2d", "max_pool", "avg_pool"])
    n, c = int(rng.integers(1, 3)), int(rng.integers(1, 5))
    h, w = int(rng.integers(3, 10)), int(rng.integers(3, 10))
    kh, kw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    s = [int(rng.integers(1, 3)), int(rng.integers(1, 3))]
    d = [int(rng.integers(1, 3)), int(rng.integers(1, 3))] if rng.random() < 0.4 else [1, 1]
    padding: Any = str(rng.choice(["SAME", "VALID"]))
    if padding == "VALID":
        h, w = max(h, (kh - 1) * d[0] + 1), max(w, (kw - 1) * d[1] + 1)
    x_shape = [n, h, w, c]
    kwargs: dict[str, Any] = {}
    if op in ("max_pool", "avg_pool"):
        kwargs = {"ksize": [1, kh, kw, 1], "strides": [1, *s, 1], "padding": padding}
        shapes = [x_shape]
    elif op == "depthwise_conv2d":
        # TensorFlow: a rate above 1 needs strides of 1; equal strides in rows and columns.
        s = [1, 1] if d != [1, 1] else [s[0], s[0]]
        kwargs = {"strides": [1, *s, 1], "padding": padding, "rate": d}
        shapes = [x_shape, [kh, kw, c, int(rng.integers(1, 3))]]
    else:
        if op == "conv2d_transpose":
            d = [1, 1]  # TensorFlow's CPU kernels: no dilated Conv2DBackpropInput
        co = int(rng.integers(1, 5))
        if rng.random() < 0.3 and op == "conv2d":
            pads = [[0, 0], [int(rng.integers(0, 3)), int(rng.integers(0, 3))]]
            pads += [[int(rng.integers(0, 3)), int(rng.integers(0, 3))], [0, 0]]
            padding = pads
            h = max(h, (kh - 1) * d[0] + 1)
            w = max(w, (kw - 1) * d[1] + 1)
            x_shape = [n, h, w, c]
        kwargs = {"strides": [1, *s, 1], "padding": padding, "dilations": [1, *d, 1]}
        shapes = [x_shape, [kh, kw, c, co]]
        if op == "conv2d_transpose":
            y = ow.kernels.conv2d(np.zeros(x_shape), np.zeros((kh, kw, c, co)), **kwargs)
            kwargs["output_shape"] = x_shape
            shapes = [list(y.shape), [kh, kw, c, co]]
    arrays = [rng.standard_normal(sh).astype(dtype) for sh in shapes]
    if op == "max_pool":  # distinct values: the gradient of a tie depends on the tie rule only
        arrays[0] = (rng.permutation(arrays[0].size).reshape(shapes[0]) * 0.25).astype(dtype)
    # TensorFlow's CPU gradient kernels of a dilated conv2d do not exist (finite differences check
    # ours in test_ops_conv.py); its forward result is compared.
    grad = not (op == "conv2d" and d != [1, 1])
    return {"op": op, "kwargs": kwargs, "arrays": arrays, "grad": grad}


def _opweave(case: dict[str, Any], v: np.ndarray) -> list[np.ndarray]:
    with ow.Graph().as_default():
        ins = [ow.constant(a) for a in case["arrays"]]
        y = getattr(ow.nn, case["op"])(*ins, **case["kwargs"])
        grads = ow.gradients(ow.reduce_sum(y * ow.constant(v)), ins) if case["grad"] else []
        with ow.Session() as s:
            return list(s.run([y, *grads]))


def _cases() -> list[dict[str, Any]]:
    rng = np.random.default_rng(2024)
    cases = [_random_case(rng, np.float64) for _ in range(40)]
    cases += [_random_case(rng, np.float32) for _ in range(15)]
    # The layer shapes of the bench, smaller batch, and the deep MNIST layers.
    for xs, fs, s in [((2, 28, 28, 32), (5, 5, 32, 64), 1), ((2, 14, 14, 64), (3, 3, 64, 64), 2)]:
        arrays = [
            rng.standard_normal(xs).astype(np.float32),
            rng.standard_normal(fs).astype(np.float32),
        ]
        cases.append(
            {
                "op": "conv2d",
                "kwargs": {"strides": [1, s, s, 1], "padding": "SAME"},
                "arrays": arrays,
                "grad": True,
            }
        )
    return cases


@pytest.fixture(scope="module")
def compared(
    tmp_path_factory: pytest.TempPathFactory,
) -> list[tuple[str, list[Any], list[Any], Any]]:
    tmp = tmp_path_factory.mktemp("tf")
    cases = _cases()
    rng = np.random.default_rng(7)
    arrays: dict[str, np.ndarray] = {}
    meta = []
    ours = []
    for i, case in enumerate(cases):
        got = _opweave(case, np.zeros(1, case["arrays"][0].dtype))  # the output shape, for v
        v = rng.standard_normal(got[0].shape).astype(case["arrays"][0].dtype)
        ours.append(_opweave(case, v))
        for k, a in enumerate(case["arrays"]):
            arrays[f"{i}_{k}"] = a
        arrays[f"{i}_v"] = v
        meta.append(
            {
                "op": case["op"],
                "kwargs": case["kwargs"],
                "n_inputs": len(case["arrays"]),
                "grad": case["grad"],
            }
        )
    (tmp / "cases.json").write_text(json.dumps(meta))
    np.savez(tmp / "in.npz", **arrays)
    child = tmp / "child.py"
    child.write_text(_CHILD)
    done = subprocess.run(
        [
            sys.executable,
            str(child),
            str(tmp / "cases.json"),
            str(tmp / "in.npz"),
            str(tmp / "out.npz"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    with np.load(Path(tmp / "out.npz"), allow_pickle=False) as theirs:
        out = []
        for i, case in enumerate(cases):
            tf_res = [theirs[f"{i}_{j}"] for j in range(len(ours[i]))]
            out.append((f"{case['op']} {case['kwargs']}", ours[i], tf_res, case["arrays"][0].dtype))
    return out


def test_forward_results_and_gradients_match_tensorflow(
    compared: list[tuple[str, list[Any], list[Any], Any]],
) -> None:
    for label, ours, theirs, dtype in compared:
        tol = 1e-10 if dtype == np.float64 else 2e-4
        for j, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            what = "output" if j == 0 else f"gradient of input {j - 1}"
            assert a.shape == b.shape, f"{label}: {what} shape {a.shape} vs TensorFlow {b.shape}"
            scale = max(1.0, float(np.abs(b).max(initial=0.0)))
            np.testing.assert_allclose(a, b, rtol=tol, atol=tol * scale, err_msg=f"{label}: {what}")


def test_the_comparison_covers_every_op_and_padding(
    compared: list[tuple[str, list[Any], list[Any], Any]],
) -> None:
    labels = " ".join(label for label, *_ in compared)
    for op in ("conv2d ", "conv2d_transpose", "depthwise_conv2d", "max_pool", "avg_pool"):
        assert op in labels
    for what in ("'SAME'", "'VALID'", "[[0, 0], ["):
        assert what in labels
