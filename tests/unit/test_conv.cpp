// Conv, ConvTranspose, FusedConv and conv_resolve: the reference kernels against naive
// direct loops in this file, on seeded random data, over attribute combinations.
#include <gtest/gtest.h>

#include <cstring>

#include "op_test_util.h"
#include "ops/conv.h"

namespace infera::test {
namespace {

struct Cfg {
  std::vector<int64_t> x, w;  // X and W dims
  std::vector<int64_t> strides, pads, dilations;
  int64_t group = 1;
  std::string auto_pad;
  bool bias = true;
};

// Spatial dims padded to 3 (leading 1s).
std::array<int64_t, 3> sp3(const std::vector<int64_t>& d, const std::vector<int64_t>& v, int64_t dflt, size_t off = 0) {
  std::array<int64_t, 3> r{dflt, dflt, dflt};
  const size_t k = d.size() - 2;
  for (size_t i = 0; i < k; ++i) r[3 - k + i] = v.empty() ? dflt : v[off + i];
  return r;
}
std::array<int64_t, 3> dims3(const std::vector<int64_t>& d) {
  std::array<int64_t, 3> r{1, 1, 1};
  const size_t k = d.size() - 2;
  for (size_t i = 0; i < k; ++i) r[3 - k + i] = d[2 + i];
  return r;
}

// Direct convolution: y[n,m,o] = b[m] + sum_{c,k} w[m,c,k] x[n, g*cg+c, o*s - pb + k*d].
Tensor naive_conv(const Tensor& x, const Tensor& w, const Tensor* b, const std::vector<int64_t>& ydims,
                  const std::vector<int64_t>& pads, const std::vector<int64_t>& strides,
                  const std::vector<int64_t>& dil, int64_t group) {
  Tensor y = Tensor::make(DataType::kFloat32, ydims).take();
  auto in = dims3(x.dims()), out = dims3(ydims), kk = dims3(w.dims());
  auto s = sp3(x.dims(), strides, 1), d = sp3(x.dims(), dil, 1), pb = sp3(x.dims(), pads, 0);
  const int64_t N = x.dims()[0], C = x.dims()[1], M = w.dims()[0], cg = C / group, mg = M / group;
  const float* X = x.data_as<float>();
  const float* W = w.data_as<float>();
  float* Y = y.data_as<float>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t o0 = 0; o0 < out[0]; ++o0)
        for (int64_t o1 = 0; o1 < out[1]; ++o1)
          for (int64_t o2 = 0; o2 < out[2]; ++o2) {
            double acc = b ? b->data_as<float>()[m] : 0.0;
            const int64_t gi = m / mg;
            for (int64_t c = 0; c < cg; ++c)
              for (int64_t k0 = 0; k0 < kk[0]; ++k0)
                for (int64_t k1 = 0; k1 < kk[1]; ++k1)
                  for (int64_t k2 = 0; k2 < kk[2]; ++k2) {
                    int64_t i0 = o0 * s[0] - pb[0] + k0 * d[0], i1 = o1 * s[1] - pb[1] + k1 * d[1],
                            i2 = o2 * s[2] - pb[2] + k2 * d[2];
                    if (i0 < 0 || i0 >= in[0] || i1 < 0 || i1 >= in[1] || i2 < 0 || i2 >= in[2]) continue;
                    acc += double(W[(((m * cg + c) * kk[0] + k0) * kk[1] + k1) * kk[2] + k2]) *
                           X[(((n * C + gi * cg + c) * in[0] + i0) * in[1] + i1) * in[2] + i2];
                  }
            Y[(((n * M + m) * out[0] + o0) * out[1] + o1) * out[2] + o2] = float(acc);
          }
  return y;
}

std::map<std::string, Attribute> attrs_of(const Cfg& c) {
  std::map<std::string, Attribute> a;
  if (!c.strides.empty()) a["strides"] = attr_ints(c.strides);
  if (!c.pads.empty()) a["pads"] = attr_ints(c.pads);
  if (!c.dilations.empty()) a["dilations"] = attr_ints(c.dilations);
  if (c.group != 1) a["group"] = attr_i(c.group);
  if (!c.auto_pad.empty()) a["auto_pad"] = attr_s(c.auto_pad);
  return a;
}

void check_conv(const Cfg& c, uint32_t seed) {
  SCOPED_TRACE(Shape::of(c.x).str() + " * " + Shape::of(c.w).str() + " group " + std::to_string(c.group) + " " +
               c.auto_pad);
  Tensor x = random_tensor(c.x, seed), w = random_tensor(c.w, seed + 1);
  Tensor b = c.bias ? random_tensor({c.w[0]}, seed + 2) : Tensor();
  auto r = run_op("Conv", attrs_of(c), {x, w, b});
  ASSERT_TRUE(r.is_ok()) << r.message();
  const Tensor& y = r.value()[0];
  // Expected pads from the ONNX formulas, computed here independently.
  const size_t k = c.x.size() - 2;
  std::vector<int64_t> pads(2 * k, 0);
  for (size_t i = 0; i < k; ++i) {
    int64_t s = c.strides.empty() ? 1 : c.strides[i], d = c.dilations.empty() ? 1 : c.dilations[i];
    int64_t ek = (c.w[2 + i] - 1) * d + 1, in = c.x[2 + i];
    if (c.auto_pad == "SAME_UPPER" || c.auto_pad == "SAME_LOWER") {
      int64_t out = (in + s - 1) / s;
      int64_t total = std::max<int64_t>(0, (out - 1) * s + ek - in);
      pads[i] = c.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      pads[k + i] = total - pads[i];
      EXPECT_EQ(y.dims()[2 + i], out);
    } else if (!c.pads.empty() && c.auto_pad != "VALID") {
      pads = c.pads;
    }
    EXPECT_EQ(y.dims()[2 + i], (in + pads[i] + pads[k + i] - ek) / s + 1);
  }
  Tensor ref = naive_conv(x, w, c.bias ? &b : nullptr, y.dims(), pads, c.strides, c.dilations, c.group);
  EXPECT_LT(normalized_error(y, ref), 1e-5);
}

TEST(ConvOp, MatchesDirectLoops) {
  std::vector<Cfg> cfgs = {
      {{1, 3, 10}, {4, 3, 3}, {}, {}, {}, 1, "", true},                                           // 1D
      {{2, 3, 9, 11}, {5, 3, 3, 3}, {1, 1}, {1, 1, 1, 1}, {}, 1, "", true},                       // 2D pad 1
      {{1, 4, 13, 12}, {6, 2, 3, 2}, {2, 3}, {1, 0, 2, 1}, {2, 1}, 2, "", true},                  // group, dil, asym
      {{2, 6, 8, 8}, {6, 1, 3, 3}, {2, 2}, {1, 1, 1, 1}, {}, 6, "", false},                       // depthwise
      {{1, 8, 7, 7}, {12, 8, 1, 1}, {}, {}, {}, 1, "", true},                                     // 1x1 direct
      {{1, 3, 40, 30}, {7, 3, 5, 5}, {1, 1}, {2, 2, 2, 2}, {}, 1, "", true},                      // > 1 column tile
      {{1, 2, 5, 6, 7}, {3, 2, 2, 3, 2}, {1, 2, 1}, {0, 1, 1, 1, 0, 0}, {1, 1, 2}, 1, "", true},  // 3D
      {{1, 3, 7, 8}, {2, 3, 3, 3}, {2, 2}, {}, {}, 1, "SAME_UPPER", true},
      {{1, 3, 7, 8}, {2, 3, 4, 4}, {2, 3}, {}, {}, 1, "SAME_LOWER", true},
      {{1, 3, 7, 8}, {2, 3, 3, 2}, {2, 2}, {}, {}, 1, "VALID", false},
      {{3, 16, 9, 9}, {33, 16, 3, 3}, {1, 1}, {1, 1, 1, 1}, {}, 1, "", true},  // row edge tiles
  };
  uint32_t seed = 100;
  for (const Cfg& c : cfgs) check_conv(c, seed += 10);
}

TEST(ConvOp, Float64AndKernelShapeAttr) {
  Tensor x = Tensor::make(DataType::kFloat64, {1, 2, 5, 5}).take();
  Tensor w = Tensor::make(DataType::kFloat64, {3, 2, 3, 3}).take();
  for (int64_t i = 0; i < x.numel(); ++i) x.data_as<double>()[i] = 0.1 * double(i % 7) - 0.3;
  for (int64_t i = 0; i < w.numel(); ++i) w.data_as<double>()[i] = 0.05 * double(i % 5) - 0.1;
  auto r = run_op("Conv", {{"kernel_shape", attr_ints({3, 3})}}, {x, w});
  ASSERT_TRUE(r.is_ok()) << r.message();
  const Tensor& y = r.value()[0];
  ASSERT_EQ(y.dims(), (std::vector<int64_t>{1, 3, 3, 3}));
  // y[0,1,2,0] by hand.
  double e = 0;
  for (int c = 0; c < 2; ++c)
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j)
        e += w.data_as<double>()[((1 * 2 + c) * 3 + i) * 3 + j] * x.data_as<double>()[(c * 5 + 2 + i) * 5 + j];
  EXPECT_NEAR(y.data_as<double>()[(1 * 3 + 2) * 3 + 0], e, 1e-12);
}

TEST(ConvOp, RefusesBadAttributesAndShapes) {
  Tensor x = random_tensor({1, 4, 5, 5}, 1), w = random_tensor({2, 4, 3, 3}, 2);
  auto r = run_op("Conv", {{"strides", attr_ints({0, 1})}}, {x, w});
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.message().find("strides"), std::string::npos) << r.message();
  r = run_op("Conv", {{"pads", attr_ints({-1, 0, 0, 0})}}, {x, w});
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.message().find("pads"), std::string::npos) << r.message();
  r = run_op("Conv", {{"group", attr_i(0)}}, {x, w});
  EXPECT_FALSE(r.is_ok());
  r = run_op("Conv", {{"auto_pad", attr_s("SAME")}}, {x, w});
  EXPECT_FALSE(r.is_ok());
  r = run_op("Conv", {{"group", attr_i(3)}}, {x, w});  // 4 channels, group 3
  EXPECT_FALSE(r.is_ok());
  r = run_op("Conv", {}, {x, random_tensor({2, 3, 3, 3}, 3)});  // channel mismatch
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.message().find("channels"), std::string::npos) << r.message();
  r = run_op("Conv", {}, {random_tensor({1, 4, 2, 2}, 1), w});  // input smaller than kernel
  EXPECT_FALSE(r.is_ok());
  r = run_op("Conv", {{"kernel_shape", attr_ints({2, 2})}}, {x, w});  // disagrees with W
  EXPECT_FALSE(r.is_ok());
  r = run_op("Conv", {}, {x, w, random_tensor({3}, 4)});  // bias size
  EXPECT_FALSE(r.is_ok());
  r = run_op("Conv", {{"strides", attr_ints({int64_t(1) << 40, 1})}}, {x, w});
  EXPECT_FALSE(r.is_ok());
  r = run_op("Conv", {{"dilations", attr_ints({int64_t(1) << 31, 1})}}, {x, w});  // valid value, kernel too big
  EXPECT_FALSE(r.is_ok());
  r = run_op("ConvTranspose", {{"strides", attr_ints({int64_t(1) << 31, 1 << 30})}},
             {x, random_tensor({4, 2, 3, 3}, 5)});
  EXPECT_FALSE(r.is_ok());
  r = run_op("ConvTranspose", {{"pads", attr_ints({3, 3, 3, 3})}},
             {random_tensor({1, 4, 1, 1}, 6), random_tensor({4, 2, 3, 3}, 5)});
  EXPECT_FALSE(r.is_ok());  // output would be < 1
}

// Runs a node with all inputs known and `threads` threads (run_op uses one thread).
Tensor run_threads(const std::string& op, std::map<std::string, Attribute> attrs, const std::vector<Tensor>& ins,
                   int threads) {
  Node n;
  n.name = "t";
  n.op_type = op;
  n.attrs = std::move(attrs);
  for (size_t i = 0; i < ins.size(); ++i) n.inputs.push_back(static_cast<int>(i));
  n.outputs = {static_cast<int>(ins.size())};
  auto k = make_kernel(n, 17);
  EXPECT_TRUE(k.is_ok()) << k.message();
  std::vector<ValueInfo> infos(ins.size());
  std::vector<const ValueInfo*> ip;
  for (size_t i = 0; i < ins.size(); ++i) {
    infos[i].dtype = ins[i].dtype();
    infos[i].shape = Shape::of(ins[i].dims());
    ip.push_back(&infos[i]);
  }
  InferContext ictx(n, 17, ip);
  EXPECT_TRUE(k.value()->infer(ictx).is_ok());
  Tensor y = Tensor::make(ictx.outputs()[0].dtype, ictx.outputs()[0].shape.concrete()).take();
  std::vector<TensorRef> refs;
  for (const Tensor& t : ins) refs.push_back(TensorRef::of(t));
  std::vector<const TensorRef*> cp;
  for (auto& r : refs) cp.push_back(&r);
  TensorRef yr = TensorRef::of(y);
  std::vector<TensorRef*> op = {&yr};
  ComputeContext cctx(n, cp, op, threads);
  EXPECT_TRUE(k.value()->compute(cctx).is_ok());
  return y;
}

TEST(ConvOp, ThreadsGiveIdenticalResults) {
  struct T {
    std::string op;
    std::vector<int64_t> x, w;
    int64_t group;
  };
  for (const T& t : std::vector<T>{{"Conv", {1, 8, 30, 30}, {20, 8, 3, 3}, 1},
                                   {"Conv", {2, 3, 9, 9}, {6, 1, 3, 3}, 3},
                                   {"Conv", {1, 4, 8, 8}, {4, 1, 3, 3}, 4},
                                   {"ConvTranspose", {2, 4, 7, 7}, {4, 3, 3, 3}, 2}}) {
    Tensor x = random_tensor(t.x, 1), w = random_tensor(t.w, 2);
    std::map<std::string, Attribute> a = {{"group", attr_i(t.group)}, {"pads", attr_ints({1, 1, 1, 1})}};
    Tensor y1 = run_threads(t.op, a, {x, w}, 1), y2 = run_threads(t.op, a, {x, w}, 2);
    ASSERT_EQ(y1.dims(), y2.dims());
    EXPECT_EQ(std::memcmp(y1.data(), y2.data(), y1.nbytes()), 0) << t.op;
  }
}

TEST(ConvOp, SymbolicBatchPropagates) {
  Node n;
  n.name = "c";
  n.op_type = "Conv";
  n.inputs = {0, 1};
  n.outputs = {2};
  n.attrs["pads"] = attr_ints({1, 1, 1, 1});
  auto k = make_kernel(n, 17);
  ASSERT_TRUE(k.is_ok()) << k.message();
  ValueInfo x, w;
  x.dtype = w.dtype = DataType::kFloat32;
  x.shape = Shape({Dim::sym("batch"), Dim(3), Dim(8), Dim()});
  w.shape = Shape::of({4, 3, 3, 3});
  InferContext ctx(n, 17, {&x, &w});
  ASSERT_TRUE(k.value()->infer(ctx).is_ok());
  const Shape& y = ctx.outputs()[0].shape;
  ASSERT_EQ(y.rank(), 4);
  EXPECT_EQ(y.dims[0].symbol, "batch");
  EXPECT_EQ(y.dims[1].value, 4);
  EXPECT_EQ(y.dims[2].value, 8);
  EXPECT_FALSE(y.dims[3].known());
}

TEST(ConvResolve, PadsAndShapes) {
  ConvAttrs a;
  a.strides = {2, 2};
  a.auto_pad = AutoPad::kSameUpper;
  std::vector<int64_t> pads, y;
  ASSERT_TRUE(conv_resolve(a, {1, 3, 8, 7}, {4, 3, 4, 3}, pads, y).is_ok());
  // out = ceil(in/2) = 4, 4; total pad = 3*2+4-8 = 2 and 3*2+3-7 = 2.
  EXPECT_EQ(y, (std::vector<int64_t>{1, 4, 4, 4}));
  EXPECT_EQ(pads, (std::vector<int64_t>{1, 1, 1, 1}));
  a.strides = {1, 1};
  ASSERT_TRUE(conv_resolve(a, {1, 3, 8, 7}, {4, 3, 4, 3}, pads, y).is_ok());
  EXPECT_EQ(pads, (std::vector<int64_t>{1, 1, 2, 1}));  // odd total 3: extra at the end
  a.auto_pad = AutoPad::kSameLower;
  ASSERT_TRUE(conv_resolve(a, {1, 3, 8, 7}, {4, 3, 4, 3}, pads, y).is_ok());
  EXPECT_EQ(pads, (std::vector<int64_t>{2, 1, 1, 1}));
  a.group = 3;
  EXPECT_FALSE(conv_resolve(a, {1, 3, 8, 7}, {4, 3, 4, 3}, pads, y).is_ok());  // W dim1*group != C
}

// Direct transposed convolution: scatter x[n,c,i] * w[c,m,k] into y[n, g*mg+m, i*s - pb + k*d].
Tensor naive_conv_transpose(const Tensor& x, const Tensor& w, const Tensor* b, const std::vector<int64_t>& ydims,
                            const std::vector<int64_t>& pads, const std::vector<int64_t>& strides,
                            const std::vector<int64_t>& dil, int64_t group) {
  Tensor y = Tensor::make(DataType::kFloat32, ydims).take();
  auto in = dims3(x.dims()), out = dims3(ydims), kk = dims3(w.dims());
  auto s = sp3(x.dims(), strides, 1), d = sp3(x.dims(), dil, 1), pb = sp3(x.dims(), pads, 0);
  const int64_t N = x.dims()[0], C = x.dims()[1], mg = w.dims()[1], M = mg * group, cg = C / group;
  const int64_t osz = out[0] * out[1] * out[2];
  std::vector<double> acc(y.numel(), 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t o = 0; o < osz; ++o) acc[(n * M + m) * osz + o] = b ? b->data_as<float>()[m] : 0.0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t m = 0; m < mg; ++m)
        for (int64_t i0 = 0; i0 < in[0]; ++i0)
          for (int64_t i1 = 0; i1 < in[1]; ++i1)
            for (int64_t i2 = 0; i2 < in[2]; ++i2)
              for (int64_t k0 = 0; k0 < kk[0]; ++k0)
                for (int64_t k1 = 0; k1 < kk[1]; ++k1)
                  for (int64_t k2 = 0; k2 < kk[2]; ++k2) {
                    int64_t o0 = i0 * s[0] - pb[0] + k0 * d[0], o1 = i1 * s[1] - pb[1] + k1 * d[1],
                            o2 = i2 * s[2] - pb[2] + k2 * d[2];
                    if (o0 < 0 || o0 >= out[0] || o1 < 0 || o1 >= out[1] || o2 < 0 || o2 >= out[2]) continue;
                    int64_t co = (c / cg) * mg + m;
                    acc[((n * M + co) * out[0] + o0) * out[1] * out[2] + o1 * out[2] + o2] +=
                        double(x.data_as<float>()[((n * C + c) * in[0] + i0) * in[1] * in[2] + i1 * in[2] + i2]) *
                        w.data_as<float>()[(((c * mg + m) * kk[0] + k0) * kk[1] + k1) * kk[2] + k2];
                  }
  for (int64_t i = 0; i < y.numel(); ++i) y.data_as<float>()[i] = float(acc[i]);
  return y;
}

TEST(ConvTransposeOp, MatchesDirectLoops) {
  struct TCfg {
    Cfg c;
    std::vector<int64_t> output_padding, output_shape;
    std::vector<int64_t> expect_spatial;
  };
  std::vector<TCfg> cfgs = {
      {{{1, 2, 5}, {2, 3, 3}, {2}, {}, {}, 1, "", true}, {}, {}, {11}},
      {{{2, 3, 4, 5}, {3, 2, 3, 3}, {2, 2}, {1, 1, 1, 1}, {}, 1, "", true}, {1, 1}, {}, {8, 10}},
      {{{1, 4, 3, 4}, {4, 3, 3, 2}, {1, 2}, {0, 1, 1, 0}, {2, 1}, 2, "", true}, {}, {}, {6, 7}},
      {{{1, 1, 3, 3}, {1, 2, 3, 3}, {3, 2}, {}, {}, 1, "", false}, {}, {10, 8}, {10, 8}},
      {{{1, 1, 3, 3}, {1, 2, 3, 3}, {2, 2}, {}, {}, 1, "SAME_UPPER", true}, {}, {}, {6, 6}},
      {{{1, 2, 3, 4, 2}, {2, 2, 2, 3, 2}, {2, 1, 2}, {}, {}, 1, "", true}, {}, {}, {6, 6, 4}},
      {{{1, 6, 5, 5}, {6, 1, 4, 4}, {2, 2}, {1, 1, 1, 1}, {}, 6, "", true}, {}, {}, {10, 10}},  // depthwise
  };
  uint32_t seed = 500;
  for (const TCfg& t : cfgs) {
    const Cfg& c = t.c;
    SCOPED_TRACE(Shape::of(c.x).str() + " * " + Shape::of(c.w).str());
    auto attrs = attrs_of(c);
    if (!t.output_padding.empty()) attrs["output_padding"] = attr_ints(t.output_padding);
    if (!t.output_shape.empty()) attrs["output_shape"] = attr_ints(t.output_shape);
    Tensor x = random_tensor(c.x, seed += 10), w = random_tensor(c.w, seed + 1);
    Tensor b = c.bias ? random_tensor({c.w[1] * c.group}, seed + 2) : Tensor();
    auto r = run_op("ConvTranspose", attrs, {x, w, b});
    ASSERT_TRUE(r.is_ok()) << r.message();
    const Tensor& y = r.value()[0];
    std::vector<int64_t> spatial(y.dims().begin() + 2, y.dims().end());
    EXPECT_EQ(spatial, t.expect_spatial);
    // Pads: given, or generated from the requested output size (extra at the end for SAME_UPPER).
    const size_t k = c.x.size() - 2;
    std::vector<int64_t> pads = c.pads.empty() ? std::vector<int64_t>(2 * k, 0) : c.pads;
    if (c.auto_pad == "SAME_UPPER" || !t.output_shape.empty()) {
      for (size_t i = 0; i < k; ++i) {
        int64_t s = c.strides.empty() ? 1 : c.strides[i];
        int64_t natural = s * (c.x[2 + i] - 1) + c.w[2 + i];
        int64_t total = natural - spatial[i];
        int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
        pads[i] = c.auto_pad == "SAME_UPPER" ? half : total - half;
        pads[k + i] = total - pads[i];
      }
    }
    Tensor ref = naive_conv_transpose(x, w, c.bias ? &b : nullptr, y.dims(), pads, c.strides, c.dilations, c.group);
    EXPECT_LT(normalized_error(y, ref), 1e-5);
  }
}

TEST(FusedConvOp, ConvBiasResidualActivation) {
  Tensor x = random_tensor({2, 4, 6, 6}, 7), w = random_tensor({6, 4, 3, 3}, 8), b = random_tensor({6}, 9);
  Tensor z = random_tensor({2, 6, 6, 6}, 10);
  std::map<std::string, Attribute> a = {{"pads", attr_ints({1, 1, 1, 1})}};
  auto plain = run_op("Conv", a, {x, w, b});
  ASSERT_TRUE(plain.is_ok()) << plain.message();
  for (std::string act : {"", "Relu", "LeakyRelu", "Clip", "Swish"}) {
    SCOPED_TRACE(act);
    auto fa = a;
    fa["activation"] = attr_s(act);
    if (act == "LeakyRelu") fa["activation_alpha"] = attr_f(0.2f);
    if (act == "Clip") {
      fa["activation_alpha"] = attr_f(-0.5f);
      fa["activation_beta"] = attr_f(0.5f);
    }
    auto fused = run_op("FusedConv", fa, {x, w, b, z}, 1, 17, {}, "com.infera");
    ASSERT_TRUE(fused.is_ok()) << fused.message();
    Tensor expect = plain.value()[0].clone();
    float* e = expect.data_as<float>();
    for (int64_t i = 0; i < expect.numel(); ++i) {
      float v = e[i] + z.data_as<float>()[i];
      if (act == "Relu") v = std::max(v, 0.f);
      if (act == "LeakyRelu") v = v < 0 ? 0.2f * v : v;
      if (act == "Clip") v = std::min(std::max(v, -0.5f), 0.5f);
      if (act == "Swish") v = static_cast<float>(v / (1.0 + std::exp(-double(v))));  // alpha defaults to 1
      e[i] = v;
    }
    EXPECT_LT(normalized_error(fused.value()[0], expect), 1e-6);
  }
  auto bad = run_op("FusedConv", {{"activation", attr_s("Bogus")}}, {x, w}, 1, 17, {}, "com.infera");
  EXPECT_FALSE(bad.is_ok());
  auto bad_z = run_op("FusedConv", a, {x, w, b, random_tensor({2, 6, 5, 6}, 11)}, 1, 17, {}, "com.infera");
  EXPECT_FALSE(bad_z.is_ok());
}

}  // namespace
}  // namespace infera::test
