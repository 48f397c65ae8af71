#!/usr/bin/env bash
# pytest against the opweave that `python` has installed (a wheel), never the source tree: the
# checkout's tests and pytest settings, run from an empty directory after checking that opweave
# is imported from site-packages. What .ci/wheel and cibuildwheel's test-command run.
#
#   bash tests/run_wheel.sh             # the Python suite (soak excluded), as tests/run.sh runs it
#   bash tests/run_wheel.sh --quick     # a fast subset, for wheels tested under emulation
#   bash tests/run_wheel.sh -- -k pool  # arguments after -- go to pytest
#
# Needs the installed wheel and the test dependency group (pip install --group test-wheel).
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"

quick=0
pytest_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --) shift; pytest_args=("$@"); break ;;
    *) echo "unknown option: $1" >&2; exit 2 ;;
  esac
  shift
done

# From the checkout's root, `python -m pytest` would put it on sys.path; an empty directory has
# nothing to shadow the installed package with.
cd "$(mktemp -d)"
python - <<'EOF'
import sys
import sysconfig
from pathlib import Path

import opweave

where = Path(opweave.__file__).resolve().parent.parent
site = {Path(sysconfig.get_paths()[key]).resolve() for key in ("purelib", "platlib")}
if where not in site:
    sys.exit(f"tests/run_wheel.sh: opweave is imported from {where}, not from {sorted(site)}")
print(f"tests/run_wheel.sh: opweave {opweave.__version__} from {where}")
EOF
# tests/test_package.py checks the same from inside the run.
export OPWEAVE_TEST_INSTALLED_WHEEL=1

selection=("$repo/tests")
if [ "$quick" = 1 ]; then
  # Under emulation the suite runs 5-20x slower: the package, graph, session, kernel and bad-input
  # specifications, without the tests marked slow (subprocess-heavy and timing ones).
  selection=("$repo/tests/test_package.py" "$repo/tests/test_graph.py"
    "$repo/tests/test_session.py" "$repo/tests/test_kernels.py" "$repo/tests/test_bad_input.py"
    -m "not soak and not slow")
fi
# shellcheck source=tests/pytest_workers.sh
. "$repo/tests/pytest_workers.sh"
python -m pytest -c "$repo/pyproject.toml" --rootdir "$repo" -p no:cacheprovider \
  "${pytest_workers[@]}" "${selection[@]}" "${pytest_args[@]}"
