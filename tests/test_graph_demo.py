"""The (intra, inter) demo runs every setting in its own process and prints the table."""

from __future__ import annotations

import subprocess
import sys


def test_graph_demo_prints_one_row_per_setting_and_identical_results() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "opweave._demo_graph"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    rows = [line.split() for line in out.stdout.splitlines() if line[:5].strip().isdigit()]
    assert [(r[0], r[1]) for r in rows] == [
        ("1", "1"),
        ("2", "1"),
        ("1", "2"),
        ("2", "2"),
        ("1", "-1"),
    ]
    # The speedup column is relative to (1, 1): a ratio of the medians printed beside it.
    medians = [float(r[2]) for r in rows]
    for r, ms in zip(rows, medians, strict=True):
        assert abs(float(r[3].rstrip("x")) - medians[0] / ms) < 0.02  # both columns are rounded
    # What a traced run of each setting saw: inter=1 and inter<0 never run two ops at once;
    # inter=2 overlaps the py_function's 40 ms wait with the towers.
    at_once = {(r[0], r[1]): int(r[4]) for r in rows}
    assert at_once[("1", "1")] == at_once[("2", "1")] == at_once[("1", "-1")] == 1
    assert at_once[("1", "2")] == at_once[("2", "2")] == 2
    # intra=1 never splits an op.
    threads_per_op = {(r[0], r[1]): int(r[5]) for r in rows}
    assert threads_per_op[("1", "1")] == threads_per_op[("1", "2")] == 1
    assert "same result under every setting: yes" in out.stdout
