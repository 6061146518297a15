// com.infera.ChannelShuffle: attributes group (g >= 1, dividing C) and split (channels per output,
// positive, summing to C; absent: one output). The reference copies one plane of X per output
// channel, straight from the definition (tensor_ops.h: ChannelShuffleOp::source_channel).
#include <cstring>

#include "infera/limits.h"
#include "ops/tensor_ops.h"

namespace infera {
namespace {

class ChannelShuffleKernel : public ChannelShuffleOp {
 public:
  ChannelShuffleKernel(const Node& n, int64_t)
      : ChannelShuffleOp(n.attr_int("group", 0), n.attr_ints("split")), has_split_(n.has_attr("split")) {
    const size_t outs = n.outputs.size();
    int64_t sum = 0;
    for (int64_t s : split_) {
      if (s <= 0 || s > limits::kMaxTensorElements - sum) {
        bad_ = Status::error(node_message(n, "attribute 'split' %s must hold positive sizes (sum below 2^40)",
                                          ints_str(split_).c_str()));
        return;
      }
      sum += s;
    }
    if (group_ < 1)
      bad_ = Status::error(node_message(n, "attribute 'group' must be at least 1, found %lld", (long long)group_));
    else if (has_split_ ? split_.size() != outs : outs != 1)
      bad_ = Status::error(node_message(n, "has %zu outputs, expected %zu (the entries of 'split', else 1)", outs,
                                        has_split_ ? split_.size() : size_t{1}));
  }
  Status init() { return bad_; }

  Status infer(InferContext& ctx) const override {
    if (!ctx.has_input(0)) return ctx.error("expects input X");
    const ValueInfo& x = ctx.in(0);
    if (!x.shape.rank_known) {
      for (size_t o = 0; o < ctx.num_outputs(); ++o) ctx.set_output(o, x.dtype, Shape());
      return Status::ok();
    }
    if (x.shape.rank() < 2) return ctx.error("input X must have rank 2 or more, found %s", x.shape.str().c_str());
    const Dim& c = x.shape.dims[1];
    if (c.known()) {
      if (c.value % group_ != 0)
        return ctx.error("group %lld does not divide X's %lld channels", (long long)group_, (long long)c.value);
      int64_t sum = 0;
      for (int64_t s : split_) sum += s;
      if (has_split_ && sum != c.value)
        return ctx.error("'split' %s sums to %lld, X has %lld channels", ints_str(split_).c_str(), (long long)sum,
                         (long long)c.value);
    }
    for (size_t o = 0; o < ctx.num_outputs(); ++o) {
      Shape s = x.shape;
      if (has_split_) s.dims[1] = Dim(split_[o]);
      ctx.set_output(o, x.dtype, std::move(s));
    }
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    const TensorRef& x = ctx.in(0);
    if (x.rank() < 2) return ctx.error("input X must have rank 2 or more");
    const int64_t n = x.dims[0], c = x.dims[1];
    if (c % group_ != 0) return ctx.error("group %lld does not divide %lld channels", (long long)group_, (long long)c);
    const size_t plane = static_cast<size_t>(x.numel() / std::max<int64_t>(1, n * c)) * dtype_size(x.dtype);
    const std::vector<int64_t> parts = has_split_ ? split_ : std::vector<int64_t>{c};
    int64_t first = 0;  // the output's first shuffled channel
    for (size_t o = 0; o < parts.size(); ++o) {
      std::vector<int64_t> want = x.dims;
      want[1] = parts[o];
      if (first + parts[o] > c) return ctx.error("'split' covers more than the %lld channels", (long long)c);
      if (ctx.has_output(o)) {
        if (ctx.out(o).dims != want)
          return ctx.error("output %zu has shape %s, expected %s", o, ints_str(ctx.out(o).dims).c_str(),
                           ints_str(want).c_str());
        const uint8_t* src = static_cast<const uint8_t*>(x.data);
        uint8_t* dst = static_cast<uint8_t*>(ctx.out(o).data);
        for (int64_t b = 0; b < n; ++b)
          for (int64_t k = 0; k < parts[o]; ++k)
            std::memcpy(dst + static_cast<size_t>(b * parts[o] + k) * plane,
                        src + static_cast<size_t>(b * c + source_channel(first + k, c, group_)) * plane, plane);
      }
      first += parts[o];
    }
    return Status::ok();
  }

 private:
  bool has_split_;
  Status bad_;
};

}  // namespace

void register_channel_shuffle_ops(OpRegistry& r) {
  r.add("ChannelShuffle", factory_of<ChannelShuffleKernel>(), "com.infera");
}

}  // namespace infera
