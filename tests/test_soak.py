"""Soak (issue 6, point 1): 8 threads run random graphs against the NumPy reference.

Excluded from the default run; ``pytest -m soak``. ``OPWEAVE_SOAK_ITERATIONS`` (per thread,
default 60) scales it: 60 takes about a minute on two busy cores.
"""

from __future__ import annotations

import gc
import os
import random
import sys
import threading
import time
import traceback

import numpy as np
import pytest

import opweave as ow
from opweave import errors

from reference import InjectedFailure, build, check, needed, random_feeds, random_spec

pytestmark = [pytest.mark.soak, pytest.mark.skipif(sys.platform != "linux", reason="/proc")]

THREADS = 8
ITERATIONS = int(os.environ.get("OPWEAVE_SOAK_ITERATIONS", "60"))
WATCHDOG_S = float(os.environ.get("OPWEAVE_SOAK_WATCHDOG_S", "120"))  # per iteration


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
            assert options is None or sleeps * 0.02 < 0.01, "expected a deadline"
            check(spec, got, feeds)
    return "ok"


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
    outcomes: dict[str, int] = {"ok": 0, "failed": 0, "timeout": 0}
    failures: list[str] = []
    progress = [0] * THREADS
    lock = threading.Lock()
    samples: list[tuple[float, int, int]] = []
    warm_up = max(1, ITERATIONS // 4)

    def worker(k: int) -> None:
        rng = random.Random(1000 * k + 7)
        nrng = np.random.default_rng(k)
        for it in range(ITERATIONS):
            try:
                outcome = _one_iteration(rng, nrng, config)
            except BaseException:  # noqa: BLE001 - every failure is reported at the end
                with lock:
                    failures.append(f"thread {k} iteration {it}:\n{traceback.format_exc()}")
                return
            with lock:
                outcomes[outcome] += 1
            progress[k] = it + 1
            if k == 0 and it + 1 >= warm_up:
                gc.collect()
                samples.append((_rss_mib(), _os_threads(), _fds()))

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
    assert not failures, "\n".join(failures[:3])
    assert sum(outcomes.values()) == THREADS * ITERATIONS
    # Flat after warm-up: generous bounds (allocator caches, the compiled-graph of each graph).
    if len(samples) >= 2:
        rss0, threads0, fds0 = samples[0]
        rss_max = max(s[0] for s in samples)
        assert rss_max - rss0 < 200, f"RSS grew from {rss0:.0f} to {rss_max:.0f} MiB"
        assert max(s[1] for s in samples) <= threads0 + THREADS + 4, samples
        assert samples[-1][2] <= fds0 + 2, f"fds grew: {samples}"
    print(f"\nsoak {outcomes}, samples (rss MiB, threads, fds): {samples[0]} -> {samples[-1]}")
