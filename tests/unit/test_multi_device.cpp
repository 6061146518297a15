// MultiDeviceSession (include/infera/multi_device.h, issue 14): device lists; latency mode gives
// the bits of its row blocks run one by one on one session; throughput mode the bits of each run
// on one session, whatever device took it; a graph that mixes samples is not split (and runs whole
// in throughput mode). Two or three engines on the CPU here; on a machine with a GPU, two engines
// on gpu:0 as well (the lent machine has one GPU).
#include "infera/multi_device.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <thread>

#include "backends/backend.h"
#include "op_test_util.h"
#include "runtime/chunking.h"
#include "test_models.h"

namespace infera {
namespace {

bool have_gpu() { return find_backend("gpu", Device::gpu(0)).is_ok(); }

// The model written to a file of its own (MultiDeviceSession loads paths).
struct ModelFile {
  std::string path;
  explicit ModelFile(const onnx::ModelProto& m) {
    path = ::testing::TempDir() + "multi_device_" + std::to_string(::getpid()) + "_" +
           std::to_string(reinterpret_cast<uintptr_t>(this)) + ".onnx";
    std::ofstream(path, std::ios::binary) << m.SerializeAsString();
  }
  ~ModelFile() { std::remove(path.c_str()); }
};

SessionOptions base() {
  SessionOptions o;
  o.num_threads = 1;
  o.search = SessionOptions::SearchMode::kOff;  // every session picks the same kernels
  return o;
}

// The device sets to test: engines on the CPU, and two on gpu:0 where there is a GPU.
std::vector<std::vector<Device>> device_sets() {
  std::vector<std::vector<Device>> r = {{Device::cpu(), Device::cpu()}, {Device::cpu(), Device::cpu(), Device::cpu()}};
  if (have_gpu()) r.push_back({Device::gpu(0), Device::gpu(0)});
  return r;
}

std::string names(const std::vector<Device>& d) {
  std::string s;
  for (const Device& x : d) s += (s.empty() ? "" : ",") + x.str();
  return s;
}

TEST(MultiDevice, DeviceListsParseAndBadOnesAreNamed) {
  auto one = parse_device_list("cpu");
  ASSERT_TRUE(one.is_ok()) << one.message();
  EXPECT_EQ(one.value(), std::vector<Device>{Device::cpu()});
  auto two = parse_device_list("cpu,cpu");
  ASSERT_TRUE(two.is_ok()) << two.message();
  EXPECT_EQ(two.value().size(), 2u);
  for (const char* bad : {"", "cpu,", ",cpu", "cpu,,cpu", "tpu", "gpu:-1", "gpu:x"}) {
    auto r = parse_device_list(bad);
    EXPECT_FALSE(r.is_ok()) << bad;
    EXPECT_NE(r.message().find("device list"), std::string::npos) << r.message();
  }
  if (!have_gpu()) {
    auto g = parse_device_list("gpu:0,1");
    ASSERT_FALSE(g.is_ok());
    EXPECT_NE(g.message().find("gpu:0 does not exist (no GPU found)"), std::string::npos) << g.message();
    auto all = parse_device_list("gpu:all");
    ASSERT_FALSE(all.is_ok());
    EXPECT_EQ(all.status().code(), StatusCode::kUnsupported);
  } else {
    auto all = parse_device_list("gpu:all");
    ASSERT_TRUE(all.is_ok()) << all.message();
    ASSERT_GE(all.value().size(), 1u);
    const std::string past = "gpu:" + std::to_string(all.value().size());
    auto g = parse_device_list("gpu:0," + std::to_string(all.value().size()));
    ASSERT_FALSE(g.is_ok());
    EXPECT_NE(g.message().find(past + " does not exist"), std::string::npos) << g.message();
    auto twice = parse_device_list("gpu:0,0");
    ASSERT_TRUE(twice.is_ok()) << twice.message();
    EXPECT_EQ(twice.value(), (std::vector<Device>{Device::gpu(0), Device::gpu(0)}));
  }
  MultiDeviceOptions none;
  auto s = MultiDeviceSession::load("whatever.onnx", base(), none);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("no devices"), std::string::npos) << s.message();
}

TEST(MultiDevice, LatencyModeEqualsItsRowBlocksRunOneByOne) {
  ModelFile f(test::cnn_model());
  for (const auto& devs : device_sets()) {
    SCOPED_TRACE(names(devs));
    SessionOptions o = base();
    o.device = devs[0];
    auto single = Session::load(f.path, o);
    ASSERT_TRUE(single.is_ok()) << single.message();
    MultiDeviceOptions m;
    m.devices = devs;
    auto md = MultiDeviceSession::load(f.path, base(), m);
    ASSERT_TRUE(md.is_ok()) << md.message();
    for (int64_t n : {int64_t(37), int64_t(2), int64_t(1)}) {
      SCOPED_TRACE("batch " + std::to_string(n));
      const Tensor x = test::random_tensor({n, 16, 16, 16}, 7 + static_cast<unsigned>(n));
      md.value()->reset_stats();
      auto got = md.value()->run({{"x", x}});
      ASSERT_TRUE(got.is_ok()) << got.message();
      ASSERT_EQ(got.value()[0].dims(), (std::vector<int64_t>{n, 10}));
      // The blocks: balanced, one per device used (min(n, devices)).
      const int64_t used = std::min<int64_t>(n, static_cast<int64_t>(devs.size()));
      const std::vector<int64_t> blocks = used > 1 ? chunk_sizes(n, (n + used - 1) / used) : std::vector<int64_t>{n};
      std::vector<float> want;
      int64_t at = 0;
      for (int64_t b : blocks) {
        auto y = single.value()->run({{"x", batch_rows(x, n, at, b)}});
        ASSERT_TRUE(y.is_ok()) << y.message();
        const float* p = y.value()[0].data_as<float>();
        want.insert(want.end(), p, p + y.value()[0].numel());
        at += b;
      }
      ASSERT_EQ(want.size(), static_cast<size_t>(got.value()[0].numel()));
      EXPECT_EQ(std::memcmp(want.data(), got.value()[0].data(), got.value()[0].nbytes()), 0);
      // Every device used ran its block once.
      int64_t rows = 0;
      const auto st = md.value()->stats();
      ASSERT_EQ(st.size(), devs.size());
      for (size_t i = 0; i < st.size(); ++i) {
        EXPECT_EQ(st[i].runs, static_cast<int64_t>(i) < used ? 1 : 0) << i;
        rows += st[i].rows;
      }
      EXPECT_EQ(rows, n);
    }
  }
}

TEST(MultiDevice, ThroughputModeDealsWholeRunsAndEachEqualsOneSession) {
  ModelFile f(test::cnn_model());
  for (const auto& devs : device_sets()) {
    SCOPED_TRACE(names(devs));
    SessionOptions o = base();
    o.device = devs[0];
    auto single = Session::load(f.path, o);
    ASSERT_TRUE(single.is_ok()) << single.message();
    MultiDeviceOptions m;
    m.devices = devs;
    m.mode = MultiDeviceOptions::Mode::kThroughput;
    auto md = MultiDeviceSession::load(f.path, base(), m);
    ASSERT_TRUE(md.is_ok()) << md.message();
    constexpr int kThreads = 4, kRuns = 6;
    std::vector<Tensor> xs;
    std::vector<std::vector<float>> want;
    for (int i = 0; i < kThreads * kRuns; ++i) {
      xs.push_back(test::random_tensor({1 + i % 3, 16, 16, 16}, 100 + i));
      auto y = single.value()->run({{"x", xs.back()}});
      ASSERT_TRUE(y.is_ok()) << y.message();
      const float* p = y.value()[0].data_as<float>();
      want.emplace_back(p, p + y.value()[0].numel());
    }
    std::vector<std::vector<float>> got(xs.size());
    std::vector<std::string> errors(kThreads);
    std::vector<std::thread> ts;
    for (int t = 0; t < kThreads; ++t)
      ts.emplace_back([&, t] {
        for (int r = 0; r < kRuns; ++r) {
          const size_t i = static_cast<size_t>(t * kRuns + r);
          auto y = md.value()->run({{"x", xs[i]}});
          if (!y.is_ok()) {
            errors[t] = y.message();
            return;
          }
          const float* p = y.value()[0].data_as<float>();
          got[i].assign(p, p + y.value()[0].numel());
        }
      });
    for (std::thread& t : ts) t.join();
    for (const std::string& e : errors) EXPECT_EQ(e, "");
    for (size_t i = 0; i < xs.size(); ++i) EXPECT_EQ(got[i], want[i]) << "run " << i;
    int64_t runs = 0, rows = 0, rows_want = 0;
    for (const Tensor& x : xs) rows_want += x.dims()[0];
    for (const DeviceStats& s : md.value()->stats()) {
      EXPECT_GT(s.runs, 0) << s.device.str() << ": dealt no run";
      runs += s.runs, rows += s.rows;
    }
    EXPECT_EQ(runs, kThreads * kRuns);
    EXPECT_EQ(rows, rows_want);
  }
}

TEST(MultiDevice, AGraphThatMixesSamplesIsNotSplitButRunsWholeInThroughputMode) {
  ModelFile f(test::one_node("Softmax", 0));  // mixes the samples: no split
  const Tensor x = test::random_tensor({6, 8}, 9);
  MultiDeviceOptions m;
  m.devices = {Device::cpu(), Device::cpu()};
  auto lat = MultiDeviceSession::load(f.path, base(), m);
  ASSERT_TRUE(lat.is_ok()) << lat.message();
  auto y = lat.value()->run({{"x", x}});
  ASSERT_FALSE(y.is_ok());
  EXPECT_NE(y.message().find("cannot be split across devices"), std::string::npos) << y.message();
  EXPECT_NE(y.message().find("mixer"), std::string::npos) << y.message();
  m.mode = MultiDeviceOptions::Mode::kThroughput;
  auto thr = MultiDeviceSession::load(f.path, base(), m);
  ASSERT_TRUE(thr.is_ok()) << thr.message();
  auto single = Session::load(f.path, base());
  ASSERT_TRUE(single.is_ok());
  auto want = single.value()->run({{"x", x}});
  ASSERT_TRUE(want.is_ok());
  for (int r = 0; r < 3; ++r) {
    auto got = thr.value()->run({{"x", x}});
    ASSERT_TRUE(got.is_ok()) << got.message();
    EXPECT_EQ(std::memcmp(got.value()[0].data(), want.value()[0].data(), want.value()[0].nbytes()), 0);
  }
  // A bad input is one clear error, and the session stays usable.
  auto bad = thr.value()->run({{"x", test::random_tensor({6, 9}, 1)}});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidInput);
  EXPECT_TRUE(thr.value()->run({{"x", x}}).is_ok());
}

TEST(MultiDevice, AMissingModelNamesTheDevice) {
  MultiDeviceOptions m;
  m.devices = {Device::cpu(), Device::cpu()};
  auto s = MultiDeviceSession::load("/nonexistent/model.onnx", base(), m);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("cpu: "), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("/nonexistent/model.onnx"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace infera
