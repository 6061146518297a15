// Depthwise convs at batch 1 in nChw16c whose channel blocks oneDNN's jit_dw would share unevenly
// between threads run as two convs over a channel split (dnnl_conv.cpp, dw_thread_imbalance):
// against the reference on seeded random inputs in every format the backend offers
// (backend_harness.h), with and without the NaN guard's activations, NaN in X; the split taken
// (the kernel's implementation name) exactly where the rule says.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "backend_harness.h"
#include "dnnl_probe.h"

namespace infera::test {
namespace {

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

struct DwShape {
  std::vector<int64_t> x;  // N, C, H, W
  int64_t k, stride;
  const char* split;  // the implementation name's note, or "" where the conv stays one
};

// 72 / 80 channels: 5 blocks (units of 4 and 1); 144: 9 blocks; 64 and 128: whole units; batch 2 and
// 480 channels on 14 rows (8 units: 7 of 4 blocks, 1 of 2, < 15% over an even share): one conv.
const DwShape kShapes[] = {
    {{1, 72, 56, 56}, 3, 1, "channels split 64 + 8"},
    {{1, 80, 9, 9}, 3, 1, "channels split 64 + 16"},
    {{1, 72, 28, 28}, 5, 2, "channels split 64 + 8"},
    {{1, 144, 20, 20}, 5, 2, "channels split 128 + 16"},
    {{1, 96, 11, 13}, 3, 2, "channels split 64 + 32"},
    {{1, 64, 12, 12}, 3, 1, ""},
    {{1, 128, 12, 12}, 3, 1, ""},
    {{2, 72, 12, 12}, 3, 1, ""},
    {{1, 480, 14, 14}, 3, 1, ""},
};

OpCase dw_case(const DwShape& s, uint32_t seed, const std::string& act, bool bias_const = true) {
  const int64_t p = s.k / 2;
  return conv_op_case(s.x, s.x[1], s.x[1], s.k, s.k, {p, p, p, p}, {s.stride, s.stride}, seed, act, true, false,
                      bias_const, {1, 1}, 1.f / static_cast<float>(s.k));
}

bool split_here() { return dnnl_blocked_format() == Format::kNChw16c; }

TEST(DnnlDepthwiseSplit, MatchesReferenceWhereTaken) {
  uint32_t seed = 13100;
  for (const DwShape& s : kShapes)
    for (const char* act : {"Relu", "", "Swish", "Clip"}) {
      OpCase c = dw_case(s, seed, act);
      seed += 4;
      const std::string what = conv_case_what(c, std::string("depthwise + ") + act);
      check_case(c, what);
      if (!split_here()) continue;
      const std::string impl = impl_of(c, Format::kNChw16c);
      EXPECT_TRUE(has(impl, "jit_dw")) << what << ": " << impl;
      if (*s.split) {
        EXPECT_TRUE(has(impl, s.split)) << what << ": " << impl;
      } else {
        EXPECT_FALSE(has(impl, "channels split")) << what << ": " << impl;
      }
    }
}

TEST(DnnlDepthwiseSplit, NotWithBiasComputedAtRunTime) {
  OpCase c = dw_case(kShapes[0], 13300, "Relu", false);
  const std::string what = conv_case_what(c, "depthwise + Relu (bias not constant)");
  check_case(c, what);
  if (split_here()) {
    EXPECT_FALSE(has(impl_of(c, Format::kNChw16c), "channels split")) << what;
  }
}

TEST(DnnlDepthwiseSplit, KeepsNanThroughTheGuard) {
  // NaN in X of both parts: the guarded Relu / Clip take the NaN-keeping alternative (the split
  // convs without activation, then the loop) as the reference keeps NaN.
  constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
  uint32_t seed = 13400;
  for (const char* act : {"Relu", "Clip"}) {
    OpCase c = dw_case(kShapes[1], seed, act);
    seed += 4;
    float* x = c.inputs[0].data_as<float>();
    const int64_t hw = kShapes[1].x[2] * kShapes[1].x[3];
    x[3 * hw + 10] = kNaN;   // the first part
    x[70 * hw + 40] = kNaN;  // the second part (channels 64..79)
    check_case(c, conv_case_what(c, std::string("depthwise + ") + act + " + NaN in X"));
  }
}

}  // namespace
}  // namespace infera::test
