// The Conv / ConvTranspose shape rules declared in conv.h: attribute parsing and output
// size / padding resolution, shared by the reference kernels, pooling and the backends.
#include <algorithm>

#include "ops/conv.h"
#include "ops/op.h"

namespace infera {

// ---------------------------------------------------------------- attributes

static constexpr int64_t kMaxAttr = int64_t(1) << 31;  // keeps (k-1)*d+1 and in+pads far from overflow
static constexpr int64_t kMaxDim = int64_t(1) << 40;   // spatial sizes (and their products with strides)

bool parse_auto_pad(const std::string& s, AutoPad& out) {
  if (s.empty() || s == "NOTSET")
    out = AutoPad::kNotSet;
  else if (s == "SAME_UPPER")
    out = AutoPad::kSameUpper;
  else if (s == "SAME_LOWER")
    out = AutoPad::kSameLower;
  else if (s == "VALID")
    out = AutoPad::kValid;
  else
    return false;
  return true;
}

// Reads an ints attribute whose values must lie in [lo, kMaxAttr].
Status read_window_ints(const Node& n, const char* name, int64_t lo, std::vector<int64_t>& out) {
  out.clear();
  auto it = n.attrs.find(name);
  if (it == n.attrs.end()) return Status::ok();
  if (it->second.kind != Attribute::kInts && !(it->second.kind == Attribute::kUndefined && it->second.ints.empty()))
    return Status::error(node_message(n, "attribute '%s' must be a list of ints", name));
  out = it->second.ints;
  for (int64_t v : out)
    if (v < lo || v > kMaxAttr)
      return Status::error(node_message(n, "attribute '%s' must be %s (and at most 2^31), found %lld", name,
                                        lo > 0 ? "positive" : "non-negative", static_cast<long long>(v)));
  return Status::ok();
}

Status window_attrs_parse(const Node& n, WindowAttrs& a, bool kernel_required) {
  Status s = read_window_ints(n, "kernel_shape", 1, a.kernel_shape);
  if (s.is_ok()) s = read_window_ints(n, "strides", 1, a.strides);
  if (s.is_ok()) s = read_window_ints(n, "dilations", 1, a.dilations);
  if (s.is_ok()) s = read_window_ints(n, "pads", 0, a.pads);
  if (!s.is_ok()) return s;
  if (kernel_required && a.kernel_shape.empty())
    return Status::error(node_message(n, "attribute 'kernel_shape' is required (one value per spatial dim)"));
  std::string ap = n.attr_string("auto_pad", "NOTSET");
  if (!parse_auto_pad(ap, a.auto_pad))
    return Status::error(node_message(n,
                                      "attribute 'auto_pad' must be NOTSET, SAME_UPPER, SAME_LOWER or VALID, "
                                      "found '%s'",
                                      ap.c_str()));
  if (a.pads.size() % 2 != 0)
    return Status::error(
        node_message(n, "attribute 'pads' must have an even length (begins then ends), found %zu", a.pads.size()));
  // The lengths that are given must agree with each other.
  size_t k = !a.kernel_shape.empty() ? a.kernel_shape.size()
             : !a.strides.empty()    ? a.strides.size()
             : !a.dilations.empty()  ? a.dilations.size()
                                     : a.pads.size() / 2;
  auto check_len = [&](const char* name, const std::vector<int64_t>& v, size_t want) -> Status {
    if (!v.empty() && v.size() != want)
      return Status::error(node_message(n, "attribute '%s' must have %zu values (one per spatial dim%s), found %zu",
                                        name, want, want == 2 * k ? ", begins then ends" : "", v.size()));
    return Status::ok();
  };
  s = check_len("strides", a.strides, k);
  if (s.is_ok()) s = check_len("dilations", a.dilations, k);
  if (s.is_ok()) s = check_len("pads", a.pads, 2 * k);
  return s;
}

Status conv_attrs_parse(const Node& n, ConvAttrs& a) {
  Status s = window_attrs_parse(n, a, false);
  if (!s.is_ok()) return s;
  a.group = n.attr_int("group", 1);
  if (a.group < 1 || a.group > kMaxAttr)
    return Status::error(node_message(n, "attribute 'group' must be positive, found %lld", (long long)a.group));
  return Status::ok();
}

Status conv_transpose_attrs_parse(const Node& n, ConvTransposeAttrs& a) {
  Status s = conv_attrs_parse(n, a);
  if (s.is_ok()) s = read_window_ints(n, "output_padding", 0, a.output_padding);
  if (s.is_ok()) s = read_window_ints(n, "output_shape", 1, a.output_shape);
  return s;
}

// ---------------------------------------------------------------- shape rules

static int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

bool conv_out_dim(int64_t in, int64_t k, int64_t s, int64_t d, AutoPad ap, bool ceil_mode, int64_t& pb, int64_t& pe,
                  int64_t& out) {
  if (in < 0 || in > kMaxDim || k < 1 || s < 1 || d < 1 || k > kMaxAttr || s > kMaxAttr || d > kMaxAttr) return false;
  const int64_t ek = (k - 1) * d + 1;
  if (ap == AutoPad::kSameUpper || ap == AutoPad::kSameLower) {
    out = (in + s - 1) / s;
    int64_t total = std::max<int64_t>(0, (out - 1) * s + ek - in);
    if (ap == AutoPad::kSameUpper) {
      pb = total / 2;
      pe = total - pb;
    } else {
      pe = total / 2;
      pb = total - pe;
    }
    return out >= 1;
  }
  if (ap == AutoPad::kValid) pb = pe = 0;
  if (pb < 0 || pe < 0 || pb > kMaxAttr || pe > kMaxAttr) return false;
  const int64_t span = in + pb + pe - ek;
  if (span < 0) return false;
  if (ceil_mode) {
    out = (span + s - 1) / s + 1;
    if ((out - 1) * s >= in + pb) --out;  // the last window must start inside the input or the begin pad
  } else {
    out = span / s + 1;
  }
  return out >= 1;
}

static std::string dims_str(const std::vector<int64_t>& d) { return Shape::of(d).str(); }

Status conv_resolve(const ConvAttrs& a, const std::vector<int64_t>& x, const std::vector<int64_t>& w,
                    std::vector<int64_t>& pads_out, std::vector<int64_t>& y) {
  const size_t r = x.size();
  if (r < 3) return Status::error("input X must have rank >= 3 (N, C, spatial...), found " + dims_str(x));
  if (w.size() != r) return Status::error("weight W must have the rank of X " + dims_str(x) + ", found " + dims_str(w));
  const size_t k = r - 2;
  if (!a.kernel_shape.empty() && a.kernel_shape.size() != k)
    return Status::error("attribute 'kernel_shape' has " + std::to_string(a.kernel_shape.size()) + " values, input X " +
                         dims_str(x) + " has " + std::to_string(k) + " spatial dims");
  if ((!a.strides.empty() && a.strides.size() != k) || (!a.dilations.empty() && a.dilations.size() != k) ||
      (!a.pads.empty() && a.pads.size() != 2 * k))
    return Status::error("attributes strides/dilations/pads do not match the " + std::to_string(k) +
                         " spatial dims of input X " + dims_str(x));
  const int64_t g = a.group;
  if (g < 1 || x[1] % g != 0 || w[1] * g != x[1])
    return Status::error("input X " + dims_str(x) + " has " + std::to_string(x[1]) +
                         " channels; expected W dim 1 x group = " + std::to_string(w[1]) + " x " + std::to_string(g));
  if (w[0] % g != 0)
    return Status::error("weight W " + dims_str(w) + " output channels must be a multiple of group " +
                         std::to_string(g));
  pads_out.assign(2 * k, 0);
  y.assign(r, 0);
  y[0] = x[0];
  y[1] = w[0];
  for (size_t i = 0; i < k; ++i) {
    int64_t kk = a.kernel_shape.empty() ? w[2 + i] : a.kernel_shape[i];
    if (kk != w[2 + i])
      return Status::error("attribute 'kernel_shape' " + dims_str(a.kernel_shape) + " does not match weight W " +
                           dims_str(w));
    int64_t s = a.strides.empty() ? 1 : a.strides[i];
    int64_t d = a.dilations.empty() ? 1 : a.dilations[i];
    int64_t pb = a.pads.empty() ? 0 : a.pads[i], pe = a.pads.empty() ? 0 : a.pads[k + i];
    int64_t o = 0;
    if (!conv_out_dim(x[2 + i], kk, s, d, a.auto_pad, false, pb, pe, o))
      return Status::error("spatial dim " + std::to_string(i) + " of input X " + dims_str(x) + " (" +
                           std::to_string(x[2 + i]) + " + pads) is smaller than the dilated kernel " +
                           std::to_string((kk - 1) * d + 1));
    pads_out[i] = pb;
    pads_out[k + i] = pe;
    y[2 + i] = o;
  }
  return Status::ok();
}

Status conv_transpose_resolve(const ConvTransposeAttrs& a, const std::vector<int64_t>& x, const std::vector<int64_t>& w,
                              std::vector<int64_t>& pads_out, std::vector<int64_t>& y) {
  const size_t r = x.size();
  if (r < 3) return Status::error("input X must have rank >= 3 (N, C, spatial...), found " + dims_str(x));
  if (w.size() != r) return Status::error("weight W must have the rank of X " + dims_str(x) + ", found " + dims_str(w));
  const size_t k = r - 2;
  if ((!a.kernel_shape.empty() && a.kernel_shape.size() != k) || (!a.strides.empty() && a.strides.size() != k) ||
      (!a.dilations.empty() && a.dilations.size() != k) || (!a.pads.empty() && a.pads.size() != 2 * k) ||
      (!a.output_padding.empty() && a.output_padding.size() != k))
    return Status::error("attributes kernel_shape/strides/dilations/pads/output_padding do not match the " +
                         std::to_string(k) + " spatial dims of input X " + dims_str(x));
  std::vector<int64_t> oshape = a.output_shape;
  if (oshape.size() == r) oshape.erase(oshape.begin(), oshape.begin() + 2);
  if (!oshape.empty() && oshape.size() != k)
    return Status::error("attribute 'output_shape' " + dims_str(a.output_shape) + " does not match the " +
                         std::to_string(k) + " spatial dims of input X " + dims_str(x));
  const int64_t g = a.group;
  if (g < 1 || x[1] % g != 0 || w[0] != x[1])
    return Status::error("input X " + dims_str(x) + " has " + std::to_string(x[1]) + " channels; expected W dim 0 = " +
                         std::to_string(w[0]) + " and a multiple of group " + std::to_string(g));
  if (w[1] > (int64_t(1) << 40) / g) return Status::error("weight W " + dims_str(w) + " x group is too large");
  pads_out.assign(2 * k, 0);
  y.assign(r, 0);
  y[0] = x[0];
  y[1] = w[1] * g;
  for (size_t i = 0; i < k; ++i) {
    int64_t kk = a.kernel_shape.empty() ? w[2 + i] : a.kernel_shape[i];
    if (kk != w[2 + i])
      return Status::error("attribute 'kernel_shape' " + dims_str(a.kernel_shape) + " does not match weight W " +
                           dims_str(w));
    int64_t s = a.strides.empty() ? 1 : a.strides[i];
    int64_t d = a.dilations.empty() ? 1 : a.dilations[i];
    int64_t op = a.output_padding.empty() ? 0 : a.output_padding[i];
    int64_t in = x[2 + i];
    if (in < 1) return Status::error("spatial dim " + std::to_string(i) + " of input X " + dims_str(x) + " is empty");
    if (in > kMaxDim / s) return Status::error("input X " + dims_str(x) + " x strides is too large");
    const int64_t natural = s * (in - 1) + op + (kk - 1) * d + 1;  // output size with no padding
    int64_t pb = 0, pe = 0, o = 0;
    const bool same = a.auto_pad == AutoPad::kSameUpper || a.auto_pad == AutoPad::kSameLower;
    if (!oshape.empty() || same) {
      // Pads are generated so that the output has the requested size (spec: ConvTranspose).
      o = !oshape.empty() ? oshape[i] : in * s;
      int64_t total = natural - o;
      if (a.auto_pad == AutoPad::kSameUpper) {
        pb = floor_div(total, 2);
        pe = total - pb;
      } else {
        pe = floor_div(total, 2);
        pb = total - pe;
      }
    } else {
      if (a.auto_pad != AutoPad::kValid && !a.pads.empty()) {
        pb = a.pads[i];
        pe = a.pads[k + i];
      }
      o = natural - pb - pe;
    }
    if (o < 1)
      return Status::error("output spatial dim " + std::to_string(i) + " would be " + std::to_string(o) +
                           " for input X " + dims_str(x) + " (pads larger than the output)");
    pads_out[i] = pb;
    pads_out[k + i] = pe;
    y[2 + i] = o;
  }
  return Status::ok();
}

}  // namespace infera
