"""Run Python in a fresh interpreter under a timeout (the first-session rule, exit and signal
behaviour need a fresh process). On a timeout the child's whole process group is killed, so a
hang fails the test instead of leaving processes behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

# A runner started with SIGINT ignored (nohup, `cmd &` in a non-interactive shell, some CI agents)
# passes SIG_IGN on to its children, and Python then installs no KeyboardInterrupt handler: a child
# that is sent Ctrl-C would go on as if nothing happened. Children get Python's usual handler back.
DEFAULT_SIGINT = "import signal; signal.signal(signal.SIGINT, signal.default_int_handler)\n"


def spawn_python(code: str) -> subprocess.Popen[str]:
    """Start ``code`` in its own session (process group); pair with :func:`finish`.

    The child raises KeyboardInterrupt on SIGINT even if this process ignores SIGINT.
    """
    return subprocess.Popen(
        [sys.executable, "-c", DEFAULT_SIGINT + textwrap.dedent(code)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def finish(proc: subprocess.Popen[str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Wait for ``proc``; on a timeout kill its process group and fail the test."""
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"hung for {timeout} s (killed)\nstdout:\n{out}\nstderr:\n{err}")
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def run_python(code: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run ``code`` with ``-W error`` off (warnings are what some tests look at)."""
    return finish(spawn_python(code), timeout)
