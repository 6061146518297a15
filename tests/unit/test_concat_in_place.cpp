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

}  // namespace
}  // namespace infera
