#include "ops/util.h"

#include <omp.h>

#include <algorithm>

namespace infera {

bool is_float(DataType dt) {
  return dt == DataType::kFloat32 || dt == DataType::kFloat64 || dt == DataType::kFloat16 || dt == DataType::kBFloat16;
}

bool is_integer(DataType dt) {
  switch (dt) {
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kInt32:
    case DataType::kInt64:
    case DataType::kUInt8:
    case DataType::kUInt16:
    case DataType::kUInt32:
    case DataType::kUInt64: return true;
    default: return false;
  }
}

bool normalize_axis(int64_t& axis, int64_t rank) {
  if (axis < -rank || axis >= rank) return false;
  if (axis < 0) axis += rank;
  return true;
}

bool broadcast_shapes(const Shape& a, const Shape& b, Shape& out) {
  if (!a.rank_known || !b.rank_known) {
    out = Shape::unknown();
    return true;
  }
  const int r = std::max(a.rank(), b.rank());
  std::vector<Dim> dims(r);
  for (int i = 0; i < r; ++i) {
    int ia = a.rank() - r + i, ib = b.rank() - r + i;
    Dim da = ia >= 0 ? a.dims[ia] : Dim(1);
    Dim db = ib >= 0 ? b.dims[ib] : Dim(1);
    if (da.known() && db.known()) {
      if (da.value != db.value && da.value != 1 && db.value != 1) return false;
      dims[i] = Dim(da.value == 1 ? db.value : da.value);
    } else if (da.known() && da.value == 1) {
      dims[i] = db;
    } else if (db.known() && db.value == 1) {
      dims[i] = da;
    } else if (da == db) {
      dims[i] = da;
    } else if (da.known()) {
      dims[i] = da;  // the other is unknown: it must be 1 or equal
    } else if (db.known()) {
      dims[i] = db;
    } else {
      dims[i] = Dim();
    }
  }
  out = Shape(std::move(dims));
  return true;
}

bool broadcast_dims(const std::vector<int64_t>& a, const std::vector<int64_t>& b, std::vector<int64_t>& out) {
  Shape s;
  if (!broadcast_shapes(Shape::of(a), Shape::of(b), s)) return false;
  out = s.concrete();
  return true;
}

std::vector<int64_t> strides_of(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i) s[i] = s[i + 1] * dims[i + 1];
  return s;
}

std::vector<int64_t> broadcast_strides(const std::vector<int64_t>& in, const std::vector<int64_t>& out_dims) {
  const size_t r = out_dims.size();
  std::vector<int64_t> s(r, 0);
  std::vector<int64_t> is = strides_of(in);
  for (size_t i = 0; i < in.size(); ++i) {
    size_t o = r - in.size() + i;
    s[o] = in[i] == 1 ? 0 : is[i];
  }
  return s;
}

template <class Ref>
static bool read_ints_impl(DataType dt, const void* data, int64_t n, std::vector<int64_t>& out) {
  out.resize(n);
  if (dt == DataType::kInt64) {
    std::copy_n(static_cast<const int64_t*>(data), n, out.begin());
  } else if (dt == DataType::kInt32) {
    std::copy_n(static_cast<const int32_t*>(data), n, out.begin());
  } else {
    return false;
  }
  return true;
}

bool read_ints(const Tensor& t, std::vector<int64_t>& out) {
  return read_ints_impl<Tensor>(t.dtype(), t.data(), t.numel(), out);
}

bool read_ints(const TensorRef& t, std::vector<int64_t>& out) {
  return read_ints_impl<TensorRef>(t.dtype, t.data, t.numel(), out);
}

bool read_scalar(const TensorRef& t, double& out) {
  if (t.numel() < 1) return false;
  return dispatch(t.dtype, TypeSet::kAll, [&](auto tag) {
    using T = typename decltype(tag)::type;
    out = static_cast<double>(static_cast<const T*>(t.data)[0]);
  });
}

bool checked_numel(const std::vector<int64_t>& dims, int64_t& out) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) return false;
    if (d != 0 && n > (int64_t(1) << 62) / d) return false;
    n *= d;
  }
  out = n;
  return true;
}

void parallel_for(int64_t n, int num_threads, const std::function<void(int64_t, int64_t)>& body) {
  int nt = num_threads > 0 ? num_threads : omp_get_max_threads();
  if (n < 2 || nt <= 1) {
    if (n > 0) body(0, n);
    return;
  }
  nt = static_cast<int>(std::min<int64_t>(nt, n));
#pragma omp parallel num_threads(nt)
  {
    int t = omp_get_thread_num();
    int64_t chunk = (n + nt - 1) / nt;
    int64_t b = t * chunk, e = std::min(n, b + chunk);
    if (b < e) body(b, e);
  }
}

Status check_vector_inputs(InferContext& ctx, std::initializer_list<std::pair<size_t, int64_t>> inputs) {
  for (auto [i, want] : inputs)
    if (ctx.has_input(i) && ctx.in(i).shape.fully_known() &&
        (ctx.in(i).shape.rank() != 1 || ctx.in(i).shape.dims[0].value != want))
      return ctx.error("bias input %zu has shape %s, expected [%lld]", i, ctx.in(i).shape.str().c_str(),
                       (long long)want);
  return Status::ok();
}

}  // namespace infera
