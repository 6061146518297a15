// fuse_squeeze_excite and com.infera.SqueezeExcite: every squeeze-excitation form of EfficientNet-B0,
// MobileNetV3 and LRASPP (GlobalAveragePool or ReduceMean; Relu, SiLU or HardSwish inside; Sigmoid or
// HardSigmoid gate) fuses into one step whose outputs match the unfused graph's, on seeded random
// data, at batch 1 and 3, with NaN and Inf where the unfused graph has them; other patterns stay.
//
// Tolerance: the unfused reference sums the mean in double and the convs in float, the fused
// reference rounds at the same points with double sums, the oneDNN kernel sums the mean in float
// over 4 x 16 interleaved accumulators and the convs as float axpys: each sum of K terms is off by
// at most ~K u sum|terms| (u = 2^-24), K <= 48 * 48 / 4 here, ~3e-5 of the output's scale after
// the conv behind the gate. Bound: 1e-4 of max |reference| (seen: ~1e-6).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

#include "backend_harness.h"
#include "onnx_model_builder.h"
#include "op_test_util.h"
#include "passes/pass.h"

namespace infera::test {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

std::vector<float> randoms(int64_t n, uint32_t seed, float scale) {
  const Tensor t = random_tensor({n}, seed, -scale, scale);
  return std::vector<float>(t.data_as<float>(), t.data_as<float>() + n);
}

// The block's forms.
enum class Hidden { kRelu, kSilu, kHardSwish };
enum class Gate { kSigmoid, kHardSigmoid };
enum class Squeeze { kGap, kReduceMean };

struct Form {
  Hidden hidden = Hidden::kRelu;
  Gate gate = Gate::kSigmoid;
  Squeeze squeeze = Squeeze::kGap;
  std::string str() const {
    const char* h[] = {"Relu", "SiLU", "HardSwish"};
    return std::string(h[static_cast<int>(hidden)]) + (gate == Gate::kSigmoid ? " Sigmoid" : " HardSigmoid") +
           (squeeze == Squeeze::kGap ? " GAP" : " ReduceMean");
  }
};

// x [n, c0, h, w] -> 1x1 Conv (c0 -> c) + Relu = t -> squeeze -> Conv(W1, B1) [r] -> hidden ->
// Conv(W2, B2) [c] -> gate = s -> Mul(t, s) -> 1x1 Conv (c -> 8) -> out. `edit` changes the model
// before its output is set (the negative cases).
struct Block {
  int64_t n = 1, c0 = 8, c = 24, r = 8, h = 9, w = 7;
  Form form;
  std::vector<float> w1_override;  // non-empty: W1's values (a NaN weight)
  bool plain_x = false;            // t = Relu(x) (c0 = c): X of the gate in the plain layout
  bool one_conv = false;           // LRASPP's head: squeeze -> Conv [c] -> gate, no hidden layer
  bool relu_out = false;           // out = Relu(conv): oneDNN's Relu loses NaN unless the conv's guard sees it
  int64_t gate_channels = 0;       // > 0: W2 makes this many channels (1: a gate broadcast over C)
};

ModelBuilder se_model(const Block& b, const std::function<void(ModelBuilder&)>& edit = {}) {
  ModelBuilder mb(14);  // HardSwish: opset 14
  mb.input("x", {b.n, b.c0, b.h, b.w});
  mb.floats("w0", {b.c, b.c0, 1, 1}, randoms(b.c * b.c0, 1, 0.5f));
  mb.floats("b0", {b.c}, randoms(b.c, 2, 0.5f));
  mb.floats("w1", {b.r, b.c, 1, 1}, b.w1_override.empty() ? randoms(b.r * b.c, 3, 0.5f) : b.w1_override);
  mb.floats("b1", {b.r}, randoms(b.r, 4, 0.5f));
  const int64_t cg = b.gate_channels > 0 ? b.gate_channels : b.c;
  mb.floats("w2", {cg, b.r, 1, 1}, randoms(cg * b.r, 5, 0.5f));
  mb.floats("b2", {cg}, randoms(cg, 6, 0.5f));
  mb.floats("wc", {b.c, b.c, 1, 1}, randoms(b.c * b.c, 8, 0.5f));
  mb.floats("w3", {8, b.c, 1, 1}, randoms(8 * b.c, 7, 0.5f));
  if (b.plain_x) {
    mb.node("Relu", {"x"}, {"t"});
  } else {
    mb.node("Conv", {"x", "w0", "b0"}, {"t0"});
    mb.node("Relu", {"t0"}, {"t"});
  }
  if (b.form.squeeze == Squeeze::kGap) {
    mb.node("GlobalAveragePool", {"t"}, {"p"});
  } else {
    set_ints(mb.node("ReduceMean", {"t"}, {"p"}), "axes", {-2, 3});
  }
  if (b.one_conv) {
    mb.node("Conv", {"p", "wc"}, {"s0"});
  } else {
    mb.node("Conv", {"p", "w1", "b1"}, {"h0"});
  }
  if (!b.one_conv) switch (b.form.hidden) {
      case Hidden::kRelu: mb.node("Relu", {"h0"}, {"h"}); break;
      case Hidden::kSilu:
        mb.node("Sigmoid", {"h0"}, {"hs"});
        mb.node("Mul", {"h0", "hs"}, {"h"});
        break;
      case Hidden::kHardSwish: mb.node("HardSwish", {"h0"}, {"h"}); break;
    }
  if (!b.one_conv) mb.node("Conv", {"h", "w2", "b2"}, {"s0"});
  if (b.form.gate == Gate::kSigmoid) {
    mb.node("Sigmoid", {"s0"}, {"s"});
  } else {
    auto* hs = mb.node("HardSigmoid", {"s0"}, {"s"});
    auto* a = hs->add_attribute();
    a->set_name("alpha");
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(1.f / 6);
  }
  mb.node("Mul", {"t", "s"}, {"y"});
  if (b.relu_out) {
    mb.node("Conv", {"y", "w3"}, {"out0"});
    mb.node("Relu", {"out0"}, {"out"});
  } else {
    mb.node("Conv", {"y", "w3"}, {"out"});
  }
  if (edit) edit(mb);
  mb.output("out");
  return mb;
}

Result<std::unique_ptr<Session>> load(const ModelBuilder& mb, bool optimize, bool dnnl, int threads = 2) {
  SessionOptions o;
  o.optimize = optimize;
  if (!dnnl) o.backends = {"ref"};
  o.num_threads = threads;
  return Session::load_from_memory(mb.m.SerializeAsString(), "", o);
}

// The fused session (passes, oneDNN; and passes, reference kernels) against the unfused graph on
// the reference kernels, twice (the second run reuses the plan).
void check_block(const Block& b, const Tensor& x, const std::string& what) {
  const ModelBuilder mb = se_model(b);
  auto fused = load(mb, true, true), fused_ref = load(mb, true, false), plain = load(mb, false, false);
  ASSERT_TRUE(fused.is_ok() && fused_ref.is_ok() && plain.is_ok()) << what;
  const std::vector<int64_t> dims = {b.n, b.c0, b.h, b.w};
  PlanStepInfo step;
  EXPECT_EQ(plan_steps(*fused.value(), {{"x", dims}}, "com.infera.SqueezeExcite", &step), 1) << what;
  EXPECT_EQ(step.backend, "dnnl") << what;
  EXPECT_NE(step.impl.find(b.plain_x ? "(plain X" : "(nChw"), std::string::npos) << what << ": " << step.impl;
  EXPECT_EQ(plan_steps(*fused.value(), {{"x", dims}}, "GlobalAveragePool") +
                plan_steps(*fused.value(), {{"x", dims}}, "ReduceMean"),
            0)
      << what;
  EXPECT_EQ(plan_steps(*fused_ref.value(), {{"x", dims}}, "com.infera.SqueezeExcite"), 1) << what;
  for (int r = 0; r < 2; ++r) {
    auto want = plain.value()->run({{"x", x}});
    auto got = fused.value()->run({{"x", x}});
    auto got_ref = fused_ref.value()->run({{"x", x}});
    ASSERT_TRUE(want.is_ok() && got.is_ok() && got_ref.is_ok()) << what;
    expect_close(got.value()[0], want.value()[0], what + " (oneDNN)");
    expect_close(got_ref.value()[0], want.value()[0], what + " (reference)");
  }
}

const std::vector<Form> kForms = {
    {Hidden::kSilu, Gate::kSigmoid, Squeeze::kGap},             // EfficientNet
    {Hidden::kRelu, Gate::kHardSigmoid, Squeeze::kGap},         // MobileNetV3, LRASPP
    {Hidden::kHardSwish, Gate::kHardSigmoid, Squeeze::kGap},    //
    {Hidden::kRelu, Gate::kSigmoid, Squeeze::kReduceMean},      // ReduceMean's form
    {Hidden::kSilu, Gate::kHardSigmoid, Squeeze::kReduceMean},  //
};

TEST(SqueezeExcite, FusedMatchesUnfusedEveryFormBatchOneAndThree) {
  for (const Form& f : kForms)
    for (int64_t n : {1, 3})
      for (int64_t c : {32, 24}) {  // 24: padded lanes in nChw16c
        Block b;
        b.form = f, b.n = n, b.c = c;
        b.h = c == 32 ? 48 : 9, b.w = c == 32 ? 48 : 7;  // 48 x 48: the mean's threads
        const std::string what = f.str() + " n " + std::to_string(n) + " c " + std::to_string(c);
        check_block(b, random_tensor({n, b.c0, b.h, b.w}, 11 + static_cast<uint32_t>(n), -2, 2), what);
      }
  for (int64_t n : {1, 3}) {  // X plain (the graph input's layout)
    Block b;
    b.plain_x = true, b.n = n, b.c0 = b.c = 20;
    check_block(b, random_tensor({n, b.c0, b.h, b.w}, 13, -2, 2), "plain X n " + std::to_string(n));
  }
}

// NaN or Inf in X reaches the gate of its image only (image 1 of 3); a NaN weight in W1 every
// image's gate.
TEST(SqueezeExcite, NaNAndInfPropagateAsUnfused) {
  for (const Form& f : {kForms[0], kForms[1]})
    for (float bad : {kNaN, kInf, -kInf}) {
      Block b;
      b.form = f, b.n = 3;
      Tensor x = random_tensor({b.n, b.c0, b.h, b.w}, 5, -2, 2);
      x.data_as<float>()[1 * b.c0 * b.h * b.w + 2 * b.h * b.w + 5] = bad;  // image 1, channel 2
      check_block(b, x, f.str() + " X holds " + std::to_string(bad));
    }
  // X finite, S NaN: S's bound must say so, or the guarded conv + Relu behind the Mul makes it 0.
  Block b;
  b.n = 3, b.relu_out = true;
  b.w1_override = randoms(b.r * b.c, 3, 0.5f);
  b.w1_override[5] = kNaN;
  check_block(b, random_tensor({b.n, b.c0, b.h, b.w}, 5, -2, 2), "NaN in W1");
}

// Patterns that are not a squeeze-excitation gate, or whose intermediates others read: no fusion,
// and the session still matches the unfused graph.
TEST(SqueezeExcite, LeavesOtherPatterns) {
  struct Case {
    const char* why;
    std::function<void(ModelBuilder&)> edit;
    bool one_conv = false;
    int64_t gate_channels = 0;
  };
  const std::vector<Case> cases{
      {"pooled value has another reader",
       [](ModelBuilder& mb) {
         mb.node("Mul", {"t", "p"}, {"t2"});
         mb.node("Add", {"y", "t2"}, {"y2"});
         for (auto& n : *mb.g->mutable_node())
           if (n.output(0) == "out") n.set_input(0, "y2");
       }},
      {"hidden value is a graph output", [](ModelBuilder& mb) { mb.output("h"); }},
      {"GlobalMaxPool",
       [](ModelBuilder& mb) {
         for (auto& n : *mb.g->mutable_node())
           if (n.op_type() == "GlobalAveragePool") n.set_op_type("GlobalMaxPool");
       }},
      {"one conv (LRASPP's head)", {}, true},
      {"a gate of one channel", {}, false, 1},
      {"first conv 1x1 of group 2",
       [](ModelBuilder& mb) {
         mb.floats("w1g", {8, 12, 1, 1}, randoms(8 * 12, 9, 0.5f));
         for (auto& n : *mb.g->mutable_node())
           if (n.output(0) == "h0") {
             n.set_input(1, "w1g");
             set_int(&n, "group", 2);
           }
       }},
      {"second conv 3x3 padded",
       [](ModelBuilder& mb) {
         mb.floats("w2k", {24, 8, 3, 3}, randoms(24 * 8 * 9, 9, 0.5f));
         for (auto& n : *mb.g->mutable_node())
           if (n.output(0) == "s0") {
             n.set_input(1, "w2k");
             set_ints(&n, "pads", {1, 1, 1, 1});
           }
       }},
      {"weights from an input",
       [](ModelBuilder& mb) {
         mb.input("w1", {8, 24, 1, 1});
       }},
  };
  for (const Case& c : cases) {
    Block b;
    b.n = 2, b.one_conv = c.one_conv, b.gate_channels = c.gate_channels;
    ModelBuilder mb = se_model(b, c.edit);
    if (std::string(c.why) == "weights from an input") {  // the initializer goes, the input stays
      auto* inits = mb.g->mutable_initializer();
      for (int i = 0; i < inits->size(); ++i)
        if (inits->Get(i).name() == "w1") inits->DeleteSubrange(i, 1);
    }
    auto fused = load(mb, true, true), plain = load(mb, false, false);
    ASSERT_TRUE(fused.is_ok()) << c.why << ": " << fused.message();
    ASSERT_TRUE(plain.is_ok()) << c.why << ": " << plain.message();
    const bool w1_input = std::string(c.why) == "weights from an input";
    std::map<std::string, std::vector<int64_t>> shapes{{"x", {b.n, b.c0, b.h, b.w}}};
    if (w1_input) shapes["w1"] = {8, 24, 1, 1};
    EXPECT_EQ(plan_steps(*fused.value(), shapes, "com.infera.SqueezeExcite"), 0) << c.why;
    std::map<std::string, Tensor> in{{"x", random_tensor({b.n, b.c0, b.h, b.w}, 3)}};
    if (w1_input) in["w1"] = random_tensor({8, 24, 1, 1}, 4);
    auto want = plain.value()->run(in);
    auto got = fused.value()->run(in);
    ASSERT_TRUE(want.is_ok() && got.is_ok()) << c.why;
    for (size_t o = 0; o < want.value().size(); ++o) expect_close(got.value()[o], want.value()[o], c.why);
  }
}

// The op alone on every backend in every format it offers (X and S plain or nChw16c, padded lanes
// at 20 and 40 channels, S's padding checked zero), with and without biases.
TEST(SqueezeExcite, OpOnEveryBackendAndFormat) {
  const std::vector<std::vector<int64_t>> shapes{{1, 20, 9, 7}, {3, 32, 48, 48}, {2, 40, 5, 5}};
  uint32_t seed = 70;
  for (const auto& x : shapes)
    for (int form = 0; form < 3; ++form) {
      const int64_t c = x[1], r = form == 2 ? 5 : 8;
      OpCase k;
      k.op = "SqueezeExcite";
      k.domain = "com.infera";
      const char* acts[][2] = {{"Swish", "Sigmoid"}, {"Relu", "HardSigmoid"}, {"HardSwish", "HardSigmoid"}};
      k.attrs = {{"activation", attr_s(acts[form][0])}, {"gate", attr_s(acts[form][1])}};
      if (form == 0) k.attrs["activation_alpha"] = attr_f(1.f);
      if (form == 1) k.attrs["gate_alpha"] = attr_f(1.f / 6), k.attrs["gate_beta"] = attr_f(0.5f);
      const bool biases = form != 2;
      k.inputs = {random_tensor(x, seed++, -2, 2), random_tensor({r, c, 1, 1}, seed++),
                  biases ? random_tensor({r}, seed++) : Tensor(), random_tensor({c, r, 1, 1}, seed++),
                  biases ? random_tensor({c}, seed++) : Tensor()};
      k.const_inputs = {1, 2, 3, 4};
      check_case(k, "SqueezeExcite " + Shape::of(x).str() + " " + acts[form][0] + " " + acts[form][1]);
    }
}

// GPU sessions do not run the pass (no GPU kernel takes the fused op).
TEST(SqueezeExcite, PassRunsOnHostPipelinesOnly) {
  auto has = [](bool host) {
    for (const auto& p : default_passes(host))
      if (std::string(p->name()) == "fuse_squeeze_excite") return true;
    return false;
  };
  EXPECT_TRUE(has(true));
  EXPECT_FALSE(has(false));
}

TEST(SqueezeExciteOp, RefusesBadShapesAndActivations) {
  const Tensor x = random_tensor({1, 6, 2, 2}, 1), w1 = random_tensor({2, 6, 1, 1}, 2),
               w2 = random_tensor({6, 2, 1, 1}, 3);
  auto run = [&](std::map<std::string, Attribute> attrs, const Tensor& a, const Tensor& b) {
    return run_op("SqueezeExcite", std::move(attrs), {x, a, Tensor(), b, Tensor()}, 1, 17, {1, 3}, "com.infera");
  };
  EXPECT_TRUE(run({{"activation", attr_s("Relu")}, {"gate", attr_s("Sigmoid")}}, w1, w2).is_ok());
  EXPECT_FALSE(run({{"gate", attr_s("NoSuchThing")}}, w1, w2).is_ok());
  EXPECT_FALSE(run({}, w1, random_tensor({6, 3, 1, 1}, 3)).is_ok());  // W2 does not take R = 2
  EXPECT_FALSE(run({}, random_tensor({2, 5, 1, 1}, 2), w2).is_ok());  // W1 does not take C = 6
  EXPECT_FALSE(run({}, random_tensor({2, 6, 3, 3}, 2), w2).is_ok());  // not 1x1
}

}  // namespace
}  // namespace infera::test
