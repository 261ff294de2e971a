#include "sysc/issue_trace_monitor.h"

#include <cstdint>

namespace tpu::sysc {

IssueTraceMonitor::IssueTraceMonitor(sc_core::sc_module_name name, unsigned core, size_t imem_words,
                                     sc_core::sc_time clock_period)
    : sc_core::sc_module(name),
      clk_i("clk_i"),
      run_i("run_i"),
      issue_i("issue_i"),
      pc_i("pc_i"),
      wait_i("wait_i"),
      unit_i("unit_i"),
      work_i("work_i"),
      core_(core),
      imem_words_(imem_words),
      clock_period_(clock_period) {
  SC_METHOD(Sample);
  sensitive << clk_i.pos();
  dont_initialize();
}

void IssueTraceMonitor::SetProfile(ExecutionProfile* profile) {
  profile_ = profile;
  running_ = false;
}

void IssueTraceMonitor::Sample() {
  if (profile_ == nullptr) return;
  const bool run = (Field(run_i.read(), core_, 1) != 0);
  if (!run) {
    if (running_ && pending_ > 0) {  // stopped after an error: the drain is the faulting word's
      const uint32_t pc = Field(pc_i.read(), 32 * core_, 32);
      if (pc < profile_->pcs.size()) {
        profile_->pcs[pc].cycles += pending_;
        profile_->pcs[pc].stall_cycles += pending_;
      }
    }
    running_ = false;
    return;
  }
  if (!running_) {  // a new run
    running_ = true;
    profile_->Clear(imem_words_);
    // This edge ends the run's first cycle.
    profile_->start_cycle = static_cast<uint64_t>(sc_core::sc_time_stamp() / clock_period_) - 1;
    cycle_ = pending_ = 0;
    last_wait_ = 0;
    pending_stall_on_.fill(0);
    unit_pc_.fill(0);
    open_interval_.fill(SIZE_MAX);
  }
  const uint32_t pc = Field(pc_i.read(), 32 * core_, 32);
  const uint32_t work = Field(work_i.read(), 3 * core_, 3);
  for (int unit = 0; unit < kProfileUnits; ++unit) {
    if ((work >> unit & 1u) == 0) continue;
    const uint32_t owner = unit_pc_[unit];
    if (owner < profile_->pcs.size()) profile_->pcs[owner].work[unit] += 1;
    size_t& open = open_interval_[unit];
    if (open != SIZE_MAX && open < profile_->intervals.size() && profile_->intervals[open].pc == owner &&
        profile_->intervals[open].end == cycle_) {
      profile_->intervals[open].end = cycle_ + 1;
      profile_->intervals[open].lines += 1;
    } else {
      open = profile_->intervals.size();
      profile_->AddInterval(UnitInterval{static_cast<uint8_t>(unit), owner, cycle_, cycle_ + 1, 1, 0, 0});
      if (open >= profile_->intervals.size()) open = SIZE_MAX;  // dropped: over max_intervals
    }
  }
  ++pending_;
  ++cycle_;
  profile_->cycles = cycle_;
  if ((Field(issue_i.read(), core_, 1) != 0)) {
    if (pc < profile_->pcs.size()) {
      PcProfile& word = profile_->pcs[pc];
      word.issues += 1;
      word.cycles += pending_;
      word.stall_cycles += pending_ - 1;
      if (pending_ > 1) {
        int unit = 0;
        while (unit < kProfileUnits - 1 && (last_wait_ >> unit & 1u) == 0) ++unit;
        word.stall_on[unit] += pending_ - 1;
      }
    }
    pending_ = 0;
    const uint32_t units = Field(unit_i.read(), 3 * core_, 3);
    for (int unit = 0; unit < kProfileUnits; ++unit) {
      if ((units >> unit & 1u) != 0) unit_pc_[unit] = pc;
    }
  } else {
    last_wait_ = Field(wait_i.read(), 3 * core_, 3);
  }
}

}  // namespace tpu::sysc
