#include "frontend/onnx/import.h"

#include <fcntl.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <onnx/onnx_pb.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <set>
#include <sstream>
#include <tuple>

#include "infera/limits.h"
#include "ops/op.h"

namespace infera {

namespace {

using limits::kMaxModelBytes;

template <class Proto>
bool parse_proto_nested(Proto& p, const std::string& bytes, int nesting) {
  google::protobuf::io::ArrayInputStream ais(bytes.data(), static_cast<int>(bytes.size()));
  google::protobuf::io::CodedInputStream cis(&ais);
  cis.SetTotalBytesLimit(INT_MAX);
  cis.SetRecursionLimit(nesting);
  return p.ParseFromCodedStream(&cis) && cis.ConsumedEntireMessage();
}

// Parses under the session's nesting limit. Protobuf says only "failed": when a lowered limit
// is what refused the bytes (they parse under the hard cap), the error names it; the second
// parse happens only on that failure.
template <class Proto>
Status parse_proto(Proto& p, const std::string& bytes, const limits::Limits& lim, const std::string& what) {
  if (parse_proto_nested(p, bytes, lim.max_nesting)) return Status::ok();
  if (lim.max_nesting < limits::kMaxNesting) {
    Proto again;
    if (parse_proto_nested(again, bytes, limits::kMaxNesting))
      return Status::error(what + " nests messages deeper than the limit of " + std::to_string(lim.max_nesting) +
                           limit_name("max_nesting"));
  }
  return Status::error(what);
}

// Resolves an external-data location safely: relative, no "..", a regular file (not a
// symlink, not hard-linked) inside model_dir.
Result<std::string> resolve_external(const std::string& model_dir, const std::string& loc, const std::string& what) {
  if (model_dir.empty()) return Status::error(what + ": external data is not allowed here");
  if (loc.empty()) return Status::error(what + ": external data has no location");
  if (loc[0] == '/' || loc[0] == '\\' || loc.find(':') != std::string::npos)
    return Status::error(what + ": external data location '" + loc + "' must be relative to the model's folder");
  std::stringstream ss(loc);
  std::string part;
  while (std::getline(ss, part, '/'))
    if (part == "..") return Status::error(what + ": external data location '" + loc + "' leaves the model's folder");
  if (loc.find('\\') != std::string::npos)
    return Status::error(what + ": external data location '" + loc + "' contains a backslash");
  if (loc.find('\0') != std::string::npos)  // the path would end there: 'ok.bin\0../../x' reads ok.bin
    return Status::error(what + ": external data location '" + loc + "' contains a NUL byte");
  std::string path = model_dir + "/" + loc;
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return Status::error(what + ": external data file '" + loc + "' not found");
  if (S_ISLNK(st.st_mode)) return Status::error(what + ": external data file '" + loc + "' is a symbolic link");
  if (!S_ISREG(st.st_mode)) return Status::error(what + ": external data file '" + loc + "' is not a regular file");
  if (st.st_nlink > 1) return Status::error(what + ": external data file '" + loc + "' is a hard link");
  char* dir_real = realpath(model_dir.c_str(), nullptr);
  char* file_real = realpath(path.c_str(), nullptr);
  std::string d = dir_real ? dir_real : "", f = file_real ? file_real : "";
  free(dir_real);
  free(file_real);
  if (d.empty() || f.empty() || f.compare(0, d.size() + 1, d + "/") != 0)
    return Status::error(what + ": external data file '" + loc + "' is outside the model's folder");
  return path;
}

// Reads the external data of tp into dst (nbytes); dst == nullptr only checks that it is there.
Status read_external(const onnx::TensorProto& tp, const std::string& model_dir, const std::string& what, void* dst,
                     size_t nbytes) {
  std::string loc;
  int64_t offset = 0, length = -1;
  for (const auto& kv : tp.external_data()) {
    char* end = nullptr;
    if (kv.key() == "location") {
      loc = kv.value();
    } else if (kv.key() == "offset" || kv.key() == "length") {
      errno = 0;
      long long v = std::strtoll(kv.value().c_str(), &end, 10);
      if (errno || !end || *end || v < 0)
        return Status::error(what + ": external data " + kv.key() + " '" + kv.value() + "' is not a valid size");
      (kv.key() == "offset" ? offset : length) = v;
    }
  }
  auto path = resolve_external(model_dir, loc, what);
  if (!path.is_ok()) return path.status();
  // Opened without following a link and without blocking (a FIFO swapped in after the checks
  // above), then checked again on the descriptor: what is read is what was checked (no TOCTOU
  // window through the last path component).
  const int fd = ::open(path.value().c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return Status::error(what + ": cannot open external data '" + loc + "': " + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st;
  if (fstat(fd, &st) != 0) return Status::error(what + ": cannot stat external data '" + loc + "'");
  if (!S_ISREG(st.st_mode) || st.st_nlink > 1)
    return Status::error(what + ": external data file '" + loc + "' changed while it was checked");
  if (length < 0) length = static_cast<int64_t>(nbytes);
  if (static_cast<size_t>(length) != nbytes)
    return Status::error(what + ": external data length " + std::to_string(length) + " does not match the " +
                         std::to_string(nbytes) + " bytes its dims and type need");
  if (offset > st.st_size || length > st.st_size - offset)
    return Status::error(what + ": external data offset " + std::to_string(offset) + " + length " +
                         std::to_string(length) + " is beyond the end of '" + loc + "' (" + std::to_string(st.st_size) +
                         " bytes)");
  if (!dst) return Status::ok();  // the check before allocating
  char* out = static_cast<char*>(dst);
  for (int64_t done = 0; done < length;) {
    const ssize_t r = ::pread(fd, out + done, static_cast<size_t>(length - done), offset + done);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return Status::error(what + ": short read of external data '" + loc + "'");
    done += r;
  }
  return Status::ok();
}

template <class Src, class Dst>
void copy_cast(const Src& src, Dst* dst) {
  for (int i = 0; i < src.size(); ++i) dst[i] = static_cast<Dst>(src.Get(i));
}

Result<Shape> shape_from_type(const onnx::TypeProto& tp, const std::string& what, const limits::Limits& lim) {
  if (!tp.has_tensor_type() || !tp.tensor_type().has_shape()) return Shape::unknown();
  if (tp.tensor_type().shape().dim_size() > lim.max_rank)
    return Status::error(what + " declares rank " + std::to_string(tp.tensor_type().shape().dim_size()) +
                         ", more than the limit of " + std::to_string(lim.max_rank) + limit_name("max_rank"));
  std::vector<Dim> dims;
  for (const auto& d : tp.tensor_type().shape().dim()) {
    if (d.has_dim_value() && d.dim_value() >= 0)
      dims.emplace_back(d.dim_value());
    else if (d.has_dim_param() && !d.dim_param().empty())
      dims.push_back(Dim::sym(d.dim_param()));
    else
      dims.emplace_back();
  }
  return Shape(std::move(dims));
}

Result<Attribute> attr_from_proto(const onnx::AttributeProto& ap, const std::string& model_dir, const std::string& what,
                                  const limits::Limits& lim) {
  Attribute a;
  using AP = onnx::AttributeProto;
  const int64_t list = std::max({ap.floats_size(), ap.ints_size(), ap.strings_size(), ap.tensors_size()});
  if (list > lim.max_attribute_elements)
    return Status::error(what + ": attribute '" + ap.name() + "' has " + std::to_string(list) +
                         " elements, more than the limit of " + std::to_string(lim.max_attribute_elements) +
                         limit_name("max_attribute_elements"));
  int type = ap.type();
  if (type == AP::UNDEFINED) {  // IR < 3 style: infer from the populated field
    if (ap.has_f())
      type = AP::FLOAT;
    else if (ap.has_i())
      type = AP::INT;
    else if (ap.has_s())
      type = AP::STRING;
    else if (ap.has_t())
      type = AP::TENSOR;
    else if (ap.floats_size())
      type = AP::FLOATS;
    else if (ap.ints_size())
      type = AP::INTS;
    else if (ap.strings_size())
      type = AP::STRINGS;
  }
  switch (type) {
    case AP::FLOAT:
      a.kind = Attribute::kFloat;
      a.f = ap.f();
      break;
    case AP::INT:
      a.kind = Attribute::kInt;
      a.i = ap.i();
      break;
    case AP::STRING:
      a.kind = Attribute::kString;
      a.s = ap.s();
      break;
    case AP::FLOATS:
      a.kind = Attribute::kFloats;
      a.floats.assign(ap.floats().begin(), ap.floats().end());
      break;
    case AP::INTS:
      a.kind = Attribute::kInts;
      a.ints.assign(ap.ints().begin(), ap.ints().end());
      break;
    case AP::STRINGS:
      a.kind = Attribute::kStrings;
      a.strings.assign(ap.strings().begin(), ap.strings().end());
      break;
    case AP::TENSOR: {
      auto t = tensor_from_proto(ap.t(), model_dir, what + " attribute '" + ap.name() + "'", lim);
      if (!t.is_ok()) return t.status();
      a.kind = Attribute::kTensor;
      a.t = std::make_shared<Tensor>(t.take());
      break;
    }
    case AP::GRAPH:
    case AP::GRAPHS: a.kind = Attribute::kGraph; break;
    default:
      return Status::error(what + ": attribute '" + ap.name() + "' has unsupported type " + std::to_string(type));
  }
  return a;
}

}  // namespace

std::string limit_name(const char* field) { return std::string(" (") + field + ")"; }

std::string elements_limit_str(const limits::Limits& lim) {
  const std::string n = std::to_string(lim.max_tensor_elements);
  return lim.max_tensor_elements == limits::kMaxTensorElements ? "2^40 (" + n + ")" : n;
}

Status check_limits(const limits::Limits& lim) {
  const std::tuple<const char*, int64_t, int64_t> fields[] = {
      {"max_model_bytes", lim.max_model_bytes, limits::kMaxModelBytes},
      {"max_tensor_file_bytes", lim.max_tensor_file_bytes, limits::kMaxTensorFileBytes},
      {"max_tensor_elements", lim.max_tensor_elements, limits::kMaxTensorElements},
      {"max_rank", lim.max_rank, limits::kMaxRank},
      {"max_nodes", lim.max_nodes, limits::kMaxNodes},
      {"max_node_io", lim.max_node_io, limits::kMaxNodeIo},
      {"max_attribute_elements", lim.max_attribute_elements, limits::kMaxAttributeElements},
      {"max_nesting", lim.max_nesting, limits::kMaxNesting}};
  for (const auto& [name, v, cap] : fields)
    if (v < 1 || v > cap)
      return Status::error(StatusCode::kInvalidInput, std::string("limits.") + name + " = " + std::to_string(v) +
                                                          " is not in 1.." + std::to_string(cap) +
                                                          " (a limit may be lowered, not raised past its constant)");
  return Status::ok();
}

Result<std::string> read_binary_file(const std::string& path, const std::string& what, int64_t max_bytes,
                                     const char* field) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return Status::error(path + ": " + what + " not found");
  if (!S_ISREG(st.st_mode)) return Status::error(path + ": " + what + " is not a regular file");
  if (st.st_size > max_bytes)
    return Status::error(path + ": " + what + " of " + std::to_string(st.st_size) +
                         " bytes is larger than the limit of " + std::to_string(max_bytes) + " bytes" +
                         (field ? limit_name(field) : ""));
  // The whole file is held in memory: a size the process cannot get (RLIMIT_AS, cgroup) is an
  // error value here, not a std::bad_alloc out of the public API (load_tensor_file).
  if (static_cast<uint64_t>(st.st_size) > host_memory_bytes())
    return Status::error(StatusCode::kOutOfMemory, path + ": " + what + " of " + std::to_string(st.st_size) +
                                                       " bytes does not fit in the memory this process may use (" +
                                                       std::to_string(host_memory_bytes()) + " bytes)");
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status::error(path + ": cannot open " + what);
  std::string bytes;
  try {
    bytes.assign(static_cast<size_t>(st.st_size), '\0');
  } catch (const std::bad_alloc&) {
    return Status::error(StatusCode::kOutOfMemory,
                         path + ": out of memory reading " + what + " of " + std::to_string(st.st_size) + " bytes");
  }
  f.read(bytes.data(), st.st_size);
  if (f.gcount() != st.st_size) return Status::error(path + ": short read of " + what);
  return bytes;
}

Result<Tensor> tensor_from_proto(const onnx::TensorProto& tp, const std::string& model_dir, const std::string& what,
                                 const limits::Limits& lim) {
  DataType dt = static_cast<DataType>(tp.data_type());
  if (!dtype_supported(dt))
    return Status::error(what + ": unsupported tensor data type " + std::to_string(tp.data_type()));
  if (tp.dims_size() > lim.max_rank)
    return Status::error(what + ": rank " + std::to_string(tp.dims_size()) + " is more than the limit of " +
                         std::to_string(lim.max_rank) + limit_name("max_rank"));
  std::vector<int64_t> dims(tp.dims().begin(), tp.dims().end());
  for (int64_t d : dims)
    if (d < 0) return Status::error(what + ": negative dimension " + std::to_string(d));
  int64_t n = 0;
  // The hard cap keeps the product from overflowing; the session's limit may be lower.
  if (!limits::checked_elements(dims.data(), dims.size(), n) || n > lim.max_tensor_elements) {
    std::string ds;
    for (int64_t d : dims) ds += (ds.empty() ? "" : ", ") + std::to_string(d);
    return Status::error(what + ": dims [" + ds + "] hold more than " + elements_limit_str(lim) + " elements" +
                         limit_name("max_tensor_elements"));
  }
  const size_t es = dtype_size(dt);
  const size_t nbytes = static_cast<size_t>(n) * es;
  const bool external = tp.data_location() == onnx::TensorProto::EXTERNAL;
  // Check the source holds exactly the promised data before allocating.
  auto count_mismatch = [&](const char* field, int64_t have) {
    return Status::error(what + ": " + field + " holds " + std::to_string(have) + " values but dims need " +
                         std::to_string(n));
  };
  if (!external) {
    if (tp.has_raw_data()) {
      if (tp.raw_data().size() != nbytes)
        return Status::error(what + ": raw_data has " + std::to_string(tp.raw_data().size()) + " bytes but dims " +
                             "and type need " + std::to_string(nbytes));
    } else {
      int64_t have = 0;
      switch (dt) {
        case DataType::kFloat32: have = tp.float_data_size(); break;
        case DataType::kFloat64: have = tp.double_data_size(); break;
        case DataType::kInt64: have = tp.int64_data_size(); break;
        case DataType::kUInt32:
        case DataType::kUInt64: have = tp.uint64_data_size(); break;
        default: have = tp.int32_data_size(); break;
      }
      if (have != n) return count_mismatch("typed data field", have);
    }
  } else {
    // The file, offset and length checked before allocating (fuzz_tensor_pb: a 424-byte .pb with
    // an external location it may not have made us zero 1.3 GB first); read after.
    Status s = read_external(tp, model_dir, what, nullptr, nbytes);
    if (!s.is_ok()) return s;
  }
  auto r = Tensor::make(dt, dims);
  if (!r.is_ok()) return r.status().prefixed(what + ": ");  // keeps kOutOfMemory
  Tensor t = r.take();
  if (external || tp.has_raw_data()) {
    if (external) {
      Status s = read_external(tp, model_dir, what, t.data(), nbytes);
      if (!s.is_ok()) return s;
    } else if (nbytes) {
      std::memcpy(t.data(), tp.raw_data().data(), nbytes);
    }
    // Raw bool bytes may be anything; kernels assume 0/1 (Not(2) would give 253).
    if (dt == DataType::kBool) {
      uint8_t* p = t.data_as<uint8_t>();
      for (size_t i = 0; i < nbytes; ++i) p[i] = p[i] != 0;
    }
  } else {
    switch (dt) {
      case DataType::kFloat32: copy_cast(tp.float_data(), t.data_as<float>()); break;
      case DataType::kFloat64: copy_cast(tp.double_data(), t.data_as<double>()); break;
      case DataType::kInt64: copy_cast(tp.int64_data(), t.data_as<int64_t>()); break;
      case DataType::kUInt32: copy_cast(tp.uint64_data(), t.data_as<uint32_t>()); break;
      case DataType::kUInt64: copy_cast(tp.uint64_data(), t.data_as<uint64_t>()); break;
      case DataType::kInt32: copy_cast(tp.int32_data(), t.data_as<int32_t>()); break;
      case DataType::kInt16: copy_cast(tp.int32_data(), t.data_as<int16_t>()); break;
      case DataType::kInt8: copy_cast(tp.int32_data(), t.data_as<int8_t>()); break;
      case DataType::kUInt16:
      case DataType::kFloat16:
      case DataType::kBFloat16: copy_cast(tp.int32_data(), t.data_as<uint16_t>()); break;
      case DataType::kUInt8: copy_cast(tp.int32_data(), t.data_as<uint8_t>()); break;
      case DataType::kBool: {
        uint8_t* p = t.data_as<uint8_t>();
        for (int i = 0; i < tp.int32_data_size(); ++i) p[i] = tp.int32_data(i) != 0;
        break;
      }
      default: return Status::error(what + ": unsupported tensor data type");
    }
  }
  return t;
}

Result<Tensor> tensor_from_pb_bytes(const std::string& bytes, const std::string& path, const limits::Limits& lim) {
  // A .pb is a protobuf message: never more than protobuf's 2 GiB, whatever the file limit.
  if (static_cast<int64_t>(bytes.size()) > std::min(kMaxModelBytes, lim.max_tensor_file_bytes))
    return Status::error(
        path + ": tensor file of " + std::to_string(bytes.size()) + " bytes is larger than the limit of " +
        std::to_string(std::min(kMaxModelBytes, lim.max_tensor_file_bytes)) + " bytes" +
        (lim.max_tensor_file_bytes < kMaxModelBytes ? limit_name("max_tensor_file_bytes") : " (protobuf's 2 GiB)"));
  onnx::TensorProto tp;
  Status s = parse_proto(tp, bytes, lim, path + ": not a valid ONNX TensorProto file");
  if (!s.is_ok()) return s;
  return tensor_from_proto(tp, "", path, lim);
}

Result<Tensor> load_tensor_pb(const std::string& path, const limits::Limits& lim) {
  Status s = check_limits(lim);
  if (!s.is_ok()) return s;
  const bool lowered = lim.max_tensor_file_bytes < kMaxModelBytes;
  auto bytes = read_binary_file(path, "tensor file", lowered ? lim.max_tensor_file_bytes : kMaxModelBytes,
                                lowered ? "max_tensor_file_bytes" : nullptr);
  if (!bytes.is_ok()) return bytes.status();
  return tensor_from_pb_bytes(bytes.value(), path, lim);
}

Result<Graph> import_onnx_file(const std::string& path, const limits::Limits& lim) {
  Status s = check_limits(lim);
  if (!s.is_ok()) return s;
  auto bytes = read_binary_file(path, "model file", lim.max_model_bytes, "max_model_bytes");
  if (!bytes.is_ok()) return bytes.status();
  std::string dir = ".";
  size_t slash = path.find_last_of('/');
  if (slash != std::string::npos) dir = slash == 0 ? "/" : path.substr(0, slash);
  return import_onnx_bytes(bytes.value(), dir, path, lim);
}

Result<Graph> import_onnx_bytes(const std::string& bytes, const std::string& model_dir, const std::string& source,
                                const limits::Limits& lim) {
  Status ls = check_limits(lim);
  if (!ls.is_ok()) return ls;
  if (bytes.empty()) return Status::error(source + ": model file is empty");
  if (static_cast<int64_t>(bytes.size()) > lim.max_model_bytes)
    return Status::error(source + ": model of " + std::to_string(bytes.size()) + " bytes is larger than the limit of " +
                         std::to_string(lim.max_model_bytes) + " bytes" + limit_name("max_model_bytes"));
  onnx::ModelProto mp;
  ls = parse_proto(mp, bytes, lim, source + ": not a valid ONNX model (protobuf parse failed: truncated or not ONNX)");
  if (!ls.is_ok()) return ls;
  Graph g;
  g.source = source;
  g.ir_version = mp.ir_version();
  g.producer = mp.producer_name() + (mp.producer_version().empty() ? "" : " " + mp.producer_version());
  if (g.ir_version < kMinIrVersion || g.ir_version > kMaxIrVersion)
    return Status::error(source + ": ONNX IR version " + std::to_string(g.ir_version) + " is not supported (expected " +
                         std::to_string(kMinIrVersion) + ".." + std::to_string(kMaxIrVersion) + ")");
  if (!mp.has_graph()) return Status::error(source + ": model has no graph");
  g.opset = -1;
  for (const auto& os : mp.opset_import()) {
    if (os.domain().empty() || os.domain() == "ai.onnx") g.opset = os.version();
  }
  if (g.opset < 0) g.opset = mp.opset_import_size() == 0 ? 1 : -1;
  if (g.opset < kMinOpset || g.opset > kMaxOpset)
    return Status::error(source + ": default-domain opset " + std::to_string(g.opset) + " is not supported (expected " +
                         std::to_string(kMinOpset) + ".." + std::to_string(kMaxOpset) + ")");
  const onnx::GraphProto& gp = mp.graph();
  ModelMetadata& md = g.metadata;
  md.producer_name = mp.producer_name();
  md.producer_version = mp.producer_version();
  md.graph_name = gp.name();
  md.domain = mp.domain();
  md.description = mp.doc_string();
  md.graph_description = gp.doc_string();
  md.model_version = mp.model_version();
  for (const auto& kv : mp.metadata_props()) g.metadata.metadata_props[kv.key()] = kv.value();
  const std::pair<const char*, int> counts[] = {{"nodes", gp.node_size()},
                                                {"initializers", gp.initializer_size()},
                                                {"graph inputs", gp.input_size()},
                                                {"graph outputs", gp.output_size()},
                                                {"value_info entries", gp.value_info_size()}};
  for (const auto& [what, count] : counts)
    if (count > lim.max_nodes)
      return Status::error(source + ": the graph has " + std::to_string(count) + " " + what +
                           ", more than the limit of " + std::to_string(lim.max_nodes) + limit_name("max_nodes"));

  // Initializers become constants.
  for (const auto& init : gp.initializer()) {
    if (init.name().empty()) return Status::error(source + ": an initializer has no name");
    if (g.find_value(init.name()) >= 0) return Status::error(source + ": duplicate initializer '" + init.name() + "'");
    auto t = tensor_from_proto(init, model_dir, source + ": initializer '" + init.name() + "'", lim);
    if (!t.is_ok()) return t.status();
    int v = g.add_value(init.name(), t.value().dtype(), Shape::of(t.value().dims()));
    g.values[v].constant = std::make_shared<Tensor>(t.take());
  }
  if (gp.sparse_initializer_size()) return Status::error(source + ": sparse initializers are not supported");
  std::set<std::string> input_names;
  for (const auto& in : gp.input()) {
    if (!input_names.insert(in.name()).second)
      return Status::error(source + ": duplicate graph input '" + in.name() + "'");
    int v = g.find_value(in.name());
    if (v >= 0 && g.values[v].constant) continue;  // IR < 4 lists initializers as inputs
    if (in.name().empty()) return Status::error(source + ": a graph input has no name");
    if (!in.type().has_tensor_type())
      return Status::error(source + ": graph input '" + in.name() +
                           "' is not a tensor (sequences/maps are not supported)");
    DataType dt = static_cast<DataType>(in.type().tensor_type().elem_type());
    if (!dtype_supported(dt))
      return Status::error(source + ": graph input '" + in.name() + "' has unsupported element type " +
                           std::to_string(in.type().tensor_type().elem_type()));
    auto shape = shape_from_type(in.type(), source + ": graph input '" + in.name() + "'", lim);
    if (!shape.is_ok()) return shape.status();
    v = g.add_value(in.name(), dt, shape.take());
    g.inputs.push_back(v);
  }
  std::vector<char> is_input(g.values.size(), 0);  // ids of inputs are all below this size
  for (int v : g.inputs) is_input[v] = 1;
  auto value_of = [&](const std::string& name) {
    int v = g.find_value(name);
    return v >= 0 ? v : g.add_value(name);
  };
  std::set<std::string> node_names;
  for (int i = 0; i < gp.node_size(); ++i) {
    const auto& np = gp.node(i);
    Node n;
    n.op_type = np.op_type();
    n.domain = np.domain() == "ai.onnx" ? "" : np.domain();
    n.name = np.name().empty() ? "#" + std::to_string(i) + ":" + np.op_type() : np.name();
    if (!node_names.insert(n.name).second) n.name += "#" + std::to_string(i);
    if (np.input_size() > lim.max_node_io || np.output_size() > lim.max_node_io)
      return Status::error(source + ": " + n.label() + " has " + std::to_string(np.input_size()) + " inputs and " +
                           std::to_string(np.output_size()) + " outputs, more than the limit of " +
                           std::to_string(lim.max_node_io) + limit_name("max_node_io"));
    // Every op has at least one output; a node without any can only be a broken file.
    if (np.output_size() == 0) return Status::error(source + ": " + n.label() + " has no outputs");
    for (const auto& in : np.input()) n.inputs.push_back(in.empty() ? -1 : value_of(in));
    for (const auto& out : np.output()) {
      if (out.empty()) {
        n.outputs.push_back(-1);
        continue;
      }
      int v = value_of(out);
      if (g.values[v].constant)
        return Status::error(source + ": " + n.label() + " output '" + out + "' has the name of an initializer");
      if (v < static_cast<int>(is_input.size()) && is_input[v])
        return Status::error(source + ": " + n.label() + " output '" + out + "' has the name of a graph input");
      n.outputs.push_back(v);
    }
    for (const auto& ap : np.attribute()) {
      if (n.attrs.count(ap.name()))
        return Status::error(source + ": " + n.label() + " has attribute '" + ap.name() + "' twice");
      auto a = attr_from_proto(ap, model_dir, source + ": " + n.label(), lim);
      if (!a.is_ok()) return a.status();
      n.attrs[ap.name()] = a.take();
    }
    g.nodes.push_back(std::move(n));
  }
  // Declared types of intermediate values and outputs are checked against inference.
  is_input.resize(g.values.size(), 0);
  auto declare = [&](const onnx::ValueInfoProto& vi) -> Status {
    int v = g.find_value(vi.name());
    if (v < 0 || g.values[v].constant || !vi.type().has_tensor_type()) return Status::ok();
    Value& val = g.values[v];
    if (is_input[v]) return Status::ok();
    auto shape = shape_from_type(vi.type(), source + ": value '" + vi.name() + "'", lim);
    if (!shape.is_ok()) return shape.status();
    DataType dt = static_cast<DataType>(vi.type().tensor_type().elem_type());
    if (dtype_supported(dt)) val.dtype = dt;
    val.shape = shape.take();
    return Status::ok();
  };
  for (const auto& vi : gp.value_info()) {
    Status s = declare(vi);
    if (!s.is_ok()) return s;
  }
  std::set<std::string> output_names;
  for (const auto& out : gp.output()) {
    if (!output_names.insert(out.name()).second)
      return Status::error(source + ": duplicate graph output '" + out.name() + "'");
    int v = g.find_value(out.name());
    if (v < 0) return Status::error(source + ": graph output '" + out.name() + "' is not produced by any node");
    Status s = declare(out);
    if (!s.is_ok()) return s;
    g.outputs.push_back(v);
  }
  if (g.outputs.empty()) return Status::error(source + ": graph has no outputs");
  // Kernels write output 0 unconditionally: an omitted one ("") gets an anonymous value that
  // nothing reads (optional outputs at slots >= 1 stay -1; kernels check has_output for them).
  // Named after every name in the file is known, so it can clash with none.
  for (Node& n : g.nodes)
    if (n.outputs[0] < 0) n.outputs[0] = g.add_value(g.unique_name(n.name + ":omitted_output_0"));
  Status s = topo_sort(g);
  if (!s.is_ok()) return s;
  return g;
}

}  // namespace infera
