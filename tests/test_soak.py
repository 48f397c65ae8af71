"""Soak: 8 threads run random graphs against the NumPy reference.

Excluded from the default run; ``pytest -m soak``. ``OPWEAVE_SOAK_ITERATIONS`` (per thread,
default 200) scales it: 200 takes 2-3 minutes for the three configurations on two
busy cores.
"""

from __future__ import annotations

import gc
import os
import random
import statistics
import sys
import threading
import time
import traceback

import numpy as np
import opweave as ow
import pytest
from opweave import errors
from reference import InjectedFailure, build, check, needed, random_feeds, random_spec

pytestmark = [pytest.mark.soak, pytest.mark.skipif(sys.platform != "linux", reason="/proc")]

THREADS = 8
ITERATIONS = int(os.environ.get("OPWEAVE_SOAK_ITERATIONS", "200"))
WATCHDOG_S = float(os.environ.get("OPWEAVE_SOAK_WATCHDOG_S", "120"))  # per iteration
# RSS growth after warm-up that counts as a leak: more than this per iteration (all threads)
# *and* more than this in total. The total allows for allocator caches settling; the rate
# catches a smaller leak in a longer run. Measured on two busy cores with the default 200
# iterations (two runs, three configurations each): the medians moved by -3.9..-1.2 MiB
# (-4.2..-1.4 KiB/iteration over ~900 iterations); with a leak of 100 KiB per iteration
# injected, by +89..+92 MiB (+98..+100 KiB/iteration), which fails.
LEAK_KIB_PER_ITERATION = 8
LEAK_MIB_TOTAL = 32


def _rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _os_threads() -> int:
    return len(os.listdir("/proc/self/task"))


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _one_iteration(rng: random.Random, nrng: np.random.Generator, config: ow.ConfigProto) -> str:
    timeout_run = rng.random() < 0.05
    spec = random_spec(
        rng,
        max_nodes=500,
        fail_rate=0.0 if timeout_run else 0.002,
        sleep_rate=0.02 if timeout_run else 0.0,
    )
    built = build(spec)
    feeds = random_feeds(spec, nrng)
    feed_dict = dict(zip(built.inputs, feeds, strict=True))
    sleeps = sum(spec.nodes[i].op == "sleep" for i in needed(spec))
    options = None
    if timeout_run and sleeps >= 3:
        options = ow.RunOptions(timeout_in_ms=10)
    with ow.Session(graph=built.graph, config=config) as sess:
        for _ in range(2):  # the second run uses the compiled-graph cache
            try:
                got = sess.run(built.fetches, feed_dict=feed_dict, options=options)
            except InjectedFailure:
                with pytest.raises(InjectedFailure):
                    check(spec, [], feeds)
                return "failed"
            except errors.DeadlineExceededError:
                assert options is not None, "deadline exceeded without a timeout"
                return "timeout"
            # A run that finished before its waiting caller saw the deadline (a loaded machine)
            # may return its result; it must still be right.
            check(spec, got, feeds)
    return "ok" if options is None else "timeout-missed"


@pytest.mark.parametrize(
    "config",
    [
        ow.ConfigProto(),
        ow.ConfigProto(inter_op_parallelism_threads=2, use_per_session_threads=True),
        ow.ConfigProto(inter_op_parallelism_threads=-1),
    ],
    ids=["global", "per-session", "caller-thread"],
)
def test_soak_random_graphs_from_eight_threads(config: ow.ConfigProto) -> None:
    outcomes: dict[str, int] = {"ok": 0, "failed": 0, "timeout": 0, "timeout-missed": 0}
    failures: list[str] = []
    progress = [0] * THREADS
    lock = threading.Lock()
    samples: list[tuple[float, int, int, int]] = []  # RSS MiB, threads, fds, iterations done
    warm_up = max(1, ITERATIONS // 4)
    # The global pools exist before the baseline is taken (the first session creates them).
    with ow.Graph().as_default():
        two = ow.constant(1.0) + 1.0
        for c in (ow.ConfigProto(), config):
            with ow.Session(config=c) as sess:
                assert sess.run(two) == 2.0
    gc.collect()
    threads_before, fds_before = _os_threads(), _fds()

    def worker(k: int) -> None:
        rng = random.Random(1000 * k + 7)
        nrng = np.random.default_rng(k)
        for it in range(ITERATIONS):
            try:
                outcome = _one_iteration(rng, nrng, config)
            except BaseException:
                with lock:
                    failures.append(f"thread {k} iteration {it}:\n{traceback.format_exc()}")
                return
            with lock:
                outcomes[outcome] += 1
            progress[k] = it + 1
            if k == 0 and it + 1 >= warm_up:
                gc.collect()
                samples.append((_rss_mib(), _os_threads(), _fds(), sum(progress)))

    t0 = time.monotonic()
    threads = [threading.Thread(target=worker, args=(k,), daemon=True) for k in range(THREADS)]
    for t in threads:
        t.start()
    # Watchdog: every thread must make progress within WATCHDOG_S, else the run is hung.
    last, last_change = list(progress), time.monotonic()
    while any(t.is_alive() for t in threads):
        time.sleep(0.5)
        if progress != last:
            last, last_change = list(progress), time.monotonic()
        elif time.monotonic() - last_change > WATCHDOG_S:
            stacks = "\n".join(
                "".join(traceback.format_stack(f)) for f in sys._current_frames().values()
            )
            pytest.fail(f"no progress for {WATCHDOG_S} s: {progress}\n{stacks}")
    elapsed = time.monotonic() - t0
    assert not failures, "\n".join(failures[:3])
    assert sum(outcomes.values()) == THREADS * ITERATIONS
    # The mix really had failing ops, and deadlines that fired (the seeds are fixed).
    assert outcomes["failed"] > 0, outcomes
    if outcomes["timeout"] + outcomes["timeout-missed"] >= 3:
        assert outcomes["timeout"] > 0, outcomes
    gc.collect()
    threads_after, fds_after = _os_threads(), _fds()
    # RSS: the median of the last quarter of the samples against the median of the first
    # quarter (after warm-up), as growth per iteration run in between (by all threads).
    quarter = max(1, len(samples) // 4)
    first, last = samples[:quarter], samples[-quarter:]
    rss_first = statistics.median(s[0] for s in first)
    rss_last = statistics.median(s[0] for s in last)
    span = max(1.0, statistics.median(s[3] for s in last) - statistics.median(s[3] for s in first))
    growth_mib = rss_last - rss_first
    kib_per_iteration = growth_mib * 1024 / span
    print(
        f"\nsoak {outcomes} in {elapsed:.0f} s; OS threads {threads_before} before, "
        f"{threads_after} after; fds {fds_before} -> {fds_after}; "
        f"after warm-up (RSS MiB, threads, fds, iterations): {samples[0]} -> {samples[-1]}, "
        f"max RSS {max(s[0] for s in samples):.0f} MiB; RSS median first/last quarter "
        f"{rss_first:.1f} -> {rss_last:.1f} MiB over {span:.0f} iterations = "
        f"{kib_per_iteration:+.1f} KiB/iteration"
    )
    # Nothing left behind: the sessions' own pools are gone, no descriptor leaked.
    assert threads_after <= threads_before, (threads_before, threads_after)
    assert fds_after <= fds_before + 2, (fds_before, fds_after)
    assert growth_mib < LEAK_MIB_TOTAL or kib_per_iteration < LEAK_KIB_PER_ITERATION, (
        f"RSS grew {growth_mib:.1f} MiB ({kib_per_iteration:.1f} KiB/iteration over {span:.0f} "
        f"iterations): median {rss_first:.1f} -> {rss_last:.1f} MiB"
    )
    # At most THREADS sessions' own pools (2 threads each) alive at a sampling moment.
    assert max(s[1] for s in samples) <= threads_before + THREADS + 2 * THREADS + 2, samples
    assert max(s[2] for s in samples) <= fds_before + 4, samples
