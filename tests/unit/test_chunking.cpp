// Batch chunking under a memory budget (SessionOptions::memory_budget_bytes, runtime/chunking.h):
// a batch that only fits in chunks gives the bits of its chunks run one by one and, within
// tolerance, the unchunked run; a budget too small for batch 1, and a graph whose samples are not
// independent, are errors that say so. Every case runs on the CPU and, where there is one, the GPU.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>

#include "backends/backend.h"
#include "infera/infera.h"
#include "op_test_util.h"
#include "runtime/chunking.h"
#include "test_models.h"

namespace infera {
namespace {

std::vector<Device> devices() {
  std::vector<Device> d = {Device::cpu()};
  if (find_backend("gpu", Device::gpu(0)).is_ok()) d.push_back(Device::gpu(0));
  return d;
}

std::unique_ptr<Session> load(const onnx::ModelProto& m, Device dev, size_t budget) {
  SessionOptions o;
  o.device = dev;
  o.num_threads = 2;
  o.memory_budget_bytes = budget;
  o.search = SessionOptions::SearchMode::kOff;  // the same kernels at every batch size: sizes are linear
  auto s = Session::load_from_memory(m.SerializeAsString(), "", o);
  EXPECT_TRUE(s.is_ok()) << s.message();
  return s.is_ok() ? s.take() : nullptr;
}

Tensor rows(const Tensor& t, int64_t at, int64_t c) {
  std::vector<int64_t> d = t.dims();
  const size_t row = t.nbytes() / static_cast<size_t>(d[0]);
  d[0] = c;
  return Tensor::view(t.dtype(), d, static_cast<char*>(const_cast<void*>(t.data())) + row * at);
}

TEST(Chunking, ChunkSizesAreBalancedAndCoverTheBatch) {
  EXPECT_EQ(chunk_sizes(10, 4), (std::vector<int64_t>{4, 4, 2}));
  EXPECT_EQ(chunk_sizes(9, 4), (std::vector<int64_t>{3, 3, 3}));
  EXPECT_EQ(chunk_sizes(8, 8), (std::vector<int64_t>{8}));
  EXPECT_EQ(chunk_sizes(7, 1), (std::vector<int64_t>(7, 1)));
  for (int64_t n = 1; n < 40; ++n)
    for (int64_t c = 1; c <= n; ++c) {
      int64_t sum = 0;
      for (int64_t x : chunk_sizes(n, c)) {
        sum += x;
        EXPECT_LE(x, c);
      }
      EXPECT_EQ(sum, n);
    }
}

TEST(Chunking, ABatchThatOnlyFitsInChunksEqualsItsChunksRunOneByOne) {
  const onnx::ModelProto m = test::cnn_model();
  const int64_t n = 37;
  const Tensor x = test::random_tensor({n, 16, 16, 16}, 91);
  for (Device dev : devices()) {
    SCOPED_TRACE(dev.str());
    auto free = load(m, dev, size_t(1) << 40);
    ASSERT_TRUE(free);
    auto whole = free->prepare({{"x", {n, 16, 16, 16}}});
    ASSERT_TRUE(whole.is_ok()) << whole.message();
    EXPECT_EQ(whole.value().chunk_batch, 0);
    ASSERT_GT(whole.value().peak_bytes, 0u);
    auto want = free->run({{"x", x}});
    ASSERT_TRUE(want.is_ok()) << want.message();

    // A third of the whole batch's bytes: fits only in chunks.
    auto s = load(m, dev, whole.value().peak_bytes / 3);
    ASSERT_TRUE(s);
    auto r = s->prepare({{"x", {n, 16, 16, 16}}});
    ASSERT_TRUE(r.is_ok()) << r.message();
    const int64_t c = r.value().chunk_batch;
    EXPECT_GT(c, 0);
    EXPECT_LT(c, n);
    EXPECT_GE(r.value().chunks, 2);
    EXPECT_LE(r.value().peak_bytes, whole.value().peak_bytes / 3);
    EXPECT_EQ(r.value().output_dims[0], (std::vector<int64_t>{n, 10}));
    auto got = s->run({{"x", x}});
    ASSERT_TRUE(got.is_ok()) << got.message();
    ASSERT_EQ(got.value()[0].dims(), (std::vector<int64_t>{n, 10}));

    // The same session on each chunk's rows: every chunk fits, so each runs whole.
    std::vector<float> one_by_one;
    int64_t at = 0;
    for (int64_t k : chunk_sizes(n, c)) {
      auto y = s->run({{"x", rows(x, at, k)}});
      ASSERT_TRUE(y.is_ok()) << y.message();
      const float* p = y.value()[0].data_as<float>();
      one_by_one.insert(one_by_one.end(), p, p + y.value()[0].numel());
      at += k;
    }
    ASSERT_EQ(one_by_one.size(), static_cast<size_t>(got.value()[0].numel()));
    EXPECT_EQ(std::memcmp(one_by_one.data(), got.value()[0].data(), got.value()[0].nbytes()), 0)
        << "chunked run differs from its chunks run one by one";
    const float* a = want.value()[0].data_as<float>();
    const float* b = got.value()[0].data_as<float>();
    for (int64_t i = 0; i < want.value()[0].numel(); ++i) ASSERT_NEAR(a[i], b[i], 1e-4) << "element " << i;

    // Into caller-provided outputs too.
    std::vector<Tensor> out = {Tensor::make(DataType::kFloat32, {n, 10}).take()};
    ASSERT_TRUE(s->run({{"x", x}}, out).is_ok());
    EXPECT_EQ(std::memcmp(out[0].data(), got.value()[0].data(), out[0].nbytes()), 0);
  }
}

// The batch runs in the fewest balanced chunks that fit: one chunk fewer would not.
TEST(Chunking, TheChunksAreTheFewestThatFit) {
  const onnx::ModelProto m = test::cnn_model();
  const int64_t n = 61;
  for (Device dev : devices()) {
    SCOPED_TRACE(dev.str());
    auto free = load(m, dev, size_t(1) << 40);
    ASSERT_TRUE(free);
    // What a chunk of b rows holds while chunks run (on a GPU two run contexts share the weights).
    auto chunk_bytes = [&](int64_t b) -> size_t {
      auto r = free->prepare({{"x", {b, 16, 16, 16}}});
      EXPECT_TRUE(r.is_ok()) << r.message();
      if (!r.is_ok()) return 0;
      if (dev.is_cpu()) return r.value().peak_bytes;
      auto w = r.value().weight_bytes_per_device.find(dev.str());
      return 2 * r.value().peak_bytes - (w == r.value().weight_bytes_per_device.end() ? 0 : w->second);
    };
    const size_t whole = chunk_bytes(n);
    ASSERT_GT(whole, 0u);
    for (int div : {2, 3, 5, 9}) {
      SCOPED_TRACE("budget whole/" + std::to_string(div));
      const size_t budget = whole / div;
      auto s = load(m, dev, budget);
      ASSERT_TRUE(s);
      auto r = s->prepare({{"x", {n, 16, 16, 16}}});
      ASSERT_TRUE(r.is_ok()) << r.message();
      const int64_t k = r.value().chunks;
      ASSERT_GE(k, 2);
      EXPECT_EQ(r.value().chunk_batch, (n + k - 1) / k);
      EXPECT_LE(chunk_bytes(r.value().chunk_batch), budget);
      if (k > 2) {
        const int64_t fewer = (n + k - 2) / (k - 1);  // the chunk of k - 1 balanced chunks
        EXPECT_GT(chunk_bytes(fewer), budget) << k - 1 << " chunks of " << fewer << " rows would fit";
      }
    }
  }
}

TEST(Chunking, ABudgetTooSmallForBatchOneNamesTheBytesNeeded) {
  for (Device dev : devices()) {
    SCOPED_TRACE(dev.str());
    auto s = load(test::cnn_model(), dev, 4096);
    ASSERT_TRUE(s);
    auto y = s->run({{"x", test::random_tensor({4, 16, 16, 16}, 5)}});
    ASSERT_FALSE(y.is_ok());
    EXPECT_EQ(y.status().code(), StatusCode::kOutOfMemory);
    EXPECT_NE(y.message().find("too small for batch 1"), std::string::npos) << y.message();
    EXPECT_NE(y.message().find("4096 bytes"), std::string::npos) << y.message();
    auto again = s->prepare({{"x", {1, 16, 16, 16}}});  // the session stays usable: the same clear error
    EXPECT_EQ(again.status().code(), StatusCode::kOutOfMemory);
  }
}

TEST(Chunking, AGraphThatMixesSamplesIsNotSplit) {
  const Tensor x = test::random_tensor({64, 8}, 3);
  {
    auto s = load(test::one_node("Softmax", 0), Device::cpu(), 1024);
    ASSERT_TRUE(s);
    auto y = s->run({{"x", x}});
    ASSERT_FALSE(y.is_ok());
    EXPECT_EQ(y.status().code(), StatusCode::kOutOfMemory);
    EXPECT_NE(y.message().find("cannot run in chunks"), std::string::npos) << y.message();
    EXPECT_NE(y.message().find("'mixer'"), std::string::npos) << y.message();
  }
  {
    // The same op along axis 1 keeps samples apart: it runs in chunks, equal to the whole run.
    auto s = load(test::one_node("Softmax", 1), Device::cpu(), 1024);
    auto free = load(test::one_node("Softmax", 1), Device::cpu(), 0);
    ASSERT_TRUE(s && free);
    auto r = s->prepare({{"x", {64, 8}}});
    ASSERT_TRUE(r.is_ok()) << r.message();
    EXPECT_GT(r.value().chunks, 1);
    auto a = s->run({{"x", x}});
    auto b = free->run({{"x", x}});
    ASSERT_TRUE(a.is_ok() && b.is_ok());
    EXPECT_EQ(std::memcmp(a.value()[0].data(), b.value()[0].data(), b.value()[0].nbytes()), 0);
  }
}

}  // namespace
}  // namespace infera
