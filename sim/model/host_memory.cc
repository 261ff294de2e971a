#include "sim/model/host_memory.h"

#include <algorithm>
#include <string>

namespace tpu::model {

Status HostMemory::CheckRange(uint64_t address, uint64_t bytes) const {
  if (address > this->bytes() || bytes > this->bytes() - address) {
    return OutOfRange("host memory bytes [" + std::to_string(address) + ", +" + std::to_string(bytes) +
                      ") exceed " + std::to_string(this->bytes()) + " bytes");
  }
  return OkStatus();
}

Status HostMemory::Read(uint64_t address, void* data, uint64_t bytes) const {
  TPU_RETURN_IF_ERROR(CheckRange(address, bytes));
  memory_.Read(address, data, bytes);
  return OkStatus();
}

Status HostMemory::Write(uint64_t address, const void* data, uint64_t bytes) {
  TPU_RETURN_IF_ERROR(CheckRange(address, bytes));
  memory_.Write(address, data, bytes);
  return OkStatus();
}

uint64_t HostMemory::GoodLines(uint64_t address, uint64_t lines, uint64_t line_bytes) const {
  uint64_t good = address >= bytes() ? 0 : std::min(lines, (bytes() - address) / line_bytes);
  if (error_begin_ < error_end_ && address < error_end_) {
    const uint64_t first_bad = error_begin_ <= address ? 0 : (error_begin_ - address + line_bytes - 1) / line_bytes;
    good = std::min(good, first_bad);
  }
  return good;
}

}  // namespace tpu::model
