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

The other sections use inter = intra = 2 for all three libraries. Calls are interleaved round by
round; each turn first sleeps (so the other libraries' idle workers park instead of stealing a
core), makes one untimed call, then times a batch of calls. The table shows medians over rounds.

    python bench/executor.py                  # everything
    python bench/executor.py --quick          # fewer sizes and rounds
    python bench/executor.py --only chain     # one section (chain, optimizer, fixed, taskflow, mlp,
                                              # fusion)
"""

from __future__ import annotations

import argparse
import datetime
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

try:
    import tensorflow as tf

    tf1: Any = tf.compat.v1
    tf1.disable_eager_execution()
except ImportError:  # pragma: no cover
    tf = None
    tf1 = None

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None

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


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="fewer sizes and rounds")
    parser.add_argument("--reps", type=int, default=None, help="rounds per case (median)")
    parser.add_argument(
        "--only",
        choices=["chain", "optimizer", "fixed", "taskflow", "mlp", "fusion"],
        default=None,
    )
    parser.add_argument("--mlp-worker", nargs=2, type=int, metavar=("INTER", "INTRA"))
    args = parser.parse_args(argv)
    reps = args.reps or (5 if args.quick else 15)
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
    print(f"# {', '.join(versions)}")
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
