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
        "opweave.tensor_shape",
        "opweave.app",
        "opweave.compat",
        "opweave.compat.v1",
        "opweave._tf_logging",
        "opweave.examples.tutorials.mnist.input_data",
        "opweave.ops._checks",
        "opweave.ops._op_def",
        "opweave.ops.array_ops",
        "opweave.ops.math_ops",
        "opweave.ops.math_unary",
        "opweave.ops.logic_ops",
        "opweave.ops.math_reduce",
        "opweave.math",
        "opweave.ops.nn_ops",
        "opweave.ops.nn_conv",
        "opweave.layers",
        "opweave.losses",
        "opweave.ops.control_flow_ops",
        "opweave.ops.script_ops",
        "opweave.ops.gradients_impl",
        "opweave.config",
        "opweave.config._protos",
        "opweave.session",
        "opweave.models",
        "opweave.tuning._row",
        "opweave.tuning._result",
        "opweave.tuning._tune",
        "opweave.timeline",
        "opweave.summary",
        "opweave._flops",
        "opweave.kernels",
        "opweave._memory",
        "opweave._optimizer",
    ],
)
def test_docstring_examples_hold(module: str) -> None:
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
