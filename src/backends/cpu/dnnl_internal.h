// Shared pieces of the oneDNN backend: the global engine, memory descriptors for the
// plain/blocked layouts, the one kernel class every op family builds, and the family hooks.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "backends/cpu/backend.h"

namespace infera::cpu {

using dnnl::memory;
using Dims = std::vector<int64_t>;

dnnl::engine& engine();
// INFERA_VERBOSE: >= 1 prints why oneDNN declined a node (the planner prints the kernels
// picked); >= 2 also prints every kernel made, including those of discarded plan attempts.
int verbose();

memory::format_tag plain_tag(int rank);  // a, ab, abc, abcd, ... (0 for rank > 6)
memory::format_tag blocked_tag();        // nChw16c (AVX-512) or nChw8c
memory::desc plain_md(const Dims& dims);
// float32 descriptor of dims in layout l (blocked only applies to 4-D).
memory::desc md_of(const Dims& dims, Layout l);

// True when every present input and output of the request is float32 with a known shape.
bool all_float32(const AccelRequest& req);
bool has_in(const AccelRequest& req, size_t i);
bool has_out(const AccelRequest& req, size_t i);
Dims in_dims(const AccelRequest& req, size_t i);
Dims out_dims(const AccelRequest& req, size_t i);
Layout in_layout(const AccelRequest& req, size_t i);
Layout out_layout(const AccelRequest& req, size_t i);
// Per-slot blocked flags: true for the listed slots when that value is a 4-D non-constant.
std::vector<bool> blocked_slots(const std::vector<const ValueInfo*>& vals, const std::vector<int>& slots);

// One eltwise step: fused activations are chains of these (HardSigmoid = linear, clip).
struct EltOp {
  dnnl::algorithm alg;
  float alpha = 0.f;
  float beta = 0.f;
};
// Activation by ONNX op name ("Relu", "LeakyRelu", "Clip", ...) with its parameters; the
// has_* flags say whether alpha/beta were given (else ONNX defaults). False if unknown.
bool activation_chain(const std::string& name, bool has_alpha, float alpha, bool has_beta, float beta,
                      std::vector<EltOp>& out);
// The fused activation of a com.infera.Fused* node ("activation", "activation_alpha/beta").
bool fused_activation(const Node& n, std::vector<EltOp>& out);
void append_eltwise_ops(dnnl::post_ops& po, const std::vector<EltOp>& ops);

// The kernel every family builds: primitives run in order on one stream; memories are bound
// to the context's input/output buffers by set_data_handle at each run (no allocation).
class DnnlKernel : public AccelKernel {
 public:
  explicit DnnlKernel(std::string name) : name_(std::move(name)) {}
  // A memory with no buffer, bound at run to input/output slot i.
  memory bind_input(int i, const memory::desc& md);
  memory bind_output(int i, const memory::desc& md);
  // A memory owned by the kernel (reordered weights, folded constants, scratch).
  memory own(const memory::desc& md, bool is_weight = true);
  // When a step runs: always, or only when input slot `in` and output slot `out` share a
  // buffer (kIfAliased) or do not (kIfDistinct); e.g. a residual already in the output.
  enum class When { kAlways, kIfAliased, kIfDistinct };
  void add_step(const dnnl::primitive& p, std::unordered_map<int, memory> args, When when = When::kAlways, int in = -1,
                int out = -1);
  void set_impl(const std::string& s) { impl_ = s; }
  Status run(ComputeContext& ctx) override;
  size_t weight_bytes() const override { return weight_bytes_; }
  std::string impl_name() const override { return name_ + " " + impl_; }

 private:
  struct Binding {
    memory mem;
    bool output;
    int slot;
  };
  struct Step {
    dnnl::primitive prim;
    std::unordered_map<int, memory> args;
    When when;
    int in, out;
  };
  std::string name_, impl_;
  std::vector<Binding> bindings_;
  std::vector<Step> steps_;
  size_t weight_bytes_ = 0;
  std::unique_ptr<dnnl::stream> stream_;
  std::mutex mu_;  // run() rebinds handles: one run at a time per kernel
};

// Reorders src memory into a new owned memory of md (weights into the primitive's format).
memory reorder_owned(DnnlKernel& k, const memory& src, const memory::desc& md);

void log_impl(const AccelRequest& req, const std::string& impl);

// The layouts (src, dst) to compute a 4-D op in: the requested ones unless oneDNN has only
// its reference or im2col-gemm implementation for them (mixed layouts, padded blocked input,
// plain convs), then the first of (src, blocked), (blocked, blocked), (plain, blocked),
// (plain, plain) with a better one; reorders bridge the difference. impl_of returns the
// implementation name for a pair (or throws dnnl::error). gemm_ok: gemm is as good as jit
// (1x1 stride-1 convs need no im2col; measured: plain gemm beats reorders + jit there).
std::pair<Layout, Layout> pick_layouts(Layout src, Layout dst,
                                       const std::function<std::string(Layout, Layout)>& impl_of, bool gemm_ok = false);
// Memory for an input bound to `slot` as the primitive reads it: the bound buffer itself when
// `want` is its layout, else a kernel-owned scratch filled by a reorder step added now.
memory input_as(DnnlKernel& k, int slot, const memory::desc& given, const memory::desc& want);
// The same for an output: `finish` must be called after the main step (adds the reorder).
struct OutputAs {
  memory compute, bound;
  void finish(DnnlKernel& k) const;
};
OutputAs output_as(DnnlKernel& k, int slot, const memory::desc& given, const memory::desc& want);

// Op families: query (cheap) and create. Create throws dnnl::error on failure (caught by
// dnnl_create and turned into a decline).
AccelSupport conv_query(const AccelRequest& req);
std::unique_ptr<AccelKernel> conv_create(const AccelRequest& req);
AccelSupport deconv_query(const AccelRequest& req);
std::unique_ptr<AccelKernel> deconv_create(const AccelRequest& req);
AccelSupport gemm_query(const AccelRequest& req);
std::unique_ptr<AccelKernel> gemm_create(const AccelRequest& req);
AccelSupport matmul_query(const AccelRequest& req);
std::unique_ptr<AccelKernel> matmul_create(const AccelRequest& req);
AccelSupport pool_query(const AccelRequest& req);
std::unique_ptr<AccelKernel> pool_create(const AccelRequest& req);
AccelSupport bn_query(const AccelRequest& req);
std::unique_ptr<AccelKernel> bn_create(const AccelRequest& req);
AccelSupport eltwise_query(const AccelRequest& req);
std::unique_ptr<AccelKernel> eltwise_create(const AccelRequest& req);
AccelSupport binary_query(const AccelRequest& req);
std::unique_ptr<AccelKernel> binary_create(const AccelRequest& req);
AccelSupport softmax_query(const AccelRequest& req);
std::unique_ptr<AccelKernel> softmax_create(const AccelRequest& req);
AccelSupport concat_query(const AccelRequest& req);
std::unique_ptr<AccelKernel> concat_create(const AccelRequest& req);

}  // namespace infera::cpu
