#include "compiler/codegen/buffer_assignment.h"

#include <algorithm>
#include <iterator>

namespace tpu::compiler {

BufferAssignment AssignBuffers(std::vector<BufferRequest> requests) {
  std::stable_sort(requests.begin(), requests.end(),
                   [](const BufferRequest& a, const BufferRequest& b) { return a.defined_at < b.defined_at; });
  BufferAssignment result;
  struct Live {
    uint32_t offset, lines;
    int64_t last_use;
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
    live.insert(insert_at, Live{offset, request.lines, std::max(request.last_use, request.defined_at)});
    result.offsets[request.id] = offset;
    result.peak_lines = std::max(result.peak_lines, offset + request.lines);
  }
  return result;
}

}  // namespace tpu::compiler
