#!/usr/bin/env bash
# The whole test suite: the C++ unit tests (built with CMake, run with ctest), then pytest against
# the installed package.
#
#   bash tests/run.sh                 # release C++ tests + pytest
#   bash tests/run.sh --tsan          # C++ tests under ThreadSanitizer only
#   bash tests/run.sh --asan          # C++ tests under AddressSanitizer + UBSan only
#   bash tests/run.sh -- -k pool      # extra arguments after -- go to pytest
set -euo pipefail
cd "$(dirname "$0")/.."

mode=release
pytest_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --tsan) mode=thread ;;
    --asan) mode=address ;;
    --) shift; pytest_args=("$@"); break ;;
    *) echo "unknown option: $1" >&2; exit 2 ;;
  esac
  shift
done

sanitize=""
[ "$mode" = release ] || sanitize="$mode"
build_dir="build/cpp-tests-$mode"
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
cmake -S . -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DOPWEAVE_BUILD_TESTS=ON -DOPWEAVE_BUILD_PYTHON=OFF -DOPWEAVE_SANITIZE="$sanitize" >/dev/null
cmake --build "$build_dir" -j "$(nproc)"
# TSan: abort on the first report so a race fails the run; halt_on_error keeps the log short.
export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1 second_deadlock_stack=1}"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1 halt_on_error=1}"
ctest --test-dir "$build_dir" --output-on-failure -j 2

if [ "$mode" = release ]; then
  python -m pytest "${pytest_args[@]}"
fi
