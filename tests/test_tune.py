"""The tuner: every setting in a fresh process, values checked against (1, 1), an honest pick.

End-to-end tests run `python -m opweave tune` on small models and tiny grids; the recommendation
rule, the table and the plot are tested on synthetic timings. No test asserts on a timing.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import numpy as np
import opweave as ow
import pytest
from _subprocess import finish
from opweave import models
from opweave.tuning import (
    TuneError,
    TuneResult,
    TuneRow,
    _grid,
    _grid_worker,
    default_grid,
    recommend,
)

# A user's model whose settings misbehave on purpose, by the intra-op size they run under:
# intra=2 raises inside the run, intra=3 fetches other values than (1, 1), intra=4 hangs.
MISBEHAVING = """
import time
import numpy as np
import opweave as ow

def build():
    g = ow.Graph()
    with g.as_default():
        x = ow.placeholder(ow.float32, shape=(4,), name="x")

        def by_setting(v):
            n = ow.get_num_threads()
            if n == 2:
                raise RuntimeError("this setting fails on purpose")
            if n == 4:
                time.sleep(600)
            return v * (2.0 if n == 3 else 1.0)

        y = ow.py_function(by_setting, [ow.add(x, 1.0)], ow.float32, name="by_setting")
    return g, y, {x: np.arange(4, dtype=np.float32)}
"""

USER_MODEL = """
import numpy as np
import opweave as ow

def build():
    g = ow.Graph()
    with g.as_default():
        x = ow.placeholder(ow.float32, shape=(16, 16), name="x")
        y = ow.reduce_sum(ow.matmul(x, x), axis=1)
    return g, y, {x: np.ones((16, 16), np.float32)}
"""


def _tune_cli(*args: str, cwd: Path | None = None, timeout: float = 60) -> Any:
    proc = subprocess.Popen(
        [sys.executable, "-m", "opweave", "tune", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
        start_new_session=True,
    )
    return finish(proc, timeout)


def _write(path: Path, code: str) -> Path:
    path.write_text(textwrap.dedent(code))
    return path


def _row(intra: int, inter: int, ms: list[float], **kw: Any) -> TuneRow:
    return TuneRow(intra, inter, times=tuple(t / 1e3 for t in ms), **kw)


# -- the command line on the built-in models --------------------------------------------------


BUILTIN_GRIDS = {
    "mlp": ["--intra", "1", "2", "--inter", "1"],
    "wide": ["--intra", "1", "--inter", "1", "2"],
    "chain": ["--intra", "1", "--inter", "1", "-1"],
}


@pytest.fixture(scope="module")
def builtin_json(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Each built-in model, small, on a 2-setting grid, with --json (wide also with --plot)."""
    out: dict[str, Any] = {}
    for name, grid in BUILTIN_GRIDS.items():
        extra = []
        if name == "wide" and _has_matplotlib():
            extra = ["--plot", str(tmp_path_factory.mktemp("plot") / "wide.png")]
        proc = _tune_cli(
            name, "--size", "small", *grid, "--runs", "3", "--warmup", "1", "--json", *extra
        )
        out[name] = (proc, extra)
    return out


def _has_matplotlib() -> bool:
    try:
        import matplotlib.figure  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.parametrize("name", list(BUILTIN_GRIDS))
def test_cli_tunes_each_builtin_and_finds_the_same_values_everywhere(
    builtin_json: dict[str, Any], name: str
) -> None:
    proc, _ = builtin_json[name]
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    grid = BUILTIN_GRIDS[name]
    intra = [int(v) for v in grid[1 : grid.index("--inter")]]
    inter = [int(v) for v in grid[grid.index("--inter") + 1 :]]
    assert [(r["intra"], r["inter"]) for r in data["rows"]] == [
        (i, j) for i in intra for j in inter
    ]
    assert [r["check"] for r in data["rows"]] == ["reference", "same"]
    assert data["description"].startswith(models.BUILTIN[name](**models.SMALL[name]).description)
    # progress went to stderr, one line per setting (stderr is not a terminal here)
    assert "tune 1/2: intra=1 inter=1" in proc.stderr
    assert "tune 2/2" in proc.stderr


def test_cli_json_has_rows_stats_and_a_pasteable_recommendation(
    builtin_json: dict[str, Any],
) -> None:
    data = json.loads(builtin_json["chain"][0].stdout)
    assert set(data) >= {
        "model", "description", "runs", "warmup", "cpus", "tolerance", "rows", "best",
        "recommended", "reason", "config_line",
    }  # fmt: skip
    assert (data["model"], data["runs"], data["warmup"]) == ("chain", 3, 1)
    for row in data["rows"]:
        assert row["ok"] is True
        assert row["error"] is None
        assert len(row["times_ms"]) == 3
        assert row["min_ms"] <= row["q1_ms"] <= row["median_ms"] <= row["q3_ms"] <= row["max_ms"]
        # A chain cannot run two ops at once, whatever inter says.
        assert row["seen"]["max_ops_at_once"] == 1
        assert row["seen"]["op_threads"] >= 1
    assert data["rows"][0]["speedup"] == 1.0
    rec = data["recommended"]
    assert rec in [{"intra": r["intra"], "inter": r["inter"]} for r in data["rows"]]
    assert data["reason"]
    config = eval(data["config_line"], {"opweave": ow})
    assert isinstance(config, ow.ConfigProto)
    assert config.intra_op_parallelism_threads == rec["intra"]
    assert config.inter_op_parallelism_threads == rec["inter"]


def test_cli_plot_writes_a_png(builtin_json: dict[str, Any]) -> None:
    if not _has_matplotlib():
        pytest.skip("matplotlib is not installed (the optional 'plot' extra)")
    proc, extra = builtin_json["wide"]
    png = Path(extra[1])
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"heat map: {png}" in proc.stderr  # with --json, stdout stays JSON only


# -- user models ------------------------------------------------------------------------------


def test_cli_tunes_a_user_script_and_prints_the_table(tmp_path: Path) -> None:
    script = _write(tmp_path / "my_model.py", USER_MODEL)
    proc = _tune_cli(
        str(script), "--intra", "1", "2", "--inter", "1", "--runs", "2", "--no-progress"
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    lines = proc.stdout.splitlines()
    assert lines[0].startswith(f"{script}: a graph of ")
    rows = [line.split() for line in lines if line[:5].strip().isdigit()]
    assert [(r[0], r[1]) for r in rows] == [("1", "1"), ("2", "1")]
    assert [r[5] for r in rows] == ["1", "1"]  # inter=1: a traced run saw one op at a time
    assert rows[0][7] == "reference"
    assert rows[1][7] == "same"
    paste = next(line for line in lines if line.startswith("paste      : "))
    assert isinstance(eval(paste.split(": ", 1)[1], {"opweave": ow}), ow.ConfigProto)
    assert "recommended: intra=" in proc.stdout


def test_cli_tunes_an_importable_module_that_returns_a_model(tmp_path: Path) -> None:
    _write(
        tmp_path / "chain_model.py",
        """
        import opweave as ow

        def build():
            return ow.models.tiny_chain(length=5)
        """,
    )
    proc = _tune_cli("chain_model", "--intra", "1", "--inter", "1", "--runs", "2", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "chain_model: chain: 5 tiny element-wise ops" in proc.stdout


def test_python_api_returns_a_typed_result(tmp_path: Path) -> None:
    stream = io.StringIO()
    result = ow.tune(
        "chain", intra=[1, 2], inter=1, runs=2, warmup=0, model_kwargs={"length": 4},
        progress=stream,
    )  # fmt: skip
    assert isinstance(result, TuneResult)
    assert [(r.intra, r.inter) for r in result.rows] == [(1, 1), (2, 1)]
    assert all(r.ok and len(r.times) == 2 for r in result.rows)
    assert [r.check for r in result.rows] == ["reference", "same"]
    assert result.recommended in result.rows
    config = result.to_config()
    assert (config.intra_op_parallelism_threads, config.inter_op_parallelism_threads) == (
        result.recommended.intra,
        result.recommended.inter,
    )
    assert result.config_line() in str(result)
    assert stream.getvalue().splitlines()[-1].startswith("tune 2/2: intra=2 inter=1 median ")


def test_python_api_takes_a_module_level_build_function(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(tmp_path / "user_models_for_tune.py", USER_MODEL)
    monkeypatch.syspath_prepend(str(tmp_path))
    import user_models_for_tune  # type: ignore[import-not-found]

    result = ow.tune(user_models_for_tune.build, intra=1, inter=1, runs=1, progress=False)
    assert result.model == "user_models_for_tune.build"
    assert result.rows[0].ok, result.rows[0].error


def test_a_script_may_tune_its_own_build_function(tmp_path: Path) -> None:
    script = _write(
        tmp_path / "self_tuning.py",
        USER_MODEL
        + textwrap.dedent(
            """
            if __name__ == "__main__":  # the workers run this file under another name
                result = ow.tune(build, intra=1, inter=1, runs=1, progress=False)
                print("recommended:", result.recommended.label, result.rows[0].check)
            """
        ),
    )
    proc = finish(
        subprocess.Popen(
            [sys.executable, str(script)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        ),
        60,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "recommended: intra=1 inter=1 reference"


def test_ctrl_c_stops_the_tuner_and_kills_the_running_worker(tmp_path: Path) -> None:
    script = _write(tmp_path / "misbehaving.py", MISBEHAVING)
    # A child of a background job may inherit SIGINT ignored: set Python's Ctrl-C handler.
    code = (
        "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
        "from opweave.__main__ import main; "
        f"sys.exit(main(['tune', {str(script)!r}, '--intra', '4', '--inter', '1']))"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 30
        workers: list[int] = []
        while not workers and time.monotonic() < deadline:
            time.sleep(0.1)
            workers = _children(proc.pid)
        assert workers, "no worker process started"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode == 130
    assert "opweave tune: interrupted" in err
    time.sleep(0.5)
    assert not [pid for pid in workers if _running(pid)]


def _children(parent: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                stat = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
                if int(stat[1]) == parent and stat[0] != "Z":
                    found.append(int(entry))
    return found


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_grid_always_includes_the_reference_setting_first() -> None:
    from opweave.tuning import grid_cells

    assert grid_cells([2, 4], [2]) == [(1, 1), (2, 2), (4, 2)]
    assert grid_cells([1, 2], [1, 2]) == [(1, 1), (1, 2), (2, 1), (2, 2)]


def test_default_grid_is_one_to_n_on_few_cpus_then_powers_of_two() -> None:
    assert default_grid(1) == [1, 2]
    assert default_grid(2) == [1, 2]
    assert default_grid(3) == [1, 2, 3]
    assert default_grid(16) == [1, 2, 4, 8, 16]
    assert default_grid(6) == [1, 2, 4, 6]


# -- errors -----------------------------------------------------------------------------------


def test_unknown_builtin_lists_the_valid_ones() -> None:
    proc = _tune_cli("resnet")
    assert proc.returncode == 2
    assert "'resnet' is not a built-in model (mlp, wide, chain)" in proc.stderr
    with pytest.raises(TuneError, match=r"not a built-in model \(mlp, wide, chain\)"):
        ow.tune("resnet", progress=False)


def test_missing_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(TuneError, match="no such file"):
        ow.tune(str(tmp_path / "absent.py"), progress=False)


def test_file_without_build_stops_the_tuner_with_a_clear_error(tmp_path: Path) -> None:
    script = _write(tmp_path / "nobuild.py", "x = 1\n")
    proc = _tune_cli(str(script), "--intra", "1", "2", "--inter", "1")
    assert proc.returncode == 2
    assert "nobuild.py has no build(): a model file or module must define build()" in proc.stderr
    assert "tune 1/" not in proc.stderr  # it stopped at the first setting


def test_build_returning_the_wrong_thing_is_an_error(tmp_path: Path) -> None:
    script = _write(tmp_path / "wrong.py", "def build():\n    return 42\n")
    proc = _tune_cli(str(script), "--intra", "1", "--inter", "1")
    assert proc.returncode == 2
    assert (
        "wrong.py: build() returned int; expected (graph, fetches, feed_dict) or an "
        "opweave.models.Model" in proc.stderr
    )


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ((1, 2), "build() returned 2 items"),
        ([ow.Graph(), None, {}], "build() returned None as the fetches"),
        (("graph", 1, {}), "the graph build() returned is a str, not an opweave.Graph"),
        ((ow.Graph(), 1, [1]), "the feed_dict build() returned is a list, not a dict"),
    ],
)
def test_build_results_are_checked(value: object, message: str) -> None:
    with pytest.raises(TuneError, match=message.replace("(", r"\(").replace(")", r"\)")):
        _grid_worker.as_model(value, "m.py")


def test_a_build_function_a_fresh_process_cannot_find_is_refused() -> None:
    with pytest.raises(TuneError, match="lambda or a nested function"):
        ow.tune(lambda: None, progress=False)
    with pytest.raises(TypeError, match="not a built Model"):
        ow.tune(models.tiny_chain(length=2), progress=False)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"intra": [1.5]}, TypeError),
        ({"intra": [-1]}, ValueError),
        ({"runs": 0}, ValueError),
        ({"warmup": -1}, ValueError),
        ({"timeout": 0}, ValueError),
        ({"model_kwargs": {"f": object()}}, TypeError),
    ],
)
def test_bad_arguments_are_refused_before_any_process_starts(
    kwargs: dict[str, Any], error: type[Exception]
) -> None:
    with pytest.raises(error):
        ow.tune("chain", progress=False, **kwargs)


@pytest.fixture(scope="module")
def misbehaving(tmp_path_factory: pytest.TempPathFactory) -> Any:
    script = _write(tmp_path_factory.mktemp("user") / "misbehaving.py", MISBEHAVING)
    return _tune_cli(
        str(script), "--intra", "1", "2", "3", "4", "--inter", "1", "--runs", "2",
        "--timeout", "5", "--json",
    )  # fmt: skip


def _rows(proc: Any) -> dict[int, dict[str, Any]]:
    return {r["intra"]: r for r in json.loads(proc.stdout)["rows"]}


def test_a_failing_setting_shows_its_stderr_and_the_others_are_still_reported(
    misbehaving: Any,
) -> None:
    assert misbehaving.returncode == 1
    rows = _rows(misbehaving)
    assert rows[2]["ok"] is False
    assert rows[2]["error"].startswith("worker exited with status 1; stderr:")
    assert "RuntimeError: this setting fails on purpose" in rows[2]["error"]
    assert rows[1]["ok"] is True
    assert rows[3]["ok"] is True


def test_a_hanging_setting_is_killed_at_its_timeout(misbehaving: Any) -> None:
    row = _rows(misbehaving)[4]
    assert row["ok"] is False
    assert row["error"].startswith("timed out after 5 s (worker killed)")


def test_other_values_from_a_py_function_model_are_flagged_as_differences_not_bugs(
    misbehaving: Any,
) -> None:
    # The py_function returns other values at intra=3: the kernels are not at fault, so the
    # tuner says what differs and why, and does not call it a bug.
    row = _rows(misbehaving)[3]
    assert row["check"] == "differs"
    assert "max |difference| 4 at index (3,), 4 of 4 elements differ" in row["mismatch"]
    assert "cannot vouch for: py_function 'by_setting'" in row["mismatch"]


def test_a_difference_explained_by_the_model_is_not_called_a_bug_and_may_be_recommended() -> None:
    result = TuneResult(
        "m",
        "synthetic",
        (
            _row(1, 1, [10, 10, 10]),
            _row(2, 1, [4, 4, 4], check="differs", mismatch="fetch: ...; py_function 'f'"),
        ),
        runs=3,
    )
    text = str(result)
    assert "DIFFERS intra=2 inter=1: its values differ from (1, 1)'s" in text
    assert "(not a bug of the kernels): fetch: ...; py_function 'f'" in text
    assert "MISMATCH" not in text
    assert result.mismatches == ()
    assert result.recommended is not None
    assert result.recommended.intra == 2


HELPER_STARTING = """
import subprocess, sys
import numpy as np
import opweave as ow

def build():
    # A helper that outlives the worker and inherits its stdout and stderr, as a model that
    # starts a server or a prefetcher might; the tuner must not wait for it.
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep({seconds})"])
    g = ow.Graph()
    with g.as_default():
        x = ow.placeholder(ow.float32, shape=(4,), name="x")
        y = ow.identity(x * 2.0)
    return g, y, {{x: np.arange(4, dtype=np.float32)}}
"""


@pytest.mark.parametrize("seconds", [20, 100_000], ids=["short_helper", "long_lived_helper"])
def test_a_helper_process_holding_the_workers_output_neither_delays_nor_fails_a_setting(
    tmp_path: Path, seconds: int
) -> None:
    script = _write(tmp_path / "helper_model.py", HELPER_STARTING.format(seconds=seconds))
    t0 = time.monotonic()
    proc = _tune_cli(str(script), "--intra", "1", "--inter", "1", "--runs", "2", "--timeout",
                     "10", "--json")  # fmt: skip
    assert time.monotonic() - t0 < 15, "the tuner waited for the helper, not for its worker"
    assert proc.returncode == 0, proc.stderr
    (row,) = json.loads(proc.stdout)["rows"]
    assert row["ok"] is True
    assert row["error"] is None


def test_table_names_failures_and_mismatches() -> None:
    result = TuneResult(
        "m",
        "synthetic",
        (
            _row(1, 1, [10, 10, 10]),
            _row(2, 1, [], error="worker exited with status 1; stderr:\nline 1\nBoom: no"),
            _row(3, 1, [5, 5, 5], check="mismatch", mismatch="fetch: max |difference| 1"),
        ),
        runs=3,
    )
    text = str(result)
    assert (
        "FAILED intra=2 inter=1: worker exited with status 1; stderr:\n  | line 1\n  | Boom: no"
        in text
    )
    assert "MISMATCH intra=3 inter=1: its values differ from (1, 1)'s" in text
    assert "paste      : opweave.ConfigProto(intra_op_parallelism_threads=1, " in text


def test_every_setting_failing_means_no_recommendation() -> None:
    result = TuneResult("m", "synthetic", (_row(1, 1, [], error="timed out"),))
    assert result.recommended is None
    assert "no recommendation" in str(result)
    with pytest.raises(TuneError, match="nothing to recommend"):
        result.config_line()
    with pytest.raises(TuneError, match="nothing to recommend"):
        result.to_config()
    assert json.loads(json.dumps(result.to_dict(), allow_nan=False))["config_line"] is None


# -- the recommendation rule ------------------------------------------------------------------


def test_a_clear_winner_is_recommended_with_its_speedup() -> None:
    rows = [_row(1, 1, [100, 101, 102]), _row(2, 1, [50, 51, 52]), _row(1, 2, [90, 91, 92])]
    row, why = recommend(rows)
    assert row is rows[1]
    assert why == "intra=2: 1.98x faster than intra=1"


def test_fewer_threads_within_tolerance_beat_the_fastest() -> None:
    rows = [
        _row(1, 1, [100, 100, 100]),
        _row(1, 2, [51, 51, 51]),
        _row(2, 2, [50, 50, 50]),
    ]
    row, why = recommend(rows, tolerance=0.03)
    assert row is rows[1]
    assert why == (
        "inter=2: 1.96x faster than inter=1; "
        "intra=2 inter=2 is only 2.0% faster (< 3%): not worth more threads"
    )
    assert recommend(rows, tolerance=0.01)[0] is rows[2]


def test_overlapping_spread_counts_as_noise_beyond_the_tolerance() -> None:
    rows = [_row(1, 1, [50, 58, 62, 70]), _row(2, 1, [50, 52, 58, 60])]
    row, why = recommend(rows)
    assert row is rows[0]
    assert why == (
        "intra=2 inter=1 leads by 9.1%, within the run-to-run spread (IQRs overlap): "
        "not worth more threads"
    )


def test_the_reference_wins_when_nothing_is_faster() -> None:
    rows = [_row(1, 1, [10, 10, 10]), _row(2, 1, [11, 11, 11]), _row(1, 2, [12, 12, 12])]
    row, why = recommend(rows)
    assert row is rows[0]
    assert why == "the fastest setting; more threads do not pay off on this graph"


def test_equal_thread_counts_within_noise_pick_the_faster() -> None:
    rows = [
        _row(1, 1, [100, 100]),
        _row(1, 2, [50.5, 50.5]),
        _row(2, 1, [50.2, 50.2]),
        _row(2, 2, [50, 50]),
    ]
    assert recommend(rows)[0] is rows[2]


def test_zero_counts_as_every_cpu() -> None:
    rows = [_row(1, 1, [100, 100]), _row(0, 1, [30, 30]), _row(4, 1, [30.5, 30.5])]
    assert recommend(rows, cpus=8)[0] is rows[2]
    assert recommend(rows, cpus=2)[0] is rows[1]


def test_failed_and_mismatched_settings_are_never_recommended() -> None:
    rows = [
        _row(1, 1, [100, 100]),
        _row(2, 1, [], error="worker exited with status 1"),
        _row(1, 2, [10, 10], check="mismatch", mismatch="differs"),
        _row(2, 2, [60, 60], check="same"),
    ]
    assert recommend(rows)[0] is rows[3]


def test_speedup_and_json_hold_nan_as_null() -> None:
    result = TuneResult("m", "d", (_row(1, 1, [], error="x"), _row(2, 1, [5, 5])))
    assert math.isnan(result.speedup(result.rows[1]))
    assert "       -  " in str(result)
    data = json.loads(json.dumps(result.to_dict(), allow_nan=False))
    assert data["rows"][0]["median_ms"] is None
    assert data["rows"][1]["speedup"] is None


# -- the plot, the progress bar, value comparison ------------------------------------------


def _synthetic_result() -> TuneResult:
    return TuneResult(
        "m",
        "synthetic",
        (
            _row(1, 1, [10, 11]),
            _row(1, 2, [6, 6]),
            _row(2, 1, [], error="boom"),
            _row(2, 2, [5, 5], check="mismatch", mismatch="x"),
            _row(1, -1, [10, 10]),
        ),
        runs=2,
    )


def test_plot_writes_a_png(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="matplotlib is not installed (the 'plot' extra)")
    path = _synthetic_result().plot(tmp_path / "heat.png")
    assert path == tmp_path / "heat.png"
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_without_matplotlib_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(ImportError, match=r"pip install 'opweave\[plot\]'"):
        _synthetic_result().plot(tmp_path / "heat.png")
    assert not (tmp_path / "heat.png").exists()


def test_cli_plot_without_matplotlib_fails_before_measuring(tmp_path: Path) -> None:
    fake = tmp_path / "fake" / "matplotlib"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('no matplotlib here')\n")
    proc = subprocess.run(
        [sys.executable, "-c",
         f"import sys; sys.path.insert(0, {str(fake.parent)!r}); from opweave.__main__ import main;"
         f" sys.exit(main(['tune', 'chain', '--plot', {str(tmp_path / 'x.png')!r}]))"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert proc.returncode == 2
    assert "pip install 'opweave[plot]'" in proc.stderr
    assert "tune 1/" not in proc.stderr


def test_progress_bar_redraws_in_place_on_a_terminal() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    stream = Tty()
    bar = _grid.Progress(stream)
    bar.start(0, 2, 1, 1)
    bar.done(0, 2, _grid.CellRun(1, 1, times=(0.001,)))
    bar.start(1, 2, 2, 1)
    bar.done(1, 2, _grid.CellRun(2, 1, error="x"))
    text = stream.getvalue()
    assert "\rtune [....................] 0/2  running intra=1 inter=1" in text
    assert "\rtune [##########..........] 1/2  running intra=2 inter=1" in text
    assert "\n" not in text
    assert text.endswith("\r")  # the bar is erased at the end


def test_values_compare_bit_for_bit_and_say_where_they_differ() -> None:
    a = {"fetch": np.array([1.0, np.nan, 3.0])}
    assert _grid.compare_values(a, {"fetch": np.array([1.0, np.nan, 3.0])}) is None
    assert _grid.compare_values(a, {"fetch": np.array([1.0, np.nan, 3.5])}) == (
        "fetch: max |difference| 0.5 at index (2,), 1 of 3 elements differ"
    )
    assert "float32[3] vs float64[3]" in str(
        _grid.compare_values(a, {"fetch": np.zeros(3, np.float32)})
    )
    assert "fetched ['fetch[0]']" in str(_grid.compare_values(a, {"fetch[0]": a["fetch"]}))
