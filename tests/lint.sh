#!/usr/bin/env bash
# Style gates: ruff (lint + format), mypy strict on the package, clang-format on the C++.
# Needs the dev extra: pip install ".[dev]"
set -euo pipefail
cd "$(dirname "$0")/.."
ruff check python tests bench tools docs/figures.py
ruff format --check python tests bench tools docs/figures.py
mypy
mapfile -t cpp < <(git ls-files 'csrc/*.h' 'csrc/*.cpp' 'tests/cpp/*.h' 'tests/cpp/*.cpp' 'bench/cpp/*.cpp')
clang-format --dry-run --Werror "${cpp[@]}"
echo "lint: clean"
