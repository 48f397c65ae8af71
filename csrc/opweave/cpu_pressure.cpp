#include "opweave/cpu_pressure.h"

#include <algorithm>
#include <atomic>

#include "opweave/cpu_info.h"

namespace opweave {
namespace {

// Both relaxed throughout: they are hints for a splitting heuristic and order nothing else.
std::atomic<int> g_running{0};
// Read at load time, not on first use: a fork() during a lazy initialiser would leave the child
// waiting on its guard (fork_guard.h).
std::atomic<int> g_budget{std::max(1, cpu_info().available_cpus)};

}  // namespace

RunningKernel::RunningKernel() noexcept { g_running.fetch_add(1, std::memory_order_relaxed); }
RunningKernel::~RunningKernel() { g_running.fetch_sub(1, std::memory_order_relaxed); }

int running_kernels() noexcept { return g_running.load(std::memory_order_relaxed); }

bool cpus_busy() noexcept {
  return g_running.load(std::memory_order_relaxed) >= g_budget.load(std::memory_order_relaxed);
}

void set_cpu_budget(int cpus) noexcept {
  g_budget.store(std::max(1, cpus), std::memory_order_relaxed);
}
int cpu_budget() noexcept { return g_budget.load(std::memory_order_relaxed); }

}  // namespace opweave
