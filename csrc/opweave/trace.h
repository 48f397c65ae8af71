// Tracing hooks of the core: a wall clock and thread ids for traces, and the hook through which
// parallel_for reports the chunks of a traced op (who ran which part of the range, and when).
//
//   struct Print final : ChunkObserver {
//     void on_chunk(const ChunkRecord& c) noexcept override { log(c.thread_id, c.begin, c.end); }
//   } print;
//   {
//     ScopedChunkObserver scope(&print);        // this thread's parallel_for calls report...
//     parallel_for(pool, 0, n, grain, body);    // ...every chunk, from whichever thread ran it
//   }
//
// Nothing is recorded unless a thread sets an observer: parallel_for reads one thread-local
// pointer per call, so the untraced hot path pays a load and a branch.
#pragma once

#include <cstdint>

namespace opweave {

// Nanoseconds since the Unix epoch (system clock, as TensorFlow's step stats report times).
std::int64_t now_nanos() noexcept;
// The kernel thread id (gettid) of the calling thread, as `ps -L` and debuggers show it.
long current_thread_id() noexcept;

// One contiguous piece [begin, end) of a parallel_for range, run by one thread without a break.
struct ChunkRecord {
  std::int64_t begin = 0;
  std::int64_t end = 0;
  std::int64_t start_nanos = 0;
  std::int64_t end_nanos = 0;
  long thread_id = 0;
};

// Receives the chunks of the parallel_for calls made while it is installed (ScopedChunkObserver).
// on_chunk is called from any thread of the pool, concurrently: implementations synchronise.
// It must outlive the parallel_for calls (they return only after every chunk has reported).
class ChunkObserver {
 public:
  virtual void on_chunk(const ChunkRecord& chunk) noexcept = 0;

 protected:
  ~ChunkObserver() = default;
};

// The observer the calling thread's parallel_for calls report to (null: none).
ChunkObserver* current_chunk_observer() noexcept;

// Installs an observer for the calling thread for its lifetime, then restores the previous one
// (scopes nest). One thread; not movable.
class ScopedChunkObserver {
 public:
  explicit ScopedChunkObserver(ChunkObserver* observer) noexcept;
  ~ScopedChunkObserver();
  ScopedChunkObserver(const ScopedChunkObserver&) = delete;
  ScopedChunkObserver& operator=(const ScopedChunkObserver&) = delete;

 private:
  ChunkObserver* previous_;
};

}  // namespace opweave
