"""TensorFlow 1 habits that programs rely on beyond the ops: the Session's positional order,
InteractiveSession, fetch and feed names as bytes, and what an OpError carries."""

from __future__ import annotations

import sys
import threading

import numpy as np
import opweave as ow
import opweave.compat.v1 as tf
import pytest


def test_session_takes_target_graph_config_in_tensorflows_positional_order() -> None:
    g = ow.Graph()
    with g.as_default():
        c = ow.constant(3.0, name="c")
    config = ow.ConfigProto(inter_op_parallelism_threads=-1)
    with ow.Session("", g, config) as sess:
        assert sess.graph is g
        assert sess.config is config
        assert sess.run(c) == 3.0


def test_a_graph_in_the_target_position_or_a_remote_target_is_a_clear_error() -> None:
    g = ow.Graph()
    with pytest.raises(TypeError, match="graph=") as info:
        ow.Session(g)  # type: ignore[arg-type]
    assert "target" in str(info.value)
    with pytest.raises(ValueError, match="grpc://localhost:2222"):
        ow.Session("grpc://localhost:2222", g)


def test_interactive_session_is_the_default_until_closed() -> None:
    with ow.Graph().as_default():
        sess = ow.InteractiveSession()
        c = ow.constant([1.0, 2.0]) * 2.0
        assert ow.get_default_session() is sess
        np.testing.assert_array_equal(c.eval(), [2.0, 4.0])
        c.op.run()
        sess.close()
        assert ow.get_default_session() is None
        sess.close()  # idempotent
        with pytest.raises(ValueError, match="session"):
            c.eval()


def test_interactive_session_closed_inside_a_with_block_leaves_the_other_default_in_place() -> None:
    with ow.Graph().as_default():
        outer = ow.Session()
        inter = ow.InteractiveSession()
        with outer.as_default():
            inter.close()
            assert ow.get_default_session() is outer
        assert ow.get_default_session() is None
        outer.close()


def test_interactive_session_closed_from_another_thread_stops_being_its_threads_default() -> None:
    with ow.Graph().as_default():
        sess = ow.InteractiveSession()
        closer = threading.Thread(target=sess.close)
        closer.start()
        closer.join()
        assert ow.get_default_session() is None


def test_fetches_and_feeds_may_be_named_by_bytes() -> None:
    with ow.Graph().as_default():
        x = ow.placeholder(ow.float32, shape=(), name="x")
        y = ow.identity(x * 2.0, name="y")
        with ow.Session() as sess:
            assert sess.run(b"y:0", {b"x:0": 2.0}) == 4.0
            assert sess.run([b"y:0", "y:0"], {x: 1.0}) == [2.0, 2.0]
            assert sess.run(b"y", {b"x:0": 1.0}) is None
            del y
            with pytest.raises(ValueError, match="UTF-8"):
                sess.run(b"\xff", {x: 1.0})


def test_op_error_carries_the_failing_op_its_node_def_and_message() -> None:
    with ow.Graph().as_default():
        x = ow.placeholder(ow.float32, shape=None, name="x")
        r = ow.reshape(x, [4], name="bad_reshape")
        with ow.Session() as sess, pytest.raises(ow.errors.InvalidArgumentError) as info:
            sess.run(r, {x: [[1.0, 2.0, 3.0]]})
    e = info.value
    assert e.op is r.op
    assert e.node_def["name"] == "bad_reshape"
    assert e.node_def["op"] == "Reshape"
    assert "3 values" in e.message
    assert e.error_code == ow.errors.INVALID_ARGUMENT


def test_log_device_placement_writes_to_stderr_not_stdout(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with ow.Graph().as_default():
        c = ow.constant(1.0, name="logged")
        with ow.Session(config=ow.ConfigProto(log_device_placement=True)) as sess:
            sess.run(c)
    out, err = capsys.readouterr()
    assert "logged: (Const)" in err
    assert out == ""


def test_every_op_and_graph_helper_accepts_name_none() -> None:
    with ow.Graph().as_default():
        x = ow.placeholder("float", [None, 3], name=None)
        assert x.dtype is ow.float32  # "float" is float32 and "double" float64, as in TF
        assert ow.placeholder("double", name=None).dtype is ow.float64
        c = ow.constant(1.0, name=None)
        i = ow.identity(x, name=None)
        ow.group(i, name=None)
        ow.no_op(name=None)
        s = ow.reduce_sum(x * c, reduction_indices=[1], keep_dims=True, name=None)
        assert s.shape.as_list() == [None, 1]


def test_compat_v1_is_the_same_api_with_tf1_switches() -> None:
    tf.disable_v2_behavior()
    tf.disable_eager_execution()
    assert tf.Session is ow.Session
    assert tf.InteractiveSession is ow.InteractiveSession
    assert tf.placeholder is ow.placeholder
    assert not tf.executing_eagerly_outside_functions()
    assert "opweave" in sys.modules
