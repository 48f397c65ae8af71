"""Command line: ``python -m opweave demo`` (and more subcommands as they land)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m opweave", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="show the two thread pools at work")
    args = parser.parse_args(argv)
    if args.command == "demo":
        import opweave

        print(f"opweave {opweave.__version__}")
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
