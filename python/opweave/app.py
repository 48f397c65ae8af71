"""``opweave.app``: TensorFlow 1's program entry point, ``app.run(main)``, and ``app.flags``.

>>> import opweave as tf
>>> tf.app.flags.DEFINE_integer("steps", 10, "how many steps")
>>> def main(argv):
...     return tf.app.flags.FLAGS.steps * 2
>>> tf.app.run(main, argv=["prog", "--steps=4"])
Traceback (most recent call last):
...
SystemExit: 8
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from . import flags

__all__ = ["flags", "run"]


def run(
    main: Callable[[list[str]], Any] | None = None, argv: Sequence[str] | None = None
) -> NoReturn:
    """Parse the command-line flags, call ``main(remaining_argv)`` and exit with its result.

    As in TensorFlow 1, ``main`` defaults to ``__main__.main``; flags defined with
    ``opweave.app.flags.DEFINE_*`` are parsed from ``argv`` (default ``sys.argv``) first, and the
    arguments that are not flags are passed to ``main`` (the program name first).
    """
    args = list(sys.argv if argv is None else argv)
    remaining = flags.FLAGS(args)
    if main is None:
        main = sys.modules["__main__"].main
    sys.exit(main(remaining))
