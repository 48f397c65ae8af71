#include "opweave/stack_guard.h"

#include <pthread.h>

#include <cstdint>
#include <limits>

namespace opweave {
namespace {

struct StackBounds {
  std::uintptr_t low = 0;  // the lowest usable address (stacks grow down on every target we build)
  std::size_t size = 0;    // 0: unknown
};

StackBounds lookup_bounds() noexcept {
  StackBounds b;
#if defined(__linux__)
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return b;
  void* addr = nullptr;
  std::size_t size = 0;
  if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
    b.low = reinterpret_cast<std::uintptr_t>(addr);
    b.size = size;
  }
  pthread_attr_destroy(&attr);
#endif
  return b;
}

const StackBounds& bounds() noexcept {
  // Per thread, computed on first use: a thread's stack never moves.
  thread_local const StackBounds b = lookup_bounds();
  return b;
}

}  // namespace

std::size_t stack_bytes_left() noexcept {
  const StackBounds& b = bounds();
  if (b.size == 0) return std::numeric_limits<std::size_t>::max();
  char here = 0;
  const auto sp = reinterpret_cast<std::uintptr_t>(&here);
  return sp > b.low ? static_cast<std::size_t>(sp - b.low) : 0;
}

std::size_t stack_bytes_total() noexcept { return bounds().size; }

}  // namespace opweave
