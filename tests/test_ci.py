""".ci/run installs exactly as the README says, then runs the wheel stage, and fails as soon as
any step fails."""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CI = ROOT / ".ci" / "run"
README = ROOT / "README.md"

pytestmark = pytest.mark.skipif(not CI.exists(), reason="not a source checkout (no .ci/run)")


def _readme_install_line() -> str:
    """The README's first command, without its trailing comment."""
    block = re.search(r"## Quick start.*?```bash\n(.*?)```", README.read_text(), re.S)
    assert block is not None, "README has no Quick start command block"
    return block.group(1).splitlines()[0].split("#")[0].strip()


def test_ci_runs_the_readme_install_command_verbatim() -> None:
    line = _readme_install_line()
    assert line == 'pip install ".[test]" && python -m opweave demo'
    assert line in CI.read_text()


def _stub(path: Path, body: str) -> None:
    path.write_text("#!/usr/bin/env bash\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def _run_ci_copy(tmp_path: Path, failing: str) -> tuple[int, list[str]]:
    """Run a copy of .ci/run in a fake checkout; return its status and the steps it ran.

    python3 / python / pip stubs come first on PATH, so no venv is created and nothing is
    installed; tests/run.sh and .ci/wheel are stubs too. The step named `failing` exits 1.
    """
    (tmp_path / ".ci").mkdir()
    shutil.copy(CI, tmp_path / ".ci" / "run")
    (tmp_path / "tests").mkdir()
    log = tmp_path / "log"
    status = {step: int(step == failing) for step in ("pip", "demo", "tests", "wheel")}
    _stub(tmp_path / "tests" / "run.sh", f'echo tests >> "{log}"; exit {status["tests"]}\n')
    _stub(tmp_path / ".ci" / "wheel", f'echo wheel >> "{log}"; exit {status["wheel"]}\n')
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    # python3 -m venv DIR: an activate script that changes nothing.
    _stub(
        stubs / "python3", 'mkdir -p "$3/bin" && echo "deactivate() { :; }" > "$3/bin/activate"\n'
    )
    _stub(stubs / "pip", f'echo "pip $*" >> "{log}"; exit {status["pip"]}\n')
    _stub(
        stubs / "python",
        f'if [ "$2" = pip ]; then exit 0; fi\necho "python $*" >> "{log}"; exit {status["demo"]}\n',
    )
    env = {**os.environ, "PATH": f"{stubs}{os.pathsep}{os.environ['PATH']}"}
    out = subprocess.run(
        ["bash", str(tmp_path / ".ci" / "run")], env=env, capture_output=True, text=True, timeout=60
    )
    return out.returncode, log.read_text().splitlines() if log.exists() else []


@pytest.mark.parametrize("failing", ["pip", "demo"])
def test_ci_stops_at_once_when_the_install_or_the_demo_fails(tmp_path: Path, failing: str) -> None:
    # The test suite (tests/run.sh) and the wheel stage must then not run, and CI must fail.
    status, steps = _run_ci_copy(tmp_path, failing)
    assert status != 0, steps
    assert "tests" not in steps
    assert "wheel" not in steps
    assert steps[0] == "pip install .[test]"
    assert ("python -m opweave demo" in steps) == (failing == "demo")


def test_ci_runs_the_wheel_stage_after_the_readme_commands(tmp_path: Path) -> None:
    status, steps = _run_ci_copy(tmp_path, failing="none")
    assert status == 0, steps
    assert steps == ["pip install .[test]", "python -m opweave demo", "tests", "wheel"]


@pytest.mark.parametrize("failing", ["tests", "wheel"])
def test_ci_fails_when_the_tests_or_the_wheel_stage_fail(tmp_path: Path, failing: str) -> None:
    status, steps = _run_ci_copy(tmp_path, failing)
    assert status != 0, steps
    assert ("wheel" in steps) == (failing == "wheel")
