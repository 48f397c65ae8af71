// The optimizers' update loops (training_loops.h) give the same bits in every build the CPU can
// run (baseline, AVX2, AVX-512), and the bits of a plain scalar reference written from
// TensorFlow's formulas, for each loop and flag (Nesterov, Adagrad's update_slots), float32 and
// float64, runs whose ends are and are not multiples of the vector widths, and in place (out ==
// in) as well as into separate buffers.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "opweave/cpu_info.h"
#include "opweave/kernels/training_loops.h"
#include "testing.h"

using namespace opweave;
using namespace opweave::training_loops;

namespace {

template <typename T>
std::vector<std::pair<std::string, Table<T>>> builds() {
  std::vector<std::pair<std::string, Table<T>>> b = {{"baseline", table_baseline<T>()}};
#if defined(OPWEAVE_X86_64)
  if (isa_flags().can_run_avx2_files()) b.emplace_back("avx2", table_avx2<T>());
  if (isa_flags().can_run_avx512_files()) b.emplace_back("avx512", table_avx512<T>());
#endif
  return b;
}

// The reference: element i of each output from element i of the inputs, one at a time.
template <typename T>
using Reference = std::function<void(const UpdateArgs<T>&, std::int64_t i)>;

template <typename T>
struct Case {
  const char* name;
  int slots;  // buffers updated: the variable and its slots
  UpdateFn<T> Table<T>::* loop;
  UpdateArgs<T> scalars;
  Reference<T> reference;
};

template <typename T>
std::vector<Case<T>> cases() {
  UpdateArgs<T> s;
  s.lr = T(0.01);
  s.momentum = T(0.9);
  s.beta1 = T(0.9);
  s.one_minus_beta1 = T(1) - T(0.9);
  s.one_minus_beta2 = T(1) - T(0.999);
  s.one_minus_rho = T(1) - T(0.9);
  s.epsilon = T(1e-7);
  UpdateArgs<T> nesterov = s;
  nesterov.nesterov = true;
  UpdateArgs<T> frozen_slots = s;
  frozen_slots.update_slots = false;
  const Reference<T> sgd = [](const UpdateArgs<T>& a, std::int64_t i) {
    a.out[0][i] = a.in[0][i] - a.grad[i] * a.lr;
  };
  const Reference<T> momentum = [](const UpdateArgs<T>& a, std::int64_t i) {
    const T g = a.grad[i];
    const T acc = a.in[1][i] * a.momentum + g;
    const T step = a.nesterov ? g * a.lr + acc * a.momentum * a.lr : acc * a.lr;
    a.out[1][i] = acc;
    a.out[0][i] = a.in[0][i] - step;
  };
  const Reference<T> adam = [](const UpdateArgs<T>& a, std::int64_t i) {
    const T g = a.grad[i];
    const T m = a.in[1][i] + (g - a.in[1][i]) * a.one_minus_beta1;
    const T v = a.in[2][i] + (g * g - a.in[2][i]) * a.one_minus_beta2;
    const T direction = a.nesterov ? g * a.one_minus_beta1 + a.beta1 * m : m;
    a.out[1][i] = m;
    a.out[2][i] = v;
    a.out[0][i] = a.in[0][i] - (direction * a.lr) / (std::sqrt(v) + a.epsilon);
  };
  const Reference<T> rms_prop = [](const UpdateArgs<T>& a, std::int64_t i) {
    const T g = a.grad[i];
    const T ms = a.in[1][i] + (g * g - a.in[1][i]) * a.one_minus_rho;
    const T mom = a.in[2][i] * a.momentum + (g * a.lr) / std::sqrt(ms + a.epsilon);
    a.out[1][i] = ms;
    a.out[2][i] = mom;
    a.out[0][i] = a.in[0][i] - mom;
  };
  const Reference<T> centered = [](const UpdateArgs<T>& a, std::int64_t i) {
    const T g = a.grad[i];
    const T ms = a.in[2][i] + (g * g - a.in[2][i]) * a.one_minus_rho;
    const T mg = a.in[1][i] + (g - a.in[1][i]) * a.one_minus_rho;
    const T mom = a.in[3][i] * a.momentum + (g * a.lr) / std::sqrt((ms - mg * mg) + a.epsilon);
    a.out[1][i] = mg;
    a.out[2][i] = ms;
    a.out[3][i] = mom;
    a.out[0][i] = a.in[0][i] - mom;
  };
  const Reference<T> adagrad = [](const UpdateArgs<T>& a, std::int64_t i) {
    const T g = a.grad[i];
    const T acc = a.update_slots ? a.in[1][i] + g * g : a.in[1][i];
    a.out[1][i] = acc;
    a.out[0][i] = a.in[0][i] - g * a.lr * (T(1) / std::sqrt(acc));
  };
  return {{"gradient_descent", 1, &Table<T>::gradient_descent, s, sgd},
          {"momentum", 2, &Table<T>::momentum, s, momentum},
          {"momentum nesterov", 2, &Table<T>::momentum, nesterov, momentum},
          {"adam", 3, &Table<T>::adam, s, adam},
          {"adam nesterov", 3, &Table<T>::adam, nesterov, adam},
          {"rms_prop", 3, &Table<T>::rms_prop, s, rms_prop},
          {"centered_rms_prop", 4, &Table<T>::centered_rms_prop, s, centered},
          {"adagrad", 2, &Table<T>::adagrad, s, adagrad},
          {"adagrad without slot update", 2, &Table<T>::adagrad, frozen_slots, adagrad}};
}

template <typename T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

// Runs [begin, end) of `c` on copies of the inputs: into separate buffers, or in place. Returns
// the outputs (elements outside the run keep the inputs' values, or the fill of the separate
// buffers).
template <typename T>
std::vector<std::vector<T>> run(const Case<T>& c, UpdateFn<T> loop,
                                const std::vector<std::vector<T>>& inputs,
                                const std::vector<T>& grad, std::int64_t begin, std::int64_t end,
                                bool in_place) {
  std::vector<std::vector<T>> in = inputs, out;
  for (const auto& v : inputs) out.emplace_back(v.size(), T(-7));
  UpdateArgs<T> a = c.scalars;
  a.grad = grad.data();
  for (int k = 0; k < c.slots; ++k) {
    a.in[k] = in[k].data();
    a.out[k] = in_place ? in[k].data() : out[k].data();
  }
  if (loop != nullptr) {
    loop(a, begin, end);
  } else {
    for (std::int64_t i = begin; i < end; ++i) c.reference(a, i);
  }
  return in_place ? in : out;
}

template <typename T>
void check_builds(std::mt19937_64& rng) {
  // Positive second moments and accumulators (square roots of them), any signs elsewhere.
  std::uniform_real_distribution<T> any(T(-2), T(2)), positive(T(0.01), T(2));
  for (const Case<T>& c : cases<T>()) {
    for (std::int64_t n : {1, 7, 16, 33, 100, 1031}) {
      std::vector<T> grad(static_cast<std::size_t>(n));
      for (T& g : grad) g = any(rng);
      std::vector<std::vector<T>> inputs(static_cast<std::size_t>(c.slots));
      for (int k = 0; k < c.slots; ++k) {
        for (std::int64_t i = 0; i < n; ++i) inputs[k].push_back(k == 0 ? any(rng) : positive(rng));
      }
      const std::int64_t begin = n > 3 ? 3 : 0;  // a run that starts inside the buffers
      for (bool in_place : {false, true}) {
        const auto want = run<T>(c, nullptr, inputs, grad, begin, n, in_place);
        for (const auto& [build, table] : builds<T>()) {
          const auto got = run<T>(c, table.*c.loop, inputs, grad, begin, n, in_place);
          for (int k = 0; k < c.slots; ++k) {
            if (!same_bits(got[k], want[k])) {
              ::opweave::testing::report_failure(
                  __FILE__, __LINE__,
                  std::string(c.name) + " " + build + " n=" + std::to_string(n) +
                      " in_place=" + std::to_string(in_place) + " output " + std::to_string(k) +
                      " differs from the reference");
            }
          }
        }
      }
    }
  }
}

}  // namespace

OPWEAVE_TEST(every_build_of_the_update_loops_gives_the_reference_bits_float32) {
  std::mt19937_64 rng(11);
  check_builds<float>(rng);
}

OPWEAVE_TEST(every_build_of_the_update_loops_gives_the_reference_bits_float64) {
  std::mt19937_64 rng(12);
  check_builds<double>(rng);
}

OPWEAVE_TEST(the_selected_build_is_one_of_the_builds) {
  const UpdateFn<float> adam = selected_table<float>().adam;
  bool found = false;
  for (const auto& [build, table] : builds<float>()) found = found || table.adam == adam;
  OPWEAVE_CHECK(found);
}

int main(int argc, char** argv) { return opweave::testing::run_all(argc, argv); }
