"""``opweave.logging``: TensorFlow 1's ``tf.logging`` (a thin layer over Python's logging).

>>> import opweave as tf
>>> tf.logging.set_verbosity(tf.logging.INFO)
>>> tf.logging.get_verbosity() == tf.logging.INFO
True
"""

from __future__ import annotations

import logging as _logging
from typing import Any

__all__ = [
    "DEBUG",
    "ERROR",
    "FATAL",
    "INFO",
    "WARN",
    "debug",
    "error",
    "fatal",
    "get_verbosity",
    "info",
    "log",
    "set_verbosity",
    "warn",
    "warning",
]

DEBUG = _logging.DEBUG
INFO = _logging.INFO
WARN = _logging.WARNING
ERROR = _logging.ERROR
FATAL = _logging.FATAL

_logger = _logging.getLogger("opweave")


def set_verbosity(level: int) -> None:
    """Log messages of ``level`` and above (``INFO``, ``WARN``, ...)."""
    _logger.setLevel(level)
    if not _logger.handlers:
        _logger.addHandler(_logging.StreamHandler())


def get_verbosity() -> int:
    """The level set by :func:`set_verbosity`."""
    return _logger.getEffectiveLevel()


def log(level: int, msg: Any, *args: Any) -> None:
    """Log ``msg % args`` at ``level``."""
    _logger.log(level, msg, *args)


def debug(msg: Any, *args: Any) -> None:
    _logger.debug(msg, *args)


def info(msg: Any, *args: Any) -> None:
    _logger.info(msg, *args)


def warning(msg: Any, *args: Any) -> None:
    _logger.warning(msg, *args)


warn = warning


def error(msg: Any, *args: Any) -> None:
    _logger.error(msg, *args)


def fatal(msg: Any, *args: Any) -> None:
    _logger.critical(msg, *args)
