// Elementwise family: unary math/activations, Clip, binary ops with broadcasting, variadic ops,
// Where, PRelu, Cast/CastLike/Identity, apply_activation. Expected values come from naive
// formulas (numpy-style broadcast by index arithmetic) on seeded random inputs.
#include <cfloat>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>

#include "op_test_util.h"
#include "ops/activation.h"
#include "ops/elementwise.h"

namespace infera::test {
namespace {

std::vector<Tensor> ok_run(const std::string& op, std::map<std::string, Attribute> attrs,
                           const std::vector<Tensor>& ins, int64_t opset = 17) {
  auto r = run_op(op, std::move(attrs), ins, 1, opset);
  EXPECT_TRUE(r.is_ok()) << op << ": " << r.message();
  return r.is_ok() ? r.take() : std::vector<Tensor>{};
}

// Index of output element `i` in an input of dims `in` broadcast to `out`.
int64_t bcast_index(int64_t i, const std::vector<int64_t>& in, const std::vector<int64_t>& out) {
  int64_t idx = 0, stride = 1;
  for (int d = static_cast<int>(out.size()) - 1; d >= 0; --d) {
    const int64_t c = i % out[d];
    i /= out[d];
    const int di = d - (static_cast<int>(out.size()) - static_cast<int>(in.size()));
    if (di >= 0) {
      if (in[di] != 1) idx += c * stride;
      stride *= in[di];
    }
  }
  return idx;
}

template <class T>
Tensor int_tensor(DataType dt, std::vector<int64_t> dims, uint32_t seed, int lo, int hi) {
  Tensor t = Tensor::make(dt, std::move(dims)).take();
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> u(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<T>()[i] = static_cast<T>(u(rng));
  return t;
}

// ---------------------------------------------------------------- unary
TEST(ElementwiseUnary, FloatOpsMatchFormulas) {
  struct Case {
    const char* op;
    std::map<std::string, Attribute> attrs;
    std::function<double(double)> f;
    float lo, hi;
  };
  const double selu_a = 1.67326319217681884765625, selu_g = 1.05070102214813232421875;
  std::vector<Case> cases = {
      {"Abs", {}, [](double x) { return std::fabs(x); }, -3, 3},
      {"Ceil", {}, [](double x) { return std::ceil(x); }, -3, 3},
      {"Floor", {}, [](double x) { return std::floor(x); }, -3, 3},
      {"Neg", {}, [](double x) { return -x; }, -3, 3},
      {"Reciprocal", {}, [](double x) { return 1 / x; }, 0.5, 3},
      {"Sqrt", {}, [](double x) { return std::sqrt(x); }, 0, 4},
      {"Exp", {}, [](double x) { return std::exp(x); }, -3, 3},
      {"Log", {}, [](double x) { return std::log(x); }, 0.1, 5},
      {"Erf", {}, [](double x) { return std::erf(x); }, -3, 3},
      {"Tanh", {}, [](double x) { return std::tanh(x); }, -3, 3},
      {"Sigmoid", {}, [](double x) { return 1 / (1 + std::exp(-x)); }, -10, 10},
      {"Relu", {}, [](double x) { return x > 0 ? x : 0; }, -3, 3},
      {"LeakyRelu", {}, [](double x) { return x < 0 ? 0.01 * x : x; }, -3, 3},
      {"LeakyRelu", {{"alpha", attr_f(0.2f)}}, [](double x) { return x < 0 ? 0.2 * x : x; }, -3, 3},
      {"Elu", {{"alpha", attr_f(2.f)}}, [](double x) { return x < 0 ? 2 * (std::exp(x) - 1) : x; }, -3, 3},
      {"Selu", {}, [&](double x) { return x <= 0 ? selu_g * selu_a * (std::exp(x) - 1) : selu_g * x; }, -3, 3},
      {"HardSigmoid", {}, [](double x) { return std::clamp(0.2 * x + 0.5, 0.0, 1.0); }, -4, 4},
      {"HardSigmoid",
       {{"alpha", attr_f(0.5f)}, {"beta", attr_f(0.25f)}},
       [](double x) { return std::clamp(0.5 * x + 0.25, 0.0, 1.0); },
       -4,
       4},
      {"HardSwish", {}, [](double x) { return x * std::clamp(x / 6 + 0.5, 0.0, 1.0); }, -5, 5},
      {"Softplus", {}, [](double x) { return std::log(std::exp(x) + 1); }, -10, 10},
      {"Softsign", {}, [](double x) { return x / (1 + std::fabs(x)); }, -3, 3},
      {"Sign", {}, [](double x) { return x > 0   ? 1
                                         : x < 0 ? -1
                                                 : 0; }, -3, 3},
      {"Sin", {}, [](double x) { return std::sin(x); }, -3, 3},
      {"Atan", {}, [](double x) { return std::atan(x); }, -3, 3},
      {"Celu",
       {{"alpha", attr_f(2.f)}},
       [](double x) { return std::max(0.0, x) + std::min(0.0, 2 * (std::exp(x / 2) - 1)); },
       -3,
       3},
      {"Mish", {}, [](double x) { return x * std::tanh(std::log1p(std::exp(x))); }, -3, 3},
      {"Gelu", {}, [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }, -3, 3},
      {"ThresholdedRelu", {{"alpha", attr_f(0.5f)}}, [](double x) { return x > 0.5 ? x : 0; }, -3, 3},
  };
  uint32_t seed = 1;
  for (auto& c : cases) {
    Tensor x = random_tensor({2, 3, 5, 7}, seed++, c.lo, c.hi);
    auto out = ok_run(c.op, c.attrs, {x}, 20);
    ASSERT_EQ(out.size(), 1u);
    Tensor want = Tensor::make(DataType::kFloat32, x.dims()).take();
    for (int64_t i = 0; i < x.numel(); ++i) want.data_as<float>()[i] = float(c.f(x.data_as<float>()[i]));
    EXPECT_LT(normalized_error(out[0], want), 1e-6) << c.op;
  }
}

TEST(ElementwiseUnary, DoubleAndIntegerTypes) {
  Tensor xd = make_tensor<double>(DataType::kFloat64, {4}, {-2.5, -0.5, 0.5, 2.5});
  auto r = ok_run("Round", {}, {xd}, 11);
  EXPECT_EQ(r[0].data_as<double>()[0], -2.0);  // half to even
  EXPECT_EQ(r[0].data_as<double>()[3], 2.0);
  Tensor xi = make_tensor<int32_t>(DataType::kInt32, {5}, {-7, -1, 0, 3, std::numeric_limits<int32_t>::min()});
  auto a = ok_run("Abs", {}, {xi});
  auto n = ok_run("Neg", {}, {xi});
  auto s = ok_run("Sign", {}, {xi});
  auto re = ok_run("Relu", {}, {xi}, 14);
  const std::vector<int32_t> abs_w = {7, 1, 0, 3, std::numeric_limits<int32_t>::min()};  // wraps, as numpy
  const std::vector<int32_t> sign_w = {-1, -1, 0, 1, -1}, relu_w = {0, 0, 0, 3, 0};
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(a[0].data_as<int32_t>()[i], abs_w[i]);
    if (i < 4) EXPECT_EQ(n[0].data_as<int32_t>()[i], -xi.data_as<int32_t>()[i]);
    EXPECT_EQ(s[0].data_as<int32_t>()[i], sign_w[i]);
    EXPECT_EQ(re[0].data_as<int32_t>()[i], relu_w[i]);
  }
  // Sqrt of int32 is refused at inference; Not needs bool.
  EXPECT_FALSE(run_op("Sqrt", {}, {xi}).is_ok());
  EXPECT_FALSE(run_op("Not", {}, {xi}).is_ok());
  Tensor b = make_tensor<bool>(DataType::kBool, {3}, {true, false, true});
  auto nb = ok_run("Not", {}, {b});
  EXPECT_EQ(nb[0].data_as<bool>()[1], true);
  EXPECT_EQ(nb[0].data_as<bool>()[2], false);
}

TEST(ElementwiseUnary, IsNaNIsInf) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  Tensor x = make_tensor<float>(DataType::kFloat32, {4}, {1.f, inf, -inf, nan});
  auto a = ok_run("IsNaN", {}, {x});
  auto b = ok_run("IsInf", {{"detect_negative", attr_i(0)}}, {x});
  ASSERT_EQ(a[0].dtype(), DataType::kBool);
  EXPECT_EQ(std::vector<bool>(a[0].data_as<bool>(), a[0].data_as<bool>() + 4), (std::vector<bool>{0, 0, 0, 1}));
  EXPECT_EQ(std::vector<bool>(b[0].data_as<bool>(), b[0].data_as<bool>() + 4), (std::vector<bool>{0, 1, 0, 0}));
}

TEST(ElementwiseUnary, ClipAttributesAndInputs) {
  Tensor x = random_tensor({3, 17}, 7, -2, 2);
  auto clip_ref = [&](float lo, float hi) {
    Tensor w = Tensor::make(DataType::kFloat32, x.dims()).take();
    for (int64_t i = 0; i < x.numel(); ++i) w.data_as<float>()[i] = std::min(std::max(x.data_as<float>()[i], lo), hi);
    return w;
  };
  auto a = ok_run("Clip", {{"min", attr_f(-0.5f)}, {"max", attr_f(0.7f)}}, {x}, 6);
  EXPECT_EQ(normalized_error(a[0], clip_ref(-0.5f, 0.7f)), 0);
  Tensor lo = make_tensor<float>(DataType::kFloat32, {}, {-0.25f});
  Tensor hi = make_tensor<float>(DataType::kFloat32, {}, {0.5f});
  auto b = ok_run("Clip", {}, {x, lo, hi}, 13);
  EXPECT_EQ(normalized_error(b[0], clip_ref(-0.25f, 0.5f)), 0);
  auto c = ok_run("Clip", {}, {x, Tensor(), hi}, 13);  // min left out
  EXPECT_EQ(normalized_error(c[0], clip_ref(-1e30f, 0.5f)), 0);
  auto d = ok_run("Clip", {}, {x, hi, lo}, 13);  // min > max: everything becomes max
  EXPECT_EQ(normalized_error(d[0], clip_ref(0.5f, -0.25f)), 0);
  Tensor xi = make_tensor<int64_t>(DataType::kInt64, {4}, {-5, 0, 3, 9});
  Tensor li = make_tensor<int64_t>(DataType::kInt64, {}, {-1});
  Tensor hi2 = make_tensor<int64_t>(DataType::kInt64, {}, {4});
  auto e = ok_run("Clip", {}, {xi, li, hi2}, 13);
  EXPECT_EQ(std::vector<int64_t>(e[0].data_as<int64_t>(), e[0].data_as<int64_t>() + 4),
            (std::vector<int64_t>{-1, 0, 3, 4}));
  EXPECT_FALSE(run_op("Clip", {}, {x, li}, 13).is_ok());  // dtype mismatch
}

TEST(ElementwiseUnary, ShapeAndAttributeChecks) {
  Node n;
  n.name = "g";
  n.op_type = "Gelu";
  n.attrs["approximate"] = attr_s("fast");
  n.inputs = {0};
  n.outputs = {1};
  auto k = make_kernel(n, 20);
  ASSERT_FALSE(k.is_ok());
  EXPECT_NE(k.message().find("approximate"), std::string::npos);
}

// ---------------------------------------------------------------- binary
TEST(ElementwiseBinary, BroadcastShapesMatchNaive) {
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> shapes = {
      {{2, 3, 4, 5}, {2, 3, 4, 5}}, {{2, 3, 4, 5}, {}},
      {{1}, {2, 3, 4, 5}},          {{2, 3, 4, 5}, {3, 1, 1}},
      {{2, 3, 4, 5}, {5}},          {{2, 1, 4, 1}, {1, 3, 1, 5}},
      {{2, 3, 4, 5}, {2, 3, 1, 1}}, {{4, 1}, {3}},
      {{2, 3, 0, 5}, {5}},          {{1, 1, 1}, {1}},
      {{6, 1, 5}, {6, 7, 1}},
  };
  const char* ops[] = {"Add", "Sub", "Mul", "Div", "Pow"};
  uint32_t seed = 100;
  for (auto& [sa, sb] : shapes) {
    std::vector<int64_t> so;
    ASSERT_TRUE(broadcast_dims(sa, sb, so));
    Tensor a = random_tensor(sa, seed++, 0.5f, 2.f), b = random_tensor(sb, seed++, 0.5f, 2.f);
    for (const char* op : ops) {
      auto out = ok_run(op, {}, {a, b});
      ASSERT_EQ(out.size(), 1u);
      ASSERT_EQ(out[0].dims(), so) << op;
      Tensor want = Tensor::make(DataType::kFloat32, so).take();
      for (int64_t i = 0; i < want.numel(); ++i) {
        const double x = a.data_as<float>()[bcast_index(i, sa, so)], y = b.data_as<float>()[bcast_index(i, sb, so)];
        const std::string o = op;
        double r = o == "Add" ? x + y : o == "Sub" ? x - y : o == "Mul" ? x * y : o == "Div" ? x / y : std::pow(x, y);
        want.data_as<float>()[i] = float(r);
      }
      EXPECT_LT(normalized_error(out[0], want), 1e-6) << op;
    }
  }
}

TEST(ElementwiseBinary, MultiThreadedEqualsSingleThreaded) {
  const std::vector<int64_t> sa = {2, 16, 40, 40}, sb = {2, 16, 1, 1}, sc = {40};
  Tensor a = random_tensor(sa, 1), b = random_tensor(sb, 2), c = random_tensor(sc, 3);
  for (auto* other : {&a, &b, &c}) {
    std::vector<int64_t> so;
    ASSERT_TRUE(broadcast_dims(sa, other->dims(), so));
    std::vector<float> o1(a.numel()), o2(a.numel());
    auto mul = [](float x, float y) { return x * y; };
    binary_broadcast(a.data_as<float>(), sa, other->data_as<float>(), other->dims(), o1.data(), so, 1, mul);
    binary_broadcast(a.data_as<float>(), sa, other->data_as<float>(), other->dims(), o2.data(), so, 2, mul);
    EXPECT_EQ(o1, o2);
    for (int64_t i = 0; i < a.numel(); i += 977)
      EXPECT_EQ(o1[i], a.data_as<float>()[i] * other->data_as<float>()[bcast_index(i, other->dims(), so)]);
  }
}

TEST(ElementwiseBinary, SymbolicShapeInference) {
  Node n;
  n.name = "add";
  n.op_type = "Add";
  n.inputs = {0, 1};
  n.outputs = {2};
  auto k = make_kernel(n, 17);
  ASSERT_TRUE(k.is_ok());
  ValueInfo a, b;
  a.dtype = b.dtype = DataType::kFloat32;
  a.shape = Shape({Dim::sym("batch"), Dim(3), Dim(1)});
  b.shape = Shape::of({3, 8});
  InferContext ctx(n, 17, {&a, &b});
  ASSERT_TRUE(k.value()->infer(ctx).is_ok());
  EXPECT_EQ(ctx.outputs()[0].shape.str(), Shape({Dim::sym("batch"), Dim(3), Dim(8)}).str());
  b.shape = Shape::of({4, 8});
  InferContext bad(n, 17, {&a, &b});
  Status s = k.value()->infer(bad);
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("broadcast"), std::string::npos);
  b.dtype = DataType::kInt64;
  b.shape = Shape::of({3, 8});
  InferContext mixed(n, 17, {&a, &b});
  EXPECT_FALSE(k.value()->infer(mixed).is_ok());
}

TEST(ElementwiseBinary, IntegerDivModTruncation) {
  Tensor a = make_tensor<int32_t>(DataType::kInt32, {6}, {7, -7, 7, -7, std::numeric_limits<int32_t>::min(), 5});
  Tensor b = make_tensor<int32_t>(DataType::kInt32, {6}, {2, 2, -2, -2, -1, 5});
  auto d = ok_run("Div", {}, {a, b});
  auto m0 = ok_run("Mod", {}, {a, b});
  auto m1 = ok_run("Mod", {{"fmod", attr_i(1)}}, {a, b});
  const std::vector<int32_t> dw = {3, -3, -3, 3, std::numeric_limits<int32_t>::min(), 1};
  const std::vector<int32_t> m0w = {1, 1, -1, -1, 0, 0}, m1w = {1, -1, 1, -1, 0, 0};
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(d[0].data_as<int32_t>()[i], dw[i]) << i;
    EXPECT_EQ(m0[0].data_as<int32_t>()[i], m0w[i]) << i;
    EXPECT_EQ(m1[0].data_as<int32_t>()[i], m1w[i]) << i;
  }
  Tensor z = make_tensor<int32_t>(DataType::kInt32, {1}, {0});
  auto r = run_op("Div", {}, {a, z});
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.message().find("division by zero"), std::string::npos);
  Tensor f = random_tensor({4}, 3);
  Tensor fa = make_tensor<float>(DataType::kFloat32, {4}, {-3.f, 3.f, 0.f, 5.5f});
  Tensor fb = make_tensor<float>(DataType::kFloat32, {4}, {2.f, -2.f, -2.f, 2.f});
  auto pm = ok_run("Mod", {}, {fa, fb});  // fmod=0 on floats: sign of the divisor, as numpy.mod
  EXPECT_EQ(std::vector<float>(pm[0].data_as<float>(), pm[0].data_as<float>() + 4),
            (std::vector<float>{1.f, -1.f, -0.f, 1.5f}));
  EXPECT_TRUE(std::signbit(pm[0].data_as<float>()[2]));
  auto fm = ok_run("Mod", {{"fmod", attr_i(1)}}, {f, make_tensor<float>(DataType::kFloat32, {1}, {0.3f})});
  for (int i = 0; i < 4; ++i) EXPECT_EQ(fm[0].data_as<float>()[i], std::fmod(f.data_as<float>()[i], 0.3f));
}

TEST(ElementwiseBinary, PowMixedTypes) {
  Tensor xf = make_tensor<float>(DataType::kFloat32, {3}, {1.5f, 2.f, 3.f});
  Tensor ei = make_tensor<int64_t>(DataType::kInt64, {3}, {2, 3, -1});
  auto a = ok_run("Pow", {}, {xf, ei}, 15);
  ASSERT_EQ(a[0].dtype(), DataType::kFloat32);
  EXPECT_FLOAT_EQ(a[0].data_as<float>()[0], 2.25f);
  EXPECT_FLOAT_EQ(a[0].data_as<float>()[1], 8.f);
  EXPECT_FLOAT_EQ(a[0].data_as<float>()[2], 1.f / 3.f);
  Tensor xi = make_tensor<int32_t>(DataType::kInt32, {4}, {3, -2, 2, -1});
  Tensor ef = make_tensor<float>(DataType::kFloat32, {4}, {2.f, 3.f, 0.5f, -3.f});
  auto b = ok_run("Pow", {}, {xi, ef}, 15);
  ASSERT_EQ(b[0].dtype(), DataType::kInt32);
  EXPECT_EQ(std::vector<int32_t>(b[0].data_as<int32_t>(), b[0].data_as<int32_t>() + 4),
            (std::vector<int32_t>{9, -8, 1, -1}));
  Tensor big = make_tensor<int64_t>(DataType::kInt64, {1}, {3});
  Tensor e40 = make_tensor<int64_t>(DataType::kInt64, {1}, {39});
  auto c = ok_run("Pow", {}, {big, e40}, 15);
  EXPECT_EQ(c[0].data_as<int64_t>()[0], 4052555153018976267LL);  // 3^39, exact
}

TEST(ElementwiseBinary, ComparisonAndLogic) {
  Tensor a = int_tensor<int64_t>(DataType::kInt64, {3, 4}, 5, -3, 3);
  Tensor b = int_tensor<int64_t>(DataType::kInt64, {4}, 6, -3, 3);
  const std::vector<std::pair<const char*, std::function<bool(int64_t, int64_t)>>> ops = {
      {"Equal", [](int64_t x, int64_t y) { return x == y; }},
      {"Greater", [](int64_t x, int64_t y) { return x > y; }},
      {"Less", [](int64_t x, int64_t y) { return x < y; }},
      {"GreaterOrEqual", [](int64_t x, int64_t y) { return x >= y; }},
      {"LessOrEqual", [](int64_t x, int64_t y) { return x <= y; }},
  };
  for (auto& [op, f] : ops) {
    auto o = ok_run(op, {}, {a, b});
    ASSERT_EQ(o[0].dtype(), DataType::kBool);
    for (int64_t i = 0; i < 12; ++i)
      EXPECT_EQ(o[0].data_as<bool>()[i], f(a.data_as<int64_t>()[i], b.data_as<int64_t>()[i % 4])) << op;
  }
  Tensor p = make_tensor<bool>(DataType::kBool, {2, 2}, {false, false, true, true});
  Tensor q = make_tensor<bool>(DataType::kBool, {2}, {false, true});
  auto an = ok_run("And", {}, {p, q}), orr = ok_run("Or", {}, {p, q}), x = ok_run("Xor", {}, {p, q});
  for (int i = 0; i < 4; ++i) {
    bool u = p.data_as<bool>()[i], v = q.data_as<bool>()[i % 2];
    EXPECT_EQ(an[0].data_as<bool>()[i], u && v);
    EXPECT_EQ(orr[0].data_as<bool>()[i], u || v);
    EXPECT_EQ(x[0].data_as<bool>()[i], u != v);
  }
  EXPECT_FALSE(run_op("And", {}, {a, a}).is_ok());
}

TEST(ElementwiseBinary, PReluSlopeBroadcast) {
  Tensor x = random_tensor({2, 3, 4, 5}, 11);
  Tensor s = random_tensor({3, 1, 1}, 12);
  auto o = ok_run("PRelu", {}, {x, s}, 9);
  Tensor want = Tensor::make(DataType::kFloat32, x.dims()).take();
  for (int64_t i = 0; i < x.numel(); ++i) {
    float v = x.data_as<float>()[i];
    want.data_as<float>()[i] = v < 0 ? v * s.data_as<float>()[(i / 20) % 3] : v;
  }
  EXPECT_EQ(normalized_error(o[0], want), 0);
  EXPECT_FALSE(run_op("PRelu", {}, {x, random_tensor({2, 3, 4, 5, 1}, 1)}).is_ok());  // slope larger than X
  EXPECT_FALSE(run_op("PRelu", {}, {random_tensor({3, 1}, 1), random_tensor({3, 5}, 2)}).is_ok());
}

// ---------------------------------------------------------------- variadic and Where
TEST(ElementwiseVariadic, MaxMinSumMean) {
  const std::vector<std::vector<int64_t>> shapes = {{2, 3, 4}, {3, 1}, {4}};
  std::vector<Tensor> ins;
  for (size_t i = 0; i < shapes.size(); ++i) ins.push_back(random_tensor(shapes[i], 20 + i));
  const std::vector<int64_t> so = {2, 3, 4};
  for (const char* op : {"Max", "Min", "Sum", "Mean"}) {
    auto o = ok_run(op, {}, ins);
    ASSERT_EQ(o[0].dims(), so);
    Tensor want = Tensor::make(DataType::kFloat32, so).take();
    for (int64_t i = 0; i < 24; ++i) {
      std::vector<float> v;
      for (size_t k = 0; k < ins.size(); ++k) v.push_back(ins[k].data_as<float>()[bcast_index(i, shapes[k], so)]);
      const std::string s = op;
      float r = v[0];
      for (size_t k = 1; k < v.size(); ++k)
        r = s == "Max" ? std::max(r, v[k]) : s == "Min" ? std::min(r, v[k]) : r + v[k];
      want.data_as<float>()[i] = s == "Mean" ? r / 3 : r;
    }
    EXPECT_LT(normalized_error(o[0], want), 1e-6) << op;
  }
  auto one = ok_run("Sum", {}, {ins[0]});
  EXPECT_EQ(normalized_error(one[0], ins[0]), 0);
  Tensor n1 = make_tensor<float>(DataType::kFloat32, {2}, {std::nanf(""), 1.f});
  Tensor n2 = make_tensor<float>(DataType::kFloat32, {2}, {1.f, std::nanf("")});
  auto mx = ok_run("Max", {}, {n1, n2});
  EXPECT_TRUE(std::isnan(mx[0].data_as<float>()[0]));
  EXPECT_TRUE(std::isnan(mx[0].data_as<float>()[1]));
  Tensor i1 = make_tensor<int32_t>(DataType::kInt32, {3}, {1, 5, -2});
  Tensor i2 = make_tensor<int32_t>(DataType::kInt32, {1}, {2});
  auto mi = ok_run("Min", {}, {i1, i2}, 13);
  EXPECT_EQ(std::vector<int32_t>(mi[0].data_as<int32_t>(), mi[0].data_as<int32_t>() + 3),
            (std::vector<int32_t>{1, 2, -2}));
  EXPECT_FALSE(run_op("Sum", {}, {i1, i2}).is_ok());  // Sum is float-only
}

TEST(ElementwiseVariadic, WhereThreeWayBroadcast) {
  const std::vector<int64_t> sc = {2, 1, 4}, sx = {3, 1}, sy = {1}, so = {2, 3, 4};
  Tensor c = Tensor::make(DataType::kBool, sc).take();
  for (int i = 0; i < 8; ++i) c.data_as<bool>()[i] = (i * 7) % 3 == 0;
  Tensor x = int_tensor<int64_t>(DataType::kInt64, sx, 3, -100, 100);
  Tensor y = make_tensor<int64_t>(DataType::kInt64, sy, {42});
  auto o = ok_run("Where", {}, {c, x, y});
  ASSERT_EQ(o[0].dims(), so);
  for (int64_t i = 0; i < 24; ++i) {
    int64_t w = c.data_as<bool>()[bcast_index(i, sc, so)] ? x.data_as<int64_t>()[bcast_index(i, sx, so)] : 42;
    EXPECT_EQ(o[0].data_as<int64_t>()[i], w) << i;
  }
  EXPECT_FALSE(run_op("Where", {}, {x, x, y}).is_ok());  // condition must be bool
}

// ---------------------------------------------------------------- Cast, Identity, activations
uint16_t half_bits(const Tensor& t, int i) { return t.data_as<uint16_t>()[i]; }

TEST(ElementwiseCast, Float16RoundTripAndRounding) {
  const float inf = std::numeric_limits<float>::infinity();
  Tensor x = make_tensor<float>(DataType::kFloat32, {10},
                                {1.f, -2.f, 65504.f, 65520.f, 65519.f, 5.960464477539063e-08f, 2.9802322387695312e-08f,
                                 1.0009765625f + 0.00048828125f, -inf, 0.1f});
  auto h = ok_run("Cast", {{"to", attr_i(int(DataType::kFloat16))}}, {x});
  ASSERT_EQ(h[0].dtype(), DataType::kFloat16);
  const std::vector<uint16_t> want = {0x3c00, 0xc000, 0x7bff, 0x7c00, 0x7bff, 0x0001, 0x0000, 0x3c02, 0xfc00, 0x2e66};
  for (int i = 0; i < 10; ++i) EXPECT_EQ(half_bits(h[0], i), want[i]) << i;
  auto back = ok_run("Cast", {{"to", attr_i(int(DataType::kFloat32))}}, {h[0]});
  EXPECT_EQ(back[0].data_as<float>()[0], 1.f);
  EXPECT_EQ(back[0].data_as<float>()[5], 5.960464477539063e-08f);
  EXPECT_EQ(back[0].data_as<float>()[3], inf);
  EXPECT_NEAR(back[0].data_as<float>()[9], 0.1f, 1e-4);
  // Every half value survives half -> float -> half.
  Tensor all = Tensor::make(DataType::kFloat16, {65536}).take();
  for (int i = 0; i < 65536; ++i) all.data_as<uint16_t>()[i] = uint16_t(i);
  auto f = ok_run("Cast", {{"to", attr_i(1)}}, {all});
  auto again = ok_run("Cast", {{"to", attr_i(10)}}, {f[0]});
  int mismatches = 0;
  for (int i = 0; i < 65536; ++i) {
    const bool nan = (i & 0x7c00) == 0x7c00 && (i & 0x3ff);
    if (!nan && half_bits(again[0], i) != i) ++mismatches;
    if (nan) EXPECT_TRUE(std::isnan(f[0].data_as<float>()[i]));
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(ElementwiseCast, NumericBoolAndBfloat16) {
  Tensor x = make_tensor<float>(DataType::kFloat32, {5}, {-1.7f, 0.f, 2.9f, 300.f, -0.f});
  auto i = ok_run("Cast", {{"to", attr_i(int(DataType::kInt32))}}, {x});
  EXPECT_EQ(std::vector<int32_t>(i[0].data_as<int32_t>(), i[0].data_as<int32_t>() + 5),
            (std::vector<int32_t>{-1, 0, 2, 300, 0}));
  auto u8 = ok_run("Cast", {{"to", attr_i(int(DataType::kUInt8))}}, {x});
  EXPECT_EQ(u8[0].data_as<uint8_t>()[3], uint8_t(300 & 0xff));  // wraps as numpy
  auto b = ok_run("Cast", {{"to", attr_i(int(DataType::kBool))}}, {x});
  EXPECT_EQ(std::vector<bool>(b[0].data_as<bool>(), b[0].data_as<bool>() + 5), (std::vector<bool>{1, 0, 1, 1, 0}));
  auto bf = ok_run("Cast", {{"to", attr_i(int(DataType::kFloat32))}}, {b[0]});
  EXPECT_EQ(bf[0].data_as<float>()[2], 1.f);
  auto d = ok_run("Cast", {{"to", attr_i(int(DataType::kFloat64))}}, {x}, 19);
  EXPECT_EQ(d[0].data_as<double>()[0], double(-1.7f));
  auto bf16 = ok_run("Cast", {{"to", attr_i(int(DataType::kBFloat16))}}, {x});
  EXPECT_EQ(bf16[0].data_as<uint16_t>()[2], 0x403a);  // 2.9 rounds to nearest even
  Tensor big = make_tensor<int64_t>(DataType::kInt64, {1}, {(int64_t(1) << 53) + 1});
  auto same = ok_run("Cast", {{"to", attr_i(int(DataType::kInt64))}}, {big});
  EXPECT_EQ(same[0].data_as<int64_t>()[0], (int64_t(1) << 53) + 1);
  auto like = ok_run("CastLike", {}, {x, make_tensor<int64_t>(DataType::kInt64, {1}, {0})}, 15);
  EXPECT_EQ(like[0].dtype(), DataType::kInt64);
  EXPECT_EQ(like[0].data_as<int64_t>()[2], 2);
  for (int to : {0, 8, 17, 99, -3}) {
    Node n;
    n.name = "c";
    n.op_type = "Cast";
    n.attrs["to"] = attr_i(to);
    n.inputs = {0};
    n.outputs = {1};
    auto k = make_kernel(n, 19);
    ASSERT_FALSE(k.is_ok()) << to;
    EXPECT_NE(k.message().find("'to'"), std::string::npos);
  }
}

TEST(ElementwiseCast, IdentityAnyDtype) {
  Tensor a = int_tensor<int64_t>(DataType::kInt64, {3, 2}, 9, -1000, 1000);
  auto o = ok_run("Identity", {}, {a});
  EXPECT_EQ(std::memcmp(o[0].data(), a.data(), a.nbytes()), 0);
  Tensor h = Tensor::make(DataType::kFloat16, {4}).take();
  for (int i = 0; i < 4; ++i) h.data_as<uint16_t>()[i] = uint16_t(0x3c00 + i);
  auto oh = ok_run("Identity", {}, {h}, 21);
  EXPECT_EQ(oh[0].dtype(), DataType::kFloat16);
  EXPECT_EQ(std::memcmp(oh[0].data(), h.data(), h.nbytes()), 0);
}

// The activation table: the op of each kind computes apply_activation with the table's defaults
// or the node's parameters; the fast float loops match the double reference; NaN stays NaN.
TEST(ElementwiseActivation, TableMatchesKernelsAndReference) {
  struct Case {
    const char* op;
    std::map<std::string, Attribute> attrs;
    int64_t opset;
  };
  const std::vector<Case> cases = {
      {"Relu", {}, 13},
      {"LeakyRelu", {{"alpha", attr_f(0.1f)}}, 13},
      {"LeakyRelu", {}, 13},
      {"Sigmoid", {}, 13},
      {"Tanh", {}, 13},
      {"HardSigmoid", {{"alpha", attr_f(0.3f)}, {"beta", attr_f(0.4f)}}, 13},
      {"HardSigmoid", {}, 13},
      {"HardSwish", {}, 14},
      {"Elu", {{"alpha", attr_f(0.7f)}}, 13},
      {"Selu", {{"alpha", attr_f(1.5f)}, {"gamma", attr_f(1.1f)}}, 13},
      {"Selu", {}, 13},
      {"Celu", {{"alpha", attr_f(0.5f)}}, 13},
      {"Softplus", {}, 13},
      {"Softsign", {}, 13},
      {"Mish", {}, 18},
      {"Gelu", {}, 20},
      {"Gelu", {{"approximate", attr_s("tanh")}}, 20},
      {"ThresholdedRelu", {{"alpha", attr_f(0.5f)}}, 13},
  };
  Tensor x = random_tensor({257}, 77, -6, 6);
  x.data_as<float>()[3] = std::nanf("");
  for (auto& c : cases) {
    const ActivationDef* d = activation_by_name(c.op);
    ASSERT_NE(d, nullptr) << c.op;
    Activation a = activation_default(d->kind);
    if (d->alpha_attr && c.attrs.count(d->alpha_attr)) a.alpha = c.attrs.at(d->alpha_attr).f;
    if (d->beta_attr && c.attrs.count(d->beta_attr)) a.beta = c.attrs.at(d->beta_attr).f;
    if (c.attrs.count("approximate")) a.kind = ActKind::kGeluTanh;
    auto k = ok_run(c.op, c.attrs, {x}, c.opset);
    ASSERT_EQ(k.size(), 1u) << c.op;
    Tensor y = x.clone();
    apply_activation(a, y.data_as<float>(), y.numel());
    EXPECT_EQ(normalized_error(y, k[0]), 0) << c.op;
    for (int64_t i = 0; i < x.numel(); ++i) {
      const float xi = x.data_as<float>()[i], yi = y.data_as<float>()[i];
      const double want = activation_ref<double>(a, xi);
      if (std::isnan(xi)) {
        EXPECT_TRUE(std::isnan(yi) && std::isnan(want)) << c.op << ": NaN in must give NaN out";
        continue;
      }
      EXPECT_NEAR(yi, want, 2e-6 * std::max(1.0, std::fabs(want))) << c.op << " at x = " << xi;
    }
  }
  // Kinds without an ONNX op of their own: Identity, Clip (bounds as parameters), Swish.
  for (Activation a : {Activation{ActKind::kIdentity}, Activation{ActKind::kClip, -0.3f, 0.6f},
                       Activation{ActKind::kSwish, 1.f}, Activation{ActKind::kSwish, 1.5f}}) {
    Tensor y = x.clone();
    apply_activation(a, y.data_as<float>(), y.numel());
    for (int64_t i = 0; i < x.numel(); ++i) {
      const float xi = x.data_as<float>()[i], yi = y.data_as<float>()[i];
      const double want = activation_ref<double>(a, xi);
      if (std::isnan(xi))
        EXPECT_TRUE(std::isnan(yi)) << activation_name(a.kind);
      else
        EXPECT_NEAR(yi, want, 2e-6 * std::max(1.0, std::fabs(want))) << activation_name(a.kind);
    }
  }
  EXPECT_EQ(activation_by_name("Bogus"), nullptr);
  // Clip's table default is "no bound" (as Clip-11 without min/max).
  EXPECT_EQ(activation_default(ActKind::kClip).alpha, -std::numeric_limits<float>::infinity());
}

}  // namespace
}  // namespace infera::test

namespace infera::test {
namespace {

// float16/bfloat16 inputs are computed in float32 and rounded back.
TEST(ElementwiseCast, NarrowFloatsComputedInFloat32) {
  Tensor a = random_tensor({4, 6}, 31, -3, 3), b = random_tensor({6}, 32, -3, 3);
  auto to = [](const Tensor& t, DataType dt) { return ok_run("Cast", {{"to", attr_i(int(dt))}}, {t})[0]; };
  for (DataType dt : {DataType::kFloat16, DataType::kBFloat16}) {
    Tensor ah = to(a, dt), bh = to(b, dt);
    auto sum = ok_run("Add", {}, {ah, bh});
    auto relu = ok_run("Relu", {}, {ah});
    auto mx = ok_run("Max", {}, {ah, bh});
    auto gt = ok_run("Greater", {}, {ah, bh});
    ASSERT_EQ(sum[0].dtype(), dt);
    ASSERT_EQ(gt[0].dtype(), DataType::kBool);
    Tensor af = to(ah, DataType::kFloat32), bf = to(bh, DataType::kFloat32);
    auto want_sum = to(ok_run("Add", {}, {af, bf})[0], dt);
    auto want_relu = to(ok_run("Relu", {}, {af})[0], dt);
    auto want_max = to(ok_run("Max", {}, {af, bf})[0], dt);
    auto want_gt = ok_run("Greater", {}, {af, bf})[0];
    EXPECT_EQ(std::memcmp(sum[0].data(), want_sum.data(), sum[0].nbytes()), 0);
    EXPECT_EQ(std::memcmp(relu[0].data(), want_relu.data(), relu[0].nbytes()), 0);
    EXPECT_EQ(std::memcmp(mx[0].data(), want_max.data(), mx[0].nbytes()), 0);
    EXPECT_EQ(std::memcmp(gt[0].data(), want_gt.data(), gt[0].nbytes()), 0);
  }
}

// activation_bound: for every kind (parameters of both signs), every finite x with |x| <= pre
// (the ends, 0, random points, subnormals) gives |a(x)| <= the bound, float arithmetic included; a
// pre that is not finite gives none, an overflowing one none either.
TEST(ActivationTable, BoundsHoldForEveryFiniteInput) {
  std::vector<Activation> acts;
  for (int k = 0; k < static_cast<int>(ActKind::kCount); ++k)
    acts.push_back(activation_default(static_cast<ActKind>(k)));
  acts.insert(acts.end(), {{ActKind::kLeakyRelu, 3.f},
                           {ActKind::kLeakyRelu, -2.f},
                           {ActKind::kClip, -0.3f, 0.6f},
                           {ActKind::kClip, 2.f, 5.f},
                           {ActKind::kClip, -5.f, -2.f},
                           {ActKind::kClip, 4.f, 1.f},
                           {ActKind::kClip, 0.f, 6.f},
                           {ActKind::kElu, 3.f},
                           {ActKind::kCelu, 2.5f},
                           {ActKind::kSwish, -1.5f},
                           {ActKind::kHardSigmoid, 5.f, -2.f},
                           {ActKind::kThresholdedRelu, -1.f}});
  std::mt19937 rng(91);
  int checked = 0;
  for (const Activation& a : acts)
    for (float pre : {0.f, 1e-30f, 0.25f, 1.f, 2.9f, 7.f, 1e3f, 1e30f}) {
      const float b = activation_bound(a, pre);
      if (!(b <= FLT_MAX)) continue;  // none known: nothing to hold
      std::vector<float> xs{pre, -pre, 0.f, -0.f, 1e-40f, -1e-40f, pre / 3, -pre / 7};
      std::uniform_real_distribution<float> u(-pre, pre);
      for (int i = 0; i < 64; ++i) xs.push_back(u(rng));
      for (float x : xs) {
        if (std::fabs(x) > pre) continue;
        float y = x;
        apply_activation(a, &y, 1);
        EXPECT_TRUE(std::fabs(y) <= b) << activation_name(a.kind) << "(" << a.alpha << ", " << a.beta << ") at " << x
                                       << " = " << y << " above the bound " << b << " of pre " << pre;
        ++checked;
      }
    }
  EXPECT_GT(checked, 5000);
  EXPECT_EQ(activation_bound(activation_default(ActKind::kRelu), INFINITY), INFINITY);
  EXPECT_EQ(activation_bound(activation_default(ActKind::kRelu), NAN), INFINITY);
  EXPECT_EQ(activation_bound(activation_default(ActKind::kIdentity), FLT_MAX), INFINITY);  // x 1.0625 overflows
  EXPECT_EQ(activation_bound(activation_default(ActKind::kSigmoid), 1e38f), 1.0625f);
  EXPECT_EQ(activation_bound(activation_default(ActKind::kSigmoid), INFINITY), INFINITY);  // Inf in: no bound
}

}  // namespace
}  // namespace infera::test
