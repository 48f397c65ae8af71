"""One precedence order for every pool size, checked in fresh processes with their own environment:
explicit call > first Session's ConfigProto > OPWEAVE_NUM_*_THREADS > OMP_NUM_THREADS (intra only)
> the CPUs this process may use (affinity mask, cgroup CPU quota)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import opweave
import pytest

REPORT = "print(json.dumps([opweave.get_num_threads(), opweave.get_num_interop_threads()]))"


def _sizes(code: str = "", affinity: set[int] | None = None, **env: str) -> tuple[int, int]:
    """(intra, inter) in effect in a fresh interpreter after ``code``, with only ``env`` set."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OPWEAVE_", "OMP_"))}

    def pin() -> None:  # runs in the child before exec: the interpreter starts with this mask
        if affinity is not None:
            os.sched_setaffinity(0, affinity)

    out = subprocess.run(
        [sys.executable, "-c", f"import json, opweave\n{code}\n{REPORT}"],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        preexec_fn=pin,
    )
    intra, inter = json.loads(out.stdout.strip().splitlines()[-1])
    return intra, inter


def _cgroup_quota_cpus() -> float | None:
    """The cgroup CPU quota of this process in CPUs, None when unlimited (v2, then v1)."""
    v2 = Path("/sys/fs/cgroup/cpu.max")
    if v2.exists():
        quota, period = v2.read_text().split()[:2]
        return None if quota == "max" else int(quota) / int(period)
    v1 = Path("/sys/fs/cgroup/cpu/cpu.cfs_quota_us")
    if v1.exists():
        quota_us = int(v1.read_text())
        period_us = int(Path("/sys/fs/cgroup/cpu/cpu.cfs_period_us").read_text())
        return None if quota_us <= 0 else quota_us / period_us
    return None


def _available_cpus(affinity: set[int]) -> int:
    quota = _cgroup_quota_cpus()
    n = len(affinity)
    return n if quota is None else max(1, min(n, math.ceil(quota)))


def test_default_is_the_cpus_this_process_may_use() -> None:
    cpus = _available_cpus(os.sched_getaffinity(0))
    assert _sizes() == (cpus, cpus)


def test_default_follows_the_affinity_mask_not_the_machine() -> None:
    assert _sizes(affinity={0}) == (1, 1)


def test_omp_num_threads_sizes_the_intra_op_pool_only() -> None:
    cpus = _available_cpus(os.sched_getaffinity(0))
    assert _sizes(OMP_NUM_THREADS="3") == (3, cpus)


def test_omp_num_threads_list_uses_its_first_entry() -> None:
    assert _sizes(OMP_NUM_THREADS="3,2")[0] == 3


def test_opweave_env_vars_beat_omp_num_threads() -> None:
    env = {"OMP_NUM_THREADS": "3", "OPWEAVE_NUM_INTRAOP_THREADS": "5"}
    assert _sizes(**env, OPWEAVE_NUM_INTEROP_THREADS="4") == (5, 4)


def test_opweave_env_vars_beat_the_affinity_mask() -> None:
    env = {"OPWEAVE_NUM_INTRAOP_THREADS": "3", "OPWEAVE_NUM_INTEROP_THREADS": "2"}
    assert _sizes(affinity={0}, **env) == (3, 2)


@pytest.mark.parametrize("bad", ["0", "-2", "four", "", "2.5"])
def test_an_invalid_env_value_is_ignored_and_the_next_rule_applies(bad: str) -> None:
    env = {"OMP_NUM_THREADS": "3", "OPWEAVE_NUM_INTEROP_THREADS": bad}
    assert _sizes(affinity={0}, OPWEAVE_NUM_INTRAOP_THREADS=bad, **env) == (3, 1)


def test_an_explicit_call_beats_every_environment_variable() -> None:
    env = {"OMP_NUM_THREADS": "3", "OPWEAVE_NUM_INTRAOP_THREADS": "5"}
    code = "opweave.set_num_threads(2); opweave.set_num_interop_threads(1)"
    assert _sizes(code, OPWEAVE_NUM_INTEROP_THREADS="4", **env) == (2, 1)


def test_an_explicit_call_beats_the_affinity_mask() -> None:
    assert _sizes("opweave.set_num_threads(3)", affinity={0}) == (3, 1)


def test_tf_style_zero_drops_the_explicit_size_back_to_the_environment() -> None:
    code = (
        "opweave.set_num_threads(2)\nopweave.config.threading.set_intra_op_parallelism_threads(0)"
    )
    assert _sizes(code, OPWEAVE_NUM_INTRAOP_THREADS="5")[0] == 5


@pytest.mark.skipif(not hasattr(opweave, "Session"), reason="needs the graph runtime (issue 3)")
def test_first_session_config_beats_the_environment_but_not_an_explicit_call() -> None:
    session = (
        "config = opweave.ConfigProto(intra_op_parallelism_threads=2,"
        " inter_op_parallelism_threads=3)\n"
        "with opweave.Graph().as_default():\n"
        "    c = opweave.constant(1.0)\n"
        "    with opweave.Session(config=config) as s:\n"
        "        s.run(c)\n"
    )
    env = {"OPWEAVE_NUM_INTRAOP_THREADS": "5", "OPWEAVE_NUM_INTEROP_THREADS": "4"}
    assert _sizes(session, **env) == (2, 3)
    explicit_first = "opweave.set_num_threads(1)\n" + session
    assert _sizes(explicit_first, **env) == (1, 3)
