"""The classic TensorFlow 1 programs in tests/programs/ (linear regression, logistic regression on
MNIST-shaped data, an MLP with Adam) train as they should on opweave, run as scripts too.
tests/test_against_tensorflow.py runs the same files on TensorFlow and compares."""

from __future__ import annotations

import json
import runpy
import subprocess
import sys
from pathlib import Path
from typing import Any

import opweave as ow

PROGRAMS = Path(__file__).parent / "programs"


def program(name: str) -> Any:
    """The module namespace of tests/programs/<name>.py (its main is not run)."""
    return runpy.run_path(str(PROGRAMS / f"{name}.py"), run_name=f"program_{name}")


def test_linear_regression_fits_the_tutorial_points() -> None:
    result = program("linear_regression")["main"](ow, epochs=200)
    # The least-squares line of the 17 points is about y = 0.25 x + 0.8 (cost 0.077); 200 epochs
    # of per-example SGD from (0.3, -0.2) reach cost 0.114 on their way there (as TensorFlow).
    assert result["cost"] < 0.12
    assert 0.3 < result["W"] < 0.4


def test_logistic_regression_learns_mnist_shaped_data(tmp_path: Path) -> None:
    result = program("logistic_regression")["main"](ow, data_dir=str(tmp_path))
    assert result["accuracy"] > 0.9
    assert result["cost"] < 0.5


def test_mlp_with_adam_learns_mnist_shaped_data(tmp_path: Path) -> None:
    result = program("mlp_adam")["main"](ow, data_dir=str(tmp_path))
    assert result["accuracy"] > 0.85
    assert result["cost"] < 0.6


def test_a_program_runs_as_a_script() -> None:
    proc = subprocess.run(
        [sys.executable, str(PROGRAMS / "linear_regression.py")],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["cost"] < 0.085  # 1000 epochs, the tutorial's
