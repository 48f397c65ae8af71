"""Every op definition has a row in some ``tests/test_ops_*.py`` table (or a stated reason not
to), so a new op cannot land untested; and every row names an op that exists."""

from __future__ import annotations

import opweave as ow
from op_testing import all_cases

# Ops tested by hand elsewhere, with where.
TESTED_ELSEWHERE = {
    "Const": "test_graph.py (constants and their dtypes)",
    "Placeholder": "test_session.py (feeds)",
    "NoOp": "test_graph.py (group, control dependencies)",
    "PyFunc": "test_session.py, test_shutdown.py (py_function)",
    "BroadcastGradientArgs": "test_ops_core.py (test_broadcast_gradient_args_...)",
    "ReducedShape": "test_ops_core.py::test_reduced_shape_sets_the_reduced_axes_to_one",
}


def test_every_op_definition_has_a_test_row() -> None:
    covered = {c.op_type for c in all_cases()} | set(TESTED_ELSEWHERE)
    missing = sorted(set(ow.ops.REGISTRY) - covered)
    assert not missing, f"ops without a row in a tests/test_ops_*.py CASES table: {missing}"


def test_every_row_names_a_defined_op() -> None:
    unknown = sorted({c.op_type for c in all_cases()} - set(ow.ops.REGISTRY))
    assert not unknown, f"rows for ops that are not defined: {unknown}"
