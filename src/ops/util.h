// Shared helpers for op files: dtype dispatch, broadcasting, axis handling, checked sizes.
#pragma once

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <type_traits>
#include <utility>
#include <vector>

#include "ops/op.h"

namespace infera {

template <class T>
struct TypeTag {
  using type = T;
};

// Calls f(TypeTag<T>{}) for the C++ type of dt. Returns false if dt is not in the set.
// Sets: kFloats (float, double), kNumeric (floats + all ints), kAll (numeric + bool).
enum class TypeSet { kFloats, kSignedNumeric, kNumeric, kAll };

template <class F>
bool dispatch(DataType dt, TypeSet set, F&& f) {
  switch (dt) {
    case DataType::kFloat32: f(TypeTag<float>{}); return true;
    case DataType::kFloat64: f(TypeTag<double>{}); return true;
    default: break;
  }
  if (set == TypeSet::kFloats) return false;
  switch (dt) {
    case DataType::kInt8: f(TypeTag<int8_t>{}); return true;
    case DataType::kInt16: f(TypeTag<int16_t>{}); return true;
    case DataType::kInt32: f(TypeTag<int32_t>{}); return true;
    case DataType::kInt64: f(TypeTag<int64_t>{}); return true;
    default: break;
  }
  if (set == TypeSet::kSignedNumeric) return false;
  switch (dt) {
    case DataType::kUInt8: f(TypeTag<uint8_t>{}); return true;
    case DataType::kUInt16: f(TypeTag<uint16_t>{}); return true;
    case DataType::kUInt32: f(TypeTag<uint32_t>{}); return true;
    case DataType::kUInt64: f(TypeTag<uint64_t>{}); return true;
    default: break;
  }
  if (set == TypeSet::kNumeric) return false;
  if (dt == DataType::kBool) {
    f(TypeTag<bool>{});
    return true;
  }
  return false;
}

// Calls f(TypeTag<T>{}) for float32/float64 only; unlike dispatch(..., kFloats) the body is
// instantiated for floating types alone, so it may use float-only code.
template <class F>
bool dispatch_floats(DataType dt, F&& f) {
  if (dt == DataType::kFloat32)
    f(TypeTag<float>{});
  else if (dt == DataType::kFloat64)
    f(TypeTag<double>{});
  else
    return false;
  return true;
}

// Copies any element type by size (for data-movement ops that do not care about the type).
template <class F>
bool dispatch_by_size(size_t elem_size, F&& f) {
  switch (elem_size) {
    case 1: f(TypeTag<uint8_t>{}); return true;
    case 2: f(TypeTag<uint16_t>{}); return true;
    case 4: f(TypeTag<uint32_t>{}); return true;
    case 8: f(TypeTag<uint64_t>{}); return true;
    default: return false;
  }
}

bool is_float(DataType dt);
bool is_integer(DataType dt);

// Normalizes an axis in [-rank, rank) to [0, rank). Returns false if out of range.
bool normalize_axis(int64_t& axis, int64_t rank);

// Multi-directional (numpy) broadcast of shapes; dims may be symbolic or unknown.
// Returns false when two known dims differ and neither is 1.
bool broadcast_shapes(const Shape& a, const Shape& b, Shape& out);
bool broadcast_dims(const std::vector<int64_t>& a, const std::vector<int64_t>& b, std::vector<int64_t>& out);

// Row-major strides of dims, and strides of `in` aligned to the right of out_dims with 0
// where `in` broadcasts (dim 1 or missing).
std::vector<int64_t> strides_of(const std::vector<int64_t>& dims);
std::vector<int64_t> broadcast_strides(const std::vector<int64_t>& in, const std::vector<int64_t>& out_dims);

// Reads an integer tensor (int32/int64) into int64 values. False for other dtypes.
bool read_ints(const Tensor& t, std::vector<int64_t>& out);
bool read_ints(const TensorRef& t, std::vector<int64_t>& out);
// Reads a float/double/int tensor's first element as double.
bool read_scalar(const TensorRef& t, double& out);

// Multiplies dims, returning false on overflow past 2^62 or a negative dim.
bool checked_numel(const std::vector<int64_t>& dims, int64_t& out);

// Each (input, length) whose input is present with a known shape must be 1-D of that length (a fused
// op's biases); else the error names the input and its shape.
Status check_vector_inputs(InferContext& ctx, std::initializer_list<std::pair<size_t, int64_t>> inputs);

// Runs body(begin, end) over [0, n) split across up to num_threads OpenMP threads.
void parallel_for(int64_t n, int num_threads, const std::function<void(int64_t, int64_t)>& body);

}  // namespace infera
