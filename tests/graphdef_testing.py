"""Shared by the GraphDef tests: every op row of tests/test_ops_*.py built as a graph, and the
same graph after a trip through a GraphDef."""

from __future__ import annotations

import importlib
import pathlib
from typing import Any

import numpy as np
import opweave as ow
from hypothesis import strategies as st
from op_testing import OpCase, draw_inputs


def all_cases() -> list[OpCase]:
    """Every OpCase row of every ``tests/test_ops_*.py`` (the ops other helpers add included)."""
    cases: list[OpCase] = []
    for path in sorted(pathlib.Path(__file__).parent.glob("test_ops_*.py")):
        module = importlib.import_module(path.stem)
        cases.extend(getattr(module, "CASES", []))
    return cases


def build_case(case: OpCase, draw: st.DrawFn) -> tuple[ow.Graph, list[str], dict[str, np.ndarray]]:
    """The row's op on placeholders ``in_0, in_1, ...``: (graph, fetch names, feeds by name)."""
    arrays, kwargs, _ = draw_inputs(case, draw)
    graph = ow.Graph()
    with graph.as_default():
        phs = [
            ow.placeholder(ow.as_dtype(a.dtype), shape=a.shape, name=f"in_{i}")
            for i, a in enumerate(arrays)
        ]
        out = case.fn(*phs, **kwargs)
    outs = out if isinstance(out, (list, tuple)) else [out]
    fetches = [t.name for t in outs if isinstance(t, ow.Tensor)]
    return graph, fetches, {f"in_{i}:0": a for i, a in enumerate(arrays)}


def run(graph: ow.Graph, fetches: list[str], feeds: dict[str, Any]) -> list[Any]:
    with ow.Session(graph=graph) as sess:
        return list(sess.run(fetches, feeds))


def round_trip(graph: ow.Graph) -> ow.Graph:
    """``graph`` written as GraphDef bytes and read back into a new graph, names unchanged."""
    data = graph.as_graph_def().SerializeToString()
    copy = ow.Graph()
    with copy.as_default():
        ow.import_graph_def(data, name="")
    return copy


def assert_same_bits(got: list[Any], want: list[Any]) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        g, w = np.asarray(g), np.asarray(w)
        assert (g.dtype, g.shape) == (w.dtype, w.shape)
        if w.dtype == object:
            assert g.tolist() == w.tolist()
        else:
            np.testing.assert_array_equal(
                np.ascontiguousarray(g).reshape(-1).view(np.uint8),
                np.ascontiguousarray(w).reshape(-1).view(np.uint8),
            )
