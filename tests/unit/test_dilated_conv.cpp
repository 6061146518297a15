// Dilated 3x3 convs as Winograd convs of their sub-images (dnnl_conv.cpp space_to_batch: issue 13,
// DeepLabV3's dilation 2 and 4 convs), against the reference on seeded random inputs in every format
// mode of the harness, each also checked to take the path where it should (the implementation name)
// and to keep the direct kernel where the phases do not tile the image.
#include <gtest/gtest.h>

#include <stdlib.h>

#include "backend_harness.h"
#include "dnnl_probe.h"
#include "onnx_model_builder.h"

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

// Through a session with a perf db: the search times the direct kernel against the Winograd conv of
// the sub-images with the reorders around it (dnnl_conv.cpp time_convs) and the chosen plan gives
// the reference's result, at two batch sizes of one session.
TEST(DnnlConv, DilatedConvSearchTimesTheSubImagesCandidate) {
  // (A write of the timing through a view into a freed whole-image buffer corrupted the heap in a
  // process that also ran ONNX Runtime; this test then dies under
  // GLIBC_TUNABLES=glibc.malloc.mmap_threshold=33554432:glibc.malloc.check=3.)
  char dir[] = "/tmp/infera-dilated-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const Tensor w = random_tensor({32, 16, 3, 3}, 9300, -0.3f, 0.3f), b = random_tensor({32}, 9301);
  for (int64_t n : {1, 3}) {
    ModelBuilder mb(17);
    mb.input("x", {n, 16, 16, 16});
    mb.output("y");
    mb.floats("W", {32, 16, 3, 3}, std::vector<float>(w.data_as<float>(), w.data_as<float>() + w.numel()));
    mb.floats("B", {32}, std::vector<float>(b.data_as<float>(), b.data_as<float>() + b.numel()));
    onnx::NodeProto* conv = mb.node("Conv", {"x", "W", "B"}, {"c"});
    set_ints(conv, "dilations", {2, 2});
    set_ints(conv, "pads", {2, 2, 2, 2});
    mb.node("Relu", {"c"}, {"y"});
    SessionOptions o;
    o.perf_db = std::string(dir) + "/perfdb.json";
    o.search = SessionOptions::SearchMode::kFast;
    auto got = mb.load(true, true, o);
    auto ref = mb.load(true, false);
    ASSERT_TRUE(got.is_ok()) << got.message();
    ASSERT_TRUE(ref.is_ok()) << ref.message();
    auto rep = got.value()->prepare({{"x", {n, 16, 16, 16}}});
    ASSERT_TRUE(rep.is_ok()) << rep.message();
    std::string impl;
    for (const auto& st : rep.value().step_list)
      if (st.op.find("Conv") != std::string::npos) impl = st.impl;
    if (onednn_has_winograd())
      EXPECT_NE(impl.find("ms of: direct"), std::string::npos) << "batch " << n << ": " << impl;
    const Tensor x = random_tensor({n, 16, 16, 16}, 9302 + static_cast<uint32_t>(n), -2, 2);
    for (int r = 0; r < 2; ++r) {
      auto a = got.value()->run({{"x", x}});
      auto e = ref.value()->run({{"x", x}});
      ASSERT_TRUE(a.is_ok() && e.is_ok());
      EXPECT_LT(normalized_error(a.value()[0], e.value()[0]), 1e-4) << "batch " << n << ": " << impl;
    }
  }
}

}  // namespace
}  // namespace infera::test
