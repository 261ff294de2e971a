// Checks that a program synchronizes its units: it follows the program's control flow (scalar
// instructions only: memory contents never steer it) and, at each unit instruction, compares the VMEM
// lines it touches with those of the instructions other units may still be executing (the last one
// issued to each unit, until a SYNC naming that unit). A read or write of lines another unit may still
// write, or a write of lines another unit may still read, is a race: the reference model (which runs
// every instruction at issue) and the RTL (which runs units concurrently) could then disagree.
// HBM is only touched by the DMA unit, whose instructions complete in order, so it cannot race.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sw/base/status.h"

namespace tpu::compiler {

struct SyncCheckOptions {
  uint32_t lanes = 8;
  uint64_t max_steps = 50'000'000;  // instructions followed before giving up (a loop that never ends)
};

// `code` must already be relocated (or use any addresses: only VMEM addresses matter).
// Returns OK, or FailedPrecondition naming the first race (pc of both instructions and the lines).
Status CheckUnitSynchronization(const std::vector<uint64_t>& code, const SyncCheckOptions& options);

}  // namespace tpu::compiler
