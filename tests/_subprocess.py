"""Run a snippet in a fresh interpreter (the first-session rule needs a fresh process)."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def run_python(code: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run ``code`` with ``-W error`` off (warnings are what some tests look at)."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
