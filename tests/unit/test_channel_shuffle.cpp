// fuse_channel_shuffle and com.infera.ChannelShuffle: the pass turns ShuffleNet's Reshape ->
// Transpose -> Reshape (and the Slices / Split that partition its channels) into one node whose
// outputs equal the subgraph's bit for bit (reference kernels, then the whole session on oneDNN
// with the Concat in place); it leaves every other pattern as it was.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>

#include "graph_builder.h"
#include "onnx_model_builder.h"
#include "op_test_util.h"
#include "ops/infer.h"
#include "passes/passes.h"

namespace infera::test {
namespace {

Tensor i64s(std::vector<int64_t> v) {
  return make_tensor<int64_t>(DataType::kInt64, {static_cast<int64_t>(v.size())}, v);
}

struct Builder : GraphBuilder {
  explicit Builder(int64_t opset = 13) : GraphBuilder(opset) {}
  using GraphBuilder::constant;
  int constant(Tensor t) { return constant("c" + std::to_string(count++), std::move(t)); }
  int slice(int x, int64_t start, int64_t end, int64_t axis = 1, int64_t step = 1) {
    return node("Slice",
                {x, constant(i64s({start})), constant(i64s({end})), constant(i64s({axis})), constant(i64s({step}))});
  }
};

int count_op(const Graph& g, const std::string& op) {
  int c = 0;
  for (const Node& n : g.nodes) c += (!n.dead && n.op_type == op);
  return c;
}

// The live ChannelShuffle node's output count, or -1 when there is none.
int shuffle_outputs(const Graph& g) {
  for (const Node& n : g.nodes)
    if (!n.dead && n.op_type == "ChannelShuffle") return static_cast<int>(n.outputs.size());
  return -1;
}

// The graph's outputs, node by node with the reference kernels, on seeded random inputs of
// the given dims per graph input.
std::vector<Tensor> eval(const Graph& g, const std::vector<std::vector<int64_t>>& dims, uint32_t seed) {
  std::vector<std::shared_ptr<const Tensor>> vals(g.values.size());
  for (size_t i = 0; i < g.values.size(); ++i) vals[i] = g.values[i].constant;
  for (size_t i = 0; i < g.inputs.size(); ++i)
    vals[g.inputs[i]] = std::make_shared<const Tensor>(random_tensor(dims[i], seed + static_cast<uint32_t>(i)));
  for (const Node& n : g.nodes) {
    if (n.dead) continue;
    std::vector<const Tensor*> args;
    for (int v : n.inputs) args.push_back(v >= 0 ? vals[v].get() : nullptr);
    auto r = evaluate_node(n, g.opset, args);
    EXPECT_TRUE(r.is_ok()) << r.message();
    if (!r.is_ok()) return {};
    for (size_t o = 0; o < n.outputs.size(); ++o)
      if (n.outputs[o] >= 0) vals[n.outputs[o]] = std::make_shared<const Tensor>(std::move(r.value()[o]));
  }
  std::vector<Tensor> outs;
  for (int v : g.outputs) outs.push_back(*vals[v]);
  return outs;
}

void expect_bitwise(const std::vector<Tensor>& got, const std::vector<Tensor>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].dims(), want[i].dims()) << what << ": output " << i;
    EXPECT_EQ(std::memcmp(got[i].data(), want[i].data(), got[i].nbytes()), 0) << what << ": output " << i;
  }
}

// Infers g, runs the pass, checks the graph outputs (names and bytes) on inputs of `dims` are
// what they were.
void fuse_and_compare(Graph& g, const std::vector<std::vector<int64_t>>& dims, const std::string& what) {
  ASSERT_TRUE(g.compact().is_ok());
  Status s = infer_graph(g);
  ASSERT_TRUE(s.is_ok()) << what << ": " << s.message();
  std::vector<std::string> names;
  for (int v : g.outputs) names.push_back(g.values[v].name);
  const auto before = eval(g, dims, 17);
  auto pass = make_fuse_channel_shuffle();
  s = pass->run(g);
  if (s.is_ok()) s = g.compact();
  if (s.is_ok()) s = infer_graph(g);
  ASSERT_TRUE(s.is_ok()) << what << ": " << s.message();
  for (size_t i = 0; i < names.size(); ++i) EXPECT_EQ(g.values[g.outputs[i]].name, names[i]) << what;
  expect_bitwise(eval(g, dims, 17), before, what);
}

// x [n, c, h, w] -> Relu -> Reshape [n0, g, c/g, h, w] -> Transpose perm -> Reshape [n0, c, h, w]:
// the shuffled value. n0 is the first entry of both shapes (a count, 0 = copy, -1 = infer).
struct Shuffle {
  int x = -1, r1 = -1, t = -1, y = -1;
};
Shuffle shuffle(Builder& b, int x, int64_t n0, int64_t c, int64_t grp, int64_t h, int64_t w,
                std::vector<int64_t> perm = {0, 2, 1, 3, 4}) {
  Shuffle s;
  s.x = b.node("Relu", {x});
  s.r1 = b.node("Reshape", {s.x, b.constant(i64s({n0, grp, c / grp, h, w}))});
  s.t = b.node("Transpose", {s.r1}, {{"perm", attr_ints(perm)}});
  s.y = b.node("Reshape", {s.t, b.constant(i64s({n0, c, h, w}))});
  return s;
}

// ------------------------------------------------------------------ the pass, reference kernels

TEST(FuseChannelShuffle, FusedEqualsUnfusedBitForBit) {
  for (int64_t n : {1, 3})
    for (int64_t c : {116, 48})
      for (int64_t grp : {2, 4})
        for (int readers : {0, 1, 2}) {  // none (graph output), two Slices (halves), a Split (in 3)
          const std::string what = "n " + std::to_string(n) + " c " + std::to_string(c) + " g " + std::to_string(grp) +
                                   " readers " + std::to_string(readers);
          Builder b;
          const int x = b.input("x", Shape({Dim::sym("N"), Dim(c), Dim(5), Dim(7)}));
          const Shuffle s = shuffle(b, x, n == 1 ? -1 : 0, c, grp, 5, 7);
          if (readers == 0) {
            b.g.outputs = {s.y};
          } else if (readers == 1) {
            const int hi = b.slice(s.y, c / 2, std::numeric_limits<int64_t>::max());  // written in this order
            const int lo = b.slice(s.y, 0, c / 2);
            b.g.outputs = {b.node("Relu", {hi}), lo};
          } else {
            auto parts = b.node_n("Split", {s.y, b.constant(i64s({10, c - 30, 20}))}, 3, {{"axis", attr_i(-3)}});
            b.g.outputs = {parts[0], parts[2], b.node("Relu", {parts[1]})};
          }
          fuse_and_compare(b.g, {{n, c, 5, 7}}, what);
          EXPECT_EQ(count_op(b.g, "ChannelShuffle"), 1) << what;
          EXPECT_EQ(shuffle_outputs(b.g), readers == 0 ? 1 : readers == 1 ? 2 : 3) << what;
          for (const char* op : {"Reshape", "Transpose", "Slice", "Split"}) EXPECT_EQ(count_op(b.g, op), 0) << what;
        }
}

// Two blocks in a chain, opset 9 Slices (attributes), a rank-3 value (no H).
TEST(FuseChannelShuffle, ChainsOldSlicesAndRankThree) {
  Builder b(9);
  const int x = b.input("x", {2, 12, 5, 5});
  Shuffle s = shuffle(b, x, 2, 12, 3, 5, 5);
  auto old_slice = [&](int v, int64_t start, int64_t end) {
    return b.node("Slice", {v}, {{"starts", attr_ints({start})}, {"ends", attr_ints({end})}, {"axes", attr_ints({1})}});
  };
  const int a = old_slice(s.y, 0, 6), c = old_slice(s.y, 6, 12);
  const int cat = b.node("Concat", {a, b.node("Relu", {c})}, {{"axis", attr_i(1)}});
  const Shuffle s2 = shuffle(b, cat, 0, 12, 2, 5, 5);
  const int y = b.input("y", {3, 8, 10});  // [N, C, L]
  const int r1 = b.node("Reshape", {y, b.constant(i64s({3, 4, 2, 10}))});
  const int t = b.node("Transpose", {r1}, {{"perm", attr_ints({0, 2, 1, 3})}});
  b.g.outputs = {s2.y, b.node("Reshape", {t, b.constant(i64s({3, 8, 10}))})};
  fuse_and_compare(b.g, {{2, 12, 5, 5}, {3, 8, 10}}, "chain");
  EXPECT_EQ(count_op(b.g, "ChannelShuffle"), 3);
  EXPECT_EQ(count_op(b.g, "Slice") + count_op(b.g, "Reshape") + count_op(b.g, "Transpose"), 0);
}

// Patterns that are not a channel shuffle, or whose intermediates someone else reads: untouched.
TEST(FuseChannelShuffle, LeavesOtherPatterns) {
  struct Case {
    const char* why;
    std::function<void(Builder&, int)> build;
  };
  const std::vector<Case> cases{
      {"perm (0, 1, 2, 3, 4)",
       [](Builder& b, int x) {
         b.g.outputs = {shuffle(b, x, 2, 8, 2, 3, 4, {0, 1, 2, 3, 4}).y};
       }},
      {"perm (0, 2, 1, 4, 3)",
       [](Builder& b, int x) {
         Shuffle s;
         s.r1 = b.node("Reshape", {b.node("Relu", {x}), b.constant(i64s({2, 2, 4, 3, 4}))});
         s.t = b.node("Transpose", {s.r1}, {{"perm", attr_ints({0, 2, 1, 4, 3})}});
         b.g.outputs = {b.node("Reshape", {s.t, b.constant(i64s({2, 8, 3, 4}))})};
       }},
      {"first reshape swaps H and W",
       [](Builder& b, int x) {
         const int r1 = b.node("Reshape", {b.node("Relu", {x}), b.constant(i64s({2, 2, 4, 4, 3}))});
         const int t = b.node("Transpose", {r1}, {{"perm", attr_ints({0, 2, 1, 3, 4})}});
         b.g.outputs = {b.node("Reshape", {t, b.constant(i64s({2, 8, 3, 4}))})};
       }},
      {"first reshape splits the batch",
       [](Builder& b, int x) {
         const int r1 = b.node("Reshape", {b.node("Relu", {x}), b.constant(i64s({1, 4, 4, 3, 4}))});
         const int t = b.node("Transpose", {r1}, {{"perm", attr_ints({0, 2, 1, 3, 4})}});
         b.g.outputs = {b.node("Reshape", {t, b.constant(i64s({2, 8, 3, 4}))})};
       }},
      {"second reshape is not X's shape",
       [](Builder& b, int x) {
         const Shuffle s = shuffle(b, x, 2, 8, 2, 3, 4);
         b.g.outputs = {b.node("Reshape", {s.t, b.constant(i64s({2, 8, 12}))})};
       }},
      {"transposed value is a graph output",
       [](Builder& b, int x) {
         const Shuffle s = shuffle(b, x, 2, 8, 2, 3, 4);
         b.g.outputs = {s.y, s.t};
       }},
      {"first reshape's value has another reader",
       [](Builder& b, int x) {
         const Shuffle s = shuffle(b, x, 2, 8, 2, 3, 4);
         b.g.outputs = {s.y, b.node("Relu", {s.r1})};
       }},
      {"shape computed from an input",
       [](Builder& b, int x) {
         const int shape = b.input("shape", Shape::of({5}), DataType::kInt64);
         const int r1 = b.node("Reshape", {b.node("Relu", {x}), shape});
         const int t = b.node("Transpose", {r1}, {{"perm", attr_ints({0, 2, 1, 3, 4})}});
         b.g.outputs = {b.node("Reshape", {t, b.constant(i64s({2, 8, 3, 4}))})};
       }},
  };
  for (const Case& c : cases) {
    Builder b;
    c.build(b, b.input("x", {2, 8, 3, 4}));
    Graph g = b.g;
    ASSERT_TRUE(infer_graph(g).is_ok()) << c.why;
    const int reshapes = count_op(g, "Reshape"), transposes = count_op(g, "Transpose");
    auto pass = make_fuse_channel_shuffle();
    ASSERT_TRUE(pass->run(g).is_ok()) << c.why;
    ASSERT_TRUE(g.compact().is_ok()) << c.why;
    EXPECT_EQ(count_op(g, "ChannelShuffle"), 0) << c.why;
    EXPECT_EQ(count_op(g, "Reshape"), reshapes) << c.why;
    EXPECT_EQ(count_op(g, "Transpose"), transposes) << c.why;
  }
}

// Readers of the shuffled value that do not partition its channels: the shuffle alone is fused
// (one output) and they stay, reading it.
TEST(FuseChannelShuffle, KeepsSlicesThatDoNotPartition) {
  struct Case {
    const char* why;
    std::function<std::vector<int>(Builder&, int)> readers;
    int slices;
  };
  const int64_t kEnd = std::numeric_limits<int64_t>::max();
  const std::vector<Case> cases{
      {"overlap",
       [](Builder& b, int y) {
         return std::vector<int>{b.slice(y, 0, 13), b.slice(y, 12, 24)};
       },
       2},
      {"gap",
       [](Builder& b, int y) {
         return std::vector<int>{b.slice(y, 0, 11), b.slice(y, 12, 24)};
       },
       2},
      {"overlap and gap that sum to C",
       [](Builder& b, int y) {
         return std::vector<int>{b.slice(y, 0, 13), b.slice(y, 12, 23)};
       },
       2},
      {"twice the same half",
       [](Builder& b, int y) {
         return std::vector<int>{b.slice(y, 0, 12), b.slice(y, 12, 24), b.slice(y, 0, 12)};
       },
       3},
      {"step 2",
       [&](Builder& b, int y) {
         return std::vector<int>{b.slice(y, 0, kEnd, 1, 2), b.slice(y, 1, kEnd, 1, 2)};
       },
       2},
      {"along H",
       [](Builder& b, int y) {
         return std::vector<int>{b.slice(y, 0, 2, 2), b.slice(y, 2, 3, 2)};
       },
       2},
      {"another reader",
       [](Builder& b, int y) {
         return std::vector<int>{b.slice(y, 0, 12), b.slice(y, 12, 24), b.node("Relu", {y})};
       },
       2},
      {"also a graph output",
       [](Builder& b, int y) {
         return std::vector<int>{b.slice(y, 0, 12), b.slice(y, 12, 24), y};
       },
       2},
      {"Split along W",
       [](Builder& b, int y) {
         return b.node_n("Split", {y, b.constant(i64s({2, 2}))}, 2, {{"axis", attr_i(3)}});
       },
       0},
  };
  for (const Case& c : cases) {
    Builder b;
    // 24 channels in 4 groups: the inverse permutation differs (16 in 4 would be its own inverse).
    const int x = b.input("x", Shape({Dim::sym("N"), Dim(24), Dim(3), Dim(4)}));
    const Shuffle s = shuffle(b, x, 0, 24, 4, 3, 4);
    b.g.outputs = c.readers(b, s.y);
    fuse_and_compare(b.g, {{3, 24, 3, 4}}, c.why);
    EXPECT_EQ(shuffle_outputs(b.g), 1) << c.why;
    EXPECT_EQ(count_op(b.g, "Slice"), c.slices) << c.why;
    EXPECT_EQ(count_op(b.g, "Reshape") + count_op(b.g, "Transpose"), 0) << c.why;
  }
}

// A Split along H, which has as many rows as the value has channels: its parts sum to C, but they
// are not channels.
TEST(FuseChannelShuffle, KeepsASplitAlongAnotherAxisOfTheSameSize) {
  Builder b;
  const int x = b.input("x", Shape({Dim::sym("N"), Dim(8), Dim(8), Dim(3)}));
  const Shuffle s = shuffle(b, x, 0, 8, 2, 8, 3);
  b.g.outputs = b.node_n("Split", {s.y, b.constant(i64s({3, 5}))}, 2, {{"axis", attr_i(2)}});
  fuse_and_compare(b.g, {{2, 8, 8, 3}}, "split along H");
  EXPECT_EQ(shuffle_outputs(b.g), 1);
  EXPECT_EQ(count_op(b.g, "Split"), 1);
}

TEST(ChannelShuffleOp, RefusesBadAttributesAndShapes) {
  const Tensor x = random_tensor({1, 6, 2, 2}, 1);
  auto run = [&](std::map<std::string, Attribute> attrs, int outputs) {
    return run_op("ChannelShuffle", std::move(attrs), {x}, outputs, 17, {}, "com.infera");
  };
  EXPECT_TRUE(run({{"group", attr_i(3)}}, 1).is_ok());
  EXPECT_TRUE(run({{"group", attr_i(2)}, {"split", attr_ints({1, 5})}}, 2).is_ok());
  EXPECT_FALSE(run({{"group", attr_i(4)}}, 1).is_ok());                                // 4 does not divide 6
  EXPECT_FALSE(run({{"group", attr_i(0)}}, 1).is_ok());                                // no group
  EXPECT_FALSE(run({{"group", attr_i(2)}, {"split", attr_ints({2, 5})}}, 2).is_ok());  // sums to 7
  EXPECT_FALSE(run({{"group", attr_i(2)}, {"split", attr_ints({0, 6})}}, 2).is_ok());  // empty part
  EXPECT_FALSE(run({{"group", attr_i(2)}, {"split", attr_ints({3, 3})}}, 1).is_ok());  // one output for two
}

// ------------------------------------------------------------------ sessions: oneDNN, Concat in place

// ShuffleNet's stride-1 units: z_k = Concat(a, Relu(b)) where a, b are the halves of shuffle(z_{k-1}),
// starting from Concat(Relu(x), Abs(x)); `units` of them, then a last shuffle. Every op is exact, so
// the fused session (oneDNN) must give the unfused one's (reference kernels) bytes.
test::ModelBuilder shuffle_net(int64_t n, int64_t c, int64_t grp, int units) {
  test::ModelBuilder mb(13);
  mb.input("x", {n, c / 2, 6, 5});
  mb.output("out");
  mb.ints("s5", {0, grp, c / grp, 6, 5});
  mb.ints("s4", {0, c, 6, 5});
  mb.ints("lo0", {0}), mb.ints("lo1", {c / 2}), mb.ints("hi0", {c / 2}), mb.ints("hi1", {c}), mb.ints("ax", {1});
  mb.node("Relu", {"x"}, {"xa"});
  mb.node("Abs", {"x"}, {"xb"});
  test::set_int(mb.node("Concat", {"xa", "xb"}, {"z0"}), "axis", 1);
  auto shuffled = [&](const std::string& z) {
    mb.node("Reshape", {z, "s5"}, {z + "r"});
    test::set_ints(mb.node("Transpose", {z + "r"}, {z + "t"}), "perm", {0, 2, 1, 3, 4});
    mb.node("Reshape", {z + "t", "s4"}, {z + "s"});
    return z + "s";
  };
  std::string z = "z0";
  for (int k = 1; k <= units; ++k) {
    const std::string y = shuffled(z), u = "u" + std::to_string(k);
    mb.node("Slice", {y, "lo0", "lo1", "ax"}, {u + "a"});
    mb.node("Slice", {y, "hi0", "hi1", "ax"}, {u + "b"});
    mb.node("Relu", {u + "b"}, {u + "c"});
    z = "z" + std::to_string(k);
    test::set_int(mb.node("Concat", {u + "a", u + "c"}, {z}), "axis", 1);
  }
  mb.node("Relu", {shuffled(z)}, {"out"});
  return mb;
}

TEST(ChannelShuffleSession, FusedOneDnnEqualsUnfusedReferenceAndWritesIntoTheConcat) {
  for (int64_t n : {1, 3})
    for (int64_t c : {116, 48})
      for (int64_t grp : {2, 4}) {
        const std::string what = "n " + std::to_string(n) + " c " + std::to_string(c) + " g " + std::to_string(grp);
        const test::ModelBuilder mb = shuffle_net(n, c, grp, 3);
        auto fused = mb.load(true, true);
        auto plain = mb.load(false, false);
        ASSERT_TRUE(fused.is_ok()) << what << ": " << fused.message();
        ASSERT_TRUE(plain.is_ok()) << what << ": " << plain.message();
        auto rep = fused.value()->prepare({{"x", {n, c / 2, 6, 5}}});
        ASSERT_TRUE(rep.is_ok()) << what << ": " << rep.message();
        int shuffles = 0, concats_in_place = 0, others = 0;
        for (const auto& s : rep.value().step_list) {
          if (s.op == "com.infera.ChannelShuffle") {
            ++shuffles;
            EXPECT_EQ(s.backend, "dnnl") << what;
          } else if (s.op == "Concat") {
            concats_in_place += s.impl.find("in place") != std::string::npos;
          } else if (s.op != "Relu" && s.op != "Abs") {
            ++others;
          }
        }
        EXPECT_EQ(shuffles, 4) << what;
        EXPECT_EQ(others, 0) << what;  // no Reshape, Transpose, Slice, nor a copy between backends
        // At batch 1 every Concat is written by its producers: the shuffles write their first half
        // into the next unit's Concat (batch 3: the CPU Concat copies).
        EXPECT_EQ(concats_in_place, n == 1 ? 4 : 0) << what;
        const Tensor x = random_tensor({n, c / 2, 6, 5}, 23, -2, 2);
        for (int r = 0; r < 2; ++r) {  // twice: the second run reuses the plan and its buffers
          auto a = fused.value()->run({{"x", x}});
          auto b = plain.value()->run({{"x", x}});
          ASSERT_TRUE(a.is_ok() && b.is_ok()) << what;
          expect_bitwise(a.value(), b.value(), what);
        }
      }
}

}  // namespace
}  // namespace infera::test
