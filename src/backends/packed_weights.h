// Packed weights: constants a backend converted into its own format at kernel creation (oneDNN's
// blocked and Winograd-transformed weights; the GPU's OHWI fp16 / int8 weights, biases and
// per-channel tables, in device memory), kept by the session so that all its plans (every
// batch size, chunk plans, plans rebuilt after eviction) share one copy; those whose conversion
// costs more than reading them back (Entry::save: the Winograd transforms) are carried in saved
// plans, so that loading one skips it (docs/saved_plans.md, section PACK).
//
// An entry is found by (key, layout): the key names the weights (backend, what the call site made
// of them, the node's weight and output value ids, its name: "dnnl:conv:w12:y40:conv1",
// "dnnl:qconv-f32:c0=64:cn=64:w12:y40:conv1"), the layout is the backend's canonical description of the packed format
// (its bytes depend only on the format: oneDNN's memory descriptor, field by field). Two plans that pick the same
// format for a node's weights share the bytes; a different format is another entry. Entries loaded from a file are
// untrusted: a lookup also requires the byte count that the asking kernel computed, and the layout is only compared,
// never interpreted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace infera {

// Bytes immutable once published: 64-byte aligned host memory (make), or memory another
// allocator owns (wrap: a GPU's), freed by its owner when the last user lets go.
class PackedBlob {
 public:
  static std::shared_ptr<PackedBlob> make(size_t bytes);  // nullptr when out of memory
  static std::shared_ptr<PackedBlob> wrap(void* data, size_t bytes, int device, std::shared_ptr<void> owner);
  ~PackedBlob();
  PackedBlob(const PackedBlob&) = delete;
  PackedBlob& operator=(const PackedBlob&) = delete;
  void* data() { return data_; }
  const void* data() const { return data_; }
  size_t size() const { return size_; }
  int device() const { return device_; }  // -1: host memory; else the GPU's index (never saved)

 private:
  PackedBlob() = default;
  void* data_ = nullptr;
  size_t size_ = 0;
  int device_ = -1;
  std::shared_ptr<void> owner_;  // wrap's
};

class PackedWeights {
 public:
  // The session's store holds its entries weakly: bytes live while a kernel uses them (a plan
  // evicted from the plan cache frees the formats no other plan shares), except pinned ones
  // (loaded from a saved plan: kept for the saved shapes, which may be prepared again later).
  // With a parent, the store is a view: lookups fall through to the parent, publications go
  // there too, and the view holds what it was asked for strongly (save_plan: the entries its
  // shapes' plans use, alive until they are written; a plan build: its own hit/miss counts).
  explicit PackedWeights(std::shared_ptr<PackedWeights> parent = nullptr) : parent_(std::move(parent)) {}
  struct Entry {
    std::string key, layout;
    std::shared_ptr<const PackedBlob> blob;
    // Worth a place in a saved plan: converting costs more than reading the bytes back (oneDNN's
    // Winograd transforms); a plain reorder into blocks is made again at load instead.
    bool save = true;
  };
  // The key of what a backend made of a node's constant: "<what>:w<weight value id>:y<first
  // output id>:<node name>" ("dnnl:conv:w12:y40:conv1", "gpu0:conv-w:w12:y40:conv1").
  static std::string key_of(const std::string& what, int weight, int output, const std::string& node);
  // The live entry of (key, layout) with exactly `bytes` bytes, or null.
  std::shared_ptr<const PackedBlob> find(const std::string& key, const std::string& layout, size_t bytes);
  // Publishes blob for (key, layout) unless a live entry of its size is there already (another
  // plan made it meanwhile): returns the one kept. One entry per (key, layout).
  std::shared_ptr<const PackedBlob> put(const std::string& key, const std::string& layout,
                                        std::shared_ptr<const PackedBlob> blob, bool save = true);
  // put, and held strongly for the store's lifetime.
  void pin(const std::string& key, const std::string& layout, std::shared_ptr<const PackedBlob> blob);
  bool saves(const std::string& key, const std::string& layout) const;  // the entry's `save` (true if none)
  std::vector<Entry> entries() const;                                   // the live ones, in insertion order
  size_t size() const;                                                  // live entries
  size_t bytes() const;                                                 // of the live entries
  // Lookups that found an entry / that did not (the caller then packed and put).
  uint64_t hits() const;
  uint64_t misses() const;

 private:
  struct Slot {
    std::string key, layout;
    std::weak_ptr<const PackedBlob> weak;
    std::shared_ptr<const PackedBlob> strong;  // pinned, or held by a view
    bool save = true;
  };
  std::shared_ptr<const PackedBlob> insert(const std::string& key, const std::string& layout,
                                           std::shared_ptr<const PackedBlob> blob, bool hold, bool save);
  std::shared_ptr<PackedWeights> parent_;
  mutable std::mutex mu_;
  std::vector<Slot> slots_;
  std::map<std::pair<std::string, std::string>, size_t> index_;  // (key, layout) -> slots_
  uint64_t hits_ = 0, misses_ = 0;
};

}  // namespace infera
