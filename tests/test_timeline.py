"""Timeline: a traced run becomes Chrome trace / Perfetto JSON that shows who ran what, when."""

from __future__ import annotations

import itertools
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import opweave as ow
import pytest
from opweave.timeline import Parallelism, Timeline, parallelism

FULL_TRACE = ow.RunOptions(trace_level=ow.RunOptions.FULL_TRACE)
PER_SESSION_2 = ow.ConfigProto(inter_op_parallelism_threads=2, use_per_session_threads=True)


def _traced(g: ow.Graph, fetches: Any, feed: Any = None, config: Any = None) -> ow.RunMetadata:
    meta = ow.RunMetadata()
    with ow.Session(graph=g, config=config) as sess:
        sess.run(fetches, feed, options=FULL_TRACE, run_metadata=meta)
    return meta


def _trace(meta: ow.RunMetadata, **kwargs: Any) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = json.loads(
        Timeline(meta.step_stats).generate_chrome_trace_format(**kwargs)
    )["traceEvents"]
    return events


def _ops(events: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {e["name"]: e for e in events if e.get("cat") == "Op"}


def _thread_names(events: list[dict[str, Any]]) -> dict[int, str]:
    return {e["tid"]: e["args"]["name"] for e in events if e.get("name") == "thread_name"}


def _mlp() -> tuple[ow.Graph, ow.Tensor, dict[Any, np.ndarray]]:
    m = ow.models.mlp_towers(towers=2, layers=2, batch=16, width=32)
    return m.graph, m.fetches, m.feed_dict


def test_every_executed_op_is_one_complete_slice_with_its_args() -> None:
    g, y, feed = _mlp()
    meta = _traced(g, y, feed)
    events = _trace(meta)
    ops = _ops(events)
    assert set(ops) == {s.node_name for s in meta.step_stats.node_stats}
    for name, e in ops.items():
        assert e["ph"] == "X"
        assert e["ts"] >= 0
        assert e["dur"] >= 0
        written = g.get_operation_by_name(name).type
        if e["args"]["op"] != written:
            # The optimizer fused ops into this node: the slice says so and names them, itself
            # first (a dense layer's MatMul + bias + Relu is one _FusedMatMul).
            assert e["args"]["op"] in ("_FusedMatMul", "_FusedElementwise")
            assert e["args"]["original_nodes"][0] == name
            assert len(e["args"]["original_nodes"]) > 1
        assert e["args"]["device"] == "/device:CPU:0"
    # Each slice is placed on a track that has a name.
    assert {e["tid"] for e in ops.values()} <= set(_thread_names(events))


def test_op_args_give_input_shapes_output_shape_and_flops() -> None:
    with ow.Graph().as_default() as g:
        a = ow.placeholder(ow.float64, shape=(7, 3), name="a")
        b = ow.placeholder(ow.float64, shape=(5, 7), name="b")
        mm = ow.matmul(a, b, transpose_a=True, transpose_b=True, name="mm")  # (3, 5), k = 7
        biased = ow.add(mm, ow.constant(np.ones(5)), name="biased")
        flat = ow.reshape(biased, (15,), name="flat")
        total = ow.reduce_sum(flat, name="total")
    feed = {a: np.ones((7, 3)), b: np.ones((5, 7))}
    # With the optimizer's fusion on, mm and biased run as one node: its slice counts both.
    fused = _ops(_trace(_traced(g, total, feed)))
    assert "mm" not in fused
    assert fused["biased"]["args"]["op"] == "_FusedMatMul"
    assert fused["biased"]["args"]["flops"] == 2 * 3 * 5 * 7 + 15
    assert fused["biased"]["args"]["original_nodes"] == ["biased", "mm"]
    # The nodes as written.
    unfused = ow.ConfigProto()
    unfused.graph_options.rewrite_options.remapping = ow.RewriterConfig.OFF
    meta = _traced(g, total, feed, config=unfused)
    ops = _ops(_trace(meta))
    assert ops["mm"]["args"]["input_shapes"] == [[7, 3], [5, 7]]
    assert ops["mm"]["args"]["output_shape"] == [3, 5]
    assert ops["mm"]["args"]["output_dtype"] == "float64"
    assert ops["mm"]["args"]["flops"] == 2 * 3 * 5 * 7
    assert ops["mm"]["args"]["inputs"] == ["a:0", "b:0"]
    assert ops["biased"]["args"]["flops"] == 15
    assert ops["total"]["args"]["flops"] == 15
    assert ops["total"]["args"]["output_shape"] == []
    assert "flops" not in ops["flat"]["args"]  # a reshape moves no numbers
    stats = {s.node_name: s for s in meta.step_stats.node_stats}
    assert stats["mm"].flops == 210
    assert stats["flat"].flops is None
    assert stats["biased"].timeline_label == "biased = Add(mm:0, Const:0)"


def test_tracks_are_the_real_threads_named_by_their_role() -> None:
    g, y, feed = _mlp()
    meta = ow.RunMetadata()
    with ow.Session(graph=g, config=PER_SESSION_2) as sess:
        sess.run(y, feed, options=FULL_TRACE, run_metadata=meta)
        live = {int(t) for t in os.listdir("/proc/self/task")}  # the session's pool is alive
    events = _trace(meta)
    names = _thread_names(events)
    assert set(names) <= live  # kernel thread ids of this process
    assert set(names.values()) <= (
        {"caller"} | {f"inter-op {i}" for i in range(2)} | {f"intra-op {i}" for i in range(1, 64)}
    )
    # Ops ran on the session's two inter-op workers, never on the waiting caller.
    op_tracks = {names[e["tid"]] for e in _ops(events).values()}
    assert op_tracks <= {"inter-op 0", "inter-op 1"}
    assert meta.step_stats.thread_names[threading.get_native_id()] == "caller"
    sort = {e["tid"]: e["args"]["sort_index"] for e in events if e["name"] == "thread_sort_index"}
    order = sorted(names, key=lambda tid: sort[tid])
    roles = [names[t].split(" ")[0] for t in order]
    assert roles == sorted(roles, key=["caller", "inter-op", "intra-op"].index)


def test_caller_thread_mode_draws_every_op_on_the_caller_track() -> None:
    g, y, feed = _mlp()
    meta = _traced(g, y, feed, config=ow.ConfigProto(inter_op_parallelism_threads=-1))
    events = _trace(meta, show_chunks=False)
    names = _thread_names(events)
    assert {names[e["tid"]] for e in _ops(events).values()} == {"caller"}
    assert {e["tid"] for e in _ops(events).values()} == {threading.get_native_id()}


def test_flow_arrows_join_each_producer_to_each_consumer() -> None:
    with ow.Graph().as_default() as g:
        x = ow.placeholder(ow.float32, shape=(4,), name="x")
        a = ow.exp(x, name="a")
        b = ow.tanh(a, name="b")
        with ow.control_dependencies([b]):
            c = ow.add(a, a, name="c")
    meta = _traced(g, c, {x: np.zeros(4, np.float32)}, config=PER_SESSION_2)
    events = _trace(meta)
    ops = _ops(events)
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    ends = {e["id"]: e for e in events if e["ph"] == "f"}
    assert set(starts) == set(ends)
    arrows = sorted(
        (starts[i]["name"], starts[i]["cat"], ends[i]["tid"], ends[i]["ts"]) for i in starts
    )
    # The fed placeholder ran nothing upstream: no arrow from it.
    assert [(name, cat) for name, cat, _, _ in arrows] == [
        ("^b", "control"),
        ("a:0", "dataflow"),
        ("a:0", "dataflow"),
        ("a:0", "dataflow"),
    ]
    for i, s in starts.items():
        producer = ops[s["name"].lstrip("^").split(":")[0]]
        consumer = next(
            e
            for e in ops.values()
            if s["name"] in e["args"]["inputs"]
            and e["tid"] == ends[i]["tid"]
            and e["ts"] == ends[i]["ts"]
        )
        assert s["tid"] == producer["tid"]
        assert producer["ts"] <= s["ts"] <= producer["ts"] + producer["dur"]
        assert ends[i]["bp"] == "e"
        assert consumer["ts"] >= producer["ts"] + producer["dur"] - 0.002


def test_intra_op_chunks_tile_the_loop_on_the_op_thread_and_intra_op_workers() -> None:
    with ow.Graph().as_default() as g:
        x = ow.placeholder(ow.float32, shape=(1 << 20,), name="x")
        y = ow.tanh(x, name="y")
    feed = {x: np.linspace(-1, 1, 1 << 20, dtype=np.float32)}
    seen_worker = False
    with ow.threads(intra=2):
        # Lazy splitting gives the worker a piece only when it is idle at the right moment.
        for _ in range(50):
            meta = _traced(g, y, feed)
            (node,) = [s for s in meta.step_stats.node_stats if s.node_name == "y"]
            chunks = sorted(node.intra_op_chunks, key=lambda c: c.begin)
            assert chunks[0].begin == 0
            assert chunks[-1].end == 1 << 20
            assert all(p.end == q.begin for p, q in itertools.pairwise(chunks))
            names = meta.step_stats.thread_names
            for c in chunks:
                assert c.thread_id == node.thread_id or names[c.thread_id] == "intra-op 1"
                assert node.all_start_nanos <= c.start_nanos <= c.end_nanos <= node.all_end_nanos
            if any(names.get(c.thread_id) == "intra-op 1" for c in chunks):
                seen_worker = True
                break
    assert seen_worker
    events = _trace(meta)
    drawn = [e for e in events if e.get("cat") == "intra-op chunk"]
    assert len(drawn) == len(chunks)
    assert {e["args"]["node"] for e in drawn} == {"y"}
    assert "intra-op 1" in {_thread_names(events)[e["tid"]] for e in drawn}


def test_independent_branches_overlap_on_different_tracks() -> None:
    def nap(v: np.ndarray) -> np.ndarray:
        time.sleep(0.1)
        return v

    with ow.Graph().as_default() as g:
        c = ow.constant(1.0)
        left = ow.py_function(nap, [c], ow.float32, name="left")
        right = ow.py_function(nap, [c], ow.float32, name="right")
    ops = _ops(_trace(_traced(g, [left, right], config=PER_SESSION_2)))
    lo, hi = ops["left"], ops["right"]
    assert lo["tid"] != hi["tid"]
    assert lo["ts"] < hi["ts"] + hi["dur"]
    assert hi["ts"] < lo["ts"] + lo["dur"]


def test_save_writes_the_trace_to_a_file(tmp_path: Path) -> None:
    g, y, feed = _mlp()
    tl = Timeline(_traced(g, y, feed).step_stats)
    path = tmp_path / "timeline.json"
    tl.save(path)
    assert json.loads(path.read_text("utf-8")) == json.loads(tl.generate_chrome_trace_format())


def test_switches_leave_out_arrows_and_chunks() -> None:
    g, y, feed = _mlp()
    meta = _traced(g, y, feed)
    events = _trace(meta, show_dataflow=False, show_chunks=False)
    assert not [e for e in events if e["ph"] in ("s", "f")]
    assert not [e for e in events if e.get("cat") == "intra-op chunk"]
    assert len(_ops(events)) == len(meta.step_stats.node_stats)


def test_an_untraced_run_gives_an_empty_trace() -> None:
    events = _trace(ow.RunMetadata())
    assert [e["name"] for e in events] == ["process_name"]


def test_show_memory_is_refused_and_step_stats_are_required() -> None:
    with pytest.raises(ValueError, match="does not record allocations"):
        Timeline(ow.RunMetadata().step_stats).generate_chrome_trace_format(show_memory=True)
    with pytest.raises(TypeError, match=r"run_metadata\.step_stats"):
        Timeline(ow.RunMetadata())  # type: ignore[arg-type]


def test_parallelism_counts_ops_at_once_and_threads_per_op() -> None:
    def nap(v: np.ndarray) -> np.ndarray:
        time.sleep(0.1)
        return v

    with ow.Graph().as_default() as g:
        c = ow.constant(1.0)
        both = [ow.py_function(nap, [c], ow.float32, name=n) for n in ("left", "right")]
    seen = parallelism(_traced(g, both, config=PER_SESSION_2).step_stats)
    assert seen.max_ops_at_once == 2
    assert seen.op_threads == 2
    assert seen.max_threads_per_op == 1  # a py_function has no parallel loop
    caller = parallelism(
        _traced(g, both, config=ow.ConfigProto(inter_op_parallelism_threads=-1)).step_stats
    )
    assert (caller.max_ops_at_once, caller.op_threads) == (1, 1)


def test_parallelism_sees_an_op_split_over_two_threads() -> None:
    with ow.Graph().as_default() as g:
        x = ow.placeholder(ow.float32, shape=(1 << 20,), name="x")
        y = ow.tanh(x, name="y")
    feed = {x: np.zeros(1 << 20, np.float32)}
    with ow.threads(intra=2):
        # As above: retry until the idle worker took a piece.
        split = max(
            parallelism(_traced(g, y, feed).step_stats).max_threads_per_op for _ in range(50)
        )
    assert split == 2
    assert parallelism(ow.RunMetadata().step_stats) == Parallelism(0, 0, 0)


def test_an_op_shorter_than_the_clock_tick_still_counts_as_running() -> None:
    from opweave.config import DeviceStepStats, NodeExecStats, StepStats

    def stats(*spans: tuple[int, int]) -> StepStats:
        nodes = [
            NodeExecStats(node_name=f"n{i}", all_start_nanos=a, all_end_nanos=b, thread_id=1)
            for i, (a, b) in enumerate(spans)
        ]
        return StepStats(dev_stats=[DeviceStepStats(node_stats=nodes)])

    assert parallelism(stats((100, 100))) == Parallelism(1, 1, 1)
    # Instant ops one after another on one thread, at the same tick, did not run at once.
    assert parallelism(stats((100, 100), (100, 100), (100, 150))).max_ops_at_once == 1
    assert parallelism(stats((100, 200), (150, 250))).max_ops_at_once == 2
