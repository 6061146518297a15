// session_driver: loads one model into ONE infera::Session and runs several inputs through it in
// sequence, writing each run's outputs. The real-model test (compare_models.py) uses it to check
// that one loaded session serves batch 1, batch 3 and other shapes after them (plan cache, arena
// reuse), which separate `infera run` processes cannot show. Public API only (infera/infera.h).
//
// Usage: session_driver MODEL OUT_DIR RUN [RUN...] [--threads N]
//   RUN   NAME=FILE[,NAME=FILE...]: the inputs of one Session::run (.npy or TensorProto .pb)
//   Writes OUT_DIR/run<k>/<output name>.npy (k from 0; characters other than [A-Za-z0-9._-] in a
//   name become '_') and one line per run on stdout: "run <k>: <output dims...> <ms> ms".
//   Last line: "plans cached: <n>". Errors: one line on stderr, exit 1; bad usage: exit 2.
#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "infera/infera.h"

namespace {

int fail(const std::string& msg) {
  std::fprintf(stderr, "session_driver: %s\n", msg.c_str());
  return 1;
}

std::string sanitize(const std::string& name) {
  std::string s = name;
  for (char& c : s) {
    const bool ok =
        (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!ok) c = '_';
  }
  return s;
}

std::string dims_str(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
  return s + "]";
}

bool make_dir(const std::string& p) { return mkdir(p.c_str(), 0755) == 0 || errno == EEXIST; }

// "a=x.npy,b=y.npy" -> {{"a", "x.npy"}, {"b", "y.npy"}}; false on a part without '='.
bool parse_run(const std::string& spec, std::vector<std::pair<std::string, std::string>>& out) {
  size_t start = 0;
  while (start <= spec.size()) {
    size_t end = spec.find(',', start);
    if (end == std::string::npos) end = spec.size();
    const std::string part = spec.substr(start, end - start);
    const size_t eq = part.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == part.size()) return false;
    out.emplace_back(part.substr(0, eq), part.substr(eq + 1));
    start = end + 1;
  }
  return !out.empty();
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> pos;
  infera::SessionOptions opts;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) {
      opts.num_threads = std::atoi(argv[++i]);
    } else if (a.rfind("--", 0) == 0) {
      std::fprintf(stderr, "session_driver: unknown option %s\n", a.c_str());
      return 2;
    } else {
      pos.push_back(a);
    }
  }
  if (pos.size() < 3) {
    std::fprintf(stderr, "usage: session_driver MODEL OUT_DIR NAME=FILE[,NAME=FILE...] [...] [--threads N]\n");
    return 2;
  }
  auto loaded = infera::Session::load(pos[0], opts);
  if (!loaded.is_ok()) return fail(loaded.message());
  infera::Session& session = *loaded.value();
  if (!make_dir(pos[1])) return fail(pos[1] + ": cannot create the folder");

  for (size_t k = 2; k < pos.size(); ++k) {
    const size_t run = k - 2;
    std::vector<std::pair<std::string, std::string>> files;
    if (!parse_run(pos[k], files))
      return fail("run " + std::to_string(run) + ": expected NAME=FILE[,...], got '" + pos[k] + "'");
    std::map<std::string, infera::Tensor> inputs;
    for (auto& [name, path] : files) {
      auto t = infera::load_tensor_file(path);
      if (!t.is_ok()) return fail(t.message());
      inputs[name] = t.take();
    }
    const auto t0 = std::chrono::steady_clock::now();
    auto outs = session.run(inputs);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (!outs.is_ok()) return fail("run " + std::to_string(run) + ": " + outs.message());
    const std::string dir = pos[1] + "/run" + std::to_string(run);
    if (!make_dir(dir)) return fail(dir + ": cannot create the folder");
    std::string line = "run " + std::to_string(run) + ":";
    for (size_t o = 0; o < outs.value().size(); ++o) {
      const infera::Tensor& y = outs.value()[o];
      const std::string path = dir + "/" + sanitize(session.outputs()[o].name) + ".npy";
      infera::Status s = infera::save_npy(path, y);
      if (!s.is_ok()) return fail(s.message());
      line += " " + dims_str(y.dims());
    }
    std::printf("%s %.1f ms\n", line.c_str(), ms);
    std::fflush(stdout);
  }
  std::printf("plans cached: %zu\n", session.cached_plan_count());
  return 0;
}
