"""What every opweave wheel must hold, checked on the files themselves (.ci/wheel and the wheels
workflow run it): the license and the metadata a package index shows, the typing markers, and
an extension module that exports PyInit__opweave_core alone.

    python tools/check_wheel.py WHEEL... [--expect-count N]

Needs pyelftools (auditwheel brings it). Exits 1 and names each problem if any.
"""

from __future__ import annotations

import argparse
import email.parser
import io
import sys
import zipfile
from pathlib import Path

from elftools.elf.elffile import ELFFile

SUPPORTED_PYTHONS = ("3.10", "3.11", "3.12", "3.13", "3.14")
REQUIRED_CLASSIFIERS = {
    "Typing :: Typed",
    *(f"Programming Language :: Python :: {v}" for v in SUPPORTED_PYTHONS),
}
REQUIRED_FILES = ("opweave/__init__.py", "opweave/py.typed", "opweave/_opweave_core.pyi")


def exported_symbols(elf_bytes: bytes) -> list[str]:
    """Names the shared object defines in its dynamic symbol table (what other code can bind)."""
    dynsym = ELFFile(io.BytesIO(elf_bytes)).get_section_by_name(".dynsym")
    if dynsym is None:
        return []
    return sorted(
        sym.name
        for sym in dynsym.iter_symbols()
        if sym.name
        and sym["st_shndx"] != "SHN_UNDEF"
        and sym["st_info"]["bind"] in ("STB_GLOBAL", "STB_WEAK", "STB_GNU_UNIQUE")
    )


def problems_of(path: Path) -> list[str]:
    found: list[str] = []
    with zipfile.ZipFile(path) as whl:
        names = set(whl.namelist())
        dist_info = next(n.split("/")[0] for n in names if n.split("/")[0].endswith(".dist-info"))
        meta = email.parser.Parser().parsestr(whl.read(f"{dist_info}/METADATA").decode())
        if meta.get("License-Expression") != "Apache-2.0":
            found.append(f"License-Expression is {meta.get('License-Expression')!r}")
        if "LICENSE" not in (meta.get_all("License-File") or []):
            found.append("no License-File: LICENSE in METADATA")
        license_text = f"{dist_info}/licenses/LICENSE"
        if license_text not in names:
            found.append(f"no {license_text}")
        elif b"Apache License" not in whl.read(license_text):
            found.append(f"{license_text} is not the Apache License")
        missing = REQUIRED_CLASSIFIERS - set(meta.get_all("Classifier") or [])
        if missing:
            found.append(f"classifiers missing: {sorted(missing)}")
        if not meta.get_all("Project-URL"):
            found.append("no Project-URL")
        found += [f"no {name}" for name in REQUIRED_FILES if name not in names]
        stray = sorted(n for n in names if n.startswith(("tests/", "build/")) or "__pycache__" in n)
        if stray:
            found.append(f"files that do not belong in a wheel: {stray[:5]}")
        extensions = sorted(
            n for n in names if n.startswith("opweave/_opweave_core") and n.endswith(".so")
        )
        if len(extensions) != 1:
            found.append(f"expected one extension module, found {extensions}")
        for ext in extensions:
            data = whl.read(ext)
            if data[:4] != b"\x7fELF":
                continue  # a Mach-O module (macOS): the linker's -exported_symbol covers it
            symbols = exported_symbols(data)
            if symbols != ["PyInit__opweave_core"]:
                found.append(f"{ext} exports {len(symbols)} symbols: {symbols[:8]}")
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("wheels", nargs="+", type=Path)
    parser.add_argument("--expect-count", type=int, help="fail unless this many wheels are given")
    args = parser.parse_args()
    failed = False
    if args.expect_count is not None and len(args.wheels) != args.expect_count:
        print(f"expected {args.expect_count} wheels, got {len(args.wheels)}")
        failed = True
    for wheel in args.wheels:
        problems = problems_of(wheel)
        print(f"{wheel.name}: {'ok' if not problems else 'FAILED'}")
        for problem in problems:
            print(f"  - {problem}")
        failed |= bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
