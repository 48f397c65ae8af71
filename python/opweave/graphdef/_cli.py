"""``python -m opweave inspect MODEL``: what a GraphDef file holds and whether opweave runs it."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

EXIT_OK, EXIT_NOT_RUNNABLE, EXIT_USAGE = 0, 1, 2

EPILOG = """\
MODEL is a GraphDef file: binary (.pb, a frozen TensorFlow model) or text format (.pbtxt).
Exit status: 0 if opweave can run the graph, 1 if it lacks ops or cannot build the graph,
2 if the file cannot be read.

examples:
  python -m opweave inspect frozen_model.pb
  python -m opweave inspect graph.pbtxt --json
"""


def add_parser(sub: Any) -> None:
    """Add the ``inspect`` sub-command to the ``python -m opweave`` parser."""
    p = sub.add_parser(
        "inspect",
        help="list a GraphDef's inputs, outputs, op counts and the ops opweave lacks",
        description="Read a GraphDef file (a frozen TensorFlow model) and print its inputs "
        "(placeholders with dtype and shape), outputs (nodes nothing reads), op counts, and "
        "any op opweave lacks. Nothing in the file is run.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("model", metavar="MODEL", help="a .pb or .pbtxt GraphDef file")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")


def run(args: argparse.Namespace) -> int:
    """Run the ``inspect`` sub-command; the process exit status."""
    from .. import errors
    from ._inspect import summarize
    from ._io import read_graph_def

    try:
        graph_def = read_graph_def(args.model)
    except (OSError, errors.DataLossError, ImportError) as e:
        print(f"opweave inspect: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    summary = summarize(graph_def)
    if args.json:
        print(json.dumps(summary.to_dict(), indent=2))
    else:
        print(summary.format(args.model))
    return EXIT_OK if summary.runnable else EXIT_NOT_RUNNABLE
