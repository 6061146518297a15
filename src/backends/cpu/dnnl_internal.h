// Shared pieces of the oneDNN backend: the engine, memory descriptors per format, the one kernel
// class every op family builds, and the family hooks.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "backends/cpu/dnnl_backend.h"
#include "backends/packed_weights.h"
#include "ops/activation.h"
#include "ops/conv.h"

namespace infera::cpu {

using dnnl::memory;
using Dims = std::vector<int64_t>;

// Loops that should vectorize wider than the tree's x86-64 baseline: built for AVX-512, AVX2 and
// the baseline, the widest the CPU has picked at load time (GCC function multiversioning). Not
// under ThreadSanitizer: the clones' ifunc resolvers run before its runtime is up (the test binary
// crashed at start).
#if defined(__SANITIZE_THREAD__)
#define INFERA_CLONES
#else
#define INFERA_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif

dnnl::engine& engine();
// INFERA_VERBOSE: >= 2 prints every kernel made (including those of discarded plan attempts).
int verbose();

// oneDNN (OpenMP runtime) fixes a primitive's thread count when the primitive is made, from
// omp_get_max_threads() of the making thread: a session of N threads must make its primitives
// under N, or a --threads 1 session runs 2-thread teams and spins on a loaded machine. Sets the
// count of the calling thread for the scope and restores it.
class OmpThreadsScope {
 public:
  explicit OmpThreadsScope(int n);
  ~OmpThreadsScope();
  OmpThreadsScope(const OmpThreadsScope&) = delete;
  OmpThreadsScope& operator=(const OmpThreadsScope&) = delete;

 private:
  int prev_, n_;
};

memory::format_tag plain_tag(int rank);  // a, ab, abc, abcd, ... (undef for rank > 6)
memory::desc plain_md(const Dims& dims);
// float32 descriptor of dims in format f (blocked formats only apply to 4-D).
memory::desc md_of(const Dims& dims, Format f);
// A 4-D descriptor of type t in plain (NCHW) or channels-last (kNhwc) order: the int8 values' layouts
// (and the fp32 ones of the exact int8 path).
memory::desc nchw_or_nhwc_md(const Dims& d, memory::data_type t, Format f);
// s8 / u8 for int8 / uint8, undef for any other type.
memory::data_type int8_type(DataType d);
inline bool is_blocked(Format f) { return f == Format::kNChw8c || f == Format::kNChw16c; }
// Every primitive gets a user-managed scratchpad (the run context's scratch memory): oneDNN's
// library-managed one is per thread and sized where a primitive was made, which broke runs
// from threads other than the one that made the plan.
dnnl::primitive_attr user_scratchpad(dnnl::primitive_attr a = {});

// True when every present input and output is float32 with a known shape.
bool all_float32(const StepRequest& req);
// Per-slot format sets: plain for all, plus the blocked format for the listed slots whose
// value is a 4-D non-constant.
std::vector<FormatSet> blocked_slots(const std::vector<const ValueInfo*>& vals, const std::vector<int>& slots);

// One eltwise step: activations are chains of these (HardSigmoid = linear, clip).
struct EltOp {
  dnnl::algorithm alg;
  float alpha = 0.f;
  float beta = 0.f;
};
// The eltwise chain of an activation of the table; false when oneDNN has none for it.
bool eltwise_chain(const Activation& a, std::vector<EltOp>& out);
void append_eltwise_ops(dnnl::post_ops& po, const std::vector<EltOp>& ops);
// Whether oneDNN's eltwise chain for a keeps NaN as NaN, as the reference does (issue 7). Its
// relu (alpha 0) and clip are max/min instructions with the constant as the operand returned for
// NaN: Relu(NaN) = 0, Clip(NaN) = min (-Inf without bounds), HardSigmoid (linear + clip) = 0.
// oneDNN 2.6 has no post-op that keeps NaN for them. LeakyRelu (alpha != 0) multiplies: NaN stays.
bool nan_safe(const Activation& a);
// The activation fused into a Conv/Gemm: post-ops where oneDNN's keep NaN (ops), else none and
// loop = true: the kernel runs activation_after on its output (Relu, Clip, HardSigmoid). False
// when oneDNN has neither.
bool fused_activation(const Activation& a, std::vector<EltOp>& ops, bool& loop);
// A kernel's after-step applying a (Relu, Clip or HardSigmoid) in place on output 0 of dims d in
// format f, NaN kept; from_input: read input 0 instead (same dims and format), for a standalone
// activation. Padded lanes of a blocked format are set to zero after. With a of kind kIdentity
// only that (oneDNN convs compute padded output lanes as 0 * x: NaN where x holds one), or null
// when f has no padded lanes.
std::function<void(ComputeContext&)> activation_after(const Activation& a, const Dims& d, Format f,
                                                      bool from_input = false);
// max |p[i]| over [0, n), +Inf when some value is NaN or +-Inf (one vectorized read).
float max_abs(const float* p, int64_t n, int threads);

// The kernel every family builds. While building, memories stand for what a run binds: an
// input or output slot (bind_*), per-run temporaries in the scratch (temp), or data owned by
// the kernel and fixed at creation (own: reordered weights, folded constants). Each run
// context's state holds its own memory objects and stream; steps run with prebuilt argument
// arrays, so a run allocates nothing.
class DnnlKernel : public StepKernel {
 public:
  explicit DnnlKernel(std::string name) : name_(std::move(name)) {}
  memory bind_input(int i, const memory::desc& md);
  memory bind_output(int i, const memory::desc& md);
  memory temp(const memory::desc& md);
  // The bytes of temp t seen through another descriptor md (no larger than t's): a view for a
  // reorder that writes or reads t with other strides (the space-to-batch convs).
  memory temp_alias(const memory& t, const memory::desc& md);
  // Where temp m lies in a run's scratch (for an after-step that reads it).
  size_t temp_offset(const memory& m) const { return static_cast<size_t>(slots_[slot_of(m)].index); }
  memory own(const memory::desc& md);
  // Owned memory of md over bytes the kernel keeps a reference to (packed weights).
  memory adopt(const memory::desc& md, std::shared_ptr<const PackedBlob> blob);
  // Adds a primitive (made with user_scratchpad()) with its arguments, in execution order.
  void add_step(const dnnl::primitive& p, const std::unordered_map<int, memory>& args);
  void set_impl(const std::string& s) { impl_ = s; }
  // Runs after the primitives, on the bound buffers (e.g. the max pools' NaN fix-up).
  void set_after(std::function<void(ComputeContext&)> f) { after_ = std::move(f); }
  // Runs before anything else (the convs' output bounds from their inputs', RunResources).
  void set_before(std::function<void(ComputeContext&)> f) { before_ = std::move(f); }
  // A second way to compute the same result: the steps added after begin_alternative(), then
  // alt_after. A run takes it when use_alternative(ctx) says so (read before any step), else
  // the steps before and after_. Both share the bound and temporary memories.
  void begin_alternative(std::function<bool(ComputeContext&)> use_alternative,
                         std::function<void(ComputeContext&)> alt_after) {
    split_ = steps_.size();
    use_alt_ = std::move(use_alternative);
    alt_after_ = std::move(alt_after);
  }

  Status run(ComputeContext& ctx) const override;
  std::unique_ptr<KernelState> make_state() const override;
  size_t scratch_bytes() const override { return temp_bytes_ + scratchpad_bytes_; }
  size_t weight_bytes() const override { return weight_bytes_; }
  std::string impl_name() const override { return name_ + " " + impl_; }
  size_t primitive_count() const { return steps_.size(); }

 private:
  enum class Kind { kInput, kOutput, kTemp, kOwned };
  struct Slot {
    Kind kind;
    int index;      // input/output slot, or the temp's byte offset into the scratch
    memory handle;  // kOwned: the memory itself; else the placeholder the family code holds
    memory::desc md;
  };
  struct Arg {
    int arg;   // DNNL_ARG_*
    int slot;  // into slots_
  };
  struct Step {
    dnnl::primitive prim;
    std::vector<Arg> args;
    memory::desc scratchpad;  // zero-size when the primitive needs none
  };
  struct State;
  int slot_of(const memory& m) const;
  memory placeholder(Kind kind, int index, const memory::desc& md);

  std::string name_, impl_;
  std::vector<Slot> slots_;
  std::vector<Step> steps_;
  size_t temp_bytes_ = 0, scratchpad_bytes_ = 0, weight_bytes_ = 0;
  std::vector<std::shared_ptr<const PackedBlob>> blobs_;  // what adopted memories lie in
  std::function<void(ComputeContext&)> after_, before_;
  size_t split_ = SIZE_MAX;  // steps_[split_..] are the alternative (begin_alternative)
  std::function<bool(ComputeContext&)> use_alt_;
  std::function<void(ComputeContext&)> alt_after_;
};

// Weights in a primitive's format: src reordered into md, owned by the kernel. Through the
// session's packed weights (StepRequest::packed) when there are some: src reordered into md is
// looked up under ("dnnl:" + what + the node's weight and output value ids, the layout of
// md) and adopted, or reordered and published. `what` must name everything besides the weight
// constant that decides the bytes (the call site, a filter chunk's channels, a folded alpha).
memory packed_weights(DnnlKernel& k, const StepRequest& req, const std::string& what, const memory& src,
                      const memory::desc& md);
// md's fields in a fixed order (no padding or union bytes): equal strings = the same format.
// "" for a format kind that is neither blocked nor Winograd (never packed).
std::string packed_layout(const memory::desc& md);

void log_impl(const StepRequest& req, const std::string& impl);

// The formats (src, dst) to compute a 4-D op in: the requested ones unless oneDNN has only
// its reference or im2col-gemm implementation for them (mixed formats, padded blocked input,
// plain convs), then the first of (src, B), (B, B), (B8, B8), (plain, B), (plain, plain) with a
// better one (B = blocked, B8 = 8-channel blocks: grouped convs of 8 channels per group on
// AVX-512); reorders bridge the difference. impl_of returns the implementation name for
// a pair (or throws dnnl::error). gemm_ok: gemm is as good as jit (1x1 stride-1 convs need no
// im2col; measured: plain gemm beats reorders + jit there).
std::pair<Format, Format> pick_formats(Format src, Format dst,
                                       const std::function<std::string(Format, Format)>& impl_of, bool gemm_ok = false);
// Memory for an input bound to `slot` as the primitive reads it: the bound buffer itself when
// `want` is its format, else a temporary filled by a reorder step added now.
memory input_as(DnnlKernel& k, int slot, const memory::desc& given, const memory::desc& want);
// The same for an output: `finish` must be called after the main step (adds the reorder).
struct OutputAs {
  memory compute, bound;
  void finish(DnnlKernel& k) const;
};
OutputAs output_as(DnnlKernel& k, int slot, const memory::desc& given, const memory::desc& want);

// Op families: query (cheap) and create. Create throws dnnl::error on failure (caught by the
// backend and turned into a decline).
Support conv_query(const StepRequest& req);
// max over output channels m of sum |W[m]| of a constant conv weight [M][...]: |conv(X)| <= |X| max
// times it (+Inf when W is not finite).
// What our own float conv kernels (the grouped 8x8 and the small-spatial ones) check alike before
// they take a Conv / FusedConv step: float32, X not a slice, constant weights, X / W / Y 4-D, pads
// that resolve to Y's shape and none negative, no dilation, Y not empty, bias [K] and residual of
// Y's shape where present, no extra inputs on a plain Conv. False: not ours (the caller returns null).
struct OwnConv {
  const ConvOp* op = nullptr;
  Dims x, w, y;
  std::vector<int64_t> pads;
  int64_t sh = 1, sw = 1;
  bool has_bias = false, has_z = false;
};
bool own_conv_request(const StepRequest& req, OwnConv& c);
double max_filter_abs_sum(const Tensor& w);
// A conv kernel whose activation keeps NaN: its output's bound (RunResources) from its inputs' X
// and Z when the run knows them, |X| max * smax + |Z| max + |B| max with room for rounding, as a
// before-step (none where smax or a constant bias is not finite).
void carry_conv_bound(DnnlKernel& k, double smax, bool has_bias, float bias_max, bool has_z, const Activation& act);
std::unique_ptr<DnnlKernel> conv_create(const StepRequest& req);
// Grouped convs of 8 input and 8 output channels per group in nChw16c on AVX-512 (dnnl_group_conv.cpp: our
// own loop, no reorders); null where it does not take the conv (conv_create then plans oneDNN's).
std::unique_ptr<DnnlKernel> group8_conv_create(const StepRequest& req);
// Convs of a small output (N * OH * OW <= 64) and large weights, 1x1 or 3x3, in nChw16c on AVX-512
// (dnnl_smallspatial_conv.cpp: weights streamed once per run, prefetched); null where it does not
// take the conv.
std::unique_ptr<DnnlKernel> smallspatial_conv_create(const StepRequest& req);
Support deconv_query(const StepRequest& req);
std::unique_ptr<DnnlKernel> deconv_create(const StepRequest& req);
Support gemm_query(const StepRequest& req);
std::unique_ptr<DnnlKernel> gemm_create(const StepRequest& req);
Support matmul_query(const StepRequest& req);
std::unique_ptr<DnnlKernel> matmul_create(const StepRequest& req);
Support pool_query(const StepRequest& req);
std::unique_ptr<DnnlKernel> pool_create(const StepRequest& req);
Support bn_query(const StepRequest& req);
std::unique_ptr<DnnlKernel> bn_create(const StepRequest& req);
Support concat_bn_query(const StepRequest& req);
std::unique_ptr<DnnlKernel> concat_bn_create(const StepRequest& req);
Support eltwise_query(const StepRequest& req);
std::unique_ptr<DnnlKernel> eltwise_create(const StepRequest& req);
Support binary_query(const StepRequest& req);
std::unique_ptr<DnnlKernel> binary_create(const StepRequest& req);
Support softmax_query(const StepRequest& req);
std::unique_ptr<DnnlKernel> softmax_create(const StepRequest& req);
// A step that is a list of memcpys from its inputs into its outputs (the Concat of contiguous runs,
// the channel shuffle): add() splits each run into pieces of at most 64 KiB, shared by the threads
// when the whole copy reaches 256 KiB (below, waking them costs more than the copy); attach() makes
// the list k's work.
class CopyPieces {
 public:
  void add(int in, size_t src, int out, size_t dst, size_t bytes);
  size_t size() const { return pieces_.size(); }
  void attach(DnnlKernel& k) &&;

 private:
  struct Piece {
    int in, out;
    size_t src, dst, bytes;
  };
  std::vector<Piece> pieces_;
  size_t total_ = 0;
};
Support concat_query(const StepRequest& req);
std::unique_ptr<DnnlKernel> concat_create(const StepRequest& req);
// Transpose: the 4-D channel moves (0,2,3,1) / (0,3,1,2) as one reorder, the 4-D side blocked or plain.
Support transpose_query(const StepRequest& req);
std::unique_ptr<DnnlKernel> transpose_create(const StepRequest& req);
// com.infera.ChannelShuffle (dnnl_shuffle.cpp: our own memcpys of whole channel planes), plain format.
Support shuffle_query(const StepRequest& req);
std::unique_ptr<DnnlKernel> shuffle_create(const StepRequest& req);
// com.infera.SqueezeExcite (dnnl_squeeze_excite.cpp: our own loop), X and S plain or blocked.
Support squeeze_excite_query(const StepRequest& req);
std::unique_ptr<DnnlKernel> squeeze_excite_create(const StepRequest& req);
// com.infera.InvertedResidual (dnnl_inverted_residual.cpp: our own AVX-512 loops), X, Z and Y nChw16c.
Support inverted_residual_query(const StepRequest& req);
std::unique_ptr<DnnlKernel> inverted_residual_create(const StepRequest& req);
// Resize (dnnl_resize.cpp: our own loop, not oneDNN's resampling): takes the int64 sizes input.
Support resize_query(const StepRequest& req);
std::unique_ptr<DnnlKernel> resize_create(const StepRequest& req);
// LayerNormalization (dnnl_layernorm.cpp: our own loop, statistics in double as the reference's):
// the trailing dims from `axis` on, plain format, Scale / B constant or not, Mean / InvStdDev too.
Support layernorm_query(const StepRequest& req);
std::unique_ptr<DnnlKernel> layernorm_create(const StepRequest& req);
// int8 (dnnl_qconv.cpp): takes int8/uint8/int32 values, not float32. Where oneDNN's int8 convolution
// is not exact (no VNNI: it halves the weights against int16 saturation), QConv runs as an fp32
// convolution of the same integers, exact while every partial sum stays below 2^24.
Support qconv_query(const StepRequest& req);
bool int8_conv_exact();  // oneDNN's int8 convs give exact sums here (VNNI)
bool has_winograd();     // oneDNN has Winograd convs here (oneDNN 2.6: AVX-512 only)
std::unique_ptr<DnnlKernel> qconv_create(const StepRequest& req);
// Conversion of an int8/uint8 4-D value between plain (NCHW) and NHWC; null for anything else.
std::unique_ptr<StepKernel> int8_convert(const ConvertRequest& req);

}  // namespace infera::cpu
