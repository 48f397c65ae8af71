"""Run one graph under several (intra, inter) settings, each setting in a fresh process.

The first Session of a process sizes the global pools (TensorFlow's rule), so comparing settings
honestly needs one process per setting. This module is the parent side, shared by
``python -m opweave demo`` and the tuner (``opweave.tune``, ``python -m opweave tune``):

- :class:`Target` says how a fresh process rebuilds the model: a built-in model's name, a ``.py``
  file or an importable module exposing ``build()``, or a module-level function.
- :func:`run_grid` starts a worker process once per setting, one at a time (they would compete
  for the CPUs otherwise), kills a worker that outlives its timeout (its whole process group),
  keeps the tail of a failed worker's stderr, and compares every setting's fetched values with
  the reference setting's: kernels are deterministic for any thread count, so any difference is
  a bug.

The worker side (load the model, size the pools, time the runs) is
:mod:`opweave.tuning._grid_worker`.
"""

from __future__ import annotations

import contextlib
import importlib.machinery
import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TextIO

import numpy as np

from ..timeline import Parallelism

__all__ = ["CellRun", "ModelError", "Progress", "Target", "resolve_target", "run_grid"]

TargetKind = Literal["builtin", "file", "module"]

#: Exit status of a worker that could not load or build the model (every setting would fail the
#: same way, so the grid stops there).
MODEL_ERROR_STATUS = 3
STDERR_TAIL_LINES = 15


class ModelError(ValueError):
    """The model to run could not be found, loaded or built (the same in every setting)."""


@dataclass(frozen=True)
class Target:
    """How a fresh process rebuilds the model: ``kind`` + ``ref`` + the function ``attr``.

    ``builtin``: ``ref`` names a model in :data:`opweave.models.BUILTIN`. ``file``: ``ref`` is
    the absolute path of a ``.py`` file, run as a module (not as ``__main__``). ``module``:
    ``ref`` is a module name imported with ``sys_path`` in front of the path. ``attr`` is the
    (possibly dotted) name of the function to call with ``kwargs``. ``label`` is what the user
    passed, for messages.
    """

    kind: TargetKind
    ref: str
    attr: str = "build"
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    sys_path: tuple[str, ...] = ()
    label: str = ""

    def to_json(self) -> dict[str, Any]:
        """The target as the worker reads it."""
        return {
            "kind": self.kind,
            "ref": self.ref,
            "attr": self.attr,
            "kwargs": dict(self.kwargs),
            "sys_path": list(self.sys_path),
            "label": self.label or self.ref,
        }


def _builtin_names() -> str:
    from ..models import BUILTIN

    return ", ".join(BUILTIN)


def resolve_target(model: object, kwargs: Mapping[str, Any] | None = None) -> Target:
    """Turn what the user passed into a :class:`Target` a fresh process can rebuild.

    ``model`` is a built-in model's name (``"mlp"``), the path of a ``.py`` file, an importable
    module's name (both exposing ``build()``), a module-level function, or the path of a
    GraphDef file (``.pb``, ``.pbtxt``; ``kwargs`` are those of
    :func:`opweave.tuning._frozen.build`: ``feeds``, ``fetches``, ``seed``). Nothing of the user's
    runs here: files and modules are only located.

    Raises
    ------
    ModelError
        An unknown name, a missing file, a module that cannot be found, or a function a fresh
        process cannot find again (a lambda, a nested function, one defined interactively).
    TypeError
        ``model`` is none of the above, or ``kwargs`` is not JSON-serializable.
    """
    from ..models import Model

    kw = dict(kwargs or {})
    try:
        json.dumps(kw)
    except (TypeError, ValueError) as e:
        raise TypeError(
            f"model keyword arguments must be JSON-serializable (they are sent to a fresh "
            f"process): {e}"
        ) from None
    if isinstance(model, Model):
        raise TypeError(
            "tune needs to rebuild the model in a fresh process for every setting, so pass how to "
            "build it, not a built Model: a built-in name ('mlp'), the path of a .py file or a "
            "module name exposing build(), or a module-level build function"
        )
    if isinstance(model, os.PathLike):
        model = os.fspath(model)
    if isinstance(model, str):
        return _resolve_name(model, kw)
    if callable(model):
        return _resolve_function(model, kw)
    raise TypeError(
        f"model must be a built-in name, a file path, a module name or a build function, "
        f"not {type(model).__name__}"
    )


def _resolve_name(name: str, kwargs: dict[str, Any]) -> Target:
    from ..models import BUILTIN

    if name in BUILTIN:
        return Target("builtin", name, kwargs=kwargs, label=name)
    from ._frozen import GRAPHDEF_SUFFIXES

    if name.endswith(GRAPHDEF_SUFFIXES):
        # A GraphDef file: rebuilt in each worker by _frozen.build, with random feeds.
        path = Path(name).expanduser()
        if not path.is_file():
            raise ModelError(f"no such file: {name}")
        kw = {"path": str(path.resolve()), **kwargs}
        return Target("module", "opweave.tuning._frozen", "build", kw, label=name)
    if name.endswith(".py") or os.sep in name or os.path.isfile(name):
        path = Path(name).expanduser()
        if not path.is_file():
            raise ModelError(f"no such file: {name}")
        return Target("file", str(path.resolve()), kwargs=kwargs, label=name)
    if all(part.isidentifier() for part in name.split(".")):
        # Locate the top-level package without importing anything of the user's. The current
        # directory comes first, as for `python -m`; the `opweave` console script lacks it.
        cwd = os.getcwd()
        top = name.split(".")[0]
        if importlib.machinery.PathFinder.find_spec(top, [cwd, *sys.path]) is not None or (
            importlib.util.find_spec(top) is not None
        ):
            return Target("module", name, kwargs=kwargs, sys_path=(cwd,), label=name)
    raise ModelError(
        f"{name!r} is not a built-in model ({_builtin_names()}), an existing .py file, or an "
        "importable module"
    )


def _resolve_function(fn: Callable[..., object], kwargs: dict[str, Any]) -> Target:
    module = getattr(fn, "__module__", None)
    qualname = getattr(fn, "__qualname__", None)
    label = f"{module}.{qualname}"
    if not module or not qualname or "<" in qualname:
        raise ModelError(
            f"{label}: a fresh process cannot find this function again (a lambda or a nested "
            "function); define build() at the top level of a module or file"
        )
    if module == "__main__":
        path = getattr(sys.modules["__main__"], "__file__", None)
        if not path:
            raise ModelError(
                f"{qualname} was defined interactively, so a fresh process cannot rebuild it; "
                "define build() in a .py file and pass the file or the function imported from it"
            )
        return Target("file", str(Path(path).resolve()), qualname, kwargs, label=qualname)
    # The folder the module was imported from, which the worker's sys.path may lack (a test's
    # or a notebook's sys.path edits are not inherited), then the current one.
    sys_path = [os.getcwd()]
    file = getattr(sys.modules.get(module), "__file__", None)
    if file:
        where = Path(file).resolve()
        where = where.parent if where.name == "__init__.py" else where
        if module.count(".") < len(where.parents):
            sys_path.insert(0, str(where.parents[module.count(".")]))
    return Target("module", module, qualname, kwargs, sys_path=tuple(sys_path), label=label)


@dataclass(frozen=True)
class CellRun:
    """What one setting's worker process reported.

    ``times`` are the timed runs in seconds (empty when the worker failed); ``error`` says why it
    failed (with the tail of its stderr); ``check`` compares the fetched values with the
    reference setting's: ``"reference"``, ``"same"``, ``"mismatch"`` (then ``mismatch`` says
    where), ``"differs"`` (they differ, and the model has ops whose results may change between
    runs, a py_function or unseeded random ops, which ``mismatch`` names), or ``"unchecked"``
    (this or the reference setting failed). ``seen`` is what one traced
    run showed the threads doing at once.
    """

    intra: int
    inter: int
    times: tuple[float, ...] = ()
    error: str | None = None
    check: str = "unchecked"
    mismatch: str | None = None
    pools: tuple[int, int] | None = None
    description: str = ""
    wall_seconds: float = 0.0
    seen: Parallelism | None = None


class Progress:
    """A progress bar on a stream: redrawn in place on a terminal, one line per setting otherwise.

    ``start`` is called before a setting's worker starts, ``tick`` every half second while it
    runs, ``done`` after it ended, ``clear`` when the grid stops early.
    """

    def __init__(self, stream: TextIO | None = None, label: str = "tune") -> None:
        self._stream = stream if stream is not None else sys.stderr
        self._label = label
        self._tty = bool(getattr(self._stream, "isatty", lambda: False)())
        self._t0 = time.perf_counter()
        self._current = (0, 1, 1, 1)

    def start(self, index: int, total: int, intra: int, inter: int) -> None:
        if index == 0:
            self._t0 = time.perf_counter()
        self._current = (index, total, intra, inter)
        self.tick()

    def clear(self) -> None:
        """Erase the bar (on a terminal), so what is printed next starts on a clean line."""
        if self._tty:
            self._stream.write("\r" + " " * 79 + "\r")
            self._stream.flush()

    def tick(self) -> None:
        """Redraw the bar (the elapsed time moves while a setting runs)."""
        if self._tty:
            index, total, intra, inter = self._current
            width = 20
            filled = width * index // total
            self._stream.write(
                f"\r{self._label} [{'#' * filled}{'.' * (width - filled)}] {index}/{total}  "
                f"running intra={intra} inter={inter}  {time.perf_counter() - self._t0:5.1f} s "
            )
            self._stream.flush()

    def done(self, index: int, total: int, run: CellRun) -> None:
        if self._tty:
            if index + 1 == total:
                self.clear()
            return
        status = "failed" if run.error else f"median {1e3 * float(np.median(run.times)):.3f} ms"
        self._stream.write(
            f"{self._label} {index + 1}/{total}: intra={run.intra} inter={run.inter} {status}\n"
        )
        self._stream.flush()


def _worker_command(spec: Mapping[str, Any]) -> list[str]:
    # The worker must import this very opweave (a staged build, a source checkout), without
    # putting its folder in front of everything when it is found anyway (site-packages first
    # on the path could shadow standard modules).
    pkg = Path(__file__).resolve().parent.parent  # the opweave package this module is part of
    init = str(pkg / "__init__.py")
    boot = (
        "import ctypes, importlib.util, os, signal, sys\n"
        # Die with the parent (Linux prctl PR_SET_PDEATHSIG): the worker has its own session, so
        # a parent killed outright would otherwise leave a hanging worker running.
        "try:\n"
        "    ctypes.CDLL(None).prctl(1, signal.SIGKILL)\n"
        "except (OSError, AttributeError):\n"
        "    pass\n"
        f"if os.getppid() != {os.getpid()}:\n"
        "    sys.exit('opweave grid worker: the parent exited before the worker started')\n"
        "s = importlib.util.find_spec('opweave')\n"
        f"if s is None or not s.origin or os.path.realpath(s.origin) != {init!r}:\n"
        f"    sys.path.insert(0, {str(pkg.parent)!r})\n"
        "from opweave.tuning._grid_worker import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    return [sys.executable, "-c", boot, json.dumps(spec)]


def _tail(text: str, lines: int = STDERR_TAIL_LINES) -> str:
    kept = text.rstrip().splitlines()[-lines:]
    return "\n".join(kept) if kept else "(no output on stderr)"


def _run_worker(
    spec: Mapping[str, Any], timeout: float, tick: Callable[[], None] | None = None
) -> tuple[int | None, str]:
    """Run one worker; (exit status or None on a timeout, the tail of its stderr).

    The worker's stderr goes to a file in its folder, not a pipe: a helper process the model
    starts inherits the worker's descriptors, and waiting for a pipe's end would wait for that
    helper instead of the worker. The timeout is the worker's own (its exit, polled).
    """
    err_path = Path(spec["out"]) / "stderr.txt"
    with open(err_path, "wb") as err_file:
        proc = subprocess.Popen(
            _worker_command(spec),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err_file,
            # Its own process group: a timeout or Ctrl-C here kills the worker and anything it
            # started, and Ctrl-C in the terminal reaches only this process (which then kills it).
            start_new_session=True,
        )
    deadline = time.monotonic() + timeout
    status: int | None = None
    try:
        while status is None:
            # In short slices, so the progress bar moves.
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                status = proc.wait(timeout=min(0.5, left))
            except subprocess.TimeoutExpired:
                if tick is not None:
                    tick()
    finally:
        # Whatever the worker started and left behind dies with it (a timeout kills the worker
        # itself too); the grid's next setting must not share the CPUs with it.
        _kill_group(proc.pid)
        proc.wait()
    return status, _read_tail(err_path)


def _read_tail(path: Path, limit: int = 64 * 1024) -> str:
    """The last ``limit`` bytes of a worker's stderr file (it may have written without bound)."""
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        f.seek(max(0, f.tell() - limit))
        return f.read().decode("utf-8", errors="replace")


def _kill_group(pid: int) -> None:
    # The worker may have exited (with all it started) since the last look: nothing to kill.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


def _load_values(cell_dir: Path) -> dict[str, np.ndarray] | str:
    """The fetched values a worker saved, by fetch path, or why they cannot be compared."""
    meta = json.loads((cell_dir / "values.json").read_text())
    if meta.get("unsaved"):
        return str(meta["unsaved"])
    with np.load(cell_dir / "values.npz", allow_pickle=False) as data:
        arrays = [data[f"arr_{i}"] for i in range(len(meta["names"]))]
    return dict(zip(meta["names"], arrays, strict=True))


def compare_values(
    reference: Mapping[str, np.ndarray], values: Mapping[str, np.ndarray]
) -> str | None:
    """None when ``values`` equal ``reference`` bit for bit (NaN equals NaN), else where not."""
    if list(reference) != list(values):
        return f"fetched {list(values)} but the reference fetched {list(reference)}"
    for name, ref in reference.items():
        got = values[name]
        if ref.dtype != got.dtype or ref.shape != got.shape:
            return f"{name}: {got.dtype}{list(got.shape)} vs {ref.dtype}{list(ref.shape)}"
        differ = ref != got
        if ref.dtype.kind in "fc":
            differ &= ~(np.isnan(ref) & np.isnan(got))  # NaN where the reference has NaN is equal
        if differ.any():
            if ref.dtype.kind not in "fciub":
                return f"{name}: values differ"
            diff = np.where(differ, np.abs(got.astype(np.float64) - ref.astype(np.float64)), 0.0)
            diff = np.nan_to_num(diff, nan=np.inf)  # NaN against a number: worst of all
            where = np.unravel_index(int(np.argmax(diff)), diff.shape)
            return (
                f"{name}: max |difference| {float(diff.max()):.3g} at index "
                f"{tuple(int(i) for i in where)}, {int(differ.sum())} of {ref.size} elements "
                "differ"
            )
    return None


@contextlib.contextmanager
def _cleared(progress: Progress | None) -> Iterator[None]:
    try:
        yield
    except BaseException:
        if progress is not None:
            progress.clear()  # the error message must not land on the bar's line
        raise


def run_grid(
    target: Target,
    cells: Sequence[tuple[int, int]],
    *,
    runs: int,
    warmup: int,
    timeout: float,
    reference: tuple[int, int] = (1, 1),
    progress: Progress | None = None,
    on_cell: Callable[[CellRun], None] | None = None,
) -> list[CellRun]:
    """Run ``target`` under each ``(intra, inter)`` in ``cells``, one fresh process each.

    The ``reference`` setting (which must be one of ``cells``) runs first, so every later
    setting's fetched values can be compared with its. The results come back in the order of
    ``cells``; ``on_cell`` sees each one as soon as it is known (in the order run).

    Raises
    ------
    ModelError
        A worker could not load or build the model: every setting would fail the same way, so
        the grid stops.
    """
    if reference not in cells:
        raise ValueError(f"the reference setting {reference} must be one of the cells")
    order = [reference, *[c for c in cells if c != reference]]
    done: dict[tuple[int, int], CellRun] = {}
    ref_values: dict[str, np.ndarray] | str = "the reference setting failed"
    with tempfile.TemporaryDirectory(prefix="opweave-grid-") as tmp, _cleared(progress):
        for index, (intra, inter) in enumerate(order):
            if progress is not None:
                progress.start(index, len(order), intra, inter)
            cell_dir = Path(tmp) / f"cell-{index}"
            cell_dir.mkdir()
            spec = {
                "target": target.to_json(),
                "intra": intra,
                "inter": inter,
                "runs": runs,
                "warmup": warmup,
                "out": str(cell_dir),
            }
            t0 = time.perf_counter()
            status, err = _run_worker(
                spec, timeout, progress.tick if progress is not None else None
            )
            wall = time.perf_counter() - t0
            report_path = cell_dir / "report.json"
            report = json.loads(report_path.read_text()) if report_path.exists() else {}
            if status == MODEL_ERROR_STATUS and "model_error" in report:
                raise ModelError(str(report["model_error"]))
            if status is None:
                run = CellRun(
                    intra,
                    inter,
                    error=f"timed out after {timeout:g} s (worker killed); stderr:\n{_tail(err)}",
                    wall_seconds=wall,
                )
            elif status != 0 or "times" not in report:
                run = CellRun(
                    intra,
                    inter,
                    error=f"worker exited with status {status}; stderr:\n{_tail(err)}",
                    wall_seconds=wall,
                )
            else:
                values = _load_values(cell_dir)
                if index == 0:
                    ref_values = values
                    check, mismatch = "reference", None
                elif isinstance(ref_values, str) or isinstance(values, str):
                    check = "unchecked"
                    mismatch = ref_values if isinstance(ref_values, str) else str(values)
                else:
                    mismatch = compare_values(ref_values, values)
                    check = "same" if mismatch is None else "mismatch"
                    unvouched = report.get("unvouched") or []
                    if mismatch is not None and unvouched:
                        # Ops whose results may change from run to run (a py_function, unseeded
                        # random ops) explain a difference: not a bug of the kernels.
                        check = "differs"
                        mismatch += (
                            "; the model has ops whose results opweave cannot vouch for: "
                            + ", ".join(unvouched)
                        )
                pools = report.get("pools")
                seen = report.get("seen")
                run = CellRun(
                    intra,
                    inter,
                    times=tuple(float(t) for t in report["times"]),
                    check=check,
                    mismatch=mismatch,
                    pools=(int(pools[0]), int(pools[1])) if pools else None,
                    description=str(report.get("description", "")),
                    wall_seconds=wall,
                    seen=Parallelism(**seen) if seen else None,
                )
            done[(intra, inter)] = run
            if progress is not None:
                progress.done(index, len(order), run)
            if on_cell is not None:
                on_cell(run)
    return [done[c] for c in cells]
