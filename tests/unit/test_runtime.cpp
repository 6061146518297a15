// Runtime: memory planner invariants, sessions on in-memory models (dynamic batch, plan
// cache, determinism, input validation), and importer refusals (external data, structure).
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <random>
#include <thread>

#include "frontend/onnx/import.h"
#include "op_test_util.h"
#include "plan/plan.h"

namespace infera {
namespace {

TEST(PlanMemory, LiveBuffersNeverOverlap) {
  std::mt19937 rng(42);
  for (int trial = 0; trial < 50; ++trial) {
    const int n = 1 + rng() % 40;
    std::vector<size_t> size(n);
    std::vector<int> first(n), last(n);
    for (int i = 0; i < n; ++i) {
      size[i] = rng() % 5000;
      first[i] = rng() % 30;
      last[i] = first[i] + rng() % 10;
    }
    std::vector<int64_t> off;
    size_t arena = plan_memory(size, first, last, off);
    size_t naive = 0;
    for (int i = 0; i < n; ++i) {
      naive += (size[i] + 63) / 64 * 64;
      if (size[i] == 0) continue;
      ASSERT_GE(off[i], 0);
      EXPECT_EQ(off[i] % 64, 0);
      EXPECT_LE(off[i] + size[i], arena);
      for (int j = 0; j < i; ++j) {
        if (size[j] == 0 || first[i] > last[j] || first[j] > last[i]) continue;
        bool disjoint =
            off[i] + static_cast<int64_t>(size[i]) <= off[j] || off[j] + static_cast<int64_t>(size[j]) <= off[i];
        EXPECT_TRUE(disjoint) << "buffers " << i << " and " << j << " overlap while both live";
      }
    }
    EXPECT_LE(arena, naive);
  }
}

TEST(PlanMemory, SequentialChainReusesMemory) {
  // a -> b -> c -> d: each value dies after its consumer, so two buffers suffice.
  std::vector<size_t> size = {1024, 1024, 1024, 1024};
  std::vector<int> first = {0, 1, 2, 3}, last = {1, 2, 3, 4};
  std::vector<int64_t> off;
  EXPECT_EQ(plan_memory(size, first, last, off), 2048u);
}

// ---- a small model built in memory: Conv(3->4, 3x3, pad 1) -> Relu -> Add(x2) with batch "N"
void add_dim(onnx::TensorShapeProto* s, int64_t v, const char* sym = nullptr) {
  auto* d = s->add_dim();
  if (sym)
    d->set_dim_param(sym);
  else
    d->set_dim_value(v);
}

onnx::ModelProto small_model() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("small");
  auto* in = g->add_input();
  in->set_name("x");
  in->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  auto* s = in->mutable_type()->mutable_tensor_type()->mutable_shape();
  add_dim(s, 0, "N");
  add_dim(s, 3);
  add_dim(s, 8);
  add_dim(s, 8);
  auto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : {4, 3, 3, 3}) w->add_dims(d);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  for (int i = 0; i < 4 * 27; ++i) w->add_float_data(u(rng));
  auto* conv = g->add_node();
  conv->set_op_type("Conv");
  conv->set_name("conv");
  conv->add_input("x");
  conv->add_input("w");
  conv->add_output("c");
  auto* pads = conv->add_attribute();
  pads->set_name("pads");
  pads->set_type(onnx::AttributeProto::INTS);
  for (int i = 0; i < 4; ++i) pads->add_ints(1);
  auto* relu = g->add_node();
  relu->set_op_type("Relu");
  relu->set_name("relu");
  relu->add_input("c");
  relu->add_output("r");
  auto* add = g->add_node();
  add->set_op_type("Add");
  add->set_name("add");
  add->add_input("r");
  add->add_input("r");
  add->add_output("y");
  g->add_output()->set_name("y");
  g->mutable_output(0)->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  return m;
}

std::unique_ptr<Session> load(const onnx::ModelProto& m, bool dnnl = true) {
  SessionOptions o;
  if (!dnnl) o.backends = {"ref"};
  o.num_threads = 2;
  auto s = Session::load_from_memory(m.SerializeAsString(), "", o);
  EXPECT_TRUE(s.is_ok()) << s.message();
  return s.is_ok() ? s.take() : nullptr;
}

TEST(Session, DynamicBatchMatchesReferenceAndIsDeterministic) {
  auto fast = load(small_model(), true);
  auto ref = load(small_model(), false);
  ASSERT_TRUE(fast && ref);
  EXPECT_EQ(fast->inputs()[0].dims[0].symbol, "N");
  for (int64_t batch : {1, 3, 1}) {
    Tensor x = test::random_tensor({batch, 3, 8, 8}, 7 + batch);
    auto a = fast->run({{"x", x}});
    auto b = ref->run({{"x", x}});
    auto a2 = fast->run({{"x", x}});
    ASSERT_TRUE(a.is_ok()) << a.message();
    ASSERT_TRUE(b.is_ok()) << b.message();
    ASSERT_TRUE(a2.is_ok());
    ASSERT_EQ(a.value()[0].dims(), (std::vector<int64_t>{batch, 4, 8, 8}));
    EXPECT_LT(test::normalized_error(a.value()[0], b.value()[0]), 1e-5);
    EXPECT_EQ(0, memcmp(a.value()[0].data(), a2.value()[0].data(), a.value()[0].nbytes())) << "not bit-identical";
    // Independent check of one output element: relu(conv)*2 at (n=0, c=0, y=0, x=0).
    const float* xp = x.data_as<float>();
    auto ws = small_model().graph().initializer(0);
    double acc = 0;
    for (int ci = 0; ci < 3; ++ci)
      for (int ky = 0; ky < 3; ++ky)
        for (int kx = 0; kx < 3; ++kx) {
          int iy = ky - 1, ix = kx - 1;
          if (iy < 0 || ix < 0) continue;
          acc += double(xp[ci * 64 + iy * 8 + ix]) * ws.float_data(ci * 9 + ky * 3 + kx);
        }
    EXPECT_NEAR(a.value()[0].data_as<float>()[0], 2 * std::max(0.0, acc), 1e-4);
  }
}

TEST(Session, PlanIsCachedPerShape) {
  auto s = load(small_model());
  ASSERT_TRUE(s);
  auto r1 = s->prepare({{"x", {2, 3, 8, 8}}});
  auto r2 = s->prepare({{"x", {2, 3, 8, 8}}});
  ASSERT_TRUE(r1.is_ok() && r2.is_ok());
  EXPECT_EQ(r1.value().build_ms, r2.value().build_ms);  // same plan object, not rebuilt
  EXPECT_GT(r1.value().arena_bytes, 0u);
  EXPECT_LE(r1.value().arena_bytes, r1.value().naive_bytes);
}

TEST(Session, PlanCacheIsBoundedAndRebuildsEvictedPlans) {
  SessionOptions o;
  o.max_cached_plans = 2;
  auto s = Session::load_from_memory(small_model().SerializeAsString(), "", o);
  ASSERT_TRUE(s.is_ok()) << s.message();
  Tensor x1 = test::random_tensor({1, 3, 8, 8}, 3);
  auto first = s.value()->run({{"x", x1}});
  ASSERT_TRUE(first.is_ok());
  for (int64_t b : {2, 3, 4}) {
    ASSERT_TRUE(s.value()->run({{"x", test::random_tensor({b, 3, 8, 8}, 4)}}).is_ok());
    EXPECT_LE(s.value()->cached_plan_count(), 2u);
  }
  EXPECT_EQ(s.value()->cached_plan_count(), 2u);
  auto again = s.value()->run({{"x", x1}});  // batch 1's plan was evicted: made again, same answer
  ASSERT_TRUE(again.is_ok());
  EXPECT_EQ(0, memcmp(first.value()[0].data(), again.value()[0].data(), first.value()[0].nbytes()));
}

TEST(Session, RunFromAnotherThreadGivesTheSameBits) {
  auto s = load(small_model());
  ASSERT_TRUE(s);
  Tensor x = test::random_tensor({2, 3, 8, 8}, 11);
  auto here = s->run({{"x", x}});
  ASSERT_TRUE(here.is_ok());
  Result<std::vector<Tensor>> there = Status::error("not run");
  std::thread t([&] { there = s->run({{"x", x}}); });
  t.join();
  ASSERT_TRUE(there.is_ok()) << there.message();
  EXPECT_EQ(0, memcmp(here.value()[0].data(), there.value()[0].data(), here.value()[0].nbytes()));
}

TEST(Session, ScalarInputRefusesAMatrix) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  auto* in = g->add_input();
  in->set_name("s");
  in->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  in->mutable_type()->mutable_tensor_type()->mutable_shape();  // rank 0, declared
  auto* add = g->add_node();
  add->set_op_type("Add");
  add->add_input("s");
  add->add_input("s");
  add->add_output("y");
  g->add_output()->set_name("y");
  auto s = load(m);
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->inputs()[0].rank_known);
  EXPECT_TRUE(s->run({{"s", Tensor::make(DataType::kFloat32, {}).take()}}).is_ok());
  auto r = s->run({{"s", test::random_tensor({2, 2}, 1)}});
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.message().find("expected rank 0, found rank 2"), std::string::npos) << r.message();
}

TEST(Session, InputValidation) {
  auto s = load(small_model());
  ASSERT_TRUE(s);
  auto wrong_dtype = Tensor::make(DataType::kInt32, {1, 3, 8, 8}).take();
  auto r = s->run({{"x", wrong_dtype}});
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.message().find("expected dtype float32, found int32"), std::string::npos) << r.message();
  r = s->run({{"x", test::random_tensor({1, 3, 8}, 1)}});
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.message().find("expected rank 4"), std::string::npos) << r.message();
  r = s->run({{"x", test::random_tensor({1, 3, 9, 8}, 1)}});
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.message().find("dim 2 must be 8, found 9"), std::string::npos) << r.message();
  r = s->run({{"x", Tensor::make(DataType::kFloat32, {}).take()}});  // a scalar for a rank-4 input
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.message().find("expected rank 4, found rank 0"), std::string::npos) << r.message();
  r = s->run({{"y", test::random_tensor({1, 3, 8, 8}, 1)}});
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.message().find("unknown input 'y'"), std::string::npos) << r.message();
  r = s->run({});
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.message().find("missing input 'x'"), std::string::npos) << r.message();
}

// ---- importer refusals
std::string load_error(const onnx::ModelProto& m, const std::string& dir = "") {
  auto g = import_onnx_bytes(m.SerializeAsString(), dir, "m.onnx");
  if (!g.is_ok()) return g.message();
  auto s = Session::load_from_memory(m.SerializeAsString(), dir);
  return s.is_ok() ? "" : s.message();
}

TEST(Import, RefusesStructuralErrors) {
  onnx::ModelProto m = small_model();
  m.mutable_opset_import(0)->set_version(99);
  EXPECT_NE(load_error(m).find("opset 99 is not supported"), std::string::npos);

  m = small_model();
  m.mutable_graph()->mutable_node(0)->set_input(0, "nowhere");
  EXPECT_NE(load_error(m).find("'nowhere'"), std::string::npos);

  m = small_model();  // cycle: conv reads y, which add produces from conv's output
  m.mutable_graph()->mutable_node(0)->set_input(0, "y");
  EXPECT_NE(load_error(m).find("cycle"), std::string::npos) << load_error(m);

  m = small_model();
  m.mutable_graph()->mutable_node(1)->set_op_type("NoSuchOp");
  EXPECT_NE(load_error(m).find("unsupported operator 'NoSuchOp'"), std::string::npos);

  m = small_model();
  m.mutable_graph()->mutable_initializer(0)->add_float_data(1.f);  // one value too many
  EXPECT_NE(load_error(m).find("initializer 'w'"), std::string::npos);

  m = small_model();
  m.mutable_graph()->mutable_node(1)->set_output(0, "c");  // relu writes conv's output again
  EXPECT_NE(load_error(m).find("produced twice"), std::string::npos) << load_error(m);

  // Found by fuzzing: a node whose first input is absent ("" or none at all) reached the kernels'
  // shape inference, which dereferenced it (Resize, Pad, Slice, Shape, Transpose, ...).
  for (const char* op : {"Resize", "Pad", "Slice", "Shape", "Transpose", "Flatten", "ConstantOfShape"}) {
    m = small_model();
    auto* n = m.mutable_graph()->mutable_node(1);
    n->set_op_type(op);
    n->set_input(0, "");
    EXPECT_NE(load_error(m).find("(" + std::string(op) + "): input 0 is required but its name is empty"),
              std::string::npos)
        << load_error(m);
    n->clear_input();
    EXPECT_NE(load_error(m).find("input 0 is required but the node has no inputs"), std::string::npos) << load_error(m);
  }

  // Found by fuzzing: Reshape multiplied the target dims without an overflow check (UB).
  m = small_model();
  auto* shp = m.mutable_graph()->add_initializer();
  shp->set_name("shp");
  shp->set_data_type(onnx::TensorProto::INT64);
  shp->add_dims(3);
  for (int64_t d : {int64_t(4), int64_t(1) << 62, int64_t(4)}) shp->add_int64_data(d);
  m.mutable_graph()->mutable_node(1)->set_op_type("Reshape");
  m.mutable_graph()->mutable_node(1)->add_input("shp");
  EXPECT_NE(load_error(m).find("(Reshape): input 'shape' [4,4611686018427387904,4] asks for more than 2^63"),
            std::string::npos)
      << load_error(m);

  EXPECT_FALSE(import_onnx_bytes("garbage\x01\x02", "", "g.onnx").is_ok());
  std::string good = small_model().SerializeAsString();
  EXPECT_FALSE(import_onnx_bytes(good.substr(0, good.size() / 2), "", "t.onnx").is_ok());
}

class ExternalData : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/infera_ext_XXXXXX";
    dir_ = mkdtemp(tmpl);
    mkdir((dir_ + "/model").c_str(), 0755);
    std::ofstream(dir_ + "/model/w.bin", std::ios::binary).write(std::string(4 * 108, '\0').data(), 4 * 108);
    std::ofstream(dir_ + "/outside.bin", std::ios::binary).write(std::string(4 * 108, '\0').data(), 4 * 108);
  }
  void TearDown() override { (void)!system(("rm -rf " + dir_).c_str()); }

  std::string error_with(const std::string& location, const std::string& offset = "", const std::string& length = "") {
    onnx::ModelProto m = small_model();
    auto* w = m.mutable_graph()->mutable_initializer(0);
    w->clear_float_data();
    w->set_data_location(onnx::TensorProto::EXTERNAL);
    auto* kv = w->add_external_data();
    kv->set_key("location");
    kv->set_value(location);
    if (!offset.empty()) {
      kv = w->add_external_data();
      kv->set_key("offset");
      kv->set_value(offset);
    }
    if (!length.empty()) {
      kv = w->add_external_data();
      kv->set_key("length");
      kv->set_value(length);
    }
    auto g = import_onnx_bytes(m.SerializeAsString(), dir_ + "/model", "m.onnx");
    return g.is_ok() ? "" : g.message();
  }
  std::string dir_;
};

TEST_F(ExternalData, LoadsAValidFile) { EXPECT_EQ(error_with("w.bin"), ""); }

TEST_F(ExternalData, RefusesHostilePaths) {
  EXPECT_NE(error_with("../outside.bin").find("leaves the model's folder"), std::string::npos);
  EXPECT_NE(error_with(dir_ + "/outside.bin").find("must be relative"), std::string::npos);
  ASSERT_EQ(symlink((dir_ + "/outside.bin").c_str(), (dir_ + "/model/link.bin").c_str()), 0);
  EXPECT_NE(error_with("link.bin").find("symbolic link"), std::string::npos);
  ASSERT_EQ(link((dir_ + "/outside.bin").c_str(), (dir_ + "/model/hard.bin").c_str()), 0);
  EXPECT_NE(error_with("hard.bin").find("hard link"), std::string::npos);
  EXPECT_NE(error_with("missing.bin").find("not found"), std::string::npos);
  EXPECT_NE(error_with("w.bin", "400").find("beyond the end"), std::string::npos);
  EXPECT_NE(error_with("w.bin", "0", "8").find("does not match"), std::string::npos);
  EXPECT_NE(error_with("w.bin", "-5").find("not a valid size"), std::string::npos);
}

}  // namespace
}  // namespace infera
