// Byte storage for large, mostly empty address spaces: pages are allocated on first write and
// everything never written reads as zero. Shared by the HBM and host memory models.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>

namespace tpu::sysc {

class SparseStore {
 public:
  static constexpr uint64_t kPageBytes = 64 * 1024;

  explicit SparseStore(uint64_t size_bytes) : size_bytes_(size_bytes) {}

  uint64_t size_bytes() const { return size_bytes_; }
  // True when [address, address + bytes) lies inside the store (overflow safe).
  bool Contains(uint64_t address, uint64_t bytes) const {
    return address <= size_bytes_ && bytes <= size_bytes_ - address;
  }

  // Callers check Contains() first; out-of-range accesses are a programming error here.
  void Read(uint64_t address, uint8_t* data, size_t bytes) const;
  void Write(uint64_t address, const uint8_t* data, size_t bytes);
  // Forgets every page: the whole store reads as zero again.
  void Clear() { pages_.clear(); }
  size_t allocated_pages() const { return pages_.size(); }

 private:
  uint64_t size_bytes_;
  std::unordered_map<uint64_t, std::unique_ptr<uint8_t[]>> pages_;
};

}  // namespace tpu::sysc
