"""The examples in the graph API's docstrings run and print what they show."""

from __future__ import annotations

import doctest
import importlib

import pytest


@pytest.mark.parametrize(
    "module",
    [
        "opweave.dtypes",
        "opweave.framework",
        "opweave.ops",
        "opweave.config",
        "opweave.config._protos",
        "opweave.session",
        "opweave.models",
        "opweave.tuning._row",
        "opweave.tuning._result",
        "opweave.tuning._tune",
        "opweave.timeline",
        "opweave._flops",
        "opweave.kernels",
        "opweave._memory",
    ],
)
def test_docstring_examples_hold(module: str) -> None:
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
