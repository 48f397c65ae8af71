"""GraphDef against TensorFlow itself (tensorflow-cpu, tf.compat.v1 graph mode): opweave's
message definitions have TensorFlow's field numbers, every op row written by opweave imports and
runs in TensorFlow with the same results, every op definition matches TensorFlow's registry, and
graphs TensorFlow writes run in opweave with TensorFlow's results.

TensorFlow runs in a process of its own (tests/tf_oracle.py): importing it here would leave its
threads and libraries in the test process for every later test."""

from __future__ import annotations

import importlib.util
import io
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("google.protobuf", reason="protobuf is not installed (extra: graphdef)")
if importlib.util.find_spec("tensorflow") is None:
    pytest.skip("tensorflow is not installed", allow_module_level=True)

import opweave as ow
from graphdef_testing import all_cases, build_case, run
from hypothesis import given, settings
from hypothesis import strategies as st
from op_testing import SETTINGS
from opweave.graphdef._attrs import (
    NOT_EXPORTABLE,
    OPWEAVE_ONLY_ATTRS,
    OPWEAVE_ONLY_OPS,
    TF_ONLY_ATTRS,
    attr_kind,
)
from opweave.graphdef._protos import messages

ORACLE = Path(__file__).parent / "tf_oracle.py"


class Oracle:
    """The TensorFlow process: one request at a time, answers or raises with TF's message."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(ORACLE)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )

    def ask(self, request: dict[str, Any], **arrays: np.ndarray) -> tuple[dict[str, Any], Any]:
        buf = io.BytesIO()
        header = np.frombuffer(json.dumps(request).encode(), np.uint8)
        np.savez(buf, request=header, **arrays)
        data = buf.getvalue()
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.proc.stdin.write(len(data).to_bytes(8, "little") + data)
        self.proc.stdin.flush()
        head = self.proc.stdout.read(8)
        assert len(head) == 8, "the TensorFlow process died"
        with np.load(io.BytesIO(self.proc.stdout.read(int.from_bytes(head, "little")))) as z:
            out = {k: z[k] for k in z.files}
        reply = json.loads(out.pop("reply").tobytes().decode())
        return reply, out

    def close(self) -> None:
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.proc.stdin.close()  # the process ends at the end of its input
        self.proc.wait(timeout=60)
        self.proc.stdout.close()


@pytest.fixture(scope="module")
def oracle() -> Iterator[Oracle]:
    o = Oracle()
    yield o
    o.close()


def _bytes(graph_def: Any) -> np.ndarray:
    return np.frombuffer(graph_def.SerializeToString(), np.uint8)


def tf_run(
    oracle: Oracle, graph_def: Any, feeds: dict[str, np.ndarray], fetches: list[str]
) -> list[np.ndarray] | str:
    """TensorFlow's outputs, or its error message."""
    arrays = {f"feed:{k}": v for k, v in feeds.items()}
    reply, out = oracle.ask(
        {"cmd": "run", "fetches": fetches}, graph_def=_bytes(graph_def), **arrays
    )
    if "error" in reply:
        return str(reply["error"])
    return [out[f"out:{i}"] for i in range(len(fetches))]


@pytest.fixture(scope="module")
def registry(oracle: Oracle) -> dict[str, Any]:
    reply, _ = oracle.ask({"cmd": "registry", "ops": sorted(ow.ops.REGISTRY)})
    return dict(reply["registry"])


# -- the schema -------------------------------------------------------------------------------


def test_every_message_field_has_tensorflows_number_type_and_label(oracle: Oracle) -> None:
    from google.protobuf import descriptor_pb2, descriptor_pool

    names = [
        f"tensorflow.{n}"
        for n in ("GraphDef", "MetaGraphDef", "SaverDef", "CollectionDef", "VariableDef")
    ]
    _, files = oracle.ask({"cmd": "descriptors", "messages": names})
    protos = [descriptor_pb2.FileDescriptorProto.FromString(v.tobytes()) for v in files.values()]
    pool = descriptor_pool.DescriptorPool()
    pending = list(protos)
    while pending:  # add each file after its dependencies
        for p in list(pending):
            try:
                pool.Add(p)
                pending.remove(p)
            except TypeError:
                continue
    checked = 0
    seen: set[str] = set()

    def compare(mine: Any) -> None:
        nonlocal checked
        if mine.full_name in seen:
            return
        seen.add(mine.full_name)
        theirs = pool.FindMessageTypeByName(mine.full_name)
        for f in mine.fields:
            o = theirs.fields_by_name.get(f.name)
            assert o is not None, f"{mine.full_name}.{f.name} is not TensorFlow's"
            assert (f.number, f.type, f.is_repeated, f.is_packed) == (
                o.number,
                o.type,
                o.is_repeated,
                o.is_packed,
            ), f"{mine.full_name}.{f.name}"
            oneofs = [x.containing_oneof.name if x.containing_oneof else None for x in (f, o)]
            assert oneofs[0] == oneofs[1], f"{mine.full_name}.{f.name}: oneof {oneofs}"
            checked += 1
            if f.message_type is not None:
                assert f.message_type.full_name == o.message_type.full_name
                compare(f.message_type)
            if f.enum_type is not None:
                tf_values = {v.name: v.number for v in o.enum_type.values}
                for v in f.enum_type.values:
                    assert tf_values.get(v.name) == v.number, v.name

    m = messages()
    for cls in (m.GraphDef, m.MetaGraphDef, m.SaverDef, m.CollectionDef, m.VariableDef):
        compare(cls.DESCRIPTOR)
    assert checked > 70


# -- opweave's ops in TensorFlow --------------------------------------------------------------


def test_every_op_definition_matches_tensorflows_registry(registry: dict[str, Any]) -> None:
    for op_type, op_def in ow.ops.REGISTRY.items():
        if op_type in NOT_EXPORTABLE or op_type in OPWEAVE_ONLY_OPS:
            continue
        tf_op = registry[op_type]
        assert tf_op is not None, f"TensorFlow has no op {op_type}: list it in OPWEAVE_ONLY_OPS"
        assert [a.name for a in op_def.inputs] == [n for n, _ in tf_op["inputs"]], op_type
        assert [bool(a.number_attr or a.is_list) for a in op_def.inputs] == [
            lst for _, lst in tf_op["inputs"]
        ], op_type
        ours = set(op_def.attrs) | set(op_def.types)
        ours |= {str(a.number_attr) for a in op_def.inputs + op_def.outputs if a.number_attr}
        ours -= set(OPWEAVE_ONLY_ATTRS.get(op_type, {}))
        theirs = tf_op["attrs"]
        for name in ours:
            assert name in theirs, f"{op_type}.{name} is not a TensorFlow attribute"
            kind = attr_kind(op_def, name)
            assert kind == theirs[name][0], f"{op_type}.{name}: {kind} vs {theirs[name][0]}"
        for name, (_, has_default) in theirs.items():
            if name not in ours:
                assert has_default, f"{op_type}: TensorFlow requires attribute {name!r}"
                assert name in TF_ONLY_ATTRS, f"{op_type}.{name}: add it to TF_ONLY_ATTRS"


def _tf_allows(registry: dict[str, Any], graph: ow.Graph) -> bool:
    """Whether TensorFlow's ops accept every dtype of ``graph`` (opweave allows more for some)."""
    for op in graph.get_operations():
        allowed = registry.get(op.type, {}).get("allowed", {}) if registry.get(op.type) else {}
        for name, types in allowed.items():
            value = op.attrs.get(name)
            if isinstance(value, ow.DType) and value.as_datatype_enum not in types:
                return False
    return True


@pytest.mark.parametrize("case", all_cases(), ids=repr)
@settings(SETTINGS, max_examples=1)
@given(data=st.data())
def test_every_op_row_written_by_opweave_runs_in_tensorflow_with_the_same_results(
    oracle: Oracle, registry: dict[str, Any], case: Any, data: st.DataObject
) -> None:
    graph, fetches, feeds = build_case(case, data.draw)
    if case.op_type in OPWEAVE_ONLY_OPS:
        return
    want = run(graph, fetches, feeds)
    got = tf_run(oracle, graph.as_graph_def(), feeds, fetches)
    if not _tf_allows(registry, graph):
        assert isinstance(got, str)
        assert "not in the list of allowed values" in got
        return
    assert not isinstance(got, str), got
    # A stateful op (random numbers, variables) runs in TensorFlow, but its values are its own.
    stateful = any(
        ow.ops.REGISTRY[op.type].stateful
        for op in graph.get_operations()
        if op.type != "Placeholder"
    )
    for g, w, name in zip(got, want, fetches, strict=True):
        w = np.asarray(w)
        if stateful:
            assert (g.dtype, g.shape) == (w.dtype, w.shape), name
            continue
        if w.dtype == object:
            assert g.astype(object).tolist() == w.tolist(), name
            continue
        assert (g.dtype, g.shape) == (w.dtype, w.shape), name
        if w.dtype.kind == "f":
            tol = 1e-3 if w.dtype == np.float16 else 1e-5
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol, err_msg=name)
        else:
            np.testing.assert_array_equal(g, w, err_msg=name)


def test_opweaves_text_format_is_read_by_tensorflow(oracle: Oracle) -> None:
    from google.protobuf import text_format

    g = ow.Graph()
    with g.as_default():
        x = ow.placeholder(ow.float32, shape=(None, 3), name="x")
        ow.identity(ow.reduce_sum(x * 2.0, axis=1), name="y")
    text = text_format.MessageToString(g.as_graph_def())
    _, out = oracle.ask({"cmd": "parse_text", "text": text})
    assert messages().GraphDef.FromString(out["graph_def"].tobytes()) == g.as_graph_def()


# -- TensorFlow's graphs in opweave -----------------------------------------------------------


@pytest.mark.parametrize("recipe", ["activations", "transposed_matmul"])
def test_graphs_tensorflow_builds_run_in_opweave_with_its_results(
    oracle: Oracle, recipe: str
) -> None:
    reply, out = oracle.ask({"cmd": "build", "name": recipe, "seed": 3})
    graph_def = messages().GraphDef.FromString(out["graph_def"].tobytes())
    with ow.Graph().as_default() as g:
        ow.import_graph_def(graph_def, name="")
    feeds = {k[5:]: v for k, v in out.items() if k.startswith("feed:")}
    with ow.Session(graph=g) as sess:
        got = sess.run(reply["fetches"], feeds)
    for i, value in enumerate(got):
        np.testing.assert_allclose(value, out[f"out:{i}"], rtol=1e-5, atol=1e-6)


def test_an_opweave_mlp_runs_in_tensorflow(oracle: Oracle) -> None:
    rng = np.random.default_rng(5)
    g = ow.Graph()
    with g.as_default():
        x = ow.placeholder(ow.float32, shape=(None, 6), name="x")
        h = x
        for width in (16, 8):
            w = rng.standard_normal((int(h.shape[1]), width)).astype(np.float32)
            h = ow.nn.relu(ow.matmul(h, w) + rng.standard_normal(width).astype(np.float32))
        ow.identity(ow.matmul(h, rng.standard_normal((8, 2)).astype(np.float32)), name="out")
    feeds = {"x:0": rng.standard_normal((32, 6)).astype(np.float32)}
    want = run(g, ["out:0"], feeds)
    got = tf_run(oracle, g.as_graph_def(), feeds, ["out:0"])
    assert not isinstance(got, str), got
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-5)
