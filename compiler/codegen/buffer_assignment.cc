#include "compiler/codegen/buffer_assignment.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <iterator>

namespace tpu::compiler {

BufferAssignment AssignBuffers(std::vector<BufferRequest> requests) {
  std::stable_sort(requests.begin(), requests.end(),
                   [](const BufferRequest& a, const BufferRequest& b) { return a.defined_at < b.defined_at; });
  BufferAssignment result;
  // Offsets in 64 bits: the region of many large values can pass 2^32 lines. Such a peak is reported as
  // UINT32_MAX lines (more than any HBM), never as a wrapped-around small number.
  struct Live {
    uint64_t offset, lines;
    int64_t last_use;
    int64_t id;
  };
  std::vector<Live> live;  // sorted by offset
  uint64_t peak = 0;
  for (const BufferRequest& request : requests) {
    live.erase(std::remove_if(live.begin(), live.end(),
                              [&](const Live& l) { return l.last_use < request.defined_at; }),
               live.end());
    // First gap between live buffers (sorted by offset) that holds the request.
    uint64_t offset = 0;
    auto insert_at = live.begin();
    for (; insert_at != live.end(); ++insert_at) {
      if (insert_at->offset >= offset + request.lines) break;
      offset = std::max(offset, insert_at->offset + insert_at->lines);
    }
    live.insert(insert_at, Live{offset, request.lines, std::max(request.last_use, request.defined_at), request.id});
    result.offsets[request.id] = static_cast<uint32_t>(std::min<uint64_t>(offset, UINT32_MAX));
    if (offset + request.lines > peak || result.live_at_peak.empty()) {
      peak = std::max(peak, offset + request.lines);
      result.live_at_peak.clear();
      for (const Live& l : live) result.live_at_peak.push_back(l.id);
    }
  }
  result.peak_lines = static_cast<uint32_t>(std::min<uint64_t>(peak, UINT32_MAX));
  return result;
}

std::string HumanReadableBytes(uint64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + "B";
  static const char kUnits[] = "KMGTPE";
  double value = static_cast<double>(bytes) / 1024.0;
  int unit = 0;
  while (value >= 1024.0 && unit < 5) {
    value /= 1024.0;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f", value);
  std::string number = text;
  // "7.48" stays, "9.00" becomes "9.0", "1.50" becomes "1.5".
  while (number.size() >= 2 && number.back() == '0' && number[number.size() - 2] != '.') number.pop_back();
  return number + kUnits[unit];
}

std::string OutOfMemoryMessage(const std::string& memory_space, uint64_t used_bytes, uint64_t limit_bytes) {
  return "Ran out of memory in memory space " + memory_space + "; used: " + HumanReadableBytes(used_bytes) +
         "; limit: " + HumanReadableBytes(limit_bytes);
}

namespace {
// Sizes of absurd shapes saturate instead of wrapping around to small numbers.
uint64_t SaturatingAdd(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }
uint64_t SaturatingBytes(uint64_t lines, uint32_t line_bytes) {
  return line_bytes != 0 && lines > UINT64_MAX / line_bytes ? UINT64_MAX : lines * line_bytes;
}
}  // namespace

StatusOr<uint64_t> CheckHbmFits(const std::vector<HbmAllocation>& allocations, uint64_t limit_lines,
                                uint32_t line_bytes, size_t listed) {
  uint64_t total_lines = 0;
  for (const HbmAllocation& allocation : allocations) {
    total_lines = SaturatingAdd(total_lines, std::max<uint64_t>(allocation.lines, 1));
  }
  if (total_lines <= limit_lines) return total_lines;
  std::vector<const HbmAllocation*> largest;
  for (const HbmAllocation& allocation : allocations) largest.push_back(&allocation);
  std::stable_sort(largest.begin(), largest.end(),
                   [](const HbmAllocation* a, const HbmAllocation* b) { return a->lines > b->lines; });
  largest.resize(std::min(largest.size(), listed));
  std::string message = OutOfMemoryMessage("hbm", SaturatingBytes(total_lines, line_bytes),
                                           SaturatingBytes(limit_lines, line_bytes)) +
                        "\nLargest allocations in hbm:";
  for (size_t i = 0; i < largest.size(); ++i) {
    message += "\n  " + std::to_string(i + 1) +
               ". Size: " + HumanReadableBytes(SaturatingBytes(largest[i]->lines, line_bytes)) + ", " +
               largest[i]->description;
  }
  return ResourceExhausted(message);
}

}  // namespace tpu::compiler
