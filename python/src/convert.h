// Arrays <-> infera::Tensor for the Python extension: NumPy arrays and any object with
// __dlpack__ become Tensor views without a copy where the memory already fits (C-contiguous,
// aligned, on the device the session reads), else one copy; outputs become arrays that own the
// Tensor's storage (no copy).
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <string>

#include "infera/infera.h"

namespace infera::py {

namespace nb = nanobind;

// Raises the infera exception of s's code (infera.InvalidInput, ...) with s's message.
[[noreturn]] void raise_status(const Status& s);
[[noreturn]] void raise_error(StatusCode code, const std::string& msg);

// The DLPack device type of this build's GPU (kDLCUDA or kDLROCM; kDLCUDA in a CPU-only build).
int gpu_dlpack_device();

// One converted input: the tensor the session reads, the array it views (kept alive while the
// tensor is used) and whether a copy was made.
struct Feed {
  Tensor tensor;
  nb::ndarray<nb::ro> array;
  bool copied = false;
};

// `obj` (a NumPy array, an object with __dlpack__ or anything with the buffer protocol) as a
// tensor for input `name` of a session on `device`. `expect` (kUndefined: any) is the model's
// dtype: another dtype is infera.InvalidInput (never cast silently, as ONNX Runtime).
Feed to_feed(nb::handle obj, const std::string& name, DataType expect, Device device);

// A writable array (bind_output) as a tensor written in place: must be C-contiguous, aligned,
// of dtype `expect` and on the host or the session's GPU (anything else is InvalidInput).
Feed to_output(nb::handle obj, const std::string& name, DataType expect, Device device);

// The tensor as a Python object that owns its storage (no copy): a NumPy array (host tensors
// only), or with `dlpack` an nanobind ndarray with __dlpack__ / __dlpack_device__.
nb::object to_python(Tensor&& t, bool dlpack, const std::string& name);

// "tensor(float)"-style ONNX Runtime type names.
const char* ort_type_name(DataType t);

}  // namespace infera::py
