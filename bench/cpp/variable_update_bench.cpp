// What a race-free unlocked update costs: one fused Adam step on a variable of `n` float32
// elements (var, m, v and the gradient), three ways, interleaved round by round:
//
//   kernel   -- the ApplyAdam kernel as sessions run it: the plain, vectorised loop, each
//               8192-element block under its stripe lock (opweave/state/variable.h);
//   atomic   -- the same arithmetic with every load and store of var, m and v a relaxed
//               __atomic access, the other way to make unlocked updates race-free (no locks,
//               but the compiler cannot vectorise);
//   plain    -- the kernel's own loop (training_loops.h, this CPU's build) with no lock at all
//               (racy if anything ran concurrently): the floor.
//
// Prints the median of each and the ratios to plain, on the caller alone and on `threads`
// threads. The machine should be idle; on a shared one, quote the ratios.
//
//   variable_update_bench [n=1048576] [rounds=30] [threads=2]
// Compiled with -fno-math-errno, as the loop files are (CMakeLists.txt), so the atomic variant's
// square root is one instruction, as in the kernel's loop.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "opweave/executor/kernel_registry.h"
#include "opweave/kernels/training_loops.h"
#include "opweave/parallel_for.h"
#include "opweave/state/variable.h"
#include "opweave/thread_pool.h"

using namespace opweave;

namespace {

constexpr float kLr = 0.001f, kB1 = 0.9f, kB2 = 0.999f, kEps = 1e-8f;

Tensor scalar(float v) {
  Tensor t = Tensor::empty(DType::kFloat32, {});
  t.data<float>()[0] = v;
  return t;
}

Tensor filled(std::int64_t n, float v) {
  Tensor t = Tensor::empty(DType::kFloat32, {n});
  std::fill(t.data<float>(), t.data<float>() + n, v);
  return t;
}

float load(const float* p) {
  float v;
  __atomic_load(p, &v, __ATOMIC_RELAXED);  // relaxed: the alternative under measurement
  return v;
}

void store(float* p, float v) { __atomic_store(p, &v, __ATOMIC_RELAXED); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const std::int64_t n = argc > 1 ? std::atoll(argv[1]) : (1 << 20);
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 30;
  const int threads = argc > 3 ? std::atoi(argv[3]) : 2;

  std::shared_ptr<Variable> vars[3] = {make_variable("var", DType::kFloat32, Shape{n}),
                                       make_variable("m", DType::kFloat32, Shape{n}),
                                       make_variable("v", DType::kFloat32, Shape{n})};
  for (auto& v : vars) v->assign(filled(n, 0.5f), true, true, false, nullptr);
  const Tensor grad = filled(n, 0.01f);
  Tensor plain[3] = {filled(n, 0.5f), filled(n, 0.5f), filled(n, 0.5f)};

  NodeDef def;
  def.name = "ApplyAdam";
  def.op = "ApplyAdam";
  const Kernel kernel = find_kernel("ApplyAdam").make(def);
  std::vector<Tensor> slots = {variable_ref(vars[0]),
                               variable_ref(vars[1]),
                               variable_ref(vars[2]),
                               scalar(0.9f),
                               scalar(0.999f),
                               scalar(kLr),
                               scalar(kB1),
                               scalar(kB2),
                               scalar(kEps),
                               grad,
                               Tensor()};
  std::vector<int> index = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  const float alpha = kLr * std::sqrt(1.0f - 0.999f) / (1.0f - 0.9f);
  const float* g = grad.data<float>();

  PoolOptions options;
  options.num_workers = threads - 1;
  ThreadPool pool(options);
  for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
    std::vector<double> t_kernel, t_atomic, t_plain;
    for (int r = 0; r < rounds; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      KernelContext ctx{def, InputList(slots.data(), index.data(), index.size()),
                        OutputList(slots.data() + 10, 1), p};
      kernel(ctx);
      auto t1 = std::chrono::steady_clock::now();
      // The atomic variant: same elements, same arithmetic, same blocks over the pool.
      float* var = plain[0].data<float>();
      float* m = plain[1].data<float>();
      float* v = plain[2].data<float>();
      parallel_for(
          p, 0, n, Variable::kBlock,
          [&](std::int64_t b, std::int64_t e) {
            for (std::int64_t i = b; i < e; ++i) {
              const float gi = g[i];
              const float mi = load(m + i) + (gi - load(m + i)) * (1.0f - kB1);
              const float vi = load(v + i) + (gi * gi - load(v + i)) * (1.0f - kB2);
              store(m + i, mi);
              store(v + i, vi);
              store(var + i, load(var + i) - (mi * alpha) / (std::sqrt(vi) + kEps));
            }
          },
          8.0);
      auto t2 = std::chrono::steady_clock::now();
      training_loops::UpdateArgs<float> args;
      args.grad = g;
      for (int i = 0; i < 3; ++i) args.in[i] = args.out[i] = plain[i].data<float>();
      args.lr = alpha;
      args.beta1 = kB1;
      args.one_minus_beta1 = 1.0f - kB1;
      args.one_minus_beta2 = 1.0f - kB2;
      args.epsilon = kEps;
      const auto adam = training_loops::selected_table<float>().adam;  // the kernel's loop
      parallel_for(
          p, 0, n, Variable::kBlock, [&](std::int64_t b, std::int64_t e) { adam(args, b, e); },
          8.0);
      auto t3 = std::chrono::steady_clock::now();
      auto us = [](auto a, auto b) {
        return std::chrono::duration<double, std::micro>(b - a).count();
      };
      t_kernel.push_back(us(t0, t1));
      t_atomic.push_back(us(t1, t2));
      t_plain.push_back(us(t2, t3));
    }
    const double k = median(t_kernel), a = median(t_atomic), pl = median(t_plain);
    std::printf(
        "%d thread(s), n=%lld: kernel (stripe locks) %.0f us, atomic %.0f us, plain %.0f us;"
        " kernel/plain %.2f, atomic/plain %.2f, atomic/kernel %.2f\n",
        p == nullptr ? 1 : threads, static_cast<long long>(n), k, a, pl, k / pl, a / pl, a / k);
  }
  return 0;
}
