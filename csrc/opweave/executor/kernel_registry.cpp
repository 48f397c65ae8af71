#include "opweave/executor/kernel_registry.h"

#include <map>
#include <mutex>

#include "opweave/errors.h"
#include "opweave/fork_guard.h"

namespace opweave {

// Defined in the kernel files; called once from the registry so a static library link keeps them
// (self-registering statics in a static library would be dropped by the linker).
void register_standard_kernels();
void register_math_kernels();

namespace {

struct Registry {
  std::mutex mutex;  // guards kernels: registration may race with compilation on other threads
  std::map<std::string, KernelDef> kernels;
};

// Leaked so it outlives static teardown. Constant-initialised to null, filled at load time below.
Registry* g_registry = nullptr;

Registry& storage() { return *g_registry; }

// Built at load time, not on first use: a fork() while another thread ran a lazy initialiser would
// leave the child waiting on its guard forever (fork_guard.h). Compilation may run on any thread.
[[maybe_unused]] const bool g_builtins_registered = [] {
  g_registry = new Registry;
  hold_across_fork(&g_registry->mutex);
  register_standard_kernels();
  register_math_kernels();
  return true;
}();

}  // namespace

void register_kernel(const std::string& op, KernelDef def) {
  Registry& r = storage();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.kernels[op] = std::move(def);
}

KernelDef find_kernel(const std::string& op) {
  Registry& r = storage();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.kernels.find(op);
  if (it == r.kernels.end()) {
    throw OpError(ErrorCode::kNotFound, "no kernel registered for op type '" + op + "'");
  }
  return it->second;
}

}  // namespace opweave
