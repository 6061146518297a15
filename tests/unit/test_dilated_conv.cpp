// Dilated 3x3 convs as Winograd convs of their sub-images (dnnl_conv.cpp space_to_batch: issue 13,
// DeepLabV3's dilation 2 and 4 convs), against the reference on seeded random inputs in every format
// mode of the harness, each also checked to take the path where it should (the implementation name)
// and to keep the direct kernel where the phases do not tile the image.
#include <gtest/gtest.h>

#include "backend_harness.h"
#include "dnnl_probe.h"

namespace infera::test {
namespace {

struct Dilated {
  std::vector<int64_t> x;     // N, C, H, W
  int64_t m;                  // output channels
  std::vector<int64_t> dil;   // dh, dw
  std::vector<int64_t> pads;  // top, left, bottom, right
  int batched;                // 1: the path must be taken (where oneDNN has Winograd), 0: must not,
                              // -1: oneDNN decides (its Winograd takes pads of at most 1, both sides)
  const char* why;
};

OpCase dilated_case(const Dilated& d, bool fused, bool residual_free_act, uint32_t seed) {
  OpCase c;
  c.op = fused ? "FusedConv" : "Conv";
  c.domain = fused ? "com.infera" : "";
  c.attrs = {{"dilations", attr_ints(d.dil)}, {"pads", attr_ints(d.pads)}, {"kernel_shape", attr_ints({3, 3})}};
  if (fused) c.attrs["activation"] = attr_s(residual_free_act ? "Relu" : "LeakyRelu");
  if (fused && !residual_free_act) c.attrs["activation_alpha"] = attr_f(0.125f);
  c.inputs = {random_tensor(d.x, seed), random_tensor({d.m, d.x[1], 3, 3}, seed + 1), random_tensor({d.m}, seed + 2)};
  c.const_inputs = {1, 2};
  return c;
}

TEST(DnnlConv, DilatedConvsRunAsBatchesOfSubImages) {
  const bool wino = onednn_has_winograd();
  const Dilated cases[] = {
      {{1, 16, 16, 16}, 16, {2, 2}, {2, 2, 2, 2}, 1, "dilation 2, same pads"},
      {{2, 32, 16, 16}, 16, {4, 4}, {4, 4, 4, 4}, 1, "dilation 4, two images, C != M"},
      {{1, 16, 16, 24}, 32, {2, 1}, {2, 1, 2, 1}, 1, "dilation 2x1 on 16x24"},
      {{1, 16, 24, 16}, 16, {2, 2}, {0, 2, 4, 2}, -1, "uneven pads (0 top, 4 bottom)"},
      {{1, 16, 16, 16}, 16, {2, 2}, {0, 0, 0, 0}, -1, "no pads (valid conv)"},
      {{1, 16, 15, 15}, 16, {2, 2}, {2, 2, 2, 2}, 0, "H not a multiple of the dilation"},
      {{1, 16, 16, 16}, 16, {2, 2}, {1, 1, 1, 1}, 0, "pads not a multiple of the dilation"},
      {{1, 8, 16, 16}, 16, {2, 2}, {2, 2, 2, 2}, 0, "8 channels (padded lanes in 16-channel blocks)"},
  };
  uint32_t seed = 9100;
  for (const Dilated& d : cases)
    for (int variant = 0; variant < 3; ++variant) {  // conv, + Relu (NaN guard), + LeakyRelu (no Winograd post-op)
      OpCase c = dilated_case(d, variant > 0, variant == 1, seed);
      seed += 3;
      const std::string what = std::string(d.why) + (variant == 1 ? " + Relu" : variant == 2 ? " + LeakyRelu" : "");
      auto runs = check_case(c, what);
      const std::string impl = runs["dnnl"].impl;
      const int must = variant == 2 && d.batched == 1 ? -1 : d.batched;
      if (must >= 0) EXPECT_EQ(impl.find("sub-images") != std::string::npos, must == 1 && wino) << what << ": " << impl;
    }
}

TEST(DnnlConv, DilatedConvSubImagesUnderTheNaNGuard) {
  // Relu fused: the guard reads X each run (no bound known) and takes the alternative steps (the
  // batched conv without Relu, then the NaN-keeping loop) when X holds a value past its threshold.
  // A large finite X (no NaN: Winograd's tiles spread a NaN or Inf to the other outputs of a 4x4
  // tile, with or without dilation) makes the alternative run; both lists must give the reference.
  for (float big : {1.f, 3e30f}) {
    OpCase c = dilated_case({{1, 16, 16, 16}, 16, {2, 2}, {2, 2, 2, 2}, 1, ""}, true, true, 9200);
    c.inputs[0].data_as<float>()[5 * 16 + 7] = big;
    auto runs = check_case(c, big > 1 ? "dilated conv + Relu, X past the guard" : "dilated conv + Relu");
    EXPECT_EQ(runs["dnnl"].impl.find("sub-images") != std::string::npos, onednn_has_winograd()) << runs["dnnl"].impl;
  }
}

}  // namespace
}  // namespace infera::test
