// The random op family: RandomUniform, RandomUniformInt, RandomStandardNormal, TruncatedNormal,
// RandomShuffle and Multinomial, TensorFlow's stateful random ops.
//
// Each op's generator position is session state (SessionState, keyed by the node's name): a key
// made from the op's `seed` / `seed2` attributes and a count of the op's executions in that
// session. An execution takes the next run number and computes every output element from the
// Philox block (philox.h) at a counter fixed by (run number, element index) alone, so the values
// depend on the seeds, on how many times the op ran before in the session, and on nothing else:
// not on the thread count, not on which thread computes which piece. seed = seed2 = 0 (no seed
// given in Python, TensorFlow's convention) draws the key from std::random_device when the
// session first runs the op.
//
// Counter layout: words 0-1 hold a 64-bit position within the execution, words 2-3 the 64-bit
// run number. Position = output block index for the direct ops (4 floats, 2 doubles, ...);
// TruncatedNormal gives each group of outputs its own 2^16 positions to resample from; Multinomial
// and RandomShuffle number their draws.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "opweave/executor/kernel_registry.h"
#include "opweave/kernels/copy_util.h"
#include "opweave/kernels/kernels.h"
#include "opweave/kernels/philox.h"

namespace opweave {

namespace {

using kernel_detail::copy_elements;
using kernel_detail::element_ptr;
using kernel_detail::for_rows;

// -- generator state ----------------------------------------------------------------------------

// One random op's state in one session: its key, fixed when the session first runs the op, and
// how many executions have taken a run number.
struct RandomState {
  philox::Key key{};
  std::atomic<std::uint64_t> runs{0};
};

// The key of seeds (seed, seed2): the two 64-bit attributes hashed to 64 bits by one Philox block
// under a fixed key, so nearby seeds give unrelated keys; (0, 0) is a fresh key from the system's
// entropy source, different in every session.
philox::Key make_key(std::int64_t seed, std::int64_t seed2) {
  if (seed == 0 && seed2 == 0) {
    std::uint64_t fresh = 0;
    try {
      std::random_device device;
      fresh = philox::join(device(), device());
    } catch (const std::exception&) {
      // No entropy device: the clock and an address still differ between sessions and processes.
      fresh = static_cast<std::uint64_t>(
                  std::chrono::high_resolution_clock::now().time_since_epoch().count()) ^
              reinterpret_cast<std::uintptr_t>(&fresh);
    }
    return {static_cast<std::uint32_t>(fresh), static_cast<std::uint32_t>(fresh >> 32)};
  }
  const auto s = static_cast<std::uint64_t>(seed);
  const auto s2 = static_cast<std::uint64_t>(seed2);
  const philox::Words h =
      philox::block({static_cast<std::uint32_t>(s), static_cast<std::uint32_t>(s >> 32),
                     static_cast<std::uint32_t>(s2), static_cast<std::uint32_t>(s2 >> 32)},
                    {0x6f707765u, 0x61766521u});
  return {h[0], h[1]};
}

struct Seeds {
  std::int64_t seed = 0;
  std::int64_t seed2 = 0;
};

Seeds read_seeds(const NodeDef& node) {
  Seeds s;
  if (node.has_attr("seed")) s.seed = node.attr<std::int64_t>("seed");
  if (node.has_attr("seed2")) s.seed2 = node.attr<std::int64_t>("seed2");
  return s;
}

// The stream of this execution: the op's key, and the next run number of its session.
philox::Stream next_stream(const KernelContext& ctx, const Seeds& seeds) {
  const std::shared_ptr<RandomState> state =
      ctx.session_state().get_or_create<RandomState>(ctx.node.name, [&seeds] {
        auto made = std::make_shared<RandomState>();
        made->key = make_key(seeds.seed, seeds.seed2);
        return made;
      });
  // Relaxed: each execution needs only a run number no other execution gets; nothing is
  // published through the counter (the key was published by get_or_create's lock).
  const std::uint64_t run = state->runs.fetch_add(1, std::memory_order_relaxed);
  return philox::Stream(state->key, run);
}

// -- shapes --------------------------------------------------------------------------------------

// The output shape given by input `i`, an int32 / int64 vector of sizes >= 0.
Shape shape_input(const KernelContext& ctx, std::size_t i) {
  const Tensor& t = ctx.inputs[i];
  if (t.ndim() != 1) {
    throw_node_error(ctx.node,
                     "shape must be a vector, got a tensor of shape " + shape_to_string(t.shape()));
  }
  const std::vector<std::int64_t> dims = int_list_input(ctx, i, "shape");
  std::int64_t n = 1;
  for (std::int64_t d : dims) {
    if (d < 0) {
      throw_node_error(ctx.node, "Dimension " + std::to_string(d) + " must be >= 0 in shape " +
                                     shape_to_string(dims));
    }
    if (d != 0 && n > std::numeric_limits<std::int64_t>::max() / d) {
      throw_node_error(ctx.node, "shape " + shape_to_string(dims) + " has too many elements");
    }
    n *= d;
  }
  return Shape(dims.begin(), dims.end());
}

// -- filling outputs block by block --------------------------------------------------------------

// Blocks per parallel piece at least (a block is one Philox call, ~30 cycles, plus the transform).
constexpr std::int64_t kBlockGrain = 512;

// Runs fn(block_begin, block_end) over the blocks that cover n outputs of `per_block` each, on the
// pool when there are enough. Every block is computed the same way whoever runs it.
template <typename Fn>
void for_blocks(ThreadPool* pool, std::int64_t n, std::int64_t per_block, double cycles_per_block,
                const Fn& fn) {
  const std::int64_t blocks = n / per_block + (n % per_block != 0);
  if (blocks <= kBlockGrain) {
    fn(std::int64_t{0}, blocks);
    return;
  }
  parallel_for(pool, 0, blocks, kBlockGrain, fn, cycles_per_block);
}

// Writes the first min(per_block, n - first) of `values` to out[first...].
template <typename T, std::size_t N>
void store(T* out, std::int64_t n, std::int64_t first, const T (&values)[N]) {
  const std::int64_t count = std::min<std::int64_t>(static_cast<std::int64_t>(N), n - first);
  for (std::int64_t k = 0; k < count; ++k) out[first + k] = values[k];
}

// Two standard normals from two uniform words (Box-Muller); u1 is taken in (0, 1] so its
// logarithm is finite.
inline void box_muller(float u1, float u2, float& z0, float& z1) {
  const float r = std::sqrt(-2.0f * std::log(1.0f - u1));
  const float theta = 6.28318530717958647692f * u2;
  z0 = r * std::cos(theta);
  z1 = r * std::sin(theta);
}

inline void box_muller(double u1, double u2, double& z0, double& z1) {
  const double r = std::sqrt(-2.0 * std::log(1.0 - u1));
  const double theta = 6.28318530717958647692 * u2;
  z0 = r * std::cos(theta);
  z1 = r * std::sin(theta);
}

// Four floats or two doubles in [0, 1) from one block.
inline void uniforms(const philox::Words& w, float (&u)[4]) {
  for (int k = 0; k < 4; ++k) u[k] = philox::uniform_float(w[static_cast<std::size_t>(k)]);
}
inline void uniforms(const philox::Words& w, double (&u)[2]) {
  u[0] = philox::uniform_double(philox::join(w[0], w[1]));
  u[1] = philox::uniform_double(philox::join(w[2], w[3]));
}

// Four float or two double standard normals from one block.
inline void normals(const philox::Words& w, float (&z)[4]) {
  float u[4];
  uniforms(w, u);
  box_muller(u[0], u[1], z[0], z[1]);
  box_muller(u[2], u[3], z[2], z[3]);
}
inline void normals(const philox::Words& w, double (&z)[2]) {
  double u[2];
  uniforms(w, u);
  box_muller(u[0], u[1], z[0], z[1]);
}

template <typename T>
constexpr std::int64_t kPerBlock = sizeof(T) == 4 ? 4 : 2;

enum class Distribution { kUniform, kNormal, kTruncatedNormal };

// Values of `dist` for a float or double output of n elements.
template <typename T>
void generate(Distribution dist, const philox::Stream& stream, T* out, std::int64_t n,
              ThreadPool* pool) {
  constexpr std::int64_t per = kPerBlock<T>;
  if (dist == Distribution::kUniform) {
    for_blocks(pool, n, per, 40.0, [&](std::int64_t b0, std::int64_t b1) {
      for (std::int64_t b = b0; b < b1; ++b) {
        T u[per];
        uniforms(stream(static_cast<std::uint64_t>(b)), u);
        store(out, n, b * per, u);
      }
    });
  } else if (dist == Distribution::kNormal) {
    for_blocks(pool, n, per, 200.0, [&](std::int64_t b0, std::int64_t b1) {
      for (std::int64_t b = b0; b < b1; ++b) {
        T z[per];
        normals(stream(static_cast<std::uint64_t>(b)), z);
        store(out, n, b * per, z);
      }
    });
  } else {
    // Group g of `per` outputs draws normals from positions (g << 16) + j, j = 0, 1, ... and keeps
    // those with |z| < 2 in order (TensorFlow's rule: values beyond two standard deviations are
    // drawn again). About 1.05 normals per output on average; running out of 2^16 blocks would
    // take 2^18 rejections in a row (probability 0.0455^(2^18)), and leaves the mean (0) there.
    for_blocks(pool, n, per, 260.0, [&](std::int64_t g0, std::int64_t g1) {
      for (std::int64_t g = g0; g < g1; ++g) {
        T kept[per] = {};
        std::int64_t got = 0;
        for (std::uint64_t j = 0; got < per && j < (std::uint64_t{1} << 16); ++j) {
          T z[per];
          normals(stream((static_cast<std::uint64_t>(g) << 16) | j), z);
          for (std::int64_t k = 0; k < per && got < per; ++k) {
            if (std::abs(z[k]) < T(2)) kept[got++] = z[k];
          }
        }
        store(out, n, g * per, kept);
      }
    });
  }
}

Kernel make_float_random(const NodeDef& node, Distribution dist) {
  const Seeds seeds = read_seeds(node);
  const DType dtype = node.attr<DType>("dtype");
  if (dtype != DType::kFloat32 && dtype != DType::kFloat64 && dtype != DType::kFloat16) {
    throw OpError(ErrorCode::kInvalidArgument, node.op + " '" + node.name + "': dtype " +
                                                   dtype_name(dtype) + " is not a floating type");
  }
  return [seeds, dtype, dist](KernelContext& ctx) {
    const Shape shape = shape_input(ctx, 0);
    if (dist == Distribution::kTruncatedNormal && shape_numel(shape) > (std::int64_t{1} << 50)) {
      throw_node_error(ctx.node, "TruncatedNormal supports at most 2^50 elements");
    }
    const philox::Stream stream = next_stream(ctx, seeds);
    // float16 is generated as float32 and rounded, as opweave computes on half elsewhere.
    Tensor out = Tensor::empty(dtype == DType::kFloat64 ? DType::kFloat64 : DType::kFloat32, shape);
    if (out.dtype() == DType::kFloat64) {
      generate(dist, stream, out.data<double>(), out.numel(), ctx.intra_pool);
    } else {
      generate(dist, stream, out.data<float>(), out.numel(), ctx.intra_pool);
    }
    ctx.outputs[0] = dtype == DType::kFloat16 ? cast(out, DType::kFloat16, ctx.intra_pool) : out;
  };
}

// -- RandomUniformInt ----------------------------------------------------------------------------

// minval + floor(u * (maxval - minval)) for a 32- or 64-bit uniform integer u / 2^bits: slightly
// biased unless the range is a power of two, as TensorFlow's is (by at most range / 2^bits).
Kernel make_uniform_int(const NodeDef& node) {
  const Seeds seeds = read_seeds(node);
  return [seeds](KernelContext& ctx) {
    const Shape shape = shape_input(ctx, 0);
    const Tensor& lo_t = ctx.inputs[1];
    const Tensor& hi_t = ctx.inputs[2];
    if (lo_t.ndim() != 0) {
      throw_node_error(ctx.node, "minval must be 0-D, got shape " + shape_to_string(lo_t.shape()));
    }
    if (hi_t.ndim() != 0) {
      throw_node_error(ctx.node, "maxval must be 0-D, got shape " + shape_to_string(hi_t.shape()));
    }
    const std::int64_t lo = int_scalar_input(ctx, 1, "minval");
    const std::int64_t hi = int_scalar_input(ctx, 2, "maxval");
    if (lo >= hi) {
      throw_node_error(ctx.node, "Need minval < maxval, got " + std::to_string(lo) +
                                     " >= " + std::to_string(hi));
    }
    const philox::Stream stream = next_stream(ctx, seeds);
    Tensor out = Tensor::empty(lo_t.dtype(), shape);
    const std::int64_t n = out.numel();
    // hi - lo in uint64 arithmetic: exact, since 0 < hi - lo < 2^64.
    const std::uint64_t range = static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo);
    if (out.dtype() == DType::kInt32) {
      auto* o = out.data<std::int32_t>();
      for_blocks(ctx.intra_pool, n, 4, 40.0, [&](std::int64_t b0, std::int64_t b1) {
        for (std::int64_t b = b0; b < b1; ++b) {
          const philox::Words w = stream(static_cast<std::uint64_t>(b));
          std::int32_t v[4];
          for (std::size_t k = 0; k < 4; ++k) {
            // range < 2^32, so the product fits 64 bits and the offset is below range.
            v[k] = static_cast<std::int32_t>(
                lo + static_cast<std::int64_t>((std::uint64_t{w[k]} * range) >> 32));
          }
          store(o, n, b * 4, v);
        }
      });
    } else {
      auto* o = out.data<std::int64_t>();
      for_blocks(ctx.intra_pool, n, 2, 40.0, [&](std::int64_t b0, std::int64_t b1) {
        for (std::int64_t b = b0; b < b1; ++b) {
          const philox::Words w = stream(static_cast<std::uint64_t>(b));
          std::int64_t v[2];
          for (std::size_t k = 0; k < 2; ++k) {
            const std::uint64_t r = philox::join(w[2 * k], w[2 * k + 1]);
            const auto offset =
                static_cast<std::uint64_t>((static_cast<unsigned __int128>(r) * range) >> 64);
            // lo + offset < hi, computed modulo 2^64 and converted back (two's complement).
            v[k] = static_cast<std::int64_t>(static_cast<std::uint64_t>(lo) + offset);
          }
          store(o, n, b * 2, v);
        }
      });
    }
    ctx.outputs[0] = out;
  };
}

// -- RandomShuffle -------------------------------------------------------------------------------

// An integer in [0, bound) from a 64-bit uniform r (the high half of r * bound).
inline std::int64_t below(std::uint64_t r, std::int64_t bound) {
  return static_cast<std::int64_t>(
      (static_cast<unsigned __int128>(r) * static_cast<std::uint64_t>(bound)) >> 64);
}

// Fisher-Yates over the first dimension: step k (k = 0 .. n-2) swaps row n-1-k with a row drawn
// from [0, n-k) by the k-th 64-bit draw (half of block k / 2). The permutation is drawn serially
// (a few nanoseconds a row); moving the rows runs on the pool.
Kernel make_shuffle(const NodeDef& node) {
  const Seeds seeds = read_seeds(node);
  return [seeds](KernelContext& ctx) {
    const philox::Stream stream = next_stream(ctx, seeds);
    const Tensor x = ctx.inputs[0].contiguous();
    if (x.ndim() == 0 || x.shape()[0] <= 1) {
      ctx.outputs[0] = x;
      return;
    }
    const std::int64_t n = x.shape()[0];
    std::vector<std::int64_t> perm(static_cast<std::size_t>(n));
    std::iota(perm.begin(), perm.end(), std::int64_t{0});
    philox::Words w{};
    for (std::int64_t k = 0; k + 1 < n; ++k) {
      if (k % 2 == 0) w = stream(static_cast<std::uint64_t>(k / 2));
      const std::size_t h = k % 2 == 0 ? 0 : 2;
      const std::int64_t i = n - 1 - k;
      const std::int64_t j = below(philox::join(w[h], w[h + 1]), i + 1);
      std::swap(perm[static_cast<std::size_t>(i)], perm[static_cast<std::size_t>(j)]);
    }
    Tensor out = Tensor::empty(x.dtype(), x.shape());
    const std::int64_t row = x.numel() / n;
    const std::size_t item = dtype_size(x.dtype());
    for_rows(ctx.intra_pool, n, row * static_cast<std::int64_t>(item),
             [&](std::int64_t r0, std::int64_t r1) {
               for (std::int64_t r = r0; r < r1; ++r) {
                 copy_elements(
                     x.dtype(), element_ptr(out.raw_data(), r * row, item),
                     element_ptr(x.raw_data(), perm[static_cast<std::size_t>(r)] * row, item), row);
               }
             });
    ctx.outputs[0] = out;
  };
}

// -- Multinomial ---------------------------------------------------------------------------------

// Per row: the unnormalised CDF of exp(logit - max) in double over the finite logits (others get
// probability 0, as in TensorFlow), then each sample is the first class whose CDF exceeds
// u * total for a uniform double u (sample k of the op is the k-th 53-bit draw). A row without a
// finite logit gives num_classes, as TensorFlow's kernel does.
template <typename Out>
void sample_rows(const philox::Stream& stream, const std::vector<double>& logits,
                 std::int64_t batch, std::int64_t classes, std::int64_t samples, Out* out,
                 ThreadPool* pool) {
  auto rows = [&](std::int64_t b0, std::int64_t b1) {
    std::vector<double> cdf(static_cast<std::size_t>(classes));
    for (std::int64_t b = b0; b < b1; ++b) {
      const double* l = logits.data() + b * classes;
      double max = -std::numeric_limits<double>::infinity();
      for (std::int64_t c = 0; c < classes; ++c) {
        if (std::isfinite(l[c])) max = std::max(max, l[c]);
      }
      double total = 0.0;
      for (std::int64_t c = 0; c < classes; ++c) {
        if (std::isfinite(l[c])) total += std::exp(l[c] - max);
        cdf[static_cast<std::size_t>(c)] = total;
      }
      philox::Words w{};
      for (std::int64_t s = 0; s < samples; ++s) {
        const std::int64_t k = b * samples + s;
        if (s == 0 || k % 2 == 0) w = stream(static_cast<std::uint64_t>(k / 2));
        const std::size_t h = k % 2 == 0 ? 0 : 2;
        const double target = philox::uniform_double(philox::join(w[h], w[h + 1])) * total;
        out[k] = static_cast<Out>(std::upper_bound(cdf.begin(), cdf.end(), target) - cdf.begin());
      }
    }
  };
  const double cycles_per_row =
      20.0 * static_cast<double>(classes) + 60.0 * static_cast<double>(samples);
  parallel_for(pool, 0, batch, 1, rows, cycles_per_row);
}

Kernel make_multinomial(const NodeDef& node) {
  const Seeds seeds = read_seeds(node);
  DType out_dtype = DType::kInt64;
  if (node.has_attr("output_dtype")) out_dtype = node.attr<DType>("output_dtype");
  if (out_dtype != DType::kInt32 && out_dtype != DType::kInt64) {
    throw OpError(ErrorCode::kInvalidArgument, "Multinomial '" + node.name +
                                                   "': output_dtype must be int32 or int64, got " +
                                                   dtype_name(out_dtype));
  }
  return [seeds, out_dtype](KernelContext& ctx) {
    const Tensor x = ctx.inputs[0].contiguous();
    if (x.ndim() != 2) {
      throw_node_error(ctx.node,
                       "logits should be a matrix, got shape " + shape_to_string(x.shape()));
    }
    const std::int64_t samples = int_scalar_input(ctx, 1, "num_samples");
    if (samples < 0) {
      throw_node_error(ctx.node,
                       "num_samples should be nonnegative, got " + std::to_string(samples));
    }
    const std::int64_t batch = x.shape()[0];
    const std::int64_t classes = x.shape()[1];
    if (classes <= 0) {
      throw_node_error(ctx.node, "num_classes should be positive, got " + std::to_string(classes));
    }
    if (out_dtype == DType::kInt32 && classes > std::numeric_limits<std::int32_t>::max()) {
      throw_node_error(ctx.node,
                       "num_classes " + std::to_string(classes) + " does not fit the int32 output");
    }
    if (samples != 0 && batch > std::numeric_limits<std::int64_t>::max() / samples) {
      throw_node_error(ctx.node, "batch_size * num_samples does not fit in int64");
    }
    const philox::Stream stream = next_stream(ctx, seeds);
    std::vector<double> logits(static_cast<std::size_t>(x.numel()));
    if (x.dtype() == DType::kFloat16) {
      const Half* h = x.data<Half>();
      for (std::int64_t i = 0; i < x.numel(); ++i) logits[i] = h[i].to_float();
    } else if (x.dtype() == DType::kBool || x.dtype() == DType::kString) {
      throw_node_error(ctx.node,
                       std::string("logits must be real numbers, got ") + dtype_name(x.dtype()));
    } else {
      kernel_detail::dispatch_all(x.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* p = x.data<T>();
        for (std::int64_t i = 0; i < x.numel(); ++i) logits[i] = static_cast<double>(p[i]);
      });
    }
    Tensor out = Tensor::empty(out_dtype, {batch, samples});
    if (out_dtype == DType::kInt32) {
      sample_rows(stream, logits, batch, classes, samples, out.data<std::int32_t>(),
                  ctx.intra_pool);
    } else {
      sample_rows(stream, logits, batch, classes, samples, out.data<std::int64_t>(),
                  ctx.intra_pool);
    }
    ctx.outputs[0] = out;
  };
}

}  // namespace

void register_random_kernels() {
  // All stateful: each execution advances the op's generator in its session.
  register_kernel("RandomUniform", {[](const NodeDef& node) {
                                      return make_float_random(node, Distribution::kUniform);
                                    },
                                    CostHint::kMeasure, /*stateful=*/true});
  register_kernel("RandomStandardNormal", {[](const NodeDef& node) {
                                             return make_float_random(node, Distribution::kNormal);
                                           },
                                           CostHint::kMeasure, /*stateful=*/true});
  register_kernel(
      "TruncatedNormal",
      {[](const NodeDef& node) { return make_float_random(node, Distribution::kTruncatedNormal); },
       CostHint::kMeasure, /*stateful=*/true});
  register_kernel("RandomUniformInt", {make_uniform_int, CostHint::kMeasure, /*stateful=*/true});
  register_kernel("RandomShuffle", {make_shuffle, CostHint::kMeasure, /*stateful=*/true});
  register_kernel("Multinomial", {make_multinomial, CostHint::kMeasure, /*stateful=*/true});
}

}  // namespace opweave
