"""What a newcomer following the README needs to run the test modes of tests/run.sh."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _test_extra() -> set[str]:
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return {
        re.split(r"[<>=!~;\[ ]", req, maxsplit=1)[0].lower()
        for req in project["optional-dependencies"]["test"]
    }


def test_the_test_extra_installs_what_run_sh_builds_and_tests_with() -> None:
    # run.sh configures CMake with Ninja, --asan-python asks pybind11 for its CMake directory.
    assert {"pytest", "hypothesis", "cmake", "ninja", "pybind11"} <= _test_extra()


@pytest.mark.skipif(not (ROOT / "tests" / "run.sh").exists(), reason="needs the source checkout")
def test_asan_python_mode_without_pybind11_stops_at_once_saying_how_to_install_it(
    tmp_path: Path,
) -> None:
    # A `python` first on PATH that cannot import pybind11 (site-packages off).
    fake = tmp_path / "python"
    fake.write_text(f'#!/bin/sh\nexec "{sys.executable}" -S "$@"\n')
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    env = {**os.environ, "PATH": f"{tmp_path}{os.pathsep}{os.environ['PATH']}"}
    out = subprocess.run(
        ["bash", str(ROOT / "tests" / "run.sh"), "--asan-python"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert out.returncode == 2, out.stderr
    assert "pybind11 is not importable" in out.stderr
    assert 'pip install ".[test]"' in out.stderr
