// GPU graphs with alternating I/O addresses: a run context keeps one captured graph per set of
// addresses (the stream's graph slots), so a caller that alternates buffers (double-buffered
// inputs, the chunks of a batch) replays each graph, and every run reads and writes its own
// buffers. Skipped, visibly, without a GPU.
#include <gtest/gtest.h>

#include "backends/backend.h"
#include "infera/infera.h"
#include "op_test_util.h"
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

}  // namespace
}  // namespace infera
