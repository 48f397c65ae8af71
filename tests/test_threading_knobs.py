"""The OpenMP-style knobs for our own pools: spin time before parking (OPWEAVE_SPIN_TIME_US, like
KMP_BLOCKTIME) and worker pinning (OPWEAVE_AFFINITY, like KMP_AFFINITY), both shown in
parallel_info(). Each case runs in a fresh process with its own environment."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import opweave
import pytest

# Prints the parallel_info() text, and for each intra-op worker (3 threads per op: 2 workers) the
# CPUs it may run on and its scheduler state 300 ms after a parallel op, the pool's parks, and
# the spin time each pool's workers really run with (global intra and inter, and a per-session
# pool created after them), after CODE ran.
PROBE = """
import json, os, time, warnings
import numpy as np
import opweave
from opweave import _opweave_core, _pool

CODE
session = opweave.Session(
    graph=opweave.Graph(),
    config=opweave.ConfigProto(use_per_session_threads=True, inter_op_parallelism_threads=1),
)
opweave.set_num_threads(3)
a = np.ones((300, 300))
opweave.kernels.matmul(a, a)
_pool.reset_pool_stats("intra")
opweave.kernels.matmul(a, a)
time.sleep(0.3)

def allowed(tid):
    with open(f"/proc/self/task/{tid}/status") as f:
        for line in f:
            if line.startswith("Cpus_allowed_list:"):
                return line.split(":", 1)[1].strip()

def state(tid):  # R: running or runnable (spinning), S: asleep (parked)
    with open(f"/proc/self/task/{tid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]

tids = _opweave_core.pool_worker_thread_ids("intra")
print(json.dumps({
    "info": opweave.parallel_info(),
    "workers": [allowed(t) for t in tids],
    "states": [state(t) for t in tids],
    "parks": _pool.pool_stats("intra").parks,
    "spin": [
        _opweave_core.pool_spin_time_us("intra"),
        _opweave_core.pool_spin_time_us("inter"),
        *[p["spin_time_us"] for p in _opweave_core.describe_pools() if "session" in p["kind"]],
    ],
}))
"""


def _probe(affinity: set[int] | None = None, code: str = "", **env: str) -> dict[str, object]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OPWEAVE_", "OMP_"))}

    def pin() -> None:
        if affinity is not None:
            os.sched_setaffinity(0, affinity)

    out = subprocess.run(
        [sys.executable, "-c", PROBE.replace("CODE", code)],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        preexec_fn=pin,
    )
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def _info_line(info: object, key: str) -> str:
    assert isinstance(info, str)
    (line,) = [ln for ln in info.splitlines() if ln.startswith(key)]
    return line


def _cpu_list(text: str) -> set[int]:
    cpus: set[int] = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


def test_spin_time_defaults_to_50_us_in_every_pool_and_parallel_info_says_so() -> None:
    result = _probe()
    line = _info_line(result["info"], "spin before parking")
    assert "50 us" in line
    assert "[default]" in line
    assert result["spin"] == [50, 50, 50]


@pytest.mark.parametrize("us", [0, 1000])
def test_spin_time_env_var_reaches_every_pool_and_is_shown_with_its_rule(us: int) -> None:
    result = _probe(OPWEAVE_SPIN_TIME_US=str(us))
    line = _info_line(result["info"], "spin before parking")
    assert f"{us} us" in line
    assert f"[OPWEAVE_SPIN_TIME_US={us}]" in line
    assert result["spin"] == [us, us, us]


def test_an_invalid_spin_time_is_ignored_and_parallel_info_says_why() -> None:
    result = _probe(OPWEAVE_SPIN_TIME_US="soon")
    line = _info_line(result["info"], "spin before parking")
    assert "50 us" in line
    assert "ignored" in line
    assert result["spin"] == [50, 50, 50]


# The first Session's ConfigProto.experimental.spin_time_us, then a later one asking for another.
_FIRST_SESSION_SPINS_0 = """
config = opweave.ConfigProto()
config.experimental.spin_time_us = 0
opweave.Session(graph=opweave.Graph(), config=config)
later = opweave.ConfigProto()
later.experimental.spin_time_us = 7
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    opweave.Session(graph=opweave.Graph(), config=later)
assert [w.category.__name__ for w in caught] == ["PoolConfigWarning"], caught
"""


def test_the_first_sessions_config_spin_time_reaches_every_pool_over_the_env_var() -> None:
    result = _probe(code=_FIRST_SESSION_SPINS_0, OPWEAVE_SPIN_TIME_US="1000")
    assert result["spin"] == [0, 0, 0]
    assert "experimental.spin_time_us=0" in _info_line(result["info"], "spin before parking")


def test_zero_spin_time_leaves_idle_workers_asleep() -> None:
    # Not a check that 0 differs from the 50 us default (300 ms after the op both have parked;
    # telling them apart would take a timing assertion): the value check above is that.
    result = _probe(OPWEAVE_SPIN_TIME_US="0")
    assert result["states"] == ["S", "S"]
    assert result["spin"] == [0, 0, 0]


def test_long_spin_time_keeps_idle_workers_spinning_instead_of_parking() -> None:
    result = _probe(OPWEAVE_SPIN_TIME_US="5000000")
    assert result["states"] == ["R", "R"]
    assert result["parks"] == 0
    assert result["spin"] == [5000000, 5000000, 5000000]


def test_affinity_defaults_to_none_and_workers_keep_the_process_mask() -> None:
    result = _probe()
    assert "none [default]" in _info_line(result["info"], "worker affinity")
    process = os.sched_getaffinity(0)
    workers = result["workers"]
    assert isinstance(workers, list)
    assert [_cpu_list(w) for w in workers] == [process, process]


@pytest.mark.parametrize("mode", ["compact", "scatter"])
def test_pinning_puts_each_worker_on_one_allowed_cpu(mode: str) -> None:
    result = _probe(OPWEAVE_AFFINITY=mode)
    assert f"{mode} [OPWEAVE_AFFINITY={mode}]" in _info_line(result["info"], "worker affinity")
    workers = result["workers"]
    assert isinstance(workers, list)
    pinned = [_cpu_list(w) for w in workers]
    assert all(len(p) == 1 and p <= os.sched_getaffinity(0) for p in pinned), pinned
    if len(os.sched_getaffinity(0)) >= 2:
        assert pinned[0] != pinned[1], "two workers on two CPUs share none"


@pytest.mark.parametrize("mode", ["compact", "scatter"])
def test_pinning_respects_the_processs_allowed_cpus(mode: str) -> None:
    allowed = {max(os.sched_getaffinity(0))}
    result = _probe(affinity=allowed, OPWEAVE_AFFINITY=mode)
    workers = result["workers"]
    assert isinstance(workers, list)
    assert [_cpu_list(w) for w in workers] == [allowed, allowed]


def test_an_invalid_affinity_is_ignored_and_parallel_info_says_why() -> None:
    line = _info_line(_probe(OPWEAVE_AFFINITY="everywhere")["info"], "worker affinity")
    assert "none" in line
    assert "ignored" in line


def test_python_m_opweave_info_prints_parallel_info() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "opweave", "info"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    for key in ("intra-op parallelism", "inter-op parallelism", "spin before", "worker affinity"):
        assert key in out.stdout
    assert opweave.__version__ in out.stdout


# Pins inter-op 1 / intra-op 2 (one intra-op worker), reads where each worker may run, then
# resizes both pools, adds a per-session pool and forks, reading again after each step. Prints
# one JSON object: step -> {"inter": [...], "intra": [...], "session": [...], "info": ...}.
PLACEMENT_PROBE = """
import json, os
import numpy as np
import opweave
from opweave import _opweave_core

def allowed(tid):
    with open(f"/proc/self/task/{tid}/status") as f:
        for line in f:
            if line.startswith("Cpus_allowed_list:"):
                return line.split(":", 1)[1].strip()

def snapshot(session_pool=None):
    a = np.ones((200, 200))
    opweave.kernels.matmul(a, a)  # creates the intra-op pool
    out = {n: [allowed(t) for t in _opweave_core.pool_worker_thread_ids(n)]
           for n in ("inter", "intra")}
    out["session"] = [p["cpus"] for p in _opweave_core.describe_pools() if "session" in p["kind"]]
    out["info"] = opweave.parallel_info()
    return out

steps = {}
opweave.set_num_threads(2)
_opweave_core.set_inter_op_parallelism(1, "test")
steps["start"] = snapshot()
opweave.set_num_threads(3)
steps["intra resized"] = snapshot()
_opweave_core.set_inter_op_parallelism(2, "test")
steps["inter resized"] = snapshot()
opweave.set_num_threads(2)
_opweave_core.set_inter_op_parallelism(1, "test")
session = opweave.Session(
    graph=opweave.Graph(),
    config=opweave.ConfigProto(use_per_session_threads=True, inter_op_parallelism_threads=1),
)
steps["session"] = snapshot()
del session
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(r)
    os.write(w, json.dumps(snapshot()).encode())
    os._exit(0)
os.close(w)
data = b""
while chunk := os.read(r, 65536):
    data += chunk
os.waitpid(pid, 0)
steps["forked child"] = json.loads(data)
print(json.dumps(steps))
"""


def _two_cpus() -> list[int]:
    return sorted(os.sched_getaffinity(0))[:2]


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two allowed CPUs")
@pytest.mark.parametrize("mode", ["compact", "scatter"])
def test_pinned_inter_and_intra_op_workers_do_not_share_a_cpu_while_one_is_free(mode: str) -> None:
    # As `taskset -c A,B`: the process may run on two CPUs, c0 < c1.
    c0, c1 = _two_cpus()
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OPWEAVE_", "OMP_"))}
    out = subprocess.run(
        [sys.executable, "-c", PLACEMENT_PROBE],
        env={**clean, "OPWEAVE_AFFINITY": mode},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        preexec_fn=lambda: os.sched_setaffinity(0, {c0, c1}),
    )
    steps = json.loads(out.stdout.strip().splitlines()[-1])
    cpu = {0: str(c0), 1: str(c1)}
    # The rule (docs/threading.md): inter-op workers take the first slots, intra-op workers the
    # next ones, other pools' after them; compact wraps slot s to CPU s mod 2, scatter spreads
    # T <= 2 slots evenly (the same here) and wraps beyond.
    assert steps["start"]["inter"] == [cpu[0]]
    assert steps["start"]["intra"] == [cpu[1]]
    assert f"inter-op on CPU {c0}, intra-op on CPU {c1}" in steps["start"]["info"]
    # intra resized to 2 workers: slots 1, 2 -> c1, then wrap to c0.
    assert steps["intra resized"]["inter"] == [cpu[0]]
    assert steps["intra resized"]["intra"] == [cpu[1], cpu[0]]
    # inter resized to 2: slots 0, 1 for inter; intra's two workers follow (2, 3 -> c0, c1).
    assert steps["inter resized"]["inter"] == [cpu[0], cpu[1]]
    assert steps["inter resized"]["intra"] == [cpu[0], cpu[1]]
    # Back to 1 + 1, and a per-session pool of one worker: slot 2 wraps to c0.
    assert steps["session"]["inter"] == [cpu[0]]
    assert steps["session"]["intra"] == [cpu[1]]
    assert steps["session"]["session"] == [[c0]]
    assert "session inter-op pool" in steps["session"]["info"]
    assert f"] on CPU {c0}" in steps["session"]["info"]
    # A forked child re-creates its pools with the same placement (the session pool is gone).
    assert steps["forked child"]["inter"] == [cpu[0]]
    assert steps["forked child"]["intra"] == [cpu[1]]


def test_unpinned_pools_report_no_cpus_in_parallel_info() -> None:
    result = _probe()
    line = _info_line(result["info"], "worker affinity")
    assert "on CPU" not in line
