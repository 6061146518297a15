// The performance database file: parse/serialize (untrusted text, strict schema), the store
// shared by the sessions of a process, and the locked read-merge-write of flush().
#include "tune/perfdb.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>

#include "tune/json.h"
#include "tune/keys.h"

namespace infera {

namespace {

constexpr size_t kMaxFileBytes = size_t{64} << 20;
constexpr size_t kMaxField = 1024;
constexpr const char* kFormatName = "infera-perfdb";

bool field_ok(const std::string& s) {
  if (s.empty() || s.size() > kMaxField) return false;
  for (unsigned char c : s)
    if (c < 0x20 || c == 0x7f) return false;
  return true;
}

Status bad(size_t i, const std::string& what) {
  return Status::error(StatusCode::kInvalidInput, "entry " + std::to_string(i) + ": " + what);
}

Status read_string(const json::Value& o, const char* name, size_t i, std::string& out) {
  const json::Value* v = o.get(name);
  if (!v || !v->is(json::Value::Kind::kString)) return bad(i, std::string("'") + name + "' must be a string");
  if (!field_ok(v->str))
    return bad(
        i, std::string("'") + name + "' must be 1.." + std::to_string(kMaxField) + " bytes without control characters");
  out = v->str;
  return Status::ok();
}

Status read_ms(const json::Value& o, const char* name, size_t i, double& out) {
  const json::Value* v = o.get(name);
  if (!v || !v->is(json::Value::Kind::kNumber) || !(v->num >= -1 && v->num <= 1e9))
    return bad(i, std::string("'") + name + "' must be a number of milliseconds in [-1, 1e9]");
  out = v->num;
  return Status::ok();
}

// Reads a regular file of at most kMaxFileBytes. Missing: ok with *exists = false.
Status read_bounded(const std::string& path, std::string& out, bool* exists) {
  *exists = false;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return Status::ok();
    return Status::error(StatusCode::kIo, std::string("cannot open: ") + std::strerror(errno));
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::error(StatusCode::kIo, "not a regular file");
  }
  *exists = true;
  if (static_cast<unsigned long long>(st.st_size) > kMaxFileBytes) {
    ::close(fd);
    return Status::error(StatusCode::kInvalidInput,
                         std::to_string(st.st_size) + " bytes, over the limit of " + std::to_string(kMaxFileBytes));
  }
  out.clear();
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      ::close(fd);
      return Status::error(StatusCode::kIo, std::string("read failed: ") + std::strerror(errno));
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > kMaxFileBytes) {
      ::close(fd);
      return Status::error(StatusCode::kInvalidInput, "grew over the size limit while being read");
    }
  }
  ::close(fd);
  return Status::ok();
}

bool is_foreign_version(const std::string& msg) { return msg.rfind("version ", 0) == 0; }

}  // namespace

std::string PerfKey::str() const {
  return device + '\n' + libs + '\n' + op + '\n' + shape + '\n' + dtype + '\n' + formats + '\n' + epilogue;
}

const char* conv_algo_name(SessionOptions::ConvAlgo a) {
  using A = SessionOptions::ConvAlgo;
  switch (a) {
    case A::kAuto: return "auto";
    case A::kImplicitGemm: return "implicit_gemm";
    case A::kWinograd: return "winograd";
    case A::kDirect: return "direct";
    case A::kGemm: return "gemm";
    case A::kVendor: return "vendor";
  }
  return "?";
}

const char* search_name(SessionOptions::SearchMode m) {
  using M = SessionOptions::SearchMode;
  return m == M::kFast ? "fast" : m == M::kExhaustive ? "exhaustive" : "off";
}

Result<std::vector<PerfEntry>> perf_db_parse(const std::string& text) {
  json::Limits lim;
  lim.max_bytes = kMaxFileBytes;
  lim.max_depth = 5;
  lim.max_string = kMaxField;
  lim.max_members = 16;
  auto doc = json::parse(text, lim);
  if (!doc.is_ok()) return doc.status();
  const json::Value& d = doc.value();
  if (!d.is(json::Value::Kind::kObject)) return Status::error(StatusCode::kInvalidInput, "not a JSON object");
  const json::Value* fmt = d.get("format");
  if (!fmt || !fmt->is(json::Value::Kind::kString) || fmt->str != kFormatName)
    return Status::error(StatusCode::kInvalidInput,
                         std::string("not an infera perf db (no \"format\": \"") + kFormatName + "\")");
  const json::Value* ver = d.get("version");
  if (!ver || !ver->is(json::Value::Kind::kNumber))
    return Status::error(StatusCode::kInvalidInput, "no \"version\" number");
  if (ver->num != kPerfDbVersion) {
    char b[96];
    std::snprintf(b, sizeof b, "version %.6g; this infera reads version %d", ver->num, kPerfDbVersion);
    return Status::error(StatusCode::kInvalidInput, b);
  }
  const json::Value* es = d.get("entries");
  if (!es || !es->is(json::Value::Kind::kArray))
    return Status::error(StatusCode::kInvalidInput, "no \"entries\" array");
  if (es->items.size() > kPerfDbMaxEntries)
    return Status::error(StatusCode::kInvalidInput, std::to_string(es->items.size()) + " entries, over the limit of " +
                                                        std::to_string(kPerfDbMaxEntries));
  std::vector<PerfEntry> out;
  out.reserve(es->items.size());
  for (size_t i = 0; i < es->items.size(); ++i) {
    const json::Value& o = es->items[i];
    if (!o.is(json::Value::Kind::kObject)) return bad(i, "not an object");
    PerfEntry e;
    PerfKey& k = e.key;
    for (auto [name, field] : std::initializer_list<std::pair<const char*, std::string*>>{{"device", &k.device},
                                                                                          {"libs", &k.libs},
                                                                                          {"op", &k.op},
                                                                                          {"shape", &k.shape},
                                                                                          {"dtype", &k.dtype},
                                                                                          {"formats", &k.formats},
                                                                                          {"epilogue", &k.epilogue},
                                                                                          {"winner", &e.winner},
                                                                                          {"search", &e.search}}) {
      Status s = read_string(o, name, i, *field);
      if (!s.is_ok()) return s;
    }
    if (e.search != "fast" && e.search != "exhaustive") return bad(i, "'search' must be fast or exhaustive");
    Status s = read_ms(o, "ms", i, e.ms);
    if (!s.is_ok()) return s;
    const json::Value* cs = o.get("candidates");
    if (!cs || !cs->is(json::Value::Kind::kArray) || cs->items.size() > kPerfDbMaxCandidates)
      return bad(i, "'candidates' must be an array of at most " + std::to_string(kPerfDbMaxCandidates));
    bool winner_listed = cs->items.empty();
    for (const json::Value& c : cs->items) {
      if (!c.is(json::Value::Kind::kObject)) return bad(i, "a candidate is not an object");
      PerfCandidate pc;
      s = read_string(c, "name", i, pc.name);
      if (s.is_ok()) s = read_ms(c, "ms", i, pc.ms);
      if (!s.is_ok()) return s;
      winner_listed = winner_listed || pc.name == e.winner;
      e.candidates.push_back(std::move(pc));
    }
    if (!winner_listed) return bad(i, "the winner '" + e.winner + "' is not among its candidates");
    out.push_back(std::move(e));
  }
  return out;
}

std::string perf_db_serialize(const std::vector<PerfEntry>& entries) {
  std::string s = "{\"format\": \"" + std::string(kFormatName) + "\", \"version\": " + std::to_string(kPerfDbVersion) +
                  ",\n \"entries\": [";
  for (size_t i = 0; i < entries.size(); ++i) {
    const PerfEntry& e = entries[i];
    const PerfKey& k = e.key;
    s += i ? ",\n  {" : "\n  {";
    s += "\"device\": " + json::quote(k.device) + ", \"libs\": " + json::quote(k.libs) +
         ", \"op\": " + json::quote(k.op) + ", \"shape\": " + json::quote(k.shape) +
         ", \"dtype\": " + json::quote(k.dtype) + ", \"formats\": " + json::quote(k.formats) +
         ", \"epilogue\": " + json::quote(k.epilogue) + ", \"winner\": " + json::quote(e.winner) +
         ", \"ms\": " + json::number(e.ms) + ", \"search\": " + json::quote(e.search) + ", \"candidates\": [";
    for (size_t c = 0; c < e.candidates.size(); ++c)
      s += (c ? ", {\"name\": " : "{\"name\": ") + json::quote(e.candidates[c].name) +
           ", \"ms\": " + json::number(e.candidates[c].ms) + "}";
    s += "]}";
  }
  return s + "\n ]}\n";
}

std::string perf_db_default_path() {
  const char* x = std::getenv("XDG_CACHE_HOME");
  if (x && *x == '/') return std::string(x) + "/infera/perfdb.json";  // relative XDG paths are ignored (spec)
  const char* h = std::getenv("HOME");
  if (h && *h) return std::string(h) + "/.cache/infera/perfdb.json";
  return "";
}

// ---------------------------------------------------------------- the store
class PerfStore {
 public:
  std::string path;  // "" = in memory only
  std::string warning;
  bool writable = true;  // false: a file of another version (never overwritten)
  bool write_warned = false;
  std::mutex mu;
  std::map<std::string, PerfEntry> entries;
  std::set<std::string> dirty;  // recorded, not in the file yet

  void load() {
    std::string text;
    bool exists = false;
    Status s = read_bounded(path, text, &exists);
    if (s.is_ok() && exists) {
      auto parsed = perf_db_parse(text);
      if (parsed.is_ok()) {
        for (PerfEntry& e : parsed.value()) entries[e.key.str()] = std::move(e);
        return;
      }
      s = parsed.status();
    }
    if (s.is_ok()) return;
    writable = !is_foreign_version(s.message());
    warning = "perf db " + path + ": " + s.message() + "; using an empty database" +
              (writable ? " (the file is rewritten at the next save)" : " (the file is left as it is)");
    std::fprintf(stderr, "infera: warning: %s\n", warning.c_str());
  }

  Status flush() {
    std::lock_guard<std::mutex> g(mu);
    if (path.empty() || dirty.empty()) return Status::ok();
    if (!writable) return Status::ok();
    const size_t slash = path.rfind('/');
    const std::string dir = slash == std::string::npos ? "." : path.substr(0, std::max<size_t>(slash, 1));
    // mkdir -p of the folder ($XDG_CACHE_HOME/infera usually does not exist yet).
    for (size_t p = 1; p <= dir.size(); ++p)
      if (p == dir.size() || dir[p] == '/') {
        const std::string d = dir.substr(0, p);
        if (::mkdir(d.c_str(), 0755) != 0 && errno != EEXIST)
          return Status::error(StatusCode::kIo, "perf db: cannot create folder " + d + ": " + std::strerror(errno));
      }
    const std::string lock_path = path + ".lock";
    const int lfd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (lfd < 0)
      return Status::error(StatusCode::kIo, "perf db: cannot open " + lock_path + ": " + std::strerror(errno));
    while (::flock(lfd, LOCK_EX) != 0)
      if (errno != EINTR) {
        ::close(lfd);
        return Status::error(StatusCode::kIo, "perf db: cannot lock " + lock_path + ": " + std::strerror(errno));
      }
    Status s = merge_and_write(dir);
    ::close(lfd);  // releases the lock
    return s;
  }

 private:
  // Under the lock: what another process wrote since our read joins ours, then one rename.
  Status merge_and_write(const std::string& dir) {
    std::string text;
    bool exists = false;
    std::map<std::string, PerfEntry> file;
    if (read_bounded(path, text, &exists).is_ok() && exists) {
      auto parsed = perf_db_parse(text);
      if (parsed.is_ok()) {
        for (PerfEntry& e : parsed.value()) file[e.key.str()] = std::move(e);
      } else if (is_foreign_version(parsed.status().message())) {
        writable = false;  // another version's file appeared: leave it
        return Status::ok();
      }  // else a corrupt file: replaced by what we have
    }
    for (const std::string& k : dirty) file[k] = entries[k];
    for (auto& [k, e] : file)
      if (!entries.count(k)) entries[k] = e;  // learn the other writers' entries too
    if (file.size() > kPerfDbMaxEntries)
      return Status::error(StatusCode::kIo, "perf db " + path + ": over " + std::to_string(kPerfDbMaxEntries) +
                                                " entries; remove the file to start again");
    std::vector<PerfEntry> all;
    all.reserve(file.size());
    for (auto& [k, e] : file) all.push_back(e);
    const std::string out = perf_db_serialize(all);
    std::string tmp = path + ".tmp.XXXXXX";
    const int fd = ::mkstemp(tmp.data());
    if (fd < 0)
      return Status::error(StatusCode::kIo, "perf db: cannot create a file in " + dir + ": " + std::strerror(errno));
    size_t done = 0;
    while (done < out.size()) {
      const ssize_t n = ::write(fd, out.data() + done, out.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    const bool ok = done == out.size() && ::fchmod(fd, 0644) == 0 && ::fsync(fd) == 0;
    ::close(fd);
    if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
      const std::string why = std::strerror(errno);
      ::unlink(tmp.c_str());
      return Status::error(StatusCode::kIo, "perf db: cannot write " + path + ": " + why);
    }
    dirty.clear();
    return Status::ok();
  }
};

namespace {
// One store per file for the life of the process: every build of the process sees the same
// choices (two sessions of one model never pick different algorithms), whatever the file does.
std::mutex g_stores_mu;
std::map<std::string, std::shared_ptr<PerfStore>> g_stores;

std::shared_ptr<PerfStore> store_for(const std::string& path) {
  std::lock_guard<std::mutex> g(g_stores_mu);
  auto& s = g_stores[path];
  if (!s) {
    s = std::make_shared<PerfStore>();
    s->path = path;
    s->load();
  }
  return s;
}
}  // namespace

void perf_db_forget_stores() {
  std::lock_guard<std::mutex> g(g_stores_mu);
  g_stores.clear();
}

namespace {
constexpr const char* kEmbeddedPrefix = "embedded:";
std::map<std::string, std::shared_ptr<PerfStore>> g_embedded;  // under g_stores_mu; never dropped
}  // namespace

std::string perf_db_embed(const std::vector<PerfEntry>& entries) {
  const std::string text = perf_db_serialize(entries);
  uint64_t h = 1469598103934665603ull;  // FNV-1a: equal entries share one store
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  char name[40];
  std::snprintf(name, sizeof name, "%s%016llx", kEmbeddedPrefix, static_cast<unsigned long long>(h));
  std::lock_guard<std::mutex> g(g_stores_mu);
  auto& s = g_embedded[name];
  if (!s) {
    s = std::make_shared<PerfStore>();  // path "": flush() writes nothing
    for (const PerfEntry& e : entries) s->entries[e.key.str()] = e;
  }
  return name;
}

std::unique_ptr<PerfDb> PerfDb::open(const std::string& path, const TuneSettings& t) {
  std::shared_ptr<PerfStore> s;
  const std::string p = path.empty() ? perf_db_default_path() : path;
  if (path.rfind(kEmbeddedPrefix, 0) == 0) {
    std::lock_guard<std::mutex> g(g_stores_mu);
    auto it = g_embedded.find(path);
    s = it != g_embedded.end() ? it->second : std::make_shared<PerfStore>();
  } else if (path == "none" || p.empty()) {
    s = std::make_shared<PerfStore>();
  } else {
    s = store_for(p);
  }
  return std::unique_ptr<PerfDb>(new PerfDb(std::move(s), t));
}

PerfDb::~PerfDb() = default;

std::optional<PerfEntry> PerfDb::find(const PerfKey& key) {
  std::optional<PerfEntry> r;
  const std::string k = key.str();
  {
    std::lock_guard<std::mutex> g(store_->mu);
    auto it = store_->entries.find(k);
    if (it == store_->entries.end()) return std::nullopt;
    if (t_.search == SessionOptions::SearchMode::kExhaustive && it->second.search != "exhaustive") return std::nullopt;
    r = it->second;
  }
  note_used(k, *r);
  return r;
}

void PerfDb::keep_used() {
  std::lock_guard<std::mutex> g(used_mu_);
  if (!used_) used_ = std::make_unique<std::map<std::string, PerfEntry>>();
}

void PerfDb::note_used(const std::string& key, const PerfEntry& e) {
  std::lock_guard<std::mutex> g(used_mu_);
  if (used_) (*used_)[key] = e;
}

std::vector<PerfEntry> PerfDb::used() const {
  std::lock_guard<std::mutex> g(used_mu_);
  std::vector<PerfEntry> r;
  if (used_)
    for (auto& [k, e] : *used_) r.push_back(e);
  return r;
}

void PerfDb::record(const PerfEntry& e) {
  ++timed_;
  const std::string k = e.key.str();
  for (const std::string* f :
       {&e.key.device, &e.key.libs, &e.key.op, &e.key.shape, &e.key.dtype, &e.key.formats, &e.key.epilogue, &e.winner})
    if (!field_ok(*f)) return;  // would not read back: kept out of the file (a bug if it happens)
  {
    std::lock_guard<std::mutex> g(store_->mu);
    store_->entries[k] = e;
    store_->dirty.insert(k);
  }
  note_used(k, e);
}

Status PerfDb::flush() {
  Status s = store_->flush();
  std::lock_guard<std::mutex> g(store_->mu);
  if (!s.is_ok() && !store_->write_warned) {  // once per file and process: the build itself is fine
    store_->write_warned = true;
    std::fprintf(stderr, "infera: warning: %s (the choices are kept for this process only)\n", s.message().c_str());
  }
  return s;
}
const std::string& PerfDb::path() const { return store_->path; }
const std::string& PerfDb::warning() const { return store_->warning; }
size_t PerfDb::size() const {
  std::lock_guard<std::mutex> g(store_->mu);
  return store_->entries.size();
}

PerfDbInfo perf_db_info(const std::string& path) {
  PerfDbInfo info;
  info.path = path.empty() ? perf_db_default_path() : path;
  info.cpu_device = tune::cpu_device_name();
  if (info.path.empty() || path == "none") {
    info.path = path;
    return info;
  }
  std::string text;
  Status s = read_bounded(info.path, text, &info.exists);
  if (s.is_ok() && info.exists) {
    info.file_bytes = text.size();
    auto parsed = perf_db_parse(text);
    if (parsed.is_ok()) {
      info.entries = parsed.value().size();
      for (const PerfEntry& e : parsed.value()) info.entries_per_device[e.key.device]++;
    } else {
      s = parsed.status();
    }
  }
  if (!s.is_ok()) info.warning = s.message();
  return info;
}

}  // namespace infera
