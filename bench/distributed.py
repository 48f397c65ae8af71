"""Distributed batch inference: one process against a Dask cluster and a Ray actor pool.

The same MLP (784 -> WIDTH -> WIDTH -> 10, float32, relu) over 64 batches of 256 rows:

- single: one process, one Session with intra_op_parallelism_threads=2, the batches one after
  the other (the two cores inside each matmul);
- dask: ``LocalCluster(n_workers=2, threads_per_worker=1)``, pools sized by
  ``OpweaveWorkerPlugin`` (1 thread each), ``opweave.integrations.dask.map_blocks`` over a
  persisted Dask array (the batches already in the workers' memory, as after a read);
- ray: 2 actors of ``GraphPredictor`` with ``num_cpus=1`` (pools sized to it), the batches
  already in the object store and submitted round robin at once (each actor queues its calls).

For each engine: throughput (rows/s) and its ratio to single, the compute time of one batch as
measured inside the workers, and the engine's overhead per task:
``(wall time x task slots - sum of the tasks' compute times) / tasks``: scheduling, moving
batches and results, (de)serialization, waiting. Goals: overhead per task under 5% of a 20 ms
batch (1 ms), cluster throughput within 10% of the single process.

Rounds are interleaved (single, dask, ray, single, ...) with every engine started once; the
table shows medians over rounds. WIDTH (default 1024) is chosen so that one batch takes about
20 ms on one core; the measured figure is printed.

    python bench/distributed.py                 # 5 rounds of 64 batches
    python bench/distributed.py --quick         # 2 rounds of 16 batches (a smoke run)
    python bench/distributed.py --engines single,dask --rounds 9
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
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

    def __init__(self, graph: ow.Graph, batches: list[np.ndarray]) -> None:
        import dask.array as da
        from distributed import Client, LocalCluster
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
        # The batches live in the workers (spread over both), as after a read.
        futures = self.client.scatter(batches)
        x = da.concatenate(
            [
                da.from_delayed(f, shape=b.shape, dtype=b.dtype)
                for f, b in zip(futures, batches, strict=True)
            ]
        )
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
            if str(task["key"]).startswith("('opweave-")
            for ss in task["startstops"]
            if ss["action"] == "compute"
        ]
        return wall, computes, result

    def close(self) -> None:
        self.client.close()
        self.cluster.close()


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


class Ray:
    """2 GraphPredictor actors of one CPU, batches in the object store, submitted at once."""

    name = "ray"
    slots = 2

    def __init__(self, graph: ow.Graph, batches: list[np.ndarray]) -> None:
        import ray

        self.ray = ray
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
        actor = ray.remote(num_cpus=1)(_timed_predictor())
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


ENGINES: dict[str, Callable[[ow.Graph, list[np.ndarray]], Any]] = {
    "single": Single,
    "dask": Dask,
    "ray": Ray,
}


# -- the run ----------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", type=int, default=64)
    parser.add_argument("--width", type=int, default=1024, help="hidden width (default 1024)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--engines", default="single,dask,ray", help="comma-separated")
    parser.add_argument("--quick", action="store_true", help="2 rounds of 16 batches")
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
        rng.standard_normal((ROWS, FEATURES)).astype(np.float32) for _ in range(args.batches)
    ]
    print(
        f"opweave {ow.__version__}, Python {platform.python_version()}, {os.cpu_count()} CPUs "
        f"(machine may be shared: compare ratios, not absolute times)"
    )
    print(
        f"MLP {FEATURES}-{args.width}-{args.width}-{CLASSES} float32, {args.batches} batches "
        f"of {ROWS} rows, {args.rounds} interleaved rounds, medians"
    )
    engines = [ENGINES[n](graph, batches) for n in names]
    results: dict[str, list[tuple[float, list[float]]]] = {n: [] for n in names}
    reference: np.ndarray | None = None
    try:
        for e in engines:  # warm-up: sessions built, graph shipped, pools started
            e.run()
        for _ in range(args.rounds):
            for e in engines:
                time.sleep(SETTLE_S)  # the others' idle workers park first
                wall, computes, out = e.run()
                results[e.name].append((wall, computes))
                if reference is None:
                    reference = out
                elif not np.allclose(out, reference, rtol=1e-4, atol=1e-4):
                    print(f"warning: {e.name} computed other logits than {names[0]}")
    finally:
        for e in engines:
            e.close()

    rows = args.batches * ROWS
    print()
    print(
        f"{'engine':<8} {'slots':>5} {'rows/s':>10} {'vs single':>9} {'batch ms':>9} "
        f"{'overhead/task ms':>17} {'% of batch':>10}"
    )
    base = None
    summary = {}
    for e in engines:
        walls = [w for w, _ in results[e.name]]
        wall = statistics.median(walls)
        per_batch = statistics.median(statistics.median(c) for _, c in results[e.name] if c)
        overheads = [
            (w * e.slots - sum(c)) / args.batches for w, c in results[e.name] if len(c) > 0
        ]
        overhead = statistics.median(overheads) if e.name != "single" else None
        throughput = rows / wall
        base = throughput if e.name == "single" else base
        ratio = f"{throughput / base:8.2f}x" if base else f"{'-':>9}"
        over = f"{overhead * 1e3:17.3f}" if overhead is not None else f"{'-':>17}"
        pct = f"{100 * overhead / per_batch:9.1f}%" if overhead is not None else f"{'-':>10}"
        print(
            f"{e.name:<8} {e.slots:>5} {throughput:>10.0f} {ratio} {per_batch * 1e3:>9.2f} "
            f"{over} {pct}"
        )
        summary[e.name] = (throughput, overhead, per_batch)
    print()
    print("batch ms: one batch's Session.run inside a worker (single: on 2 intra-op threads)")
    print("overhead/task: (wall x slots - sum of compute) / tasks; goal < 5% of a 20 ms batch")
    for name in ("dask", "ray"):
        if name in summary and "single" in summary:
            throughput, overhead, _ = summary[name]
            print(
                f"{name}: throughput {throughput / summary['single'][0]:.2f}x single "
                f"(goal >= 0.90), overhead {overhead * 1e3:.2f} ms/task (goal < 1 ms)"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
