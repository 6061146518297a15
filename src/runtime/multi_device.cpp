// MultiDeviceSession (include/infera/multi_device.h): one Session per device, each driven by its
// own host threads (pinned to the GPU's NUMA node), fed from a queue. Latency mode splits a
// batch's rows into balanced blocks (chunk_sizes), one per device, written into the joined
// outputs in place; throughput mode hands each run whole to the next device in turn.
#include "infera/multi_device.h"

#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <fstream>
#include <functional>
#include <mutex>
#include <sstream>
#include <thread>

#include "runtime/chunking.h"

namespace infera {

namespace {

using Shapes = std::map<std::string, std::vector<int64_t>>;

// sysfs: the NUMA node of a PCI device and its CPUs ("0-15,32-47"), or -1 / empty.
int pci_numa_node(const std::string& bus) {
  std::ifstream f("/sys/bus/pci/devices/" + bus + "/numa_node");
  int n = -1;
  return (f >> n) ? n : -1;
}

std::vector<int> cpu_list(const std::string& path) {
  std::ifstream f(path);
  std::string s;
  std::vector<int> cpus;
  if (!std::getline(f, s)) return cpus;
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, ',')) {
    int a = -1, b = -1;
    if (std::sscanf(part.c_str(), "%d-%d", &a, &b) == 2 && a >= 0 && b >= a && b < CPU_SETSIZE)
      for (int c = a; c <= b; ++c) cpus.push_back(c);
    else if (std::sscanf(part.c_str(), "%d", &a) == 1 && a >= 0 && a < CPU_SETSIZE)
      cpus.push_back(a);
  }
  return cpus;
}

std::string lower(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}

// The GPUs this build finds, in index order, with their PCI addresses.
std::vector<BackendInfo> gpus() {
  std::vector<BackendInfo> r;
  for (BackendInfo& b : available_backends())
    if (b.name == "gpu" && b.available) r.push_back(std::move(b));
  return r;
}

Shapes shapes_of(const std::map<std::string, Tensor>& in) {
  Shapes s;
  for (const auto& [name, t] : in) s[name] = t.dims();
  return s;
}

Shapes with_rows(Shapes s, int64_t rows) {
  for (auto& [name, d] : s)
    if (!d.empty()) d[0] = rows;
  return s;
}

}  // namespace

Result<std::vector<Device>> parse_device_list(const std::string& s) {
  std::vector<Device> out;
  if (s.empty()) return Status::error(StatusCode::kInvalidInput, "device list: empty");
  std::vector<BackendInfo> found;
  bool found_read = false;
  auto gpu_count = [&]() {
    if (!found_read) found = gpus(), found_read = true;
    return static_cast<int>(found.size());
  };
  bool in_gpu_list = false;
  std::stringstream ss(s);
  std::string tok;
  while (std::getline(ss, tok, ',')) {
    const std::string what = "device list '" + s + "': ";
    if (tok.empty()) return Status::error(StatusCode::kInvalidInput, what + "empty entry");
    if (tok == "gpu:all") {
      const int n = gpu_count();
      if (n == 0) return Status::error(StatusCode::kUnsupported, what + "gpu:all, but no GPU was found");
      for (int i = 0; i < n; ++i) out.push_back(Device::gpu(i));
      in_gpu_list = true;
      continue;
    }
    std::string one = tok;
    if (in_gpu_list && !tok.empty() && tok.find_first_not_of("0123456789") == std::string::npos) one = "gpu:" + tok;
    auto d = Device::parse(one);
    if (!d.is_ok()) return Status::error(StatusCode::kInvalidInput, what + "'" + tok + "': " + d.status().message());
    if (d.value().is_gpu()) {
      const int n = gpu_count();
      if (d.value().index >= n)
        return Status::error(StatusCode::kInvalidInput, what + d.value().str() + " does not exist (" +
                                                            (n ? std::to_string(n) + " GPU" + (n == 1 ? "" : "s") +
                                                                     ": gpu:0..gpu:" + std::to_string(n - 1)
                                                               : std::string("no GPU found")) +
                                                            ")");
    }
    in_gpu_list = d.value().is_gpu();
    out.push_back(d.value());
    if (out.size() > 64) return Status::error(StatusCode::kInvalidInput, what + "more than 64 devices");
  }
  if (out.empty() || s.back() == ',')
    return Status::error(StatusCode::kInvalidInput, "device list '" + s + "': empty entry");
  return out;
}

// One device: its session and the threads that run on it, fed by a queue of tasks.
struct Lane {
  std::unique_ptr<Session> session;
  DeviceStats stats;
  std::vector<int> cpus;  // the NUMA node's CPUs (empty: not pinned)
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::function<void()>> queue;
  bool stop = false;
  std::vector<std::thread> threads;

  void post(std::function<void()> f) {
    {
      std::lock_guard<std::mutex> l(mu);
      queue.push_back(std::move(f));
    }
    cv.notify_one();
  }
  void loop() {
    if (!cpus.empty()) {
      cpu_set_t set;
      CPU_ZERO(&set);
      for (int c : cpus) CPU_SET(c, &set);
      (void)pthread_setaffinity_np(pthread_self(), sizeof set, &set);  // best effort: a restricted cpuset refuses
    }
    for (;;) {
      std::function<void()> f;
      {
        std::unique_lock<std::mutex> l(mu);
        cv.wait(l, [&] { return stop || !queue.empty(); });
        if (queue.empty()) return;  // stop, and nothing left
        f = std::move(queue.front());
        queue.pop_front();
      }
      f();
    }
  }
  void shut() {
    {
      std::lock_guard<std::mutex> l(mu);
      stop = true;
    }
    cv.notify_all();
    for (std::thread& t : threads)
      if (t.joinable()) t.join();
  }
};

// Waits for n tasks; keeps the first error.
struct Join {
  std::mutex mu;
  std::condition_variable cv;
  size_t left;
  Status first = Status::ok();
  explicit Join(size_t n) : left(n) {}
  void done(Status s) {
    std::lock_guard<std::mutex> l(mu);
    if (!s.is_ok() && first.is_ok()) first = std::move(s);
    if (--left == 0) cv.notify_all();
  }
  Status wait() {
    std::unique_lock<std::mutex> l(mu);
    cv.wait(l, [&] { return left == 0; });
    return first;
  }
};

struct MultiDeviceSession::Impl {
  MultiDeviceOptions opts;
  std::vector<std::unique_ptr<Lane>> lanes;
  std::atomic<uint64_t> next{0};
  mutable std::mutex mu;  // stats, prepared
  // Input shapes whose plans every lane has -> the joined outputs' dims (latency mode; empty in
  // throughput mode, where each session allocates its outputs).
  std::map<Shapes, std::vector<std::vector<int64_t>>> prepared;
  std::map<Shapes, Status> split;  // latency mode: Session::check_batch_split per input shape

  ~Impl() {
    for (auto& l : lanes) l->shut();
  }

  // Runs f(lane) on lane i's threads and waits.
  Status on(size_t i, std::function<Status(Lane&)> f) {
    Join j(1);
    Lane& l = *lanes[i];
    l.post([&] { j.done(f(l)); });
    return j.wait();
  }

  // Runs f (one run of `rows` batch rows) on lane l's thread, counted in its stats.
  Status timed(Lane& l, int64_t rows, const std::function<Status()>& f) {
    const auto t0 = std::chrono::steady_clock::now();
    Status s = f();
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::lock_guard<std::mutex> g(mu);
    l.stats.runs++;
    l.stats.rows += rows;
    l.stats.busy_ms += ms;
    return s.is_ok() ? s : s.prefixed(l.stats.device.str() + ": ");
  }

  // The row blocks of a batch of n: one per device used.
  std::vector<int64_t> blocks(int64_t n) const {
    const int64_t d = std::min<int64_t>(n, static_cast<int64_t>(lanes.size()));
    return d <= 1 ? std::vector<int64_t>{n} : chunk_sizes(n, (n + d - 1) / d);
  }

  Result<std::vector<std::vector<int64_t>>> prepare(const Shapes& shapes) {
    {
      std::lock_guard<std::mutex> l(mu);
      auto it = prepared.find(shapes);
      if (it != prepared.end()) return it->second;
    }
    // Per lane, the shape it runs: in latency mode its row block, else the whole batch.
    std::vector<Shapes> per(lanes.size(), shapes);
    if (opts.mode == MultiDeviceOptions::Mode::kLatency) {
      Status sp = Status::ok();
      bool known = false;
      {
        std::lock_guard<std::mutex> l(mu);
        auto it = split.find(shapes);
        if ((known = it != split.end())) sp = it->second;
      }
      if (!known) {
        sp = lanes[0]->session->check_batch_split(shapes);
        std::lock_guard<std::mutex> l(mu);
        if (split.size() >= 256) split.clear();
        split.emplace(shapes, sp);
      }
      if (!sp.is_ok())
        return sp.prefixed(
            "the batch cannot be split across devices (latency mode; throughput mode runs whole batches): ");
      const int64_t n = shapes.empty() || shapes.begin()->second.empty() ? 0 : shapes.begin()->second[0];
      const std::vector<int64_t> b = blocks(n);
      per.resize(b.size());
      for (size_t i = 0; i < b.size(); ++i) per[i] = with_rows(shapes, b[i]);
    }
    std::vector<std::vector<int64_t>> first_out;  // the first block's output dims
    auto prep = [&](size_t i) {
      return on(i, [&, i](Lane& l) -> Status {
        auto r = l.session->prepare(per[i]);
        if (!r.is_ok()) return r.status().prefixed(l.stats.device.str() + ": ");
        if (i == 0) first_out = r.value().output_dims;
        return Status::ok();
      });
    };
    // The first device first: its search fills the perf DB the others then read.
    if (Status s = prep(0); !s.is_ok()) return s;
    std::vector<Status> st(per.size(), Status::ok());
    std::vector<std::thread> ts;
    for (size_t i = 1; i < per.size(); ++i) ts.emplace_back([&, i] { st[i] = prep(i); });
    for (std::thread& t : ts) t.join();
    for (const Status& s : st)
      if (!s.is_ok()) return s;
    // The joined outputs: the first block's output dims with the whole batch as dim 0.
    std::vector<std::vector<int64_t>> joined;
    if (opts.mode == MultiDeviceOptions::Mode::kLatency) {
      const auto& outs = lanes[0]->session->outputs();
      const int64_t rows = per[0].empty() || per[0].begin()->second.empty() ? 0 : per[0].begin()->second[0];
      const int64_t n = shapes.empty() || shapes.begin()->second.empty() ? 0 : shapes.begin()->second[0];
      for (size_t o = 0; o < outs.size(); ++o) {
        std::vector<int64_t> d = o < first_out.size() ? first_out[o] : std::vector<int64_t>{};
        if (d.empty() || d[0] != rows)
          return Status::error(StatusCode::kInternal, "output '" + outs[o].name + "' has no batch axis");
        d[0] = n;
        joined.push_back(std::move(d));
      }
    }
    std::lock_guard<std::mutex> l(mu);
    if (prepared.size() >= 256) prepared.clear();  // shapes come from callers: bounded
    prepared.emplace(shapes, joined);
    return joined;
  }

  Result<std::vector<Tensor>> run(const std::map<std::string, Tensor>& in) {
    for (const auto& [name, t] : in)
      if (!t.device().is_cpu())
        return Status::error(StatusCode::kInvalidInput, "input '" + name + "': a multi-device run takes host tensors");
    const Shapes shapes = shapes_of(in);
    auto dims = prepare(shapes);
    if (!dims.is_ok()) return dims.status();
    if (opts.mode == MultiDeviceOptions::Mode::kThroughput) {
      const size_t i = next++ % lanes.size();
      const int64_t rows = in.begin()->second.dims().empty() ? 1 : in.begin()->second.dims()[0];
      std::vector<Tensor> out;
      Status s = on(i, [&](Lane& l) {
        return timed(l, rows, [&] {
          auto r = l.session->run(in);
          if (!r.is_ok()) return r.status();
          out = r.take();
          return Status::ok();
        });
      });
      if (!s.is_ok()) return s;
      return out;
    }
    const int64_t n = in.begin()->second.dims().empty() ? 0 : in.begin()->second.dims()[0];
    const std::vector<int64_t> b = blocks(n);
    std::vector<Tensor> out;
    const auto& outs = lanes[0]->session->outputs();
    for (size_t o = 0; o < outs.size(); ++o) {
      auto t = Tensor::make(outs[o].dtype, dims.value()[o]);
      if (!t.is_ok()) return t.status().prefixed("output '" + outs[o].name + "': ");
      out.push_back(t.take());
    }
    Join j(b.size());
    int64_t at = 0;
    for (size_t i = 0; i < b.size(); ++i) {
      const int64_t first = at, rows = b[i];
      at += rows;
      lanes[i]->post([&, i, first, rows] {
        std::map<std::string, Tensor> vin;
        for (const auto& [name, t] : in) vin.emplace(name, batch_rows(t, n, first, rows));
        std::vector<Tensor> vout;
        for (const Tensor& t : out) vout.push_back(batch_rows(t, n, first, rows));
        Status s = timed(*lanes[i], rows, [&] { return lanes[i]->session->run(vin, vout); });
        j.done(s.is_ok()
                   ? s
                   : s.prefixed("rows " + std::to_string(first) + ".." + std::to_string(first + rows - 1) + ": "));
      });
    }
    if (Status s = j.wait(); !s.is_ok()) return s;
    return out;
  }
};

MultiDeviceSession::MultiDeviceSession(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
MultiDeviceSession::~MultiDeviceSession() = default;

Result<std::unique_ptr<MultiDeviceSession>> MultiDeviceSession::load(const std::string& path,
                                                                     const SessionOptions& base,
                                                                     const MultiDeviceOptions& m) {
  if (m.devices.empty()) return Status::error(StatusCode::kInvalidInput, "multi-device session: no devices given");
  if (m.devices.size() > 64)
    return Status::error(StatusCode::kInvalidInput, "multi-device session: more than 64 devices");
  if (m.threads_per_device < 0 || m.threads_per_device > 16)
    return Status::error(StatusCode::kInvalidInput, "multi-device session: threads_per_device " +
                                                        std::to_string(m.threads_per_device) + " is not in 0..16");
  auto impl = std::make_unique<Impl>();
  impl->opts = m;
  const int threads = m.threads_per_device                              ? m.threads_per_device
                      : m.mode == MultiDeviceOptions::Mode::kThroughput ? 2
                                                                        : 1;
  std::vector<BackendInfo> found;
  for (const Device& d : m.devices)
    if (d.is_gpu()) {
      found = gpus();
      break;
    }
  for (const Device& d : m.devices) {
    auto lane = std::make_unique<Lane>();
    lane->stats.device = d;
    if (d.is_gpu() && d.index >= 0 && static_cast<size_t>(d.index) < found.size() &&
        !found[d.index].pci_bus_id.empty()) {
      const std::string bus = lower(found[d.index].pci_bus_id);
      lane->stats.numa_node = pci_numa_node(bus);
      if (m.pin_numa && lane->stats.numa_node >= 0)
        lane->cpus = cpu_list("/sys/bus/pci/devices/" + bus + "/local_cpulist");
      lane->stats.pinned = !lane->cpus.empty();
    }
    impl->lanes.push_back(std::move(lane));
  }
  // Load on each device's own threads (so its allocations are made from its NUMA node).
  for (auto& l : impl->lanes)
    for (int t = 0; t < threads; ++t) l->threads.emplace_back([p = l.get()] { p->loop(); });
  std::vector<Status> st(impl->lanes.size(), Status::ok());
  {
    std::vector<std::thread> ts;
    for (size_t i = 0; i < impl->lanes.size(); ++i)
      ts.emplace_back([&, i] {
        st[i] = impl->on(i, [&](Lane& l) -> Status {
          SessionOptions o = base;
          o.device = l.stats.device;
          auto s = Session::load(path, o);
          if (!s.is_ok()) return s.status().prefixed(l.stats.device.str() + ": ");
          l.session = s.take();
          return Status::ok();
        });
      });
    for (std::thread& t : ts) t.join();
  }
  for (const Status& s : st)
    if (!s.is_ok()) return s;
  return std::unique_ptr<MultiDeviceSession>(new MultiDeviceSession(std::move(impl)));
}

size_t MultiDeviceSession::device_count() const { return impl_->lanes.size(); }
const MultiDeviceOptions& MultiDeviceSession::options() const { return impl_->opts; }
const std::vector<IoInfo>& MultiDeviceSession::inputs() const { return impl_->lanes[0]->session->inputs(); }
const std::vector<IoInfo>& MultiDeviceSession::outputs() const { return impl_->lanes[0]->session->outputs(); }
Session& MultiDeviceSession::session(size_t i) { return *impl_->lanes.at(i)->session; }

Status MultiDeviceSession::prepare(const std::map<std::string, std::vector<int64_t>>& input_shapes) {
  return impl_->prepare(input_shapes).status();
}

Result<std::vector<Tensor>> MultiDeviceSession::run(const std::map<std::string, Tensor>& inputs) {
  return impl_->run(inputs);
}

std::vector<DeviceStats> MultiDeviceSession::stats() const {
  std::lock_guard<std::mutex> l(impl_->mu);
  std::vector<DeviceStats> r;
  for (const auto& lane : impl_->lanes) r.push_back(lane->stats);
  return r;
}

void MultiDeviceSession::reset_stats() {
  std::lock_guard<std::mutex> l(impl_->mu);
  for (auto& lane : impl_->lanes) lane->stats.runs = 0, lane->stats.rows = 0, lane->stats.busy_ms = 0;
}

}  // namespace infera
