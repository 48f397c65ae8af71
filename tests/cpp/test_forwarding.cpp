// Buffer forwarding: element-wise kernels computed into an input's own buffer give the same bits
// as the allocating ones, and the executor hands a kernel an input buffer only when nothing else
// can see it (never a feed, a constant, a fetched value or a value with another reader).
#include <cstring>
#include <random>

#include "opweave/executor/executor.h"
#include "opweave/executor/kernel_registry.h"
#include "opweave/kernels/kernels.h"
#include "testing.h"

using namespace opweave;

namespace {

Tensor random_floats(const Shape& shape, std::uint32_t seed) {
  Tensor t = Tensor::empty(DType::kFloat32, shape);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  for (std::int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng);
  return t;
}

Tensor copy_of(const Tensor& t) {
  Tensor c = Tensor::empty(t.dtype(), t.shape());
  std::memcpy(c.raw_data(), t.raw_data(), t.nbytes());
  return c;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

int add_node(Graph& g, const std::string& name, const std::string& op, std::vector<TensorId> in,
             std::map<std::string, AttrValue> attrs = {}) {
  NodeDef d;
  d.name = name;
  d.op = op;
  d.inputs = std::move(in);
  d.attrs = std::move(attrs);
  return g.add_node(std::move(d));
}

// What TProbe saw: whether forwardable_input(0) offered its input.
std::vector<bool> g_offered;

void register_probe() {
  register_kernel("TProbe", {[](const NodeDef&) -> Kernel {
                               return [](KernelContext& ctx) {
                                 g_offered.push_back(ctx.forwardable_input(0) != nullptr);
                                 ctx.outputs[0] = copy_of(ctx.inputs[0]);
                               };
                             },
                             CostHint::kCheap});
}

}  // namespace

OPWEAVE_TEST(binary_in_place_gives_the_bits_of_binary_for_same_shapes_and_scalars) {
  const Shape shapes[] = {{}, {1}, {7}, {3, 5}, {2, 3, 40000}};
  const BinaryOp ops[] = {BinaryOp::kAdd, BinaryOp::kSub,     BinaryOp::kMul,
                          BinaryOp::kDiv, BinaryOp::kMaximum, BinaryOp::kMinimum};
  ThreadPool pool(PoolOptions{2, "test-intra", 0, Affinity::kNone});
  std::uint32_t seed = 1;
  for (const Shape& shape : shapes) {
    const Tensor x = random_floats(shape, seed++);
    const Tensor y = random_floats(shape, seed++);
    const Tensor s = random_floats({}, seed++);
    for (BinaryOp op : ops) {
      for (int into = 0; into < 2; ++into) {
        // Same shapes, then a scalar on the other side.
        for (const Tensor* other : {&y, &s}) {
          const Tensor a = into == 0 ? copy_of(x) : copy_of(*other);
          const Tensor b = into == 0 ? copy_of(*other) : copy_of(x);
          const Tensor expected = binary(op, a, b, &pool);
          OPWEAVE_CHECK(binary_in_place(op, a, b, into, &pool));
          OPWEAVE_CHECK(same_bits(into == 0 ? a : b, expected));
        }
      }
    }
  }
}

OPWEAVE_TEST(binary_in_place_gives_the_bits_of_binary_when_the_other_operand_broadcasts) {
  ThreadPool pool(PoolOptions{2, "test-intra", 0, Affinity::kNone});
  const Shape others[] = {{5}, {1, 5}, {4, 1}, {1, 1}, {3, 4, 5}};
  for (const Shape& target_shape : {Shape{3, 4, 5}, Shape{300, 4, 50}}) {
    for (const Shape& other_shape : others) {
      if (target_shape[2] != 5 && other_shape.back() == 5) continue;
      const Shape fitted = other_shape.size() == 3 ? target_shape : other_shape;
      for (BinaryOp op : {BinaryOp::kAdd, BinaryOp::kSub, BinaryOp::kDiv}) {
        for (int into = 0; into < 2; ++into) {
          const Tensor target = random_floats(target_shape, 21);
          const Tensor other = random_floats(fitted, 22);
          const Tensor& a = into == 0 ? target : other;
          const Tensor& b = into == 0 ? other : target;
          const Tensor expected = binary(op, a, b, &pool);
          OPWEAVE_CHECK(binary_in_place(op, a, b, into, &pool));
          OPWEAVE_CHECK(same_bits(target, expected));
        }
      }
    }
  }
}

OPWEAVE_TEST(binary_in_place_declines_when_the_result_is_not_the_inputs_shape_or_dtype) {
  const Tensor row = random_floats({1, 3}, 1);
  const Tensor col = random_floats({3, 1}, 2);
  const Tensor before = copy_of(row);
  OPWEAVE_CHECK(!binary_in_place(BinaryOp::kAdd, row, col, 0, nullptr));  // result is 3 x 3
  OPWEAVE_CHECK(same_bits(row, before));
  const Tensor vec = random_floats({3}, 3);
  OPWEAVE_CHECK(!binary_in_place(BinaryOp::kAdd, vec, row, 0, nullptr));  // result is 1 x 3
  const Tensor scalar = random_floats({}, 4);
  OPWEAVE_CHECK(!binary_in_place(BinaryOp::kAdd, scalar, vec, 0, nullptr));  // result is 3
  Tensor ints = Tensor::zeros(DType::kInt32, {3});
  OPWEAVE_CHECK(!binary_in_place(BinaryOp::kAdd, vec, ints, 0, nullptr));  // mixed dtypes
  const Tensor square = random_floats({3, 3}, 5);
  const Tensor transposed =
      Tensor::wrap(DType::kFloat32, {3, 3}, {1, 3}, square.raw_data(), square.owner());
  OPWEAVE_CHECK(!binary_in_place(BinaryOp::kAdd, transposed, square, 0, nullptr));
  OPWEAVE_CHECK(!binary_in_place(BinaryOp::kAdd, Tensor::empty(DType::kFloat32, {0}),
                                 Tensor::empty(DType::kFloat32, {0}), 0, nullptr));
}

OPWEAVE_TEST(unary_in_place_gives_the_bits_of_unary) {
  const UnaryOp ops[] = {UnaryOp::kNeg, UnaryOp::kRelu, UnaryOp::kExp, UnaryOp::kTanh,
                         UnaryOp::kSigmoid};
  ThreadPool pool(PoolOptions{2, "test-intra", 0, Affinity::kNone});
  for (const Shape& shape : {Shape{}, Shape{5}, Shape{4, 33}, Shape{100000}}) {
    for (UnaryOp op : ops) {
      const Tensor x = random_floats(shape, 7);
      const Tensor expected = unary(op, x, &pool);
      OPWEAVE_CHECK(unary_in_place(op, x, &pool));
      OPWEAVE_CHECK(same_bits(x, expected));
    }
  }
  const Tensor ints = Tensor::zeros(DType::kInt64, {4});
  OPWEAVE_CHECK(!unary_in_place(UnaryOp::kExp, ints, nullptr));  // unary() has the error
  const Tensor square = random_floats({3, 3}, 8);
  const Tensor transposed =
      Tensor::wrap(DType::kFloat32, {3, 3}, {1, 3}, square.raw_data(), square.owner());
  OPWEAVE_CHECK(!unary_in_place(UnaryOp::kNeg, transposed, nullptr));
}

OPWEAVE_TEST(sole_owner_is_false_for_shared_and_borrowed_buffers) {
  Tensor t = Tensor::empty(DType::kFloat32, {3});
  OPWEAVE_CHECK(t.sole_owner());
  {
    const Tensor copy = t;  // NOLINT(performance-unnecessary-copy-initialization): shares it
    OPWEAVE_CHECK(!t.sole_owner());
    const Tensor view = t.reshaped({1, 3});
    OPWEAVE_CHECK(!view.sole_owner());
  }
  OPWEAVE_CHECK(t.sole_owner());
  float memory[3] = {0, 0, 0};
  const Tensor borrowed = Tensor::wrap(DType::kFloat32, {3}, {1}, memory, nullptr);
  OPWEAVE_CHECK(!borrowed.sole_owner());
}

OPWEAVE_TEST(small_tensors_are_aligned_for_every_dtype_and_large_ones_to_a_cache_line) {
  for (std::int64_t n : {0, 1, 3, 8, 16}) {
    const Tensor t = Tensor::empty(DType::kFloat64, {n});
    OPWEAVE_CHECK(t.raw_data() != nullptr);
    OPWEAVE_CHECK_EQ(reinterpret_cast<std::uintptr_t>(t.raw_data()) % 16, 0u);
  }
  const Tensor big = Tensor::empty(DType::kFloat32, {17});
  OPWEAVE_CHECK_EQ(reinterpret_cast<std::uintptr_t>(big.raw_data()) % 64, 0u);
}

OPWEAVE_TEST(a_chain_of_element_wise_ops_leaves_its_feed_and_its_fetched_values_intact) {
  // x -> y1 = x + 1 (fetched) -> y2 = y1 * 2 -> y3 = tanh(y2) -> y4 = y3 - c (fetched).
  auto g = std::make_shared<Graph>();
  Tensor c = Tensor::empty(DType::kFloat32, {});
  c.data<float>()[0] = 0.5f;
  Tensor one = Tensor::empty(DType::kFloat32, {});
  one.data<float>()[0] = 1.0f;
  Tensor two = Tensor::empty(DType::kFloat32, {});
  two.data<float>()[0] = 2.0f;
  const int x = add_node(*g, "x", "Placeholder", {}, {{"dtype", AttrValue{DType::kFloat32}}});
  const int k1 = add_node(*g, "one", "Const", {}, {{"value", AttrValue{one}}});
  const int k2 = add_node(*g, "two", "Const", {}, {{"value", AttrValue{two}}});
  const int kc = add_node(*g, "c", "Const", {}, {{"value", AttrValue{c}}});
  const int y1 = add_node(*g, "y1", "Add", {{x, 0}, {k1, 0}});
  const int y2 = add_node(*g, "y2", "Mul", {{y1, 0}, {k2, 0}});
  const int y3 = add_node(*g, "y3", "Tanh", {{y2, 0}});
  const int y4 = add_node(*g, "y4", "Sub", {{y3, 0}, {kc, 0}});
  Executor ex(g);
  const Tensor feed = random_floats({5}, 11);
  const Tensor feed_before = copy_of(feed);
  RunRequest req;
  req.feeds = {{{x, 0}, feed}};
  req.fetches = {{y1, 0}, {y4, 0}};
  for (int run = 0; run < 3; ++run) {
    std::vector<Tensor> out = ex.run(req);
    OPWEAVE_CHECK(same_bits(feed, feed_before));
    const Tensor e1 = binary(BinaryOp::kAdd, feed_before, one, nullptr);
    const Tensor e4 = binary(
        BinaryOp::kSub, unary(UnaryOp::kTanh, binary(BinaryOp::kMul, e1, two, nullptr), nullptr), c,
        nullptr);
    OPWEAVE_CHECK(same_bits(out[0], e1));
    OPWEAVE_CHECK(same_bits(out[1], e4));
  }
  // The constants are unchanged too (a forwarded constant would drift run after run).
  OPWEAVE_CHECK_EQ(one.data<float>()[0], 1.0f);
  OPWEAVE_CHECK_EQ(two.data<float>()[0], 2.0f);
}

OPWEAVE_TEST(only_the_sole_reader_of_an_unshared_intermediate_is_offered_its_buffer) {
  register_probe();
  auto g = std::make_shared<Graph>();
  const int x = add_node(*g, "x", "Placeholder", {}, {{"dtype", AttrValue{DType::kFloat32}}});
  const int k = add_node(*g, "k", "Const", {}, {{"value", AttrValue{random_floats({2}, 1)}}});
  const int fed = add_node(*g, "fed", "TProbe", {{x, 0}});           // reads a feed
  const int konst = add_node(*g, "konst", "TProbe", {{k, 0}});       // reads a constant
  const int sole = add_node(*g, "sole", "TProbe", {{fed, 0}});       // only reader of fed's output
  const int r1 = add_node(*g, "r1", "TProbe", {{konst, 0}});         // konst's output has two
  const int r2 = add_node(*g, "r2", "TProbe", {{konst, 0}});         // readers
  const int fetched = add_node(*g, "fetched", "TProbe", {{r1, 0}});  // r1's output is fetched too
  Executor ex(g);
  RunRequest req;  // caller-thread mode: nodes run in one thread, in a fixed order
  req.feeds = {{{x, 0}, random_floats({2}, 2)}};
  req.fetches = {{sole, 0}, {r2, 0}, {fetched, 0}, {r1, 0}};
  g_offered.clear();
  ex.run(req);
  // Order of execution: the executor is deterministic in caller-thread mode, but the test only
  // needs the count of offers: exactly one node (sole) was offered its input.
  OPWEAVE_CHECK_EQ(g_offered.size(), std::size_t{6});
  int offers = 0;
  for (bool b : g_offered) offers += b ? 1 : 0;
  OPWEAVE_CHECK_EQ(offers, 1);
  req.fetches = {{sole, 0}};
  auto compiled = ex.compiled({{x, 0}}, req.fetches, {});
  for (int i = 0; i < compiled->num_nodes(); ++i) {
    const CompiledNode& n = compiled->node(i);
    const bool should = n.def->name == "sole";
    OPWEAVE_CHECK_EQ(n.sole_reader_inputs != 0, should);
  }
}

OPWEAVE_TEST_MAIN()
