"""ConfigProto / RunOptions semantics: the first-session rule, named and per-session pools,
caller-thread mode, pool selection, devices and placement logging."""

from __future__ import annotations

import json
import threading
import time

import numpy as np
import opweave as ow
import pytest
from _subprocess import run_python


def _thread_recorder() -> tuple[ow.Graph, list[ow.Tensor], list[int]]:
    seen: list[int] = []

    def record() -> np.ndarray:
        seen.append(threading.get_native_id())
        time.sleep(0.01)
        return np.float32(0)

    g = ow.Graph()
    with g.as_default():
        outs = [ow.py_function(record, [], ow.float32) for _ in range(4)]
    return g, outs, seen


def test_config_proto_accepts_tensorflow_keyword_spellings_and_defaults() -> None:
    cfg = ow.ConfigProto(
        intra_op_parallelism_threads=2,
        inter_op_parallelism_threads=2,
        allow_soft_placement=True,
        device_count={"CPU": 2},
    )
    assert (cfg.intra_op_parallelism_threads, cfg.inter_op_parallelism_threads) == (2, 2)
    default = ow.ConfigProto()
    assert default.intra_op_parallelism_threads == 0
    assert default.inter_op_parallelism_threads == 0
    assert default.use_per_session_threads is False
    assert default.session_inter_op_thread_pool == []
    assert default.allow_soft_placement is False
    assert default.log_device_placement is False
    assert default.operation_timeout_in_ms == 0
    assert ow.RunOptions().inter_op_thread_pool == 0
    assert [ow.RunOptions.NO_TRACE, ow.RunOptions.FULL_TRACE] == [0, 3]
    with pytest.raises(TypeError, match="unexpected keyword"):
        ow.ConfigProto(intra_threads=2)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="must be an int"):
        ow.ConfigProto(inter_op_parallelism_threads="2")  # type: ignore[arg-type]


def test_config_fields_are_checked_when_assigned_too() -> None:
    cfg = ow.ConfigProto()
    with pytest.raises(ValueError, match="intra_op_parallelism_threads must be >= 0"):
        cfg.intra_op_parallelism_threads = -5
    with pytest.raises(TypeError, match="intra_op_parallelism_threads must be an int"):
        cfg.intra_op_parallelism_threads = "2"  # type: ignore[assignment]
    with pytest.raises(TypeError, match="inter_op_parallelism_threads must be an int"):
        cfg.inter_op_parallelism_threads = 1.5  # type: ignore[assignment]
    with pytest.raises(TypeError, match="operation_timeout_in_ms must be an int"):
        cfg.operation_timeout_in_ms = True
    with pytest.raises(ValueError, match=r"device_count\['CPU'\] must be >= 0"):
        cfg.device_count = {"CPU": -1}
    with pytest.raises(TypeError, match="must hold ThreadPoolOptionProto"):
        cfg.session_inter_op_thread_pool = [2]  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"must be a ConfigProto\.Experimental"):
        cfg.experimental = None  # type: ignore[assignment]
    with pytest.raises(ValueError, match="spin_time_us must be >= 0"):
        cfg.experimental.spin_time_us = -1
    with pytest.raises(ValueError, match="num_threads must be >= 0"):
        ow.ThreadPoolOptionProto().num_threads = -1
    with pytest.raises(ValueError, match=r"trace_level must be 0\.\.3"):
        ow.RunOptions().trace_level = 7
    with pytest.raises(AttributeError, match='no field "intra_op_paralelism_threads"'):
        cfg.intra_op_paralelism_threads = 2  # a typo is not silently ignored
    assert cfg == ow.ConfigProto()  # the rejected assignments changed nothing
    cfg.inter_op_parallelism_threads = -1
    cfg.device_count = {"CPU": 2}
    assert (cfg.inter_op_parallelism_threads, cfg.device_count) == (-1, {"CPU": 2})


def test_a_session_rejects_a_config_whose_containers_were_changed_in_place() -> None:
    with ow.Graph().as_default() as g:
        ow.constant(1.0)
    cfg = ow.ConfigProto(inter_op_parallelism_threads=-1)
    cfg.device_count["CPU"] = -1
    with pytest.raises(ValueError, match=r"device_count\['CPU'\] must be >= 0"):
        ow.Session(graph=g, config=cfg)
    cfg = ow.ConfigProto()
    cfg.session_inter_op_thread_pool.append("pool")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="must hold ThreadPoolOptionProto"):
        ow.Session(graph=g, config=cfg)


def test_session_inter_op_thread_pool_add_returns_the_new_pool_option() -> None:
    g, outs, seen = _thread_recorder()
    cfg = ow.ConfigProto()
    first = cfg.session_inter_op_thread_pool.add(num_threads=2)
    second = cfg.session_inter_op_thread_pool.add(num_threads=1, global_name="test-config-add")
    assert first == ow.ThreadPoolOptionProto(num_threads=2)
    assert cfg.session_inter_op_thread_pool == [first, second]  # still a list
    assert cfg.session_inter_op_thread_pool[1] is second
    with pytest.raises(ValueError, match="num_threads must be >= 0"):
        cfg.session_inter_op_thread_pool.add(num_threads=-1)
    assert len(cfg.session_inter_op_thread_pool) == 2
    with ow.Session(graph=g, config=cfg) as sess:
        assert len(sess._pools) == 2
        sess.run(outs, options=ow.RunOptions(inter_op_thread_pool=1))
        assert len(set(seen)) == 1  # the named one-thread pool ran all four


def test_first_session_sizes_global_pools_and_later_disagreement_warns() -> None:
    out = run_python(
        """
        import json, time, warnings
        import numpy as np
        import opweave as ow

        def nap(v):
            time.sleep(0.05)
            return v

        with ow.Graph().as_default() as g:
            c = ow.constant(1.0)
            branches = [ow.py_function(nap, [c], ow.float32) for _ in range(2)]
        first = ow.Session(graph=g, config=ow.ConfigProto(
            intra_op_parallelism_threads=1, inter_op_parallelism_threads=1))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ow.Session(graph=g, config=ow.ConfigProto(
                intra_op_parallelism_threads=2, inter_op_parallelism_threads=3))
            ow.Session(graph=g)  # 0 = "the system picks": no opinion, no warning
            later = ow.Session(graph=g, config=ow.ConfigProto(inter_op_parallelism_threads=1))
        meta = ow.RunMetadata()
        later.run(branches, options=ow.RunOptions(trace_level=ow.RunOptions.FULL_TRACE),
                  run_metadata=meta)
        stats = [s for s in meta.step_stats.node_stats if s.op == "PyFunc"]
        a, b = sorted(stats, key=lambda s: s.all_start_micros)
        print(json.dumps({
            "warnings": [[w.category.__name__, str(w.message)] for w in caught],
            "serial": a.all_end_micros <= b.all_start_micros,
        }))
        """
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    kinds = [k for k, _ in result["warnings"]]
    messages = [m for _, m in result["warnings"]]
    assert kinds == ["PoolConfigWarning", "PoolConfigWarning"]
    assert "intra_op_parallelism_threads=2" in messages[0]
    assert "on 1 threads, as sized by the first Session's ConfigProto" in messages[0]
    assert "inter_op_parallelism_threads=3" in messages[1]
    assert "runs 1 ops at once, as sized by the first Session's ConfigProto" in messages[1]
    assert result["serial"], "inter_op_parallelism_threads=1 must run one op at a time"


def test_named_pool_with_other_size_is_invalid_argument() -> None:
    pool = ow.ThreadPoolOptionProto(num_threads=1, global_name="test-config-named")
    other = ow.ThreadPoolOptionProto(num_threads=2, global_name="test-config-named")
    with ow.Graph().as_default() as g:
        ow.constant(1.0)
    s1 = ow.Session(graph=g, config=ow.ConfigProto(session_inter_op_thread_pool=[pool]))
    s2 = ow.Session(graph=g, config=ow.ConfigProto(session_inter_op_thread_pool=[pool]))
    assert s1._pools[0] == s2._pools[0]  # one process-global pool
    with pytest.raises(ow.errors.InvalidArgumentError) as info:
        ow.Session(graph=g, config=ow.ConfigProto(session_inter_op_thread_pool=[other]))
    assert str(info.value) == (
        "Pool test-config-named configured previously with num_threads=1; "
        "cannot re-configure with num_threads=2"
    )


def test_run_options_pick_a_session_pool_and_reject_out_of_range_indices() -> None:
    g, outs, seen = _thread_recorder()
    config = ow.ConfigProto(
        session_inter_op_thread_pool=[
            ow.ThreadPoolOptionProto(num_threads=2),
            ow.ThreadPoolOptionProto(num_threads=1),
        ]
    )
    with ow.Session(graph=g, config=config) as sess:
        sess.run(outs, options=ow.RunOptions(inter_op_thread_pool=1))
        assert len(set(seen)) == 1  # the one-thread pool ran all four
        assert threading.get_native_id() not in seen
        for bad in (2, -2):
            with pytest.raises(
                ow.errors.InvalidArgumentError, match=f"^Invalid inter_op_thread_pool: {bad}$"
            ):
                sess.run(outs, options=ow.RunOptions(inter_op_thread_pool=bad))


def test_per_session_pools_belong_to_their_session() -> None:
    g, outs, seen = _thread_recorder()
    config = ow.ConfigProto(inter_op_parallelism_threads=2, use_per_session_threads=True)
    with ow.Session(graph=g, config=config) as a, ow.Session(graph=g, config=config) as b:
        assert a._pools[0] != b._pools[0]
        assert a._pools[0].num_threads == 2
        a.run(outs)
        b.run(outs)
    assert threading.get_native_id() not in seen
    assert 2 <= len(set(seen)) <= 4


def test_caller_thread_mode_has_no_pools_and_accepts_pool_index_zero() -> None:
    g, outs, seen = _thread_recorder()
    with ow.Session(graph=g, config=ow.ConfigProto(inter_op_parallelism_threads=-1)) as sess:
        sess.run(outs, options=ow.RunOptions(inter_op_thread_pool=0))
        with pytest.raises(ow.errors.InvalidArgumentError, match="Invalid inter_op_thread_pool: 1"):
            sess.run(outs, options=ow.RunOptions(inter_op_thread_pool=1))
    assert set(seen) == {threading.get_native_id()}


def test_device_count_defines_the_cpu_devices() -> None:
    with ow.Graph().as_default() as g, ow.device("/CPU:1"):
        ok = ow.constant(1.0, name="ok")
    cfg = ow.ConfigProto(device_count={"CPU": 2}, inter_op_parallelism_threads=-1)
    with ow.Session(graph=g, config=cfg) as sess:
        assert sess.list_devices() == ["/device:CPU:0", "/device:CPU:1"]
        assert sess.run(ok) == 1.0


@pytest.mark.parametrize("spec", ["/CPU:1", "/GPU:0"])
def test_unknown_device_is_an_error_unless_soft_placement(spec: str) -> None:
    with ow.Graph().as_default() as g, ow.device(spec):
        c = ow.constant(1.0, name="placed")
    caller = ow.ConfigProto(inter_op_parallelism_threads=-1)
    with ow.Session(graph=g, config=caller) as sess:
        with pytest.raises(ow.errors.InvalidArgumentError, match="Cannot assign a device") as info:
            sess.run(c)
        assert info.value.node_name == "placed"
    soft = ow.ConfigProto(inter_op_parallelism_threads=-1, allow_soft_placement=True)
    with ow.Session(graph=g, config=soft) as sess:
        assert sess.run(c) == 1.0


def test_log_device_placement_prints_each_node_once(capsys: pytest.CaptureFixture[str]) -> None:
    with ow.Graph().as_default() as g:
        a = ow.constant(1.0, name="a")
        with ow.device("/CPU:1"):
            b = ow.identity(a, name="b")
    cfg = ow.ConfigProto(
        log_device_placement=True, device_count={"CPU": 2}, inter_op_parallelism_threads=-1
    )
    with ow.Session(graph=g, config=cfg) as sess:
        sess.run(b)
        sess.run(b)
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "a: (Const): /job:localhost/replica:0/task:0/device:CPU:0",
        "b: (Identity): /job:localhost/replica:0/task:0/device:CPU:1",
    ]
