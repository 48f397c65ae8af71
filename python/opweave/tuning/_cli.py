"""``python -m opweave tune MODEL``: the command line of :func:`opweave.tune`."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

EXIT_OK, EXIT_FAILED_SETTINGS, EXIT_USAGE = 0, 1, 2

EPILOG = """\
MODEL is a built-in model (mlp, wide, chain), the path of a .py file, an importable module,
or a GraphDef file (.pb, a frozen TensorFlow model, or .pbtxt); a file or module defines build()
returning (graph, fetches, feed_dict) or an opweave.models.Model. A GraphDef runs on random
feeds of the shapes given by --feed (placeholders of fully known shape need none) and fetches
its outputs (the nodes nothing reads) or --fetch. Each setting runs in a fresh process. Exit
status: 0, 1 if a setting failed or fetched other values than (1, 1), 2 if the model or the
options are wrong.

examples:
  python -m opweave tune mlp
  python -m opweave tune wide --intra 1 2 4 --inter 1 2 --runs 20 --plot wide.png
  python -m opweave tune my_model.py --json > tune.json
  python -m opweave tune frozen.pb --feed input:64,224,224,3 --fetch logits --plot heat.png
"""


def add_parser(sub: Any) -> None:
    """Add the ``tune`` sub-command to the ``python -m opweave`` parser."""
    p = sub.add_parser(
        "tune",
        help="time a graph under a grid of (intra, inter) settings and recommend a ConfigProto",
        description="Time a graph under a grid of (intra, inter) settings, each in a fresh "
        "process, and recommend the ConfigProto to use.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "model", metavar="MODEL", help="mlp, wide, chain, a .py file, a module or a .pb file"
    )
    p.add_argument(
        "--intra",
        type=int,
        nargs="+",
        metavar="N",
        help="intra_op_parallelism_threads values "
        "(default: 1..CPUs on up to 4 CPUs, else powers of two and CPUs)",
    )
    p.add_argument(
        "--inter",
        type=int,
        nargs="+",
        metavar="N",
        help="inter_op_parallelism_threads values (same default; -1: ops in the caller's thread)",
    )
    p.add_argument("--runs", type=int, default=10, help="timed runs per setting (default 10)")
    p.add_argument("--warmup", type=int, default=2, help="untimed runs first (default 2)")
    p.add_argument(
        "--timeout",
        type=float,
        default=120.0,
        help="seconds one setting's process may take before it is killed (default 120)",
    )
    p.add_argument(
        "--size",
        choices=["default", "small"],
        default="default",
        help="built-in models only: 'small' shrinks them to milliseconds (tests, smoke runs)",
    )
    p.add_argument(
        "--model-arg",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="keyword argument for build() / the built-in model, e.g. --model-arg width=256 "
        "(VALUE is read as JSON, else as a string); repeatable",
    )
    p.add_argument(
        "--feed",
        action="append",
        default=[],
        metavar="NAME:SHAPE[:DTYPE]",
        help="GraphDef models: feed placeholder NAME random values of SHAPE (e.g. x:256,784 or "
        "x:256x784:float64; the placeholder's dtype by default); repeatable",
    )
    p.add_argument(
        "--fetch",
        action="append",
        default=[],
        metavar="NAME",
        help="GraphDef models: fetch this tensor or op (default: the graph's outputs); repeatable",
    )
    p.add_argument(
        "--tolerance",
        type=float,
        default=0.03,
        help="a setting this much slower than the fastest still counts as fast (default 0.03)",
    )
    p.add_argument("--json", action="store_true", help="print the results as JSON, no table")
    p.add_argument("--plot", metavar="PATH", help="save a heat map of the median times (PNG...)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")


def _model_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    from ..models import BUILTIN, SMALL

    kwargs: dict[str, Any] = {}
    if args.size == "small":
        if args.model not in BUILTIN:
            raise ValueError(f"--size small applies to the built-in models ({', '.join(BUILTIN)})")
        kwargs.update(SMALL[args.model])
    if args.feed or args.fetch:
        from ._frozen import GRAPHDEF_SUFFIXES, parse_feed

        if not args.model.endswith(GRAPHDEF_SUFFIXES):
            raise ValueError("--feed and --fetch apply to GraphDef models (.pb, .pbtxt files)")
        kwargs["feeds"] = dict(parse_feed(item) for item in args.feed)
        if args.fetch:
            kwargs["fetches"] = list(args.fetch)
    for item in args.model_arg:
        name, sep, text = item.partition("=")
        if not sep or not name.isidentifier():
            raise ValueError(f"--model-arg expects NAME=VALUE, got {item!r}")
        try:
            kwargs[name] = json.loads(text)
        except json.JSONDecodeError:
            kwargs[name] = text
    return kwargs


def run(args: argparse.Namespace) -> int:
    """Run the ``tune`` sub-command; the process exit status."""
    from ._grid import ModelError
    from ._plot import INSTALL_HINT
    from ._tune import tune

    def fail(message: str) -> int:
        print(f"opweave tune: error: {message}", file=sys.stderr)
        return EXIT_USAGE

    if args.plot:
        try:  # before minutes of measuring, not after
            import matplotlib.figure  # noqa: F401
        except ImportError:
            return fail(INSTALL_HINT)
    try:
        result = tune(
            args.model,
            args.intra,
            args.inter,
            runs=args.runs,
            warmup=args.warmup,
            timeout=args.timeout,
            model_kwargs=_model_kwargs(args),
            tolerance=args.tolerance,
            progress=not args.no_progress,
        )
    except (ModelError, TypeError, ValueError) as e:
        return fail(str(e))
    except KeyboardInterrupt:  # the running worker was killed on the way out (_grid)
        print("\nopweave tune: interrupted", file=sys.stderr)
        return 130
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
    else:
        print(result.format_table())
    if args.plot:
        path = result.plot(args.plot)
        print(f"heat map: {path}", file=sys.stderr if args.json else sys.stdout)
    return EXIT_FAILED_SETTINGS if result.failures or result.mismatches else EXIT_OK
