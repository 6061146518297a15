#include "backends/ref/ref_backend.h"

#include <cstring>

namespace infera {
namespace {

// Runs the op's reference compute(); inputs and outputs are plain host tensors.
class RefKernel : public StepKernel {
 public:
  explicit RefKernel(const OpKernel* op) : op_(op) {}
  Status run(ComputeContext& ctx) const override { return op_->compute(ctx); }
  std::string impl_name() const override { return "reference"; }

 private:
  const OpKernel* op_;
};

// A plain host copy: a value that must live twice (e.g. a graph output that is also an input),
// or a shape-only op (below); nothing is copied when the output is the input's buffer.
class CopyKernel : public StepKernel {
 public:
  explicit CopyKernel(const char* impl) : impl_(impl) {}
  Status run(ComputeContext& ctx) const override {
    const TensorRef& x = ctx.in(0);
    TensorRef& y = ctx.out(0);
    if (x.nbytes() != y.nbytes()) return ctx.error("copy: %zu bytes into %zu", x.nbytes(), y.nbytes());
    if (x.data != y.data && x.nbytes()) std::memcpy(y.data, x.data, x.nbytes());
    return Status::ok();
  }
  std::string impl_name() const override { return impl_; }

 private:
  const char* impl_;
};

// Reshape / Flatten / Squeeze / Unsqueeze: the input's bytes under another shape. The planner
// may give the output the input's buffer (Support::in_place: the input's last reader, same
// device and format); then nothing is copied.
bool shape_only(const Node& n) {
  return n.is_onnx("Reshape") || n.is_onnx("Flatten") || n.is_onnx("Squeeze") || n.is_onnx("Unsqueeze");
}

class RefBackend : public Backend {
 public:
  const char* name() const override { return "ref"; }
  Device device() const override { return Device::cpu(); }
  bool runs_dynamic_steps() const override { return true; }
  BackendInfo info() const override {
    BackendInfo b;
    b.name = name();
    b.device = "cpu";
    b.available = true;
    b.details = "the reference kernel of every op (src/ops), plain format";
    return b;
  }

  Support supports(const StepRequest& req) const override {
    if (!req.op) return Support::no("no op");
    Support s = Support::plain(req.inputs.size(), req.outputs.size());
    if (shape_only(*req.node) && req.outputs.size() == 1) s.in_place.emplace_back(0, 0);
    return s;
  }

  Result<std::unique_ptr<StepKernel>> create(const StepRequest& req) const override {
    for (size_t i = 0; i < req.inputs.size(); ++i)
      if (req.in_format(i) != Format::kPlain)
        return Status::error(StatusCode::kInternal, req.node->label() + ": the reference kernel reads plain inputs");
    if (shape_only(*req.node) && req.outputs.size() == 1 && req.alias_of(0) == 0 && req.out_format(0) == Format::kPlain)
      return std::unique_ptr<StepKernel>(std::make_unique<CopyKernel>("in place (no copy)"));
    for (size_t i = 0; i < req.outputs.size(); ++i)
      if (req.out_format(i) != Format::kPlain || req.alias_of(i) >= 0)
        return Status::error(StatusCode::kInternal, req.node->label() + ": the reference kernel writes plain outputs");
    return std::unique_ptr<StepKernel>(std::make_unique<RefKernel>(req.op));
  }

  Result<std::unique_ptr<StepKernel>> create_convert(const ConvertRequest& req) const override {
    if (!req.from_device.is_cpu() || !req.to_device.is_cpu() || req.from != Format::kPlain || req.to != Format::kPlain)
      return std::unique_ptr<StepKernel>();
    return std::unique_ptr<StepKernel>(std::make_unique<CopyKernel>("memcpy"));
  }
};

}  // namespace

std::shared_ptr<const Backend> make_ref_backend() { return std::make_shared<RefBackend>(); }

}  // namespace infera
