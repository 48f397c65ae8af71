"""One precedence order for every pool size, checked in fresh processes with their own environment:
explicit call > first Session's ConfigProto > OPWEAVE_NUM_*_THREADS > OMP_NUM_THREADS (intra only)
> the CPUs this process may use (affinity mask, cgroup CPU quota)."""

from __future__ import annotations

import json
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


def _fake_cgroups(base: Path, quota: str | None, *, v1: bool = False) -> dict[str, str]:
    """A fake cgroup tree (testing-only variables of cpu_info.h) with this process in /app/job.

    ``quota`` is cgroup v2's cpu.max first field ("max" or microseconds per 100 ms), or v1's
    cpu.cfs_quota_us ("-1" = none) with ``v1``; it is set on the process's own cgroup, below the
    root, where a quota from systemd's CPUQuota= sits. None: no quota file at all.
    """
    root = base / "sys"
    job = root / ("cpu" if v1 else "") / "app" / "job"
    job.mkdir(parents=True)
    if quota is not None and v1:
        (job / "cpu.cfs_quota_us").write_text(f"{quota}\n")
        (job / "cpu.cfs_period_us").write_text("100000\n")
    elif quota is not None:
        (job / "cpu.max").write_text(f"{quota} 100000\n")
    self_cgroup = base / "cgroup"
    self_cgroup.write_text("3:cpu,cpuacct:/app/job\n" if v1 else "0::/app/job\n")
    return {"OPWEAVE_CGROUP_ROOT": str(root), "OPWEAVE_PROC_SELF_CGROUP": str(self_cgroup)}


def test_default_is_the_cpus_this_process_may_use(tmp_path: Path) -> None:
    cpus = len(os.sched_getaffinity(0))
    assert _sizes(**_fake_cgroups(tmp_path, "max")) == (cpus, cpus)


@pytest.mark.parametrize("v1", [False, True], ids=["cgroup_v2", "cgroup_v1"])
def test_a_cgroup_quota_on_the_processs_own_cgroup_caps_the_default_sizes(
    tmp_path: Path, v1: bool
) -> None:
    # 0.5 CPUs: one thread; the quota sits below the root, as systemd's CPUQuota= puts it.
    assert _sizes(**_fake_cgroups(tmp_path, "50000", v1=v1)) == (1, 1)


def test_a_fractional_cgroup_quota_rounds_up_and_shows_in_parallel_info(tmp_path: Path) -> None:
    cpus = len(os.sched_getaffinity(0))
    env = _fake_cgroups(tmp_path, "150000")  # 1.5 CPUs: two threads may run at once
    assert _sizes(**env) == (min(cpus, 2), min(cpus, 2))
    out = subprocess.run(
        [sys.executable, "-c", "import opweave; print(opweave.parallel_info())"],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert "cgroup quota 1.50 CPUs" in out
    assert f"cgroup quota 1.50 -> {min(cpus, 2)})" in out


@pytest.mark.parametrize("kind", ["device", "fifo", "huge"])
def test_an_environment_named_cgroup_file_that_is_not_small_and_regular_is_ignored_with_a_reason(
    tmp_path: Path, kind: str
) -> None:
    # /dev/zero never ends and a FIFO without a writer blocks its reader: parallel_info() and
    # the pool sizes must neither hang nor read without bound, and say what they ignored.
    if kind == "device":
        path = "/dev/zero"
    elif kind == "fifo":
        path = str(tmp_path / "fifo")
        os.mkfifo(path)
    else:
        path = str(tmp_path / "huge")
        Path(path).write_text("0::/" + "a" * (1 << 20))
    cpus = len(os.sched_getaffinity(0))
    env = {"OPWEAVE_PROC_SELF_CGROUP": path, "OPWEAVE_CGROUP_ROOT": str(tmp_path)}
    assert _sizes(**env) == (cpus, cpus)
    out = subprocess.run(
        [sys.executable, "-c", "import opweave; print(opweave.parallel_info())"],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    reason = "is larger than 64 KiB" if kind == "huge" else "is not a regular file"
    reason += "; ignored"
    assert f"cgroup quota none: {path} {reason}" in out


def test_no_quota_file_and_unlimited_quotas_leave_the_affinity_mask(tmp_path: Path) -> None:
    cpus = len(os.sched_getaffinity(0))
    assert _sizes(**_fake_cgroups(tmp_path / "none", None)) == (cpus, cpus)
    assert _sizes(**_fake_cgroups(tmp_path / "v1", "-1", v1=True)) == (cpus, cpus)
    assert _sizes(affinity={0}, **_fake_cgroups(tmp_path / "v2", "max")) == (1, 1)


def test_default_follows_the_affinity_mask_not_the_machine() -> None:
    assert _sizes(affinity={0}) == (1, 1)


def test_omp_num_threads_sizes_the_intra_op_pool_only(tmp_path: Path) -> None:
    cpus = len(os.sched_getaffinity(0))
    assert _sizes(OMP_NUM_THREADS="3", **_fake_cgroups(tmp_path, "max")) == (3, cpus)


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


@pytest.mark.skipif(not hasattr(opweave, "Session"), reason="needs the graph runtime")
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
