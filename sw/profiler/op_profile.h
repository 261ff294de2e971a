// The op profile: a run's execution profile (sw/driver/execution_profile.h) summed per HLO operation of
// the compiled program (compiler::Program::code_ranges), as the Cloud TPU profiler's op profile shows it,
// with the performance guide's checks as findings.
//
// An operation owns the words of its code range and the SYNC after it (the wait for its own units to
// finish); words before the first range go to the first operation and the final HALT to the last, so
// the operations' cycles add up to the run's. Programs are straight-line between operations (loops stay
// inside one operation's code), so each operation's cycles are one interval of the run, in program order.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "compiler/codegen/program.h"
#include "compiler/hlo/hlo_ir.h"
#include "sw/base/status.h"
#include "sw/driver/driver.h"
#include "sw/driver/execution_profile.h"

namespace tpu::profiler {

struct OpRecord {
  std::string name;      // the HLO instruction, or the copy's description ("copy x to output 2")
  std::string category;  // the HLO opcode ("dot", "add", ...) or "copy"
  std::string what;      // the code range's text: "dot.3 = f32[32,120] dot"
  uint32_t begin = 0, end = 0;  // code words charged to it
  uint64_t start_cycle = 0;     // its first cycle, counted from the start of the run
  uint64_t cycles = 0, stall_cycles = 0, instructions = 0;
  std::array<uint64_t, kProfileUnits> stall_on{};  // stall cycles by the unit waited for
  uint64_t host_stall_cycles = 0;  // stall cycles at SEMWAIT: waiting for the host (infeed, outfeed)
  std::array<uint64_t, kProfileUnits> work{};      // DMA lines, MXU rows, VPU lines
};

// What the chip can do per cycle at best: the limits utilizations are measured against.
struct ChipPeaks {
  uint32_t lanes = 0;                 // MXU rows per cycle are 1: LANES x LANES MACs
  double hbm_bytes_per_cycle = 0;     // pin peak of all channels
};
// The peaks of the device the driver discovered: 32 bytes per cycle per HBM channel (docs/hbm.md).
inline ChipPeaks PeaksOf(const DeviceInfo& device) {
  return ChipPeaks{device.lanes, 32.0 * device.hbm_channels};
}

struct OpProfile {
  std::string module;
  ChipPeaks peaks;
  uint64_t cycles = 0;                     // the run's, the sum of ops[].cycles
  std::vector<OpRecord> ops;               // program order
  OpRecord total;                          // the sums ("total")
};

// Fails (InvalidArgument) when the profile does not belong to the program (fewer words, or cycles that
// do not add up).
StatusOr<OpProfile> BuildOpProfile(const compiler::Program& program, const ExecutionProfile& profile,
                                   const ChipPeaks& peaks);

// Utilizations of one record in percent of the chip's peak over its cycles.
double MxuPercent(const OpRecord& op, const ChipPeaks& peaks);  // MXU rows streamed per cycle
double VpuPercent(const OpRecord& op);                           // VPU lines written per cycle
double HbmPercent(const OpRecord& op, const ChipPeaks& peaks);   // DMA bytes per cycle of the pin peak

// The table: the `top` operations by cycles (0: all), then the total line.
std::string FormatOpProfile(const OpProfile& profile, size_t top);

// A finding of the performance guide's checks, with the advice.
struct Finding {
  std::string check;   // "padding", "batch", "memory-bound", "stalls", "infeed-bound", "mxu-idle"
  std::string text;
};
// The checks: every dot and convolution of `module` (the user's module, as written) whose dimensions pad
// to the MXU tiles (feature dimensions to LANES, the batch to 8) with the share of its MXU work that is
// padding; dots that stream fewer rows than LANES through each weight tile (batch per core under LANES);
// a run whose cycles are mostly stalls, and on what; a run that waits for the host at its infeeds and
// outfeeds for a tenth of its cycles or more; the MXU's share of the run.
std::vector<Finding> PerformanceFindings(const hlo::HloModule& module, const OpProfile& profile);
std::string FormatFindings(const std::vector<Finding>& findings);

}  // namespace tpu::profiler
