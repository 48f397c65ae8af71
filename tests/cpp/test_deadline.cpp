// Deadlines that hold: a run past its deadline returns within ~the deadline + 40 ms even while
// one of its kernels cannot be interrupted; the kernel finishes in the background, its outputs
// dropped, and close() / the destructor wait for it.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "opweave/executor/executor.h"
#include "opweave/executor/kernel_registry.h"
#include "testing.h"

using namespace opweave;

namespace {

using Clock = std::chrono::steady_clock;

// A gate the TBlock kernel waits at until the test opens it: an op that does not stop.
struct Gate {
  std::mutex mutex;
  std::condition_variable cv;
  bool open = false;
  std::atomic<int> inside{0};
  std::atomic<int> finished{0};

  void wait() {
    inside.fetch_add(1);
    std::unique_lock<std::mutex> lock(mutex);
    cv.wait(lock, [this] { return open; });
    finished.fetch_add(1);
  }
  void release() {
    std::lock_guard<std::mutex> lock(mutex);
    open = true;
    cv.notify_all();
  }
  void reset() {
    std::lock_guard<std::mutex> lock(mutex);
    open = false;
    inside = 0;
    finished = 0;
  }
};

Gate g_gate;

Tensor scalar(std::int64_t v) {
  Tensor t = Tensor::empty(DType::kInt64, {});
  t.data<std::int64_t>()[0] = v;
  return t;
}

void register_gate_kernels() {
  register_kernel("TBlock", {[](const NodeDef&) -> Kernel {
                               return [](KernelContext& ctx) {
                                 g_gate.wait();
                                 ctx.outputs[0] = scalar(1);
                               };
                             },
                             CostHint::kExpensive});
  register_kernel("TNap", {[](const NodeDef& node) -> Kernel {
                             const std::int64_t us = node.attr<std::int64_t>("us");
                             return [us](KernelContext& ctx) {
                               std::this_thread::sleep_for(std::chrono::microseconds(us));
                               ctx.outputs[0] = ctx.inputs.empty() ? scalar(0) : ctx.inputs[0];
                             };
                           },
                           CostHint::kExpensive});
}

std::shared_ptr<Graph> blocking_graph(int* fetch) {
  auto g = std::make_shared<Graph>();
  NodeDef d;
  d.name = "block";
  d.op = "TBlock";
  *fetch = g->add_node(std::move(d));
  return g;
}

bool deadline_exceeded(Executor& ex, const RunRequest& req) {
  try {
    ex.run(req);
  } catch (const RunFailure& e) {
    return e.code() == ErrorCode::kDeadlineExceeded;
  }
  return false;
}

}  // namespace

OPWEAVE_TEST(a_run_past_its_deadline_returns_while_a_kernel_does_not_stop) {
  register_gate_kernels();
  g_gate.reset();
  int fetch = 0;
  Executor ex(blocking_graph(&fetch));
  ThreadPool pool(PoolOptions{2, "test-inter", 0, Affinity::kNone});
  RunRequest req;
  req.inter_pool = &pool;
  req.timeout_ms = 50;
  req.fetches = {{fetch, 0}};
  const Clock::time_point t0 = Clock::now();
  OPWEAVE_CHECK(deadline_exceeded(ex, req));
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0);
  OPWEAVE_CHECK(took.count() < 150);  // the deadline plus at most 100 ms
  OPWEAVE_CHECK_EQ(ex.num_abandoned_runs(), 1);
  OPWEAVE_CHECK_EQ(g_gate.finished.load(), 0);  // the kernel is still inside
  g_gate.release();
  ex.close();  // waits for the abandoned run
  OPWEAVE_CHECK_EQ(ex.num_abandoned_runs(), 0);
  OPWEAVE_CHECK_EQ(g_gate.finished.load(), 1);
}

OPWEAVE_TEST(close_waits_for_the_abandoned_runs) {
  register_gate_kernels();
  g_gate.reset();
  int fetch = 0;
  Executor ex(blocking_graph(&fetch));
  ThreadPool pool(PoolOptions{1, "test-inter", 0, Affinity::kNone});
  RunRequest req;
  req.inter_pool = &pool;
  req.timeout_ms = 20;
  req.fetches = {{fetch, 0}};
  OPWEAVE_CHECK(deadline_exceeded(ex, req));
  std::thread opener([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    g_gate.release();
  });
  const Clock::time_point t0 = Clock::now();
  ex.close();
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0);
  opener.join();
  OPWEAVE_CHECK(took.count() >= 100);
  OPWEAVE_CHECK_EQ(g_gate.finished.load(), 1);
  // The session is closed: later runs are cancelled at once.
  bool cancelled = false;
  try {
    ex.run(req);
  } catch (const RunFailure& e) {
    cancelled = e.code() == ErrorCode::kCancelled;
  }
  OPWEAVE_CHECK(cancelled);
}

OPWEAVE_TEST(the_executor_outlives_its_abandoned_runs) {
  register_gate_kernels();
  g_gate.reset();
  int fetch = 0;
  auto ex = std::make_unique<Executor>(blocking_graph(&fetch));
  ThreadPool pool(PoolOptions{2, "test-inter", 0, Affinity::kNone});
  RunRequest req;
  req.inter_pool = &pool;
  req.timeout_ms = 10;
  req.fetches = {{fetch, 0}};
  for (int i = 0; i < 2; ++i) OPWEAVE_CHECK(deadline_exceeded(*ex, req));
  OPWEAVE_CHECK_EQ(ex->num_abandoned_runs(), 2);
  std::thread opener([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    g_gate.release();
  });
  ex.reset();  // waits for both; the runs touch the executor as they finish
  opener.join();
  OPWEAVE_CHECK_EQ(g_gate.finished.load(), 2);
}

OPWEAVE_TEST(many_concurrent_runs_with_random_deadlines_all_end_and_none_leaks) {
  register_gate_kernels();
  // A random chain of naps: some runs finish, some time out, some are abandoned mid-nap.
  auto g = std::make_shared<Graph>();
  std::mt19937 rng(7);
  int prev = -1;
  for (int i = 0; i < 12; ++i) {
    NodeDef d;
    d.name = "nap" + std::to_string(i);
    d.op = "TNap";
    d.attrs["us"] = AttrValue{static_cast<std::int64_t>(rng() % 3000)};
    if (prev >= 0) d.inputs = {{prev, 0}};
    prev = g->add_node(std::move(d));
  }
  auto ex = std::make_unique<Executor>(g);
  ThreadPool pool(PoolOptions{3, "test-inter", 0, Affinity::kNone});
  std::atomic<int> ok{0}, timed_out{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([&, t] {
      std::mt19937 local(static_cast<unsigned>(t));
      for (int i = 0; i < 25; ++i) {
        RunRequest req;
        req.inter_pool = &pool;
        req.timeout_ms = 1 + static_cast<std::int64_t>(local() % 20);
        req.fetches = {{prev, 0}};
        if (deadline_exceeded(*ex, req)) {
          timed_out.fetch_add(1);
        } else {
          ok.fetch_add(1);
        }
      }
    });
  }
  for (auto& c : callers) c.join();
  ex->close();
  OPWEAVE_CHECK_EQ(ex->num_abandoned_runs(), 0);
  OPWEAVE_CHECK_EQ(ok.load() + timed_out.load(), 100);
  ex.reset();
}

OPWEAVE_TEST_MAIN()
