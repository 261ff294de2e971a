// IssueTraceMonitor: turns the chip's issue trace port (tpu_chip trace_*) into an ExecutionProfile
// (sw/driver/execution_profile.h), the same record the reference model keeps.
//
// Samples the port at every rising clock edge, which holds the values of the cycle that edge ends. A run
// starts when trace_run_o rises (the profile is cleared then). Each cycle of the run is charged to the
// instruction at trace_pc_o: the cycles from one issue to the next go to the instruction that issues,
// its stall cycles also to the unit it waited for in its last stalled cycle (the lowest of the units
// trace_wait_o names then: DMA, MXU, VPU); cycles after the last issue (an error's drain) go to the
// instruction at trace_pc_o. A unit event (trace_work_o: a DMA line done, an MXU row accepted, a VPU line
// written) counts for the last instruction issued to that unit, and consecutive events of one instruction
// form one UnitInterval (so an interval is a stretch of back-to-back lines, not the instruction's whole
// latency as in the model).
//
// Does not model anything: it only observes. With no profile set it does nothing but return.
#pragma once

#include <systemc>

#include "sw/driver/execution_profile.h"
#include "sysc/line.h"

namespace tpu::sysc {

class IssueTraceMonitor : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(IssueTraceMonitor);
  // `core`: the core whose trace it reads from the chip's packed trace pins; `imem_words`: instruction
  // words of the core (the size of ExecutionProfile::pcs); `clock_period`: of clk_i
  // (ExecutionProfile::start_cycle counts it from time 0).
  IssueTraceMonitor(sc_core::sc_module_name name, unsigned core, size_t imem_words, sc_core::sc_time clock_period);

  sc_core::sc_in<bool> clk_i;
  sc_core::sc_in<CoreBits> run_i;
  sc_core::sc_in<CoreBits> issue_i;
  sc_core::sc_in<CoreWords> pc_i;
  sc_core::sc_in<Pin<kCores * 3>> wait_i;  // bit 0 DMA, 1 MXU, 2 VPU
  sc_core::sc_in<Pin<kCores * 3>> unit_i;  // the unit the issuing instruction goes to (same bits)
  sc_core::sc_in<Pin<kCores * 3>> work_i;  // bit 0 DMA line, 1 MXU row, 2 VPU line

  // While set, every run clears `profile` and fills it; nullptr stops (a run under way is then lost).
  void SetProfile(ExecutionProfile* profile);

 private:
  void Sample();

  const unsigned core_;
  const size_t imem_words_;
  const sc_core::sc_time clock_period_;
  ExecutionProfile* profile_ = nullptr;
  bool running_ = false;
  uint64_t cycle_ = 0;        // cycles of the current run so far
  uint64_t pending_ = 0;      // cycles since the last issue
  uint32_t last_wait_ = 0;    // trace_wait_o of the last stalled cycle
  std::array<uint64_t, kProfileUnits> pending_stall_on_{};
  std::array<uint32_t, kProfileUnits> unit_pc_{};      // the last instruction issued to each unit
  std::array<size_t, kProfileUnits> open_interval_{};  // index into intervals, or SIZE_MAX
};

}  // namespace tpu::sysc
