// Concat in place (the planner's channel slices): producers whose backend writes slices write
// straight into the Concat's output and the Concat is skipped; where any input does not qualify
// (read elsewhere, a graph output, read twice) the Concat copies as usual. A test backend writes
// plain NCHW slices: element (n, c, pixel) of a slice at ((n * channels + offset + c) * P + pixel).
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <map>

#include "backends/backend.h"
#include "graph/graph.h"
#include "onnx_model_builder.h"
#include "op_test_util.h"
#include "ops/infer.h"
#include "plan/plan.h"
#include "runtime/run_context.h"

namespace infera {
namespace {

std::atomic<int> g_concat_runs{0};

class SliceBackend : public Backend {
 public:
  const char* name() const override { return "slices"; }
  Device device() const override { return Device::cpu(); }
  BackendInfo info() const override { return BackendInfo{name(), "cpu", true, "", "test"}; }
  Support supports(const StepRequest& req) const override {
    const std::string& op = req.node->op_type;
    const bool four = req.has_out(0) && req.outputs[0]->shape.rank() == 4;
    if (!four || (op != "Relu" && op != "Sigmoid" && !(op == "Concat" && req.node->attr_int("axis", 0) == 1)))
      return Support::no("not a test op");
    Support s = Support::plain(req.inputs.size(), req.outputs.size());
    s.sliced_outputs = op == "Concat" ? 0 : kPlainOnly;
    s.concat_in_place = op == "Concat";
    return s;
  }
  Result<std::unique_ptr<StepKernel>> create(const StepRequest& req) const override {
    return std::unique_ptr<StepKernel>(std::make_unique<Kernel>(req.node->op_type, req.slice_of(0)));
  }

 private:
  struct Kernel : StepKernel {
    Kernel(std::string op, ChannelSlice slice) : op(std::move(op)), slice(slice) {}
    Status run(ComputeContext& ctx) const override {
      const auto& yd = ctx.out(0).dims;
      const int64_t n = yd[0], c = yd[1], px = yd[2] * yd[3];
      float* y = ctx.out(0).ptr<float>();
      if (op == "Concat") {
        ++g_concat_runs;
        int64_t off = 0;
        for (size_t i = 0; i < ctx.num_inputs(); ++i) {
          const int64_t ci = ctx.in(i).dims[1];
          const float* x = ctx.in(i).ptr<float>();
          for (int64_t b = 0; b < n; ++b)
            for (int64_t k = 0; k < ci * px; ++k) y[(b * c + off) * px + k] = x[b * ci * px + k];
          off += ci;
        }
        return Status::ok();
      }
      const int64_t wide = slice.sliced() ? slice.channels : c, first = slice.sliced() ? slice.offset : 0;
      const float* x = ctx.in(0).ptr<float>();
      for (int64_t b = 0; b < n; ++b)
        for (int64_t k = 0; k < c * px; ++k) {
          const float v = x[b * c * px + k];
          y[(b * wide + first) * px + k] = op == "Relu" ? (v < 0 ? 0 : v) : 1 / (1 + std::exp(-v));
        }
      return Status::ok();
    }
    std::string impl_name() const override { return slice.sliced() ? "loop into a slice" : "loop"; }
    std::string op;
    ChannelSlice slice;
  };
};

// x -> Relu (a), x -> Sigmoid (b) [, x -> Relu (c)] -> Concat(inputs) -> Relu -> z; extra graph
// outputs by name.
void build(Graph& g, const std::vector<std::string>& concat_inputs, const std::vector<std::string>& outputs,
           bool concat_is_output = false) {
  g.opset = 17;
  std::map<std::string, int> v;
  v["x"] = g.add_value("x", DataType::kFloat32, Shape::of({2, 3, 4, 5}));
  g.inputs = {v["x"]};
  auto node = [&](const char* op, std::vector<std::string> in, const std::string& out) {
    Node n;
    n.name = out + "_node";
    n.op_type = op;
    for (auto& i : in) n.inputs.push_back(v.at(i));
    v[out] = g.add_value(out);
    n.outputs = {v[out]};
    if (std::string(op) == "Concat") n.attrs["axis"] = test::attr_i(1);
    g.add_node(std::move(n));
  };
  node("Relu", {"x"}, "a");
  node("Sigmoid", {"x"}, "b");
  node("Relu", {"x"}, "c");
  node("Concat", concat_inputs, "y");
  node("Relu", {"y"}, "z");
  g.outputs = {v["z"]};
  if (concat_is_output) g.outputs.push_back(v["y"]);
  for (auto& o : outputs) g.outputs.push_back(v.at(o));
}

std::vector<Tensor> run(const Graph& g, bool slices, std::string* concat_impl) {
  PlanOptions o;
  if (slices) o.backends.push_back(std::make_shared<SliceBackend>());
  o.backends.push_back(find_backend("ref", Device::cpu()).take());
  auto plan = make_plan(g, {{2, 3, 4, 5}}, o);
  EXPECT_TRUE(plan.is_ok()) << plan.message();
  if (!plan.is_ok()) return {};
  for (const auto& s : plan.value()->report.step_list)
    if (s.op == "Concat" && concat_impl) *concat_impl = s.impl;
  auto rc = RunContext::make(plan.value());
  EXPECT_TRUE(rc.is_ok()) << rc.message();
  Tensor in = test::random_tensor({2, 3, 4, 5}, 11, -2, 2);
  std::vector<Tensor> outs;
  std::vector<Tensor*> op;
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    std::vector<int64_t> d = plan.value()->report.output_dims[i];
    outs.push_back(Tensor::make(DataType::kFloat32, d).take());
  }
  for (auto& t : outs) op.push_back(&t);
  std::vector<const Tensor*> ins = {&in};
  Status s = rc.value()->run(ins, op, nullptr);
  EXPECT_TRUE(s.is_ok()) << s.message();
  return outs;
}

void expect_same(const std::vector<Tensor>& a, const std::vector<Tensor>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].numel(), b[i].numel()) << what;
    for (int64_t k = 0; k < a[i].numel(); ++k)
      ASSERT_NEAR(a[i].data_as<float>()[k], b[i].data_as<float>()[k], 1e-6)  // Sigmoid: exp differs in the last bit
          << what << ": output " << i << " element " << k;
  }
}

TEST(ConcatInPlace, ProducersWriteSlicesAndTheConcatIsSkipped) {
  for (auto inputs : {std::vector<std::string>{"a", "b"}, std::vector<std::string>{"b", "a", "c"}}) {
    Graph g;
    build(g, inputs, {});
    ASSERT_TRUE(infer_graph(g).is_ok());
    std::string impl;
    const auto ref = run(g, false, nullptr);
    g_concat_runs = 0;
    const auto got = run(g, true, &impl);
    EXPECT_EQ(g_concat_runs.load(), 0) << "the Concat ran";
    EXPECT_NE(impl.find("in place"), std::string::npos) << impl;
    expect_same(got, ref, std::to_string(inputs.size()) + " inputs");
  }
}

TEST(ConcatInPlace, CopiesWhenAnInputDoesNotQualify) {
  struct Case {
    std::vector<std::string> inputs, outputs;
    bool concat_is_output;
    const char* why;
  };
  for (const Case& c : {Case{{"a", "b"}, {"a"}, false, "an input is a graph output"},
                        Case{{"a", "a"}, {}, false, "an input is read twice"},
                        Case{{"a", "b"}, {}, true, "the Concat's output is a graph output"},
                        Case{{"x", "a"}, {}, false, "an input is the graph input"}}) {
    Graph g;
    build(g, c.inputs, c.outputs, c.concat_is_output);
    ASSERT_TRUE(infer_graph(g).is_ok());
    std::string impl;
    const auto ref = run(g, false, nullptr);
    g_concat_runs = 0;
    const auto got = run(g, true, &impl);
    EXPECT_EQ(g_concat_runs.load(), 1) << c.why;
    EXPECT_EQ(impl, "loop") << c.why;
    expect_same(got, ref, c.why);
  }
}

// A constant of dims filled with seeded values in [-0.5, 0.5).
void add_weights(test::ModelBuilder& mb, const std::string& name, std::vector<int64_t> dims, uint32_t seed) {
  Tensor t = test::random_tensor(dims, seed, -0.5f, 0.5f);
  mb.floats(name, dims, std::vector<float>(t.data_as<float>(), t.data_as<float>() + t.numel()));
}

// Two runs of each session on input x (the second reuses the plan) give the same output.
void expect_same_runs(Session& got, Session& want, const Tensor& x, const std::string& what) {
  for (int r = 0; r < 2; ++r) {
    auto a = got.run({{"x", x}});
    auto b = want.run({{"x", x}});
    ASSERT_TRUE(a.is_ok() && b.is_ok()) << what;
    ASSERT_EQ(a.value()[0].numel(), b.value()[0].numel());
    for (int64_t k = 0; k < a.value()[0].numel(); ++k)
      ASSERT_NEAR(a.value()[0].data_as<float>()[k], b.value()[0].data_as<float>()[k], 1e-4) << what << " at " << k;
  }
}

// Dense slices on the oneDNN backend: at batch 1 a channel slice of a plain or blocked (16-channel
// aligned) value is a dense tensor at a byte offset, so convs write their Concat's output unaware
// and the Concat is skipped (32 + 16 channels: nChw16c; 24 + 16: plain, as oneDNN's blocked Concat
// wants 16-aligned inputs, and a plain slice of any width is dense); at batch 2 it copies. Each
// result equals the reference backend's.
TEST(ConcatInPlace, DenseSlicesAtBatchOneOnTheHost) {
  for (int64_t n : {1, 2})
    for (int64_t cb : {32, 24}) {
      test::ModelBuilder mb(13);
      mb.input("x", {n, 16, 8, 8});
      mb.output("out");
      auto weights = [&](const std::string& name, std::vector<int64_t> dims, uint32_t seed) {
        add_weights(mb, name, std::move(dims), seed);
      };
      weights("Wa", {16, 16, 1, 1}, 1), weights("Wb", {cb, 16, 3, 3}, 2), weights("Wc", {16, 16 + cb, 1, 1}, 3);
      mb.node("Conv", {"x", "Wa"}, {"a"});
      test::set_ints(mb.node("Conv", {"x", "Wb"}, {"b0"}), "pads", {1, 1, 1, 1});
      mb.node("Relu", {"b0"}, {"b"});
      test::set_int(mb.node("Concat", {"b", "a"}, {"y"}), "axis", 1);
      mb.node("Conv", {"y", "Wc"}, {"out"});
      auto dnnl = mb.load(true, true);
      auto ref = mb.load(true, false);
      ASSERT_TRUE(dnnl.is_ok()) << dnnl.message();
      ASSERT_TRUE(ref.is_ok()) << ref.message();
      auto rep = dnnl.value()->prepare({{"x", {n, 16, 8, 8}}});
      ASSERT_TRUE(rep.is_ok()) << rep.message();
      std::string impl;
      for (const auto& s : rep.value().step_list)
        if (s.op == "Concat") impl = s.impl;
      const std::string what = "batch " + std::to_string(n) + ", " + std::to_string(cb) + " + 16 channels";
      EXPECT_EQ(impl.find("in place") != std::string::npos, n == 1) << what << ": " << impl;
      expect_same_runs(*dnnl.value(), *ref.value(), test::random_tensor({n, 16, 8, 8}, 7, -2, 2), what);
    }
}

// A dense block (DenseNet): layer k reads cat(x0, y1 .. y(k-1)), the block's output is cat(x0, y1 ..
// yK). At batch 1 on the host every layer's Concat is a channel prefix of the last one: all are
// skipped, each y written once into the block's buffer. With a reader that runs in place on a
// prefix (a conv whose residual is cat(x0, y1), summed into that buffer: it would write into the
// block's buffer) they copy. Each result equals the reference backend's; at batch 2 they copy.
TEST(ConcatInPlace, DenseBlockPrefixConcatsShareTheLastOnesBuffer) {
  for (int64_t n : {1, 2})
    for (bool residual : {false, true}) {
      test::ModelBuilder mb(13);
      mb.input("x", {n, 16, 8, 8});
      mb.output("out");
      auto weights = [&](const std::string& name, std::vector<int64_t> dims, uint32_t seed) {
        add_weights(mb, name, std::move(dims), seed);
      };
      weights("W0", {16, 16, 1, 1}, 1), weights("W1", {16, 16, 3, 3}, 2), weights("W2", {16, 32, 3, 3}, 3);
      weights("W3", {16, 48, 1, 1}, 4), weights("Wz", {32, 16, 1, 1}, 5);
      mb.node("Conv", {"x", "W0"}, {"x0"});
      test::set_int(mb.node("Concat", {"x0"}, {"c1"}), "axis", 1);
      test::set_ints(mb.node("Conv", {"c1", "W1"}, {"y1"}), "pads", {1, 1, 1, 1});
      test::set_int(mb.node("Concat", {"x0", "y1"}, {"c2"}), "axis", 1);
      if (residual) {  // Conv(x) + c2: a FusedConv whose residual c2 is read last there: in place
        mb.node("Conv", {"x", "Wz"}, {"z0"});
        mb.node("Add", {"z0", "c2"}, {"z2"});
      }
      test::set_ints(mb.node("Conv", {residual ? "z2" : "c2", "W2"}, {"y2"}), "pads", {1, 1, 1, 1});
      test::set_int(mb.node("Concat", {"x0", "y1", "y2"}, {"c3"}), "axis", 1);
      mb.node("Conv", {"c3", "W3"}, {"out"});
      auto dnnl = mb.load(true, true);
      auto ref = mb.load(true, false);
      ASSERT_TRUE(dnnl.is_ok()) << dnnl.message();
      ASSERT_TRUE(ref.is_ok()) << ref.message();
      auto rep = dnnl.value()->prepare({{"x", {n, 16, 8, 8}}});
      ASSERT_TRUE(rep.is_ok()) << rep.message();
      std::string what = "batch " + std::to_string(n) + (residual ? ", cat(x0, y1) summed into in place" : "");
      int skipped = 0;
      for (const auto& s : rep.value().step_list)
        skipped += s.op == "Concat" && s.impl.find("in place") != std::string::npos;
      // Batch 1 without an in-place reader: all three skipped; otherwise none (x0 is read by a
      // Concat that must copy, so the last one cannot take its inputs as slices either).
      EXPECT_EQ(skipped, n == 1 && !residual ? 3 : 0) << what;
      expect_same_runs(*dnnl.value(), *ref.value(), test::random_tensor({n, 16, 8, 8}, 7, -2, 2), what);
    }
}

}  // namespace
}  // namespace infera
