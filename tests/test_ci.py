""".ci/run installs exactly as the README says and fails as soon as any step fails."""

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


@pytest.mark.parametrize("failing", ["pip", "demo"])
def test_ci_stops_at_once_when_the_install_or_the_demo_fails(tmp_path: Path, failing: str) -> None:
    # A copy of .ci/run in a fake checkout, with python3 / python / pip stubs first on PATH: no
    # venv is created and nothing is installed. The step named `failing` exits 1; the test suite
    # (tests/run.sh) must then not run and the script must fail.
    (tmp_path / ".ci").mkdir()
    shutil.copy(CI, tmp_path / ".ci" / "run")
    (tmp_path / "tests").mkdir()
    log = tmp_path / "log"
    _stub(tmp_path / "tests" / "run.sh", f'echo tests >> "{log}"\n')
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    # python3 -m venv DIR: an activate script that changes nothing.
    _stub(stubs / "python3", 'mkdir -p "$3/bin" && : > "$3/bin/activate"\n')
    pip_status = 1 if failing == "pip" else 0
    demo_status = 1 if failing == "demo" else 0
    _stub(stubs / "pip", f'echo "pip $*" >> "{log}"; exit {pip_status}\n')
    _stub(
        stubs / "python",
        f'if [ "$2" = pip ]; then exit 0; fi\necho "python $*" >> "{log}"; exit {demo_status}\n',
    )
    env = {**os.environ, "PATH": f"{stubs}{os.pathsep}{os.environ['PATH']}"}
    out = subprocess.run(
        ["bash", str(tmp_path / ".ci" / "run")], env=env, capture_output=True, text=True, timeout=60
    )
    steps = log.read_text().splitlines() if log.exists() else []
    assert out.returncode != 0, steps
    assert "tests" not in steps
    assert steps[0] == "pip install .[test]"
    assert ("python -m opweave demo" in steps) == (failing == "demo")
