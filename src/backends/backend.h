// The interface every backend implements (ref, oneDNN, later the GPU): what it supports (with a
// reason when it declines), the step kernels it creates, the bytes a value takes in its formats,
// memory and copies for its device, and a stream. The planner and executor name no backend.
//
// Threading: a Backend and the StepKernels it creates are immutable once made and shared by
// every run context of a plan; what a kernel mutates while it runs lives in its KernelState (one
// per run context, made by make_state()) and in the scratch memory the run context hands it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "infera/infera.h"
#include "ops/op.h"
#include "plan/format.h"

namespace infera {

class PerfDb;         // algorithm choices kept between builds (the tuning work fills it; may be null)
class PackedWeights;  // converted weights shared by a session's plans (backends/packed_weights.h)

// One step as a backend sees it: the node with its typed op, concrete shapes and, for create(),
// the formats the planner chose for every input and output.
// Channels [offset, offset + C) of a value of `channels` channels, in that value's format: the
// output's data pointer is the wide value's, and the kernel writes element (n, c, pixel) where the
// wide value holds channel offset + c (in NHWC: pixel stride `channels`, channel offset `offset`).
struct ChannelSlice {
  int64_t channels = 0;  // channels of the wide value; 0: not a slice
  int64_t offset = 0;
  bool sliced() const { return channels > 0; }
};

struct StepRequest {
  const Node* node = nullptr;
  const OpKernel* op = nullptr;  // the node's typed op: attributes (ConvOp::attrs(), ...)
  int64_t opset = 0;
  std::vector<const ValueInfo*> inputs;   // concrete shapes; .value set for constants
  std::vector<const ValueInfo*> outputs;  // concrete shapes (nullptr: output not produced)
  std::vector<Format> input_formats;      // supports(): all kPlain; create(): as planned
  std::vector<Format> output_formats;
  // Per output slot: the input slot whose buffer this output shares (the planner made the step
  // in place, from Support::in_place), or -1.
  std::vector<int> output_alias;
  // Per output slot: where the output sits when the planner made it a channel slice of a wider
  // value (Concat in place, from Support::sliced_outputs); empty or {0, 0} = its own buffer.
  std::vector<ChannelSlice> output_slices;
  int num_threads = 1;
  int verbose = 0;
  PerfDb* perf_db = nullptr;
  // The session's packed weights (backends/packed_weights.h): weights converted into the
  // backend's format are looked up here before converting and published after (null: none).
  PackedWeights* packed = nullptr;

  bool has_in(size_t i) const { return i < inputs.size() && inputs[i] != nullptr; }
  bool has_out(size_t i) const { return i < outputs.size() && outputs[i] != nullptr; }
  std::vector<int64_t> in_dims(size_t i) const { return inputs[i]->shape.concrete(); }
  std::vector<int64_t> out_dims(size_t i) const { return outputs[i]->shape.concrete(); }
  Format in_format(size_t i) const { return i < input_formats.size() ? input_formats[i] : Format::kPlain; }
  Format out_format(size_t i) const { return i < output_formats.size() ? output_formats[i] : Format::kPlain; }
  int alias_of(size_t out) const { return out < output_alias.size() ? output_alias[out] : -1; }
  ChannelSlice slice_of(size_t out) const { return out < output_slices.size() ? output_slices[out] : ChannelSlice{}; }
};

// A backend's answer to supports(). Formats are sets (plain is always allowed for a supported
// step); the planner picks one per value.
struct Support {
  bool ok = false;
  std::string reason;                     // why not, when !ok (shown by --verbose and info --plan)
  std::vector<FormatSet> input_formats;   // per input slot: formats the kernel can read
  std::vector<FormatSet> output_formats;  // per output slot: formats it can write
  // Elementwise steps: a non-plain output pays only when a full-size input has that format
  // (otherwise it just moves a reorder, e.g. NHWC tensors after a Transpose).
  bool follows_input = false;
  // (input slot, output slot) pairs whose buffers the kernel may share (it then runs in place).
  std::vector<std::pair<int, int>> in_place;
  // Formats in which the kernel can write its outputs as channel slices of a wider value
  // (StepRequest::output_slices); a Concat along channels whose inputs all come from such steps
  // is then done in place by its producers.
  FormatSet sliced_outputs = 0;
  // A Concat along channels that has nothing to do when every input is a slice of its output
  // (the planner then skips it).
  bool concat_in_place = false;

  static Support no(std::string why) {
    Support s;
    s.reason = std::move(why);
    return s;
  }
  // Yes, with every input and output slot in the plain format only.
  static Support plain(size_t num_inputs, size_t num_outputs) {
    Support s;
    s.ok = true;
    s.input_formats.assign(num_inputs, kPlainOnly);
    s.output_formats.assign(num_outputs, kPlainOnly);
    return s;
  }
};

// What a kernel mutates while it runs, one per run context (bound memory handles, a library
// stream, a captured graph...).
class KernelState {
 public:
  virtual ~KernelState() = default;
};

class StepKernel {
 public:
  virtual ~StepKernel() = default;
  // Same contract as OpKernel::compute, with inputs and outputs in the formats given at
  // creation, ctx.res.state = this kernel's state in the run context, ctx.res.scratch at least
  // scratch_bytes(). Const: one kernel serves every run context at once.
  virtual Status run(ComputeContext& ctx) const = 0;
  virtual std::unique_ptr<KernelState> make_state() const { return nullptr; }
  virtual size_t scratch_bytes() const { return 0; }  // per run, planned by the run context
  virtual size_t weight_bytes() const { return 0; }   // constants it holds (reordered weights)
  virtual std::string impl_name() const = 0;          // e.g. "brgconv:avx512_core"
};

// A device queue. The CPU backends have none (execution is synchronous).
// A device queue. The CPU backends have none (execution is synchronous). A stream may record
// the work enqueued on it into a graph and replay it (GPU graphs): begin_capture(), the steps,
// end_capture(); then replay() does the same work again at a fraction of the launch cost.
class Stream {
 public:
  virtual ~Stream() = default;
  virtual Status synchronize() = 0;
  virtual void* native() = 0;  // the vendor handle (a gpuStream_t)
  virtual bool can_capture() const { return false; }
  virtual Status begin_capture() { return Status::error(StatusCode::kUnsupported, "no graph capture"); }
  virtual Status end_capture() { return Status::error(StatusCode::kUnsupported, "no graph capture"); }
  virtual Status replay() { return Status::error(StatusCode::kUnsupported, "no graph capture"); }
  virtual bool has_graph() const { return false; }
  virtual void drop_graph() {}
  // Graph slots: a stream may keep several captured graphs (e.g. one per set of I/O addresses a
  // run context alternates between); capture, replay, has_graph and drop_graph act on the
  // selected slot. One slot unless the stream says more.
  virtual size_t graph_slots() const { return 1; }
  virtual void select_graph(size_t slot) { (void)slot; }
  // Device time between time_begin() and time_end() (events on the stream; time_end waits).
  virtual Status time_begin() { return Status::error(StatusCode::kUnsupported, "no device timer"); }
  virtual Result<double> time_end() { return Status::error(StatusCode::kUnsupported, "no device timer"); }
};

// A value moved between formats and/or devices: the planner's reorder / copy steps.
struct ConvertRequest {
  const ValueInfo* value = nullptr;  // dtype and concrete shape
  Device from_device, to_device;
  Format from = Format::kPlain, to = Format::kPlain;
  int num_threads = 1;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;
  virtual Device device() const = 0;
  virtual BackendInfo info() const = 0;
  // Whether steps whose output shapes are known only when running may come here (the reference
  // backend: it allocates what infer() says at run time).
  virtual bool runs_dynamic_steps() const { return false; }

  // Cheap: no kernel is made. A supported step may still be declined by create().
  virtual Support supports(const StepRequest& req) const = 0;
  // Makes the kernel (primitive creation, weight reorder). A null kernel = declined.
  virtual Result<std::unique_ptr<StepKernel>> create(const StepRequest& req) const = 0;
  // A conversion kernel, or null when this backend offers none for the request.
  virtual Result<std::unique_ptr<StepKernel>> create_convert(const ConvertRequest& req) const {
    return std::unique_ptr<StepKernel>();
  }

  // Bytes a value takes in format f on this backend's device.
  virtual size_t value_bytes(const ValueInfo& v, Format f) const {
    return format_bytes(f, v.dtype, v.shape.concrete());
  }
  // Memory of this backend's device (the host's by default).
  virtual size_t alignment() const { return 64; }
  // The device's memory in bytes, for the default memory budget of a GPU session (0: the host's,
  // which has no default budget).
  virtual size_t memory_bytes() const { return 0; }
  virtual Result<void*> allocate(size_t bytes) const;
  virtual void deallocate(void* p) const;
  // Host memory that this backend's device copies from and to at full speed, and that may be
  // used inside a captured graph (pinned memory on GPUs; plain host memory by default).
  virtual bool pins_host_memory() const { return false; }
  virtual Result<void*> allocate_host(size_t bytes) const;
  virtual void deallocate_host(void* p) const;
  // Copies bytes between any two places this backend's device can reach (host or device).
  virtual Status copy(void* dst, const void* src, size_t bytes) const;
  virtual std::unique_ptr<Stream> make_stream() const { return nullptr; }
};

// What a session asks of the backends it makes (the CPU backends take fp32 only).
struct BackendOptions {
  Precision precision = Precision::kFp32;
  bool tf32 = false;        // GPU: TF32 matrix math for fp32 (off unless asked)
  bool vendor_libs = true;  // GPU: vendor libraries (cuDNN, cuBLASLt) as candidates beside ours
  int verbose = 0;
};

// The backends this build has, by name ("ref", "dnnl", "gpu"), for a device. The list in
// src/backends/registry.cpp is the one place a new backend is added.
Result<std::shared_ptr<const Backend>> find_backend(const std::string& name, Device device,
                                                    const BackendOptions& options = {});
std::vector<std::string> backend_names();
// The default priority list for a device (e.g. {"dnnl", "ref"} on the CPU).
std::vector<std::string> default_backends(Device device);

}  // namespace infera
