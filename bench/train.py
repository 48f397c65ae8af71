"""Training-step benchmark: opweave vs TensorFlow 1 graph mode vs PyTorch eager.

One training step -- forward, backward and Adam update -- under (intra, inter) = (1, 1), (2, 1),
(1, 2), (2, 2) threads, of

- an MLP 784-512-512-10 at batch 256, as one network ("single") and as 4 independent towers whose
  losses are summed ("towers": four times the work, in four independent branches an inter-op pool
  can run at once);
- TensorFlow 1's "Deep MNIST for experts" network (opweave.examples.tutorials.mnist.mnist_deep):
  conv 5x5x1x32 SAME + ReLU, max-pool 2x2, conv 5x5x32x64 SAME + ReLU, max-pool 2x2, dense
  3136x1024 + ReLU, dropout, dense 1024x10, softmax cross-entropy, Adam 1e-4, at the tutorial's
  batch of 50 ("cnn50") and at 256 ("cnn256"). Dropout is in every library's step with keep
  probability 1 (TensorFlow and opweave still draw the mask), so that the same steps from the
  same start give the same loss. PyTorch runs the equivalent torch.nn model (NCHW, its native
  layout; the first dense layer's rows reordered for NCHW flattening).

Every library starts from the same weights (NumPy, seeded) and data and runs the same loss:
softmax cross-entropy when opweave has ``nn.softmax_cross_entropy_with_logits_v2``, else the mean
squared error against the one-hot labels (the header says which). Each (library, setting) runs in
a fresh process, configured the way its users do it: opweave and TensorFlow through the first
Session's ConfigProto (TensorFlow keeps its default graph optimisation), PyTorch through
torch.set_num_threads / set_num_interop_threads. TensorFlow and PyTorch run without the
OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE overrides. A worker warms up, then times steps in batches;
the parent repeats the whole grid ``--rounds`` times, library by library within each setting,
and prints medians. Each worker also reports the loss after its steps: all libraries take the
same number of steps from the same start, so the losses must agree (a warning says when not;
PyTorch's Adam adds epsilon before the bias correction, TensorFlow's after, a negligible
difference here).

    python bench/train.py              # the grid, 3 rounds
    python bench/train.py --quick      # 1 round, fewer steps
    python bench/train.py --only single
    python bench/train.py --only cnn50 cnn256
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import importlib.util
import itertools
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np

SIZES = (784, 512, 512, 10)
BATCH = 256
TOWERS = 4
LR = 1e-3
SETTINGS = ((1, 1), (2, 1), (1, 2), (2, 2))  # (intra, inter)
CNN_SHAPES = ((5, 5, 1, 32), (32,), (5, 5, 32, 64), (64,), (3136, 1024), (1024,), (1024, 10), (10,))
CNN_LR = 1e-4
KEEP_PROB = 1.0
# The table's rows: (label, model, towers or batch).
CASES = (
    ("single", "mlp", 1),
    ("towers", "mlp", TOWERS),
    ("cnn50", "cnn", 50),
    ("cnn256", "cnn", 256),
)
LIBS = ("opweave", "tensorflow", "torch")
PEER_ENV_DROP = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


# -- the model, as arrays every library starts from ------------------------------------------------
def initial_weights(towers: int) -> list[list[tuple[np.ndarray, np.ndarray]]]:
    """Per tower, per layer: (W, b), Glorot-uniform weights and zero biases, seeded."""
    rng = np.random.default_rng(1)
    out = []
    for _ in range(towers):
        layers = []
        for fan_in, fan_out in itertools.pairwise(SIZES):
            limit = np.sqrt(6.0 / (fan_in + fan_out))
            w = rng.uniform(-limit, limit, (fan_in, fan_out)).astype(np.float32)
            layers.append((w, np.zeros(fan_out, np.float32)))
        out.append(layers)
    return out


def data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(2)
    x = rng.random((BATCH, SIZES[0]), dtype=np.float32)
    labels = rng.integers(0, SIZES[-1], BATCH)
    return x, np.eye(SIZES[-1], dtype=np.float32)[labels]


def loss_kind() -> str:
    import opweave as ow

    return "xent" if hasattr(ow.nn, "softmax_cross_entropy_with_logits_v2") else "mse"


# -- one step per library --------------------------------------------------------------------------
def graph_step(tf: Any, towers: int, kind: str, config: Any) -> tuple[Callable[[], Any], Any]:
    """opweave or tf.compat.v1 (the same code): a callable running one step, and the loss."""
    x_val, y_val = data()
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [BATCH, SIZES[0]], name="x")
        y = tf.placeholder(tf.float32, [BATCH, SIZES[-1]], name="y")
        losses = []
        for t, layers in enumerate(initial_weights(towers)):
            with tf.variable_scope(f"tower_{t}"):
                h = x
                for i, (w0, b0) in enumerate(layers):
                    w = tf.Variable(w0, name=f"w{i}")
                    b = tf.Variable(b0, name=f"b{i}")
                    h = tf.matmul(h, w) + b
                    if i < len(layers) - 1:
                        h = tf.nn.relu(h)
                if kind == "xent":
                    losses.append(
                        tf.reduce_mean(
                            tf.nn.softmax_cross_entropy_with_logits_v2(labels=y, logits=h)
                        )
                    )
                else:
                    losses.append(tf.reduce_mean((h - y) * (h - y)))
        loss = losses[0] if towers == 1 else tf.add_n(losses)
        train = tf.train.AdamOptimizer(LR).minimize(loss)
        init = tf.global_variables_initializer()
    sess = tf.Session(graph=g, config=config)
    sess.run(init)
    step = sess.make_callable(train, [x, y])
    measure = sess.make_callable(loss, [x, y])
    return (lambda: step(x_val, y_val)), (lambda: float(measure(x_val, y_val)))


def torch_step(towers: int, kind: str) -> tuple[Callable[[], Any], Any]:
    import torch

    x_val, y_val = data()
    x, y = torch.from_numpy(x_val), torch.from_numpy(y_val)
    params = []
    nets = []
    for layers in initial_weights(towers):
        net = [
            (torch.tensor(w, requires_grad=True), torch.tensor(b, requires_grad=True))
            for w, b in layers
        ]
        nets.append(net)
        params += [p for pair in net for p in pair]
    opt = torch.optim.Adam(params, lr=LR, eps=1e-8)

    def forward() -> Any:
        total = None
        for net in nets:
            h = x
            for i, (w, b) in enumerate(net):
                h = h @ w + b
                if i < len(net) - 1:
                    h = torch.relu(h)
            if kind == "xent":
                loss = torch.nn.functional.cross_entropy(h, y)
            else:
                loss = torch.mean((h - y) * (h - y))
            total = loss if total is None else total + loss
        return total

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        forward().backward()
        opt.step()

    def measure() -> float:
        with torch.no_grad():
            return float(forward())

    return step, measure


# -- the deep MNIST network ---------------------------------------------------------------------
def cnn_weights() -> list[np.ndarray]:
    """As the tutorial initializes them: weights from a normal of deviation 0.1 truncated at two
    deviations, biases 0.1 (HWIO filters, [in, out] dense weights); seeded."""
    rng = np.random.default_rng(3)
    out = []
    for shape in CNN_SHAPES:
        if len(shape) == 1:
            out.append(np.full(shape, 0.1, np.float32))
            continue
        z = rng.standard_normal(shape)
        while (far := np.abs(z) > 2).any():
            z[far] = rng.standard_normal(int(far.sum()))
        out.append((0.1 * z).astype(np.float32))
    return out


def cnn_data(batch: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(4)
    x = rng.random((batch, 784), dtype=np.float32)
    return x, np.eye(10, dtype=np.float32)[rng.integers(0, 10, batch)]


def cnn_graph_step(tf: Any, batch: int, config: Any) -> tuple[Callable[[], Any], Any]:
    """opweave or tf.compat.v1 (the same code, the tutorial's graph)."""
    x_val, y_val = cnn_data(batch)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 784], name="x")
        y = tf.placeholder(tf.float32, [None, 10], name="y")
        keep_prob = tf.placeholder(tf.float32, name="keep_prob")
        w1, b1, w2, b2, w3, b3, w4, b4 = (tf.Variable(v) for v in cnn_weights())
        h = tf.reshape(x, [-1, 28, 28, 1])
        for w, b in ((w1, b1), (w2, b2)):
            h = tf.nn.relu(tf.nn.conv2d(h, w, strides=[1, 1, 1, 1], padding="SAME") + b)
            h = tf.nn.max_pool(h, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="SAME")
        h = tf.nn.relu(tf.matmul(tf.reshape(h, [-1, 7 * 7 * 64]), w3) + b3)
        logits = tf.matmul(tf.nn.dropout(h, keep_prob), w4) + b4
        loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=y, logits=logits))
        train = tf.train.AdamOptimizer(CNN_LR).minimize(loss)
        init = tf.global_variables_initializer()
    sess = tf.Session(graph=g, config=config)
    sess.run(init)
    step = sess.make_callable(train, [x, y, keep_prob])
    measure = sess.make_callable(loss, [x, y, keep_prob])
    return (lambda: step(x_val, y_val, KEEP_PROB)), (lambda: float(measure(x_val, y_val, 1.0)))


def cnn_torch_step(batch: int) -> tuple[Callable[[], Any], Any]:
    import torch
    from torch import nn

    x_val, y_val = cnn_data(batch)
    w1, b1, w2, b2, w3, b3, w4, b4 = cnn_weights()
    model = nn.Sequential(
        nn.Conv2d(1, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(3136, 1024), nn.ReLU(), nn.Dropout(1.0 - KEEP_PROB),
        nn.Linear(1024, 10),
    )  # fmt: skip
    # TensorFlow flattens [7, 7, 64] maps as (h, w, c), PyTorch [64, 7, 7] as (c, h, w).
    w3_chw = w3.reshape(7, 7, 64, 1024).transpose(2, 0, 1, 3).reshape(3136, 1024)
    with torch.no_grad():
        for layer, w, b in ((model[0], w1.transpose(3, 2, 0, 1), b1),  # HWIO -> OIHW
                            (model[3], w2.transpose(3, 2, 0, 1), b2),
                            (model[7], w3_chw.T, b3), (model[10], w4.T, b4)):  # fmt: skip
            layer.weight.copy_(torch.from_numpy(np.ascontiguousarray(w)))
            layer.bias.copy_(torch.from_numpy(b))
    x = torch.from_numpy(x_val).reshape(-1, 1, 28, 28)  # NCHW, one channel: the same memory
    y = torch.from_numpy(y_val)
    opt = torch.optim.Adam(model.parameters(), lr=CNN_LR, eps=1e-8)

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    def measure() -> float:
        model.eval()
        with torch.no_grad():
            value = float(torch.nn.functional.cross_entropy(model(x), y))
        model.train()
        return value

    return step, measure


# -- the machine's limit: the step's products alone ------------------------------------------------
def products_alone(model: str, size: int, intra: int, steps: int) -> float:
    """Median seconds of the step's matrix products (and, for the CNN, its convolutions) run alone
    with opweave's kernels, back to back on ``intra`` threads, one at a time: what the step costs
    with every other op, every transfer between ops and all scheduling taken away, and no two
    products overlapping (so with inter=2 a step may beat it)."""
    from opweave import kernels as k

    rng = np.random.default_rng(5)

    def r(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape).astype(np.float32)

    calls: list[Callable[[], Any]] = []

    def mm(m: int, kk: int, n: int, ta: bool = False, tb: bool = False) -> None:
        a = r(kk, m) if ta else r(m, kk)
        b = r(n, kk) if tb else r(kk, n)
        calls.append(lambda: k.matmul(a, b, transpose_a=ta, transpose_b=tb, _num_threads=intra))

    if model == "mlp":
        for _ in range(size):  # towers
            dims = list(SIZES)
            for i, (fan_in, fan_out) in enumerate(itertools.pairwise(dims)):
                mm(BATCH, fan_in, fan_out)  # forward
                mm(fan_in, BATCH, fan_out, ta=True)  # dW = h^T g
                if i > 0:
                    mm(BATCH, fan_out, fan_in, tb=True)  # dX = g W^T
    else:
        b = size
        s = [1, 1, 1, 1]
        for h, c_in, c_out in ((28, 1, 32), (14, 32, 64)):
            x, f, dy = r(b, h, h, c_in), r(5, 5, c_in, c_out), r(b, h, h, c_out)
            calls.append(lambda x=x, f=f: k.conv2d(x, f, s, "SAME", _num_threads=intra))
            calls.append(
                lambda x=x, f=f, dy=dy: k.conv2d_backprop_filter(
                    x, list(f.shape), dy, s, "SAME", _num_threads=intra
                )
            )
            if c_in > 1:  # the first layer's input gradient is not computed
                calls.append(
                    lambda x=x, f=f, dy=dy: k.conv2d_backprop_input(
                        list(x.shape), f, dy, s, "SAME", _num_threads=intra
                    )
                )
        mm(b, 3136, 1024)
        mm(3136, b, 1024, ta=True)
        mm(b, 1024, 3136, tb=True)
        mm(b, 1024, 10)
        mm(1024, b, 10, ta=True)
        mm(b, 10, 1024, tb=True)

    def run() -> None:
        for call in calls:
            call()

    for _ in range(2):
        run()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


# -- a worker: one library, one setting, one fresh process -----------------------------------------
def worker(lib: str, intra: int, inter: int, case: str, steps: int, kind: str) -> dict[str, Any]:
    model, size = next((m, n) for label, m, n in CASES if label == case)
    if lib == "opweave":
        import opweave as ow

        config = ow.ConfigProto(
            intra_op_parallelism_threads=intra, inter_op_parallelism_threads=inter
        )
        step, measure = (
            graph_step(ow, size, kind, config)
            if model == "mlp"
            else cnn_graph_step(ow, size, config)
        )
    elif lib == "tensorflow":
        import tensorflow as tf_mod

        tf = tf_mod.compat.v1
        tf.disable_eager_execution()
        config = tf.ConfigProto(
            intra_op_parallelism_threads=intra, inter_op_parallelism_threads=inter
        )
        step, measure = (
            graph_step(tf, size, kind, config)
            if model == "mlp"
            else cnn_graph_step(tf, size, config)
        )
    else:
        import torch

        torch.set_num_threads(intra)
        torch.set_num_interop_threads(inter)
        step, measure = torch_step(size, kind) if model == "mlp" else cnn_torch_step(size)
    for _ in range(3):  # warm up: allocations, cost estimates, caches
        step()
    times = []
    cpu0 = time.process_time()
    wall0 = time.perf_counter()
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    # CPU seconds of every thread of the process per wall second of the steps: how many cores the
    # setting really kept busy (a peer's "1 thread" may run its kernels on two).
    cores = (time.process_time() - cpu0) / (time.perf_counter() - wall0)
    out = {"median_s": statistics.median(times), "loss": measure(), "steps": steps + 3,
           "cores": cores}  # fmt: skip
    if lib == "opweave":
        out["alone_s"] = products_alone(model, size, intra, steps)
    return out


def _run_worker(lib: str, intra: int, inter: int, case: str, steps: int, kind: str) -> Any:
    env = dict(os.environ)
    if lib != "opweave":
        for key in PEER_ENV_DROP:
            env.pop(key, None)
    cmd = [sys.executable, __file__, "--worker", lib, str(intra), str(inter), case, str(steps),
           kind]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr else "failed"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


# -- the table -------------------------------------------------------------------------------------
def _available(lib: str) -> bool:
    # Found, not imported: the parent process never loads a peer (only its workers do).
    return lib == "opweave" or importlib.util.find_spec(lib) is not None


def _version(lib: str) -> str:
    for dist in (lib, f"{lib}-cpu"):  # TensorFlow's CPU wheel is the tensorflow-cpu distribution
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return "?"


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _blas() -> str:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "threadpoolctl missing"
    return str(
        [
            (i.get("internal_api"), i.get("version"), i.get("architecture"))
            for i in threadpool_info()
            if i.get("user_api") == "blas"
        ]
    )


def _fmt(v: float | None, width: int, digits: int = 2) -> str:
    return f"{'-':>{width}}" if v is None else f"{v:>{width}.{digits}f}"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="1 round, fewer steps")
    parser.add_argument("--rounds", type=int, default=None, help="repetitions of the grid")
    parser.add_argument("--steps", type=int, default=None, help="timed steps per worker")
    parser.add_argument(
        "--only", nargs="+", choices=[label for label, _, _ in CASES], default=None,
        help="these rows only",
    )  # fmt: skip
    parser.add_argument("--worker", nargs=6, metavar=("LIB", "INTRA", "INTER", "CASE", "STEPS",
                                                      "LOSS"))  # fmt: skip
    args = parser.parse_args(argv)
    if args.worker:
        lib, intra, inter, case, steps, kind = args.worker
        print(json.dumps(worker(lib, int(intra), int(inter), case, int(steps), kind)))
        return
    rounds = args.rounds or (1 if args.quick else 3)
    steps = args.steps or (5 if args.quick else 20)
    kind = loss_kind()
    libs = [lib for lib in LIBS if _available(lib)]
    import opweave as ow

    now = datetime.datetime.now().isoformat(timespec="seconds")
    print(f"# opweave training-step benchmark, {now}")
    print(
        f"# {_cpu_model()}, {os.cpu_count()} CPUs ({len(os.sched_getaffinity(0))} usable), "
        f"load avg {os.getloadavg()[0]:.2f}"
    )
    versions = [f"opweave {ow.__version__}", f"numpy {np.__version__}"]
    for lib in ("tensorflow", "torch"):
        versions.append(f"{lib} {_version(lib)}" if lib in libs else f"{lib} missing")
    print(f"# {', '.join(versions)}; numpy BLAS {_blas()}")
    print(
        f"# single, towers: MLP {'-'.join(map(str, SIZES))}, batch {BATCH}, Adam {LR}, loss "
        f"{'softmax cross-entropy' if kind == 'xent' else 'MSE on one-hot labels'}"
    )
    print(
        "# cnn50, cnn256: deep MNIST (conv 5x5x1x32, pool, conv 5x5x32x64, pool, dense 3136x1024, "
        f"dropout keep {KEEP_PROB:g}, dense 1024x10), softmax cross-entropy, Adam {CNN_LR}, "
        "batch 50 / 256"
    )
    print(
        f"# one fresh process per (library, setting); median step of {steps} per worker, median "
        f"over {rounds} round(s); ratio = peer / opweave (> 1: opweave is faster)"
    )
    print(
        "# alone: the step's matrix products and convolutions run alone with opweave's kernels,"
        " back to back on intra threads (the machine's limit for the step's arithmetic)"
    )
    print(
        f"{'model':<8}{'intra':>6}{'inter':>6}{'opweave ms':>12}{'TF ms':>10}{'torch ms':>10}"
        f"{'TF/ow':>8}{'torch/ow':>9}{'alone ms':>10}{'ow/alone':>9}"
    )
    for label, _, _ in CASES:
        if args.only and label not in args.only:
            continue
        for intra, inter in SETTINGS:
            samples: dict[str, list[float]] = {lib: [] for lib in libs}
            alone: list[float] = []
            losses: dict[str, float] = {}
            errors: dict[str, str] = {}
            for _ in range(rounds):
                for lib in libs:
                    r = _run_worker(lib, intra, inter, label, steps, kind)
                    if "error" in r:
                        errors[lib] = r["error"]
                        continue
                    samples[lib].append(r["median_s"])
                    losses[lib] = r["loss"]
                    if "alone_s" in r:
                        alone.append(r["alone_s"] * 1e3)
            med = {lib: statistics.median(v) * 1e3 for lib, v in samples.items() if v}
            ours = med.get("opweave")
            tf_ms, th_ms = med.get("tensorflow"), med.get("torch")
            print(
                f"{label:<8}{intra:>6}{inter:>6}{_fmt(ours, 12)}{_fmt(tf_ms, 10)}{_fmt(th_ms, 10)}"
                f"{_fmt(tf_ms / ours if ours and tf_ms else None, 8)}"
                f"{_fmt(th_ms / ours if ours and th_ms else None, 9)}"
                f"{_fmt(statistics.median(alone) if alone else None, 10)}"
                f"{_fmt(ours / statistics.median(alone) if ours and alone else None, 9)}",
                flush=True,
            )
            for lib, err in errors.items():
                print(f"  # {lib} failed: {err}", flush=True)
            if "opweave" in losses:
                off = [
                    lib for lib, v in losses.items()
                    if not np.isclose(v, losses["opweave"], rtol=2e-3, atol=1e-4)
                ]  # fmt: skip
                if off:
                    print(f"  # WARNING: losses after the same steps differ: {losses}", flush=True)
    print(f"# done, load avg {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
