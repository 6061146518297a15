// Infera public C++ API: load an ONNX CNN, optimize it, run it on a device.
// Small and stable: Status/Result, DataType, Device, Tensor, SessionOptions, Session.
// Thread safety: a Session may be run from many threads at once (Session::run); everything
// else that mutates a Session (none today besides run/prepare) says so.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "infera/limits.h"

namespace infera {

// The library version ("0.2.0"), from the CMake project version.
const char* version();

// ---------------------------------------------------------------- Status / Result
// Errors are values: every public function returns a Status or a Result<T> whose message
// names the file, node, tensor and the expected vs found value, and whose code says which
// kind of failure it was. No exception escapes the API.
enum class StatusCode : int {
  kOk = 0,
  kInvalidModel,  // the model file is malformed, inconsistent or uses what its opset forbids
  kInvalidInput,  // an input tensor, shape, option or argument is wrong
  kUnsupported,   // valid, but not implemented here (an op, a precision, a device)
  kOutOfMemory,   // host or device memory (or a configured limit) exhausted
  kDeviceError,   // a device runtime or library call failed
  kIo,            // a file could not be read or written
  kInternal,      // a bug in infera: please report it
};
const char* status_code_name(StatusCode c);  // "invalid model", ...

class Status {
 public:
  Status() = default;
  static Status ok() { return Status(); }
  // The message becomes one safe line: control characters (and C1 controls / invalid UTF-8)
  // are escaped as \xNN and it is capped at kMaxMessage bytes.
  static Status error(StatusCode code, std::string msg);
  // An error whose code the API boundary fills in from context (kInvalidModel while loading,
  // kInvalidInput while running): internal code that has no better code uses this.
  static Status error(std::string msg);
  static constexpr size_t kMaxMessage = 2048;

  bool is_ok() const { return code_ == StatusCode::kOk; }
  // kOk for success; never the unset code once returned by a public function.
  StatusCode code() const { return code_ == kUnset ? StatusCode::kInternal : code_; }
  const std::string& message() const { return msg_; }
  // This status with `prefix` before its message, keeping its code.
  Status prefixed(const std::string& prefix) const;
  // The code given where none was set (used at API boundaries).
  Status or_code(StatusCode c) const;
  bool code_set() const { return code_ != kUnset; }

 private:
  static constexpr StatusCode kUnset = static_cast<StatusCode>(-1);
  StatusCode code_ = StatusCode::kOk;
  std::string msg_;
};

// A value or an error. value()/take() on an error are a programming error: debug builds
// assert; release builds return a value-initialized T held by the Result (never UB). T must
// be default-constructible.
template <class T>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT: must be an error
    if (status_.is_ok()) status_ = Status::error(StatusCode::kInternal, "Result made from an ok Status");
  }
  bool is_ok() const { return status_.is_ok(); }
  T& value() & {
    check();
    return value_;
  }
  const T& value() const& {
    check();
    return value_;
  }
  T take() {
    check();
    return std::move(value_);
  }
  const Status& status() const { return status_; }
  StatusCode code() const { return status_.code(); }
  const std::string& message() const { return status_.message(); }

 private:
  void check() const {
#ifndef NDEBUG
    if (!is_ok()) __builtin_trap();  // value() of an error Result
#endif
  }
  T value_{};
  Status status_;
};

// ---------------------------------------------------------------- DataType
// Values are the ONNX TensorProto.DataType codes.
enum class DataType : int {
  kUndefined = 0,
  kFloat32 = 1,
  kUInt8 = 2,
  kInt8 = 3,
  kUInt16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kFloat64 = 11,
  kUInt32 = 12,
  kUInt64 = 13,
  kBFloat16 = 16,
};

size_t dtype_size(DataType t);       // 0 for kUndefined/kString
const char* dtype_name(DataType t);  // "float32", "int64", ...
bool dtype_supported(DataType t);    // has a byte size and kernels may see it
// Bytes one allocation may take: the smallest of physical memory and the process's limits.
size_t host_memory_bytes();

// IEEE binary16 and bfloat16 <-> float32 (round to nearest even; NaN stays NaN).
float half_to_float(uint16_t h);
uint16_t float_to_half(float f);
float bfloat16_to_float(uint16_t b);
uint16_t float_to_bfloat16(float f);

// ---------------------------------------------------------------- Device
struct Device {
  enum class Kind { kCpu, kGpu };
  Kind kind = Kind::kCpu;
  int index = 0;

  static Device cpu() { return Device{}; }
  static Device gpu(int index = 0) { return Device{Kind::kGpu, index}; }
  bool is_cpu() const { return kind == Kind::kCpu; }
  bool is_gpu() const { return kind == Kind::kGpu; }
  std::string str() const;  // "cpu", "gpu:0"
  // "cpu", "gpu", "gpu:N"; anything else is kInvalidInput.
  static Result<Device> parse(const std::string& s);
  bool operator==(const Device& o) const { return kind == o.kind && index == o.index; }
  bool operator!=(const Device& o) const { return !(*this == o); }
};

enum class Precision { kFp32, kFp16, kInt8, kMixed };
const char* precision_name(Precision p);  // "fp32", ...
Result<Precision> parse_precision(const std::string& s);

// ---------------------------------------------------------------- Tensor
// A dense row-major tensor that owns (or views) storage on a device; owned host storage is
// 64-byte aligned.
class Tensor {
 public:
  Tensor() = default;
  // Allocates zero-initialized host storage. Fails on negative dims or byte-size overflow
  // (kInvalidInput) and when the bytes exceed host_memory_bytes() (kOutOfMemory).
  static Result<Tensor> make(DataType dtype, std::vector<int64_t> dims);
  // Wraps external memory without copying; the caller keeps it alive. On a GPU device, data
  // is a device pointer (sessions on that device read and write it in place).
  static Tensor view(DataType dtype, std::vector<int64_t> dims, void* data, Device device = Device::cpu());
  // Allocates an (uninitialized) tensor on a device: GPU memory through that device's backend,
  // host memory for the CPU (zeroed, as make()). kUnsupported without a GPU backend or device.
  static Result<Tensor> make_on(Device device, DataType dtype, std::vector<int64_t> dims);

  DataType dtype() const { return dtype_; }
  const std::vector<int64_t>& dims() const { return dims_; }
  Device device() const { return device_; }
  int rank() const { return static_cast<int>(dims_.size()); }
  int64_t numel() const;
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }
  void* data() { return data_; }
  const void* data() const { return data_; }
  template <class T>
  T* data_as() {
    return static_cast<T*>(data_);
  }
  template <class T>
  const T* data_as() const {
    return static_cast<const T*>(data_);
  }
  bool empty() const { return dtype_ == DataType::kUndefined; }
  Tensor clone() const;  // deep copy into fresh host storage (host tensors only)
  // Element i (row-major) as a double, for any numeric, bool, float16 or bfloat16 host
  // tensor; kInvalidInput for other dtypes, devices or i out of range.
  Result<double> element(int64_t i) const;

 private:
  DataType dtype_ = DataType::kUndefined;
  std::vector<int64_t> dims_;
  Device device_;
  std::shared_ptr<void> storage_;
  void* data_ = nullptr;
};

// ---------------------------------------------------------------- Session
struct SessionOptions {
  Device device = Device::cpu();
  // kFp32 everywhere; kFp16 on a GPU (float16 storage, float32 accumulation); kInt8 and kMixed
  // are kUnsupported until the INT8 work lands.
  Precision precision = Precision::kFp32;
  // Backends in priority order: each step goes to the first that supports it ("dnnl", "ref";
  // see available_backends()). Empty: the device's default order. "ref" is always appended
  // (every op has a reference kernel). An unknown name is kInvalidInput at load.
  std::vector<std::string> backends;
  int num_threads = 0;       // threads per run, per session (0 = all cores); never process-wide
  bool optimize = true;      // run the graph passes
  int max_cached_plans = 8;  // plans kept per session, one per input-shape signature (LRU)
  int max_run_contexts = 0;  // run contexts kept per plan for concurrent runs (0 = cores)
  // GPU: TF32 matrix math for fp32 (off: fp32 means fp32); vendor libraries (cuDNN, cuBLASLt) as
  // candidates beside infera's own kernels (off: our kernels only, as on AMD).
  bool allow_tf32 = false;
  bool vendor_libraries = true;
  // GPU graphs: capture a static-shape plan once per run context and replay it (kAuto: on).
  enum class GraphMode { kAuto, kOn, kOff };
  GraphMode gpu_graphs = GraphMode::kAuto;
  // 1: print each plan's steps (backend, implementation) and every backend decline to stderr;
  // 2: also every kernel made. The INFERA_VERBOSE environment variable sets the default.
  int verbose = -1;  // -1: from INFERA_VERBOSE (unset = 0)

  // Algorithm search (docs/perfdb.md). Each Conv's algorithm (and on a GPU each Gemm's kernel) is
  // timed once on its real shape and the winner kept in a performance database file, so a later
  // build of the same layer on the same device and libraries times nothing.
  // perf_db: "" = $XDG_CACHE_HOME/infera/perfdb.json (else ~/.cache/infera/perfdb.json);
  // "none" = choices are timed (per session) but neither read from nor written to a file.
  std::string perf_db;
  // A forced algorithm; where it cannot do a layer, that layer is searched as with kAuto and
  // verbose output says why. kImplicitGemm / kGemm / kVendor are GPU algorithms (our implicit
  // GEMM, 1x1 as GEMM, cuDNN/cuBLASLt); the CPU has kDirect and kWinograd (oneDNN's).
  enum class ConvAlgo { kAuto, kImplicitGemm, kWinograd, kDirect, kGemm, kVendor };
  ConvAlgo conv_algo = ConvAlgo::kAuto;
  // Winograd candidates: kAuto searched beside the others, kOn used wherever they apply (no
  // timing), kOff never (MIOpen's MIOPEN_DEBUG_CONV_WINOGRAD).
  enum class WinogradMode { kAuto, kOn, kOff };
  WinogradMode winograd = WinogradMode::kAuto;
  // kFast: the short list, a few timed reps, a slow candidate dropped early; kExhaustive: every
  // candidate, more reps (entries found by a fast search are timed again); kOff: no timing and no
  // database, the built-in heuristics (the rule before the search existed).
  enum class SearchMode { kFast, kExhaustive, kOff };
  SearchMode search = SearchMode::kFast;

  // Memory (docs/memory.md). The most one run may hold on the session's device: weights, arena
  // and workspace. A batch whose plan needs more is split along the batch axis into the largest
  // chunks that fit, run in order and joined (bits equal to running those chunks one by one); a
  // budget too small for batch 1 is kOutOfMemory naming the bytes needed. 0: no budget on the
  // CPU; on a GPU, the device memory free when the session was loaded.
  size_t memory_budget_bytes = 0;
  // How arena blocks are sized (ONNX Runtime's arena_extend_strategy). Blocks freed by a plan go
  // back to the session's pool and are reused by the next plan that fits in them:
  // kNextPowerOfTwo rounds each block up to a power of two, so that serving many batch sizes
  // reuses a few blocks; kSameAsRequested allocates exactly what the plan needs.
  enum class ArenaExtend { kNextPowerOfTwo, kSameAsRequested };
  ArenaExtend arena_extend = ArenaExtend::kSameAsRequested;
  // Sizes accepted from the model and tensor files (include/infera/limits.h).
  limits::Limits limits;
};

// The time of one step of one run (RunOptions::profile).
struct StepTiming {
  std::string node;     // node name, or "" for an inserted copy/reorder/cast step
  std::string op;       // as in PlanStepInfo::op
  std::string backend;  // "dnnl", "ref", ...
  double ms = 0;        // wall time of the step (device time on a GPU)
};

struct RunOptions {
  // When set, filled with one entry per executed step, in execution order (cleared first).
  std::vector<StepTiming>* profile = nullptr;
  // When set, the device time of the run from events on its GPU stream (copies included),
  // or -1 for a run that has no GPU work.
  double* device_ms = nullptr;
};

// A symbolic dim has value -1 and a name ("batch"); an unknown dim has value -1 and no name.
struct IoDim {
  int64_t value = -1;
  std::string symbol;
};

struct IoInfo {
  std::string name;
  DataType dtype = DataType::kUndefined;
  bool rank_known = false;  // false: the model declares no shape (dims is then empty)
  std::vector<IoDim> dims;
};

struct PassReport {
  std::string name;
  size_t nodes_before = 0;
  size_t nodes_after = 0;
};

// The ModelProto's own description of itself (as written; empty/0 where the file has none).
struct ModelMetadata {
  std::string producer_name, producer_version, graph_name, domain, description, graph_description;
  int64_t model_version = 0;
  std::map<std::string, std::string> metadata_props;
};

struct ModelSummary {
  int64_t ir_version = 0;
  int64_t opset = 0;
  std::string producer;
  size_t node_count = 0;                              // after optimization
  size_t node_count_original = 0;                     // as imported
  std::map<std::string, int> op_histogram;            // as imported
  std::map<std::string, int> op_histogram_optimized;  // after the passes
  int64_t parameter_count = 0;                        // elements in float initializers
  std::vector<PassReport> passes;
  ModelMetadata metadata;
};

// One step of a plan: a node run by a backend, or a copy/reorder/cast the planner inserted.
struct PlanStepInfo {
  std::string node;     // node name ("" for inserted steps: see op)
  std::string op;       // "Conv", "com.infera.FusedConv", or "reorder" / "copy" / "cast"
  std::string backend;  // "dnnl", "ref", ...
  std::string impl;     // the implementation the backend chose
  std::vector<std::string> input_formats, output_formats;  // "plain", "nChw16c", ...
  size_t output_bytes = 0;                                 // bytes of its outputs in their formats
  size_t input_bytes = 0;                                  // bytes of its non-constant inputs in their formats
  size_t weight_bytes = 0;                                 // constants its kernel holds (reordered weights)
  double flops = 0;                                        // multiply-adds x2 (Conv/Gemm/MatMul), else 0
  bool dynamic = false;                                    // output shapes known only when running
};

// Figures of the plan made for one set of input shapes.
struct PlanReport {
  size_t arena_bytes = 0;                                  // planned activation memory, all devices (aligned offsets)
  size_t naive_bytes = 0;                                  // sum of all activation sizes without reuse
  size_t weight_bytes = 0;                                 // constants, including weights reordered by backends
  size_t scratch_bytes = 0;                                // backend scratch per run context (e.g. oneDNN scratchpads)
  std::map<std::string, size_t> arena_bytes_per_device;    // "cpu" -> bytes
  std::map<std::string, size_t> scratch_bytes_per_device;  // per run context
  std::map<std::string, size_t> weight_bytes_per_device;   // held by the step kernels (reordered, uploaded)
  size_t steps = 0;                                        // steps executed per run
  size_t accelerated_steps = 0;                            // steps run by a backend other than "ref"
  size_t inserted_steps = 0;                               // copies / reorders / casts
  std::map<std::string, size_t> steps_per_backend;         // "dnnl" -> 120, "ref" -> 3
  double build_ms = 0;                                     // time to make this plan
  double flops = 0;                                        // multiply-adds x2 of Conv/Gemm/MatMul for these shapes
  size_t perf_db_found = 0;                                // algorithm choices read from the performance database
  size_t perf_db_timed = 0;                                // choices made by timing candidates (then stored)
  // Weights in a backend's format (reordered, Winograd-transformed): found in the session's
  // (converted by another plan of the session, or loaded from a saved plan) / converted by this plan.
  size_t weights_reused = 0, weights_converted = 0;
  // Memory on the session's device for one run: weights + arena + scratch (what the budget bounds).
  size_t peak_bytes = 0;
  // When the batch runs in chunks (SessionOptions::memory_budget_bytes): the batch of one chunk
  // and how many chunks; this report is then the chunk's plan (flops and output_dims are the
  // whole batch's). 0: the batch runs whole.
  int64_t chunk_batch = 0, chunks = 0;
  std::vector<std::vector<int64_t>> output_dims;  // per model output (-1 where data-dependent)
  std::vector<PlanStepInfo> step_list;            // in execution order
};

// What a backend is, for `infera doctor` and tools.
struct BackendInfo {
  std::string name;    // "dnnl", "ref"
  std::string device;  // "cpu", "gpu:0"
  bool available = false;
  std::string version;     // library version, e.g. "oneDNN 2.6.3"
  std::string details;     // multi-line: ISA, probe results, why unavailable
  std::string pci_bus_id;  // a GPU's PCI address ("0000:19:00.0"; empty when unknown)
};
std::vector<BackendInfo> available_backends();

// The performance database file as this build reads it (`infera doctor`).
struct PerfDbInfo {
  std::string path;  // the file (SessionOptions::perf_db resolved)
  bool exists = false;
  size_t file_bytes = 0;
  size_t entries = 0;
  std::map<std::string, size_t> entries_per_device;  // by the entries' device field
  std::string cpu_device;                            // this CPU as entries name it
  std::string warning;                               // why the file is not used ("" when it is)
};
PerfDbInfo perf_db_info(const std::string& path = "");

// The GPU runtime this build links and the driver's (CUDA: 13000 = 13.0; 0 when there is no GPU
// build or no driver), and cuDNN / cuBLASLt (0: absent). `infera doctor` compares them.
struct GpuLibraryVersions {
  std::string vendor;  // "cuda", "hip", "" (no GPU build)
  int runtime = 0, driver = 0, dnn = 0, blas = 0;
};
GpuLibraryVersions gpu_library_versions();

class SessionImpl;

class Session {
 public:
  // Loads, checks and optimizes a model (ONNX), or loads a saved plan (save_plan; recognized by
  // its header, whatever the file is named). Errors name the file, node and value.
  static Result<std::unique_ptr<Session>> load(const std::string& path, const SessionOptions& opts = {});
  static Result<std::unique_ptr<Session>> load_from_memory(const std::string& bytes, const std::string& model_dir,
                                                           const SessionOptions& opts = {});
  // Waits for the run()/prepare() calls other threads are inside now, then frees the session. A
  // call that starts after the destructor began is undefined behaviour (as for any object).
  ~Session();

  const std::vector<IoInfo>& inputs() const;
  const std::vector<IoInfo>& outputs() const;
  const ModelSummary& summary() const;
  const SessionOptions& options() const;

  // Makes (or finds in the cache) the plan for these input shapes. Thread-safe.
  Result<PlanReport> prepare(const std::map<std::string, std::vector<int64_t>>& input_shapes);
  // Validates the inputs (names, dtype, rank, static dims), runs, returns the outputs in model
  // order. Thread-safe: concurrent runs on one session give the bits of serial runs.
  Result<std::vector<Tensor>> run(const std::map<std::string, Tensor>& inputs);
  // The same into caller-provided outputs (model order; each of the output's dtype and the
  // dims this input shape gives, e.g. from prepare().output_dims): written in place.
  Status run(const std::map<std::string, Tensor>& inputs, std::vector<Tensor>& outputs,
             const RunOptions& run_options = {});
  // Writes a saved plan (docs/saved_plans.md): a versioned header naming the device, its
  // architecture and the library versions, the optimized graph with its weights, and the
  // algorithm choices of the plans for each of `input_shapes` (each is prepared first).
  // Session::load reads such a file back without optimizing or searching, and refuses one made
  // for another device, architecture or library version.
  Status save_plan(const std::string& path,
                   const std::vector<std::map<std::string, std::vector<int64_t>>>& input_shapes);
  // Ok when a batch of these shapes may be split along axis 0 into parts run apart (chunking
  // under a memory budget, several devices: include/infera/multi_device.h): every input has the
  // batch as dim 0 and no node mixes samples; else the error naming the input, value or node.
  Status check_batch_split(const std::map<std::string, std::vector<int64_t>>& input_shapes) const;
  // Plans held now (at most SessionOptions::max_cached_plans).
  size_t cached_plan_count() const;
  // Bytes this session has allocated now: weights, arenas and scratch of every run context.
  size_t allocated_bytes() const;

 private:
  explicit Session(std::unique_ptr<SessionImpl> impl);
  std::unique_ptr<SessionImpl> impl_;
};

// Copies src into dst (same dtype and dims) between host and device memory, either way.
Status copy_tensor(const Tensor& src, Tensor& dst);

// Tensor files: .npy (v1-3, little-endian, C order) and ONNX TensorProto (.pb).
Result<Tensor> load_tensor_file(const std::string& path);
Status save_npy(const std::string& path, const Tensor& t);

}  // namespace infera
