// Moving a pool worker off a CPU it shares with the thread it should run beside.
//
// Linux often wakes a sleeping thread on the waker's CPU (wake-affine placement; the project's
// VM kernel also packs threads onto few vCPUs), and then the two run time-sliced on one CPU while
// another sits idle. The load balancer does not fix it quickly: both threads ran within the last
// half millisecond, so both count as cache-hot and neither is pulled. Measured on the 2-vCPU VM:
// a 2-thread 0.6 ms convolution called in a loop after a 150 ms pause ran on one CPU for the
// whole 25 ms loop in most loops (80 instead of 180 GFLOP/s), and a worker woken by a thread
// that had been idle ran its task on the waker's CPU 55-60 times out of 60.
//
// A pool worker moves itself (ThreadPool's worker loop) when it wakes on the CPU its waker ran on
// (EventCount::waker_cpu): it narrows its own affinity mask to exclude that CPU, so that the
// kernel migrates it at once, and restores the mask right after, which does not move it back.
// Only workers whose mask nobody else manages (pools without OPWEAVE_AFFINITY pinning), and only
// when the mask has another CPU; the kernel picks which (on two CPUs, the other one). (Moving a
// spinning worker whose yield gave the CPU away for long was tried too: with intra = 2, inter = 1
// three threads of ours share two CPUs by design, and those moves made an MLP training step's
// slow runs more frequent.)
//
//   if (current_cpu() == waker_cpu) move_off_cpu(waker_cpu);
#pragma once

namespace opweave {

// The CPU the calling thread runs on now, or -1 when unknown (a hint: it may move right after).
int current_cpu() noexcept;

// Moves the calling thread off `cpu` if it runs there and its affinity mask has another CPU;
// leaves the mask as it was. Returns true when it moved. Thread-safe (it only touches the calling
// thread's own mask); a concurrent change of this thread's mask by another thread may be undone,
// and if restoring fails (the cgroup's CPU set shrank in between) the narrower mask stays.
bool move_off_cpu(int cpu) noexcept;

}  // namespace opweave
