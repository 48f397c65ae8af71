#include "opweave/trace.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>

namespace opweave {

namespace {
thread_local ChunkObserver* t_chunk_observer = nullptr;
}  // namespace

std::int64_t now_nanos() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

long current_thread_id() noexcept {
  // Not cached in a thread_local: a forked child's thread inherits the parent's copy, and the
  // id would then name a thread of another process. Only traces call this.
  return static_cast<long>(::syscall(SYS_gettid));
}

ChunkObserver* current_chunk_observer() noexcept { return t_chunk_observer; }

ScopedChunkObserver::ScopedChunkObserver(ChunkObserver* observer) noexcept
    : previous_(t_chunk_observer) {
  t_chunk_observer = observer;
}

ScopedChunkObserver::~ScopedChunkObserver() { t_chunk_observer = previous_; }

}  // namespace opweave
