"""A GraphDef file as a tuner model: ``python -m opweave tune model.pb --feed x:256,784``.

The tuner rebuilds its model in a fresh process per setting from a module-level function and
JSON arguments; :func:`build` is that function for a GraphDef file. The feeds are random arrays
of the given shapes, drawn from a fixed seed so that every setting runs (and must fetch) the same
values; the fetches are the graph's outputs (nodes nothing reads) unless named.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..dtypes import DType, as_dtype
from ..framework import Graph, Operation, Tensor, format_shape
from ..models import Model
from ._grid import ModelError

__all__ = ["GRAPHDEF_SUFFIXES", "build", "parse_feed"]

#: File names the tuner reads as GraphDefs.
GRAPHDEF_SUFFIXES = (".pb", ".pbtxt")

_SHAPE = re.compile(r"^\[?\s*(\d+(\s*[,x]\s*\d+)*)?\s*\]?$")


def parse_feed(text: str) -> tuple[str, dict[str, Any]]:
    """``"x:256,784"`` / ``"x:256x784:float64"`` / ``"ids:[32]:int64"`` / ``"scale::float32"``
    (a scalar) -> ``("x", {"shape": [256, 784], "dtype": ...})``.

    >>> parse_feed("x:256,784")
    ('x', {'shape': [256, 784]})
    >>> parse_feed("x:0:8x3:float64")
    ('x:0', {'shape': [8, 3], 'dtype': 'float64'})
    """
    parts = text.split(":")
    spec: dict[str, Any] = {}
    if len(parts) >= 3:
        try:
            dtype = as_dtype(parts[-1])
        except TypeError:
            dtype = None
        if dtype is not None:
            spec["dtype"] = dtype.name
            parts = parts[:-1]
    if len(parts) < 2 or not parts[0]:
        raise ValueError(f"--feed expects NAME:SHAPE[:DTYPE] (e.g. x:256,784), got {text!r}")
    shape_text = parts[-1].strip()
    m = _SHAPE.match(shape_text)
    if m is None:
        raise ValueError(
            f"--feed {text!r}: {shape_text!r} is not a shape (sizes separated by ',' or 'x', "
            "e.g. 256,784; empty for a scalar)"
        )
    sizes = re.split(r"\s*[,x]\s*", m.group(1)) if m.group(1) else []
    return ":".join(parts[:-1]), {"shape": [int(s) for s in sizes], **spec}


def _random(rng: np.random.Generator, shape: Sequence[int], dtype: DType, name: str) -> Any:
    """Standard normal floats, integers in [0, 10), bools: the same in every process."""
    if dtype.is_floating:
        return rng.standard_normal(shape).astype(dtype.as_numpy_dtype)
    if dtype.is_integer:
        return rng.integers(0, 10, size=shape).astype(dtype.as_numpy_dtype)
    if dtype.is_bool:
        return rng.random(shape) < 0.5
    raise ModelError(f"cannot make random values for {name} of dtype {dtype.name}")


def _placeholders(graph: Graph) -> dict[str, Operation]:
    return {op.name: op for op in graph.get_operations() if op.type == "Placeholder"}


def build(
    path: str,
    feeds: Mapping[str, Mapping[str, Any]] | None = None,
    fetches: Sequence[str] | None = None,
    seed: int = 0,
) -> Model:
    """The GraphDef file ``path`` as a :class:`~opweave.models.Model` with random feeds.

    Parameters
    ----------
    path : str
        A ``.pb`` or ``.pbtxt`` GraphDef file.
    feeds : mapping, optional
        Placeholder name (``"x"`` or ``"x:0"``) -> ``{"shape": [...], "dtype": "float32"}``
        (dtype optional: the placeholder's). A placeholder whose shape is fully known needs no
        entry.
    fetches : sequence of str, optional
        Tensor or op names to fetch. Default: the outputs, the nodes nothing reads.
    seed : int
        Seed of the random feeds.

    Raises
    ------
    ModelError
        The file cannot be read or built, a feed names no placeholder or has the wrong shape,
        a placeholder of unknown shape has no feed, or a fetch names nothing in the graph.
    """
    from .. import errors
    from ..graphdef._import import import_into
    from ..graphdef._inspect import NOT_OUTPUTS
    from ..graphdef._io import read_graph_def

    try:
        graph_def = read_graph_def(path)
        graph = Graph()
        import_into(graph, graph_def, name="")
    except (OSError, errors.OpError, ValueError, ImportError) as e:
        raise ModelError(f"{path}: {e}") from None
    rng = np.random.default_rng(seed)
    inputs = _placeholders(graph)
    specs = {name.removesuffix(":0"): dict(spec) for name, spec in (feeds or {}).items()}
    unknown = sorted(set(specs) - set(inputs))
    if unknown:
        raise ModelError(
            f"{path}: --feed names {unknown}, which are not placeholders; the placeholders are "
            + (", ".join(f"{n} {format_shape(op.outputs[0]._shape)}" for n, op in inputs.items()))
        )
    feed_dict: dict[Tensor, Any] = {}
    described = []
    for name, op in inputs.items():
        t = op.outputs[0]
        spec = specs.get(name)
        if spec is None:
            if t._shape is None or any(d is None for d in t._shape):
                raise ModelError(
                    f"{path}: placeholder {name!r} has shape {format_shape(t._shape)}; give "
                    f"its shape with --feed {name}:SIZES (e.g. --feed {name}:"
                    + ",".join("32" if d is None else str(d) for d in t._shape or (32,))
                    + ")"
                )
            shape = [int(d) for d in t._shape if d is not None]
        else:
            shape = [int(d) for d in spec["shape"]]
            if not t.shape.is_compatible_with(shape):
                raise ModelError(
                    f"{path}: --feed {name} has shape {shape}, but the placeholder's shape is "
                    f"{format_shape(t._shape)}"
                )
        dtype = as_dtype(spec["dtype"]) if spec and spec.get("dtype") else t.dtype
        if dtype is not t.dtype:
            raise ModelError(
                f"{path}: --feed {name} is {dtype.name}, the placeholder {t.dtype.name}"
            )
        feed_dict[t] = _random(rng, shape, dtype, name)
        described.append(f"{name}{format_shape(tuple(shape))}")
    if fetches:
        targets: list[Any] = []
        for name in fetches:
            try:
                el = graph.as_graph_element(name)
            except (KeyError, ValueError) as e:
                raise ModelError(f"{path}: --fetch {name!r}: {e}") from None
            targets.append(el.outputs[0] if isinstance(el, Operation) and el.outputs else el)
    else:
        consumed = {t.op.name for op in graph.get_operations() for t in op.inputs}
        consumed |= {c.name for op in graph.get_operations() for c in op.control_inputs}
        targets = [
            op.outputs[0] if op.outputs else op
            for op in graph.get_operations()
            if op.name not in consumed and op.type not in NOT_OUTPUTS
        ]
        if not targets:
            raise ModelError(f"{path}: the graph has no outputs; name what to fetch with --fetch")
    names = [t.name for t in targets]
    description = (
        f"{len(graph.get_operations())} ops; feeds {', '.join(described) or 'none'}; "
        f"fetches {', '.join(names)}"
    )
    return Model(graph, targets, feed_dict, description)  # type: ignore[arg-type]
