// The oneDNN backend's CPU-speed paths of issue 13 (2026-12-02), against the reference on seeded
// random inputs in every format the backend offers (backend_harness.h), each also checked to take
// its path (the kernel's implementation name): Resize as our own loop (dnnl_resize.cpp), convs with
// taps that read only padding cut to the taps that meet the image (dnnl_conv.cpp trim_dead_taps),
// and grouped convs of 8 input and 8 output channels per group as our own AVX-512 loop in nChw16c
// (dnnl_group_conv.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <iterator>
#include <limits>

#include "backend_harness.h"
#include "backends/cpu/dnnl_backend.h"
#include "dnnl_probe.h"
#include "onnx_model_builder.h"
#include "ops/infer.h"
#include "ops/op.h"

namespace infera::test {
namespace {

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

OpCase resize_case(std::vector<int64_t> x, std::vector<int64_t> sizes, const std::string& mode, const std::string& ct,
                   const std::string& nm, uint32_t seed) {
  OpCase c;
  c.op = "Resize";
  c.opset = 13;
  c.attrs = {{"mode", attr_s(mode)}, {"coordinate_transformation_mode", attr_s(ct)}, {"nearest_mode", attr_s(nm)}};
  c.inputs = {random_tensor(x, seed), Tensor(), Tensor(), make_tensor<int64_t>(DataType::kInt64, {4}, sizes)};
  c.const_inputs = {3};
  return c;
}

TEST(DnnlResize, LinearAndNearestEveryCoordinateMode) {
  uint32_t seed = 8100;
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> shapes = {
      {{1, 21, 7, 9}, {1, 21, 56, 40}},   // LRASPP-like upsampling, channels not filling blocks
      {{2, 32, 13, 11}, {2, 32, 5, 17}},  // down in H, up in W, two images, whole blocks
      {{1, 5, 6, 6}, {1, 5, 6, 6}},       // identity
  };
  int taken = 0;
  for (const auto& [x, y] : shapes)
    for (const char* ct : {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn"})
      for (const char* mode : {"linear", "nearest"})
        for (const char* nm : {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}) {
          if (std::string(mode) == "linear" && std::string(nm) != "round_prefer_floor") continue;
          OpCase c = resize_case(x, y, mode, ct, nm, seed++);
          const std::string what = std::string("resize ") + mode + " " + ct + " " + nm + " " + std::to_string(x[1]) +
                                   "x" + std::to_string(x[2]) + "x" + std::to_string(x[3]);
          check_case(c, what, {"dnnl"}, 1e-5);
          // Blocked: the loops know 16-channel blocks (AVX-512); nChw8c (AVX2) gets plain only.
          std::vector<Format> fmts{Format::kPlain};
          if (format_channel_block(dnnl_blocked_format()) == 16) fmts.push_back(dnnl_blocked_format());
          for (Format f : fmts) {
            const std::string impl = impl_of(c, f);
            EXPECT_TRUE(has(impl, "infera resize")) << what << ": " << impl;
            taken += has(impl, "infera resize");
          }
        }
  EXPECT_GT(taken, 50);
}

TEST(DnnlResize, ScalesInputAndNonFiniteValues) {
  OpCase c;
  c.op = "Resize";
  c.opset = 13;
  c.attrs = {{"mode", attr_s("linear")}};
  c.inputs = {random_tensor({1, 18, 10, 8}, 8200), Tensor(),
              make_tensor<float>(DataType::kFloat32, {4}, {1.f, 1.f, 1.7f, 0.6f})};
  c.const_inputs = {2};
  check_case(c, "resize linear, scales 1.7 x 0.6", {"dnnl"}, 1e-5);
  EXPECT_TRUE(has(impl_of(c, Format::kPlain), "infera resize"));
  // +Inf and NaN in the input: Inf stays Inf where one tap reads it (the identity H axis below), NaN spreads
  // as in the reference.
  c.inputs[2] = make_tensor<float>(DataType::kFloat32, {4}, {1.f, 1.f, 1.f, 2.f});
  float* p = c.inputs[0].data_as<float>();
  p[3] = std::numeric_limits<float>::infinity();
  p[100] = -std::numeric_limits<float>::infinity();
  p[200] = std::nanf("");
  check_case(c, "resize linear with Inf and NaN", {"dnnl"}, 1e-5);
}

TEST(DnnlResize, DeclinesWhatItDoesNotTake) {
  OpCase c = resize_case({1, 4, 5, 5}, {1, 4, 10, 10}, "cubic", "half_pixel", "floor", 8300);
  check_case(c, "resize cubic", {"ref"});
  EXPECT_TRUE(has(impl_of(c, Format::kPlain), "declined")) << impl_of(c, Format::kPlain);
  c = resize_case({1, 4, 5, 5}, {1, 2, 10, 10}, "linear", "half_pixel", "floor", 8301);  // resizes C
  check_case(c, "resize over C", {"ref"});
  EXPECT_TRUE(has(impl_of(c, Format::kPlain), "declined")) << impl_of(c, Format::kPlain);
}

OpCase conv_case(std::vector<int64_t> x, std::vector<int64_t> w, std::vector<int64_t> dil, std::vector<int64_t> pads,
                 std::vector<int64_t> strides, int64_t group, bool fused, uint32_t seed) {
  OpCase c;
  c.op = fused ? "FusedConv" : "Conv";
  c.domain = fused ? "com.infera" : "";
  c.attrs = {{"dilations", attr_ints(dil)},
             {"pads", attr_ints(pads)},
             {"strides", attr_ints(strides)},
             {"group", attr_i(group)}};
  if (fused) c.attrs["activation"] = attr_s("Relu");
  c.inputs = {random_tensor(x, seed), random_tensor(w, seed + 1), random_tensor({w[0]}, seed + 2)};
  c.const_inputs = {1, 2};
  return c;
}

TEST(DnnlConv, DeadTapsCut) {
  uint32_t seed = 8400;
  struct Shape4 {
    std::vector<int64_t> x, w, dil, pads, strides;
    int64_t group;
    const char* cut;  // "" when no tap is dead
  };
  const Shape4 cases[] = {
      {{1, 16, 7, 7}, {8, 16, 3, 3}, {8, 8}, {8, 8, 8, 8}, {1, 1}, 1, "3x3 -> 1x1"},   // ASPP-like: only the centre
      {{1, 16, 7, 9}, {16, 16, 3, 3}, {7, 3}, {7, 3, 7, 3}, {1, 1}, 1, "3x3 -> 1x3"},  // H dead, W live
      {{2, 32, 6, 6}, {32, 8, 3, 3}, {6, 6}, {6, 6, 6, 6}, {1, 1}, 4, "3x3 -> 1x1"},   // grouped, two images
      {{1, 16, 8, 8}, {16, 16, 3, 3}, {9, 1}, {9, 1, 9, 1}, {2, 1}, 1, "3x3 -> 1x3"},  // stride 2, H dead only
      {{1, 16, 4, 8}, {16, 16, 3, 3}, {6, 1}, {5, 1, 8, 1}, {1, 1}, 1, ""},            // cut would need a negative pad
      {{1, 16, 7, 7}, {16, 16, 3, 3}, {5, 5}, {5, 5, 5, 5}, {1, 1}, 1, ""},            // every tap meets the image
      {{1, 16, 8, 8}, {16, 16, 5, 5}, {4, 4}, {8, 8, 8, 8}, {1, 1}, 1, "5x5 -> 3x3"},  // the outer taps dead
  };
  for (const Shape4& s : cases)
    for (bool fused : {false, true}) {
      OpCase c = conv_case(s.x, s.w, s.dil, s.pads, s.strides, s.group, fused, seed);
      seed += 3;
      const std::string what = std::string(fused ? "fused " : "") + "conv dil " + std::to_string(s.dil[0]) + "x" +
                               std::to_string(s.dil[1]) + " k" + std::to_string(s.w[2]) + " on " +
                               std::to_string(s.x[2]) + "x" + std::to_string(s.x[3]);
      check_case(c, what);
      const std::string impl = impl_of(c, dnnl_blocked_format());
      if (*s.cut)
        EXPECT_TRUE(has(impl, std::string("dead taps cut: ") + s.cut)) << what << ": " << impl;
      else
        EXPECT_FALSE(has(impl, "dead taps cut")) << what << ": " << impl;
    }
}

TEST(DnnlConv, DeadTapWithNonFiniteWeightIsKept) {
  // 0 * Inf = NaN in the reference: a dead tap holding Inf must not be cut.
  OpCase c = conv_case({1, 16, 7, 7}, {8, 16, 3, 3}, {8, 8}, {8, 8, 8, 8}, {1, 1}, 1, false, 8500);
  c.inputs[1].data_as<float>()[0] = std::numeric_limits<float>::infinity();  // tap (0, 0) of filter 0
  check_case(c, "conv with Inf in a dead tap");
  EXPECT_FALSE(has(impl_of(c, dnnl_blocked_format()), "dead taps cut")) << impl_of(c, dnnl_blocked_format());
}

// ---- Grouped convs of 8 input and 8 output channels per group (RegNet's group width 8): our own
// AVX-512 loop in nChw16c (dnnl_group_conv.cpp), oneDNN's elsewhere.

struct G8Shape {
  std::vector<int64_t> x;  // N, C, H, W
  int64_t kh, kw;
  std::vector<int64_t> pads, strides;
  const char* variant;  // the kernel's variant in its name: "3-tap rows" or "any taps"
};

// Conv (act "" and no z) or FusedConv of x with C / width groups of `width` input and `out_width`
// output channels, kernel kh x kw; bias (constant when bias_const), residual Z of Y's shape.
OpCase group8_case(const std::vector<int64_t>& x, int64_t kh, int64_t kw, const std::vector<int64_t>& pads,
                   const std::vector<int64_t>& strides, uint32_t seed, const std::string& act = "", bool bias = true,
                   bool z = false, int64_t width = 8, int64_t out_width = 8, std::vector<int64_t> dil = {1, 1},
                   bool bias_const = true) {
  const int64_t group = x[1] / width;
  return conv_op_case(x, group * out_width, group, kh, kw, pads, strides, seed, act, bias, z, bias_const, dil);
}

TEST(DnnlConv, GroupsOfEightRunOurKernel) {
  // Blocks of two groups (16, 48) and a half-filled last block (104: 13 groups), strides 1 and 2,
  // symmetric, asymmetric and zero pads, 1x1 / 3x3 / 5x5 / 3x1 / 1x3 kernels, batch 1 and 3, odd
  // sizes, rows wider than one register tile (37 -> 35 outputs), pads beyond the kernel's reach.
  const G8Shape shapes[] = {
      {{1, 16, 9, 9}, 3, 3, {1, 1, 1, 1}, {1, 1}, "3-tap rows"},
      {{1, 48, 14, 14}, 3, 3, {1, 1, 1, 1}, {1, 1}, "3-tap rows"},
      {{1, 48, 14, 14}, 3, 3, {1, 1, 1, 1}, {2, 2}, "3-tap rows"},
      {{1, 104, 11, 13}, 3, 3, {1, 1, 1, 1}, {1, 1}, "3-tap rows"},
      {{1, 104, 11, 13}, 3, 3, {1, 1, 1, 1}, {2, 2}, "3-tap rows"},
      {{3, 48, 7, 5}, 3, 3, {0, 1, 1, 0}, {2, 2}, "3-tap rows"},
      {{3, 104, 6, 9}, 3, 3, {2, 0, 0, 2}, {1, 2}, "3-tap rows"},
      {{1, 48, 9, 9}, 3, 3, {0, 2, 1, 0}, {1, 1}, "3-tap rows"},  // 2 columns of left padding
      {{1, 48, 20, 37}, 3, 3, {0, 0, 0, 0}, {1, 1}, "3-tap rows"},
      {{1, 16, 40, 40}, 3, 3, {1, 1, 1, 1}, {2, 1}, "3-tap rows"},
      {{1, 16, 8, 8}, 1, 1, {0, 0, 0, 0}, {1, 1}, "any taps"},
      {{3, 104, 7, 9}, 1, 1, {0, 0, 0, 0}, {2, 2}, "any taps"},
      {{2, 104, 9, 10}, 5, 5, {2, 2, 2, 2}, {1, 1}, "any taps"},
      {{1, 48, 11, 8}, 5, 5, {2, 1, 0, 2}, {2, 2}, "any taps"},
      {{1, 48, 9, 9}, 3, 1, {1, 0, 1, 0}, {1, 1}, "any taps"},
      {{1, 48, 9, 9}, 1, 3, {0, 1, 0, 1}, {1, 2}, "3-tap rows"},
      {{1, 16, 5, 6}, 3, 3, {3, 3, 3, 3}, {1, 1}, "any taps"},  // rows and columns of padding only
  };
  uint32_t seed = 8600;
  int taken = 0;
  for (size_t i = 0; i < std::size(shapes); ++i)
    for (int v = 0; v < 2; ++v) {
      // Per shape, with and without bias; a plain Conv with bias and a FusedConv + Relu without, on
      // the next shape the other way round.
      const G8Shape& s = shapes[i];
      const bool fused = (v + i) % 2 == 1;
      OpCase c = group8_case(s.x, s.kh, s.kw, s.pads, s.strides, seed, fused ? "Relu" : "", v == 0);
      seed += 4;
      const std::string what = conv_case_what(c, fused ? "+ Relu" : "");
      check_case(c, what);
      const std::string impl = impl_of(c, dnnl_blocked_format());
      if (own_avx512_conv_here()) {
        EXPECT_TRUE(has(impl, std::string("infera group conv 8x8 avx512 (") + s.variant)) << what << ": " << impl;
        EXPECT_TRUE(has(impl, fused ? "dnnl fused conv" : "dnnl conv")) << what << ": " << impl;
        taken += has(impl, "infera group conv");
      }
      // Plain X and Y: oneDNN's conv.
      EXPECT_FALSE(has(impl_of(c, Format::kPlain), "infera group conv")) << what;
    }
  if (own_avx512_conv_here()) EXPECT_EQ(taken, 34);
}

TEST(DnnlConv, GroupsOfEightFusedEpilogues) {
  // Residual Z (alone, with Relu, with Sigmoid), activations inline (LeakyRelu) and through the
  // reference's apply_activation (Sigmoid, Clip, HardSigmoid: padded lanes would be 0.5 there), a
  // bias that is not a constant; on a half-filled last block (104 channels), strides 1 and 2.
  struct E {
    const char* act;
    bool z, bias_const;
  };
  const E eps[] = {
      {"", true, true},         {"Relu", true, true},  {"Sigmoid", true, true},     {"LeakyRelu", false, true},
      {"Sigmoid", false, true}, {"Clip", false, true}, {"HardSigmoid", true, true}, {"Relu", false, false},
      {"", true, false}};
  uint32_t seed = 8700;
  for (const E& e : eps)
    for (int64_t stride : {1, 2}) {
      OpCase c = group8_case({2, 104, 9, 11}, 3, 3, {1, 1, 1, 1}, {stride, stride}, seed, e.act, true, e.z, 8, 8,
                             {1, 1}, e.bias_const);
      seed += 4;
      const std::string what = conv_case_what(
          c, std::string("+ ") + (e.z ? "Z " : "") + e.act + (e.bias_const ? "" : " (bias not constant)"));
      auto runs = check_case(c, what);
      if (!own_avx512_conv_here()) continue;
      const std::string impl = impl_of(c, dnnl_blocked_format());
      EXPECT_TRUE(has(impl, "dnnl fused conv infera group conv 8x8 avx512")) << what << ": " << impl;
      // Y in Z's buffer (the planner's in-place residual) is among the harness's modes.
      if (e.z) EXPECT_GE(runs["dnnl"].modes, 5) << what;
    }
}

TEST(DnnlConv, GroupsOfEightKeepNanAndInf) {
  // NaN, +Inf and -Inf in X (and in Z): Relu keeps NaN as the reference does (oneDNN's relu post-op maps
  // it to 0), Inf meets -Inf as NaN. A handful of positions, so that most outputs stay finite.
  constexpr float kNaN = std::numeric_limits<float>::quiet_NaN(), kInf = std::numeric_limits<float>::infinity();
  uint32_t seed = 8800;
  for (int64_t stride : {1, 2})
    for (bool z : {false, true}) {
      OpCase c = group8_case({1, 104, 10, 9}, 3, 3, {1, 1, 1, 1}, {stride, stride}, seed, "Relu", true, z);
      seed += 4;
      float* x = c.inputs[0].data_as<float>();
      const int64_t hw = 10 * 9;
      x[3 * hw + 12] = kNaN;    // group 0
      x[50 * hw + 0] = kNaN;    // a corner
      x[100 * hw + 44] = kNaN;  // the last group (the half-filled block)
      x[20 * hw + 30] = kInf;
      x[21 * hw + 31] = -kInf;  // the same group as the +Inf, next pixel: NaN where both meet
      x[70 * hw + 89] = kInf;   // the last pixel
      if (z) c.inputs[3].data_as<float>()[5] = kNaN;
      auto ref = run_op(c.op, c.attrs, c.inputs, 1, c.opset, c.const_inputs, c.domain);
      ASSERT_TRUE(ref.is_ok()) << ref.message();
      int nan = 0, inf = 0, finite = 0;
      for (int64_t i = 0; i < ref.value()[0].numel(); ++i) {
        const float v = ref.value()[0].data_as<float>()[i];
        nan += std::isnan(v), inf += std::isinf(v), finite += std::isfinite(v);
      }
      const std::string what = conv_case_what(c, std::string("+ ") + (z ? "Z " : "") + "Relu, NaN and Inf in X");
      EXPECT_GT(nan, 10) << what << ": the reference keeps no NaN: the case proves nothing";
      EXPECT_GT(inf, 0) << what;
      EXPECT_GT(finite, nan + inf) << what;
      check_case(c, what);
      if (own_avx512_conv_here()) EXPECT_TRUE(has(impl_of(c, dnnl_blocked_format()), "infera group conv")) << what;
    }
}

TEST(DnnlConv, GroupsOfEightDeclineOtherShapes) {
  // Group width 4 or 16, 8 inputs but 16 outputs per group, dilation 2, stride 3: oneDNN's conv.
  struct D {
    std::vector<int64_t> x;
    int64_t width, out_width;
    std::vector<int64_t> dil, strides;
  };
  const D ds[] = {{{1, 32, 9, 9}, 4, 4, {1, 1}, {1, 1}},
                  {{1, 64, 9, 9}, 16, 16, {1, 1}, {1, 1}},
                  {{1, 48, 9, 9}, 8, 16, {1, 1}, {1, 1}},
                  {{1, 48, 9, 9}, 8, 8, {2, 2}, {1, 1}},
                  {{1, 48, 9, 9}, 8, 8, {1, 1}, {3, 3}}};
  uint32_t seed = 8900;
  for (const D& d : ds) {
    OpCase c = group8_case(d.x, 3, 3, {1, 1, 1, 1}, d.strides, seed, "Relu", true, false, d.width, d.out_width, d.dil);
    seed += 4;
    const std::string what = conv_case_what(c, "dil " + std::to_string(d.dil[0]));
    check_case(c, what);
    const std::string impl = impl_of(c, dnnl_blocked_format());
    EXPECT_FALSE(has(impl, "infera group conv")) << what << ": " << impl;
    EXPECT_TRUE(has(impl, "dnnl fused conv")) << what << ": " << impl;
  }
}

// The output's bound follows from the inputs' (as for oneDNN's unguarded convs): the guarded convs
// after ours trust it and skip their reads, so it must be +Inf where an input may hold NaN or Inf.
// A chain guarded 1x1 -> ours (+ Relu) -> guarded 1x1 -> ours (+ residual 1x1(z) / 2 + Relu) -> guarded 1x1 +
// Clip, run in turn on finite inputs and on NaN / Inf / large values in x or z (one session: the
// bounds of one run must not leak into the next), against the reference.
TEST(DnnlConv, GroupsOfEightCarryBounds) {
  const int64_t C = 48;
  ModelBuilder mb(13);
  mb.input("x", {1, C, 8, 8});
  mb.input("z", {1, C, 8, 8});
  mb.output("out");
  uint32_t seed = 9000;
  auto weights = [&](const std::string& name, std::vector<int64_t> dims) {
    Tensor t = random_tensor(dims, seed++, -0.5f, 0.5f);
    mb.floats(name, dims, std::vector<float>(t.data_as<float>(), t.data_as<float>() + t.numel()));
  };
  weights("W1", {C, C, 1, 1}), weights("B1", {C}), weights("W2", {C, 8, 3, 3}), weights("B2", {C});
  weights("W3", {C, C, 1, 1}), weights("W4", {C, 8, 3, 3}), weights("W5", {C, C, 1, 1});
  weights("W6", {C, C, 1, 1});
  mb.floats("lo", {}, {0.f});
  mb.floats("hi", {}, {6.f});
  mb.floats("half", {}, {0.5f});
  auto grouped = [&](onnx::NodeProto* n) {
    set_ints(n, "pads", {1, 1, 1, 1});
    set_int(n, "group", C / 8);
  };
  mb.node("Conv", {"z", "W6"}, {"zc"});  // z in the blocked format (the residual of a network)
  mb.node("Conv", {"x", "W1", "B1"}, {"c1"});
  mb.node("Relu", {"c1"}, {"r1"});
  grouped(mb.node("Conv", {"r1", "W2", "B2"}, {"c2"}, "g1"));
  mb.node("Relu", {"c2"}, {"r2"});
  mb.node("Conv", {"r2", "W3"}, {"c3"});
  mb.node("Relu", {"c3"}, {"r3"});
  grouped(mb.node("Conv", {"r3", "W4"}, {"c4"}, "g2"));
  mb.node("Mul", {"zc", "half"}, {"zm"});  // not a conv: the Add fuses into the grouped conv
  mb.node("Add", {"c4", "zm"}, {"s4"});
  mb.node("Relu", {"s4"}, {"r4"});
  mb.node("Conv", {"r4", "W5"}, {"c5"});
  mb.node("Clip", {"c5", "lo", "hi"}, {"out"});
  auto dnnl = mb.load(true, true);
  auto ref = mb.load(true, false);
  ASSERT_TRUE(dnnl.is_ok()) << dnnl.message();
  ASSERT_TRUE(ref.is_ok()) << ref.message();
  auto rep = dnnl.value()->prepare({{"x", {1, C, 8, 8}}, {"z", {1, C, 8, 8}}});
  ASSERT_TRUE(rep.is_ok()) << rep.message();
  int ours = 0;
  for (const auto& st : rep.value().step_list) ours += has(st.impl, "infera group conv");
  if (own_avx512_conv_here()) EXPECT_EQ(ours, 2) << "the grouped convs did not take our kernel";
  expect_specials_match(dnnl.value(), ref.value(), {1, C, 8, 8}, {1, C, 8, 8}, 9100, 1);
}

}  // namespace
}  // namespace infera::test
