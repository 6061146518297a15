// infera check: runs ONNX backend-test folders (model.onnx + test_data_set_*/input_*.pb,
// output_*.pb) and compares outputs with |got - want| <= atol + rtol * |want|.
#include <fstream>

#include "compare.h"

namespace infera::cli {

const CommandSpec& check_spec() {
  static const CommandSpec spec = [] {
    CommandSpec c{"check",
                  "DIR [options]",
                  "Runs the ONNX backend test in DIR (model.onnx + test_data_set_*/input_N.pb and\n"
                  "output_N.pb), or every such test in DIR's subfolders, and compares each output\n"
                  "with the expected one: floats (float16, bfloat16, float32, float64) within\n"
                  "atol + rtol*|ref| (NaN matches NaN), integers and bools exactly. Prints each\n"
                  "output's error, PASS/FAIL/SKIP per test and last 'N passed, M failed[, K skipped]'.\n"
                  "Exit 0 only if every test that ran passed.",
                  {}};
    c.options = {
        {"--rtol", "X", "relative tolerance, 0..1e9 (default 1e-3)"},
        {"--atol", "X", "absolute tolerance, 0..1e9 (default 1e-5)"},
        {"--skip-file", "FILE", "tests not to run: lines 'test_name  # reason' (default: none)"},
        {"--json", "FILE",
         "also write every test's result as JSON to FILE ('-': to stdout, the\nreport then goes to stderr)"},
    };
    for (auto& o : session_opt_specs()) c.options.push_back(o);
    c.options.push_back(verbose_opt_spec());
    c.options.push_back({"--quiet", "", "print only failures and the final count"});
    return c;
  }();
  return spec;
}

namespace {

// The N of "input_N.pb": -1 if the name is not of that form, -2 if N is too large.
int64_t file_index(const std::string& name, const std::string& prefix) {
  if (name.compare(0, prefix.size(), prefix) != 0 || name.size() < prefix.size() + 4 ||
      name.compare(name.size() - 3, 3, ".pb") != 0)
    return -1;
  std::string num = name.substr(prefix.size(), name.size() - prefix.size() - 3);
  if (num.empty() || num.find_first_not_of("0123456789") != std::string::npos) return -1;
  if (num.size() > 6) return -2;  // no model has a million inputs
  return std::stoll(num);
}

struct OutputResult {
  std::string data_set, name;
  size_t index = 0;
  DataType dtype = DataType::kUndefined;
  std::vector<int64_t> dims;
  Comparison cmp;
};

struct TestResult {
  std::string name, status, reason;  // status: pass, fail, skip
  std::vector<OutputResult> outputs;
};

// Test data files of one data set: index -> path, contiguous from 0. Returns "" or the problem.
std::string data_files(const std::string& dir, const std::string& ds, const std::string& prefix,
                       std::map<int64_t, std::string>& files) {
  for (const std::string& f : list_dir(dir + "/" + ds)) {
    int64_t i = file_index(f, prefix);
    if (i == -2) return ds + "/" + f + ": index out of range (at most 999999)";
    if (i >= 0) files[i] = dir + "/" + ds + "/" + f;
  }
  int64_t expect = 0;
  for (auto& [i, path] : files) {
    if (i != expect)
      return ds + ": " + prefix + std::to_string(i) + ".pb without " + prefix + std::to_string(expect) + ".pb";
    ++expect;
  }
  return "";
}

// Runs one test folder; fills r.status/reason/outputs.
void run_test(const std::string& dir, const SessionOptions& opts, double rtol, double atol, TestResult& r) {
  auto failed = [&](const std::string& why) {
    r.status = "fail";
    r.reason = why;
  };
  auto sess = Session::load(dir + "/model.onnx", opts);
  if (!sess.is_ok()) return failed(sess.message());
  Session& s = *sess.value();
  int sets = 0;
  for (const std::string& ds : list_dir(dir)) {
    if (ds.rfind("test_data_set_", 0) != 0 || !is_dir(dir + "/" + ds)) continue;
    ++sets;
    std::map<int64_t, std::string> in_files, out_files;
    std::string why = data_files(dir, ds, "input_", in_files);
    if (why.empty()) why = data_files(dir, ds, "output_", out_files);
    if (!why.empty()) return failed(why);
    if (in_files.size() > s.inputs().size())
      return failed(ds + ": " + std::to_string(in_files.size()) + " input files for a model with " +
                    std::to_string(s.inputs().size()) + " inputs");
    std::map<std::string, Tensor> inputs;
    for (auto& [i, path] : in_files) {
      auto t = load_tensor_limited(path, s.options().limits);
      if (!t.is_ok()) return failed(t.message());
      inputs[s.inputs()[static_cast<size_t>(i)].name] = t.take();
    }
    auto outs = s.run(inputs);
    if (!outs.is_ok()) return failed(ds + ": " + outs.message());
    if (out_files.size() != outs.value().size())
      return failed(ds + ": model gives " + std::to_string(outs.value().size()) + " outputs, test expects " +
                    std::to_string(out_files.size()));
    for (auto& [o, path] : out_files) {
      auto want = load_tensor_limited(path, s.options().limits);
      if (!want.is_ok()) return failed(want.message());
      const size_t j = static_cast<size_t>(o);
      OutputResult out{ds,
                       s.outputs()[j].name,
                       j,
                       want.value().dtype(),
                       want.value().dims(),
                       compare_tensors(outs.value()[j], want.value(), rtol, atol)};
      r.outputs.push_back(out);
      if (!out.cmp.ok) return failed(ds + " output " + std::to_string(j) + " ('" + out.name + "'): " + out.cmp.why);
    }
  }
  if (sets == 0) return failed("no test_data_set_* folder");
  r.status = "pass";
}

std::string read_skips(const std::string& path, std::map<std::string, std::string>& skips) {
  if (is_dir(path)) return "--skip-file " + path + ": is a folder, not a file";
  std::ifstream f(path);
  if (!f || !is_file(path)) return "--skip-file " + path + ": cannot read (not a regular file)";
  std::string line;
  while (std::getline(f, line)) {
    size_t h = line.find('#');
    std::string reason = h == std::string::npos ? "" : line.substr(h + 1);
    std::string name = line.substr(0, h);
    name.erase(0, name.find_first_not_of(" \t"));
    name.erase(name.find_last_not_of(" \t\r") + 1);
    if (!name.empty()) skips[name] = reason;
  }
  if (f.bad()) return "--skip-file " + path + ": read failed";
  return "";
}

std::string num(double v) {
  char b[40];
  snprintf(b, sizeof b, "%.6g", v);
  return b;
}

std::string check_json(const std::string& root, double rtol, double atol, const std::vector<TestResult>& results,
                       int passed, int failed, int skipped) {
  std::string j = "{\n  \"infera_version\": " + json_str(version()) + ",\n  \"date\": " + json_str(utc_now_iso8601()) +
                  ",\n  \"root\": " + json_str(root) + ",\n  \"rtol\": " + num(rtol) + ",\n  \"atol\": " + num(atol) +
                  ",\n  \"passed\": " + std::to_string(passed) + ",\n  \"failed\": " + std::to_string(failed) +
                  ",\n  \"skipped\": " + std::to_string(skipped) + ",\n  \"tests\": [";
  for (size_t i = 0; i < results.size(); ++i) {
    const TestResult& t = results[i];
    j += (i ? ",\n    " : "\n    ") + std::string("{\"name\": ") + json_str(t.name) +
         ", \"status\": " + json_str(t.status) + ", \"reason\": " + json_str(t.reason) + ", \"outputs\": [";
    for (size_t k = 0; k < t.outputs.size(); ++k) {
      const OutputResult& o = t.outputs[k];
      std::string dims = "[";
      for (size_t d = 0; d < o.dims.size(); ++d) dims += (d ? ", " : "") + std::to_string(o.dims[d]);
      j += (k ? ", " : "") + std::string("{\"data_set\": ") + json_str(o.data_set) +
           ", \"index\": " + std::to_string(o.index) + ", \"name\": " + json_str(o.name) +
           ", \"dtype\": " + json_str(dtype_name(o.dtype)) + ", \"shape\": " + dims + "]" +
           ", \"elements\": " + std::to_string(o.cmp.count) + ", \"outside\": " + std::to_string(o.cmp.outside) +
           ", \"max_abs\": " + num(o.cmp.max_abs) + ", \"max_rel\": " + num(o.cmp.max_rel) + "}";
    }
    j += "]}";
  }
  return j + "\n  ]\n}\n";
}

}  // namespace

int cmd_check(int argc, char** argv) {
  const CommandSpec& spec = check_spec();
  Args a = parse_args(argc, argv, 2, spec);
  SessionOptions opts;
  session_options(a, opts);
  const double rtol = a.get_double("--rtol", 1e-3, 0, 1e9), atol = a.get_double("--atol", 1e-5, 0, 1e9);
  if (a.positional.size() != 1)
    a.error(a.positional.empty() ? "check needs a DIR"
                                 : "check takes one DIR, got " + std::to_string(a.positional.size()) + " arguments");
  if (int rc = handle_help_and_usage(spec, a); rc >= 0) return rc;
  const bool quiet = a.has("--quiet");
  const bool json_stdout = a.get("--json") == "-";
  FILE* out = json_stdout ? stderr : stdout;
  std::string root = a.positional[0];
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  if (!is_dir(root)) return fail(root + ": not a folder");
  std::map<std::string, std::string> skips;
  if (a.has("--skip-file")) {
    std::string err = read_skips(a.get("--skip-file"), skips);
    if (!err.empty()) return fail(err);
  }
  AtomicFile json_file;
  if (a.has("--json") && !json_stdout) {
    Status st = json_file.open(a.get("--json"));
    if (!st.is_ok()) return fail("--json " + st.message());
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
  std::vector<TestResult> results;
  for (const std::string& t : tests) {
    TestResult r;
    r.name = base_name(t);
    if (skips.count(r.name)) {
      ++skipped;
      r.status = "skip";
      r.reason = skips[r.name];
      if (!quiet) fprintf(out, "SKIP %s:%s\n", r.name.c_str(), r.reason.c_str());
      results.push_back(r);
      continue;
    }
    if (!quiet) fprintf(out, "RUN  %s\n", r.name.c_str());
    fflush(out);
    run_test(t, opts, rtol, atol, r);
    if (!quiet)
      for (const OutputResult& o : r.outputs)
        fprintf(out, "  %s output %zu '%s' %s %s: max_abs=%.3g max_rel=%.3g over %lld elements%s\n", o.data_set.c_str(),
                o.index, o.name.c_str(), dtype_name(o.dtype), shape_str(o.dims).c_str(), o.cmp.max_abs, o.cmp.max_rel,
                static_cast<long long>(o.cmp.count), o.cmp.ok ? "" : " (FAILED)");
    if (r.status == "pass") {
      ++passed;
      if (!quiet) fprintf(out, "PASS %s\n", r.name.c_str());
    } else {
      ++failed;
      std::string why = r.reason;
      for (char& c : why)
        if (c == '\n' || c == '\r') c = ' ';
      fprintf(out, "FAIL %s: %s\n", r.name.c_str(), why.c_str());
    }
    fflush(out);
    results.push_back(std::move(r));
  }
  if (skipped)
    fprintf(out, "%d passed, %d failed, %d skipped\n", passed, failed, skipped);
  else
    fprintf(out, "%d passed, %d failed\n", passed, failed);
  fflush(out);
  if (a.has("--json")) {
    std::string j = check_json(root, rtol, atol, results, passed, failed, skipped);
    if (json_stdout) {
      fputs(j.c_str(), stdout);
    } else {
      Status w = json_file.write(j);
      if (w.is_ok()) w = json_file.commit();
      if (!w.is_ok()) return fail(w.message());
    }
  }
  return failed ? kExitModelError : kExitOk;
}

}  // namespace infera::cli
