// session_driver: loads one model into ONE infera::Session and runs several inputs through it in
// sequence, writing each run's outputs. The real-model test (compare_models.py) uses it to check
// that one loaded session serves batch 1, batch 3 and other shapes after them (plan cache, arena
// reuse), which separate `infera run` processes cannot show. Public API only (infera/infera.h).
//
// Usage: session_driver MODEL OUT_DIR RUN [RUN...] [--threads N] [--run-on WHERE[,WHERE...]]
//                      [--device cpu|gpu[:N]] [--precision fp32|fp16] [--tf32] [--no-vendor-libs]
//   RUN   NAME=FILE[,NAME=FILE...]: the inputs of one Session::run (.npy or TensorProto .pb)
//   WHERE per run (the last one repeats): main (the thread that loaded the model, default),
//         thread (a std::thread, default stack), or a stack size in bytes (a pthread with that
//         stack): runs from other threads and small stacks must give the same bits.
//   Writes OUT_DIR/run<k>/<output name>.npy (k from 0; characters other than [A-Za-z0-9._-] in a
//   name become '_') and one line per run on stdout: "run <k>: <output dims...> <ms> ms".
//   Last line: "plans cached: <n>". Errors: one line on stderr, exit 1; bad usage: exit 2.
#include <pthread.h>
#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <thread>
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

// Runs f on the thread `where` names (see the usage) and waits for it.
bool run_on(const std::string& where, const std::function<void()>& f) {
  if (where == "main") {
    f();
    return true;
  }
  if (where == "thread") {
    std::thread t(f);
    t.join();
    return true;
  }
  char* end = nullptr;
  const unsigned long long bytes = std::strtoull(where.c_str(), &end, 10);
  if (where.empty() || *end || bytes < 16384) return false;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  if (pthread_attr_setstacksize(&attr, bytes) != 0) return false;
  pthread_t t;
  auto body = [](void* p) -> void* {
    (*static_cast<const std::function<void()>*>(p))();
    return nullptr;
  };
  const bool ok = pthread_create(&t, &attr, body, const_cast<std::function<void()>*>(&f)) == 0;
  pthread_attr_destroy(&attr);
  if (ok) pthread_join(t, nullptr);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> pos;
  infera::SessionOptions opts;
  std::vector<std::string> where;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) {
      opts.num_threads = std::atoi(argv[++i]);
    } else if (a == "--device" && i + 1 < argc) {
      auto d = infera::Device::parse(argv[++i]);
      if (!d.is_ok()) return fail(d.message());
      opts.device = d.value();
    } else if (a == "--precision" && i + 1 < argc) {
      auto p = infera::parse_precision(argv[++i]);
      if (!p.is_ok()) return fail(p.message());
      opts.precision = p.value();
    } else if (a == "--tf32") {
      opts.allow_tf32 = true;
    } else if (a == "--no-vendor-libs") {
      opts.vendor_libraries = false;
    } else if (a == "--run-on" && i + 1 < argc) {
      std::string spec = argv[++i];
      for (size_t b = 0; b <= spec.size();) {
        size_t e = spec.find(',', b);
        if (e == std::string::npos) e = spec.size();
        where.push_back(spec.substr(b, e - b));
        b = e + 1;
      }
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
    infera::Result<std::vector<infera::Tensor>> outs = infera::Status::error("not run");
    const std::string on = run < where.size() ? where[run] : where.empty() ? "main" : where.back();
    if (!run_on(on, [&] { outs = session.run(inputs); }))
      return fail("run " + std::to_string(run) + ": cannot start a thread for --run-on '" + on + "'");
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
    std::printf("%s on %s %.1f ms\n", line.c_str(), on.c_str(), ms);
    std::fflush(stdout);
  }
  std::printf("plans cached: %zu\n", session.cached_plan_count());
  return 0;
}
