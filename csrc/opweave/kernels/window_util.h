// Sliding-window attributes shared by the convolution and pooling kernels: strides, dilations,
// ksize, padding (SAME / VALID / EXPLICIT) and data_format read once per node, and TensorFlow's
// rules for the output size and the padding before each spatial dimension. Internal to
// csrc/opweave/kernels.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "opweave/executor/kernel_registry.h"
#include "opweave/kernels/kernels.h"

namespace opweave::kernel_detail {

enum class Padding { kValid, kSame, kExplicit };

// One node's window attributes, in NHWC terms (NCHW attributes are read at their own indices).
struct WindowAttrs {
  bool nchw = false;
  std::int64_t stride_h = 1, stride_w = 1;
  std::int64_t dilation_h = 1, dilation_w = 1;
  std::int64_t ksize_h = 1, ksize_w = 1;  // pooling only
  Padding padding = Padding::kValid;
  std::int64_t pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;  // EXPLICIT only
};

inline std::string join_ints(const std::vector<std::int64_t>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// A 4-element window attribute (strides, dilations, ksize): positive, 1 in the batch and depth
// dimensions. Returns (h, w).
inline std::pair<std::int64_t, std::int64_t> spatial_pair(const NodeDef& node, const char* name,
                                                          bool nchw) {
  const auto& v = node.attr<std::vector<std::int64_t>>(name);
  if (v.size() != 4) {
    throw_node_error(node, std::string(name) + " must have 4 elements, got " + join_ints(v));
  }
  const std::size_t h = nchw ? 2 : 1, w = nchw ? 3 : 2, c = nchw ? 1 : 3;
  for (std::int64_t x : v) {
    if (x <= 0) throw_node_error(node, std::string(name) + " must be > 0, got " + join_ints(v));
  }
  if (v[0] != 1 || v[c] != 1) {
    throw_node_error(node, std::string("Current implementation does not yet support ") + name +
                               " in the batch and depth dimensions, got " + join_ints(v));
  }
  return {v[h], v[w]};
}

inline WindowAttrs read_window_attrs(const NodeDef& node, bool pooling) {
  WindowAttrs a;
  const std::string format =
      node.has_attr("data_format") ? node.attr<std::string>("data_format") : "NHWC";
  if (format != "NHWC" && format != "NCHW") {
    throw_node_error(node, "data_format must be NHWC or NCHW, got " + format);
  }
  a.nchw = format == "NCHW";
  std::tie(a.stride_h, a.stride_w) = spatial_pair(node, "strides", a.nchw);
  if (node.has_attr("dilations")) {
    std::tie(a.dilation_h, a.dilation_w) = spatial_pair(node, "dilations", a.nchw);
  }
  if (pooling) std::tie(a.ksize_h, a.ksize_w) = spatial_pair(node, "ksize", a.nchw);
  const std::string& padding = node.attr<std::string>("padding");
  if (padding == "VALID") {
    a.padding = Padding::kValid;
  } else if (padding == "SAME") {
    a.padding = Padding::kSame;
  } else if (padding == "EXPLICIT" && node.has_attr("explicit_paddings")) {
    a.padding = Padding::kExplicit;
    const auto& p = node.attr<std::vector<std::int64_t>>("explicit_paddings");
    if (p.size() != 8) {
      throw_node_error(node, "explicit_paddings must have 8 elements, got " + join_ints(p));
    }
    for (std::int64_t x : p) {
      if (x < 0) throw_node_error(node, "explicit_paddings must be >= 0, got " + join_ints(p));
    }
    const std::size_t h = a.nchw ? 4 : 2, w = a.nchw ? 6 : 4, c = a.nchw ? 2 : 6;
    if (p[0] || p[1] || p[c] || p[c + 1]) {
      throw_node_error(node,
                       "Nonzero explicit padding in the batch or depth dimensions is not "
                       "supported, got " +
                           join_ints(p));
    }
    a.pad_top = p[h], a.pad_bottom = p[h + 1], a.pad_left = p[w], a.pad_right = p[w + 1];
  } else {
    throw_node_error(node, "padding must be SAME, VALID or EXPLICIT, got " + padding);
  }
  return a;
}

// Output size and padding before one spatial dimension (TensorFlow's GetWindowedOutputSize):
// VALID: ceil((in - eff + 1) / stride); SAME: ceil(in / stride), the padding split with the odd
// element after; EXPLICIT: the given padding. eff = (k - 1) * dilation + 1.
struct Window {
  std::int64_t out = 0, before = 0;
};

inline Window window(const NodeDef& node, std::int64_t in, std::int64_t k, std::int64_t stride,
                     std::int64_t dilation, Padding padding, std::int64_t explicit_before,
                     std::int64_t explicit_after) {
  const std::int64_t eff = (k - 1) * dilation + 1;
  Window w;
  if (padding == Padding::kSame) {
    w.out = (in + stride - 1) / stride;
    const std::int64_t total = std::max<std::int64_t>((w.out - 1) * stride + eff - in, 0);
    w.before = total / 2;
    return w;
  }
  const std::int64_t padded =
      in + (padding == Padding::kExplicit ? explicit_before + explicit_after : 0);
  if (padded < eff) {
    throw_node_error(node,
                     "Computed output size would be negative: " + std::to_string(padded - eff + 1) +
                         " [input_size: " + std::to_string(in) + ", effective_filter_size: " +
                         std::to_string(eff) + ", stride: " + std::to_string(stride) + "]");
  }
  w.out = (padded - eff) / stride + 1;
  w.before = padding == Padding::kExplicit ? explicit_before : 0;
  return w;
}

inline void check_rank4(const NodeDef& node, const Tensor& t, const char* what) {
  if (t.ndim() != 4) {
    throw_node_error(node, std::string(what) + " must be 4-dimensional, got shape " +
                               shape_to_string(t.shape()));
  }
}

// NCHW <-> NHWC (contiguous copies; NHWC inputs are made contiguous).
inline Tensor to_nhwc(const Tensor& t, bool nchw, ThreadPool* pool) {
  return nchw ? transpose(t, {0, 2, 3, 1}, pool) : t.contiguous();
}
inline Tensor from_nhwc(const Tensor& t, bool nchw, ThreadPool* pool) {
  return nchw ? transpose(t, {0, 3, 1, 2}, pool) : t;
}
// A 4-element NHWC / NCHW shape vector (input_sizes, orig_input_shape) in NHWC order.
inline Shape nhwc_shape(const std::vector<std::int64_t>& v, bool nchw) {
  return nchw ? Shape{v[0], v[2], v[3], v[1]} : Shape{v[0], v[1], v[2], v[3]};
}

}  // namespace opweave::kernel_detail
