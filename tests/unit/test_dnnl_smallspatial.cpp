// Convs of a small output and large weights as our own AVX-512 loop in nChw16c
// (dnnl_smallspatial_conv.cpp): 1x1 (any stride) and 3x3 convs of N * OH * OW <= 64 output pixels,
// against the reference on seeded random inputs in every format the backend offers
// (backend_harness.h), each also checked to take the loop (the kernel's implementation name).
// Channel counts off the 16-lane blocks (tails in and out), several reduction chunks (> 256 input
// channels, or 3x3 taps), pixel tiles that cross images, every fused activation, NaN / Inf; the
// epilogue's AVX-512 activations (avx512_activation.h) bit for bit against apply_activation.
#include <gtest/gtest.h>
#include <immintrin.h>

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <random>

#include "backend_harness.h"
#include "backends/cpu/avx512_activation.h"
#include "dnnl_probe.h"
#include "onnx_model_builder.h"

namespace infera::test {
namespace {

// The small shapes below run the loop only with INFERA_SMALLSPATIAL_CONV=all (the backend's rule
// takes large weights only: RuleTakesLargeWeights checks it).
class SmallSpatialConv : public ::testing::Test {
 protected:
  void SetUp() override { setenv("INFERA_SMALLSPATIAL_CONV", "all", 1); }
  void TearDown() override { unsetenv("INFERA_SMALLSPATIAL_CONV"); }
};

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

struct SsShape {
  std::vector<int64_t> x;  // N, C, H, W
  int64_t m, k;            // output channels, kernel k x k
  std::vector<int64_t> pads, strides;
  const char* variant;  // "1x1 in place" or "columns"
};

// Conv (act "" and no z) or FusedConv of x with m filters k x k; bias (constant when bias_const),
// residual Z of Y's shape.
OpCase ss_case(const SsShape& s, uint32_t seed, const std::string& act = "", bool bias = true, bool z = false,
               bool bias_const = true, std::vector<int64_t> dil = {1, 1}, int64_t group = 1) {
  // Weights scaled so that sums of hundreds of products stay near 1 (the activations' range).
  const float ws = 1.f / std::sqrt(static_cast<float>(s.x[1] / group * s.k * s.k));
  return conv_op_case(s.x, s.m, group, s.k, s.k, s.pads, s.strides, seed, act, bias, z, bias_const, dil, ws);
}

const SsShape kShapes[] = {
    {{1, 40, 7, 7}, 72, 1, {0, 0, 0, 0}, {1, 1}, "columns"},          // tails in (8: columns with 0 lanes) and out (8)
    {{1, 96, 7, 7}, 40, 1, {0, 0, 0, 0}, {1, 1}, "1x1 in place"},     // whole input blocks, tail out
    {{1, 300, 7, 7}, 100, 1, {0, 0, 0, 0}, {1, 1}, "columns"},        // 2 reduction chunks, odd block count
    {{1, 48, 14, 14}, 40, 1, {0, 0, 0, 0}, {2, 2}, "columns"},        // strided 1x1: 14x14 -> 7x7
    {{1, 35, 5, 3}, 50, 3, {1, 1, 1, 1}, {1, 1}, "columns"},          // 3x3 on 5x3, 27 k-blocks: 2 chunks
    {{2, 33, 5, 5}, 17, 3, {1, 1, 1, 1}, {1, 1}, "columns"},          // two images: tiles cross them
    {{1, 40, 9, 9}, 24, 3, {1, 1, 1, 1}, {2, 2}, "columns"},          // 3x3 stride 2
    {{1, 24, 9, 9}, 64, 3, {0, 0, 0, 0}, {1, 1}, "columns"},          // no padding: 7x7
    {{1, 32, 6, 7}, 48, 3, {0, 1, 1, 0}, {1, 1}, "columns"},          // asymmetric pads
    {{3, 20, 4, 5}, 33, 1, {0, 0, 0, 0}, {1, 1}, "columns"},          // 1x1 of 3 images
    {{1, 16, 1, 1}, 32, 1, {0, 0, 0, 0}, {1, 1}, "1x1 in place"},     // one pixel
    {{1, 464, 7, 7}, 1024, 1, {0, 0, 0, 0}, {1, 1}, "1x1 in place"},  // ShuffleNet's conv5
    {{1, 128, 14, 14}, 160, 3, {1, 1, 1, 1}, {2, 2}, "columns"},      // ResNet layer4.0's conv2, narrower
};

TEST_F(SmallSpatialConv, RunsOurKernel) {
  uint32_t seed = 12100;
  int taken = 0;
  for (size_t i = 0; i < std::size(kShapes); ++i)
    for (int v = 0; v < 2; ++v) {
      // Per shape, a plain Conv with bias and a FusedConv + Relu without, the next shape the other way round.
      const SsShape& s = kShapes[i];
      const bool fused = (v + i) % 2 == 1;
      OpCase c = ss_case(s, seed, fused ? "Relu" : "", v == 0);
      seed += 4;
      const std::string what = conv_case_what(c, fused ? "+ Relu" : "");
      check_case(c, what);
      const std::string impl = impl_of(c, dnnl_blocked_format());
      if (own_avx512_conv_here()) {
        EXPECT_TRUE(has(impl, std::string("infera small-spatial conv avx512 (") + s.variant)) << what << ": " << impl;
        EXPECT_TRUE(has(impl, fused ? "dnnl fused conv" : "dnnl conv")) << what << ": " << impl;
        taken += has(impl, "infera small-spatial conv");
      }
      if (own_avx512_conv_here()) {  // plain X and Y (the planner gives some): the columns transpose X, Y is scattered
        const std::string plain = impl_of(c, Format::kPlain);
        EXPECT_TRUE(has(plain, "infera small-spatial conv avx512 (columns")) << what << ": " << plain;
      }
    }
  if (own_avx512_conv_here()) EXPECT_EQ(taken, static_cast<int>(2 * std::size(kShapes)));
}

TEST_F(SmallSpatialConv, EveryFusedActivationAndResidual) {
  // Every activation of the table (inline: Relu, LeakyRelu, Clip; the others through apply_activation,
  // which must leave padded lanes 0), alone and with a residual Z; a bias that is not a constant.
  std::vector<std::string> acts{""};
  for (int k = 1; k < static_cast<int>(ActKind::kCount); ++k) {
    const ActKind kind = static_cast<ActKind>(k);
    std::vector<cpu::EltOp> ops;
    // GeluTanh has no op type of its own (Gelu with approximate="tanh"); the backend's convs take
    // the activations oneDNN has an eltwise chain for.
    if (kind == ActKind::kGeluTanh || !cpu::eltwise_chain(activation_default(kind), ops)) continue;
    acts.push_back(activation_name(kind));
  }
  uint32_t seed = 12300;
  const SsShape shapes[] = {kShapes[0], kShapes[3]};
  for (const SsShape& s : shapes)
    for (const std::string& act : acts)
      for (bool z : {false, true}) {
        if (act.empty() && !z) continue;
        const bool bias_const = (seed / 4) % 3 != 0;
        OpCase c = ss_case(s, seed, act, true, z, bias_const);
        seed += 4;
        const std::string what =
            conv_case_what(c, std::string("+ ") + (z ? "Z " : "") + act + (bias_const ? "" : " (bias not constant)"));
        auto runs = check_case(c, what);
        if (!own_avx512_conv_here()) continue;
        const std::string impl = impl_of(c, dnnl_blocked_format());
        EXPECT_TRUE(has(impl, "dnnl fused conv infera small-spatial conv")) << what << ": " << impl;
        if (z) EXPECT_GE(runs["dnnl"].modes, 5) << what;  // Y in Z's buffer is among the modes
      }
}

TEST_F(SmallSpatialConv, KeepNanAndInf) {
  // NaN, +Inf and -Inf in X (and NaN in Z): Relu and Clip keep NaN as the reference does (oneDNN's
  // post-ops map it to a bound), Inf meets -Inf as NaN; a 1x1 reads one pixel, a 3x3 spreads it.
  // Also the activations the epilogue computes in AVX-512 (SiLU, HardSwish, Sigmoid, HardSigmoid).
  constexpr float kNaN = std::numeric_limits<float>::quiet_NaN(), kInf = std::numeric_limits<float>::infinity();
  uint32_t seed = 12500;
  const SsShape shapes[] = {kShapes[0], kShapes[3], kShapes[2]};
  for (const SsShape& s : shapes)
    for (const char* act : {"Relu", "Clip", "", "Swish", "HardSwish", "Sigmoid", "HardSigmoid"})
      for (bool z : {false, true}) {
        OpCase c = ss_case(s, seed, act, true, z);
        seed += 4;
        float* x = c.inputs[0].data_as<float>();
        const int64_t hw = s.x[2] * s.x[3], C = s.x[1];
        x[3 * hw + 2] = kNaN;
        x[(C - 1) * hw + hw - 1] = kNaN;  // the last channel (the tail block), the last pixel
        x[20 * hw + 4] = kInf;
        x[21 * hw + 4] = -kInf;  // the same pixel: NaN where both meet
        x[10 * hw + 7] = kInf;
        if (z) c.inputs[3].data_as<float>()[5] = kNaN;
        auto ref = run_op(c.op, c.attrs, c.inputs, 1, c.opset, c.const_inputs, c.domain);
        ASSERT_TRUE(ref.is_ok()) << ref.message();
        int nan = 0, finite = 0;
        for (int64_t i = 0; i < ref.value()[0].numel(); ++i) {
          const float v = ref.value()[0].data_as<float>()[i];
          nan += std::isnan(v), finite += std::isfinite(v);
        }
        const std::string what = conv_case_what(
            c, std::string("+ ") + (z ? "Z " : "") + (*act ? act : "no activation") + ", NaN and Inf in X");
        EXPECT_GT(nan, 10) << what << ": the reference keeps no NaN: the case proves nothing";
        EXPECT_GT(finite, 0) << what;
        check_case(c, what);
        if (own_avx512_conv_here())
          EXPECT_TRUE(has(impl_of(c, dnnl_blocked_format()), "infera small-spatial conv")) << what;
      }
}

TEST_F(SmallSpatialConv, DeclinesOtherShapes) {
  // More than 64 output pixels (14x14), grouped, dilated, 5x5, stride 3: oneDNN's conv.
  struct D {
    SsShape s;
    std::vector<int64_t> dil;
    int64_t group;
  };
  const D ds[] = {{{{1, 32, 14, 14}, 32, 1, {0, 0, 0, 0}, {1, 1}, ""}, {1, 1}, 1},
                  {{{1, 32, 7, 7}, 32, 3, {1, 1, 1, 1}, {1, 1}, ""}, {1, 1}, 2},
                  {{{1, 32, 7, 7}, 32, 3, {2, 2, 2, 2}, {1, 1}, ""}, {2, 2}, 1},
                  {{{1, 32, 7, 7}, 32, 5, {2, 2, 2, 2}, {1, 1}, ""}, {1, 1}, 1},
                  {{{1, 32, 9, 9}, 32, 1, {0, 0, 0, 0}, {3, 3}, ""}, {1, 1}, 1}};
  uint32_t seed = 12700;
  for (const D& d : ds) {
    OpCase c = ss_case(d.s, seed, "Relu", true, false, true, d.dil, d.group);
    seed += 4;
    const std::string what = conv_case_what(c, "dil " + std::to_string(d.dil[0]) + " group " + std::to_string(d.group));
    check_case(c, what);
    const std::string impl = impl_of(c, dnnl_blocked_format());
    EXPECT_FALSE(has(impl, "infera small-spatial")) << what << ": " << impl;
    EXPECT_TRUE(has(impl, "dnnl fused conv")) << what << ": " << impl;
  }
}

TEST(SmallSpatialConvRule, TakesLargeWeights) {
  // Without INFERA_SMALLSPATIAL_CONV: 1x1 convs on 7x7 of >= 3 MB of weights, or >= 1.5 MB that
  // expand, or >= 0.75 MB that expand 4x with an inlined activation; not a smaller one, not a
  // square 1.8 MB one (RegNetX's 672), not a 14x14 one, not MNASNet's 192->1152 with Swish (SiLU).
  struct R {
    SsShape s;
    bool taken;
    const char* act = "Relu";
  };
  const R rs[] = {{{{1, 1024, 7, 7}, 768, 1, {0, 0, 0, 0}, {1, 1}, ""}, true},  // 3 MB
                  {{{1, 320, 7, 7}, 1280, 1, {0, 0, 0, 0}, {1, 1}, ""}, true},  // 1.6 MB, expands
                  {{{1, 128, 9, 9}, 512, 3, {0, 0, 0, 0}, {1, 1}, ""}, true},   // 3x3: 2.25 MB, expands
                  {{{1, 192, 7, 7}, 1152, 1, {0, 0, 0, 0}, {1, 1}, ""}, true},  // 0.84 MB, expands 6x
                  {{{1, 192, 7, 7}, 1152, 1, {0, 0, 0, 0}, {1, 1}, ""}, false, "Swish"},
                  {{{1, 672, 7, 7}, 672, 1, {0, 0, 0, 0}, {1, 1}, ""}, false},       // 1.8 MB, square
                  {{{1, 160, 7, 7}, 960, 1, {0, 0, 0, 0}, {1, 1}, ""}, false},       // 0.6 MB
                  {{{1, 1024, 14, 14}, 1024, 1, {0, 0, 0, 0}, {1, 1}, ""}, false}};  // 196 pixels
  ASSERT_EQ(std::getenv("INFERA_SMALLSPATIAL_CONV"), nullptr);
  uint32_t seed = 13100;
  for (const R& r : rs) {
    OpCase c = ss_case(r.s, seed, r.act);
    seed += 4;
    const std::string what = conv_case_what(c, std::string("+ ") + r.act);
    check_case(c, what);
    const std::string impl = impl_of(c, dnnl_blocked_format());
    EXPECT_EQ(has(impl, "infera small-spatial conv"), r.taken && own_avx512_conv_here()) << what << ": " << impl;
  }
}

// The epilogue's activations (cpu::act16) against apply_activation, bit for bit (NaN as NaN, any
// payload): seeded random inputs from subnormals to FLT_MAX, both signs, and the special values
// (0, -0, NaN, +-Inf, +-FLT_MAX, the ends of exp's clamp, the knees of the hard kinds) in every lane.
__attribute__((target("avx512f"))) void act16_run(const Activation& a, const float* x, float* y, size_t n) {
  for (size_t i = 0; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, cpu::act16(a, _mm512_loadu_ps(x + i)));
}

TEST(SmallSpatialAct16, MatchesApplyActivationBitForBit) {
  if (!__builtin_cpu_supports("avx512f")) return;  // act16 is AVX-512 code: nothing to run here
  constexpr float kNaN = std::numeric_limits<float>::quiet_NaN(), kInf = std::numeric_limits<float>::infinity();
  const float specials[] = {0.f,     -0.f,     kNaN,         -kNaN,         kInf,     -kInf,     FLT_MAX,  -FLT_MAX,
                            FLT_MIN, -FLT_MIN, FLT_TRUE_MIN, -FLT_TRUE_MIN, 87.3365f, -87.3365f, 88.3762f, -88.3762f,
                            88.5f,   -88.5f,   3.f,          -3.f,          2.5f,     -2.5f,     1.f,      6.f,
                            -1.f,    0.5f,     1e-8f,        -1e-8f,        100.f,    -100.f};
  const size_t ns = std::size(specials);
  std::vector<float> x(16 * 4096);
  // Every special in every lane: block b of 16 holds special (b + lane) % ns.
  size_t i = 0;
  for (size_t b = 0; b < ns; ++b)
    for (size_t l = 0; l < 16; ++l) x[i++] = specials[(b + l) % ns];
  std::mt19937 rng(13300);
  std::uniform_real_distribution<float> small(-10.f, 10.f), wide(-120.f, 120.f), expo(-149.f, 128.f);
  for (; i < x.size(); ++i) {
    const uint32_t pick = rng() % 3;
    if (pick == 0)
      x[i] = small(rng);
    else if (pick == 1)
      x[i] = wide(rng);
    else
      x[i] = std::ldexp(rng() % 2 ? 1.f : -1.f, static_cast<int>(expo(rng))) * (1.f + small(rng) / 20.f);
  }
  const Activation acts[] = {{ActKind::kIdentity},
                             {ActKind::kRelu},
                             {ActKind::kLeakyRelu, 0.01f},
                             {ActKind::kLeakyRelu, -1.5f},
                             {ActKind::kClip, 0.f, 6.f},
                             {ActKind::kClip, -kInf, kInf},
                             {ActKind::kClip, -1.f, 0.5f},
                             {ActKind::kSigmoid},
                             {ActKind::kHardSigmoid, 0.2f, 0.5f},
                             {ActKind::kHardSigmoid, 1.f / 6, 0.5f},
                             {ActKind::kHardSwish},
                             {ActKind::kSwish, 1.f},
                             {ActKind::kSwish, 1.702f},
                             {ActKind::kSwish, -0.5f}};
  std::vector<bool> covered(static_cast<size_t>(ActKind::kCount));
  for (const Activation& a : acts) {
    ASSERT_TRUE(cpu::act16_has(a.kind)) << activation_name(a.kind);
    covered[static_cast<size_t>(a.kind)] = true;
    std::vector<float> ref = x, got(x.size());
    apply_activation(a, ref.data(), static_cast<int64_t>(ref.size()));
    act16_run(a, x.data(), got.data(), x.size());
    int bad = 0;
    for (size_t k = 0; k < x.size() && bad < 5; ++k) {
      const bool same =
          std::isnan(ref[k]) ? std::isnan(got[k]) : std::bit_cast<uint32_t>(ref[k]) == std::bit_cast<uint32_t>(got[k]);
      if (!same)
        ++bad, ADD_FAILURE() << activation_name(a.kind) << "(alpha " << a.alpha << ", beta " << a.beta << ") of "
                             << x[k] << ": " << got[k] << ", apply_activation " << ref[k];
    }
  }
  for (int k = 0; k < static_cast<int>(ActKind::kCount); ++k)
    EXPECT_TRUE(!cpu::act16_has(static_cast<ActKind>(k)) || covered[static_cast<size_t>(k)])
        << activation_name(static_cast<ActKind>(k)) << ": act16 computes it, the test does not";
}

// The output's bound follows from the inputs' (as for oneDNN's unguarded convs): the guarded convs
// after ours trust it and skip their reads, so it must be +Inf where an input may hold NaN or Inf.
// A chain guarded 3x3 (14x14) -> ours 1x1 stride 2 + Relu -> ours 3x3 + residual (ours 1x1 of z) / 2 +
// Relu -> a guarded grouped 3x3 (oneDNN's) + Clip, run in turn on finite inputs and on NaN / Inf /
// large values in x or z (one session: the bounds of one run must not leak into the next), against
// the reference.
TEST_F(SmallSpatialConv, CarryBounds) {
  // (ModelBuilder's sessions read INFERA_SMALLSPATIAL_CONV when they build their plans: "all" here.)
  const int64_t C = 48;
  ModelBuilder mb(13);
  mb.input("x", {1, C, 14, 14});
  mb.input("z", {1, C, 7, 7});
  mb.output("out");
  uint32_t seed = 12900;
  auto weights = [&](const std::string& name, std::vector<int64_t> dims) {
    Tensor t = random_tensor(dims, seed++, -0.2f, 0.2f);
    mb.floats(name, dims, std::vector<float>(t.data_as<float>(), t.data_as<float>() + t.numel()));
  };
  weights("W1", {C, C, 3, 3}), weights("B1", {C}), weights("W2", {C, C, 1, 1}), weights("B2", {C});
  weights("W3", {C, C, 3, 3}), weights("W5", {C, C / 2, 3, 3}), weights("W6", {C, C, 1, 1});
  mb.floats("lo", {}, {0.f});
  mb.floats("hi", {}, {6.f});
  mb.floats("half", {}, {0.5f});
  mb.node("Conv", {"z", "W6"}, {"zc"});  // z in the blocked format (the residual of a network)
  set_ints(mb.node("Conv", {"x", "W1", "B1"}, {"c1"}), "pads", {1, 1, 1, 1});
  mb.node("Relu", {"c1"}, {"r1"});
  set_ints(mb.node("Conv", {"r1", "W2", "B2"}, {"c2"}, "s1"), "strides", {2, 2});
  mb.node("Relu", {"c2"}, {"r2"});
  set_ints(mb.node("Conv", {"r2", "W3"}, {"c3"}, "s2"), "pads", {1, 1, 1, 1});
  mb.node("Mul", {"zc", "half"}, {"zm"});  // not a conv: the Add fuses into the 3x3
  mb.node("Add", {"c3", "zm"}, {"s3"});
  mb.node("Relu", {"s3"}, {"r3"});
  onnx::NodeProto* last = mb.node("Conv", {"r3", "W5"}, {"c5"}, "g");
  set_ints(last, "pads", {1, 1, 1, 1});
  set_int(last, "group", 2);
  mb.node("Clip", {"c5", "lo", "hi"}, {"out"});
  auto dnnl = mb.load(true, true);
  auto ref = mb.load(true, false);
  ASSERT_TRUE(dnnl.is_ok()) << dnnl.message();
  ASSERT_TRUE(ref.is_ok()) << ref.message();
  auto rep = dnnl.value()->prepare({{"x", {1, C, 14, 14}}, {"z", {1, C, 7, 7}}});
  ASSERT_TRUE(rep.is_ok()) << rep.message();
  int ours = 0;
  std::string impls;
  for (const auto& st : rep.value().step_list) {
    ours += has(st.impl, "infera small-spatial conv");
    impls += "\n  " + st.impl;
  }
  // zc (from the plain input z), s1 and s2.
  if (own_avx512_conv_here()) EXPECT_EQ(ours, 3) << "the 7x7 convs did not take our kernel:" << impls;
  expect_specials_match(dnnl.value(), ref.value(), {1, C, 14, 14}, {1, C, 7, 7}, 13000, 4);
}

}  // namespace
}  // namespace infera::test
