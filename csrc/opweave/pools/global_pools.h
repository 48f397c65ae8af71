// The process-wide pools: one intra-op pool (parallelism inside an op) and one inter-op pool
// (ops running at once), created lazily on first use, sized by one documented precedence order.
//
//   set_intra_op_parallelism(4, "opweave.set_num_threads");  // explicit, resizes between uses
//   parallel_for(global_intra_pool(), 0, n, 4096, body);      // caller + 3 workers
//   auto eff = configure_parallelism_if_unset(8, 2, "ConfigProto of the first Session");
//   if (!eff.intra_applied) warn("intra-op pool stays at " + std::to_string(eff.intra) + " (" +
//                                eff.intra_source + ")");
//
// Sizes are honest (docs/architecture.md): intra_op_parallelism() == N means one op computes on at
// most N threads at once, the caller included, so the intra pool has N - 1 workers (N == 1: none).
// inter_op_parallelism() == M means the inter pool has M workers.
//
// Size precedence, first match wins, per pool:
//   1. an explicit set_*_op_parallelism(n > 0), or the first configure_parallelism_if_unset()
//      with n > 0 (TensorFlow: the first Session's ConfigProto sizes the global pools);
//   2. OPWEAVE_NUM_INTRAOP_THREADS / OPWEAVE_NUM_INTEROP_THREADS (positive integer);
//   3. OMP_NUM_THREADS (intra only; the first entry of a list such as "4,2");
//   4. the CPUs this process may use: cpu_info().available_cpus (affinity mask and cgroup quota).
// An environment variable that is set but not a positive integer is ignored, and the source
// string says so. set_*(0) means "the system picks": it drops an explicit size and re-applies
// rules 2-4.
//
// Every pool also reads, when it is created: OPWEAVE_SPIN_TIME_US (microseconds an idle worker
// spins before it parks; default 50) and OPWEAVE_AFFINITY=none|compact|scatter (worker pinning;
// default none). Invalid values are ignored (the source strings say so). environment.h reads the
// variables; this file decides which rule wins.
//
// Fork: after fork() the child has none of the parent's worker threads. A fork handler
// (fork_guard.h) drops the child's references to the parent's pools (their memory is leaked on
// purpose: destroying them would join threads that do not exist), keeping the sizes and sources;
// the next use creates fresh pools of the same sizes. The child never touches the dead threads and
// never hangs on them. fork() waits while another thread is creating or resizing a global pool.
//
// Thread-safety: every function is thread-safe, and set_* / restore_* may be called at any time
// from any thread, also while other threads run parallel_for or schedule() on that pool: the
// resize waits until the uses in flight have left, and new uses wait for it (ThreadPool::resize,
// ThreadPool::Use). Calling set_* / restore_* from inside that pool's own work (one of its
// workers, or a parallel_for / task on it further up this thread's stack) throws
// OpError(kFailedPrecondition) at once, also while another thread is resizing that pool: it would
// wait for itself. No lock of this file is held while a resize waits for the pool's work, so that
// work may read or set sizes (of the other pool) meanwhile.
#pragma once

#include <cstdint>
#include <string>

#include "opweave/cpu_info.h"
#include "opweave/pinning.h"
#include "opweave/thread_pool.h"

namespace opweave {

// The global intra-op pool (intra_op_parallelism() - 1 workers); kernels called directly from
// Python run on it. Created on first call.
ThreadPool* global_intra_pool();
// The global inter-op pool (inter_op_parallelism() workers). Created on first call.
ThreadPool* global_inter_pool();

// The sizes in effect (resolved by the precedence rules even before the pools exist).
int intra_op_parallelism();
int inter_op_parallelism();
// Which rule chose each size, for humans: e.g. "OMP_NUM_THREADS=4", "available CPUs
// (affinity 8, cgroup quota 2.00 -> 2)", "opweave.set_num_threads(3)".
std::string intra_op_parallelism_source();
std::string inter_op_parallelism_source();

// Explicit sizes (rule 1). n == 0: back to rules 2-4. n < 0 or n > kMaxThreads: throws
// OpError(kInvalidArgument). Resizes the pool if it exists (between uses, see above).
inline constexpr int kMaxThreads = 4096;
void set_intra_op_parallelism(int n, std::string source = "set_intra_op_parallelism");
void set_inter_op_parallelism(int n, std::string source = "set_inter_op_parallelism");

// One global pool's sizing state, saved and put back whole by context managers
// (opweave.threads, threadpool_limits): a save never mixes the size of one set_* call with the
// source of another, and a restore racing with a set_* leaves one of the two, whole.
struct ParallelismSetting {
  int size = 1;        // the size in effect
  std::string source;  // the rule that chose it
  bool fixed = false;  // rule 1 chose it: the environment and a first Session no longer apply
  int requested = 0;   // the n of the set_*_op_parallelism call that chose it; 0 when none did
                       // (TensorFlow's get_*_op_parallelism_threads)
};
ParallelismSetting intra_op_parallelism_setting();
ParallelismSetting inter_op_parallelism_setting();
// Puts a saved setting back (resizing the pool if it exists). Throws OpError(kInvalidArgument)
// for a size outside 1..kMaxThreads, OpError(kFailedPrecondition) as set_* does.
void restore_intra_op_parallelism(const ParallelismSetting& saved);
void restore_inter_op_parallelism(const ParallelismSetting& saved);

struct ParallelismInEffect {
  int intra = 1;
  std::string intra_source;
  bool intra_applied = false;  // true when this call chose the intra size
  int inter = 1;
  std::string inter_source;
  bool inter_applied = false;
};

// The rule "the first Session sizes the global pools" (TensorFlow's), and its only entry point:
// sizes each pool that was neither created nor explicitly sized yet (n > 0; n <= 0 leaves that
// pool to rules 2-4), then creates both pools, so later calls apply nothing and report what is in
// effect, letting the session layer warn about a disagreeing config. Throws
// OpError(kInvalidArgument) for n > kMaxThreads. Thread-safe.
ParallelismInEffect configure_parallelism_if_unset(int intra, int inter, std::string source);

// Everything parallel_info() shows about the global pools, in one consistent snapshot.
struct RuntimeInfo {
  int intra_op_parallelism = 1;
  std::string intra_source;
  bool intra_pool_created = false;
  int inter_op_parallelism = 1;
  std::string inter_source;
  bool inter_pool_created = false;
  std::int64_t spin_time_us = 50;
  std::string spin_time_source;
  Affinity affinity = Affinity::kNone;
  std::string affinity_source;
  CpuInfo cpu;
};
// Thread-safe. After a fork, the sources say that the pools are rebuilt lazily.
RuntimeInfo runtime_info();

// The spin time set at run time (ConfigProto.experimental.spin_time_us). An explicit spin time
// for the global pools (us >= 0; 0 = never spin) takes precedence over OPWEAVE_SPIN_TIME_US; us < 0
// goes back to the environment / the default. Existing global pools rebuild their workers (between
// uses, as set_*_op_parallelism: it waits for the work in flight, holding no lock that work may
// need). Thread-safe; throws OpError(kFailedPrecondition) from inside either global pool's own
// work.
void set_spin_time_us(std::int64_t us, std::string source);
// For the first Session: sets the spin time as above only when none was set explicitly and
// neither global pool exists yet (the pools' sizes follow the same rule). Returns whether it
// applied. Thread-safe.
bool configure_spin_time_if_unset(std::int64_t us, std::string source);

}  // namespace opweave
