// The session's arena pool (SessionOptions::arena_extend): sizes by policy, reuse of idle blocks,
// the bound on idle memory, and sessions whose plans change batch size reusing their blocks.
#include <gtest/gtest.h>

#include "backends/backend.h"
#include "op_test_util.h"
#include "ops/infer.h"
#include "plan/plan.h"
#include "runtime/arena_pool.h"
#include "runtime/run_context.h"

namespace infera {
namespace {

using Extend = SessionOptions::ArenaExtend;

const Backend* host() {
  static auto b = find_backend("ref", Device::cpu()).take();
  return b.get();
}

TEST(ArenaPool, BlockSizesFollowThePolicy) {
  ArenaPool pow2(Extend::kNextPowerOfTwo), exact(Extend::kSameAsRequested);
  EXPECT_EQ(pow2.block_size(1000), 1024u);
  EXPECT_EQ(pow2.block_size(1024), 1024u);
  EXPECT_EQ(pow2.block_size(1025), 2048u);
  EXPECT_EQ(pow2.block_size(SIZE_MAX - 5), SIZE_MAX - 5);  // no power of two above: exact
  EXPECT_EQ(exact.block_size(1000), 1000u);
}

TEST(ArenaPool, IdleBlocksAreReusedByTheNextRequestThatFits) {
  for (Extend e : {Extend::kNextPowerOfTwo, Extend::kSameAsRequested}) {
    ArenaPool pool(e);
    auto a = pool.take(host(), false, 1000);
    ASSERT_TRUE(a.is_ok());
    EXPECT_GE(a.value().bytes, 1000u);
    void* p = a.value().data;
    pool.give(a.value());
    EXPECT_EQ(pool.stats().idle_bytes, a.value().bytes);
    auto b = pool.take(host(), false, 900);  // fits in the idle block
    ASSERT_TRUE(b.is_ok());
    EXPECT_EQ(b.value().data, p);
    EXPECT_EQ(pool.stats().reuses, 1u);
    auto c = pool.take(host(), false, 3000);  // does not: a new block
    ASSERT_TRUE(c.is_ok());
    EXPECT_NE(c.value().data, p);
    EXPECT_EQ(pool.stats().allocations, 2u);
    pool.give(b.value());
    pool.give(c.value());
    // A small request does not take a block far larger than it needs.
    auto d = pool.take(host(), false, 10);
    ASSERT_TRUE(d.is_ok());
    EXPECT_NE(d.value().data, c.value().data);
    pool.give(d.value());
    // Idle memory stays within the largest block taken.
    EXPECT_LE(pool.stats().idle_bytes, c.value().bytes);
  }
}

// Run contexts of plans of nearby batch sizes, made one after the other (a plan evicted, the
// next made): with power-of-two blocks the next reuses the last one's arena; exact blocks are
// reused only by a plan that needs no more.
TEST(ArenaPool, RunContextsOfAnotherBatchSizeReuseTheBlocks) {
  Graph g;
  g.opset = 17;
  int prev = g.add_value("x", DataType::kFloat32, Shape({Dim::sym("N"), Dim(8), Dim(6), Dim(6)}));
  g.inputs = {prev};
  for (const char* op : {"Relu", "Sigmoid", "Relu"}) {
    Node n;
    n.name = op + std::to_string(g.nodes.size());
    n.op_type = op;
    n.inputs = {prev};
    prev = g.add_value(n.name + "_out");
    n.outputs = {prev};
    g.add_node(std::move(n));
  }
  g.outputs = {prev};
  ASSERT_TRUE(infer_graph(g).is_ok());
  ASSERT_TRUE(attach_ops(g).is_ok());
  PlanOptions o;
  o.backends.push_back(find_backend("ref", Device::cpu()).take());
  for (Extend e : {Extend::kNextPowerOfTwo, Extend::kSameAsRequested}) {
    auto pool = std::make_shared<ArenaPool>(e);
    size_t reuses = 0;
    for (int64_t n : {6, 7, 5, 7}) {
      auto plan = make_plan(g, {{n, 8, 6, 6}}, o);
      ASSERT_TRUE(plan.is_ok()) << plan.message();
      ASSERT_GT(plan.value()->report.arena_bytes, 0u);
      auto rc = RunContext::make(plan.value(), pool);
      ASSERT_TRUE(rc.is_ok()) << rc.message();
      Tensor in = test::random_tensor({n, 8, 6, 6}, static_cast<uint32_t>(n));
      Tensor out = Tensor::make(DataType::kFloat32, {n, 8, 6, 6}).take();
      std::vector<const Tensor*> ins = {&in};
      std::vector<Tensor*> outs = {&out};
      ASSERT_TRUE(rc.value()->run(ins, outs, nullptr).is_ok());
      EXPECT_GE(pool->stats().reuses, reuses);
      reuses = pool->stats().reuses;
    }
    // 6 -> 7 -> 5 -> 7: rounded up, the first block (6's) holds every later plan; exact, 7 needs
    // a second block, and 5 and the second 7 reuse it (6's, idle beyond the largest, was freed).
    const bool pow2 = e == Extend::kNextPowerOfTwo;
    EXPECT_EQ(pool->stats().allocations, pow2 ? 1u : 2u) << (pow2 ? "pow2" : "exact");
    EXPECT_EQ(pool->stats().reuses, pow2 ? 3u : 2u) << (pow2 ? "pow2" : "exact");
  }
}

}  // namespace
}  // namespace infera
