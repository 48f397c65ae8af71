# Toolchain: the clang and libc++ that the `ziglang` package on PyPI ships, for a chosen target and
# glibc floor, e.g. OPWEAVE_ZIG_TARGET=x86_64-linux-gnu.2.17. Why: the host's GCC 12 and glibc
# 2.36 headers make the extension need glibc 2.34 and libstdc++ 3.4.30 (manylinux_2_35 at best);
# Zig links against stubs of the chosen glibc version and links libc++, libc++abi and libunwind
# statically, so one build on any Linux gives a manylinux_2_17 wheel. CMakeLists.txt loads this
# file when OPWEAVE_ZIG_TARGET is set (tools/build_portable_wheel.sh sets it).
#
#   OPWEAVE_ZIG_TARGET  Zig target triple with the glibc version: x86_64-linux-gnu.2.17,
#                       aarch64-linux-gnu.2.17, x86_64-linux-musl, ...
#   OPWEAVE_ZIG         the zig executable (a cache or an environment variable); default: zig on
#                       PATH, else the `ziglang` module (pip install ziglang) of python3 on PATH.
#                       Not one installed into pip's temporary build environment: Zig caches the
#                       libc++ it builds (~/.cache/zig) under its own path, and a zig at a new
#                       path rebuilds libc++ (2 minutes on 2 cores) for every wheel.
#
# A compile check for another architecture (zig cross-compiles; no Python module):
#   cmake -S . -B build/aarch64 -G Ninja -DOPWEAVE_ZIG_TARGET=aarch64-linux-gnu.2.17 \
#     -DOPWEAVE_ZIG=/path/to/zig -DOPWEAVE_BUILD_TESTS=ON && cmake --build build/aarch64

# try_compile() projects read this file again; they see only the variables listed here.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES OPWEAVE_ZIG_TARGET OPWEAVE_ZIG)

if(NOT OPWEAVE_ZIG_TARGET)
  message(FATAL_ERROR "zig_toolchain.cmake needs OPWEAVE_ZIG_TARGET (e.g. x86_64-linux-gnu.2.17)")
endif()

if(NOT OPWEAVE_ZIG AND DEFINED ENV{OPWEAVE_ZIG})
  set(OPWEAVE_ZIG "$ENV{OPWEAVE_ZIG}")
endif()
if(NOT OPWEAVE_ZIG)
  find_program(_opweave_zig_on_path zig)
  if(_opweave_zig_on_path)
    set(OPWEAVE_ZIG "${_opweave_zig_on_path}")
  else()
    find_program(_opweave_python3_on_path NAMES python3 python)
    if(_opweave_python3_on_path)
      execute_process(
        COMMAND "${_opweave_python3_on_path}" -c
                "import ziglang, os; print(os.path.join(os.path.dirname(ziglang.__file__), 'zig'))"
        OUTPUT_VARIABLE _opweave_zig_from_py OUTPUT_STRIP_TRAILING_WHITESPACE
        RESULT_VARIABLE _opweave_zig_status ERROR_QUIET)
      if(_opweave_zig_status EQUAL 0 AND EXISTS "${_opweave_zig_from_py}")
        set(OPWEAVE_ZIG "${_opweave_zig_from_py}")
      endif()
    endif()
  endif()
  if(NOT OPWEAVE_ZIG)
    message(FATAL_ERROR "OPWEAVE_ZIG_TARGET is set but no zig was found: put zig on PATH, set "
                        "OPWEAVE_ZIG, or pip install ziglang for python3 on PATH")
  endif()
  set(OPWEAVE_ZIG "${OPWEAVE_ZIG}" CACHE FILEPATH "The zig executable of the portable build")
endif()

# Cross-compiling only when the target's architecture is not the host's: a native target keeps
# find_package(Python) asking the running interpreter, as scikit-build-core expects.
string(REGEX MATCH "^[^-]+" _opweave_zig_arch "${OPWEAVE_ZIG_TARGET}")
if(NOT _opweave_zig_arch STREQUAL CMAKE_HOST_SYSTEM_PROCESSOR)
  set(CMAKE_SYSTEM_NAME Linux)
  set(CMAKE_SYSTEM_PROCESSOR "${_opweave_zig_arch}")
endif()

# -mcpu=baseline: without it Zig targets the build machine's CPU (-march=native); the wheel must
# run on any x86-64 and picks wider kernels at run time (DESIGN.md, Kernels).
set(CMAKE_C_COMPILER "${OPWEAVE_ZIG}" cc -target "${OPWEAVE_ZIG_TARGET}" -mcpu=baseline)
set(CMAKE_CXX_COMPILER "${OPWEAVE_ZIG}" c++ -target "${OPWEAVE_ZIG_TARGET}" -mcpu=baseline)
# Zig's own archiver, so the build needs no binutils. CMake keeps rule variables that are already
# defined, and CMAKE_AR cannot carry the "ar" argument.
foreach(_lang IN ITEMS C CXX)
  set(CMAKE_${_lang}_ARCHIVE_CREATE "\"${OPWEAVE_ZIG}\" ar qc <TARGET> <LINK_FLAGS> <OBJECTS>")
  set(CMAKE_${_lang}_ARCHIVE_APPEND "\"${OPWEAVE_ZIG}\" ar q <TARGET> <LINK_FLAGS> <OBJECTS>")
  set(CMAKE_${_lang}_ARCHIVE_FINISH "\"${OPWEAVE_ZIG}\" ranlib <TARGET>")
endforeach()
