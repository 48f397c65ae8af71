"""The portable kernels: the installed extension imports and runs a Session on an x86-64 CPU
without AVX, where the dispatcher must pick the baseline kernels.

A wheel targets baseline x86-64 and chooses wider kernels at import by CPU detection (DESIGN.md,
Kernels). Nothing else proves that no AVX instruction leaks outside the *_avx2 / *_avx512 files
(an inlined helper, a -march flag, a toolchain that targets the build machine): this test runs
the interpreter under qemu-user emulating a Nehalem (SSE4.2, no AVX), where such an instruction
is SIGILL. qemu-user comes from the distribution's package, installed here if it is missing.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
import textwrap

import pytest

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        sys.platform != "linux" or platform.machine() not in ("x86_64", "AMD64"),
        reason="qemu-x86_64 -cpu Nehalem emulates an x86-64 CPU for Linux x86-64 programs",
    ),
]

QEMU = "qemu-x86_64"


def _install_qemu_user() -> str:
    """Install Debian's qemu-user; return why it could not be installed ('' on success)."""
    if shutil.which("apt-get") is None:
        return "no apt-get to install Debian's qemu-user with"
    if os.geteuid() != 0:
        return "installing Debian's qemu-user needs root"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "-q", "--no-install-recommends", "qemu-user"]
    # The package lists may be missing or stale (a fresh container): refresh them once on failure.
    for step in ([install], [["apt-get", "update", "-q"], install]):
        failed = ""
        for cmd in step:
            done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
            if done.returncode != 0:
                failed = f"`{' '.join(cmd)}` failed: {done.stderr.strip()[-300:]}"
                break
        if not failed:
            return ""
    return failed


@pytest.fixture(scope="module")
def qemu() -> str:
    path = shutil.which(QEMU)
    if path is None:
        why = _install_qemu_user()
        path = shutil.which(QEMU)
        if path is None:
            pytest.skip(f"{QEMU} is not installed and could not be installed: {why or 'no binary'}")
    return path


# A graph that reaches the three kernel families with ISA-specific code: the GEMM micro-kernel
# (64 x 96 @ 96 x 80 goes through packing), the unary math table (tanh) and the reductions.
_CHILD = """
import numpy as np
import opweave as ow
from opweave import _opweave_core

rng = np.random.default_rng(0)
a = rng.standard_normal((64, 96)).astype(np.float32)
w = rng.standard_normal((96, 80)).astype(np.float32) / 10
with ow.Graph().as_default() as g:
    x = ow.placeholder(ow.float32, shape=(64, 96), name="x")
    y = ow.reduce_sum(ow.tanh(ow.matmul(x, ow.constant(w))), axis=1)
with ow.Session(graph=g) as sess:
    out = sess.run(y, feed_dict={x: a})
expected = np.tanh(a.astype(np.float64) @ w.astype(np.float64)).sum(axis=1)
np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)
print(_opweave_core.runtime_info()["isa"], _opweave_core.gemm_isa("float32"), out.shape)
"""


def test_session_runs_on_the_portable_kernels_of_a_cpu_without_avx(qemu: str) -> None:
    done = subprocess.run(
        [qemu, "-cpu", "Nehalem", sys.executable, "-c", textwrap.dedent(_CHILD)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"rc={done.returncode}\n{done.stdout}\n{done.stderr}"
    assert done.stdout.split() == ["portable", "portable", "(64,)"], done.stdout
