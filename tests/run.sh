#!/usr/bin/env bash
# The whole test suite: the C++ unit tests (built with CMake, run with ctest), then pytest against
# the installed package.
#
#   bash tests/run.sh                 # release C++ tests + pytest (soak tests excluded)
#   bash tests/run.sh --tsan          # C++ tests under ThreadSanitizer only
#   bash tests/run.sh --asan          # C++ tests under AddressSanitizer + UBSan only
#   bash tests/run.sh --asan-python   # the extension built with ASan + UBSan, a subset of pytest
#                                     # run against it (libasan LD_PRELOADed into python)
#   bash tests/run.sh -- -k pool      # extra arguments after -- go to pytest
#   bash tests/run.sh --asan-python -- tests/test_kernels.py   # another pytest selection
set -euo pipefail
cd "$(dirname "$0")/.."

mode=release
pytest_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --tsan) mode=thread ;;
    --asan) mode=address ;;
    --asan-python) mode=asan-python ;;
    --) shift; pytest_args=("$@"); break ;;
    *) echo "unknown option: $1" >&2; exit 2 ;;
  esac
  shift
done

generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
# TSan: abort on the first report so a race fails the run; halt_on_error keeps the log short.
export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1 second_deadlock_stack=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1 halt_on_error=1}"

if [ "$mode" = asan-python ]; then
  # This mode builds the extension itself, so pybind11 must be importable here (it is in the
  # test extra; pip's build isolation keeps the one `pip install .` used out of this environment).
  if ! pybind11_dir="$(python -m pybind11 --cmakedir 2>/dev/null)"; then
    echo "tests/run.sh --asan-python: pybind11 is not importable by $(command -v python)." >&2
    echo "Install the test extra (pip install \".[test]\") or pybind11 (pip install pybind11)." >&2
    exit 2
  fi
  # The _opweave_core extension and its core built with -fsanitize=address,undefined, staged
  # beside a copy of python/opweave, and put first on PYTHONPATH. The ASan runtime has to be the
  # first library of the process, so it is preloaded into the (uninstrumented) interpreter;
  # subprocess tests inherit LD_PRELOAD and PYTHONPATH and are checked too.
  build_dir=build/asan-python
  cmake -S . -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DOPWEAVE_BUILD_TESTS=OFF -DOPWEAVE_BUILD_PYTHON=ON -DOPWEAVE_SANITIZE=address \
    -DPython_EXECUTABLE="$(command -v python)" \
    -Dpybind11_DIR="$pybind11_dir" >/dev/null
  cmake --build "$build_dir" -j "$(nproc)"
  rm -rf "$build_dir/pkg"
  mkdir -p "$build_dir/pkg"
  cp -r python/opweave "$build_dir/pkg/opweave"
  # A development tree links its own build into python/opweave: copying onto that link would
  # write the ASan build through it, over the development build.
  rm -f "$build_dir"/pkg/opweave/_opweave_core*.so
  cp "$build_dir"/_opweave_core*.so "$build_dir/pkg/opweave/"
  export PYTHONPATH="$PWD/$build_dir/pkg${PYTHONPATH:+:$PYTHONPATH}"
  # libstdc++ too: python itself does not link it, and ASan resolves the real __cxa_throw for its
  # interceptor at start-up ("CHECK failed ... real___cxa_throw" on the first C++ throw without).
  export LD_PRELOAD="$(c++ -print-file-name=libasan.so) $(c++ -print-file-name=libstdc++.so)"
  # detect_leaks=0: CPython does not free everything at exit, so leak reports would be noise.
  # allocator_may_return_null=1: an allocation too large for memory must reach opweave as
  # bad_alloc (ResourceExhaustedError), as without ASan, instead of aborting the process.
  # log_path: pytest captures stderr, so a report from a process that dies would be lost; the
  # reports go to files, printed (and failing the run) below.
  report="$PWD/$build_dir/sanitizer-report"
  rm -f "$report".*
  export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0 allocator_may_return_null=1 log_path=$report}"
  export UBSAN_OPTIONS="print_stacktrace=1 halt_on_error=1 log_path=$report"
  python -c "import opweave, sys; assert '$build_dir' in opweave.__file__, opweave.__file__"
  if [ ${#pytest_args[@]} -eq 0 ]; then
    # The graph runtime, kernels, bad input, shutdown and property tests; the threading-knob,
    # fork and integration tests exercise the same C++ and are slow under ASan.
    pytest_args=(tests/test_session.py tests/test_graph.py tests/test_graph_math.py
      tests/test_kernels.py tests/test_bad_input.py tests/test_shutdown.py
      tests/test_properties.py tests/test_pool.py)
  fi
  status=0
  python -m pytest -p no:cacheprovider "${pytest_args[@]}" || status=$?
  if compgen -G "$report.*" >/dev/null; then
    echo "sanitizer output:" >&2
    cat "$report".* >&2
    # Errors fail the run; warnings do not (the unallocatable-shape test makes ASan warn that it
    # "failed to allocate", which is the point of that test).
    if grep -q -E "ERROR: |runtime error:" "$report".*; then status=1; fi
  fi
  exit "$status"
fi

sanitize=""
[ "$mode" = release ] || sanitize="$mode"
build_dir="build/cpp-tests-$mode"
cmake -S . -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DOPWEAVE_BUILD_TESTS=ON -DOPWEAVE_BUILD_PYTHON=OFF -DOPWEAVE_SANITIZE="$sanitize" >/dev/null
cmake --build "$build_dir" -j "$(nproc)"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
ctest --test-dir "$build_dir" --output-on-failure -j 2

if [ "$mode" = release ]; then
  # shellcheck source=tests/pytest_workers.sh
  . tests/pytest_workers.sh
  python -m pytest "${pytest_workers[@]}" "${pytest_args[@]}"
fi
