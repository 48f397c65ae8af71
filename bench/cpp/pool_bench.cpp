// Pool micro-benchmarks, driven by bench/pool.py. Prints one JSON object per line:
//   {"name": ..., "threads": N, "ours": x, "peer": y, "unit": ...}
// "peer" is the same work on a plain mutex + condition-variable queue pool (what most hand-rolled
// pools are, and what opweave had before the work-stealing pool) or on fresh std::threads.
//
//   pool_bench [threads] [repeats]
//   pool_bench tasks <threads> <outside|worker> [n] [ours|peer] [rounds]   # only the many-tasks
//     case, `rounds` times on one pool (default 1), for profilers: valgrind --tool=callgrind
//     pool_bench tasks 2 worker 100000; prints the median as
//     {"tasks": n, "from": ..., "pool": ..., "seconds": s} (and our pool's parks/wakeups/steals on
//     stderr)
//   pool_bench idle <workers> [seconds]   # CPU time used while idle after a parallel loop:
//     {"idle": true, "workers": N, "seconds": s, "process_cpu_ms": x, "worker_cpu_ms": [...],
//      "parks": p, "spin_time_us": t}
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "opweave/parallel_for.h"
#include "opweave/spin.h"
#include "opweave/thread_pool.h"
#include "thread_cpu_time.h"  // tests/cpp

using namespace opweave;
using Clock = std::chrono::steady_clock;
using opweave::testing::thread_cpu_ns;

namespace {

// The peer: one shared queue, one lock, one condition variable.
class MutexQueuePool {
 public:
  explicit MutexQueuePool(int n) {
    for (int i = 0; i < n; ++i) threads_.emplace_back([this] { loop(); });
  }
  ~MutexQueuePool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);  // guards stop_
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  void schedule(std::function<void()> f) {
    {
      std::lock_guard<std::mutex> lock(mutex_);  // guards queue_
      queue_.push_back(std::move(f));
    }
    cv_.notify_one();
  }

 private:
  void loop() {
    for (;;) {
      std::function<void()> f;
      {
        std::unique_lock<std::mutex> lock(mutex_);  // guards queue_ and stop_
        cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;
        f = std::move(queue_.front());
        queue_.pop_front();
      }
      f();
    }
  }
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

template <typename F>
double median_seconds(int repeats, F&& f) {
  std::vector<double> t;
  for (int r = 0; r < repeats; ++r) {
    const auto start = Clock::now();
    f();
    t.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

void report(const char* name, int threads, double ours, double peer, const char* unit) {
  std::printf(
      "{\"name\": \"%s\", \"threads\": %d, \"ours\": %.6g, \"peer\": %.6g, "
      "\"unit\": \"%s\"}\n",
      name, threads, ours, peer, unit);
  std::fflush(stdout);
}

volatile double g_sink = 0;

// A dependent floating-point chain the compiler cannot remove or vectorize.
double busy_work(int iters) {
  double x = 1.0;
  for (int i = 0; i < iters; ++i) x = x * 1.0000001 + 1e-9;
  return x;
}

// One fork-join: every worker runs one empty task; the caller only waits (it does not help, so
// the figure is the real hand-off to and back from each worker).
template <typename Pool>
void fork_join(Pool& pool, int workers) {
  std::atomic<int> left{workers};
  for (int w = 0; w < workers; ++w) {
    // release/acquire: the usual completion hand-off.
    pool.schedule([&left] { left.fetch_sub(1, std::memory_order_release); });
  }
  for (int round = 1; left.load(std::memory_order_acquire) != 0; ++round) {
    if (round % 16 == 0) {
      std::this_thread::yield();  // as parallel_for's waiting caller does
    } else {
      cpu_relax();
    }
  }
}

void spawn_join(int workers) {
  std::vector<std::thread> ts;
  for (int w = 0; w < workers; ++w) ts.emplace_back([] {});
  for (auto& t : ts) t.join();
}

// n empty tasks submitted by the caller (or by one task on a worker), then waited for.
template <typename Pool>
void many_tasks(Pool& pool, int n, bool from_worker) {
  std::atomic<int> left{n};
  auto submit = [&] {
    for (int i = 0; i < n; ++i) {
      pool.schedule([&left] { left.fetch_sub(1, std::memory_order_release); });
    }
  };
  if (from_worker) {
    pool.schedule(submit);
  } else {
    submit();
  }
  while (left.load(std::memory_order_acquire) != 0) std::this_thread::yield();
}

long long process_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<long long>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

// The promise "idle workers use no CPU after a short spin". A parallel loop wakes every worker;
// then the process sleeps for `seconds` and we read the CPU time the workers (and the whole
// process, the sleeping caller included) used meanwhile.
int idle_cpu(int workers, double seconds) {
  PoolOptions options;
  options.num_workers = workers;
  options.name = "idle";
  ThreadPool pool(options);
  const std::vector<long> tids = pool.worker_thread_ids();
  parallel_for(&pool, 0, 1 << 16, 64, [](std::int64_t b, std::int64_t e) {
    double s = 0;
    for (std::int64_t i = b; i < e; ++i) s += busy_work(50);
    g_sink = g_sink + s;
  });
  const std::uint64_t parks_before = pool.stats().parks;
  std::vector<long long> before;
  for (long t : tids) before.push_back(thread_cpu_ns(t));
  const long long process_before = process_cpu_ns();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  const long long process_used = process_cpu_ns() - process_before;
  std::printf(
      "{\"idle\": true, \"workers\": %d, \"seconds\": %.3g, \"process_cpu_ms\": %.6g, "
      "\"worker_cpu_ms\": [",
      workers, seconds, static_cast<double>(process_used) / 1e6);
  for (std::size_t i = 0; i < tids.size(); ++i) {
    const long long used = thread_cpu_ns(tids[i]) - before[i];
    std::printf("%s%.6g", i ? ", " : "", static_cast<double>(used) / 1e6);
  }
  std::printf("], \"parks\": %llu, \"spin_time_us\": %lld}\n",
              static_cast<unsigned long long>(pool.stats().parks - parks_before),
              static_cast<long long>(pool.options().spin_time_us));
  return 0;
}

// One many_tasks run on one pool, for a profiler (the other cases would drown it).
int tasks_only(int threads, bool from_worker, int n, bool peer_pool, int rounds) {
  const int workers = std::max(1, threads - 1);
  double seconds = 0;
  if (peer_pool) {
    MutexQueuePool peer(workers);
    seconds = median_seconds(rounds, [&] { many_tasks(peer, n, from_worker); });
  } else {
    PoolOptions options;
    options.num_workers = workers;
    options.name = "bench";
    ThreadPool pool(options);
    seconds = median_seconds(rounds, [&] { many_tasks(pool, n, from_worker); });
    const PoolStats st = pool.stats();
    std::fprintf(
        stderr, "parks %llu wakeups %llu steals %llu\n", static_cast<unsigned long long>(st.parks),
        static_cast<unsigned long long>(st.wakeups), static_cast<unsigned long long>(st.steals));
  }
  std::printf("{\"tasks\": %d, \"from\": \"%s\", \"pool\": \"%s\", \"seconds\": %.6g}\n", n,
              from_worker ? "worker" : "outside", peer_pool ? "peer" : "ours", seconds);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "tasks") {
    const int threads = argc > 2 ? std::atoi(argv[2]) : 2;
    const bool from_worker = argc > 3 && std::string(argv[3]) == "worker";
    const int n = argc > 4 ? std::atoi(argv[4]) : 1000000;
    const bool peer = argc > 5 && std::string(argv[5]) == "peer";
    const int rounds = argc > 6 ? std::max(1, std::atoi(argv[6])) : 1;
    return tasks_only(threads, from_worker, n, peer, rounds);
  }
  if (argc > 1 && std::string(argv[1]) == "idle") {
    const int workers = argc > 2 ? std::atoi(argv[2]) : 1;
    return idle_cpu(workers, argc > 3 ? std::atof(argv[3]) : 2.0);
  }
  const int threads =
      argc > 1 ? std::atoi(argv[1]) : static_cast<int>(std::thread::hardware_concurrency());
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 7;
  const int workers = std::max(1, threads - 1);
  PoolOptions options;
  options.num_workers = workers;
  options.name = "bench";
  ThreadPool pool(options);
  MutexQueuePool peer(workers);

  // 1. Empty fork-join over all threads.
  const int fj = 2000;
  const double fj_ours = median_seconds(repeats, [&] {
    for (int i = 0; i < fj; ++i) fork_join(pool, workers);
  });
  const double fj_peer = median_seconds(repeats, [&] {
    for (int i = 0; i < fj; ++i) fork_join(peer, workers);
  });
  report("empty fork-join over all workers", threads, fj_ours / fj * 1e6, fj_peer / fj * 1e6, "us");
  const double pf = median_seconds(repeats, [&] {
    for (int i = 0; i < fj; ++i) {
      parallel_for(&pool, 0, threads, 1, [](std::int64_t, std::int64_t) {});
    }
  });
  const double spawn = median_seconds(repeats, [&] {
    for (int i = 0; i < 200; ++i) spawn_join(workers);
  });
  report("empty parallel_for, 1 index per thread (peer: spawn+join threads)", threads,
         pf / fj * 1e6, spawn / 200 * 1e6, "us");

  // 2. Throughput of 1M empty tasks.
  const int n = 1000000;
  const int reps = std::max(3, repeats / 2);
  const double outside = median_seconds(reps, [&] { many_tasks(pool, n, false); });
  const double inside = median_seconds(reps, [&] { many_tasks(pool, n, true); });
  const double peer_outside = median_seconds(reps, [&] { many_tasks(peer, n, false); });
  const double peer_inside = median_seconds(reps, [&] { many_tasks(peer, n, true); });
  report("1M empty tasks submitted from outside", threads, n / outside / 1e6,
         n / peer_outside / 1e6, "Mtasks/s");
  report("1M empty tasks submitted from a worker", threads, n / inside / 1e6, n / peer_inside / 1e6,
         "Mtasks/s");

  // 3. parallel_for overhead on a loop of ~1 us of work in total (100 indices, grain 1).
  const int idx = 100;
  int iters_per_index = 1;
  auto body = [&](std::int64_t b, std::int64_t e) {
    double s = 0;
    for (std::int64_t i = b; i < e; ++i) s += busy_work(iters_per_index);
    g_sink = g_sink + s;
  };
  const int loops = 5000;
  auto serial_us = [&] {
    return median_seconds(repeats,
                          [&] {
                            for (int i = 0; i < loops; ++i) body(0, idx);
                          }) /
           loops * 1e6;
  };
  while (serial_us() < 1.0) iters_per_index *= 2;  // calibrate to >= 1 us
  const double serial = serial_us();
  const double cycles = 4.0 * iters_per_index;  // ~4 cycles per dependent multiply-add
  const double no_hint = median_seconds(repeats, [&] {
    for (int i = 0; i < loops; ++i) parallel_for(&pool, 0, idx, 1, body);
  });
  const double hint = median_seconds(repeats, [&] {
    for (int i = 0; i < loops; ++i) parallel_for(&pool, 0, idx, 1, body, cycles);
  });
  report("~1 us loop via parallel_for, no cost hint (peer: serial loop)", threads,
         no_hint / loops * 1e6, serial, "us");
  report("~1 us loop via parallel_for, with cost hint (peer: serial loop)", threads,
         hint / loops * 1e6, serial, "us");
  return 0;
}
