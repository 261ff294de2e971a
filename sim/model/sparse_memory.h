// SparseMemory: gigabytes of byte-addressed storage of which only the written pages exist.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

namespace tpu::model {

// Byte-addressed memory made of 64 KiB pages allocated on first write. The page table itself is dense
// (8 GiB of HBM needs 128 Ki pointers), which keeps lookups a shift and an index.
class SparseMemory {
 public:
  static constexpr uint64_t kPageBits = 16;
  static constexpr uint64_t kPageBytes = uint64_t{1} << kPageBits;

  explicit SparseMemory(uint64_t bytes) : bytes_(bytes), pages_((bytes + kPageBytes - 1) >> kPageBits) {}

  uint64_t bytes() const { return bytes_; }
  size_t pages_allocated() const { return allocated_; }

  void Read(uint64_t address, void* data, uint64_t size) const {
    auto* out = static_cast<uint8_t*>(data);
    while (size > 0) {
      const uint64_t offset = address & (kPageBytes - 1);
      const uint64_t chunk = std::min(size, kPageBytes - offset);
      const uint8_t* page = pages_[address >> kPageBits].get();
      if (page) {
        std::memcpy(out, page + offset, chunk);
      } else {
        std::memset(out, 0, chunk);
      }
      out += chunk;
      address += chunk;
      size -= chunk;
    }
  }

  void Write(uint64_t address, const void* data, uint64_t size) {
    auto* in = static_cast<const uint8_t*>(data);
    while (size > 0) {
      const uint64_t offset = address & (kPageBytes - 1);
      const uint64_t chunk = std::min(size, kPageBytes - offset);
      std::unique_ptr<uint8_t[]>& page = pages_[address >> kPageBits];
      if (!page) {
        page.reset(new uint8_t[kPageBytes]());
        ++allocated_;
      }
      std::memcpy(page.get() + offset, in, chunk);
      in += chunk;
      address += chunk;
      size -= chunk;
    }
  }

  void Clear() {
    if (allocated_ == 0) return;
    for (auto& page : pages_) page.reset();
    allocated_ = 0;
  }

 private:
  uint64_t bytes_;
  std::vector<std::unique_ptr<uint8_t[]>> pages_;
  size_t allocated_ = 0;
};

}  // namespace tpu::model
