// Arrays <-> infera::Tensor (see convert.h). DLPack strides are in elements and may be negative
// (a[::-1]) or zero (broadcast views): anything that is not plain row-major is copied once, never
// read as if it were.
#include "convert.h"

#include <cstring>
#include <vector>

namespace infera::py {

namespace {

constexpr int kDlCpu = 1, kDlCuda = 2, kDlCudaHost = 3, kDlRocm = 10, kDlRocmHost = 11;

DataType from_dlpack(nb::dlpack::dtype d) {
  using C = nb::dlpack::dtype_code;
  if (d.lanes != 1) return DataType::kUndefined;
  const auto code = static_cast<C>(d.code);
  switch (d.bits) {
    case 8:
      return code == C::Int    ? DataType::kInt8
             : code == C::UInt ? DataType::kUInt8
             : code == C::Bool ? DataType::kBool
                               : DataType::kUndefined;
    case 16:
      return code == C::Int      ? DataType::kInt16
             : code == C::UInt   ? DataType::kUInt16
             : code == C::Float  ? DataType::kFloat16
             : code == C::Bfloat ? DataType::kBFloat16
                                 : DataType::kUndefined;
    case 32:
      return code == C::Int     ? DataType::kInt32
             : code == C::UInt  ? DataType::kUInt32
             : code == C::Float ? DataType::kFloat32
                                : DataType::kUndefined;
    case 64:
      return code == C::Int     ? DataType::kInt64
             : code == C::UInt  ? DataType::kUInt64
             : code == C::Float ? DataType::kFloat64
                                : DataType::kUndefined;
    default: return DataType::kUndefined;
  }
}

nb::dlpack::dtype to_dlpack(DataType t) {
  using C = nb::dlpack::dtype_code;
  auto make = [](C c, int bits) { return nb::dlpack::dtype{static_cast<uint8_t>(c), static_cast<uint8_t>(bits), 1}; };
  switch (t) {
    case DataType::kFloat32: return make(C::Float, 32);
    case DataType::kFloat16: return make(C::Float, 16);
    case DataType::kFloat64: return make(C::Float, 64);
    case DataType::kBFloat16: return make(C::Bfloat, 16);
    case DataType::kInt8: return make(C::Int, 8);
    case DataType::kInt16: return make(C::Int, 16);
    case DataType::kInt32: return make(C::Int, 32);
    case DataType::kInt64: return make(C::Int, 64);
    case DataType::kUInt8: return make(C::UInt, 8);
    case DataType::kUInt16: return make(C::UInt, 16);
    case DataType::kUInt32: return make(C::UInt, 32);
    case DataType::kUInt64: return make(C::UInt, 64);
    case DataType::kBool: return make(C::Bool, 8);
    default: return {};
  }
}

std::string dtype_str(nb::dlpack::dtype d) {
  static const char* codes[] = {"int", "uint", "float", "opaque", "bfloat", "complex", "bool"};
  std::string c = d.code < 7 ? codes[d.code] : "code" + std::to_string(d.code);
  return c + std::to_string(d.bits) + (d.lanes != 1 ? "x" + std::to_string(d.lanes) : "");
}

std::string py_type_name(nb::handle obj) { return nb::type_name(obj.type()).c_str(); }

// Row-major with these strides (elements)? Dims of size 1 may have any stride.
bool c_contiguous(const nb::ndarray<nb::ro>& a) {
  if (!a.stride_ptr()) return true;
  int64_t want = 1;
  for (size_t i = a.ndim(); i-- > 0;) {
    const int64_t n = static_cast<int64_t>(a.shape(i));
    if (n == 0) return true;
    if (n != 1 && a.stride(i) != want) return false;
    want *= n;
  }
  return true;
}

// Copies the strided elements at src (strides in elements) into dst, row-major.
void gather(const uint8_t* src, uint8_t* dst, const std::vector<int64_t>& dims, const int64_t* strides, size_t item) {
  const size_t nd = dims.size();
  int64_t total = 1;
  for (int64_t d : dims) total *= d;
  if (total == 0) return;
  if (nd == 0) {
    std::memcpy(dst, src, item);
    return;
  }
  std::vector<int64_t> idx(nd, 0);
  const int64_t inner = dims[nd - 1], inner_step = strides[nd - 1] * static_cast<int64_t>(item);
  for (int64_t done = 0; done < total; done += inner) {
    int64_t off = 0;
    for (size_t i = 0; i + 1 < nd; ++i) off += idx[i] * strides[i];
    const uint8_t* s = src + off * static_cast<int64_t>(item);
    for (int64_t j = 0; j < inner; ++j, s += inner_step, dst += item) std::memcpy(dst, s, item);
    for (size_t i = nd - 1; i-- > 0;) {  // next row: carry through the outer dims
      if (++idx[i] < dims[i]) break;
      idx[i] = 0;
    }
  }
}

void check_status(const Status& s, const std::string& what) {
  if (!s.is_ok()) raise_status(s.prefixed(what));
}

Tensor make_host(DataType dt, const std::vector<int64_t>& dims, const std::string& what) {
  auto t = Tensor::make(dt, dims);
  check_status(t.status(), what);
  return t.take();
}

// The array's device as infera's, or an error naming it.
Device device_of(const nb::ndarray<nb::ro>& a, const std::string& what) {
  switch (a.device_type()) {
    case kDlCpu:
    case kDlCudaHost:
    case kDlRocmHost: return Device::cpu();
    case kDlCuda:
    case kDlRocm:
      if (a.device_type() != gpu_dlpack_device())
        raise_error(StatusCode::kUnsupported, what + "is on a " + (a.device_type() == kDlCuda ? "CUDA" : "ROCm") +
                                                  " device; this build of infera " +
                                                  (gpu_dlpack_device() == kDlCuda ? "uses CUDA" : "uses ROCm"));
      return Device::gpu(a.device_id());
    default:
      raise_error(StatusCode::kUnsupported,
                  what + "is on DLPack device type " + std::to_string(a.device_type()) + ", which infera cannot read");
  }
}

nb::ndarray<nb::ro> import_array(nb::handle obj, const std::string& what) {
  nb::ndarray<nb::ro> a;
  if (!nb::try_cast(obj, a, false))
    raise_error(StatusCode::kInvalidInput,
                what + "expected a numpy.ndarray or an object with __dlpack__ (PyTorch, CuPy, JAX), found " +
                    py_type_name(obj));
  return a;
}

}  // namespace

int gpu_dlpack_device() {
#ifdef INFERA_PY_GPU_HIP
  return kDlRocm;
#else
  return kDlCuda;
#endif
}

const char* ort_type_name(DataType t) {
  switch (t) {
    case DataType::kFloat32: return "tensor(float)";
    case DataType::kFloat16: return "tensor(float16)";
    case DataType::kFloat64: return "tensor(double)";
    case DataType::kBFloat16: return "tensor(bfloat16)";
    case DataType::kInt8: return "tensor(int8)";
    case DataType::kInt16: return "tensor(int16)";
    case DataType::kInt32: return "tensor(int32)";
    case DataType::kInt64: return "tensor(int64)";
    case DataType::kUInt8: return "tensor(uint8)";
    case DataType::kUInt16: return "tensor(uint16)";
    case DataType::kUInt32: return "tensor(uint32)";
    case DataType::kUInt64: return "tensor(uint64)";
    case DataType::kBool: return "tensor(bool)";
    case DataType::kString: return "tensor(string)";
    default: return "tensor(undefined)";
  }
}

Feed to_feed(nb::handle obj, const std::string& name, DataType expect, Device device) {
  const std::string what = "input '" + name + "': ";
  Feed f;
  f.array = import_array(obj, what);
  const nb::ndarray<nb::ro>& a = f.array;
  const DataType dt = from_dlpack(a.dtype());
  if (dt == DataType::kUndefined)
    raise_error(StatusCode::kInvalidInput,
                what + "dtype " + dtype_str(a.dtype()) + " is not a tensor type infera reads");
  if (expect != DataType::kUndefined && dt != expect)
    raise_error(StatusCode::kInvalidInput, what + "expected dtype " + dtype_name(expect) + " (" +
                                               ort_type_name(expect) + "), found " + dtype_name(dt) +
                                               " (cast it first, e.g. x.astype(numpy." + dtype_name(expect) + "))");
  std::vector<int64_t> dims(a.ndim());
  for (size_t i = 0; i < a.ndim(); ++i) dims[i] = static_cast<int64_t>(a.shape(i));
  const Device on = device_of(a, what);
  const size_t item = dtype_size(dt);
  const bool aligned = reinterpret_cast<uintptr_t>(a.data()) % item == 0;
  const bool plain = c_contiguous(a) && aligned;
  void* data = const_cast<void*>(a.data());
  // Zero-copy: the memory is where this session reads (host, or the session's GPU).
  if (plain && (on.is_cpu() || on == device)) {
    f.tensor = Tensor::view(dt, dims, data, on);
    return f;
  }
  f.copied = true;
  Tensor host = make_host(dt, dims, what);
  if (host.numel() == 0) {
    // nothing to copy
  } else if (on.is_cpu()) {  // strided, negative-strided, broadcast or misaligned host memory
    gather(static_cast<const uint8_t*>(a.data()), static_cast<uint8_t*>(host.data()), dims, a.stride_ptr(), item);
  } else if (plain) {  // contiguous on another device than the session's: one copy to the host
    check_status(copy_tensor(Tensor::view(dt, dims, data, on), host), what);
  } else {                   // strided device memory: the span it covers comes to the host, then it is gathered there
    int64_t lo = 0, hi = 0;  // element offsets of the lowest and highest element from data
    for (size_t i = 0; i < a.ndim(); ++i) {
      const int64_t reach = (dims[i] - 1) * a.stride(i);
      (reach < 0 ? lo : hi) += reach;
    }
    const int64_t span = (hi - lo + 1) * static_cast<int64_t>(item);
    Tensor staged = make_host(DataType::kUInt8, {span}, what);
    uint8_t* first = static_cast<uint8_t*>(data) + lo * static_cast<int64_t>(item);
    check_status(copy_tensor(Tensor::view(DataType::kUInt8, {span}, first, on), staged), what);
    gather(staged.data_as<uint8_t>() - lo * static_cast<int64_t>(item), static_cast<uint8_t*>(host.data()), dims,
           a.stride_ptr(), item);
  }
  f.tensor = std::move(host);
  return f;
}

Feed to_output(nb::handle obj, const std::string& name, DataType expect, Device device) {
  const std::string what = "output '" + name + "': ";
  nb::ndarray<> w;
  if (!nb::try_cast(obj, w, false)) {
    nb::ndarray<nb::ro> ro;
    if (nb::try_cast(obj, ro, false)) raise_error(StatusCode::kInvalidInput, what + "the bound buffer is read-only");
    raise_error(StatusCode::kInvalidInput,
                what + "expected a writable numpy.ndarray or an object with __dlpack__, found " + py_type_name(obj));
  }
  Feed f;
  f.array = nb::ndarray<nb::ro>(w);
  const nb::ndarray<nb::ro>& a = f.array;
  const DataType dt = from_dlpack(a.dtype());
  if (dt != expect)
    raise_error(StatusCode::kInvalidInput, what + "the bound buffer must be " + dtype_name(expect) + ", found " +
                                               (dt == DataType::kUndefined ? dtype_str(a.dtype()) : dtype_name(dt)));
  const Device on = device_of(a, what);
  if (!on.is_cpu() && on != device)
    raise_error(StatusCode::kInvalidInput,
                what + "the bound buffer is on " + on.str() + "; this session runs on " + device.str());
  if (!c_contiguous(a) || reinterpret_cast<uintptr_t>(a.data()) % dtype_size(dt) != 0)
    raise_error(StatusCode::kInvalidInput, what +
                                               "the bound buffer must be C-contiguous and aligned (it is written "
                                               "in place; use numpy.empty(shape, dtype))");
  std::vector<int64_t> dims(a.ndim());
  for (size_t i = 0; i < a.ndim(); ++i) dims[i] = static_cast<int64_t>(a.shape(i));
  f.tensor = Tensor::view(dt, dims, const_cast<void*>(a.data()), on);
  return f;
}

nb::object to_python(Tensor&& t, bool dlpack, const std::string& name) {
  const nb::dlpack::dtype dt = to_dlpack(t.dtype());
  if (dt.bits == 0)
    raise_error(StatusCode::kUnsupported,
                "output '" + name + "' has dtype " + dtype_name(t.dtype()) + ", which has no array type");
  if (!dlpack && !t.device().is_cpu())
    raise_error(StatusCode::kInvalidInput, "output '" + name + "' is on " + t.device().str() +
                                               ": NumPy arrays are host memory (use output_type='dlpack')");
  if (!dlpack && t.dtype() == DataType::kBFloat16)
    raise_error(StatusCode::kUnsupported,
                "output '" + name + "' is bfloat16, which NumPy lacks (use output_type='dlpack', e.g. for torch)");
  std::vector<size_t> shape(t.dims().begin(), t.dims().end());
  const int dev_type = t.device().is_cpu() ? kDlCpu : gpu_dlpack_device();
  const int dev_id = t.device().is_cpu() ? 0 : t.device().index;
  alignas(64) static uint8_t empty_data[64];  // a valid pointer for zero-size outputs
  auto* held = new Tensor(std::move(t));
  nb::capsule owner(held, [](void* p) noexcept { delete static_cast<Tensor*>(p); });
  void* data = held->data() ? held->data() : empty_data;
  if (dlpack)
    return nb::ndarray<nb::array_api>(data, shape.size(), shape.data(), owner, nullptr, dt, dev_type, dev_id).cast();
  return nb::ndarray<nb::numpy>(data, shape.size(), shape.data(), owner, nullptr, dt, dev_type, dev_id).cast();
}

}  // namespace infera::py
