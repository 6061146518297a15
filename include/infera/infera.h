// Infera public C++ API: load an ONNX CNN, run it on the CPU (GPU backends come later).
// Small and stable: Status/Result, DataType, Tensor, SessionOptions, Session.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace infera {

// ---------------------------------------------------------------- Status / Result
// Errors are values: every public function returns a Status or a Result<T> whose
// message names the file, node, tensor and the expected vs found value.
class Status {
 public:
  Status() = default;
  static Status ok() { return Status(); }
  static Status error(std::string msg) {
    Status s;
    s.failed_ = true;
    s.msg_ = std::move(msg);
    return s;
  }
  bool is_ok() const { return !failed_; }
  const std::string& message() const { return msg_; }

 private:
  bool failed_ = false;
  std::string msg_;
};

template <class T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {}  // NOLINT: must be an error
  bool is_ok() const { return v_.index() == 0; }
  T& value() { return std::get<0>(v_); }
  const T& value() const { return std::get<0>(v_); }
  T&& take() { return std::move(std::get<0>(v_)); }
  Status status() const { return is_ok() ? Status::ok() : std::get<1>(v_); }
  const std::string& message() const {
    static const std::string empty;
    return is_ok() ? empty : std::get<1>(v_).message();
  }

 private:
  std::variant<T, Status> v_;
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
size_t host_memory_bytes();          // physical memory: no single allocation may exceed it

// ---------------------------------------------------------------- Tensor
// A dense row-major host tensor that owns (or shares) 64-byte-aligned storage.
class Tensor {
 public:
  Tensor() = default;
  // Allocates zero-initialized storage. Fails on negative dims or byte-size overflow.
  static Result<Tensor> make(DataType dtype, std::vector<int64_t> dims);
  // Wraps external memory without copying; the caller keeps it alive.
  static Tensor view(DataType dtype, std::vector<int64_t> dims, void* data);

  DataType dtype() const { return dtype_; }
  const std::vector<int64_t>& dims() const { return dims_; }
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
  Tensor clone() const;  // deep copy into fresh storage

 private:
  DataType dtype_ = DataType::kUndefined;
  std::vector<int64_t> dims_;
  std::shared_ptr<void> storage_;
  void* data_ = nullptr;
};

// ---------------------------------------------------------------- Session
enum class Device { kCpu };
enum class Precision { kFp32 };

struct SessionOptions {
  int num_threads = 0;  // 0 = all cores
  Device device = Device::kCpu;
  Precision precision = Precision::kFp32;
  bool optimize = true;      // run the graph passes
  bool use_dnnl = true;      // accelerate hot ops with oneDNN (false = reference kernels only)
  int max_cached_plans = 8;  // plans kept per session, one per input-shape signature (LRU)
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

struct ModelSummary {
  int64_t ir_version = 0;
  int64_t opset = 0;
  std::string producer;
  size_t node_count = 0;                    // after optimization
  size_t node_count_original = 0;           // as imported
  std::map<std::string, int> op_histogram;  // as imported
  int64_t parameter_count = 0;              // elements in float initializers
  std::vector<PassReport> passes;
};

// Figures of the plan made for one set of input shapes.
struct PlanReport {
  size_t arena_bytes = 0;        // planned activation arena (64-byte aligned offsets)
  size_t naive_bytes = 0;        // sum of all activation sizes without reuse
  size_t weight_bytes = 0;       // constants, including weights reordered by backends
  size_t steps = 0;              // nodes executed per run
  size_t accelerated_steps = 0;  // of which run by oneDNN
  double build_ms = 0;           // time to make this plan
  double flops = 0;              // multiply-adds x2 of Conv/Gemm/MatMul for these shapes
};

class SessionImpl;

class Session {
 public:
  // Loads, checks and optimizes a model. Errors name the file, node and value.
  static Result<std::unique_ptr<Session>> load(const std::string& path, const SessionOptions& opts = {});
  static Result<std::unique_ptr<Session>> load_from_memory(const std::string& bytes, const std::string& model_dir,
                                                           const SessionOptions& opts = {});
  ~Session();

  const std::vector<IoInfo>& inputs() const;
  const std::vector<IoInfo>& outputs() const;
  const ModelSummary& summary() const;

  // Makes (or finds in the cache) the plan for these input shapes.
  Result<PlanReport> prepare(const std::map<std::string, std::vector<int64_t>>& input_shapes);
  // Validates the inputs (names, dtype, rank, static dims), runs, returns the outputs in model order.
  Result<std::vector<Tensor>> run(const std::map<std::string, Tensor>& inputs);
  // Plans held now (at most SessionOptions::max_cached_plans).
  size_t cached_plan_count() const;

 private:
  explicit Session(std::unique_ptr<SessionImpl> impl);
  std::unique_ptr<SessionImpl> impl_;
};

// Tensor files: .npy (v1-3, little-endian, C order) and ONNX TensorProto (.pb).
Result<Tensor> load_tensor_file(const std::string& path);
Status save_npy(const std::string& path, const Tensor& t);

}  // namespace infera
