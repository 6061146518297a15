// The tensor (data-movement and shape) op family: per-file register functions and the
// helpers those files share. register_tensor_ops() in tensor.cpp calls every register_*.
#pragma once

#include <string>
#include <vector>

#include "ops/util.h"

namespace infera {

void register_shape_ops(OpRegistry& r);            // shape_ops.cpp: Reshape Flatten Squeeze Unsqueeze Shape Size
void register_constant_ops(OpRegistry& r);         // constant_ops.cpp: Constant ConstantOfShape Range Dropout
void register_layout_ops(OpRegistry& r);           // layout.cpp: Transpose Expand Tile DepthToSpace SpaceToDepth
void register_concat_split_ops(OpRegistry& r);     // concat_split.cpp: Concat Split
void register_gather_ops(OpRegistry& r);           // gather.cpp: Gather
void register_slice_ops(OpRegistry& r);            // slice.cpp: Slice
void register_pad_ops(OpRegistry& r);              // pad.cpp: Pad
void register_resize_ops(OpRegistry& r);           // resize.cpp: Resize Upsample
void register_channel_shuffle_ops(OpRegistry& r);  // channel_shuffle.cpp: com.infera.ChannelShuffle

// Concat (kernel in concat_split.cpp): axis as given (may be negative).
class ConcatOp : public OpKernel {
 public:
  int64_t axis() const { return axis_; }

 protected:
  explicit ConcatOp(int64_t axis) : axis_(axis) {}
  int64_t axis_;
};

// com.infera.ChannelShuffle (made by the fuse_channel_shuffle pass): ShuffleNet's Reshape(X to
// [N, g, C/g, ...]) -> Transpose(0, 2, 1, 3, ...) -> Reshape(to X's shape), then cut along channels:
// output k holds shuffled channels [split_0 + .. + split_{k-1}, + split_k). Shuffled channel c is
// X's channel source_channel(c): in plain NCHW each output channel is one whole plane of X.
class ChannelShuffleOp : public OpKernel {
 public:
  int64_t group() const { return group_; }
  // Channels per output; empty: one output of all C.
  const std::vector<int64_t>& split() const { return split_; }
  static int64_t source_channel(int64_t c, int64_t channels, int64_t group) {
    return (c % group) * (channels / group) + c / group;
  }

 protected:
  ChannelShuffleOp(int64_t group, std::vector<int64_t> split) : group_(group), split_(std::move(split)) {}
  int64_t group_;
  std::vector<int64_t> split_;
};

// One sliced axis of ONNX Slice after clamping: the first index, the step and the element count
// (step 1 when count <= 1). Shared by the reference kernel and the GPU's strided copies.
struct AxisSlice {
  int64_t start = 0, step = 1, count = 0;
};
AxisSlice clamp_slice(int64_t dim, int64_t start, int64_t end, int64_t step);

// out[i] = in[offset + sum_k idx_k(i) * in_strides[k]] for i over out_dims in row-major order;
// elements are esize bytes, strides and offset count elements (strides may be 0 or negative).
void strided_copy(const void* in, void* out, size_t esize, std::vector<int64_t> out_dims,
                  std::vector<int64_t> in_strides, int64_t in_offset, int num_threads);

// Integer contents (int32/int64) of input i when known at inference time.
bool known_ints(const InferContext& ctx, size_t i, std::vector<int64_t>& out);
// Float contents (float32/float64) of a tensor as doubles.
bool read_floats(const Tensor& t, std::vector<double>& out);
bool read_floats(const TensorRef& t, std::vector<double>& out);

// Product of dims[b, e): known, a single symbolic dim times known 1s, or unknown.
Dim dim_product(const std::vector<Dim>& dims, size_t b, size_t e);
// "[2,3]" for messages.
std::string ints_str(const std::vector<int64_t>& v);
// Refuses an output whose known dims multiply past 2^40 elements (no tensor may be that big).
Status check_output_size(const InferContext& ctx, const Shape& s);
// Requires input i to have one of the given dtypes; names the tensor and found dtype.
Status expect_dtype(const InferContext& ctx, size_t i, const char* what, std::initializer_list<DataType> ok);

}  // namespace infera
