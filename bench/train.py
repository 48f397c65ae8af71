"""Training-step benchmark: opweave vs TensorFlow 1 graph mode vs PyTorch eager.

One training step -- forward, backward and Adam update -- of an MLP 784-512-512-10 at batch 256,
as one network ("single") and as 4 independent towers whose losses are summed ("towers": four
times the work, in four independent branches an inter-op pool can run at once), under
(intra, inter) = (1, 1), (2, 1), (1, 2), (2, 2) threads.

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


# -- a worker: one library, one setting, one fresh process -----------------------------------------
def worker(lib: str, intra: int, inter: int, towers: int, steps: int, kind: str) -> dict[str, Any]:
    if lib == "opweave":
        import opweave as ow

        config = ow.ConfigProto(
            intra_op_parallelism_threads=intra, inter_op_parallelism_threads=inter
        )
        step, measure = graph_step(ow, towers, kind, config)
    elif lib == "tensorflow":
        import tensorflow as tf_mod

        tf = tf_mod.compat.v1
        tf.disable_eager_execution()
        config = tf.ConfigProto(
            intra_op_parallelism_threads=intra, inter_op_parallelism_threads=inter
        )
        step, measure = graph_step(tf, towers, kind, config)
    else:
        import torch

        torch.set_num_threads(intra)
        torch.set_num_interop_threads(inter)
        step, measure = torch_step(towers, kind)
    for _ in range(3):  # warm up: allocations, cost estimates, caches
        step()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return {"median_s": statistics.median(times), "loss": measure(), "steps": steps + 3}


def _run_worker(lib: str, intra: int, inter: int, towers: int, steps: int, kind: str) -> Any:
    env = dict(os.environ)
    if lib != "opweave":
        for key in PEER_ENV_DROP:
            env.pop(key, None)
    cmd = [sys.executable, __file__, "--worker", lib, str(intra), str(inter), str(towers),
           str(steps), kind]  # fmt: skip
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
    parser.add_argument("--only", choices=["single", "towers"], default=None)
    parser.add_argument("--worker", nargs=6, metavar=("LIB", "INTRA", "INTER", "TOWERS", "STEPS",
                                                      "LOSS"))  # fmt: skip
    args = parser.parse_args(argv)
    if args.worker:
        lib, intra, inter, towers, steps, kind = args.worker
        print(json.dumps(worker(lib, int(intra), int(inter), int(towers), int(steps), kind)))
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
        f"# MLP {'-'.join(map(str, SIZES))}, batch {BATCH}, Adam, loss "
        f"{'softmax cross-entropy' if kind == 'xent' else 'MSE on one-hot labels'}; one fresh "
        f"process per (library, setting); median step of {steps} per worker, median over "
        f"{rounds} round(s); ratio = peer / opweave (> 1: opweave is faster)"
    )
    print(
        f"{'model':<8}{'intra':>6}{'inter':>6}{'opweave ms':>12}{'TF ms':>10}{'torch ms':>10}"
        f"{'TF/ow':>8}{'torch/ow':>9}"
    )
    cases = [("single", 1), ("towers", TOWERS)]
    for label, towers in cases:
        if args.only and args.only != label:
            continue
        for intra, inter in SETTINGS:
            samples: dict[str, list[float]] = {lib: [] for lib in libs}
            losses: dict[str, float] = {}
            errors: dict[str, str] = {}
            for _ in range(rounds):
                for lib in libs:
                    r = _run_worker(lib, intra, inter, towers, steps, kind)
                    if "error" in r:
                        errors[lib] = r["error"]
                        continue
                    samples[lib].append(r["median_s"])
                    losses[lib] = r["loss"]
            med = {lib: statistics.median(v) * 1e3 for lib, v in samples.items() if v}
            ours = med.get("opweave")
            tf_ms, th_ms = med.get("tensorflow"), med.get("torch")
            print(
                f"{label:<8}{intra:>6}{inter:>6}{_fmt(ours, 12)}{_fmt(tf_ms, 10)}{_fmt(th_ms, 10)}"
                f"{_fmt(tf_ms / ours if ours and tf_ms else None, 8)}"
                f"{_fmt(th_ms / ours if ours and th_ms else None, 9)}",
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
