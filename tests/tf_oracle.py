"""TensorFlow in a process of its own, answering the GraphDef tests' questions.

    python tests/tf_oracle.py      (started by tests/test_graphdef_tf.py, never by hand)

TensorFlow is never imported into the test process: its threads, libraries and memory would be
there for every later test (fork tests among them). This process reads requests on stdin and
answers on stdout, each a length-prefixed ``.npz`` archive (no pickle): a JSON header in the
array ``"request"`` / ``"reply"`` and the arrays the command takes or gives.

Commands:

- ``run``: import the GraphDef ``graph_def`` (bytes as uint8) into a new TensorFlow graph, feed
  ``feed:<name>`` arrays, fetch the names in ``fetches``; reply ``out:<i>`` arrays, or
  ``error`` with TensorFlow's message (and ``stage: run`` when the import worked).
- ``registry``: TensorFlow's OpDef of each op type in ``ops``: its input arg names, which are
  lists, its attrs with their types and whether they have defaults.
- ``descriptors``: the serialized FileDescriptorProto of TensorFlow's files holding
  ``messages`` (full names), as ``file:<i>`` arrays.
- ``build``: the GraphDef bytes TensorFlow writes for the recipe ``name``, its feeds and
  TensorFlow's outputs.
- ``parse_text``: the GraphDef text ``text`` parsed by TensorFlow's classes, re-serialized.
- ``freeze``: a small model with variables (seeded values), frozen by TensorFlow's
  ``convert_variables_to_constants``: the frozen GraphDef, its feeds and TensorFlow's outputs.
- ``meta_export``: a training graph (variables, Adam, the global step, a Saver) as the
  MetaGraphDef TensorFlow writes, the variables' values after ``steps`` steps, one more step's
  feeds, and TensorFlow's loss and variables after that step.
- ``meta_import``: import the MetaGraphDef ``meta_graph`` with ``tf.train.import_meta_graph``;
  reply the saver's names, the variables collections, the collections' keys and node names, and
  the fetches' values after running the global initializer (and ``run`` ops) with the feeds.
"""

from __future__ import annotations

import io
import json
import os
import sys
from typing import Any

import numpy as np

Reply = tuple[dict[str, Any], dict[str, np.ndarray]]


def encode(header: dict[str, Any], arrays: dict[str, np.ndarray], key: str) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **{key: np.frombuffer(json.dumps(header).encode(), np.uint8)}, **arrays)
    return buf.getvalue()


def decode(data: bytes, key: str) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    with np.load(io.BytesIO(data), allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    header = json.loads(arrays.pop(key).tobytes().decode())
    return header, arrays


def _strings(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Object arrays of bytes (TensorFlow's strings) as fixed-width byte arrays for npz."""
    out = {}
    for k, v in arrays.items():
        out[k] = v.astype(np.bytes_) if v.dtype == object else v
    return out


def main() -> None:
    channel = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # TensorFlow's prints go to stderr, never into the replies
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf
    from google.protobuf import text_format
    from tensorflow.python.framework import op_def_registry

    v1 = tf.compat.v1
    v1.disable_eager_execution()
    v1.disable_resource_variables()  # TensorFlow 1's reference variables (VariableV2)

    def run(req: dict[str, Any], arrays: dict[str, np.ndarray]) -> Reply:
        graph_def = v1.GraphDef.FromString(arrays["graph_def"].tobytes())
        feeds = {k[5:]: v for k, v in arrays.items() if k.startswith("feed:")}
        g = tf.Graph()
        with g.as_default():
            v1.import_graph_def(graph_def, name="")
        try:
            with v1.Session(graph=g) as sess:
                values = sess.run(req["fetches"], feeds)
        except tf.errors.OpError as e:  # imported, but failed to run (the caller tells apart)
            return {"error": f"{type(e).__name__}: {e.message}", "stage": "run"}, {}
        return {}, _strings({f"out:{i}": np.asarray(v) for i, v in enumerate(values)})

    def registry(req: dict[str, Any], arrays: dict[str, np.ndarray]) -> Reply:
        out: dict[str, Any] = {}
        for op in req["ops"]:
            d = op_def_registry.get(op)
            if d is None:
                out[op] = None
                continue
            out[op] = {
                "inputs": [[a.name, bool(a.number_attr or a.type_list_attr)] for a in d.input_arg],
                "outputs": len(d.output_arg),
                "attrs": {a.name: [a.type, a.HasField("default_value")] for a in d.attr},
                "allowed": {
                    a.name: [int(t) for t in a.allowed_values.list.type]
                    for a in d.attr
                    if a.type == "type" and a.HasField("allowed_values")
                },
            }
        return {"registry": out}, {}

    def descriptors(req: dict[str, Any], arrays: dict[str, np.ndarray]) -> Reply:
        from google.protobuf import descriptor_pb2
        from tensorflow.core.framework import graph_pb2
        from tensorflow.core.protobuf import meta_graph_pb2, saver_pb2  # noqa: F401

        pool = graph_pb2.DESCRIPTOR.pool
        files: dict[str, bytes] = {}
        for name in req["messages"]:
            f = pool.FindMessageTypeByName(name).file
            todo = [f]
            while todo:
                f = todo.pop()
                if f.name not in files:
                    proto = descriptor_pb2.FileDescriptorProto()
                    f.CopyToProto(proto)
                    files[f.name] = proto.SerializeToString()
                    todo.extend(f.dependencies)
        return {"count": len(files)}, {
            f"file:{i}": np.frombuffer(data, np.uint8) for i, data in enumerate(files.values())
        }

    def build(req: dict[str, Any], arrays: dict[str, np.ndarray]) -> Reply:
        rng = np.random.default_rng(req.get("seed", 0))
        g = tf.Graph()
        with g.as_default():
            x = v1.placeholder(tf.float32, [None, 5], name="x")
            if req["name"] == "activations":
                w = rng.standard_normal((5, 7)).astype(np.float32)
                h = tf.matmul(x, w) + rng.standard_normal(7).astype(np.float32)
                parts = [tf.nn.relu(h), tf.tanh(h), tf.sigmoid(h), tf.exp(-(h * h))]
                y = tf.add_n(parts)
                tf.identity(tf.reduce_mean(y, axis=1, keepdims=True), name="out")
                fetches = ["out:0"]
            elif req["name"] == "transposed_matmul":
                w = rng.standard_normal((3, 5)).astype(np.float32)
                tf.matmul(x, w, transpose_b=True, name="out")
                fetches = ["out:0"]
            else:
                raise ValueError(f"no recipe {req['name']!r}")
        feeds = {"x:0": rng.standard_normal((4, 5)).astype(np.float32)}
        with v1.Session(graph=g) as sess:
            values = sess.run(fetches, feeds)
        out = {"graph_def": np.frombuffer(g.as_graph_def().SerializeToString(), np.uint8)}
        out.update({f"feed:{k}": v for k, v in feeds.items()})
        out.update({f"out:{i}": np.asarray(v) for i, v in enumerate(values)})
        return {"fetches": fetches}, out

    def parse_text(req: dict[str, Any], arrays: dict[str, np.ndarray]) -> Reply:
        graph_def = text_format.Parse(req["text"], v1.GraphDef())
        return {}, {"graph_def": np.frombuffer(graph_def.SerializeToString(), np.uint8)}

    def freeze(req: dict[str, Any], arrays: dict[str, np.ndarray]) -> Reply:
        rng = np.random.default_rng(req.get("seed", 0))
        g = tf.Graph()
        with g.as_default():
            x = v1.placeholder(tf.float32, [None, 5], name="x")
            with v1.variable_scope("dense"):
                w = v1.get_variable("w", initializer=rng.standard_normal((5, 4)).astype("f4"))
                b = v1.get_variable("b", initializer=rng.standard_normal(4).astype("f4"))
            h = tf.nn.relu(tf.matmul(x, w) + b)
            v = v1.Variable(rng.standard_normal((4, 3)).astype("f4"), name="out_w")
            tf.identity(tf.matmul(h, v), name="out")
            with v1.Session(graph=g) as sess:
                sess.run(v1.global_variables_initializer())
                frozen = v1.graph_util.convert_variables_to_constants(
                    sess, g.as_graph_def(), ["out"]
                )
        feeds = {"x:0": rng.standard_normal((3, 5)).astype(np.float32)}
        out = tf.Graph()
        with out.as_default():
            v1.import_graph_def(frozen, name="")
            with v1.Session(graph=out) as sess:
                value = sess.run("out:0", feeds)
        arrays_out = {"graph_def": np.frombuffer(frozen.SerializeToString(), np.uint8)}
        arrays_out.update({f"feed:{k}": a for k, a in feeds.items()})
        arrays_out["out:0"] = value
        return {"fetches": ["out:0"]}, arrays_out

    def meta_export(req: dict[str, Any], arrays: dict[str, np.ndarray]) -> Reply:
        rng = np.random.default_rng(req.get("seed", 0))
        g = tf.Graph()
        with g.as_default():
            x = v1.placeholder(tf.float32, [None, 5], name="x")
            y = v1.placeholder(tf.float32, [None, 2], name="y")
            with v1.variable_scope("layer1"):
                w1 = v1.get_variable("w", initializer=rng.standard_normal((5, 8)).astype("f4"))
                b1 = v1.get_variable("b", initializer=np.zeros(8, np.float32))
            h = tf.nn.relu(tf.matmul(x, w1) + b1)
            w2 = v1.Variable(rng.standard_normal((8, 2)).astype("f4"), name="w2")
            pred = tf.identity(tf.matmul(h, w2), name="pred")
            loss = tf.reduce_mean(tf.square(pred - y), name="loss")
            v1.add_to_collection("losses", loss)
            step = v1.train.get_or_create_global_step()
            train = v1.train.AdamOptimizer(0.01).minimize(loss, global_step=step)
            saver = v1.train.Saver(max_to_keep=3)
            meta = saver.export_meta_graph()
            batches = [
                {
                    "x:0": rng.standard_normal((4, 5)).astype(np.float32),
                    "y:0": rng.standard_normal((4, 2)).astype(np.float32),
                }
                for _ in range(req.get("steps", 3) + 1)
            ]
            with v1.Session(graph=g) as sess:
                sess.run(v1.global_variables_initializer())
                for feed in batches[:-1]:
                    sess.run(train, feed)
                names = [v.op.name for v in v1.global_variables()]
                before = sess.run([v.op.name + ":0" for v in v1.global_variables()])
                after_loss, _ = sess.run([loss, train], batches[-1])
                after = sess.run([v.op.name + ":0" for v in v1.global_variables()])
        out = {"meta_graph": np.frombuffer(meta.SerializeToString(), np.uint8)}
        for i, (b, a) in enumerate(zip(before, after, strict=True)):
            out[f"before:{i}"], out[f"after:{i}"] = np.asarray(b), np.asarray(a)
        out.update({f"feed:{k}": a for k, a in batches[-1].items()})
        out["loss"] = np.asarray(after_loss)
        return {"variables": names}, out

    def meta_import(req: dict[str, Any], arrays: dict[str, np.ndarray]) -> Reply:
        from tensorflow.core.protobuf import meta_graph_pb2

        meta = meta_graph_pb2.MetaGraphDef.FromString(arrays["meta_graph"].tobytes())
        feeds = {k[5:]: v for k, v in arrays.items() if k.startswith("feed:")}
        g = tf.Graph()
        with g.as_default():
            saver = v1.train.import_meta_graph(meta, import_scope=req.get("import_scope"))
            reply: dict[str, Any] = {
                "saver": None
                if saver is None
                else [
                    saver.saver_def.filename_tensor_name,
                    saver.saver_def.save_tensor_name,
                    saver.saver_def.restore_op_name,
                ],
                "global": [v.name for v in v1.global_variables()],
                "trainable": [v.name for v in v1.trainable_variables()],
                "global_step": v1.train.get_global_step().name
                if v1.train.get_global_step() is not None
                else None,
                "keys": sorted(g.get_all_collection_keys()),
                "train_op": [op.name for op in g.get_collection("train_op")],
            }
            values: list[Any] = []
            with v1.Session(graph=g) as sess:
                sess.run(v1.global_variables_initializer())
                for op in req.get("run", []):
                    sess.run(op, feeds)
                if req.get("fetches"):
                    values = sess.run(req["fetches"], feeds)
        return reply, _strings({f"out:{i}": np.asarray(v) for i, v in enumerate(values)})

    handlers = {
        "run": run,
        "registry": registry,
        "descriptors": descriptors,
        "build": build,
        "parse_text": parse_text,
        "freeze": freeze,
        "meta_export": meta_export,
        "meta_import": meta_import,
    }
    stdin = sys.stdin.buffer
    while True:
        head = stdin.read(8)
        if len(head) < 8:
            return
        req, arrays = decode(stdin.read(int.from_bytes(head, "little")), "request")
        try:
            header, out = handlers[req["cmd"]](req, arrays)
        except Exception as e:
            header, out = {"error": f"{type(e).__name__}: {e}"}, {}
        data = encode(header, out, "reply")
        channel.write(len(data).to_bytes(8, "little") + data)
        channel.flush()


if __name__ == "__main__":
    main()
