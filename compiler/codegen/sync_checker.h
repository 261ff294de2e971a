// Checks that a program synchronizes its units: it follows the program's control flow (scalar
// instructions; a branch on a value an SLD read -- data -- goes into its loop or branch the first two
// times it runs and out afterwards, so a loop on a device-computed condition or counter is followed
// through two iterations and out) and, at each unit instruction, compares the VMEM
// lines it touches with those of the instructions other units may still be executing (the last one
// issued to each unit, until a SYNC naming that unit). A read or write of lines another unit may still
// write, or a write of lines another unit may still read, is a race: the reference model (which runs
// every instruction at issue) and the RTL (which runs units concurrently) could then disagree.
// HBM is only touched by the DMA unit, whose instructions complete in order, so it cannot race.
// The DMA unit overlaps up to `dma_queue` instructions (docs/isa.md): the last that many DMAs issued may
// still be executing; the VPU runs one instruction at a time.
//
// The MXU overlaps its own commands, so for it "may still be executing" follows its issue rules
// (docs/isa.md, docs/performance.md): an MXU_LW or MXU_MM issued means the previous MXU_LW is complete;
// an MXU_MM issued means the previous MXU_MM has read all its LHS lines; the results of an MXU_MM (and
// the old destination lines ACC reads) are written at most 2*LANES+1 cycles after its last LHS read, so
// they are complete once the multiplies issued after it have read at least `mxu_result_latency` LHS
// rows and another MXU_MM issued. Code can therefore hand a finished accumulator to the DMA or VPU
// without a SYNC on the MXU while the array streams the next tiles. An SLD reads a line that no unit may
// still write.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sw/base/status.h"

namespace tpu::compiler {

struct SyncCheckOptions {
  uint32_t lanes = 8;
  uint64_t max_steps = 50'000'000;  // instructions followed before giving up (a loop that never ends)
  // LHS rows after an MXU_MM's last one that guarantee its results are written; 0 = 2*lanes + 2 (the
  // RTL's 2*LANES+1 cycles from an LHS read to its result write, plus one).
  uint64_t mxu_result_latency = 0;
  uint32_t dma_queue = 2;  // DMA instructions in flight (DMA_QUEUE of rtl/config/*.cfg)
};

// `code` must already be relocated (or use any addresses: only VMEM addresses matter).
// Returns OK, or FailedPrecondition naming the first race (pc of both instructions and the lines).
Status CheckUnitSynchronization(const std::vector<uint64_t>& code, const SyncCheckOptions& options);

}  // namespace tpu::compiler
