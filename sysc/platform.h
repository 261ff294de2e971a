// Platform: a board of 1, 2 or 4 verilated tpu_chips with their clock, reset, memories and host bridges,
// the ICI links between them, plus the host-side initiator that the RtlTransport drives.
//
//   host thread --TLM b_transport--> chip m's HostBridge.mmio_socket --mmio pins--> chip m
//   chip m --host_req pins--> its HostBridge --TLM b_transport--> HostMemory (one for the board)
//   chip m --hbm_req pins--> HbmMemory (HBM controllers, verilated, and one HBM2 device model per channel)
//   chip m --ici_tx pins--> IciLink --ici_rx pins--> its neighbour on the ring (sim/model/ici.h)
//
// The platform is built with `chips` chips; SetBoardChips chooses the board that runs on its first chips
// (the others are held in reset) and wires their links as that board's ring. Chip 0 keeps the names of a
// one-chip platform ("tpu", platform.hbm, platform.bridge); chip m > 0 is "tpu<m>" and its parts end in
// "_chip<m>". Waveforms show chip 0.
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

#include "sim/model/ici.h"
#include "sw/base/status.h"
#include "sysc/hbm_memory.h"
#include "sysc/host_bridge.h"
#include "sysc/host_memory.h"
#include "sysc/ici_link.h"
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
  unsigned chips = 1;                                        // verilated chips: 1, 2 or 4
  ici::LinkConfig link;                                      // every ICI link's latency and bandwidth
  unsigned link_slots = 0;  // packets each link's receive buffer holds; 0: enough for the link's full
                            // bandwidth over a credit's round trip (IciLink)
};

class Platform : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(Platform);
  // The only way to make a Platform: builds the chip as a top-level SystemC module named "tpu", so its
  // signals appear in waveforms as tpu.tpu_chip.<block>.<signal> (a dotted parent name would also
  // defeat Verilator's dumpvars matching, which the trace depth relies on), then the platform around it.
  // Fails (std::invalid_argument) for a chip count other than 1, 2 or 4 or a link of no bandwidth.
  static Platform* Create(const PlatformOptions& options = {});
  ~Platform() override;

  static sc_core::sc_time ClockPeriod() { return sc_core::sc_time(1, sc_core::SC_NS); }
  // Longest single run: waits for more cycles than this are cut to it (sc_time holds 2^64 ps).
  static constexpr uint64_t kMaxRunCycles = uint64_t{1} << 50;

  // Chips built, and the board that runs on the first of them (1, 2 or 4, at most chips(); 1 at first).
  // A new board size takes effect at the next Reset.
  unsigned chips() const { return static_cast<unsigned>(chips_.size()); }
  unsigned board_chips() const { return board_chips_; }
  Status SetBoardChips(unsigned chips);

  // Holds rst_ni low for reset_cycles cycles and releases it (synchronous to the clock) on the board's
  // chips; chips past the board stay in reset. The ICI links of the board start empty.
  Status Reset();
  // One 32-bit MMIO access through the TLM bridge of chip offset >> CHIP_SHIFT; runs the kernel until it
  // completes. An access the bridge rejects, of a chip past the board, or the chip does not answer gives
  // an error naming the TLM response.
  StatusOr<uint32_t> MmioRead(uint32_t offset);
  Status MmioWrite(uint32_t offset, uint32_t value);
  // Runs until one of the interrupt lines in `lines` (bit b: board core b) is high (returns true at once
  // if one already is) or max_cycles have passed.
  bool RunUntilIrq(uint64_t max_cycles, uint64_t lines = ~uint64_t{0});
  // Runs exactly `cycles` cycles.
  void Run(uint64_t cycles);
  // The interrupt lines of the board's chips, board core b at bit b.
  uint64_t IrqLines() const;
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

  // Backdoor access of board core `core`'s HBM through its chip's bridge's transport_dbg (byte
  // addresses; no device time).
  Status HbmDebugWrite(unsigned core, uint64_t byte_address, const void* data, size_t bytes);
  Status HbmDebugRead(unsigned core, uint64_t byte_address, void* data, size_t bytes);

  // Board core `core`'s issue trace into `profile` from its next run on (nullptr: off); IssueTraceMonitor.
  void SetProfile(ExecutionProfile* profile, unsigned core = 0) {
    chips_.at(core / kCores)->trace_monitors.at(core % kCores)->SetProfile(profile);
  }

  // Core `core`'s HBM on chip `chip`.
  HbmMemory& hbm(unsigned core = 0, unsigned chip = 0) { return *chips_.at(chip)->hbm.at(core); }
  HostMemory& host_memory() { return host_memory_; }
  HostBridge& bridge(unsigned chip = 0) { return *chips_.at(chip)->bridge; }
  Vtpu_chip& chip(unsigned chip = 0) { return *chips_.at(chip)->rtl; }
  // The ICI links (both directions of every link any board on these chips uses).
  const std::vector<std::unique_ptr<IciLink>>& links() const { return links_; }

 private:
  // One chip and everything on its pins.
  struct ChipSlot {
    ChipSlot(unsigned index, std::unique_ptr<Vtpu_chip> chip);
    std::unique_ptr<Vtpu_chip> rtl;
    sc_core::sc_signal<bool> rst_n;
    sc_core::sc_signal<CoreBits> irq;
    sc_core::sc_signal<uint32_t> chip_id, num_chips, ici_credits;  // straps
    // MMIO pins; the bridge drives them from its initiators' processes (see host_bridge.h)
    sc_core::sc_signal<bool, sc_core::SC_MANY_WRITERS> mmio_valid, mmio_write;
    sc_core::sc_signal<uint32_t, sc_core::SC_MANY_WRITERS> mmio_addr, mmio_wdata;
    sc_core::sc_signal<bool> mmio_rvalid;
    sc_core::sc_signal<uint32_t> mmio_rdata;
    // HBM ports, packed per core; each core's memory answers on its own signals, packed by MergeHbmAnswers
    sc_core::sc_signal<CoreBits> hbm_req_valid, hbm_req_ready, hbm_req_write, hbm_rsp_valid;
    sc_core::sc_signal<CoreWords> hbm_req_addr;
    sc_core::sc_signal<CoreLines> hbm_req_wdata, hbm_rsp_rdata;
    sc_core::sc_vector<sc_core::sc_signal<bool>> core_hbm_ready, core_hbm_rsp_valid;
    sc_core::sc_vector<sc_core::sc_signal<Line>> core_hbm_rsp_rdata;
    // Host port
    sc_core::sc_signal<bool> host_req_valid, host_req_ready, host_req_write, host_rsp_valid, host_rsp_error;
    sc_core::sc_signal<uint64_t> host_req_addr;
    sc_core::sc_signal<Line> host_req_wdata, host_rsp_rdata;
    // Issue trace ports, packed per core
    sc_core::sc_signal<CoreBits> trace_run, trace_issue;
    sc_core::sc_signal<CoreWords> trace_pc;
    sc_core::sc_signal<Pin<kCores * 3>> trace_wait, trace_unit, trace_work;
    // ICI ports, packed per port as on the chip, and per port as the links see them (SplitIci/MergeIci).
    sc_core::sc_signal<Pin<kIciPorts>> ici_tx_valid, ici_tx_credit, ici_rx_valid, ici_rx_ready;
    sc_core::sc_signal<Pin<kIciPorts * kIciPacketBits>> ici_tx_packet, ici_rx_packet;
    sc_core::sc_signal<Pin<kIciPorts * kIciAckBits>> ici_tx_ack, ici_rx_ack;
    sc_core::sc_vector<sc_core::sc_signal<bool>> tx_valid, rx_ready;
    sc_core::sc_vector<sc_core::sc_signal<IciPacket>> tx_packet;
    sc_core::sc_vector<sc_core::sc_signal<IciAck>> tx_ack;
    // Driven by whichever link is active toward this port (IciLink).
    sc_core::sc_vector<sc_core::sc_signal<bool, sc_core::SC_MANY_WRITERS>> tx_credit, rx_valid;
    sc_core::sc_vector<sc_core::sc_signal<IciPacket, sc_core::SC_MANY_WRITERS>> rx_packet;
    sc_core::sc_vector<sc_core::sc_signal<IciAck, sc_core::SC_MANY_WRITERS>> rx_ack;

    std::vector<std::unique_ptr<HbmMemory>> hbm;  // per core: "hbm" (core 0), "hbm1", ...
    std::unique_ptr<HostBridge> bridge;
    std::vector<std::unique_ptr<IssueTraceMonitor>> trace_monitors;  // per core
    std::unique_ptr<tlm_utils::simple_initiator_socket<Platform>> mmio_initiator;
  };

  Platform(sc_core::sc_module_name name, std::vector<std::unique_ptr<Vtpu_chip>> chips, const PlatformOptions& options);
  void BindChip(unsigned index);
  void MakeLinks();

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
  // Packs the cores' HBM answers onto each chip's pins.
  void MergeHbmAnswers();
  // Between each chip's packed ICI pins and the per-port signals of the links.
  void SplitIci();
  void MergeIci();
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
  HostMemory host_memory_;
  std::vector<std::unique_ptr<ChipSlot>> chips_;
  // Links from (chip, port) toward the neighbour each board size gives it, and the board sizes each
  // serves (bit n: a board of n chips).
  std::vector<std::unique_ptr<IciLink>> links_;
  std::vector<uint32_t> link_boards_;
  unsigned board_chips_ = 1;

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
