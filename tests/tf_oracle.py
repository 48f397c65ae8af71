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

    handlers = {
        "run": run,
        "registry": registry,
        "descriptors": descriptors,
        "build": build,
        "parse_text": parse_text,
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
