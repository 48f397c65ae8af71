"""The (intra, inter) experiment: ``python -m opweave._demo_graph``.

One graph with independent branches (several matmul + reduction towers and one py_function
branch that waits, like data loading does) runs under a grid of
``(intra_op_parallelism_threads, inter_op_parallelism_threads)`` settings. Each setting runs in a
fresh process, because the first Session of a process sizes the global pools. The table shows
the median time of several runs, the speedup over ``(1, 1)``, and what the setting changed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence

import numpy as np

GRID: list[tuple[int, int, str]] = [
    (1, 1, "baseline: one op at a time, each op on one thread"),
    (2, 1, "each matmul/reduction may split over 2 threads; still one op at a time"),
    (1, 2, "two ops at once: towers overlap each other and the py_function's wait"),
    (2, 2, "both: 2 ops at once, each may use 2 threads (they share the same CPUs)"),
    (1, -1, "inter < 0: every op runs in the thread that called Session.run"),
]

TOWERS = 4
SIZE = 448
PY_WAIT_S = 0.04
RUNS = 7


def _worker(intra: int, inter: int) -> dict[str, object]:
    import opweave as ow

    rng = np.random.default_rng(0)
    g = ow.Graph()
    with g.as_default():
        x = ow.placeholder(ow.float32, shape=(SIZE, SIZE), name="x")
        outputs = []
        for t in range(TOWERS):
            with ow.name_scope(f"tower_{t}"):
                w1 = ow.constant(rng.standard_normal((SIZE, SIZE)).astype(np.float32) / SIZE)
                w2 = ow.constant(rng.standard_normal((SIZE, SIZE)).astype(np.float32) / SIZE)
                h = ow.relu(ow.matmul(x, w1))
                h = ow.tanh(ow.matmul(h, w2, transpose_b=True))
                outputs.append(ow.reduce_sum(h, axis=1))

        def load(v: np.ndarray) -> np.ndarray:
            time.sleep(PY_WAIT_S)  # stands for I/O or a library call that releases the GIL
            return v + 1.0

        outputs.append(ow.py_function(load, [ow.reduce_mean(x, axis=0)], ow.float32, name="load"))
        total = ow.add_n([ow.reduce_sum(o) for o in outputs])
    config = ow.ConfigProto(intra_op_parallelism_threads=intra, inter_op_parallelism_threads=inter)
    feed = rng.standard_normal((SIZE, SIZE)).astype(np.float32)
    with ow.Session(graph=g, config=config) as sess:
        run = sess.make_callable(total, [x])
        result = run(feed)  # warm-up: compiles the graph and measures op costs
        times = []
        for _ in range(RUNS):
            t0 = time.perf_counter()
            result = run(feed)
            times.append(time.perf_counter() - t0)
    return {"median_ms": 1000 * statistics.median(times), "result": float(result)}


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - non-Linux
        return os.cpu_count() or 1


def main(argv: Sequence[str] | None = None) -> int:
    """Run the grid (or, with ``--worker INTRA INTER``, one setting) and print the table."""
    parser = argparse.ArgumentParser(prog="python -m opweave._demo_graph", description=__doc__)
    parser.add_argument("--worker", nargs=2, type=int, metavar=("INTRA", "INTER"))
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(_worker(*args.worker)))
        return 0

    print(
        f"opweave graph demo: {TOWERS} towers of 2 matmuls ({SIZE}x{SIZE}, float32) + reductions, "
        f"and one py_function branch that waits {1000 * PY_WAIT_S:.0f} ms"
    )
    print(
        f"each setting in a fresh process (the first Session sizes the pools); "
        f"median of {RUNS} runs; {_cpus()} CPUs available\n"
    )
    print(f"{'intra':>5} {'inter':>5} {'median ms':>10} {'speedup':>8}  what the setting changed")
    baseline = None
    results = set()
    for intra, inter, why in GRID:
        proc = subprocess.run(
            [sys.executable, "-m", "opweave._demo_graph", "--worker", str(intra), str(inter)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if proc.returncode != 0:
            print(f"{intra:>5} {inter:>5}   failed: {proc.stderr.strip().splitlines()[-1:]}")
            return 1
        row = json.loads(proc.stdout)
        ms = float(row["median_ms"])
        results.add(row["result"])
        baseline = baseline or ms
        print(f"{intra:>5} {inter:>5} {ms:>10.1f} {baseline / ms:>7.2f}x  {why}")
    print(
        "\nsame result under every setting: "
        + ("yes (kernels are deterministic for any thread count)" if len(results) == 1 else "NO")
    )
    return 0 if len(results) == 1 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
