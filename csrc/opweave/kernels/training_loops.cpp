// Baseline x86-64 (or any CPU) build of the optimizers' update loops, and the choice of build for
// this CPU; see training_loops.h.
#define OPWEAVE_TRAINING_LOOPS_IMPL
#include "opweave/kernels/training_loops.h"

#include "opweave/cpu_info.h"

OPWEAVE_TRAINING_LOOPS_INSTANTIATE(table_baseline)

namespace opweave::training_loops {
namespace {

template <typename T>
Table<T> choose() {
#if defined(OPWEAVE_X86_64)
  const IsaFlags isa = isa_flags();
  if (isa.can_run_avx512_files()) return table_avx512<T>();
  if (isa.can_run_avx2_files()) return table_avx2<T>();
#endif
  return table_baseline<T>();
}

// Chosen at load time, not on first use: see fork_guard.h.
const Table<float> g_selected_f32 = choose<float>();
const Table<double> g_selected_f64 = choose<double>();

}  // namespace

template <>
const Table<float>& selected_table<float>() {
  return g_selected_f32;
}
template <>
const Table<double>& selected_table<double>() {
  return g_selected_f64;
}

}  // namespace opweave::training_loops
