"""One setting of a grid, in a fresh process: ``python -c ... _grid_worker.main SPEC``.

Started by :func:`opweave.tuning._grid.run_grid`, never by hand. ``SPEC`` is JSON: the model's
:class:`~opweave.tuning._grid.Target`, ``intra``, ``inter``, ``runs``, ``warmup`` and ``out``, a
folder where the worker writes ``report.json`` (the run times, or why the model could not be
built) and the fetched values of the last run (``values.npz`` + ``values.json``), which the
parent compares with the reference setting's.

After the timed runs, one traced run records what the threads did at once
(:func:`opweave.timeline.parallelism`), reported as ``seen``.

The pools are sized before the user's ``build()`` runs (an empty first Session with the
setting's ConfigProto), so nothing ``build()`` does can size them otherwise.

A model with variables -- a training step, whose fetch may be the train op itself -- has them
initialized in its fresh session (the global and local variables' initializers) before the
warm-up runs, as TensorFlow's MonitoredSession does; every setting then runs the same steps from
the same values, so the values fetched after them still compare bit for bit.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import runpy
import sys
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..framework import Graph
from ..models import BUILTIN, Model
from ..timeline import parallelism
from ._grid import MODEL_ERROR_STATUS, ModelError

_EXPECTED = "(graph, fetches, feed_dict) or an opweave.models.Model"


def _attribute(namespace: Mapping[str, Any], attr: str, where: str) -> object:
    head, *rest = attr.split(".")
    if head not in namespace:
        raise ModelError(
            f"{where} has no {head}(): a model file or module must define build() returning "
            f"{_EXPECTED}"
        )
    obj = namespace[head]
    for part in rest:
        obj = getattr(obj, part)
    return obj


def _error_tail(exc: BaseException, lines: int = 12) -> str:
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)).rstrip()
    return "\n".join(text.splitlines()[-lines:])


def load_builder(target: Mapping[str, Any]) -> Callable[..., object]:
    """The function ``target`` names (``build`` by default), imported in this process."""
    kind, ref, attr, label = target["kind"], target["ref"], target["attr"], target["label"]
    if kind == "builtin":
        if ref not in BUILTIN:
            raise ModelError(f"unknown built-in model {ref!r}; valid: {', '.join(BUILTIN)}")
        return BUILTIN[ref]
    try:
        if kind == "file":
            # As `python file.py` would see it: its folder first on the path. Not "__main__",
            # so a script that calls opweave.tune(build) under `if __name__ == "__main__"` does
            # not start another tuner in every worker.
            sys.path.insert(0, str(Path(ref).parent))
            namespace: Mapping[str, Any] = runpy.run_path(ref, run_name="__opweave_model__")
        else:
            # Only folders the path lacks: moving site-packages to the front could shadow
            # standard modules.
            sys.path[:0] = [p for p in target["sys_path"] if p not in sys.path]
            namespace = vars(importlib.import_module(ref))
    except Exception as e:
        raise ModelError(f"{label}: importing it failed:\n{_error_tail(e)}") from None
    builder = _attribute(namespace, attr, label)
    if not callable(builder):
        raise ModelError(f"{label}: {attr} is not a function but {type(builder).__name__}")
    return builder


def as_model(value: object, label: str) -> Model:
    """Check what ``build()`` returned and make it a :class:`~opweave.models.Model`."""
    if isinstance(value, Model):
        return value
    if not isinstance(value, (tuple, list)):
        raise ModelError(f"{label}: build() returned {type(value).__name__}; expected {_EXPECTED}")
    if len(value) != 3:
        raise ModelError(f"{label}: build() returned {len(value)} items; expected {_EXPECTED}")
    graph, fetches, feed_dict = value
    if not isinstance(graph, Graph):
        raise ModelError(
            f"{label}: the graph build() returned is a {type(graph).__name__}, not an opweave.Graph"
        )
    if fetches is None:
        raise ModelError(f"{label}: build() returned None as the fetches")
    if feed_dict is None:
        feed_dict = {}
    if not isinstance(feed_dict, dict):
        raise ModelError(
            f"{label}: the feed_dict build() returned is a {type(feed_dict).__name__}, not a dict"
        )
    return Model(graph, fetches, feed_dict, f"a graph of {len(graph.get_operations())} ops")


def _flatten(value: object, name: str, out: list[tuple[str, np.ndarray]]) -> None:
    if value is None:  # an Operation's fetch: nothing to compare
        return
    if isinstance(value, dict):
        for key, item in value.items():
            _flatten(item, f"{name}[{key!r}]", out)
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _flatten(item, f"{name}[{i}]", out)
    else:
        out.append((name, np.asarray(value)))


def _save_values(value: object, out: Path) -> None:
    leaves: list[tuple[str, np.ndarray]] = []
    _flatten(value, "fetch", leaves)
    meta: dict[str, Any] = {"names": [name for name, _ in leaves]}
    try:
        np.savez(out / "values.npz", *[array for _, array in leaves])
    except ValueError as e:  # object arrays cannot be saved without pickle
        meta = {"unsaved": f"the fetched values cannot be compared ({e})"}
    (out / "values.json").write_text(json.dumps(meta))


def _initialize_variables(sess: Any, graph: Graph) -> None:
    """Run the initializers of ``graph``'s global and local variables, if it has any."""
    from ..framework import GraphKeys
    from ..ops.variables import variables_initializer

    variables = graph.get_collection(GraphKeys.GLOBAL_VARIABLES) + graph.get_collection(
        GraphKeys.LOCAL_VARIABLES
    )
    if variables:
        with graph.as_default():
            init = variables_initializer(variables, name="tuner_init")
        sess.run(init)


# Ops whose results may differ from one process to the next (and so between two settings of a
# grid) without any kernel being wrong: a py_function runs arbitrary Python, and a random op
# without a seed draws a fresh one per process.
_RANDOM_OPS = frozenset(
    {
        "RandomStandardNormal",
        "TruncatedNormal",
        "RandomUniform",
        "RandomUniformInt",
        "RandomShuffle",
        "Multinomial",
    }
)


def unvouched_ops(graph: Any) -> list[str]:
    """The ops of ``graph`` whose results opweave cannot vouch for, as "type 'name'" strings."""
    found = []
    for op in graph.get_operations():
        if op.type == "PyFunc":
            found.append(f"py_function '{op.name}'")
        elif op.type in _RANDOM_OPS and not (op.attrs.get("seed") or op.attrs.get("seed2")):
            found.append(f"unseeded {op.type} '{op.name}'")
    return found


def run_setting(spec: Mapping[str, Any]) -> dict[str, Any]:
    """Size the pools, build the model, warm up, time ``runs`` runs; the report to write."""
    import opweave as ow

    intra, inter = int(spec["intra"]), int(spec["inter"])
    target = spec["target"]
    config = ow.ConfigProto(intra_op_parallelism_threads=intra, inter_op_parallelism_threads=inter)
    # The first Session sizes the global pools: make it ours, before any code of the user's.
    ow.Session(graph=ow.Graph(), config=config).close()
    builder = load_builder(target)
    try:
        built = builder(**target["kwargs"])
    except ModelError:
        raise  # already says what is wrong with the model (a GraphDef's feeds, say)
    except Exception as e:
        raise ModelError(f"{target['label']}: build() raised:\n{_error_tail(e)}") from None
    model = as_model(built, target["label"])
    with ow.Session(graph=model.graph, config=config) as sess:
        if intra > 0 and ow.get_num_threads() != intra:
            raise RuntimeError(
                f"the intra-op pool runs {ow.get_num_threads()} threads, not {intra}: build() "
                "resized it (opweave.set_num_threads); the tuner must choose the size"
            )
        if inter > 0 and ow.get_num_interop_threads() != inter:
            raise RuntimeError(
                f"the inter-op pool runs {ow.get_num_interop_threads()} ops at once, not {inter}: "
                "build() resized it (opweave.set_num_interop_threads)"
            )
        _initialize_variables(sess, model.graph)
        result: object = None
        for _ in range(int(spec["warmup"])):
            result = sess.run(model.fetches, model.feed_dict)
        times = []
        for _ in range(int(spec["runs"])):
            t0 = time.perf_counter()
            result = sess.run(model.fetches, model.feed_dict)
            times.append(time.perf_counter() - t0)
        # One more run, traced and not timed: what the threads really did at once.
        meta = ow.RunMetadata()
        options = ow.RunOptions(trace_level=ow.RunOptions.FULL_TRACE)
        sess.run(model.fetches, model.feed_dict, options=options, run_metadata=meta)
    _save_values(result, Path(spec["out"]))
    return {
        "unvouched": unvouched_ops(model.graph),
        "times": times,
        "seen": dataclasses.asdict(parallelism(meta.step_stats)),
        "pools": [ow.get_num_threads(), ow.get_num_interop_threads()],
        "description": model.description,
        "pid": os.getpid(),
    }


def main(argv: Sequence[str]) -> int:
    """Run the setting ``argv[0]`` (JSON) describes; exit status 3 if the model cannot be built."""
    spec = json.loads(argv[0])
    report_path = Path(spec["out"]) / "report.json"
    try:
        report = run_setting(spec)
    except ModelError as e:
        report_path.write_text(json.dumps({"model_error": str(e)}))
        return MODEL_ERROR_STATUS
    report_path.write_text(json.dumps(report))
    return 0
