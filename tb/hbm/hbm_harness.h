// Verilated rtl/hbm/hbm_ctrl (default parameters) on the C++ HBM2 device model (sysc/dram_device),
// driven by traffic generators and checked by a scoreboard against a shadow memory.
#ifndef TB_HBM_HBM_HARNESS_H_
#define TB_HBM_HBM_HARNESS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sysc/dram_device.h"

class Vhbm_ctrl;

namespace tpu::hbm_tb {

// kSameLine mixes reads and writes of 1-4 beats on a few lines with no gap between dependent
// requests (half of the writes with partial byte strobes when RunOptions::partial_strobes): the
// controller must order them by acceptance (AR before AW in one cycle), also where it answers reads from
// its write queue or merges writes.
enum class Pattern { kSeqRead, kSeqWrite, kMix, kRandomRead, kStrided, kManyIds, kSameLine };
const char* PatternName(Pattern p);
std::vector<Pattern> AllPatterns();

struct RunOptions {
  uint64_t transactions = 10000;  // AXI bursts
  uint64_t seed = 1;
  int backpressure_pct = 0;       // percent of cycles R/B are not accepted
  uint64_t max_cycles = 0;        // 0: derived from transactions
  bool partial_strobes = false;   // kSameLine: half of the writes set only part of each beat
};

struct RunResult {
  uint64_t transactions = 0, beats = 0, cycles = 0;
  uint64_t mismatches = 0, violations = 0, protocol_errors = 0;
  double peak_pct = 0, bound_pct = 0, lat_mean = 0;
  uint64_t lat_p99 = 0;
  double row_hit_pct = 0, refresh_pct = 0;
  // Share of the run's cycles the data pins carry bursts (RD and WR commands): below peak_pct when
  // reads are answered from the write queue or writes of one line are merged before reaching the device.
  double pins_pct = 0;
  std::vector<std::string> messages;  // first failures
  std::string Line(Pattern p) const;  // the `hbm pattern=...` line
};

// The controller's address mapping (hbm_ctrl defaults), which the harness must agree with.
struct CtrlParams {
  int col_lsb = 0, bg_lsb = 4, ba_lsb = 6, row_lsb = 8;
};

// Upper bound (percent of pin peak) that the device's timing allows for a pattern's traffic, whatever
// the controller (docs/hbm.md).
double BoundPct(Pattern p, const DramConfig& c);

RunResult Run(Pattern p, const RunOptions& options);

}  // namespace tpu::hbm_tb

#endif  // TB_HBM_HBM_HARNESS_H_
