"""parallel_info() shows every pool: the global intra-op and inter-op pools, named pools and
per-session pools, each with its size and the rule that chose it.
Each case runs in a fresh process, so the first-Session rule starts clean."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import opweave
import pytest

pytestmark = pytest.mark.skipif(not hasattr(opweave, "Session"), reason="needs the graph runtime")

SESSION = """
import gc
import opweave

def run(config):
    with opweave.Graph().as_default():
        c = opweave.constant(1.0) + opweave.constant(2.0)
        sess = opweave.Session(config=config)
        assert sess.run(c) == 3.0
    return sess
"""


def _run(body: str, **env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OPWEAVE_", "OMP_"))}
    out = subprocess.run(
        [sys.executable, "-c", SESSION + textwrap.dedent(body)],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return out.stdout


def _line(info: str, start: str) -> str:
    (line,) = [ln for ln in info.splitlines() if ln.startswith(start)]
    return line


def test_global_pools_show_the_first_sessions_config_as_their_rule() -> None:
    info = _run(
        """
        run(opweave.ConfigProto(intra_op_parallelism_threads=2, inter_op_parallelism_threads=3))
        print(opweave.parallel_info())
        """,
        OPWEAVE_NUM_INTRAOP_THREADS="5",
    )
    intra = _line(info, "intra-op parallelism")
    inter = _line(info, "inter-op parallelism")
    assert "2 threads per op" in intra
    assert "ConfigProto" in intra
    assert "3 ops at once" in inter
    assert "ConfigProto" in inter


def test_named_pools_are_listed_with_their_size_and_rule() -> None:
    info = _run(
        """
        pools = [opweave.ThreadPoolOptionProto(num_threads=2, global_name="io")]
        s = run(opweave.ConfigProto(session_inter_op_thread_pool=pools))
        print(opweave.parallel_info())
        """
    )
    line = _line(info, "named inter-op pool")
    assert "'io' 2 workers" in line
    assert "ThreadPoolOptionProto(num_threads=2, global_name='io')" in line


def test_per_session_pools_are_listed_while_their_session_lives() -> None:
    out = _run(
        """
        s = run(opweave.ConfigProto(use_per_session_threads=True, inter_op_parallelism_threads=3))
        print(opweave.parallel_info())
        print("-- closed --")
        s.close()
        del s
        gc.collect()
        print(opweave.parallel_info())
        """
    )
    alive, closed = out.split("-- closed --")
    line = _line(alive, "session inter-op pool")
    assert "3 workers" in line
    assert "use_per_session_threads" in line
    assert "session inter-op pool" not in closed


def test_every_parallel_info_line_has_its_key_in_the_same_column() -> None:
    info = _run(
        """
        a = run(opweave.ConfigProto(use_per_session_threads=True, inter_op_parallelism_threads=2))
        pools = [opweave.ThreadPoolOptionProto(num_threads=1, global_name="io")]
        s = run(opweave.ConfigProto(session_inter_op_thread_pool=pools))
        print(opweave.parallel_info())
        """
    )
    lines = info.strip().splitlines()[1:]  # after the version line
    assert any(ln.startswith("session inter-op pool") for ln in lines), info
    assert any(ln.startswith("named inter-op pool") for ln in lines), info
    assert {ln.index(": ") for ln in lines} == {21}, info


def test_python_m_opweave_info_prints_the_same_pools_as_parallel_info() -> None:
    out = _run(
        """
        import contextlib, io, json
        from opweave.__main__ import main
        pools = [opweave.ThreadPoolOptionProto(num_threads=1, global_name="cli")]
        s = run(opweave.ConfigProto(session_inter_op_thread_pool=pools))
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            main(["info"])
        print(json.dumps([printed.getvalue().strip(), opweave.parallel_info().strip()]))
        """
    )
    printed, info = json.loads(out.strip().splitlines()[-1])
    assert printed == info
    assert "'cli' 1 workers" in _line(printed, "named inter-op pool")


def test_config_experimental_spin_time_beats_the_environment_and_shows_its_rule() -> None:
    info = _run(
        """
        config = opweave.ConfigProto()
        config.experimental.spin_time_us = 0
        run(config)
        print(opweave.parallel_info())
        """,
        OPWEAVE_SPIN_TIME_US="100",
    )
    line = _line(info, "spin before parking")
    assert "0 us" in line
    assert "experimental.spin_time_us=0" in line


def test_config_experimental_spin_time_keyword_spelling() -> None:
    info = _run(
        """
        exp = opweave.ConfigProto.Experimental(spin_time_us=7)
        run(opweave.ConfigProto(experimental=exp))
        print(opweave.parallel_info())
        """
    )
    assert "7 us" in _line(info, "spin before parking")


def test_later_sessions_do_not_change_the_spin_time() -> None:
    info = _run(
        """
        run(opweave.ConfigProto())
        config = opweave.ConfigProto()
        config.experimental.spin_time_us = 0
        run(config)
        print(opweave.parallel_info())
        """,
        OPWEAVE_SPIN_TIME_US="100",
    )
    assert "100 us [OPWEAVE_SPIN_TIME_US=100]" in _line(info, "spin before parking")
