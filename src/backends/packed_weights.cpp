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

std::shared_ptr<PackedBlob> PackedBlob::wrap(void* data, size_t bytes, int device, std::shared_ptr<void> owner) {
  std::shared_ptr<PackedBlob> b(new PackedBlob());
  b->data_ = data, b->size_ = bytes, b->device_ = device, b->owner_ = std::move(owner);
  return b;
}

PackedBlob::~PackedBlob() {
  if (!owner_) std::free(data_);
}

std::string PackedWeights::key_of(const std::string& what, int weight, int output, const std::string& node) {
  return what + ":w" + std::to_string(weight) + ":y" + std::to_string(output) + ":" + node;
}

std::shared_ptr<const PackedBlob> PackedWeights::find(const std::string& key, const std::string& layout, size_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = index_.find({key, layout});
    if (it != index_.end()) {
      std::shared_ptr<const PackedBlob> b = slots_[it->second].weak.lock();
      if (b && b->size() == bytes) {
        ++hits_;
        return b;
      }
    }
  }
  std::shared_ptr<const PackedBlob> b = parent_ ? parent_->find(key, layout, bytes) : nullptr;
  if (b) b = insert(key, layout, std::move(b), true, parent_->saves(key, layout));
  std::lock_guard<std::mutex> lock(mu_);
  ++(b ? hits_ : misses_);
  return b;
}

std::shared_ptr<const PackedBlob> PackedWeights::put(const std::string& key, const std::string& layout,
                                                     std::shared_ptr<const PackedBlob> blob, bool save) {
  if (parent_) blob = parent_->put(key, layout, std::move(blob), save);
  return insert(key, layout, std::move(blob), parent_ != nullptr, save);
}

void PackedWeights::pin(const std::string& key, const std::string& layout, std::shared_ptr<const PackedBlob> blob) {
  if (parent_) blob = parent_->put(key, layout, std::move(blob));
  insert(key, layout, std::move(blob), true, true);
}

bool PackedWeights::saves(const std::string& key, const std::string& layout) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find({key, layout});
  return it == index_.end() || slots_[it->second].save;
}

std::shared_ptr<const PackedBlob> PackedWeights::insert(const std::string& key, const std::string& layout,
                                                        std::shared_ptr<const PackedBlob> blob, bool hold, bool save) {
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, fresh] = index_.emplace(std::make_pair(key, layout), slots_.size());
  if (fresh) slots_.push_back({key, layout, {}, {}, save});
  Slot& s = slots_[it->second];
  std::shared_ptr<const PackedBlob> have = s.weak.lock();
  // A live entry of the same size stays; an expired one, or one of the wrong size (loaded from
  // an untrusted file), is replaced.
  if (have && have->size() == blob->size()) {
    if (hold) s.strong = have;
    return have;
  }
  s.weak = blob;
  s.strong = hold ? blob : nullptr;
  s.save = save;
  return blob;
}

std::vector<PackedWeights::Entry> PackedWeights::entries() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Entry> out;
  for (const Slot& s : slots_)
    if (std::shared_ptr<const PackedBlob> b = s.weak.lock()) out.push_back({s.key, s.layout, std::move(b), s.save});
  return out;
}

size_t PackedWeights::size() const { return entries().size(); }

size_t PackedWeights::bytes() const {
  size_t n = 0;
  for (const Entry& e : entries()) n += e.blob->size();
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
