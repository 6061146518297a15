#include "backends/packed_weights.h"

#include <cstdlib>

namespace infera {

std::shared_ptr<PackedBlob> PackedBlob::make(size_t bytes) {
  std::shared_ptr<PackedBlob> b(new PackedBlob());
  const size_t n = (bytes + 63) / 64 * 64;
  b->data_ = std::aligned_alloc(64, n ? n : 64);
  if (!b->data_) return nullptr;
  b->size_ = bytes;
  return b;
}

PackedBlob::~PackedBlob() { std::free(data_); }

std::shared_ptr<const PackedBlob> PackedWeights::find(const std::string& key, const std::string& layout, size_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = index_.find({key, layout});
    if (it != index_.end() && entries_[it->second].blob->size() == bytes) {
      ++hits_;
      return entries_[it->second].blob;
    }
  }
  std::shared_ptr<const PackedBlob> b = parent_ ? parent_->find(key, layout, bytes) : nullptr;
  if (b) b = insert(key, layout, std::move(b));
  std::lock_guard<std::mutex> lock(mu_);
  ++(b ? hits_ : misses_);
  return b;
}

std::shared_ptr<const PackedBlob> PackedWeights::put(const std::string& key, const std::string& layout,
                                                     std::shared_ptr<const PackedBlob> blob) {
  if (parent_) blob = parent_->put(key, layout, std::move(blob));
  return insert(key, layout, std::move(blob));
}

std::shared_ptr<const PackedBlob> PackedWeights::insert(const std::string& key, const std::string& layout,
                                                        std::shared_ptr<const PackedBlob> blob) {
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, fresh] = index_.emplace(std::make_pair(key, layout), entries_.size());
  if (!fresh) {
    Entry& e = entries_[it->second];
    if (e.blob->size() != blob->size()) e.blob = blob;  // a loaded entry of the wrong size: replaced
    return e.blob;
  }
  entries_.push_back({key, layout, blob});
  return blob;
}

std::vector<PackedWeights::Entry> PackedWeights::entries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_;
}

size_t PackedWeights::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

size_t PackedWeights::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const Entry& e : entries_) n += e.blob->size();
  return n;
}

uint64_t PackedWeights::hits() const {
  std::lock_guard<std::mutex> lock(mu_);
  return hits_;
}

uint64_t PackedWeights::misses() const {
  std::lock_guard<std::mutex> lock(mu_);
  return misses_;
}

}  // namespace infera
