// The saved plan file (docs/saved_plans.md): the 32-byte prefix, the checksum, and the sections
// HEAD, SUMM, GRPH, PERF, SHAP, PACK. Encoding here; the session side (save, refuse, load) is in
// saved_plan_session.cpp.
#include "runtime/saved_plan.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>

#include "frontend/onnx/import.h"
#include "graph/serialize.h"

namespace infera {

namespace {

constexpr size_t kMaxHeaderString = 4096;
constexpr size_t kMaxName = size_t{1} << 20;
constexpr uint64_t kMaxShapes = 4096;
constexpr size_t kMaxPerfText = size_t{64} << 20;  // the perf db file's own limit

constexpr uint32_t fourcc(const char (&s)[5]) {
  return uint32_t(uint8_t(s[0])) | uint32_t(uint8_t(s[1])) << 8 | uint32_t(uint8_t(s[2])) << 16 |
         uint32_t(uint8_t(s[3])) << 24;
}
constexpr uint32_t kHead = fourcc("HEAD"), kSumm = fourcc("SUMM"), kGrph = fourcc("GRPH"), kPerf = fourcc("PERF"),
                   kShap = fourcc("SHAP"), kPack = fourcc("PACK");

void section(ByteWriter& w, uint32_t tag, const ByteWriter& body) {
  w.u32(tag);
  w.u64(body.out.size());
  w.out += body.out;
}

// The next section, which must be `tag`: a reader over exactly its bytes.
bool open_section(ByteReader& r, uint32_t tag, const char* name, const char* base, ByteReader& out) {
  const uint32_t t = r.u32();
  const uint64_t n = r.u64();
  if (!r.ok()) return false;
  if (t != tag) {
    r.fail(std::string("expected section ") + name);
    return false;
  }
  const size_t at = r.offset();
  const char* p = r.bytes(n, name);
  if (!p) return false;
  out = ByteReader(p, static_cast<size_t>(n), at);
  (void)base;
  return true;
}

void write_header(ByteWriter& w, const SavedPlanHeader& h) {
  w.str(h.infera_version);
  w.u8(h.device.is_gpu() ? 1 : 0);
  w.i32(h.device.index);
  for (const std::string* s : {&h.cpu_device, &h.cpu_isa, &h.cpu_libs, &h.gpu_device, &h.gpu_arch, &h.gpu_libs})
    w.str(*s);
  w.u8(static_cast<uint8_t>(h.precision));
  w.u8(h.allow_tf32);
  w.u8(h.vendor_libraries);
  w.u8(h.optimize);
  w.u8(static_cast<uint8_t>(h.conv_algo));
  w.u8(static_cast<uint8_t>(h.winograd));
  w.u8(static_cast<uint8_t>(h.search));
  w.u64(h.backends.size());
  for (const std::string& b : h.backends) w.str(b);
  w.str(h.model);
}

// An enum stored as a byte: in [0, max] or the reader fails naming the field.
template <class E>
E read_enum(ByteReader& r, int max, const char* what) {
  const uint8_t v = r.u8();
  if (v > max) r.fail(std::string(what) + " is " + std::to_string(v) + ", not one of 0.." + std::to_string(max));
  return static_cast<E>(v > max ? 0 : v);
}

bool read_flag(ByteReader& r, const char* what) { return read_enum<uint8_t>(r, 1, what) == 1; }

void read_header(ByteReader& r, SavedPlanHeader& h) {
  h.infera_version = r.str(kMaxHeaderString, "infera version");
  const bool gpu = read_flag(r, "device kind");
  const int32_t index = r.i32();
  if (index < 0 || index > 1024) r.fail("device index " + std::to_string(index));
  h.device = gpu ? Device::gpu(index) : Device::cpu();
  for (std::string* s : {&h.cpu_device, &h.cpu_isa, &h.cpu_libs, &h.gpu_device, &h.gpu_arch, &h.gpu_libs})
    *s = r.str(kMaxHeaderString, "device field");
  h.precision = read_enum<Precision>(r, static_cast<int>(Precision::kMixed), "precision");
  h.allow_tf32 = read_flag(r, "tf32");
  h.vendor_libraries = read_flag(r, "vendor libraries");
  h.optimize = read_flag(r, "optimize");
  h.conv_algo =
      read_enum<SessionOptions::ConvAlgo>(r, static_cast<int>(SessionOptions::ConvAlgo::kVendor), "conv algo");
  h.winograd =
      read_enum<SessionOptions::WinogradMode>(r, static_cast<int>(SessionOptions::WinogradMode::kOff), "winograd");
  h.search = read_enum<SessionOptions::SearchMode>(r, static_cast<int>(SessionOptions::SearchMode::kOff), "search");
  const size_t nb = r.count(64, 9, "backends");
  for (size_t i = 0; i < nb && r.ok(); ++i) {
    h.backends.push_back(r.str(kMaxHeaderString, "backend name"));
    if (h.backends.back().empty()) r.fail("an empty backend name");
  }
  h.model = r.str(kMaxName, "model name");
}

void write_summary(ByteWriter& w, const ModelSummary& s) {
  w.u64(s.node_count_original);
  w.i64(s.parameter_count);
  w.u64(s.op_histogram.size());
  for (auto& [op, n] : s.op_histogram) {
    w.str(op);
    w.i64(n);
  }
  w.u64(s.passes.size());
  for (const PassReport& p : s.passes) {
    w.str(p.name);
    w.u64(p.nodes_before);
    w.u64(p.nodes_after);
  }
}

void read_summary(ByteReader& r, const limits::Limits& lim, ModelSummary& s) {
  const uint64_t max = static_cast<uint64_t>(lim.max_nodes);
  s.node_count_original = static_cast<size_t>(r.u64());
  s.parameter_count = r.i64();
  if (s.node_count_original > max)
    r.fail(std::to_string(s.node_count_original) + " nodes imported, over the limit of " + std::to_string(max));
  if (s.parameter_count < 0) r.fail("negative parameter count");
  const size_t nh = r.count(max, 16, "op histogram");
  for (size_t i = 0; i < nh && r.ok(); ++i) {
    std::string op = r.str(kMaxName, "op name");
    const int64_t n = r.i64();
    if (n < 0 || n > lim.max_nodes) r.fail("op histogram count " + std::to_string(n));
    s.op_histogram[op] = static_cast<int>(n);
  }
  const size_t np = r.count(1024, 24, "passes");
  for (size_t i = 0; i < np && r.ok(); ++i) {
    PassReport p;
    p.name = r.str(kMaxHeaderString, "pass name");
    p.nodes_before = static_cast<size_t>(r.u64());
    p.nodes_after = static_cast<size_t>(r.u64());
    if (p.nodes_before > max || p.nodes_after > max) r.fail("pass node counts out of range");
    s.passes.push_back(std::move(p));
  }
}

void write_shapes(ByteWriter& w, const std::vector<std::map<std::string, std::vector<int64_t>>>& shapes) {
  w.u64(shapes.size());
  for (auto& m : shapes) {
    w.u64(m.size());
    for (auto& [name, dims] : m) {
      w.str(name);
      w.u64(dims.size());
      for (int64_t d : dims) w.i64(d);
    }
  }
}

void read_shapes(ByteReader& r, const limits::Limits& lim,
                 std::vector<std::map<std::string, std::vector<int64_t>>>& out) {
  const size_t n = r.count(kMaxShapes, 8, "saved shapes");
  for (size_t i = 0; i < n && r.ok(); ++i) {
    std::map<std::string, std::vector<int64_t>> m;
    const size_t ni = r.count(static_cast<uint64_t>(lim.max_nodes), 16, "shape inputs");
    for (size_t k = 0; k < ni && r.ok(); ++k) {
      std::string name = r.str(kMaxName, "input name");
      const size_t rank = r.count(static_cast<uint64_t>(lim.max_rank), 8, "shape rank");
      std::vector<int64_t> dims(rank);
      for (size_t d = 0; d < rank; ++d) {
        dims[d] = r.i64();
        if (dims[d] < 0) r.fail("a saved shape has dim " + std::to_string(dims[d]));
      }
      if (r.ok() && !m.emplace(std::move(name), std::move(dims)).second) r.fail("a saved shape names an input twice");
    }
    out.push_back(std::move(m));
  }
}

void write_packed(ByteWriter& w, const std::vector<PackedWeights::Entry>& packed) {
  w.u64(packed.size());
  for (const PackedWeights::Entry& e : packed) {
    w.str(e.key);
    w.str(e.layout);
    w.u64(e.blob->size());
    w.raw(e.blob->data(), e.blob->size());
  }
}

// The bytes are untrusted like the graph's constants; a backend adopts an entry only under its own
// key, layout and byte count (backends/packed_weights.h).
void read_packed(ByteReader& r, const limits::Limits& lim, std::vector<PackedWeights::Entry>& out) {
  const size_t n = r.count(static_cast<uint64_t>(lim.max_nodes) * 16, 24, "packed weights");
  for (size_t i = 0; i < n && r.ok(); ++i) {
    PackedWeights::Entry e;
    e.key = r.str(kMaxName, "packed weights key");
    e.layout = r.str(kMaxHeaderString, "packed weights layout");
    const uint64_t bytes = r.u64();
    const char* p = r.bytes(bytes, "packed weights");
    if (!p) return;
    std::shared_ptr<PackedBlob> blob = PackedBlob::make(static_cast<size_t>(bytes));
    if (!blob) {
      r.fail("packed weights: out of memory for " + std::to_string(bytes) + " bytes");
      return;
    }
    std::memcpy(blob->data(), p, static_cast<size_t>(bytes));
    e.blob = std::move(blob);
    out.push_back(std::move(e));
  }
}

}  // namespace

bool is_saved_plan(const std::string& bytes) {
  return bytes.size() >= sizeof kSavedPlanMagic &&
         std::memcmp(bytes.data(), kSavedPlanMagic, sizeof kSavedPlanMagic) == 0;
}

bool is_saved_plan_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return false;
  char head[sizeof kSavedPlanMagic];
  const ssize_t n = ::read(fd, head, sizeof head);
  ::close(fd);
  return n == static_cast<ssize_t>(sizeof head) && std::memcmp(head, kSavedPlanMagic, sizeof head) == 0;
}

uint64_t saved_plan_checksum(const char* p, size_t n) {
  // FNV-1a over 64-bit little-endian words in 4 interleaved lanes (4x faster than bytewise),
  // then the tail bytes and the length. A changed word always changes its lane's hash (xor and
  // multiplication by an odd prime are bijections), so any single flipped byte is caught.
  constexpr uint64_t kPrime = 1099511628211ull;
  uint64_t h[4] = {14695981039346656037ull, 14695981039346656037ull ^ 1, 14695981039346656037ull ^ 2,
                   14695981039346656037ull ^ 3};
  size_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (int l = 0; l < 4; ++l) {
      uint64_t w;
      std::memcpy(&w, p + i + 8 * l, 8);
      h[l] = (h[l] ^ w) * kPrime;
    }
  uint64_t r = 14695981039346656037ull;
  for (; i < n; ++i) r = (r ^ static_cast<unsigned char>(p[i])) * kPrime;
  for (uint64_t x : h) r = (r ^ x) * kPrime;
  return (r ^ n) * kPrime;
}

std::string encode_saved_plan(const SavedPlan& sp) {
  ByteWriter body, b;
  write_header(b, sp.header);
  section(body, kHead, b);
  b.out.clear();
  write_summary(b, sp.summary);
  section(body, kSumm, b);
  b.out.clear();
  write_graph(b, sp.graph);
  section(body, kGrph, b);
  b.out.clear();
  b.str(perf_db_serialize(sp.choices));
  section(body, kPerf, b);
  b.out.clear();
  write_shapes(b, sp.shapes);
  section(body, kShap, b);
  b.out.clear();
  write_packed(b, sp.packed);
  section(body, kPack, b);
  ByteWriter w;
  w.raw(kSavedPlanMagic, sizeof kSavedPlanMagic);
  w.u32(kSavedPlanFormat);
  w.u32(0);
  w.u64(body.out.size());
  w.u64(saved_plan_checksum(body.out.data(), body.out.size()));
  return w.out + body.out;
}

Result<SavedPlan> decode_saved_plan(const std::string& bytes, const limits::Limits& lim, bool verify_checksum,
                                    const HeaderCheck& check_header) {
  auto bad = [](const std::string& m) { return Status::error(StatusCode::kInvalidModel, m); };
  if (!is_saved_plan(bytes)) return bad("not a saved plan (no infera plan magic bytes)");
  ByteReader pre(bytes.data(), bytes.size());
  pre.bytes(sizeof kSavedPlanMagic, "magic");
  const uint32_t format = pre.u32();
  const uint32_t reserved = pre.u32();
  const uint64_t body_bytes = pre.u64();
  const uint64_t sum = pre.u64();
  if (!pre.ok()) return bad("truncated saved plan: " + std::to_string(bytes.size()) + " bytes, less than its header");
  if (format != kSavedPlanFormat)
    return bad("saved plan format version " + std::to_string(format) + "; this infera (" + version() +
               ") reads version " + std::to_string(kSavedPlanFormat) + ": rebuild it with `infera build`");
  if (reserved != 0) return bad("corrupt saved plan: reserved header field is " + std::to_string(reserved));
  if (body_bytes != pre.left())
    return bad(std::string(body_bytes > pre.left() ? "truncated" : "corrupt") + " saved plan: the header says " +
               std::to_string(body_bytes + kSavedPlanPrefixBytes) + " bytes, the file has " +
               std::to_string(bytes.size()));
  const char* body = bytes.data() + kSavedPlanPrefixBytes;
  if (verify_checksum && saved_plan_checksum(body, static_cast<size_t>(body_bytes)) != sum)
    return bad(
        "corrupt saved plan: checksum mismatch (the file was changed or damaged): rebuild it with `infera build`");

  SavedPlan sp;
  ByteReader r(body, static_cast<size_t>(body_bytes), kSavedPlanPrefixBytes);
  ByteReader s(nullptr, 0);
  auto finish = [&](const char* name) -> Status {
    if (!s.ok()) return bad(std::string("corrupt saved plan: section ") + name + " " + s.what());
    if (s.left())
      return bad(std::string("corrupt saved plan: section ") + name + " has " + std::to_string(s.left()) +
                 " bytes after its end");
    return Status::ok();
  };
  auto opened = [&](uint32_t tag, const char* name) -> Status {
    if (!open_section(r, tag, name, body, s)) return bad("corrupt saved plan: " + r.what());
    return Status::ok();
  };
  if (Status st = opened(kHead, "HEAD"); !st.is_ok()) return st;
  read_header(s, sp.header);
  if (Status st = finish("HEAD"); !st.is_ok()) return st;
  if (check_header)
    if (Status st = check_header(sp.header); !st.is_ok()) return st;
  if (Status st = opened(kSumm, "SUMM"); !st.is_ok()) return st;
  read_summary(s, lim, sp.summary);
  if (Status st = finish("SUMM"); !st.is_ok()) return st;
  if (Status st = opened(kGrph, "GRPH"); !st.is_ok()) return st;
  if (Status st = read_graph(s, lim, sp.graph); !st.is_ok()) return bad("corrupt saved plan: " + st.message());
  if (Status st = finish("GRPH"); !st.is_ok()) return st;
  // The kernels were checked for the importer's ranges only.
  if (sp.graph.opset < kMinOpset || sp.graph.opset > kMaxOpset || sp.graph.ir_version < kMinIrVersion ||
      sp.graph.ir_version > kMaxIrVersion)
    return bad("corrupt saved plan: opset " + std::to_string(sp.graph.opset) + " / IR version " +
               std::to_string(sp.graph.ir_version) + " outside what this infera imports (opset " +
               std::to_string(kMinOpset) + ".." + std::to_string(kMaxOpset) + ")");
  if (Status st = opened(kPerf, "PERF"); !st.is_ok()) return st;
  const std::string perf = s.str(kMaxPerfText, "algorithm choices");
  if (Status st = finish("PERF"); !st.is_ok()) return st;
  auto choices = perf_db_parse(perf);
  if (!choices.is_ok()) return bad("corrupt saved plan: algorithm choices: " + choices.message());
  sp.choices = choices.take();
  if (Status st = opened(kShap, "SHAP"); !st.is_ok()) return st;
  read_shapes(s, lim, sp.shapes);
  if (Status st = finish("SHAP"); !st.is_ok()) return st;
  if (Status st = opened(kPack, "PACK"); !st.is_ok()) return st;
  read_packed(s, lim, sp.packed);
  if (Status st = finish("PACK"); !st.is_ok()) return st;
  if (r.left()) return bad("corrupt saved plan: " + std::to_string(r.left()) + " bytes after the last section");
  return sp;
}

}  // namespace infera
