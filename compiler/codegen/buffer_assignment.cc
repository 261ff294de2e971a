#include "compiler/codegen/buffer_assignment.h"

#include <algorithm>
#include <cstdio>
#include <iterator>

namespace tpu::compiler {

BufferAssignment AssignBuffers(std::vector<BufferRequest> requests) {
  std::stable_sort(requests.begin(), requests.end(),
                   [](const BufferRequest& a, const BufferRequest& b) { return a.defined_at < b.defined_at; });
  BufferAssignment result;
  struct Live {
    uint32_t offset, lines;
    int64_t last_use;
    int64_t id;
  };
  std::vector<Live> live;  // sorted by offset
  for (const BufferRequest& request : requests) {
    live.erase(std::remove_if(live.begin(), live.end(),
                              [&](const Live& l) { return l.last_use < request.defined_at; }),
               live.end());
    // First gap between live buffers (sorted by offset) that holds the request.
    uint32_t offset = 0;
    auto insert_at = live.begin();
    for (; insert_at != live.end(); ++insert_at) {
      if (insert_at->offset >= offset + request.lines) break;
      offset = std::max(offset, insert_at->offset + insert_at->lines);
    }
    live.insert(insert_at, Live{offset, request.lines, std::max(request.last_use, request.defined_at), request.id});
    result.offsets[request.id] = offset;
    if (offset + request.lines > result.peak_lines || result.live_at_peak.empty()) {
      result.peak_lines = std::max(result.peak_lines, offset + request.lines);
      result.live_at_peak.clear();
      for (const Live& l : live) result.live_at_peak.push_back(l.id);
    }
  }
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

StatusOr<uint64_t> CheckHbmFits(const std::vector<HbmAllocation>& allocations, uint64_t limit_lines,
                                uint32_t line_bytes, size_t listed) {
  uint64_t total_lines = 0;
  for (const HbmAllocation& allocation : allocations) total_lines += std::max<uint64_t>(allocation.lines, 1);
  if (total_lines <= limit_lines) return total_lines;
  std::vector<const HbmAllocation*> largest;
  for (const HbmAllocation& allocation : allocations) largest.push_back(&allocation);
  std::stable_sort(largest.begin(), largest.end(),
                   [](const HbmAllocation* a, const HbmAllocation* b) { return a->lines > b->lines; });
  largest.resize(std::min(largest.size(), listed));
  std::string message = OutOfMemoryMessage("hbm", total_lines * line_bytes, limit_lines * line_bytes) +
                        "\nLargest allocations in hbm:";
  for (size_t i = 0; i < largest.size(); ++i) {
    message += "\n  " + std::to_string(i + 1) + ". Size: " + HumanReadableBytes(largest[i]->lines * line_bytes) +
               ", " + largest[i]->description;
  }
  return ResourceExhausted(message);
}

}  // namespace tpu::compiler
