// --shape / --shapes / --batch: the concrete input shapes of a run. Nothing is guessed: a free
// dim other than the first needs --shape, a batch the model fixes cannot be changed, and shapes
// must agree with the model, the input files and each other.
#include <cctype>
#include <set>
#include <sstream>

#include "cli.h"

namespace infera::cli {

namespace {

constexpr int64_t kMaxDim = int64_t{1} << 31;

bool parse_dims(const std::string& text, std::vector<int64_t>& dims, std::string& why) {
  if (text.empty()) {
    why = "no dims";
    return false;
  }
  size_t start = 0;
  while (true) {
    size_t x = text.find('x', start);
    std::string item = text.substr(start, x == std::string::npos ? std::string::npos : x - start);
    if (item == "batch") {
      dims.push_back(kBatchDim);
    } else {
      if (item.empty() || item.size() > 10 || item.find_first_not_of("0123456789") != std::string::npos) {
        why = "'" + item + "' is not a dim (a positive integer, or 'batch' for the --batch value)";
        return false;
      }
      int64_t v = std::stoll(item);
      if (v < 1 || v > kMaxDim) {
        why = "dim " + item + " is outside [1, 2^31]";
        return false;
      }
      dims.push_back(v);
    }
    if (x == std::string::npos) break;
    start = x + 1;
  }
  return true;
}

void add_spec(Args& a, const std::string& text, size_t sep, const char* opt, std::vector<ShapeSpec>& out) {
  if (sep == std::string::npos || sep == 0) {
    a.error(std::string(opt) + " '" + text + "': expected NAME" + (opt[7] == 's' ? ":" : "=") + "DIMS, e.g. input" +
            (opt[7] == 's' ? ":" : "=") + "1x3x224x224");
    return;
  }
  ShapeSpec s;
  s.input = text.substr(0, sep);
  s.text = text;
  std::string why;
  if (!parse_dims(text.substr(sep + 1), s.dims, why)) {
    a.error(std::string(opt) + " '" + text + "': " + why);
    return;
  }
  for (const ShapeSpec& o : out)
    if (o.input == s.input) {
      a.error("input '" + s.input + "' has two shapes: '" + o.text + "' and '" + text + "'");
      return;
    }
  out.push_back(s);
}

std::string dims_text(const std::vector<int64_t>& d) {
  std::string s;
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "x" : "") + (d[i] == kBatchDim ? "batch" : std::to_string(d[i]));
  return s;
}

bool first_free(const IoInfo& io) { return io.rank_known && !io.dims.empty() && io.dims[0].value < 0; }

std::string input_list(const Session& s) {
  std::string r;
  for (const IoInfo& io : s.inputs()) r += (r.empty() ? "'" : ", '") + io.name + "' " + io_shape_str(io);
  return r.empty() ? "none" : r;
}

// Checks dims given for an input (from a file or --shape) against the model's declaration and
// records the symbols they fix.
Status check_given(const IoInfo& io, const std::vector<int64_t>& d, const std::string& from,
                   std::map<std::string, std::pair<int64_t, std::string>>& symbols) {
  if (!io.rank_known) return Status::ok();
  if (d.size() != io.dims.size()) {
    std::string hint = nhwc_hint(io, d);
    return Status::error(StatusCode::kInvalidInput,
                         "input '" + io.name + "' has rank " + std::to_string(io.dims.size()) + " " + io_shape_str(io) +
                             "; " + from + " gives rank " + std::to_string(d.size()) + " " + shape_str(d) + hint);
  }
  for (size_t i = 0; i < d.size(); ++i) {
    if (io.dims[i].value >= 0 && io.dims[i].value != d[i]) {
      std::string hint = nhwc_hint(io, d);
      if (i == 0)
        return Status::error(StatusCode::kInvalidInput, "input '" + io.name + "' has fixed batch " +
                                                            std::to_string(io.dims[0].value) + "; " + from + " gives " +
                                                            shape_str(d) + hint);
      return Status::error(StatusCode::kInvalidInput, "input '" + io.name + "' " + io_shape_str(io) + ": dim " +
                                                          std::to_string(i) + " is fixed at " +
                                                          std::to_string(io.dims[i].value) + ", " + from + " gives " +
                                                          shape_str(d) + hint);
    }
    const std::string& sym = io.dims[i].symbol;
    if (io.dims[i].value < 0 && !sym.empty()) {
      auto [it, fresh] = symbols.emplace(sym, std::make_pair(d[i], "input '" + io.name + "' (" + from + ")"));
      if (!fresh && it->second.first != d[i])
        return Status::error(StatusCode::kInvalidInput,
                             "input '" + io.name + "': dim '" + sym + "' is " + std::to_string(d[i]) + " in " + from +
                                 ", but " + std::to_string(it->second.first) + " in " + it->second.second);
    }
  }
  return Status::ok();
}

}  // namespace

std::vector<ShapeSpec> parse_shape_specs(Args& a) {
  std::vector<ShapeSpec> out;
  for (const std::string& v : a.all("--shape")) add_spec(a, v, v.rfind('='), "--shape", out);
  for (const std::string& list : a.all("--shapes")) {
    size_t start = 0;
    while (start <= list.size()) {
      size_t c = list.find(',', start);
      std::string item = list.substr(start, c == std::string::npos ? std::string::npos : c - start);
      add_spec(a, item, item.rfind(':'), "--shapes", out);
      if (c == std::string::npos) break;
      start = c + 1;
    }
  }
  return out;
}

std::string nhwc_hint(const IoInfo& io, const std::vector<int64_t>& d) {
  if (!io.rank_known || io.dims.size() != 4 || d.size() != 4) return "";
  const int64_t c = io.dims[1].value;
  if (c < 1 || d[3] != c || d[1] == c) return "";
  std::vector<int64_t> nchw = {d[0], d[3], d[1], d[2]};
  return " (this looks like NHWC data; the model takes NCHW " + io_shape_str(io) + ": transpose it to " +
         shape_str(nchw) + ")";
}

Result<ResolvedShapes> resolve_shapes(const Session& s, const ShapeRequest& req) {
  const auto& inputs = s.inputs();
  auto find = [&](const std::string& n) -> const IoInfo* {
    for (const IoInfo& io : inputs)
      if (io.name == n) return &io;
    return nullptr;
  };
  std::map<std::string, const ShapeSpec*> specs;
  for (const ShapeSpec& sp : req.specs) {
    if (!find(sp.input))
      return Status::error(StatusCode::kInvalidInput, "--shape " + sp.text + ": the model has no input '" + sp.input +
                                                          "' (its inputs: " + input_list(s) + ")");
    specs[sp.input] = &sp;
  }
  auto file_of = [&](const std::string& n) -> const FileInput* {
    if (!req.files) return nullptr;
    auto it = req.files->find(n);
    return it == req.files->end() ? nullptr : &it->second;
  };

  ResolvedShapes r;
  for (const IoInfo& io : inputs) r.has_batch = r.has_batch || first_free(io);

  // The batch: --batch if given, else what a file or a numeric --shape says, else 1.
  std::optional<std::pair<int64_t, std::string>> given;  // batch from a file or --shape, and where
  for (const IoInfo& io : inputs) {
    if (!first_free(io)) continue;
    const FileInput* f = file_of(io.name);
    auto sp = specs.find(io.name);
    std::optional<std::pair<int64_t, std::string>> here;
    if (f && !f->tensor.dims().empty())
      here = {{f->tensor.dims()[0], "input '" + io.name + "' from " + f->path}};
    else if (sp != specs.end() && !sp->second->dims.empty() && sp->second->dims[0] != kBatchDim)
      here = {{sp->second->dims[0], "--shape " + sp->second->text}};
    if (!here) continue;
    if (req.batch && here->first != *req.batch) {
      std::string fix = f ? ""
                          : " (write " + io.name + "=batchx" +
                                dims_text({sp->second->dims.begin() + 1, sp->second->dims.end()}) + ")";
      if (sp != specs.end() && sp->second->dims.size() == 1) fix = " (write " + io.name + "=batch)";
      return Status::error(StatusCode::kInvalidInput, here->second + " has batch " + std::to_string(here->first) +
                                                          "; --batch " + std::to_string(*req.batch) + " is impossible" +
                                                          fix);
    }
    if (!given) given = here;
  }
  if (req.batch) {
    r.batch = *req.batch;
    if (!r.has_batch) {
      bool any_dim = false;
      for (const IoInfo& io : inputs) {
        if (!io.rank_known || io.dims.empty()) continue;
        any_dim = true;
        if (io.dims[0].value != r.batch)
          return Status::error(StatusCode::kInvalidInput, "input '" + io.name + "' has fixed batch " +
                                                              std::to_string(io.dims[0].value) + "; --batch " +
                                                              std::to_string(r.batch) + " is impossible");
      }
      if (!any_dim)
        return Status::error(StatusCode::kInvalidInput, "no input of this model has a batch dim; --batch " +
                                                            std::to_string(r.batch) + " is impossible");
    }
  } else if (given) {
    r.batch = given->first;
  } else if (!r.has_batch) {
    // No batch to choose: report the fixed first dim the inputs share (0: none or they differ).
    r.batch = 0;
    for (const IoInfo& io : inputs) {
      if (!io.rank_known || io.dims.empty()) continue;
      if (r.batch == 0) r.batch = io.dims[0].value;
      if (io.dims[0].value != r.batch) {
        r.batch = 0;
        break;
      }
    }
  }

  // Dims given by files and --shape; they fix symbols that other inputs may share.
  std::map<std::string, std::pair<int64_t, std::string>> symbols;
  for (const IoInfo& io : inputs) {
    const FileInput* f = file_of(io.name);
    auto sp = specs.find(io.name);
    std::vector<int64_t> d;
    std::string from;
    if (f) {
      d = f->tensor.dims();
      from = f->path;
    } else if (sp != specs.end()) {
      d = sp->second->dims;
      for (int64_t& x : d)
        if (x == kBatchDim) x = r.batch > 0 ? r.batch : 1;
      from = "--shape " + sp->second->text;
    } else {
      continue;
    }
    if (f && sp != specs.end()) {
      std::vector<int64_t> want = sp->second->dims;
      for (int64_t& x : want)
        if (x == kBatchDim) x = d.empty() ? -1 : d[0];
      if (want != d)
        return Status::error(StatusCode::kInvalidInput, "input '" + io.name + "': " + f->path + " has shape " +
                                                            shape_str(d) + " but --shape gives " + sp->second->text);
    }
    Status st = check_given(io, d, from, symbols);
    if (!st.is_ok()) return st;
    r.dims[io.name] = d;
  }

  // The other inputs: fixed dims as declared; the first free dim is the batch; any other free
  // dim must be fixed by a symbol given elsewhere, or the user is asked for it.
  for (const IoInfo& io : inputs) {
    if (r.dims.count(io.name)) continue;
    if (!io.rank_known)
      return Status::error(StatusCode::kInvalidInput, "input '" + io.name + "' declares no shape; give --shape " +
                                                          io.name + "=DIMS or --input " + io.name + "=PATH");
    std::vector<int64_t> d;
    std::vector<std::string> free_names;
    std::string pattern;
    for (size_t i = 0; i < io.dims.size(); ++i) {
      const IoDim& dim = io.dims[i];
      auto sym = dim.symbol.empty() ? symbols.end() : symbols.find(dim.symbol);
      int64_t v = dim.value;
      std::string letter;
      if (v < 0 && sym != symbols.end()) {
        v = sym->second.first;
      } else if (v < 0 && i == 0) {
        v = r.batch > 0 ? r.batch : 1;
        letter = "N";
      } else if (v < 0) {
        free_names.push_back(dim.symbol.empty() ? "#" + std::to_string(i) : dim.symbol);
        letter = dim.symbol.empty() || !std::isalpha(static_cast<unsigned char>(dim.symbol[0]))
                     ? "D" + std::to_string(i)
                     : std::string(1, static_cast<char>(std::toupper(static_cast<unsigned char>(dim.symbol[0]))));
      }
      pattern += (i ? "x" : "") + (letter.empty() ? std::to_string(v) : letter);
      d.push_back(v);
    }
    if (!free_names.empty()) {
      std::string names;
      for (const std::string& n : free_names) names += (names.empty() ? "" : ", ") + n;
      return Status::error(StatusCode::kInvalidInput, "input '" + io.name + "' has free dim" +
                                                          (free_names.size() > 1 ? "s " : " ") + names +
                                                          "; give --shape " + io.name + "=" + pattern);
    }
    r.dims[io.name] = d;
  }
  return r;
}

std::vector<int64_t> parse_batch_list(Args& a) {
  std::vector<int64_t> batches;
  if (!a.has("--batch")) return {1};
  std::stringstream ss(a.get("--batch"));
  std::string b;
  while (std::getline(ss, b, ',')) {
    char* end = nullptr;
    const long long v = std::strtoll(b.c_str(), &end, 10);
    if (b.empty() || *end || v < 1 || v > (1 << 20)) {
      a.error("--batch expects a comma-separated list of integers in [1, 1048576], got '" + b + "'");
      return batches;
    }
    batches.push_back(v);
  }
  if (batches.empty()) a.error("--batch expects a comma-separated list of integers in [1, 1048576]");
  return batches;
}

}  // namespace infera::cli
