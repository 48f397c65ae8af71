"""What a newcomer following the README needs to run the test modes of tests/run.sh."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _names(requirements: list[str]) -> set[str]:
    return {re.split(r"[<>=!~;\[ ]", req, maxsplit=1)[0].lower() for req in requirements}


def _pyproject() -> dict[str, Any]:
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    return tomllib.loads((ROOT / "pyproject.toml").read_text())  # type: ignore[no-any-return]


def _test_extra() -> set[str]:
    return _names(_pyproject()["project"]["optional-dependencies"]["test"])


def test_the_test_extra_installs_what_run_sh_builds_and_tests_with() -> None:
    # run.sh configures CMake with Ninja, --asan-python asks pybind11 for its CMake directory.
    assert {"pytest", "hypothesis", "cmake", "ninja", "pybind11"} <= _test_extra()


def test_the_wheel_test_group_is_the_test_extra_without_build_tools_and_integrations() -> None:
    # tests/run_wheel.sh runs with this group (cibuildwheel's test-groups, .ci/wheel): what the
    # suite needs, none of what only builds from source or the optional integrations need.
    group = _names(_pyproject()["dependency-groups"]["test-wheel"])
    assert {"pytest", "hypothesis", "threadpoolctl"} <= group <= _test_extra()
    assert not group & {"cmake", "ninja", "pybind11", "ray", "distributed", "matplotlib"}


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
