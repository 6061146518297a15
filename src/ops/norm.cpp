// BatchNormalization (inference, opset 7 'spatial', opset 14+ training_mode statistics),
// InstanceNormalization and LRN: attributes, shape inference, reference kernels.
#include <cmath>

#include "ops/norm.h"
#include "ops/util.h"

namespace infera {

namespace {

bool is_f32_or_f64(DataType dt) { return dt == DataType::kFloat32 || dt == DataType::kFloat64; }

// Reads a float32/float64 tensor into doubles.
bool read_f64(const TensorRef& t, std::vector<double>& out) {
  out.resize(static_cast<size_t>(t.numel()));
  return dispatch_floats(t.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<double>(t.ptr<T>()[i]);
  });
}

bool write_f64(TensorRef& t, const std::vector<double>& v) {
  if (static_cast<size_t>(t.numel()) != v.size()) return false;
  return dispatch_floats(t.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (size_t i = 0; i < v.size(); ++i) t.ptr<T>()[i] = static_cast<T>(v[i]);
  });
}

// Channel dim C of X (1 for a 1-D input, as the BatchNormalization spec allows).
Dim channel_dim(const Shape& x) { return x.rank() >= 2 ? x.dims[1] : Dim(1); }

// ---------------------------------------------------------------- BatchNormalization

class BatchNormKernel : public BatchNormOp {
 public:
  BatchNormKernel(const Node& n, int64_t opset, bool fused = false) : opset_(opset) {
    fused_ = fused;
    if (fused) init_ = activation_from_attrs(n, act_);
    eps_ = n.attr_float("epsilon", 1e-5f);
    momentum_ = n.attr_float("momentum", 0.9f);
    int64_t tm = opset >= 14 ? n.attr_int("training_mode", 0) : 0;
    int64_t sp = opset < 9 ? n.attr_int("spatial", 1) : 1;
    if (!init_.is_ok())
      return;
    else if (!(eps_ >= 0) || !std::isfinite(eps_))
      init_ = Status::error(node_message(n, "attribute 'epsilon' must be a finite value >= 0, found %g", eps_));
    else if (tm != 0 && tm != 1)
      init_ = Status::error(node_message(n, "attribute 'training_mode' must be 0 or 1, found %lld", (long long)tm));
    else if (sp != 0 && sp != 1)
      init_ = Status::error(node_message(n, "attribute 'spatial' must be 0 or 1, found %lld", (long long)sp));
    // Before opset 14 the extra outputs (mean, var, saved_mean, saved_var) select training mode.
    int present = 0;
    for (size_t i = 1; i < n.outputs.size(); ++i) present += n.outputs[i] >= 0;
    training_ = opset >= 14 ? tm == 1 : present > 0;
    spatial_ = sp == 1;
    if (fused && init_.is_ok() && (training_ || present > 0))
      init_ = Status::error(node_message(n, "FusedBatchNorm is the inference form: one output, no training_mode"));
  }
  BatchNormKernel(const BatchNormOp& bn, Activation act) : opset_(15) {
    eps_ = bn.epsilon();
    spatial_ = bn.spatial();
    fused_ = true;
    act_ = act;
  }
  Status init() const { return init_; }

  Status infer(InferContext& ctx) const override {
    static const char* names[] = {"X", "scale", "B", "input_mean", "input_var"};
    for (size_t i = 0; i < 5; ++i) {
      if (!ctx.has_input(i)) return ctx.error("input %s is required (5 inputs), missing", names[i]);
      if (!is_f32_or_f64(ctx.in(i).dtype))
        return ctx.error("input %s must be float32 or float64, found %s", names[i], dtype_name(ctx.in(i).dtype));
    }
    const Shape& xs = ctx.in(0).shape;
    if (xs.rank_known && xs.rank() < 1) return ctx.error("input X must have rank >= 1, found a scalar");
    Dim c = xs.rank_known ? channel_dim(xs) : Dim();
    for (size_t i = 1; i < 5; ++i) {
      const Shape& ps = ctx.in(i).shape;
      if (!ps.rank_known) continue;
      if (spatial_ || training_) {
        if (ps.rank() != 1) return ctx.error("input %s must be 1-D [C], found %s", names[i], ps.str().c_str());
        if (c.known() && ps.dims[0].known() && ps.dims[0].value != c.value)
          return ctx.error("input %s %s must have C = %lld values (dim 1 of X %s)", names[i], ps.str().c_str(),
                           (long long)c.value, xs.str().c_str());
      } else if (ps.fully_known() && xs.fully_known()) {
        // spatial = 0: one value per channel or per (channel, spatial position).
        std::vector<int64_t> x = xs.concrete();
        int64_t per_sample = x.size() >= 2 ? ctx.in(0).shape.numel() / std::max<int64_t>(x[0], 1) : 1;
        if (ps.numel() != c.value && !(x[0] > 0 && ps.numel() == per_sample))
          return ctx.error("input %s %s must have C or C x D1 x ... values for X %s", names[i], ps.str().c_str(),
                           xs.str().c_str());
      }
    }
    ctx.set_output(0, ctx.in(0).dtype, xs);
    const DataType stat_dt = ctx.in(3).dtype;
    Shape cs = Shape(std::vector<Dim>{c});
    for (size_t i = 1; i < ctx.num_outputs(); ++i) {
      if (!ctx.has_output(i)) continue;
      if (i > (opset_ >= 14 ? 2u : 4u))
        return ctx.error("BatchNormalization-%lld has at most %d outputs", (long long)opset_, opset_ >= 14 ? 3 : 5);
      ctx.set_output(i, stat_dt, spatial_ || training_ ? cs : ctx.in(3).shape);
    }
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    const TensorRef& X = ctx.in(0);
    if (X.rank() < 1) return ctx.error("input X must have rank >= 1");
    const int64_t N = X.dims[0], C = X.rank() >= 2 ? X.dims[1] : 1;
    const int64_t S = N * C > 0 ? X.numel() / (N * C) : 0;
    std::vector<double> scale, bias, mean, var;
    if (!read_f64(ctx.in(1), scale) || !read_f64(ctx.in(2), bias) || !read_f64(ctx.in(3), mean) ||
        !read_f64(ctx.in(4), var))
      return ctx.error("inputs scale, B, input_mean, input_var must be float32 or float64");
    const size_t P = scale.size();
    const bool per_channel = static_cast<int64_t>(P) == C;
    if ((!per_channel && static_cast<int64_t>(P) != C * S) || bias.size() != P || mean.size() != P || var.size() != P)
      return ctx.error("scale, B, input_mean, input_var must each have C = %lld values, found %zu, %zu, %zu, %zu",
                       (long long)C, scale.size(), bias.size(), mean.size(), var.size());
    if (training_ && !per_channel) return ctx.error("training mode needs per-channel statistics");
    std::vector<double> bmean, bvar;  // batch statistics (training mode)
    if (training_) {
      bmean.assign(C, 0.0);
      bvar.assign(C, 0.0);
      const double cnt = static_cast<double>(N * S);
      dispatch_floats(X.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* x = X.ptr<T>();
        parallel_for(C, ctx.num_threads, [&](int64_t b, int64_t e) {
          for (int64_t c = b; c < e; ++c) {
            double s = 0, q = 0;
            for (int64_t n = 0; n < N; ++n)
              for (int64_t i = 0; i < S; ++i) s += x[(n * C + c) * S + i];
            const double m = cnt > 0 ? s / cnt : 0.0;
            for (int64_t n = 0; n < N; ++n)
              for (int64_t i = 0; i < S; ++i) {
                const double dv = x[(n * C + c) * S + i] - m;
                q += dv * dv;
              }
            bmean[c] = m;
            bvar[c] = cnt > 0 ? q / cnt : 0.0;
          }
        });
      });
    }
    const std::vector<double>& um = training_ ? bmean : mean;
    const std::vector<double>& uv = training_ ? bvar : var;
    std::vector<double> a(P), b(P);
    for (size_t p = 0; p < P; ++p) {
      a[p] = scale[p] / std::sqrt(uv[p] + static_cast<double>(eps_));
      b[p] = bias[p] - um[p] * a[p];
    }
    TensorRef& Y = ctx.out(0);
    if (Y.numel() != X.numel()) return ctx.error("output Y has the wrong size");
    bool ok = dispatch_floats(X.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* x = X.ptr<T>();
      T* y = Y.ptr<T>();
      parallel_for(N * C, ctx.num_threads, [&](int64_t lo, int64_t hi) {
        for (int64_t nc = lo; nc < hi; ++nc) {
          const int64_t c = nc % C;
          const T* xp = x + nc * S;
          T* yp = y + nc * S;
          if (per_channel) {
            const T ac = static_cast<T>(a[c]), bc = static_cast<T>(b[c]);
            for (int64_t i = 0; i < S; ++i) yp[i] = xp[i] * ac + bc;
          } else {
            for (int64_t i = 0; i < S; ++i) yp[i] = static_cast<T>(xp[i] * a[c * S + i] + b[c * S + i]);
          }
        }
      });
    });
    if (!ok) return ctx.error("unsupported dtype %s", dtype_name(X.dtype));
    if (!act_.is_identity()) {
      if (X.dtype == DataType::kFloat32)
        apply_activation(act_, Y.ptr<float>(), Y.numel());
      else
        apply_activation(act_, Y.ptr<double>(), Y.numel());
    }
    // Statistics outputs: running (momentum-updated) mean/var, then saved batch mean/var.
    std::vector<double> rmean = mean, rvar = var;
    if (training_) {
      const double mo = momentum_;
      for (size_t p = 0; p < P; ++p) {
        rmean[p] = mean[p] * mo + bmean[p] * (1 - mo);
        rvar[p] = var[p] * mo + bvar[p] * (1 - mo);
      }
    }
    const std::vector<double>* outs[] = {nullptr, &rmean, &rvar, training_ ? &bmean : &mean, training_ ? &bvar : &var};
    for (size_t i = 1; i < 5; ++i)
      if (ctx.has_output(i) && !write_f64(ctx.out(i), *outs[i]))
        return ctx.error("statistics output %zu has the wrong size or dtype", i);
    return Status::ok();
  }

 private:
  Status init_;
  int64_t opset_;
};

// ---------------------------------------------------------------- InstanceNormalization

class InstanceNormKernel : public OpKernel {
 public:
  InstanceNormKernel(const Node& n, int64_t opset) {
    eps_ = n.attr_float("epsilon", 1e-5f);
    if (!(eps_ >= 0) || !std::isfinite(eps_))
      init_ = Status::error(node_message(n, "attribute 'epsilon' must be a finite value >= 0, found %g", eps_));
  }
  Status init() const { return init_; }

  Status infer(InferContext& ctx) const override {
    static const char* names[] = {"input", "scale", "B"};
    for (size_t i = 0; i < 3; ++i) {
      if (!ctx.has_input(i)) return ctx.error("input %s is required (3 inputs), missing", names[i]);
      if (ctx.in(i).dtype != ctx.in(0).dtype || !is_f32_or_f64(ctx.in(i).dtype))
        return ctx.error("input %s must be float32 or float64 like the input, found %s", names[i],
                         dtype_name(ctx.in(i).dtype));
    }
    const Shape& xs = ctx.in(0).shape;
    if (xs.rank_known && xs.rank() < 2)
      return ctx.error("input must have rank >= 2 (N, C, ...), found %s", xs.str().c_str());
    Dim c = xs.rank_known ? xs.dims[1] : Dim();
    for (size_t i = 1; i < 3; ++i) {
      const Shape& ps = ctx.in(i).shape;
      if (!ps.rank_known) continue;
      if (ps.rank() != 1 || (c.known() && ps.dims[0].known() && ps.dims[0].value != c.value))
        return ctx.error("input %s must be 1-D [C] with C = %s, found %s", names[i], c.str().c_str(), ps.str().c_str());
    }
    ctx.set_output(0, ctx.in(0).dtype, xs);
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    const TensorRef& X = ctx.in(0);
    if (X.rank() < 2) return ctx.error("input must have rank >= 2");
    const int64_t N = X.dims[0], C = X.dims[1];
    const int64_t S = N * C > 0 ? X.numel() / (N * C) : 0;
    if (ctx.in(1).numel() != C || ctx.in(2).numel() != C)
      return ctx.error("scale and B must have C = %lld values", (long long)C);
    bool ok = dispatch_floats(X.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* x = X.ptr<T>();
      const T* sc = ctx.in(1).ptr<T>();
      const T* bi = ctx.in(2).ptr<T>();
      T* y = ctx.out(0).ptr<T>();
      parallel_for(N * C, ctx.num_threads, [&](int64_t lo, int64_t hi) {
        for (int64_t nc = lo; nc < hi; ++nc) {
          const T* xp = x + nc * S;
          T* yp = y + nc * S;
          double s = 0, q = 0;
          for (int64_t i = 0; i < S; ++i) s += xp[i];
          const double m = S > 0 ? s / S : 0.0;
          for (int64_t i = 0; i < S; ++i) q += (xp[i] - m) * (xp[i] - m);
          const double v = S > 0 ? q / S : 0.0;
          const double a = sc[nc % C] / std::sqrt(v + static_cast<double>(eps_));
          const double b = bi[nc % C] - m * a;
          for (int64_t i = 0; i < S; ++i) yp[i] = static_cast<T>(xp[i] * a + b);
        }
      });
    });
    if (!ok) return ctx.error("unsupported dtype %s", dtype_name(X.dtype));
    return Status::ok();
  }

 private:
  Status init_;
  float eps_;
};

// ---------------------------------------------------------------- LRN

class LrnKernel : public OpKernel {
 public:
  LrnKernel(const Node& n, int64_t opset) {
    alpha_ = n.attr_float("alpha", 1e-4f);
    beta_ = n.attr_float("beta", 0.75f);
    bias_ = n.attr_float("bias", 1.0f);
    size_ = n.attr_int("size", -1);
    if (!n.has_attr("size"))
      init_ = Status::error(node_message(n, "attribute 'size' is required"));
    else if (size_ < 1 || size_ > (int64_t(1) << 31))
      init_ = Status::error(node_message(n, "attribute 'size' must be positive, found %lld", (long long)size_));
  }
  Status init() const { return init_; }

  Status infer(InferContext& ctx) const override {
    if (!ctx.has_input(0)) return ctx.error("input X is required");
    if (!is_f32_or_f64(ctx.in(0).dtype))
      return ctx.error("input X must be float32 or float64, found %s", dtype_name(ctx.in(0).dtype));
    const Shape& xs = ctx.in(0).shape;
    if (xs.rank_known && xs.rank() < 2)
      return ctx.error("input X must have rank >= 2 (N, C, ...), found %s", xs.str().c_str());
    ctx.set_output(0, ctx.in(0).dtype, xs);
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    const TensorRef& X = ctx.in(0);
    if (X.rank() < 2) return ctx.error("input X must have rank >= 2");
    const int64_t N = X.dims[0], C = X.dims[1];
    const int64_t S = N * C > 0 ? X.numel() / (N * C) : 0;
    const int64_t lo_off = (size_ - 1) / 2, hi_off = size_ - 1 - lo_off;  // floor / ceil of (size-1)/2
    const double scale = static_cast<double>(alpha_) / static_cast<double>(size_);
    bool ok = dispatch_floats(X.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* x = X.ptr<T>();
      T* y = ctx.out(0).ptr<T>();
      parallel_for(N * C, ctx.num_threads, [&](int64_t lo, int64_t hi) {
        for (int64_t nc = lo; nc < hi; ++nc) {
          const int64_t n = nc / C, c = nc % C;
          const int64_t c0 = std::max<int64_t>(0, c - lo_off), c1 = std::min<int64_t>(C - 1, c + hi_off);
          for (int64_t i = 0; i < S; ++i) {
            double sq = 0;
            for (int64_t cc = c0; cc <= c1; ++cc) {
              const double v = x[(n * C + cc) * S + i];
              sq += v * v;
            }
            y[nc * S + i] = static_cast<T>(x[nc * S + i] / std::pow(bias_ + scale * sq, static_cast<double>(beta_)));
          }
        }
      });
    });
    if (!ok) return ctx.error("unsupported dtype %s", dtype_name(X.dtype));
    return Status::ok();
  }

 private:
  Status init_;
  float alpha_, beta_, bias_;
  int64_t size_;
};

struct FusedBatchNormKernel : BatchNormKernel {
  FusedBatchNormKernel(const Node& n, int64_t opset) : BatchNormKernel(n, opset, true) {}
};

}  // namespace

void bn_affine(const float* scale, const float* bias, const float* mean, const float* var, float eps, int64_t C,
               float* a, float* b) {
  for (int64_t c = 0; c < C; ++c) {
    const double ac = static_cast<double>(scale[c]) / std::sqrt(static_cast<double>(var[c]) + static_cast<double>(eps));
    a[c] = static_cast<float>(ac);
    b[c] = static_cast<float>(static_cast<double>(bias[c]) - static_cast<double>(mean[c]) * ac);
  }
}

std::shared_ptr<const OpKernel> BatchNormOp::make_fused(const BatchNormOp& bn, Activation act) {
  return std::make_shared<BatchNormKernel>(bn, act);
}

void register_layer_norm_ops(OpRegistry& r);        // layer_norm.cpp
void register_concat_batchnorm_ops(OpRegistry& r);  // concat_batchnorm.cpp

void register_norm_ops(OpRegistry& r) {
  register_layer_norm_ops(r);
  register_concat_batchnorm_ops(r);
  r.add("BatchNormalization", factory_of<BatchNormKernel>());
  r.add("FusedBatchNorm", factory_of<FusedBatchNormKernel>(), "com.infera");
  r.add("InstanceNormalization", factory_of<InstanceNormKernel>());
  r.add("LRN", factory_of<LrnKernel>());
}

}  // namespace infera
