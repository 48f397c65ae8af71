"""Kernel benchmark: opweave vs NumPy (OpenBLAS) vs PyTorch, same work, same process.

Matmul GFLOP/s for n in 256..2048 (float32, float64) and sum GB/s over 1 MiB / 16 MiB / 256 MiB
arrays and along each axis of a 4096 x 4096 float32 array, data movement (--only array), the
softmax family and bias_add (--only nn), element-wise math, reductions and scans (--only
elementwise), with 1 and 2 threads; --only eager: calls per second on tiny arrays (the fixed cost of
an opweave.kernels call). --only conv: conv2d (and its two gradients) on typical layer
shapes against TensorFlow (oneDNN) and PyTorch, one process per thread count (TensorFlow sizes its
pools once per process). Peers are pinned to the same thread count (threadpoolctl for OpenBLAS,
torch.set_num_threads for PyTorch); opweave runs on a private pool of that size. Implementations
are interleaved, round after round; each turn is a short loop of calls, as a user calling the
function repeatedly runs it: warm-up calls (the core's clock and caches, the implementation's own
workers), then back-to-back timed calls whose mean is the turn's figure. With 2+ threads each turn
first lets the other libraries' idle workers park. The median of the turns per implementation is
reported, with the ratio opweave / peer. Every implementation gets exactly the same treatment.

    python bench/kernels.py               # full table
    python bench/kernels.py --quick       # fewer sizes and repeats
    python bench/kernels.py --peer-build DIR --peer-label clang   # two builds of opweave

--peer-build adds another build of opweave as one more implementation, in the same rounds: DIR
holds its `opweave` package with the compiled extension (an unpacked wheel or a site-packages),
loaded as a second package beside the imported one. This is how a portable (clang/libc++) wheel
is compared with the GCC build: same process, same turns, same machine state.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from opweave import _opweave_core, kernels

try:
    from threadpoolctl import threadpool_info, threadpool_limits
except ImportError:  # pragma: no cover
    threadpool_limits = None
    threadpool_info = None

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None


_CLOCK: Callable[[], float] = time.perf_counter

# --peer-build: (label, that build's `kernels` module), timed as one more implementation.
_PEER: tuple[str, Any] | None = None


def _load_peer_build(site: Path) -> Any:
    """Import the opweave package under `site` as `opweave_peer` and return it.

    Its relative imports resolve inside it, so it gets its own extension. pybind11 keys its type
    registry by compiler and C++ library ABI: a GCC/libstdc++ and a clang/libc++ build each have
    their own, while two builds of one ABI would clash registering the same types.
    """
    init = site / "opweave" / "__init__.py"
    spec = importlib.util.spec_from_file_location(
        "opweave_peer", init, submodule_search_locations=[str(init.parent)]
    )
    if spec is None or spec.loader is None:
        raise SystemExit(f"--peer-build: no opweave package in {site}")
    module = importlib.util.module_from_spec(spec)
    sys.modules["opweave_peer"] = module
    spec.loader.exec_module(module)
    return module


# Idle worker threads of the implementation that ran before may still be spinning (OpenBLAS spins
# for ~2^28 cycles, about 0.1 s, after a call; libgomp and opweave for less). On 2 cores they would
# steal a core from the one being timed, so multi-threaded cases let them park first.
SETTLE_S = 0.15
# Each turn first calls the function for at least WARM_S (and twice), then times back-to-back calls
# for at least BURST_S (and once). Measured on this 2-core VM after a 150 ms sleep: even a
# single-threaded 1 MiB sum needs ~8 calls (~0.2 ms) to get back to its steady speed (26 us for the
# 2nd call vs 10.5 us from the 10th on: clock and caches), and a 2-thread pool often runs its woken
# worker on the caller's CPU for a few ms (the other vCPU, halted, does not count as idle) until the
# scheduler moves it: opweave's 2-thread 512^2 matmul took 3-12 calls (2-7 ms) to reach its loop
# speed. Timing "one call after one warm call" measured that wake-up, not the kernel in a loop, and
# only in the 2-thread cases (the 1-thread ones never slept).
WARM_S = 0.02
BURST_S = 0.005


def _turn(fn: Callable[[], Any]) -> float:
    """Seconds per call of fn in a short loop: warm-up calls, then back-to-back timed calls."""
    fn()
    warm_end = time.perf_counter() + WARM_S
    fn()
    while time.perf_counter() < warm_end:
        fn()
    calls = 0
    t0 = _CLOCK()
    burst_end = time.perf_counter() + BURST_S
    while True:
        fn()
        calls += 1
        if time.perf_counter() >= burst_end:
            break
    return (_CLOCK() - t0) / calls


def _interleaved(
    fns: dict[str, Callable[[], Any]], reps: int, budget_s: float, settle_s: float = 0.0
) -> dict[str, float]:
    """Median seconds per call of each fn; turns (see _turn) interleaved round by round.

    With settle_s > 0, each turn first sleeps that long (other libraries' workers park).
    """
    times: dict[str, list[float]] = {name: [] for name in fns}
    start = time.perf_counter()
    for r in range(reps):
        for name, fn in fns.items():
            if settle_s > 0:
                time.sleep(settle_s)
            times[name].append(_turn(fn))
        if r >= 4 and time.perf_counter() - start > budget_s:
            break
    return {name: statistics.median(ts) for name, ts in times.items()}


class _Pinned:
    """Pins OpenBLAS (threadpoolctl) and PyTorch to `threads` for the duration of one case.

    Set once per case, outside the timed calls: entering threadpool_limits costs ~0.1 ms, which
    would swamp a 256 x 256 matmul.
    """

    def __init__(self, threads: int) -> None:
        self.threads = threads
        self._limits: Any = None

    def __enter__(self) -> _Pinned:
        if threadpool_limits is not None:
            self._limits = threadpool_limits(limits=self.threads, user_api="blas")
        if torch is not None:
            torch.set_num_threads(self.threads)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._limits is not None:
            self._limits.restore_original_limits()


def bench_matmul(sizes: list[int], threads_list: list[int], reps: int) -> list[tuple[Any, ...]]:
    rows = []
    rng = np.random.default_rng(0)
    for dtype in (np.float32, np.float64):
        for n in sizes:
            a = rng.standard_normal((n, n)).astype(dtype)
            b = rng.standard_normal((n, n)).astype(dtype)
            out = np.empty((n, n), dtype)
            flops = 2.0 * n**3
            for threads in threads_list:
                fns: dict[str, Callable[[], Any]] = {
                    "opweave": lambda a=a, b=b, out=out, t=threads: kernels.matmul(
                        a, b, out=out, _num_threads=t
                    ),
                    "numpy": lambda a=a, b=b, out=out: np.matmul(a, b, out=out),
                }
                if _PEER is not None:
                    fns[_PEER[0]] = lambda a=a, b=b, out=out, t=threads: _PEER[1].matmul(
                        a, b, out=out, _num_threads=t
                    )
                if torch is not None:
                    ta, tb, tout = torch.from_numpy(a), torch.from_numpy(b), torch.from_numpy(out)
                    fns["torch"] = lambda ta=ta, tb=tb, tout=tout: torch.matmul(ta, tb, out=tout)
                with _Pinned(threads):
                    med = _interleaved(
                        fns,
                        reps,
                        budget_s=max(2.0, 0.3 * reps * flops / 5e10),
                        settle_s=SETTLE_S if threads > 1 else 0.0,
                    )
                rows.append(
                    (
                        f"matmul {np.dtype(dtype).name} n={n}",
                        threads,
                        "GFLOP/s",
                        {k: flops / v / 1e9 for k, v in med.items()},
                    )
                )
                _print_row(rows[-1])
    return rows


def bench_sum(threads_list: list[int], reps: int, big: bool) -> list[tuple[Any, ...]]:
    rows = []
    rng = np.random.default_rng(1)
    cases: list[tuple[str, np.ndarray[Any, Any], Any]] = []
    mib_list = [1, 16, 256] if big else [1, 16]
    for mib in mib_list:
        x = rng.random(mib * (1 << 20) // 4, dtype=np.float32)
        cases.append((f"sum f32 {mib} MiB", x, None))
    sq = rng.random((4096, 4096), dtype=np.float32)
    cases.append(("sum f32 4096^2 axis=0", sq, 0))
    cases.append(("sum f32 4096^2 axis=1", sq, 1))
    for label, x, axis in cases:
        for threads in threads_list:
            fns: dict[str, Callable[[], Any]] = {
                "opweave": lambda x=x, axis=axis, t=threads: kernels.reduce_sum(
                    x, axis=axis, _num_threads=t
                ),
                "numpy": lambda x=x, axis=axis: np.sum(x, axis=axis),
            }
            if _PEER is not None:
                fns[_PEER[0]] = lambda x=x, axis=axis, t=threads: _PEER[1].reduce_sum(
                    x, axis=axis, _num_threads=t
                )
            if torch is not None:
                tx = torch.from_numpy(x)
                if axis is None:
                    fns["torch"] = lambda tx=tx: torch.sum(tx)
                else:
                    fns["torch"] = lambda tx=tx, axis=axis: torch.sum(tx, dim=axis)
            with _Pinned(threads):
                med = _interleaved(
                    fns,
                    reps,
                    budget_s=max(1.0, 20 * x.nbytes / 5e9),
                    settle_s=SETTLE_S if threads > 1 else 0.0,
                )
            rows.append((label, threads, "GB/s", {k: x.nbytes / v / 1e9 for k, v in med.items()}))
            _print_row(rows[-1])
    return rows


ArrayCase = tuple[str, Callable[[int], Any], Callable[[], Any], Callable[[], Any] | None]


def _array_cases(mib: int, rng: np.random.Generator) -> list[ArrayCase]:
    """(label, opweave(threads), numpy(), torch() or None) for float32 arrays of ``mib`` MiB."""
    n_floats = mib * (1 << 20) // 4
    cols = 256
    quarter = [rng.random((n_floats // 4 // cols, cols), dtype=np.float32) for _ in range(4)]
    table = rng.random((n_floats // cols, cols), dtype=np.float32)
    ids = rng.integers(0, table.shape[0], size=table.shape[0] // 10).astype(np.int32)
    side = int(np.sqrt(n_floats))
    sq = rng.random((side, side), dtype=np.float32)
    b0, b1 = side // 4, 3 * side // 4
    tq = [torch.from_numpy(a) for a in quarter] if torch is not None else []
    ttable = torch.from_numpy(table) if torch is not None else None
    tids = torch.from_numpy(ids.astype(np.int64)) if torch is not None else None
    tsq = torch.from_numpy(sq) if torch is not None else None
    with_torch = torch is not None
    return [
        (
            f"concat 4 axis=0 {mib} MiB",
            lambda t: kernels.concat(quarter, 0, _num_threads=t),
            lambda: np.concatenate(quarter, 0),
            (lambda: torch.cat(tq, 0)) if with_torch else None,
        ),
        (
            f"concat 4 axis=1 {mib} MiB",
            lambda t: kernels.concat(quarter, 1, _num_threads=t),
            lambda: np.concatenate(quarter, 1),
            (lambda: torch.cat(tq, 1)) if with_torch else None,
        ),
        (
            f"gather 10% rows {mib} MiB",
            lambda t: kernels.gather(table, ids, _num_threads=t),
            lambda: np.take(table, ids, axis=0),
            (lambda: torch.index_select(ttable, 0, tids)) if with_torch else None,
        ),
        (
            f"x[::2, ::2] {mib} MiB",
            lambda t: kernels.strided_slice(sq, [0, 0], [side, side], [2, 2], _num_threads=t),
            lambda: np.ascontiguousarray(sq[::2, ::2]),
            (lambda: tsq[::2, ::2].contiguous()) if with_torch else None,
        ),
        (
            f"x[n/4:3n/4, n/4:3n/4] {mib} MiB",
            lambda t: kernels.slice(sq, [b0, b0], [b1 - b0, b1 - b0], _num_threads=t),
            lambda: np.ascontiguousarray(sq[b0:b1, b0:b1]),
            (lambda: tsq[b0:b1, b0:b1].contiguous()) if with_torch else None,
        ),
        (
            f"tile [1, 2] {mib} MiB",
            lambda t: kernels.tile(table, [1, 2], _num_threads=t),
            lambda: np.tile(table, (1, 2)),
            (lambda: ttable.repeat(1, 2)) if with_torch else None,
        ),
        (
            f"pad 1 each side {mib} MiB",
            lambda t: kernels.pad(sq, [[1, 1], [1, 1]], _num_threads=t),
            lambda: np.pad(sq, 1),
            (lambda: torch.nn.functional.pad(tsq, (1, 1, 1, 1))) if with_torch else None,
        ),
    ]


def bench_array(threads_list: list[int], reps: int, big: bool) -> list[tuple[Any, ...]]:
    """Data movement (concat, gather, slicing, tile, pad) on float32 arrays of 1 / 16 / 64 MiB:
    GB/s of output written, against np.concatenate / np.take / slicing + np.ascontiguousarray /
    np.tile / np.pad and torch.cat / index_select / slicing + contiguous / repeat / F.pad."""
    rows = []
    rng = np.random.default_rng(2)
    for mib in [1, 16, 64] if big else [1, 16]:
        for label, ours, numpy_fn, torch_fn in _array_cases(mib, rng):
            out_bytes = np.asarray(numpy_fn()).nbytes
            for threads in threads_list:
                timed: dict[str, Callable[[], Any]] = {
                    "opweave": lambda f=ours, t=threads: f(t),
                    "numpy": numpy_fn,
                }
                if torch_fn is not None:
                    timed["torch"] = torch_fn
                with _Pinned(threads):
                    med = _interleaved(
                        timed,
                        reps,
                        budget_s=max(1.0, 20 * out_bytes / 5e9),
                        settle_s=SETTLE_S if threads > 1 else 0.0,
                    )
                rows.append(
                    (label, threads, "GB/s", {k: out_bytes / v / 1e9 for k, v in med.items()})
                )
                _print_row(rows[-1])
    return rows


NnCase = tuple[str, int, Callable[[int], Any], Callable[[], Any], Callable[[], Any] | None]


def _nn_cases(mib: int, rng: np.random.Generator) -> list[NnCase]:
    """(label, bytes read, opweave(threads), numpy(), torch() or None) on float32 inputs of about
    ``mib`` MiB: logits in rows of 1000 classes, bias_add over 1024 channels last or 64 channels
    in dimension 1. NumPy computes the usual stable composition (x - max, exp, sum, divide; the
    log-sum-exp for the log forms), as one writes it without a fused kernel."""
    n = mib * (1 << 20) // 4
    x = rng.standard_normal((n // 1000, 1000), dtype=np.float32)
    ex = np.exp(x - x.max(-1, keepdims=True))
    z = (ex / ex.sum(-1, keepdims=True)).astype(np.float32)  # soft labels
    labels = rng.integers(0, 1000, x.shape[0]).astype(np.int32)
    rows_idx = np.arange(x.shape[0])
    nhwc = rng.standard_normal((n // 1024, 1024), dtype=np.float32)
    bias = rng.standard_normal(1024, dtype=np.float32)
    nchw = rng.standard_normal((n // (64 * 1024), 64, 1024), dtype=np.float32)
    bias64 = rng.standard_normal(64, dtype=np.float32)

    def np_softmax() -> Any:
        e = np.exp(x - x.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    def np_log_softmax() -> Any:
        s = x - x.max(-1, keepdims=True)
        return s - np.log(np.exp(s).sum(-1, keepdims=True))

    torch_fns: list[Callable[[], Any] | None] = [None] * 6
    if torch is not None:
        tx, tz, tl = torch.from_numpy(x), torch.from_numpy(z), torch.from_numpy(labels).long()
        th, tb = torch.from_numpy(nhwc), torch.from_numpy(bias)
        tc, tb64 = torch.from_numpy(nchw), torch.from_numpy(bias64)[:, None]
        xent = torch.nn.functional.cross_entropy
        torch_fns = [
            lambda: torch.softmax(tx, -1),
            lambda: torch.log_softmax(tx, -1),
            lambda: xent(tx, tz, reduction="none"),
            lambda: xent(tx, tl, reduction="none"),
            lambda: th + tb,
            lambda: tc + tb64,
        ]
    cases: list[tuple[str, int, Callable[[int], Any], Callable[[], Any]]] = [
        (f"softmax {mib} MiB", x.nbytes, lambda t: kernels.softmax(x, _num_threads=t), np_softmax),
        (
            f"log_softmax {mib} MiB",
            x.nbytes,
            lambda t: kernels.log_softmax(x, _num_threads=t),
            np_log_softmax,
        ),
        (
            f"softmax xent {mib} MiB",
            x.nbytes + z.nbytes,
            lambda t: kernels.softmax_cross_entropy_with_logits_v2(z, x, _num_threads=t),
            lambda: -(z * np_log_softmax()).sum(-1),
        ),
        (
            f"sparse xent {mib} MiB",
            x.nbytes,
            lambda t: kernels.sparse_softmax_cross_entropy_with_logits(
                labels=labels, logits=x, _num_threads=t
            ),
            lambda: -np_log_softmax()[rows_idx, labels],
        ),
        (
            f"bias_add NHWC {mib} MiB",
            nhwc.nbytes,
            lambda t: kernels.bias_add(nhwc, bias, _num_threads=t),
            lambda: nhwc + bias,
        ),
        (
            f"bias_add NCHW {mib} MiB",
            nchw.nbytes,
            lambda t: kernels.bias_add(nchw, bias64, data_format="NCHW", _num_threads=t),
            lambda: nchw + bias64[:, None],
        ),
    ]
    return [(*c, f) for c, f in zip(cases, torch_fns, strict=True)]


def bench_nn(threads_list: list[int], reps: int, big: bool) -> list[tuple[Any, ...]]:
    """Softmax, log_softmax, the softmax and sparse cross-entropies and bias_add on float32 inputs
    of 1 / 16 / 64 MiB: GB/s of input read, against NumPy's stable compositions and PyTorch's
    softmax / log_softmax / cross_entropy / +."""
    rows = []
    rng = np.random.default_rng(3)
    for mib in [1, 16, 64] if big else [1, 16]:
        for label, in_bytes, ours, numpy_fn, torch_fn in _nn_cases(mib, rng):
            for threads in threads_list:
                timed: dict[str, Callable[[], Any]] = {
                    "opweave": lambda f=ours, t=threads: f(t),
                    "numpy": numpy_fn,
                }
                if torch_fn is not None:
                    timed["torch"] = torch_fn
                with _Pinned(threads):
                    med = _interleaved(
                        timed,
                        reps,
                        budget_s=max(1.0, 20 * in_bytes / 5e9),
                        settle_s=SETTLE_S if threads > 1 else 0.0,
                    )
                rows.append(
                    (label, threads, "GB/s", {k: in_bytes / v / 1e9 for k, v in med.items()})
                )
                _print_row(rows[-1])
    return rows


# -- convolutions ----------------------------------------------------------------------------

# (label, input NHWC, filter HWIO, stride, what): SAME padding; "forward" is conv2d, "input" and
# "filter" its two gradients (Conv2DBackpropInput / Conv2DBackpropFilter) for that layer.
CONV_CASES: list[tuple[str, tuple[int, ...], tuple[int, ...], int, str]] = [
    ("conv 32x28x28x32 5x5x32x64", (32, 28, 28, 32), (5, 5, 32, 64), 1, "forward"),
    ("conv 64x56x56x64 3x3x64x64", (64, 56, 56, 64), (3, 3, 64, 64), 1, "forward"),
    ("conv 64x56x56x64 3x3 s2", (64, 56, 56, 64), (3, 3, 64, 64), 2, "forward"),
    ("conv 32x28x28x256 1x1x256x64", (32, 28, 28, 256), (1, 1, 256, 64), 1, "forward"),
    ("conv 32x28x28x256 1x1 s2", (32, 28, 28, 256), (1, 1, 256, 64), 2, "forward"),
    ("grad input 64x56x56x64 3x3", (64, 56, 56, 64), (3, 3, 64, 64), 1, "input"),
    ("grad filter 64x56x56x64 3x3", (64, 56, 56, 64), (3, 3, 64, 64), 1, "filter"),
]
CONV_QUICK = {0, 1, 3, 5, 6}


def _fma_peak_gflops() -> tuple[str, float, float]:
    """The CPU model, the FMA peak of one core at the clock /proc/cpuinfo reports (2 FMA units x 8
    float32 lanes x 2 flops; a turbo clock above it gives more than 100%), and the ceiling
    measured now: opweave's float32 matmul micro-kernel on one thread with its panels in cache."""
    model, mhz = platform.processor() or platform.machine(), 0.0
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = (p.strip() for p in line.partition(":"))
            if key == "model name" and model in ("", platform.machine(), platform.processor()):
                model = value
            if key == "cpu MHz" and not mhz:
                mhz = float(value)
    except OSError:  # pragma: no cover - not Linux
        pass
    return model, 2 * 8 * 2 * mhz / 1000.0, _opweave_core.gemm_ceiling_gflops("float32", 0.5)


def conv_worker(threads: int, reps: int, quick: bool) -> None:
    """One thread count in a fresh process (TensorFlow sizes its pools once per process): prints
    one JSON line per case with the median GFLOP/s of opweave, TensorFlow and PyTorch."""
    import json

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    try:
        import tensorflow as tf

        tf1: Any = tf.compat.v1
        tf1.disable_eager_execution()
    except ImportError:  # pragma: no cover
        tf1 = None
    if torch is not None:
        torch.set_num_threads(threads)
    rng = np.random.default_rng(3)
    for i, (label, xs, fs, stride, what) in enumerate(CONV_CASES):
        if quick and i not in CONV_QUICK:
            continue
        x = rng.standard_normal(xs).astype(np.float32)
        f = (rng.standard_normal(fs) / np.sqrt(fs[0] * fs[1] * fs[2])).astype(np.float32)
        y = kernels.conv2d(x, f, stride, "SAME")
        dy = rng.standard_normal(y.shape).astype(np.float32)
        flops = 2.0 * y.size * fs[0] * fs[1] * fs[2]
        fns: dict[str, Callable[[], Any]] = {}
        if what == "forward":
            fns["opweave"] = lambda x=x, f=f, s=stride: kernels.conv2d(
                x, f, s, "SAME", _num_threads=threads
            )
        elif what == "input":
            fns["opweave"] = lambda x=x, f=f, dy=dy, s=stride: kernels.conv2d_backprop_input(
                list(x.shape), f, dy, s, "SAME", _num_threads=threads
            )
        else:
            fns["opweave"] = lambda x=x, f=f, dy=dy, s=stride: kernels.conv2d_backprop_filter(
                x, list(f.shape), dy, s, "SAME", _num_threads=threads
            )
        if tf1 is not None:
            g = tf1.Graph()
            with g.as_default():
                # Variables, not constants: the graph optimizer would fold a constant conv away.
                tx, tw, tdy = (tf1.Variable(v, trainable=False) for v in (x, f, dy))
                if what == "forward":
                    out = tf1.nn.conv2d(tx, tw, stride, "SAME")
                elif what == "input":
                    out = tf1.nn.conv2d_backprop_input(
                        list(xs), tw, tdy, [1, stride, stride, 1], "SAME"
                    )
                else:
                    out = tf1.nn.conv2d_backprop_filter(
                        tx, list(fs), tdy, [1, stride, stride, 1], "SAME"
                    )
                init = tf1.global_variables_initializer()
            config = tf1.ConfigProto(
                intra_op_parallelism_threads=threads, inter_op_parallelism_threads=1
            )
            sess = tf1.Session(graph=g, config=config)
            sess.run(init)
            fns["tensorflow"] = sess.make_callable(out)
        if torch is not None:
            tx_ = (
                torch.from_numpy(x)
                .permute(0, 3, 1, 2)
                .contiguous(memory_format=torch.channels_last)
            )
            tw_ = torch.from_numpy(f).permute(3, 2, 0, 1).contiguous()
            tdy_ = (
                torch.from_numpy(dy)
                .permute(0, 3, 1, 2)
                .contiguous(memory_format=torch.channels_last)
            )
            pad = (fs[0] - 1) // 2  # same work as SAME (TensorFlow puts an odd pad at the end)
            mask = [what == "input", what == "filter", False]

            def torch_fn(
                tx_: Any = tx_,
                tw_: Any = tw_,
                tdy_: Any = tdy_,
                s: int = stride,
                pad: int = pad,
                mask: list[bool] = mask,
                forward: bool = what == "forward",
            ) -> Any:
                with torch.no_grad():
                    if forward:
                        return torch.nn.functional.conv2d(tx_, tw_, stride=s, padding=pad)
                    return torch.ops.aten.convolution_backward(
                        tdy_, tx_, tw_, None, [s, s], [pad, pad], [1, 1], False, [0, 0], 1, mask
                    )

            fns["torch"] = torch_fn
        reference = np.asarray(fns["opweave"]())
        agree = {}
        if "tensorflow" in fns:
            agree["tensorflow"] = bool(
                np.allclose(np.asarray(fns["tensorflow"]()), reference, rtol=1e-3, atol=1e-3)
            )
        med = _interleaved(
            fns,
            reps,
            budget_s=max(2.0, 0.5 * reps * flops / 4e10),
            settle_s=SETTLE_S if threads > 1 else 0.0,
        )
        print(
            json.dumps(
                {
                    "label": label,
                    "threads": threads,
                    "gflops": {k: flops / v / 1e9 for k, v in med.items()},
                    "agree": agree,
                }
            ),
            flush=True,
        )


def bench_conv(threads_list: list[int], reps: int, quick: bool, clock: str) -> None:
    """Convolutions on typical layer shapes (SAME padding), GFLOP/s of opweave, TensorFlow
    (oneDNN) and PyTorch, interleaved round by round in one process per thread count, with the
    share of the FMA peak of the cores used."""
    import json
    import subprocess

    model, nominal, peak = _fma_peak_gflops()
    print(
        f"# conv: {model}; FMA peak {nominal:.1f} GFLOP/s per core at the /proc/cpuinfo clock "
        f"(2 FMA x 8 float32 lanes x 2), {peak:.1f} measured (opweave's micro-kernel on cached "
        "panels, one thread); %peak is against the measured one x threads"
    )
    print(
        f"{'case':<32}{'thr':>4} {'unit':<8}{'opweave':>9}{'tensorfl':>9}{'torch':>9}"
        f"{'ow/tf':>8}{'ow/torch':>9}{'ow %peak':>9}"
    )
    for threads in threads_list:
        cmd = [sys.executable, __file__, "--conv-worker", str(threads), "--reps", str(reps)]
        if quick:
            cmd.append("--quick")
        if clock != "wall":
            cmd += ["--clock", clock]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        for line in out.splitlines():
            if not line.startswith("{"):
                continue
            row = json.loads(line)
            g = row["gflops"]
            ours, tf_v, th_v = (
                g["opweave"],
                g.get("tensorflow", float("nan")),
                g.get("torch", float("nan")),
            )
            flag = "" if all(row["agree"].values()) else "  # WARNING: results differ"
            print(
                f"{row['label']:<32}{threads:>4} {'GFLOP/s':<8}{ours:>9.1f}{tf_v:>9.1f}{th_v:>9.1f}"
                f"{ours / tf_v:>8.2f}{ours / th_v:>9.2f}{100 * ours / (peak * threads):>8.0f}%"
                f"{flag}",
                flush=True,
            )


def _elementwise_cases(mib: int, rng: np.random.Generator) -> list[ArrayCase]:
    """(label, opweave(threads), numpy(), torch() or None) for float32 arrays of ``mib`` MiB:
    unary and binary math, comparisons, and reductions / scans of the whole array."""
    n = mib * (1 << 20) // 4
    x = rng.uniform(0.5, 2.0, n).astype(np.float32)
    y = rng.uniform(0.5, 2.0, n).astype(np.float32)
    tx = torch.from_numpy(x) if torch is not None else None
    ty = torch.from_numpy(y) if torch is not None else None
    k = kernels
    with_torch = torch is not None

    def np_logsumexp() -> Any:
        m = np.max(x)
        return np.log(np.sum(np.exp(x - m))) + m

    return [
        (
            f"sqrt {mib} MiB",
            lambda t: k.sqrt(x, _num_threads=t),
            lambda: np.sqrt(x),
            (lambda: torch.sqrt(tx)) if with_torch else None,
        ),
        (
            f"log {mib} MiB",
            lambda t: k.log(x, _num_threads=t),
            lambda: np.log(x),
            (lambda: torch.log(tx)) if with_torch else None,
        ),
        (
            f"abs {mib} MiB",
            lambda t: k.abs(x, _num_threads=t),
            lambda: np.abs(x),
            (lambda: torch.abs(tx)) if with_torch else None,
        ),
        (
            f"pow {mib} MiB",
            lambda t: k.pow(x, y, _num_threads=t),
            lambda: np.power(x, y),
            (lambda: torch.pow(tx, ty)) if with_torch else None,
        ),
        (
            f"squared_difference {mib} MiB",
            lambda t: k.squared_difference(x, y, _num_threads=t),
            lambda: np.square(x - y),
            (lambda: torch.square(tx - ty)) if with_torch else None,
        ),
        (
            f"floormod {mib} MiB",
            lambda t: k.floormod(x, y, _num_threads=t),
            lambda: np.mod(x, y),
            (lambda: torch.remainder(tx, ty)) if with_torch else None,
        ),
        (
            f"less {mib} MiB",
            lambda t: k.less(x, y, _num_threads=t),
            lambda: np.less(x, y),
            (lambda: torch.lt(tx, ty)) if with_torch else None,
        ),
        (
            f"reduce_prod {mib} MiB",
            lambda t: k.reduce_prod(x, _num_threads=t),
            lambda: np.prod(x),
            (lambda: torch.prod(tx)) if with_torch else None,
        ),
        (
            f"reduce_logsumexp {mib} MiB",
            lambda t: k.reduce_logsumexp(x, _num_threads=t),
            np_logsumexp,
            (lambda: torch.logsumexp(tx, 0)) if with_torch else None,
        ),
        (
            f"argmax {mib} MiB",
            lambda t: k.argmax(x, _num_threads=t),
            lambda: np.argmax(x),
            (lambda: torch.argmax(tx)) if with_torch else None,
        ),
        (
            f"cumsum {mib} MiB",
            lambda t: k.cumsum(x, _num_threads=t),
            lambda: np.cumsum(x),
            (lambda: torch.cumsum(tx, 0)) if with_torch else None,
        ),
    ]


def bench_elementwise(threads_list: list[int], reps: int, big: bool) -> list[tuple[Any, ...]]:
    """Element-wise math (sqrt, log, abs, pow, squared_difference, floormod, less) and whole-array
    reductions and scans (reduce_prod, reduce_logsumexp, argmax, cumsum) on float32 arrays of
    1 / 16 / 64 MiB: GB/s of the first input read, against NumPy and PyTorch (numpy's
    logsumexp is max, exp, sum and log, as scipy computes it)."""
    rows = []
    rng = np.random.default_rng(3)
    for mib in [1, 16, 64] if big else [1, 16]:
        for label, ours, numpy_fn, torch_fn in _elementwise_cases(mib, rng):
            in_bytes = mib * (1 << 20)
            for threads in threads_list:
                timed: dict[str, Callable[[], Any]] = {
                    "opweave": lambda f=ours, t=threads: f(t),
                    "numpy": numpy_fn,
                }
                if torch_fn is not None:
                    timed["torch"] = torch_fn
                with _Pinned(threads):
                    med = _interleaved(
                        timed,
                        reps,
                        budget_s=max(1.0, 20 * in_bytes / 5e9),
                        settle_s=SETTLE_S if threads > 1 else 0.0,
                    )
                rows.append(
                    (label, threads, "GB/s", {k: in_bytes / v / 1e9 for k, v in med.items()})
                )
                _print_row(rows[-1])
    return rows


EagerCase = tuple[str, Callable[[], Any], Callable[[], Any], Callable[[], Any]]


def _eager_cases(rng: np.random.Generator) -> list[EagerCase]:
    """Calls on tiny arrays, where the per-call overhead is all there is."""
    k = kernels
    x = rng.standard_normal(10).astype(np.float32)
    y = rng.standard_normal(10).astype(np.float32)
    m = rng.standard_normal((4, 8)).astype(np.float32)
    xi = np.arange(10, dtype=np.int32)
    with_torch = torch is not None
    tx, ty, tm, txi = (torch.from_numpy(v) for v in (x, y, m, xi)) if with_torch else (0, 0, 0, 0)
    return [
        ("add 10 floats", lambda: k.add(x, y), lambda: np.add(x, y), lambda: torch.add(tx, ty)),
        ("add 10 floats + 2.0", lambda: k.add(x, 2.0), lambda: x + 2.0, lambda: tx + 2.0),
        ("sin 10 floats", lambda: k.sin(x), lambda: np.sin(x), lambda: torch.sin(tx)),
        ("less 10 floats", lambda: k.less(x, y), lambda: np.less(x, y), lambda: tx < ty),
        (
            "reduce_sum 4x8 axis=1",
            lambda: k.reduce_sum(m, axis=1),
            lambda: m.sum(axis=1),
            lambda: tm.sum(1),
        ),
        ("argmax 4x8 axis=1", lambda: k.argmax(m, 1), lambda: m.argmax(1), lambda: tm.argmax(1)),
        (
            "reshape 4x8 -> 8x4",
            lambda: k.reshape(m, [8, 4]),
            lambda: m.reshape(8, 4),
            lambda: tm.reshape(8, 4),
        ),
        (
            "cast 10 int32 -> float32",
            lambda: k.cast(xi, "float32"),
            lambda: xi.astype(np.float32),
            lambda: txi.to(torch.float32),
        ),
        ("matmul 4x8 @ 8x4", lambda: k.matmul(m, m.T), lambda: m @ m.T, lambda: tm @ tm.T),
    ]


def bench_eager(reps: int) -> list[tuple[Any, ...]]:
    """The fixed cost of an opweave.kernels call (argument checks, conversions, dispatch) on
    tiny arrays: calls per second (thousands) against the same call in NumPy and PyTorch, each
    on one thread."""
    rows = []
    rng = np.random.default_rng(4)
    with _Pinned(1):
        for label, ours, numpy_fn, torch_fn in _eager_cases(rng):
            timed: dict[str, Callable[[], Any]] = {"opweave": ours, "numpy": numpy_fn}
            if torch is not None:
                timed["torch"] = torch_fn
            med = _interleaved(timed, reps, budget_s=1.0)
            rows.append((label, 1, "kcall/s", {k: 1 / v / 1e3 for k, v in med.items()}))
            _print_row(rows[-1])
    return rows


def _print_header() -> None:
    peer = "" if _PEER is None else f"{_PEER[0]:>9}{'ow/' + _PEER[0]:>10}"
    print(
        f"{'case':<32}{'thr':>4} {'unit':<8}{'opweave':>9}{'numpy':>9}{'torch':>9}"
        f"{'ow/np':>8}{'ow/torch':>9}{peer}"
    )


def _print_row(row: tuple[Any, ...]) -> None:
    label, threads, unit, vals = row
    ours = vals["opweave"]
    np_v = vals.get("numpy", float("nan"))
    th_v = vals.get("torch", float("nan"))
    peer = ""
    if _PEER is not None:
        peer_v = vals[_PEER[0]]
        peer = f"{peer_v:>9.1f}{ours / peer_v:>10.2f}"
    print(
        f"{label:<32}{threads:>4} {unit:<8}{ours:>9.1f}{np_v:>9.1f}{th_v:>9.1f}"
        f"{ours / np_v:>8.2f}{ours / th_v:>9.2f}{peer}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="fewer sizes and repeats")
    parser.add_argument("--reps", type=int, default=15, help="rounds per case (median)")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument(
        "--only",
        choices=["matmul", "sum", "array", "nn", "conv", "elementwise", "eager"],
        default=None,
    )
    parser.add_argument("--conv-worker", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument(
        "--clock",
        choices=["wall", "thread", "process"],
        default="wall",
        help="thread: CPU time of the calling thread, for 1-thread runs on a loaded machine "
        "(excludes time other processes held the core; meaningless with more threads); "
        "process: CPU time of all threads (--only conv with --threads 1: TensorFlow computes "
        "on its own thread; a peer's spinning threads count against it)",
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=None)
    parser.add_argument(
        "--peer-build", type=Path, default=None, help="directory holding another opweave build"
    )
    parser.add_argument("--peer-label", default="peer", help="its column's name")
    args = parser.parse_args()
    global _CLOCK, _PEER
    if args.peer_build is not None:
        _PEER = (args.peer_label, _load_peer_build(args.peer_build).kernels)
    if args.clock != "wall":
        _CLOCK = time.thread_time if args.clock == "thread" else time.process_time
        if args.threads != [1] and args.conv_worker is None:
            parser.error(f"--clock {args.clock} needs --threads 1")
    if args.conv_worker is not None:
        conv_worker(args.conv_worker, 5 if args.quick else args.reps, args.quick)
        return
    reps = 5 if args.quick else args.reps
    sizes = args.sizes or ([256, 1024] if args.quick else [256, 512, 1024, 2048])
    print(f"# opweave kernels benchmark, {datetime.datetime.now().isoformat(timespec='seconds')}")
    print(
        f"# {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"load avg {os.getloadavg()[0]:.2f}, opweave gemm ISA "
        f"f32={_opweave_core.gemm_isa('float32')} f64={_opweave_core.gemm_isa('float64')}"
    )
    if threadpool_info is not None:
        blas = [
            (i.get("internal_api"), i.get("version"), i.get("architecture"))
            for i in threadpool_info()
            if i.get("user_api") == "blas"
        ]
        print(f"# numpy {np.__version__} BLAS {blas}")
    if torch is not None:
        print(f"# torch {torch.__version__}")
    if _PEER is not None:
        peer_core = sys.modules["opweave_peer._opweave_core"]
        print(
            f"# {_PEER[0]}: {args.peer_build}, gemm ISA f32={peer_core.gemm_isa('float32')} "
            f"f64={peer_core.gemm_isa('float64')}; opweave: {Path(kernels.__file__).parent}"
        )
    print(
        f"# median of up to {reps} interleaved rounds of call loops ({args.clock} clock); "
        "ratio > 1 means opweave is faster"
    )
    if args.only != "conv":
        _print_header()
    if args.only in (None, "matmul"):
        bench_matmul(sizes, args.threads, reps)
    if args.only in (None, "sum"):
        bench_sum(args.threads, reps, big=not args.quick)
    if args.only in (None, "array"):
        bench_array(args.threads, reps, big=not args.quick)
    if args.only in (None, "nn"):
        bench_nn(args.threads, reps, big=not args.quick)
    if args.only in (None, "elementwise"):
        bench_elementwise(args.threads, reps, big=not args.quick)
    if args.only in (None, "eager"):
        bench_eager(reps)
    if args.only in (None, "conv"):
        bench_conv(args.threads, reps, args.quick, args.clock)


if __name__ == "__main__":
    main()
