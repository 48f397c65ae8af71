// How much of the calling thread's stack is left: what bounds nested Session.run calls (a
// py_function that runs its own graph recurses through the executor on one thread, and each
// level costs C++ and Python frames on that thread's stack).
//
//   if (stack_bytes_left() < kNestedRunStackReserve) throw ...;   // before the next level
#pragma once

#include <cstddef>

namespace opweave {

// Bytes between the current stack pointer and the end of this thread's stack, or SIZE_MAX when
// the platform does not say where the stack ends. The bounds are looked up once per thread.
std::size_t stack_bytes_left() noexcept;
// This thread's whole stack size in bytes (0 when unknown).
std::size_t stack_bytes_total() noexcept;

// A nested run is refused with this much stack left or less: one level needs a few KiB, and the
// Python code of a py_function between two levels needs room of its own.
constexpr std::size_t kNestedRunStackReserve = 256 * 1024;

}  // namespace opweave
