// The executor's contract, without Python: pruning, feeds, continuation, failures, cancellation,
// deadlines, caller-thread mode and concurrent runs.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <set>
#include <string>
#include <thread>

#include "opweave/executor/executor.h"
#include "opweave/executor/kernel_registry.h"
#include "opweave/executor/placement.h"
#include "opweave/parallel_for.h"
#include "opweave/pools/session_pools.h"
#include "testing.h"

using namespace opweave;

namespace {

Tensor scalar(std::int64_t v) {
  Tensor t = Tensor::empty(DType::kInt64, {});
  t.data<std::int64_t>()[0] = v;
  return t;
}

std::int64_t value(const Tensor& t) { return t.data<std::int64_t>()[0]; }

// Keeps the CPU busy for `d` (a kernel whose cost is known; sleeping would free the CPU).
void busy_wait(std::chrono::microseconds d) {
  const auto until = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < until) {
  }
}

std::atomic<int> g_add_calls{0};
std::atomic<int> g_sleeps{0};

// Test ops: TAdd sums int64 scalars (and counts calls), TSleep sleeps `ms` then forwards its
// input, TFail throws InvalidArgument.
void register_test_kernels() {
  register_kernel("TAdd", {[](const NodeDef&) -> Kernel {
                             return [](KernelContext& ctx) {
                               g_add_calls.fetch_add(1);
                               std::int64_t s = 0;
                               for (const Tensor& t : ctx.inputs) s += value(t);
                               ctx.outputs[0] = scalar(s);
                             };
                           },
                           CostHint::kMeasure});
  register_kernel("TSleep", {[](const NodeDef& node) -> Kernel {
                               const std::int64_t ms = node.attr<std::int64_t>("ms");
                               return [ms](KernelContext& ctx) {
                                 g_sleeps.fetch_add(1);
                                 std::this_thread::sleep_for(std::chrono::milliseconds(ms));
                                 ctx.outputs[0] = ctx.inputs.empty() ? scalar(0) : ctx.inputs[0];
                               };
                             },
                             CostHint::kExpensive});
  register_kernel("TFail", {[](const NodeDef&) -> Kernel {
                              return [](KernelContext&) { throw_invalid_argument("boom"); };
                            },
                            CostHint::kCheap});
}

int add(Graph& g, const std::string& name, const std::string& op, std::vector<TensorId> inputs,
        std::map<std::string, AttrValue> attrs = {}, std::vector<int> control = {}) {
  NodeDef d;
  d.name = name;
  d.op = op;
  d.inputs = std::move(inputs);
  d.attrs = std::move(attrs);
  d.control_inputs = std::move(control);
  return g.add_node(std::move(d));
}

struct Fixture {
  std::shared_ptr<Graph> g = std::make_shared<Graph>();
  int a, b, c, d;
  Fixture() {
    register_test_kernels();
    a = add(*g, "a", "Const", {}, {{"value", AttrValue{scalar(1)}}});
    b = add(*g, "b", "Const", {}, {{"value", AttrValue{scalar(2)}}});
    c = add(*g, "c", "TAdd", {{a, 0}, {b, 0}});  // 3
    d = add(*g, "d", "TAdd", {{c, 0}, {c, 0}});  // 6
  }
};

}  // namespace

OPWEAVE_TEST(fetch_runs_the_needed_nodes_and_returns_values) {
  Fixture f;
  Executor ex(f.g);
  RunRequest req;
  req.fetches = {{f.d, 0}, {f.c, 0}};
  std::vector<Tensor> out = ex.run(req);
  OPWEAVE_CHECK_EQ(value(out[0]), 6);
  OPWEAVE_CHECK_EQ(value(out[1]), 3);
}

OPWEAVE_TEST(feeding_a_tensor_prunes_everything_upstream_of_it) {
  Fixture f;
  Executor ex(f.g);
  RunRequest req;
  req.feeds = {{{f.c, 0}, scalar(10)}};
  req.fetches = {{f.d, 0}};
  g_add_calls = 0;
  OPWEAVE_CHECK_EQ(value(ex.run(req)[0]), 20);
  OPWEAVE_CHECK_EQ(g_add_calls.load(), 1);  // only d ran; c was fed
}

OPWEAVE_TEST(each_signature_is_compiled_once_and_cached) {
  Fixture f;
  Executor ex(f.g);
  RunRequest req;
  req.fetches = {{f.d, 0}};
  ex.run(req);
  ex.run(req);
  OPWEAVE_CHECK_EQ(ex.num_compiled(), std::size_t{1});
  req.fetches = {{f.c, 0}};
  ex.run(req);
  OPWEAVE_CHECK_EQ(ex.num_compiled(), std::size_t{2});
}

OPWEAVE_TEST(a_failing_node_is_named_and_the_executor_still_works) {
  Fixture f;
  int bad = add(*f.g, "bad", "TFail", {{f.a, 0}});
  Executor ex(f.g);
  ThreadPool pool(PoolOptions{2, "test-inter", 0, Affinity::kNone});
  RunRequest req;
  req.inter_pool = &pool;
  req.fetches = {{bad, 0}};
  bool threw = false;
  try {
    ex.run(req);
  } catch (const RunFailure& e) {
    threw = true;
    OPWEAVE_CHECK(e.code() == ErrorCode::kInvalidArgument);
    OPWEAVE_CHECK_EQ(e.node_name(), std::string("bad"));
    OPWEAVE_CHECK_EQ(e.op_type(), std::string("TFail"));
  }
  OPWEAVE_CHECK(threw);
  req.fetches = {{f.d, 0}};
  OPWEAVE_CHECK_EQ(value(ex.run(req)[0]), 6);
}

OPWEAVE_TEST(independent_expensive_branches_run_on_different_threads_at_once) {
  auto g = std::make_shared<Graph>();
  register_test_kernels();
  int s1 = add(*g, "s1", "TSleep", {}, {{"ms", AttrValue{std::int64_t{100}}}});
  int s2 = add(*g, "s2", "TSleep", {}, {{"ms", AttrValue{std::int64_t{100}}}});
  Executor ex(g);
  ThreadPool pool(PoolOptions{2, "test-inter", 0, Affinity::kNone});
  StepStatsCollector stats;
  RunRequest req;
  req.inter_pool = &pool;
  req.observer = &stats;
  req.fetches = {{s1, 0}, {s2, 0}};
  ex.run(req);
  std::vector<NodeExecStats> s = stats.take();
  OPWEAVE_CHECK_EQ(s.size(), std::size_t{2});
  if (s.size() == 2) {
    OPWEAVE_CHECK(s[0].start_nanos < s[1].end_nanos && s[1].start_nanos < s[0].end_nanos);
    OPWEAVE_CHECK(s[0].thread_id != s[1].thread_id);
  }
}

OPWEAVE_TEST(caller_thread_mode_runs_every_node_on_the_caller) {
  Fixture f;
  Executor ex(f.g);
  StepStatsCollector stats;
  RunRequest req;
  req.observer = &stats;
  req.fetches = {{f.d, 0}};
  ex.run(req);
  for (const NodeExecStats& s : stats.take()) OPWEAVE_CHECK_EQ(s.thread_id, current_thread_id());
}

OPWEAVE_TEST(a_traced_node_reports_the_device_its_session_placed_it_on) {
  auto g = std::make_shared<Graph>();
  register_test_kernels();
  NodeDef asked;  // asks for a device the session does not have; soft placement moved it
  asked.name = "asked";
  asked.op = "Const";
  asked.attrs = {{"value", AttrValue{scalar(1)}}};
  asked.device = "/device:GPU:0";
  const int a = g->add_node(std::move(asked));
  const int b = add(*g, "placed", "TAdd", {{a, 0}});
  const int c = add(*g, "unplaced", "TAdd", {{b, 0}});
  DevicePlacement placement;
  placement.place("asked", "/device:CPU:0");
  placement.place("placed", "/device:CPU:1");
  Executor ex(g);
  StepStatsCollector stats(&placement);
  RunRequest req;
  req.observer = &stats;
  req.fetches.push_back({c, 0});  // not `= {{c, 0}}`: GCC 12 warns wrongly (-Wnonnull) there
  ex.run(req);
  std::map<std::string, std::string> device;
  for (const NodeExecStats& s : stats.take()) device[s.node_name] = s.device;
  OPWEAVE_CHECK_EQ(device.size(), std::size_t{3});
  OPWEAVE_CHECK_EQ(device["asked"], std::string("/device:CPU:0"));
  OPWEAVE_CHECK_EQ(device["placed"], std::string("/device:CPU:1"));
  OPWEAVE_CHECK_EQ(device["unplaced"], std::string(""));  // never placed: what it asked for
}

OPWEAVE_TEST(deadline_cancels_the_rest_of_the_run) {
  auto g = std::make_shared<Graph>();
  register_test_kernels();
  int prev = add(*g, "s0", "TSleep", {}, {{"ms", AttrValue{std::int64_t{20}}}});
  for (int i = 1; i < 50; ++i) {
    prev = add(*g, "s" + std::to_string(i), "TSleep", {{prev, 0}},
               {{"ms", AttrValue{std::int64_t{20}}}});
  }
  Executor ex(g);
  ThreadPool pool(PoolOptions{1, "test-inter", 0, Affinity::kNone});
  RunRequest req;
  req.inter_pool = &pool;
  req.timeout_ms = 100;
  req.fetches = {{prev, 0}};
  g_sleeps = 0;
  bool deadline = false;
  try {
    ex.run(req);
  } catch (const RunFailure& e) {
    deadline = e.code() == ErrorCode::kDeadlineExceeded;
  }
  OPWEAVE_CHECK(deadline);
  // Cancellation skips every node after the in-flight one: far from all 50 ran.
  OPWEAVE_CHECK(g_sleeps.load() < 40);
}

OPWEAVE_TEST(poll_returning_false_cancels_the_run) {
  auto g = std::make_shared<Graph>();
  register_test_kernels();
  int prev = add(*g, "s0", "TSleep", {}, {{"ms", AttrValue{std::int64_t{10}}}});
  for (int i = 1; i < 100; ++i) {
    prev = add(*g, "s" + std::to_string(i), "TSleep", {{prev, 0}},
               {{"ms", AttrValue{std::int64_t{10}}}});
  }
  Executor ex(g);
  ThreadPool pool(PoolOptions{1, "test-inter", 0, Affinity::kNone});
  RunRequest req;
  req.inter_pool = &pool;
  req.poll_interval = std::chrono::milliseconds(20);
  req.poll = [] { return false; };
  req.fetches = {{prev, 0}};
  bool cancelled = false;
  try {
    ex.run(req);
  } catch (const RunFailure& e) {
    cancelled = e.code() == ErrorCode::kCancelled;
  }
  OPWEAVE_CHECK(cancelled);
}

OPWEAVE_TEST(close_cancels_the_runs_in_flight_and_every_later_run) {
  auto g = std::make_shared<Graph>();
  register_test_kernels();
  int prev = add(*g, "s0", "TSleep", {}, {{"ms", AttrValue{std::int64_t{10}}}});
  for (int i = 1; i < 100; ++i) {
    prev = add(*g, "s" + std::to_string(i), "TSleep", {{prev, 0}},
               {{"ms", AttrValue{std::int64_t{10}}}});
  }
  ThreadPool pool(PoolOptions{1, "test-inter", 0, Affinity::kNone});
  for (ThreadPool* inter : {&pool, static_cast<ThreadPool*>(nullptr)}) {
    Executor ex(g);
    RunRequest req;
    req.inter_pool = inter;
    req.poll_interval = std::chrono::milliseconds(5);
    req.fetches = {{prev, 0}};
    g_sleeps = 0;
    std::thread closer([&] {
      while (g_sleeps.load() == 0) std::this_thread::yield();
      ex.close();
    });
    std::string message;
    try {
      ex.run(req);
    } catch (const RunFailure& e) {
      if (e.code() == ErrorCode::kCancelled) message = e.what();
    }
    closer.join();
    OPWEAVE_CHECK(message.find("session was closed") != std::string::npos);
    OPWEAVE_CHECK(g_sleeps.load() < 100);
    const int ran = g_sleeps.load();
    bool refused = false;
    try {
      ex.run(req);
    } catch (const RunFailure& e) {
      refused = e.code() == ErrorCode::kCancelled;
    }
    OPWEAVE_CHECK(refused);
    OPWEAVE_CHECK_EQ(g_sleeps.load(), ran);
  }
}

OPWEAVE_TEST(many_threads_run_one_executor_concurrently) {
  Fixture f;
  Executor ex(f.g);
  ThreadPool pool(PoolOptions{2, "test-inter", 0, Affinity::kNone});
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        RunRequest req;
        req.inter_pool = &pool;
        req.feeds = {{{f.a, 0}, scalar(t + i)}};
        req.fetches = {{f.d, 0}};
        if (value(ex.run(req)[0]) != 2 * (t + i + 2)) wrong.fetch_add(1);
      }
    });
  }
  for (auto& th : threads) th.join();
  OPWEAVE_CHECK_EQ(wrong.load(), 0);
}

OPWEAVE_TEST(named_pool_with_other_size_is_invalid_argument) {
  auto p = named_inter_pool("test-executor-pool", 2);
  OPWEAVE_CHECK(named_inter_pool("test-executor-pool", 2) == p);
  bool threw = false;
  try {
    named_inter_pool("test-executor-pool", 3);
  } catch (const OpError& e) {
    threw = e.code() == ErrorCode::kInvalidArgument &&
            std::string(e.what()) ==
                "Pool test-executor-pool configured previously with num_threads=2; cannot "
                "re-configure with num_threads=3";
  }
  OPWEAVE_CHECK(threw);
}

OPWEAVE_TEST(a_chain_of_expensive_nodes_continues_on_one_thread) {
  auto g = std::make_shared<Graph>();
  register_test_kernels();
  int prev = add(*g, "s0", "TSleep", {}, {{"ms", AttrValue{std::int64_t{1}}}});
  for (int i = 1; i < 6; ++i) {
    prev = add(*g, "s" + std::to_string(i), "TSleep", {{prev, 0}},
               {{"ms", AttrValue{std::int64_t{1}}}});
  }
  Executor ex(g);
  ThreadPool pool(PoolOptions{2, "test-inter", 0, Affinity::kNone});
  StepStatsCollector stats;
  RunRequest req;
  req.inter_pool = &pool;
  req.observer = &stats;
  req.fetches = {{prev, 0}};
  ex.run(req);
  std::vector<NodeExecStats> s = stats.take();
  OPWEAVE_CHECK_EQ(s.size(), std::size_t{6});
  for (const NodeExecStats& n : s) OPWEAVE_CHECK_EQ(n.thread_id, s[0].thread_id);
  OPWEAVE_CHECK(s[0].thread_id != current_thread_id());  // the caller only waits
}

OPWEAVE_TEST(measured_cheap_nodes_drop_below_the_inline_threshold) {
  Fixture f;
  Executor ex(f.g);
  ThreadPool pool(PoolOptions{1, "test-inter", 0, Affinity::kNone});
  RunRequest req;
  req.inter_pool = &pool;
  req.fetches = {{f.d, 0}};
  auto compiled = ex.compiled({}, req.fetches, {});
  const int c_index = 2;  // a, b, c, d in graph order
  OPWEAVE_CHECK_EQ(compiled->node(c_index).def->name, std::string("c"));
  OPWEAVE_CHECK(compiled->node(c_index).cost_ns.load() >= kInlineThresholdNs);  // starts expensive
  for (int i = 0; i < 100; ++i) ex.run(req);
  OPWEAVE_CHECK(compiled->node(c_index).cost_ns.load() < kInlineThresholdNs);
  OPWEAVE_CHECK(compiled->node(0).hint == CostHint::kCheap);  // Const is always inline
}

OPWEAVE_TEST(a_run_started_inside_a_node_runs_in_that_thread_without_deadlock) {
  auto g = std::make_shared<Graph>();
  register_test_kernels();
  int leaf = add(*g, "leaf", "TSleep", {}, {{"ms", AttrValue{std::int64_t{1}}}});
  auto ex = std::make_shared<Executor>(g);
  ThreadPool pool(PoolOptions{1, "test-inter", 0, Affinity::kNone});
  register_kernel("TNested", {[&](const NodeDef&) -> Kernel {
                                return [&, leaf](KernelContext& ctx) {
                                  OPWEAVE_CHECK(Executor::in_node());
                                  RunRequest inner;
                                  inner.inter_pool = &pool;  // its only worker is running us
                                  inner.fetches = {{leaf, 0}};
                                  ctx.outputs[0] = ex->run(inner)[0];
                                };
                              },
                              CostHint::kExpensive});
  int outer = add(*g, "outer", "TNested", {});
  RunRequest req;
  req.inter_pool = &pool;
  req.fetches = {{outer, 0}};
  OPWEAVE_CHECK_EQ(value(ex->run(req)[0]), 0);
  OPWEAVE_CHECK(!Executor::in_node());
}

OPWEAVE_TEST(a_traced_run_names_its_threads_and_records_shapes_and_chunks) {
  auto g = std::make_shared<Graph>();
  register_test_kernels();
  // TSpread: a kernel that splits a loop over the intra-op pool, then outputs a 2x3 tensor.
  register_kernel("TSpread", {[](const NodeDef&) -> Kernel {
                                return [](KernelContext& ctx) {
                                  parallel_for(ctx.intra_pool, 0, 1 << 18, 64,
                                               [](std::int64_t b, std::int64_t e) {
                                                 volatile double x = 0;
                                                 for (std::int64_t i = b; i < e; ++i) x = x + 1;
                                               });
                                  ctx.outputs[0] = Tensor::zeros(DType::kFloat64, {2, 3});
                                };
                              },
                              CostHint::kExpensive});
  int a = add(*g, "a", "Const", {}, {{"value", AttrValue{scalar(1)}}});
  int s = add(*g, "s", "TSpread", {{a, 0}});
  Executor ex(g);
  ThreadPool inter(PoolOptions{2, "test-inter", 0, Affinity::kNone});
  ThreadPool intra(PoolOptions{1, "test-intra", 50, Affinity::kNone});
  StepStatsCollector stats;
  RunRequest req;
  req.inter_pool = &inter;
  req.intra_pool = &intra;
  req.observer = &stats;
  req.fetches = {{s, 0}};
  ex.run(req);

  const std::map<long, std::string> names = stats.thread_names();
  OPWEAVE_CHECK(names.at(current_thread_id()) == "caller");
  OPWEAVE_CHECK(names.at(inter.worker_thread_ids().at(0)) == "inter-op 0");
  OPWEAVE_CHECK(names.at(inter.worker_thread_ids().at(1)) == "inter-op 1");
  OPWEAVE_CHECK(names.at(intra.worker_thread_ids().at(0)) == "intra-op 1");
  OPWEAVE_CHECK_EQ(names.size(), std::size_t{4});

  std::vector<NodeExecStats> nodes = stats.take();
  auto spread = std::find_if(nodes.begin(), nodes.end(),
                             [](const NodeExecStats& n) { return n.node_name == "s"; });
  OPWEAVE_CHECK(spread != nodes.end());
  if (spread == nodes.end()) return;
  OPWEAVE_CHECK(spread->op == "TSpread");
  OPWEAVE_CHECK(spread->input_shapes == std::vector<Shape>{Shape{}});
  OPWEAVE_CHECK(spread->output_shapes == std::vector<Shape>{Shape({2, 3})});
  OPWEAVE_CHECK(spread->output_dtypes == std::vector<DType>{DType::kFloat64});
  OPWEAVE_CHECK(spread->scheduled_nanos <= spread->start_nanos);
  OPWEAVE_CHECK(spread->start_nanos <= spread->end_nanos);
  // The chunks tile the loop and ran inside the node's time, on the node's thread or an
  // intra-op worker.
  std::vector<ChunkRecord> chunks = spread->chunks;
  std::sort(chunks.begin(), chunks.end(),
            [](const ChunkRecord& x, const ChunkRecord& y) { return x.begin < y.begin; });
  std::int64_t at = 0;
  for (const ChunkRecord& c : chunks) {
    OPWEAVE_CHECK_EQ(c.begin, at);
    at = c.end;
    OPWEAVE_CHECK(c.start_nanos >= spread->start_nanos && c.end_nanos <= spread->end_nanos);
    OPWEAVE_CHECK(c.thread_id == spread->thread_id ||
                  c.thread_id == intra.worker_thread_ids().at(0));
  }
  OPWEAVE_CHECK_EQ(at, std::int64_t{1} << 18);
  // The constant ran too; an untraced run afterwards records nothing new.
  OPWEAVE_CHECK_EQ(nodes.size(), std::size_t{2});
  req.observer = nullptr;
  ex.run(req);
  OPWEAVE_CHECK(stats.take().empty());
}

OPWEAVE_TEST(an_intermediate_is_freed_once_its_last_reader_has_run) {
  // a -> (r1, r2) -> check: when check runs, both readers of a are done, so a's buffer is gone.
  static std::weak_ptr<void> a_buffer;
  static bool freed_when_checked = false;
  register_test_kernels();
  register_kernel("TMake", {[](const NodeDef&) -> Kernel {
                              return [](KernelContext& ctx) {
                                ctx.outputs[0] = scalar(1);
                                a_buffer = ctx.outputs[0].owner();
                              };
                            },
                            CostHint::kCheap});
  register_kernel("TCheckFreed", {[](const NodeDef&) -> Kernel {
                                    return [](KernelContext& ctx) {
                                      freed_when_checked = a_buffer.expired();
                                      ctx.outputs[0] = scalar(0);
                                    };
                                  },
                                  CostHint::kCheap});
  auto g = std::make_shared<Graph>();
  const int a = add(*g, "a", "TMake", {});
  const int r1 = add(*g, "r1", "TAdd", {{a, 0}});
  const int r2 = add(*g, "r2", "TAdd", {{a, 0}, {a, 0}});
  const int check = add(*g, "check", "TCheckFreed", {{r1, 0}, {r2, 0}});
  Executor ex(g);
  ThreadPool pool(PoolOptions{2, "test-inter", 0, Affinity::kNone});
  for (ThreadPool* inter : {static_cast<ThreadPool*>(nullptr), &pool}) {
    RunRequest req;
    req.inter_pool = inter;
    req.fetches = {{check, 0}};
    freed_when_checked = false;
    ex.run(req);
    OPWEAVE_CHECK(freed_when_checked);
  }
}

OPWEAVE_TEST(caller_thread_mode_meets_the_deadline_in_a_chain_of_cheap_nodes) {
  // Cheap nodes are not followed by a clock read each; the deadline must still stop the run.
  register_kernel("TBusy1ms", {[](const NodeDef&) -> Kernel {
                                 return [](KernelContext& ctx) {
                                   g_sleeps.fetch_add(1);
                                   busy_wait(std::chrono::milliseconds(1));
                                   ctx.outputs[0] = scalar(0);
                                 };
                               },
                               CostHint::kCheap});
  auto g = std::make_shared<Graph>();
  int prev = add(*g, "b0", "TBusy1ms", {});
  for (int i = 1; i < 300; ++i) prev = add(*g, "b" + std::to_string(i), "TBusy1ms", {{prev, 0}});
  Executor ex(g);
  RunRequest req;
  req.timeout_ms = 20;
  req.fetches = {{prev, 0}};
  g_sleeps = 0;
  bool deadline = false;
  try {
    ex.run(req);
  } catch (const RunFailure& e) {
    deadline = e.code() == ErrorCode::kDeadlineExceeded;
  }
  OPWEAVE_CHECK(deadline);
  OPWEAVE_CHECK(g_sleeps.load() < 150);  // ~20 ran before the deadline, plus at most 16
}

OPWEAVE_TEST(a_node_with_many_cheap_successors_runs_them_all) {
  // More ready nodes than the executor keeps on its stack without allocating.
  register_test_kernels();
  ThreadPool pool(PoolOptions{2, "test-inter", 0, Affinity::kNone});
  for (ThreadPool* inter : {static_cast<ThreadPool*>(nullptr), &pool}) {
    auto g = std::make_shared<Graph>();
    const int root = add(*g, "root", "Const", {}, {{"value", AttrValue{scalar(1)}}});
    std::vector<TensorId> leaves;
    for (int i = 0; i < 40; ++i) {
      leaves.push_back({add(*g, "leaf" + std::to_string(i), "Identity", {{root, 0}}), 0});
    }
    const int sum = add(*g, "sum", "TAdd", leaves);
    Executor ex(g);
    RunRequest req;
    req.inter_pool = inter;
    req.fetches = {{sum, 0}};
    OPWEAVE_CHECK_EQ(value(ex.run(req)[0]), 40);
  }
}

OPWEAVE_TEST(independent_chains_of_cheap_nodes_are_shared_with_idle_workers) {
  // Cheap roots start on one worker; the others are idle, so it hands them ready chains.
  register_kernel("TBusy2ms", {[](const NodeDef&) -> Kernel {
                                 return [](KernelContext& ctx) {
                                   g_sleeps.fetch_add(1);
                                   busy_wait(std::chrono::milliseconds(2));
                                   ctx.outputs[0] = scalar(0);
                                 };
                               },
                               CostHint::kCheap});
  auto g = std::make_shared<Graph>();
  std::vector<TensorId> ends;
  for (int c = 0; c < 8; ++c) {
    int prev = add(*g, "c" + std::to_string(c) + "_0", "TBusy2ms", {});
    for (int i = 1; i < 10; ++i) {
      prev = add(*g, "c" + std::to_string(c) + "_" + std::to_string(i), "TBusy2ms", {{prev, 0}});
    }
    ends.push_back({prev, 0});
  }
  Executor ex(g);
  ThreadPool pool(PoolOptions{2, "test-inter", 0, Affinity::kNone});
  StepStatsCollector stats;
  RunRequest req;
  req.inter_pool = &pool;
  req.observer = &stats;
  req.fetches = ends;
  g_sleeps = 0;
  ex.run(req);
  OPWEAVE_CHECK_EQ(g_sleeps.load(), 80);  // every node once
  std::set<long> threads;
  for (const NodeExecStats& s : stats.take()) threads.insert(s.thread_id);
  OPWEAVE_CHECK_EQ(threads.size(), std::size_t{2});
}

OPWEAVE_TEST(a_cheap_node_that_becomes_expensive_is_noticed_within_a_few_runs) {
  static std::atomic<int> delay_us{0};
  register_kernel("TDelay",
                  {[](const NodeDef&) -> Kernel {
                     return [](KernelContext& ctx) {
                       std::this_thread::sleep_for(std::chrono::microseconds(delay_us.load()));
                       ctx.outputs[0] = scalar(0);
                     };
                   },
                   CostHint::kMeasure});
  auto g = std::make_shared<Graph>();
  const int n = add(*g, "n", "TDelay", {});
  Executor ex(g);
  RunRequest req;
  req.fetches = {{n, 0}};
  auto compiled = ex.compiled({}, req.fetches, {});
  delay_us = 0;
  for (int i = 0; i < 100; ++i) ex.run(req);
  OPWEAVE_CHECK(compiled->node(0).cost_ns.load() < kInlineThresholdNs);
  delay_us = 5000;
  // Cheap nodes are timed on one run in 16; one 5 ms sample lifts the average above 20 us.
  for (int i = 0; i < 17; ++i) ex.run(req);
  OPWEAVE_CHECK(compiled->node(0).cost_ns.load() >= kInlineThresholdNs);
}

namespace {

// TBusy: busy-waits `us` microseconds (a kernel whose measured cost is known), then outputs 0;
// TBusyBlocking: the same, registered as a kernel that may block (KernelDef::may_block).
void register_busy_kernels() {
  auto make = [](const NodeDef& node) -> Kernel {
    const std::int64_t us = node.attr<std::int64_t>("us");
    return [us](KernelContext& ctx) {
      busy_wait(std::chrono::microseconds(us));
      ctx.outputs[0] = scalar(0);
    };
  };
  register_kernel("TBusy", {make, CostHint::kMeasure});
  register_kernel("TBusyExpensive", {make, CostHint::kExpensive});
  register_kernel("TBusyBlocking", {make, CostHint::kMeasure, /*stateful=*/false,
                                    /*float16_via_float32=*/false, /*may_block=*/true});
}

// `chains` independent chains of `length` nodes of `op`, each busy `us`; returns their ends.
std::vector<TensorId> busy_chains(Graph& g, const std::string& op, int chains, int length,
                                  std::int64_t us) {
  std::vector<TensorId> ends;
  for (int c = 0; c < chains; ++c) {
    int prev = -1;
    for (int i = 0; i < length; ++i) {
      std::vector<TensorId> in;
      if (prev >= 0) in.push_back({prev, 0});
      prev =
          add(g, op + std::to_string(c) + "_" + std::to_string(i), op, in, {{"us", AttrValue{us}}});
    }
    ends.push_back({prev, 0});
  }
  return ends;
}

// The threads that ran the nodes of one traced run of `req`.
std::set<long> threads_of_a_traced_run(Executor& ex, RunRequest req) {
  StepStatsCollector stats;
  req.observer = &stats;
  ex.run(req);
  std::set<long> threads;
  for (const NodeExecStats& s : stats.take()) threads.insert(s.thread_id);
  return threads;
}

}  // namespace

OPWEAVE_TEST(a_chain_the_pool_cannot_speed_up_runs_on_the_caller_once_measured) {
  // Each node costs more than the inline threshold, but nothing can run beside the chain: after
  // the first run (on the pool, which measures it), the hand-over would only add its cost.
  register_busy_kernels();
  for (const char* op : {"TBusy", "TBusyExpensive"}) {
    auto g = std::make_shared<Graph>();
    RunRequest req;
    req.fetches = busy_chains(*g, op, 1, 4, 50);
    Executor ex(g);
    ThreadPool pool(PoolOptions{2, "test-inter", 0, Affinity::kNone});
    req.inter_pool = &pool;
    const std::set<long> first = threads_of_a_traced_run(ex, req);
    OPWEAVE_CHECK(first.count(current_thread_id()) == 0);  // not measured yet: the pool
    for (int i = 0; i < 5; ++i) ex.run(req);
    OPWEAVE_CHECK(threads_of_a_traced_run(ex, req) == std::set<long>{current_thread_id()});
  }
}

OPWEAVE_TEST(branches_the_pool_can_overlap_run_on_its_workers) {
  register_busy_kernels();
  auto g = std::make_shared<Graph>();
  RunRequest req;
  req.fetches = busy_chains(*g, "TBusy", 2, 2, 100);
  Executor ex(g);
  ThreadPool pool(PoolOptions{2, "test-inter", 0, Affinity::kNone});
  req.inter_pool = &pool;
  for (int i = 0; i < 5; ++i) ex.run(req);
  OPWEAVE_CHECK(threads_of_a_traced_run(ex, req).count(current_thread_id()) == 0);
}

OPWEAVE_TEST(a_pool_of_one_worker_leaves_a_measured_run_to_the_caller) {
  // One worker runs the nodes one at a time, exactly as the caller would.
  register_busy_kernels();
  auto g = std::make_shared<Graph>();
  RunRequest req;
  req.fetches = busy_chains(*g, "TBusy", 2, 2, 100);
  Executor ex(g);
  ThreadPool pool(PoolOptions{1, "test-inter", 0, Affinity::kNone});
  req.inter_pool = &pool;
  OPWEAVE_CHECK(threads_of_a_traced_run(ex, req).count(current_thread_id()) == 0);
  for (int i = 0; i < 5; ++i) ex.run(req);
  OPWEAVE_CHECK(threads_of_a_traced_run(ex, req) == std::set<long>{current_thread_id()});
}

OPWEAVE_TEST(long_nodes_large_feeds_and_nodes_that_may_block_keep_the_run_on_the_pool) {
  register_busy_kernels();
  ThreadPool pool(PoolOptions{1, "test-inter", 0, Affinity::kNone});
  {
    // A node that may block (a py_function): the run could not be abandoned at its deadline.
    auto g = std::make_shared<Graph>();
    RunRequest req;
    req.fetches = busy_chains(*g, "TBusyBlocking", 1, 2, 50);
    req.inter_pool = &pool;
    Executor ex(g);
    for (int i = 0; i < 5; ++i) ex.run(req);
    OPWEAVE_CHECK(threads_of_a_traced_run(ex, req).count(current_thread_id()) == 0);
  }
  for (const char* op : {"TBusy", "TBusyExpensive"}) {
    // A long node (measured over 2 ms): Ctrl-C and the deadline would wait for it.
    auto g = std::make_shared<Graph>();
    RunRequest req;
    req.fetches = busy_chains(*g, op, 1, 1, 30'000);
    req.inter_pool = &pool;
    Executor ex(g);
    ex.run(req);
    OPWEAVE_CHECK(threads_of_a_traced_run(ex, req).count(current_thread_id()) == 0);
  }
  {
    // A feed far larger than the costs were measured with.
    auto g = std::make_shared<Graph>();
    const int x = add(*g, "x", "Placeholder", {});
    const int y = add(*g, "y", "TBusy", {{x, 0}}, {{"us", AttrValue{std::int64_t{50}}}});
    Executor ex(g);
    RunRequest req;
    req.fetches = {{y, 0}};
    req.inter_pool = &pool;
    req.feeds = {{{x, 0}, scalar(1)}};
    for (int i = 0; i < 5; ++i) ex.run(req);
    OPWEAVE_CHECK(threads_of_a_traced_run(ex, req) == std::set<long>{current_thread_id()});
    req.feeds = {{{x, 0}, Tensor::zeros(DType::kInt64, {1 << 17})}};
    OPWEAVE_CHECK(threads_of_a_traced_run(ex, req).count(current_thread_id()) == 0);
  }
}

OPWEAVE_TEST(the_thread_that_readies_two_nodes_goes_on_along_the_longer_path) {
  // a -> c (one node) and a -> b1 -> b2 -> b3; c comes first among a's successors. The thread
  // that ran a must run b1 itself (the longer road ahead) and hand c to the pool: a critical path
  // pushed to the pool could wait behind a worker busy with something else.
  register_busy_kernels();
  auto g = std::make_shared<Graph>();
  const AttrValue us{std::int64_t{200}};
  const int a = add(*g, "a", "TBusyExpensive", {}, {{"us", us}});
  const int c = add(*g, "c", "TBusyExpensive", {{a, 0}}, {{"us", us}});
  int prev = a;
  for (int i = 1; i <= 3; ++i) {
    prev = add(*g, "b" + std::to_string(i), "TBusyExpensive", {{prev, 0}}, {{"us", us}});
  }
  Executor ex(g);
  ThreadPool pool(PoolOptions{2, "test-inter", 0, Affinity::kNone});
  RunRequest req;
  req.fetches.push_back({c, 0});  // not `= {...}`: GCC 12 warns wrongly (-Wnonnull) there
  req.fetches.push_back({prev, 0});
  req.inter_pool = &pool;
  const auto compiled = ex.compiled({}, req.fetches, {});
  std::map<std::string, int> height;
  for (int i = 0; i < compiled->num_nodes(); ++i) {
    height[compiled->node(i).def->name] = compiled->node(i).height;
  }
  OPWEAVE_CHECK(height.at("a") == 4 && height.at("b1") == 3 && height.at("c") == 1);
  for (int run = 0; run < 20; ++run) {
    StepStatsCollector stats;
    req.observer = &stats;
    ex.run(req);
    std::map<std::string, long> thread_of;
    for (const NodeExecStats& st : stats.take()) thread_of[st.node_name] = st.thread_id;
    OPWEAVE_CHECK(thread_of.at("b1") == thread_of.at("a"));
  }
}

OPWEAVE_TEST_MAIN()
