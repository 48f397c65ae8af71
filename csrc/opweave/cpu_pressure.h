// How many graph kernels are running in this process right now, against the CPUs it may use: the
// signal parallel_for reads before it hands part of a loop to another thread.
//
// Intra-op threads help only when a CPU is free for them. When as many kernels run at once as
// the process has CPUs (intra = inter = 2 on two CPUs, two towers of a model side by side), a
// kernel that splits its loop puts a third thread on two CPUs: the OS time-slices them, and a
// parallel phase waits for whichever of its pieces was descheduled. So a loop splits only while
// fewer kernels run than there are CPUs; otherwise its calling thread runs it alone. Which thread
// runs a piece never changes a result, and intra_op_parallelism_threads stays an upper bound.
//
//   {
//     const RunningKernel running;   // around each kernel the executor runs
//     node.kernel(ctx);
//   }
//   if (cpus_busy()) ...              // parallel_for: do not split
//
// Thread-safe; every count is a hint (relaxed atomics): a stale read splits one piece early or
// late, never wrongly.
#pragma once

namespace opweave {

// Counts the calling thread as running a kernel for its lifetime.
class RunningKernel {
 public:
  RunningKernel() noexcept;
  ~RunningKernel();
  RunningKernel(const RunningKernel&) = delete;
  RunningKernel& operator=(const RunningKernel&) = delete;
};

// Kernels running now (a hint).
int running_kernels() noexcept;

// Whether as many kernels run as the process has CPUs (its affinity mask and cgroup quota, read
// at load and whenever the global pools are sized: set_cpu_budget).
bool cpus_busy() noexcept;

// The CPUs the process may use (cpu_info().available_cpus); at least 1.
void set_cpu_budget(int cpus) noexcept;
int cpu_budget() noexcept;

}  // namespace opweave
