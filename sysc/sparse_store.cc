#include "sysc/sparse_store.h"

#include <algorithm>
#include <cassert>
#include <cstring>

namespace tpu::sysc {

void SparseStore::Read(uint64_t address, uint8_t* data, size_t bytes) const {
  assert(Contains(address, bytes));
  while (bytes > 0) {
    const uint64_t page = address / kPageBytes;
    const uint64_t in_page = address % kPageBytes;
    const size_t chunk = static_cast<size_t>(std::min<uint64_t>(bytes, kPageBytes - in_page));
    auto it = pages_.find(page);
    if (it == pages_.end()) {
      std::memset(data, 0, chunk);
    } else {
      std::memcpy(data, it->second.get() + in_page, chunk);
    }
    address += chunk;
    data += chunk;
    bytes -= chunk;
  }
}

void SparseStore::Write(uint64_t address, const uint8_t* data, size_t bytes) {
  assert(Contains(address, bytes));
  while (bytes > 0) {
    const uint64_t page = address / kPageBytes;
    const uint64_t in_page = address % kPageBytes;
    const size_t chunk = static_cast<size_t>(std::min<uint64_t>(bytes, kPageBytes - in_page));
    std::unique_ptr<uint8_t[]>& storage = pages_[page];
    if (!storage) storage.reset(new uint8_t[kPageBytes]());  // value-initialized: zeros
    std::memcpy(storage.get() + in_page, data, chunk);
    address += chunk;
    data += chunk;
    bytes -= chunk;
  }
}

}  // namespace tpu::sysc
