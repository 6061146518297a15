// AveragePool, MaxPool (with optional Indices), GlobalAveragePool, GlobalMaxPool:
// attributes, the shared output-shape rule (pool.h), shape inference, reference kernels.
#include "ops/pool.h"

#include <cmath>
#include <limits>

#include "ops/util.h"

namespace infera {

Status pool_attrs_parse(const Node& n, PoolAttrs& a) {
  Status s = window_attrs_parse(n, a, true);
  if (!s.is_ok()) return s;
  const size_t k = a.kernel_shape.size();
  if (k > 3) return Status::error(node_message(n, "at most 3 spatial dims are supported, kernel_shape has %zu", k));
  int64_t cm = n.attr_int("ceil_mode", 0), cip = n.attr_int("count_include_pad", 0);
  a.storage_order = n.attr_int("storage_order", 0);
  if (cm != 0 && cm != 1)
    return Status::error(node_message(n, "attribute 'ceil_mode' must be 0 or 1, found %lld", (long long)cm));
  if (cip != 0 && cip != 1)
    return Status::error(node_message(n, "attribute 'count_include_pad' must be 0 or 1, found %lld", (long long)cip));
  if (a.storage_order != 0 && a.storage_order != 1)
    return Status::error(
        node_message(n, "attribute 'storage_order' must be 0 or 1, found %lld", (long long)a.storage_order));
  a.ceil_mode = cm == 1;
  a.count_include_pad = cip == 1;
  return Status::ok();
}

Status pool_resolve(const PoolAttrs& a, const std::vector<int64_t>& x, std::vector<int64_t>& pads_out,
                    std::vector<int64_t>& y) {
  const size_t k = a.kernel_shape.size();
  if (x.size() != k + 2)
    return Status::error("input X " + Shape::of(x).str() + " must have rank " + std::to_string(k + 2) +
                         " (N, C and one dim per kernel_shape value)");
  pads_out.assign(2 * k, 0);
  y = x;
  for (size_t i = 0; i < k; ++i) {
    int64_t s = a.strides.empty() ? 1 : a.strides[i];
    int64_t d = a.dilations.empty() ? 1 : a.dilations[i];
    int64_t pb = a.pads.empty() ? 0 : a.pads[i], pe = a.pads.empty() ? 0 : a.pads[k + i];
    int64_t o = 0;
    if (!conv_out_dim(x[2 + i], a.kernel_shape[i], s, d, a.auto_pad, a.ceil_mode, pb, pe, o))
      return Status::error("spatial dim " + std::to_string(i) + " of input X " + Shape::of(x).str() +
                           " (+ pads) is smaller than the dilated kernel " +
                           std::to_string((a.kernel_shape[i] - 1) * d + 1));
    pads_out[i] = pb;
    pads_out[k + i] = pe;
    y[2 + i] = o;
  }
  return Status::ok();
}

namespace {

template <class F>
bool dispatch_pool(DataType dt, bool ints, F&& f) {
  switch (dt) {
    case DataType::kFloat32: f(TypeTag<float>{}); return true;
    case DataType::kFloat64: f(TypeTag<double>{}); return true;
    case DataType::kInt8:
      if (!ints) return false;
      f(TypeTag<int8_t>{});
      return true;
    case DataType::kUInt8:
      if (!ints) return false;
      f(TypeTag<uint8_t>{});
      return true;
    default: return false;
  }
}

// The taps of one window along one dim: [lo, hi) inside the input, `padded` of them inside
// the declared pads (count_include_pad divisor).
struct Taps {
  int64_t start, lo, hi, padded;
};

std::vector<Taps> window_taps(int64_t in, int64_t out, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe) {
  std::vector<Taps> t(out);
  auto range = [&](int64_t start, int64_t a, int64_t b, int64_t& lo, int64_t& hi) {
    // taps kk in [0, k) with a <= start + kk*d < b
    lo = start >= a ? 0 : (a - start + d - 1) / d;
    hi = b - 1 - start < 0 ? 0 : std::min(k, (b - 1 - start) / d + 1);
    if (hi < lo) hi = lo;
  };
  for (int64_t o = 0; o < out; ++o) {
    int64_t start = o * s - pb, plo, phi;
    t[o].start = start;
    range(start, 0, in, t[o].lo, t[o].hi);
    range(start, -pb, in + pe, plo, phi);
    t[o].padded = phi - plo;
  }
  return t;
}

struct PoolGeom {
  int64_t in[3], out[3], d[3];
  std::vector<Taps> taps[3];
};

PoolGeom make_pool_geom(const PoolAttrs& a, const std::vector<int64_t>& x, const std::vector<int64_t>& y,
                        const std::vector<int64_t>& pads) {
  PoolGeom g;
  const int k = static_cast<int>(x.size()) - 2;
  for (int i = 0; i < 3; ++i) {
    int j = i - (3 - k);
    g.in[i] = j >= 0 ? x[2 + j] : 1;
    g.out[i] = j >= 0 ? y[2 + j] : 1;
    int64_t kk = j >= 0 ? a.kernel_shape[j] : 1;
    int64_t s = j >= 0 && !a.strides.empty() ? a.strides[j] : 1;
    g.d[i] = j >= 0 && !a.dilations.empty() ? a.dilations[j] : 1;
    int64_t pb = j >= 0 ? pads[j] : 0, pe = j >= 0 ? pads[k + j] : 0;
    g.taps[i] = window_taps(g.in[i], g.out[i], kk, s, g.d[i], pb, pe);
  }
  return g;
}

template <class T>
void avg_pool(const T* x, T* y, int64_t planes, const PoolGeom& g, bool include_pad, int nth) {
  const int64_t in_sz = g.in[0] * g.in[1] * g.in[2], out_sz = g.out[0] * g.out[1] * g.out[2];
  parallel_for(planes, nth, [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
      const T* xp = x + p * in_sz;
      T* yp = y + p * out_sz;
      for (int64_t od = 0; od < g.out[0]; ++od) {
        const Taps& td = g.taps[0][od];
        for (int64_t oh = 0; oh < g.out[1]; ++oh) {
          const Taps& th = g.taps[1][oh];
          for (int64_t ow = 0; ow < g.out[2]; ++ow) {
            const Taps& tw = g.taps[2][ow];
            double sum = 0;
            for (int64_t kd = td.lo; kd < td.hi; ++kd) {
              const int64_t id = td.start + kd * g.d[0];
              for (int64_t kh = th.lo; kh < th.hi; ++kh) {
                const T* row = xp + (id * g.in[1] + th.start + kh * g.d[1]) * g.in[2];
                for (int64_t kw = tw.lo; kw < tw.hi; ++kw) sum += row[tw.start + kw * g.d[2]];
              }
            }
            int64_t cnt =
                include_pad ? td.padded * th.padded * tw.padded : (td.hi - td.lo) * (th.hi - th.lo) * (tw.hi - tw.lo);
            yp[(od * g.out[1] + oh) * g.out[2] + ow] = static_cast<T>(cnt > 0 ? sum / cnt : 0.0);
          }
        }
      }
    }
  });
}

template <class T>
void max_pool(const T* x, T* y, int64_t* idx, int64_t planes, const PoolGeom& g, bool col_major, int nth) {
  const int64_t in_sz = g.in[0] * g.in[1] * g.in[2], out_sz = g.out[0] * g.out[1] * g.out[2];
  const T lowest =
      std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::lowest();
  parallel_for(planes, nth, [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
      const T* xp = x + p * in_sz;
      T* yp = y + p * out_sz;
      for (int64_t od = 0; od < g.out[0]; ++od) {
        const Taps& td = g.taps[0][od];
        for (int64_t oh = 0; oh < g.out[1]; ++oh) {
          const Taps& th = g.taps[1][oh];
          for (int64_t ow = 0; ow < g.out[2]; ++ow) {
            const Taps& tw = g.taps[2][ow];
            T m = lowest;
            int64_t bd = -1, bh = 0, bw = 0;
            for (int64_t kd = td.lo; kd < td.hi; ++kd) {
              const int64_t id = td.start + kd * g.d[0];
              for (int64_t kh = th.lo; kh < th.hi; ++kh) {
                const int64_t ih = th.start + kh * g.d[1];
                const T* row = xp + (id * g.in[1] + ih) * g.in[2];
                for (int64_t kw = tw.lo; kw < tw.hi; ++kw) {
                  const int64_t iw = tw.start + kw * g.d[2];
                  // The first NaN wins and stays (as numpy's max and argmax): NaN > m is false.
                  if (row[iw] > m || bd < 0 || (row[iw] != row[iw] && m == m)) {
                    m = row[iw];
                    bd = id, bh = ih, bw = iw;
                  }
                }
              }
            }
            const int64_t o = (od * g.out[1] + oh) * g.out[2] + ow;
            yp[o] = m;
            if (idx) {
              if (bd < 0) bd = 0;
              int64_t off = col_major ? bd + bh * g.in[0] + bw * g.in[0] * g.in[1] : (bd * g.in[1] + bh) * g.in[2] + bw;
              idx[p * out_sz + o] = p * in_sz + off;
            }
          }
        }
      }
    }
  });
}

class PoolKernel : public PoolOp {
 public:
  PoolKernel(const Node& n, int64_t opset, bool is_max) : PoolOp(is_max) { init_ = pool_attrs_parse(n, a_); }
  Status init() const { return init_; }

  Status infer(InferContext& ctx) const override {
    if (!ctx.has_input(0)) return ctx.error("input X is required");
    DataType dt = ctx.in(0).dtype;
    bool ok = dt == DataType::kFloat32 || dt == DataType::kFloat64 ||
              (is_max_ && (dt == DataType::kInt8 || dt == DataType::kUInt8));
    if (!ok)
      return ctx.error("input X must be %s, found %s",
                       is_max_ ? "float32, float64, int8 or uint8" : "float32 or float64", dtype_name(dt));
    if (!is_max_ && ctx.has_output(1)) return ctx.error("AveragePool has one output");
    const Shape& xs = ctx.in(0).shape;
    const size_t k = a_.kernel_shape.size();
    Shape y;
    if (!xs.rank_known) {
      y = Shape::of_rank(k + 2);
    } else if (static_cast<size_t>(xs.rank()) != k + 2) {
      return ctx.error("input X %s must have rank %zu (N, C and one dim per kernel_shape value)", xs.str().c_str(),
                       k + 2);
    } else {
      std::vector<Dim> d = xs.dims;
      for (size_t i = 0; i < k; ++i) {
        if (!d[2 + i].known()) continue;
        int64_t s = a_.strides.empty() ? 1 : a_.strides[i];
        int64_t dl = a_.dilations.empty() ? 1 : a_.dilations[i];
        int64_t pb = a_.pads.empty() ? 0 : a_.pads[i], pe = a_.pads.empty() ? 0 : a_.pads[k + i], o = 0;
        if (!conv_out_dim(d[2 + i].value, a_.kernel_shape[i], s, dl, a_.auto_pad, a_.ceil_mode, pb, pe, o))
          return ctx.error("spatial dim %zu of input X %s (+ pads) is smaller than the dilated kernel %lld", i,
                           xs.str().c_str(), (long long)((a_.kernel_shape[i] - 1) * dl + 1));
        d[2 + i] = Dim(o);
      }
      y = Shape(std::move(d));
    }
    ctx.set_output(0, dt, y);
    if (ctx.has_output(1)) ctx.set_output(1, DataType::kInt64, y);
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    const TensorRef& X = ctx.in(0);
    std::vector<int64_t> pads, yd;
    Status s = pool_resolve(a_, X.dims, pads, yd);
    if (!s.is_ok()) return ctx.error("%s", s.message().c_str());
    TensorRef& Y = ctx.out(0);
    if (Y.dims != yd)
      return ctx.error("output Y was allocated as %s, expected %s", Shape::of(Y.dims).str().c_str(),
                       Shape::of(yd).str().c_str());
    int64_t* idx = nullptr;
    if (is_max_ && ctx.has_output(1)) {
      if (ctx.out(1).dims != yd || ctx.out(1).dtype != DataType::kInt64)
        return ctx.error("output Indices must be int64 %s", Shape::of(yd).str().c_str());
      idx = ctx.out(1).ptr<int64_t>();
    }
    if (Y.numel() == 0) return Status::ok();
    PoolGeom g = make_pool_geom(a_, X.dims, yd, pads);
    const int64_t planes = X.dims[0] * X.dims[1];
    bool ok = dispatch_pool(X.dtype, is_max_, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if (is_max_) {
        max_pool<T>(X.ptr<T>(), Y.ptr<T>(), idx, planes, g, a_.storage_order == 1, ctx.num_threads);
      } else if constexpr (std::is_floating_point_v<T>) {
        avg_pool<T>(X.ptr<T>(), Y.ptr<T>(), planes, g, a_.count_include_pad, ctx.num_threads);
      }
    });
    if (!ok) return ctx.error("unsupported dtype %s", dtype_name(X.dtype));
    return Status::ok();
  }

 private:
  Status init_;
};

struct AveragePoolOp : PoolKernel {
  AveragePoolOp(const Node& n, int64_t opset) : PoolKernel(n, opset, false) {}
};
struct MaxPoolOp : PoolKernel {
  MaxPoolOp(const Node& n, int64_t opset) : PoolKernel(n, opset, true) {}
};

// GlobalAveragePool / GlobalMaxPool: reduce every spatial dim to 1.
class GlobalPoolKernel : public GlobalPoolOp {
 public:
  GlobalPoolKernel(const Node& n, int64_t opset, bool is_max) : GlobalPoolOp(is_max) {}
  Status init() const { return Status::ok(); }

  Status infer(InferContext& ctx) const override {
    if (!ctx.has_input(0)) return ctx.error("input X is required");
    DataType dt = ctx.in(0).dtype;
    if (dt != DataType::kFloat32 && dt != DataType::kFloat64)
      return ctx.error("input X must be float32 or float64, found %s", dtype_name(dt));
    const Shape& xs = ctx.in(0).shape;
    if (!xs.rank_known) {
      ctx.set_output(0, dt, Shape::unknown());
      return Status::ok();
    }
    if (xs.rank() < 2) return ctx.error("input X must have rank >= 2 (N, C, spatial...), found %s", xs.str().c_str());
    std::vector<Dim> d = xs.dims;
    for (size_t i = 2; i < d.size(); ++i) d[i] = Dim(1);
    ctx.set_output(0, dt, Shape(std::move(d)));
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    const TensorRef& X = ctx.in(0);
    TensorRef& Y = ctx.out(0);
    if (X.rank() < 2) return ctx.error("input X must have rank >= 2");
    const int64_t planes = X.dims[0] * X.dims[1];
    const int64_t sz = planes > 0 ? X.numel() / planes : 0;
    if (Y.numel() != planes)
      return ctx.error("output Y has %lld values, expected %lld", (long long)Y.numel(), (long long)planes);
    bool ok = dispatch_pool(X.dtype, false, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* x = X.ptr<T>();
      T* y = Y.ptr<T>();
      parallel_for(planes, ctx.num_threads, [&](int64_t b, int64_t e) {
        for (int64_t p = b; p < e; ++p) {
          const T* xp = x + p * sz;
          if (is_max_) {
            T m = sz > 0 ? xp[0] : -std::numeric_limits<T>::infinity();
            for (int64_t i = 1; i < sz; ++i) m = xp[i] > m || xp[i] != xp[i] ? xp[i] : m;  // NaN stays
            y[p] = m;
          } else {
            double s = 0;
            for (int64_t i = 0; i < sz; ++i) s += xp[i];
            y[p] = static_cast<T>(sz > 0 ? s / sz : 0.0);
          }
        }
      });
    });
    if (!ok) return ctx.error("unsupported dtype %s", dtype_name(X.dtype));
    return Status::ok();
  }
};

struct GlobalAveragePoolOp : GlobalPoolKernel {
  GlobalAveragePoolOp(const Node& n, int64_t opset) : GlobalPoolKernel(n, opset, false) {}
};
struct GlobalMaxPoolOp : GlobalPoolKernel {
  GlobalMaxPoolOp(const Node& n, int64_t opset) : GlobalPoolKernel(n, opset, true) {}
};

}  // namespace

void register_pool_ops(OpRegistry& r) {
  r.add("AveragePool", factory_of<AveragePoolOp>());
  r.add("MaxPool", factory_of<MaxPoolOp>());
  r.add("GlobalAveragePool", factory_of<GlobalAveragePoolOp>());
  r.add("GlobalMaxPool", factory_of<GlobalMaxPoolOp>());
}

}  // namespace infera
