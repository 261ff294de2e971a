// Platform: the verilated tpu_chip with its clock, reset, memories and host bridge, plus the host-side
// initiator that the RtlTransport drives.
//
//   host thread --TLM b_transport--> HostBridge.mmio_socket --mmio pins--> tpu_chip
//   tpu_chip --host_req pins--> HostBridge --TLM b_transport--> HostMemory
//   tpu_chip --hbm_req pins--> HbmMemory (HBM controllers, verilated, and one HBM2 device model per channel)
//
// Clock: 1 ns period (1 GHz), rising edge at every whole nanosecond, so cycle = time / 1 ns. Reset:
// rst_ni is low from time 0 until the first Reset() has run, and low for `reset_cycles` cycles on every
// Reset(). The SystemC time resolution stays at its 1 ps default to match `timescale 1ns/1ps.
//
// The methods below run the SystemC kernel and must be called from outside it (between sc_start calls,
// i.e. from ordinary host code), never from a SystemC process. SystemC allows one simulation per
// process and modules cannot be destroyed once it has started, so a program creates at most one
// Platform and keeps it to the end (RtlTransport does this for you).
#pragma once

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "sw/base/status.h"
#include "sysc/hbm_memory.h"
#include "sysc/host_bridge.h"
#include "sysc/host_memory.h"
#include "sysc/issue_trace_monitor.h"
#include "sysc/line.h"

class Vtpu_chip;
class VerilatedFstSc;

namespace tpu::sysc {

// An FST waveform of a window of cycles. Full dumps are huge: dump only the window you need.
struct TraceOptions {
  std::string file;  // FST file to write; empty: no tracing
  int depth = 0;     // hierarchy levels to dump: 1 = tpu_chip's own signals (its ports and top-level
                     // nets), 2 = also those of u_core, u_csr, ..., and so on; 0: all. The package
                     // parameters (tpu_pkg: the configuration) are always included.
  // Window, in device cycles counted from when tracing is requested (for RtlTransport: from its
  // creation, so the reset sequence is at the start): [start_cycle, stop_cycle).
  uint64_t start_cycle = 0;
  uint64_t stop_cycle = std::numeric_limits<uint64_t>::max();  // max: until the trace is closed
};

struct PlatformOptions {
  unsigned reset_cycles = 8;                                 // cycles rst_ni is held low by Reset()
  unsigned mmio_timeout_cycles = 1000;                       // cycles before an MMIO access fails
  unsigned min_host_latency_cycles = 2;                      // host bridge pipeline, in cycles
  sc_core::sc_time host_memory_latency = sc_core::SC_ZERO_TIME;  // added per host-memory access
};

class Platform : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(Platform);
  // The only way to make a Platform: builds the chip as a top-level SystemC module named "tpu", so its
  // signals appear in waveforms as tpu.tpu_chip.<block>.<signal> (a dotted parent name would also
  // defeat Verilator's dumpvars matching, which the trace depth relies on), then the platform around it.
  static Platform* Create(const PlatformOptions& options = {});
  ~Platform() override;

  static sc_core::sc_time ClockPeriod() { return sc_core::sc_time(1, sc_core::SC_NS); }
  // Longest single run: waits for more cycles than this are cut to it (sc_time holds 2^64 ps).
  static constexpr uint64_t kMaxRunCycles = uint64_t{1} << 50;

  // Holds rst_ni low for reset_cycles cycles and releases it (synchronous to the clock).
  Status Reset();
  // One 32-bit MMIO access through the TLM bridge; runs the kernel until it completes. An access the
  // bridge rejects or the chip does not answer gives an error naming the TLM response.
  StatusOr<uint32_t> MmioRead(uint32_t offset);
  Status MmioWrite(uint32_t offset, uint32_t value);
  // Runs until one of the chip's interrupt lines in `lines` (bit c: core c) is high (returns true at
  // once if one already is) or max_cycles have passed.
  bool RunUntilIrq(uint64_t max_cycles, uint32_t lines = ~0u);
  // Runs exactly `cycles` cycles.
  void Run(uint64_t cycles);
  // The interrupt lines, core c at bit c.
  uint32_t IrqLines() const { return Field(irq_.read(), 0, kCores); }
  // Rising clock edges since time 0.
  uint64_t Cycles() const;

  // Starts an FST trace; the window is relative to now. Fails if a trace is already open or pending, or
  // CheckTraceOptions fails.
  Status StartTrace(const TraceOptions& options);
  // A trace's own checks: a file name, depth >= 0, a non-empty window, a file that can be written.
  static Status CheckTraceOptions(const TraceOptions& options);
  // Flushes and closes the trace file, if one is open or pending.
  void StopTrace();
  bool tracing() const;

  // Backdoor access of core `core`'s HBM through the bridge's transport_dbg (byte addresses; no device
  // time).
  Status HbmDebugWrite(unsigned core, uint64_t byte_address, const void* data, size_t bytes);
  Status HbmDebugRead(unsigned core, uint64_t byte_address, void* data, size_t bytes);

  // Core `core`'s issue trace into `profile` from its next run on (nullptr: off); IssueTraceMonitor.
  void SetProfile(ExecutionProfile* profile, unsigned core = 0) { trace_monitors_.at(core)->SetProfile(profile); }

  // Core `core`'s HBM.
  HbmMemory& hbm(unsigned core = 0) { return *hbm_.at(core); }
  HostMemory& host_memory() { return host_memory_; }
  HostBridge& bridge() { return bridge_; }
  Vtpu_chip& chip() { return *chip_; }

 private:
  Platform(sc_core::sc_module_name name, std::unique_ptr<Vtpu_chip> chip, const PlatformOptions& options);

  enum class CommandKind { kNone, kReset, kRead, kWrite };
  struct Command {
    CommandKind kind = CommandKind::kNone;
    uint32_t offset = 0;
    uint32_t value = 0;
    tlm::tlm_response_status status = tlm::TLM_INCOMPLETE_RESPONSE;
    bool done = true;
  };

  void HostThread();
  void WatchIrq();
  // Packs the cores' HBM answers onto the chip's pins.
  void MergeHbmAnswers();
  // Backdoor access of one core's HBM (`write`: from `data`).
  Status HbmDebug(bool write, unsigned core, uint64_t byte_address, void* data, size_t bytes);
  void OpenTraceFile();
  void CloseTraceFile();
  void EnsureStarted();
  // Hands `command` to the host thread and runs the kernel until it is done; its results are in command_.
  Status Execute(const Command& command, uint64_t max_cycles);
  // Runs the kernel until `deadline` (a cycle) or until `stop` returns true, tolerating early pauses.
  template <typename Stop>
  void RunUntil(uint64_t deadline, Stop stop);
  static std::string ResponseName(tlm::tlm_response_status status);

  const PlatformOptions options_;
  sc_core::sc_clock clk_;
  sc_core::sc_signal<bool> rst_n_;
  sc_core::sc_signal<CoreBits> irq_;
  sc_core::sc_signal<uint32_t> chip_id_;  // this chip's index on the board (CFG_CHIP_ID); 0
  // MMIO pins; the bridge drives them from its initiators' processes (see host_bridge.h)
  sc_core::sc_signal<bool, sc_core::SC_MANY_WRITERS> mmio_valid_, mmio_write_;
  sc_core::sc_signal<uint32_t, sc_core::SC_MANY_WRITERS> mmio_addr_, mmio_wdata_;
  sc_core::sc_signal<bool> mmio_rvalid_;
  sc_core::sc_signal<uint32_t> mmio_rdata_;
  // HBM ports, packed per core; each core's memory answers on its own signals, packed by MergeHbmAnswers
  sc_core::sc_signal<CoreBits> hbm_req_valid_, hbm_req_ready_, hbm_req_write_, hbm_rsp_valid_;
  sc_core::sc_signal<CoreWords> hbm_req_addr_;
  sc_core::sc_signal<CoreLines> hbm_req_wdata_, hbm_rsp_rdata_;
  sc_core::sc_vector<sc_core::sc_signal<bool>> core_hbm_ready_, core_hbm_rsp_valid_;
  sc_core::sc_vector<sc_core::sc_signal<Line>> core_hbm_rsp_rdata_;
  // Host port
  sc_core::sc_signal<bool> host_req_valid_, host_req_ready_, host_req_write_, host_rsp_valid_, host_rsp_error_;
  sc_core::sc_signal<uint64_t> host_req_addr_;
  sc_core::sc_signal<Line> host_req_wdata_, host_rsp_rdata_;
  // Issue trace ports, packed per core
  sc_core::sc_signal<CoreBits> trace_run_, trace_issue_;
  sc_core::sc_signal<CoreWords> trace_pc_;
  sc_core::sc_signal<Pin<kCores * 3>> trace_wait_, trace_unit_, trace_work_;

  std::unique_ptr<Vtpu_chip> chip_;
  std::vector<std::unique_ptr<HbmMemory>> hbm_;  // per core: "hbm" (core 0), "hbm1", ...
  HostMemory host_memory_;
  HostBridge bridge_;
  std::vector<std::unique_ptr<IssueTraceMonitor>> trace_monitors_;  // per core
  tlm_utils::simple_initiator_socket<Platform> mmio_initiator_;

  Command command_;  // the one command the host thread executes; done when it has finished
  sc_core::sc_event command_event_;
  uint32_t pause_on_irq_lines_ = 0;  // WatchIrq pauses the kernel when one of these lines is high
  bool started_ = false;

  std::unique_ptr<VerilatedFstSc> trace_;
  std::string trace_file_;
  bool trace_open_ = false;
  bool trace_pending_ = false;
  sc_core::sc_event trace_open_event_, trace_close_event_;
};

}  // namespace tpu::sysc
