// infera check: runs ONNX backend-test folders (model.onnx + test_data_set_*/input_*.pb,
// output_*.pb) and compares outputs with |got - want| <= atol + rtol * |want|.
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <set>

#include "cli.h"

namespace infera::cli {

namespace {

bool is_dir(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool is_file(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::vector<std::string> list_dir(const std::string& d) {
  std::vector<std::string> r;
  DIR* dir = opendir(d.c_str());
  if (!dir) return r;
  while (dirent* e = readdir(dir)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") r.push_back(n);
  }
  closedir(dir);
  std::sort(r.begin(), r.end());
  return r;
}

std::string base_name(std::string p) {
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  size_t s = p.find_last_of('/');
  return s == std::string::npos ? p : p.substr(s + 1);
}

double element(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DataType::kFloat32: return t.data_as<float>()[i];
    case DataType::kFloat64: return t.data_as<double>()[i];
    case DataType::kFloat16: return infera::half_to_float(t.data_as<uint16_t>()[i]);
    case DataType::kInt8: return t.data_as<int8_t>()[i];
    case DataType::kUInt8:
    case DataType::kBool: return t.data_as<uint8_t>()[i];
    case DataType::kInt16: return t.data_as<int16_t>()[i];
    case DataType::kUInt16: return t.data_as<uint16_t>()[i];
    case DataType::kInt32: return t.data_as<int32_t>()[i];
    case DataType::kUInt32: return t.data_as<uint32_t>()[i];
    case DataType::kInt64: return static_cast<double>(t.data_as<int64_t>()[i]);
    case DataType::kUInt64: return static_cast<double>(t.data_as<uint64_t>()[i]);
    default: return 0;
  }
}

struct Compare {
  bool ok = true;
  double max_abs = 0, max_rel = 0;
  std::string why;
};

Compare compare(const Tensor& got, const Tensor& want, double rtol, double atol) {
  Compare c;
  if (got.dtype() != want.dtype()) {
    c.ok = false;
    c.why = std::string("dtype ") + dtype_name(got.dtype()) + ", expected " + dtype_name(want.dtype());
    return c;
  }
  if (got.dims() != want.dims()) {
    c.ok = false;
    c.why = "shape " + shape_str(got.dims()) + ", expected " + shape_str(want.dims());
    return c;
  }
  const bool exact =
      !(want.dtype() == DataType::kFloat32 || want.dtype() == DataType::kFloat64 || want.dtype() == DataType::kFloat16);
  for (int64_t i = 0; i < want.numel(); ++i) {
    double g = element(got, i), w = element(want, i);
    if (std::isnan(w) || std::isnan(g)) {
      if (std::isnan(w) != std::isnan(g)) c.ok = false;
      continue;
    }
    if (std::isinf(w) || std::isinf(g)) {
      if (g != w) c.ok = false;
      continue;
    }
    double d = std::fabs(g - w);
    c.max_abs = std::max(c.max_abs, d);
    if (w != 0) c.max_rel = std::max(c.max_rel, d / std::fabs(w));
    if (exact ? d != 0 : d > atol + rtol * std::fabs(w)) c.ok = false;
  }
  if (!c.ok) c.why = "values differ";
  return c;
}

int input_index(const std::string& name, const char* prefix) {
  size_t pl = strlen(prefix);
  if (name.compare(0, pl, prefix) != 0 || name.size() < pl + 4 || name.substr(name.size() - 3) != ".pb") return -1;
  std::string num = name.substr(pl, name.size() - pl - 3);
  if (num.empty() || num.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stoi(num);
}

// Runs one test folder; returns "" on success or the reason it failed.
std::string run_test(const std::string& dir, const SessionOptions& opts, double rtol, double atol, bool quiet) {
  auto sess = Session::load(dir + "/model.onnx", opts);
  if (!sess.is_ok()) return sess.message();
  Session& s = *sess.value();
  int sets = 0;
  std::string worst;
  for (const std::string& ds : list_dir(dir)) {
    if (ds.rfind("test_data_set_", 0) != 0 || !is_dir(dir + "/" + ds)) continue;
    ++sets;
    std::map<int, std::string> in_files, out_files;
    for (const std::string& f : list_dir(dir + "/" + ds)) {
      int i = input_index(f, "input_");
      if (i >= 0) in_files[i] = dir + "/" + ds + "/" + f;
      int o = input_index(f, "output_");
      if (o >= 0) out_files[o] = dir + "/" + ds + "/" + f;
    }
    if (in_files.size() > s.inputs().size())
      return ds + ": " + std::to_string(in_files.size()) + " input files for a model with " +
             std::to_string(s.inputs().size()) + " inputs";
    std::map<std::string, Tensor> inputs;
    size_t k = 0;
    for (auto& [i, path] : in_files) {
      auto t = load_tensor_file(path);
      if (!t.is_ok()) return t.message();
      inputs[s.inputs()[k++].name] = t.take();
    }
    auto outs = s.run(inputs);
    if (!outs.is_ok()) return ds + ": " + outs.message();
    if (out_files.size() != outs.value().size())
      return ds + ": model gives " + std::to_string(outs.value().size()) + " outputs, test expects " +
             std::to_string(out_files.size());
    size_t j = 0;
    for (auto& [o, path] : out_files) {
      auto want = load_tensor_file(path);
      if (!want.is_ok()) return want.message();
      Compare c = compare(outs.value()[j], want.value(), rtol, atol);
      char buf[256];
      snprintf(buf, sizeof buf, "%s output %zu ('%s'): max_abs=%.3g max_rel=%.3g", ds.c_str(), j,
               s.outputs()[j].name.c_str(), c.max_abs, c.max_rel);
      if (!c.ok) return std::string(buf) + ": " + c.why;
      if (!quiet) worst = buf;
      ++j;
    }
  }
  if (sets == 0) return "no test_data_set_* folder";
  if (!quiet) printf("  %s\n", worst.c_str());
  return "";
}

std::map<std::string, std::string> read_skips(const std::string& path, std::string& err) {
  std::map<std::string, std::string> skips;
  std::ifstream f(path);
  if (!f) {
    err = path + ": cannot read skip file";
    return skips;
  }
  std::string line;
  while (std::getline(f, line)) {
    size_t h = line.find('#');
    std::string reason = h == std::string::npos ? "" : line.substr(h + 1);
    std::string name = line.substr(0, h);
    name.erase(0, name.find_first_not_of(" \t"));
    name.erase(name.find_last_not_of(" \t\r") + 1);
    if (!name.empty()) skips[name] = reason;
  }
  return skips;
}

}  // namespace

int cmd_check(int argc, char** argv) {
  Args a = parse_args(argc, argv, 2, {"--rtol", "--atol", "--device", "--precision", "--threads", "--skip-file"},
                      {"--quiet", "--no-optimize", "--no-dnnl"});
  SessionOptions opts;
  session_options(a, opts);
  double rtol = a.get_double("--rtol", 1e-3, 0, 1e9), atol = a.get_double("--atol", 1e-5, 0, 1e9);
  if (!a.usage_error.empty()) return usage(a.usage_error);
  if (a.positional.size() != 1) return usage("check takes one DIR");
  const bool quiet = a.has("--quiet");
  std::string root = a.positional[0];
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  if (!is_dir(root)) return fail(root + ": not a folder");
  std::map<std::string, std::string> skips;
  if (a.has("--skip-file")) {
    std::string err;
    skips = read_skips(a.get("--skip-file"), err);
    if (!err.empty()) return fail(err);
  }
  std::vector<std::string> tests;
  if (is_file(root + "/model.onnx")) {
    tests.push_back(root);
  } else {
    for (const std::string& d : list_dir(root))
      if (is_file(root + "/" + d + "/model.onnx")) tests.push_back(root + "/" + d);
  }
  if (tests.empty()) return fail(root + ": no model.onnx here or in its subfolders");
  int passed = 0, failed = 0, skipped = 0;
  for (const std::string& t : tests) {
    std::string name = base_name(t);
    if (skips.count(name)) {
      ++skipped;
      if (!quiet) printf("SKIP %s:%s\n", name.c_str(), skips[name].c_str());
      continue;
    }
    if (!quiet) printf("RUN  %s\n", name.c_str());
    fflush(stdout);
    std::string why = run_test(t, opts, rtol, atol, quiet);
    if (why.empty()) {
      ++passed;
      if (!quiet) printf("PASS %s\n", name.c_str());
    } else {
      ++failed;
      for (char& c : why)
        if (c == '\n') c = ' ';
      printf("FAIL %s: %s\n", name.c_str(), why.c_str());
    }
    fflush(stdout);
  }
  if (skipped)
    printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
  else
    printf("%d passed, %d failed\n", passed, failed);
  return failed ? kExitModelError : kExitOk;
}

}  // namespace infera::cli
