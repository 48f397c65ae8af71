"""Executor benchmark: opweave vs TensorFlow 1 Sessions vs TorchScript fork/wait, same process.

What a dataflow runtime adds on top of its kernels, measured the same way for each library:

- chain: per-node overhead on a chain of 1000 tiny element-wise ops (opweave.models.tiny_chain:
  x + 1, * 1, + 1, ... on one float32). Per node = (time(1000-op chain) - time(1-op chain)) / 999
  (the median over rounds of that difference), and the plain time / 1000 beside it. TensorFlow
  runs with graph optimisation off (Grappler's meta optimizer disabled, OptimizerOptions.L0), so
  that it runs the same 1000 nodes: Grappler folds chains of constant adds/muls into one node.
  Its Grappler-on figure is printed on its own labelled row for reference.
  TorchScript: the same 1000 ops unrolled in one scripted function (its interpreter's per-op cost).
  opweave runs with its graph optimizer off here too (OptimizerOptions.L0), for the same reason.
- optimizer: the chain of 1000 `x = x + 1.0` (a new constant each step), with each library's
  graph optimizer on and off: constant folding and the (x + c1) + c2 rewrite collapse it to one
  add in both opweave and TensorFlow (Grappler), so the optimizer-on row is a run's fixed cost
  plus one tiny op. The target: opweave's time at most 1/4 of TensorFlow's with Grappler on.
- fixed: Session.run fixed overhead on a 1-op graph (feed a scalar, fetch x + 1), through
  Session.run and through make_callable; TorchScript: calling a scripted x + 1.
- taskflow: the Taskflow benchmark shapes. Linear chain and binary tree of no_ops (control
  dependencies; TorchScript: a fork per tree node that waits on its parent's future), embarrassing
  parallelism (independent tasks of 32 alternating tanh / sigmoid ops on 16 float32 values, the
  element-wise stand-in for Taskflow's 32 sin/cos iterations; TorchScript: a fork per task), and a
  64 x 64 wavefront (cell = maximum(up, left) of scalars, edges tanh; TorchScript: a fork per cell
  waiting on two futures). A final group() joins the tree leaves and the tasks. TensorFlow with
  graph optimisation off, as for the chain (its dependency optimizer would delete the no_ops).
- mlp: opweave.models.mlp_towers (4 towers x 2 dense 512 layers, batch 256) under inter-op
  {1, 2} x intra-op {1, 2} threads; TorchScript forks one task per tower. Each setting runs in a
  fresh process: TensorFlow sizes its global pools at the first Session and PyTorch its inter-op
  pool once, so a fresh process gives every library exactly that setting, configured the way its
  users do it (first Session's ConfigProto; torch.set_num_threads / set_num_interop_threads).
  TensorFlow and opweave keep their default graph optimisation here (what their users run).

- fusion: 4-op element-wise chains, (x * z + x) * z - z and tanh(x * z + x) * z, on two 16 MiB
  float32 inputs: opweave with its element-wise loop fusion (the default optimizer: one
  _FusedElementwise node) and with `remapping` off (four kernels, each writing a 16 MiB
  intermediate), TensorFlow with Grappler on, PyTorch eager, and NumPy (one temporary per op)
  in the note.

- serve: small-batch inference, where a runtime's fixed costs dominate. MLP 784-512-512-10
  float32 (relu between layers; weights drawn from one seed, the same for every library), one
  network and 4 towers (outputs summed), batch 1 and 16, at (intra, inter) = (1, 1) and (2, 2):
  opweave (Session.make_callable, default optimizer: fused products with weights packed once;
  the worker prints the optimizer's and the weight cache's counts), ONNX Runtime (the model built
  with onnx.helper: MatMul + Add + Relu, Sum; intra_op_num_threads / inter_op_num_threads,
  ORT_PARALLEL when inter > 1) at its defaults and with spinning off
  (session.intra_op.allow_spinning = session.inter_op.allow_spinning = "0"), TensorFlow 1 graph
  mode (default Grappler) and PyTorch eager (F.linear, inference_mode). One process per (library,
  setting), each importing only its library; the processes of a setting are driven in turns
  (the others sleep meanwhile). Per case: closed-loop latency (requests back to back; median and
  p90 of every request of every round) and CPU per request; open loop at 100 and 1000 requests/s
  (a request every 10 / 1 ms, sleeping in between): median latency and the process's CPU time per
  request, which shows worker threads that spin between requests. The memory floor is the
  weights' bytes over the read bandwidth of a 256 MiB array measured in the same run (the sum
  bench/kernels.py times); the goals of issue 16 are checked on each case's figures.

The other sections use inter = intra = 2 for all three libraries. Calls are interleaved round by
round; each turn first sleeps (so the other libraries' idle workers park instead of stealing a
core), makes one untimed call, then times a batch of calls. The table shows medians over rounds.

    python bench/executor.py                  # everything
    python bench/executor.py --quick          # fewer sizes and rounds
    python bench/executor.py --only chain     # one section (chain, optimizer, fixed, taskflow, mlp,
                                              # fusion, serve)
    python bench/executor.py --only serve --serve-libs opweave,ort --serve-settings 1x1
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import itertools
import json
import math
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
import opweave as ow

# A serving worker (--serve-worker LIB, see bench_serve) imports only the library it measures:
# another library's threads and memory must not sit in the process whose CPU time is counted.
_SERVE_LIB = (
    sys.argv[sys.argv.index("--serve-worker") + 1] if "--serve-worker" in sys.argv else None
)

tf: Any = None
tf1: Any = None
torch: Any = None
if _SERVE_LIB in (None, "tensorflow"):
    try:
        import tensorflow as tf

        tf1 = tf.compat.v1
        tf1.disable_eager_execution()
    except ImportError:  # pragma: no cover
        pass

if _SERVE_LIB in (None, "torch"):
    with contextlib.suppress(ImportError):
        import torch

Fn = Callable[[], Any]

# See bench/kernels.py: idle workers of the library that ran before park first.
SETTLE_S = float(os.environ.get("OW_BENCH_SETTLE_S", "0.15"))
INTER = 2
INTRA = 2
CHAIN = 1000


# -- timing ------------------------------------------------------------------------------------
def _interleaved(
    fns: dict[str, Fn], reps: int, batch_s: float, settle_s: float = SETTLE_S
) -> dict[str, float]:
    """Median seconds per call of each fn, interleaved round by round (see _rounds)."""
    return {
        name: statistics.median(ts) for name, ts in _rounds(fns, reps, batch_s, settle_s).items()
    }


def _rounds(
    fns: dict[str, Fn], reps: int, batch_s: float, settle_s: float = SETTLE_S
) -> dict[str, list[float]]:
    """Seconds per call of each fn in each round, the fns called in turn round by round.

    Each turn sleeps settle_s, makes one untimed call and times a batch of calls sized to take
    about batch_s (at least one call).
    """
    batch: dict[str, int] = {}
    for name, fn in fns.items():  # warm up (compilation, caches, cost estimates), size batches
        for _ in range(3):
            fn()
        t0 = time.perf_counter()
        fn()
        one = max(time.perf_counter() - t0, 1e-7)
        batch[name] = max(1, min(10_000, math.ceil(batch_s / one)))
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(reps):
        for name, fn in fns.items():
            if settle_s > 0:
                time.sleep(settle_s)
            fn()
            n = batch[name]
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            times[name].append((time.perf_counter() - t0) / n)
    return times


# -- configuration -----------------------------------------------------------------------------
def _ow_config(inter: int = INTER, intra: int = INTRA, optimize: bool = True) -> Any:
    config = ow.ConfigProto(inter_op_parallelism_threads=inter, intra_op_parallelism_threads=intra)
    if not optimize:
        config.graph_options.optimizer_options.opt_level = ow.OptimizerOptions.L0
    return config


def _tf_config(inter: int = INTER, intra: int = INTRA, grappler: bool = False) -> Any:
    config = tf1.ConfigProto(inter_op_parallelism_threads=inter, intra_op_parallelism_threads=intra)
    if not grappler:
        config.graph_options.rewrite_options.disable_meta_optimizer = True
        config.graph_options.optimizer_options.opt_level = tf1.OptimizerOptions.L0
    return config


# -- table -------------------------------------------------------------------------------------
COLUMNS = ("opweave", "tensorflow", "torch")


def _print_header() -> None:
    print(
        f"{'case':<52}{'unit':<9}{'opweave':>10}{'TF':>10}{'torch':>10}{'TF/ow':>8}{'torch/ow':>9}"
    )


def _fmt(v: float | None, width: int, digits: int | None = None) -> str:
    if v is None:
        return f"{'-':>{width}}"
    if digits is None:
        digits = 3 if abs(v) < 1 else 2 if abs(v) < 100 else 1
    return f"{v:>{width}.{digits}f}"


def _print_row(label: str, unit: str, vals: dict[str, float]) -> None:
    ours = vals.get("opweave")
    tf_v = vals.get("tensorflow")
    th_v = vals.get("torch")
    r_tf = tf_v / ours if ours and tf_v else None
    r_th = th_v / ours if ours and th_v else None
    print(
        f"{label:<52}{unit:<9}{_fmt(ours, 10)}{_fmt(tf_v, 10)}"
        f"{_fmt(th_v, 10)}{_fmt(r_tf, 8, 2)}{_fmt(r_th, 9, 2)}",
        flush=True,
    )


def _note(text: str) -> None:
    print(f"  # {text}", flush=True)


# -- graphs ------------------------------------------------------------------------------------
def _tf_chain(length: int) -> tuple[Any, Any, Any]:
    g = tf1.Graph()
    with g.as_default():
        x = tf1.placeholder(tf.float32, shape=(1,), name="x")
        one = tf1.constant(1.0, dtype=tf.float32, name="one")
        y = x
        for i in range(length):
            y = tf1.add(y, one) if i % 2 == 0 else tf1.multiply(y, one)
    return g, x, y


def _torch_chain(length: int) -> Any:
    lines = ["def chain(x: Tensor, one: Tensor) -> Tensor:", "    y = x"]
    lines += [f"    y = y {'+' if i % 2 == 0 else '*'} one" for i in range(length)]
    lines.append("    return y\n")
    return torch.jit.CompilationUnit("\n".join(lines)).chain


def _session_callable(lib: str, graph: Any, fetch: Any, feeds: dict[Any, Any], config: Any) -> Fn:
    if lib == "opweave":
        sess = ow.Session(graph=graph, config=config)
    else:
        sess = tf1.Session(graph=graph, config=config)
    keys = list(feeds)
    call = sess.make_callable(fetch, keys)
    values = [feeds[k] for k in keys]
    _SESSIONS.append(sess)  # keep them open for the whole run
    return lambda: call(*values)


_SESSIONS: list[Any] = []


def bench_chain(reps: int, batch_s: float) -> dict[str, float]:
    """Per-node overhead of a 1000-op chain; returns the per-node figures (us)."""
    xv = np.zeros(1, np.float32)
    fns: dict[str, Fn] = {}
    # Each library's two chains are timed one after the other, so that the per-node figure can
    # be taken from the difference within each round (under the same load), not of two medians.
    for n in (1, CHAIN):
        m = ow.models.tiny_chain(length=n)
        fns[f"opweave/{n}"] = _session_callable(
            "opweave", m.graph, m.fetches, {next(iter(m.feed_dict)): xv}, _ow_config(optimize=False)
        )
    if tf is not None:
        for grappler in (False, True):
            for n in (1, CHAIN):
                g, x, y = _tf_chain(n)
                fns[f"{'tf-grappler' if grappler else 'tensorflow'}/{n}"] = _session_callable(
                    "tf", g, y, {x: xv}, _tf_config(grappler=grappler)
                )
    if torch is not None:
        for n in (1, CHAIN):
            chain = _torch_chain(n)
            tx, tone = torch.zeros(1), torch.ones(())
            fns[f"torch/{n}"] = lambda chain=chain, tx=tx, tone=tone: chain(tx, tone)
    for name, fn in fns.items():  # every library computes x + ceil(n / 2)
        n = name.split("/")[1]
        got = float(np.asarray(fn()).reshape(-1)[0])
        if got != math.ceil(int(n) / 2):
            print(f"  # WARNING: {name} computed {got}", flush=True)
    rounds = _rounds(fns, reps, batch_s)
    if os.environ.get("OW_BENCH_DEBUG"):
        print({k: round(statistics.median(v) * 1e6, 1) for k, v in rounds.items()})
    libs = sorted({name.split("/")[0] for name in fns})
    marginal = {
        lib: statistics.median(
            (long - short) / (CHAIN - 1) * 1e6
            for long, short in zip(rounds[f"{lib}/{CHAIN}"], rounds[f"{lib}/1"], strict=True)
        )
        for lib in libs
    }
    total = {lib: statistics.median(rounds[f"{lib}/{CHAIN}"]) / CHAIN * 1e6 for lib in libs}
    pick = ("opweave", "tensorflow", "torch")
    _print_row(
        f"chain {CHAIN} tiny ops, per node (marginal)",
        "us/node",
        {k: v for k, v in marginal.items() if k in pick},
    )
    _print_row(
        f"chain {CHAIN} tiny ops, per node (total/{CHAIN})",
        "us/node",
        {k: v for k, v in total.items() if k in pick},
    )
    if "tf-grappler" in total:
        _print_row(
            f"  TF with Grappler ON (total/{CHAIN}, for reference)",
            "us/node",
            {"opweave": total["opweave"], "tensorflow": total["tf-grappler"]},
        )
        _note(
            "Grappler may rewrite the graph (it folds constant chains), so that row need not "
            f"run {CHAIN} nodes; the rows above compare {CHAIN} executed nodes on both sides"
        )
    if "tensorflow" in marginal:
        ratio = marginal["tensorflow"] / marginal["opweave"]
        ratio_total = total["tensorflow"] / total["opweave"]
        verdict = "met" if min(ratio, ratio_total) >= 2.0 else "NOT met"
        _note(
            f"target opweave per node <= 1/2 of TensorFlow's (optimisation off): {verdict} "
            f"(TF/ow {ratio:.2f} marginal, {ratio_total:.2f} total/{CHAIN})"
        )
    return marginal


def _add_chain(lib: Any, length: int) -> tuple[Any, Any, Any]:
    """x = x + 1.0, `length` times: each step makes a new constant."""
    g = lib.Graph()
    with g.as_default():
        x = lib.placeholder(ow.float32 if lib is ow else tf.float32, shape=(1,), name="x")
        y = x
        for _ in range(length):
            y = y + 1.0
    return g, x, y


def bench_optimizer(reps: int, batch_s: float) -> None:
    """The 1000-step x = x + 1.0 chain with the graph optimizers on and off."""
    xv = np.zeros(1, np.float32)
    fns: dict[str, Fn] = {}
    for on in (True, False):
        g, x, y = _add_chain(ow, CHAIN)
        fns[f"opweave/{on}"] = _session_callable("opweave", g, y, {x: xv}, _ow_config(optimize=on))
        if tf is not None:
            tg, tx, ty = _add_chain(tf1, CHAIN)
            fns[f"tensorflow/{on}"] = _session_callable(
                "tf", tg, ty, {tx: xv}, _tf_config(grappler=on)
            )
    for name, fn in fns.items():
        got = float(np.asarray(fn()).reshape(-1)[0])
        if got != CHAIN:
            print(f"  # WARNING: {name} computed {got}", flush=True)
    med = _interleaved(fns, reps, batch_s)
    for on in (True, False):
        _print_row(
            f"x = x + 1.0 x{CHAIN}, graph optimizer {'ON' if on else 'OFF'}",
            "us",
            {
                lib: med[f"{lib}/{on}"] * 1e6
                for lib in ("opweave", "tensorflow")
                if f"{lib}/{on}" in med
            },
        )
    if tf is not None:
        ratio = med["opweave/True"] / med["tensorflow/True"]
        verdict = "met" if ratio <= 0.25 else "NOT met"
        _note(
            f"target opweave <= 1/4 of TensorFlow's time, both optimizers on: {verdict} "
            f"(ow/TF {ratio:.3f}); both fold the chain into one add"
        )


FUSION_N = 4 * 1024 * 1024  # 16 MiB of float32 per input
# Four element-wise ops of one shape each, written once for every library: `t` is its tanh.
FUSION_CHAINS: dict[str, Callable[[Any, Any, Any], Any]] = {
    "(x*z+x)*z-z": lambda x, z, t: (x * z + x) * z - z,
    "tanh(x*z+x)*z": lambda x, z, t: t(x * z + x) * z,
}


def bench_fusion(reps: int, batch_s: float) -> None:
    """4-op element-wise chains on 16 MiB: fused, unfused, TensorFlow, PyTorch, NumPy."""
    rng = np.random.default_rng(0)
    xv = rng.standard_normal(FUSION_N).astype(np.float32)
    zv = rng.standard_normal(FUSION_N).astype(np.float32)
    for label, chain in FUSION_CHAINS.items():
        fns: dict[str, Fn] = {}
        for fuse in (True, False):
            g = ow.Graph()
            with g.as_default():
                x = ow.placeholder(ow.float32, shape=(FUSION_N,), name="x")
                z = ow.placeholder(ow.float32, shape=(FUSION_N,), name="z")
                y = chain(x, z, ow.tanh)
            config = _ow_config()
            if not fuse:
                config.graph_options.rewrite_options.remapping = ow.RewriterConfig.OFF
            fns[f"opweave/{fuse}"] = _session_callable("opweave", g, y, {x: xv, z: zv}, config)
        if tf is not None:
            tg = tf1.Graph()
            with tg.as_default():
                tx = tf1.placeholder(tf.float32, shape=(FUSION_N,), name="x")
                tz = tf1.placeholder(tf.float32, shape=(FUSION_N,), name="z")
                ty = chain(tx, tz, tf1.tanh)
            fns["tensorflow"] = _session_callable(
                "tf", tg, ty, {tx: xv, tz: zv}, _tf_config(grappler=True)
            )
        if torch is not None:
            txv, tzv = torch.from_numpy(xv), torch.from_numpy(zv)
            fns["torch"] = lambda chain=chain, txv=txv, tzv=tzv: chain(txv, tzv, torch.tanh)
        fns["numpy"] = lambda chain=chain: chain(xv, zv, np.tanh)
        if fns["opweave/True"]().tobytes() != fns["opweave/False"]().tobytes():
            print("  # WARNING: fused and unfused results differ", flush=True)
        med = _interleaved(fns, reps, batch_s)
        peers = {k: med[k] * 1e3 for k in ("tensorflow", "torch") if k in med}
        fused, unfused, numpy_t = med["opweave/True"], med["opweave/False"], med["numpy"]
        _print_row(f"{label}, 2 x 16 MiB f32 in, fused", "ms", {"opweave": fused * 1e3, **peers})
        _print_row("  the same, remapping OFF (unfused)", "ms", {"opweave": unfused * 1e3, **peers})
        _note(
            f"NumPy {numpy_t * 1e3:.2f} ms; fused/unfused {fused / unfused:.2f}, "
            f"NumPy/fused {numpy_t / fused:.2f}, NumPy/unfused {numpy_t / unfused:.2f}"
        )


def bench_fixed(reps: int, batch_s: float) -> None:
    """Session.run fixed overhead on a 1-op graph."""
    v = np.float32(1.0)
    fns_run: dict[str, Fn] = {}
    fns_call: dict[str, Fn] = {}
    g = ow.Graph()
    with g.as_default():
        x = ow.placeholder(ow.float32, shape=(), name="x")
        y = x + 1.0
    sess = ow.Session(graph=g, config=_ow_config())
    _SESSIONS.append(sess)
    fns_run["opweave"] = lambda: sess.run(y, {x: v})
    fns_call["opweave"] = _session_callable("opweave", g, y, {x: v}, _ow_config())
    if tf is not None:
        tg = tf1.Graph()
        with tg.as_default():
            tx = tf1.placeholder(tf.float32, shape=(), name="x")
            ty = tx + 1.0
        tsess = tf1.Session(graph=tg, config=_tf_config(grappler=True))
        _SESSIONS.append(tsess)
        fns_run["tensorflow"] = lambda: tsess.run(ty, {tx: v})
        fns_call["tensorflow"] = _session_callable("tf", tg, ty, {tx: v}, _tf_config(grappler=True))
    if torch is not None:
        plus_one = torch.jit.CompilationUnit("def f(x: Tensor) -> Tensor:\n    return x + 1\n").f
        tv = torch.tensor(1.0)
        fns_call["torch"] = lambda: plus_one(tv)
    med_run = _interleaved(fns_run, reps, batch_s)
    _print_row("1-op graph: Session.run(y, {x: v})", "us", {k: t * 1e6 for k, t in med_run.items()})
    med_call = _interleaved(fns_call, reps, batch_s)
    _print_row(
        "1-op graph: make_callable(y, [x])(v)", "us", {k: t * 1e6 for k, t in med_call.items()}
    )
    _note("torch: calling a scripted x + 1 (no session; the closest thing it has)")


# -- Taskflow shapes ---------------------------------------------------------------------------
def _ow_noop_chain(n: int) -> tuple[Any, Any]:
    g = ow.Graph()
    with g.as_default():
        prev = ow.no_op(name="n0")
        for i in range(1, n):
            with g.control_dependencies([prev]):
                prev = ow.no_op(name=f"n{i}")
    return g, prev


def _tf_noop_chain(n: int) -> tuple[Any, Any]:
    g = tf1.Graph()
    with g.as_default():
        prev = tf1.no_op(name="n0")
        for i in range(1, n):
            with g.control_dependencies([prev]):
                prev = tf1.no_op(name=f"n{i}")
    return g, prev


def _tree(lib: Any, n: int) -> tuple[Any, Any]:
    """Binary tree of n no_ops (node i's children: 2i+1, 2i+2), leaves joined by group()."""
    g = lib.Graph()
    with g.as_default():
        nodes = [lib.no_op(name="t0")]
        for i in range(1, n):
            with g.control_dependencies([nodes[(i - 1) // 2]]):
                nodes.append(lib.no_op(name=f"t{i}"))
        join = lib.group(*nodes[n // 2 :])
    return g, join


def _embarrassing(lib: Any, tasks: int) -> tuple[Any, Any, Any]:
    """`tasks` independent chains of 32 alternating tanh / sigmoid ops on x, joined by group()."""
    g = lib.Graph()
    with g.as_default():
        dtype = ow.float32 if lib is ow else tf.float32
        x = lib.placeholder(dtype, shape=(16,), name="x")
        ends = []
        for _ in range(tasks):
            y = x
            for k in range(32):
                y = (
                    (ow.tanh if lib is ow else tf1.tanh)(y)
                    if k % 2 == 0
                    else (ow.sigmoid if lib is ow else tf1.sigmoid)(y)
                )
            ends.append(y)
        join = lib.group(*ends)
    return g, x, join


def _wavefront(lib: Any, n: int) -> tuple[Any, Any, Any]:
    """n x n cells: cell(i, j) = maximum(cell(i-1, j), cell(i, j-1)); edges tanh of their one
    neighbour; cell(0, 0) = tanh(x)."""
    g = lib.Graph()
    with g.as_default():
        is_ow = lib is ow
        x = lib.placeholder(ow.float32 if is_ow else tf.float32, shape=(), name="x")
        tanh = ow.tanh if is_ow else tf1.tanh
        maximum = ow.maximum if is_ow else tf1.maximum
        cells: list[Any] = []
        for i in range(n):
            for j in range(n):
                if i == 0 and j == 0:
                    c = tanh(x)
                elif i == 0:
                    c = tanh(cells[j - 1])
                elif j == 0:
                    c = tanh(cells[(i - 1) * n])
                else:
                    c = maximum(cells[(i - 1) * n + j], cells[i * n + j - 1])
                cells.append(c)
    return g, x, cells[-1]


_TORCH_TASKFLOW = """
def tree_root(x: Tensor) -> Tensor:
    return x

def tree_node(parent: Future[Tensor]) -> Tensor:
    return torch.jit.wait(parent)

def tree(x: Tensor, n: int) -> Tensor:
    futs: List[Future[Tensor]] = [torch.jit.fork(tree_root, x)]
    for i in range(1, n):
        futs.append(torch.jit.fork(tree_node, futs[(i - 1) // 2]))
    y = x
    for f in futs:
        y = torch.jit.wait(f)
    return y

def task(x: Tensor) -> Tensor:
    y = x
    for k in range(16):
        y = torch.sigmoid(torch.tanh(y))
    return y

def embarrassing(x: Tensor, tasks: int) -> Tensor:
    futs: List[Future[Tensor]] = []
    for i in range(tasks):
        futs.append(torch.jit.fork(task, x))
    y = x
    for f in futs:
        y = torch.jit.wait(f)
    return y

def wf_origin(x: Tensor) -> Tensor:
    return torch.tanh(x)

def wf_edge(prev: Future[Tensor]) -> Tensor:
    return torch.tanh(torch.jit.wait(prev))

def wf_cell(up: Future[Tensor], left: Future[Tensor]) -> Tensor:
    return torch.maximum(torch.jit.wait(up), torch.jit.wait(left))

def wavefront(x: Tensor, n: int) -> Tensor:
    futs: List[Future[Tensor]] = []
    for i in range(n):
        for j in range(n):
            if i == 0 and j == 0:
                futs.append(torch.jit.fork(wf_origin, x))
            elif i == 0:
                futs.append(torch.jit.fork(wf_edge, futs[j - 1]))
            elif j == 0:
                futs.append(torch.jit.fork(wf_edge, futs[(i - 1) * n]))
            else:
                futs.append(torch.jit.fork(wf_cell, futs[(i - 1) * n + j], futs[i * n + j - 1]))
    return torch.jit.wait(futs[n * n - 1])
"""


def bench_taskflow(reps: int, batch_s: float, quick: bool) -> None:
    ts = torch.jit.CompilationUnit(_TORCH_TASKFLOW) if torch is not None else None
    cfg, tcfg = _ow_config(optimize=False), _tf_config() if tf is not None else None

    def run_case(label: str, nodes: int, fns: dict[str, Fn]) -> None:
        med = _interleaved(fns, reps, batch_s)
        _print_row(
            f"{label} ({nodes} nodes)", "us/node", {k: t / nodes * 1e6 for k, t in med.items()}
        )

    for k in (10, 12) if quick else (10, 12, 14, 16):
        n = 1 << k
        fns: dict[str, Fn] = {}
        g, last = _ow_noop_chain(n)
        fns["opweave"] = _session_callable("opweave", g, last, {}, cfg)
        if tf is not None:
            tg, tlast = _tf_noop_chain(n)
            fns["tensorflow"] = _session_callable("tf", tg, tlast, {}, tcfg)
        run_case(f"linear chain 2^{k} no_ops", n, fns)
    for k in (10, 12) if quick else (10, 12, 14, 16):
        n = (1 << k) - 1
        fns = {}
        g, join = _tree(ow, n)
        fns["opweave"] = _session_callable("opweave", g, join, {}, cfg)
        if tf is not None:
            tg, tjoin = _tree(tf1, n)
            fns["tensorflow"] = _session_callable("tf", tg, tjoin, {}, tcfg)
        if ts is not None:
            tx = torch.zeros(())
            fns["torch"] = lambda n=n, tx=tx: ts.tree(tx, n)
        run_case(f"binary tree 2^{k}-1 no_ops", n + 1, fns)
    xv = np.linspace(-1, 1, 16, dtype=np.float32)
    for tasks in (64, 256) if quick else (64, 256, 1024):
        fns = {}
        g, x, join = _embarrassing(ow, tasks)
        fns["opweave"] = _session_callable("opweave", g, join, {x: xv}, cfg)
        if tf is not None:
            tg, tx_, tjoin = _embarrassing(tf1, tasks)
            fns["tensorflow"] = _session_callable("tf", tg, tjoin, {tx_: xv}, tcfg)
        if ts is not None:
            txv = torch.from_numpy(xv.copy())
            fns["torch"] = lambda tasks=tasks, txv=txv: ts.embarrassing(txv, tasks)
        run_case(f"embarrassing {tasks} x 32 tanh/sigmoid", 32 * tasks + 1, fns)
    fns = {}
    side = 64
    g, x, last = _wavefront(ow, side)
    fns["opweave"] = _session_callable("opweave", g, last, {x: np.float32(0.5)}, cfg)
    if tf is not None:
        tg, tx_, tlast = _wavefront(tf1, side)
        fns["tensorflow"] = _session_callable("tf", tg, tlast, {tx_: np.float32(0.5)}, tcfg)
    if ts is not None:
        half = torch.tensor(0.5)
        fns["torch"] = lambda: ts.wavefront(half, side)
    run_case(f"wavefront {side}x{side} max(up, left)", side * side, fns)
    _note("us/node = time per run / nodes; TF with graph optimisation off (see the docstring)")


# -- MLP towers --------------------------------------------------------------------------------
TOWERS, LAYERS, BATCH, WIDTH = 4, 2, 256, 512

_TORCH_MLP = """
def tower(x: Tensor, ws: List[Tensor], bs: List[Tensor]) -> Tensor:
    h = x
    for i in range(len(ws)):
        h = torch.relu(torch.matmul(h, ws[i]) + bs[i])
    return h

def mlp(x: Tensor, ws: List[List[Tensor]], bs: List[List[Tensor]]) -> Tensor:
    futs: List[Future[Tensor]] = []
    for t in range(len(ws)):
        futs.append(torch.jit.fork(tower, x, ws[t], bs[t]))
    total = torch.jit.wait(futs[0])
    for t in range(1, len(futs)):
        total = total + torch.jit.wait(futs[t])
    return torch.sum(total, 1)
"""


def _mlp_arrays(seed: int = 0) -> tuple[list[list[np.ndarray]], list[list[np.ndarray]], np.ndarray]:
    """The weights and input of opweave.models.mlp_towers(seed=seed), drawn in the same order."""
    rng = np.random.default_rng(seed)
    scale = 1.0 / np.sqrt(WIDTH)
    ws: list[list[np.ndarray]] = []
    bs: list[list[np.ndarray]] = []
    for _ in range(TOWERS):
        ws.append([])
        bs.append([])
        for _ in range(LAYERS):
            ws[-1].append((rng.standard_normal((WIDTH, WIDTH)) * scale).astype(np.float32))
            bs[-1].append((0.1 * rng.standard_normal(WIDTH)).astype(np.float32))
    x = rng.standard_normal((BATCH, WIDTH)).astype(np.float32)
    return ws, bs, x


def mlp_worker(inter: int, intra: int, reps: int) -> None:
    """One (inter, intra) setting, in a fresh process: prints a JSON line of median seconds."""
    if torch is not None:
        torch.set_num_threads(intra)
        torch.set_num_interop_threads(inter)
    m = ow.models.mlp_towers(towers=TOWERS, layers=LAYERS, batch=BATCH, width=WIDTH)
    ws, bs, xv = _mlp_arrays()
    fns: dict[str, Fn] = {}
    feed = next(iter(m.feed_dict))
    fns["opweave"] = _session_callable(
        "opweave", m.graph, m.fetches, {feed: xv}, _ow_config(inter, intra)
    )
    if tf is not None:
        g = tf1.Graph()
        with g.as_default():
            x = tf1.placeholder(tf.float32, shape=(BATCH, WIDTH))
            outs = []
            for t in range(TOWERS):
                h = x
                for layer in range(LAYERS):
                    h = tf1.nn.relu(tf1.matmul(h, tf1.constant(ws[t][layer])) + bs[t][layer])
                outs.append(h)
            y = tf1.reduce_sum(tf1.add_n(outs), axis=1)
        fns["tensorflow"] = _session_callable(
            "tf", g, y, {x: xv}, _tf_config(inter, intra, grappler=True)
        )
    if torch is not None:
        mlp = torch.jit.CompilationUnit(_TORCH_MLP).mlp
        tws = [[torch.from_numpy(w) for w in tower] for tower in ws]
        tbs = [[torch.from_numpy(b) for b in tower] for tower in bs]
        txv = torch.from_numpy(xv)
        fns["torch"] = lambda: mlp(txv, tws, tbs)
    reference = np.asarray(fns["opweave"]())
    agree = {
        name: bool(np.allclose(np.asarray(fn()), reference, rtol=1e-3, atol=1e-2))
        for name, fn in fns.items()
    }
    med = _interleaved(fns, reps, batch_s=0.05)
    print(json.dumps({"inter": inter, "intra": intra, "median_s": med, "agree": agree}))


def bench_mlp(reps: int) -> None:
    for inter in (1, 2):
        for intra in (1, 2):
            out = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--mlp-worker",
                    str(inter),
                    str(intra),
                    "--reps",
                    str(reps),
                ],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            result = json.loads(out.strip().splitlines()[-1])
            med = result["median_s"]
            _print_row(
                f"MLP towers b{BATCH} inter={inter} intra={intra}",
                "ms",
                {k: t * 1e3 for k, t in med.items()},
            )
            bad = [k for k, ok in result["agree"].items() if not ok]
            if bad:
                _note(f"WARNING: results differ from opweave's: {bad}")
    _note("one fresh process per setting (all three libraries size their pools once)")


# -- serving: small-batch inference -----------------------------------------------------------
SERVE_SIZES = (784, 512, 512, 10)  # MLP 784-512-512-10: relu after every layer but the last
SERVE_CASES = ((1, 1), (1, 4), (16, 1), (16, 4))  # (batch, towers); towers' outputs summed
SERVE_RATES = (100, 1000)  # open loop: requests per second
SERVE_SETTINGS = ((1, 1), (2, 2))  # (intra, inter)
SERVE_LIBS = ("opweave", "ort", "ort-nospin", "tensorflow", "torch")
SERVE_LABELS = {
    "opweave": "opweave",
    "ort": "ORT",
    "ort-nospin": "ORT-nospin",
    "tensorflow": "TF",
    "torch": "torch",
}
SERVE_RATIO_LABELS = {
    "ort": "ORT/ow",
    "ort-nospin": "ORTns/ow",
    "tensorflow": "TF/ow",
    "torch": "torch/ow",
}
SERVE_SETTLE_S = float(os.environ.get("OW_BENCH_SERVE_SETTLE_S", "0.3"))
_MARK = "@@serve "  # prefixes the worker's answers (libraries may print to stdout too)


def _serve_arrays(seed: int = 0) -> tuple[list[list[tuple[np.ndarray, np.ndarray]]], dict]:
    """Weights of 4 towers (the one-network cases use the first) and an input per batch size."""
    rng = np.random.default_rng(seed)
    towers = []
    for _ in range(max(t for _, t in SERVE_CASES)):
        layers = []
        for fan_in, fan_out in itertools.pairwise(SERVE_SIZES):
            w = (rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)).astype(np.float32)
            b = (0.1 * rng.standard_normal(fan_out)).astype(np.float32)
            layers.append((w, b))
        towers.append(layers)
    xs = {b: rng.standard_normal((b, SERVE_SIZES[0])).astype(np.float32) for b, _ in SERVE_CASES}
    return towers, xs


def _serve_weight_bytes(towers: int) -> int:
    per_tower = sum((fan_in + 1) * fan_out for fan_in, fan_out in itertools.pairwise(SERVE_SIZES))
    return 4 * towers * per_tower


def _serve_graph(lib: Any, dtype: Any, batch: int, layers: list[list[Any]]) -> tuple[Any, Any, Any]:
    """The MLP in a TensorFlow-1-style library (opweave or tf.compat.v1): placeholder x, fetch y."""
    g = lib.Graph()
    with g.as_default():
        x = lib.placeholder(dtype, shape=(batch, SERVE_SIZES[0]), name="x")
        outs = []
        for tower in layers:
            h = x
            for i, (w, b) in enumerate(tower):
                h = lib.matmul(h, lib.constant(w)) + lib.constant(b)
                if i < len(tower) - 1:
                    h = lib.nn.relu(h)
            outs.append(h)
        y = outs[0] if len(outs) == 1 else lib.add_n(outs)
    return g, x, y


def _serve_onnx(batch: int, layers: list[list[Any]]) -> bytes:
    """The MLP as an ONNX model (MatMul + Add + Relu, towers summed by Sum)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    nodes, inits = [], []
    outs = []
    for t, tower in enumerate(layers):
        h = "x"
        for i, (w, b) in enumerate(tower):
            inits += [
                numpy_helper.from_array(w, f"w{t}_{i}"),
                numpy_helper.from_array(b, f"b{t}_{i}"),
            ]
            nodes.append(helper.make_node("MatMul", [h, f"w{t}_{i}"], [f"mm{t}_{i}"]))
            nodes.append(helper.make_node("Add", [f"mm{t}_{i}", f"b{t}_{i}"], [f"a{t}_{i}"]))
            h = f"a{t}_{i}"
            if i < len(tower) - 1:
                nodes.append(helper.make_node("Relu", [h], [f"r{t}_{i}"]))
                h = f"r{t}_{i}"
        outs.append(h)
    nodes.append(helper.make_node("Sum", outs, ["y"]))
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, SERVE_SIZES[0]])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, SERVE_SIZES[-1]])],
        initializer=inits,
    )
    opset = min(onnx.defs.onnx_opset_version(), SERVE_ONNX_OPSET)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = min(model.ir_version, SERVE_ONNX_IR)  # what onnxruntime reads
    onnx.checker.check_model(model)
    return bytes(model.SerializeToString())


SERVE_ONNX_OPSET = 21
SERVE_ONNX_IR = 10


def _serve_build(lib: str, intra: int, inter: int) -> tuple[dict[tuple[int, int], Fn], dict]:
    """One callable per case for `lib`, configured with (intra, inter), and facts to print."""
    towers, xs = _serve_arrays()
    fns: dict[tuple[int, int], Fn] = {}
    info: dict[str, Any] = {}
    if lib == "opweave":
        info["version"] = ow.__version__
        for batch, n in SERVE_CASES:
            g, x, y = _serve_graph(ow, ow.float32, batch, towers[:n])
            sess = ow.Session(graph=g, config=_ow_config(inter, intra))
            _SESSIONS.append(sess)
            call = sess.make_callable(y, [x])
            xv = xs[batch]
            fns[(batch, n)] = lambda call=call, xv=xv: call(xv)
            fns[(batch, n)]()  # compile and optimize; check that the products were fused
            report = sess.optimizer_report()
            fused = [c for c in report.changes() if "_FusedMatMul" in str(c)] if report else []
            info[f"b{batch}x{n}"] = (
                f"{report.nodes_before if report else '?'} -> "
                f"{report.nodes_after if report else '?'} nodes, "
                f"{len(fused)} changes to _FusedMatMul"
            )
        before = ow._opweave_core.packed_weight_stats()
        for fn in fns.values():
            fn()
        after = ow._opweave_core.packed_weight_stats()
        info["packed weights"] = (
            f"{after['packs']} packs in all; one more call of every case: "
            f"{after['packs'] - before['packs']} packs, {after['hits'] - before['hits']} hits"
        )
    elif lib in ("ort", "ort-nospin"):
        import onnx
        import onnxruntime as ort

        info["version"] = f"onnxruntime {ort.__version__}, onnx {onnx.__version__}"
        for batch, n in SERVE_CASES:
            so = ort.SessionOptions()
            so.intra_op_num_threads = intra
            so.inter_op_num_threads = inter
            if inter > 1:
                so.execution_mode = ort.ExecutionMode.ORT_PARALLEL
            if lib == "ort-nospin":
                so.add_session_config_entry("session.intra_op.allow_spinning", "0")
                so.add_session_config_entry("session.inter_op.allow_spinning", "0")
            sess = ort.InferenceSession(
                _serve_onnx(batch, towers[:n]), sess_options=so, providers=["CPUExecutionProvider"]
            )
            xv = xs[batch]
            fns[(batch, n)] = lambda sess=sess, xv=xv: sess.run(["y"], {"x": xv})[0]
    elif lib == "tensorflow":
        info["version"] = f"tensorflow {tf.__version__}"
        for batch, n in SERVE_CASES:
            g, x, y = _serve_graph(tf1, tf.float32, batch, towers[:n])
            sess = tf1.Session(graph=g, config=_tf_config(inter, intra, grappler=True))
            _SESSIONS.append(sess)
            call = sess.make_callable(y, [x])
            xv = xs[batch]
            fns[(batch, n)] = lambda call=call, xv=xv: call(xv)
    elif lib == "torch":
        torch.set_num_threads(intra)
        torch.set_num_interop_threads(inter)
        info["version"] = f"torch {torch.__version__}"
        tt = [
            [(torch.from_numpy(w.T.copy()), torch.from_numpy(b)) for w, b in tower]
            for tower in towers
        ]  # nn.Linear's layout: weight (out, in)
        linear, relu = torch.nn.functional.linear, torch.relu

        def forward(x: Any, layers: list[list[Any]]) -> Any:
            total = None
            for tower in layers:
                h = x
                for i, (w, b) in enumerate(tower):
                    h = linear(h, w, b)
                    if i < len(tower) - 1:
                        h = relu(h)
                total = h if total is None else total + h
            return total

        def torch_call(x: Any, layers: list[list[Any]]) -> Any:
            with torch.inference_mode():
                return forward(x, layers).numpy()

        for batch, n in SERVE_CASES:
            tx = torch.from_numpy(xs[batch])
            fns[(batch, n)] = lambda tx=tx, layers=tt[:n]: torch_call(tx, layers)
    else:
        raise ValueError(f"unknown library {lib!r}")
    return fns, info


def _closed_loop(fn: Fn, seconds: float) -> dict[str, Any]:
    """Requests back to back for about `seconds`: each one's latency, and CPU per request."""
    for _ in range(3):
        fn()
    lat: list[float] = []
    c0, t0 = time.process_time(), time.perf_counter()
    end = t0 + seconds
    now = t0
    while now < end or not lat:
        s = time.perf_counter()
        fn()
        now = time.perf_counter()
        lat.append(now - s)
    return {"lat": lat, "cpu": (time.process_time() - c0) / len(lat)}


def _open_loop(fn: Fn, rate: float, seconds: float) -> dict[str, Any]:
    """One request every 1/rate s for `seconds`, sleeping in between: each one's latency (from its
    start), the process's CPU time per request over whole periods (threads that spin between
    requests count), and the rate achieved (a request that starts late is not made up for)."""
    fn()
    n = max(1, round(rate * seconds))
    period = 1.0 / rate
    lat: list[float] = []
    c0, t0 = time.process_time(), time.perf_counter()
    for i in range(n):
        wait = t0 + i * period - time.perf_counter()
        if wait > 0:
            time.sleep(wait)
        s = time.perf_counter()
        fn()
        lat.append(time.perf_counter() - s)
    wait = t0 + n * period - time.perf_counter()  # the last request's whole period
    if wait > 0:
        time.sleep(wait)
    elapsed = time.perf_counter() - t0
    return {"lat": lat, "cpu": (time.process_time() - c0) / n, "rate": n / elapsed}


def serve_worker(lib: str, intra: int, inter: int) -> None:
    """A persistent worker: builds every case, then answers one JSON command per stdin line."""

    def answer(obj: Any) -> None:
        sys.stdout.write(_MARK + json.dumps(obj) + "\n")
        sys.stdout.flush()

    try:
        fns, info = _serve_build(lib, intra, inter)
    except Exception as e:  # reported to the parent, which skips the library
        answer({"error": f"{type(e).__name__}: {e}"})
        _exit_now()
    outputs = {f"{b}x{n}": np.asarray(fn()).tolist() for (b, n), fn in fns.items()}
    answer({"info": info, "outputs": outputs})
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd["cmd"] == "quit":
            break
        fn = fns[(cmd["batch"], cmd["towers"])]
        if cmd["cmd"] == "closed":
            answer(_closed_loop(fn, cmd["seconds"]))
        else:
            answer(_open_loop(fn, cmd["rate"], cmd["seconds"]))
    for sess in _SESSIONS:
        sess.close()
    _exit_now()


class _ServeProcess:
    """A worker process of one (library, setting), driven by JSON lines."""

    def __init__(self, lib: str, intra: int, inter: int) -> None:
        self.lib = lib
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--serve-worker", lib, str(intra), str(inter)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )

    def read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith(_MARK):
                return dict(json.loads(line[len(_MARK) :]))
        return {"error": f"the worker exited (code {self.proc.wait()})"}

    def ask(self, **cmd: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        return self.read()

    def close(self) -> None:
        with contextlib.suppress(BrokenPipeError, OSError):
            self.ask(cmd="quit")
        self.proc.wait(timeout=30)


def _memory_bandwidth(threads: int) -> tuple[float, str]:
    """Bytes per second of the fastest whole read of a 256 MiB float32 array with at most
    `threads` threads (NumPy's sum, 1 thread; opweave's reduce_sum on a private pool of 1 and
    `threads` threads), median of 5 reads each: the sum GB/s bench/kernels.py measures."""
    x = np.ones(64 * 1024 * 1024, np.float32)
    fns: dict[str, Fn] = {"numpy sum, 1 thread": lambda: np.sum(x)}
    for t in sorted({1, threads}):
        fns[f"opweave reduce_sum, {t} thread{'s' if t > 1 else ''}"] = lambda t=t: (
            ow.kernels.reduce_sum(x, _num_threads=t)
        )
    best, how = 0.0, ""
    for name, fn in fns.items():
        fn()
        ts = []
        for _ in range(5):
            t0 = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t0)
        bw = x.nbytes / statistics.median(ts)
        if bw > best:
            best, how = bw, name
    return best, how


def _pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def _serve_row(label: str, unit: str, vals: dict[str, float | None], libs: Sequence[str]) -> None:
    ours = vals.get("opweave")
    cells = "".join(_fmt(vals.get(lib), 11) for lib in libs)
    ratios = "".join(
        _fmt(vals[lib] / ours if ours and vals.get(lib) else None, 9, 2)
        for lib in libs
        if lib != "opweave"
    )
    print(f"{label:<34}{unit:<6}{cells}{ratios}", flush=True)


def bench_serve(reps: int, quick: bool, libs: Sequence[str], settings: Sequence[tuple[int, int]]):
    """Small-batch inference: see the module docstring."""
    turn_s = 0.05 if quick else 0.1
    open_s = 0.5 if quick else 1.0  # per round; two rounds unless quick
    open_rounds = 1 if quick else 2
    print(
        f"# serve: MLP {'-'.join(map(str, SERVE_SIZES))} float32, cases (batch, towers) "
        f"{list(SERVE_CASES)}; towers' outputs summed",
        flush=True,
    )
    for intra, inter in settings:
        bandwidth, how = _memory_bandwidth(intra)
        procs = {lib: _ServeProcess(lib, intra, inter) for lib in libs}
        ready = {lib: p.read() for lib, p in procs.items()}
        for lib, r in ready.items():
            if "error" in r:
                _note(f"{lib} skipped: {r['error']}")
                procs.pop(lib).close()
        active = [lib for lib in libs if lib in procs]
        print(
            f"\n# intra={intra} inter={inter}; memory read bandwidth {bandwidth / 1e9:.1f} GB/s "
            f"({how}, 256 MiB); load avg {os.getloadavg()[0]:.2f}",
            flush=True,
        )
        empty = {rate: _open_loop(lambda: None, rate, open_s / 2)["cpu"] for rate in SERVE_RATES}
        _note(
            "an empty request costs "
            + ", ".join(f"{cpu * 1e6:.0f} us CPU at {rate}/s" for rate, cpu in empty.items())
            + " in this loop (sleeping and waking up; included in every open-loop CPU figure)"
        )
        for lib in active:
            info = ready[lib]["info"]
            _note(f"{lib}: " + "; ".join(f"{k}: {v}" for k, v in info.items()))
        peers = [lib for lib in active if lib != "opweave"]
        print(
            f"{'case':<34}{'unit':<6}"
            + "".join(f"{SERVE_LABELS[lib]:>11}" for lib in active)
            + "".join(f"{SERVE_RATIO_LABELS[lib]:>9}" for lib in peers),
            flush=True,
        )
        for batch, towers in SERVE_CASES:
            key = f"{batch}x{towers}"
            if "opweave" in active:
                ref = np.asarray(ready["opweave"]["outputs"][key])
                bad = [
                    lib
                    for lib in active
                    if not np.allclose(
                        np.asarray(ready[lib]["outputs"][key]), ref, rtol=1e-3, atol=1e-3
                    )
                ]
                if bad:
                    _note(f"WARNING: b{batch} x{towers}: results differ from opweave's: {bad}")
            lat: dict[str, list[float]] = {lib: [] for lib in active}
            cpu: dict[str, list[float]] = {lib: [] for lib in active}
            for _ in range(reps):
                for lib in active:
                    time.sleep(SERVE_SETTLE_S)
                    r = procs[lib].ask(cmd="closed", batch=batch, towers=towers, seconds=turn_s)
                    lat[lib] += r["lat"]
                    cpu[lib].append(r["cpu"])
            name = f"b{batch} {'1 net' if towers == 1 else f'{towers} towers'}"
            med = {lib: statistics.median(v) * 1e6 for lib, v in lat.items()}
            _serve_row(f"{name} closed loop, median", "us", med, active)
            _serve_row("  p90", "us", {lib: _pct(v, 90) * 1e6 for lib, v in lat.items()}, active)
            _serve_row(
                "  CPU per request",
                "us",
                {lib: statistics.median(v) * 1e6 for lib, v in cpu.items()},
                active,
            )
            open_med: dict[int, dict[str, float]] = {}
            open_cpu: dict[int, dict[str, float]] = {}
            for rate in SERVE_RATES:
                olat: dict[str, list[float]] = {lib: [] for lib in active}
                ocpu: dict[str, list[float]] = {lib: [] for lib in active}
                orate: dict[str, list[float]] = {lib: [] for lib in active}
                for k in range(open_rounds):
                    for lib in active if k % 2 == 0 else active[::-1]:
                        time.sleep(SERVE_SETTLE_S)
                        r = procs[lib].ask(
                            cmd="open", batch=batch, towers=towers, rate=rate, seconds=open_s
                        )
                        olat[lib] += r["lat"]
                        ocpu[lib].append(r["cpu"])
                        orate[lib].append(r["rate"])
                open_med[rate] = {lib: statistics.median(v) * 1e6 for lib, v in olat.items()}
                open_cpu[rate] = {lib: statistics.mean(v) * 1e6 for lib, v in ocpu.items()}
                _serve_row(f"  {rate}/s open loop, median", "us", open_med[rate], active)
                _serve_row("    CPU per request", "us", open_cpu[rate], active)
                slow = [
                    f"{lib} {statistics.mean(v):.0f}/s"
                    for lib, v in orate.items()
                    if statistics.mean(v) < 0.95 * rate
                ]
                if slow:
                    _note(f"could not keep up with {rate}/s (achieved): {', '.join(slow)}")
            floor = _serve_weight_bytes(towers) / bandwidth * 1e6
            _note(
                f"memory floor {floor:.0f} us ({_serve_weight_bytes(towers) / 1e6:.2f} MB of "
                f"weights / {bandwidth / 1e9:.1f} GB/s)"
            )
            if "opweave" in active:
                _serve_verdicts(med, open_med, open_cpu, floor)
        for p in procs.values():
            p.close()
    _note(
        "one process per (library, setting), driven in turns (the others sleep meanwhile); "
        "closed loop: latencies of every round pooled; CPU = process CPU time / requests"
    )


def _serve_verdicts(
    med: dict[str, float],
    open_med: dict[int, dict[str, float]],
    open_cpu: dict[int, dict[str, float]],
    floor: float,
) -> None:
    """Issue 16's goals for one case, from the figures of this run."""
    ow_t = med["opweave"]
    out = []
    if "ort" in med:
        lat = [("closed loop", med)] + [(f"{r}/s", open_med[r]) for r in open_med]
        ok = all(m["opweave"] <= m["ort"] for _, m in lat)
        ratios = ", ".join(f"{m['ort'] / m['opweave']:.2f}x {k}" for k, m in lat)
        out.append(f"latency <= ORT default's: {'met' if ok else 'NOT met'} ({ratios})")
    if "ort-nospin" in med:
        ok = all(open_cpu[r]["opweave"] <= open_cpu[r]["ort-nospin"] for r in open_cpu)
        ratios = ", ".join(
            f"{open_cpu[r]['ort-nospin'] / open_cpu[r]['opweave']:.2f}x at {r}/s" for r in open_cpu
        )
        out.append(f"CPU/request <= ORT-nospin's: {'met' if ok else 'NOT met'} ({ratios})")
    ratio_goals = []
    if "tensorflow" in med:
        ratio_goals.append((f"3x TF ({med['tensorflow'] / ow_t:.2f}x)", med["tensorflow"] / 3))
    if "torch" in med:
        ratio_goals.append((f"1.5x torch ({med['torch'] / ow_t:.2f}x)", med["torch"] / 1.5))
    if ratio_goals:
        bound = min(b for _, b in ratio_goals)
        peers = " and ".join(f"{label}: {'yes' if ow_t <= b else 'no'}" for label, b in ratio_goals)
        at_floor = ow_t <= 1.2 * floor
        if 1.2 * floor > bound:  # the floor comes first: within 1.2x of it is the goal
            verdict = "met" if at_floor or ow_t <= bound else "NOT met"
            out.append(f"{peers}; floor first, <= 1.2x floor ({1.2 * floor:.0f} us): {verdict}")
        else:
            out.append(f"{peers}: {'met' if ow_t <= bound else 'NOT met'}")
    _note("goals: " + "; ".join(out))


# -- main --------------------------------------------------------------------------------------
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
    """NumPy's BLAS (threadpoolctl) and what PyTorch's CPU products use."""
    out = []
    try:
        from threadpoolctl import threadpool_info

        out += [
            f"numpy {i.get('internal_api')} {i.get('version')} {i.get('architecture')}"
            for i in threadpool_info()
            if i.get("user_api") == "blas"
        ]
    except ImportError:
        out.append("numpy BLAS unknown (no threadpoolctl)")
    if torch is not None:
        out.append(
            f"torch mkl={torch.backends.mkl.is_available()} "
            f"mkldnn={torch.backends.mkldnn.is_available()}"
        )
    return ", ".join(out)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="fewer sizes and rounds")
    parser.add_argument("--reps", type=int, default=None, help="rounds per case (median)")
    parser.add_argument(
        "--only",
        choices=["chain", "optimizer", "fixed", "taskflow", "mlp", "fusion", "serve"],
        default=None,
    )
    parser.add_argument("--mlp-worker", nargs=2, type=int, metavar=("INTER", "INTRA"))
    parser.add_argument("--serve-worker", nargs=3, metavar=("LIB", "INTRA", "INTER"))
    parser.add_argument(
        "--serve-libs",
        default=",".join(SERVE_LIBS),
        help=f"serve: libraries to compare (default {','.join(SERVE_LIBS)})",
    )
    parser.add_argument(
        "--serve-settings",
        default=",".join(f"{a}x{e}" for a, e in SERVE_SETTINGS),
        help="serve: INTRAxINTER settings (default 1x1,2x2)",
    )
    args = parser.parse_args(argv)
    reps = args.reps or (5 if args.quick else 15)
    if args.serve_worker:
        serve_worker(args.serve_worker[0], int(args.serve_worker[1]), int(args.serve_worker[2]))
    if args.mlp_worker:
        mlp_worker(args.mlp_worker[0], args.mlp_worker[1], reps)
        _exit_now()
    if torch is not None:
        # Before any PyTorch parallel work: its inter-op pool is sized once.
        torch.set_num_threads(INTRA)
        torch.set_num_interop_threads(INTER)
    batch_s = 0.01 if args.quick else 0.02
    print(f"# opweave executor benchmark, {datetime.datetime.now().isoformat(timespec='seconds')}")
    print(
        f"# {_cpu_model()}, {os.cpu_count()} CPUs ({len(os.sched_getaffinity(0))} usable), "
        f"load avg {os.getloadavg()[0]:.2f}"
    )
    versions = [f"opweave {ow.__version__}", f"numpy {np.__version__}"]
    versions.append(f"tensorflow {tf.__version__}" if tf is not None else "tensorflow missing")
    versions.append(f"torch {torch.__version__}" if torch is not None else "torch missing")
    try:
        import onnxruntime

        versions.append(f"onnxruntime {onnxruntime.__version__}")
    except ImportError:
        versions.append("onnxruntime missing")
    print(f"# {', '.join(versions)}")
    print(f"# BLAS: {_blas()}; opweave gemm ISA f32={ow._opweave_core.gemm_isa('float32')}")
    print(
        f"# inter={INTER} intra={INTRA} unless stated; median of {reps} interleaved rounds; "
        "ratio = peer time / opweave time (> 1: opweave is faster)"
    )
    _print_header()
    if args.only in (None, "chain"):
        bench_chain(reps, batch_s)
    if args.only in (None, "optimizer"):
        bench_optimizer(reps, batch_s)
    if args.only in (None, "fixed"):
        bench_fixed(reps, batch_s)
    if args.only in (None, "taskflow"):
        bench_taskflow(reps, batch_s, args.quick)
    if args.only in (None, "fusion"):
        bench_fusion(reps, batch_s)
    if args.only in (None, "mlp"):
        bench_mlp(reps)
    if args.only in (None, "serve"):
        libs = [lib for lib in args.serve_libs.split(",") if lib]
        unknown = set(libs) - set(SERVE_LIBS)
        if unknown:
            parser.error(f"--serve-libs: unknown {sorted(unknown)}; known: {SERVE_LIBS}")
        settings = [tuple(int(v) for v in s.split("x")) for s in args.serve_settings.split(",")]
        bench_serve(
            3 if args.quick else 7 if args.reps is None else reps,
            args.quick,
            libs,
            [(a, e) for a, e in settings],
        )
    print(f"# done, load avg {os.getloadavg()[0]:.2f}")
    for sess in _SESSIONS:
        sess.close()
    _exit_now()


def _exit_now() -> None:
    """Leaves without interpreter finalization, once everything is printed.

    PyTorch's inter-op threads may still be destroying the state of finished fork() tasks, which
    holds tensors that reference Python objects; if that happens during finalization, the thread
    is unwound inside a noexcept destructor and the process aborts (std::terminate from
    c10::ThreadPool, seen about one exit in five after the MLP case).
    """
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
