// LayerNormalization (ONNX opset 17; also com.infera.LayerNormalization, which the
// fuse_layer_norm pass makes from PyTorch's decomposed export at any opset): normalizes over
// the dims from `axis` on, then scales and shifts with Scale and B broadcast to those dims.
#include <cmath>

#include "ops/util.h"

namespace infera {

namespace {

class LayerNormKernel : public OpKernel {
 public:
  LayerNormKernel(const Node& n, int64_t opset)
      : axis_(n.attr_int("axis", -1)), epsilon_(n.attr_float("epsilon", 1e-5f)) {
    if (n.domain.empty() && opset < 17)
      bad_ = Status::error(node_message(n, "LayerNormalization needs opset 17 or later, the model has %lld",
                                        static_cast<long long>(opset)));
    else if (n.attr_int("stash_type", 1) != 1)
      bad_ = Status::error(node_message(n, "attribute 'stash_type' %lld is not supported (1: float32 statistics)",
                                        static_cast<long long>(n.attr_int("stash_type", 1))));
    else if (!(epsilon_ > 0) || !std::isfinite(epsilon_))
      bad_ = Status::error(node_message(n, "attribute 'epsilon' must be positive, found %g", epsilon_));
  }
  Status init() { return bad_; }

  Status infer(InferContext& ctx) const override {
    if (!ctx.has_input(0) || !ctx.has_input(1)) return ctx.error("expects inputs X and Scale");
    const ValueInfo& x = ctx.in(0);
    if (x.dtype != DataType::kFloat32 && x.dtype != DataType::kFloat64)
      return ctx.error("input X must be float32 or float64, found %s", dtype_name(x.dtype));
    for (size_t i = 1; i < 3; ++i)
      if (ctx.has_input(i) && ctx.in(i).dtype != x.dtype)
        return ctx.error("input %zu has dtype %s, expected %s like X", i, dtype_name(ctx.in(i).dtype),
                         dtype_name(x.dtype));
    ctx.set_output(0, x.dtype, x.shape);
    if (!x.shape.rank_known) {
      for (size_t o = 1; o < 3; ++o) ctx.set_output(o, DataType::kFloat32, Shape::unknown());
      return Status::ok();
    }
    int64_t axis = axis_;
    if (!normalize_axis(axis, x.shape.rank()))
      return ctx.error("attribute 'axis' %lld is out of range for input X of rank %d", (long long)axis_,
                       x.shape.rank());
    // Scale and B broadcast unidirectionally to X's dims from axis on.
    std::vector<Dim> tail(x.shape.dims.begin() + axis, x.shape.dims.end());
    for (size_t i = 1; i < 3; ++i) {
      if (!ctx.has_input(i) || !ctx.in(i).shape.rank_known) continue;
      const Shape& s = ctx.in(i).shape;
      bool ok = s.rank() <= static_cast<int>(tail.size());
      for (int k = 0; ok && k < s.rank(); ++k) {
        const Dim& d = s.dims[s.rank() - 1 - k];
        const Dim& t = tail[tail.size() - 1 - k];
        if (d.known() && d.value != 1 && t.known() && d.value != t.value) ok = false;
      }
      if (!ok)
        return ctx.error("input %s %s does not broadcast to X's normalized dims %s", i == 1 ? "Scale" : "B",
                         s.str().c_str(), Shape(tail).str().c_str());
    }
    Shape stats = x.shape;
    for (size_t d = axis; d < stats.dims.size(); ++d) stats.dims[d] = Dim(1);
    for (size_t o = 1; o < 3; ++o) ctx.set_output(o, DataType::kFloat32, stats);  // stash_type 1
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    const TensorRef& x = ctx.in(0);
    int64_t axis = axis_;
    if (!normalize_axis(axis, x.rank())) return ctx.error("attribute 'axis' is out of range");
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < x.rank(); ++d) (d < axis ? outer : inner) *= x.dims[d];
    const std::vector<int64_t> tail(x.dims.begin() + axis, x.dims.end());
    bool ok = dispatch_floats(x.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      std::vector<T> scale = expand<T>(ctx.in(1), tail, T(1));
      std::vector<T> bias = ctx.has_input(2) ? expand<T>(ctx.in(2), tail, T(0)) : std::vector<T>(inner, T(0));
      const T* xp = x.ptr<T>();
      T* yp = ctx.out(0).ptr<T>();
      float* mean_out = ctx.has_output(1) ? ctx.out(1).ptr<float>() : nullptr;
      float* inv_out = ctx.has_output(2) ? ctx.out(2).ptr<float>() : nullptr;
      parallel_for(outer, ctx.num_threads, [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) {
          const T* row = xp + r * inner;
          T* out = yp + r * inner;
          double sum = 0;
          for (int64_t i = 0; i < inner; ++i) sum += row[i];
          const double mean = inner ? sum / inner : 0;
          double sq = 0;
          for (int64_t i = 0; i < inner; ++i) sq += (row[i] - mean) * (row[i] - mean);
          const double inv = 1.0 / std::sqrt((inner ? sq / inner : 0) + epsilon_);
          const T m = static_cast<T>(mean), s = static_cast<T>(inv);
          for (int64_t i = 0; i < inner; ++i) out[i] = (row[i] - m) * s * scale[i] + bias[i];
          if (mean_out) mean_out[r] = static_cast<float>(mean);
          if (inv_out) inv_out[r] = static_cast<float>(inv);
        }
      });
    });
    if (!ok) return ctx.error("unsupported dtype %s", dtype_name(x.dtype));
    return Status::ok();
  }

 private:
  // Scale/B broadcast to the normalized dims, as a dense vector.
  template <class T>
  static std::vector<T> expand(const TensorRef& t, const std::vector<int64_t>& tail, T fill) {
    int64_t n = 1;
    for (int64_t d : tail) n *= d;
    std::vector<T> out(static_cast<size_t>(n), fill);
    std::vector<int64_t> st = broadcast_strides(t.dims, tail), idx(tail.size(), 0);
    for (int64_t i = 0; i < n; ++i) {
      int64_t off = 0;
      for (size_t d = 0; d < tail.size(); ++d) off += idx[d] * st[d];
      out[i] = t.ptr<T>()[off];
      for (int d = static_cast<int>(tail.size()) - 1; d >= 0; --d) {
        if (++idx[d] < tail[d]) break;
        idx[d] = 0;
      }
    }
    return out;
  }

  int64_t axis_;
  float epsilon_;
  Status bad_;
};

}  // namespace

void register_layer_norm_ops(OpRegistry& r) {
  r.add("LayerNormalization", factory_of<LayerNormKernel>());
  r.add("LayerNormalization", factory_of<LayerNormKernel>(), "com.infera");
}

}  // namespace infera
