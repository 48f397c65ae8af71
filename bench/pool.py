"""Pool micro-benchmarks: empty fork-join latency, 1M empty tasks, parallel_for overhead, idle CPU.

Builds the C++ driver (bench/cpp/pool_bench.cpp) with CMake in build/bench-release, runs it and
prints a table of medians with the peer's figure (a mutex + condition-variable queue pool, fresh
threads, or the serial loop) next to ours and the ratio. Then the CPU time idle workers use: a
pool of 1 and of N workers (N = the CPUs this process may use, at least 2) runs a parallel loop,
sleeps, and the CPU time of each worker thread (/proc/self/task/<tid>/schedstat) and of the whole
process (CLOCK_PROCESS_CPUTIME_ID) over that idle time is printed.

    python bench/pool.py                 # threads = the CPUs this process may use
    python bench/pool.py --threads 2 4 --repeats 9
    python bench/pool.py --idle-seconds 5   # 0 skips the idle measurement
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

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


def idle(exe: Path, workers: int, seconds: float) -> dict[str, Any]:
    """CPU time a pool of `workers` uses over `seconds` of idleness after a parallel loop."""
    out = subprocess.run(
        [str(exe), "idle", str(workers), str(seconds)], check=True, capture_output=True, text=True
    )
    row: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return row


def print_idle(rows: list[dict[str, Any]]) -> None:
    """The idle-CPU table."""
    seconds, spin = rows[0]["seconds"], rows[0]["spin_time_us"]
    print(
        f"\nidle CPU after a parallel loop: {seconds:g} s asleep, workers spin {spin} us (up to "
        f"{max(spin, 500)} us after a quick wake-up) then park"
    )
    print(f"{'workers':>7} {'process CPU':>12} {'worker CPU (each)':>30} {'parks':>6}")
    for r in rows:
        each = ", ".join(f"{ms:.3f}" for ms in r["worker_cpu_ms"])
        share = r["process_cpu_ms"] / (1e3 * float(r["seconds"])) * 100
        print(
            f"{r['workers']:>7} {r['process_cpu_ms']:>9.3f} ms {each + ' ms':>30} {r['parks']:>6}"
            f"   ({share:.4f}% of one CPU)"
        )


def main(argv: list[str] | None = None) -> int:
    """Build, run and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=None)
    parser.add_argument("--repeats", type=int, default=7, help="runs per figure (median)")
    parser.add_argument(
        "--idle-seconds", type=float, default=2.0, help="idle time measured (0: skip)"
    )
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
    if args.idle_seconds > 0:
        cpus = len(os.sched_getaffinity(0))
        print_idle([idle(exe, w, args.idle_seconds) for w in sorted({1, max(2, cpus)})])
    return 0


if __name__ == "__main__":
    sys.exit(main())
