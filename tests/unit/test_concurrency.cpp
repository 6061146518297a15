// Concurrent runs: one session from many threads (mixed batch sizes), several sessions at once,
// outputs equal to serial runs bit for bit; caller-provided outputs; a run of a static plan
// allocates nothing (RunContext).
#include <omp.h>
#include <onnx/onnx_pb.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <random>
#include <thread>

#include "backends/backend.h"
#include "op_test_util.h"
#include "ops/infer.h"
#include "plan/plan.h"
#include "runtime/run_context.h"
#include "test_models.h"

// Counts operator new on threads that ask for it (the steady-state allocation test).
namespace {
thread_local bool g_count_allocs = false;
std::atomic<long> g_allocs{0};
}  // namespace

void* operator new(size_t n) {
  if (g_count_allocs) ++g_allocs;
  void* p = std::malloc(n ? n : 1);
  if (!p) throw std::bad_alloc();
  return p;
}
void* operator new[](size_t n) { return operator new(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
// The nothrow forms too (std::stable_sort's temporary buffer uses them): left to the runtime's
// operator new, their memory reached the free() above (ASan: alloc-dealloc-mismatch).
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  if (g_count_allocs) ++g_allocs;
  return std::malloc(n ? n : 1);
}
void* operator new[](size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace infera {
namespace {

using test::cnn_model;

std::unique_ptr<Session> load(std::vector<std::string> backends = {}, int threads = 1) {
  SessionOptions o;
  o.backends = std::move(backends);
  o.num_threads = threads;
  auto s = Session::load_from_memory(cnn_model().SerializeAsString(), "", o);
  EXPECT_TRUE(s.is_ok()) << s.message();
  return s.is_ok() ? s.take() : nullptr;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dims() == b.dims() && a.dtype() == b.dtype() && std::memcmp(a.data(), b.data(), a.nbytes()) == 0;
}

TEST(Concurrency, OneSessionEightThreadsMixedBatches) {
  auto s = load();
  ASSERT_TRUE(s);
  const std::vector<int64_t> batches = {1, 2, 3, 4};
  std::vector<Tensor> inputs, serial;
  for (int64_t b : batches) {
    inputs.push_back(test::random_tensor({b, 16, 16, 16}, 40 + static_cast<uint32_t>(b)));
    auto y = s->run({{"x", inputs.back()}});
    ASSERT_TRUE(y.is_ok()) << y.message();
    serial.push_back(y.value()[0]);
  }
  std::atomic<int> mismatches{0}, errors{0}, runs{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        const size_t k = static_cast<size_t>(t + i) % batches.size();
        auto y = s->run({{"x", inputs[k]}});
        ++runs;
        if (!y.is_ok())
          ++errors;
        else if (!same_bits(y.value()[0], serial[k]))
          ++mismatches;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(runs.load(), 200);
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(mismatches.load(), 0) << "concurrent runs must give the bits of serial runs";
  EXPECT_EQ(s->cached_plan_count(), batches.size());
}

TEST(Concurrency, FourSessionsAtOnce) {
  std::vector<std::unique_ptr<Session>> sessions;
  for (int i = 0; i < 4; ++i) sessions.push_back(load({}, 1 + i % 2));
  Tensor x = test::random_tensor({2, 16, 16, 16}, 9);
  // Each session's serial result: the bits may differ between 1 and 2 threads (oneDNN picks its
  // Winograd implementation, 2x3 or 4x3, by thread count when the perf db's winner is Winograd).
  std::vector<Tensor> want;
  for (auto& s : sessions) {
    auto y = s->run({{"x", x}});
    ASSERT_TRUE(y.is_ok()) << y.message();
    want.push_back(y.value()[0]);
  }
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&, i] {
      for (int r = 0; r < 20; ++r) {
        auto y = sessions[i]->run({{"x", x}});
        if (!y.is_ok() || !same_bits(y.value()[0], want[i])) ++bad;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
}

TEST(Concurrency, CallerProvidedOutputs) {
  auto s = load();
  ASSERT_TRUE(s);
  Tensor x = test::random_tensor({3, 16, 16, 16}, 5);
  auto want = s->run({{"x", x}});
  ASSERT_TRUE(want.is_ok());
  auto rep = s->prepare({{"x", {3, 16, 16, 16}}});
  ASSERT_TRUE(rep.is_ok());
  ASSERT_EQ(rep.value().output_dims, (std::vector<std::vector<int64_t>>{{3, 10}}));
  std::vector<float> buffer(30, -1.f);
  std::vector<Tensor> outs = {Tensor::view(DataType::kFloat32, {3, 10}, buffer.data())};
  std::vector<StepTiming> timings;
  RunOptions ro;
  ro.profile = &timings;
  ASSERT_TRUE(s->run({{"x", x}}, outs, ro).is_ok());
  EXPECT_EQ(std::memcmp(buffer.data(), want.value()[0].data(), 30 * sizeof(float)), 0);
  EXPECT_EQ(timings.size(), rep.value().steps);
  // Wrong dims or dtype: one clear error, nothing written.
  std::vector<float> small(10, 7.f);
  std::vector<Tensor> wrong = {Tensor::view(DataType::kFloat32, {1, 10}, small.data())};
  Status st = s->run({{"x", x}}, wrong);
  EXPECT_EQ(st.code(), StatusCode::kInvalidInput);
  EXPECT_NE(st.message().find("output 'y'"), std::string::npos) << st.message();
  EXPECT_EQ(small[0], 7.f);
}

TEST(Concurrency, ThreadCountIsPerSessionNotProcessWide) {
  auto s = load({}, 2);
  ASSERT_TRUE(s);
  const int before = omp_get_max_threads();
  ASSERT_TRUE(s->run({{"x", test::random_tensor({1, 16, 16, 16}, 1)}}).is_ok());
  EXPECT_EQ(omp_get_max_threads(), before) << "a run must leave the caller's OpenMP setting alone";
}

// A backend for the allocation test: elementwise kernels that allocate nothing themselves, so
// that what is counted is the executor's own work.
class LoopBackend : public Backend {
 public:
  const char* name() const override { return "loops"; }
  Device device() const override { return Device::cpu(); }
  BackendInfo info() const override { return BackendInfo{name(), "cpu", true, "", "test"}; }
  Support supports(const StepRequest& req) const override {
    const std::string& op = req.node->op_type;
    if (op != "Relu" && op != "Sigmoid" && op != "Add") return Support::no("not a loop op");
    return Support::plain(req.inputs.size(), req.outputs.size());
  }
  Result<std::unique_ptr<StepKernel>> create(const StepRequest& req) const override {
    return std::unique_ptr<StepKernel>(std::make_unique<Loop>(req.node->op_type));
  }

 private:
  struct Loop : StepKernel {
    explicit Loop(std::string op) : op(std::move(op)) {}
    Status run(ComputeContext& ctx) const override {
      const float* a = ctx.in(0).ptr<float>();
      const float* b = ctx.num_inputs() > 1 ? ctx.in(1).ptr<float>() : nullptr;
      float* y = ctx.out(0).ptr<float>();
      for (int64_t i = 0, n = ctx.out(0).numel(); i < n; ++i)
        y[i] = op == "Add" ? a[i] + b[i] : op == "Relu" ? (a[i] < 0 ? 0 : a[i]) : 1 / (1 + std::exp(-a[i]));
      return Status::ok();
    }
    std::string impl_name() const override { return "loop"; }
    std::string op;
  };
};

// The executor allocates nothing in the steady state of a static-shape plan (what GPU graph
// capture needs): counted over 10 runs of a RunContext whose kernels allocate nothing. The
// same plan on oneDNN is counted and printed (oneDNN allocates inside its own execute()).
TEST(Concurrency, SteadyStateRunAllocatesNothing) {
  for (bool dnnl : {false, true}) {
    Graph g;
    g.opset = 17;
    int x = g.add_value("x", DataType::kFloat32, Shape::of({2, 8, 6, 6}));
    g.inputs = {x};
    int prev = x;
    for (const char* op : {"Relu", "Sigmoid", "Relu"}) {
      Node n;
      n.name = op + std::to_string(g.nodes.size());
      n.op_type = op;
      n.inputs = {prev};
      prev = g.add_value(n.name + "_out");
      n.outputs = {prev};
      g.add_node(std::move(n));
    }
    Node add;
    add.name = "add";
    add.op_type = "Add";
    add.inputs = {prev, x};
    int y = g.add_value("y");
    add.outputs = {y};
    g.add_node(std::move(add));
    g.outputs = {y};
    ASSERT_TRUE(infer_graph(g).is_ok());
    PlanOptions o;
    if (dnnl)
      o.backends.push_back(find_backend("dnnl", Device::cpu()).take());
    else
      o.backends.push_back(std::make_shared<LoopBackend>());
    o.backends.push_back(find_backend("ref", Device::cpu()).take());
    auto plan = make_plan(g, {{2, 8, 6, 6}}, o);
    ASSERT_TRUE(plan.is_ok()) << plan.message();
    EXPECT_EQ(plan.value()->report.steps_per_backend.at(dnnl ? "dnnl" : "loops"), 4u);
    auto rc = RunContext::make(plan.value());
    ASSERT_TRUE(rc.is_ok()) << rc.message();
    Tensor in = test::random_tensor({2, 8, 6, 6}, 1);
    Tensor out = Tensor::make(DataType::kFloat32, {2, 8, 6, 6}).take();
    std::vector<const Tensor*> ins = {&in};
    std::vector<Tensor*> outs = {&out};
    ASSERT_TRUE(rc.value()->run(ins, outs, nullptr).is_ok());  // warm-up
    g_allocs = 0;
    g_count_allocs = true;
    Status s = Status::ok();
    for (int i = 0; i < 10 && s.is_ok(); ++i) s = rc.value()->run(ins, outs, nullptr);
    g_count_allocs = false;
    ASSERT_TRUE(s.is_ok()) << s.message();
    if (!dnnl)
      EXPECT_EQ(g_allocs.load(), 0) << "allocations in 10 steady-state runs";
    else
      std::printf("oneDNN steady state: %ld allocations in 10 runs (inside oneDNN's execute)\n", g_allocs.load());
  }
}

}  // namespace
}  // namespace infera
