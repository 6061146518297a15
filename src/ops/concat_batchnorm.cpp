// com.infera.ConcatBatchNorm (ops/norm.h): the reference computes what Concat then a
// BatchNormalization compute, plane by plane from the input that holds the channel: a, b by
// bn_affine (folded in double, rounded to float), y = x a + b in float, then the activation: the
// CPU BN loop's rounding. The BatchNormalization reference keeps a, b and y in double before the
// final rounding, so the two differ in the last bits (the tests compare within 1e-4).
#include <cmath>

#include "ops/norm.h"
#include "ops/util.h"

namespace infera {
namespace {

class ConcatBatchNormKernel : public ConcatBatchNormOp {
 public:
  ConcatBatchNormKernel(const Node& n, int64_t) {
    eps_ = n.attr_float("epsilon", 1e-5f);
    bad_ = activation_from_attrs(n, act_);
    if (bad_.is_ok() && (!(eps_ >= 0) || !std::isfinite(eps_)))
      bad_ = Status::error(node_message(n, "attribute 'epsilon' must be a finite value >= 0, found %g", eps_));
  }
  Status init() const { return bad_; }

  Status infer(InferContext& ctx) const override {
    if (ctx.num_inputs() <= kFirstX) return ctx.error("expects scale, B, input_mean, input_var and at least one X");
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      if (!ctx.has_input(i)) return ctx.error("input %zu is missing", i);
      if (ctx.in(i).dtype != DataType::kFloat32)
        return ctx.error("input %zu must be float32, found %s", i, dtype_name(ctx.in(i).dtype));
    }
    Dim c = ctx.in(0).shape.rank_known && ctx.in(0).shape.rank() == 1 ? ctx.in(0).shape.dims[0] : Dim();
    for (size_t i = 0; i < kFirstX; ++i) {
      const Shape& s = ctx.in(i).shape;
      if (s.rank_known && (s.rank() != 1 || (c.known() && s.dims[0].known() && s.dims[0].value != c.value)))
        return ctx.error("input %zu must be 1-D [C], found %s", i, s.str().c_str());
    }
    std::vector<Dim> out;
    int64_t sum = 0;
    bool sum_known = true;
    for (size_t i = kFirstX; i < ctx.num_inputs(); ++i) {
      const Shape& s = ctx.in(i).shape;
      if (!s.rank_known) {
        ctx.set_output(0, DataType::kFloat32, Shape());
        return Status::ok();
      }
      if (s.rank() < 2) return ctx.error("input %zu must have rank >= 2, found %s", i, s.str().c_str());
      if (out.empty()) out = s.dims;
      if (s.rank() != static_cast<int>(out.size()))
        return ctx.error("input %zu %s has another rank than the first X", i, s.str().c_str());
      for (size_t k = 0; k < out.size(); ++k) {
        if (k == 1 || !s.dims[k].known()) continue;
        if (out[k].known() && out[k].value != s.dims[k].value)
          return ctx.error("input %zu %s differs from the first X in dim %zu", i, s.str().c_str(), k);
        out[k] = s.dims[k];
      }
      sum_known = sum_known && s.dims[1].known();
      if (s.dims[1].known()) sum += s.dims[1].value;
    }
    out[1] = sum_known ? Dim(sum) : Dim();
    if (sum_known && c.known() && c.value != sum)
      return ctx.error("the X inputs hold %lld channels, the statistics %lld", (long long)sum, (long long)c.value);
    ctx.set_output(0, DataType::kFloat32, Shape(out));
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    const int64_t C = ctx.in(0).numel();
    for (size_t i = 1; i < kFirstX; ++i)
      if (ctx.in(i).numel() != C) return ctx.error("scale, B, input_mean, input_var must have C values each");
    const TensorRef& Y = ctx.out(0);
    if (Y.rank() < 2 || Y.dims[1] != C) return ctx.error("output Y must have C = %lld channels", (long long)C);
    const int64_t N = Y.dims[0], S = C > 0 && N > 0 ? Y.numel() / (N * C) : 0;
    const float *sc = ctx.in(0).ptr<float>(), *bi = ctx.in(1).ptr<float>(), *me = ctx.in(2).ptr<float>(),
                *va = ctx.in(3).ptr<float>();
    std::vector<float> a(static_cast<size_t>(C)), b(a.size());
    bn_affine(sc, bi, me, va, eps_, C, a.data(), b.data());
    std::vector<std::pair<const float*, int64_t>> src;  // per channel: its input's plane 0, that input's C
    for (size_t i = kFirstX; i < ctx.num_inputs(); ++i) {
      const TensorRef& X = ctx.in(i);
      if (X.rank() != Y.rank() || X.dims[0] != N || (X.dims[1] > 0 && X.numel() / X.dims[1] != N * S))
        return ctx.error("input %zu does not match the output's dims", i);
      for (int64_t c = 0; c < X.dims[1]; ++c) src.emplace_back(X.ptr<float>() + c * S, X.dims[1]);
    }
    if (static_cast<int64_t>(src.size()) != C) return ctx.error("the X inputs do not hold C channels");
    float* y = Y.ptr<float>();
    parallel_for(N * C, ctx.num_threads, [&](int64_t lo, int64_t hi) {
      for (int64_t nc = lo; nc < hi; ++nc) {
        const int64_t n = nc / C, c = nc % C;
        const float* xp = src[c].first + n * src[c].second * S;
        float* yp = y + nc * S;
        for (int64_t i = 0; i < S; ++i) yp[i] = xp[i] * a[c] + b[c];
        if (!act_.is_identity()) apply_activation(act_, yp, S);
      }
    });
    return Status::ok();
  }

 private:
  Status bad_;
};

}  // namespace

void register_concat_batchnorm_ops(OpRegistry& r) {
  r.add("ConcatBatchNorm", factory_of<ConcatBatchNormKernel>(), "com.infera");
}

}  // namespace infera
