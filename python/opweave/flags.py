"""``opweave.flags`` (also ``opweave.app.flags``): TensorFlow 1's command-line flags.

``DEFINE_string/integer/float/boolean/list/enum(name, default, help)`` declare flags; ``FLAGS``
holds their values, parsed from ``sys.argv`` by ``opweave.app.run`` (or on first attribute access,
as TensorFlow 1 did). ``--name=value``, ``--name value``, ``--flag`` / ``--noflag`` for booleans.

>>> DEFINE_string("run_name", "baseline", "a name for the run")
>>> FLAGS(["prog", "--run_name", "trial"])
['prog']
>>> FLAGS.run_name
'trial'
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "FLAGS",
    "DEFINE_bool",
    "DEFINE_boolean",
    "DEFINE_enum",
    "DEFINE_float",
    "DEFINE_integer",
    "DEFINE_list",
    "DEFINE_string",
    "FlagValues",
]


@dataclass
class _Flag:
    name: str
    default: Any
    help: str
    parse: Callable[[str], Any]
    is_bool: bool = False
    value: Any = None


def _parse_bool(text: str) -> bool:
    lowered = text.lower()
    if lowered in ("1", "true", "t", "yes", "y"):
        return True
    if lowered in ("0", "false", "f", "no", "n"):
        return False
    raise ValueError(f"not a boolean: {text!r}")


class FlagValues:
    """The declared flags and their values (TensorFlow 1's ``tf.app.flags.FLAGS``)."""

    def __init__(self) -> None:
        object.__setattr__(self, "_flags", {})
        object.__setattr__(self, "_parsed", False)

    def _define(self, flag: _Flag) -> None:
        flags: dict[str, _Flag] = self._flags
        if flag.name in flags:
            raise ValueError(f"flag --{flag.name} is defined twice")
        flag.value = flag.default
        flags[flag.name] = flag

    def __call__(self, argv: Sequence[str]) -> list[str]:
        """Parse ``argv`` (program name first); return the arguments that are not flags."""
        flags: dict[str, _Flag] = self._flags
        rest = [argv[0]] if argv else []
        i = 1
        while i < len(argv):
            arg = argv[i]
            i += 1
            if arg == "--":
                rest.extend(argv[i:])
                break
            if not arg.startswith("-") or arg == "-":
                rest.append(arg)
                continue
            name, eq, value = arg.lstrip("-").partition("=")
            flag = flags.get(name)
            if flag is None and name.startswith("no") and not eq:
                negated = flags.get(name[2:])
                if negated is not None and negated.is_bool:
                    negated.value = False
                    continue
            if flag is None:
                raise ValueError(f"unknown command line flag {arg!r}")
            if not eq:
                if flag.is_bool:
                    flag.value = True
                    continue
                if i >= len(argv):
                    raise ValueError(f"flag --{name} needs a value")
                value = argv[i]
                i += 1
            try:
                flag.value = flag.parse(value)
            except ValueError as e:
                raise ValueError(f"flag --{name}={value!r}: {e}") from None
        object.__setattr__(self, "_parsed", True)
        return rest

    def __getattr__(self, name: str) -> Any:
        flags: dict[str, _Flag] = self._flags
        if name not in flags:
            raise AttributeError(f"no flag named {name!r}")
        return flags[name].value

    def __setattr__(self, name: str, value: Any) -> None:
        flags: dict[str, _Flag] = self._flags
        if name not in flags:
            raise AttributeError(f"no flag named {name!r}")
        flags[name].value = value


FLAGS = FlagValues()


def DEFINE_string(name: str, default: str | None, help: str = "") -> None:
    """Declare a string flag."""
    FLAGS._define(_Flag(name, default, help, str))


def DEFINE_integer(name: str, default: int | None, help: str = "") -> None:
    """Declare an integer flag."""
    FLAGS._define(_Flag(name, default, help, int))


def DEFINE_float(name: str, default: float | None, help: str = "") -> None:
    """Declare a float flag."""
    FLAGS._define(_Flag(name, default, help, float))


def DEFINE_boolean(name: str, default: bool | None, help: str = "") -> None:
    """Declare a boolean flag (``--name``, ``--noname``, ``--name=false``)."""
    FLAGS._define(_Flag(name, default, help, _parse_bool, is_bool=True))


DEFINE_bool = DEFINE_boolean


def DEFINE_list(name: str, default: list[str] | None, help: str = "") -> None:
    """Declare a comma-separated list flag."""
    FLAGS._define(_Flag(name, default, help, lambda s: [p for p in s.split(",") if p]))


def DEFINE_enum(name: str, default: str | None, enum_values: Sequence[str], help: str = "") -> None:
    """Declare a flag whose value must be one of ``enum_values``."""
    allowed = list(enum_values)

    def parse(text: str) -> str:
        if text not in allowed:
            raise ValueError(f"must be one of {allowed}")
        return text

    FLAGS._define(_Flag(name, default, help, parse))
