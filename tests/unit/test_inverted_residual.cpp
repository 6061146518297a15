// fuse_inverted_residual and com.infera.InvertedResidual: MobileNetV2-style blocks (with and
// without the expand, stride 1 and 2, 3x3 and 5x5, odd spatial sizes, channel counts that are not
// multiples of 16, with and without the residual, each activation the pass takes, batch 1 and 3, 1
// and 2 threads) fuse into one step on the host whose outputs match the unfused graph's on seeded
// random data; other patterns stay.
//
// Tolerance: the fused kernel sums each 1x1 in another order than the reference (16-lane blocks,
// FMA): each sum of K <= 144 terms differs by ~K u sum|terms| (u = 2^-24), through three convs
// ~1e-5 of the output's scale. Bound: 1e-4 of max |reference| (expect_close).
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <string>

#include "backend_harness.h"
#include "onnx_model_builder.h"
#include "op_test_util.h"
#include "passes/pass.h"

namespace infera::test {
namespace {

std::vector<float> randoms(int64_t n, uint32_t seed, float scale) {
  const Tensor t = random_tensor({n}, seed, -scale, scale);
  return std::vector<float>(t.data_as<float>(), t.data_as<float>() + n);
}

enum class Act { kNone, kRelu, kRelu6, kHardSwish };
const char* act_name(Act a) {
  const char* n[] = {"none", "Relu", "Relu6", "HardSwish"};
  return n[static_cast<int>(a)];
}

struct Block {
  int64_t n = 1, c = 16, e = 96, m = 24, h = 9, w = 7, k = 3, s = 1;
  bool expand = true, residual = false;
  Act ea = Act::kRelu6, da = Act::kRelu6;
  std::string str() const {
    return "n " + std::to_string(n) + " " + (expand ? std::to_string(c) + "->" : "") + std::to_string(e) + " dw " +
           std::to_string(k) + "/" + std::to_string(s) + " ->" + std::to_string(m) + " " + std::to_string(h) + "x" +
           std::to_string(w) + (residual ? " +res" : "") + " " + act_name(ea) + " " + act_name(da);
  }
};

// out = act(name) of v, as the nodes an exporter writes (Clip with constant bounds for Relu6).
std::string add_act(ModelBuilder& mb, Act a, const std::string& v, const std::string& name) {
  switch (a) {
    case Act::kNone: return v;
    case Act::kRelu: mb.node("Relu", {v}, {name}); break;
    case Act::kRelu6: mb.node("Clip", {v, "lo", "hi"}, {name}); break;
    case Act::kHardSwish: mb.node("HardSwish", {v}, {name}); break;
  }
  return name;
}

// x -> [Conv 1x1 (we, be) act] -> a -> Conv k x k group e (wd, bd) act -> d -> Conv 1x1 (wp, bp)
// [+ x] -> out. `edit` changes the model before its output is set (the negative cases).
ModelBuilder ir_model(const Block& b, const std::function<void(ModelBuilder&)>& edit = {}) {
  ModelBuilder mb(14);  // HardSwish: opset 14
  mb.input("x", {b.n, b.c, b.h, b.w});
  mb.floats("lo", {}, {0.f});
  mb.floats("hi", {}, {6.f});
  mb.floats("we", {b.e, b.c, 1, 1}, randoms(b.e * b.c, 1, 0.6f));
  mb.floats("be", {b.e}, randoms(b.e, 2, 0.5f));
  mb.floats("wd", {b.e, 1, b.k, b.k}, randoms(b.e * b.k * b.k, 3, 0.6f));
  mb.floats("bd", {b.e}, randoms(b.e, 4, 0.5f));
  mb.floats("wp", {b.m, b.e, 1, 1}, randoms(b.m * b.e, 5, 0.3f));
  mb.floats("bp", {b.m}, randoms(b.m, 6, 0.5f));
  std::string a = "x";
  if (b.expand) {
    mb.node("Conv", {"x", "we", "be"}, {"a0"});
    a = add_act(mb, b.ea, "a0", "a");
  }
  auto* dw = mb.node("Conv", {a, "wd", "bd"}, {"d0"});
  set_int(dw, "group", b.e);
  set_ints(dw, "kernel_shape", {b.k, b.k});
  set_ints(dw, "strides", {b.s, b.s});
  set_ints(dw, "pads", {b.k / 2, b.k / 2, b.k / 2, b.k / 2});
  const std::string d = add_act(mb, b.da, "d0", "d");
  mb.node("Conv", {d, "wp", "bp"}, {b.residual ? "p" : "out"});
  if (b.residual) mb.node("Add", {"p", "x"}, {"out"});
  if (edit) edit(mb);
  mb.output("out");
  return mb;
}

Result<std::unique_ptr<Session>> load(const ModelBuilder& mb, bool optimize, bool dnnl, int threads) {
  SessionOptions o;
  o.optimize = optimize;
  if (!dnnl) o.backends = {"ref"};
  o.num_threads = threads;
  return Session::load_from_memory(mb.m.SerializeAsString(), "", o);
}

class InvertedResidual : public ::testing::Test {
 protected:
  void SetUp() override { setenv("INFERA_INVERTED_RESIDUAL", "all", 1); }  // every match, whatever its shape
  void TearDown() override { unsetenv("INFERA_INVERTED_RESIDUAL"); }
};

// The fused session (oneDNN backend; and the reference kernels) against the unfused graph on the
// reference kernels, twice (the second run reuses the plan).
void check_block(const Block& b, int threads) {
  const std::string what = b.str() + " threads " + std::to_string(threads);
  const ModelBuilder mb = ir_model(b);
  auto fused = load(mb, true, true, threads), fused_ref = load(mb, true, false, threads),
       plain = load(mb, false, false, threads);
  ASSERT_TRUE(fused.is_ok() && fused_ref.is_ok() && plain.is_ok()) << what;
  const std::map<std::string, std::vector<int64_t>> shapes{{"x", {b.n, b.c, b.h, b.w}}};
  PlanStepInfo step;
  EXPECT_EQ(plan_steps(*fused.value(), shapes, "com.infera.InvertedResidual", &step), 1) << what;
  EXPECT_EQ(step.backend, "dnnl") << what;
  EXPECT_NE(step.impl.find("inverted-residual avx512"), std::string::npos) << what << ": " << step.impl;
  EXPECT_EQ(plan_steps(*fused.value(), shapes, "com.infera.FusedConv") + plan_steps(*fused.value(), shapes, "Conv"), 0)
      << what;
  EXPECT_EQ(plan_steps(*fused_ref.value(), shapes, "com.infera.InvertedResidual"), 1) << what;
  const Tensor x = random_tensor({b.n, b.c, b.h, b.w}, 11 + static_cast<uint32_t>(b.n * 7 + b.c), -2, 2);
  for (int r = 0; r < 2; ++r) {
    auto want = plain.value()->run({{"x", x}});
    auto got = fused.value()->run({{"x", x}});
    auto got_ref = fused_ref.value()->run({{"x", x}});
    ASSERT_TRUE(want.is_ok() && got.is_ok() && got_ref.is_ok()) << what;
    expect_close(got.value()[0], want.value()[0], what + " (avx512)");
    expect_close(got_ref.value()[0], want.value()[0], what + " (reference)");
  }
}

TEST_F(InvertedResidual, FusedMatchesUnfused) {
  struct Channels {
    int64_t c, e, m;
    bool expand;
  };
  // MobileNetV2 / MNASNet / MobileNetV3 channel counts, most not multiples of 16.
  const Channels chans[] = {{16, 96, 24, true},  {24, 144, 24, true}, {24, 72, 40, true},  {40, 72, 40, true},
                            {32, 32, 16, false}, {16, 16, 16, false}, {96, 144, 32, true}, {144, 40, 72, true},
                            {72, 72, 24, false}, {40, 96, 40, true}};
  const int64_t sizes[][2] = {{9, 7}, {11, 13}, {5, 5}, {15, 8}, {1, 1}, {17, 16}};
  int i = 0;
  for (const Channels& ch : chans)
    for (int64_t k : {3, 5})
      for (int64_t s : {1, 2}) {
        Block b;
        b.c = ch.c, b.e = ch.e, b.m = ch.m, b.expand = ch.expand, b.k = k, b.s = s;
        b.h = sizes[i % 6][0], b.w = sizes[i % 6][1];
        b.residual = s == 1 && b.m == b.c && i % 3 != 2;
        b.ea = static_cast<Act>(i % 4), b.da = static_cast<Act>((i / 4 + i) % 4);
        b.n = i % 2 ? 3 : 1;
        check_block(b, 1 + (i / 2) % 2);
        ++i;
      }
}

TEST_F(InvertedResidual, EveryActivationBothThreadCounts) {
  for (int ea = 0; ea < 4; ++ea)
    for (int da = 0; da < 4; ++da) {
      Block b;
      b.c = 24, b.e = 72, b.m = 24, b.h = 13, b.w = 11, b.residual = true;
      b.ea = static_cast<Act>(ea), b.da = static_cast<Act>(da);
      b.n = 3;
      check_block(b, 2);
    }
}

// Patterns left alone (or fused without the expand), and the off switch.
TEST_F(InvertedResidual, LeavesOtherPatterns) {
  Block b;
  b.c = 24, b.e = 72, b.m = 24, b.residual = true;
  const std::map<std::string, std::vector<int64_t>> shapes{{"x", {b.n, b.c, b.h, b.w}}};
  struct Case {
    std::string why;
    std::function<void(ModelBuilder&)> edit;
    int fused, convs;  // InvertedResidual steps, conv steps left
  };
  const Case cases[] = {
      {"the expanded value has a second reader: fused without the expand",
       [](ModelBuilder& mb) {
         mb.node("Relu", {"a"}, {"a2"});
         mb.output("a2");
       },
       1, 1},
      {"the depthwise output has a second reader",
       [](ModelBuilder& mb) {
         mb.node("Relu", {"d"}, {"d2"});
         mb.output("d2");
       },
       0, 3},
      {"the depthwise output is a graph output", [](ModelBuilder& mb) { mb.output("d"); }, 0, 3},
      {"a squeeze-excitation gate between the depthwise and the projection",
       [](ModelBuilder& mb) {
         mb.floats("w1", {8, 72, 1, 1}, randoms(8 * 72, 9, 0.5f));
         mb.floats("w2", {72, 8, 1, 1}, randoms(8 * 72, 10, 0.5f));
         mb.node("GlobalAveragePool", {"d"}, {"g"});
         mb.node("Conv", {"g", "w1"}, {"g1"});
         mb.node("Relu", {"g1"}, {"g2"});
         mb.node("Conv", {"g2", "w2"}, {"g3"});
         mb.node("Sigmoid", {"g3"}, {"g4"});
         mb.node("Mul", {"d", "g4"}, {"dse"});
         for (auto& n : *mb.g->mutable_node())
           if (n.op_type() == "Conv" && n.input(0) == "d") n.set_input(0, "dse");
       },
       0, 3},
  };
  for (const Case& c : cases) {
    auto fused = load(ir_model(b, c.edit), true, true, 2);
    ASSERT_TRUE(fused.is_ok()) << c.why << ": " << fused.message();
    EXPECT_EQ(plan_steps(*fused.value(), shapes, "com.infera.InvertedResidual"), c.fused) << c.why;
    EXPECT_EQ(plan_steps(*fused.value(), shapes, "com.infera.FusedConv") + plan_steps(*fused.value(), shapes, "Conv"),
              c.convs)
        << c.why;
  }
  {  // a weight that is a graph input, not a constant
    ModelBuilder mb = ir_model(b);
    for (int i = 0; i < mb.g->initializer_size(); ++i)
      if (mb.g->initializer(i).name() == "wp") mb.g->mutable_initializer()->DeleteSubrange(i, 1);
    mb.input("wp", {b.m, b.e, 1, 1});
    auto fused = load(mb, true, true, 2);
    ASSERT_TRUE(fused.is_ok()) << fused.message();
    auto shapes2 = shapes;
    shapes2["wp"] = {b.m, b.e, 1, 1};
    EXPECT_EQ(plan_steps(*fused.value(), shapes2, "com.infera.InvertedResidual"), 0) << "non-constant W_project";
  }
  {  // the off switch
    setenv("INFERA_INVERTED_RESIDUAL", "off", 1);
    auto fused = load(ir_model(b), true, true, 2);
    ASSERT_TRUE(fused.is_ok());
    EXPECT_EQ(plan_steps(*fused.value(), shapes, "com.infera.InvertedResidual"), 0) << "INFERA_INVERTED_RESIDUAL=off";
  }
}

TEST(InvertedResidualPass, RunsOnHostPipelinesOnly) {
  auto has = [](bool host) {
    for (const auto& p : default_passes(host))
      if (std::string(p->name()) == "fuse_inverted_residual") return true;
    return false;
  };
  EXPECT_TRUE(has(true));
  EXPECT_FALSE(has(false));
}

// Without INFERA_INVERTED_RESIDUAL the rule decides (fuse_inverted_residual.cpp): an expand on 28 x 28
// fuses, 14 x 14 only with E <= 256, 7 x 7 and blocks without an expand do not.
TEST(InvertedResidualPass, RuleByShape) {
  struct Case {
    int64_t c, e, hw;
    bool expand, fused;
  };
  const Case cases[] = {{24, 144, 28, true, true}, {40, 200, 14, true, true},   {64, 384, 14, true, false},
                        {96, 576, 7, true, false}, {32, 32, 112, false, false}, {16, 96, 56, true, true}};
  for (const Case& c : cases) {
    Block b;
    b.c = c.c, b.e = c.e, b.m = c.c, b.h = b.w = c.hw, b.expand = c.expand, b.residual = true;
    auto s = load(ir_model(b), true, true, 2);
    ASSERT_TRUE(s.is_ok());
    const std::string what = b.str();
    EXPECT_EQ(plan_steps(*s.value(), {{"x", {b.n, b.c, b.h, b.w}}}, "com.infera.InvertedResidual"), c.fused ? 1 : 0)
        << what;
  }
}

TEST(InvertedResidualOp, RefusesBadShapes) {
  const Tensor x = random_tensor({1, 8, 5, 5}, 1), wd = random_tensor({8, 1, 3, 3}, 2),
               wp_bad = random_tensor({4, 6, 1, 1}, 3), we_bad = random_tensor({8, 5, 1, 1}, 4);
  auto run = [&](const Tensor& we, const Tensor& wp) {
    return run_op("InvertedResidual", {}, {x, we, Tensor(), wd, Tensor(), wp, Tensor(), Tensor()}, 1, 17, {1, 3, 5},
                  "com.infera");
  };
  EXPECT_FALSE(run(Tensor(), wp_bad).is_ok()) << "W_project takes 6 channels, W_dw gives 8";
  EXPECT_FALSE(run(we_bad, random_tensor({4, 8, 1, 1}, 5)).is_ok()) << "W_expand takes 5 channels, X has 8";
  EXPECT_TRUE(run(Tensor(), random_tensor({4, 8, 1, 1}, 5)).is_ok()) << "no expand";
}

}  // namespace
}  // namespace infera::test
