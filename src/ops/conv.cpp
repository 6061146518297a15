// Conv, ConvTranspose and the fused com.infera.FusedConv (conv + bias + residual + activation):
// shape inference and reference kernels (tiled im2col + a register-blocked GEMM, threads over
// tiles of output columns/rows; direct loops for depthwise). Shape rules: conv_shape.cpp.
#include "ops/conv.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/conv_gemm.h"
#include "ops/elementwise.h"
#include "ops/util.h"

namespace infera {

// ---------------------------------------------------------------- shared inference

namespace {

// Checks the float dtype of X and that W, B (and Z) share it.
Status check_float_inputs(InferContext& ctx, bool float32_only, size_t n_in) {
  if (!ctx.has_input(0) || !ctx.has_input(1))
    return ctx.error("inputs X and W are required, found %zu inputs", ctx.num_inputs());
  DataType dt = ctx.in(0).dtype;
  if (dt != DataType::kFloat32 && (float32_only || dt != DataType::kFloat64))
    return ctx.error("input X must be %s, found %s", float32_only ? "float32" : "float32 or float64", dtype_name(dt));
  static const char* names[] = {"X", "W", "B", "Z"};
  for (size_t i = 1; i < n_in; ++i)
    if (ctx.has_input(i) && ctx.in(i).dtype != dt)
      return ctx.error("input %s must have the dtype of X (%s), found %s", names[i], dtype_name(dt),
                       dtype_name(ctx.in(i).dtype));
  return Status::ok();
}

// Output shape of Conv/ConvTranspose from possibly symbolic X/W shapes.
Status infer_conv_shape(InferContext& ctx, const ConvTransposeAttrs& a, bool transpose, Shape& out) {
  const Shape& xs = ctx.in(0).shape;
  const Shape& ws = ctx.in(1).shape;
  int r = xs.rank_known ? xs.rank() : ws.rank_known ? ws.rank() : -1;
  if (r < 0) {
    out = Shape::unknown();
    return Status::ok();
  }
  if (r < 3 || r > 5)
    return ctx.error("input X must have rank 3, 4 or 5 (N, C, 1-3 spatial dims), found %s",
                     xs.rank_known ? xs.str().c_str() : ws.str().c_str());
  if (xs.rank_known && ws.rank_known && xs.rank() != ws.rank())
    return ctx.error("weight W %s must have the rank of input X %s", ws.str().c_str(), xs.str().c_str());
  // Every per-axis attribute, before the partial path below indexes it (fuzz_model found strides=[2]
  // on a 2-D conv with an unknown channel dim reading past the end).
  for (auto [name, v] : {std::pair<const char*, const std::vector<int64_t>*>{"kernel_shape", &a.kernel_shape},
                         {"strides", &a.strides},
                         {"dilations", &a.dilations}})
    if (!v->empty() && static_cast<int>(v->size()) != r - 2)
      return ctx.error("attribute '%s' has %zu values, input X has %d spatial dims", name, v->size(), r - 2);
  if (xs.fully_known() && ws.fully_known()) {
    std::vector<int64_t> pads, y;
    Status s = transpose ? conv_transpose_resolve(a, xs.concrete(), ws.concrete(), pads, y)
                         : conv_resolve(a, xs.concrete(), ws.concrete(), pads, y);
    if (!s.is_ok()) return ctx.error("%s", s.message().c_str());
    out = Shape::of(y);
    return Status::ok();
  }
  // Partial knowledge: propagate what is determined, check what is known.
  std::vector<Dim> d(r);
  auto xd = [&](int i) { return xs.rank_known ? xs.dims[i] : Dim(); };
  auto wd = [&](int i) { return ws.rank_known ? ws.dims[i] : Dim(); };
  const int64_t g = a.group;
  d[0] = xd(0);
  if (!transpose) {
    d[1] = wd(0);
    if (xd(1).known() && wd(1).known() && wd(1).value * g != xd(1).value)
      return ctx.error("input X %s has %lld channels; expected W dim 1 x group = %lld x %lld", xs.str().c_str(),
                       (long long)xd(1).value, (long long)wd(1).value, (long long)g);
  } else {
    if (wd(1).known()) d[1] = Dim(wd(1).value * g);
    if (xd(1).known() && wd(0).known() && wd(0).value != xd(1).value)
      return ctx.error("input X %s has %lld channels; expected W dim 0 = %lld", xs.str().c_str(),
                       (long long)xd(1).value, (long long)wd(0).value);
  }
  std::vector<int64_t> oshape = a.output_shape;
  if (static_cast<int>(oshape.size()) == r) oshape.erase(oshape.begin(), oshape.begin() + 2);
  for (int i = 0; i < r - 2; ++i) {
    if (transpose && static_cast<int>(oshape.size()) == r - 2) {
      d[2 + i] = Dim(oshape[i]);
      continue;
    }
    int64_t kk = !a.kernel_shape.empty() ? a.kernel_shape[i] : wd(2 + i).known() ? wd(2 + i).value : -1;
    Dim in = xd(2 + i);
    if (kk < 0 || !in.known()) continue;  // unknown
    int64_t s = a.strides.empty() ? 1 : a.strides[i];
    int64_t dl = a.dilations.empty() ? 1 : a.dilations[i];
    size_t k = r - 2;
    int64_t pb = a.pads.size() == 2 * k ? a.pads[i] : 0, pe = a.pads.size() == 2 * k ? a.pads[k + i] : 0;
    if (!transpose) {
      int64_t o = 0;
      if (!conv_out_dim(in.value, kk, s, dl, a.auto_pad, false, pb, pe, o))
        return ctx.error("spatial dim %d of input X %s is smaller than the dilated kernel %lld", i, xs.str().c_str(),
                         (long long)((kk - 1) * dl + 1));
      d[2 + i] = Dim(o);
    } else {
      int64_t op = a.output_padding.size() == k ? a.output_padding[i] : 0;
      if (a.auto_pad == AutoPad::kSameUpper || a.auto_pad == AutoPad::kSameLower) {
        if (in.value > (int64_t(1) << 40) / s) return ctx.error("input X %s x strides is too large", xs.str().c_str());
        d[2 + i] = Dim(in.value * s);
      } else {
        if (a.auto_pad == AutoPad::kValid) pb = pe = 0;
        if (in.value < 1 || in.value > (int64_t(1) << 40) / s)
          return ctx.error("spatial dim %d of input X %s must be in [1, 2^40 / stride]", i, xs.str().c_str());
        int64_t o = s * (in.value - 1) + op + (kk - 1) * dl + 1 - pb - pe;
        if (o < 1)
          return ctx.error("output spatial dim %d would be %lld (pads larger than the output)", i, (long long)o);
        d[2 + i] = Dim(o);
      }
    }
  }
  out = Shape(std::move(d));
  return Status::ok();
}

Status check_bias_shape(InferContext& ctx, const Shape& y) {
  if (!ctx.has_input(2)) return Status::ok();
  const Shape& b = ctx.in(2).shape;
  if (!b.rank_known) return Status::ok();
  if (b.rank() != 1) return ctx.error("bias B must be 1-D [M], found %s", b.str().c_str());
  if (b.dims[0].known() && y.rank_known && y.dims[1].known() && b.dims[0].value != y.dims[1].value)
    return ctx.error("bias B %s must have %lld values (one per output channel)", b.str().c_str(),
                     (long long)y.dims[1].value);
  return Status::ok();
}

// Spatial geometry padded to 3 dims (leading 1s) so one kernel serves 1D/2D/3D.
struct Geom3 {
  int64_t in[3], out[3], k[3], s[3], d[3], pb[3];
  int64_t in_size() const { return in[0] * in[1] * in[2]; }
  int64_t out_size() const { return out[0] * out[1] * out[2]; }
  int64_t k_size() const { return k[0] * k[1] * k[2]; }
};

Geom3 make_geom(const std::vector<int64_t>& x, const std::vector<int64_t>& y, const std::vector<int64_t>& w,
                const ConvAttrs& a, const std::vector<int64_t>& pads) {
  Geom3 g;
  const int k = static_cast<int>(x.size()) - 2;
  for (int i = 0; i < 3; ++i) {
    int j = i - (3 - k);  // index into the spatial dims, < 0 for the padding dims
    g.in[i] = j >= 0 ? x[2 + j] : 1;
    g.out[i] = j >= 0 ? y[2 + j] : 1;
    g.k[i] = j >= 0 ? w[2 + j] : 1;
    g.s[i] = j >= 0 && !a.strides.empty() ? a.strides[j] : 1;
    g.d[i] = j >= 0 && !a.dilations.empty() ? a.dilations[j] : 1;
    g.pb[i] = j >= 0 ? pads[j] : 0;
  }
  return g;
}

// Columns [j0, j0+nt) of the im2col matrix of one image/group: rows (c, kd, kh, kw).
template <class T>
void im2col_tile(const T* x, int64_t cg, const Geom3& g, int64_t j0, int64_t nt, T* buf, std::vector<int64_t>& base) {
  base.resize(3 * nt);
  int64_t* bd = base.data();
  int64_t* bh = bd + nt;
  int64_t* bw = bh + nt;
  for (int64_t j = 0; j < nt; ++j) {
    int64_t o = j0 + j;
    int64_t ow = o % g.out[2], t = o / g.out[2];
    int64_t oh = t % g.out[1], od = t / g.out[1];
    bd[j] = od * g.s[0] - g.pb[0];
    bh[j] = oh * g.s[1] - g.pb[1];
    bw[j] = ow * g.s[2] - g.pb[2];
  }
  const int64_t D = g.in[0], H = g.in[1], W = g.in[2];
  T* row = buf;
  for (int64_t c = 0; c < cg; ++c) {
    const T* xc = x + c * g.in_size();
    for (int64_t kd = 0; kd < g.k[0]; ++kd)
      for (int64_t kh = 0; kh < g.k[1]; ++kh)
        for (int64_t kw = 0; kw < g.k[2]; ++kw, row += nt) {
          const int64_t od = kd * g.d[0], oh = kh * g.d[1], ow = kw * g.d[2];
          for (int64_t j = 0; j < nt; ++j) {
            int64_t id = bd[j] + od, ih = bh[j] + oh, iw = bw[j] + ow;
            bool in = static_cast<uint64_t>(id) < static_cast<uint64_t>(D) &&
                      static_cast<uint64_t>(ih) < static_cast<uint64_t>(H) &&
                      static_cast<uint64_t>(iw) < static_cast<uint64_t>(W);
            row[j] = in ? xc[(id * H + ih) * W + iw] : T(0);
          }
        }
  }
}

// What the reference loops apply after the convolution sum (bias is added first, by them).
struct ConvTail {
  const void* z = nullptr;  // residual, same shape as Y
  Activation act;
  bool any() const { return z || !act.is_identity(); }
};

template <class T>
void conv_forward(const T* x, const T* w, const T* b, T* y, const std::vector<int64_t>& xd,
                  const std::vector<int64_t>& wd, const Geom3& g, int64_t group, const ConvTail& ep, int num_threads) {
  const int64_t N = xd[0], C = xd[1], M = wd[0];
  const int64_t cg = C / group, mg = M / group;
  const int64_t K = g.k_size(), ckk = cg * K, in_hw = g.in_size(), out_hw = g.out_size();
  const bool direct = K == 1 && g.s[0] == 1 && g.s[1] == 1 && g.s[2] == 1 && g.pb[0] == 0 && g.pb[1] == 0 &&
                      g.pb[2] == 0 && out_hw == in_hw;
  // Column tiles keep the im2col buffer near L2; row blocks add parallelism for small images.
  const int64_t nt_max = std::clamp<int64_t>((int64_t(64) << 10) / std::max<int64_t>(ckk, 1), 32, 512) / 16 * 16;
  const int64_t ntiles = (out_hw + nt_max - 1) / nt_max;
  const int nth = num_threads > 0 ? num_threads : 1;
  int64_t mblocks = 1;
  if (N * group * ntiles < 2 * nth) mblocks = std::max<int64_t>(1, std::min<int64_t>((mg + 15) / 16, 2 * nth));
  const int64_t mb = (mg + mblocks - 1) / mblocks;
  const int64_t items = N * group * ntiles * mblocks;
  const T* z = static_cast<const T*>(ep.z);
  parallel_for(items, num_threads, [&](int64_t begin, int64_t end) {
    std::vector<T> buf(direct ? 0 : ckk * nt_max);
    std::vector<int64_t> base;
    for (int64_t it = begin; it < end; ++it) {
      int64_t m_blk = it % mblocks, r = it / mblocks;
      int64_t tile = r % ntiles;
      r /= ntiles;
      int64_t gi = r % group, n = r / group;
      int64_t j0 = tile * nt_max, nt = std::min(nt_max, out_hw - j0);
      int64_t m0 = m_blk * mb, m1 = std::min(mg, m0 + mb);
      if (m0 >= m1) continue;
      const T* xg = x + (n * C + gi * cg) * in_hw;
      const T* bmat;
      int64_t ldb;
      if (direct) {
        bmat = xg + j0;
        ldb = in_hw;
      } else {
        im2col_tile(xg, cg, g, j0, nt, buf.data(), base);
        bmat = buf.data();
        ldb = nt;
      }
      const int64_t co0 = gi * mg + m0;
      T* yt = y + (n * M + co0) * out_hw + j0;
      for (int64_t m = 0; m < m1 - m0; ++m) std::fill_n(yt + m * out_hw, nt, b ? b[co0 + m] : T(0));
      gemm_acc<T>(m1 - m0, nt, ckk, w + co0 * ckk, ckk, bmat, ldb, yt, out_hw);
      if (ep.any()) {
        for (int64_t m = 0; m < m1 - m0; ++m) {
          T* row = yt + m * out_hw;
          if (z) {
            const T* zr = z + (row - y);
            for (int64_t j = 0; j < nt; ++j) row[j] += zr[j];
          }
          apply_activation(ep.act, row, nt);
        }
      }
    }
  });
}

// Depthwise-style conv (one input channel per group): direct loops, a row of outputs at a
// time so the inner loop runs over contiguous (stride 1) or strided input.
template <class T>
void conv_depthwise(const T* x, const T* w, const T* b, T* y, const std::vector<int64_t>& xd,
                    const std::vector<int64_t>& wd, const Geom3& g, int64_t group, const ConvTail& ep,
                    int num_threads) {
  const int64_t N = xd[0], C = xd[1], M = wd[0], mg = M / group;
  const int64_t K = g.k_size(), in_hw = g.in_size(), out_hw = g.out_size();
  const T* z = static_cast<const T*>(ep.z);
  // Valid output range [lo, hi) along W for each kw.
  std::vector<int64_t> lo(g.k[2]), hi(g.k[2]);
  for (int64_t kw = 0; kw < g.k[2]; ++kw) {
    const int64_t off = kw * g.d[2] - g.pb[2];  // iw = ow*s + off
    lo[kw] = off >= 0 ? 0 : (-off + g.s[2] - 1) / g.s[2];
    hi[kw] = g.in[2] - 1 - off < 0 ? 0 : std::min(g.out[2], (g.in[2] - 1 - off) / g.s[2] + 1);
    if (hi[kw] < lo[kw]) hi[kw] = lo[kw];
  }
  parallel_for(N * M, num_threads, [&](int64_t begin, int64_t end) {
    for (int64_t it = begin; it < end; ++it) {
      const int64_t n = it / M, co = it % M, ci = co / mg;
      const T* xc = x + (n * C + ci) * in_hw;
      const T* wc = w + co * K;
      T* yc = y + it * out_hw;
      std::fill_n(yc, out_hw, b ? b[co] : T(0));
      for (int64_t od = 0; od < g.out[0]; ++od)
        for (int64_t oh = 0; oh < g.out[1]; ++oh) {
          T* yr = yc + (od * g.out[1] + oh) * g.out[2];
          for (int64_t kd = 0; kd < g.k[0]; ++kd) {
            const int64_t id = od * g.s[0] - g.pb[0] + kd * g.d[0];
            if (id < 0 || id >= g.in[0]) continue;
            for (int64_t kh = 0; kh < g.k[1]; ++kh) {
              const int64_t ih = oh * g.s[1] - g.pb[1] + kh * g.d[1];
              if (ih < 0 || ih >= g.in[1]) continue;
              const T* xr = xc + (id * g.in[1] + ih) * g.in[2];
              for (int64_t kw = 0; kw < g.k[2]; ++kw) {
                const T wv = wc[(kd * g.k[1] + kh) * g.k[2] + kw];
                const int64_t off = kw * g.d[2] - g.pb[2];
                if (g.s[2] == 1) {
                  const T* xs = xr + off;
#pragma omp simd
                  for (int64_t ow = lo[kw]; ow < hi[kw]; ++ow) yr[ow] += wv * xs[ow];
                } else {
                  for (int64_t ow = lo[kw]; ow < hi[kw]; ++ow) yr[ow] += wv * xr[ow * g.s[2] + off];
                }
              }
            }
          }
        }
      if (z)
        for (int64_t j = 0; j < out_hw; ++j) yc[j] += z[it * out_hw + j];
      apply_activation(ep.act, yc, out_hw);
    }
  });
}

// Y[n, m, ...] = bias[m] + sum over c, kernel taps of W[c, m', k] X[n, c, i] scattered at
// o = i*s - pb + k*d. Each (n, output channel) is owned by one thread.
template <class T>
void conv_transpose_forward(const T* x, const T* w, const T* b, T* y, const std::vector<int64_t>& xd,
                            const std::vector<int64_t>& wd, const Geom3& g, int64_t group, int num_threads) {
  const int64_t N = xd[0], C = xd[1], mg = wd[1], M = mg * group;
  const int64_t cg = C / group, K = g.k_size(), in_hw = g.in_size(), out_hw = g.out_size();
  // W_g is [cg, mg*K]; the GEMM wants its transpose [mg*K, cg].
  std::vector<T> wt(static_cast<size_t>(group * mg * K * cg));
  for (int64_t gi = 0; gi < group; ++gi)
    for (int64_t c = 0; c < cg; ++c)
      for (int64_t r = 0; r < mg * K; ++r) wt[(gi * mg * K + r) * cg + c] = w[(gi * cg + c) * mg * K + r];
  const int64_t nt_max = 256;
  parallel_for(N * M, num_threads, [&](int64_t begin, int64_t end) {
    std::vector<T> cols(K * nt_max);
    for (int64_t it = begin; it < end; ++it) {
      const int64_t n = it / M, co = it % M, gi = co / mg, m = co % mg;
      T* yc = y + it * out_hw;
      std::fill_n(yc, out_hw, b ? b[co] : T(0));
      const T* xg = x + (n * C + gi * cg) * in_hw;
      const T* a = wt.data() + (gi * mg + m) * K * cg;
      for (int64_t j0 = 0; j0 < in_hw; j0 += nt_max) {
        const int64_t nt = std::min(nt_max, in_hw - j0);
        std::fill_n(cols.data(), K * nt, T(0));
        gemm_acc<T>(K, nt, cg, a, cg, xg + j0, in_hw, cols.data(), nt);
        int64_t kidx = 0;
        for (int64_t kd = 0; kd < g.k[0]; ++kd)
          for (int64_t kh = 0; kh < g.k[1]; ++kh)
            for (int64_t kw = 0; kw < g.k[2]; ++kw, ++kidx) {
              const T* row = cols.data() + kidx * nt;
              for (int64_t j = 0; j < nt; ++j) {
                int64_t p = j0 + j;
                int64_t iw = p % g.in[2], t = p / g.in[2];
                int64_t ih = t % g.in[1], id = t / g.in[1];
                int64_t od = id * g.s[0] - g.pb[0] + kd * g.d[0];
                int64_t oh = ih * g.s[1] - g.pb[1] + kh * g.d[1];
                int64_t ow = iw * g.s[2] - g.pb[2] + kw * g.d[2];
                if (static_cast<uint64_t>(od) < static_cast<uint64_t>(g.out[0]) &&
                    static_cast<uint64_t>(oh) < static_cast<uint64_t>(g.out[1]) &&
                    static_cast<uint64_t>(ow) < static_cast<uint64_t>(g.out[2]))
                  yc[(od * g.out[1] + oh) * g.out[2] + ow] += row[j];
              }
            }
      }
    }
  });
}

// ---------------------------------------------------------------- Conv / FusedConv

class ConvKernel : public ConvOp {
 public:
  ConvKernel(const Node& n, int64_t opset, bool fused) : ConvOp(fused, {}, {}) {
    init_ = conv_attrs_parse(n, attrs_);
    // The com.infera attribute form (a model that holds FusedConv nodes, e.g. a saved graph):
    // parsed once here into the typed activation.
    if (fused_ && init_.is_ok()) init_ = activation_from_attrs(n, act_);
  }
  ConvKernel(const ConvAttrs& a, Activation act) : ConvOp(true, a, act) {}
  Status init() const { return init_; }

  Status infer(InferContext& ctx) const override {
    Status s = check_float_inputs(ctx, fused_, fused_ ? 4 : 3);
    if (!s.is_ok()) return s;
    ConvTransposeAttrs a;
    static_cast<ConvAttrs&>(a) = attrs_;
    Shape y;
    s = infer_conv_shape(ctx, a, false, y);
    if (!s.is_ok()) return s;
    s = check_bias_shape(ctx, y);
    if (!s.is_ok()) return s;
    if (fused_ && ctx.has_input(3)) {
      const Shape& z = ctx.in(3).shape;
      if (z.rank_known && y.rank_known) {
        bool ok = z.rank() == y.rank();
        for (int i = 0; ok && i < z.rank(); ++i)
          if (z.dims[i].known() && y.dims[i].known() && z.dims[i].value != y.dims[i].value) ok = false;
        if (!ok) return ctx.error("residual Z %s must have the output shape %s", z.str().c_str(), y.str().c_str());
      }
    }
    ctx.set_output(0, ctx.in(0).dtype, y);
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    const TensorRef& X = ctx.in(0);
    const TensorRef& W = ctx.in(1);
    std::vector<int64_t> pads, yd;
    Status s = conv_resolve(attrs_, X.dims, W.dims, pads, yd);
    if (!s.is_ok()) return ctx.error("%s", s.message().c_str());
    if (X.rank() > 5) return ctx.error("at most 3 spatial dims are supported, found input X of rank %d", X.rank());
    TensorRef& Y = ctx.out(0);
    if (Y.dims != yd)
      return ctx.error("output Y was allocated as %s, expected %s", Shape::of(Y.dims).str().c_str(),
                       Shape::of(yd).str().c_str());
    const TensorRef* B = ctx.has_input(2) ? &ctx.in(2) : nullptr;
    if (B && (B->rank() != 1 || B->dims[0] != yd[1]))
      return ctx.error("bias B %s must have %lld values", Shape::of(B->dims).str().c_str(), (long long)yd[1]);
    ConvTail ep;
    ep.act = act_;
    if (fused_ && ctx.has_input(3)) {
      if (ctx.in(3).dims != yd)
        return ctx.error("residual Z %s must have the output shape %s", Shape::of(ctx.in(3).dims).str().c_str(),
                         Shape::of(yd).str().c_str());
      ep.z = ctx.in(3).data;
    }
    if (Y.numel() == 0) return Status::ok();
    Geom3 g = make_geom(X.dims, yd, W.dims, attrs_, pads);
    bool ok = dispatch_floats(X.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if (X.dims[1] == attrs_.group && attrs_.group > 1)
        conv_depthwise<T>(X.ptr<T>(), W.ptr<T>(), B ? B->ptr<T>() : nullptr, Y.ptr<T>(), X.dims, W.dims, g,
                          attrs_.group, ep, ctx.num_threads);
      else
        conv_forward<T>(X.ptr<T>(), W.ptr<T>(), B ? B->ptr<T>() : nullptr, Y.ptr<T>(), X.dims, W.dims, g, attrs_.group,
                        ep, ctx.num_threads);
    });
    if (!ok) return ctx.error("unsupported dtype %s", dtype_name(X.dtype));
    return Status::ok();
  }

 private:
  Status init_;
};

struct PlainConvKernel : ConvKernel {
  PlainConvKernel(const Node& n, int64_t opset) : ConvKernel(n, opset, false) {}
};
struct FusedConvKernel : ConvKernel {
  FusedConvKernel(const Node& n, int64_t opset) : ConvKernel(n, opset, true) {}
};

// ---------------------------------------------------------------- ConvTranspose

class ConvTransposeKernel : public ConvTransposeOp {
 public:
  ConvTransposeKernel(const Node& n, int64_t opset) { init_ = conv_transpose_attrs_parse(n, attrs_); }
  Status init() const { return init_; }

  Status infer(InferContext& ctx) const override {
    Status s = check_float_inputs(ctx, false, 3);
    if (!s.is_ok()) return s;
    Shape y;
    s = infer_conv_shape(ctx, attrs_, true, y);
    if (!s.is_ok()) return s;
    s = check_bias_shape(ctx, y);
    if (!s.is_ok()) return s;
    ctx.set_output(0, ctx.in(0).dtype, y);
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    const TensorRef& X = ctx.in(0);
    const TensorRef& W = ctx.in(1);
    std::vector<int64_t> pads, yd;
    Status s = conv_transpose_resolve(attrs_, X.dims, W.dims, pads, yd);
    if (!s.is_ok()) return ctx.error("%s", s.message().c_str());
    if (X.rank() > 5) return ctx.error("at most 3 spatial dims are supported, found input X of rank %d", X.rank());
    TensorRef& Y = ctx.out(0);
    if (Y.dims != yd)
      return ctx.error("output Y was allocated as %s, expected %s", Shape::of(Y.dims).str().c_str(),
                       Shape::of(yd).str().c_str());
    const TensorRef* B = ctx.has_input(2) ? &ctx.in(2) : nullptr;
    if (B && (B->rank() != 1 || B->dims[0] != yd[1]))
      return ctx.error("bias B %s must have %lld values", Shape::of(B->dims).str().c_str(), (long long)yd[1]);
    if (Y.numel() == 0) return Status::ok();
    Geom3 g = make_geom(X.dims, yd, W.dims, attrs_, pads);
    bool ok = dispatch_floats(X.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      conv_transpose_forward<T>(X.ptr<T>(), W.ptr<T>(), B ? B->ptr<T>() : nullptr, Y.ptr<T>(), X.dims, W.dims, g,
                                attrs_.group, ctx.num_threads);
    });
    if (!ok) return ctx.error("unsupported dtype %s", dtype_name(X.dtype));
    return Status::ok();
  }

 private:
  Status init_;
};

}  // namespace

Epilogue ConvOp::epilogue(const Node& n) const {
  auto given = [&](size_t i) { return i < n.inputs.size() && n.inputs[i] >= 0; };
  return Epilogue::make(given(2) ? 2 : -1, fused_ && given(3) ? 3 : -1, act_);
}

std::shared_ptr<const OpKernel> ConvOp::make_fused(const ConvAttrs& a, Activation act) {
  return std::make_shared<ConvKernel>(a, act);
}

void register_conv_ops(OpRegistry& r) {
  r.add("Conv", factory_of<PlainConvKernel>());
  r.add("ConvTranspose", factory_of<ConvTransposeKernel>());
  r.add("FusedConv", factory_of<FusedConvKernel>(), "com.infera");
}

}  // namespace infera
