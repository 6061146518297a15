#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "infera/infera.h"
#include "runtime/fault.h"

namespace infera {

size_t dtype_size(DataType t) {
  switch (t) {
    case DataType::kFloat32:
    case DataType::kInt32:
    case DataType::kUInt32: return 4;
    case DataType::kUInt8:
    case DataType::kInt8:
    case DataType::kBool: return 1;
    case DataType::kUInt16:
    case DataType::kInt16:
    case DataType::kFloat16:
    case DataType::kBFloat16: return 2;
    case DataType::kInt64:
    case DataType::kFloat64:
    case DataType::kUInt64: return 8;
    default: return 0;
  }
}

const char* dtype_name(DataType t) {
  switch (t) {
    case DataType::kFloat32: return "float32";
    case DataType::kUInt8: return "uint8";
    case DataType::kInt8: return "int8";
    case DataType::kUInt16: return "uint16";
    case DataType::kInt16: return "int16";
    case DataType::kInt32: return "int32";
    case DataType::kInt64: return "int64";
    case DataType::kString: return "string";
    case DataType::kBool: return "bool";
    case DataType::kFloat16: return "float16";
    case DataType::kFloat64: return "float64";
    case DataType::kUInt32: return "uint32";
    case DataType::kUInt64: return "uint64";
    case DataType::kBFloat16: return "bfloat16";
    default: return "undefined";
  }
}

bool dtype_supported(DataType t) { return dtype_size(t) != 0; }

namespace {

// The smallest memory limit of this process's cgroup and its ancestors (v2 memory.max, v1
// memory.limit_in_bytes), or SIZE_MAX when there is none.
size_t cgroup_memory_limit() {
  size_t best = SIZE_MAX;
  auto read_limit = [&](const std::string& file) {
    std::ifstream f(file);
    std::string text;
    if (!(f >> text) || text == "max") return;
    char* end = nullptr;
    errno = 0;
    unsigned long long v = std::strtoull(text.c_str(), &end, 10);
    if (errno == 0 && end && *end == 0 && v > 0 && v < best) best = static_cast<size_t>(v);
  };
  // From the cgroup's own folder up to the mount's root: a limit on any ancestor applies too.
  auto walk = [&](const std::string& root, std::string rel, const char* file) {
    for (;;) {
      read_limit(root + rel + "/" + file);
      if (rel.empty() || rel == "/") break;
      size_t slash = rel.find_last_of('/');
      rel = slash == std::string::npos ? "" : rel.substr(0, slash);
    }
  };
  std::ifstream f("/proc/self/cgroup");
  std::string line;
  while (std::getline(f, line)) {
    // "ID:CONTROLLERS:PATH"; v2 is "0::PATH".
    size_t a = line.find(':'), b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (controllers.empty()) {
      walk("/sys/fs/cgroup", path, "memory.max");
      walk("/sys/fs/cgroup/unified", path, "memory.max");
    } else if (("," + controllers + ",").find(",memory,") != std::string::npos) {
      walk("/sys/fs/cgroup/memory", path, "memory.limit_in_bytes");
    }
  }
  return best;
}

// What an rlimit leaves: limit minus what the process uses of it now (field of /proc/self/statm,
// in pages), or SIZE_MAX when unlimited.
size_t rlimit_left(int resource, int statm_field) {
  struct rlimit rl;
  if (getrlimit(resource, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return SIZE_MAX;
  std::ifstream f("/proc/self/statm");
  unsigned long long field = 0, pages = 0;
  for (int i = 0; i <= statm_field && (f >> field); ++i) pages = field;
  const size_t used = static_cast<size_t>(pages) * static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return rl.rlim_cur > used ? static_cast<size_t>(rl.rlim_cur - used) : 0;
}

}  // namespace

size_t host_memory_bytes() {
  // Physical memory and the cgroup limit are read once; rlimits can change and what is mapped
  // changes all the time, so those are read per call (one getrlimit when unlimited).
  static const size_t fixed = [] {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    size_t phys = pages > 0 && page > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page) : size_t(1) << 34;
    return std::min(phys, cgroup_memory_limit());
  }();
  // statm fields: 0 = size (all mapped pages, what RLIMIT_AS counts), 5 = data + stack.
  return std::min({fixed, rlimit_left(RLIMIT_AS, 0), rlimit_left(RLIMIT_DATA, 5)});
}

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int64_t d : dims_) n *= d;
  return n;
}

Result<Tensor> Tensor::make(DataType dtype, std::vector<int64_t> dims) {
  if (!dtype_supported(dtype))
    return Status::error(StatusCode::kUnsupported, std::string("unsupported tensor dtype ") + dtype_name(dtype));
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) return Status::error(StatusCode::kInvalidInput, "negative tensor dimension " + std::to_string(d));
    if (d != 0 && n > (int64_t(1) << 40) / d)
      return Status::error(StatusCode::kInvalidInput,
                           "tensor of " + std::to_string(dims.size()) + " dims is too large (over 2^40 elements)");
    n *= d;
  }
  size_t bytes = static_cast<size_t>(n) * dtype_size(dtype);
  if (bytes > host_memory_bytes())
    return Status::error(StatusCode::kOutOfMemory, "tensor of " + std::to_string(bytes) +
                                                       " bytes exceeds this machine's memory (" +
                                                       std::to_string(host_memory_bytes()) + " bytes)");
  size_t alloc = (bytes + 63) / 64 * 64;
  if (alloc == 0) alloc = 64;
  void* p = fault::hit(fault::Kind::kAlloc) ? nullptr : std::aligned_alloc(64, alloc);
  if (!p)
    return Status::error(StatusCode::kOutOfMemory, "out of memory allocating " + std::to_string(alloc) + " bytes");
  std::memset(p, 0, alloc);
  Tensor t;
  t.dtype_ = dtype;
  t.dims_ = std::move(dims);
  t.storage_ = std::shared_ptr<void>(p, [](void* q) { std::free(q); });
  t.data_ = p;
  return t;
}

Tensor Tensor::view(DataType dtype, std::vector<int64_t> dims, void* data, Device device) {
  Tensor t;
  t.dtype_ = dtype;
  t.device_ = device;
  t.dims_ = std::move(dims);
  t.data_ = data;
  return t;
}

Tensor Tensor::clone() const {
  if (!device_.is_cpu()) return Tensor();
  Result<Tensor> r = make(dtype_, dims_);
  if (!r.is_ok()) return Tensor();
  Tensor t = r.take();
  if (nbytes()) std::memcpy(t.data_, data_, nbytes());
  return t;
}

Result<double> Tensor::element(int64_t i) const {
  if (!device_.is_cpu())
    return Status::error(StatusCode::kInvalidInput, "Tensor::element: the tensor is on " + device_.str());
  if (i < 0 || i >= numel() || !data_)
    return Status::error(StatusCode::kInvalidInput, "Tensor::element: index " + std::to_string(i) +
                                                        " outside a tensor of " + std::to_string(numel()) +
                                                        " elements");
  switch (dtype_) {
    case DataType::kFloat32: return static_cast<double>(data_as<float>()[i]);
    case DataType::kFloat64: return data_as<double>()[i];
    case DataType::kFloat16: return static_cast<double>(half_to_float(data_as<uint16_t>()[i]));
    case DataType::kBFloat16: return static_cast<double>(bfloat16_to_float(data_as<uint16_t>()[i]));
    case DataType::kInt8: return static_cast<double>(data_as<int8_t>()[i]);
    case DataType::kUInt8: return static_cast<double>(data_as<uint8_t>()[i]);
    case DataType::kInt16: return static_cast<double>(data_as<int16_t>()[i]);
    case DataType::kUInt16: return static_cast<double>(data_as<uint16_t>()[i]);
    case DataType::kInt32: return static_cast<double>(data_as<int32_t>()[i]);
    case DataType::kUInt32: return static_cast<double>(data_as<uint32_t>()[i]);
    case DataType::kInt64: return static_cast<double>(data_as<int64_t>()[i]);
    case DataType::kUInt64: return static_cast<double>(data_as<uint64_t>()[i]);
    case DataType::kBool: return data_as<uint8_t>()[i] != 0 ? 1.0 : 0.0;
    default:
      return Status::error(StatusCode::kInvalidInput,
                           std::string("Tensor::element: no numeric value for dtype ") + dtype_name(dtype_));
  }
}

}  // namespace infera
