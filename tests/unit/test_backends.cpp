// Every registered backend against the reference kernels, through the backend-conformance
// harness (backend_harness.h): each case on every backend that claims it, in every format it
// offers and in place where it allows, normalized error < 1e-4. The cases cover what oneDNN
// accelerates; `check_case` asserts that oneDNN takes them unless a test says otherwise.
#include <cstring>
#include <random>

#include "backend_harness.h"
#include "backends/cpu/dnnl_backend.h"
#include "ops/infer.h"
#include "plan/plan.h"

namespace infera::test {
namespace {

using Case = OpCase;

std::string describe(const Attrs& a) {
  std::string s;
  for (auto& [k, v] : a) {
    s += " " + k + "=";
    if (v.kind == Attribute::kInt) s += std::to_string(v.i);
    if (v.kind == Attribute::kFloat) s += std::to_string(v.f);
    if (v.kind == Attribute::kString) s += v.s;
    if (v.kind == Attribute::kInts)
      for (int64_t x : v.ints) s += std::to_string(x) + ",";
  }
  return s;
}

int64_t pick(std::mt19937& rng, int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); }

const char* kActs[] = {"",          "Relu", "LeakyRelu", "Sigmoid", "Tanh", "Clip", "HardSigmoid",
                       "HardSwish", "Elu",  "Selu",      "Softplus"};

// A random Conv / FusedConv case (rank 4, or rank 3 for 1-D).
Case random_conv(std::mt19937& rng, uint32_t seed, bool fused, int rank = 4) {
  const int k = rank - 2;
  const int64_t g_kind = pick(rng, 0, 2);
  const int64_t cg = pick(rng, 1, 6), mg = pick(rng, 1, 6);
  const int64_t group = g_kind == 0 ? 1 : (g_kind == 1 ? pick(rng, 2, 3) : pick(rng, 3, 20));
  const int64_t c = g_kind == 2 ? group : cg * group, m = g_kind == 2 ? group * pick(rng, 1, 2) : mg * group;
  Case cs;
  cs.op = fused ? "FusedConv" : "Conv";
  cs.domain = fused ? "com.infera" : "";
  std::vector<int64_t> x{pick(rng, 1, 2), c}, w{m, c / group}, ks, st, dl, pads(2 * k);
  for (int i = 0; i < k; ++i) {
    ks.push_back(pick(rng, 1, 5));
    st.push_back(pick(rng, 1, 3));
    dl.push_back(pick(rng, 1, 2));
    pads[i] = pick(rng, 0, 2);
    pads[k + i] = pick(rng, 0, 2);
    x.push_back(pick(rng, (ks[i] - 1) * dl[i] + 1, 14));
    w.push_back(ks[i]);
  }
  cs.attrs["group"] = attr_i(group);
  cs.attrs["strides"] = attr_ints(st);
  cs.attrs["dilations"] = attr_ints(dl);
  if (pick(rng, 0, 1)) cs.attrs["kernel_shape"] = attr_ints(ks);
  const int64_t ap = pick(rng, 0, 5);
  if (ap == 3)
    cs.attrs["auto_pad"] = attr_s("SAME_UPPER");
  else if (ap == 4)
    cs.attrs["auto_pad"] = attr_s("SAME_LOWER");
  else if (ap == 5)
    cs.attrs["auto_pad"] = attr_s("VALID");
  else
    cs.attrs["pads"] = attr_ints(pads);
  cs.inputs = {random_tensor(x, seed), random_tensor(w, seed + 1)};
  cs.const_inputs = {1};
  const bool bias = pick(rng, 0, 2) != 0;
  cs.inputs.push_back(bias ? random_tensor({m}, seed + 2) : Tensor());
  if (fused) {
    // Z is the output shape: ask the reference for it.
    auto y = run_op("Conv", cs.attrs, {cs.inputs[0], cs.inputs[1]}, 1, 17, {1});
    const bool z = y.is_ok() && pick(rng, 0, 1);
    cs.inputs.push_back(z ? random_tensor(y.value()[0].dims(), seed + 3) : Tensor());
    const char* act = kActs[pick(rng, 0, 10)];
    cs.attrs["activation"] = attr_s(act);
    if (std::string(act) == "LeakyRelu" || std::string(act) == "Elu") cs.attrs["activation_alpha"] = attr_f(0.3f);
    if (std::string(act) == "Clip") {
      cs.attrs["activation_alpha"] = attr_f(-0.5f);
      cs.attrs["activation_beta"] = attr_f(0.7f);
    }
  }
  while (!cs.inputs.empty() && cs.inputs.back().empty()) cs.inputs.pop_back();
  return cs;
}

TEST(DnnlConv, RandomConv2D) {
  std::mt19937 rng(1234);
  int checked = 0;
  for (int it = 0; it < 60; ++it) {
    Case c = random_conv(rng, 100 + it, false);
    if (!run_op(c.op, c.attrs, c.inputs, 1, 17, c.const_inputs).is_ok()) continue;  // output < 1
    ++checked;
    check_case(c, "conv it " + std::to_string(it) + describe(c.attrs) + " X" + Shape::of(c.inputs[0].dims()).str() +
                      " W" + Shape::of(c.inputs[1].dims()).str());
  }
  EXPECT_GE(checked, 45) << "too few valid random cases: the generator drifted";
}

TEST(DnnlConv, RandomConv1D) {
  std::mt19937 rng(77);
  int checked = 0;
  for (int it = 0; it < 15; ++it) {
    Case c = random_conv(rng, 300 + it, false, 3);
    if (!run_op(c.op, c.attrs, c.inputs, 1, 17, c.const_inputs).is_ok()) continue;
    ++checked;
    check_case(c, "conv1d it " + std::to_string(it) + describe(c.attrs));
  }
  EXPECT_GE(checked, 12) << "too few valid random cases: the generator drifted";
}

TEST(DnnlConv, RandomFusedConv) {
  std::mt19937 rng(4321);
  int checked = 0;
  for (int it = 0; it < 60; ++it) {
    Case c = random_conv(rng, 500 + it, true);
    if (!run_op(c.op, c.attrs, c.inputs, 1, 17, c.const_inputs, c.domain).is_ok()) continue;
    ++checked;
    check_case(c, "fused conv it " + std::to_string(it) + describe(c.attrs) + " X" +
                      Shape::of(c.inputs[0].dims()).str() + " W" + Shape::of(c.inputs[1].dims()).str() +
                      (c.inputs.size() > 3 ? " +Z" : ""));
  }
  EXPECT_GE(checked, 45) << "too few valid random cases: the generator drifted";
}

TEST(DnnlConv, ResNetShapes) {
  // The shapes that matter for speed, with a residual and Relu, 64 channels blocked cleanly.
  Case c;
  c.op = "FusedConv";
  c.domain = "com.infera";
  c.attrs = {{"pads", attr_ints({1, 1, 1, 1})}, {"activation", attr_s("Relu")}};
  c.inputs = {random_tensor({1, 64, 14, 14}, 1), random_tensor({64, 64, 3, 3}, 2, -0.1f, 0.1f), random_tensor({64}, 3),
              random_tensor({1, 64, 14, 14}, 4)};
  c.const_inputs = {1, 2};
  check_case(c, "resnet 3x3");  // also with Y in Z's buffer: the harness runs every in-place pair
  // Shapes where oneDNN has Winograd kernels (2x3 and 4x3 tiles): still within tolerance.
  for (auto [n, ch, hw] : {std::tuple{1, 128, 28}, std::tuple{4, 64, 20}, std::tuple{2, 256, 14}}) {
    c.inputs = {random_tensor({n, ch, hw, hw}, 20 + ch), random_tensor({ch, ch, 3, 3}, 21 + ch, -0.1f, 0.1f),
                random_tensor({ch}, 22 + ch), random_tensor({n, ch, hw, hw}, 23 + ch)};
    check_case(c, "3x3 " + std::to_string(ch) + "ch " + std::to_string(hw) + "px batch " + std::to_string(n));
  }
  c.inputs = {random_tensor({1, 64, 14, 14}, 1), random_tensor({64, 64, 3, 3}, 2, -0.1f, 0.1f), random_tensor({64}, 3),
              random_tensor({1, 64, 14, 14}, 4)};
  c.inputs[0] = random_tensor({1, 64, 14, 14}, 8);
  c.inputs[1] = random_tensor({256, 64, 1, 1}, 9, -0.1f, 0.1f);
  c.inputs[2] = random_tensor({256}, 10);
  c.inputs[3] = random_tensor({1, 256, 14, 14}, 11);
  c.attrs = {{"activation", attr_s("Relu")}};
  check_case(c, "resnet 1x1 expand");
  c.attrs = {{"strides", attr_ints({2, 2})}, {"pads", attr_ints({3, 3, 3, 3})}};
  c.inputs = {random_tensor({2, 3, 32, 32}, 5), random_tensor({64, 3, 7, 7}, 6, -0.1f, 0.1f), random_tensor({64}, 7)};
  check_case(c, "stem 7x7");
}

TEST(DnnlConv, RandomConvTranspose) {
  std::mt19937 rng(2024);
  int taken = 0;
  for (int it = 0; it < 40; ++it) {
    const int64_t group = pick(rng, 0, 2) == 0 ? pick(rng, 2, 3) : 1;
    const int64_t c = group * pick(rng, 1, 5), mg = pick(rng, 1, 5);
    std::vector<int64_t> x{pick(rng, 1, 2), c}, w{c, mg}, ks, st, dl, pads(4), op;
    for (int i = 0; i < 2; ++i) {
      ks.push_back(pick(rng, 1, 4));
      st.push_back(pick(rng, 1, 3));
      dl.push_back(pick(rng, 1, 2));
      pads[i] = pick(rng, 0, ks[i] - 1);
      pads[2 + i] = pick(rng, 0, ks[i] - 1);
      op.push_back(pick(rng, 0, st[i] - 1));
      x.push_back(pick(rng, 1, 9));
      w.push_back(ks[i]);
    }
    Case cs;
    cs.op = "ConvTranspose";
    cs.attrs = {{"group", attr_i(group)},
                {"strides", attr_ints(st)},
                {"dilations", attr_ints(dl)},
                {"pads", attr_ints(pads)},
                {"output_padding", attr_ints(op)}};
    if (it % 5 == 4) {
      cs.attrs.erase("pads");
      cs.attrs["auto_pad"] = attr_s("SAME_UPPER");
    }
    cs.inputs = {random_tensor(x, 800 + it), random_tensor(w, 900 + it)};
    if (pick(rng, 0, 1)) cs.inputs.push_back(random_tensor({mg * group}, 1000 + it));
    cs.const_inputs = {1};
    if (!run_op(cs.op, cs.attrs, cs.inputs, 1, 17, cs.const_inputs).is_ok()) continue;
    auto runs = check_case(cs,
                           "convtranspose it " + std::to_string(it) + describe(cs.attrs) + " X" + Shape::of(x).str() +
                               " W" + Shape::of(w).str(),
                           {});
    taken += runs["dnnl"].claimed;  // not taken: a negative begin pad (auto_pad with dilations)
  }
  EXPECT_GT(taken, 30);
}

TEST(DnnlConv, DeclinesNonConstantWeights) {
  Case c;
  c.op = "Conv";
  c.inputs = {random_tensor({1, 4, 8, 8}, 1), random_tensor({4, 4, 3, 3}, 2)};
  auto runs = check_case(c, "conv with non-constant W", {"ref"});
  EXPECT_FALSE(runs["dnnl"].claimed);
  EXPECT_FALSE(runs["dnnl"].reason.empty()) << "a decline says why";
}

// ---------------------------------------------------------------- Gemm / MatMul
TEST(DnnlGemm, Random) {
  std::mt19937 rng(99);
  for (int it = 0; it < 50; ++it) {
    const int64_t m = pick(rng, 1, 20), n = pick(rng, 1, 40), k = pick(rng, 1, 30);
    const bool ta = pick(rng, 0, 1), tb = pick(rng, 0, 1);
    Case c;
    const bool fused = it % 3 == 2;
    c.op = fused ? "FusedGemm" : "Gemm";
    c.domain = fused ? "com.infera" : "";
    c.attrs = {{"transA", attr_i(ta)}, {"transB", attr_i(tb)}};
    const bool b_const = it % 5 != 4;
    if (pick(rng, 0, 1) && b_const) c.attrs["alpha"] = attr_f(0.5f + pick(rng, 0, 3) * 0.25f);
    c.inputs = {random_tensor(ta ? std::vector<int64_t>{k, m} : std::vector<int64_t>{m, k}, 10 + it),
                random_tensor(tb ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n}, 20 + it)};
    if (b_const) c.const_inputs = {1};
    const int64_t ck = pick(rng, 0, 5);
    const std::vector<std::vector<int64_t>> cshapes{{}, {n}, {1, n}, {m, n}, {m, 1}, {1}};
    if (ck > 0) {
      c.inputs.push_back(random_tensor(cshapes[ck], 30 + it));
      const bool c_const = pick(rng, 0, 2) != 0;
      if (c_const) c.const_inputs.push_back(2);
      if (c_const && pick(rng, 0, 1)) c.attrs["beta"] = attr_f(0.75f);
    }
    if (fused) c.attrs["activation"] = attr_s(kActs[pick(rng, 1, 10)]);
    // C of [M, 1] needs a column-broadcast post-op that oneDNN has only its reference kernel for.
    check_case(c,
               "gemm it " + std::to_string(it) + describe(c.attrs) + " M=" + std::to_string(m) +
                   " N=" + std::to_string(n) + " K=" + std::to_string(k) + " C kind " + std::to_string(ck),
               ck == 4 ? std::vector<std::string>{} : std::vector<std::string>{"dnnl"});
  }
}

TEST(DnnlMatMul, Random) {
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> shapes{
      {{5, 7}, {7, 3}}, {{2, 5, 7}, {2, 7, 3}}, {{2, 5, 7}, {7, 3}}, {{3, 1, 4, 6}, {2, 6, 5}},
      {{7}, {7, 3}},    {{5, 7}, {7}},          {{1, 33}, {33, 65}}, {{4, 2, 3, 8}, {4, 2, 8, 9}}};
  uint32_t seed = 40;
  for (auto& [a, b] : shapes) {
    for (bool b_const : {false, true}) {
      Case c;
      c.op = "MatMul";
      c.inputs = {random_tensor(a, seed++), random_tensor(b, seed++)};
      if (b_const) c.const_inputs = {1};
      check_case(c, "matmul " + Shape::of(a).str() + " x " + Shape::of(b).str() + (b_const ? " const" : ""));
    }
  }
}

// ---------------------------------------------------------------- pooling
TEST(DnnlPool, Random) {
  std::mt19937 rng(555);
  int taken = 0;
  for (int it = 0; it < 120; ++it) {
    Case c;
    const bool is_max = it % 2 == 0;
    c.op = is_max ? "MaxPool" : "AveragePool";
    c.opset = is_max ? 12 : (pick(rng, 0, 1) ? 19 : 11);
    std::vector<int64_t> x{pick(rng, 1, 2), pick(rng, 1, 20)}, ks, st, dl, pads(4);
    for (int i = 0; i < 2; ++i) {
      ks.push_back(pick(rng, 1, 4));
      st.push_back(pick(rng, 1, 3));
      dl.push_back((is_max || c.opset >= 19) ? pick(rng, 1, 2) : 1);
      pads[i] = pick(rng, 0, ks[i] - 1);
      pads[2 + i] = pick(rng, 0, ks[i] - 1);
      x.push_back(pick(rng, (ks[i] - 1) * dl[i] + 1, 13));
    }
    c.attrs["kernel_shape"] = attr_ints(ks);
    c.attrs["strides"] = attr_ints(st);
    if (dl != std::vector<int64_t>{1, 1}) c.attrs["dilations"] = attr_ints(dl);
    const int64_t ap = pick(rng, 0, 4);
    if (ap == 3)
      c.attrs["auto_pad"] = attr_s("SAME_UPPER");
    else if (ap == 4)
      c.attrs["auto_pad"] = attr_s("VALID");
    else
      c.attrs["pads"] = attr_ints(pads);
    c.attrs["ceil_mode"] = attr_i(pick(rng, 0, 1));
    if (!is_max) c.attrs["count_include_pad"] = attr_i(pick(rng, 0, 1));
    c.inputs = {random_tensor(x, 700 + it)};
    if (!run_op(c.op, c.attrs, c.inputs, 1, c.opset).is_ok()) continue;
    auto runs =
        check_case(c, "pool it " + std::to_string(it) + " " + c.op + describe(c.attrs) + " X" + Shape::of(x).str(), {});
    taken += runs["dnnl"].claimed;  // not taken: count_include_pad over ceil padding, windows in padding
  }
  EXPECT_GT(taken, 45);  // oneDNN's own reference kernels (dilated, some ceil modes) are declined
}

TEST(DnnlPool, GlobalAndIndices) {
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool"}) {
    Case c;
    c.op = op;
    c.inputs = {random_tensor({2, 37, 7, 9}, 3)};
    check_case(c, op);
  }
  Case c;
  c.op = "MaxPool";
  c.attrs = {{"kernel_shape", attr_ints({2, 2})}};
  c.inputs = {random_tensor({1, 3, 6, 6}, 4)};
  c.num_outputs = 2;
  auto runs = check_case(c, "MaxPool with Indices", {"ref"});
  EXPECT_FALSE(runs["dnnl"].claimed) << "MaxPool with Indices must be declined";
}

// ---------------------------------------------------------------- BN / eltwise / binary
TEST(DnnlNorm, BatchNormalization) {
  const std::vector<std::vector<int64_t>> shapes{{2, 20, 5, 7}, {1, 64, 3, 3}, {3, 5}, {2, 6, 11}};
  uint32_t seed = 900;
  for (auto& x : shapes) {
    const int64_t ch = x[1];
    Case c;
    c.op = "BatchNormalization";
    c.opset = 15;
    c.attrs = {{"epsilon", attr_f(1e-3f)}};
    c.inputs = {random_tensor(x, seed++), random_tensor({ch}, seed++), random_tensor({ch}, seed++),
                random_tensor({ch}, seed++), random_tensor({ch}, seed++, 0.5f, 2.f)};
    c.const_inputs = {1, 2, 3, 4};
    check_case(c, "bn " + Shape::of(x).str(),
               x.size() == 4 ? std::vector<std::string>{"dnnl"} : std::vector<std::string>{});
  }
}

TEST(DnnlNorm, FusedBatchNorm) {
  // Our own loop (constant statistics): plain and blocked, 20 channels (padded lanes in nChw16c,
  // which Clip(0.5, 6) would make non-zero), Relu / Clip in the loop, Sigmoid after it, a 3-D input.
  const std::vector<std::vector<int64_t>> shapes{{2, 20, 5, 7}, {1, 64, 3, 3}, {2, 6, 11}};
  struct A {
    const char* act;
    float alpha, beta;
  };
  uint32_t seed = 950;
  for (auto& x : shapes)
    for (const A& a : {A{"Relu", 0.f, 0.f}, A{"Clip", 0.5f, 6.f}, A{"Sigmoid", 0.f, 0.f}}) {
      const int64_t ch = x[1];
      Case c;
      c.op = "FusedBatchNorm";
      c.domain = "com.infera";
      c.opset = 15;
      c.attrs = {{"epsilon", attr_f(1e-3f)}, {"activation", attr_s(a.act)}};
      if (std::string(a.act) == "Clip")
        c.attrs["activation_alpha"] = attr_f(a.alpha), c.attrs["activation_beta"] = attr_f(a.beta);
      c.inputs = {random_tensor(x, seed++, -3.f, 3.f), random_tensor({ch}, seed++), random_tensor({ch}, seed++),
                  random_tensor({ch}, seed++), random_tensor({ch}, seed++, 0.5f, 2.f)};
      c.const_inputs = {1, 2, 3, 4};
      auto runs = check_case(c, std::string("fused bn + ") + a.act + " " + Shape::of(x).str(), {"dnnl"});
      EXPECT_NE(runs["dnnl"].modes, 0);
    }
  // Statistics that are graph inputs: declined (the reference runs it).
  Case c;
  c.op = "FusedBatchNorm";
  c.domain = "com.infera";
  c.opset = 15;
  c.attrs = {{"activation", attr_s("Relu")}};
  c.inputs = {random_tensor({1, 4, 3, 3}, 1), random_tensor({4}, 2), random_tensor({4}, 3), random_tensor({4}, 4),
              random_tensor({4}, 5, 0.5f, 2.f)};
  auto runs = check_case(c, "fused bn, statistics not constant", {});
  EXPECT_FALSE(runs["dnnl"].claimed);
}

TEST(DnnlEltwise, Unary) {
  struct U {
    const char* op;
    Attrs attrs;
    float lo, hi;
  };
  const std::vector<U> ops{{"Relu", {}, -2, 2},
                           {"LeakyRelu", {{"alpha", attr_f(0.2f)}}, -2, 2},
                           {"Sigmoid", {}, -6, 6},
                           {"Tanh", {}, -3, 3},
                           {"Elu", {{"alpha", attr_f(0.7f)}}, -3, 3},
                           {"HardSigmoid", {{"alpha", attr_f(0.3f)}, {"beta", attr_f(0.4f)}}, -4, 4},
                           {"HardSwish", {}, -5, 5},
                           {"Selu", {}, -3, 3},
                           {"Softplus", {}, -5, 5},
                           {"Exp", {}, -3, 3},
                           {"Log", {}, 0.1f, 5},
                           {"Sqrt", {}, 0, 5},
                           {"Abs", {}, -2, 2},
                           {"Neg", {}, -2, 2},
                           {"Mish", {}, -4, 4},
                           {"Gelu", {}, -4, 4},
                           {"Gelu", {{"approximate", attr_s("tanh")}}, -4, 4}};
  uint32_t seed = 1000;
  for (auto& u : ops) {
    for (auto dims : {std::vector<int64_t>{2, 20, 5, 3}, std::vector<int64_t>{7, 33}}) {
      Case c;
      c.op = u.op;
      c.opset = std::string(u.op) == "Gelu" ? 20 : 17;
      c.attrs = u.attrs;
      c.inputs = {random_tensor(dims, seed++, u.lo, u.hi)};
      // Exp: oneDNN's exp(NaN) is +Inf, so the reference runs it (test_nan.cpp).
      check_case(c, std::string(u.op) + " " + Shape::of(dims).str(),
                 std::string(u.op) == "Exp" ? std::vector<std::string>{} : std::vector<std::string>{"dnnl"});
    }
  }
  Case clip6;
  clip6.op = "Clip";
  clip6.opset = 6;
  clip6.attrs = {{"min", attr_f(-0.3f)}, {"max", attr_f(0.6f)}};
  clip6.inputs = {random_tensor({2, 17, 4, 4}, 5)};
  check_case(clip6, "Clip opset 6");
  Case clip13;
  clip13.op = "Clip";
  clip13.opset = 13;
  clip13.inputs = {random_tensor({2, 17, 4, 4}, 6), make_tensor<float>(DataType::kFloat32, {}, {0.f}),
                   make_tensor<float>(DataType::kFloat32, {}, {6.f})};
  clip13.inputs[0] = random_tensor({2, 17, 4, 4}, 6, -10, 10);
  clip13.const_inputs = {1, 2};
  check_case(clip13, "Clip opset 13 (relu6)");
}

TEST(DnnlEltwise, Binary) {
  const std::vector<std::vector<int64_t>> others{{2, 20, 5, 6}, {1, 20, 1, 1}, {2, 20, 1, 1}, {20, 1, 1},
                                                 {6},           {1},           {1, 1, 5, 6}};
  uint32_t seed = 1200;
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Max", "Min"}) {
    for (auto& o : others) {
      for (bool swap : {false, true}) {
        const bool commutative = std::string(op) != "Sub" && std::string(op) != "Div";
        if (swap && !commutative) continue;
        Case c;
        c.op = op;
        Tensor full = random_tensor({2, 20, 5, 6}, seed++);
        Tensor b = random_tensor(o, seed++, 0.5f, 1.5f);  // positive: safe divisor
        c.inputs = swap ? std::vector<Tensor>{b, full} : std::vector<Tensor>{full, b};
        if (o.size() < 4) c.const_inputs = {swap ? 0 : 1};
        // Max/Min: oneDNN's drop a NaN in src0, so the reference runs them (test_nan.cpp).
        const bool nan_declined = std::string(op) == "Max" || std::string(op) == "Min";
        check_case(c, std::string(op) + " with " + Shape::of(o).str() + (swap ? " swapped" : ""),
                   nan_declined ? std::vector<std::string>{} : std::vector<std::string>{"dnnl"});
      }
    }
  }
}

// A vector along the last axis of a rank >= 3 output (ConvNeXt's bias after a 4-D MatMul,
// [N, H, W, 4C] + [4C]): the GPU takes it as rows (it used to go to the CPU).
TEST(GpuEltwise, TrailingVector) {
  uint32_t seed = 1300;
  for (const char* op : {"Add", "Mul", "Sub"}) {
    for (auto dims :
         {std::vector<int64_t>{2, 5, 6, 20}, std::vector<int64_t>{4, 7, 20}, std::vector<int64_t>{1, 3, 3, 40}}) {
      for (int rank : {1, 0}) {  // [K] and [1, ..., 1, K]
        Case c;
        c.op = op;
        std::vector<int64_t> v(rank == 1 ? 1 : dims.size(), 1);
        v.back() = dims.back();
        c.inputs = {random_tensor(dims, seed++), random_tensor(v, seed++, 0.5f, 1.5f)};
        c.const_inputs = {1};
        check_case(c, std::string(op) + " " + Shape::of(dims).str() + " with " + Shape::of(v).str(),
                   {"gpu", "gpu-fp16"});
      }
    }
  }
}

TEST(DnnlMisc, Softmax) {
  uint32_t seed = 1400;
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    for (int64_t opset : {11, 13}) {
      for (int64_t axis : {-1, 1, 0}) {
        Case c;
        c.op = op;
        c.opset = opset;
        c.attrs = {{"axis", attr_i(axis)}};
        c.inputs = {random_tensor({3, 4, 5}, seed++, -5, 5)};
        // oneDNN's softmax gives 0s for a row with NaN or +Inf: every Softmax is declined (the
        // reference runs it; test_nan.cpp), so this only checks that what is taken is right.
        check_case(c, std::string(op) + " opset " + std::to_string(opset) + " axis " + std::to_string(axis), {});
      }
    }
  }
}

TEST(DnnlMisc, Concat) {
  uint32_t seed = 1500;
  Case c;
  c.op = "Concat";
  c.attrs = {{"axis", attr_i(1)}};
  c.inputs = {random_tensor({2, 32, 5, 5}, seed++), random_tensor({2, 16, 5, 5}, seed++),
              random_tensor({2, 64, 5, 5}, seed++)};
  check_case(c, "concat channels (whole blocks)");
  c.inputs = {random_tensor({2, 3, 5, 5}, seed++), random_tensor({2, 20, 5, 5}, seed++)};
  check_case(c, "concat channels (partial blocks)");
  for (int64_t axis : {0, 2, -1}) {
    c.attrs = {{"axis", attr_i(axis)}};
    std::vector<int64_t> a{2, 3, 4, 5}, b = a;
    b[axis < 0 ? 3 : axis] = 2;
    c.inputs = {random_tensor(a, seed++), random_tensor(b, seed++)};
    check_case(c, "concat axis " + std::to_string(axis));
  }
}

// Stride-2 convolutions of few channels (RGB stems): the fp16 GPU runs them as the stride-1
// convolution of the input's 2x2 space-to-depth (gpu_conv.cpp SpaceToDepthStem), which must give the
// reference's result for every pad, odd size, filter size and fused epilogue.
TEST(GpuConv, SpaceToDepthStems) {
  struct S {
    std::vector<int64_t> x, w, pads;
    bool fused;
  };
  const S cases[] = {
      {{2, 3, 32, 32}, {64, 3, 7, 7}, {3, 3, 3, 3}, false},  // ResNet's stem
      {{1, 3, 33, 29}, {16, 3, 7, 7}, {3, 2, 1, 3}, true},   // odd sizes, uneven pads
      {{2, 1, 17, 18}, {8, 1, 3, 3}, {1, 1, 1, 1}, true},    // one channel
      {{1, 4, 15, 15}, {24, 4, 5, 5}, {2, 0, 0, 2}, false},  // four channels: all 16 lanes used
      {{1, 2, 12, 20}, {8, 2, 3, 5}, {0, 2, 1, 0}, true},    // R != S
  };
  uint32_t seed = 1700;
  for (const S& t : cases) {
    Case c;
    c.op = t.fused ? "FusedConv" : "Conv";
    c.domain = t.fused ? "com.infera" : "";
    c.attrs = {{"strides", attr_ints({2, 2})}, {"pads", attr_ints(t.pads)}};
    c.inputs = {random_tensor(t.x, seed++), random_tensor(t.w, seed++, -0.3f, 0.3f), random_tensor({t.w[0]}, seed++)};
    c.const_inputs = {1, 2};
    if (t.fused) {
      auto y = run_op("Conv", c.attrs, {c.inputs[0], c.inputs[1]}, 1, 17, {1});
      ASSERT_TRUE(y.is_ok()) << y.message();
      c.inputs.push_back(random_tensor(y.value()[0].dims(), seed++));
      c.attrs["activation"] = attr_s("Relu");
    }
    const std::string what =
        "stem X" + Shape::of(t.x).str() + " W" + Shape::of(t.w).str() + (t.fused ? " +Z relu" : "");
    auto runs = check_case(c, what, {"dnnl", "gpu", "gpu-fp16"});
    if (runs.count("gpu-fp16"))
      EXPECT_NE(runs["gpu-fp16"].impl.find("space-to-depth"), std::string::npos)
          << what << ": " << runs["gpu-fp16"].impl;
  }
}

// Whether the GPU cases ran: skipped, visibly, on machines or builds without a GPU.
TEST(GpuBackend, Available) {
  if (!gpu_backend_status().is_ok()) GTEST_SKIP() << "GPU cases skipped: " << gpu_backend_status().message();
  bool gpu = false;
  for (const Target& t : targets()) gpu = gpu || t.name == "gpu";
  EXPECT_TRUE(gpu);
}

// ---------------------------------------------------------------- formats and planning
// The blocked format through the backends' conversion kernels: element (n, c, h, w) lives at
// ((n * Cp/b + c/b) * H * W + h * W + w) * b + c % b, padding zero, and back bit for bit.
TEST(DnnlLayout, ReorderRoundTrip) {
  const Format f = dnnl_blocked_format();
  const int b = format_channel_block(f);
  EXPECT_TRUE(b == 8 || b == 16);
  for (auto dims : {std::vector<int64_t>{2, 19, 3, 5}, std::vector<int64_t>{1, 64, 7, 7}}) {
    Tensor x = random_tensor(dims, 7);
    const int64_t cp = (dims[1] + b - 1) / b * b;
    ValueInfo vi{DataType::kFloat32, Shape::of(dims), nullptr};
    EXPECT_EQ(format_bytes(f, DataType::kFloat32, dims), static_cast<size_t>(dims[0] * cp * dims[2] * dims[3] * 4));
    std::vector<float> blk(format_bytes(f, DataType::kFloat32, dims) / 4, std::nanf(""));
    TensorRef in = TensorRef::of(x), bl{DataType::kFloat32, dims, blk.data()};
    ASSERT_TRUE(harness::convert(vi, in, Device::cpu(), Format::kPlain, bl, Device::cpu(), f).is_ok());
    const float* xp = x.data_as<float>();
    bool same = true;
    for (int64_t n = 0; n < dims[0]; ++n)
      for (int64_t c = 0; c < cp; ++c)
        for (int64_t hw = 0; hw < dims[2] * dims[3]; ++hw) {
          const float want = c < dims[1] ? xp[(n * dims[1] + c) * dims[2] * dims[3] + hw] : 0.f;
          same = same && blk[((n * (cp / b) + c / b) * dims[2] * dims[3] + hw) * b + c % b] == want;
        }
    EXPECT_TRUE(same);
    Tensor back = Tensor::make(DataType::kFloat32, dims).take();
    TensorRef br = TensorRef::of(back);
    ASSERT_TRUE(harness::convert(vi, bl, Device::cpu(), f, br, Device::cpu(), Format::kPlain).is_ok());
    EXPECT_EQ(std::memcmp(back.data(), x.data(), x.nbytes()), 0);
  }
}

TEST(DnnlLayout, Describe) {
  bool seen = false;
  for (const BackendInfo& b : available_backends()) {
    if (b.name != "dnnl") continue;
    seen = true;
    EXPECT_TRUE(b.available);
    EXPECT_NE(b.version.find("oneDNN"), std::string::npos) << b.version;
    EXPECT_NE(b.details.find("conv 3x3"), std::string::npos) << b.details;
  }
  EXPECT_TRUE(seen);
}

// Builds a small graph for planner tests.
struct PlanGraph {
  Graph g;
  PlanGraph() { g.opset = 17; }
  int value(const char* name) { return g.add_value(name); }
  void node(const char* op, std::vector<int> ins, int out, Attrs attrs = {}) {
    Node n;
    n.name = op + std::to_string(g.nodes.size());
    n.op_type = op;
    n.inputs = std::move(ins);
    n.outputs = {out};
    n.attrs = std::move(attrs);
    g.add_node(std::move(n));
  }
  int constant(const char* name, Tensor t) {
    int v = g.add_value(name, t.dtype(), Shape::of(t.dims()));
    g.values[v].constant = std::make_shared<const Tensor>(std::move(t));
    return v;
  }
  Result<std::shared_ptr<const Plan>> plan(const std::vector<std::vector<int64_t>>& dims,
                                           std::vector<std::string> backends = {"dnnl", "ref"}) {
    Status s = infer_graph(g);
    if (!s.is_ok()) return s;
    PlanOptions o;
    for (auto& b : backends) o.backends.push_back(find_backend(b, Device::cpu()).take());
    return make_plan(g, dims, o);
  }
};

// Elementwise ops follow their input's format: on NHWC-ordered tensors (after a Transpose) a
// blocked output between two elementwise ops would only add reorders, so it stays plain.
TEST(DnnlLayout, ElementwiseFollowsInput) {
  PlanGraph b;
  int x = b.g.add_value("x", DataType::kFloat32, Shape::of({1, 8, 6, 6}));
  b.g.inputs.push_back(x);
  int c1 = b.value("c1"), r1 = b.value("r1"), y1 = b.value("y1"), t = b.value("t"), a = b.value("a");
  int s = b.value("s"), u = b.value("u"), y2 = b.value("y2");
  b.node("Conv", {x, b.constant("w1", random_tensor({8, 8, 1, 1}, 1))}, c1);
  b.node("Relu", {c1}, r1);  // blocked input: blocked output
  b.node("Conv", {r1, b.constant("w2", random_tensor({8, 8, 1, 1}, 2))}, y1);
  b.node("Transpose", {x}, t, {{"perm", attr_ints({0, 2, 3, 1})}});
  b.node("Add", {t, b.constant("eps", random_tensor({1}, 3))}, a);  // plain input: plain output
  b.node("Sqrt", {a}, s);
  b.node("Transpose", {s}, u, {{"perm", attr_ints({0, 3, 1, 2})}});
  b.node("Conv", {u, b.constant("w3", random_tensor({8, 8, 1, 1}, 4))}, y2);
  b.g.outputs = {y1, y2};
  auto p = b.plan({{1, 8, 6, 6}});
  ASSERT_TRUE(p.is_ok()) << p.message();
  const auto& v = p.value()->values;
  EXPECT_EQ(v[c1].format, dnnl_blocked_format());
  EXPECT_EQ(v[r1].format, dnnl_blocked_format());
  EXPECT_EQ(v[a].format, Format::kPlain);
  EXPECT_EQ(v[s].format, Format::kPlain);
  EXPECT_EQ(p.value()->report.inserted_steps, 0u);  // every reader takes its value's format
}

// A residual add is fused into the conv and made in place: Y takes Z's buffer when Z is read
// for the last time there, so the arena holds one buffer for both.
TEST(Planner, ResidualConvRunsInPlace) {
  PlanGraph b;
  int x = b.g.add_value("x", DataType::kFloat32, Shape::of({1, 16, 8, 8}));
  b.g.inputs.push_back(x);
  int z = b.value("z"), y = b.value("y");
  b.node("Conv", {x, b.constant("w0", random_tensor({16, 16, 1, 1}, 4))}, z);
  b.g.add_node([&] {
    Node n;
    n.name = "fused";
    n.op_type = "FusedConv";
    n.domain = "com.infera";
    n.inputs = {x, b.constant("w", random_tensor({16, 16, 3, 3}, 5, -0.1f, 0.1f)), -1, z};
    n.outputs = {y};
    n.attrs = {{"pads", attr_ints({1, 1, 1, 1})}, {"activation", attr_s("Relu")}};
    return n;
  }());
  int out = b.value("out");
  b.node("Sigmoid", {y}, out);
  b.g.outputs = {out};
  auto p = b.plan({{1, 16, 8, 8}});
  ASSERT_TRUE(p.is_ok()) << p.message();
  const auto& v = p.value()->values;
  EXPECT_EQ(v[y].offset, v[z].offset) << "the conv output should reuse the residual's buffer";
  EXPECT_EQ(v[y].arena, v[z].arena);
}

// When the first backend declines a step at creation, only that step moves; no other kernel
// is made twice. With only the reference backend every step is on ref.
TEST(Planner, BackendListIsHonoured) {
  PlanGraph b;
  int x = b.g.add_value("x", DataType::kFloat32, Shape::of({1, 8, 6, 6}));
  b.g.inputs.push_back(x);
  int c = b.value("c"), r = b.value("r");
  b.node("Conv", {x, b.constant("w", random_tensor({8, 8, 3, 3}, 1))}, c, {{"pads", attr_ints({1, 1, 1, 1})}});
  b.node("Relu", {c}, r);
  b.g.outputs = {r};
  auto ref_only = b.plan({{1, 8, 6, 6}}, {"ref"});
  ASSERT_TRUE(ref_only.is_ok()) << ref_only.message();
  EXPECT_EQ(ref_only.value()->report.steps_per_backend.at("ref"), 2u);
  EXPECT_EQ(ref_only.value()->report.accelerated_steps, 0u);
  auto both = b.plan({{1, 8, 6, 6}});
  ASSERT_TRUE(both.is_ok()) << both.message();
  EXPECT_EQ(both.value()->report.steps_per_backend.at("dnnl"), 2u);
  ASSERT_EQ(both.value()->report.step_list.size(), 2u);
  EXPECT_EQ(both.value()->report.step_list[0].backend, "dnnl");
  EXPECT_EQ(both.value()->report.step_list[0].output_formats[0], format_name(dnnl_blocked_format()));
  EXPECT_EQ(both.value()->report.step_list[1].output_formats[0], "plain");  // a graph output
}

}  // namespace
}  // namespace infera::test
