// Pass tests: build a small graph by hand, run one pass, check the ops left and that the graph's
// outputs are unchanged (node-by-node evaluation on seeded random inputs, normalized error).
#include <gtest/gtest.h>

#include <algorithm>

#include <cstring>
#include <limits>

#include "graph_builder.h"
#include "op_test_util.h"
#include "ops/conv.h"
#include "ops/infer.h"
#include "ops/matmul.h"
#include "ops/norm.h"
#include "passes/passes.h"

namespace infera::test {
namespace {

constexpr DataType kF32 = DataType::kFloat32;

Tensor i64s(std::vector<int64_t> dims, std::vector<int64_t> v) {
  return make_tensor<int64_t>(DataType::kInt64, dims, v);
}
Tensor f32s(std::vector<int64_t> dims, std::vector<float> v) { return make_tensor<float>(kF32, dims, v); }
int64_t big_end() { return std::numeric_limits<int64_t>::max(); }
Tensor scalar_bool(bool b) { return make_tensor<bool>(DataType::kBool, {}, {b}); }

struct Builder : GraphBuilder {
  explicit Builder(int64_t opset = 17) : GraphBuilder(opset) {}
};

Status prepare(Graph& g) {
  Status s = g.compact();
  return s.is_ok() ? infer_graph(g) : s;
}

std::vector<std::string> ops_of(const Graph& g) {
  std::vector<std::string> ops;
  for (const Node& n : g.nodes)
    if (!n.dead) ops.push_back(n.op_type);
  return ops;
}

int count_op(const Graph& g, const std::string& op) {
  int c = 0;
  for (const Node& n : g.nodes) c += (!n.dead && n.op_type == op);
  return c;
}

// Random inputs for the graph's inputs; symbolic or unknown dims become 2.
std::map<std::string, Tensor> random_feeds(const Graph& g, uint32_t seed) {
  std::map<std::string, Tensor> f;
  for (int v : g.inputs) {
    std::vector<int64_t> dims;
    for (const Dim& d : g.values[v].shape.dims) dims.push_back(d.known() ? d.value : 2);
    f[g.values[v].name] = random_tensor(dims, seed++);
  }
  return f;
}

// Evaluates the graph node by node with the reference kernels; outputs in graph order.
Result<std::vector<Tensor>> eval_graph(const Graph& g, const std::map<std::string, Tensor>& feeds) {
  std::vector<std::shared_ptr<const Tensor>> vals(g.values.size());
  for (size_t i = 0; i < g.values.size(); ++i) vals[i] = g.values[i].constant;
  for (const auto& [name, t] : feeds) {
    int v = g.find_value(name);
    if (v < 0) return Status::error("no input " + name);
    vals[v] = std::make_shared<const Tensor>(t);
  }
  for (const Node& n : g.nodes) {
    if (n.dead) continue;
    std::vector<const Tensor*> args;
    for (int v : n.inputs) {
      if (v >= 0 && !vals[v]) return Status::error(n.label() + ": input '" + g.values[v].name + "' not computed");
      args.push_back(v >= 0 ? vals[v].get() : nullptr);
    }
    auto r = evaluate_node(n, g.opset, args);
    if (!r.is_ok()) return r.status();
    for (size_t o = 0; o < n.outputs.size(); ++o)
      if (n.outputs[o] >= 0) vals[n.outputs[o]] = std::make_shared<const Tensor>(std::move(r.value()[o]));
  }
  std::vector<Tensor> outs;
  for (int v : g.outputs) {
    if (!vals[v]) return Status::error("output '" + g.values[v].name + "' not computed");
    outs.push_back(*vals[v]);
  }
  return outs;
}

double tensor_error(const Tensor& a, const Tensor& b) {
  if (a.dtype() == kF32) return normalized_error(a, b);
  if (a.dtype() != b.dtype() || a.dims() != b.dims()) return 1e30;
  return std::memcmp(a.data(), b.data(), a.nbytes()) == 0 ? 0.0 : 1e30;
}

// Infers g, runs the pass (then compact + infer), and checks the outputs (by name) are unchanged.
void run_and_compare(Graph& g, Pass& pass, uint32_t seed = 7) {
  ASSERT_TRUE(prepare(g).is_ok()) << prepare(g).message();
  std::vector<std::string> names;
  for (int v : g.outputs) names.push_back(g.values[v].name);
  auto feeds = random_feeds(g, seed);
  auto before = eval_graph(g, feeds);
  ASSERT_TRUE(before.is_ok()) << before.message();
  Status s = pass.run(g);
  ASSERT_TRUE(s.is_ok()) << s.message();
  s = prepare(g);
  ASSERT_TRUE(s.is_ok()) << s.message();
  ASSERT_EQ(g.outputs.size(), names.size());
  for (size_t i = 0; i < names.size(); ++i) EXPECT_EQ(g.values[g.outputs[i]].name, names[i]);
  auto after = eval_graph(g, feeds);
  ASSERT_TRUE(after.is_ok()) << after.message();
  ASSERT_EQ(after.value().size(), before.value().size());
  for (size_t i = 0; i < after.value().size(); ++i)
    EXPECT_LT(tensor_error(after.value()[i], before.value()[i]), 1e-5) << "output " << names[i];
}

// ------------------------------------------------------------------ eliminate_identity

TEST(PassEliminateIdentity, ChainToOutputKeepsName) {
  Builder b;
  int x = b.input("x", {2, 3});
  int r = b.node("Relu", {x});
  int i1 = b.node("Identity", {r});
  int d = b.node("Dropout", {i1, b.constant("ratio", f32s({}, {0.5f}))});
  int i2 = b.node("Identity", {d});
  b.output(i2);
  auto p = make_eliminate_identity();
  run_and_compare(b.g, *p);
  EXPECT_EQ(ops_of(b.g), std::vector<std::string>{"Relu"});
  EXPECT_EQ(b.g.values[b.g.outputs[0]].name, "Identity_3_out0");
}

TEST(PassEliminateIdentity, ConstantAndOldDropout) {
  Builder b(10);
  int x = b.input("x", {2, 3});
  int c = b.node("Identity", {b.constant("c", random_tensor({2, 3}, 3))});
  int d = b.node("Dropout", {x}, {{"ratio", attr_f(0.3f)}});
  b.output(b.node("Add", {d, c}));
  auto p = make_eliminate_identity();
  run_and_compare(b.g, *p);
  EXPECT_EQ(ops_of(b.g), std::vector<std::string>{"Add"});
}

TEST(PassEliminateIdentity, UsedMaskBecomesConstant) {
  Builder b(13);
  int x = b.input("x", {2, 3});
  auto d = b.node_n("Dropout", {x}, 2);
  b.output(b.node("Where", {d[1], d[0], x}));
  auto p = make_eliminate_identity();
  run_and_compare(b.g, *p);
  EXPECT_EQ(ops_of(b.g), std::vector<std::string>{"Where"});
}

TEST(PassEliminateIdentity, KeepsWhatItMust) {
  Builder b(13);
  int x = b.input("x", {2, 3});
  b.output(b.node("Identity", {x}));  // input straight to output: the output name needs the node
  int r = b.node("Relu", {x});
  b.output(r);
  b.output(b.node("Identity", {r}));                             // input is itself a graph output
  int train = b.input("train", Shape::of({}), DataType::kBool);  // not known before running
  b.output(b.node("Dropout", {x, b.constant("ratio", f32s({}, {0.5f})), train}));
  Status s = prepare(b.g);
  ASSERT_TRUE(s.is_ok()) << s.message();
  auto p = make_eliminate_identity();
  ASSERT_TRUE(p->run(b.g).is_ok());
  ASSERT_TRUE(prepare(b.g).is_ok());
  EXPECT_EQ(count_op(b.g, "Identity"), 2);
  EXPECT_EQ(count_op(b.g, "Dropout"), 1);
}

TEST(PassEliminateIdentity, TrainingDropoutWithZeroRatio) {
  Builder b(13);
  int x = b.input("x", {2, 3});
  int d = b.node("Dropout", {x, b.constant("ratio", f32s({}, {0.f})), b.constant("train", scalar_bool(true))});
  b.output(b.node("Relu", {d}));
  auto p = make_eliminate_identity();
  run_and_compare(b.g, *p);
  EXPECT_EQ(ops_of(b.g), std::vector<std::string>{"Relu"});
}

// ------------------------------------------------------------------ fold_constants

TEST(PassFoldConstants, ConstantSubgraph) {
  Builder b;
  int x = b.input("x", {2, 3});
  int t = b.node("Add", {b.constant("a", random_tensor({3}, 1)), b.constant("b", random_tensor({3}, 2))});
  int e = b.node("Exp", {t});
  b.output(b.node("Mul", {x, e}));
  auto p = make_fold_constants();
  run_and_compare(b.g, *p);
  EXPECT_EQ(ops_of(b.g), std::vector<std::string>{"Mul"});
}

TEST(PassFoldConstants, ShapeGatherConcatReshapeChain) {
  Builder b;
  int x = b.input("x", {2, 3, 4});
  int s = b.node("Shape", {x});
  int d0 = b.node("Gather", {s, b.constant("idx", i64s({}, {0}))}, {{"axis", attr_i(0)}});
  int u = b.node("Unsqueeze", {d0, b.constant("axes", i64s({1}, {0}))});
  int shp = b.node("Concat", {u, b.constant("minus1", i64s({1}, {-1}))}, {{"axis", attr_i(0)}});
  int sz = b.node("Size", {x});
  int c = b.node("Cast", {sz}, {{"to", attr_i(1)}});
  int re = b.node("Reshape", {x, shp});
  b.output(b.node("Mul", {re, c}));
  auto p = make_fold_constants();
  run_and_compare(b.g, *p);
  EXPECT_EQ(ops_of(b.g), (std::vector<std::string>{"Reshape", "Mul"}));
}

TEST(PassFoldConstants, SymbolicShapeStays) {
  Builder b;
  int x = b.input("x", Shape({Dim::sym("batch"), Dim(3)}));
  int s = b.node("Shape", {x});
  b.output(b.node("Reshape", {x, s}));
  auto p = make_fold_constants();
  run_and_compare(b.g, *p);
  EXPECT_EQ(count_op(b.g, "Shape"), 1);
}

TEST(PassFoldConstants, KnownDimsOfSymbolicShape) {
  Builder b(17);
  int x = b.input("x", Shape({Dim::sym("batch"), Dim(6), Dim(2)}));
  int s = b.node("Shape", {x});
  int n = b.node("Gather", {s, b.constant("i0", i64s({1}, {0}))});   // the batch: stays
  int c = b.node("Gather", {s, b.constant("i1", i64s({1}, {-2}))});  // 6
  int h = b.node("Gather", {s, b.constant("i2", i64s({}, {2}))});    // 2, a scalar
  int c3 = b.node("Div", {c, b.constant("three", i64s({1}, {3}))});
  int hu = b.node("Unsqueeze", {h, b.constant("axes", i64s({1}, {0}))});
  int shp = b.node("Concat", {n, b.constant("three2", i64s({1}, {3})), c3, hu}, {{"axis", attr_i(0)}});
  b.output(b.node("Reshape", {x, shp}));
  auto p = make_fold_constants();
  run_and_compare(b.g, *p);
  auto dead = make_eliminate_dead_nodes();
  run_and_compare(b.g, *dead);
  ASSERT_EQ(ops_of(b.g), std::vector<std::string>{"Reshape"});
  const Tensor* t = b.g.values[b.g.nodes[0].inputs[1]].constant.get();
  ASSERT_TRUE(t);
  EXPECT_EQ(std::vector<int64_t>(t->data_as<int64_t>(), t->data_as<int64_t>() + t->numel()),
            (std::vector<int64_t>{0, 3, 2, 2}));
}

// PyTorch's channel shuffle: x.view(n, g, c/g, h, w).transpose(1, 2).view(n, -1, h, w) with n symbolic.
TEST(PassFoldConstants, ChannelShuffleWithSymbolicBatch) {
  Builder b(13);
  int x = b.input("x", Shape({Dim::sym("batch"), Dim(6), Dim(2), Dim(2)}));
  auto batch_piece = [&](int src) {
    int s = b.node("Shape", {src});
    int n = b.node("Gather", {s, b.constant("i" + std::to_string(b.count), i64s({}, {0}))});
    return b.node("Unsqueeze", {n, b.constant("ax" + std::to_string(b.count), i64s({1}, {0}))});
  };
  int s1 = b.node("Concat", {batch_piece(x), b.constant("rest1", i64s({4}, {2, 3, 2, 2}))}, {{"axis", attr_i(0)}});
  int r1 = b.node("Reshape", {x, s1});
  int t = b.node("Transpose", {r1}, {{"perm", attr_ints({0, 2, 1, 3, 4})}});
  int s2 = b.node("Concat", {batch_piece(x), b.constant("rest2", i64s({3}, {-1, 2, 2}))}, {{"axis", attr_i(0)}});
  b.output(b.node("Reshape", {t, s2}));
  auto p = make_fold_constants();
  run_and_compare(b.g, *p);
  auto dead = make_eliminate_dead_nodes();
  run_and_compare(b.g, *dead);
  EXPECT_EQ(ops_of(b.g), (std::vector<std::string>{"Reshape", "Transpose", "Reshape"}));
  EXPECT_EQ(b.g.values[b.g.outputs[0]].shape.str(), "[batch,6,2,2]");
}

TEST(PassFoldConstants, ConstantNodeFolds) {
  Builder b;
  int x = b.input("x", {2, 3});
  Attribute v;
  v.kind = Attribute::kTensor;
  v.t = std::make_shared<const Tensor>(random_tensor({2, 3}, 5));
  int c = b.node("Constant", {}, {{"value", v}});
  b.output(b.node("Add", {x, c}));
  auto p = make_fold_constants();
  run_and_compare(b.g, *p);
  EXPECT_EQ(ops_of(b.g), std::vector<std::string>{"Add"});
}

TEST(PassFoldConstants, LeavesBigOutputsAndGraphOutputs) {
  Builder b;
  int x = b.input("x", {4, 4});
  int t = b.node("Tile", {b.constant("c", random_tensor({4}, 1)), b.constant("reps", i64s({1}, {4}))});
  int r = b.node("Reshape", {t, b.constant("shape", i64s({2}, {4, 4}))});
  b.output(b.node("Add", {x, r}));
  b.output(b.node("Neg", {b.constant("k", random_tensor({3}, 2))}));
  auto p = make_fold_constants(/*max_tensor_bytes=*/32);  // Tile's 64 bytes are too many
  run_and_compare(b.g, *p);
  EXPECT_EQ(ops_of(b.g), (std::vector<std::string>{"Tile", "Neg", "Reshape", "Add"}));
}

TEST(PassFoldConstants, HeavyConstantMatMulStays) {
  Builder b;
  int x = b.input("x", {1024, 1024});
  int m = b.node("MatMul",
                 {b.constant("a", random_tensor({1024, 2048}, 1)), b.constant("b", random_tensor({2048, 1024}, 2))});
  b.output(b.node("Add", {x, m}));  // 2^31 multiply-adds: left to the runtime
  ASSERT_TRUE(prepare(b.g).is_ok());
  auto p = make_fold_constants();
  ASSERT_TRUE(p->run(b.g).is_ok());
  EXPECT_EQ(count_op(b.g, "MatMul"), 1);
}

TEST(PassFoldConstants, RandomOpsStay) {
  Builder b;
  int x = b.input("x", {2});
  int r = b.node("RandomUniform", {}, {{"shape", attr_ints({2})}});
  b.output(b.node("Add", {x, r}));
  auto p = make_fold_constants();
  ASSERT_TRUE(p->run(b.g).is_ok());
  EXPECT_EQ(count_op(b.g, "RandomUniform"), 1);
}

// ------------------------------------------------------------------ eliminate_dead_nodes

TEST(PassEliminateDeadNodes, DropsUnreachable) {
  Builder b;
  int x = b.input("x", {2, 3});
  b.output(b.node("Relu", {x}));
  int s = b.node("Sigmoid", {x});
  b.node("Tanh", {s});
  auto p = make_eliminate_dead_nodes();
  run_and_compare(b.g, *p);
  EXPECT_EQ(ops_of(b.g), std::vector<std::string>{"Relu"});
}

// ------------------------------------------------------------------ eliminate_noops

TEST(PassEliminateNoops, RemovesProvableNoops) {
  const int64_t big = std::numeric_limits<int64_t>::max();
  Builder b;
  int x = b.input("x", Shape({Dim::sym("batch"), Dim(3), Dim(4), Dim(4)}));
  int p = b.node("Pad", {x, b.constant("pads", i64s({8}, {0, 0, 0, 0, 0, 0, 0, 0}))}, {{"mode", attr_s("constant")}});
  int s = b.node("Slice", {p, b.constant("st", i64s({3}, {0, -9, 0})), b.constant("en", i64s({3}, {big, 4, 99})),
                           b.constant("ax", i64s({3}, {0, 2, -1}))});
  int c = b.node("Cast", {s}, {{"to", attr_i(1)}});
  int e = b.node("Expand", {c, b.constant("shape", i64s({3}, {3, 1, 4}))});
  b.output(b.node("Relu", {e}));
  b.output(e);  // a graph output keeps its name: the Relu reads it, the input cannot be renamed
  auto pass = make_eliminate_noops();
  run_and_compare(b.g, *pass);
  EXPECT_EQ(ops_of(b.g), (std::vector<std::string>{"Expand", "Relu"}));
  EXPECT_EQ(b.g.values[b.g.nodes[0].inputs[0]].name, "x");
}

TEST(PassEliminateNoops, OutputRenamedOntoProducer) {
  Builder b;
  int x = b.input("x", {2, 3});
  b.output(b.node("Cast", {b.node("Relu", {x})}, {{"to", attr_i(1)}}));
  auto pass = make_eliminate_noops();
  run_and_compare(b.g, *pass);
  EXPECT_EQ(ops_of(b.g), std::vector<std::string>{"Relu"});
}

TEST(PassEliminateNoops, KeepsWhatMayChangeData) {
  Builder b;
  int x = b.input("x", Shape({Dim::sym("batch"), Dim(3), Dim(4)}));
  auto keep = [&](int v) { b.output(b.node("Relu", {v})); };
  keep(b.node("Pad", {x, b.constant("p1", i64s({6}, {0, 0, 0, 0, 0, 1}))}));
  keep(b.node("Slice", {x, b.constant("s1", i64s({1}, {0})), b.constant("e1", i64s({1}, {1000}))}));  // batch
  keep(b.node("Slice", {x, b.constant("s2", i64s({1}, {1})), b.constant("e2", i64s({1}, {big_end()}))}));
  keep(b.node("Slice", {x, b.constant("s3", i64s({1}, {0})), b.constant("e3", i64s({1}, {3})),
                        b.constant("a3", i64s({1}, {2}))}));
  keep(b.node("Slice", {x, b.constant("s4", i64s({1}, {0})), b.constant("e4", i64s({1}, {4})),
                        b.constant("a4", i64s({1}, {2})), b.constant("t4", i64s({1}, {2}))}));
  keep(b.node("Cast", {x}, {{"to", attr_i(11)}}));
  keep(b.node("Expand", {x, b.constant("sh1", i64s({3}, {2, 3, 4}))}));     // batch might be 1
  keep(b.node("Expand", {x, b.constant("sh2", i64s({4}, {1, 1, 3, 4}))}));  // adds a dim
  int y = b.input("y", {2, 3});
  int sy = b.node("Shape", {y});
  keep(b.node("Pad", {y, b.node("Concat", {sy, sy}, {{"axis", attr_i(0)}})}));  // pads not constant
  auto pass = make_eliminate_noops();
  run_and_compare(b.g, *pass);
  EXPECT_EQ(count_op(b.g, "Pad"), 2);
  EXPECT_EQ(count_op(b.g, "Slice"), 4);
  EXPECT_EQ(count_op(b.g, "Cast"), 1);
  EXPECT_EQ(count_op(b.g, "Expand"), 2);
}

// ------------------------------------------------------------------ fold_batchnorm

int add_bn(Builder& b, int x, int c, uint32_t seed) {
  return b.node("BatchNormalization",
                {x, b.constant("scale" + std::to_string(seed), random_tensor({c}, seed, 0.5f, 1.5f)),
                 b.constant("bias" + std::to_string(seed), random_tensor({c}, seed + 1)),
                 b.constant("mean" + std::to_string(seed), random_tensor({c}, seed + 2)),
                 b.constant("var" + std::to_string(seed), random_tensor({c}, seed + 3, 0.2f, 2.f))},
                {{"epsilon", attr_f(1e-3f)}});
}

TEST(PassFoldBatchnorm, ConvWithAndWithoutBias) {
  Builder b;
  int x = b.input("x", {2, 3, 6, 6});
  int c1 =
      b.node("Conv", {x, b.constant("W1", random_tensor({4, 3, 3, 3}, 1)), b.constant("B1", random_tensor({4}, 2))},
             {{"pads", attr_ints({1, 1, 1, 1})}});
  int n1 = add_bn(b, c1, 4, 10);
  int c2 = b.node("Conv", {n1, b.constant("W2", random_tensor({4, 2, 3, 3}, 3))}, {{"group", attr_i(2)}});
  b.output(add_bn(b, c2, 4, 20));
  auto p = make_fold_batchnorm();
  run_and_compare(b.g, *p);
  EXPECT_EQ(ops_of(b.g), (std::vector<std::string>{"Conv", "Conv"}));
}

TEST(PassFoldBatchnorm, SharedConvOutputStays) {
  Builder b;
  int x = b.input("x", {1, 3, 5, 5});
  int c = b.node("Conv", {x, b.constant("W", random_tensor({4, 3, 1, 1}, 1))});
  b.output(add_bn(b, c, 4, 10));
  b.output(b.node("Relu", {c}));
  auto p = make_fold_batchnorm();
  run_and_compare(b.g, *p);
  EXPECT_EQ(count_op(b.g, "BatchNormalization"), 1);
}

TEST(PassFoldBatchnorm, GemmAndMatMul) {
  Builder b;
  int x = b.input("x", {3, 5});
  int g1 = b.node("Gemm", {x, b.constant("B", random_tensor({4, 5}, 1)), b.constant("C", random_tensor({4}, 2))},
                  {{"transB", attr_i(1)}, {"alpha", attr_f(0.7f)}, {"beta", attr_f(0.3f)}});
  int n1 = add_bn(b, g1, 4, 10);
  int g2 = b.node("Gemm", {n1, b.constant("B2", random_tensor({4, 6}, 3)), b.constant("C2", random_tensor({3, 1}, 4))},
                  {{"beta", attr_f(2.f)}});
  int n2 = add_bn(b, g2, 6, 20);
  int m = b.node("MatMul", {n2, b.constant("W", random_tensor({6, 2}, 5))});
  b.output(add_bn(b, m, 2, 30));
  auto p = make_fold_batchnorm();
  run_and_compare(b.g, *p);
  EXPECT_EQ(ops_of(b.g), (std::vector<std::string>{"Gemm", "Gemm", "Gemm"}));
}

// ------------------------------------------------------------------ fuse_matmul_add

TEST(PassFuseMatmulAdd, BiasEitherSide) {
  Builder b;
  int x = b.input("x", {3, 5});
  int m1 = b.node("MatMul", {x, b.constant("W1", random_tensor({5, 4}, 1))});
  int a1 = b.node("Add", {m1, b.constant("b1", random_tensor({4}, 2))});
  int m2 = b.node("MatMul", {a1, b.constant("W2", random_tensor({4, 6}, 3))});
  b.output(b.node("Add", {b.constant("b2", random_tensor({1, 6}, 4)), m2}));
  auto p = make_fuse_matmul_add();
  run_and_compare(b.g, *p);
  EXPECT_EQ(ops_of(b.g), (std::vector<std::string>{"Gemm", "Gemm"}));
}

// X of rank > 2 (a linear layer on channels-last activations, ConvNeXt's MLP): a Gemm on its
// rows between two Reshapes; d0 symbolic.
TEST(PassFuseMatmulAdd, RowsOfAHigherRankInput) {
  Builder b;
  int x = b.input("x", Shape{{Dim::sym("N"), Dim(3), Dim(4), Dim(5)}});
  int m1 = b.node("MatMul", {x, b.constant("W1", random_tensor({5, 6}, 1))});
  int a1 = b.node("Add", {b.constant("b1", random_tensor({1, 1, 6}, 2)), m1});  // leading ones
  int r1 = b.node("Relu", {a1});
  int m2 = b.node("MatMul", {r1, b.constant("W2", random_tensor({6, 2}, 3))});
  b.output(b.node("Add", {m2, b.constant("b2", random_tensor({2}, 4))}));
  auto p = make_fuse_matmul_add();
  run_and_compare(b.g, *p);
  EXPECT_EQ(ops_of(b.g),
            (std::vector<std::string>{"Reshape", "Gemm", "Reshape", "Relu", "Reshape", "Gemm", "Reshape"}));
  const Shape& out = b.g.values[b.g.outputs[0]].shape;
  ASSERT_EQ(out.rank(), 4) << out.str();
  EXPECT_EQ(out.dims[1], Dim(3));
  EXPECT_EQ(out.dims[2], Dim(4));
  EXPECT_EQ(out.dims[3], Dim(2));
}

TEST(PassFuseMatmulAdd, LeavesWhatGemmCannotDo) {
  Builder b;
  int x = b.input("x", Shape{{Dim(2), Dim::sym("S"), Dim(5)}});
  int m1 = b.node("MatMul", {x, b.constant("W1", random_tensor({5, 4}, 1))});  // 3-D input, a symbolic middle dim
  b.output(b.node("Add", {m1, b.constant("b1", random_tensor({4}, 2))}));
  int x3 = b.input("x3", {2, 3, 5});
  int m4 = b.node("MatMul", {x3, b.constant("W4", random_tensor({5, 4}, 7))});
  b.output(b.node("Add", {m4, b.constant("b4", random_tensor({3, 4}, 8))}));  // a bias per row: not Gemm's C
  int y = b.input("y", {3, 5});
  int m2 = b.node("MatMul", {y, b.constant("W2", random_tensor({5, 4}, 3))});
  b.output(b.node("Add", {m2, b.constant("b2", random_tensor({2, 3, 4}, 4))}));  // bias grows the rank
  int m3 = b.node("MatMul", {y, b.constant("W3", random_tensor({5, 4}, 5))});
  b.output(m3);  // the MatMul output is a graph output
  b.output(b.node("Add", {m3, b.constant("b3", random_tensor({4}, 6))}));
  auto p = make_fuse_matmul_add();
  run_and_compare(b.g, *p);
  EXPECT_EQ(count_op(b.g, "Gemm"), 0);
}

// ------------------------------------------------------------------ fuse_conv_activation

// The typed activation of a fused node (its op, not an attribute string).
Activation act_param(const Node& n) {
  if (const auto* c = dynamic_cast<const ConvOp*>(n.op.get())) return c->activation();
  if (const auto* g = dynamic_cast<const GemmOp*>(n.op.get())) return g->activation();
  if (const auto* bn = dynamic_cast<const BatchNormOp*>(n.op.get())) return bn->activation();
  ADD_FAILURE() << n.label() << " has no typed conv/gemm/batchnorm op";
  return {};
}
std::string act_of(const Node& n) {
  const Activation a = act_param(n);
  return a.is_identity() ? "" : activation_name(a.kind);
}

struct ActCase {
  std::string op;
  std::map<std::string, Attribute> attrs;
};

TEST(PassFuseConvActivation, EachActivation) {
  std::vector<ActCase> cases = {{"Relu", {}},
                                {"LeakyRelu", {{"alpha", attr_f(0.2f)}}},
                                {"Sigmoid", {}},
                                {"HardSigmoid", {{"alpha", attr_f(0.3f)}, {"beta", attr_f(0.4f)}}},
                                {"HardSwish", {}},
                                {"Tanh", {}},
                                {"Elu", {{"alpha", attr_f(0.8f)}}},
                                {"Clip", {}}};
  for (const ActCase& ac : cases) {
    SCOPED_TRACE(ac.op);
    Builder b;
    int x = b.input("x", {2, 3, 5, 5});
    int c = b.node("Conv", {x, b.constant("W", random_tensor({4, 3, 3, 3}, 1)), b.constant("B", random_tensor({4}, 2))},
                   {{"strides", attr_ints({2, 2})}});
    std::vector<int> ins = {c};
    if (ac.op == "Clip") {
      ins.push_back(b.constant("lo", f32s({}, {-0.2f})));
      ins.push_back(b.constant("hi", f32s({}, {0.3f})));
    }
    b.output(b.node(ac.op, ins, ac.attrs));
    auto p = make_fuse_conv_activation();
    run_and_compare(b.g, *p);
    ASSERT_EQ(ops_of(b.g), std::vector<std::string>{"FusedConv"});
    const Node& f = b.g.nodes[0];
    EXPECT_EQ(f.domain, "com.infera");
    EXPECT_EQ(act_of(f), ac.op);
    EXPECT_EQ(f.attr_ints("strides"), (std::vector<int64_t>{2, 2}));
  }
}

TEST(PassFuseConvActivation, ResidualAddAndOldClip) {
  Builder b(10);
  int x = b.input("x", {1, 4, 5, 5});
  int c1 = b.node("Conv", {x, b.constant("W1", random_tensor({4, 4, 3, 3}, 1))}, {{"pads", attr_ints({1, 1, 1, 1})}});
  int a = b.node("Add", {x, c1});
  int r = b.node("Clip", {a}, {{"min", attr_f(0.f)}, {"max", attr_f(0.5f)}});
  int c2 = b.node("Conv", {r, b.constant("W2", random_tensor({4, 4, 1, 1}, 2))});
  b.output(b.node("Add", {c2, r}));  // residual with no activation
  auto p = make_fuse_conv_activation();
  run_and_compare(b.g, *p);
  ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"FusedConv", "FusedConv"}));
  EXPECT_EQ(b.g.nodes[0].inputs.size(), 4u);
  EXPECT_EQ(b.g.nodes[0].inputs[3], b.g.find_value("x"));
  EXPECT_EQ(act_of(b.g.nodes[0]), "Clip");
  EXPECT_EQ(act_of(b.g.nodes[1]), "");
}

TEST(PassFuseConvActivation, HardSwishAsHardSigmoidTimesX) {
  Builder b(13);
  int x = b.input("x", {1, 3, 5, 5});
  int c = b.node(
      "Conv", {x, b.constant("W", random_tensor({4, 3, 3, 3}, 1)), b.constant("B", random_tensor({4}, 2, 2.f, 4.f))});
  int h = b.node("HardSigmoid", {c}, {{"alpha", attr_f(1.f / 6)}, {"beta", attr_f(0.5f)}});
  b.output(b.node("Mul", {h, c}));
  auto p = make_fuse_conv_activation();
  run_and_compare(b.g, *p);
  ASSERT_EQ(ops_of(b.g), std::vector<std::string>{"FusedConv"});
  EXPECT_EQ(act_of(b.g.nodes[0]), "HardSwish");
}

TEST(PassFuseConvActivation, SwishAsSigmoidTimesX) {
  Builder b;
  int x = b.input("x", Shape({Dim::sym("N"), Dim(3), Dim(5), Dim(5)}));
  int c1 =
      b.node("Conv", {x, b.constant("W1", random_tensor({4, 3, 3, 3}, 1)), b.constant("B1", random_tensor({4}, 2))});
  int m1 = b.node("Mul", {c1, b.node("Sigmoid", {c1})});
  int c2 = b.node("Conv", {m1, b.constant("W2", random_tensor({4, 4, 1, 1}, 3))});
  int a2 = b.node("Add", {c2, m1});  // residual first, then the gate (operands swapped)
  int m2 = b.node("Mul", {b.node("Sigmoid", {a2}), a2});
  int c3 = b.node("Conv", {m2, b.constant("W3", random_tensor({4, 4, 1, 1}, 4))});
  b.output(b.node("Mul", {c3, b.node("Sigmoid", {c3})}));
  b.output(c3);  // c3 is read a third time: its Sigmoid * x stays
  auto p = make_fuse_conv_activation();
  run_and_compare(b.g, *p);
  ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"FusedConv", "FusedConv", "Conv", "Sigmoid", "Mul"}));
  for (int i : {0, 1}) {
    EXPECT_EQ(act_of(b.g.nodes[i]), "Swish");
    EXPECT_EQ(act_param(b.g.nodes[i]).alpha, 1.f);
  }
  EXPECT_EQ(b.g.nodes[1].inputs.size(), 4u);
  EXPECT_GE(b.g.nodes[1].inputs[3], 0);  // the residual stayed
}

TEST(PassFuseConvActivation, FusedConvWithoutActivationTakesOne) {
  Builder b;
  int x = b.input("x", {1, 3, 5, 5});
  int f = b.node_n("FusedConv", {x, b.constant("W", random_tensor({3, 3, 1, 1}, 1)), -1, x}, 1,
                   {{"activation", attr_s("")}}, "com.infera")[0];
  b.output(b.node("Mul", {b.node("Sigmoid", {f}), f}));
  auto p = make_fuse_conv_activation();
  run_and_compare(b.g, *p);
  ASSERT_EQ(ops_of(b.g), std::vector<std::string>{"FusedConv"});
  EXPECT_EQ(act_of(b.g.nodes[0]), "Swish");
  EXPECT_EQ(b.g.nodes[0].inputs[3], b.g.find_value("x"));
}

TEST(PassFuseConvActivation, GemmAndRefusals) {
  Builder b;
  int x = b.input("x", {3, 5});
  int g1 = b.node("Gemm", {x, b.constant("B", random_tensor({5, 4}, 1)), b.constant("C", random_tensor({4}, 2))});
  b.output(b.node("Sigmoid", {g1}));
  int y = b.input("y", {1, 3, 4, 4});
  int c1 = b.node("Conv", {y, b.constant("W1", random_tensor({2, 3, 1, 1}, 3))});
  b.output(c1);  // a graph output cannot disappear into a fused node
  b.output(b.node("Relu", {c1}));
  int c2 = b.node("Conv", {y, b.constant("W2", random_tensor({2, 3, 1, 1}, 4))});
  int a2 = b.node("Add", {c2, b.constant("bias", random_tensor({1, 2, 1, 1}, 5))});  // broadcast, not residual
  b.output(b.node("Relu", {a2}));
  auto p = make_fuse_conv_activation();
  run_and_compare(b.g, *p);
  EXPECT_EQ(count_op(b.g, "FusedGemm"), 1);
  EXPECT_EQ(count_op(b.g, "FusedConv"), 0);
  EXPECT_EQ(count_op(b.g, "Conv"), 2);
}

TEST(PassFuseConvActivation, BatchNormAndActivation) {
  // DenseNet's norm + relu on a concatenation (no conv before it to fold into): one FusedBatchNorm.
  Builder b;
  int x = b.input("x", {1, 6, 5, 5});
  int y = b.input("y", {1, 2, 5, 5});
  int cat = b.node("Concat", {x, y}, {{"axis", attr_i(1)}});
  int r = b.node("Relu", {add_bn(b, cat, 8, 10)});
  b.output(b.node("Conv", {r, b.constant("W", random_tensor({4, 8, 1, 1}, 1))}));
  int n2 = add_bn(b, x, 6, 20);  // read twice: stays a BatchNormalization
  b.output(n2);
  b.output(b.node("Relu", {n2}));
  int n3 = add_bn(b, y, 2, 30);  // the HardSigmoid * x form of HardSwish
  b.output(b.node("Mul", {n3, b.node("HardSigmoid", {n3}, {{"alpha", attr_f(1.f / 6)}, {"beta", attr_f(0.5f)}})}));
  auto p = make_fuse_conv_activation();
  run_and_compare(b.g, *p);
  EXPECT_EQ(count_op(b.g, "FusedBatchNorm"), 2);
  EXPECT_EQ(count_op(b.g, "BatchNormalization"), 1);
  EXPECT_EQ(count_op(b.g, "Relu"), 1);
  std::vector<std::string> acts;
  for (const Node& n : b.g.nodes)
    if (!n.dead && n.op_type == "FusedBatchNorm") acts.push_back(act_of(n));
  std::sort(acts.begin(), acts.end());
  EXPECT_EQ(acts, (std::vector<std::string>{"HardSwish", "Relu"}));
}

// ------------------------------------------------------------------ pipeline

TEST(PassPipeline, SmallCnn) {
  Builder b;
  int x = b.input("x", {2, 3, 8, 8});
  int c = b.node("Conv", {x, b.constant("W", random_tensor({4, 3, 3, 3}, 1))},
                 {{"pads", attr_ints({1, 1, 1, 1})}, {"strides", attr_ints({2, 2})}});
  int n = add_bn(b, c, 4, 10);
  int r = b.node("Relu", {n});
  int id = b.node("Identity", {r});
  int s = b.node("Shape", {id});
  int d0 = b.node("Gather", {s, b.constant("idx", i64s({1}, {0}))}, {{"axis", attr_i(0)}});
  int shp = b.node("Concat", {d0, b.constant("minus1", i64s({1}, {-1}))}, {{"axis", attr_i(0)}});
  int flat = b.node("Reshape", {id, shp});
  int m = b.node("MatMul", {flat, b.constant("Wfc", random_tensor({64, 5}, 2))});
  int a = b.node("Add", {m, b.constant("bfc", random_tensor({5}, 3))});
  b.output(b.node("Relu", {a}));
  size_t original = b.g.nodes.size();
  ASSERT_TRUE(prepare(b.g).is_ok());
  auto feeds = random_feeds(b.g, 1);
  auto before = eval_graph(b.g, feeds);
  ASSERT_TRUE(before.is_ok()) << before.message();
  std::vector<PassReport> reports;
  Status st = run_passes(b.g, default_passes(), &reports);
  ASSERT_TRUE(st.is_ok()) << st.message();
  EXPECT_EQ(ops_of(b.g), (std::vector<std::string>{"FusedConv", "Reshape", "FusedGemm"}));
  // default_passes(): quantize_qdq (issue 11), fuse_channel_shuffle, fuse_squeeze_excite,
  // fuse_concat_batchnorm and fuse_inverted_residual (host), pool_before_pointwise_conv
  ASSERT_EQ(reports.size(), 16u);
  EXPECT_EQ(reports.front().name, "eliminate_identity");
  EXPECT_EQ(reports.front().nodes_before, original);
  EXPECT_EQ(reports.back().nodes_after, 3u);
  for (size_t i = 1; i < reports.size(); ++i) EXPECT_EQ(reports[i].nodes_before, reports[i - 1].nodes_after);
  auto after = eval_graph(b.g, feeds);
  ASSERT_TRUE(after.is_ok()) << after.message();
  EXPECT_LT(normalized_error(after.value()[0], before.value()[0]), 1e-5);
}

// ------------------------------------------------------------------ fuse_layer_norm / fuse_gelu

// PyTorch 1.13's export of F.layer_norm over the last axis, with optional scale and shift.
int decomposed_layer_norm(Builder& b, int x, int64_t c, bool affine, int axes_attr = -1) {
  auto axes = std::map<std::string, Attribute>{{"axes", attr_ints({axes_attr})}};
  int m = b.node("ReduceMean", {x}, axes);
  int d = b.node("Sub", {x, m});
  int p = b.node("Pow", {d, b.constant("two" + std::to_string(b.count), f32s({}, {2.f}))});
  int v = b.node("ReduceMean", {p}, axes);
  int ve = b.node("Add", {v, b.constant("eps" + std::to_string(b.count), f32s({}, {1e-6f}))});
  int n = b.node("Div", {d, b.node("Sqrt", {ve})});
  if (!affine) return n;
  int sc = b.node("Mul", {n, b.constant("gamma" + std::to_string(b.count), random_tensor({c}, 5, 0.5f, 1.5f))});
  return b.node("Add", {sc, b.constant("beta" + std::to_string(b.count), random_tensor({c}, 6))});
}

TEST(PassFuseLayerNorm, AffineAndPlainPatternsBecomeOneNode) {
  Builder b(13);
  int x = b.input("x", Shape({Dim::sym("N"), Dim(5), Dim(8)}));
  int y1 = decomposed_layer_norm(b, x, 8, true);
  int y2 = decomposed_layer_norm(b, b.node("Relu", {y1}), 8, false, 2);
  b.output(y2);
  auto p = make_fuse_layer_norm();
  run_and_compare(b.g, *p);
  EXPECT_EQ(ops_of(b.g), (std::vector<std::string>{"LayerNormalization", "Relu", "LayerNormalization"}));
}

TEST(PassFuseLayerNorm, KeepsPatternWhoseIntermediateIsRead) {
  Builder b(13);
  int x = b.input("x", {2, 4});
  int y = decomposed_layer_norm(b, x, 4, false);
  b.output(y);
  b.output(b.g.nodes[1].outputs[0]);  // x - mean is also a graph output
  auto p = make_fuse_layer_norm();
  run_and_compare(b.g, *p);
  EXPECT_EQ(count_op(b.g, "LayerNormalization"), 0);
  EXPECT_EQ(count_op(b.g, "ReduceMean"), 2);
}

TEST(PassFuseLayerNorm, KeepsNonLastAxis) {
  Builder b(13);
  int x = b.input("x", {2, 4, 3});
  b.output(decomposed_layer_norm(b, x, 4, false, 1));
  auto p = make_fuse_layer_norm();
  run_and_compare(b.g, *p);
  EXPECT_EQ(count_op(b.g, "LayerNormalization"), 0);
}

int decomposed_gelu(Builder& b, int x, float sqrt2 = 1.4142135381698608f) {
  int dv = b.node("Div", {x, b.constant("sqrt2_" + std::to_string(b.count), f32s({}, {sqrt2}))});
  int e = b.node("Erf", {dv});
  int a = b.node("Add", {e, b.constant("one_" + std::to_string(b.count), f32s({}, {1.f}))});
  int m = b.node("Mul", {x, a});
  return b.node("Mul", {m, b.constant("half_" + std::to_string(b.count), f32s({}, {0.5f}))});
}

TEST(PassFuseGelu, ErfPatternBecomesGelu) {
  Builder b(13);
  int x = b.input("x", Shape({Dim::sym("N"), Dim(16)}));
  b.output(decomposed_gelu(b, b.node("Relu", {x})));
  auto p = make_fuse_gelu();
  run_and_compare(b.g, *p);
  EXPECT_EQ(ops_of(b.g), (std::vector<std::string>{"Relu", "Gelu"}));
}

TEST(PassFuseGelu, KeepsOtherConstants) {
  Builder b(13);
  int x = b.input("x", {3, 4});
  b.output(decomposed_gelu(b, x, 2.0f));  // not sqrt(2): not GELU
  auto p = make_fuse_gelu();
  run_and_compare(b.g, *p);
  EXPECT_EQ(count_op(b.g, "Gelu"), 0);
  EXPECT_EQ(count_op(b.g, "Erf"), 1);
}

class FailingPass : public Pass {
 public:
  const char* name() const override { return "failing"; }
  Status run(Graph&) override { return Status::error("boom"); }
};

TEST(PassPipeline, StopsAtFirstError) {
  Builder b;
  b.output(b.node("Relu", {b.input("x", {2})}));
  ASSERT_TRUE(prepare(b.g).is_ok());
  std::vector<std::unique_ptr<Pass>> passes;
  passes.push_back(make_eliminate_dead_nodes());
  passes.push_back(std::make_unique<FailingPass>());
  passes.push_back(make_eliminate_dead_nodes());
  std::vector<PassReport> reports;
  Status s = run_passes(b.g, passes, &reports);
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("failing"), std::string::npos);
  EXPECT_NE(s.message().find("boom"), std::string::npos);
  EXPECT_EQ(reports.size(), 1u);
}

}  // namespace
}  // namespace infera::test
