// NaN and Inf semantics on every backend (issue 7): each case runs through the conformance harness
// on every backend that claims it, against the reference, where a NaN must meet a NaN and an Inf
// the same Inf (op_test_util.h). The reference itself is checked against the rule "NaN in, NaN out"
// first, since the harness only compares with it. A backend may decline a case (the reference then
// runs it); what it takes must match.
#include <cmath>
#include <limits>

#include "backend_harness.h"
#include "onnx_model_builder.h"

namespace infera::test {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// Random values in [lo, hi) with NaN, +Inf, -Inf, -0 and 0 sprinkled in (every 7th, 11th, 13th...).
Tensor with_specials(std::vector<int64_t> dims, uint32_t seed, float lo = -3.f, float hi = 3.f) {
  Tensor t = random_tensor(std::move(dims), seed, lo, hi);
  float* p = t.data_as<float>();
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (i % 7 == 3) p[i] = kNaN;
    if (i % 11 == 5) p[i] = kInf;
    if (i % 13 == 6) p[i] = -kInf;
    if (i % 17 == 8) p[i] = -0.f;
  }
  return t;
}

// The reference gives NaN at every NaN input of an elementwise op.
void expect_ref_keeps_nan(const OpCase& c, const std::string& what) {
  auto ref = run_op(c.op, c.attrs, c.inputs, 1, c.opset, c.const_inputs, c.domain);
  ASSERT_TRUE(ref.is_ok()) << what << ": " << ref.message();
  const float* x = c.inputs[0].data_as<float>();
  const float* y = ref.value()[0].data_as<float>();
  int64_t nans = 0;
  for (int64_t i = 0; i < c.inputs[0].numel(); ++i)
    if (std::isnan(x[i])) {
      ++nans;
      EXPECT_TRUE(std::isnan(y[i])) << what << ": reference maps NaN at " << i << " to " << y[i];
    }
  EXPECT_GT(nans, 0) << what << ": the case has no NaN";
}

TEST(NanSemantics, ReferenceActivationsKeepNaN) {
  // The case: HardSigmoid(NaN) was 1 in the reference.
  for (const char* op : {"Relu", "HardSigmoid", "HardSwish", "LeakyRelu", "Sigmoid", "Tanh", "Elu", "Selu", "Softplus",
                         "Softsign", "Mish", "Gelu", "ThresholdedRelu", "Celu"}) {
    OpCase c;
    c.op = op;
    c.opset = 20;
    c.inputs = {with_specials({4, 9}, 3)};
    expect_ref_keeps_nan(c, op);
  }
  OpCase h;
  h.op = "HardSigmoid";
  h.inputs = {make_tensor<float>(DataType::kFloat32, {1}, {kNaN})};
  auto r = run_op(h.op, {}, h.inputs, 1, 17, {});
  ASSERT_TRUE(r.is_ok());
  EXPECT_TRUE(std::isnan(r.value()[0].data_as<float>()[0]))
      << "HardSigmoid(NaN) = " << r.value()[0].data_as<float>()[0];
}

TEST(NanSemantics, UnaryOnEveryBackend) {
  struct U {
    const char* op;
    Attrs attrs;
  };
  const std::vector<U> ops{{"Relu", {}},
                           {"LeakyRelu", {{"alpha", attr_f(0.2f)}}},
                           {"Sigmoid", {}},
                           {"Tanh", {}},
                           {"Elu", {{"alpha", attr_f(0.7f)}}},
                           {"HardSigmoid", {{"alpha", attr_f(0.3f)}, {"beta", attr_f(0.4f)}}},
                           {"HardSwish", {}},
                           {"Selu", {}},
                           {"Softplus", {}},
                           {"Exp", {}},
                           {"Log", {}},
                           {"Sqrt", {}},
                           {"Abs", {}},
                           {"Neg", {}},
                           {"Mish", {}},
                           {"Gelu", {}}};
  uint32_t seed = 7000;
  for (const U& u : ops)
    for (auto dims : {std::vector<int64_t>{2, 20, 5, 3}, std::vector<int64_t>{7, 33}}) {
      OpCase c;
      c.op = u.op;
      c.opset = std::string(u.op) == "Gelu" ? 20 : 17;
      c.attrs = u.attrs;
      c.inputs = {with_specials(dims, seed++)};
      expect_ref_keeps_nan(c, u.op);
      check_case(c, std::string(u.op) + " with NaN/Inf " + Shape::of(dims).str(), {});
    }
}

TEST(NanSemantics, FusedBatchNormKeepsNaN) {
  for (const char* act : {"Relu", "Clip", "HardSigmoid"}) {
    OpCase c;
    c.op = "FusedBatchNorm";
    c.domain = "com.infera";
    c.opset = 15;
    c.attrs = {{"activation", attr_s(act)}};
    if (std::string(act) == "Clip") c.attrs["activation_alpha"] = attr_f(0.f), c.attrs["activation_beta"] = attr_f(6.f);
    c.inputs = {with_specials({2, 20, 5, 3}, 7100), random_tensor({20}, 7101), random_tensor({20}, 7102),
                random_tensor({20}, 7103), random_tensor({20}, 7104, 0.5f, 2.f)};
    c.const_inputs = {1, 2, 3, 4};
    expect_ref_keeps_nan(c, std::string("FusedBatchNorm + ") + act);
    check_case(c, std::string("FusedBatchNorm + ") + act + " with NaN/Inf", {"dnnl"});
  }
}

struct SpecialCase {
  const char* what;
  float x_special, z_special;  // written at a few positions of x / z (0: none)
};

// Runs the two sessions (inputs x and z of dims, seeded) on each case in turn, one session for all
// (the bounds of one run must not leak into the next); fails where the outputs' NaN / Inf pattern or
// values differ. Returns, per case, the reference's NaN outputs.
std::vector<int> compare_specials(Session& dnnl, Session& ref, const std::vector<SpecialCase>& cases,
                                  const std::vector<int64_t>& dims, uint32_t seed) {
  std::vector<int> nans;
  for (const SpecialCase& c : cases) {
    Tensor x = random_tensor(dims, seed), z = random_tensor(dims, seed + 2);
    for (int64_t i : {5, 300, 777}) {
      if (c.x_special != 0) x.data_as<float>()[i] = c.x_special;
      if (c.z_special != 0) z.data_as<float>()[i] = c.z_special;
    }
    auto a = dnnl.run({{"x", x}, {"z", z}});
    auto b = ref.run({{"x", x}, {"z", z}});
    EXPECT_TRUE(a.is_ok()) << c.what << ": " << a.message();
    EXPECT_TRUE(b.is_ok()) << c.what << ": " << b.message();
    if (!a.is_ok() || !b.is_ok()) return nans;
    const float* pa = a.value()[0].data_as<float>();
    const float* pb = b.value()[0].data_as<float>();
    int bad = 0, n = 0;
    for (int64_t i = 0; i < a.value()[0].numel() && bad < 5; ++i) {
      const bool same = std::isnan(pb[i])   ? std::isnan(pa[i])
                        : std::isinf(pb[i]) ? pa[i] == pb[i]
                                            : std::fabs(pa[i] - pb[i]) <= 1e-3f * (1.f + std::fabs(pb[i]));
      if (!same) ++bad, ADD_FAILURE() << c.what << ": out[" << i << "] = " << pa[i] << ", reference " << pb[i];
      n += std::isnan(pb[i]);
    }
    nans.push_back(n);
  }
  return nans;
}

// The chain tests' graph inputs x, z [1, C, 8, 8] and output "out"; seeded weights in [-0.5, 0.5).
void chain_io(ModelBuilder& mb, int64_t C) {
  mb.input("x", {1, C, 8, 8});
  mb.input("z", {1, C, 8, 8});
  mb.output("out");
}
void random_weights(ModelBuilder& mb, const std::string& name, std::vector<int64_t> dims, uint32_t seed) {
  Tensor t = random_tensor(dims, seed, -0.5f, 0.5f);
  mb.floats(name, dims, std::vector<float>(t.data_as<float>(), t.data_as<float>() + t.numel()));
}

// The oneDNN convs' NaN guard reads an input only where the run has no bound for it (a guarded conv
// proves one for its output, a conv without activation carries its inputs' on, the BatchNorm loop
// measures its output's): a FusedBatchNorm and a chain of fused convs (Relu, Clip, a projection with a residual, a Mul
// by a second input z in the middle) must give the reference's NaN / Inf pattern for NaN in any input and for values
// that overflow, and the bounds of one run must not leak into the next (one session, runs in turn).
TEST(NanSemantics, ConvChainsKeepNaNWhereTheGuardTrustsBounds) {
  ModelBuilder mb(13);
  const int64_t C = 16;
  chain_io(mb, C);
  auto weights = [&](const std::string& name, std::vector<int64_t> dims, uint32_t seed) {
    random_weights(mb, name, std::move(dims), seed);
  };
  weights("W1", {C, C, 3, 3}, 1), weights("B1", {C}, 2), weights("W2", {C, C, 1, 1}, 3), weights("B2", {C}, 4);
  weights("W3", {C, C, 1, 1}, 5), weights("W4", {C, C, 3, 3}, 6), weights("B4", {C}, 7), weights("W5", {C, C, 1, 1}, 8);
  weights("g", {C}, 9), weights("be", {C}, 10), weights("mu", {C}, 11);
  mb.floats("var", {C}, std::vector<float>(C, 0.8f));
  mb.floats("lo", {}, {0.f});
  mb.floats("hi", {}, {6.f});
  mb.node("BatchNormalization", {"x", "g", "be", "mu", "var"}, {"n0"});  // + Relu: FusedBatchNorm
  mb.node("Relu", {"n0"}, {"r0"});
  set_ints(mb.node("Conv", {"r0", "W1", "B1"}, {"c1"}), "pads", {1, 1, 1, 1});
  mb.node("Relu", {"c1"}, {"r1"});
  mb.node("Conv", {"r1", "W2", "B2"}, {"c2"});
  mb.node("Clip", {"c2", "lo", "hi"}, {"r2"});
  mb.node("Conv", {"r2", "W3"}, {"c3"});
  mb.node("Add", {"c3", "r1"}, {"s3"});  // a projection with a residual: carries the bounds on
  set_ints(mb.node("Conv", {"s3", "W4", "B4"}, {"c4"}), "pads", {1, 1, 1, 1});
  mb.node("Relu", {"c4"}, {"r4"});
  mb.node("Mul", {"r4", "z"}, {"m"});
  mb.node("Conv", {"m", "W5"}, {"c5"});
  mb.node("Relu", {"c5"}, {"out"});
  auto dnnl = mb.load(true, true);
  auto ref = mb.load(true, false);
  ASSERT_TRUE(dnnl.is_ok()) << dnnl.message();
  ASSERT_TRUE(ref.is_ok()) << ref.message();
  // 1e33: above the guard's threshold t, yet no overflow on the way: the slow path, exact.
  const std::vector<SpecialCase> cases{{"finite", 0, 0},      {"NaN in x", kNaN, 0},  {"finite again", 0, 0},
                                       {"NaN in z", 0, kNaN}, {"overflow", 3e37f, 0}, {"Inf in x", kInf, 0},
                                       {"large", 1e33f, 0},   {"large z", 0, 1e33f},  {"finite last", 0, 0}};
  int nan_outputs = 0;
  for (int n : compare_specials(*dnnl.value(), *ref.value(), cases, {1, C, 8, 8}, 11)) nan_outputs += n;
  EXPECT_GT(nan_outputs, 0) << "no case made a NaN output: the test proves nothing";
}

// The bound rules (plan/bounds.h) carry a guarded conv's bound through a max pool, a squeeze-excitation
// gate (GlobalAveragePool, a 1x1 conv + Sigmoid, Mul), a constant scale, Concat, Resize, Pad and Add, so
// that the guarded convs after them read nothing; an input with no bound (z) must still be read: NaN
// or Inf in x or z and large values must give the reference's NaN / Inf pattern, run after run.
TEST(NanSemantics, BoundRulesThroughPoolsGatesAndConcats) {
  ModelBuilder mb(13);
  const int64_t C = 16;
  chain_io(mb, C);
  auto weights = [&](const std::string& name, std::vector<int64_t> dims, uint32_t seed) {
    random_weights(mb, name, std::move(dims), seed);
  };
  weights("W1", {C, C, 3, 3}, 21), weights("B1", {C}, 22), weights("Wg", {C, C, 1, 1}, 23);
  weights("W2", {C, 3 * C, 1, 1}, 24), weights("W3", {C, C, 3, 3}, 25), weights("W4", {C, 2 * C, 1, 1}, 26);
  mb.floats("half", {}, {0.5f});
  mb.floats("scales", {4}, {1.f, 1.f, 2.f, 2.f});
  mb.floats("roi", {0}, {});
  mb.ints("pads", {0, 0, 1, 1, 0, 0, 1, 1});
  set_ints(mb.node("Conv", {"x", "W1", "B1"}, {"c1"}), "pads", {1, 1, 1, 1});
  mb.node("Relu", {"c1"}, {"r1"});
  auto* mp = mb.node("MaxPool", {"r1"}, {"p1"});
  set_ints(mp, "kernel_shape", {3, 3});
  set_ints(mp, "pads", {1, 1, 1, 1});
  mb.node("GlobalAveragePool", {"p1"}, {"g0"});
  mb.node("Conv", {"g0", "Wg"}, {"g1"});
  mb.node("Sigmoid", {"g1"}, {"gate"});
  mb.node("Mul", {"p1", "gate"}, {"se"});
  mb.node("Mul", {"r1", "half"}, {"sc"});
  mb.node("Add", {"se", "z"}, {"sz"});  // z has no bound: the conv after must read sz
  set_int(mb.node("Concat", {"se", "sc", "sz"}, {"cat"}), "axis", 1);
  mb.node("Conv", {"cat", "W2"}, {"c2"});
  mb.node("Relu", {"c2"}, {"r2"});
  auto* ap = mb.node("AveragePool", {"r2"}, {"a2"});
  set_ints(ap, "kernel_shape", {2, 2});
  set_ints(ap, "strides", {2, 2});
  mb.node("Resize", {"a2", "roi", "scales"}, {"up"});
  mb.node("Pad", {"up", "pads"}, {"pd"});
  set_ints(mb.node("Conv", {"pd", "W3"}, {"c3"}), "pads", {0, 0, 0, 0});
  mb.node("Relu", {"c3"}, {"r3"});
  set_int(mb.node("Concat", {"r3", "se"}, {"cat2"}), "axis", 1);
  mb.node("Conv", {"cat2", "W4"}, {"c4"});
  mb.node("Clip", {"c4", "half"}, {"out"});  // Clip(min 0.5): a NaN-dropping post-op too
  auto dnnl = mb.load(true, true);
  auto ref = mb.load(true, false);
  ASSERT_TRUE(dnnl.is_ok()) << dnnl.message();
  ASSERT_TRUE(ref.is_ok()) << ref.message();
  // No overflowing case: the reference's GlobalAveragePool sums in double, oneDNN's in float (an
  // average of 3e37s is finite in one and Inf in the other, with or without the bounds).
  const std::vector<SpecialCase> cases{{"finite", 0, 0},      {"NaN in z", 0, kNaN}, {"finite again", 0, 0},
                                       {"NaN in x", kNaN, 0}, {"Inf in z", 0, kInf}, {"Inf in x", kInf, 0},
                                       {"large x", 1e6f, 0},  {"finite last", 0, 0}};
  const std::vector<int> nans = compare_specials(*dnnl.value(), *ref.value(), cases, {1, C, 8, 8}, 31);
  ASSERT_EQ(nans.size(), cases.size());
  int nan_outputs = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    // z has no bound: a NaN there must reach the output through the guard's read.
    if (cases[i].z_special != 0) EXPECT_GT(nans[i], 0) << cases[i].what << ": the reference has no NaN";
    nan_outputs += nans[i];
  }
  EXPECT_GT(nan_outputs, 0) << "no case made a NaN output: the test proves nothing";
}

TEST(NanSemantics, ClipOnEveryBackend) {
  // Without bounds (opset 13, no min/max), with constant bounds, and opset 6 attributes.
  OpCase none;
  none.op = "Clip";
  none.opset = 13;
  none.inputs = {with_specials({2, 17, 4, 4}, 11)};
  expect_ref_keeps_nan(none, "Clip without bounds");
  check_case(none, "Clip without bounds", {});
  OpCase relu6 = none;
  relu6.inputs.push_back(make_tensor<float>(DataType::kFloat32, {}, {0.f}));
  relu6.inputs.push_back(make_tensor<float>(DataType::kFloat32, {}, {6.f}));
  relu6.const_inputs = {1, 2};
  expect_ref_keeps_nan(relu6, "Clip(0, 6)");
  check_case(relu6, "Clip(0, 6)", {});
  OpCase clip6;
  clip6.op = "Clip";
  clip6.opset = 6;
  clip6.attrs = {{"min", attr_f(-0.3f)}, {"max", attr_f(0.6f)}};
  clip6.inputs = {with_specials({2, 17, 4, 4}, 12)};
  expect_ref_keeps_nan(clip6, "Clip opset 6");
  check_case(clip6, "Clip opset 6 with NaN", {});
}

TEST(NanSemantics, BinaryOnEveryBackend) {
  uint32_t seed = 7100;
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Max", "Min"})
    for (bool nan_in_full : {true, false}) {
      OpCase c;
      c.op = op;
      Tensor full = nan_in_full ? with_specials({2, 20, 5, 6}, seed++) : random_tensor({2, 20, 5, 6}, seed++);
      Tensor b = nan_in_full ? random_tensor({1, 20, 1, 1}, seed++, 0.5f, 1.5f) : with_specials({1, 20, 1, 1}, seed++);
      c.inputs = {full, b};
      c.const_inputs = {1};
      check_case(c, std::string(op) + (nan_in_full ? " NaN in A" : " NaN in B (broadcast)"), {});
    }
}

TEST(NanSemantics, SoftmaxRowsWithNaNOrInf) {
  // Rows: one NaN; +Inf; -Inf; two +Inf; all -Inf; ordinary. The reference's answer is what
  // exp/sum give (NaN rows for NaN or +Inf, the -Inf entries 0), checked here first.
  const std::vector<float> rows = {1,     kNaN,  2,     3,      //
                                   1,     kInf,  2,     3,      //
                                   1,     -kInf, 2,     3,      //
                                   kInf,  kInf,  0,     1,      //
                                   -kInf, -kInf, -kInf, -kInf,  //
                                   0.5f,  -1,    2,     0};
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    OpCase c;
    c.op = op;
    c.opset = 13;
    c.attrs = {{"axis", attr_i(-1)}};
    c.inputs = {make_tensor<float>(DataType::kFloat32, {6, 4}, rows)};
    auto ref = run_op(op, c.attrs, c.inputs, 1, 13, {});
    ASSERT_TRUE(ref.is_ok()) << ref.message();
    const float* y = ref.value()[0].data_as<float>();
    for (int j = 0; j < 4; ++j) EXPECT_TRUE(std::isnan(y[j])) << op << ": the NaN row, entry " << j << " = " << y[j];
    EXPECT_TRUE(std::isfinite(y[20]) && std::isfinite(y[23])) << op << ": the ordinary row";
    check_case(c, std::string(op) + " over rows with NaN/Inf", {});
  }
}

TEST(NanSemantics, MaxPoolWithNaN) {
  uint32_t seed = 7200;
  struct P {
    std::vector<int64_t> k, s, pads;
  };
  for (const P& p :
       {P{{3, 3}, {2, 2}, {1, 1, 1, 1}}, P{{2, 2}, {2, 2}, {0, 0, 0, 0}}, P{{3, 3}, {1, 1}, {0, 0, 0, 0}}}) {
    OpCase c;
    c.op = "MaxPool";
    c.attrs = {{"kernel_shape", attr_ints(p.k)}, {"strides", attr_ints(p.s)}, {"pads", attr_ints(p.pads)}};
    Tensor x = random_tensor({1, 20, 9, 9}, seed++);
    float* d = x.data_as<float>();
    for (int64_t i = 0; i < x.numel(); i += 37) d[i] = kNaN;  // a NaN in some windows, not all
    for (int64_t i = 5; i < x.numel(); i += 53) d[i] = kInf;
    c.inputs = {x};
    auto ref = run_op("MaxPool", c.attrs, c.inputs, 1, 17, {});
    ASSERT_TRUE(ref.is_ok()) << ref.message();
    int64_t nans = 0;
    for (int64_t i = 0; i < ref.value()[0].numel(); ++i) nans += std::isnan(ref.value()[0].data_as<float>()[i]);
    EXPECT_GT(nans, 0) << "the reference MaxPool must propagate NaN";
    check_case(c, "MaxPool with NaN k" + std::to_string(p.k[0]) + " s" + std::to_string(p.s[0]), {});
  }
  OpCase g;
  g.op = "GlobalMaxPool";
  Tensor x = random_tensor({2, 20, 5, 5}, seed++);
  x.data_as<float>()[30] = kNaN;
  g.inputs = {x};
  check_case(g, "GlobalMaxPool with NaN", {});
}

// Activations fused into a Conv or Gemm ran as oneDNN post-ops, whose Relu/Clip/HardSigmoid map
// NaN to the bound: now a NaN-keeping loop after the primitive. NaN only (no Inf) and sparse, so
// that outputs with and without NaN in their window are both present; 1x1 and strided 3x3
// kernels, where oneDNN has no Winograd (whose tiles would spread a NaN to neighbours).
TEST(NanSemantics, ActivationsFusedIntoConvKeepNaN) {
  struct A {
    const char* act;
    float alpha, beta;
  };
  const A acts[] = {{"", 0, 0},
                    {"Relu", 0, 0},
                    {"Clip", -0.5f, 0.7f},
                    {"Clip", 0.f, 6.f},
                    {"HardSigmoid", .3f, .4f},
                    {"LeakyRelu", .1f, 0},
                    {"Sigmoid", 0, 0},
                    {"Tanh", 0, 0},
                    {"Elu", .3f, 0},
                    {"HardSwish", 0, 0},
                    {"Selu", 0, 0},
                    {"Softplus", 0, 0}};
  struct S {
    std::vector<int64_t> x, w;
    std::vector<int64_t> strides, pads;
  };
  const S shapes[] = {{{1, 20, 9, 9}, {24, 20, 1, 1}, {1, 1}, {0, 0, 0, 0}},  // 24: a padded 16-block
                      {{2, 16, 10, 10}, {32, 16, 3, 3}, {2, 2}, {1, 1, 1, 1}}};
  uint32_t seed = 7300;
  for (const A& a : acts)
    for (const S& sh : shapes)
      for (bool residual : {false, true}) {
        OpCase c;
        c.op = "FusedConv";
        c.domain = "com.infera";
        c.attrs = {{"strides", attr_ints(sh.strides)}, {"pads", attr_ints(sh.pads)}};
        if (*a.act) c.attrs["activation"] = attr_s(a.act);
        if (a.alpha != 0 || a.beta != 0) {
          c.attrs["activation_alpha"] = attr_f(a.alpha);
          if (std::string(a.act) != "Elu" && std::string(a.act) != "LeakyRelu")
            c.attrs["activation_beta"] = attr_f(a.beta);
        }
        Tensor x = random_tensor(sh.x, seed++);
        for (int64_t i = 0; i < x.numel(); i += 211) x.data_as<float>()[i] = kNaN;
        c.inputs = {x, random_tensor(sh.w, seed++, -0.2f, 0.2f), random_tensor({sh.w[0]}, seed++)};
        c.const_inputs = {1, 2};
        auto y = run_op("Conv", {{"strides", attr_ints(sh.strides)}, {"pads", attr_ints(sh.pads)}},
                        {c.inputs[0], c.inputs[1]}, 1, 17, {1});
        ASSERT_TRUE(y.is_ok()) << y.message();
        if (residual) c.inputs.push_back(random_tensor(y.value()[0].dims(), seed++));
        auto ref = run_op(c.op, c.attrs, c.inputs, 1, 17, c.const_inputs, c.domain);
        ASSERT_TRUE(ref.is_ok()) << ref.message();
        int64_t nans = 0;
        const Tensor& r = ref.value()[0];
        for (int64_t i = 0; i < r.numel(); ++i) nans += std::isnan(r.data_as<float>()[i]);
        const std::string what = std::string("FusedConv+") + a.act + " " + Shape::of(sh.x).str() + " W" +
                                 Shape::of(sh.w).str() + (residual ? " +Z" : "") + " with NaN";
        EXPECT_GT(nans, 0) << what << ": the reference must propagate NaN";
        EXPECT_LT(nans, r.numel()) << what << ": every output NaN tests nothing";
        check_case(c, what, {"dnnl"});
      }
}

TEST(NanSemantics, FusedConvWithAnInfWeightOnZeroInput) {
  // 0 * Inf = NaN before the activation even where X is all zeros: no magnitude of X makes the fused
  // post-op exact then (the guard once took it for X = 0).
  for (const char* act : {"Relu", "Clip"}) {
    OpCase c;
    c.op = "FusedConv";
    c.domain = "com.infera";
    c.attrs = {{"activation", attr_s(act)}};
    if (std::string(act) == "Clip") c.attrs["activation_alpha"] = attr_f(0.f), c.attrs["activation_beta"] = attr_f(6.f);
    Tensor w = random_tensor({16, 16, 1, 1}, 7400);
    w.data_as<float>()[3] = kInf;  // output channel 0
    c.inputs = {make_tensor<float>(DataType::kFloat32, {1, 16, 4, 4}, std::vector<float>(256, 0.f)), w};
    c.const_inputs = {1};
    auto ref = run_op(c.op, c.attrs, c.inputs, 1, 17, c.const_inputs, c.domain);
    ASSERT_TRUE(ref.is_ok()) << ref.message();
    EXPECT_TRUE(std::isnan(ref.value()[0].data_as<float>()[0])) << act << ": 0 * Inf must be NaN in the reference";
    check_case(c, std::string("FusedConv+") + act + " with an Inf weight on zeros", {"dnnl"});
  }
}

TEST(NanSemantics, FusedConvWhoseInfInputsSumToNaN) {
  // No NaN in X: at pixel 0 both channels are +Inf and W[m] = (1, -1): Inf - Inf = NaN before
  // the activation, where the post-ops would give 0 (Relu) or 0 (Clip(0, 6)). The guard must see
  // Inf too. (Finite sums that overflow are not tested: oneDNN accumulates with FMA, where
  // Inf + finite stays Inf, and the reference multiplies then adds: they differ before any
  // activation.)
  for (const char* act : {"Relu", "Clip", "HardSigmoid"}) {
    OpCase c;
    c.op = "FusedConv";
    c.domain = "com.infera";
    c.attrs = {{"activation", attr_s(act)}};
    if (std::string(act) != "Relu") {
      c.attrs["activation_alpha"] = attr_f(std::string(act) == "Clip" ? 0.f : 0.3f);
      c.attrs["activation_beta"] = attr_f(std::string(act) == "Clip" ? 6.f : 0.4f);
    }
    Tensor x = random_tensor({1, 2, 3, 3}, 7500);
    x.data_as<float>()[0] = kInf;
    x.data_as<float>()[9] = kInf;
    c.inputs = {x,
                make_tensor<float>(DataType::kFloat32, {4, 2, 1, 1}, {1.f, -1.f, 2.f, -2.f, 0.5f, -0.5f, 3.f, -3.f})};
    c.const_inputs = {1};
    auto ref = run_op(c.op, c.attrs, c.inputs, 1, 17, c.const_inputs, c.domain);
    ASSERT_TRUE(ref.is_ok()) << ref.message();
    EXPECT_TRUE(std::isnan(ref.value()[0].data_as<float>()[0])) << "reference: Inf - Inf";
    EXPECT_FALSE(std::isnan(ref.value()[0].data_as<float>()[1]));
    check_case(c, std::string("FusedConv+") + act + " whose Inf inputs sum to NaN", {"dnnl"});
  }
}

TEST(NanSemantics, ActivationsFusedIntoGemmKeepNaN) {
  uint32_t seed = 7400;
  for (const char* act : {"Relu", "Clip", "HardSigmoid", "LeakyRelu", "Sigmoid", "Tanh", "Elu", "HardSwish"}) {
    OpCase c;
    c.op = "FusedGemm";
    c.domain = "com.infera";
    c.attrs = {{"activation", attr_s(act)}};
    if (std::string(act) == "Clip" || std::string(act) == "HardSigmoid") {
      c.attrs["activation_alpha"] = attr_f(std::string(act) == "Clip" ? -0.5f : 0.3f);
      c.attrs["activation_beta"] = attr_f(std::string(act) == "Clip" ? 0.7f : 0.4f);
    }
    Tensor a = random_tensor({6, 12}, seed++);
    a.data_as<float>()[13] = kNaN;  // row 1: every output of that row is NaN
    c.inputs = {a, random_tensor({12, 7}, seed++), random_tensor({7}, seed++)};
    c.const_inputs = {1, 2};
    auto ref = run_op(c.op, c.attrs, c.inputs, 1, 17, c.const_inputs, c.domain);
    ASSERT_TRUE(ref.is_ok()) << ref.message();
    EXPECT_TRUE(std::isnan(ref.value()[0].data_as<float>()[7])) << act << ": reference row 1";
    check_case(c, std::string("FusedGemm+") + act + " with NaN", {"dnnl"});
  }
}

}  // namespace
}  // namespace infera::test
