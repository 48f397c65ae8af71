"""The command line meets GraphDef files: ``python -m opweave inspect model.pb`` and
``python -m opweave tune model.pb --feed name:shape[:dtype]``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("google.protobuf", reason="protobuf is not installed (extra: graphdef)")

import opweave as ow
from opweave.__main__ import main
from opweave.tuning._frozen import build, parse_feed
from opweave.tuning._grid import ModelError

DATA = Path(__file__).parent / "data"


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(list(args))
    out, err = capsys.readouterr()
    return status, out, err


def _write(graph: ow.Graph, path: Path) -> Path:
    path.write_bytes(graph.as_graph_def().SerializeToString())
    return path


# -- inspect ----------------------------------------------------------------------------------


def test_inspect_lists_inputs_outputs_and_op_counts(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = _cli(capsys, "inspect", str(DATA / "mlp.pb"))
    assert status == 0
    lines = out.splitlines()
    assert lines[0].startswith(f"{DATA / 'mlp.pb'}: 12 nodes of 7 op types")
    assert lines[lines.index("inputs:") + 1].split() == ["x", "float32", "[?,8]", "Placeholder"]
    assert lines[lines.index("outputs:") + 1].split() == ["probs", "float32", "[?,4]", "Sigmoid"]
    assert "op counts: Const 4, AddV2 2, MatMul 2, Identity 1" in out
    assert "ops opweave lacks: none" in out
    assert out.rstrip().endswith("opweave can run it.")


def test_inspect_names_the_ops_opweave_lacks_and_exits_1(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    gd = ow.graphdef.read_graph_def(DATA / "mlp.pb")
    for node in gd.node:
        if node.op == "Relu":
            node.op = "FancyActivation"
    path = tmp_path / "fancy.pb"
    path.write_bytes(gd.SerializeToString())
    status, out, _ = _cli(capsys, "inspect", str(path))
    assert status == 1
    assert "ops opweave lacks: FancyActivation (1 node)" in out
    assert "probs" in out  # the interface is still listed


def test_inspect_json_and_a_graph_that_cannot_be_built(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    gd = ow.graphdef.read_graph_def(DATA / "mlp.pb")
    logits = next(n for n in gd.node if n.name == "logits")
    logits.input[0] = "nowhere"
    path = tmp_path / "broken.pbtxt"
    ow.train.write_graph(gd, tmp_path, path.name, as_text=True)
    status, out, _ = _cli(capsys, "inspect", str(path), "--json")
    assert status == 1
    summary = json.loads(out)
    assert summary["runnable"] is False
    assert "Unknown input node 'nowhere'" in summary["error"]
    assert summary["inputs"] == [
        {"name": "x", "op": "Placeholder", "dtype": "float32", "shape": "[?,8]"}
    ]


@pytest.mark.parametrize("content", [b"", None])
def test_inspect_of_an_unreadable_file_exits_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: bytes | None
) -> None:
    path = tmp_path / "model.pb"
    if content is not None:
        path.write_bytes((DATA / "mlp.pb").read_bytes()[:50])
    status, out, err = _cli(capsys, "inspect", str(path))
    assert status == 2
    assert out == ""
    assert err.startswith("opweave inspect: error:")
    assert ("truncated or corrupt" if content is not None else "No such file") in err


# -- tune -------------------------------------------------------------------------------------


def test_tune_a_frozen_model_with_random_feeds_of_the_given_shape(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, out, _ = _cli(
        capsys,
        "tune", str(DATA / "mlp.pb"), "--feed", "x:16,8", "--intra", "1", "2",
        "--inter", "1", "--runs", "2", "--warmup", "1", "--no-progress", "--json",
    )  # fmt: skip
    assert status == 0, out
    result = json.loads(out)
    assert "feeds x[16,8]; fetches probs:0" in result["description"]
    assert [(r["intra"], r["inter"], r["check"]) for r in result["rows"]] == [
        (1, 1, "reference"),
        (2, 1, "same"),
    ]


def test_tune_a_graph_with_known_shapes_needs_no_feed_and_takes_fetches(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    g = ow.Graph()
    with g.as_default():
        x = ow.placeholder(ow.float64, shape=(8, 8), name="x")
        ow.identity(ow.matmul(x, x), name="square")
        ow.reduce_sum(x, name="total")
    path = _write(g, tmp_path / "known.pb")
    status, out, _ = _cli(
        capsys,
        "tune", str(path), "--fetch", "total", "--intra", "1", "--inter", "1",
        "--runs", "1", "--warmup", "0", "--no-progress",
    )  # fmt: skip
    assert status == 0, out
    assert "feeds x[8,8]; fetches total:0" in out
    assert "recommended: intra=1 inter=1" in out


@pytest.mark.parametrize(
    ("feeds", "fetches", "message"),
    [
        ({}, None, "placeholder 'x' has shape [?,8]; give its shape with --feed x:SIZES"),
        ({"y": {"shape": [3, 8]}}, None, "--feed names ['y'], which are not placeholders"),
        (
            {"x": {"shape": [3, 9]}},
            None,
            "--feed x has shape [3, 9], but the placeholder's shape is [?,8]",
        ),
        (
            {"x": {"shape": [3, 8], "dtype": "int32"}},
            None,
            "--feed x is int32, the placeholder float32",
        ),
        ({"x": {"shape": [3, 8]}}, ["nope:0"], "--fetch 'nope:0'"),
    ],
)
def test_feed_and_fetch_mistakes_are_model_errors_saying_what_to_fix(
    feeds: dict[str, dict[str, Any]], fetches: list[str] | None, message: str
) -> None:
    with pytest.raises(ModelError) as info:
        build(str(DATA / "mlp.pb"), feeds, fetches)
    assert message in str(info.value)


def test_a_feed_mistake_stops_the_tuner_with_exit_status_2_and_no_traceback(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, out, err = _cli(
        capsys,
        "tune", str(DATA / "mlp.pb"), "--feed", "x:3,9", "--intra", "1", "--inter", "1",
        "--runs", "1", "--no-progress",
    )  # fmt: skip
    assert status == 2
    assert out == ""
    assert "--feed x has shape [3, 9], but the placeholder's shape is [?,8]" in err
    assert "Traceback" not in err
    status, _, err = _cli(capsys, "tune", str(DATA / "mlp.pb"), "--feed", "x:three")
    assert status == 2
    assert "is not a shape" in err


def test_feed_and_fetch_are_for_graphdef_models_only(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = _cli(capsys, "tune", "mlp", "--feed", "x:1,2", "--no-progress")
    assert status == 2
    assert "--feed and --fetch apply to GraphDef models" in err


def test_the_python_api_tunes_a_graphdef_file() -> None:
    result = ow.tune(
        str(DATA / "ops.pb"),
        intra=[1],
        inter=[1, 2],
        runs=1,
        warmup=0,
        progress=False,
        # integer feeds are drawn from [0, 10): 10 rows of x for the gather they index
        model_kwargs={"feeds": {"x:0": {"shape": [10, 6]}, "idx": {"shape": [3]}}},
    )
    assert [row.check for row in result.rows] == ["reference", "same"]
    assert result.model == str(DATA / "ops.pb")


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("x:256,784", ("x", {"shape": [256, 784]})),
        ("x:256x784:float64", ("x", {"shape": [256, 784], "dtype": "float64"})),
        ("ids:[32]:int64", ("ids", {"shape": [32], "dtype": "int64"})),
        ("scale::float32", ("scale", {"shape": [], "dtype": "float32"})),
        ("in:0:4,2", ("in:0", {"shape": [4, 2]})),
    ],
)
def test_parse_feed(text: str, want: tuple[str, dict[str, Any]]) -> None:
    assert parse_feed(text) == want


@pytest.mark.parametrize("text", ["x", ":3", "x:-1,3", "x:3,,4"])
def test_parse_feed_refuses_what_is_not_name_shape_dtype(text: str) -> None:
    with pytest.raises(ValueError, match="--feed"):
        parse_feed(text)


def test_build_gives_the_same_random_feeds_in_every_process() -> None:
    a = build(str(DATA / "mlp.pb"), {"x": {"shape": [3, 8]}})
    b = build(str(DATA / "mlp.pb"), {"x": {"shape": [3, 8]}})
    (va,) = a.feed_dict.values()
    (vb,) = b.feed_dict.values()
    np.testing.assert_array_equal(va, vb)
    with pytest.raises(ModelError, match="No such file"):
        build(str(DATA / "missing.pb"))
