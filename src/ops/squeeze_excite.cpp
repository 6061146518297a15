// com.infera.SqueezeExcite (ops/squeeze_excite.h). The reference rounds where the unfused graph
// does: the mean, each hidden value after its activation and each gate value are floats; the
// sums behind them are taken in double, so a NaN or Inf in X, a weight or a bias reaches the
// outputs it reaches in the unfused graph.
#include "ops/squeeze_excite.h"

#include <vector>

#include "ops/util.h"

namespace infera {
namespace {

class SqueezeExciteKernel : public SqueezeExciteOp {
 public:
  SqueezeExciteKernel(const Node& n, int64_t) {
    bad_ = activation_from_attrs(n, act_);
    if (bad_.is_ok()) bad_ = activation_from_attrs(n, gate_, "gate");
  }
  Status init() const { return bad_; }

  Status infer(InferContext& ctx) const override {
    if (!ctx.has_input(0) || !ctx.has_input(1) || !ctx.has_input(3)) return ctx.error("expects inputs X, W1 and W2");
    const ValueInfo& x = ctx.in(0);
    if (x.dtype != DataType::kFloat32) return ctx.error("input X must be float32, found %s", dtype_name(x.dtype));
    for (size_t i = 1; i < 5; ++i)
      if (ctx.has_input(i) && ctx.in(i).dtype != DataType::kFloat32)
        return ctx.error("input %zu must be float32, found %s", i, dtype_name(ctx.in(i).dtype));
    const Shape &w1 = ctx.in(1).shape, &w2 = ctx.in(3).shape;
    if (!w1.fully_known() || !w2.fully_known() || w1.rank() != 4 || w2.rank() != 4)
      return ctx.error("W1 and W2 must be known 4-D shapes, found %s and %s", w1.str().c_str(), w2.str().c_str());
    const int64_t r = w1.dims[0].value, c = w1.dims[1].value;
    if (w2.dims[0].value != c || w2.dims[1].value != r || w1.dims[2].value != 1 || w1.dims[3].value != 1 ||
        w2.dims[2].value != 1 || w2.dims[3].value != 1)
      return ctx.error("W1 %s and W2 %s are not [R, C, 1, 1] and [C, R, 1, 1]", w1.str().c_str(), w2.str().c_str());
    if (Status s = check_vector_inputs(ctx, {{2, r}, {4, c}}); !s.is_ok()) return s;
    if (!x.shape.rank_known) {
      ctx.set_output(0, DataType::kFloat32, Shape::unknown());
      return Status::ok();
    }
    if (x.shape.rank() != 4) return ctx.error("input X must be 4-D, found %s", x.shape.str().c_str());
    if (x.shape.dims[1].known() && x.shape.dims[1].value != c)
      return ctx.error("X has %lld channels, W1 takes %lld", (long long)x.shape.dims[1].value, (long long)c);
    ctx.set_output(0, DataType::kFloat32, Shape({x.shape.dims[0], Dim(c), Dim(1), Dim(1)}));
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    const TensorRef &x = ctx.in(0), &w1 = ctx.in(1), &w2 = ctx.in(3);
    if (x.rank() != 4 || w1.rank() != 4 || w2.rank() != 4) return ctx.error("X, W1 and W2 must be 4-D");
    const int64_t n = x.dims[0], c = x.dims[1], hw = x.dims[2] * x.dims[3], r = w1.dims[0];
    if (w1.dims[1] != c || w2.dims[0] != c || w2.dims[1] != r) return ctx.error("weights do not match X");
    const float* b1 = ctx.has_input(2) ? ctx.in(2).ptr<float>() : nullptr;
    const float* b2 = ctx.has_input(4) ? ctx.in(4).ptr<float>() : nullptr;
    if ((b1 && ctx.in(2).numel() != r) || (b2 && ctx.in(4).numel() != c)) return ctx.error("bias sizes do not match");
    TensorRef& s = ctx.out(0);
    if (s.numel() != n * c)
      return ctx.error("output S has %lld values, expected %lld", (long long)s.numel(), (long long)(n * c));
    const float *px = x.ptr<float>(), *pw1 = w1.ptr<float>(), *pw2 = w2.ptr<float>();
    float* ps = s.ptr<float>();
    parallel_for(n, ctx.num_threads, [&](int64_t b, int64_t e) {
      std::vector<float> m(static_cast<size_t>(c)), h(static_cast<size_t>(r));
      for (int64_t i = b; i < e; ++i) {
        for (int64_t k = 0; k < c; ++k) {
          const float* p = px + (i * c + k) * hw;
          double sum = 0;
          for (int64_t j = 0; j < hw; ++j) sum += p[j];
          m[k] = static_cast<float>(hw > 0 ? sum / static_cast<double>(hw) : 0.0);
        }
        for (int64_t j = 0; j < r; ++j) {
          double sum = b1 ? b1[j] : 0.0;
          for (int64_t k = 0; k < c; ++k) sum += static_cast<double>(pw1[j * c + k]) * m[k];
          h[j] = activation_ref(act_, static_cast<float>(sum));
        }
        for (int64_t k = 0; k < c; ++k) {
          double sum = b2 ? b2[k] : 0.0;
          for (int64_t j = 0; j < r; ++j) sum += static_cast<double>(pw2[k * r + j]) * h[j];
          ps[i * c + k] = activation_ref(gate_, static_cast<float>(sum));
        }
      }
    });
    return Status::ok();
  }

 private:
  Status bad_;
};

}  // namespace

void register_squeeze_excite_ops(OpRegistry& r) {
  r.add("SqueezeExcite", factory_of<SqueezeExciteKernel>(), "com.infera");
}

}  // namespace infera
