// Executor per-node overhead without Python: a chain of N tiny element-wise ops (alternating
// Add and Mul by a constant on a float32 vector of `size` elements), run R times through
// Executor::run on the global pools (or in the caller's thread with inter = -1). Prints the
// median time per run and per node. Also the tool for profiling the per-node path:
//
//   executor_bench [length=1000] [runs=200] [inter=2] [intra=2] [size=1]
//   valgrind --tool=callgrind executor_bench 1000 20
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "opweave/executor/executor.h"
#include "opweave/pools/global_pools.h"

using namespace opweave;

int main(int argc, char** argv) {
  const int length = argc > 1 ? std::atoi(argv[1]) : 1000;
  const int runs = argc > 2 ? std::atoi(argv[2]) : 200;
  const int inter = argc > 3 ? std::atoi(argv[3]) : 2;
  const int intra = argc > 4 ? std::atoi(argv[4]) : 2;
  const std::int64_t size = argc > 5 ? std::atoll(argv[5]) : 1;

  auto g = std::make_shared<Graph>();
  auto add_node = [&](const std::string& name, const std::string& op, std::vector<TensorId> in,
                      std::map<std::string, AttrValue> attrs = {}) {
    NodeDef d;
    d.name = name;
    d.op = op;
    d.inputs = std::move(in);
    d.attrs = std::move(attrs);
    return g->add_node(std::move(d));
  };
  Tensor one = Tensor::empty(DType::kFloat32, {});
  one.data<float>()[0] = 1.0f;
  const int x = add_node("x", "Placeholder", {}, {{"dtype", AttrValue{DType::kFloat32}}});
  const int c = add_node("one", "Const", {}, {{"value", AttrValue{one}}});
  int y = x;
  for (int i = 0; i < length; ++i) {
    y = add_node((i % 2 ? "mul_" : "add_") + std::to_string(i), i % 2 ? "Mul" : "Add",
                 {{y, 0}, {c, 0}});
  }
  configure_parallelism_if_unset(intra, inter < 0 ? 1 : inter, "executor_bench");
  Executor exec(g);
  RunRequest req;
  req.feeds = {{TensorId{x, 0}, Tensor::zeros(DType::kFloat32, {size})}};
  req.fetches = {{y, 0}};
  req.inter_pool = inter < 0 ? nullptr : global_inter_pool();
  req.intra_pool = global_intra_pool();

  for (int i = 0; i < 50 && i < runs; ++i) exec.run(req);  // warm up: the cost estimates settle
  std::vector<double> us;
  float last = 0;
  for (int r = 0; r < runs; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    last = exec.run(req)[0].data<float>()[0];
    us.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(us.begin(), us.end());
  const double med = us.empty() ? 0 : us[us.size() / 2];
  std::printf(
      "chain of %d, %lld element(s), inter=%d intra=%d: %.1f us/run, %.1f ns/node "
      "(result %g)\n",
      length, static_cast<long long>(size), inter, intra, med, med * 1e3 / length,
      static_cast<double>(last));
  return 0;
}
