// Pooling (AveragePool, MaxPool + Indices, Global*) and normalization (BatchNormalization,
// InstanceNormalization, LRN) reference kernels against naive formulas in this file.
#include <gtest/gtest.h>

#include <limits>

#include "op_test_util.h"
#include "ops/activation.h"
#include "ops/pool.h"

namespace infera::test {
namespace {

struct PCfg {
  std::vector<int64_t> x, kernel, strides, pads, dilations;
  bool ceil = false, include_pad = false;
  std::string auto_pad;
};

std::map<std::string, Attribute> pool_attrs(const PCfg& c) {
  std::map<std::string, Attribute> a = {{"kernel_shape", attr_ints(c.kernel)}};
  if (!c.strides.empty()) a["strides"] = attr_ints(c.strides);
  if (!c.pads.empty()) a["pads"] = attr_ints(c.pads);
  if (!c.dilations.empty()) a["dilations"] = attr_ints(c.dilations);
  if (c.ceil) a["ceil_mode"] = attr_i(1);
  if (c.include_pad) a["count_include_pad"] = attr_i(1);
  if (!c.auto_pad.empty()) a["auto_pad"] = attr_s(c.auto_pad);
  return a;
}

// Naive pooling over 2-D planes (1-D inputs use H = 1). Windows clipped to the input;
// count_include_pad counts taps inside the declared pads.
void naive_pool(const Tensor& x, const PCfg& c, const std::vector<int64_t>& pads, const std::vector<int64_t>& ydims,
                bool is_max, std::vector<float>& y, std::vector<int64_t>& idx) {
  const bool one_d = c.kernel.size() == 1;
  const int64_t H = one_d ? 1 : x.dims()[2], W = x.dims().back();
  const int64_t OH = one_d ? 1 : ydims[2], OW = ydims.back();
  auto at = [&](const std::vector<int64_t>& v, int i, int64_t d) {
    if (v.empty()) return d;
    return one_d ? (i == 0 ? d : v[0]) : v[i];
  };
  const int64_t kh = at(c.kernel, 0, 1), kw = at(c.kernel, 1, 1), sh = at(c.strides, 0, 1), sw = at(c.strides, 1, 1);
  const int64_t dh = at(c.dilations, 0, 1), dw = at(c.dilations, 1, 1);
  const size_t k = c.kernel.size();
  const int64_t pt = one_d ? 0 : pads[0], pl = pads[k - 1], pbm = one_d ? 0 : pads[k], pr = pads[2 * k - 1];
  const int64_t planes = x.dims()[0] * x.dims()[1];
  y.assign(planes * OH * OW, 0.f);
  idx.assign(y.size(), -1);
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        double sum = 0;
        int64_t cnt = 0, cnt_pad = 0;
        float m = -INFINITY;
        int64_t mi = -1;
        for (int64_t i = 0; i < kh; ++i)
          for (int64_t j = 0; j < kw; ++j) {
            int64_t ih = oh * sh - pt + i * dh, iw = ow * sw - pl + j * dw;
            if (ih >= -pt && ih < H + pbm && iw >= -pl && iw < W + pr) ++cnt_pad;
            if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
            float v = x.data_as<float>()[(p * H + ih) * W + iw];
            sum += v;
            ++cnt;
            if (mi < 0 || v > m) m = v, mi = (p * H + ih) * W + iw;
          }
        const int64_t o = (p * OH + oh) * OW + ow;
        y[o] = is_max ? m : float(sum / (c.include_pad ? cnt_pad : cnt));
        idx[o] = mi;
      }
}

void check_pool(const PCfg& c, bool is_max, uint32_t seed) {
  SCOPED_TRACE(Shape::of(c.x).str() + " kernel " + Shape::of(c.kernel).str() + (is_max ? " max" : " avg") +
               (c.ceil ? " ceil" : "") + (c.include_pad ? " include_pad" : "") + " " + c.auto_pad);
  Tensor x = random_tensor(c.x, seed);
  auto r = run_op(is_max ? "MaxPool" : "AveragePool", pool_attrs(c), {x}, is_max ? 2 : 1, 19);
  ASSERT_TRUE(r.is_ok()) << r.message();
  const Tensor& y = r.value()[0];
  // Expected output size and pads, from the ONNX/PyTorch formulas.
  const size_t k = c.kernel.size();
  std::vector<int64_t> pads = c.pads.empty() ? std::vector<int64_t>(2 * k, 0) : c.pads;
  for (size_t i = 0; i < k; ++i) {
    int64_t s = c.strides.empty() ? 1 : c.strides[i], d = c.dilations.empty() ? 1 : c.dilations[i];
    int64_t ek = (c.kernel[i] - 1) * d + 1, in = c.x[2 + i], out;
    if (!c.auto_pad.empty()) {
      out = (in + s - 1) / s;
      int64_t total = std::max<int64_t>(0, (out - 1) * s + ek - in);
      pads[i] = c.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      pads[k + i] = total - pads[i];
    } else {
      double f = double(in + pads[i] + pads[k + i] - ek) / s;
      out = int64_t(c.ceil ? std::ceil(f) : std::floor(f)) + 1;
      if (c.ceil && (out - 1) * s >= in + pads[i]) --out;
    }
    EXPECT_EQ(y.dims()[2 + i], out);
  }
  std::vector<float> ref;
  std::vector<int64_t> ref_idx;
  naive_pool(x, c, pads, y.dims(), is_max, ref, ref_idx);
  ASSERT_EQ(static_cast<size_t>(y.numel()), ref.size());
  for (size_t i = 0; i < ref.size(); ++i) EXPECT_NEAR(y.data_as<float>()[i], ref[i], 1e-5) << i;
  if (is_max) {
    const Tensor& ix = r.value()[1];
    ASSERT_EQ(ix.dtype(), DataType::kInt64);
    for (size_t i = 0; i < ref.size(); ++i) EXPECT_EQ(ix.data_as<int64_t>()[i], ref_idx[i]) << i;
  }
}

TEST(PoolOp, MatchesNaiveWindows) {
  std::vector<PCfg> cfgs = {
      {{1, 2, 9}, {3}, {2}, {1, 1}},
      {{2, 3, 8, 9}, {3, 3}, {2, 2}, {1, 1, 1, 1}},
      {{1, 2, 7, 7}, {3, 3}, {2, 2}, {}, {}, true},                  // ceil
      {{1, 2, 7, 8}, {3, 2}, {2, 3}, {1, 0, 1, 1}, {}, true, true},  // ceil + include_pad
      {{1, 2, 9, 9}, {2, 3}, {1, 2}, {0, 1, 1, 0}, {2, 2}},          // dilations
      {{1, 1, 2, 2}, {1, 1}, {2, 2}, {}, {}, true},                  // ceil: output reduced to 1
      {{1, 3, 6, 7}, {3, 3}, {2, 2}, {}, {}, false, false, "SAME_UPPER"},
      {{1, 3, 6, 7}, {2, 4}, {1, 1}, {}, {}, false, true, "SAME_LOWER"},
      {{1, 1, 5, 5}, {3, 3}, {1, 1}, {2, 2, 2, 2}, {}, false, true},
  };
  uint32_t seed = 1;
  for (const PCfg& c : cfgs) {
    check_pool(c, true, ++seed);
    check_pool(c, false, ++seed);
  }
}

TEST(PoolOp, MaxPool3dAndStorageOrder) {
  // 3D: the max of each 2x2x2 block of a ramp is its last element.
  std::vector<float> v(64);
  for (int i = 0; i < 64; ++i) v[i] = float(i);
  Tensor x = make_tensor<float>(DataType::kFloat32, {1, 1, 4, 4, 4}, v);
  auto r = run_op("MaxPool", {{"kernel_shape", attr_ints({2, 2, 2})}, {"strides", attr_ints({2, 2, 2})}}, {x}, 2);
  ASSERT_TRUE(r.is_ok()) << r.message();
  ASSERT_EQ(r.value()[0].dims(), (std::vector<int64_t>{1, 1, 2, 2, 2}));
  EXPECT_EQ(r.value()[0].data_as<float>()[0], 21.f);  // (1,1,1) = 16+4+1
  EXPECT_EQ(r.value()[1].data_as<int64_t>()[7], 63);
  // storage_order 1: column-major index h + w * H (ONNX test maxpool_with_argmax_2d_precomputed_strides).
  std::vector<float> v2(25);
  for (int i = 0; i < 25; ++i) v2[i] = float(i + 1);
  Tensor x2 = make_tensor<float>(DataType::kFloat32, {1, 1, 5, 5}, v2);
  r = run_op("MaxPool",
             {{"kernel_shape", attr_ints({2, 2})}, {"strides", attr_ints({2, 2})}, {"storage_order", attr_i(1)}}, {x2},
             2);
  ASSERT_TRUE(r.is_ok()) << r.message();
  const int64_t* ix = r.value()[1].data_as<int64_t>();
  EXPECT_EQ(std::vector<int64_t>(ix, ix + 4), (std::vector<int64_t>{6, 16, 8, 18}));
}

TEST(PoolOp, MaxPoolUint8AndErrors) {
  Tensor x = make_tensor<uint8_t>(DataType::kUInt8, {1, 1, 2, 3}, {1, 200, 3, 4, 5, 6});
  auto r = run_op("MaxPool", {{"kernel_shape", attr_ints({2, 2})}}, {x});
  ASSERT_TRUE(r.is_ok()) << r.message();
  EXPECT_EQ(r.value()[0].data_as<uint8_t>()[0], 200);
  EXPECT_EQ(r.value()[0].data_as<uint8_t>()[1], 200);
  Tensor f = random_tensor({1, 1, 4, 4}, 3);
  EXPECT_FALSE(run_op("MaxPool", {}, {f}).is_ok());  // kernel_shape required
  EXPECT_FALSE(run_op("MaxPool", {{"kernel_shape", attr_ints({2, 2})}, {"strides", attr_ints({0, 1})}}, {f}).is_ok());
  EXPECT_FALSE(run_op("AveragePool", {{"kernel_shape", attr_ints({2})}}, {f}).is_ok());     // rank mismatch
  EXPECT_FALSE(run_op("AveragePool", {{"kernel_shape", attr_ints({5, 5})}}, {f}).is_ok());  // kernel > input
  EXPECT_FALSE(run_op("AveragePool", {{"kernel_shape", attr_ints({2, 2})}}, {x}).is_ok());  // avg of uint8
}

TEST(PoolResolve, CeilModeAndSame) {
  PoolAttrs a;
  a.kernel_shape = {3, 3};
  a.strides = {2, 2};
  a.ceil_mode = true;
  std::vector<int64_t> pads, y;
  ASSERT_TRUE(pool_resolve(a, {1, 1, 6, 7}, pads, y).is_ok());
  EXPECT_EQ(y, (std::vector<int64_t>{1, 1, 3, 3}));  // ceil(3/2)+1 = 3, ceil(4/2)+1 = 3
  a.ceil_mode = false;
  a.auto_pad = AutoPad::kSameUpper;
  ASSERT_TRUE(pool_resolve(a, {1, 1, 6, 7}, pads, y).is_ok());
  EXPECT_EQ(y, (std::vector<int64_t>{1, 1, 3, 4}));
  EXPECT_EQ(pads, (std::vector<int64_t>{0, 1, 1, 1}));
}

TEST(GlobalPoolOp, AverageAndMax) {
  Tensor x = random_tensor({2, 3, 4, 5}, 9);
  auto a = run_op("GlobalAveragePool", {}, {x});
  auto m = run_op("GlobalMaxPool", {}, {x});
  ASSERT_TRUE(a.is_ok() && m.is_ok());
  ASSERT_EQ(a.value()[0].dims(), (std::vector<int64_t>{2, 3, 1, 1}));
  for (int p = 0; p < 6; ++p) {
    double s = 0;
    float mx = -INFINITY;
    for (int i = 0; i < 20; ++i) {
      s += x.data_as<float>()[p * 20 + i];
      mx = std::max(mx, x.data_as<float>()[p * 20 + i]);
    }
    EXPECT_NEAR(a.value()[0].data_as<float>()[p], s / 20, 1e-6);
    EXPECT_EQ(m.value()[0].data_as<float>()[p], mx);
  }
}

TEST(BatchNormOp, InferenceMatchesFormula) {
  Tensor x = random_tensor({2, 3, 4, 5}, 1), sc = random_tensor({3}, 2), b = random_tensor({3}, 3);
  Tensor mean = random_tensor({3}, 4), var = random_tensor({3}, 5, 0.5f, 2.f);
  for (int64_t opset : {7, 9, 15}) {
    auto r = run_op("BatchNormalization", {{"epsilon", attr_f(1e-3f)}}, {x, sc, b, mean, var}, 1, opset);
    ASSERT_TRUE(r.is_ok()) << r.message();
    Tensor e = x.clone();
    for (int64_t i = 0; i < e.numel(); ++i) {
      int c = (i / 20) % 3;
      e.data_as<float>()[i] = (x.data_as<float>()[i] - mean.data_as<float>()[c]) /
                                  std::sqrt(var.data_as<float>()[c] + 1e-3f) * sc.data_as<float>()[c] +
                              b.data_as<float>()[c];
    }
    EXPECT_LT(normalized_error(r.value()[0], e), 1e-6) << "opset " << opset;
  }
}

TEST(BatchNormOp, FusedIsTheActivationOfTheNorm) {
  // com.infera.FusedBatchNorm (fuse_conv_activation) = act(BatchNormalization(x)), NaN kept.
  Tensor x = random_tensor({2, 3, 4, 5}, 11), sc = random_tensor({3}, 12), b = random_tensor({3}, 13);
  Tensor mean = random_tensor({3}, 14), var = random_tensor({3}, 15, 0.5f, 2.f);
  x.data_as<float>()[7] = std::numeric_limits<float>::quiet_NaN();
  auto bn = run_op("BatchNormalization", {{"epsilon", attr_f(1e-3f)}}, {x, sc, b, mean, var}, 1, 15);
  ASSERT_TRUE(bn.is_ok()) << bn.message();
  struct A {
    const char* act;
    float alpha, beta;
  };
  for (const A& a : {A{"Relu", 0.f, 0.f}, A{"Clip", -0.5f, 0.25f}, A{"Sigmoid", 0.f, 0.f}}) {
    std::map<std::string, Attribute> at = {{"epsilon", attr_f(1e-3f)}, {"activation", attr_s(a.act)}};
    if (std::string(a.act) == "Clip") at["activation_alpha"] = attr_f(a.alpha), at["activation_beta"] = attr_f(a.beta);
    auto r = run_op("FusedBatchNorm", at, {x, sc, b, mean, var}, 1, 15, {}, "com.infera");
    ASSERT_TRUE(r.is_ok()) << a.act << ": " << r.message();
    const ActivationDef* d = activation_by_name(a.act);
    ASSERT_NE(d, nullptr);
    const Activation act{d->kind, std::string(a.act) == "Clip" ? a.alpha : d->alpha_default,
                         std::string(a.act) == "Clip" ? a.beta : d->beta_default};
    for (int64_t i = 0; i < x.numel(); ++i) {
      const float want = activation_ref(act, bn.value()[0].data_as<float>()[i]);
      const float got = r.value()[0].template data_as<float>()[i];
      if (std::isnan(want))
        EXPECT_TRUE(std::isnan(got)) << a.act << " at " << i;
      else
        EXPECT_FLOAT_EQ(got, want) << a.act << " at " << i;
    }
  }
  auto bad =
      run_op("FusedBatchNorm", {{"activation", attr_s("NoSuchAct")}}, {x, sc, b, mean, var}, 1, 15, {}, "com.infera");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.message().find("unsupported activation 'NoSuchAct'"), std::string::npos) << bad.message();
}

TEST(BatchNormOp, SpatialZeroAtOpset7) {
  // spatial = 0: statistics per (channel, position).
  Tensor x = random_tensor({2, 2, 3}, 1), sc = random_tensor({2, 3}, 2), b = random_tensor({2, 3}, 3);
  Tensor mean = random_tensor({2, 3}, 4), var = random_tensor({2, 3}, 5, 0.5f, 2.f);
  auto r = run_op("BatchNormalization", {{"spatial", attr_i(0)}}, {x, sc, b, mean, var}, 1, 7);
  ASSERT_TRUE(r.is_ok()) << r.message();
  for (int64_t i = 0; i < x.numel(); ++i) {
    int p = i % 6;
    float e = (x.data_as<float>()[i] - mean.data_as<float>()[p]) / std::sqrt(var.data_as<float>()[p] + 1e-5f) *
                  sc.data_as<float>()[p] +
              b.data_as<float>()[p];
    EXPECT_NEAR(r.value()[0].data_as<float>()[i], e, 1e-5);
  }
}

TEST(BatchNormOp, TrainingModeStatistics) {
  Tensor x = random_tensor({3, 2, 4}, 11), sc = random_tensor({2}, 12), b = random_tensor({2}, 13);
  Tensor mean = random_tensor({2}, 14), var = random_tensor({2}, 15, 0.5f, 2.f);
  auto r = run_op("BatchNormalization", {{"training_mode", attr_i(1)}, {"momentum", attr_f(0.8f)}},
                  {x, sc, b, mean, var}, 3, 15);
  ASSERT_TRUE(r.is_ok()) << r.message();
  for (int c = 0; c < 2; ++c) {
    double s = 0, q = 0;
    for (int n = 0; n < 3; ++n)
      for (int i = 0; i < 4; ++i) s += x.data_as<float>()[(n * 2 + c) * 4 + i];
    double m = s / 12;
    for (int n = 0; n < 3; ++n)
      for (int i = 0; i < 4; ++i) q += std::pow(x.data_as<float>()[(n * 2 + c) * 4 + i] - m, 2);
    double v = q / 12;
    EXPECT_NEAR(r.value()[1].data_as<float>()[c], mean.data_as<float>()[c] * 0.8 + m * 0.2, 1e-6);
    EXPECT_NEAR(r.value()[2].data_as<float>()[c], var.data_as<float>()[c] * 0.8 + v * 0.2, 1e-6);
    float y0 =
        float((x.data_as<float>()[c * 4] - m) / std::sqrt(v + 1e-5) * sc.data_as<float>()[c] + b.data_as<float>()[c]);
    EXPECT_NEAR(r.value()[0].data_as<float>()[c * 4], y0, 1e-5);
  }
}

TEST(InstanceNormOp, MatchesFormula) {
  Tensor x = random_tensor({2, 3, 5, 4}, 21), sc = random_tensor({3}, 22), b = random_tensor({3}, 23);
  auto r = run_op("InstanceNormalization", {{"epsilon", attr_f(1e-2f)}}, {x, sc, b});
  ASSERT_TRUE(r.is_ok()) << r.message();
  for (int p = 0; p < 6; ++p) {
    const float* xp = x.data_as<float>() + p * 20;
    double m = 0, v = 0;
    for (int i = 0; i < 20; ++i) m += xp[i] / 20.0;
    for (int i = 0; i < 20; ++i) v += (xp[i] - m) * (xp[i] - m) / 20.0;
    for (int i = 0; i < 20; ++i) {
      double e = (xp[i] - m) / std::sqrt(v + 1e-2) * sc.data_as<float>()[p % 3] + b.data_as<float>()[p % 3];
      EXPECT_NEAR(r.value()[0].data_as<float>()[p * 20 + i], e, 1e-5);
    }
  }
  EXPECT_FALSE(run_op("InstanceNormalization", {}, {x, random_tensor({4}, 1), b}).is_ok());
}

TEST(LrnOp, MatchesFormula) {
  Tensor x = random_tensor({2, 5, 3, 3}, 31);
  const float alpha = 2e-3f, beta = 0.6f, bias = 1.5f;
  const int64_t size = 4;
  auto r = run_op(
      "LRN", {{"alpha", attr_f(alpha)}, {"beta", attr_f(beta)}, {"bias", attr_f(bias)}, {"size", attr_i(size)}}, {x});
  ASSERT_TRUE(r.is_ok()) << r.message();
  for (int n = 0; n < 2; ++n)
    for (int c = 0; c < 5; ++c)
      for (int i = 0; i < 9; ++i) {
        double sq = 0;
        for (int cc = std::max(0, c - 1); cc <= std::min(4, c + 2); ++cc)
          sq += std::pow(x.data_as<float>()[(n * 5 + cc) * 9 + i], 2);
        double e = x.data_as<float>()[(n * 5 + c) * 9 + i] / std::pow(bias + alpha / size * sq, beta);
        EXPECT_NEAR(r.value()[0].data_as<float>()[(n * 5 + c) * 9 + i], e, 1e-6);
      }
  EXPECT_FALSE(run_op("LRN", {}, {x}).is_ok());  // size required
}

}  // namespace
}  // namespace infera::test
