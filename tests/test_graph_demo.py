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
    assert rows[0][3] == "1.00x"
    assert "same result under every setting: yes" in out.stdout
