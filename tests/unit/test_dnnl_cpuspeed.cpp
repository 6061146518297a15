// The oneDNN backend's CPU-speed paths of issue 13 (2026-12-02), against the reference on seeded
// random inputs in every format the backend offers (backend_harness.h), each also checked to take
// its path (the kernel's implementation name): Resize as our own loop (dnnl_resize.cpp), convs with
// taps that read only padding cut to the taps that meet the image (dnnl_conv.cpp trim_dead_taps),
// and grouped convs of 8 channels per group computed in nChw8c (pick_formats).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "backend_harness.h"
#include "backends/cpu/dnnl_backend.h"
#include "ops/infer.h"
#include "ops/op.h"

namespace infera::test {
namespace {

// The implementation name of the dnnl kernel made for case c with every 4-D non-constant value in
// format f (where the backend takes it), or "declined: why".
std::string impl_of(const OpCase& c, Format f) {
  auto be = find_backend("dnnl", Device::cpu());
  if (!be.is_ok()) return "no dnnl backend";
  Node n;
  n.name = "probe";
  n.op_type = c.op;
  n.domain = c.domain;
  n.attrs = c.attrs;
  for (size_t i = 0; i < c.inputs.size(); ++i) n.inputs.push_back(c.inputs[i].empty() ? -1 : static_cast<int>(i));
  n.outputs = {static_cast<int>(c.inputs.size())};
  auto op = make_kernel(n, c.opset);
  if (!op.is_ok()) return "declined: " + op.message();
  std::vector<ValueInfo> in(c.inputs.size());
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    if (c.inputs[i].empty()) continue;
    in[i].dtype = c.inputs[i].dtype();
    in[i].shape = Shape::of(c.inputs[i].dims());
    if (std::find(c.const_inputs.begin(), c.const_inputs.end(), static_cast<int>(i)) != c.const_inputs.end())
      in[i].value = std::make_shared<Tensor>(c.inputs[i].clone());
  }
  std::vector<const ValueInfo*> ins;
  for (size_t i = 0; i < in.size(); ++i) ins.push_back(c.inputs[i].empty() ? nullptr : &in[i]);
  InferContext ictx(n, c.opset, ins);
  Status s = op.value()->infer(ictx);
  if (!s.is_ok()) return "declined: " + s.message();
  ValueInfo y = ictx.outputs()[0];
  StepRequest req;
  req.node = &n;
  req.op = op.value().get();
  req.opset = c.opset;
  req.inputs = ins;
  req.outputs = {&y};
  req.num_threads = 2;
  Support sup = be.value()->supports(req);
  if (!sup.ok) return "declined: " + sup.reason;
  for (size_t i = 0; i < ins.size(); ++i)
    req.input_formats.push_back(
        ins[i] && !ins[i]->value && ins[i]->shape.rank() == 4 && format_in(sup.input_formats[i], f) ? f
                                                                                                    : Format::kPlain);
  req.output_formats = {format_in(sup.output_formats[0], f) ? f : Format::kPlain};
  auto k = be.value()->create(req);
  if (!k.is_ok() || !k.value()) return "declined at creation";
  return k.value()->impl_name();
}

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

TEST(DnnlConv, GroupsOfEightChannelsRunJit) {
  // RegNet's group width 8: oneDNN 2.6 has a jit conv for them in nChw8c only (AVX-512).
  uint32_t seed = 8600;
  for (int64_t stride : {1, 2})
    for (bool fused : {false, true}) {
      OpCase c = conv_case({1, 48, 14, 14}, {48, 8, 3, 3}, {1, 1}, {1, 1, 1, 1}, {stride, stride}, 6, fused, seed);
      seed += 3;
      const std::string what =
          std::string(fused ? "fused " : "") + "grouped conv g6 x8 stride " + std::to_string(stride);
      check_case(c, what);
      const std::string impl = impl_of(c, dnnl_blocked_format());
      EXPECT_FALSE(has(impl, "gemm") || has(impl, "ref:")) << what << ": " << impl;
      EXPECT_TRUE(has(impl, "jit")) << what << ": " << impl;
    }
}

}  // namespace
}  // namespace infera::test
