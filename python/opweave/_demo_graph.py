"""The (intra, inter) experiment: ``python -m opweave._demo_graph``.

One graph with independent branches (several matmul + reduction towers and one py_function
branch that waits, like data loading does) runs under a grid of
``(intra_op_parallelism_threads, inter_op_parallelism_threads)`` settings. Each setting runs in a
fresh process (:mod:`opweave.tuning._grid`, shared with the tuner), because the first Session of
a process sizes the global pools. The table shows the median time of several runs, the speedup
over ``(1, 1)``, what one traced run saw the threads do at once, and what the setting changed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Sequence

import numpy as np

from .models import Model
from .tuning import _grid

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


def build() -> Model:
    """The demo graph: the towers, the waiting py_function branch, one scalar to fetch."""
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
    feed = rng.standard_normal((SIZE, SIZE)).astype(np.float32)
    return Model(g, total, {x: feed}, "the demo graph")


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - non-Linux
        return os.cpu_count() or 1


def main(argv: Sequence[str] | None = None) -> int:
    """Run the grid, one fresh process per setting, and print the table."""
    parser = argparse.ArgumentParser(prog="python -m opweave._demo_graph", description=__doc__)
    parser.parse_args(argv)

    print(
        f"opweave graph demo: {TOWERS} towers of 2 matmuls ({SIZE}x{SIZE}, float32) + reductions, "
        f"and one py_function branch that waits {1000 * PY_WAIT_S:.0f} ms"
    )
    print(
        f"each setting in a fresh process (the first Session sizes the pools); "
        f"median of {RUNS} runs; {_cpus()} CPUs available\n"
    )
    print(
        f"{'intra':>5} {'inter':>5} {'median ms':>10} {'speedup':>8} {'ops at once':>11} "
        f"{'threads/op':>10}  what the setting changed"
    )
    why = {(intra, inter): text for intra, inter, text in GRID}
    baseline: list[float] = []
    checks: list[str] = []
    failed: list[_grid.CellRun] = []

    def show(run: _grid.CellRun) -> None:
        # Printed as soon as each setting is done; (1, 1) runs first, so the baseline is known.
        if run.error is not None:
            print(f"{run.intra:>5} {run.inter:>5}   failed: {run.error.splitlines()[-1]}")
            failed.append(run)
            return
        ms = 1000 * statistics.median(run.times)
        if not baseline:
            baseline.append(ms)
        checks.append(run.check)
        speedup, text = baseline[0] / ms, why[run.intra, run.inter]
        at_once, per_op = (
            ("-", "-")
            if run.seen is None
            else (str(run.seen.max_ops_at_once), str(run.seen.max_threads_per_op))
        )
        print(
            f"{run.intra:>5} {run.inter:>5} {ms:>10.1f} {speedup:>7.2f}x {at_once:>11} "
            f"{per_op:>10}  {text}"
        )

    target = _grid.Target("module", "opweave._demo_graph", label="demo")
    try:
        _grid.run_grid(target, list(why), runs=RUNS, warmup=1, timeout=120, on_cell=show)
    except _grid.ModelError as e:
        print(f"the demo graph could not be built: {e}")
        return 1
    print(
        "\nops at once, threads/op: seen in one traced run of each setting (the most kernels "
        "running at the same moment, the most threads one op's loops were split over)"
    )
    same = all(c in ("reference", "same") for c in checks)
    print(
        "same result under every setting: "
        + ("yes (kernels are deterministic for any thread count)" if same else "NO")
    )
    return 0 if same and not failed else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
