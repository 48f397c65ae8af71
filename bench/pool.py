"""Pool micro-benchmarks: empty fork-join latency, 1M empty tasks, parallel_for overhead.

Builds the C++ driver (bench/cpp/pool_bench.cpp) with CMake in build/bench-release, runs it and
prints a table of medians with the peer's figure (a mutex + condition-variable queue pool, fresh
threads, or the serial loop) next to ours and the ratio.

    python bench/pool.py                 # threads = the CPUs this process may use
    python bench/pool.py --threads 2 4 --repeats 9
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "build" / "bench-release"

# Whether a larger figure is better, per unit.
HIGHER_IS_BETTER = {"Mtasks/s": True, "us": False}


def build() -> Path:
    """Configure and build the pool_bench target; return the executable."""
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    subprocess.run(
        [
            "cmake",
            "-S",
            str(ROOT),
            "-B",
            str(BUILD),
            *generator,
            "-DCMAKE_BUILD_TYPE=Release",
            "-DOPWEAVE_BUILD_TESTS=ON",
            "-DOPWEAVE_BUILD_PYTHON=OFF",
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    subprocess.run(
        ["cmake", "--build", str(BUILD), "-j", "2", "--target", "pool_bench"],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return BUILD / "pool_bench"


def run(exe: Path, threads: int, repeats: int) -> list[dict[str, object]]:
    """Run the driver once for a thread count; one dict per measurement."""
    out = subprocess.run(
        [str(exe), str(threads), str(repeats)], check=True, capture_output=True, text=True
    )
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


def main(argv: list[str] | None = None) -> int:
    """Build, run and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=None)
    parser.add_argument("--repeats", type=int, default=7, help="runs per figure (median)")
    args = parser.parse_args(argv)
    threads = args.threads or sorted({2, len(os.sched_getaffinity(0))})
    exe = build()
    rows = [row for t in threads for row in run(exe, t, args.repeats)]
    print(f"pool benchmarks: medians of {args.repeats} runs; ratio > 1 means ours is better")
    name_w = max(len(str(r["name"])) for r in rows)
    print(
        f"{'benchmark':<{name_w}} {'threads':>7} {'ours':>10} {'peer':>10} {'unit':>9} {'ratio':>7}"
    )
    for r in rows:
        ours, peer = float(r["ours"]), float(r["peer"])  # type: ignore[arg-type]
        better = HIGHER_IS_BETTER[str(r["unit"])]
        ratio = (ours / peer if better else peer / ours) if ours and peer else float("nan")
        print(
            f"{r['name']!s:<{name_w}} {r['threads']!s:>7} {ours:>10.3f} {peer:>10.3f} "
            f"{r['unit']!s:>9} {ratio:>6.2f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
