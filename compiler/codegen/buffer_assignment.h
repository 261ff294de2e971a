// Buffer assignment for the temp HBM region: each temporary value gets a line offset; a value's lines
// are free again for values defined after its last use (first fit over the free intervals).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "compiler/codegen/program.h"
#include "sw/base/status.h"

namespace tpu::compiler {

// Where a value lives in HBM: a region and the line offset inside it (offset is 0 except for temps).
struct Location {
  RegionKind kind = RegionKind::kTemp;
  uint32_t index = 0;
  uint32_t offset = 0;
};

struct BufferRequest {
  int64_t id = 0;          // caller's name for the value
  uint32_t lines = 0;      // size
  int64_t defined_at = 0;  // program position of the instruction that writes it
  int64_t last_use = 0;    // last program position that reads it (>= defined_at)
};

struct BufferAssignment {
  std::map<int64_t, uint32_t> offsets;  // id -> first line in the temp region
  uint32_t peak_lines = 0;              // temp region size needed
  std::vector<int64_t> live_at_peak;    // ids of the values that occupy the region when it is fullest
};

// Requests are processed in order of definition. Two values share lines only if one's last use comes
// strictly before the other's definition.
BufferAssignment AssignBuffers(std::vector<BufferRequest> requests);

// Sizes as the TPU error messages print them: "512B", "1.5K", "9.0G", "7.48G" (powers of 1024, at most
// two decimals, at least one).
std::string HumanReadableBytes(uint64_t bytes);
// The Cloud TPU out-of-memory message, shared by the compiler's check and the runtime's allocator:
//   Ran out of memory in memory space hbm; used: 9.0G; limit: 8.0G
std::string OutOfMemoryMessage(const std::string& memory_space, uint64_t used_bytes, uint64_t limit_bytes);

// One HBM allocation a program needs when it runs (what the runtime allocates for it).
struct HbmAllocation {
  std::string description;  // e.g. "parameter 2 p2.14 f32[120,784]", "temp region (peak: dot.3 ...)"
  uint64_t lines = 0;
};

// Sum of the allocations (each at least one line, as the runtime allocates them); when it exceeds
// `limit_lines`, ResourceExhausted with OutOfMemoryMessage("hbm", ...) followed by the `listed` largest
// allocations, largest first:
//   Largest allocations in hbm:
//     1. Size: 1.2M, parameter 2 p2.14 f32[120,784]
StatusOr<uint64_t> CheckHbmFits(const std::vector<HbmAllocation>& allocations, uint64_t limit_lines,
                                uint32_t line_bytes, size_t listed = 5);

}  // namespace tpu::compiler
