"""The graph optimizer from Python: TensorFlow's switches mapped onto the core's passes, and
:meth:`opweave.Session.optimizer_report`'s result.

The passes themselves are C++ (``csrc/opweave/optimizer/``); docs/optimizer.md describes them.

>>> import opweave as ow
>>> options = core_options(ow.ConfigProto())
>>> options.passes  # doctest: +NORMALIZE_WHITESPACE
['pruning', 'common_subexpression', 'constant_folding', 'arithmetic', 'elementwise_fusion',
 'identity_removal']
>>> cfg = ow.ConfigProto()
>>> cfg.graph_options.optimizer_options.opt_level = ow.OptimizerOptions.L0
>>> core_options(cfg).passes
[]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import _opweave_core as _core
from .config import ConfigProto, OptimizerOptions, RewriterConfig

__all__ = ["OptimizerChange", "OptimizerReport", "PassReport", "core_options"]

# TensorFlow's default max_folded_constant_in_bytes and min_graph_nodes.
_DEFAULT_MAX_CONSTANT_BYTES = 10 * 1024 * 1024
_DEFAULT_MIN_GRAPH_NODES = 4

# RewriterConfig.optimizers names (TensorFlow's) -> opweave's passes.
_TF_NAMES = {
    "pruning": "pruning",
    "common_subgraph_elimination": "common_subexpression",
    "constfold": "constant_folding",
    "arithmetic": "arithmetic",
    "dependency": "identity_removal",
    "remap": "elementwise_fusion",
}


def core_options(config: ConfigProto) -> Any:
    """The core's ``OptimizerOptions`` for a Session with ``config``.

    A pass with a Grappler toggle runs when the toggle is ``ON`` / ``AGGRESSIVE``, or
    ``DEFAULT`` while ``opt_level`` is ``L1`` and ``disable_meta_optimizer`` is False; ``OFF``
    always wins. Constant folding and common-subexpression elimination are also TensorFlow's
    classic L1 optimizations: they run under ``L1`` (or ``do_constant_folding`` /
    ``do_common_subexpression_elimination``) even with the meta optimizer disabled, as in
    TensorFlow, unless their toggle is ``OFF``.
    """
    graph = config.graph_options
    classic: OptimizerOptions = graph.optimizer_options
    rewrite: RewriterConfig = graph.rewrite_options
    l1 = classic.opt_level != OptimizerOptions.L0
    meta = not rewrite.disable_meta_optimizer

    def grappler(toggle: int) -> bool:
        if not meta or toggle == RewriterConfig.OFF:
            return False
        return toggle != RewriterConfig.DEFAULT or l1

    def classic_or_grappler(toggle: int, switch: bool) -> bool:
        return toggle != RewriterConfig.OFF and (grappler(toggle) or l1 or switch)

    options = _core.OptimizerOptions()
    if rewrite.optimizers and meta:
        # TensorFlow runs exactly the named optimizers, in that order; names opweave lacks are
        # skipped (they would not change results).
        passes = [_TF_NAMES[n] for n in rewrite.optimizers if n in _TF_NAMES]
        options.arithmetic_with_constants = "constant_folding" in passes
    else:
        enabled = {
            "pruning": meta and l1 and not rewrite.disable_model_pruning,
            "common_subexpression": classic_or_grappler(
                rewrite.common_subgraph_elimination, classic.do_common_subexpression_elimination
            ),
            "constant_folding": classic_or_grappler(
                rewrite.constant_folding, classic.do_constant_folding
            ),
            "arithmetic": grappler(rewrite.arithmetic_optimization),
            "identity_removal": grappler(rewrite.dependency_optimization),
            # TensorFlow's remapper fuses ops into one kernel; opweave's element-wise loops do
            # not change a bit, so they are on by default like TensorFlow's remapper.
            "elementwise_fusion": grappler(rewrite.remapping),
        }
        passes = [name for name in _core.optimizer_pass_names() if enabled.get(name, False)]
        # x * 1, x + 0 and (x + c1) + c2 are Grappler's constant folding in TensorFlow.
        options.arithmetic_with_constants = grappler(rewrite.constant_folding)
    options.passes = passes
    options.max_constant_bytes = classic.max_folded_constant_in_bytes or _DEFAULT_MAX_CONSTANT_BYTES
    if rewrite.min_graph_nodes == 0:
        options.min_graph_nodes = _DEFAULT_MIN_GRAPH_NODES
    else:
        options.min_graph_nodes = max(rewrite.min_graph_nodes, -1)
    options.max_iterations = 1 if rewrite.meta_optimizer_iterations == RewriterConfig.ONE else 2
    options.fail_on_errors = rewrite.fail_on_optimizer_errors
    return options


@dataclass(frozen=True)
class OptimizerChange:
    """One change a pass made: ``kind`` is ``"folded"``, ``"merged"``, ``"removed"``,
    ``"rewritten"``, ``"added"`` or ``"kept"`` (a node left alone, with the reason)."""

    kind: str
    node: str
    detail: str

    def __str__(self) -> str:
        return f"{self.kind} {self.node}: {self.detail}"


@dataclass(frozen=True)
class PassReport:
    """What one pass did: node counts before and after, its changes, its time, and the error
    that stopped it (then the signature runs as written)."""

    name: str
    iteration: int
    nodes_before: int
    nodes_after: int
    micros: int
    changes: list[OptimizerChange] = field(default_factory=list)
    error: str = ""

    def count(self, kind: str) -> int:
        """How many changes of this kind (``"folded"``, ``"merged"``...)."""
        return sum(1 for c in self.changes if c.kind == kind)

    def summary(self) -> str:
        """One line: ``constant_folding: 12 -> 5 nodes (folded 3, removed 4), 41 us``."""
        kinds: dict[str, int] = {}
        for c in self.changes:
            kinds[c.kind] = kinds.get(c.kind, 0) + 1
        what = ", ".join(f"{k} {n}" for k, n in kinds.items()) or "no change"
        line = (
            f"{self.name}: {self.nodes_before} -> {self.nodes_after} nodes ({what}), "
            f"{self.micros} us"
        )
        return line + (f", FAILED: {self.error}" if self.error else "")


@dataclass(frozen=True)
class OptimizerReport:
    """What the graph optimizer did to the signature a Session compiled last.

    ``nodes_before`` counts the nodes the signature needs as written (fed tensors as ``_Arg``
    nodes), ``nodes_after`` what runs; ``passes`` lists each pass in the order it ran (the
    pipeline runs up to twice, stopping when a round changes nothing); ``skipped`` says why
    nothing ran when nothing did. ``str()`` gives one line per pass, then every change.

    Examples
    --------
    >>> import numpy as np
    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     x = ow.placeholder(ow.float32, shape=(2,), name="x")
    ...     y = ow.identity(x * 1.0 + (ow.constant(2.0) * 3.0), name="y")
    ...     with ow.Session() as sess:
    ...         _ = sess.run(y, {x: np.ones(2, np.float32)})
    ...         report = sess.optimizer_report()
    >>> report.nodes_before, report.nodes_after
    (8, 4)
    >>> [c.node for p in report.passes for c in p.changes if c.kind == "folded"]
    ['mul_1']
    """

    nodes_before: int
    nodes_after: int
    passes: list[PassReport]
    skipped: str = ""

    def changes(self, kind: str | None = None) -> list[OptimizerChange]:
        """Every change of every pass (of one kind when ``kind`` is given)."""
        return [c for p in self.passes for c in p.changes if kind is None or c.kind == kind]

    def lines(self) -> list[str]:
        """The report as lines of text: a summary per pass, then each change, indented."""
        head = f"graph optimizer: {self.nodes_before} -> {self.nodes_after} nodes"
        out = [head + (f" ({self.skipped})" if self.skipped else "")]
        for p in self.passes:
            out.append(f"  [{p.iteration}] {p.summary()}")
            out.extend(f"      {c}" for c in p.changes)
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())

    @classmethod
    def _from_core(cls, report: dict[str, Any]) -> OptimizerReport:
        return cls(
            nodes_before=report["nodes_before"],
            nodes_after=report["nodes_after"],
            passes=[
                PassReport(
                    name=p["pass"],
                    iteration=p["iteration"],
                    nodes_before=p["nodes_before"],
                    nodes_after=p["nodes_after"],
                    micros=p["micros"],
                    changes=[OptimizerChange(*c) for c in p["changes"]],
                    error=p["error"],
                )
                for p in report["passes"]
            ],
            skipped=report["skipped"],
        )
