// HbmAllocator: first-fit allocation of HBM lines for one device. Regions are whole lines; adjacent free
// regions merge on Free. Running out gives the Cloud TPU message
//   ResourceExhaustedError: Ran out of memory in memory space hbm; used: 9.0G; limit: 8.0G
// where `used` is what would be allocated with the failed request and `limit` the HBM size.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "compiler/codegen/buffer_assignment.h"
#include "sw/base/status.h"

namespace tpu::runtime {

// Sizes as the TPU error messages print them: "512B", "1.5K", "9.0G", "7.48G" (the compiler's HBM check
// prints the same).
using compiler::HumanReadableBytes;

class HbmAllocator {
 public:
  HbmAllocator(uint64_t total_lines, uint32_t line_bytes);

  // First free region of at least `lines` lines (a request of 0 lines takes one line, so every allocation
  // has a distinct address). Returns its first line.
  StatusOr<uint64_t> Allocate(uint64_t lines);
  // Frees the region starting at `first_line`; InvalidArgument if no allocation starts there.
  Status Free(uint64_t first_line);

  uint64_t total_lines() const { return total_lines_; }
  uint64_t used_lines() const { return used_lines_; }
  uint64_t used_bytes() const { return used_lines_ * line_bytes_; }
  uint64_t limit_bytes() const { return total_lines_ * line_bytes_; }
  size_t allocation_count() const { return allocated_.size(); }
  uint64_t largest_free_lines() const;

 private:
  uint64_t total_lines_;
  uint32_t line_bytes_;
  uint64_t used_lines_ = 0;
  std::map<uint64_t, uint64_t> free_;       // first line -> lines, sorted by address
  std::map<uint64_t, uint64_t> allocated_;  // first line -> lines
};

}  // namespace tpu::runtime
