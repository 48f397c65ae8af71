"""Command line: ``python -m opweave demo`` shows the pools at work, ``info`` describes them,
``tune MODEL`` times a graph under a grid of (intra, inter) settings and recommends one,
``inspect MODEL.pb`` lists what a GraphDef file holds and whether opweave runs it."""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Sequence

from .graphdef import _cli as _inspect_cli
from .tuning import _cli as _tune_cli


def _median_seconds(fn: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def demo(size: int = 1 << 21, repeats: int = 8, runs: int = 5) -> None:
    """Run one parallel NumPy workload with 1 and with N threads and print the pool counters."""
    import numpy as np

    import opweave
    from opweave import _pool

    print(f"opweave {opweave.__version__}: the intra-op pool at work")
    print(opweave.parallel_info())
    print()
    x = np.linspace(0.0, 1.0, size)
    default_threads = opweave.get_num_threads()
    counts = sorted({1, max(2, default_threads)})
    print(f"sum(sin(x + k)) over {size:,} float64 x {repeats}, median of {runs} runs:")
    print(
        f"{'threads':>7} {'time (ms)':>10} {'speedup':>8}  result{'':14}  "
        "tasks_run steals parks wakeups moves"
    )
    base = None
    try:
        for n in counts:
            opweave.set_num_threads(n)
            _pool.parallel_sin_sum(x, repeats)  # warm-up: creates/wakes the workers
            _pool.reset_pool_stats("intra")
            result = 0.0

            def run() -> None:
                nonlocal result
                result = _pool.parallel_sin_sum(x, repeats)

            seconds = _median_seconds(run, runs)
            base = seconds if base is None else base
            s = _pool.pool_stats("intra")
            print(
                f"{n:>7} {seconds * 1e3:>10.2f} {base / seconds:>7.2f}x  {result!r:<20}  "
                f"{s.tasks_run:>9} {s.steals:>6} {s.parks:>5} {s.wakeups:>7} {s.moves:>5}"
            )
    finally:
        opweave.config.threading.set_intra_op_parallelism_threads(0)
    print("The result is bit-identical for every thread count (fixed blocks, fixed tree).")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m opweave`` and the ``opweave`` script."""
    parser = argparse.ArgumentParser(prog="python -m opweave", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser(
        "demo", help="run a graph under a grid of (intra, inter) settings, then show the pools"
    )
    sub.add_parser("info", help="print parallel_info(): pool sizes and how they were chosen")
    _tune_cli.add_parser(sub)
    _inspect_cli.add_parser(sub)
    args = parser.parse_args(argv)
    if args.command == "tune":
        return _tune_cli.run(args)
    if args.command == "inspect":
        return _inspect_cli.run(args)
    if args.command == "demo":
        # The experiment users of the two settings want, then the pool's own counters.
        from . import _demo_graph

        status = _demo_graph.main([])
        print()
        demo()
        return status
    if args.command == "info":
        import opweave

        print(opweave.parallel_info())
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
