// The GPU backend: device memory, streams, conversions between the host's plain format and the
// device's (NHWC, fp16 storage), describe, and the dispatch to the op families.
#include "backends/gpu/gpu_backend.h"

#include <cstring>
#include <mutex>

#include "backends/gpu/blas.h"
#include "backends/gpu/dnn.h"
#include "backends/gpu/gpu_internal.h"
#include "ops/activation.h"

namespace infera {
namespace gpu_backend {

Status device_error(const std::string& what, gpu::Status s) {
  return Status::error(StatusCode::kDeviceError, what + ": " + (s.error ? s.error : "unknown GPU error"));
}

namespace {

gpu::Status set_device(int d) {
  GPU_TRY(gpuSetDevice(d));
  return {};
}

}  // namespace

DeviceBuffer::~DeviceBuffer() {
  if (p_) {
    (void)gpuSetDevice(device_);
    (void)gpuFree(p_);
  }
}

Result<void*> device_malloc(int device, size_t bytes) {
  INFERA_GPU_OK("gpu: select device", set_device(device));
  void* p = nullptr;
  gpuError_t e = gpuMalloc(&p, std::max<size_t>(bytes, 256));
  if (e != gpuSuccess) {
    (void)gpuGetLastError();  // clear it: the device stays usable
    return Status::error(StatusCode::kOutOfMemory, "gpu:" + std::to_string(device) +
                                                       ": out of device memory allocating " + std::to_string(bytes) +
                                                       " bytes (" + gpuGetErrorString(e) + ")");
  }
  return p;
}

Result<DeviceBuffer> DeviceBuffer::make(int device, size_t bytes) {
  auto p = device_malloc(device, bytes);
  if (!p.is_ok()) return p.status();
  DeviceBuffer b;
  b.device_ = device;
  b.bytes_ = bytes;
  b.p_ = p.value();
  return Result<DeviceBuffer>(std::move(b));
}

Result<DeviceBuffer> DeviceBuffer::upload(int device, const void* host, size_t bytes) {
  auto b = make(device, bytes);
  if (!b.is_ok()) return b.status();
  if (bytes) {
    gpuError_t e = gpuMemcpyHtoD(b.value().get(), host, bytes);
    if (e != gpuSuccess) return device_error("gpu: upload", gpu::Status{gpuGetErrorString(e)});
  }
  return b;  // a Result already
}

std::vector<uint8_t> float_bytes(const float* v, size_t n, bool as_f16) {
  std::vector<uint8_t> out(n * (as_f16 ? sizeof(uint16_t) : sizeof(float)));
  if (!as_f16) {
    if (n) std::memcpy(out.data(), v, out.size());
    return out;
  }
  for (size_t i = 0; i < n; ++i) {
    const uint16_t h = float_to_half(v[i]);
    std::memcpy(out.data() + i * sizeof(h), &h, sizeof(h));
  }
  return out;
}

std::string layout_of(const char* dtype, const std::vector<int64_t>& dims) {
  std::string s = std::string(dtype) + ":";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "x" : "") + std::to_string(dims[i]);
  return s;
}

Result<DeviceConst> device_const(const GpuConfig& c, const StepRequest& req, int input, const std::string& what,
                                 const std::string& layout, size_t bytes,
                                 const std::function<std::vector<uint8_t>()>& make) {
  const Node& n = *req.node;
  const bool shared = req.packed && input >= 0 && static_cast<size_t>(input) < n.inputs.size() && !n.outputs.empty();
  const std::string key = shared ? PackedWeights::key_of("gpu" + std::to_string(c.dev.index) + ":" + what,
                                                         n.inputs[input], n.outputs[0], n.name)
                                 : std::string();
  if (shared)
    if (DeviceConst d = req.packed->find(key, layout, bytes)) return d;
  const std::vector<uint8_t> host = make();
  if (host.size() != bytes)
    return Status::error(StatusCode::kInternal, "gpu: " + what + " of " + n.label() + ": made " +
                                                    std::to_string(host.size()) + " bytes, not " +
                                                    std::to_string(bytes));
  auto b = DeviceBuffer::upload(c.dev.index, host.data(), bytes);
  if (!b.is_ok()) return b.status();
  auto owner = std::make_shared<DeviceBuffer>(b.take());
  void* p = owner->get();
  DeviceConst d = PackedBlob::wrap(p, bytes, c.dev.index, std::move(owner));
  return shared ? req.packed->put(key, layout, std::move(d), false) : d;
}

Support support_all(const StepRequest& req, const std::vector<FormatSet>& in, const std::vector<FormatSet>& out) {
  Support s;
  s.ok = true;
  s.input_formats = in;
  s.output_formats = out;
  s.input_formats.resize(req.inputs.size(), kPlainOnly);
  s.output_formats.resize(req.outputs.size(), kPlainOnly);
  for (size_t i = 0; i < req.inputs.size(); ++i)
    if (req.has_in(i) && req.inputs[i]->value) s.input_formats[i] = kPlainOnly;  // constants stay on the host
  return s;
}

namespace {

// ---------------------------------------------------------------- streams
class GpuStream : public Stream {
 public:
  GpuStream(int device, gpuStream_t s) : device_(device), s_(s) {}
  ~GpuStream() override {
    (void)gpuSetDevice(device_);
    for (size_t i = 0; i < kGraphSlots; ++i) select_graph(i), drop_graph();
    for (gpuEvent_t e : ev_)
      if (e) (void)gpuEventDestroy(e);
    (void)gpuStreamDestroy(s_);
  }
  Status synchronize() override {
    gpuError_t e = gpuSetDevice(device_);
    if (e == gpuSuccess) e = gpuStreamSynchronize(s_);
    if (e != gpuSuccess) return device_error("gpu: stream", gpu::Status{gpuGetErrorString(e)});
    return Status::ok();
  }
  void* native() override { return s_; }

  bool can_capture() const override { return true; }
  Status begin_capture() override {
    gpuError_t e = gpuSetDevice(device_);
    if (e == gpuSuccess) e = gpuStreamBeginCapture(s_);
    return check("begin graph capture", e);
  }
  Status end_capture() override {
    gpuGraph_t g = nullptr;
    gpuError_t e = gpuStreamEndCapture(s_, &g);
    if (e == gpuSuccess) e = gpuGraphInstantiate(&exec_[slot_], g);
    if (g) (void)gpuGraphDestroy(g);
    if (e != gpuSuccess) exec_[slot_] = nullptr;
    return check("end graph capture", e);
  }
  Status replay() override {
    if (!exec_[slot_]) return Status::error(StatusCode::kInternal, "gpu: no graph to replay");
    gpuError_t e = gpuSetDevice(device_);
    if (e == gpuSuccess) e = gpuGraphLaunch(exec_[slot_], s_);
    return check("graph launch", e);
  }
  bool has_graph() const override { return exec_[slot_] != nullptr; }
  void drop_graph() override {
    if (exec_[slot_]) (void)gpuGraphExecDestroy(exec_[slot_]);
    exec_[slot_] = nullptr;
  }
  size_t graph_slots() const override { return kGraphSlots; }
  void select_graph(size_t slot) override { slot_ = slot < kGraphSlots ? slot : 0; }
  Status time_begin() override {
    gpuError_t e = gpuSuccess;
    if (!ev_[0]) e = gpuEventCreate(&ev_[0]);
    if (e == gpuSuccess && !ev_[1]) e = gpuEventCreate(&ev_[1]);
    if (e == gpuSuccess) e = gpuEventRecord(ev_[0], s_);
    return check("event record", e);
  }
  Result<double> time_end() override {
    float ms = 0;
    gpuError_t e = gpuEventRecord(ev_[1], s_);
    if (e == gpuSuccess) e = gpuEventSynchronize(ev_[1]);
    if (e == gpuSuccess) e = gpuEventElapsedTime(&ms, ev_[0], ev_[1]);
    Status s = check("event timing", e);
    if (!s.is_ok()) return s;
    return static_cast<double>(ms);
  }

 private:
  static Status check(const char* what, gpuError_t e) {
    if (e == gpuSuccess) return Status::ok();
    (void)gpuGetLastError();
    return device_error(std::string("gpu: ") + what, gpu::Status{gpuGetErrorString(e)});
  }
  // Graphs per set of I/O addresses (a run context that alternates buffers, e.g. the chunks of a
  // batch or double-buffered inputs, replays each instead of capturing again).
  static constexpr size_t kGraphSlots = 4;
  int device_;
  gpuStream_t s_;
  gpuGraphExec_t exec_[kGraphSlots] = {};
  size_t slot_ = 0;
  gpuEvent_t ev_[2] = {nullptr, nullptr};
};

// ---------------------------------------------------------------- conversions
// Between the host's plain float32 (or any dtype's plain bytes) and the device's formats, and
// between device formats. Host -> device: the bytes go to the device (into the scratch when a
// layout or type change follows, which one fused kernel then does); device -> host the other
// way round, then the stream is synchronized (the host reads the result next).
class ConvertKernel : public GpuKernel {
 public:
  ConvertKernel(const GpuConfig& c, const ConvertRequest& r)
      : GpuKernel(c, std::string(r.from_device.is_cpu() ? "upload "
                                 : r.to_device.is_cpu() ? "download "
                                                        : "") +
                         format_name(r.from) + " -> " + format_name(r.to)),
        r_(r),
        vi_(*r.value) {
    dims_ = vi_.shape.concrete();
    const bool host_side = r.from_device.is_cpu() || r.to_device.is_cpu();
    const Format dev_fmt = r.from_device.is_cpu() ? r.to : r.from;
    needs_staging_ = host_side && dev_fmt != Format::kPlain;
    staging_ = needs_staging_ ? format_bytes(Format::kPlain, vi_.dtype, dims_) : 0;
  }
  size_t scratch_bytes() const override { return staging_; }

  Status run(ComputeContext& ctx) const override {
    INFERA_GPU_OK("gpu: select device", set_device(cfg_.dev.index));
    const TensorRef& x = ctx.in(0);
    TensorRef& y = ctx.out(0);
    gpuStream_t s = stream(ctx);
    const size_t plain_bytes = format_bytes(Format::kPlain, vi_.dtype, dims_);
    // A caller may hand the "host" side in device memory (device-resident inputs and outputs):
    // then the layout change reads or writes it directly, with no staging copy.
    if (r_.from_device.is_cpu()) {  // upload
      if (needs_staging_ && gpuIsDevicePointer(x.data)) return transform(Format::kPlain, r_.to, x.data, y.data, s);
      void* dst = needs_staging_ ? ctx.res.scratch : y.data;
      if (plain_bytes) INFERA_GPU_OK("gpu: upload '" + ctx.node.name + "'", copy(dst, x.data, plain_bytes, s));
      if (needs_staging_) return transform(Format::kPlain, r_.to, dst, y.data, s);
      return Status::ok();
    }
    if (r_.to_device.is_cpu()) {  // download
      if (needs_staging_ && gpuIsDevicePointer(y.data)) return transform(r_.from, Format::kPlain, x.data, y.data, s);
      const void* src = x.data;
      if (needs_staging_) {
        Status st = transform(r_.from, Format::kPlain, x.data, ctx.res.scratch, s);
        if (!st.is_ok()) return st;
        src = ctx.res.scratch;
      }
      // The executor waits for the stream before the host reads the result.
      if (plain_bytes) INFERA_GPU_OK("gpu: download '" + ctx.node.name + "'", copy(y.data, src, plain_bytes, s));
      return Status::ok();
    }
    return transform(r_.from, r_.to, x.data, y.data, s);
  }

 private:
  static gpu::Status copy(void* d, const void* src, size_t n, gpuStream_t s) {
    GPU_TRY(gpuMemcpyAsync(d, src, n, s));
    return {};
  }
  // A layout and/or storage change on the device (plain float32 <-> a device format; int8 and
  // uint8 values change layout only).
  Status transform(Format from, Format to, const void* x, void* y, gpuStream_t s) const {
    const int64_t n = static_cast<int64_t>(vi_.shape.numel());
    if (dims_.size() == 4 && (is_nhwc(from) || is_nhwc(to)) && is_nhwc(from) != is_nhwc(to)) {
      const int N = static_cast<int>(dims_[0]), C = static_cast<int>(dims_[1]), H = static_cast<int>(dims_[2]),
                W = static_cast<int>(dims_[3]);
      const bool byte = vi_.dtype == DataType::kInt8 || vi_.dtype == DataType::kUInt8;
      const gpu::DType df = byte ? gpu::DType::kS8 : dtype_of(from), dt = byte ? gpu::DType::kS8 : dtype_of(to);
      if (is_nhwc(to)) {
        gpu::OutNhwc o{y, 0, 0};
        INFERA_GPU_OK("gpu: nchw -> nhwc", gpu::nchw_to_nhwc(df, dt, N, C, H, W, x, o, C, s));
      } else {
        gpu::InNhwc i{x, 0, 0};
        INFERA_GPU_OK("gpu: nhwc -> nchw", gpu::nhwc_to_nchw(df, dt, N, C, H, W, i, y, s));
      }
      return Status::ok();
    }
    if (is_nhwc(from) == is_nhwc(to) && dtype_of(from) != dtype_of(to)) {
      INFERA_GPU_OK("gpu: cast", gpu::cast(dtype_of(from), dtype_of(to), n, x, y, s));
      return Status::ok();
    }
    if (from == to) {
      INFERA_GPU_OK("gpu: copy", copy(y, x, format_bytes(from, vi_.dtype, dims_), s));
      return Status::ok();
    }
    return Status::error(StatusCode::kInternal, std::string("gpu: no conversion from ") + format_name(from) + " to " +
                                                    format_name(to) + " for " + vi_.shape.str());
  }

  ConvertRequest r_;
  ValueInfo vi_;
  Dims dims_;
  bool needs_staging_ = false;
  size_t staging_ = 0;
};

bool device_format(Format f) {
  return f == Format::kPlain || f == Format::kNhwc || f == Format::kNhwcF16 || f == Format::kPlainF16;
}

// ---------------------------------------------------------------- the backend
class GpuBackend : public Backend {
 public:
  explicit GpuBackend(GpuConfig c) : cfg_(std::move(c)) {}
  const char* name() const override { return "gpu"; }
  Device device() const override { return Device::gpu(cfg_.dev.index); }
  size_t alignment() const override { return 256; }
  size_t memory_bytes() const override { return cfg_.dev.total_memory; }

  BackendInfo info() const override {
    BackendInfo b;
    b.name = name();
    b.device = device().str();
    b.available = true;
    b.version = std::string(kGpuVendor) + " " + cfg_.dev.name;
    b.details = describe_device(cfg_.dev);
    return b;
  }

  Support supports(const StepRequest& req) const override {
    if (!req.node || !req.op) return Support::no("no node");
    const Family* f = conv_family(req);
    if (!f) f = ops_family(req);
    if (!f) f = memops_family(req);
    const bool int8 = f && f->int8;  // the int8 ops check their own dtypes
    for (const ValueInfo* v : req.inputs)
      if (v && (!v->shape.fully_known() || (!v->value && !int8 && v->dtype != DataType::kFloat32)))
        return Support::no("the GPU takes float32 activations of known shape");
    for (const ValueInfo* v : req.outputs)
      if (v && (!v->shape.fully_known() || (!int8 && v->dtype != DataType::kFloat32)))
        return Support::no("the GPU writes float32 values of known shape");
    if (!f) return Support::no("no GPU kernel for this op");
    return f->query(cfg_, req);
  }

  Result<std::unique_ptr<StepKernel>> create(const StepRequest& req) const override {
    const Family* f = conv_family(req);
    if (!f) f = ops_family(req);
    if (!f) f = memops_family(req);
    if (!f || !f->query(cfg_, req).ok) return std::unique_ptr<StepKernel>();
    return f->create(cfg_, req);
  }

  Result<std::unique_ptr<StepKernel>> create_convert(const ConvertRequest& r) const override {
    const bool ours = (r.from_device == device() && (r.to_device == device() || r.to_device.is_cpu())) ||
                      (r.from_device.is_cpu() && r.to_device == device());
    if (!ours || !r.value || !r.value->shape.fully_known()) return std::unique_ptr<StepKernel>();
    const Format host = r.from_device.is_cpu() ? r.from : r.to_device.is_cpu() ? r.to : Format::kPlain;
    if (host != Format::kPlain) return std::unique_ptr<StepKernel>();  // the host side is plain
    const Format a = r.from_device.is_cpu() ? r.to : r.from, b = r.to_device.is_cpu() ? r.from : r.to;
    if (!device_format(a) || !device_format(b)) return std::unique_ptr<StepKernel>();
    const bool f16 = format_is_f16(r.from) || format_is_f16(r.to);
    const bool byte = r.value->dtype == DataType::kInt8 || r.value->dtype == DataType::kUInt8;  // int8 NHWC
    if ((f16 || is_nhwc(r.from) || is_nhwc(r.to)) && r.value->dtype != DataType::kFloat32 && !(byte && !f16))
      return std::unique_ptr<StepKernel>();
    return std::unique_ptr<StepKernel>(std::make_unique<ConvertKernel>(cfg_, r));
  }

  Result<void*> allocate(size_t bytes) const override { return device_malloc(cfg_.dev.index, bytes); }
  bool pins_host_memory() const override { return true; }
  Result<void*> allocate_host(size_t bytes) const override {
    void* p = nullptr;
    gpuError_t e = gpuSetDevice(cfg_.dev.index);
    if (e == gpuSuccess) e = gpuMallocHost(&p, std::max<size_t>(bytes, 64));
    if (e != gpuSuccess) {
      (void)gpuGetLastError();
      return Status::error(StatusCode::kOutOfMemory, "gpu: out of pinned host memory allocating " +
                                                         std::to_string(bytes) + " bytes (" + gpuGetErrorString(e) +
                                                         ")");
    }
    return p;
  }
  void deallocate_host(void* p) const override {
    if (p) (void)gpuFreeHost(p);
  }
  Status copy(void* dst, const void* src, size_t bytes) const override {
    if (!bytes) return Status::ok();
    gpuError_t e = gpuSetDevice(cfg_.dev.index);
    if (e == gpuSuccess) e = gpuMemcpyAsync(dst, src, bytes, nullptr);
    if (e == gpuSuccess) e = gpuDeviceSynchronize();
    if (e != gpuSuccess) return device_error("gpu: copy", gpu::Status{gpuGetErrorString(e)});
    return Status::ok();
  }
  void deallocate(void* p) const override {
    if (!p) return;
    (void)gpuSetDevice(cfg_.dev.index);
    (void)gpuFree(p);
  }
  std::unique_ptr<Stream> make_stream() const override {
    gpuStream_t s = nullptr;
    if (gpuSetDevice(cfg_.dev.index) != gpuSuccess || gpuStreamCreate(&s) != gpuSuccess) return nullptr;
    return std::make_unique<GpuStream>(cfg_.dev.index, s);
  }

  static std::string describe_device(const GpuDevice& d) {
    std::string r = d.name + ", arch " + std::to_string(d.info.arch) + ", " + std::to_string(d.info.sm_count) +
                    " multiprocessors, " + std::to_string(d.total_memory >> 20) + " MiB";
    auto ver = [](int v) { return v ? std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) : "absent"; };
    r += "; cuDNN " + ver(gpu::dnn_version()) + ", cuBLASLt " + ver(gpu::blas_version());
    return r;
  }

 private:
  GpuConfig cfg_;
};

Result<GpuDevice> open_device(int index) {
  int count = 0;
  gpuError_t e = gpuGetDeviceCount(&count);
  if (e != gpuSuccess || count == 0)
    return Status::error(StatusCode::kUnsupported, std::string("no GPU found (") + kGpuVendor + ": " +
                                                       (e != gpuSuccess ? gpuGetErrorString(e) : "0 devices") + ")");
  if (index < 0 || index >= count)
    return Status::error(StatusCode::kInvalidInput, "gpu:" + std::to_string(index) + " does not exist (" +
                                                        std::to_string(count) + " GPU" + (count == 1 ? "" : "s") +
                                                        ": gpu:0.." + std::to_string(count - 1) + ")");
  GpuDevice d;
  d.index = index;
  gpu::Status s = gpu::query_device(index, &d.info);
  if (!s.ok()) return device_error("gpu:" + std::to_string(index), s);
  gpuDeviceProp prop{};
  if (gpuGetDeviceProperties(&prop, index) == gpuSuccess) {
    d.name = prop.name;
    d.total_memory = prop.totalGlobalMem;
  }
  return d;
}

}  // namespace
}  // namespace gpu_backend

Result<std::shared_ptr<const Backend>> make_gpu_backend(Device device, const BackendOptions& o) {
  using namespace gpu_backend;
  if (o.precision != Precision::kFp32 && o.precision != Precision::kFp16)
    return Status::error(StatusCode::kUnsupported,
                         std::string("the GPU backend runs fp32 and fp16, not ") + precision_name(o.precision));
  auto d = open_device(device.index);
  if (!d.is_ok()) return d.status();
  GpuConfig c;
  c.dev = d.take();
  c.precision = o.precision;
  c.tf32 = o.tf32;
  c.vendor_libs = o.vendor_libs;
  c.verbose = o.verbose;
  return std::shared_ptr<const Backend>(std::make_shared<GpuBackend>(c));
}

std::vector<BackendInfo> gpu_backend_infos() {
  using namespace gpu_backend;
  std::vector<BackendInfo> r;
  int count = 0;
  gpuError_t e = gpuGetDeviceCount(&count);
  if (e != gpuSuccess || count == 0) {
    BackendInfo b;
    b.name = "gpu";
    b.device = "gpu";
    b.details = std::string("no GPU found (") + kGpuVendor + ": " +
                (e != gpuSuccess ? gpuGetErrorString(e) : "0 devices") + ")";
    r.push_back(b);
    return r;
  }
  for (int i = 0; i < count; ++i) {
    BackendInfo b;
    b.name = "gpu";
    b.device = "gpu:" + std::to_string(i);
    auto d = open_device(i);
    b.available = d.is_ok();
    char bus[64] = {};
    if (gpuDeviceGetPCIBusId(bus, sizeof bus, i) == gpuSuccess) b.pci_bus_id = bus;
    if (d.is_ok()) {
      b.version = std::string(kGpuVendor) + " " + d.value().name;
      b.details = GpuBackend::describe_device(d.value());
    } else {
      b.details = d.message();
    }
    r.push_back(b);
  }
  return r;
}

}  // namespace infera
