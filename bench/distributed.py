"""Distributed batch inference: one process against a Dask cluster and a Ray actor pool.

The same MLP (784 -> WIDTH -> WIDTH -> 10, float32, relu) over 64 batches of 256 rows:

- single: one process, one Session with intra_op_parallelism_threads=2, the batches one after
  the other (the two cores inside each matmul);
- dask: ``LocalCluster(n_workers=2, threads_per_worker=1)``, pools sized by
  ``OpweaveWorkerPlugin`` (1 thread each), ``opweave.integrations.dask.map_blocks`` over a
  persisted Dask array (the batches already in the workers' memory, as after a read: a
  computation is the 64 tasks of map_blocks and Dask's final concatenation);
- ray: 2 actors of ``GraphPredictor`` with ``num_cpus=1`` (pools sized to it), the batches
  already in the object store and submitted round robin at once (each actor queues its calls).

For each engine: throughput (rows/s) and its ratio to single, the compute time of one batch as
measured inside the workers, and the engine's overhead per task:
``(wall time x task slots - sum of the tasks' compute times) / tasks``: scheduling, moving
batches and results, (de)serialization, waiting. Goals: overhead per task under 5% of a 20 ms
batch (1 ms), cluster throughput within 10% of the single process.

Every engine runs alone: each round starts the engines one after the other (single, dask, ray),
warms each up (sessions built, graph shipped, pools started, one untimed run), lets its
processes settle, times one run and shuts it down, so an idle cluster never takes CPU from
another engine's run (idle, a LocalCluster of 2 workers kept about 15% of one CPU busy and Ray
about 8% on a 2-CPU machine, which slowed the single process beside them). The tables show
medians over rounds. WIDTH (default 1024) sets the cost of a batch; the measured figure is
printed (the goals above speak of a 20 ms batch). Each round waits (at most a minute) until
other processes use at most 5% of the machine's CPUs (--max-busy), and a round during which they
used more in one of its runs is taken again, so that a burst of another user's work does not
bias the ratios (at most 3 x --rounds rounds; the count is printed; --max-busy 1 turns both off).

Where the CPU went (Linux, from /proc/<pid>/task/<tid>/schedstat): per batch, the CPU time of
opweave's pool threads (the compute), how long those threads were ready to run but waited for
a CPU, the CPU time of every other thread of the engine (this process and the processes it
started: schedulers, event loops, actors' and Ray's daemons' threads), and that of the other
processes on the machine (other users; a busy machine shows there). On C CPUs an engine takes
at least (compute + engine's other threads) / C per batch, whatever it schedules.

    python bench/distributed.py                 # 5 rounds of 64 batches
    python bench/distributed.py --quick         # 2 rounds of 16 batches (a smoke run)
    python bench/distributed.py --engines single,dask --rounds 9
    python bench/distributed.py --engines single,dask,ray,dask-noop,ray-noop
    python bench/distributed.py --rows 1024     # larger blocks: the engines' cost per row falls

dask-noop and ray-noop run the same tasks on the same cluster and batches, but compute nothing
(logits of zeros): their overhead and "engine" CPU are the engine's own cost per task, with no
library in it at all.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

# This file is named like Dask's `distributed` package, and Python puts the script's folder
# first on the path: take it off, so `import distributed` finds Dask's.
if sys.path and os.path.abspath(sys.path[0]) == os.path.dirname(os.path.abspath(__file__)):
    del sys.path[0]

import numpy as np
import opweave as ow
from opweave.integrations._graphs import GraphPayload

ROWS = 256
FEATURES = 784
CLASSES = 10
SETTLE_S = float(os.environ.get("OW_BENCH_SETTLE_S", "0.3"))
#: Before a timed run, wait (at most this long) until the engine's processes are quiet.
SETTLE_MAX_S = 10.0


def build_mlp(width: int, seed: int = 0) -> ow.Graph:
    """784 -> width -> width -> 10, relu, float32; weights fixed by ``seed``."""
    rng = np.random.default_rng(seed)
    g = ow.Graph()
    with g.as_default():
        h = ow.placeholder(ow.float32, shape=(None, FEATURES), name="x")
        for fan_out in (width, width):
            fan_in = int(h.shape[1])
            w = (rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)).astype(np.float32)
            h = ow.nn.relu(ow.matmul(h, w) + np.float32(0.01))
        w = rng.standard_normal((width, CLASSES)).astype(np.float32) / np.sqrt(width)
        ow.identity(ow.matmul(h, w), name="logits")
    return g


# -- where the CPU went -----------------------------------------------------------------------

#: Thread names of opweave's pools (csrc/opweave/pools: "intra-op N", "inter-op N", and
#: "inter-op <name> N" for named pools): their CPU time is the compute.
POOL_THREADS = ("intra-op", "inter-op")


@dataclass
class CpuUse:
    """CPU seconds over a run (see the module docstring): opweave's pool threads in this process
    and its descendants, their run-queue wait, every other thread of those processes, and the
    rest of the machine's busy time (other processes; also threads of ours that ended during the
    run)."""

    compute: float = 0.0
    waiting: float = 0.0
    engine: float = 0.0
    others: float = 0.0


@dataclass
class Snapshot:
    """The machine's busy CPU time (/proc/stat, all CPUs) and, per process, its parent and per
    thread (a pool thread?, CPU ns, run-queue wait ns)."""

    busy: float
    procs: dict[int, tuple[int, dict[int, tuple[bool, int, int]]]]


def _busy_seconds() -> float:
    with open("/proc/stat") as f:
        fields = [int(v) for v in f.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal (guest time is already in user and nice)
    return sum(fields[i] for i in (0, 1, 2, 5, 6, 7)) / os.sysconf("SC_CLK_TCK")


def _snapshot(own_first: bool = False) -> Snapshot | None:
    """Every process's threads' CPU and run-queue wait; None where /proc has no schedstat (not
    Linux).

    Reading /proc takes milliseconds of this thread's CPU: read this process last before a run
    and first after it (``own_first``), so that the reading is not counted as the engine's.
    """
    own = str(os.getpid())
    if not os.path.exists(f"/proc/{own}/task/{own}/schedstat"):
        return None
    pids = [e.name for e in os.scandir("/proc") if e.name.isdigit() and e.name != own]
    pids = [own, *pids] if own_first else [*pids, own]
    busy = _busy_seconds() if own_first else 0.0
    procs = {}
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            threads = {}
            for task in os.scandir(f"/proc/{pid}/task"):
                with open(f"{task.path}/schedstat") as f:
                    cpu, wait, _ = f.read().split()
                with open(f"{task.path}/comm") as f:
                    pool = f.read().startswith(POOL_THREADS)
                threads[int(task.name)] = (pool, int(cpu), int(wait))
        except (OSError, ValueError, IndexError):  # a process or thread that just ended
            continue
        procs[int(pid)] = (ppid, threads)
    return Snapshot(busy if own_first else _busy_seconds(), procs)


def _family(snap: Snapshot) -> set[int]:
    """This process and its descendants (the engines it started)."""
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in snap.procs.items():
        children.setdefault(ppid, []).append(pid)
    family, todo = set(), [os.getpid()]
    while todo:
        pid = todo.pop()
        family.add(pid)
        todo.extend(children.get(pid, []))
    return family


def cpu_use(before: Snapshot | None, after: Snapshot | None) -> CpuUse | None:
    """What each kind of thread used between two snapshots."""
    if before is None or after is None:
        return None
    use = CpuUse()
    for pid in _family(after):
        old = before.procs.get(pid, (0, {}))[1]
        for tid, (pool, cpu, wait) in after.procs[pid][1].items():
            _, cpu0, wait0 = old.get(tid, (pool, 0, 0))
            if pool:
                use.compute += (cpu - cpu0) / 1e9
                use.waiting += (wait - wait0) / 1e9
            else:
                use.engine += (cpu - cpu0) / 1e9
    # The rest of the machine's busy time (clock ticks: about 10 ms per CPU of resolution).
    use.others = max(0.0, after.busy - before.busy - use.compute - use.engine)
    return use


def settle(max_s: float = SETTLE_MAX_S, busy: float = 0.25, window: float = 0.5) -> None:
    """Wait until this process and its descendants use under ``busy`` of one CPU over a
    ``window``, at most ``max_s`` seconds: what an engine does once after starting (Ray's
    worker processes importing, say) is over. Idle, a LocalCluster of 2 workers kept about
    15% of one CPU busy, Ray about 8% (heartbeats, memory monitors, polling threads)."""
    time.sleep(SETTLE_S)
    deadline = time.monotonic() + max_s
    before = _snapshot()
    while before is not None and time.monotonic() < deadline:
        time.sleep(window)
        after = _snapshot()
        use = cpu_use(before, after)
        if use is not None and use.compute + use.engine < busy * window:
            return
        before = after


def wait_for_quiet(max_busy: float, max_s: float = 60.0, window: float = 1.0) -> float:
    """Wait until other processes use at most ``max_busy`` of the machine's CPUs over a
    ``window``, at most ``max_s`` seconds; the share they used over the last window."""
    cpus = os.cpu_count() or 1
    deadline = time.monotonic() + max_s
    before = _snapshot()
    share = 0.0
    while before is not None:
        time.sleep(window)
        after = _snapshot()
        use = cpu_use(before, after)
        share = use.others / (window * cpus) if use is not None else 0.0
        if share <= max_busy or time.monotonic() >= deadline:
            break
        before = after
    return share


# -- engines ----------------------------------------------------------------------------------


class Single:
    """One process, intra=2: the batches one after the other."""

    name = "single"
    slots = 1

    def __init__(self, graph: ow.Graph, batches: list[np.ndarray]) -> None:
        config = ow.ConfigProto(intra_op_parallelism_threads=2, inter_op_parallelism_threads=1)
        self.sess = ow.Session(graph=graph, config=config)
        self.run_one = self.sess.make_callable("logits:0", ["x:0"])
        self.batches = batches

    def run(self) -> tuple[float, list[float], np.ndarray]:
        times = []
        out = []
        start = time.perf_counter()
        for b in self.batches:
            t0 = time.perf_counter()
            out.append(self.run_one(b))
            times.append(time.perf_counter() - t0)
        return time.perf_counter() - start, times, np.concatenate(out)

    def close(self) -> None:
        self.sess.close()


class Dask:
    """LocalCluster 2 x 1 thread, map_blocks over a persisted array."""

    name = "dask"
    slots = 2
    key_prefix = "('opweave-"  # the tasks whose compute time is a batch's

    def __init__(self, graph: ow.Graph, batches: list[np.ndarray]) -> None:
        import dask.array as da
        from distributed import Client, LocalCluster, wait
        from opweave.integrations.dask import OpweaveWorkerPlugin, map_blocks

        self.cluster = LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            worker_dashboard_address=None,
        )
        self.client = Client(self.cluster)
        self.client.register_plugin(OpweaveWorkerPlugin())
        self.client.wait_for_workers(2)
        # The batches live in the workers (spread over both), as after a read: a persisted array,
        # its blocks in the workers' memory (without persist() every computation would also run
        # from_delayed's and concatenate's tasks: three tasks a batch instead of one).
        futures = self.client.scatter(batches)
        x = da.concatenate(
            [
                da.from_delayed(f, shape=b.shape, dtype=b.dtype)
                for f, b in zip(futures, batches, strict=True)
            ]
        ).persist()
        wait(x)
        self.x = x
        self.out = map_blocks(graph, "logits:0", {"x:0": x})

    def run(self) -> tuple[float, list[float], np.ndarray]:
        from distributed import get_task_stream

        with get_task_stream(client=self.client) as stream:
            start = time.perf_counter()
            result = self.out.compute()
            wall = time.perf_counter() - start
        computes = [
            ss["stop"] - ss["start"]
            for task in stream.data
            if str(task["key"]).startswith(self.key_prefix)
            for ss in task["startstops"]
            if ss["action"] == "compute"
        ]
        return wall, computes, result

    def close(self) -> None:
        self.client.close()
        self.cluster.close()


def _zeros_block(block: np.ndarray) -> np.ndarray:
    """A task that computes nothing (logits of zeros): what remains is the engine's cost."""
    return np.zeros((block.shape[0], CLASSES), np.float32)


class DaskNoop(Dask):
    """The same cluster, blocks and tasks, computing nothing: Dask's own cost per task."""

    name = "dask-noop"
    key_prefix = "('noop-"
    checks_output = False

    def __init__(self, graph: ow.Graph, batches: list[np.ndarray]) -> None:
        super().__init__(graph, batches)
        self.out = self.x.map_blocks(
            _zeros_block, chunks=(self.x.chunks[0], (CLASSES,)), dtype=np.float32, name="noop-"
        )


def _timed_predictor() -> Any:
    """GraphPredictor that also returns how long its Session.run took (defined in a function so
    Ray sends the class to its workers)."""
    from opweave.integrations.ray import GraphPredictor

    class TimedPredictor(GraphPredictor):  # type: ignore[misc]
        def __call__(self, batch: Any) -> dict[str, Any]:
            t0 = time.perf_counter()
            out = super().__call__(batch)
            out["_seconds"] = np.float64(time.perf_counter() - t0)
            return out

    return TimedPredictor


def _noop_predictor() -> Any:
    """An actor class called like TimedPredictor that computes nothing (logits of zeros)."""

    class NoopPredictor:
        def __init__(self, *args: Any) -> None:
            pass

        def __call__(self, batch: Any) -> dict[str, Any]:
            t0 = time.perf_counter()
            out = {"logits": np.zeros((len(batch["x"]), CLASSES), np.float32)}
            out["_seconds"] = np.float64(time.perf_counter() - t0)
            return out

    return NoopPredictor


class Ray:
    """2 GraphPredictor actors of one CPU, batches in the object store, submitted at once."""

    name = "ray"
    slots = 2
    actor_class = staticmethod(_timed_predictor)

    def __init__(self, graph: ow.Graph, batches: list[np.ndarray]) -> None:
        import ray

        self.ray = ray
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
        actor = ray.remote(num_cpus=1)(self.actor_class())
        payload = ray.put(GraphPayload.from_graph(graph))
        self.actors = [actor.remote(payload, {"logits": "logits:0"}, {"x": "x"}) for _ in range(2)]
        self.refs = [ray.put({"x": b}) for b in batches]
        ray.get([a.__call__.remote({"x": batches[0][:1]}) for a in self.actors])  # started

    def run(self) -> tuple[float, list[float], np.ndarray]:
        # Every batch submitted at once, round robin: each actor queues its calls, so it never
        # waits for the driver between batches (as ray.data keeps several tasks in flight per
        # actor; ActorPool.map would hand out one batch per idle actor).
        start = time.perf_counter()
        refs = [self.actors[i % 2].__call__.remote(r) for i, r in enumerate(self.refs)]
        outs = self.ray.get(refs)
        wall = time.perf_counter() - start
        return (
            wall,
            [float(o["_seconds"]) for o in outs],
            np.concatenate([o["logits"] for o in outs]),
        )

    def close(self) -> None:
        self.ray.shutdown()


class RayNoop(Ray):
    """The same actors' calls on the same batches, computing nothing: Ray's own cost per call."""

    name = "ray-noop"
    actor_class = staticmethod(_noop_predictor)
    checks_output = False


#: name -> class(graph, batches) with .name, .slots, .run() -> (wall, computes, out), .close()
ENGINES: dict[str, Any] = {
    "single": Single,
    "dask": Dask,
    "ray": Ray,
    "dask-noop": DaskNoop,
    "ray-noop": RayNoop,
}


# -- the run ----------------------------------------------------------------------------------


def _median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", type=int, default=64)
    parser.add_argument("--rows", type=int, default=ROWS, help=f"rows a batch (default {ROWS})")
    parser.add_argument("--width", type=int, default=1024, help="hidden width (default 1024)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--engines", default="single,dask,ray", help="comma-separated")
    parser.add_argument("--quick", action="store_true", help="2 rounds of 16 batches")
    parser.add_argument(
        "--max-busy",
        type=float,
        default=0.05,
        help="take a round again when other processes used more than this share of the CPUs "
        "during one of its runs (default 0.05; 1 keeps every round)",
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.batches, args.rounds = 16, 2
    names = [n.strip() for n in args.engines.split(",") if n.strip()]
    unknown = sorted(set(names) - set(ENGINES))
    if unknown:
        parser.error(f"unknown engines {unknown}; choose from {', '.join(ENGINES)}")

    graph = build_mlp(args.width)
    rng = np.random.default_rng(1)
    batches = [
        rng.standard_normal((args.rows, FEATURES)).astype(np.float32) for _ in range(args.batches)
    ]
    cpus = os.cpu_count() or 1
    print(
        f"opweave {ow.__version__}, Python {platform.python_version()}, {cpus} CPUs "
        f"(machine may be shared: compare ratios, not absolute times)"
    )
    print(
        f"MLP {FEATURES}-{args.width}-{args.width}-{CLASSES} float32, {args.batches} batches "
        f"of {args.rows} rows, {args.rounds} rounds (each engine started alone, warmed up, timed "
        "once, shut down), medians"
    )
    print("load average at start: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()), flush=True)
    Run = tuple[float, list[float], CpuUse | None]
    results: dict[str, list[Run]] = {n: [] for n in names}
    slots = {n: ENGINES[n].slots for n in names}
    reference: np.ndarray | None = None
    kept = discarded = 0
    while kept < args.rounds and kept + discarded < 3 * args.rounds:
        if args.max_busy < 1:
            wait_for_quiet(args.max_busy)
        round_: dict[str, Run] = {}
        for name in names:
            engine = ENGINES[name](graph, batches)
            try:
                engine.run()  # warm-up: sessions built, graph shipped, pools started
                settle()
                before = _snapshot()
                wall, computes, out = engine.run()
                use = cpu_use(before, _snapshot(own_first=True))
            finally:
                engine.close()
            round_[name] = (wall, computes, use)
            if getattr(engine, "checks_output", True):  # the no-op engines return zeros
                if reference is None:
                    reference = out
                elif not np.allclose(out, reference, rtol=1e-4, atol=1e-4):
                    print(f"warning: {name} computed other logits than {names[0]}")
        # Another user's burst during one engine's run biases the ratios: such a round is taken
        # again, whichever engine it hit (at most 3 x --rounds rounds in all).
        busy = max(
            (u.others / (w * cpus) for w, _, u in round_.values() if u is not None), default=0.0
        )
        keep = busy <= args.max_busy or (kept == 0 and kept + discarded + 1 >= 3 * args.rounds)
        if keep:
            kept += 1
            for name, run in round_.items():
                results[name].append(run)
        else:
            discarded += 1
        print(
            f"  round {kept + discarded}: {'kept' if keep else 'taken again'} "
            f"(other processes used {100 * busy:.0f}% of the CPUs)",
            file=sys.stderr,
            flush=True,
        )
    if discarded:
        print(
            f"{discarded} round(s) taken again: other processes used over "
            f"{100 * args.max_busy:.0f}% of the CPUs during one of its runs"
        )
    if kept < args.rounds:
        print(f"warning: only {kept} of {args.rounds} rounds had a quiet machine")

    rows = args.batches * args.rows
    print()
    print(
        f"{'engine':<9} {'slots':>5} {'rows/s':>10} {'vs single':>9} {'batch ms':>9} "
        f"{'overhead/task ms':>17} {'% of batch':>10}"
    )
    base = None
    summary = {}
    for name in names:
        walls = [w for w, _, _ in results[name]]
        wall = statistics.median(walls)
        per_batch = _median([statistics.median(c) for _, c, _ in results[name] if c])
        overheads = [
            (w * slots[name] - sum(c)) / args.batches for w, c, _ in results[name] if len(c) > 0
        ]
        overhead = statistics.median(overheads) if name != "single" else None
        throughput = rows / wall
        base = throughput if name == "single" else base
        ratio = f"{throughput / base:8.2f}x" if base else f"{'-':>9}"
        over = f"{overhead * 1e3:17.3f}" if overhead is not None else f"{'-':>17}"
        computes = getattr(ENGINES[name], "checks_output", True)  # the no-op engines do not
        pct = f"{100 * overhead / per_batch:9.1f}%" if overhead and computes else f"{'-':>10}"
        print(
            f"{name:<9} {slots[name]:>5} {throughput:>10.0f} {ratio} {per_batch * 1e3:>9.2f} "
            f"{over} {pct}"
        )
        summary[name] = (throughput, overhead, per_batch)
    print()
    print("batch ms: one batch's Session.run inside a worker (single: on 2 intra-op threads)")
    print("overhead/task: (wall x slots - sum of compute) / tasks; goal < 5% of a 20 ms batch")

    uses = {n: [u for _, _, u in results[n] if u is not None] for n in names}
    if all(uses.values()):
        print()
        print(f"where the CPU went, ms per batch (medians; {cpus} CPUs):")
        print(
            f"{'engine':<9} {'compute':>8} {'waited for a CPU':>17} {'engine, other threads':>22}"
            f" {'other processes':>16} {'floor ms/batch':>15}"
        )
        for name in names:
            per = 1e3 / args.batches
            compute = _median([u.compute * per for u in uses[name]])
            waiting = _median([u.waiting * per for u in uses[name]])
            engine_ = _median([u.engine * per for u in uses[name]])
            others = _median([u.others * per for u in uses[name]])
            print(
                f"{name:<9} {compute:>8.2f} {waiting:>17.2f} {engine_:>22.2f} {others:>16.2f}"
                f" {(compute + engine_) / cpus:>15.2f}"
            )
        print(
            "compute: CPU of opweave's pool threads; waited: their time ready to run without a CPU;"
        )
        print(
            "engine, other threads: every other thread of this process and of the processes it "
            "started;"
        )
        print(
            f"floor: (compute + engine) / {cpus} CPUs, the least time a batch can take on this "
            "machine"
        )
        busy = {
            n: _median([u.others / (w * cpus) for w, _, u in results[n] if u is not None])
            for n in names
        }
        if max(busy.values()) > 0.05:
            print(
                "warning: other processes kept the machine busy during the runs ("
                + ", ".join(f"{n} {100 * b:.0f}%" for n, b in busy.items())
                + " of its CPUs): these figures are not a quiet machine's"
            )
    print()
    for name in ("dask", "ray"):
        if name in summary and "single" in summary:
            throughput, overhead, _ = summary[name]
            print(
                f"{name}: throughput {throughput / summary['single'][0]:.2f}x single "
                f"(goal >= 0.90), overhead {overhead * 1e3:.2f} ms/task (goal < 1 ms)"
            )
    print("load average at end: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
