// Pad: constant, reflect, edge and (opset 19) wrap modes; pads as an attribute before
// opset 11 and an input from 11, constant_value input, axes input from 18. Negative pads crop.
#include <cstring>

#include "ops/tensor_ops.h"

namespace infera {
namespace {

enum class PadMode { kConstant, kReflect, kEdge, kWrap };

// Source index of padded coordinate i (already shifted by the begin pad) in a dim of n, or -1.
int64_t pad_source(int64_t i, int64_t n, PadMode mode) {
  if (i >= 0 && i < n) return i;
  switch (mode) {
    case PadMode::kConstant: return -1;
    case PadMode::kEdge: return i < 0 ? 0 : n - 1;
    case PadMode::kWrap: return ((i % n) + n) % n;
    case PadMode::kReflect: {
      if (n == 1) return 0;
      const int64_t period = 2 * (n - 1);
      int64_t m = ((i % period) + period) % period;
      return m < n ? m : period - m;
    }
  }
  return -1;
}

class PadKernel : public OpKernel {
 public:
  PadKernel(const Node& n, int64_t opset) : opset_(opset), value_(n.attr_float("value", 0.f)) {
    std::string mode = n.attr_string("mode", "constant");
    if (mode == "constant")
      mode_ = PadMode::kConstant;
    else if (mode == "reflect")
      mode_ = PadMode::kReflect;
    else if (mode == "edge")
      mode_ = PadMode::kEdge;
    else if (mode == "wrap" && opset >= 19)
      mode_ = PadMode::kWrap;
    else
      bad_ = Status::error(node_message(n, "attribute 'mode' must be constant, reflect, edge%s; found '%s'",
                                        opset >= 19 ? " or wrap" : "", mode.c_str()));
    if (opset < 11) {
      if (!n.has_attr("pads")) bad_ = Status::error(node_message(n, "attribute 'pads' is required"));
      pads_ = n.attr_ints("pads");
    } else if (n.has_attr("pads")) {
      bad_ = Status::error(node_message(n, "'pads' is an input from opset 11 on; found the attribute"));
    }
  }
  Status init() { return bad_; }

  // Per-dim begin/end pads for a rank from pads (and axes); an error when they do not fit.
  template <class Ctx>
  Status full_pads(const Ctx& ctx, int64_t rank, const std::vector<int64_t>& pads, const std::vector<int64_t>* axes_in,
                   std::vector<int64_t>& begin, std::vector<int64_t>& end) const {
    std::vector<int64_t> axes;
    if (axes_in) {
      axes = *axes_in;
      for (int64_t& a : axes)
        if (!normalize_axis(a, rank))
          return ctx.error("'axes' %s out of range for rank %lld", ints_str(*axes_in).c_str(), (long long)rank);
    } else {
      for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
    }
    const size_t na = axes.size();
    if (pads.size() != 2 * na)
      return ctx.error("'pads' %s must have %zu values (2 per padded axis), found %zu", ints_str(pads).c_str(), 2 * na,
                       pads.size());
    begin.assign(rank, 0);
    end.assign(rank, 0);
    for (size_t i = 0; i < na; ++i) {
      if (pads[i] < -(int64_t(1) << 40) || pads[i] > (int64_t(1) << 40) || pads[na + i] < -(int64_t(1) << 40) ||
          pads[na + i] > (int64_t(1) << 40))
        return ctx.error("'pads' %s has a value beyond 2^40", ints_str(pads).c_str());
      begin[axes[i]] = pads[i];
      end[axes[i]] = pads[na + i];
    }
    return Status::ok();
  }

  Status infer(InferContext& ctx) const override {
    const ValueInfo& x = ctx.in(0);
    std::vector<int64_t> pads = pads_, axes;
    bool known = true, has_axes = false;
    if (opset_ >= 11) {
      if (!ctx.has_input(1)) return ctx.error("input 'pads' is required");
      Status s = expect_dtype(ctx, 1, "pads", {DataType::kInt64});
      if (!s.is_ok()) return s;
      known = known_ints(ctx, 1, pads);
      if (ctx.has_input(2) && ctx.in(2).dtype != x.dtype && ctx.in(2).dtype != DataType::kUndefined)
        return ctx.error("input 'constant_value' has dtype %s, expected %s like 'data'", dtype_name(ctx.in(2).dtype),
                         dtype_name(x.dtype));
      if (opset_ >= 18 && ctx.has_input(3)) {
        has_axes = true;
        s = expect_dtype(ctx, 3, "axes", {DataType::kInt32, DataType::kInt64});
        if (!s.is_ok()) return s;
        known = known && known_ints(ctx, 3, axes);
      }
    }
    if (!x.shape.rank_known) {
      ctx.set_output(0, x.dtype, Shape());
      return Status::ok();
    }
    const int64_t r = x.shape.rank();
    if (!known) {
      ctx.set_output(0, x.dtype, Shape::of_rank(r));
      return Status::ok();
    }
    std::vector<int64_t> b, e;
    Status s = full_pads(ctx, r, pads, has_axes ? &axes : nullptr, b, e);
    if (!s.is_ok()) return s;
    std::vector<Dim> out(r);
    for (int64_t i = 0; i < r; ++i) {
      const Dim& d = x.shape.dims[i];
      if (b[i] == 0 && e[i] == 0) {
        out[i] = d;
        continue;
      }
      if (!d.known()) continue;
      const int64_t o = d.value + b[i] + e[i];
      if (o < 0)
        return ctx.error("'pads' %s crop axis %lld of input shape %s below zero", ints_str(pads).c_str(), (long long)i,
                         x.shape.str().c_str());
      if (d.value == 0 && o > 0 && mode_ != PadMode::kConstant)
        return ctx.error("cannot pad the empty axis %lld of input shape %s in a non-constant mode", (long long)i,
                         x.shape.str().c_str());
      out[i] = Dim(o);
    }
    Shape os(std::move(out));
    s = check_output_size(ctx, os);
    if (!s.is_ok()) return s;
    ctx.set_output(0, x.dtype, std::move(os));
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    const TensorRef& x = ctx.in(0);
    TensorRef& y = ctx.out(0);
    const size_t es = dtype_size(x.dtype);
    std::vector<int64_t> pads = pads_, axes;
    bool has_axes = false;
    if (opset_ >= 11) {
      if (!read_ints(ctx.in(1), pads)) return ctx.error("input 'pads' must be int64");
      if (opset_ >= 18 && ctx.has_input(3)) {
        has_axes = true;
        if (!read_ints(ctx.in(3), axes)) return ctx.error("input 'axes' must be int32 or int64");
      }
    }
    std::vector<int64_t> b, e;
    Status s = full_pads(ctx, x.rank(), pads, has_axes ? &axes : nullptr, b, e);
    if (!s.is_ok()) return s;
    // The fill element, as bytes of the data type.
    alignas(8) uint8_t fill[8] = {0};
    if (opset_ >= 11 && ctx.has_input(2) && ctx.in(2).numel() > 0) {
      if (ctx.in(2).dtype != x.dtype) return ctx.error("input 'constant_value' dtype differs from 'data'");
      std::memcpy(fill, ctx.in(2).data, es);
    } else if (opset_ < 11 && value_ != 0) {
      if (!dispatch(x.dtype, TypeSet::kAll, [&](auto tag) {
            using T = typename decltype(tag)::type;
            T v = static_cast<T>(value_);
            std::memcpy(fill, &v, sizeof(T));
          }))
        return ctx.error("attribute 'value' cannot be used with data of dtype %s", dtype_name(x.dtype));
    }
    const int r = x.rank();
    for (int i = 0; i < r; ++i)
      if (y.dims[i] != x.dims[i] + b[i] + e[i]) return ctx.error("output shape does not match the pads");
    int64_t total = y.numel();
    if (total == 0) return Status::ok();
    if (r == 0) {
      std::memcpy(y.data, x.data, es);
      return Status::ok();
    }
    // Source index per output coordinate of each dim (-1: the fill value).
    std::vector<std::vector<int64_t>> map(r);
    for (int k = 0; k < r; ++k) {
      map[k].resize(y.dims[k]);
      for (int64_t o = 0; o < y.dims[k]; ++o) map[k][o] = x.dims[k] == 0 ? -1 : pad_source(o - b[k], x.dims[k], mode_);
    }
    const std::vector<int64_t> st = strides_of(x.dims);
    const int64_t n = y.dims[r - 1], rows = total / n;
    const auto* src = static_cast<const uint8_t*>(x.data);
    auto* dst = static_cast<uint8_t*>(y.data);
    dispatch_by_size(es, [&](auto tag) {
      using T = typename decltype(tag)::type;
      T fv;
      std::memcpy(&fv, fill, sizeof(T));
      const int nt = total >= (1 << 16) ? ctx.num_threads : 1;
      parallel_for(rows, nt, [&](int64_t rb, int64_t re) {
        for (int64_t row = rb; row < re; ++row) {
          int64_t rem = row, off = 0;
          bool constant = false;
          for (int k = r - 2; k >= 0; --k) {
            const int64_t o = rem % y.dims[k];
            rem /= y.dims[k];
            const int64_t m = map[k][o];
            if (m < 0)
              constant = true;
            else
              off += m * st[k];
          }
          T* out = reinterpret_cast<T*>(dst) + row * n;
          const T* in = reinterpret_cast<const T*>(src) + off;
          const std::vector<int64_t>& last = map[r - 1];
          if (constant) {
            for (int64_t j = 0; j < n; ++j) out[j] = fv;
          } else {
            for (int64_t j = 0; j < n; ++j) out[j] = last[j] < 0 ? fv : in[last[j]];
          }
        }
      });
    });
    return Status::ok();
  }

 private:
  int64_t opset_;
  float value_;
  PadMode mode_ = PadMode::kConstant;
  std::vector<int64_t> pads_;
  Status bad_;
};

}  // namespace

void register_pad_ops(OpRegistry& r) { r.add("Pad", factory_of<PadKernel>()); }

}  // namespace infera
