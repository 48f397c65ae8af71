// Variables (opweave/state/variable.h) without Python: assign and read, refs, copy-on-write, and
// threads racing on one variable -- locking updates add up exactly, unlocked ones never lose an
// element's update or tear a block, and readers see every block before or after an update. Run
// under ThreadSanitizer (tests/run.sh --tsan) these are also the data-race checks of the protocol.
#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "opweave/executor/executor.h"
#include "opweave/executor/kernel_registry.h"
#include "opweave/state/variable.h"
#include "opweave/thread_pool.h"
#include "testing.h"

using namespace opweave;

namespace {

Tensor filled(std::int64_t n, float v) {
  Tensor t = Tensor::empty(DType::kFloat32, {n});
  std::fill(t.data<float>(), t.data<float>() + n, v);
  return t;
}

// Adds `delta` to every element of `var` in one update (an AssignAdd), on `pool`.
void add_all(Variable& var, float delta, bool use_locking, ThreadPool* pool) {
  VariableUpdate update({&var}, use_locking);
  const float* in = update.in<float>(0);
  float* out = update.out<float>(0);
  const std::int64_t n = shape_numel(update.shape(0));
  update.for_blocks(pool, n, 1.0, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) out[i] = in[i] + delta;
  });
  update.commit();
}

// True when each lock block of `t` holds one value (every update touches whole blocks).
bool blocks_are_uniform(const Tensor& t) {
  const float* p = t.data<float>();
  for (std::int64_t b = 0; b * Variable::kBlock < t.numel(); ++b) {
    const std::int64_t lo = b * Variable::kBlock;
    const std::int64_t hi = std::min(t.numel(), lo + Variable::kBlock);
    for (std::int64_t i = lo; i < hi; ++i) {
      if (p[i] != p[lo]) return false;
    }
  }
  return true;
}

NodeDef node(std::string name, std::string op, std::vector<TensorId> inputs) {
  NodeDef n;
  n.name = std::move(name);
  n.op = std::move(op);
  n.inputs = std::move(inputs);
  return n;
}

PoolOptions options(int workers) {
  PoolOptions o;
  o.num_workers = workers;
  return o;
}

}  // namespace

OPWEAVE_TEST(assign_then_read_and_uninitialized_is_failed_precondition) {
  auto v = make_variable("w", DType::kFloat32, Shape{3});
  OPWEAVE_CHECK(!v->is_initialized());
  try {
    v->read(nullptr);
    OPWEAVE_CHECK(false);
  } catch (const OpError& e) {
    OPWEAVE_CHECK(e.code() == ErrorCode::kFailedPrecondition);
    OPWEAVE_CHECK_EQ(std::string(e.what()), std::string("Attempting to use uninitialized value w"));
  }
  OPWEAVE_CHECK_THROWS(VariableUpdate({v.get()}, false));  // updates need a value too
  v->assign(filled(3, 2.0f), true, true, false, nullptr);
  const Tensor r = v->read(nullptr);
  OPWEAVE_CHECK_EQ(r.data<float>()[2], 2.0f);
  OPWEAVE_CHECK(v->is_initialized());
}

OPWEAVE_TEST(assign_validates_the_shape_and_dtype) {
  auto v = make_variable("w", DType::kFloat32, Shape{2, -1});
  OPWEAVE_CHECK_THROWS(v->assign(filled(3, 0.0f), true, true, false, nullptr));   // rank
  v->assign(Tensor::zeros(DType::kFloat32, {2, 5}), true, true, false, nullptr);  // -1 matches
  OPWEAVE_CHECK_THROWS(v->assign(Tensor::zeros(DType::kFloat32, {2, 4}), true, true, false,
                                 nullptr));  // now the current shape [2, 5] must match
  OPWEAVE_CHECK_THROWS(
      v->assign(Tensor::zeros(DType::kInt32, {2, 5}), true, true, false, nullptr));  // dtype
  v->assign(Tensor::zeros(DType::kFloat32, {7}), false, true, false, nullptr);  // no validation
  OPWEAVE_CHECK(*v->shape() == Shape{7});
}

OPWEAVE_TEST(ref_tensors_name_their_variable_and_nothing_else_is_one) {
  auto v = make_variable("w", DType::kFloat32, Shape{1});
  const Tensor ref = variable_ref(v);
  OPWEAVE_CHECK(ref_variable(ref) == v.get());
  OPWEAVE_CHECK(ref_variable(Tensor::zeros(DType::kFloat32, {0})) == nullptr);
  OPWEAVE_CHECK(ref_variable(Tensor::zeros(DType::kFloat32, {3})) == nullptr);
  OPWEAVE_CHECK(ref_variable(Tensor()) == nullptr);
  v->assign(filled(1, 4.0f), true, true, false, nullptr);
  OPWEAVE_CHECK_EQ(deref(ref, nullptr).data<float>()[0], 4.0f);
}

OPWEAVE_TEST(a_read_keeps_its_value_when_an_update_follows) {
  auto v = make_variable("w", DType::kFloat32, Shape{100});
  v->assign(filled(100, 1.0f), true, true, false, nullptr);
  const Tensor before = v->read(nullptr);  // shares the buffer
  add_all(*v, 1.0f, false, nullptr);       // finds it shared: copy-on-write
  OPWEAVE_CHECK_EQ(before.data<float>()[50], 1.0f);
  OPWEAVE_CHECK_EQ(v->read(nullptr).data<float>()[50], 2.0f);
  OPWEAVE_CHECK(v->read(nullptr).raw_data() != before.raw_data());
}

OPWEAVE_TEST(an_update_with_nobody_reading_runs_in_place) {
  auto v = make_variable("w", DType::kFloat32, Shape{10});
  v->assign(filled(10, 0.0f), true, true, false, nullptr);
  const void* buffer = v->read(nullptr).raw_data();  // the handle is dropped at once
  VariableUpdate update({v.get()}, false);
  OPWEAVE_CHECK(update.in_place(0));
  OPWEAVE_CHECK(update.old_value(0).raw_data() == buffer);
}

OPWEAVE_TEST(an_uncommitted_copy_on_write_update_changes_nothing) {
  auto v = make_variable("w", DType::kFloat32, Shape{4});
  v->assign(filled(4, 1.0f), true, true, false, nullptr);
  const Tensor held = v->read(nullptr);
  {
    VariableUpdate update({v.get()}, true);
    OPWEAVE_CHECK(!update.in_place(0));
    update.out<float>(0)[0] = 99.0f;  // no commit: e.g. the kernel threw
  }
  OPWEAVE_CHECK_EQ(v->read(nullptr).data<float>()[0], 1.0f);
  add_all(*v, 1.0f, true, nullptr);  // the update mutex and the cow flag were released
  OPWEAVE_CHECK_EQ(v->read(nullptr).data<float>()[0], 2.0f);
}

OPWEAVE_TEST(a_variable_passed_twice_to_one_update_is_invalid_argument) {
  auto v = make_variable("w", DType::kFloat32, Shape{1});
  v->assign(filled(1, 0.0f), true, true, false, nullptr);
  OPWEAVE_CHECK_THROWS(VariableUpdate({v.get(), v.get()}, true));
  add_all(*v, 1.0f, true, nullptr);  // nothing stayed locked
}

// Threads racing on one variable, with and without use_locking, each update spread over a pool.
void race(bool use_locking) {
  const std::int64_t n = 3 * Variable::kBlock + 1000;  // four blocks, the last one partial
  auto v = make_variable("w", DType::kFloat32, Shape{n});
  v->assign(filled(n, 0.0f), true, true, false, nullptr);
  ThreadPool pool(options(2));
  constexpr int kWriters = 4, kSteps = 200, kReaders = 2;
  std::atomic<bool> done{false};
  std::atomic<int> bad_reads{0};
  std::vector<std::thread> threads;
  for (int r = 0; r < kReaders; ++r) {
    threads.emplace_back([&] {
      // Relaxed: the flag only ends the loop; the reads synchronise through the variable.
      while (!done.load(std::memory_order_relaxed)) {
        const Tensor snapshot = v->read(&pool);
        if (!blocks_are_uniform(snapshot)) bad_reads.fetch_add(1);
      }
    });
  }
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&] {
      for (int s = 0; s < kSteps; ++s) add_all(*v, 1.0f, use_locking, &pool);
    });
  }
  for (std::thread& t : writers) t.join();
  done.store(true, std::memory_order_relaxed);  // relaxed: see the readers' loop
  for (std::thread& t : threads) t.join();
  const Tensor final_value = v->read(nullptr);
  // Every element's update happens under its block's lock (or in an exclusive copy-on-write
  // update), so none is lost, with or without use_locking.
  for (std::int64_t i = 0; i < n; ++i) {
    if (final_value.data<float>()[i] != static_cast<float>(kWriters * kSteps)) {
      OPWEAVE_CHECK_EQ(final_value.data<float>()[i], static_cast<float>(kWriters * kSteps));
      break;
    }
  }
  OPWEAVE_CHECK_EQ(bad_reads.load(), 0);
}

OPWEAVE_TEST(locking_updates_racing_add_up_exactly) { race(true); }

OPWEAVE_TEST(unlocked_updates_racing_lose_no_element_and_tear_no_block) { race(false); }

OPWEAVE_TEST(a_locking_update_of_several_variables_is_atomic_for_other_locking_ones) {
  // Each update moves one unit from a to b: with use_locking, a + b is the same in every state
  // another locking update starts from, so the totals stay exact.
  const std::int64_t n = 2 * Variable::kBlock;
  auto a = make_variable("a", DType::kFloat32, Shape{n});
  auto b = make_variable("b", DType::kFloat32, Shape{n});
  a->assign(filled(n, 1000.0f), true, true, false, nullptr);
  b->assign(filled(n, 0.0f), true, true, false, nullptr);
  ThreadPool pool(options(2));
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    // Alternate the order the variables are given in: the update locks them by address anyway.
    threads.emplace_back([&, t] {
      for (int s = 0; s < 100; ++s) {
        const bool flip = (t + s) % 2 == 0;
        VariableUpdate update(flip ? std::vector<Variable*>{b.get(), a.get()}
                                   : std::vector<Variable*>{a.get(), b.get()},
                              true);
        const std::size_t ia = flip ? 1 : 0, ib = flip ? 0 : 1;
        const float* a_in = update.in<float>(ia);
        const float* b_in = update.in<float>(ib);
        float* a_out = update.out<float>(ia);
        float* b_out = update.out<float>(ib);
        update.for_blocks(&pool, n, 2.0, [&](std::int64_t lo, std::int64_t hi) {
          for (std::int64_t i = lo; i < hi; ++i) {
            a_out[i] = a_in[i] - 1.0f;
            b_out[i] = b_in[i] + 1.0f;
          }
        });
        update.commit();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  OPWEAVE_CHECK_EQ(a->read(nullptr).data<float>()[n - 1], 700.0f);
  OPWEAVE_CHECK_EQ(b->read(nullptr).data<float>()[0], 300.0f);
}

OPWEAVE_TEST(assigns_racing_with_updates_and_readers_leave_a_whole_value) {
  const std::int64_t n = 2 * Variable::kBlock;
  auto v = make_variable("w", DType::kFloat32, Shape{n});
  v->assign(filled(n, 0.0f), true, true, false, nullptr);
  ThreadPool pool(options(2));
  std::vector<std::thread> threads;
  threads.emplace_back([&] {
    for (int s = 0; s < 100; ++s)
      v->assign(filled(n, 1000.0f), true, s % 2 == 0, s % 3 == 0, &pool);
  });
  threads.emplace_back([&] {
    for (int s = 0; s < 100; ++s) add_all(*v, 1.0f, s % 2 == 0, &pool);
  });
  threads.emplace_back([&] {
    for (int s = 0; s < 200; ++s) {
      const Tensor t = v->read(&pool);
      OPWEAVE_CHECK(blocks_are_uniform(t));
    }
  });
  for (std::thread& t : threads) t.join();
  OPWEAVE_CHECK(blocks_are_uniform(v->read(nullptr)));
}

// The same race through the executor and the registered kernels: sessions' runs in many threads.
OPWEAVE_TEST(concurrent_runs_of_assign_add_with_use_locking_count_exactly) {
  auto graph = std::make_shared<Graph>();
  const std::int64_t n = 40000;
  NodeDef var = node("counter", "VariableV2", {});
  var.attrs["dtype"] = DType::kFloat32;
  var.attrs["shape"] = std::vector<std::int64_t>{n};
  const int v = graph->add_node(var);
  NodeDef init = node("init_value", "Const", {});
  init.attrs["value"] = filled(n, 0.0f);
  const int c0 = graph->add_node(init);
  NodeDef assign = node("counter/Assign", "Assign", {{v, 0}, {c0, 0}});
  const int a = graph->add_node(assign);
  NodeDef one = node("one", "Const", {});
  one.attrs["value"] = filled(n, 1.0f);
  const int c1 = graph->add_node(one);
  NodeDef add = node("add", "AssignAdd", {{v, 0}, {c1, 0}});
  add.attrs["use_locking"] = true;
  const int inc = graph->add_node(add);
  NodeDef read = node("counter/read", "Identity", {{v, 0}});
  const int r = graph->add_node(read);

  Executor exec(graph);
  ThreadPool inter(options(2)), intra(options(1));
  RunRequest run_init;
  run_init.targets = {a};
  exec.run(run_init);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      RunRequest req;
      req.targets = {inc};
      req.inter_pool = &inter;
      req.intra_pool = &intra;
      for (int s = 0; s < 50; ++s) exec.run(req);
    });
  }
  for (std::thread& t : threads) t.join();
  RunRequest fetch;
  fetch.fetches = {{r, 0}, {v, 0}};  // the read, and the ref itself (read at the end of the run)
  const std::vector<Tensor> out = exec.run(fetch);
  OPWEAVE_CHECK_EQ(out[0].data<float>()[n - 1], 200.0f);
  OPWEAVE_CHECK_EQ(out[1].data<float>()[0], 200.0f);
  // The session's variables, as a checkpoint writer lists them.
  int listed = 0;
  exec.state().for_each<Variable>([&](const std::string& key, Variable& var) {
    ++listed;
    OPWEAVE_CHECK_EQ(key, std::string("variable:counter"));
    OPWEAVE_CHECK_EQ(var.read(nullptr).data<float>()[7], 200.0f);
  });
  OPWEAVE_CHECK_EQ(listed, 1);
  OPWEAVE_CHECK(exec.state().find<Variable>(variable_key("", "", "counter")) != nullptr);

  Executor other(graph);  // another session: its own, uninitialized variable
  try {
    other.run(fetch);
    OPWEAVE_CHECK(false);
  } catch (const RunFailure& e) {
    OPWEAVE_CHECK(e.code() == ErrorCode::kFailedPrecondition);
  }
}

OPWEAVE_TEST_MAIN()
