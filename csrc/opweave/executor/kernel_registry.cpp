#include "opweave/executor/kernel_registry.h"

#include <map>
#include <mutex>

#include "opweave/errors.h"

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

Registry& storage() {
  static Registry* r = new Registry;  // thread-safe init; leaked so it outlives static teardown
  return *r;
}

void ensure_builtins() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_standard_kernels();
    register_math_kernels();
  });
}

}  // namespace

void register_kernel(const std::string& op, KernelDef def) {
  Registry& r = storage();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.kernels[op] = std::move(def);
}

KernelDef find_kernel(const std::string& op) {
  ensure_builtins();
  Registry& r = storage();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.kernels.find(op);
  if (it == r.kernels.end()) {
    throw OpError(ErrorCode::kNotFound, "no kernel registered for op type '" + op + "'");
  }
  return it->second;
}

}  // namespace opweave
