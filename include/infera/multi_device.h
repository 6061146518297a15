// Data-parallel inference over several devices of one host (docs/multi_device.md): one session
// per device, the batch's rows split across them (latency mode) or whole batches dealt to them in
// turn (throughput mode), outputs joined in input order. Each device has its own host thread(s),
// pinned to the CPUs of the GPU's NUMA node when the system says which (sysfs), so that the
// pinned staging buffers its run contexts make land on that node. No collective, no peer access:
// the devices share nothing but the perf DB file, so the first device's plan for a shape searches
// the algorithms and the others (identical GPUs) find every choice in the DB.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "infera/infera.h"

namespace infera {

// "gpu:all" (every GPU found), "gpu:0,1,3", "gpu:0,0" (two engines on one GPU), "cpu", "cpu,cpu",
// "gpu" (= gpu:0); a bare number continues the GPU list. Errors (kInvalidInput) name the bad part;
// a GPU that does not exist is refused (naming the GPUs there are).
Result<std::vector<Device>> parse_device_list(const std::string& s);

struct MultiDeviceOptions {
  std::vector<Device> devices;  // in order: rows of a latency-mode batch go to them in this order
  enum class Mode {
    kLatency,     // each run's batch split into balanced row blocks, one per device, run at once
    kThroughput,  // each run goes whole to the next device in turn; concurrent callers overlap
  } mode = Mode::kLatency;
  // Host threads per device, each with its own run context (0: 1 in latency mode, 2 in
  // throughput mode, so that one run's copies overlap another's compute).
  int threads_per_device = 0;
  bool pin_numa = true;  // pin each device's threads to its NUMA node's CPUs where known
};

// What one device did since load (or reset_stats): runs, batch rows, time inside its runs.
struct DeviceStats {
  Device device;
  int numa_node = -1;   // -1: unknown (a CPU, or no sysfs entry)
  bool pinned = false;  // its threads run on that node's CPUs
  int64_t runs = 0, rows = 0;
  double busy_ms = 0;
};

class MultiDeviceSession {
 public:
  // Loads the model once per device (SessionOptions as given, device replaced). Errors name the
  // device. A latency-mode session needs a model whose inputs share a batch dim (checked per
  // input shape at its first run: a graph that mixes samples is refused naming the node).
  static Result<std::unique_ptr<MultiDeviceSession>> load(const std::string& path, const SessionOptions& base,
                                                          const MultiDeviceOptions& m);
  ~MultiDeviceSession();

  size_t device_count() const;
  const MultiDeviceOptions& options() const;
  const std::vector<IoInfo>& inputs() const;
  const std::vector<IoInfo>& outputs() const;
  Session& session(size_t i);  // device i's session (for prepare(), reports)

  // Makes the plans a run of these input shapes needs on every device: the first device's first
  // (it fills the perf DB), then the others at once. run() does this on first use of a shape.
  Status prepare(const std::map<std::string, std::vector<int64_t>>& input_shapes);
  // Runs on host inputs; outputs on the host in model order. Thread-safe. In latency mode a batch
  // of n rows uses min(n, devices) devices; the outputs are those of the row blocks run one by one.
  Result<std::vector<Tensor>> run(const std::map<std::string, Tensor>& inputs);

  std::vector<DeviceStats> stats() const;
  void reset_stats();

  struct Impl;

 private:
  explicit MultiDeviceSession(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace infera
