// PLACEHOLDER implementation: a mutex-protected queue. The foundation issue replaces it with the
// work-stealing pool described in DESIGN.md.
#include "opweave/thread_pool.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "opweave/errors.h"

namespace opweave {

struct ThreadPool::Impl {
  PoolOptions options;
  std::mutex mutex;
  std::condition_variable cv;
  std::deque<std::function<void()>> queue;
  std::vector<std::thread> workers;
  bool stopping = false;
  PoolStats stats;
};

ThreadPool::ThreadPool(PoolOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  resize(impl_->options.num_workers);
}

ThreadPool::~ThreadPool() { shutdown(true); }

void ThreadPool::schedule(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    if (impl_->stopping) throw OpError(ErrorCode::kCancelled, "thread pool is shut down");
    impl_->queue.push_back(std::move(task));
  }
  impl_->cv.notify_one();
}

bool ThreadPool::try_run_one() {
  std::function<void()> task;
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    if (impl_->queue.empty()) return false;
    task = std::move(impl_->queue.front());
    impl_->queue.pop_front();
  }
  task();
  return true;
}

int ThreadPool::num_workers() const noexcept { return impl_->options.num_workers; }

void ThreadPool::resize(int num_workers) {
  shutdown(true);
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->stopping = false;
  impl_->options.num_workers = num_workers;
  for (int i = 0; i < num_workers; ++i) {
    impl_->workers.emplace_back([this] {
      for (;;) {
        std::function<void()> task;
        {
          std::unique_lock<std::mutex> lock(impl_->mutex);
          impl_->cv.wait(lock, [this] { return impl_->stopping || !impl_->queue.empty(); });
          if (impl_->queue.empty()) return;
          task = std::move(impl_->queue.front());
          impl_->queue.pop_front();
        }
        task();
      }
    });
  }
}

std::size_t ThreadPool::shutdown(bool run_pending) {
  std::size_t dropped = 0;
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->stopping = true;
    if (!run_pending) {
      dropped = impl_->queue.size();
      impl_->queue.clear();
    }
  }
  impl_->cv.notify_all();
  for (auto& t : impl_->workers) t.join();
  impl_->workers.clear();
  while (try_run_one()) {
  }
  return dropped;
}

int ThreadPool::current_worker_index() const noexcept { return -1; }
std::vector<long> ThreadPool::worker_thread_ids() const { return {}; }
PoolStats ThreadPool::stats() const { return impl_->stats; }
void ThreadPool::reset_stats() { impl_->stats = PoolStats{}; }
const PoolOptions& ThreadPool::options() const noexcept { return impl_->options; }

}  // namespace opweave
