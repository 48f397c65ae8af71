"""The graph optimizer: what each pass does and must not do, TensorFlow's switches, the report,
traces and partition graphs, and random graphs giving the same results with it on and off."""

from __future__ import annotations

import itertools
import json
import os
import threading
from typing import Any

import numpy as np
import opweave as ow
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opweave import _optimizer
from opweave import _opweave_core as _core
from opweave.ops.array_ops import _CAST
from opweave.timeline import Timeline
from reference import OPTIMIZABLE, InjectedFailure, Spec, build, check, evaluate, needed
from test_properties import graph_specs

SETTINGS = settings(
    max_examples=int(os.environ.get("OPWEAVE_HYPOTHESIS_EXAMPLES", "30")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

TRACE = ow.RunOptions(trace_level=ow.RunOptions.FULL_TRACE, output_partition_graphs=True)


def config(**rewrite: Any) -> ow.ConfigProto:
    """A config with every pass on, small graphs included, and these RewriterConfig fields."""
    cfg = ow.ConfigProto()
    cfg.graph_options.rewrite_options.min_graph_nodes = -1
    for k, v in rewrite.items():
        setattr(cfg.graph_options.rewrite_options, k, v)
    return cfg


def l0() -> ow.ConfigProto:
    cfg = ow.ConfigProto()
    cfg.graph_options.optimizer_options.opt_level = ow.OptimizerOptions.L0
    return cfg


def traced(sess: ow.Session, fetches: Any, feed_dict: Any = None) -> tuple[Any, ow.RunMetadata]:
    meta = ow.RunMetadata()
    out = sess.run(fetches, feed_dict, options=TRACE, run_metadata=meta)
    return out, meta


def ran(meta: ow.RunMetadata) -> dict[str, Any]:
    """Node name -> NodeExecStats of the nodes a traced run executed."""
    return {n.node_name: n for n in meta.step_stats.node_stats}


def graph_nodes(meta: ow.RunMetadata) -> dict[str, dict[str, Any]]:
    (partition,) = meta.partition_graphs
    return {n["name"]: n for n in partition.node}


def report(sess: ow.Session) -> _optimizer.OptimizerReport:
    r = sess.optimizer_report()
    assert r is not None
    return r


# --- switches -------------------------------------------------------------------------------

ALL_PASSES = [
    "pruning",
    "common_subexpression",
    "constant_folding",
    "arithmetic",
    "remapping",
    "elementwise_fusion",
    "identity_removal",
]


def test_the_default_config_runs_every_pass() -> None:
    options = _optimizer.core_options(ow.ConfigProto())
    assert options.passes == ALL_PASSES
    assert options.arithmetic_with_constants
    assert options.min_graph_nodes == 4  # TensorFlow's default
    assert options.max_constant_bytes == 10 * 1024 * 1024
    assert options.max_iterations == 2


@pytest.mark.parametrize(
    ("field", "gone"),
    [
        ("constant_folding", "constant_folding"),
        ("common_subgraph_elimination", "common_subexpression"),
        ("arithmetic_optimization", "arithmetic"),
        ("dependency_optimization", "identity_removal"),
        ("remapping", ("remapping", "elementwise_fusion")),
    ],
)
def test_each_toggle_switches_its_pass_off(field: str, gone: str | tuple[str, ...]) -> None:
    options = _optimizer.core_options(config(**{field: ow.RewriterConfig.OFF}))
    gone_passes = (gone,) if isinstance(gone, str) else gone
    assert options.passes == [p for p in ALL_PASSES if p not in gone_passes]
    # x * 1 and (x + c1) + c2 belong to constant folding, as in TensorFlow.
    assert options.arithmetic_with_constants == (field != "constant_folding")


def test_l0_and_everything_off_run_the_graph_as_written() -> None:
    everything_off = config(
        constant_folding=ow.RewriterConfig.OFF,
        common_subgraph_elimination=ow.RewriterConfig.OFF,
        arithmetic_optimization=ow.RewriterConfig.OFF,
        dependency_optimization=ow.RewriterConfig.OFF,
        remapping=ow.RewriterConfig.OFF,
        disable_model_pruning=True,
    )
    for cfg in (l0(), everything_off):
        assert _optimizer.core_options(cfg).passes == []
        with ow.Graph().as_default() as g:
            x = ow.placeholder(ow.float32, shape=(2,), name="x")
            y = ow.identity(x * 1.0 + ow.constant(2.0) * 3.0, name="y")
        with ow.Session(graph=g, config=cfg) as sess:
            value, meta = traced(sess, y, {x: [1.0, 2.0]})
            np.testing.assert_array_equal(value, [7.0, 8.0])
            assert set(ran(meta)) == {"Const", "mul", "Const_1", "Const_2", "mul_1", "add", "y"}
            r = report(sess)
            assert r.passes == []
            assert r.skipped
            assert r.nodes_before == r.nodes_after == 7


def test_explicit_switches_turn_passes_on_under_l0() -> None:
    cfg = l0()
    cfg.graph_options.optimizer_options.do_constant_folding = True
    assert _optimizer.core_options(cfg).passes == ["constant_folding"]
    cfg.graph_options.rewrite_options.arithmetic_optimization = ow.RewriterConfig.ON
    assert _optimizer.core_options(cfg).passes == ["constant_folding", "arithmetic"]
    # An explicit OFF wins over the classic switch.
    cfg.graph_options.rewrite_options.constant_folding = ow.RewriterConfig.OFF
    assert _optimizer.core_options(cfg).passes == ["arithmetic"]


def test_disable_meta_optimizer_keeps_the_classic_l1_passes() -> None:
    cfg = config(disable_meta_optimizer=True)
    options = _optimizer.core_options(cfg)
    # TensorFlow's graph optimizer (L1) folds constants and merges subexpressions without Grappler.
    assert options.passes == ["common_subexpression", "constant_folding"]
    assert not options.arithmetic_with_constants


def test_the_optimizers_list_runs_the_named_passes_in_its_order() -> None:
    cfg = config(optimizers=["dependency", "layout", "remap", "constfold"])
    options = _optimizer.core_options(cfg)
    # "layout" is TF-only.
    assert options.passes == [
        "identity_removal",
        "remapping",
        "elementwise_fusion",
        "constant_folding",
    ]


def test_iterations_cap_and_size_cap_and_failure_switch() -> None:
    cfg = config(meta_optimizer_iterations=ow.RewriterConfig.ONE, fail_on_optimizer_errors=True)
    cfg.graph_options.optimizer_options.max_folded_constant_in_bytes = 4096
    options = _optimizer.core_options(cfg)
    assert options.max_iterations == 1
    assert options.max_constant_bytes == 4096
    assert options.fail_on_errors


def test_switches_opweave_lacks_are_accepted_and_ignored() -> None:
    cfg = config(
        layout_optimizer=ow.RewriterConfig.ON,
        shape_optimization=ow.RewriterConfig.AGGRESSIVE,
        memory_optimization=ow.RewriterConfig.HEURISTICS,
        auto_mixed_precision=ow.RewriterConfig.ON,
        loop_optimization=ow.RewriterConfig.OFF,
    )
    cfg.graph_options.optimizer_options.global_jit_level = ow.OptimizerOptions.ON_1
    cfg.graph_options.optimizer_options.do_function_inlining = True
    cfg.graph_options.infer_shapes = True
    assert _optimizer.core_options(cfg).passes == ALL_PASSES
    with ow.Graph().as_default() as g:
        y = ow.constant(2.0) * 3.0
    with ow.Session(graph=g, config=cfg) as sess:
        assert sess.run(y) == 6.0


def test_bad_switch_values_fail_where_they_are_set() -> None:
    with pytest.raises(ValueError, match=r"RewriterConfig.constant_folding must be one of"):
        ow.RewriterConfig(constant_folding=7)
    with pytest.raises(TypeError, match="must be an int"):
        ow.RewriterConfig(arithmetic_optimization=True)
    with pytest.raises(TypeError, match="must be a bool"):
        ow.RewriterConfig(disable_meta_optimizer=1)
    with pytest.raises(TypeError, match="list of str"):
        ow.RewriterConfig(optimizers="constfold")
    with pytest.raises(ValueError, match="opt_level must be one of"):
        ow.OptimizerOptions(opt_level=1)
    with pytest.raises(ValueError, match=">= 0"):
        ow.OptimizerOptions(max_folded_constant_in_bytes=-1)
    with pytest.raises(TypeError, match="must be a RewriterConfig"):
        ow.GraphOptions(rewrite_options={"constant_folding": 2})
    with pytest.raises(TypeError, match="must be a GraphOptions"):
        ow.ConfigProto(graph_options=None)
    with pytest.raises(AttributeError, match="no field"):
        ow.RewriterConfig().constant_foldin = 2  # type: ignore[attr-defined]
    with pytest.raises(TypeError, match="output_partition_graphs must be a bool"):
        ow.RunOptions(output_partition_graphs=1)
    # A container changed in place is caught when a Session reads the config.
    cfg = ow.ConfigProto()
    cfg.graph_options.rewrite_options.optimizers.append(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="list of str"):
        ow.Session(config=cfg)


def test_signatures_smaller_than_min_graph_nodes_run_as_written() -> None:
    with ow.Graph().as_default() as g:
        y = ow.constant(2.0) * 3.0  # three nodes
    with ow.Session(graph=g) as sess:
        assert sess.run(y) == 6.0
        r = report(sess)
        assert "min_graph_nodes" in r.skipped
        assert r.nodes_after == 3
    with ow.Session(graph=g, config=config()) as sess:
        assert sess.run(y) == 6.0
        assert report(sess).nodes_after == 1


# --- constant folding -----------------------------------------------------------------------


def test_constant_subgraphs_fold_and_leave_the_trace() -> None:
    with ow.Graph().as_default() as g:
        x = ow.placeholder(ow.float64, shape=(3,), name="x")
        c = ow.exp(ow.constant([0.0, 1.0, 2.0], ow.float64, name="c"), name="e")
        k = ow.reduce_sum(c * 2.0, name="k")
        y = ow.add(x, k, name="y")
    xv = np.array([1.0, 2.0, 3.0])
    with ow.Session(graph=g, config=l0()) as sess:
        want = sess.run(y, {x: xv})
    with ow.Session(graph=g, config=config()) as sess:
        got, meta = traced(sess, y, {x: xv})
        assert got.tobytes() == want.tobytes()  # the same kernels: the same bits
        nodes = ran(meta)
        assert set(nodes) == {"k", "y"}  # k is a Const now; e, mul and their inputs are gone
        assert nodes["k"].op == "Const"
        assert set(nodes["k"].original_nodes) >= {"k", "e", "mul"}
        assert nodes["y"].inputs == ["x:0", "k:0"]
        assert [c.node for c in report(sess).changes("folded")] == ["e", "mul", "k"]


def test_folding_never_builds_an_output_over_the_size_cap() -> None:
    with ow.Graph().as_default() as g:
        x = ow.placeholder(ow.float32, shape=(), name="x")
        big = ow.fill([512, 512], 1.5, name="big")  # 1 MiB
        y = ow.reduce_sum(big * x, name="y")
    cfg = config()
    cfg.graph_options.optimizer_options.max_folded_constant_in_bytes = 64 * 1024
    with ow.Session(graph=g, config=cfg) as sess:
        assert sess.run(y, {x: 2.0}) == 512 * 512 * 3.0
        kept = report(sess).changes("kept")
        assert [c.node for c in kept] == ["big"]
        # Refused on its static shape: it was never computed at compile time.
        assert "would take 1048576 bytes" in kept[0].detail
    with ow.Session(graph=g, config=config()) as sess:  # under the default 10 MiB: folded
        assert sess.run(y, {x: 2.0}) == 512 * 512 * 3.0
        assert [c.node for c in report(sess).changes("folded")] == ["big"]


def test_stateful_ops_with_constant_inputs_are_not_folded() -> None:
    with ow.Graph().as_default() as g:
        r = ow.random_uniform([4], seed=7, name="r")
        y = ow.identity(r * 2.0, name="y")
    with ow.Session(graph=g, config=config()) as sess:
        first, meta = traced(sess, y)
        second = sess.run(y)
        assert not np.array_equal(first, second)  # a new draw each run
        assert "r" in ran(meta)
        assert "mul" in ran(meta)
        assert report(sess).changes("folded") == []


def test_a_kernel_that_fails_at_compile_time_fails_the_run_as_without_folding() -> None:
    with ow.Graph().as_default() as g:
        params = ow.constant([1.0, 2.0], name="params")
        picked = ow.gather(params, ow.constant(5, name="i"), name="picked")
        y = ow.identity(picked + 1.0, name="y")
    for cfg in (config(), l0()):
        with ow.Session(graph=g, config=cfg) as sess:
            with pytest.raises(ow.errors.InvalidArgumentError) as e:
                sess.run(y)
            assert e.value.node_name == "picked"
    with ow.Session(graph=g, config=config()) as sess:
        with pytest.raises(ow.errors.InvalidArgumentError):
            sess.run(y)
        assert [c.node for c in report(sess).changes("kept")] == ["picked"]


def test_a_folded_node_keeps_its_control_dependencies() -> None:
    calls: list[str] = []

    def record(v: np.ndarray) -> np.ndarray:
        calls.append("ran")
        return v

    with ow.Graph().as_default() as g:
        side = ow.py_function(record, [ow.constant(0.0)], ow.float32, name="side")
        with g.control_dependencies([side]):
            c = ow.constant(2.0, name="c") * 3.0
        y = ow.identity(c, name="y")
    with ow.Session(graph=g, config=config()) as sess:
        assert sess.run(y) == 6.0
        assert calls == ["ran"]
        # The fetched y (one output) becomes a constant under its own name, waiting for side.
        assert [c.node for c in report(sess).changes("folded")] == ["mul", "y"]


# --- common subexpressions ------------------------------------------------------------------


def test_twins_are_computed_once_and_the_survivor_names_both() -> None:
    with ow.Graph().as_default() as g:
        x = ow.placeholder(ow.float64, shape=(2, 2), name="x")
        a = ow.tanh(x, name="a")
        b = ow.tanh(x, name="b")
        p = ow.multiply(x, a, name="p")
        q = ow.multiply(a, x, name="q")  # the same product: Mul does not depend on the order
        y = ow.add_n([a, b, p, q], name="y")
    xv = np.array([[0.1, -0.2], [0.3, 0.9]])
    with ow.Session(graph=g, config=l0()) as sess:
        want = sess.run(y, {x: xv})
    with ow.Session(graph=g, config=config()) as sess:
        got, meta = traced(sess, y, {x: xv})
        assert got.tobytes() == want.tobytes()
        nodes = ran(meta)
        assert "b" not in nodes
        assert "q" not in nodes
        assert nodes["a"].original_nodes == ["a", "b"]
        assert nodes["y"].inputs == ["a:0", "a:0", "p:0", "p:0"]
        assert {c.node for c in report(sess).changes("merged")} == {"b", "q"}


def test_stateful_twins_are_not_merged() -> None:
    with ow.Graph().as_default() as g:
        ow.set_random_seed(1)
        r1 = ow.random_uniform([3], seed=5, name="r1")
        r2 = ow.random_uniform([3], seed=5, name="r2")  # same op, attrs and seeds
        y = ow.identity(r1 + r2, name="y")
    with ow.Session(graph=g, config=config()) as sess:
        _, meta = traced(sess, y)
        assert {"r1", "r2"} <= set(ran(meta))
        # Their shape constants may merge; the random ops may not.
        assert not {"r1", "r2"} & {c.node for c in report(sess).changes("merged")}


def test_an_update_of_a_folded_constant_still_runs_every_time() -> None:
    with ow.Graph().as_default() as g:
        v = ow.Variable(1.0, name="v")
        inc = ow.assign_add(v, ow.constant(2.0) * 3.0, name="inc")
        init = ow.global_variables_initializer()
    with ow.Session(graph=g, config=config()) as sess:
        sess.run(init)
        for _ in range(3):
            sess.run(inc.op)
        assert sess.run(v) == 19.0
        r = report(sess)
    assert [c.node for c in r.changes("folded")] == []  # the last signature: v's read
    with ow.Session(graph=g, config=config()) as sess:
        sess.run(init)
        sess.run(inc.op)
        assert [c.node for c in report(sess).changes("folded")] == ["mul"]  # not inc
        assert sess.run(v) == 7.0


def test_reads_of_a_variable_are_not_merged() -> None:
    with ow.Graph().as_default() as g:
        v = ow.Variable(1.0, name="v")
        first = v.read_value()
        second = v.read_value()  # the same op, input and (no) control inputs
        total = ow.add(ow.tanh(first), ow.tanh(second), name="total")
        init = ow.global_variables_initializer()
    with ow.Session(graph=g, config=config()) as sess:
        sess.run(init)
        _, meta = traced(sess, total)
        assert {first.op.name, second.op.name} <= set(ran(meta))
        assert report(sess).changes("merged") == []


def test_constants_merge_by_their_bits() -> None:
    with ow.Graph().as_default() as g:
        x = ow.placeholder(ow.float32, shape=(), name="x")
        zeros = [ow.constant(0.0, name="z0"), ow.constant(-0.0, name="z1")]
        ones = [ow.constant(1.5, name="o0"), ow.constant(1.5, name="o1")]
        outs = [ow.multiply(x, c, name=f"m{i}") for i, c in enumerate(zeros + ones)]
    with ow.Session(graph=g, config=config()) as sess:
        got = sess.run(outs, {x: 2.0})
        assert [float(v) for v in got] == [0.0, -0.0, 3.0, 3.0]
        assert np.signbit(got[1])
        assert not np.signbit(got[0])
        # o1 merges into o0; m3 then equals m2 but is fetched, so it stays.
        assert {c.node for c in report(sess).changes("merged")} == {"o1"}


# --- arithmetic -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "build_y",
    [
        lambda x: x * 1.0,
        lambda x: 1.0 * x,
        lambda x: x + 0.0,
        lambda x: 0.0 + x,
        lambda x: x - 0.0,
        lambda x: x / 1.0,
        lambda x: x * np.ones(3, np.float32),
        lambda x: x + np.zeros((1, 3), np.float32),
        lambda x: ow.negative(ow.negative(x)),
        lambda x: ow.transpose(ow.transpose(x)),
        lambda x: _CAST(x=x, DstT=ow.float32),
    ],
    ids=["x*1", "1*x", "x+0", "0+x", "x-0", "x/1", "x*ones", "x+zeros", "--x", "TT", "cast"],
)
def test_identities_are_removed(build_y: Any) -> None:
    with ow.Graph().as_default() as g:
        x = ow.placeholder(ow.float32, shape=(None, 3), name="x")
        y = ow.identity(build_y(x), name="y")
        z = ow.tanh(y, name="z")
    xv = np.array([[1.5, -0.0, np.nan], [2.0, 3.0, -4.0]], np.float32)
    with ow.Session(graph=g, config=l0()) as sess:
        want = sess.run(z, {x: xv})
    with ow.Session(graph=g, config=config()) as sess:
        got, meta = traced(sess, z, {x: xv})
        np.testing.assert_array_equal(got, want)
        assert set(ran(meta)) == {"z"}  # only the tanh runs, on the fed x
        assert ran(meta)["z"].inputs == ["x:0"]


def test_zeros_that_broadcast_x_to_a_larger_shape_are_kept() -> None:
    with ow.Graph().as_default() as g:
        x = ow.placeholder(ow.float32, shape=(None, 3), name="x")
        y = ow.tanh(x + np.zeros((2, 3), np.float32), name="y")  # x may be (1, 3)
        v = ow.placeholder(ow.float32, shape=(3,), name="v")
        w = ow.tanh(v * np.ones((2, 3), np.float32), name="w")
    # (Loop fusion would take the add and the mul into the tanhs: this test is about the rewrite.)
    with ow.Session(graph=g, config=config(remapping=ow.RewriterConfig.OFF)) as sess:
        got = sess.run([y, w], {x: np.ones((1, 3), np.float32), v: np.ones(3, np.float32)})
        assert got[0].shape == (2, 3)
        assert got[1].shape == (2, 3)
        assert report(sess).changes("removed") == []


def test_a_fetched_identity_operation_stays_as_an_identity() -> None:
    with ow.Graph().as_default() as g:
        x = ow.placeholder(ow.float32, shape=(2,), name="x")
        y = ow.multiply(x, 1.0, name="y")
        z = ow.tanh(y, name="z")
    with ow.Session(graph=g, config=config()) as sess:
        (yv, _zv), meta = traced(sess, [y, z], {x: [1.0, 2.0]})
        np.testing.assert_array_equal(yv, [1.0, 2.0])
        assert ran(meta)["y"].op == "Identity"
        assert ran(meta)["y"].original_nodes == ["y"]
        assert ran(meta)["y"].inputs == ["x:0"]
        assert ran(meta)["z"].inputs == ["y:0"]


def test_constant_chains_reassociate_as_tensorflow_does() -> None:
    with ow.Graph().as_default() as g:
        x = ow.placeholder(ow.float32, shape=(4,), name="x")
        y = x
        for _i in range(1000):
            y = y + 0.1  # a new constant each step
        y = ow.identity(y, name="y")
    xv = np.array([0.0, 1.0, -3.0, 1e6], np.float32)
    with ow.Session(graph=g, config=l0()) as sess:
        want = sess.run(y, {x: xv})
    with ow.Session(graph=g, config=config()) as sess:
        got, meta = traced(sess, y, {x: xv})
        r = report(sess)
    # One Add of x and a folded constant (0.1 summed 1000 times in float32) is left, with the
    # feed and the fetched identity.
    assert r.nodes_before == 2002
    assert r.nodes_after == 4
    assert len([c for c in r.changes("rewritten") if "re-associated" in c.detail]) == 999
    nodes = ran(meta)
    (last,) = [n for n in nodes.values() if n.op in ("Add", "AddV2")]
    assert len(last.original_nodes) == 1000
    # Rounding differs from summing step by step: float32, within 1000 roundings of x + 100.
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=2e-3)
    np.testing.assert_allclose(got, xv + 100.0, rtol=1e-4, atol=2e-3)


def test_the_tiny_chain_collapses_to_one_add() -> None:
    m = ow.models.tiny_chain(length=1000, size=3)
    with ow.Session(graph=m.graph) as sess:
        np.testing.assert_array_equal(sess.run(m.fetches, m.feed_dict), [500.0] * 3)
        r = report(sess)
        # The feed, the constant, one add, and the fetched last mul as an Identity of it.
        assert r.nodes_before == 1002
        assert r.nodes_after == 4


def test_float16_constants_are_not_reassociated() -> None:
    with ow.Graph().as_default() as g:
        x = ow.placeholder(ow.float16, shape=(), name="x")
        y = ow.identity((x + ow.constant(0.1, ow.float16)) + ow.constant(0.2, ow.float16))
    with ow.Session(graph=g, config=config()) as sess:
        sess.run(y, {x: 1.0})
        assert report(sess).changes("rewritten") == []


def test_reshape_of_reshape_drops_the_inner_one_only_when_it_cannot_fail() -> None:
    with ow.Graph().as_default() as g:
        x = ow.placeholder(ow.float32, shape=None, name="x")
        # [-1, 2] fits whenever [-1, 4] does: the inner reshape can go.
        safe = ow.tanh(ow.reshape(ow.reshape(x, [-1, 2]), [-1, 4]), name="safe")
        # [-1, 4] may fail where [-1, 2] does not (6 elements): both stay.
        risky = ow.tanh(ow.reshape(ow.reshape(x, [-1, 4]), [-1, 2]), name="risky")
        flat = ow.tanh(ow.reshape(ow.reshape(x, [-1, 2]), [-1]), name="flat")
    with ow.Session(graph=g, config=config()) as sess:
        assert sess.run(safe, {x: np.zeros(8, np.float32)}).shape == (2, 4)
        assert [c.node for c in report(sess).changes("rewritten")] == ["Reshape_1"]
        with pytest.raises(ow.errors.InvalidArgumentError, match="multiple of 4"):
            sess.run(risky, {x: np.ones(6, np.float32)})  # the inner reshape still fails
        assert report(sess).changes("rewritten") == []
        with pytest.raises(ow.errors.InvalidArgumentError, match="multiple of 2"):
            sess.run(flat, {x: np.ones(5, np.float32)})


def test_double_transposes_compose() -> None:
    with ow.Graph().as_default() as g:
        x = ow.placeholder(ow.float32, shape=(2, 3, 4), name="x")
        y = ow.tanh(ow.transpose(ow.transpose(x, [1, 0, 2]), [0, 2, 1]), name="y")
    xv = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 24
    with ow.Session(graph=g, config=l0()) as sess:
        want = sess.run(y, {x: xv})
    with ow.Session(graph=g, config=config()) as sess:
        got, meta = traced(sess, y, {x: xv})
        np.testing.assert_array_equal(got, want)
        transposes = [n for n in ran(meta).values() if n.op == "Transpose"]
        assert len(transposes) == 1


# --- identities, no-ops, feeds, fetches, control dependencies --------------------------------


def test_identity_chains_go_but_fetched_and_fed_ones_stay() -> None:
    with ow.Graph().as_default() as g:
        x = ow.placeholder(ow.float32, shape=(2,), name="x")
        i1 = ow.identity(x, name="i1")
        i2 = ow.identity(i1, name="i2")
        i3 = ow.identity(i2, name="i3")
        y = ow.tanh(i3, name="y")
    xv = np.array([0.5, -0.5], np.float32)
    with ow.Session(graph=g, config=config()) as sess:
        (yv, i2v), meta = traced(sess, [y, i2], {x: xv})
        np.testing.assert_array_equal(i2v, xv)
        assert set(ran(meta)) == {"i2", "y"}
        assert ran(meta)["y"].inputs == ["i2:0"]
        # Feeding i2 replaces everything upstream of it; y reads the fed value.
        fed = np.array([1.0, 2.0], np.float32)
        yv, meta = traced(sess, y, {i2: fed})
        np.testing.assert_array_equal(yv, np.tanh(fed))
        assert set(ran(meta)) == {"y"}
        assert ran(meta)["y"].inputs == ["i2:0"]  # named by the fed tensor


def test_feeding_the_output_of_a_removable_op_uses_the_fed_value() -> None:
    with ow.Graph().as_default() as g:
        x = ow.placeholder(ow.float32, shape=(2,), name="x")
        one = ow.multiply(x, 1.0, name="one")
        y = ow.tanh(one, name="y")
    with ow.Session(graph=g, config=config()) as sess:
        fed = np.array([3.0, 4.0], np.float32)
        np.testing.assert_array_equal(sess.run(y, {x: [0.0, 0.0], one: fed}), np.tanh(fed))


def test_control_dependencies_survive_removed_identities_and_no_ops() -> None:
    order: list[str] = []
    lock = threading.Lock()

    def record(tag: str) -> Any:
        def body(v: np.ndarray) -> np.ndarray:
            with lock:
                order.append(tag)
            return v

        return body

    with ow.Graph().as_default() as g:
        x = ow.placeholder(ow.float32, shape=(), name="x")
        first = ow.py_function(record("first"), [x], ow.float32, name="first")
        with g.control_dependencies([first]):
            gate = ow.no_op(name="gate")
        with g.control_dependencies([gate]):
            passed = ow.identity(x, name="passed")
        second = ow.py_function(record("second"), [passed], ow.float32, name="second")
    cfg = config()
    cfg.inter_op_parallelism_threads = 2
    with ow.Session(graph=g, config=cfg) as sess:
        for _ in range(20):
            sess.run(second, {x: 1.0})
        assert order == ["first", "second"] * 20
        removed = {c.node for c in report(sess).changes("removed")}
        assert {"gate", "passed"} <= removed


def test_an_identity_of_a_stateful_op_is_kept() -> None:
    with ow.Graph().as_default() as g:
        r = ow.random_uniform([2], seed=3, name="r")
        snap = ow.identity(r, name="snap")
        y = ow.add(snap, snap, name="y")
    with ow.Session(graph=g, config=config()) as sess:
        _, meta = traced(sess, y)
        assert "snap" in ran(meta)


def test_targets_run_and_stay() -> None:
    calls: list[int] = []

    def tick(v: np.ndarray) -> np.ndarray:
        calls.append(1)
        return v

    with ow.Graph().as_default() as g:
        t = ow.py_function(tick, [ow.constant(1.0)], ow.float32, name="t")
        with g.control_dependencies([t]):
            noop = ow.no_op(name="step")
    with ow.Session(graph=g, config=config()) as sess:
        assert sess.run(noop) is None
        assert sess.run([noop, "step"]) == [None, None]
        assert calls == [1, 1]


# --- observability --------------------------------------------------------------------------


def test_partition_graphs_hold_the_optimized_graph() -> None:
    with ow.Graph().as_default() as g:
        x = ow.placeholder(ow.float32, shape=(2,), name="x")
        y = ow.identity(x * 1.0 + ow.constant(2.0) * 3.0, name="y")
    with ow.Session(graph=g, config=config()) as sess:
        _, meta = traced(sess, y, {x: [1.0, 2.0]})
        nodes = graph_nodes(meta)
        assert set(nodes) == {"_arg_x_0_0", "mul_1", "add", "y"}
        assert nodes["_arg_x_0_0"]["op"] == "_Arg"
        assert nodes["_arg_x_0_0"]["attr"]["tensor_name"] == "x:0"
        assert nodes["add"]["input"] == ["_arg_x_0_0", "mul_1"]
        np.testing.assert_array_equal(nodes["mul_1"]["attr"]["value"], np.float32(6.0))
        assert nodes["mul_1"]["original_nodes"] == ["mul_1"]
        assert len(nodes) == report(sess).nodes_after
    # Without the option, nothing is exported; clear() forgets them.
    meta = ow.RunMetadata()
    meta.partition_graphs.append(ow.config.PartitionGraph())
    meta.clear()
    assert meta.partition_graphs == []


def test_timeline_args_name_the_original_nodes() -> None:
    with ow.Graph().as_default() as g:
        x = ow.placeholder(ow.float32, shape=(2,), name="x")
        y = ow.identity((x + 1.0) + 2.0, name="y")
    with ow.Session(graph=g, config=config()) as sess:
        _, meta = traced(sess, y, {x: [1.0, 2.0]})
    trace = json.loads(Timeline(meta.step_stats).generate_chrome_trace_format())
    ops = {e["name"]: e for e in trace["traceEvents"] if e.get("cat") == "Op"}
    assert "add" not in ops  # absorbed by add_1
    assert ops["add_1"]["args"]["original_nodes"] == ["add_1", "add"]
    assert "original_nodes" not in ops["y"]["args"]


def test_the_report_says_what_each_pass_did() -> None:
    m = ow.models.tiny_chain(length=10)
    with ow.Session(graph=m.graph) as sess:
        sess.run(m.fetches, m.feed_dict)
        r = report(sess)
    text = str(r)
    # The feed, one add, its constant, and the fetched last mul as an Identity.
    assert text.splitlines()[0] == "graph optimizer: 12 -> 4 nodes"
    assert "arithmetic: 12 -> 4 nodes" in text
    assert "removed mul_1: Mul by its second operand (ones) is its other operand" in text
    arithmetic = next(p for p in r.passes if p.name == "arithmetic")
    # 5 muls removed (the fetched last one rewritten into an Identity), 4 adds re-associated.
    assert arithmetic.count("removed") >= 4
    assert arithmetic.count("rewritten") == 5
    assert all(p.error == "" for p in r.passes)


def test_the_report_follows_the_signature_compiled_last() -> None:
    with ow.Graph().as_default() as g:
        a = ow.identity(ow.constant(1.0) + 2.0, name="a")
        b = ow.identity(ow.constant(3.0) + 4.0, name="b")
    with ow.Session(graph=g, config=config()) as sess:
        assert sess.optimizer_report() is None
        sess.run(a)
        assert [c.node for c in report(sess).changes("folded")] == ["add", "a"]
        sess.run(b)
        assert [c.node for c in report(sess).changes("folded")] == ["add_1", "b"]
        sess.run(a)  # cached: nothing compiled, the report stays
        assert [c.node for c in report(sess).changes("folded")] == ["add_1", "b"]


# --- fusion (remapping) -----------------------------------------------------------------------


def _mlp(dtype: Any, tb: bool = False) -> tuple[ow.Graph, Any, Any, dict[str, Any]]:
    """x -> relu(x W1 + b1) -> relu6(BiasAdd(h W2, b2)) -> tanh(h W3) -> sigmoid(h W4 + b4)."""
    rng = np.random.default_rng(7)
    sizes = [37, 70, 45, 33, 9]
    with ow.Graph().as_default() as g:
        x = ow.placeholder(dtype, shape=(None, sizes[0]), name="x")
        ws = [rng.uniform(-0.4, 0.4, ab).astype(dtype) for ab in itertools.pairwise(sizes)]
        bs = [rng.uniform(-0.5, 0.5, b).astype(dtype) for b in sizes[1:]]
        w1 = ow.Variable(ws[0], name="w1")
        h = ow.nn.relu(ow.matmul(x, w1, name="mm1") + ow.constant(bs[0]), name="act1")
        h = ow.nn.relu6(ow.nn.bias_add(ow.matmul(h, ws[1], name="mm2"), bs[1]), name="act2")
        w3 = ow.constant(ws[2].T.copy()) if tb else ow.constant(ws[2])
        h = ow.tanh(ow.matmul(h, w3, transpose_b=tb, name="mm3"), name="act3")
        y = ow.sigmoid(ow.add(ow.matmul(h, ws[3], name="mm4"), bs[3], name="add4"), name="act4")
        init = ow.global_variables_initializer()

    def reference(xv: np.ndarray) -> np.ndarray:
        v = np.maximum(xv @ ws[0] + bs[0], 0)
        v = np.clip(v @ ws[1] + bs[1], 0, 6)
        v = np.tanh(v @ ws[2])
        return 1 / (1 + np.exp(-(v @ ws[3] + bs[3])))

    return g, init, y, {"x": x, "ref": reference}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("batch", [1, 3, 16, 61])
def test_dense_layers_fuse_into_one_node_each_with_the_unfused_bits(dtype: Any, batch: int) -> None:
    g, init, y, parts = _mlp(dtype, tb=batch == 3)
    xv = np.random.default_rng(batch).uniform(-1, 1, (batch, 37)).astype(dtype)
    results = []
    for cfg in (config(), config(remapping=ow.RewriterConfig.OFF), l0()):
        with ow.Session(graph=g, config=cfg) as sess:
            sess.run(init)
            out, meta = traced(sess, y, {parts["x"]: xv})
            out2 = sess.run(y, {parts["x"]: xv})  # packed weights, second run
            np.testing.assert_array_equal(out2, out)
            results.append(out)
            stats, nodes = ran(meta), graph_nodes(meta)
            fused = {n: d["op"] for n, d in nodes.items() if d["op"] == "_FusedMatMul"}
            if len(results) == 1:
                assert fused == dict.fromkeys(["act1", "act2", "act3", "act4"], "_FusedMatMul")
                assert stats["act1"].original_nodes == ["act1", "mm1", "add"]
                assert stats["act2"].original_nodes == ["act2", "mm2", "BiasAdd"]
                assert stats["act3"].original_nodes == ["act3", "mm3"]
                # FLOPs: the MatMul's, plus one per element for the bias and the activation.
                assert stats["act1"].flops == 2 * batch * 37 * 70 + 2 * batch * 70
                assert stats["act4"].original_nodes == ["act4", "mm4", "add4"]
                assert nodes["act2"]["attr"]["fused_ops"] == ["BiasAdd", "Relu6"]
                assert nodes["act3"]["attr"]["transpose_b"] == (batch == 3)
                assert not {"mm1", "add", "mm2", "BiasAdd", "mm3", "mm4", "add4"} & set(stats)
                assert report(sess).passes[4].count("fused") == 4
            else:
                assert fused == {}
                assert {"mm1", "add", "add4"} <= set(stats)
    fused_out, off, as_written = results
    # The same operations in the same order per element: the bits of the unfused graph.
    np.testing.assert_array_equal(fused_out, off)
    np.testing.assert_array_equal(fused_out, as_written)
    tol = 2e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(fused_out, parts["ref"](xv.astype(np.float64)), rtol=tol, atol=tol)


def test_fused_results_are_the_same_bits_for_one_and_two_threads() -> None:
    rng = np.random.default_rng(3)
    w = rng.uniform(-0.1, 0.1, (300, 530)).astype(np.float32)
    b = rng.uniform(-1, 1, 530).astype(np.float32)
    with ow.Graph().as_default() as g:
        x = ow.placeholder(ow.float32, shape=(None, 300))
        y = ow.nn.relu(ow.matmul(x, w) + b)
    previous = ow.get_num_threads()
    try:
        for batch in (1, 4, 7, 40):
            xv = rng.uniform(-1, 1, (batch, 300)).astype(np.float32)
            outs = []
            for threads in (1, 2):
                ow.set_num_threads(threads)
                with ow.Session(graph=g, config=config()) as sess:
                    outs.append(sess.run(y, {x: xv}))
                    assert report(sess).passes[4].count("fused") == 1
            np.testing.assert_array_equal(outs[0], outs[1])
            np.testing.assert_allclose(outs[0], np.maximum(xv @ w + b, 0), rtol=1e-5, atol=1e-5)
    finally:
        ow.set_num_threads(previous)


def test_intermediates_that_are_fetched_fed_or_read_elsewhere_are_not_fused() -> None:
    rng = np.random.default_rng(5)
    w = rng.uniform(-1, 1, (6, 5))
    b = rng.uniform(-1, 1, 5)
    xv = rng.uniform(-1, 1, (4, 6))
    with ow.Graph().as_default() as g:
        x = ow.placeholder(ow.float64, shape=(None, 6), name="x")
        wp = ow.placeholder(ow.float64, shape=(6, 5), name="w")  # not a weight to pack
        mm = ow.matmul(x, wp, name="mm")
        pre = ow.nn.bias_add(mm, b, name="pre")
        y = ow.nn.relu(pre, name="y")
        other = ow.identity(mm * 2.0, name="other")
    want_pre = xv @ w + b
    with ow.Session(graph=g, config=config()) as sess:
        # Fetched: pre is computed (by itself, fused with mm, which only it reads) and y reads it.
        (got_pre, got_y), meta = traced(sess, [pre, y], {x: xv, wp: w})
        nodes = graph_nodes(meta)
        assert (nodes["pre"]["op"], nodes["y"]["op"]) == ("_FusedMatMul", "Relu")
        assert ran(meta)["pre"].original_nodes == ["pre", "mm"]
        np.testing.assert_allclose(got_pre, want_pre, rtol=1e-12)
        np.testing.assert_array_equal(got_y, np.maximum(got_pre, 0))
        (got_mm, got_y), meta = traced(sess, [mm, y], {x: xv, wp: w})
        nodes = graph_nodes(meta)
        assert [nodes[n]["op"] for n in ("mm", "pre", "y")] == ["MatMul", "BiasAdd", "Relu"]
        np.testing.assert_array_equal(got_y, np.maximum(got_mm + b, 0))
        # Fed: y reads the fed value; nothing upstream runs.
        fed = np.full((4, 5), -1.0)
        got_y, meta = traced(sess, y, {pre: fed})
        np.testing.assert_array_equal(got_y, np.zeros((4, 5)))
        assert "mm" not in ran(meta)
        # Read elsewhere: mm feeds pre and other, so it is computed once, unfused.
        (got_y, got_other), meta = traced(sess, [y, other], {x: xv, wp: w})
        assert {"mm", "pre", "y"} <= set(ran(meta))
        assert graph_nodes(meta)["y"]["op"] == "Relu"
        np.testing.assert_allclose(got_other, 2 * (xv @ w), rtol=1e-12)
        # Alone, the three fuse.
        got_y, meta = traced(sess, y, {x: xv, wp: w})
        assert graph_nodes(meta)["y"]["op"] == "_FusedMatMul"
        assert ran(meta)["y"].original_nodes == ["y", "mm", "pre"]
        np.testing.assert_allclose(got_y, np.maximum(want_pre, 0), rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_conv_layers_fuse_into_one_node_each_with_the_unfused_bits(dtype: Any) -> None:
    rng = np.random.default_rng(8)
    f1 = rng.uniform(-0.5, 0.5, (3, 3, 3, 12)).astype(dtype)
    f2 = rng.uniform(-0.3, 0.3, (5, 5, 12, 9)).astype(dtype)
    f3 = rng.uniform(-0.3, 0.3, (2, 2, 9, 40)).astype(dtype)
    b1 = rng.uniform(-0.5, 0.5, 12).astype(dtype)
    b2 = rng.uniform(-0.5, 0.5, 9).astype(dtype)
    with ow.Graph().as_default() as g:
        x = ow.placeholder(dtype, shape=(None, 11, 10, 3), name="x")
        h = ow.nn.conv2d(x, f1, strides=[1, 1, 1, 1], padding="SAME", name="conv1")
        h = ow.nn.relu(ow.nn.bias_add(h, b1), name="act1")
        h = ow.nn.conv2d(h, f2, strides=[1, 2, 2, 1], padding="SAME", name="conv2")
        h = ow.nn.relu6(ow.add(h, b2, name="add2"), name="act2")
        h = ow.nn.conv2d(h, f3, strides=[1, 1, 1, 1], padding="VALID", name="conv3")
        y = ow.tanh(h, name="act3")
        nchw = ow.nn.relu(
            ow.nn.conv2d(ow.transpose(x, [0, 3, 1, 2]), f1, [1, 1, 1, 1], "SAME",
                         data_format="NCHW", name="conv_nchw"),
            name="act_nchw",
        )  # fmt: skip
    xv = rng.uniform(-1, 1, (4, 11, 10, 3)).astype(dtype)
    results = []
    for cfg in (config(), config(remapping=ow.RewriterConfig.OFF), l0()):
        with ow.Session(graph=g, config=cfg) as sess:
            (out, out_nchw), meta = traced(sess, [y, nchw], {x: xv})
            results.append((out, out_nchw))
            nodes, stats = graph_nodes(meta), ran(meta)
            fused = {n for n, d in nodes.items() if d["op"] == "_FusedConv2D"}
            if len(results) == 1:
                assert fused == {"act1", "act2", "act3"}
                assert stats["act1"].original_nodes == ["act1", "conv1", "BiasAdd"]
                assert stats["act2"].original_nodes == ["act2", "conv2", "add2"]
                assert stats["act3"].original_nodes == ["act3", "conv3"]
                assert nodes["act2"]["attr"]["fused_ops"] == ["BiasAdd", "Relu6"]
                assert nodes["conv_nchw"]["op"] == "Conv2D"  # only NHWC convolutions fuse
                # FLOPs: the convolution's, plus one per output element for each fused op.
                assert stats["act3"].flops == 2 * 4 * 5 * 4 * 40 * 2 * 2 * 9 + 4 * 5 * 4 * 40
            else:
                assert fused == set()
    for other in results[1:]:
        np.testing.assert_array_equal(results[0][0], other[0])
        np.testing.assert_array_equal(results[0][1], other[1])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("window", [(2, 2), (3, 2)])  # disjoint windows, and overlapping ones
def test_the_gradient_of_relu_then_max_pool_fuses_with_the_unfused_bits(
    dtype: Any, window: tuple[int, int]
) -> None:
    # ReluGrad(MaxPoolGrad(h, pooled, dy), h) -> one _FusedMaxPoolGrad: the chosen cell of each
    # window keeps its gradient only where h > 0. Values with zeros, negatives, ties and NaN.
    ksize, stride = window
    rng = np.random.default_rng(9)
    with ow.Graph().as_default() as g:
        x = ow.placeholder(dtype, shape=(None, 7, 6, 5), name="x")
        dy = ow.placeholder(dtype, name="dy")
        h = ow.nn.relu(x, name="act")
        p = ow.nn.max_pool(h, [1, ksize, ksize, 1], [1, stride, stride, 1], "SAME", name="pool")
        (gx,) = ow.gradients(p, [x], grad_ys=dy)
        (gh,) = ow.gradients(p, [h], grad_ys=dy)  # MaxPoolGrad alone
        other = ow.nn.max_pool(x, [1, 2, 2, 1], [1, 2, 2, 1], "VALID", name="pool_x")
        (gx_other,) = ow.gradients(other, [x], grad_ys=ow.ones_like(other))
    xv = rng.integers(-2, 3, (3, 7, 6, 5)).astype(dtype)  # zeros and ties
    xv[0, 0, 0, :] = np.nan
    xv[1, 2, 3, 1] = -0.0
    out_h, out_w = -(-7 // stride), -(-6 // stride)
    dyv = rng.uniform(-1, 1, (3, out_h, out_w, 5)).astype(dtype)
    dyv.flat[::7] = -0.0
    results = []
    for cfg in (config(), config(remapping=ow.RewriterConfig.OFF), l0()):
        with ow.Session(graph=g, config=cfg) as sess:
            (got, got_other), meta = traced(sess, [gx, gx_other], {x: xv, dy: dyv})
            results.append((got, got_other))
            ops = {n: d["op"] for n, d in graph_nodes(meta).items()}
            if len(results) == 1:
                (fused,) = [n for n, op in ops.items() if op == "_FusedMaxPoolGrad"]
                assert sorted(ran(meta)[fused].original_nodes) == sorted(
                    [fused, "gradients/pool_grad/MaxPoolGrad"]
                )
                # A MaxPoolGrad with no ReluGrad after it stays as it is.
                assert "MaxPoolGrad" in ops.values()
            else:
                assert "_FusedMaxPoolGrad" not in ops.values()
    for got, got_other in results[1:]:
        assert got.tobytes() == results[0][0].tobytes()
        assert got_other.tobytes() == results[0][1].tobytes()
    # ReluGrad's formula on the unfused pooling gradient, in NumPy: h > 0 ? dL/dh : +0.
    with ow.Session(graph=g, config=l0()) as sess:
        hv, ghv = sess.run([h, gh], {x: xv, dy: dyv})
    want = np.where(hv > 0, ghv, np.zeros_like(ghv))
    assert results[0][0].tobytes() == want.tobytes()
    assert ((ghv != 0) & (want == 0)).any()  # the fused step zeroed some chosen cells


def test_a_conv_fused_into_its_activation_names_itself_in_errors() -> None:
    with ow.Graph().as_default() as g:
        x = ow.placeholder(ow.float32, shape=(None, 6, 6, None), name="x")
        f = ow.constant(np.ones((3, 3, 2, 4), np.float32))
        y = ow.nn.relu(ow.nn.conv2d(x, f, [1, 1, 1, 1], "SAME", name="convx"), name="y")
    with ow.Session(graph=g, config=config()) as sess:
        with pytest.raises(ow.errors.InvalidArgumentError, match=r"Conv2D 'convx'.*fused") as err:
            sess.run(y, {x: np.ones((1, 6, 6, 3), np.float32)})
        assert "depth" in str(err.value)


def test_a_training_step_fuses_its_dense_layers() -> None:
    # The gradient of `x W + b` sums over the batch axis of b only, decided from the static
    # shapes: nothing reads the product's Shape, so the product, the bias add and the Relu
    # stay one _FusedMatMul in the training step (and the step still learns).
    rng = np.random.default_rng(4)
    xv = rng.uniform(-1, 1, (32, 12)).astype(np.float32)
    yv = np.eye(3, dtype=np.float32)[rng.integers(0, 3, 32)]
    with ow.Graph().as_default() as g:
        x = ow.placeholder(ow.float32, shape=(None, 12), name="x")
        y = ow.placeholder(ow.float32, shape=(None, 3), name="y")
        w1 = ow.Variable(rng.uniform(-0.5, 0.5, (12, 16)).astype(np.float32))
        b1 = ow.Variable(np.zeros(16, np.float32))
        w2 = ow.Variable(rng.uniform(-0.5, 0.5, (16, 3)).astype(np.float32))
        h = ow.nn.relu(ow.matmul(x, w1, name="mm1") + b1, name="act1")
        logits = ow.matmul(h, w2, name="mm2")
        loss = ow.reduce_mean(ow.nn.softmax_cross_entropy_with_logits_v2(labels=y, logits=logits))
        step = ow.train.GradientDescentOptimizer(0.5).minimize(loss)
        init = ow.global_variables_initializer()
    shape_readers = [c.name for c in g.get_tensor_by_name("mm1:0").consumers() if c.type != "Add"]
    assert shape_readers == []
    with ow.Session(graph=g, config=config()) as sess:
        sess.run(init)
        first = sess.run(loss, {x: xv, y: yv})
        _, meta = traced(sess, step, {x: xv, y: yv})
        assert graph_nodes(meta)["act1"]["op"] == "_FusedMatMul"
        assert ran(meta)["act1"].original_nodes == ["act1", "mm1", "add"]
        for _ in range(20):
            sess.run(step, {x: xv, y: yv})
        assert sess.run(loss, {x: xv, y: yv}) < 0.8 * first


@pytest.mark.parametrize("batch", [1, 2, 50])
def test_a_variable_updated_between_runs_is_repacked(batch: int) -> None:
    # The fused kernel keeps the weight packed between runs: a stale copy would be a silent wrong
    # answer. Assign, assign_add (an in-place update when nothing else holds the buffer) and a
    # restore-like load must all be seen by the next run.
    rng = np.random.default_rng(batch)
    w0 = rng.uniform(-1, 1, (40, 300)).astype(np.float32)
    xv = rng.uniform(-1, 1, (batch, 40)).astype(np.float32)
    with ow.Graph().as_default() as g:
        x = ow.placeholder(ow.float32, shape=(None, 40))
        w = ow.Variable(w0, name="w")
        y = ow.nn.relu(ow.matmul(x, w))
        new = ow.placeholder(ow.float32, shape=(40, 300))
        assign = ow.assign(w, new)
        bump = ow.assign_add(w, ow.ones((40, 300)) * 0.25)
        init = ow.global_variables_initializer()

    def want(wv: np.ndarray) -> np.ndarray:
        return np.maximum(xv.astype(np.float64) @ wv.astype(np.float64), 0)

    with ow.Session(graph=g, config=config()) as sess:
        sess.run(init)
        before = _core.packed_weight_stats()
        np.testing.assert_allclose(sess.run(y, {x: xv}), want(w0), rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(sess.run(y, {x: xv}), want(w0), rtol=1e-4, atol=1e-4)
        after = _core.packed_weight_stats()
        assert after["packs"] - before["packs"] == 1
        assert after["hits"] - before["hits"] >= 1
        current = w0
        for step in range(4):
            if step % 2 == 0:
                current = rng.uniform(-1, 1, (40, 300)).astype(np.float32)
                sess.run(assign, {new: current})
            else:
                sess.run(bump)
                current = current + np.float32(0.25)
            np.testing.assert_allclose(sess.run(y, {x: xv}), want(current), rtol=1e-4, atol=1e-4)
            np.testing.assert_allclose(sess.run(y, {x: xv}), want(current), rtol=1e-4, atol=1e-4)
        w.load(w0, sess)
        np.testing.assert_allclose(sess.run(y, {x: xv}), want(w0), rtol=1e-4, atol=1e-4)


def test_a_variable_that_changes_every_run_is_right_every_run() -> None:
    # Training: the weight changes on every step; the cache gives up packing it, never the
    # right answer.
    rng = np.random.default_rng(11)
    w0 = rng.uniform(-1, 1, (8, 20))
    xv = rng.uniform(-1, 1, (16, 8))
    with ow.Graph().as_default() as g:
        x = ow.placeholder(ow.float64, shape=(None, 8))
        w = ow.Variable(w0, name="w")
        y = ow.nn.relu(ow.matmul(x, w))
        with ow.control_dependencies([y]):
            step = ow.assign_add(w, ow.ones((8, 20), dtype=ow.float64) * 0.5)
        init = ow.global_variables_initializer()
    with ow.Session(graph=g, config=config()) as sess:
        sess.run(init)
        for i in range(6):
            got, _ = sess.run([y, step], {x: xv})
            np.testing.assert_allclose(got, np.maximum(xv @ (w0 + 0.5 * i), 0), rtol=1e-12)


def test_concurrent_runs_share_the_packed_weights_and_agree() -> None:
    # One compiled node, one weight cache: threads hitting its first (packing) run and later ones
    # at once all get the single-threaded answer.
    g, init, y, parts = _mlp(np.float32)
    xv = np.random.default_rng(2).uniform(-1, 1, (16, 37)).astype(np.float32)
    with ow.Session(graph=g, config=config()) as sess:
        sess.run(init)
        results: list[np.ndarray] = []
        lock = threading.Lock()

        def work() -> None:
            for _ in range(5):
                out = sess.run(y, {parts["x"]: xv})
                with lock:
                    results.append(out)

        threads = [threading.Thread(target=work) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        want = sess.run(y, {parts["x"]: xv})
    assert len(results) == 20
    for out in results:
        np.testing.assert_array_equal(out, want)


def test_a_bias_of_the_wrong_length_fails_naming_the_node() -> None:
    with ow.Graph().as_default() as g:
        x = ow.placeholder(ow.float32, shape=(2, 3))
        b = ow.placeholder(ow.float32, shape=(None,))
        y = ow.nn.relu(ow.nn.bias_add(ow.matmul(x, np.ones((3, 4), np.float32)), b), name="y")
    with ow.Session(graph=g, config=config()) as sess:
        with pytest.raises(ow.errors.InvalidArgumentError, match="y"):
            sess.run(y, {x: np.ones((2, 3), np.float32), b: np.ones(5, np.float32)})
        ok = sess.run(y, {x: np.ones((2, 3), np.float32), b: np.ones(4, np.float32)})
        np.testing.assert_array_equal(ok, np.full((2, 4), 4.0, np.float32))


# --- the same results with the optimizer on and off ------------------------------------------

_RICH = OPTIMIZABLE * 3 + ["neg", "tanh", "identity", "rowmean", "py", "add", "sub", "mul"]
_RICH += ["max", "matmul", "fail"]


def _reassociates(spec: Spec) -> bool:
    return any(spec.nodes[i].op == "addc" for i in needed(spec))


@SETTINGS
@given(spec=graph_specs(_RICH), seed=st.integers(0, 2**32 - 1), data=st.data())
def test_random_graphs_give_the_same_results_with_the_optimizer_on_and_off(
    spec: Spec, seed: int, data: st.DataObject
) -> None:
    rng = np.random.default_rng(seed)
    feeds = (rng.uniform(-1, 1, (spec.n, spec.n)), rng.uniform(-1, 1, (spec.n, spec.n)))
    overrides: dict[int, np.ndarray] = {}
    if len(spec.nodes) > 2 and data.draw(st.booleans()):
        overrides[data.draw(st.integers(2, len(spec.nodes) - 1))] = rng.uniform(
            -1, 1, (spec.n, spec.n)
        )
    built = build(spec)
    feed_dict = dict(zip(built.inputs, feeds, strict=True))
    feed_dict.update({built.tensors[i]: v for i, v in overrides.items()})
    try:
        evaluate(spec, feeds, overrides)
        fails = False
    except InjectedFailure:
        fails = True
    results = []
    for cfg in (l0(), config()):
        with ow.Session(graph=built.graph, config=cfg) as sess:
            if fails:
                with pytest.raises(InjectedFailure):
                    sess.run(built.fetches, feed_dict=feed_dict)
                continue
            results.append(sess.run(built.fetches, feed_dict=feed_dict))
    if fails:
        return
    off, on = results
    check(spec, on, feeds, overrides)
    for a, b in zip(off, on, strict=True):
        if _reassociates(spec):
            # Re-associated constants round differently (float64 here).
            np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-14)
        else:
            # Bit for bit, but for the sign of a zero (x + 0.0 keeps -0.0, as TensorFlow's does).
            np.testing.assert_array_equal(b, a)


def test_concurrent_first_runs_of_one_signature_agree() -> None:
    m = ow.models.tiny_chain(length=200, size=4)
    with ow.Session(graph=m.graph, config=config()) as sess:
        out: list[Any] = []

        def run() -> None:
            out.append(sess.run(m.fetches, m.feed_dict))

        threads = [threading.Thread(target=run) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(out) == 4
        for v in out:
            np.testing.assert_array_equal(v, [100.0] * 4)


# --- element-wise loop fusion -----------------------------------------------------------------


def fused(sess: ow.Session) -> dict[str, str]:
    """Fused root -> the report's detail, for the signature compiled last."""
    return {c.node: c.detail for c in report(sess).changes("fused")}


def _chain(dtype: Any, shape: Any = (4, 5)) -> tuple[ow.Graph, Any, Any, Any, Any]:
    with ow.Graph().as_default() as g:
        x = ow.placeholder(dtype, shape=shape, name="x")
        z = ow.placeholder(dtype, shape=shape, name="z")
        a = ow.tanh(x, name="a")
        b = ow.multiply(a, z, name="b")
        c = ow.exp(b, name="c")
        y = ow.subtract(c, x, name="y")
    return g, x, z, b, y


def test_an_elementwise_chain_runs_as_one_node_with_the_same_bits() -> None:
    g, x, z, _, y = _chain(ow.float32)
    rng = np.random.default_rng(0)
    feed = {x: rng.standard_normal((4, 5), np.float32), z: rng.standard_normal((4, 5), np.float32)}
    with ow.Session(graph=g, config=l0()) as sess:
        want = sess.run(y, feed)
    with ow.Session(graph=g, config=config()) as sess:
        got, meta = traced(sess, y, feed)
        detail = "4 element-wise ops into one loop (Tanh, Mul, Exp, Sub), 2 inputs"
        assert fused(sess) == {"y": detail}
    assert got.tobytes() == want.tobytes()
    nodes = ran(meta)
    assert {"a", "b", "c"}.isdisjoint(nodes)
    assert sorted(nodes["y"].original_nodes) == ["a", "b", "c", "y"]
    assert graph_nodes(meta)["y"]["op"] == "_FusedElementwise"
    trace = json.loads(Timeline(meta.step_stats).generate_chrome_trace_format())
    ops = {e["name"]: e for e in trace["traceEvents"] if e.get("cat") == "Op"}
    assert sorted(ops["y"]["args"]["original_nodes"]) == ["a", "b", "c", "y"]


def test_remapping_off_leaves_elementwise_ops_unfused() -> None:
    g, x, z, _, y = _chain(ow.float64)
    feed = {x: np.ones((4, 5)), z: np.ones((4, 5))}
    with ow.Session(graph=g, config=config(remapping=ow.RewriterConfig.OFF)) as sess:
        _, meta = traced(sess, y, feed)
        assert fused(sess) == {}
    assert {"a", "b", "c", "y"} <= set(ran(meta))
    assert "_FusedElementwise" not in {n["op"] for n in graph_nodes(meta).values()}


def test_a_fetched_intermediate_is_computed_and_kept() -> None:
    g, x, z, b, y = _chain(ow.float32)
    rng = np.random.default_rng(1)
    feed = {x: rng.standard_normal((4, 5), np.float32), z: rng.standard_normal((4, 5), np.float32)}
    with ow.Session(graph=g, config=l0()) as sess:
        want = sess.run([y, b], feed)
    with ow.Session(graph=g, config=config()) as sess:
        got, meta = traced(sess, [y, b], feed)
        # b is fetched: it stays a node (taking a along), and y fuses only what b does not need.
        assert set(fused(sess)) == {"y", "b"}
    nodes = ran(meta)
    assert sorted(nodes["b"].original_nodes) == ["a", "b"]
    assert sorted(nodes["y"].original_nodes) == ["c", "y"]
    for w, v in zip(want, got, strict=True):
        assert v.tobytes() == w.tobytes()


def test_a_fed_intermediate_is_read_not_recomputed() -> None:
    g, x, z, b, y = _chain(ow.float32)
    ones = np.ones((4, 5), np.float32)
    bv = np.full((4, 5), 0.5, np.float32)
    with ow.Session(graph=g, config=config()) as sess:
        got = sess.run(y, {x: ones, z: ones, b: bv})
    np.testing.assert_array_equal(got, np.exp(bv) - ones)


def test_the_same_bits_for_one_and_two_threads() -> None:
    n = 1 << 18  # above the element-wise kernels' threshold for splitting over threads
    g, x, z, _, y = _chain(ow.float32, shape=(n,))
    rng = np.random.default_rng(2)
    feed = {x: rng.standard_normal(n, np.float32), z: rng.standard_normal(n, np.float32)}
    outs = []
    before = ow.get_num_threads()
    try:
        for threads in (1, 2):
            ow.set_num_threads(threads)
            with ow.Session(graph=g, config=config()) as sess:
                outs.append(sess.run(y, feed))
                assert set(fused(sess)) == {"y"}
    finally:
        ow.set_num_threads(before)
    with ow.Session(graph=g, config=l0()) as sess:
        outs.append(sess.run(y, feed))
    assert outs[0].tobytes() == outs[1].tobytes() == outs[2].tobytes()


def test_dtypes_do_not_mix_in_a_fused_loop() -> None:
    with ow.Graph().as_default() as g:
        x = ow.placeholder(ow.float32, shape=(3, 4), name="x")
        d = ow.placeholder(ow.float64, shape=(3, 4), name="d")
        i = ow.placeholder(ow.int32, shape=(3, 4), name="i")
        a = ow.tanh(ow.negative(x, name="n32"), name="t32")
        w = ow.cast(a, ow.float64, name="w")
        y = ow.exp(ow.add(w, d, name="s64"), name="y")
        less = ow.less(ow.sqrt(d, name="r64"), d, name="less")  # float64 operands
        sel = ow.where(less, ow.abs(x, name="abs32"), ow.square(x, name="sq32"), name="sel")
        k = ow.abs(ow.negative(i, name="ni"), name="k")  # integers are not fused
    rng = np.random.default_rng(3)
    feed = {
        x: rng.standard_normal((3, 4), np.float32),
        d: rng.uniform(0, 2, (3, 4)),
        i: rng.integers(-5, 5, (3, 4), np.int32),
    }
    with ow.Session(graph=g, config=l0()) as sess:
        want = sess.run([y, sel, k], feed)
    with ow.Session(graph=g, config=config()) as sess:
        got = sess.run([y, sel, k], feed)
        f = fused(sess)
    # Four loops: one per dtype run; the Cast and the float64 comparison feeding the float32
    # Select stay boundaries, and the integer ops stay as they are.
    assert f == {
        "t32": "2 element-wise ops into one loop (Neg, Tanh), 1 input",
        "y": "2 element-wise ops into one loop (Add, Exp), 2 inputs",
        "less": "2 element-wise ops into one loop (Sqrt, Less), 1 input",
        "sel": "3 element-wise ops into one loop (Abs, Square, Select), 2 inputs",
    }
    assert "k" not in f
    for w_, v in zip(want, got, strict=True):
        assert v.dtype == w_.dtype
        assert v.tobytes() == w_.tobytes()


def test_stateful_producers_are_not_fused() -> None:
    with ow.Graph().as_default() as g:
        r = ow.random_uniform([3, 4], seed=7, name="r")
        x = ow.placeholder(ow.float32, shape=(3, 4), name="x")
        y = ow.tanh(ow.multiply(r, x, name="m"), name="y")
    with ow.Session(graph=g, config=config()) as sess:
        _, meta = traced(sess, y, {x: np.ones((3, 4), np.float32)})
        assert "(Mul, Tanh)" in fused(sess)["y"]
    assert "r" in ran(meta)


def test_a_run_time_error_names_the_original_node() -> None:
    with ow.Graph().as_default() as g:
        x = ow.placeholder(ow.float32, shape=(None, 5), name="x")
        z = ow.placeholder(ow.float32, shape=(None, 5), name="z")
        y = ow.subtract(ow.exp(ow.multiply(ow.tanh(x), z, name="b")), x, name="y")
    feed = {x: np.ones((4, 5), np.float32), z: np.ones((3, 5), np.float32)}
    for cfg in (l0(), config()):
        with (
            ow.Session(graph=g, config=cfg) as sess,
            pytest.raises(ow.errors.InvalidArgumentError, match=r"\bb\b.*Mul|Mul.*\bb\b"),
        ):
            sess.run(y, feed)
    with ow.Session(graph=g, config=config()) as sess:
        # A NaN fed through the fused loop comes out as it does unfused.
        v = np.array([[np.nan, 1, -np.inf, np.inf, 0]] * 2, np.float32)
        got = sess.run(y, {x: v, z: v})
        assert "y" in fused(sess)
    with ow.Session(graph=g, config=l0()) as sess:
        assert got.tobytes() == sess.run(y, {x: v, z: v}).tobytes()


_UNARY = [
    "neg", "tanh", "exp", "sigmoid", "abs", "square", "relu", "sqrt", "log", "floor", "sin",
    "log1p", "expm1", "rsqrt", "reciprocal", "ceil", "round", "cos", "tan", "sign", "relu6",
    "leaky", "clip",
]  # fmt: skip
_BINARY = [
    "add", "sub", "mul", "div", "maximum", "minimum", "sqdiff", "pow", "floordiv", "floormod",
    "select", "select_v2", "logic",
]  # fmt: skip


def _apply(op: str, args: list[Any]) -> Any:
    fns: dict[str, Any] = {
        "neg": ow.negative,
        "tanh": ow.tanh,
        "exp": ow.exp,
        "sigmoid": ow.sigmoid,
        "abs": ow.abs,
        "square": ow.square,
        "relu": ow.nn.relu,
        "sqrt": ow.sqrt,
        "log": ow.log,
        "floor": ow.floor,
        "sin": ow.sin,
        "log1p": ow.log1p,
        "expm1": ow.expm1,
        "rsqrt": ow.rsqrt,
        "reciprocal": ow.reciprocal,
        "ceil": ow.ceil,
        "round": ow.round,
        "cos": ow.cos,
        "tan": ow.tan,
        "sign": ow.sign,
        "relu6": ow.nn.relu6,
        "leaky": lambda a: ow.nn.leaky_relu(a, alpha=0.3),
        "clip": lambda a: ow.clip_by_value(a, -0.5, 0.75),
        "add": ow.add,
        "sub": ow.subtract,
        "mul": ow.multiply,
        "div": ow.divide,
        "maximum": ow.maximum,
        "minimum": ow.minimum,
        "sqdiff": ow.squared_difference,
        "pow": ow.pow,
        "floordiv": ow.floordiv,
        "floormod": ow.floormod,
        # Comparisons and logical ops feed selects (bool registers in the fused loop).
        "select": lambda a, b: ow.where(ow.less(a, b), a, b) if a.shape == b.shape else a + b,
        "select_v2": lambda a, b: ow.where_v2(ow.greater_equal(a, b), a, b),
        "logic": lambda a, b: ow.where_v2(
            ow.logical_or(ow.logical_not(ow.equal(a, b)), ow.less_equal(a, b)), b, a
        ),
    }
    return fns[op](*args)


@SETTINGS
@given(
    dtype=st.sampled_from([np.float16, np.float32, np.float64]),
    ops=st.lists(
        st.tuples(st.sampled_from(_UNARY + _BINARY), st.integers(0, 99), st.integers(0, 99)),
        min_size=2,
        max_size=10,
    ),
    fetch_extra=st.integers(0, 99),
    seed=st.integers(0, 2**32 - 1),
)
def test_random_elementwise_graphs_give_the_same_bits_fused_and_unfused(
    dtype: Any, ops: list[tuple[str, int, int]], fetch_extra: int, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    shape = (3, 4)
    with ow.Graph().as_default() as g:
        x = ow.placeholder(dtype, shape=shape, name="x")
        z = ow.placeholder(dtype, shape=shape, name="z")
        row = ow.placeholder(dtype, shape=(1, 4), name="row")  # broadcast leaves
        values = [x, z, row, ow.constant(dtype(0.75), name="c")]
        for op, i, j in ops:
            # Operands among the last few values: chains, trees, and values read twice.
            a = values[len(values) - 1 - i % min(4, len(values))]
            b = values[len(values) - 1 - j % len(values)]
            values.append(_apply(op, [a] if op in _UNARY else [a, b]))
        fetches = [values[-1]]
        extra = values[4 + fetch_extra % (len(values) - 4)]
        if extra is not values[-1]:
            fetches.append(extra)
    big = np.finfo(dtype).max / 2
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, big, -np.finfo(dtype).tiny], dtype)
    xv = rng.standard_normal(shape).astype(dtype)
    xv.flat[rng.integers(0, xv.size, 3)] = rng.choice(special, 3)
    feed = {
        x: xv,
        z: rng.uniform(-3, 3, shape).astype(dtype),
        row: rng.uniform(-2, 2, (1, 4)).astype(dtype),
    }
    results = []
    # Constant folding is off: it would re-associate chains of constants (which rounds
    # differently, docs/optimizer.md) and fold x + floor(0.75) into x (keeping -0.0).
    only_fusion = config(
        constant_folding=ow.RewriterConfig.OFF,
        arithmetic_optimization=ow.RewriterConfig.OFF,
        common_subgraph_elimination=ow.RewriterConfig.OFF,
        dependency_optimization=ow.RewriterConfig.OFF,
        disable_model_pruning=True,
    )
    for cfg in (l0(), config(constant_folding=ow.RewriterConfig.OFF), only_fusion):
        with ow.Session(graph=g, config=cfg) as sess:
            results.append(sess.run(fetches, feed))
    for got in results[1:]:
        for want, v in zip(results[0], got, strict=True):
            assert v.shape == want.shape
            assert v.dtype == want.dtype
            # Bit for bit: signs of zeros and NaN payloads included.
            assert v.tobytes() == want.tobytes(), (v, want)
