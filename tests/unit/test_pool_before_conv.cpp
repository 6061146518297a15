// pool_before_pointwise_conv: AveragePool(Conv1x1(x)) runs as Conv1x1(AveragePool(x)) where the two
// commute (the pool unpadded, no ceil mode; the conv 1x1, stride 1, unpadded, no activation or
// residual, read by the pool only), and results match the graph without passes on the reference
// kernels, on seeded random data at batch 1 and 3 (with a bias, grouped, overlapping windows,
// DenseNet's export with a zero Pad between); elsewhere the order stays.
//
// Tolerance: the conv sums C terms over pooled instead of single pixels (and oneDNN's order is not
// the reference's): ~C u max|terms|, 1e-5 of max |want| here.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "onnx_model_builder.h"
#include "op_test_util.h"

namespace infera::test {
namespace {

struct Case {
  const char* what;
  bool swapped;  // the pool runs before the conv
  std::function<void(ModelBuilder&)> model;
};

// x [n, 8, 9, 8] -> Relu = r -> ... -> "out".
ModelBuilder model_of(const Case& c, int64_t n) {
  ModelBuilder mb(13);
  mb.input("x", {n, 8, 9, 8});
  mb.node("Relu", {"x"}, {"r"});
  c.model(mb);
  mb.output("out");
  return mb;
}

void conv1x1(ModelBuilder& mb, const std::string& x, const std::string& y, bool bias, int64_t group = 1,
             int64_t k = 1) {
  const Tensor w = random_tensor({12, 8 / group, k, k}, 3);
  mb.floats(y + "_w", {12, 8 / group, k, k}, std::vector<float>(w.data_as<float>(), w.data_as<float>() + w.numel()));
  std::vector<std::string> in = {x, y + "_w"};
  if (bias) {
    const Tensor b = random_tensor({12}, 4);
    mb.floats(y + "_b", {12}, std::vector<float>(b.data_as<float>(), b.data_as<float>() + 12));
    in.push_back(y + "_b");
  }
  auto* node = mb.node("Conv", in, {y});
  if (group > 1) set_int(node, "group", group);
}

onnx::NodeProto* avgpool(ModelBuilder& mb, const std::string& x, const std::string& y, int64_t k = 2, int64_t s = 2) {
  auto* p = mb.node("AveragePool", {x}, {y});
  set_ints(p, "kernel_shape", {k, k});
  set_ints(p, "strides", {s, s});
  return p;
}

void check(const Case& c) {
  for (int64_t n : {1, 3}) {
    const std::string what = std::string(c.what) + ", batch " + std::to_string(n);
    const ModelBuilder mb = model_of(c, n);
    auto dnnl = mb.load(true, true), ref = mb.load(true, false), plain = mb.load(false, false);
    ASSERT_TRUE(dnnl.is_ok()) << what << ": " << dnnl.message();
    ASSERT_TRUE(ref.is_ok() && plain.is_ok()) << what;
    auto rep = dnnl.value()->prepare({{"x", {n, 8, 9, 8}}});
    ASSERT_TRUE(rep.is_ok()) << what << ": " << rep.message();
    int pool = -1, conv = -1, i = 0;
    for (const auto& s : rep.value().step_list) {
      if (s.op == "AveragePool" && pool < 0) pool = i;
      if (s.op.find("Conv") != std::string::npos && conv < 0) conv = i;
      ++i;
    }
    ASSERT_TRUE(pool >= 0 && conv >= 0) << what;
    EXPECT_EQ(pool < conv, c.swapped) << what;
    const Tensor x = random_tensor({n, 8, 9, 8}, 7, -2, 2);
    for (int r = 0; r < 2; ++r) {
      auto want = plain.value()->run({{"x", x}});
      auto got = dnnl.value()->run({{"x", x}});
      auto got_ref = ref.value()->run({{"x", x}});
      ASSERT_TRUE(want.is_ok() && got.is_ok() && got_ref.is_ok()) << what;
      expect_close(got.value()[0], want.value()[0], what + " (oneDNN)", 1e-5);
      expect_close(got_ref.value()[0], want.value()[0], what + " (reference)", 1e-5);
    }
  }
}

TEST(PoolBeforePointwiseConv, SwapsWhereTheyCommute) {
  const std::vector<Case> cases{
      {"2x2 / 2, no bias (DenseNet's transition)", true,
       [](ModelBuilder& mb) {
         conv1x1(mb, "r", "c", false);
         avgpool(mb, "c", "out");
       }},
      {"with a bias, group 2", true,
       [](ModelBuilder& mb) {
         conv1x1(mb, "r", "c", true, 2);
         avgpool(mb, "c", "out");
       }},
      {"overlapping 3x3 / 2 windows, odd H", true,
       [](ModelBuilder& mb) {
         conv1x1(mb, "r", "c", true);
         avgpool(mb, "c", "out", 3, 2);
       }},
      {"a zero Pad between (torchvision's export)", true,
       [](ModelBuilder& mb) {
         conv1x1(mb, "r", "c", false);
         mb.ints("zeros", {0, 0, 0, 0, 0, 0, 0, 0});
         mb.node("Pad", {"c", "zeros"}, {"p"});
         avgpool(mb, "p", "out");
       }},
  };
  for (const Case& c : cases) check(c);
}

TEST(PoolBeforePointwiseConv, KeepsTheOrderElsewhere) {
  const std::vector<Case> cases{
      {"pool padded, counting the pads, conv with a bias", false,
       [](ModelBuilder& mb) {
         conv1x1(mb, "r", "c", true);
         auto* p = avgpool(mb, "c", "out");
         set_ints(p, "pads", {1, 1, 1, 1});
         set_int(p, "count_include_pad", 1);
       }},
      {"ceil mode", false,
       [](ModelBuilder& mb) {
         conv1x1(mb, "r", "c", true);
         set_int(avgpool(mb, "c", "out"), "ceil_mode", 1);
       }},
      {"3x3 conv", false,
       [](ModelBuilder& mb) {
         conv1x1(mb, "r", "c", true, 1, 3);
         avgpool(mb, "c", "out");
       }},
      {"activation between", false,
       [](ModelBuilder& mb) {
         conv1x1(mb, "r", "c", true);
         mb.node("Relu", {"c"}, {"c2"});
         avgpool(mb, "c2", "out");
       }},
      {"conv output read twice", false,
       [](ModelBuilder& mb) {
         conv1x1(mb, "r", "c", true);
         avgpool(mb, "c", "p");
         avgpool(mb, "c", "p2");
         mb.node("Add", {"p", "p2"}, {"out"});
       }},
      {"max pool", false,
       [](ModelBuilder& mb) {
         conv1x1(mb, "r", "c", true);
         auto* p = mb.node("MaxPool", {"c"}, {"m"});
         set_ints(p, "kernel_shape", {2, 2});
         set_ints(p, "strides", {2, 2});
         avgpool(mb, "m", "out", 1, 1);
       }},
  };
  for (const Case& c : cases) check(c);
}

}  // namespace
}  // namespace infera::test
