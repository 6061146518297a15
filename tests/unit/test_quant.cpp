// Quantization ops on seeded random inputs: QuantizeLinear / DequantizeLinear against the formula,
// ConvInteger / MatMulInteger against float Conv / MatMul on the same integer values (exact),
// QLinearConv / QLinearMatMul against DequantizeLinear -> float op -> QuantizeLinear (within one
// quantization step: float accumulation may round a half case the other way), and the bad inputs.
#include <cmath>

#include "op_test_util.h"

namespace infera::test {
namespace {

template <class T>
Tensor random_ints(DataType dt, std::vector<int64_t> dims, uint32_t seed, int lo, int hi) {
  Tensor t = Tensor::make(dt, std::move(dims)).take();
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> u(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<T>()[i] = static_cast<T>(u(rng));
  return t;
}

template <class T>
Tensor to_float(const Tensor& t) {
  Tensor f = Tensor::make(DataType::kFloat32, t.dims()).take();
  for (int64_t i = 0; i < t.numel(); ++i) f.data_as<float>()[i] = static_cast<float>(t.data_as<T>()[i]);
  return f;
}

Tensor scalar_f(float v) { return make_tensor<float>(DataType::kFloat32, {}, {v}); }
template <class T>
Tensor scalar_i(DataType dt, T v) {
  return make_tensor<T>(dt, {}, {v});
}

// Largest |a - b| over two integer tensors of the same dtype T.
template <class T>
int64_t max_int_diff(const Tensor& a, const Tensor& b) {
  if (a.dims() != b.dims() || a.dtype() != b.dtype()) return 1 << 30;
  int64_t m = 0;
  for (int64_t i = 0; i < a.numel(); ++i)
    m = std::max<int64_t>(m, std::llabs(int64_t(a.data_as<T>()[i]) - int64_t(b.data_as<T>()[i])));
  return m;
}

TEST(QuantOps, QuantizeLinearPerTensorAndPerAxisMatchFormula) {
  Tensor x = random_tensor({2, 3, 5}, 1, -4.f, 4.f);
  x.data_as<float>()[0] = 0.25f;  // exact halves: round half to even
  x.data_as<float>()[1] = 0.75f;
  x.data_as<float>()[2] = 1000.f;  // saturates
  // Per tensor, int8 with a zero point.
  auto r = run_op("QuantizeLinear", {}, {x, scalar_f(0.5f), scalar_i<int8_t>(DataType::kInt8, 3)}, 1, 13);
  ASSERT_TRUE(r.is_ok()) << r.message();
  const Tensor& y = r.value()[0];
  ASSERT_EQ(y.dtype(), DataType::kInt8);
  for (int64_t i = 0; i < x.numel(); ++i) {
    double want = std::nearbyint(x.data_as<float>()[i] / 0.5f) + 3;
    want = std::min(127.0, std::max(-128.0, want));
    ASSERT_EQ(y.data_as<int8_t>()[i], static_cast<int8_t>(want)) << i;
  }
  EXPECT_EQ(y.data_as<int8_t>()[0], 3);  // 0.5 rounds to 0
  EXPECT_EQ(y.data_as<int8_t>()[1], 5);  // 1.5 rounds to 2
  // Per axis 1 (3 channels), uint8; no zero point given means uint8 with zero point 0.
  Tensor s = make_tensor<float>(DataType::kFloat32, {3}, {0.1f, 0.2f, 0.05f});
  Tensor z = make_tensor<uint8_t>(DataType::kUInt8, {3}, {128, 10, 0});
  r = run_op("QuantizeLinear", {{"axis", attr_i(1)}}, {x, s, z}, 1, 13);
  ASSERT_TRUE(r.is_ok()) << r.message();
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t c = (i / 5) % 3;
    double want = std::nearbyint(x.data_as<float>()[i] / s.data_as<float>()[c]) + z.data_as<uint8_t>()[c];
    want = std::min(255.0, std::max(0.0, want));
    ASSERT_EQ(r.value()[0].data_as<uint8_t>()[i], static_cast<uint8_t>(want)) << i;
  }
  r = run_op("QuantizeLinear", {}, {x, scalar_f(0.5f)}, 1, 13);
  ASSERT_TRUE(r.is_ok()) << r.message();
  EXPECT_EQ(r.value()[0].dtype(), DataType::kUInt8);
}

TEST(QuantOps, BlockedQuantizeAndDequantize) {
  Tensor x = random_tensor({4, 6}, 2, -2.f, 2.f);
  // Blocks of 4 along axis 1: 2 blocks, the second partial (2 elements).
  Tensor s = random_tensor({4, 2}, 3, 0.01f, 0.05f);
  auto q = run_op("QuantizeLinear", {{"axis", attr_i(1)}, {"block_size", attr_i(4)}},
                  {x, s, Tensor::make(DataType::kInt8, {4, 2}).take()}, 1, 21);
  ASSERT_TRUE(q.is_ok()) << q.message();
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 6; ++j) {
      const float sc = s.data_as<float>()[i * 2 + j / 4];
      double want = std::min(127.0, std::max(-128.0, double(std::nearbyint(x.data_as<float>()[i * 6 + j] / sc))));
      ASSERT_EQ(q.value()[0].data_as<int8_t>()[i * 6 + j], static_cast<int8_t>(want));
    }
  auto d = run_op("DequantizeLinear", {{"axis", attr_i(1)}, {"block_size", attr_i(4)}}, {q.value()[0], s}, 1, 21);
  ASSERT_TRUE(d.is_ok()) << d.message();
  for (int64_t i = 0; i < 24; ++i) {
    const float sc = s.data_as<float>()[(i / 6) * 2 + (i % 6) / 4];
    EXPECT_FLOAT_EQ(d.value()[0].data_as<float>()[i], q.value()[0].data_as<int8_t>()[i] * sc);
  }
  // Wrong block count: 3 blocks given for 2.
  auto bad = run_op("QuantizeLinear", {{"axis", attr_i(1)}, {"block_size", attr_i(4)}},
                    {x, random_tensor({4, 3}, 4, 0.01f, 0.05f)}, 1, 21);
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.message().find("block_size 4"), std::string::npos) << bad.message();
}

TEST(QuantOps, DequantizeRoundTripPerAxisWithinHalfStep) {
  Tensor x = random_tensor({4, 3, 2, 2}, 5, -1.f, 1.f);
  Tensor s = make_tensor<float>(DataType::kFloat32, {4}, {0.01f, 0.02f, 0.008f, 0.03f});
  Tensor z = Tensor::make(DataType::kInt8, {4}).take();
  auto q = run_op("QuantizeLinear", {{"axis", attr_i(0)}}, {x, s, z}, 1, 13);
  ASSERT_TRUE(q.is_ok()) << q.message();
  auto d = run_op("DequantizeLinear", {{"axis", attr_i(0)}}, {q.value()[0], s, z}, 1, 13);
  ASSERT_TRUE(d.is_ok()) << d.message();
  for (int64_t i = 0; i < x.numel(); ++i)
    EXPECT_LE(std::fabs(d.value()[0].data_as<float>()[i] - x.data_as<float>()[i]),
              s.data_as<float>()[i / 12] * 0.5f + 1e-7f);
  // int32 biases dequantize with zero point 0.
  Tensor b = make_tensor<int32_t>(DataType::kInt32, {3}, {-1000000, 0, 77});
  auto db = run_op("DequantizeLinear", {}, {b, scalar_f(0.001f)}, 1, 13);
  ASSERT_TRUE(db.is_ok()) << db.message();
  EXPECT_FLOAT_EQ(db.value()[0].data_as<float>()[0], -1000.f);
  EXPECT_FLOAT_EQ(db.value()[0].data_as<float>()[2], 77 * 0.001f);
}

TEST(QuantOps, DynamicQuantizeLinearFormulaAndZeroRange) {
  Tensor x = random_tensor({3, 7}, 6, -3.f, 5.f);
  auto r = run_op("DynamicQuantizeLinear", {}, {x}, 3, 11);
  ASSERT_TRUE(r.is_ok()) << r.message();
  float lo = 0, hi = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    lo = std::min(lo, x.data_as<float>()[i]);
    hi = std::max(hi, x.data_as<float>()[i]);
  }
  const float scale = (hi - lo) / 255.f;
  EXPECT_FLOAT_EQ(r.value()[1].data_as<float>()[0], scale);
  const uint8_t zp = static_cast<uint8_t>(std::nearbyint(std::min(255.f, std::max(0.f, -lo / scale))));
  EXPECT_EQ(r.value()[2].data_as<uint8_t>()[0], zp);
  for (int64_t i = 0; i < x.numel(); ++i) {
    double want = std::min(255.0, std::max(0.0, std::nearbyint(double(x.data_as<float>()[i] / scale)) + zp));
    ASSERT_EQ(r.value()[0].data_as<uint8_t>()[i], static_cast<uint8_t>(want));
  }
  // All zeros: a safe scale (1), zero point 0, output 0: never a division by zero.
  Tensor zeros = Tensor::make(DataType::kFloat32, {5}).take();
  r = run_op("DynamicQuantizeLinear", {}, {zeros}, 3, 11);
  ASSERT_TRUE(r.is_ok()) << r.message();
  EXPECT_EQ(r.value()[1].data_as<float>()[0], 1.f);
  EXPECT_EQ(r.value()[2].data_as<uint8_t>()[0], 0);
  for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(r.value()[0].data_as<uint8_t>()[i], 0);
}

TEST(QuantOps, ConvIntegerMatchesFloatConvExactly) {
  struct C {
    std::vector<int64_t> x, w;
    int64_t group;
    std::vector<int64_t> strides, pads;
  };
  const C cases[] = {{{2, 4, 7, 6}, {6, 4, 3, 3}, 1, {1, 1}, {1, 1, 1, 1}},
                     {{1, 6, 9, 9}, {6, 2, 3, 3}, 3, {2, 2}, {0, 1, 1, 0}},
                     {{1, 3, 11}, {5, 3, 4}, 1, {3}, {2, 1}}};
  uint32_t seed = 10;
  for (const C& c : cases) {
    Tensor x = random_ints<uint8_t>(DataType::kUInt8, c.x, seed++, 0, 255);
    Tensor w = random_ints<int8_t>(DataType::kInt8, c.w, seed++, -128, 127);
    Tensor xz = scalar_i<uint8_t>(DataType::kUInt8, 131);
    Tensor wz = random_ints<int8_t>(DataType::kInt8, {c.w[0]}, seed++, -5, 5);  // per output channel
    std::map<std::string, Attribute> at{
        {"group", attr_i(c.group)}, {"strides", attr_ints(c.strides)}, {"pads", attr_ints(c.pads)}};
    auto r = run_op("ConvInteger", at, {x, w, xz, wz}, 1, 10);
    ASSERT_TRUE(r.is_ok()) << r.message();
    // The same conv in float on the zero-point-shifted values: exact (|sums| < 2^24).
    Tensor xf = to_float<uint8_t>(x), wf = to_float<int8_t>(w);
    for (int64_t i = 0; i < xf.numel(); ++i) xf.data_as<float>()[i] -= 131;
    const int64_t per = wf.numel() / c.w[0];
    for (int64_t i = 0; i < wf.numel(); ++i) wf.data_as<float>()[i] -= wz.data_as<int8_t>()[i / per];
    auto f = run_op("Conv", at, {xf, wf}, 1, 13);
    ASSERT_TRUE(f.is_ok()) << f.message();
    const Tensor& y = r.value()[0];
    ASSERT_EQ(y.dims(), f.value()[0].dims());
    ASSERT_EQ(y.dtype(), DataType::kInt32);
    for (int64_t i = 0; i < y.numel(); ++i)
      ASSERT_EQ(double(y.data_as<int32_t>()[i]), f.value()[0].data_as<float>()[i]);
  }
}

TEST(QuantOps, QLinearConvWithinOneStepOfDequantizedFloatConv) {
  Tensor x = random_ints<uint8_t>(DataType::kUInt8, {2, 8, 9, 9}, 20, 0, 255);
  Tensor w = random_ints<int8_t>(DataType::kInt8, {16, 8, 3, 3}, 21, -127, 127);
  Tensor ws = random_tensor({16}, 22, 0.001f, 0.004f);
  Tensor bias = random_ints<int32_t>(DataType::kInt32, {16}, 23, -20000, 20000);
  const float xs = 0.02f, ys = 0.3f;
  Tensor xz = scalar_i<uint8_t>(DataType::kUInt8, 120);
  Tensor wz = Tensor::make(DataType::kInt8, {16}).take();
  Tensor yz = scalar_i<int8_t>(DataType::kInt8, -10);
  std::map<std::string, Attribute> at{{"pads", attr_ints({1, 1, 1, 1})}, {"strides", attr_ints({2, 2})}};
  auto r = run_op("QLinearConv", at, {x, scalar_f(xs), xz, w, ws, wz, scalar_f(ys), yz, bias}, 1, 13);
  ASSERT_TRUE(r.is_ok()) << r.message();
  // The QDQ form of the same layer.
  auto xd = run_op("DequantizeLinear", {}, {x, scalar_f(xs), xz}, 1, 13);
  auto wd = run_op("DequantizeLinear", {{"axis", attr_i(0)}}, {w, ws, wz}, 1, 13);
  Tensor bs = Tensor::make(DataType::kFloat32, {16}).take();
  for (int c = 0; c < 16; ++c) bs.data_as<float>()[c] = xs * ws.data_as<float>()[c];
  auto bd = run_op("DequantizeLinear", {{"axis", attr_i(0)}}, {bias, bs}, 1, 13);
  ASSERT_TRUE(xd.is_ok() && wd.is_ok() && bd.is_ok());
  auto f = run_op("Conv", at, {xd.value()[0], wd.value()[0], bd.value()[0]}, 1, 13);
  ASSERT_TRUE(f.is_ok()) << f.message();
  auto q = run_op("QuantizeLinear", {}, {f.value()[0], scalar_f(ys), yz}, 1, 13);
  ASSERT_TRUE(q.is_ok()) << q.message();
  EXPECT_LE(max_int_diff<int8_t>(r.value()[0], q.value()[0]), 1);
  // Not trivially equal: the outputs spread over the int8 range.
  int distinct = 0;
  std::vector<bool> seen(256);
  for (int64_t i = 0; i < r.value()[0].numel(); ++i) {
    const int v = r.value()[0].data_as<int8_t>()[i] + 128;
    distinct += !seen[v];
    seen[v] = true;
  }
  EXPECT_GT(distinct, 20);
}

TEST(QuantOps, MatMulIntegerAndQLinearMatMul) {
  Tensor a = random_ints<int8_t>(DataType::kInt8, {2, 1, 5, 33}, 30, -128, 127);
  Tensor b = random_ints<int8_t>(DataType::kInt8, {3, 33, 7}, 31, -128, 127);
  Tensor az = make_tensor<int8_t>(DataType::kInt8, {5}, {1, -2, 3, 0, 7});  // per row
  Tensor bz = random_ints<int8_t>(DataType::kInt8, {7}, 32, -3, 3);         // per column
  auto r = run_op("MatMulInteger", {}, {a, b, az, bz}, 1, 10);
  ASSERT_TRUE(r.is_ok()) << r.message();
  Tensor af = to_float<int8_t>(a), bf = to_float<int8_t>(b);
  for (int64_t i = 0; i < af.numel(); ++i) af.data_as<float>()[i] -= az.data_as<int8_t>()[(i / 33) % 5];
  for (int64_t i = 0; i < bf.numel(); ++i) bf.data_as<float>()[i] -= bz.data_as<int8_t>()[i % 7];
  auto f = run_op("MatMul", {}, {af, bf}, 1, 13);
  ASSERT_TRUE(f.is_ok()) << f.message();
  ASSERT_EQ(r.value()[0].dims(), (std::vector<int64_t>{2, 3, 5, 7}));
  for (int64_t i = 0; i < r.value()[0].numel(); ++i)
    ASSERT_EQ(double(r.value()[0].data_as<int32_t>()[i]), f.value()[0].data_as<float>()[i]);

  // QLinearMatMul, uint8, per-column b scales, against DQ -> MatMul -> Q.
  Tensor ua = random_ints<uint8_t>(DataType::kUInt8, {4, 20}, 33, 0, 255);
  Tensor ub = random_ints<uint8_t>(DataType::kUInt8, {20, 6}, 34, 0, 255);
  Tensor bsc = random_tensor({6}, 35, 0.01f, 0.03f);
  Tensor azq = scalar_i<uint8_t>(DataType::kUInt8, 100),
         bzq = make_tensor<uint8_t>(DataType::kUInt8, {6}, {128, 120, 130, 128, 127, 126});
  Tensor yz = scalar_i<uint8_t>(DataType::kUInt8, 128);
  auto q = run_op("QLinearMatMul", {}, {ua, scalar_f(0.05f), azq, ub, bsc, bzq, scalar_f(2.f), yz}, 1, 21);
  ASSERT_TRUE(q.is_ok()) << q.message();
  auto ad = run_op("DequantizeLinear", {}, {ua, scalar_f(0.05f), azq}, 1, 13);
  auto bd = run_op("DequantizeLinear", {{"axis", attr_i(1)}}, {ub, bsc, bzq}, 1, 13);
  ASSERT_TRUE(ad.is_ok() && bd.is_ok());
  auto mf = run_op("MatMul", {}, {ad.value()[0], bd.value()[0]}, 1, 13);
  auto mq = run_op("QuantizeLinear", {}, {mf.value()[0], scalar_f(2.f), yz}, 1, 13);
  ASSERT_TRUE(mq.is_ok()) << mq.message();
  EXPECT_LE(max_int_diff<uint8_t>(q.value()[0], mq.value()[0]), 1);
}

// Bad parameters: one clear error naming the parameter and the value.
void expect_error(const Result<std::vector<Tensor>>& r, std::initializer_list<const char*> words) {
  ASSERT_FALSE(r.is_ok());
  for (const char* w : words)
    EXPECT_NE(r.message().find(w), std::string::npos) << "'" << w << "' not in: " << r.message();
}

TEST(QuantOps, BadScalesZeroPointsAndAxisLengths) {
  Tensor x = random_tensor({2, 3}, 40);
  Tensor xi = random_ints<int8_t>(DataType::kInt8, {2, 3}, 41, -10, 10);
  // Zero, negative and NaN scales, at infer time (constant) and at compute time (a run input).
  expect_error(run_op("QuantizeLinear", {}, {x, scalar_f(0.f)}, 1, 13, {1}), {"y_scale[0] = 0", "positive"});
  expect_error(run_op("QuantizeLinear", {}, {x, scalar_f(0.f)}, 1, 13), {"y_scale[0] = 0", "positive"});
  expect_error(run_op("DequantizeLinear", {}, {xi, scalar_f(-0.5f)}, 1, 13), {"x_scale[0] = -0.5", "positive"});
  expect_error(run_op("DequantizeLinear", {}, {xi, scalar_f(NAN)}, 1, 13, {1}), {"x_scale[0] = nan"});
  // Per-axis scales of the wrong length, and per-axis before opset 13.
  expect_error(run_op("DequantizeLinear", {{"axis", attr_i(1)}}, {xi, random_tensor({2}, 42, 0.1f, 1.f)}, 1, 13),
               {"x_scale [2]", "3 values"});
  expect_error(run_op("DequantizeLinear", {}, {xi, random_tensor({3}, 42, 0.1f, 1.f)}, 1, 10), {"opset 13"});
  // An int32 zero point that is not 0; a zero point of another dtype.
  Tensor b = make_tensor<int32_t>(DataType::kInt32, {3}, {1, 2, 3});
  expect_error(run_op("DequantizeLinear", {}, {b, scalar_f(0.1f), scalar_i<int32_t>(DataType::kInt32, 5)}, 1, 13, {2}),
               {"x_zero_point[0] = 5", "out of range"});
  expect_error(run_op("DequantizeLinear", {}, {xi, scalar_f(0.1f), scalar_i<uint8_t>(DataType::kUInt8, 5)}, 1, 13),
               {"x_zero_point", "uint8", "must match"});
  // QLinearConv with w_scale of the wrong length.
  Tensor cx = random_ints<uint8_t>(DataType::kUInt8, {1, 2, 4, 4}, 43, 0, 255);
  Tensor cw = random_ints<int8_t>(DataType::kInt8, {3, 2, 3, 3}, 44, -10, 10);
  expect_error(
      run_op("QLinearConv", {},
             {cx, scalar_f(0.1f), scalar_i<uint8_t>(DataType::kUInt8, 0), cw, random_tensor({2}, 45, 0.1f, 1.f),
              Tensor::make(DataType::kInt8, {2}).take(), scalar_f(1.f), scalar_i<uint8_t>(DataType::kUInt8, 0)},
             1, 13),
      {"w_scale [2]", "3 values"});
  // Unsupported output type.
  expect_error(run_op("QuantizeLinear", {{"output_dtype", attr_i(17)}}, {x, scalar_f(0.1f)}, 1, 21), {"output_dtype"});
}

}  // namespace
}  // namespace infera::test
