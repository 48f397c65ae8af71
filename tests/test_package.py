"""The installed package imports and reports its version."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import opweave
import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_version_is_semver_and_matches_extension() -> None:
    from opweave import _opweave_core

    assert re.fullmatch(r"\d+\.\d+\.\d+", opweave.__version__)
    assert _opweave_core.__version__ == opweave.__version__


def test_errors_map_codes_to_tensorflow_classes() -> None:
    err = opweave.errors.error_from_code(opweave.errors.INVALID_ARGUMENT, "bad", "n1", "MatMul")
    assert isinstance(err, opweave.errors.InvalidArgumentError)
    assert "n1" in str(err)
    assert "MatMul" in str(err)
    assert isinstance(opweave.errors.error_from_code(999, "?"), opweave.errors.UnknownError)


def test_cli_demo_runs() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "opweave", "demo"], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert opweave.__version__ in out.stdout


def test_tests_run_against_the_built_package_not_the_source_tree() -> None:
    # The source tree's python/opweave has no compiled extension; a test that imported it would
    # fail at import, but one that imported a stale build beside it would pass for no reason.
    package = Path(opweave.__file__).resolve().parent
    assert package != ROOT / "python" / "opweave"
    if os.environ.get("OPWEAVE_TEST_INSTALLED_WHEEL"):  # set by tests/run_wheel.sh
        site = {Path(sysconfig.get_paths()[key]).resolve() for key in ("purelib", "platlib")}
        assert package.parent in site, f"{package} is not in {site}"


@pytest.mark.skipif(not (ROOT / "CHANGELOG.md").exists(), reason="needs the source checkout")
def test_changelog_starts_with_this_version() -> None:
    # python/opweave/_version.py is the one place the version is written (the wheel's metadata
    # and the extension's __version__ read it at build time); the changelog must follow it.
    heading = re.search(r"^## \[?(\d+\.\d+\.\d+)", (ROOT / "CHANGELOG.md").read_text(), re.M)
    assert heading is not None, "CHANGELOG.md has no '## X.Y.Z' heading"
    assert heading.group(1) == opweave.__version__
