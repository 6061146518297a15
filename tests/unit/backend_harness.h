// The backend-conformance harness (in the manner of ggml's test-backend-ops): one op case runs on
// every registered backend that claims it, in every format that backend offers (and in place
// where it allows), against the reference kernel, with a normalized error. A new backend gets
// every case by registering itself (src/backends/registry.cpp); data moves to and from its
// formats and device through the backends' own conversion kernels.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "op_test_util.h"
#include "ops/infer.h"

namespace infera::test {

using Attrs = std::map<std::string, Attribute>;

struct OpCase {
  std::string op, domain;
  Attrs attrs;
  std::vector<Tensor> inputs;  // empty Tensor = optional input left out
  std::vector<int> const_inputs;
  int64_t opset = 17;
  int num_outputs = 1;
};

// The result of running one case on one backend.
struct BackendRun {
  bool claimed = false;               // supports() said yes and create() made a kernel
  std::string reason;                 // why not, when not claimed
  int modes = 0;                      // format modes (and in-place variants) run
  std::vector<std::string> failures;  // "mode: error text" for every mode that failed
  std::string impl;                   // the kernel's implementation name (the last mode's)
};

namespace harness {

// A buffer on a device, owned by the backend that allocated it.
struct Buffer {
  const Backend* owner = nullptr;
  void* ptr = nullptr;
  size_t bytes = 0;
  TensorRef ref;
  Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() {
    if (owner && ptr) owner->deallocate(ptr);
  }
};

// Runs a conversion kernel from `from` (device, format) to `to`, made by the first backend that
// offers one (the CPU backends, then the GPU's when a device is involved).
inline Status convert(const ValueInfo& vi, const TensorRef& src, Device from_dev, Format from, TensorRef& dst,
                      Device to_dev, Format to) {
  ConvertRequest cr;
  cr.value = &vi;
  cr.from_device = from_dev;
  cr.to_device = to_dev;
  cr.from = from;
  cr.to = to;
  cr.num_threads = 2;
  std::vector<std::shared_ptr<const Backend>> cands;
  for (const std::string& name : backend_names()) {
    for (Device d : {Device::cpu(), to_dev, from_dev}) {
      auto b = find_backend(name, d);
      if (b.is_ok()) cands.push_back(b.take());
    }
  }
  for (const auto& b : cands) {
    auto k = b->create_convert(cr);
    if (!k.is_ok()) return k.status();
    if (!k.value()) continue;
    std::unique_ptr<KernelState> st = k.value()->make_state();
    std::unique_ptr<Stream> stream = b->make_stream();
    void* scratch = nullptr;
    if (k.value()->scratch_bytes()) {
      auto s = b->allocate(k.value()->scratch_bytes());
      if (!s.is_ok()) return s.status();
      scratch = s.value();
    }
    RunResources res;
    res.scratch = scratch;
    res.scratch_bytes = k.value()->scratch_bytes();
    res.state = st.get();
    res.stream = stream ? stream->native() : nullptr;
    Node n;
    n.name = "convert";
    const TensorRef* in[] = {&src};
    TensorRef* out[] = {&dst};
    ComputeContext ctx(n, in, 1, out, 1, 2, res);
    Status s = k.value()->run(ctx);
    if (s.is_ok() && stream) s = stream->synchronize();
    if (scratch) b->deallocate(scratch);
    return s;
  }
  if (from_dev == to_dev && from == to) {
    if (src.nbytes() && to_dev.is_cpu()) std::memcpy(dst.data, src.data, src.nbytes());
    return Status::ok();
  }
  return Status::error(std::string("no backend converts ") + format_name(from) + " on " + from_dev.str() + " to " +
                       format_name(to) + " on " + to_dev.str());
}

inline Status alloc(const Backend& b, const ValueInfo& vi, Format f, Buffer& buf) {
  buf.owner = &b;
  buf.bytes = b.value_bytes(vi, f);
  auto p = b.allocate(buf.bytes + 64);
  if (!p.is_ok()) return p.status();
  buf.ptr = p.value();
  buf.ref = TensorRef{vi.dtype, vi.shape.concrete(), buf.ptr};
  if (b.device().is_cpu() && vi.dtype == DataType::kFloat32) {  // NaN garbage: nothing may read it
    float* q = static_cast<float*>(buf.ptr);
    for (size_t i = 0; i < (buf.bytes + 64) / 4; ++i) q[i] = std::nanf("");
  }
  return Status::ok();
}

// Non-plain formats with padded channels keep the padding zero: readers see it as x * 0.
inline std::string check_padding(const Buffer& buf, Format f) {
  const int64_t blk = format_channel_block(f);
  if (blk <= 1 || !buf.owner->device().is_cpu() || buf.ref.dims.size() != 4) return "";
  const auto& d = buf.ref.dims;
  const int64_t cb = (d[1] + blk - 1) / blk, hw = d[2] * d[3];
  const float* p = static_cast<const float*>(buf.ptr);
  for (int64_t n = 0; n < d[0]; ++n)
    for (int64_t c = d[1]; c < cb * blk; ++c)
      for (int64_t j = 0; j < hw; ++j)
        if (p[((n * cb + c / blk) * hw + j) * blk + c % blk] != 0.f)
          return "padded channel " + std::to_string(c) + " is not zero";
  return "";
}

}  // namespace harness

// Runs c on backend b in every format mode it offers; outputs compared with `ref` (the
// reference kernel's outputs) with normalized error < tol.
inline BackendRun run_case_on(const Backend& b, const OpCase& c, const std::vector<Tensor>& ref, double tol) {
  using namespace harness;
  BackendRun r;
  Node n;
  n.name = std::string(b.name()) + "_" + c.op;
  n.op_type = c.op;
  n.domain = c.domain;
  n.attrs = c.attrs;
  for (size_t i = 0; i < c.inputs.size(); ++i) n.inputs.push_back(c.inputs[i].empty() ? -1 : static_cast<int>(i));
  for (int i = 0; i < c.num_outputs; ++i) n.outputs.push_back(static_cast<int>(c.inputs.size()) + i);
  auto op = make_kernel(n, c.opset);
  if (!op.is_ok()) {
    r.failures.push_back("make_kernel: " + op.message());
    return r;
  }
  std::vector<ValueInfo> infos(c.inputs.size());
  std::vector<const ValueInfo*> in_ptrs;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    if (c.inputs[i].empty()) {
      in_ptrs.push_back(nullptr);
      continue;
    }
    infos[i].dtype = c.inputs[i].dtype();
    infos[i].shape = Shape::of(c.inputs[i].dims());
    if (std::count(c.const_inputs.begin(), c.const_inputs.end(), static_cast<int>(i)))
      infos[i].value = std::make_shared<Tensor>(c.inputs[i]);
    in_ptrs.push_back(&infos[i]);
  }
  InferContext ictx(n, c.opset, in_ptrs);
  Status s = op.value()->infer(ictx);
  if (!s.is_ok()) {
    r.failures.push_back("infer: " + s.message());
    return r;
  }
  std::vector<const ValueInfo*> out_ptrs;
  for (size_t i = 0; i < ictx.outputs().size(); ++i)
    out_ptrs.push_back(ictx.has_output(i) ? &ictx.outputs()[i] : nullptr);

  StepRequest req;
  req.node = &n;
  req.op = op.value().get();
  req.opset = c.opset;
  req.inputs = in_ptrs;
  req.outputs = out_ptrs;
  req.input_formats.assign(in_ptrs.size(), Format::kPlain);
  req.output_formats.assign(out_ptrs.size(), Format::kPlain);
  req.output_alias.assign(out_ptrs.size(), -1);
  req.num_threads = 2;
  const Support sup = b.supports(req);
  if (!sup.ok) {
    r.reason = sup.reason;
    return r;
  }
  // A slot's base format (plain where the backend reads or writes it, else its first format)
  // and its other one (the first non-plain format, or the base).
  auto base = [](FormatSet set, const ValueInfo* v) {
    if (!v || format_in(set, Format::kPlain)) return Format::kPlain;
    for (unsigned f = 1; f < static_cast<unsigned>(Format::kCount); ++f)
      if (format_in(set, static_cast<Format>(f)) && format_applies(static_cast<Format>(f), v->shape.rank()))
        return static_cast<Format>(f);
    return Format::kPlain;
  };
  auto other = [&](FormatSet set, const ValueInfo* v) {
    for (unsigned f = 1; f < static_cast<unsigned>(Format::kCount); ++f)
      if (v && format_in(set, static_cast<Format>(f)) && format_applies(static_cast<Format>(f), v->shape.rank()))
        return static_cast<Format>(f);
    return base(set, v);
  };
  struct Mode {
    std::string name;
    bool in, out;
    int alias_in;  // in place: output 0 in this input's buffer
  };
  std::vector<Mode> modes = {{"base formats", false, false, -1},
                             {"formats", true, true, -1},
                             {"formats in", true, false, -1},
                             {"formats out", false, true, -1}};
  for (auto [i, o] : sup.in_place)
    if (o == 0 && static_cast<size_t>(i) < c.inputs.size() && !c.inputs[i].empty() &&
        infos[i].dtype == out_ptrs[0]->dtype && infos[i].shape.numel() == out_ptrs[0]->shape.numel() &&
        !infos[i].value) {
      modes.push_back({"in place of input " + std::to_string(i), false, false, i});
      modes.push_back({"formats, in place of input " + std::to_string(i), true, true, i});
    }
  std::vector<std::pair<std::vector<Format>, std::vector<Format>>> seen;
  for (const Mode& m : modes) {
    StepRequest q = req;
    for (size_t i = 0; i < in_ptrs.size(); ++i)
      q.input_formats[i] = infos[i].value ? Format::kPlain
                           : m.in         ? other(sup.input_formats[i], in_ptrs[i])
                                          : base(sup.input_formats[i], in_ptrs[i]);
    for (size_t i = 0; i < out_ptrs.size(); ++i)
      q.output_formats[i] =
          m.out ? other(sup.output_formats[i], out_ptrs[i]) : base(sup.output_formats[i], out_ptrs[i]);
    if (m.alias_in >= 0) {
      q.input_formats[m.alias_in] = q.output_formats[0];
      if (!format_in(sup.input_formats[m.alias_in], q.output_formats[0])) continue;
      q.output_alias[0] = m.alias_in;
    } else {  // a mode that repeats an earlier one's formats is not run twice
      const auto key = std::make_pair(q.input_formats, q.output_formats);
      if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
      seen.push_back(key);
    }
    auto kern = b.create(q);
    if (!kern.is_ok()) {
      r.failures.push_back(m.name + ": create: " + kern.message());
      continue;
    }
    if (!kern.value()) {
      if (m.name == "base formats") {
        r.reason = "declined at creation";
        return r;
      }
      r.failures.push_back(m.name + ": declined at creation although supports() took it");
      continue;
    }
    r.claimed = true;
    r.impl = kern.value()->impl_name();
    ++r.modes;
    const Device dev = b.device();
    std::vector<std::unique_ptr<Buffer>> ins(c.inputs.size()), outs(out_ptrs.size());
    std::vector<const TensorRef*> ip(c.inputs.size(), nullptr);
    std::vector<TensorRef*> op_refs(out_ptrs.size(), nullptr);
    std::string fail;
    for (size_t i = 0; i < c.inputs.size() && fail.empty(); ++i) {
      if (c.inputs[i].empty()) continue;
      ins[i] = std::make_unique<Buffer>();
      s = alloc(b, infos[i], q.input_formats[i], *ins[i]);
      TensorRef host = TensorRef::of(c.inputs[i]);
      if (s.is_ok()) s = convert(infos[i], host, Device::cpu(), Format::kPlain, ins[i]->ref, dev, q.input_formats[i]);
      if (!s.is_ok()) fail = "input " + std::to_string(i) + ": " + s.message();
      ip[i] = &ins[i]->ref;
    }
    for (size_t i = 0; i < out_ptrs.size() && fail.empty(); ++i) {
      if (!out_ptrs[i]) continue;
      outs[i] = std::make_unique<Buffer>();
      s = alloc(b, *out_ptrs[i], q.output_formats[i], *outs[i]);
      if (!s.is_ok()) fail = "output " + std::to_string(i) + ": " + s.message();
      op_refs[i] = &outs[i]->ref;
    }
    if (m.alias_in >= 0 && fail.empty()) op_refs[0] = &ins[m.alias_in]->ref;
    std::unique_ptr<KernelState> st = kern.value()->make_state();
    std::unique_ptr<Stream> stream = b.make_stream();
    Buffer scratch;
    if (fail.empty() && kern.value()->scratch_bytes()) {
      auto sp = b.allocate(kern.value()->scratch_bytes());
      if (sp.is_ok()) {
        scratch.owner = &b, scratch.ptr = sp.value();
        if (b.device().is_cpu())  // NaN garbage, as in the buffers: a kernel must write before it reads
          for (size_t i = 0; i < kern.value()->scratch_bytes() / 4; ++i)
            static_cast<float*>(sp.value())[i] = std::nanf("");
      } else
        fail = "scratch: " + sp.message();
    }
    RunResources res;
    res.scratch = scratch.ptr;
    res.scratch_bytes = kern.value()->scratch_bytes();
    res.state = st.get();
    res.stream = stream ? stream->native() : nullptr;
    ComputeContext ctx(n, ip.data(), ip.size(), op_refs.data(), op_refs.size(), 2, res);
    // Twice, as a kernel runs many times (once in place: the input is consumed).
    for (int rep = 0; rep < (m.alias_in >= 0 ? 1 : 2) && fail.empty(); ++rep) {
      s = kern.value()->run(ctx);
      if (s.is_ok() && stream) s = stream->synchronize();
      if (!s.is_ok()) fail = "run: " + s.message();
    }
    for (size_t i = 0; i < out_ptrs.size() && fail.empty(); ++i) {
      if (!out_ptrs[i]) continue;
      const Buffer& got = m.alias_in >= 0 && i == 0 ? *ins[m.alias_in] : *outs[i];
      fail = check_padding(got, q.output_formats[i]);
      if (!fail.empty()) break;
      Tensor back = Tensor::make(out_ptrs[i]->dtype, out_ptrs[i]->shape.concrete()).take();
      TensorRef br = TensorRef::of(back);
      s = convert(*out_ptrs[i], got.ref, dev, q.output_formats[i], br, Device::cpu(), Format::kPlain);
      if (!s.is_ok()) {
        fail = "output " + std::to_string(i) + " back: " + s.message();
        break;
      }
      if (i < ref.size() && !ref[i].empty()) {
        if (back.dtype() == DataType::kFloat32) {
          // fp16 storage holds the reference rounded to fp16 at best (FLT_MAX becomes +Inf).
          Tensor want = ref[i];
          if (format_is_f16(q.output_formats[i]) && ref[i].dtype() == DataType::kFloat32) {
            want = Tensor::make(DataType::kFloat32, ref[i].dims()).take();
            for (int64_t k = 0; k < want.numel(); ++k)
              want.data_as<float>()[k] = half_to_float(float_to_half(ref[i].data_as<float>()[k]));
          }
          const double err = normalized_error(back, want);
          if (!(err < tol)) fail = "output " + std::to_string(i) + ": normalized error " + std::to_string(err);
        } else if (back.dtype() != ref[i].dtype() || back.dims() != ref[i].dims() ||
                   std::memcmp(back.data(), ref[i].data(), back.nbytes()) != 0) {
          fail = "output " + std::to_string(i) + " (" + dtype_name(back.dtype()) + ") differs from the reference";
        }
      }
    }
    if (!fail.empty()) r.failures.push_back(m.name + ": " + fail + " [" + kern.value()->impl_name() + "]");
  }
  return r;
}

// The backends every case runs on: the CPU's, and the GPU's in fp32 and fp16 when this build has
// a GPU backend and the machine a GPU (gpu_backend_status() says why not otherwise).
struct Target {
  std::string name;  // "dnnl", "gpu", "gpu-fp16"
  std::shared_ptr<const Backend> backend;
  double min_tol = 0;  // fp16 storage: normalized error up to 1e-2
};
inline const Status& gpu_backend_status() {
  static const Status s = find_backend("gpu", Device::gpu(0)).status();
  return s;
}
inline const std::vector<Target>& targets() {
  static const std::vector<Target> t = [] {
    std::vector<Target> r;
    for (const std::string& name : backend_names()) {
      auto b = find_backend(name, Device::cpu());
      if (b.is_ok()) r.push_back({name, b.take(), 0});
    }
    if (gpu_backend_status().is_ok()) {
      BackendOptions f16;
      f16.precision = Precision::kFp16;
      r.push_back({"gpu", find_backend("gpu", Device::gpu(0)).take(), 1e-5});
      r.push_back({"gpu-fp16", find_backend("gpu", Device::gpu(0), f16).take(), 1e-2});
    }
    return r;
  }();
  return t;
}

// Runs c on every target; fails the test on any error. Every backend in `must` has to claim
// the case. Returns the runs by target name.
inline std::map<std::string, BackendRun> check_case(const OpCase& c, const std::string& what,
                                                    const std::vector<std::string>& must = {"dnnl"},
                                                    double tol = 1e-4) {
  std::map<std::string, BackendRun> runs;
  auto ref = run_op(c.op, c.attrs, c.inputs, c.num_outputs, c.opset, c.const_inputs, c.domain);
  EXPECT_TRUE(ref.is_ok()) << what << ": reference: " << ref.message();
  if (!ref.is_ok()) return runs;
  for (const Target& t : targets()) {
    // TF32 off, the GPU's fp32 kernels hold 1e-5; fp16 storage 1e-2.
    const double t_tol = t.name == "gpu" ? 1e-5 : std::max(tol, t.min_tol);
    BackendRun r = run_case_on(*t.backend, c, ref.value(), t_tol);
    for (const std::string& f : r.failures) ADD_FAILURE() << what << " on " << t.name << ": " << f;
    if (std::find(must.begin(), must.end(), t.name) != must.end())
      EXPECT_TRUE(r.claimed) << what << ": " << t.name << " did not take it: " << r.reason;
    runs[t.name] = std::move(r);
  }
  return runs;
}

}  // namespace infera::test
