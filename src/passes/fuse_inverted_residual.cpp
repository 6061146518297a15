// fuse_inverted_residual: a MobileNetV2-style block, [1x1 Conv / FusedConv (act)] -> depthwise
// Conv / FusedConv K x K (act) -> 1x1 Conv / FusedConv (no act, residual Z if any) ->
// com.infera.InvertedResidual (ops/inverted_residual.h): one step whose CPU kernel keeps the
// expanded values in L2 instead of moving them through memory twice. Assumes inferred shapes: X
// float32 4-D with known C, H, W; constant weights and biases; each intermediate has one reader
// and is no graph output (a dw output also read by a squeeze-excitation gate is left alone).
// Host only (default_passes(host)): no GPU kernel takes the fused op. Where the block is fused:
// INFERA_INVERTED_RESIDUAL=off never, =all every match (tests), else inverted_residual_worth.
#include <algorithm>
#include <cstdlib>
#include <string>

#include "ops/conv.h"
#include "ops/inverted_residual.h"
#include "ops/util.h"
#include "passes/passes.h"
#include "passes/rewrite.h"

namespace infera {
namespace {

using namespace rewrite;

bool act_ok(const Activation& a) {
  switch (a.kind) {
    case ActKind::kIdentity:
    case ActKind::kRelu:
    case ActKind::kClip:
    case ActKind::kHardSwish: return true;
    default: return false;
  }
}

bool const_float(const Graph& g, int v, const std::vector<int64_t>& dims) {
  const Tensor* t = constant_of(g, v);
  return t && t->dtype() == DataType::kFloat32 && t->dims() == dims;
}

int input_of(const Node& n, size_t k) { return n.inputs.size() > k ? n.inputs[k] : -1; }

// A live Conv / FusedConv node reading `in` whose weight is a constant [m, cin, kh, kw] float32
// and bias (if any) a constant [m]; no dilation, no auto_pad SAME. Sets op and w's dims.
const ConvOp* conv_of(const Graph& g, int node, int in, std::vector<int64_t>& wd) {
  if (node < 0) return nullptr;
  const Node& n = g.nodes[node];
  const auto* op = dynamic_cast<const ConvOp*>(n.op.get());
  if (!op || n.dead || (!n.domain.empty() && n.domain != "com.infera" && n.domain != "ai.onnx")) return nullptr;
  if (n.inputs.size() < 2 || n.inputs[0] != in || n.outputs.size() != 1 || n.outputs[0] < 0) return nullptr;
  const ConvAttrs& a = op->attrs();
  if (a.auto_pad == AutoPad::kSameUpper || a.auto_pad == AutoPad::kSameLower) return nullptr;
  if (std::any_of(a.dilations.begin(), a.dilations.end(), [](int64_t d) { return d != 1; })) return nullptr;
  const Tensor* w = constant_of(g, n.inputs[1]);
  if (!w || w->dtype() != DataType::kFloat32 || w->dims().size() != 4) return nullptr;
  wd = w->dims();
  if (input_of(n, 2) >= 0 && !const_float(g, n.inputs[2], {wd[0]})) return nullptr;
  return op;
}

// A 1x1 stride-1 unpadded group-1 conv; residual allowed only where `residual_ok`.
bool pointwise(const ConvOp* op, const Node& n, const std::vector<int64_t>& wd, bool residual_ok) {
  if (!op || wd[2] != 1 || wd[3] != 1 || op->attrs().group != 1) return false;
  const ConvAttrs& a = op->attrs();
  if (std::any_of(a.pads.begin(), a.pads.end(), [](int64_t p) { return p != 0; })) return false;
  if (std::any_of(a.strides.begin(), a.strides.end(), [](int64_t s) { return s != 1; })) return false;
  return residual_ok || input_of(n, 3) < 0;
}

// Where the CPU kernel was measured to beat the three oneDNN steps (2026-12-08, Zen 4, 2 threads,
// `bench/cpu_ir_block_ab.py`, medians of 6 alternated rounds; bench/results/
// 2026-12-08-cpu-inverted-residual-zen4.md): blocks with an expand on inputs of >= 28 x 28 (the
// expanded values outgrow L2: 1.03-1.3x a block at batch 1, 1.1-1.4x at 16), and on 14 x 14 with
// E <= 256 (MobileNetV3's 80->184/200: 1.16-1.36x). Not: wider blocks on 14 x 14 (MobileNetV2's
// 64->384 / 96->576 0.93-1.03x, MNASNet's 80->480 5x5 0.92-0.94x), 7 x 7 (0.8-0.96x: oneDNN's 1x1
// jit beats our loop there), blocks without an expand (0.93-1.04x).
bool inverted_residual_worth(bool expand, int64_t e, int64_t h, int64_t w) {
  return expand && (h * w >= 28 * 28 || (h * w >= 14 * 14 && e <= 256));
}

class FuseInvertedResidual : public Pass {
 public:
  const char* name() const override { return "fuse_inverted_residual"; }

  Status run(Graph& g) override {
    const char* env = std::getenv("INFERA_INVERTED_RESIDUAL");
    const std::string mode = env ? env : "";
    if (mode == "off" || mode == "0" || !__builtin_cpu_supports("avx512f")) return Status::ok();  // no kernel
    UseIndex idx(g);
    const size_t count = g.nodes.size();
    for (size_t i = 0; i < count; ++i) {
      const Node& dn = g.nodes[i];
      std::vector<int64_t> wd, wp, we;
      if (dn.dead || dn.inputs.empty()) continue;
      const int a = dn.inputs[0];
      const ConvOp* dop = conv_of(g, static_cast<int>(i), a, wd);
      if (!dop || input_of(dn, 3) >= 0 || !act_ok(dop->activation())) continue;
      const int64_t e = wd[0], k = wd[2];
      const ConvAttrs& da = dop->attrs();
      if (wd[1] != 1 || da.group != e || wd[3] != k || (k != 3 && k != 5)) continue;
      const std::vector<int64_t> strides = da.strides.empty() ? std::vector<int64_t>{1, 1} : da.strides;
      const std::vector<int64_t> pads = da.pads.empty() ? std::vector<int64_t>{0, 0, 0, 0} : da.pads;
      if (strides.size() != 2 || strides[0] != strides[1] || strides[0] > 2 || pads.size() != 4) continue;
      if (std::any_of(pads.begin(), pads.end(), [k](int64_t p) { return p >= k; })) continue;
      // project: the dw output's one reader
      const int d = dn.outputs[0];
      const int pi = sole_consumer(g, idx, d);
      const ConvOp* pop = conv_of(g, pi, d, wp);
      if (!pop || !pointwise(pop, g.nodes[pi], wp, true) || wp[1] != e || !pop->activation().is_identity()) continue;
      if (input_of(g.nodes[pi], 3) >= 0 && !pop->fused()) continue;
      // expand: a's producer, when a has no other reader
      const int ei = producer_of(g, a);
      const ConvOp* eop = nullptr;
      bool expand = false;
      if (ei >= 0 && !g.nodes[ei].inputs.empty() && sole_consumer(g, idx, a) == static_cast<int>(i)) {
        eop = conv_of(g, ei, g.nodes[ei].inputs[0], we);
        expand = eop && pointwise(eop, g.nodes[ei], we, false) && we[0] == e && act_ok(eop->activation());
      }
      const int x = expand ? g.nodes[ei].inputs[0] : a;
      const Shape& xs = g.values[x].shape;
      if (g.values[x].dtype != DataType::kFloat32 || !xs.rank_known || xs.rank() != 4) continue;
      if (!xs.dims[1].known() || !xs.dims[2].known() || !xs.dims[3].known()) continue;
      if (xs.dims[1].value != (expand ? we[1] : e)) continue;
      if (mode != "all" && !inverted_residual_worth(expand, e, xs.dims[2].value, xs.dims[3].value)) continue;
      const Node& pn = g.nodes[pi];
      Node ir;
      ir.name = pn.name + "/InvertedResidual";
      ir.op_type = "InvertedResidual";
      ir.domain = "com.infera";
      ir.inputs.assign(kIrInputs, -1);
      ir.inputs[kIrX] = x;
      if (expand) ir.inputs[kIrWExpand] = g.nodes[ei].inputs[1], ir.inputs[kIrBExpand] = input_of(g.nodes[ei], 2);
      ir.inputs[kIrWDw] = dn.inputs[1], ir.inputs[kIrBDw] = input_of(dn, 2);
      ir.inputs[kIrWProject] = pn.inputs[1], ir.inputs[kIrBProject] = input_of(pn, 2);
      ir.inputs[kIrZ] = input_of(pn, 3);
      ir.outputs = {pn.outputs[0]};
      InvertedResidualAttrs at;
      at.strides = strides, at.pads = pads;
      at.expand = expand ? eop->activation() : Activation{};
      at.dw = dop->activation();
      inverted_residual_to_attrs(ir, at);
      auto op = make_kernel(ir, g.opset);
      if (!op.is_ok()) return op.status();
      ir.op = std::shared_ptr<const OpKernel>(std::move(op.value()));
      g.nodes[i].dead = true;
      g.nodes[pi].dead = true;
      if (expand) g.nodes[ei].dead = true;
      g.add_node(std::move(ir));
    }
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> make_fuse_inverted_residual() { return std::make_unique<FuseInvertedResidual>(); }

}  // namespace infera
