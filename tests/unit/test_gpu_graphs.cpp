// GPU sessions. Graphs with alternating I/O addresses: a run context keeps one captured graph per
// set of addresses (the stream's graph slots), so a caller that alternates buffers
// (double-buffered inputs, the chunks of a batch) replays each graph, and every run reads and
// writes its own buffers. Device constants shared by a session's plans. Skipped, visibly, without
// a GPU.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>

#include "backends/backend.h"
#include "infera/infera.h"
#include "op_test_util.h"
#include "runtime/saved_plan.h"
#include "test_models.h"

namespace infera {
namespace {

TEST(GpuGraphs, AlternatingBuffersEachGetTheirOwnResults) {
  const Status gpu = find_backend("gpu", Device::gpu(0)).status();
  if (!gpu.is_ok()) GTEST_SKIP() << "GPU case skipped: " << gpu.message();
  SessionOptions o;
  o.device = Device::gpu(0);
  o.gpu_graphs = SessionOptions::GraphMode::kOn;  // a capture failure is an error, not a silent fallback
  o.max_run_contexts = 1;                         // every run on the same context (and stream)
  o.perf_db = "none";
  auto s = Session::load_from_memory(test::cnn_model().SerializeAsString(), "", o);
  ASSERT_TRUE(s.is_ok()) << s.message();
  SessionOptions c;
  c.perf_db = "none";
  auto cpu = Session::load_from_memory(test::cnn_model().SerializeAsString(), "", c);
  ASSERT_TRUE(cpu.is_ok()) << cpu.message();
  // Five buffer pairs: more than the stream's slots, so the least recently used graph is replaced.
  const int kPairs = 5;
  std::vector<Tensor> host_x, dev_x, dev_y;
  std::vector<std::vector<float>> want;
  for (int i = 0; i < kPairs; ++i) {
    host_x.push_back(test::random_tensor({3, 16, 16, 16}, 500 + i));
    dev_x.push_back(Tensor::make_on(Device::gpu(0), DataType::kFloat32, {3, 16, 16, 16}).take());
    ASSERT_TRUE(copy_tensor(host_x[i], dev_x[i]).is_ok());
    dev_y.push_back(Tensor::make_on(Device::gpu(0), DataType::kFloat32, {3, 10}).take());
    auto y = cpu.value()->run({{"x", host_x[i]}});
    ASSERT_TRUE(y.is_ok()) << y.message();
    want.emplace_back(y.value()[0].data_as<float>(), y.value()[0].data_as<float>() + 30);
  }
  for (int round = 0; round < 4; ++round)
    for (int i : {0, 1, 0, 2, 3, 1, 4, 0}) {
      std::vector<Tensor> out = {dev_y[i]};
      ASSERT_TRUE(s.value()->run({{"x", dev_x[i]}}, out).is_ok());
      Tensor back = Tensor::make(DataType::kFloat32, {3, 10}).take();
      ASSERT_TRUE(copy_tensor(dev_y[i], back).is_ok());
      for (int k = 0; k < 30; ++k)
        ASSERT_NEAR(back.data_as<float>()[k], want[i][k], 1e-4)
            << "round " << round << " pair " << i << " element " << k;
    }
}

// The weights, biases and tables a GPU kernel converts and uploads (OHWI fp16) are made once per
// session: the plans of other batch sizes use the same device copies (PlanReport counts them), the
// outputs are those of a session that converts for each plan, and saved plans carry none of them.
TEST(GpuPackedWeights, PlansOfASessionShareTheDeviceCopies) {
  const Status gpu = find_backend("gpu", Device::gpu(0)).status();
  if (!gpu.is_ok()) GTEST_SKIP() << "GPU case skipped: " << gpu.message();
  SessionOptions o;
  o.device = Device::gpu(0);
  o.precision = Precision::kFp16;
  o.perf_db = "none";
  const std::string model = test::cnn_model().SerializeAsString();
  auto s = Session::load_from_memory(model, "", o);
  ASSERT_TRUE(s.is_ok()) << s.message();
  auto shape = [](int64_t n) { return std::map<std::string, std::vector<int64_t>>{{"x", {n, 16, 16, 16}}}; };
  auto first = s.value()->prepare(shape(1));
  ASSERT_TRUE(first.is_ok()) << first.message();
  EXPECT_EQ(first.value().weights_reused, 0u);
  EXPECT_GE(first.value().weights_converted, 4u) << "two convs' weights and biases at least";
  auto second = s.value()->prepare(shape(3));
  ASSERT_TRUE(second.is_ok()) << second.message();
  EXPECT_EQ(second.value().weights_converted, 0u) << "batch 3 converts nothing batch 1 has";
  EXPECT_EQ(second.value().weights_reused, first.value().weights_converted);
  EXPECT_EQ(second.value().weight_bytes, first.value().weight_bytes);
  // A session of one plan per batch size converts its own: the same outputs, bit for bit.
  SessionOptions alone = o;
  alone.max_cached_plans = 1;
  for (int64_t n : {3, 1}) {
    auto fresh = Session::load_from_memory(model, "", alone);
    ASSERT_TRUE(fresh.is_ok()) << fresh.message();
    const Tensor x = test::random_tensor({n, 16, 16, 16}, 70 + static_cast<int>(n));
    auto a = s.value()->run({{"x", x}});
    auto b = fresh.value()->run({{"x", x}});
    ASSERT_TRUE(a.is_ok() && b.is_ok()) << a.message() << b.message();
    ASSERT_EQ(a.value()[0].nbytes(), b.value()[0].nbytes());
    EXPECT_EQ(std::memcmp(a.value()[0].data(), b.value()[0].data(), a.value()[0].nbytes()), 0) << "batch " << n;
  }
  const std::string path = ::testing::TempDir() + "/gpu_packed.iplan";
  ASSERT_TRUE(s.value()->save_plan(path, {shape(1)}).is_ok());
  std::ifstream f(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto sp = decode_saved_plan(bytes, limits::Limits{});
  ASSERT_TRUE(sp.is_ok()) << sp.message();
  for (const PackedWeights::Entry& e : sp.value().packed) EXPECT_NE(e.key.rfind("gpu", 0), 0u) << e.key;
  std::remove(path.c_str());
}

}  // namespace
}  // namespace infera
