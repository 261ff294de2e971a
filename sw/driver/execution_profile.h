// ExecutionProfile: what the chip's issue trace tells about one run, per instruction word. Both backends
// fill it when profiling is on (Transport::SetProfiling): the reference model from its cycle estimate, the
// SystemC platform from the verilated core's trace port. sw/profiler turns it into per-HLO-operation
// figures and a timeline.
//
// Cycle accounting: the cycles from one issue to the next are charged to the instruction that issues
// second (it was waiting: `cycles` counts its issue cycle plus its stall), so the `cycles` of all words sum
// to the run's CYCLES counter. A stall is also charged to the unit the instruction waited for: its own
// unit when that unit could not take it, and for SYNC/HALT the unit that was the last to finish.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace tpu {

enum ProfileUnit : uint8_t { kProfileDma = 0, kProfileMxu = 1, kProfileVpu = 2, kProfileUnits = 3 };
inline const char* ProfileUnitName(int unit) {
  static const char* const kNames[kProfileUnits] = {"dma", "mxu", "vpu"};
  return unit >= 0 && unit < kProfileUnits ? kNames[unit] : "?";
}

// One instruction word's share of the run.
struct PcProfile {
  uint64_t issues = 0;        // times it issued (loops issue a word many times)
  uint64_t cycles = 0;        // issue cycles plus the stalls before them
  uint64_t stall_cycles = 0;  // of those, cycles it waited
  std::array<uint64_t, kProfileUnits> stall_on{};  // stall cycles by the unit waited for
  // Work it gave its unit: DMA lines moved, MXU LHS rows streamed, VPU lines written.
  std::array<uint64_t, kProfileUnits> work{};
};

// An interval in which a unit worked on one instruction: [begin, end) in device cycles since the run
// started (the doorbell).
struct UnitInterval {
  uint8_t unit = 0;  // ProfileUnit
  uint32_t pc = 0;
  uint64_t begin = 0, end = 0;
  uint32_t lines = 0;  // DMA lines, MXU rows or VPU lines of the instruction
  uint32_t hbm_line = 0, stride = 0;  // DMA: first HBM line and stride (for the per-channel view)
};

struct ExecutionProfile {
  // Words of IMEM profiled: pcs[pc] for every pc < pcs.size().
  std::vector<PcProfile> pcs;
  // Unit intervals in issue order, at most max_intervals of them (truncated says some were dropped).
  std::vector<UnitInterval> intervals;
  uint64_t max_intervals = 1u << 22;
  bool truncated = false;
  uint64_t cycles = 0;  // of the run (doorbell to halt or error): the sum of pcs[].cycles
  // The backend's own clock at the run's first cycle: the reference model's cycle count, the SystemC
  // platform's cycles since the simulation began (its FST waveforms put cycle c at c * 1000 ps).
  uint64_t start_cycle = 0;

  void Clear(size_t words) {
    pcs.assign(words, PcProfile{});
    intervals.clear();
    truncated = false;
    cycles = 0;
    start_cycle = 0;
  }
  void AddInterval(const UnitInterval& interval) {
    if (intervals.size() < max_intervals) {
      intervals.push_back(interval);
    } else {
      truncated = true;
    }
  }
};

}  // namespace tpu
