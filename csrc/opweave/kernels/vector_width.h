// The SIMD vector width of the translation unit that includes this header, for loops written with
// GCC/clang vector extensions and compiled once per instruction set (the *_loops_avx2.cpp /
// *_loops_avx512.cpp files): 64 bytes under AVX-512F, 32 under AVX2, 16 (SSE2, every x86-64)
// otherwise. Internal linkage on purpose: each ISA's file has its own value.
#pragma once

namespace opweave::simd_width {
namespace {

#if defined(__AVX512F__)
constexpr int kVectorBytes = 64;
#elif defined(__AVX2__)
constexpr int kVectorBytes = 32;
#else
constexpr int kVectorBytes = 16;
#endif

}  // namespace
}  // namespace opweave::simd_width
