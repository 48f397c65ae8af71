"""Graph construction: names, scopes, devices, dependencies and static shape/dtype checks."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import opweave as ow
import pytest


@pytest.fixture
def graph() -> Iterator[ow.Graph]:
    g = ow.Graph()
    with g.as_default():
        yield g


def test_ops_go_to_the_graph_made_default_and_back() -> None:
    outer = ow.get_default_graph()
    g = ow.Graph()
    with g.as_default():
        c = ow.constant(1.0)
        assert ow.get_default_graph() is g
    assert c.graph is g
    assert ow.get_default_graph() is outer


def test_names_are_unique_and_scoped(graph: ow.Graph) -> None:
    a = ow.constant(1.0)
    b = ow.constant(2.0)
    with ow.name_scope("tower") as scope:
        c = ow.constant(3.0)
        with ow.name_scope("inner"):
            d = ow.identity(c)
    with ow.name_scope("tower") as scope2:
        e = ow.constant(4.0)
    assert (a.op.name, b.op.name) == ("Const", "Const_1")
    assert scope == "tower/"
    assert c.name == "tower/Const:0"
    assert d.op.name == "tower/inner/Identity"
    assert scope2 == "tower_1/"
    assert e.op.name == "tower_1/Const"


def test_elements_are_found_by_name(graph: ow.Graph) -> None:
    x = ow.placeholder(ow.float32, shape=(2,), name="x")
    assert graph.get_tensor_by_name("x:0") is x
    assert graph.get_operation_by_name("x") is x.op
    assert graph.as_graph_element("x") is x.op
    with pytest.raises(KeyError, match="nope"):
        graph.get_operation_by_name("nope")


def test_control_dependencies_and_group_add_control_inputs(graph: ow.Graph) -> None:
    a = ow.constant(1.0, name="a")
    b = ow.constant(2.0, name="b")
    with ow.control_dependencies([a, b.op]):
        c = ow.identity(a, name="c")
        with ow.control_dependencies(None):
            d = ow.identity(a, name="d")
    g = ow.group(c, d, name="g")
    assert c.op.control_inputs == (a.op, b.op)
    assert d.op.control_inputs == ()
    assert g.control_inputs == (c.op, d.op)
    assert g.type == "NoOp"


def test_device_scopes_are_recorded_in_canonical_form(graph: ow.Graph) -> None:
    with ow.device("/CPU:1"):
        a = ow.constant(1.0)
    with ow.device("/job:localhost/replica:0/task:0/device:cpu:0"):
        b = ow.constant(1.0)
    assert a.device == "/device:CPU:1"
    assert b.device == "/device:CPU:0"
    with pytest.raises(ValueError, match="invalid device"), ow.device("gpu"):
        pass


def test_placeholder_accepts_unknown_dims_and_ranks(graph: ow.Graph) -> None:
    assert ow.placeholder(ow.float32, shape=(None, 3)).shape == (None, 3)
    assert ow.placeholder(ow.int64).shape.ndims is None


def test_operators_build_ops_with_broadcast_shapes(graph: ow.Graph) -> None:
    x = ow.placeholder(ow.float32, shape=(None, 3))
    v = ow.constant(np.ones(3, np.float32))
    m = ow.constant(np.ones((3, 4), np.float32))
    assert (x + v).op.type == "Add"
    assert (x + v).shape == (None, 3)
    assert (2.0 * x).op.type == "Mul"
    assert (x - 1.0).op.type == "Sub"
    assert (1.0 / x).op.type == "RealDiv"
    assert (-x).op.type == "Neg"
    assert (x @ m).shape == (None, 4)
    assert (x @ m).op.type == "MatMul"


def test_elementwise_shape_mismatch_names_op_and_both_shapes(graph: ow.Graph) -> None:
    a = ow.constant(np.ones((2, 3), np.float32))
    b = ow.constant(np.ones((4,), np.float32))
    with pytest.raises(
        ValueError,
        match=r"but are 3 and 4 for 'my_add' \(op: 'Add'\) with input "
        r"shapes: \[2,3\], \[4\]",
    ):
        ow.add(a, b, name="my_add")


def test_matmul_inner_dimension_mismatch_names_op_and_both_shapes(graph: ow.Graph) -> None:
    a = ow.constant(np.ones((2, 3), np.float32))
    b = ow.constant(np.ones((4, 5), np.float32))
    with pytest.raises(
        ValueError,
        match=r"but are 3 and 4 for 'MatMul' \(op: 'MatMul'\) with "
        r"input shapes: \[2,3\], \[4,5\]",
    ):
        ow.matmul(a, b)
    assert ow.matmul(b, b, transpose_b=True).shape == (4, 4)


def test_dtype_mismatch_is_type_error_naming_both_types(graph: ow.Graph) -> None:
    a = ow.constant(np.ones(2, np.float32))
    b = ow.constant(np.ones(2, np.int32))
    with pytest.raises(TypeError, match="int32 that does not match type float32"):
        _ = a + b
    with pytest.raises(TypeError, match="int32 not in list of allowed values: float32, float64"):
        ow.exp(b)
    with pytest.raises(TypeError, match="int8 not in list of allowed values: float32, float64"):
        ow.matmul(ow.constant(np.ones((2, 2), np.int8)), ow.constant(np.ones((2, 2), np.int8)))


def test_reductions_infer_shapes_and_check_axes(graph: ow.Graph) -> None:
    x = ow.placeholder(ow.float32, shape=(None, 3, 4))
    assert ow.reduce_sum(x).shape == ()
    assert ow.reduce_mean(x, axis=1).shape == (None, 4)
    assert ow.reduce_max(x, axis=[0, -1], keepdims=True).shape == (1, 3, 1)
    assert ow.reduce_min(x, axis=2).op.type == "Min"
    with pytest.raises(
        ValueError, match=r"Invalid reduction dimension 3 .* input shapes: \[\?,3,4\]"
    ):
        ow.reduce_sum(x, axis=3)


def test_shape_ops_infer_shapes(graph: ow.Graph) -> None:
    x = ow.constant(np.zeros((2, 3), np.float32))
    assert ow.reshape(x, [3, -1]).shape == (3, 2)
    assert ow.transpose(x).shape == (3, 2)
    assert ow.cast(x, ow.int64).dtype is ow.int64
    assert ow.add_n([x, x, x]).shape == (2, 3)
    with pytest.raises(ValueError, match=r"Cannot reshape a tensor with 6 elements to shape \[4\]"):
        ow.reshape(x, [4])
    with pytest.raises(ValueError, match=r"Shapes must be equal .* \[2,3\], \[3\]"):
        ow.add_n([x, ow.constant(np.zeros(3, np.float32))])
    with pytest.raises(ValueError, match="not a permutation"):
        ow.transpose(x, [0, 0])


def test_all_five_dtypes_exist() -> None:
    names = [d.name for d in (ow.float32, ow.float64, ow.int32, ow.int64, ow.bool)]
    assert names == ["float32", "float64", "int32", "int64", "bool"]
    assert ow.as_dtype(np.float64) is ow.float64
    with pytest.raises(TypeError, match="unsupported dtype"):
        ow.as_dtype(np.complex64)


def test_py_function_outputs_have_the_declared_dtypes(graph: ow.Graph) -> None:
    one = ow.py_function(lambda: 1, [], ow.int64)
    two = ow.py_function(lambda: (1, 2.0), [], [ow.int32, ow.float64])
    assert isinstance(one, ow.Tensor)
    assert one.dtype is ow.int64
    assert [t.dtype for t in two] == [ow.int32, ow.float64]


def test_tensor_cannot_be_used_as_python_bool(graph: ow.Graph) -> None:
    with pytest.raises(TypeError, match="Python bool"):
        bool(ow.constant(1.0))


def test_scalar_constants_keep_rank_zero(graph: ow.Graph) -> None:
    assert ow.constant(3.0).shape == ()
    assert (ow.placeholder(ow.int32, shape=()) * 2).shape == ()


def test_constant_dtype_inference_follows_tensorflow(graph: ow.Graph) -> None:
    assert ow.constant(1.5).dtype is ow.float32
    assert ow.constant([1, 2.5]).dtype is ow.float32
    assert ow.constant(3).dtype is ow.int32
    assert ow.constant(np.float64(1.5)).dtype is ow.float64
    assert ow.constant(np.int64(3)).dtype is ow.int64
    assert ow.constant(np.float32(1.5)).dtype is ow.float32
    assert ow.constant(np.bool_(True)).dtype is ow.bool
    assert ow.constant(-(2**31)).dtype is ow.int32
    assert ow.constant(2**31).dtype is ow.int64
    big = ow.constant([1, 2**40])
    assert big.dtype is ow.int64
    with ow.Session() as sess:
        assert sess.run(big).tolist() == [1, 2**40]
    with pytest.raises(TypeError):
        ow.constant(2**64)


def test_constant_of_explicit_dtype_never_truncates(graph: ow.Graph) -> None:
    with pytest.raises(TypeError, match=r"^Expected int32, but got 2\.5 of type 'float'\.$"):
        ow.constant(2.5, dtype=ow.int32)
    with pytest.raises(TypeError, match=r"^Expected int32, but got 2\.0 of type 'float'\.$"):
        ow.convert_to_tensor(2.0, ow.int32)
    with pytest.raises(TypeError, match=r"^Expected int32, but got 1\.5 of type 'float'\.$"):
        ow.constant([1, 1.5], dtype=ow.int32)
    with pytest.raises(TypeError, match="Expected int32"):
        ow.constant(np.array([1.5]), dtype=ow.int32)
    with pytest.raises(TypeError, match="Expected int32"):
        ow.constant(2**40, dtype=ow.int32)
    with pytest.raises(TypeError, match="Expected bool"):
        ow.constant(1, dtype=ow.bool)
    assert ow.constant(2, dtype=ow.float32).dtype is ow.float32
    assert ow.constant(np.array([1.5]), dtype=ow.float32).dtype is ow.float32


def test_python_operand_that_would_truncate_is_a_type_error(graph: ow.Graph) -> None:
    i = ow.constant([1])
    mismatch = "Input 'y' of 'Add' Op 'add(_[0-9]+)?' has type {} that does not match type {} of"
    with pytest.raises(TypeError, match=mismatch.format("float32", "int32")):
        _ = i + 2.5
    with pytest.raises(TypeError, match=mismatch.format("float32", "int32")):
        _ = i + 2.0  # TensorFlow rejects integral floats too
    with pytest.raises(TypeError, match=mismatch.format("int32", "float32")):
        _ = 2.5 + i
    with pytest.raises(TypeError, match=mismatch.format("int64", "int32")):
        _ = i + 2**40  # would wrap around in int32
    with pytest.raises(TypeError, match="float64 that does not match type int32"):
        _ = i * np.float64(2.5)
    with pytest.raises(TypeError, match="float32 that does not match type int32"):
        _ = i - [2.5]
    with pytest.raises(TypeError, match="Input 'b' of 'MatMul' Op 'MatMul' has type float32"):
        ow.matmul(ow.constant([[1]]), [[2.5]])


def test_python_operand_that_converts_without_loss_takes_the_tensor_dtype(
    graph: ow.Graph,
) -> None:
    f = ow.constant([1.0])
    i64 = ow.constant(np.array([1], np.int64))
    fetches = [f + 2, 2 + f, i64 + 2, i64 * np.int32(3), ow.matmul([[2]], ow.constant([[1.5]]))]
    assert [t.dtype for t in fetches] == [ow.float32, ow.float32, ow.int64, ow.int64, ow.float32]
    with ow.Session() as sess:
        got = sess.run(fetches)
    assert [v.tolist() for v in got] == [[3.0], [3.0], [3], [3], [[3.0]]]


def test_build_errors_name_the_uniquified_op(graph: ow.Graph) -> None:
    f = ow.constant(np.zeros((2, 3), np.float32))
    i = ow.constant([1, 2])
    b = ow.constant([True])
    ow.exp(f)
    with pytest.raises(TypeError, match="of 'Exp' Op 'Exp_1' has DataType int32 not in list"):
        ow.exp(i)
    ow.neg(f)
    with pytest.raises(TypeError, match="of 'Neg' Op 'Neg_1' has DataType bool not in list"):
        ow.neg(b)
    ow.reduce_sum(f)
    with pytest.raises(ValueError, match="for 'Sum_1' \\(op: 'Sum'\\)"):
        ow.reduce_sum(f, axis=5)
    with (
        pytest.raises(TypeError, match="of 'Mean' Op 'tower/Mean' has DataType bool"),
        ow.name_scope("tower"),
    ):
        ow.reduce_mean(b)
    ow.reshape(f, [6])
    with pytest.raises(ValueError, match="for 'Reshape_1' \\(op: 'Reshape'\\)"):
        ow.reshape(f, [4])
    with pytest.raises(
        ValueError, match=r"Only one input size may be -1.* for 'Reshape_2' \(op: 'Reshape'\)"
    ):
        ow.reshape(f, [-1, -1])
    ow.transpose(f)
    with pytest.raises(ValueError, match="for 'transpose_1' \\(op: 'Transpose'\\)"):
        ow.transpose(f, [0, 0])


def test_batched_matmul_broadcasts_batch_dims_and_applies_transposes(graph: ow.Graph) -> None:
    def shape_of(sa: tuple[int | None, ...], sb: tuple[int | None, ...], **kw: bool) -> object:
        return ow.matmul(ow.placeholder(ow.float32, sa), ow.placeholder(ow.float32, sb), **kw).shape

    assert shape_of((5, 2, 3), (5, 3, 6)) == (5, 2, 6)
    assert shape_of((5, 2, 3), (1, 3, 6)) == (5, 2, 6)
    assert shape_of((2, 3), (4, 3, 6)) == (4, 2, 6)
    assert shape_of((7, 1, 2, 3), (4, 3, 6)) == (7, 4, 2, 6)
    assert shape_of((None, 3, 2), (3, 6), transpose_a=True) == (None, 2, 6)
    assert shape_of((5, 3, 2), (5, 6, 3), transpose_a=True, transpose_b=True) == (5, 2, 6)


def test_batched_matmul_batch_mismatch_names_both_full_input_shapes(graph: ow.Graph) -> None:
    a = ow.constant(np.ones((5, 2, 3), np.float32))
    b = ow.constant(np.ones((4, 3, 6), np.float32))
    with pytest.raises(
        ValueError,
        match=r"^Dimensions must be equal, but are 5 and 4 for 'MatMul' "
        r"\(op: 'BatchMatMulV2'\) with input shapes: \[5,2,3\], \[4,3,6\]\.$",
    ):
        ow.matmul(a, b)


def test_truediv_casts_in_its_own_name_scope_and_needs_one_dtype(graph: ow.Graph) -> None:
    i = ow.constant([1, 2], name="i")
    q = i / i
    assert q.op.name == "truediv"
    assert [t.op.type for t in q.op.inputs] == ["Cast", "Cast"]
    assert [t.op.name for t in q.op.inputs] == ["truediv/Cast", "truediv/Cast_1"]
    assert (ow.constant([1.0]) / 2).op.type == "RealDiv"
    with pytest.raises(
        TypeError,
        match=r"^`x` and `y` must have the same dtype, got opweave.int32 != opweave.float32\.$",
    ):
        _ = i / 2.5
    with pytest.raises(TypeError, match=r"Invalid dtype opweave\.bool in truediv"):
        _ = ow.constant([True]) / ow.constant([True])
