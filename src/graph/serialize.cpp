// Graph <-> bytes (graph/serialize.h). The reader trusts nothing: a length or count is compared
// with the bytes left (every item takes at least one byte) and with the session's limits before
// anything is allocated for it.
#include "graph/serialize.h"

#include <set>

namespace infera {

namespace {

constexpr size_t kMaxString = size_t{1} << 20;  // names, op types, string attributes

bool dtype_ok(DataType t) { return t == DataType::kUndefined || dtype_supported(t); }

void write_shape(ByteWriter& w, const Shape& s) {
  w.u8(s.rank_known ? 1 : 0);
  w.u64(s.dims.size());
  for (const Dim& d : s.dims) {
    w.i64(d.value);
    w.str(d.symbol);
  }
}

bool read_shape(ByteReader& r, const limits::Limits& lim, Shape& s) {
  const uint8_t known = r.u8();
  if (known > 1) r.fail("a shape's rank flag is " + std::to_string(known) + " (0 or 1)");
  s.rank_known = known == 1;
  const size_t rank = r.count(static_cast<uint64_t>(lim.max_rank), 16, "shape dims");
  if (!s.rank_known && rank) r.fail("a shape of unknown rank lists dims");
  for (size_t i = 0; i < rank && r.ok(); ++i) {
    Dim d;
    d.value = r.i64();
    d.symbol = r.str(kMaxString, "dim symbol");
    if (d.value < -1 || (d.value >= 0 && !d.symbol.empty()))
      r.fail("a dim is " + std::to_string(d.value) + " with symbol '" + d.symbol + "'");
    s.dims.push_back(std::move(d));
  }
  return r.ok();
}

void write_attr(ByteWriter& w, const Attribute& a) {
  w.u8(static_cast<uint8_t>(a.kind));
  switch (a.kind) {
    case Attribute::kFloat: w.f32(a.f); break;
    case Attribute::kInt: w.i64(a.i); break;
    case Attribute::kString: w.str(a.s); break;
    case Attribute::kTensor:
      w.u8(a.t ? 1 : 0);
      if (a.t) write_tensor(w, *a.t);
      break;
    case Attribute::kFloats:
      w.u64(a.floats.size());
      for (float f : a.floats) w.f32(f);
      break;
    case Attribute::kInts:
      w.u64(a.ints.size());
      for (int64_t i : a.ints) w.i64(i);
      break;
    case Attribute::kStrings:
      w.u64(a.strings.size());
      for (const std::string& s : a.strings) w.str(s);
      break;
    case Attribute::kUndefined:
    case Attribute::kGraph: break;  // a subgraph is never kept (the importer keeps the kind only)
  }
}

bool read_attr(ByteReader& r, const limits::Limits& lim, Attribute& a, const std::string& what) {
  const uint8_t kind = r.u8();
  if (kind > Attribute::kGraph) {
    r.fail(what + ": attribute kind " + std::to_string(kind) + " is not one of 0.." +
           std::to_string(Attribute::kGraph));
    return false;
  }
  a.kind = static_cast<Attribute::Kind>(kind);
  const uint64_t max_list = static_cast<uint64_t>(lim.max_attribute_elements);
  switch (a.kind) {
    case Attribute::kFloat: a.f = r.f32(); break;
    case Attribute::kInt: a.i = r.i64(); break;
    case Attribute::kString: a.s = r.str(kMaxString, "string attribute"); break;
    case Attribute::kTensor: {
      const uint8_t has = r.u8();
      if (has > 1) r.fail(what + ": tensor attribute flag " + std::to_string(has));
      if (has == 1 && r.ok()) {
        auto t = read_tensor(r, lim, what);
        if (!t.is_ok()) {
          r.fail(t.message());
          return false;
        }
        a.t = std::make_shared<const Tensor>(t.take());
      }
      break;
    }
    case Attribute::kFloats: {
      const size_t n = r.count(max_list, 4, "attribute floats");
      a.floats.resize(n);
      for (size_t i = 0; i < n; ++i) a.floats[i] = r.f32();
      break;
    }
    case Attribute::kInts: {
      const size_t n = r.count(max_list, 8, "attribute ints");
      a.ints.resize(n);
      for (size_t i = 0; i < n; ++i) a.ints[i] = r.i64();
      break;
    }
    case Attribute::kStrings: {
      const size_t n = r.count(max_list, 8, "attribute strings");
      for (size_t i = 0; i < n && r.ok(); ++i) a.strings.push_back(r.str(kMaxString, "attribute string"));
      break;
    }
    case Attribute::kUndefined:
    case Attribute::kGraph: break;
  }
  return r.ok();
}

void write_ids(ByteWriter& w, const std::vector<int>& ids) {
  w.u64(ids.size());
  for (int v : ids) w.i32(v);
}

// ids in [lo, n_values); lo = -1 allows "left out".
bool read_ids(ByteReader& r, uint64_t max, int lo, size_t n_values, std::vector<int>& ids, const std::string& what) {
  const size_t n = r.count(max, 4, what.c_str());
  ids.resize(n);
  for (size_t i = 0; i < n && r.ok(); ++i) {
    ids[i] = r.i32();
    if (ids[i] < lo || ids[i] >= static_cast<int64_t>(n_values))
      r.fail(what + ": value id " + std::to_string(ids[i]) + " is outside [" + std::to_string(lo) + ", " +
             std::to_string(n_values) + ")");
  }
  return r.ok();
}

}  // namespace

std::string ByteReader::str(size_t max, const char* what) {
  const uint64_t n = u64();
  if (!ok()) return {};
  if (n > max || n > left()) {
    fail(std::string(what) + ": length " + std::to_string(n) + " is over " +
         (n > max ? "the limit of " + std::to_string(max) : "the " + std::to_string(left()) + " bytes left"));
    return {};
  }
  std::string s(p_, static_cast<size_t>(n));
  p_ += n;
  return s;
}

size_t ByteReader::count(uint64_t max, size_t min_item_bytes, const char* what) {
  const uint64_t n = u64();
  if (!ok()) return 0;
  if (n > max) {
    fail(std::string(what) + ": " + std::to_string(n) + " items, over the limit of " + std::to_string(max));
    return 0;
  }
  if (min_item_bytes && n > left() / min_item_bytes) {
    fail(std::string(what) + ": " + std::to_string(n) + " items do not fit in the " + std::to_string(left()) +
         " bytes left");
    return 0;
  }
  return static_cast<size_t>(n);
}

const char* ByteReader::bytes(uint64_t n, const char* what) {
  if (!ok()) return nullptr;
  if (n > left()) {
    fail(std::string(what) + ": " + std::to_string(n) + " bytes, but " + std::to_string(left()) + " are left");
    return nullptr;
  }
  const char* q = p_;
  p_ += n;
  return q;
}

void write_tensor(ByteWriter& w, const Tensor& t) {
  w.i32(static_cast<int32_t>(t.dtype()));
  w.u64(t.dims().size());
  for (int64_t d : t.dims()) w.i64(d);
  w.u64(t.nbytes());
  w.raw(t.data(), t.nbytes());
}

Result<Tensor> read_tensor(ByteReader& r, const limits::Limits& lim, const std::string& what) {
  const DataType dt = static_cast<DataType>(r.i32());
  const size_t rank = r.count(static_cast<uint64_t>(lim.max_rank), 8, "tensor dims");
  std::vector<int64_t> dims(rank);
  for (size_t i = 0; i < rank; ++i) dims[i] = r.i64();
  const uint64_t nbytes = r.u64();
  if (!r.ok()) return Status::error(what + ": " + r.what());
  if (!dtype_supported(dt))
    return Status::error(what + ": tensor data type " + std::to_string(static_cast<int>(dt)) + " is not supported");
  int64_t n = 0;
  if (!limits::checked_elements(dims.data(), dims.size(), n) || n > lim.max_tensor_elements)
    return Status::error(what + ": tensor dims " + Shape::of(dims).str() + " are negative or over the limit of " +
                         std::to_string(lim.max_tensor_elements) + " elements");
  if (nbytes != static_cast<uint64_t>(n) * dtype_size(dt))
    return Status::error(what + ": tensor " + Shape::of(dims).str() + " " + dtype_name(dt) + " has " +
                         std::to_string(nbytes) + " bytes of data, expected " +
                         std::to_string(static_cast<uint64_t>(n) * dtype_size(dt)));
  const char* data = r.bytes(nbytes, "tensor data");  // checked before Tensor::make allocates
  if (!data) return Status::error(what + ": " + r.what());
  auto t = Tensor::make(dt, dims);
  if (!t.is_ok()) return t.status().prefixed(what + ": ");
  if (nbytes) std::memcpy(t.value().data(), data, nbytes);
  return t;
}

void write_graph(ByteWriter& w, const Graph& g) {
  w.i64(g.ir_version);
  w.i64(g.opset);
  w.str(g.producer);
  w.str(g.source);
  const ModelMetadata& m = g.metadata;
  for (const std::string* s :
       {&m.producer_name, &m.producer_version, &m.graph_name, &m.domain, &m.description, &m.graph_description})
    w.str(*s);
  w.i64(m.model_version);
  w.u64(m.metadata_props.size());
  for (auto& [k, v] : m.metadata_props) {
    w.str(k);
    w.str(v);
  }
  w.u64(g.values.size());
  for (const Value& v : g.values) {
    w.str(v.name);
    w.i32(static_cast<int32_t>(v.dtype));
    write_shape(w, v.shape);
    w.u8(v.constant ? 1 : 0);
    if (v.constant) write_tensor(w, *v.constant);
  }
  write_ids(w, g.inputs);
  write_ids(w, g.outputs);
  w.u64(g.nodes.size());
  for (const Node& n : g.nodes) {
    w.str(n.name);
    w.str(n.op_type);
    w.str(n.domain);
    write_ids(w, n.inputs);
    write_ids(w, n.outputs);
    w.u64(n.attrs.size());
    for (auto& [k, a] : n.attrs) {
      w.str(k);
      write_attr(w, a);
    }
  }
}

Status read_graph(ByteReader& r, const limits::Limits& lim, Graph& g) {
  auto bad = [&]() { return Status::error(StatusCode::kInvalidModel, "graph section " + r.what()); };
  g.ir_version = r.i64();
  g.opset = r.i64();
  g.producer = r.str(kMaxString, "producer");
  g.source = r.str(kMaxString, "source");
  ModelMetadata& m = g.metadata;
  for (std::string* s :
       {&m.producer_name, &m.producer_version, &m.graph_name, &m.domain, &m.description, &m.graph_description})
    *s = r.str(kMaxString, "metadata");
  m.model_version = r.i64();
  const size_t props = r.count(static_cast<uint64_t>(lim.max_nodes), 16, "metadata properties");
  for (size_t i = 0; i < props && r.ok(); ++i) {
    std::string k = r.str(kMaxString, "metadata key");
    m.metadata_props[k] = r.str(kMaxString, "metadata value");
  }
  // Initializers, graph inputs and node outputs: each capped at max_nodes by the importer.
  const uint64_t max_values = static_cast<uint64_t>(lim.max_nodes) * 3;
  const size_t nv = r.count(max_values, 22, "values");
  if (!r.ok()) return bad();
  std::set<std::string> names;
  for (size_t i = 0; i < nv; ++i) {
    std::string name = r.str(kMaxString, "value name");
    if (!r.ok()) return bad();
    if (!name.empty() && !names.insert(name).second)
      return Status::error(StatusCode::kInvalidModel, "graph section: two values are named '" + name + "'");
    const DataType dt = static_cast<DataType>(r.i32());
    Shape shape;
    if (!read_shape(r, lim, shape)) return bad();
    if (!dtype_ok(dt))
      return Status::error(StatusCode::kInvalidModel,
                           "graph section: value '" + name + "' has data type " + std::to_string(static_cast<int>(dt)));
    const int v = g.add_value(name, dt, std::move(shape));
    const uint8_t has_const = r.u8();
    if (has_const > 1) r.fail("value '" + name + "': constant flag " + std::to_string(has_const));
    if (!r.ok()) return bad();
    if (has_const) {
      auto t = read_tensor(r, lim, "graph section: constant '" + name + "'");
      if (!t.is_ok()) return t.status().or_code(StatusCode::kInvalidModel);
      const Value& val = g.values[v];
      if (t.value().dtype() != val.dtype || !val.shape.fully_known() || val.shape.concrete() != t.value().dims())
        return Status::error(StatusCode::kInvalidModel, "graph section: constant '" + name + "' is " +
                                                            dtype_name(t.value().dtype()) + " " +
                                                            Shape::of(t.value().dims()).str() + " but its value is " +
                                                            dtype_name(val.dtype) + " " + val.shape.str());
      g.values[v].constant = std::make_shared<const Tensor>(t.take());
    }
  }
  if (!read_ids(r, static_cast<uint64_t>(lim.max_nodes), 0, nv, g.inputs, "graph inputs") ||
      !read_ids(r, static_cast<uint64_t>(lim.max_nodes), 0, nv, g.outputs, "graph outputs"))
    return bad();
  const size_t nn = r.count(static_cast<uint64_t>(lim.max_nodes), 40, "nodes");
  if (!r.ok()) return bad();
  // producer[v]: the node defining v; -2 a graph input or constant; -1 not defined (yet).
  std::vector<int> producer(nv, -1);
  for (int v : g.inputs) {
    if (producer[v] != -1 || g.values[v].constant)
      return Status::error(StatusCode::kInvalidModel,
                           "graph section: graph input '" + g.values[v].name + "' is listed twice or is a constant");
    if (!dtype_supported(g.values[v].dtype))
      return Status::error(StatusCode::kInvalidModel,
                           "graph section: graph input '" + g.values[v].name + "' has no supported data type");
    producer[v] = -2;
  }
  for (size_t v = 0; v < nv; ++v)
    if (g.values[v].constant) producer[v] = -2;
  std::set<std::string> node_names;
  const uint64_t max_io = static_cast<uint64_t>(lim.max_node_io);
  for (size_t i = 0; i < nn; ++i) {
    Node n;
    n.name = r.str(kMaxString, "node name");
    n.op_type = r.str(kMaxString, "op type");
    n.domain = r.str(kMaxString, "domain");
    if (!r.ok()) return bad();
    const std::string label = n.label();
    if (!node_names.insert(n.name).second)
      return Status::error(StatusCode::kInvalidModel, "graph section: two nodes are named '" + n.name + "'");
    if (!read_ids(r, max_io, -1, nv, n.inputs, label + " inputs") ||
        !read_ids(r, max_io, -1, nv, n.outputs, label + " outputs"))
      return bad();
    if (n.outputs.empty() || n.outputs[0] < 0)
      return Status::error(StatusCode::kInvalidModel, "graph section: " + label + " has no output 0");
    for (int v : n.inputs)
      if (v >= 0 && producer[v] == -1)
        return Status::error(StatusCode::kInvalidModel, "graph section: " + label + " reads '" + g.values[v].name +
                                                            "', which no earlier node, input or constant defines");
    for (int v : n.outputs) {
      if (v < 0) continue;
      if (producer[v] != -1)
        return Status::error(StatusCode::kInvalidModel, "graph section: " + label + " writes '" + g.values[v].name +
                                                            "', which is already defined");
      producer[v] = static_cast<int>(i);
    }
    const size_t na = r.count(max_io, 9, "attributes");
    for (size_t a = 0; a < na && r.ok(); ++a) {
      std::string key = r.str(kMaxString, "attribute name");
      Attribute at;
      if (!read_attr(r, lim, at, label + " attribute '" + key + "'")) break;
      if (key.empty() || n.attrs.count(key))
        return Status::error(StatusCode::kInvalidModel,
                             "graph section: " + label + " has attribute '" + key + "' twice or without a name");
      n.attrs[key] = std::move(at);
    }
    if (!r.ok()) return bad();
    g.add_node(std::move(n));
  }
  std::set<int> outs;
  for (int v : g.outputs) {
    if (producer[v] == -1)
      return Status::error(StatusCode::kInvalidModel,
                           "graph section: graph output '" + g.values[v].name + "' is not defined");
    if (!outs.insert(v).second)
      return Status::error(StatusCode::kInvalidModel,
                           "graph section: graph output '" + g.values[v].name + "' is listed twice");
  }
  if (g.outputs.empty()) return Status::error(StatusCode::kInvalidModel, "graph section: the graph has no outputs");
  return Status::ok();
}

}  // namespace infera
