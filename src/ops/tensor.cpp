// The tensor op family: registration of its files and the helpers they share.
#include <cstring>

#include "infera/limits.h"
#include "ops/tensor_ops.h"

namespace infera {

void register_tensor_ops(OpRegistry& r) {
  register_shape_ops(r);
  register_constant_ops(r);
  register_layout_ops(r);
  register_concat_split_ops(r);
  register_gather_ops(r);
  register_slice_ops(r);
  register_pad_ops(r);
  register_resize_ops(r);
  register_channel_shuffle_ops(r);
}

namespace {

template <class T>
void copy_rows(const uint8_t* in, uint8_t* out, const std::vector<int64_t>& dims, const std::vector<int64_t>& st,
               int64_t offset, int64_t row_begin, int64_t row_end) {
  const int r = static_cast<int>(dims.size());
  const int64_t n = dims[r - 1], s = st[r - 1];
  // Decompose the first row index into outer coordinates once, then count up.
  std::vector<int64_t> idx(r - 1, 0);
  int64_t rem = row_begin, src = offset;
  for (int k = r - 2; k >= 0; --k) {
    idx[k] = rem % dims[k];
    rem /= dims[k];
    src += idx[k] * st[k];
  }
  const T* ip = reinterpret_cast<const T*>(in);
  T* op = reinterpret_cast<T*>(out) + row_begin * n;
  for (int64_t row = row_begin; row < row_end; ++row, op += n) {
    if (s == 1) {
      std::memcpy(op, ip + src, static_cast<size_t>(n) * sizeof(T));
    } else {
      const T* p = ip + src;
      for (int64_t j = 0; j < n; ++j) op[j] = p[j * s];
    }
    for (int k = r - 2; k >= 0; --k) {
      src += st[k];
      if (++idx[k] < dims[k]) break;
      src -= idx[k] * st[k];
      idx[k] = 0;
    }
  }
}

}  // namespace

void strided_copy(const void* in, void* out, size_t esize, std::vector<int64_t> out_dims,
                  std::vector<int64_t> in_strides, int64_t in_offset, int num_threads) {
  int64_t total = 1;
  for (int64_t d : out_dims) total *= d;
  if (total == 0) return;
  // Drop size-1 dims and merge dims that are contiguous in the input.
  std::vector<int64_t> dims, st;
  for (size_t k = 0; k < out_dims.size(); ++k) {
    if (out_dims[k] == 1) continue;
    if (!dims.empty() && st.back() == in_strides[k] * out_dims[k]) {
      dims.back() *= out_dims[k];
      st.back() = in_strides[k];
    } else {
      dims.push_back(out_dims[k]);
      st.push_back(in_strides[k]);
    }
  }
  if (dims.empty()) {
    dims.push_back(1);
    st.push_back(1);
  }
  const int64_t n = dims.back(), rows = total / n;
  const auto* ip = static_cast<const uint8_t*>(in);
  auto* op = static_cast<uint8_t*>(out);
  auto run = [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int nt = total >= (1 << 16) ? num_threads : 1;
    parallel_for(rows, nt, [&](int64_t b, int64_t e) { copy_rows<T>(ip, op, dims, st, in_offset, b, e); });
  };
  if (!dispatch_by_size(esize, run)) {
    // Odd element sizes: copy as bytes with an extra innermost dim.
    for (int64_t& s : st) s *= static_cast<int64_t>(esize);
    dims.push_back(static_cast<int64_t>(esize));
    st.push_back(1);
    const int64_t rows_b = total;
    parallel_for(rows_b, 1, [&](int64_t b, int64_t e) {
      copy_rows<uint8_t>(ip, op, dims, st, in_offset * static_cast<int64_t>(esize), b, e);
    });
  }
}

bool known_ints(const InferContext& ctx, size_t i, std::vector<int64_t>& out) {
  const Tensor* t = ctx.value(i);
  return t && read_ints(*t, out);
}

template <class T>
static bool read_floats_impl(DataType dt, const void* data, int64_t n, std::vector<double>& out) {
  out.resize(n);
  if (dt == DataType::kFloat32) {
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<const float*>(data)[i];
  } else if (dt == DataType::kFloat64) {
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<const double*>(data)[i];
  } else {
    return false;
  }
  return true;
}

bool read_floats(const Tensor& t, std::vector<double>& out) {
  return read_floats_impl<Tensor>(t.dtype(), t.data(), t.numel(), out);
}
bool read_floats(const TensorRef& t, std::vector<double>& out) {
  return read_floats_impl<TensorRef>(t.dtype, t.data, t.numel(), out);
}

Dim dim_product(const std::vector<Dim>& dims, size_t b, size_t e) {
  int64_t p = 1;
  const Dim* unknown = nullptr;
  int n_unknown = 0;
  for (size_t i = b; i < e && i < dims.size(); ++i) {
    if (dims[i].known()) {
      p *= dims[i].value;
    } else {
      unknown = &dims[i];
      ++n_unknown;
    }
  }
  if (n_unknown == 0) return Dim(p);
  if (p == 0) return Dim(0);
  if (n_unknown == 1 && p == 1) return *unknown;
  return Dim();
}

std::string ints_str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(v[i]);
  }
  return s + "]";
}

Status check_output_size(const InferContext& ctx, const Shape& s) {
  if (s.rank() > limits::kMaxRank)
    return ctx.error("output rank %d is more than the limit of %d", s.rank(), limits::kMaxRank);
  int64_t n = 1;
  for (const Dim& d : s.dims) {
    if (!d.known() || d.value == 0) continue;
    if (d.value > (int64_t(1) << 40) / n)
      return ctx.error("output shape %s has more than 2^40 elements", s.str().c_str());
    n *= d.value;
  }
  return Status::ok();
}

Status expect_dtype(const InferContext& ctx, size_t i, const char* what, std::initializer_list<DataType> ok) {
  DataType dt = ctx.in(i).dtype;
  if (dt == DataType::kUndefined) return Status::ok();
  for (DataType d : ok)
    if (d == dt) return Status::ok();
  std::string exp;
  for (DataType d : ok) exp += std::string(exp.empty() ? "" : " or ") + dtype_name(d);
  return ctx.error("input '%s' must be %s, found %s", what, exp.c_str(), dtype_name(dt));
}

}  // namespace infera
