"""The tensor buffer cache: repeated runs reuse their intermediates' memory instead of faulting
fresh pages in, the cache respects OPWEAVE_BUFFER_CACHE_MB, and it can be emptied."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import opweave as ow
import pytest

# An ASan build of the extension turns the cache off, so ASan still sees a use after free.
needs_cache = pytest.mark.skipif(
    ow.buffer_cache_info().cap_source == "off under AddressSanitizer",
    reason="the cache is off by design under AddressSanitizer",
)


def _towers() -> tuple[ow.Graph, list[ow.Tensor], dict[ow.Tensor, np.ndarray]]:
    """Four matmul + relu towers: eight 512 KiB intermediates per run, one 512 KiB result."""
    g = ow.Graph()
    rng = np.random.default_rng(0)
    with g.as_default():
        x = ow.placeholder(ow.float32, [256, 512])
        outs = [
            ow.relu(ow.matmul(x, ow.constant(rng.standard_normal((512, 512), np.float32))))
            for _ in range(4)
        ]
        total = ow.add_n([ow.relu(o @ ow.constant(np.eye(512, dtype=np.float32))) for o in outs])
    return g, [total], {x: rng.standard_normal((256, 512), np.float32)}


FAULTS_CODE = """
    import resource, opweave as ow
    m = ow.models.mlp_towers()  # 4 towers x 2 dense layers: ~9 intermediates of 512 KiB a run
    with ow.threads(intra=1, inter=1), ow.Session(graph=m.graph) as sess:
        for _ in range(3):
            sess.run(m.fetches, m.feed_dict)
        hits = ow.buffer_cache_info().hits
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(10):
            sess.run(m.fetches, m.feed_dict)
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
    info = ow.buffer_cache_info()
    print(faults, info.hits - hits, info)
"""


@needs_cache
@pytest.mark.parametrize(
    "env",
    [{}, {"MALLOC_TRIM_THRESHOLD_": "65536"}],
    ids=["glibc-defaults", "aggressive-trim-as-in-dask-workers"],
)
def test_repeated_runs_reuse_their_buffers_instead_of_faulting_in_fresh_pages(
    env: dict[str, str],
) -> None:
    # A fresh process: how glibc treats freed memory depends on the heap's history.
    out = _in_fresh_process(FAULTS_CODE, **env)
    faults, hits = map(int, out.split()[:2])
    # Without the cache glibc gives freed buffers back to the kernel and each run faults ~9 x 128
    # pages in again (measured: 11200 in these 10 runs; with aggressive trimming also the
    # matmuls' packing space, 10321 with the tensors cached); with it, fewer than one buffer's
    # pages a run (measured: 0-3 in all 10).
    assert faults < 10 * 128, out
    assert hits >= 10 * 8, out


@needs_cache
def test_empty_buffer_cache_returns_what_it_held() -> None:
    g, fetches, feeds = _towers()
    with ow.Session(graph=g) as sess:
        sess.run(fetches, feeds)
    held = ow.buffer_cache_info().held_bytes
    assert held >= 512 * 1024
    assert ow.empty_buffer_cache() == held
    assert ow.buffer_cache_info().held_bytes == 0
    assert ow.empty_buffer_cache() == 0


def test_cache_stays_within_its_cap_and_results_stay_correct() -> None:
    g, fetches, feeds = _towers()
    with ow.Session(graph=g) as sess:
        first = sess.run(fetches, feeds)[0]
        for _ in range(5):
            again = sess.run(fetches, feeds)[0]
            np.testing.assert_array_equal(again, first)
            # A fetched result keeps its buffer: a later run must not write into it.
            np.testing.assert_array_equal(first, sess.run(fetches, feeds)[0])
    info = ow.buffer_cache_info()
    assert 0 <= info.held_bytes <= info.cap_bytes


def _in_fresh_process(code: str, **env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OPWEAVE_BUFFER")}
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


CODE = """
    import numpy as np, opweave as ow
    x = ow.constant(np.ones((512, 512), np.float32))
    with ow.Session() as s:
        for _ in range(3):
            s.run(ow.relu(x @ x))
    info = ow.buffer_cache_info()
    print(info.cap_bytes, info.held_bytes, info.cap_source)
    print(ow.parallel_info())
"""


@needs_cache
def test_buffer_cache_mb_sets_the_cap_and_parallel_info_says_so() -> None:
    out = _in_fresh_process(CODE, OPWEAVE_BUFFER_CACHE_MB="3")
    cap, held, source = out.splitlines()[0].split(" ", 2)
    assert int(cap) == 3 << 20
    assert 0 < int(held) <= 3 << 20
    assert source == "OPWEAVE_BUFFER_CACHE_MB=3"
    assert "(cap 3 MiB) [OPWEAVE_BUFFER_CACHE_MB=3]" in out


def test_buffer_cache_mb_zero_turns_the_cache_off() -> None:
    out = _in_fresh_process(CODE, OPWEAVE_BUFFER_CACHE_MB="0")
    cap, held, _ = out.splitlines()[0].split(" ", 2)
    assert (int(cap), int(held)) == (0, 0)
    assert "tensor buffer cache  : off [" in out


@needs_cache
def test_a_bad_buffer_cache_mb_is_ignored_and_reported() -> None:
    out = _in_fresh_process(CODE, OPWEAVE_BUFFER_CACHE_MB="lots")
    assert int(out.split(" ", 1)[0]) == 256 << 20
    assert "OPWEAVE_BUFFER_CACHE_MB='lots' ignored (not a non-negative integer)" in out
