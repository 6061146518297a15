// An operator: a factory parses the node's attributes once (at import, or where a pass makes the
// node) into a typed op object, kept on the node (Node::op). Its infer() computes output
// dtypes/shapes and its compute() is the reference kernel; backends read its typed attributes
// (ConvOp::attrs(), ...). Adding an op: one file in src/ops/ (attrs struct + infer + compute),
// registered in its family's register_*() function. See src/ops/registry.cpp for the families.
#pragma once

#include <cstdarg>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "infera/infera.h"

namespace infera {

// A non-owning view of a dense row-major tensor, as kernels see it.
struct TensorRef {
  DataType dtype = DataType::kUndefined;
  std::vector<int64_t> dims;
  void* data = nullptr;

  int rank() const { return static_cast<int>(dims.size()); }
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return n;
  }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype); }
  template <class T>
  T* ptr() const {
    return static_cast<T*>(data);
  }
  static TensorRef of(const Tensor& t) { return TensorRef{t.dtype(), t.dims(), const_cast<void*>(t.data())}; }
};

// What is known about a value during inference: dtype, (symbolic) shape and, when the
// value is a constant or was computed at plan time, its contents.
struct ValueInfo {
  DataType dtype = DataType::kUndefined;
  Shape shape;
  std::shared_ptr<const Tensor> value;
};

// printf-style message prefixed with the node label: "node 'c1' (Conv): ..."
std::string node_message(const Node& n, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

class InferContext {
 public:
  InferContext(const Node& node, int64_t opset, std::vector<const ValueInfo*> inputs)
      : node(node), opset(opset), inputs_(std::move(inputs)), outputs_(node.outputs.size()) {}

  const Node& node;
  const int64_t opset;

  size_t num_inputs() const { return inputs_.size(); }
  size_t num_outputs() const { return outputs_.size(); }
  bool has_input(size_t i) const { return i < inputs_.size() && inputs_[i] != nullptr; }
  const ValueInfo& in(size_t i) const { return *inputs_[i]; }
  // The constant contents of input i, or nullptr when not known before running.
  const Tensor* value(size_t i) const { return has_input(i) ? inputs_[i]->value.get() : nullptr; }
  bool has_output(size_t i) const { return i < node.outputs.size() && node.outputs[i] >= 0; }
  void set_output(size_t i, DataType dtype, Shape shape) {
    if (i < outputs_.size()) {
      outputs_[i].dtype = dtype;
      outputs_[i].shape = std::move(shape);
    }
  }
  std::vector<ValueInfo>& outputs() { return outputs_; }

  Status error(const char* fmt, ...) const __attribute__((format(printf, 2, 3)));

 private:
  std::vector<const ValueInfo*> inputs_;
  std::vector<ValueInfo> outputs_;
};

// What a run hands a step besides its tensors: scratch memory planned for it, per-run-context
// state of its kernel (backends/backend.h), and the device stream. All null for reference kernels.
struct RunResources {
  void* scratch = nullptr;  // 64-byte aligned, at least the kernel's scratch_bytes()
  size_t scratch_bytes = 0;
  void* state = nullptr;   // the kernel's KernelState for this run context
  void* stream = nullptr;  // backend stream (a gpuStream_t on GPUs)
  // Magnitude bounds known in this run (null: none kept): bounds[in_values[i]] for input slot i and
  // bounds[out_values[o]] for output slot o (value id -1: absent). A bound B says every element of
  // the value is finite with |x| <= B; +Inf (the start of every run) says nothing. A kernel that
  // proves one for an output may set it (the oneDNN convs' NaN guard, dnnl_conv.cpp); the executor
  // carries it through inserted conversions.
  float* bounds = nullptr;
  const int* in_values = nullptr;
  const int* out_values = nullptr;
  float in_bound(size_t i) const { return bounds && in_values[i] >= 0 ? bounds[in_values[i]] : kNoBound; }
  void set_out_bound(size_t o, float b) const {
    if (bounds && out_values[o] >= 0) bounds[out_values[o]] = b;
  }
  static constexpr float kNoBound = std::numeric_limits<float>::infinity();
};

// Views of a step's inputs and outputs; holds pointers only (no allocation per step): the
// pointer arrays must outlive the context.
class ComputeContext {
 public:
  ComputeContext(const Node& node, const TensorRef* const* inputs, size_t num_inputs, TensorRef* const* outputs,
                 size_t num_outputs, int num_threads, RunResources res = {})
      : node(node),
        num_threads(num_threads),
        res(res),
        inputs_(inputs),
        num_inputs_(num_inputs),
        outputs_(outputs),
        num_outputs_(num_outputs) {}
  ComputeContext(const Node& node, const std::vector<const TensorRef*>& inputs, const std::vector<TensorRef*>& outputs,
                 int num_threads)
      : ComputeContext(node, inputs.data(), inputs.size(), outputs.data(), outputs.size(), num_threads) {}
  // The context keeps pointers into the vectors: temporaries would dangle.
  ComputeContext(const Node&, std::vector<const TensorRef*>&&, const std::vector<TensorRef*>&, int) = delete;
  ComputeContext(const Node&, const std::vector<const TensorRef*>&, std::vector<TensorRef*>&&, int) = delete;
  ComputeContext(const Node&, std::vector<const TensorRef*>&&, std::vector<TensorRef*>&&, int) = delete;

  const Node& node;
  const int num_threads;
  const RunResources res;

  size_t num_inputs() const { return num_inputs_; }
  size_t num_outputs() const { return num_outputs_; }
  bool has_input(size_t i) const { return i < num_inputs_ && inputs_[i] != nullptr; }
  const TensorRef& in(size_t i) const { return *inputs_[i]; }
  bool has_output(size_t i) const { return i < num_outputs_ && outputs_[i] != nullptr; }
  TensorRef& out(size_t i) const { return *outputs_[i]; }

  Status error(const char* fmt, ...) const __attribute__((format(printf, 2, 3)));

 private:
  const TensorRef* const* inputs_;
  size_t num_inputs_;
  TensorRef* const* outputs_;
  size_t num_outputs_;
};

class OpKernel {
 public:
  virtual ~OpKernel() = default;
  // Checks input dtypes/ranks/dims against the op's rules and sets every present output.
  // Dims may be symbolic or unknown; values may be absent: infer what can be inferred,
  // and refuse only what is certainly wrong. Called at load and again per plan with
  // concrete input shapes, and at run time (with all values) for data-dependent shapes.
  virtual Status infer(InferContext& ctx) const = 0;
  // The reference kernel. Outputs are allocated with the shapes infer() gave.
  virtual Status compute(ComputeContext& ctx) const = 0;
  // False when compute() reads only the dims of input i, never its data (Shape, Size).
  virtual bool needs_data(size_t /*input*/) const { return true; }
};

// Parses and validates the node's attributes for this opset; refuses bad ones with a message.
using OpFactory = std::function<Result<std::unique_ptr<OpKernel>>(const Node& node, int64_t opset)>;

class OpRegistry {
 public:
  static OpRegistry& get();
  void add(const std::string& op_type, OpFactory factory, const std::string& domain = "");
  const OpFactory* find(const std::string& op_type, const std::string& domain) const;
  std::vector<std::string> names() const;  // "Conv", "com.infera.FusedConv", ...

 private:
  OpRegistry();
  std::map<std::string, OpFactory> ops_;
};

// Instantiates the kernel for a node (unknown op or domain -> error naming the node).
Result<std::unique_ptr<OpKernel>> make_kernel(const Node& node, int64_t opset);

// Helper to register a kernel class whose constructor is (const Node&, int64_t opset) and
// which has `Status init()` to validate attributes.
template <class K>
OpFactory factory_of() {
  return [](const Node& n, int64_t opset) -> Result<std::unique_ptr<OpKernel>> {
    auto k = std::make_unique<K>(n, opset);
    Status s = k->init();
    if (!s.is_ok()) return s;
    return std::unique_ptr<OpKernel>(std::move(k));
  };
}

// Family registration functions (one per src/ops/<family>.cpp file).
void register_elementwise_ops(OpRegistry& r);
void register_conv_ops(OpRegistry& r);
void register_pool_norm_ops(OpRegistry& r);
void register_tensor_ops(OpRegistry& r);
void register_reduce_ops(OpRegistry& r);
void register_matmul_ops(OpRegistry& r);
void register_misc_ops(OpRegistry& r);
void register_quant_ops(OpRegistry& r);

}  // namespace infera
