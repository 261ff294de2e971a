#include "sw/runtime/hbm_allocator.h"

#include <algorithm>

namespace tpu::runtime {

HbmAllocator::HbmAllocator(uint64_t total_lines, uint32_t line_bytes)
    : total_lines_(total_lines), line_bytes_(line_bytes) {
  if (total_lines_ > 0) free_[0] = total_lines_;
}

uint64_t HbmAllocator::largest_free_lines() const {
  uint64_t largest = 0;
  for (const auto& [first, lines] : free_) largest = std::max(largest, lines);
  return largest;
}

StatusOr<uint64_t> HbmAllocator::Allocate(uint64_t lines) {
  lines = std::max<uint64_t>(lines, 1);
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < lines) continue;
    const uint64_t first = it->first;
    const uint64_t remaining = it->second - lines;
    free_.erase(it);
    if (remaining > 0) free_[first + lines] = remaining;
    allocated_[first] = lines;
    used_lines_ += lines;
    return first;
  }
  const uint64_t wanted = (used_lines_ + lines) * line_bytes_;
  std::string message = compiler::OutOfMemoryMessage("hbm", wanted, limit_bytes());
  if (used_lines_ + lines <= total_lines_) {
    // Enough bytes in total but no single free region: say so, or the numbers look contradictory.
    message += " (HBM is fragmented: the largest free region is " +
               HumanReadableBytes(largest_free_lines() * line_bytes_) + ", the request " +
               HumanReadableBytes(lines * line_bytes_) + ")";
  }
  return ResourceExhausted(message);
}

Status HbmAllocator::Free(uint64_t first_line) {
  auto found = allocated_.find(first_line);
  if (found == allocated_.end()) {
    return InvalidArgument("no HBM allocation starts at line " + std::to_string(first_line));
  }
  uint64_t first = found->first;
  uint64_t lines = found->second;
  allocated_.erase(found);
  used_lines_ -= lines;
  // Merge with the free neighbours.
  auto next = free_.lower_bound(first);
  if (next != free_.end() && first + lines == next->first) {
    lines += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto previous = std::prev(next);
    if (previous->first + previous->second == first) {
      previous->second += lines;
      return OkStatus();
    }
  }
  free_[first] = lines;
  return OkStatus();
}

}  // namespace tpu::runtime
