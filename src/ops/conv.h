// Conv / ConvTranspose attributes and the output-shape rules shared by the reference
// kernels and the backends (oneDNN, GPU): the single source of truth for padding semantics.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "infera/infera.h"
#include "ops/epilogue.h"
#include "ops/op.h"

namespace infera {

enum class AutoPad { kNotSet, kSameUpper, kSameLower, kValid };

// Parses an ONNX auto_pad string; false for an unknown value.
bool parse_auto_pad(const std::string& s, AutoPad& out);

// The window attributes that Conv, ConvTranspose and pooling share, as in the node. Empty
// vectors mean "not given" (defaults apply: kernel_shape from W, strides/dilations 1, pads 0).
// pads = {begin..., end...}.
struct WindowAttrs {
  std::vector<int64_t> kernel_shape;
  std::vector<int64_t> strides;
  std::vector<int64_t> pads;
  std::vector<int64_t> dilations;
  AutoPad auto_pad = AutoPad::kNotSet;
};

// The one parser of window attributes: values positive (pads non-negative, all <= 2^31), pads
// of even length, lengths consistent with each other (and with kernel_shape when given);
// kernel_shape required for pooling. Messages name the node.
Status window_attrs_parse(const Node& n, WindowAttrs& a, bool kernel_required);

struct ConvAttrs : WindowAttrs {
  int64_t group = 1;
};

// ConvTranspose adds output_padding and output_shape (spatial dims, or full rank).
struct ConvTransposeAttrs : ConvAttrs {
  std::vector<int64_t> output_padding;
  std::vector<int64_t> output_shape;
};

// Reads an ints attribute (kernel_shape, strides, pads, ...) whose values must lie in
// [lo, 2^31]; absent -> empty. Refuses a wrong attribute kind or value, naming the node.
Status read_window_ints(const Node& n, const char* name, int64_t lo, std::vector<int64_t>& out);

// Reads and validates the attributes of a Conv / FusedConv / ConvTranspose node (the window
// attributes, group, output_padding / output_shape). Messages name the node.
Status conv_attrs_parse(const Node& n, ConvAttrs& a);
Status conv_transpose_attrs_parse(const Node& n, ConvTransposeAttrs& a);

// The typed ops (their kernels live in conv.cpp): what backends read.
// Conv (X, W, B?) and com.infera.FusedConv (X, W, B?, Z?; act(conv + B + Z)).
class ConvOp : public OpKernel {
 public:
  const ConvAttrs& attrs() const { return attrs_; }
  bool fused() const { return fused_; }
  const Activation& activation() const { return act_; }
  // The epilogue of this node: bias if input 2 is given, residual if input 3 (FusedConv), then
  // the activation.
  Epilogue epilogue(const Node& n) const;
  // A FusedConv made by a pass: Conv attributes and the activation, typed.
  static std::shared_ptr<const OpKernel> make_fused(const ConvAttrs& a, Activation act);

 protected:
  ConvOp(bool fused, ConvAttrs a, Activation act) : attrs_(std::move(a)), act_(act), fused_(fused) {}
  ConvAttrs attrs_;
  Activation act_;
  bool fused_;
};

class ConvTransposeOp : public OpKernel {
 public:
  const ConvTransposeAttrs& attrs() const { return attrs_; }

 protected:
  ConvTransposeAttrs attrs_;
};

// Conv: X [N, C, D1..Dk], W [M, C/group, K1..Kk] -> pads_out (2k, begin then end, after
// auto_pad) and Y dims [N, M, O1..Ok]. Refuses mismatched ranks/channels and outputs < 1.
Status conv_resolve(const ConvAttrs& a, const std::vector<int64_t>& x_dims, const std::vector<int64_t>& w_dims,
                    std::vector<int64_t>& pads_out, std::vector<int64_t>& y_dims);

// ConvTranspose: X [N, C, D1..Dk], W [C, M/group, K1..Kk] -> pads_out (may be negative when
// output_shape asks for more than the natural size) and Y dims [N, M, O1..Ok].
Status conv_transpose_resolve(const ConvTransposeAttrs& a, const std::vector<int64_t>& x_dims,
                              const std::vector<int64_t>& w_dims, std::vector<int64_t>& pads_out,
                              std::vector<int64_t>& y_dims);

// One spatial dim of a Conv / pool window: effective kernel ek = (k-1)*d+1. Computes the
// output size and the begin/end pads actually used. ceil_mode only for pooling. False
// when the output would be < 1 (or on overflow).
bool conv_out_dim(int64_t in, int64_t k, int64_t s, int64_t d, AutoPad ap, bool ceil_mode, int64_t& pb, int64_t& pe,
                  int64_t& out);

}  // namespace infera
