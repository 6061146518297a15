// Input tensors: --input NAME=PATH files (checked against the model) and seeded random data.
#include <sys/stat.h>

#include <random>
#include <set>

#include "cli.h"

namespace infera::cli {

static std::string input_list(const Session& s) {
  std::string r;
  for (const IoInfo& io : s.inputs()) r += (r.empty() ? "'" : ", '") + io.name + "' " + io_shape_str(io);
  return r.empty() ? "none" : r;
}

Result<std::map<std::string, FileInput>> load_file_inputs(const Session& s, const std::vector<std::string>& specs) {
  std::map<std::string, FileInput> files;
  for (const std::string& spec : specs) {
    std::string name, path = spec;
    // NAME=PATH, where NAME is an input of the model; a single-input model also takes PATH alone
    // (which may itself hold '=').
    size_t eq = spec.find('=');
    const IoInfo* io = nullptr;
    for (size_t e = eq; e != std::string::npos && !io; e = spec.find('=', e + 1))
      for (const IoInfo& i : s.inputs())
        if (i.name == spec.substr(0, e)) {
          io = &i;
          path = spec.substr(e + 1);
        }
    if (!io) {
      if (eq != std::string::npos && !is_file(spec))
        return Status::error(StatusCode::kInvalidInput, "--input " + spec + ": the model has no input '" +
                                                            spec.substr(0, eq) + "' (its inputs: " + input_list(s) +
                                                            ")");
      if (s.inputs().size() != 1)
        return Status::error(StatusCode::kInvalidInput, "--input " + spec + ": give NAME=PATH; this model has " +
                                                            std::to_string(s.inputs().size()) +
                                                            " inputs: " + input_list(s));
      io = &s.inputs()[0];
    }
    name = io->name;
    if (files.count(name))
      return Status::error(StatusCode::kInvalidInput, "input '" + name + "' given twice (--input " + files[name].path +
                                                          " and --input " + path + ")");
    auto t = load_tensor_limited(path, s.options().limits);
    if (!t.is_ok()) return t.status();
    if (t.value().dtype() != io->dtype)
      return Status::error(StatusCode::kInvalidInput, "input '" + name + "' takes " + dtype_name(io->dtype) + "; " +
                                                          path + " holds " + dtype_name(t.value().dtype()));
    files[name] = FileInput{path, t.take()};
  }
  return files;
}

Result<Tensor> load_tensor_limited(const std::string& path, const limits::Limits& lim) {
  // The CLI has the public API only: the file's size is checked here before load_tensor_file
  // reads it (which bounds what reading may allocate), rank and elements of what it held after.
  struct stat st;
  if (stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > lim.max_tensor_file_bytes)
    return Status::error(StatusCode::kInvalidInput, path + ": tensor file of " + std::to_string(st.st_size) +
                                                        " bytes is larger than the limit of " +
                                                        std::to_string(lim.max_tensor_file_bytes) +
                                                        " bytes (--max-tensor-file-bytes)");
  auto t = load_tensor_file(path);
  if (!t.is_ok()) return t.status();
  const auto& d = t.value().dims();
  if (d.size() > static_cast<size_t>(lim.max_rank))
    return Status::error(StatusCode::kInvalidInput, path + ": tensor of rank " + std::to_string(d.size()) +
                                                        " is more than the limit of " + std::to_string(lim.max_rank) +
                                                        " (--max-rank)");
  if (t.value().numel() > lim.max_tensor_elements)
    return Status::error(StatusCode::kInvalidInput, path + ": tensor " + shape_str(d) + " has more than " +
                                                        std::to_string(lim.max_tensor_elements) +
                                                        " elements (--max-tensor-elements)");
  return t;
}

Result<Tensor> random_input(const IoInfo& io, const std::vector<int64_t>& dims, uint32_t seed) {
  auto r = Tensor::make(io.dtype, dims);
  if (!r.is_ok()) return r.status().prefixed("input '" + io.name + "' " + shape_str(dims) + ": ");
  Tensor t = r.take();
  std::mt19937 rng(seed);
  const int64_t n = t.numel();
  switch (io.dtype) {
    case DataType::kFloat32: {
      std::uniform_real_distribution<float> u(-1.f, 1.f);
      for (int64_t i = 0; i < n; ++i) t.data_as<float>()[i] = u(rng);
      break;
    }
    case DataType::kFloat64: {
      std::uniform_real_distribution<double> u(-1.0, 1.0);
      for (int64_t i = 0; i < n; ++i) t.data_as<double>()[i] = u(rng);
      break;
    }
    case DataType::kFloat16:
    case DataType::kBFloat16: {
      std::uniform_real_distribution<float> u(-1.f, 1.f);
      const bool half = io.dtype == DataType::kFloat16;
      for (int64_t i = 0; i < n; ++i)
        t.data_as<uint16_t>()[i] = half ? float_to_half(u(rng)) : float_to_bfloat16(u(rng));
      break;
    }
    case DataType::kInt64:
      for (int64_t i = 0; i < n; ++i) t.data_as<int64_t>()[i] = static_cast<int64_t>(rng() % 10);
      break;
    case DataType::kInt32:
      for (int64_t i = 0; i < n; ++i) t.data_as<int32_t>()[i] = static_cast<int32_t>(rng() % 10);
      break;
    case DataType::kInt16:
    case DataType::kUInt16:
      for (int64_t i = 0; i < n; ++i) t.data_as<uint16_t>()[i] = static_cast<uint16_t>(rng() % 10);
      break;
    case DataType::kUInt32:
      for (int64_t i = 0; i < n; ++i) t.data_as<uint32_t>()[i] = static_cast<uint32_t>(rng() % 10);
      break;
    case DataType::kUInt64:
      for (int64_t i = 0; i < n; ++i) t.data_as<uint64_t>()[i] = rng() % 10;
      break;
    case DataType::kBool:
    case DataType::kUInt8:
    case DataType::kInt8:
      for (int64_t i = 0; i < n; ++i)
        t.data_as<uint8_t>()[i] = static_cast<uint8_t>(io.dtype == DataType::kBool ? rng() % 2 : rng() % 10);
      break;
    default:
      return Status::error(StatusCode::kUnsupported, "input '" + io.name + "': cannot make random data of type " +
                                                         dtype_name(io.dtype) + "; give --input " + io.name + "=PATH");
  }
  return t;
}

Result<std::map<std::string, Tensor>> make_inputs(const Session& s, const ResolvedShapes& shapes,
                                                  const std::map<std::string, FileInput>& files, uint32_t seed) {
  std::map<std::string, Tensor> inputs;
  uint32_t k = 0;
  for (const IoInfo& io : s.inputs()) {
    const uint32_t input_seed = seed + k++;
    auto f = files.find(io.name);
    if (f != files.end()) {
      inputs[io.name] = f->second.tensor;  // shares the file's storage; runs only read it
      continue;
    }
    // Files for some inputs and random data for the others would hide a forgotten --input.
    if (!files.empty())
      return Status::error(StatusCode::kInvalidInput, "input '" + io.name + "' has no --input while " +
                                                          files.begin()->first +
                                                          " has one: give every input, or none for random data");
    auto t = random_input(io, shapes.dims.at(io.name), input_seed);
    if (!t.is_ok()) return t.status();
    inputs[io.name] = t.take();
  }
  return inputs;
}

}  // namespace infera::cli
