"""Variables: values that live in each session (TensorFlow 1's VariableV2 / Assign / v/read), their
API, get_variable and variable scopes, collections and initializers, gradients with respect to
them, and bad input."""

from __future__ import annotations

from typing import Any

import numpy as np
import opweave as ow
import pytest


def const_init(value: float) -> Any:
    """An initializer callable ``init(shape, dtype=None, partition_info=None)``."""

    def init(shape: Any, dtype: Any = None, partition_info: Any = None) -> Any:
        return ow.fill(shape, ow.cast(value, dtype or ow.float32))

    return init


# -- the variable and its graph ------------------------------------------------------------------


def test_variable_builds_tensorflows_nodes_and_names() -> None:
    with ow.Graph().as_default() as g:
        v = ow.Variable([1.0, 2.0], name="v")
        assert v.name == "v:0"
        assert v.op.type == "VariableV2"
        assert v.op.name == "v"
        assert v.initializer.type == "Assign"
        assert v.initializer.name == "v/Assign"
        assert v.initial_value.name == "v/initial_value:0"
        assert v.value().name == "v/read:0"
        assert v.value().op.type == "Identity"
        assert v.dtype is ow.float32
        assert v.shape.as_list() == [2]
        assert v.get_shape() == v.shape
        assert v.graph is g
        w = ow.Variable(0, name="v")
        assert w.name == "v_1:0"
        assert w.dtype is ow.int32
        assert ow.Variable(1.0).name == "Variable:0"
        assert repr(v) == "<opweave.Variable 'v:0' shape=(2,) dtype=float32>"


def test_initial_value_may_be_a_tensor_a_value_or_a_callable() -> None:
    with ow.Graph().as_default():
        a = ow.Variable(ow.constant([1, 2]) * 3)
        b = ow.Variable(np.array([[1.5]]), dtype=ow.float32)
        c = ow.Variable(lambda: ow.ones([2, 2]), name="c")
        assert c.initial_value.name == "c/Initializer/ones:0" or c.initial_value.op.name.startswith(
            "c/Initializer/"
        )
        with ow.Session() as s:
            s.run(ow.global_variables_initializer())
            assert s.run(a).tolist() == [3, 6]
            assert s.run(b).dtype == np.float32
            assert s.run(b).tolist() == [[1.5]]
            assert s.run(c).tolist() == [[1.0, 1.0], [1.0, 1.0]]


def test_two_sessions_on_one_graph_hold_separate_values() -> None:
    with ow.Graph().as_default():
        v = ow.Variable(0, name="counter")
        inc = v.assign_add(1)
        with ow.Session() as s1, ow.Session() as s2:
            s1.run(v.initializer)
            s2.run(v.initializer)
            for _ in range(3):
                s1.run(inc)
            s2.run(inc)
            assert s1.run(v) == 3
            assert s2.run(v) == 1
            s3 = ow.Session()
            with pytest.raises(ow.errors.FailedPreconditionError):
                s3.run(v)
            s3.close()


def test_reading_an_uninitialized_variable_is_failed_precondition_naming_it() -> None:
    with ow.Graph().as_default():
        v = ow.Variable([1.0], name="weights")
        y = v * 2.0
        with ow.Session() as s:
            with pytest.raises(
                ow.errors.FailedPreconditionError, match="uninitialized value weights"
            ):
                s.run(y)
            with pytest.raises(ow.errors.FailedPreconditionError, match="weights"):
                s.run(v)
            with pytest.raises(ow.errors.FailedPreconditionError, match="weights"):
                s.run(v.assign_add([1.0]))
            s.run(v.initializer)
            assert s.run(y).tolist() == [2.0]


def test_variables_work_as_tensors_in_operators_ops_fetches_and_feeds() -> None:
    with ow.Graph().as_default():
        v = ow.Variable([1.0, 2.0], name="v")
        m = ow.Variable([[1.0, 0.0], [0.0, 2.0]], name="m")
        outs = [v + 1.0, 1.0 + v, v * v, -v, v / 2.0, 2.0 - v, v >= 1.5, v[1], m @ m]
        with ow.Session() as s:
            s.run(ow.global_variables_initializer())
            got = s.run(outs)
            assert got[0].tolist() == [2.0, 3.0]
            assert got[1].tolist() == [2.0, 3.0]
            assert got[2].tolist() == [1.0, 4.0]
            assert got[3].tolist() == [-1.0, -2.0]
            assert got[4].tolist() == [0.5, 1.0]
            assert got[5].tolist() == [1.0, 0.0]
            assert got[6].tolist() == [False, True]
            assert got[7] == 2.0
            assert got[8].tolist() == [[1.0, 0.0], [0.0, 4.0]]
            # fetch a Variable, its name, and feed a value in its place for one run
            assert s.run({"v": v, "name": "v:0"})["name"].tolist() == [1.0, 2.0]
            assert s.run(v * 10.0, feed_dict={v: [5.0, 6.0]}).tolist() == [50.0, 60.0]
            assert s.run(v).tolist() == [1.0, 2.0]


def test_eval_load_and_default_session() -> None:
    with ow.Graph().as_default():
        v = ow.Variable([0.0, 0.0])
        with ow.Session() as s:
            v.load([3.0, 4.0])  # the default session
            assert v.eval().tolist() == [3.0, 4.0]
            v.load([5.0, 6.0], s)
            assert v.eval(session=s).tolist() == [5.0, 6.0]
        with pytest.raises(ValueError, match="session"):
            v.load([1.0, 2.0])


def test_assign_returns_a_ref_that_reads_the_new_value() -> None:
    with ow.Graph().as_default():
        v = ow.Variable(1.0)
        a = v.assign(5.0)
        b = ow.assign_add(v, 2.0)
        c = ow.assign_sub(v, 1.0)
        with ow.Session() as s:
            s.run(v.initializer)
            assert s.run(a) == 5.0
            assert s.run(b) == 7.0
            assert s.run(c) == 6.0
            assert s.run(a + 1.0) == 6.0  # the ref read after the assign, as an op input
            assert s.run(v.assign(9.0, read_value=False)) is None
            assert s.run(v) == 9.0


def test_read_value_inside_control_dependencies_reads_after_the_update() -> None:
    with ow.Graph().as_default():
        v = ow.Variable(1.0)
        update = v.assign_add(1.0)
        with ow.control_dependencies([update]):
            after = v.read_value()
        with ow.Session() as s:
            s.run(v.initializer)
            assert s.run(after) == 2.0
            assert s.run(after) == 3.0


def test_scatter_ops_update_rows() -> None:
    with ow.Graph().as_default():
        v = ow.Variable(np.zeros((3, 2), np.float32))
        with ow.Session() as s:
            s.run(v.initializer)
            s.run(ow.scatter_update(v, [0, 2], [[1.0, 2.0], [3.0, 4.0]]))
            s.run(ow.scatter_add(v, [2, 2], [[1.0, 1.0], [1.0, 1.0]]))
            s.run(ow.scatter_sub(v, [1], 5.0))  # a scalar update fills the rows
            assert s.run(v).tolist() == [[1.0, 2.0], [-5.0, -5.0], [5.0, 6.0]]
            with pytest.raises(ow.errors.InvalidArgumentError, match=r"indices\[1\] = 7"):
                s.run(ow.scatter_update(v, ow.constant([0, 7]), [[0.0, 0.0], [0.0, 0.0]]))


def test_validate_shape_false_lets_the_variable_change_shape() -> None:
    with ow.Graph().as_default():
        p = ow.placeholder(ow.float32, None)
        v = ow.Variable(p, validate_shape=False)
        assert v.shape.ndims is None
        grow = ow.assign(v, [1.0, 2.0, 3.0], validate_shape=False)
        with ow.Session() as s:
            s.run(v.initializer, {p: [1.0]})
            assert s.run(grow).tolist() == [1.0, 2.0, 3.0]


# -- bad input -----------------------------------------------------------------------------------


def test_assigning_a_wrong_dtype_is_a_type_error_when_built() -> None:
    with ow.Graph().as_default():
        v = ow.Variable([1.0, 2.0])
        with pytest.raises(TypeError, match="int32"):
            ow.assign(v, ow.constant([1, 2]))
        with pytest.raises(TypeError):
            v.assign_add(ow.constant([1, 2], ow.int64))
        with pytest.raises(TypeError):
            v.assign("text")


def test_assigning_a_wrong_shape_is_a_value_error_when_known() -> None:
    with ow.Graph().as_default():
        v = ow.Variable([1.0, 2.0])
        with pytest.raises(ValueError, match="Dimension 0 in both shapes must be equal"):
            v.assign([1.0, 2.0, 3.0])
        with pytest.raises(ValueError, match="Shapes must be equal rank"):
            ow.assign_add(v, [[1.0, 2.0]])
        with pytest.raises(ValueError, match=r"indices.shape \+ ref.shape\[1:\]"):
            ow.scatter_update(v, [0], [[1.0, 2.0]])


def test_assigning_a_wrong_shape_known_only_in_the_run_is_invalid_argument() -> None:
    with ow.Graph().as_default():
        v = ow.Variable([1.0, 2.0], name="v")
        p = ow.placeholder(ow.float32, None)
        assign, add = ow.assign(v, p), ow.assign_add(v, p)
        with ow.Session() as s:
            s.run(v.initializer)
            with pytest.raises(
                ow.errors.InvalidArgumentError, match=r"lhs shape= \[2\] rhs shape= \[3\]"
            ):
                s.run(assign, {p: [1.0, 2.0, 3.0]})
            with pytest.raises(ow.errors.InvalidArgumentError, match="same size"):
                s.run(add, {p: [[1.0, 2.0]]})
            assert s.run(v).tolist() == [1.0, 2.0]  # unchanged


def test_ops_that_need_a_variable_refuse_a_value() -> None:
    with ow.Graph().as_default():
        with pytest.raises(TypeError, match="requires l-value input"):
            ow.assign(ow.constant(1.0), 2.0)
        with pytest.raises(TypeError, match="l-value"):
            ow.assign_add(ow.placeholder(ow.float32), 2.0)
        v = ow.Variable(1.0)
        with ow.Session() as s, pytest.raises(ow.errors.InvalidArgumentError, match="was it fed"):
            s.run(v.assign(2.0), {v: 3.0})


def test_variable_constructor_errors() -> None:
    with ow.Graph().as_default():
        with pytest.raises(ValueError, match="initial_value must be specified"):
            ow.Variable()
        with pytest.raises(ValueError, match="must have a shape specified"):
            ow.Variable(ow.placeholder(ow.float32, [None]))
        with pytest.raises(ValueError, match="collections argument"):
            ow.Variable(1.0, collections="variables")
        with pytest.raises(TypeError):
            ow.Variable(1.5, dtype=ow.int32)
        other = ow.Graph()
        with other.as_default():
            foreign = ow.constant(1.0)
        with pytest.raises(ValueError, match="different graph"):
            ow.Variable(foreign)
        v = ow.Variable(1.0)
        with pytest.raises(TypeError, match="numpy"):
            np.asarray(v)
        with pytest.raises(TypeError, match="bool"):
            bool(v)


def test_stateful_ops_do_not_run_eagerly() -> None:
    assert not hasattr(ow.kernels, "assign_add")
    eager = ow.ops._op_def.eager_function(ow.assign_add, "assign_add")
    with pytest.raises(TypeError, match="runs only in a Session"):
        eager(np.zeros(2), np.ones(2))


# -- collections and initializers ------------------------------------------------------------------


def test_collections_and_initializers() -> None:
    with ow.Graph().as_default():
        a = ow.Variable(1.0, name="a")
        b = ow.Variable(2.0, name="b", trainable=False)
        c = ow.Variable(3.0, name="c", trainable=False, collections=[ow.GraphKeys.LOCAL_VARIABLES])
        with ow.name_scope("tower"):
            d = ow.Variable(4.0, name="d")
        assert ow.global_variables() == [a, b, d]
        assert ow.trainable_variables() == [a, d]
        assert ow.local_variables() == [c]
        assert ow.global_variables("tower") == [d]
        assert ow.get_collection(ow.GraphKeys.TRAINABLE_VARIABLES) == [a, d]
        assert ow.initialize_all_variables().type == "NoOp"
        with ow.Session() as s:
            assert sorted(s.run(ow.report_uninitialized_variables()).tolist()) == [
                b"a",
                b"b",
                b"c",
                b"tower/d",
            ]
            s.run(ow.variables_initializer([a]))
            assert s.run(ow.is_variable_initialized(a))
            assert not s.run(ow.is_variable_initialized(b))
            s.run(ow.global_variables_initializer())
            assert s.run(ow.report_uninitialized_variables()).tolist() == [b"c"]
            s.run(ow.local_variables_initializer())
            assert s.run(ow.report_uninitialized_variables()).tolist() == []
            assert s.run(ow.report_uninitialized_variables([a])).tolist() == []
        assert ow.variables_initializer([]).type == "NoOp"


def test_initializers_ignore_control_dependencies_around_them() -> None:
    with ow.Graph().as_default():
        gate = ow.placeholder(ow.float32)
        with ow.control_dependencies([gate]):
            v = ow.Variable(1.0)
        with ow.Session() as s:
            s.run(v.initializer)  # would need `gate` fed if it depended on it
            assert s.run(v) == 1.0


# -- get_variable and variable scopes --------------------------------------------------------------


def test_get_variable_creates_then_reuses_by_scope() -> None:
    with ow.Graph().as_default():
        with ow.variable_scope("layer"):
            w = ow.get_variable("w", [2, 3], initializer=const_init(0.5))
            assert w.name == "layer/w:0"
            assert w.shape.as_list() == [2, 3]
        with ow.variable_scope("layer", reuse=True):
            assert ow.get_variable("w", [2, 3]) is w
            assert ow.get_variable("w") is w
        with ow.variable_scope("layer") as scope:
            scope.reuse_variables()
            assert ow.get_variable("w") is w
        with ow.variable_scope("auto", reuse=ow.AUTO_REUSE):
            a = ow.get_variable("a", [], initializer=const_init(1.0))
            assert ow.get_variable("a", []) is a
        with ow.Session() as s:
            s.run(ow.global_variables_initializer())
            assert s.run(w).tolist() == [[0.5] * 3] * 2


def test_get_variable_errors_are_tensorflows() -> None:
    with ow.Graph().as_default():
        ow.get_variable("v", [1], initializer=const_init(0.0))
        with pytest.raises(
            ValueError, match=r"Variable v already exists, disallowed\. Did you mean"
        ):
            ow.get_variable("v", [1], initializer=const_init(0.0))
        with (
            ow.variable_scope("s", reuse=True),
            pytest.raises(
                ValueError,
                match=r"Variable s/x does not exist, or was not created with tf\.get_variable",
            ),
        ):
            ow.get_variable("x", [1])
        with ow.variable_scope("", reuse=True):
            with pytest.raises(ValueError, match="specified shape"):
                ow.get_variable("v", [2])
            with pytest.raises(ValueError, match="specified dtype"):
                ow.get_variable("v", [1], dtype=ow.int32)
        with pytest.raises(ValueError, match="do not specify shape"):
            ow.get_variable("c", [2], initializer=[1.0, 2.0])
        with pytest.raises(ValueError, match="must be fully defined"):
            ow.get_variable("u", [None], initializer=const_init(0.0))
        with pytest.raises(TypeError, match="name_or_scope is required"):
            ow.variable_scope(None)
        with pytest.raises(ValueError, match="reuse=True cannot be used without"):
            ow.variable_scope(None, default_name="d", reuse=True)


def test_variable_scope_defaults_are_inherited() -> None:
    with ow.Graph().as_default():
        with ow.variable_scope("outer", initializer=const_init(2.0), dtype=ow.float64):
            with ow.variable_scope("inner"):
                assert ow.get_variable_scope().name == "outer/inner"
                v = ow.get_variable("v", [2])
                x = ow.constant(1.0, name="x")
            i = ow.get_variable("i", [], dtype=ow.int32, initializer=const_init(3))
        with ow.variable_scope("outer", reuse=True), ow.variable_scope("inner"):
            assert ow.get_variable("v", dtype=ow.float64) is v
        assert v.name == "outer/inner/v:0"
        assert v.dtype is ow.float64
        assert x.op.name == "outer/inner/x"
        with ow.Session() as s:
            s.run(ow.global_variables_initializer())
            assert s.run(v).tolist() == [2.0, 2.0]
            assert s.run(i) == 3


def test_variable_scope_default_names_and_scope_objects() -> None:
    with ow.Graph().as_default():
        with ow.variable_scope(None, default_name="dense") as a:
            pass
        with ow.variable_scope(None, default_name="dense") as b:
            pass
        assert (a.name, b.name) == ("dense", "dense_1")
        with ow.variable_scope("model") as model:
            w = ow.get_variable("w", [], initializer=const_init(1.0))
        with ow.variable_scope(model, reuse=True):
            assert ow.get_variable("w") is w
        with ow.variable_scope("elsewhere"), ow.variable_scope(model, reuse=True):
            assert ow.get_variable_scope().name == "model"
            assert ow.get_variable("w") is w


def test_default_initializer_of_integer_variables_is_zeros() -> None:
    with ow.Graph().as_default():
        n = ow.get_variable("n", [2], dtype=ow.int64)
        local = ow.get_local_variable("epoch", [], dtype=ow.int32)
        assert local in ow.local_variables()
        assert not local.trainable
        with ow.Session() as s:
            s.run(n.initializer)
            assert s.run(n).tolist() == [0, 0]


def test_get_variable_from_a_tensor_initializer_takes_its_shape() -> None:
    with ow.Graph().as_default():
        v = ow.get_variable("v", initializer=ow.constant([[1, 2]]))
        assert v.shape.as_list() == [1, 2]
        assert v.dtype is ow.int32


def test_regularizer_adds_a_loss_and_custom_getter_wraps_creation() -> None:
    calls = []

    def getter(next_getter: Any, name: str, *args: Any, **kwargs: Any) -> Any:
        calls.append(name)
        return next_getter(name, *args, **kwargs)

    with ow.Graph().as_default():
        with ow.variable_scope("s", custom_getter=getter):
            v = ow.get_variable(
                "v", [2], initializer=const_init(3.0), regularizer=lambda w: ow.reduce_sum(w)
            )
        (loss,) = ow.get_collection(ow.GraphKeys.REGULARIZATION_LOSSES)
        assert calls == ["s/v"]
        with ow.Session() as s:
            s.run(v.initializer)
            assert s.run(loss) == 6.0


# -- gradients with respect to variables -----------------------------------------------------------


def test_gradients_with_respect_to_variables() -> None:
    with ow.Graph().as_default():
        v = ow.Variable([1.0, 2.0])
        w = ow.Variable(3.0)
        n = ow.Variable(2)
        unused = ow.Variable(0.0)
        loss = ow.reduce_sum(v * v) * w + ow.reduce_sum(v.read_value())
        gv, gw, gn, gu = ow.gradients(loss, [v, w, n, unused])
        assert gn is None
        assert gu is None
        (stopped,) = ow.gradients(loss, [w], stop_gradients=[w])
        u = ow.Variable([1.0, 3.0])
        (g_ys,) = ow.gradients(v * 2.0, [v], grad_ys=u)
        with ow.Session() as s:
            s.run(ow.global_variables_initializer())
            assert s.run(gv).tolist() == [7.0, 13.0]  # 2 * v * w + 1 (both reads)
            assert s.run(gw) == 5.0
            assert stopped is None
            assert s.run(g_ys).tolist() == [2.0, 6.0]


def test_gradient_of_an_op_without_one_is_a_lookup_error_naming_its_type() -> None:
    with ow.Graph().as_default():
        v = ow.Variable([1.0])
        y = ow.py_function(lambda x: x, [v], ow.float32)
        with pytest.raises(LookupError, match="op type: PyFunc"):
            ow.gradients(y, [v])


def test_compat_v1_exposes_the_same_api() -> None:
    import opweave.compat.v1 as tf

    assert tf.Variable is ow.Variable
    assert tf.get_variable is ow.get_variable
    assert tf.train.AdamOptimizer is ow.train.AdamOptimizer
    assert tf.GraphKeys.GLOBAL_VARIABLES == "variables"


def test_default_initializer_of_float_variables_is_glorot_uniform() -> None:
    with ow.Graph().as_default():
        ow.set_random_seed(3)
        w = ow.get_variable("w", [30, 40])
        with ow.Session() as s:
            s.run(w.initializer)
            value = s.run(w)
    limit = np.sqrt(6.0 / (30 + 40))
    assert np.abs(value).max() <= limit
    assert value.std() == pytest.approx(limit / np.sqrt(3), rel=0.1)  # uniform's spread


def test_variables_in_lists_control_dependencies_and_list_ops() -> None:
    with ow.Graph().as_default():
        v = ow.Variable([1.0, 2.0])
        w = ow.Variable(3.0)
        packed = ow.convert_to_tensor([w, 4.0])  # auto-packing takes Variables
        stacked = ow.stack([v, v])
        joined = ow.concat([v, v], 0)
        total = ow.add_n([v, v])
        with ow.control_dependencies([v]):  # the VariableV2 op, as TensorFlow
            c = ow.constant(1.0)
        assert c.op.control_inputs == (v.op,)
        with ow.Session() as s:
            s.run(ow.global_variables_initializer())
            got = s.run([packed, stacked, joined, total])
            assert got[0].tolist() == [3.0, 4.0]
            assert got[1].tolist() == [[1.0, 2.0], [1.0, 2.0]]
            assert got[2].tolist() == [1.0, 2.0, 1.0, 2.0]
            assert got[3].tolist() == [2.0, 4.0]


def test_variable_nodes_with_one_shared_name_share_the_value() -> None:
    with ow.Graph().as_default():
        a = ow.ops.state_ops.variable_op_v2([2], ow.float32, name="a", shared_name="shared")
        b = ow.ops.state_ops.variable_op_v2([2], ow.float32, name="b", shared_name="shared")
        c = ow.ops.state_ops.variable_op_v2([2], ow.float32, name="c")
        with ow.Session() as s:
            s.run(ow.assign(a, [1.0, 2.0]))
            assert s.run(b).tolist() == [1.0, 2.0]
            assert not s.run(ow.is_variable_initialized(c))
