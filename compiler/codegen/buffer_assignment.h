// Buffer assignment for the temp HBM region: each temporary value gets a line offset; a value's lines
// are free again for values defined after its last use (first fit over the free intervals).
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "compiler/codegen/program.h"

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
};

// Requests are processed in order of definition. Two values share lines only if one's last use comes
// strictly before the other's definition.
BufferAssignment AssignBuffers(std::vector<BufferRequest> requests);

}  // namespace tpu::compiler
