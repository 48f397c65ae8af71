// The element loops of the optimizers' fused updates (training_ops.cpp), compiled three times
// from this one source: training_loops.cpp (baseline x86-64, or any CPU), training_loops_avx2.cpp
// and training_loops_avx512.cpp (-ffp-contract=off), all with -fno-math-errno (CMakeLists.txt) so
// std::sqrt is one instruction and the loops vectorise. Every loop is TensorFlow's formula in
// TensorFlow's operation order, each element's arithmetic on its own inputs, and square roots and
// divisions are correctly rounded at every width: the same bits from every build.
//
// Why three builds: the baseline build's loops are 4 floats wide, and the square root and the
// division of Adam or RMSProp then cost more than the memory traffic (a 401408-element Adam step:
// 257 us baseline, 145 us AVX2, in cache).
#pragma once

#include <cstdint>

namespace opweave::training_loops {

// One update's operands. in[i] / out[i] are the variable (i = 0) and its slots in the op's input
// order (Adam: var, m, v); out[i] is in[i] itself when the update runs in place, otherwise a
// buffer that does not overlap it. The scalars each loop reads are named in its comment below.
template <typename T>
struct UpdateArgs {
  const T* grad = nullptr;
  const T* in[4] = {};
  T* out[4] = {};
  T lr{};  // Adam: lr * sqrt(1 - beta2_power) / (1 - beta1_power)
  T momentum{};
  T beta1{};
  T one_minus_beta1{};
  T one_minus_beta2{};
  T one_minus_rho{};  // RMSProp
  T epsilon{};
  bool nesterov = false;
  bool update_slots = true;  // Adagrad
};

// Elements [begin, end) of one update.
template <typename T>
using UpdateFn = void (*)(const UpdateArgs<T>& a, std::int64_t begin, std::int64_t end);

template <typename T>
struct Table {
  UpdateFn<T> gradient_descent;   // var -= grad * lr
  UpdateFn<T> momentum;           // accum = accum * momentum + grad; var -= accum * lr
  UpdateFn<T> adam;               // m, v by one_minus_beta1/2; var -= m * lr / (sqrt(v) + eps)
  UpdateFn<T> rms_prop;           // ms, mom: var -= mom
  UpdateFn<T> centered_rms_prop;  // mg, ms, mom: var -= mom
  UpdateFn<T> adagrad;            // accum += grad^2; var -= grad * lr * (1 / sqrt(accum))
};

// The build this CPU runs, chosen once at load time.
template <typename T>
const Table<T>& selected_table();

template <typename T>
Table<T> table_baseline();
#if defined(OPWEAVE_X86_64)
template <typename T>
Table<T> table_avx2();
template <typename T>
Table<T> table_avx512();
#endif

}  // namespace opweave::training_loops

// Only the three loop files define OPWEAVE_TRAINING_LOOPS_IMPL. The loops sit in an unnamed
// namespace: each file gets its own copy, so the linker can never substitute one build's
// instantiation for another's.
#if defined(OPWEAVE_TRAINING_LOOPS_IMPL)
#include <cmath>

// Each iteration reads and writes element i alone, and a buffer is either updated in place or
// written to a disjoint one, so no iteration depends on another: the compiler may vectorise
// without its runtime aliasing check (which would see in == out as a possible overlap and fall
// back to scalar code for every in-place update).
#if defined(__clang__)
#define OPWEAVE_IVDEP _Pragma("clang loop vectorize(assume_safety)")
#elif defined(__GNUC__)
#define OPWEAVE_IVDEP _Pragma("GCC ivdep")
#else
#define OPWEAVE_IVDEP
#endif

namespace opweave::training_loops {
namespace {

template <typename T>
void gradient_descent(const UpdateArgs<T>& a, std::int64_t b, std::int64_t e) {
  const T* g = a.grad;
  const T* var_in = a.in[0];
  T* var = a.out[0];
  const T lr = a.lr;
  OPWEAVE_IVDEP
  for (std::int64_t i = b; i < e; ++i) var[i] = var_in[i] - g[i] * lr;
}

// Nesterov: var -= grad * lr + accum * momentum * lr.
template <typename T>
void momentum(const UpdateArgs<T>& a, std::int64_t b, std::int64_t e) {
  const T* g = a.grad;
  const T* var_in = a.in[0];
  const T* acc_in = a.in[1];
  T* var = a.out[0];
  T* acc = a.out[1];
  const T lr = a.lr;
  const T mu = a.momentum;
  if (a.nesterov) {
    OPWEAVE_IVDEP
    for (std::int64_t i = b; i < e; ++i) {
      const T ai = acc_in[i] * mu + g[i];
      acc[i] = ai;
      var[i] = var_in[i] - (g[i] * lr + ai * mu * lr);
    }
  } else {
    OPWEAVE_IVDEP
    for (std::int64_t i = b; i < e; ++i) {
      const T ai = acc_in[i] * mu + g[i];
      acc[i] = ai;
      var[i] = var_in[i] - ai * lr;
    }
  }
}

// m += (g - m) * (1 - beta1); v += (g^2 - v) * (1 - beta2); var -= m * lr / (sqrt(v) + epsilon)
// (Nesterov: g * (1 - beta1) + beta1 * m in place of m).
template <typename T>
void adam(const UpdateArgs<T>& a, std::int64_t b, std::int64_t e) {
  const T* g = a.grad;
  const T* var_in = a.in[0];
  const T* m_in = a.in[1];
  const T* v_in = a.in[2];
  T* var = a.out[0];
  T* m = a.out[1];
  T* v = a.out[2];
  const T alpha = a.lr;
  const T beta1 = a.beta1;
  const T one_minus_beta1 = a.one_minus_beta1;
  const T one_minus_beta2 = a.one_minus_beta2;
  const T epsilon = a.epsilon;
  if (a.nesterov) {
    OPWEAVE_IVDEP
    for (std::int64_t i = b; i < e; ++i) {
      const T gi = g[i];
      const T mi = m_in[i] + (gi - m_in[i]) * one_minus_beta1;
      const T vi = v_in[i] + (gi * gi - v_in[i]) * one_minus_beta2;
      m[i] = mi;
      v[i] = vi;
      var[i] =
          var_in[i] - ((gi * one_minus_beta1 + beta1 * mi) * alpha) / (std::sqrt(vi) + epsilon);
    }
  } else {
    OPWEAVE_IVDEP
    for (std::int64_t i = b; i < e; ++i) {
      const T gi = g[i];
      const T mi = m_in[i] + (gi - m_in[i]) * one_minus_beta1;
      const T vi = v_in[i] + (gi * gi - v_in[i]) * one_minus_beta2;
      m[i] = mi;
      v[i] = vi;
      var[i] = var_in[i] - (mi * alpha) / (std::sqrt(vi) + epsilon);
    }
  }
}

// ms += (g^2 - ms) * (1 - rho); mom = mom * momentum + g * lr / sqrt(ms + epsilon); var -= mom
template <typename T>
void rms_prop(const UpdateArgs<T>& a, std::int64_t b, std::int64_t e) {
  const T* g = a.grad;
  const T* var_in = a.in[0];
  const T* ms_in = a.in[1];
  const T* mom_in = a.in[2];
  T* var = a.out[0];
  T* ms = a.out[1];
  T* mom = a.out[2];
  const T lr = a.lr;
  const T mu = a.momentum;
  const T one_minus_rho = a.one_minus_rho;
  const T epsilon = a.epsilon;
  OPWEAVE_IVDEP
  for (std::int64_t i = b; i < e; ++i) {
    const T gi = g[i];
    const T s = ms_in[i] + (gi * gi - ms_in[i]) * one_minus_rho;
    const T mo = mom_in[i] * mu + (gi * lr) / std::sqrt(s + epsilon);
    ms[i] = s;
    mom[i] = mo;
    var[i] = var_in[i] - mo;
  }
}

// RMSProp with mg, the mean gradient, kept like ms: the denominator is sqrt(ms - mg^2 + epsilon).
template <typename T>
void centered_rms_prop(const UpdateArgs<T>& a, std::int64_t b, std::int64_t e) {
  const T* g = a.grad;
  const T* var_in = a.in[0];
  const T* mg_in = a.in[1];
  const T* ms_in = a.in[2];
  const T* mom_in = a.in[3];
  T* var = a.out[0];
  T* mg = a.out[1];
  T* ms = a.out[2];
  T* mom = a.out[3];
  const T lr = a.lr;
  const T mu = a.momentum;
  const T one_minus_rho = a.one_minus_rho;
  const T epsilon = a.epsilon;
  OPWEAVE_IVDEP
  for (std::int64_t i = b; i < e; ++i) {
    const T gi = g[i];
    const T s = ms_in[i] + (gi * gi - ms_in[i]) * one_minus_rho;
    const T ai = mg_in[i] + (gi - mg_in[i]) * one_minus_rho;
    const T denom = (s - ai * ai) + epsilon;
    const T mo = mom_in[i] * mu + (gi * lr) / std::sqrt(denom);
    ms[i] = s;
    mg[i] = ai;
    mom[i] = mo;
    var[i] = var_in[i] - mo;
  }
}

// accum += g^2 (when update_slots); var -= g * lr * (1 / sqrt(accum))
template <typename T>
void adagrad(const UpdateArgs<T>& a, std::int64_t b, std::int64_t e) {
  const T* g = a.grad;
  const T* var_in = a.in[0];
  const T* acc_in = a.in[1];
  T* var = a.out[0];
  T* acc = a.out[1];
  const T lr = a.lr;
  if (a.update_slots) {
    OPWEAVE_IVDEP
    for (std::int64_t i = b; i < e; ++i) {
      const T gi = g[i];
      const T ai = acc_in[i] + gi * gi;
      acc[i] = ai;
      var[i] = var_in[i] - gi * lr * (T(1) / std::sqrt(ai));
    }
  } else {
    OPWEAVE_IVDEP
    for (std::int64_t i = b; i < e; ++i) {
      const T ai = acc_in[i];
      acc[i] = ai;
      var[i] = var_in[i] - g[i] * lr * (T(1) / std::sqrt(ai));
    }
  }
}

template <typename T>
Table<T> make_table() {
  return {&gradient_descent<T>, &momentum<T>,          &adam<T>,
          &rms_prop<T>,         &centered_rms_prop<T>, &adagrad<T>};
}

}  // namespace
}  // namespace opweave::training_loops

#undef OPWEAVE_IVDEP

#define OPWEAVE_TRAINING_LOOPS_INSTANTIATE(NAME) \
  namespace opweave::training_loops {            \
  template <typename T>                          \
  Table<T> NAME() {                              \
    return make_table<T>();                      \
  }                                              \
  template Table<float> NAME<float>();           \
  template Table<double> NAME<double>();         \
  }
#endif
