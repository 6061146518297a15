// Concat and Split: block copies along one axis. Type-agnostic (copied by element size).
#include <cstring>

#include "ops/tensor_ops.h"

namespace infera {
namespace {

// Copies `outer` rows: dst row r gets `bytes` from src row r; rows are `src_pitch`/`dst_pitch` apart.
void copy_blocks(const uint8_t* src, int64_t src_pitch, uint8_t* dst, int64_t dst_pitch, int64_t outer, int64_t bytes,
                 int num_threads) {
  if (bytes == 0 || outer == 0) return;
  const int nt = outer * bytes >= (1 << 18) ? num_threads : 1;
  parallel_for(outer, nt, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) std::memcpy(dst + r * dst_pitch, src + r * src_pitch, static_cast<size_t>(bytes));
  });
}

// ---------------------------------------------------------------- Concat
class ConcatKernel : public ConcatOp {
 public:
  ConcatKernel(const Node& n, int64_t) : ConcatOp(n.attr_int("axis", 0)) {
    if (!n.has_attr("axis")) bad_ = Status::error(node_message(n, "attribute 'axis' is required"));
  }
  Status init() { return bad_; }

  Status infer(InferContext& ctx) const override {
    int rank = -1;
    DataType dt = DataType::kUndefined;
    size_t first = 0;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      if (!ctx.has_input(i)) return ctx.error("input %zu is missing", i);
      const ValueInfo& v = ctx.in(i);
      if (v.dtype != DataType::kUndefined) {
        if (dt == DataType::kUndefined)
          dt = v.dtype;
        else if (v.dtype != dt)
          return ctx.error("input %zu has dtype %s, expected %s like the others", i, dtype_name(v.dtype),
                           dtype_name(dt));
      }
      if (!v.shape.rank_known) continue;
      if (rank < 0) {
        rank = v.shape.rank();
        first = i;
      } else if (v.shape.rank() != rank) {
        return ctx.error("input %zu has rank %d (shape %s), expected rank %d like input %zu", i, v.shape.rank(),
                         v.shape.str().c_str(), rank, first);
      }
    }
    if (ctx.num_inputs() == 0) return ctx.error("expects at least one input");
    if (rank < 0) {
      ctx.set_output(0, dt, Shape());
      return Status::ok();
    }
    int64_t axis = axis_;
    if (!normalize_axis(axis, rank))
      return ctx.error("attribute 'axis' must be in [%d, %d) for inputs of rank %d, found %lld", -rank, rank, rank,
                       (long long)axis_);
    std::vector<Dim> out(rank);
    bool all_ranked = true;
    int64_t sum = 0;
    bool sum_known = true;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      const Shape& s = ctx.in(i).shape;
      if (!s.rank_known) {
        all_ranked = false;
        continue;
      }
      for (int k = 0; k < rank; ++k) {
        const Dim& d = s.dims[k];
        if (k == axis) {
          if (d.known())
            sum += d.value;
          else
            sum_known = false;
          continue;
        }
        if (d.known()) {
          if (out[k].known() && out[k].value != d.value)
            return ctx.error(
                "input %zu has shape %s, which differs from input %zu's %s in dim %d (not the concat axis %lld)", i,
                s.str().c_str(), first, ctx.in(first).shape.str().c_str(), k, (long long)axis);
          out[k] = d;
        } else if (!out[k].known() && out[k].symbol.empty()) {
          out[k] = d;
        }
      }
    }
    out[axis] = all_ranked && sum_known ? Dim(sum) : Dim();
    ctx.set_output(0, dt, Shape(std::move(out)));
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    TensorRef& y = ctx.out(0);
    int64_t axis = axis_;
    normalize_axis(axis, y.rank());
    const size_t es = dtype_size(y.dtype);
    int64_t outer = 1, inner = 1;
    for (int k = 0; k < axis; ++k) outer *= y.dims[k];
    for (int k = axis + 1; k < y.rank(); ++k) inner *= y.dims[k];
    const int64_t pitch = y.dims[axis] * inner * static_cast<int64_t>(es);
    int64_t off = 0;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      const TensorRef& x = ctx.in(i);
      if (x.rank() != y.rank()) return ctx.error("input %zu has rank %d, expected %d", i, x.rank(), y.rank());
      const int64_t bytes = x.dims[axis] * inner * static_cast<int64_t>(es);
      if (off + bytes > pitch) return ctx.error("inputs are larger than the output along the axis");
      copy_blocks(static_cast<const uint8_t*>(x.data), bytes, static_cast<uint8_t*>(y.data) + off, pitch, outer, bytes,
                  ctx.num_threads);
      off += bytes;
    }
    return Status::ok();
  }

 private:
  Status bad_;
};

// ---------------------------------------------------------------- Split
class SplitKernel : public OpKernel {
 public:
  SplitKernel(const Node& n, int64_t opset)
      : opset_(opset), axis_(n.attr_int("axis", 0)), num_outputs_(opset >= 18 ? n.attr_int("num_outputs", 0) : 0) {
    if (opset < 13 && n.has_attr("split")) {
      has_split_attr_ = true;
      split_attr_ = n.attr_ints("split");
    } else if (opset >= 13 && n.has_attr("split")) {
      bad_ = Status::error(node_message(n, "attribute 'split' is an input from opset 13 on; found the attribute"));
    }
    const int64_t outs = static_cast<int64_t>(n.outputs.size());
    if (opset >= 18 && n.has_attr("num_outputs") && num_outputs_ != outs)
      bad_ = Status::error(node_message(n, "attribute 'num_outputs' is %lld but the node has %lld outputs",
                                        (long long)num_outputs_, (long long)outs));
    if (has_split_attr_ && static_cast<int64_t>(split_attr_.size()) != outs)
      bad_ = Status::error(node_message(n, "attribute 'split' %s has %zu entries but the node has %lld outputs",
                                        ints_str(split_attr_).c_str(), split_attr_.size(), (long long)outs));
  }
  Status init() { return bad_; }

  // Sizes along the axis for a known dim; an error message when they do not fit.
  Status sizes_for(const InferContext* ictx, const ComputeContext* cctx, int64_t dim, size_t n_out, bool have_split,
                   std::vector<int64_t> split, std::vector<int64_t>& out) const {
    auto fail = [&](const std::string& m) {
      return ictx ? ictx->error("%s", m.c_str()) : cctx->error("%s", m.c_str());
    };
    if (have_split) {
      if (split.size() != n_out)
        return fail("'split' " + ints_str(split) + " has " + std::to_string(split.size()) + " entries for " +
                    std::to_string(n_out) + " outputs");
      int64_t sum = 0;
      for (int64_t s : split) {
        if (s < 0) return fail("'split' " + ints_str(split) + " has a negative size");
        if (s > limits::kMaxTensorElements - sum)  // fuzz_model: two sizes near 2^63 overflowed the sum
          return fail("'split' " + ints_str(split) + " sums to more than 2^40");
        sum += s;
      }
      if (dim >= 0 && sum != dim)
        return fail("'split' " + ints_str(split) + " sums to " + std::to_string(sum) + ", but the axis has " +
                    std::to_string(dim));
      out = split;
      return Status::ok();
    }
    const int64_t n = static_cast<int64_t>(n_out);
    if (n == 0) return fail("expects at least one output");
    if (dim % n == 0) {
      out.assign(n, dim / n);
    } else {
      if (opset_ < 18)
        return fail("axis of size " + std::to_string(dim) + " cannot be split evenly into " + std::to_string(n) +
                    " outputs");
      const int64_t chunk = dim / n + 1;
      out.assign(n, chunk);
      out.back() = dim - chunk * (n - 1);
      if (out.back() < 0)
        return fail("axis of size " + std::to_string(dim) + " cannot be split into " + std::to_string(n) +
                    " chunks of " + std::to_string(chunk));
    }
    return Status::ok();
  }

  Status infer(InferContext& ctx) const override {
    const ValueInfo& x = ctx.in(0);
    const size_t n_out = ctx.num_outputs();
    std::vector<int64_t> split = split_attr_;
    bool have_split = has_split_attr_, split_known = true;
    if (opset_ >= 13 && ctx.has_input(1)) {
      Status s = expect_dtype(ctx, 1, "split", {DataType::kInt64});
      if (!s.is_ok()) return s;
      have_split = true;
      split_known = known_ints(ctx, 1, split);
      if (split_known && split.empty()) have_split = false;  // an empty 'split' means none
    }
    if (!x.shape.rank_known) {
      for (size_t i = 0; i < n_out; ++i) ctx.set_output(i, x.dtype, Shape());
      return Status::ok();
    }
    int64_t axis = axis_;
    const int r = x.shape.rank();
    if (!normalize_axis(axis, r))
      return ctx.error("attribute 'axis' must be in [%d, %d) for input shape %s, found %lld", -r, r,
                       x.shape.str().c_str(), (long long)axis_);
    const Dim& d = x.shape.dims[axis];
    std::vector<int64_t> sizes;
    if (split_known) {
      Status s = sizes_for(&ctx, nullptr, d.known() ? d.value : -1, n_out, have_split, split, sizes);
      if (have_split && !s.is_ok()) return s;
      if (!have_split && d.known() && !s.is_ok()) return s;
      if (!have_split && !d.known()) sizes.clear();
    }
    for (size_t i = 0; i < n_out; ++i) {
      std::vector<Dim> dims = x.shape.dims;
      if (!sizes.empty())
        dims[axis] = Dim(sizes[i]);
      else if (!(n_out == 1 && !have_split))
        dims[axis] = Dim();
      ctx.set_output(i, x.dtype, Shape(std::move(dims)));
    }
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    const TensorRef& x = ctx.in(0);
    int64_t axis = axis_;
    normalize_axis(axis, x.rank());
    const size_t es = dtype_size(x.dtype);
    int64_t outer = 1, inner = 1;
    for (int k = 0; k < axis; ++k) outer *= x.dims[k];
    for (int k = axis + 1; k < x.rank(); ++k) inner *= x.dims[k];
    std::vector<int64_t> split = split_attr_, sizes;
    bool have_split = has_split_attr_;
    if (opset_ >= 13 && ctx.has_input(1)) {
      if (!read_ints(ctx.in(1), split)) return ctx.error("input 'split' must be int64");
      have_split = !split.empty();
    }
    Status s = sizes_for(nullptr, &ctx, x.dims[axis], ctx.node.outputs.size(), have_split, split, sizes);
    if (!s.is_ok()) return s;
    const int64_t pitch = x.dims[axis] * inner * static_cast<int64_t>(es);
    int64_t off = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      const int64_t bytes = sizes[i] * inner * static_cast<int64_t>(es);
      if (ctx.has_output(i)) {
        TensorRef& y = ctx.out(i);
        if (y.rank() != x.rank() || y.dims[axis] != sizes[i])
          return ctx.error("output %zu has shape %s, expected %lld along axis %lld", i, ints_str(y.dims).c_str(),
                           (long long)sizes[i], (long long)axis);
        copy_blocks(static_cast<const uint8_t*>(x.data) + off, pitch, static_cast<uint8_t*>(y.data), bytes, outer,
                    bytes, ctx.num_threads);
      }
      off += bytes;
    }
    return Status::ok();
  }

 private:
  int64_t opset_;
  int64_t axis_;
  int64_t num_outputs_;
  bool has_split_attr_ = false;
  std::vector<int64_t> split_attr_;
  Status bad_;
};

}  // namespace

void register_concat_split_ops(OpRegistry& r) {
  r.add("Concat", factory_of<ConcatKernel>());
  r.add("Split", factory_of<SplitKernel>());
}

}  // namespace infera
