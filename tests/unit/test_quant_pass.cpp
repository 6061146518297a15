// The quantize_qdq pass alone: a hand-built QDQ graph (as quantize_static writes it: int8 activations,
// per-channel int8 weights, int32 bias, a residual Add + Relu) becomes QConv nodes reading and writing
// int8, and the graph's output stays within one quantization step of the QDQ graph's (node-by-node
// evaluation on seeded random inputs); a pattern it cannot take (weights with a zero point) stays;
// a MaxPool between a DQ and a Q of equal parameters runs on the int8 values, exactly.
#include <gtest/gtest.h>

#include "op_test_util.h"
#include "ops/infer.h"
#include "passes/pass.h"
#include "passes/passes.h"

namespace infera::test {
namespace {

struct G {
  Graph g;
  int n = 0;
  G() {
    g.opset = 13;
    g.ir_version = 8;
    g.source = "test";
  }
  int c(const std::string& name, Tensor t) {
    int v = g.add_value(name, t.dtype(), Shape::of(t.dims()));
    g.values[v].constant = std::make_shared<const Tensor>(std::move(t));
    return v;
  }
  int op(const std::string& type, std::vector<int> ins, std::map<std::string, Attribute> a = {}) {
    Node x;
    x.name = type + std::to_string(n++);
    x.op_type = type;
    x.inputs = std::move(ins);
    x.attrs = std::move(a);
    x.outputs = {g.add_value(x.name + "_y")};
    const int y = x.outputs[0];
    g.add_node(std::move(x));
    return y;
  }
};

template <class T>
Tensor ints(DataType dt, std::vector<int64_t> d, uint32_t seed, int lo, int hi) {
  Tensor t = Tensor::make(dt, std::move(d)).take();
  std::mt19937 r(seed);
  std::uniform_int_distribution<int> u(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<T>()[i] = static_cast<T>(u(r));
  return t;
}
Tensor f(float v) { return make_tensor<float>(DataType::kFloat32, {}, {v}); }
Tensor i8(int8_t v) { return make_tensor<int8_t>(DataType::kInt8, {}, {v}); }

// input -> Q -> DQ -> Conv(+bias) -> Relu -> Q -> DQ -> Conv -> Q -> DQ -> Add(DQ(first relu's Q)) -> Relu -> Q -> DQ
Graph qdq_graph(int8_t w_zero_point) {
  G b;
  const int x = b.g.add_value("input", DataType::kFloat32, Shape::of({2, 8, 6, 6}));
  b.g.inputs.push_back(x);
  auto q = [&](int v, float s, int8_t z) {
    const int sv = b.c("s" + std::to_string(b.n), f(s)), zv = b.c("z" + std::to_string(b.n), i8(z));
    const int qv = b.op("QuantizeLinear", {v, sv, zv});
    return std::pair<int, int>{qv, b.op("DequantizeLinear", {qv, sv, zv})};
  };
  auto conv_w = [&](uint32_t seed) {
    Tensor ws = random_tensor({8}, seed, 0.002f, 0.01f);
    Tensor wz = Tensor::make(DataType::kInt8, {8}).take();
    wz.data_as<int8_t>()[3] = w_zero_point;
    Attribute ax;
    ax.kind = Attribute::kInt;
    ax.i = 0;
    return b.op("DequantizeLinear",
                {b.c("w" + std::to_string(seed), ints<int8_t>(DataType::kInt8, {8, 8, 3, 3}, seed, -127, 127)),
                 b.c("ws" + std::to_string(seed), ws), b.c("wz" + std::to_string(seed), wz)},
                {{"axis", ax}});
  };
  Attribute pads = attr_ints({1, 1, 1, 1});
  auto [xq, xd] = q(x, 0.02f, 0);
  (void)xq;
  Tensor bias = ints<int32_t>(DataType::kInt32, {8}, 5, -2000, 2000);
  const int bd = b.op("DequantizeLinear", {b.c("b", bias), b.c("bs", random_tensor({8}, 6, 0.0001f, 0.0002f))},
                      {{"axis", attr_i(0)}});
  const int c1 = b.op("Conv", {xd, conv_w(1), bd}, {{"pads", pads}});
  const int r1 = b.op("Relu", {c1});
  auto [r1q, r1d] = q(r1, 0.05f, -5);
  (void)r1q;
  const int c2 = b.op("Conv", {r1d, conv_w(2)}, {{"pads", pads}});
  auto [c2q, c2d] = q(c2, 0.08f, 3);
  (void)c2q;
  const int a = b.op("Add", {c2d, r1d});
  const int r2 = b.op("Relu", {a});
  auto [r2q, r2d] = q(r2, 0.06f, 0);
  (void)r2q;
  b.g.outputs.push_back(r2d);
  return std::move(b.g);
}

Result<Tensor> evaluate(Graph& g, const Tensor& x) {
  std::map<int, Tensor> vals;
  vals[g.inputs[0]] = x;
  for (const Node& n : g.nodes) {
    if (n.dead) continue;
    std::vector<const Tensor*> in;
    for (int v : n.inputs) in.push_back(v < 0 ? nullptr : g.values[v].constant ? g.values[v].constant.get() : &vals[v]);
    auto r = evaluate_node(n, g.opset, in);
    if (!r.is_ok()) return r.status();
    for (size_t o = 0; o < n.outputs.size(); ++o) vals[n.outputs[o]] = r.value()[o];
  }
  return vals[g.outputs[0]];
}

// quantize_qdq, then the dead nodes it leaves removed.
Status quantize_pass(Graph& g) {
  std::vector<std::unique_ptr<Pass>> p;
  p.push_back(make_quantize_qdq());
  p.push_back(make_eliminate_dead_nodes());
  return run_passes(g, p, nullptr);
}

int count(const Graph& g, const std::string& op) {
  int k = 0;
  for (const Node& n : g.nodes) k += !n.dead && n.op_type == op;
  return k;
}

TEST(QuantPass, QdqConvReluResidualBecomeQConvs) {
  Graph g = qdq_graph(0);
  Status inf = infer_graph(g);
  ASSERT_TRUE(inf.is_ok()) << inf.message();
  Tensor x = random_tensor({2, 8, 6, 6}, 9, -2.f, 2.f);
  auto before = evaluate(g, x);
  ASSERT_TRUE(before.is_ok()) << before.message();
  ASSERT_TRUE(quantize_pass(g).is_ok());
  EXPECT_EQ(count(g, "QConv"), 2);
  EXPECT_EQ(count(g, "Conv"), 0);
  EXPECT_EQ(count(g, "Add"), 0);
  EXPECT_EQ(count(g, "Relu"), 0);
  EXPECT_EQ(count(g, "QuantizeLinear"), 1);    // the input's
  EXPECT_EQ(count(g, "DequantizeLinear"), 1);  // the output's
  auto after = evaluate(g, x);
  ASSERT_TRUE(after.is_ok()) << after.message();
  const float* a = before.value().data_as<float>();
  const float* b = after.value().data_as<float>();
  int off = 0;
  for (int64_t i = 0; i < after.value().numel(); ++i) {
    EXPECT_LE(std::fabs(a[i] - b[i]), 0.06f * 1.001f) << i;  // one step of the output's scale
    off += a[i] != b[i];
  }
  EXPECT_LT(off, after.value().numel() / 5);  // the residual skips one rounding: few elements differ
}

TEST(QuantPass, WeightZeroPointLeavesTheConvInFloat) {
  Graph g = qdq_graph(4);
  Status inf = infer_graph(g);
  ASSERT_TRUE(inf.is_ok()) << inf.message();
  std::vector<std::unique_ptr<Pass>> p;
  p.push_back(make_quantize_qdq());
  ASSERT_TRUE(run_passes(g, p, nullptr).is_ok());
  EXPECT_EQ(count(g, "QConv"), 0);
  EXPECT_EQ(count(g, "Conv"), 2);
}

// input -> Q -> DQ -> MaxPool -> Q(scale ys) -> DQ -> output (int8 or uint8 zero points).
Graph max_pool_graph(float ys, bool u8) {
  G b;
  const int x = b.g.add_value("input", DataType::kFloat32, Shape::of({2, 5, 7, 7}));
  b.g.inputs.push_back(x);
  auto zp = [&](int v) {
    return u8 ? make_tensor<uint8_t>(DataType::kUInt8, {}, {static_cast<uint8_t>(v)}) : i8(static_cast<int8_t>(v));
  };
  const int s1 = b.c("s1", f(0.03f)), z1 = b.c("z1", zp(u8 ? 128 : -3));
  const int xd = b.op("DequantizeLinear", {b.op("QuantizeLinear", {x, s1, z1}), s1, z1});
  const int mp =
      b.op("MaxPool", {xd},
           {{"kernel_shape", attr_ints({3, 3})}, {"strides", attr_ints({2, 2})}, {"pads", attr_ints({1, 1, 1, 1})}});
  const int s2 = b.c("s2", f(ys)), z2 = b.c("z2", zp(u8 ? 128 : -3));
  b.g.outputs.push_back(b.op("DequantizeLinear", {b.op("QuantizeLinear", {mp, s2, z2}), s2, z2}));
  return std::move(b.g);
}

TEST(QuantPass, MaxPoolBetweenEqualQdqRunsOnInt8) {
  for (const bool u8 : {false, true})
    for (const float ys : {0.03f, 0.05f}) {
      SCOPED_TRACE(std::string(u8 ? "uint8" : "int8") + " y_scale " + std::to_string(ys));
      Graph g = max_pool_graph(ys, u8);
      ASSERT_TRUE(infer_graph(g).is_ok());
      Tensor x = random_tensor({2, 5, 7, 7}, 11, -5.f, 5.f);  // saturates both ends too
      auto before = evaluate(g, x);
      ASSERT_TRUE(before.is_ok()) << before.message();
      ASSERT_TRUE(quantize_pass(g).is_ok());
      const bool same = ys == 0.03f;  // only equal parameters fold
      EXPECT_EQ(count(g, "QuantizeLinear"), same ? 1 : 2);
      EXPECT_EQ(count(g, "DequantizeLinear"), same ? 1 : 2);
      for (const Node& n : g.nodes)
        if (!n.dead && n.op_type == "MaxPool")
          EXPECT_EQ(g.values[n.inputs[0]].dtype, same ? (u8 ? DataType::kUInt8 : DataType::kInt8) : DataType::kFloat32);
      auto after = evaluate(g, x);
      ASSERT_TRUE(after.is_ok()) << after.message();
      ASSERT_EQ(after.value().numel(), before.value().numel());
      for (int64_t i = 0; i < after.value().numel(); ++i)
        ASSERT_EQ(before.value().data_as<float>()[i], after.value().data_as<float>()[i]) << i;  // exact
    }
}

}  // namespace
}  // namespace infera::test
