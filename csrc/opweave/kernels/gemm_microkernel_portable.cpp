// Portable micro-kernel (no intrinsics) for CPUs without AVX2+FMA. The accumulators are a local
// array the compiler keeps in (baseline SSE2) registers; it is ~4x slower than the AVX2 kernel but
// runs anywhere.
#include "opweave/kernels/gemm_microkernel.h"

namespace opweave::gemm_detail {
namespace {

constexpr int kMr = 4;
constexpr int kNr = 8;

template <typename T>
void portable_kernel(std::int64_t kc, const T* a, const T* b, T* c, std::int64_t ldc,
                     bool accumulate) {
  T acc[kMr][kNr] = {};
  for (std::int64_t p = 0; p < kc; ++p) {
    for (int i = 0; i < kMr; ++i) {
      const T ai = a[i];
      for (int j = 0; j < kNr; ++j) acc[i][j] += ai * b[j];
    }
    a += kMr;
    b += kNr;
  }
  for (int i = 0; i < kMr; ++i) {
    for (int j = 0; j < kNr; ++j) {
      c[i * ldc + j] = accumulate ? c[i * ldc + j] + acc[i][j] : acc[i][j];
    }
  }
}

}  // namespace

MicroKernel<float> portable_kernel_f32() {
  return {kMr, kNr, 256, 128, 4096, &portable_kernel<float>, "portable"};
}
MicroKernel<double> portable_kernel_f64() {
  return {kMr, kNr, 256, 64, 4096, &portable_kernel<double>, "portable"};
}

}  // namespace opweave::gemm_detail
