"""Timelines of traced runs, as Chrome trace / Perfetto JSON (TensorFlow's ``timeline`` module).

Trace a run with ``RunOptions(trace_level=RunOptions.FULL_TRACE)`` and a :class:`RunMetadata`,
then turn its step stats into a file that ``chrome://tracing`` or https://ui.perfetto.dev opens:

>>> import json
>>> import numpy as np
>>> import opweave as ow
>>> from opweave.timeline import Timeline
>>> g = ow.Graph()
>>> with g.as_default():
...     x = ow.placeholder(ow.float32, shape=(64, 64), name="x")
...     y = ow.reduce_sum(ow.matmul(x, x), name="total")
>>> meta = ow.RunMetadata()
>>> with ow.Session(graph=g) as sess:
...     _ = sess.run(y, {x: np.ones((64, 64), np.float32)},
...                  options=ow.RunOptions(trace_level=ow.RunOptions.FULL_TRACE),
...                  run_metadata=meta)
>>> trace = json.loads(Timeline(meta.step_stats).generate_chrome_trace_format())
>>> sorted(e["name"] for e in trace["traceEvents"] if e.get("cat") == "Op")
['Const', 'MatMul', 'total']
>>> [e["args"]["flops"] for e in trace["traceEvents"] if e.get("name") == "MatMul"]
[524288]

What the trace shows:

- one track per real thread that took part: ``caller`` (the thread that called
  ``Session.run``), ``inter-op <i>`` (workers of the session's inter-op pool) and
  ``intra-op <i>`` (workers of the intra-op pool, numbered from 1: the thread that starts an op's
  parallel loop is its first thread);
- one slice per op (category ``Op``) on the thread that ran it, with the op type, device, input
  names and shapes, output shapes and dtypes, FLOPs where known, and how long the op waited
  between becoming ready and starting; a node the graph optimizer made or rewrote lists the
  nodes as written it stands for (``original_nodes``), and folded ones do not appear;
- the pieces of each op's parallel loops (category ``intra-op chunk``) on the threads that ran
  them, so an op split over the intra-op pool shows on several tracks at once;
- flow arrows (category ``dataflow``, ``control`` for control dependencies) from each producer
  to each consumer that ran in the same step.

Times are microseconds from the first event of the run.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import Any

from ._version import __version__
from .config import NodeExecStats, StepStats

__all__ = ["Parallelism", "Timeline", "parallelism"]

_PID = 1
_ROLE_ORDER = (("caller", 0), ("inter-op ", 1), ("intra-op ", 1000))


def _thread_sort_index(name: str) -> int:
    """Caller first, then inter-op workers, then intra-op workers, then anything else."""
    for prefix, base in _ROLE_ORDER:
        if name == prefix:
            return base
        if prefix.endswith(" ") and name.startswith(prefix):
            number = name[len(prefix) :]
            return base + (int(number) if number.isdigit() else 999)
    return 2000


def _producer(input_name: str) -> tuple[str, bool]:
    """``"a:0"`` -> ("a", False); ``"^a"`` -> ("a", True) for a control input."""
    if input_name.startswith("^"):
        return input_name[1:], True
    return re.sub(r":\d+$", "", input_name), False


class Timeline:
    """A Chrome trace (Perfetto) view of one traced run.

    Parameters
    ----------
    step_stats : StepStats
        ``run_metadata.step_stats`` of a run traced with
        ``RunOptions(trace_level=RunOptions.FULL_TRACE)``.
    graph : Graph, optional
        Accepted for TensorFlow compatibility and unused: opweave's step stats already name each
        node's inputs.

    Examples
    --------
    >>> import opweave as ow
    >>> tl = Timeline(ow.RunMetadata().step_stats)
    >>> tl.generate_chrome_trace_format()[:16]
    '{"traceEvents": '
    """

    def __init__(self, step_stats: StepStats, graph: Any = None) -> None:
        if not isinstance(step_stats, StepStats):
            raise TypeError(
                "Timeline expects run_metadata.step_stats (an opweave.config.StepStats), got "
                f"{type(step_stats).__name__}"
            )
        self._step_stats = step_stats

    def generate_chrome_trace_format(
        self, show_dataflow: bool = True, show_memory: bool = False, show_chunks: bool = True
    ) -> str:
        """The trace as a JSON string in the Chrome trace event format.

        Parameters
        ----------
        show_dataflow : bool
            Draw producer -> consumer arrows.
        show_memory : bool
            Must be False: opweave does not record allocations (TensorFlow's memory tracks).
        show_chunks : bool
            Draw the pieces of each op's parallel loops on the threads that ran them.

        Returns
        -------
        str
            ``{"traceEvents": [...], ...}``; load it in ``chrome://tracing`` or Perfetto.
        """
        if show_memory:
            raise ValueError(
                "show_memory=True is not supported: opweave does not record allocations"
            )
        return json.dumps(self._trace(show_dataflow, show_chunks))

    def save(
        self, path: str | os.PathLike[str], show_dataflow: bool = True, show_chunks: bool = True
    ) -> None:
        """Write :meth:`generate_chrome_trace_format` to ``path`` (UTF-8 JSON)."""
        text = self.generate_chrome_trace_format(
            show_dataflow=show_dataflow, show_chunks=show_chunks
        )
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)

    # -- building the events ----------------------------------------------------------------------
    def _trace(self, show_dataflow: bool, show_chunks: bool) -> dict[str, Any]:
        nodes = sorted(self._step_stats.node_stats, key=lambda n: (n.all_start_nanos, n.node_name))
        times = [n.scheduled_nanos or n.all_start_nanos for n in nodes]
        times += [c.start_nanos for n in nodes for c in n.intra_op_chunks]
        origin = min(times, default=0)

        def us(nanos: int) -> float:
            return (nanos - origin) / 1000.0

        events: list[dict[str, Any]] = []
        names = dict(self._step_stats.thread_names)
        for n in nodes:
            names.setdefault(n.thread_id, n.thread_name or f"thread {n.thread_id}")
        tids = {n.thread_id for n in nodes}
        if show_chunks:
            tids |= {c.thread_id for n in nodes for c in n.intra_op_chunks}

        events.append(
            {"ph": "M", "name": "process_name", "pid": _PID, "args": {"name": "opweave run"}}
        )
        for tid in sorted(tids):
            name = names.get(tid, f"thread {tid}")
            events.append(
                {"ph": "M", "name": "thread_name", "pid": _PID, "tid": tid, "args": {"name": name}}
            )
            events.append(
                {
                    "ph": "M",
                    "name": "thread_sort_index",
                    "pid": _PID,
                    "tid": tid,
                    "args": {"sort_index": _thread_sort_index(name)},
                }
            )

        for n in nodes:
            events.append(self._op_event(n, us))
            if show_chunks:
                for c in n.intra_op_chunks:
                    events.append(
                        {
                            "ph": "X",
                            "cat": "intra-op chunk",
                            "name": f"{n.node_name} [{c.begin}, {c.end})",
                            "pid": _PID,
                            "tid": c.thread_id,
                            "ts": us(c.start_nanos),
                            "dur": (c.end_nanos - c.start_nanos) / 1000.0,
                            "args": {
                                "node": n.node_name,
                                "op": n.op,
                                "begin": c.begin,
                                "end": c.end,
                            },
                        }
                    )
        if show_dataflow:
            events.extend(self._flow_events(nodes, us))
        return {
            "traceEvents": events,
            "displayTimeUnit": "ms",
            "otherData": {"producer": f"opweave {__version__}", "origin_unix_nanos": origin},
        }

    @staticmethod
    def _op_event(n: NodeExecStats, us: Any) -> dict[str, Any]:
        args: dict[str, Any] = {
            "op": n.op,
            "device": n.device,
            "inputs": list(n.inputs),
            "input_shapes": [list(s) for s in n.input_shapes],
            "output_shape": list(n.output_shapes[0]) if n.output_shapes else None,
            "output_dtype": n.output_dtypes[0] if n.output_dtypes else None,
            "wait_us": (n.all_start_nanos - n.scheduled_nanos) / 1000.0,
        }
        if len(n.output_shapes) > 1:
            args["output_shapes"] = [list(s) for s in n.output_shapes]
            args["output_dtypes"] = list(n.output_dtypes)
        if n.flops is not None:
            args["flops"] = n.flops
        if n.original_nodes:
            # The graph optimizer made or rewrote this node: the nodes as written it stands for.
            args["original_nodes"] = list(n.original_nodes)
        return {
            "ph": "X",
            "cat": "Op",
            "name": n.node_name,
            "pid": _PID,
            "tid": n.thread_id,
            "ts": us(n.all_start_nanos),
            "dur": (n.all_end_nanos - n.all_start_nanos) / 1000.0,
            "args": args,
        }

    @staticmethod
    def _flow_events(nodes: list[NodeExecStats], us: Any) -> list[dict[str, Any]]:
        ran = {n.node_name: n for n in nodes}
        events: list[dict[str, Any]] = []
        flow_id = 0
        for consumer in nodes:
            for input_name in consumer.inputs:
                producer_name, control = _producer(input_name)
                producer = ran.get(producer_name)
                if producer is None:  # fed, or pruned: nothing ran upstream in this step
                    continue
                flow_id += 1
                # The start binds to the slice that encloses it, so it sits just inside the
                # producer's end; the finish binds to the consumer's slice ("bp": "e").
                start = max(producer.all_start_nanos, producer.all_end_nanos - 1)
                common = {
                    "cat": "control" if control else "dataflow",
                    "name": input_name,
                    "id": flow_id,
                    "pid": _PID,
                }
                events.append({**common, "ph": "s", "tid": producer.thread_id, "ts": us(start)})
                events.append(
                    {
                        **common,
                        "ph": "f",
                        "bp": "e",
                        "tid": consumer.thread_id,
                        "ts": us(consumer.all_start_nanos),
                    }
                )
        return events


@dataclass(frozen=True)
class Parallelism:
    """How parallel one traced run really was (see :func:`parallelism`).

    Attributes
    ----------
    max_ops_at_once : int
        The most ops whose kernels ran at the same moment (inter-op parallelism seen).
    op_threads : int
        How many distinct threads ran ops.
    max_threads_per_op : int
        The most distinct threads that ran pieces of one op's parallel loops, the op's own
        thread included (intra-op parallelism seen); 1 when no op was split.
    """

    max_ops_at_once: int
    op_threads: int
    max_threads_per_op: int


def parallelism(step_stats: StepStats) -> Parallelism:
    """What a traced run's threads did at once, read off its step stats.

    Examples
    --------
    >>> import opweave as ow
    >>> g = ow.Graph()
    >>> with g.as_default():
    ...     y = ow.reduce_sum(ow.constant([1.0, 2.0]) * 2.0)
    >>> meta = ow.RunMetadata()
    >>> with ow.Session(graph=g, config=ow.ConfigProto(inter_op_parallelism_threads=-1)) as s:
    ...     _ = s.run(y, options=ow.RunOptions(trace_level=3), run_metadata=meta)
    >>> parallelism(meta.step_stats)
    Parallelism(max_ops_at_once=1, op_threads=1, max_threads_per_op=1)
    """
    nodes = step_stats.node_stats
    # Sweep the kernels' intervals: +1 at each start, -1 at each end (ends first on ties, so
    # an op that starts as another ends does not count as overlapping it).
    edges = sorted([(n.all_start_nanos, 1) for n in nodes] + [(n.all_end_nanos, -1) for n in nodes])
    running = most = 0
    for _, step in edges:
        running += step
        most = max(most, running)
    # Ops shorter than the clock's tick (a folded constant) have empty intervals and overlap
    # nothing, but a run that ran any op ran at least one at once.
    if nodes:
        most = max(most, 1)
    per_op = [len({n.thread_id} | {c.thread_id for c in n.intra_op_chunks}) for n in nodes]
    return Parallelism(
        max_ops_at_once=most,
        op_threads=len({n.thread_id for n in nodes}),
        max_threads_per_op=max(per_op, default=0),
    )
