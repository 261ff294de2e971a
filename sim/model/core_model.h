// CoreModel: the fast ISA-level reference model of one core of a tpusim chip (ChipModel holds the cores
// of a chip and steps them in time order).
//
// What it models:
//  - every CSR of docs/csr.md (reset values, access types, DOORBELL/SOFT_RESET/IRQ semantics, the IMEM
//    window, the host DMA engine with its address checks);
//  - every instruction of docs/isa.md with its error checks (done at issue; nothing is written on error);
//  - results bit-exact with the RTL for programs that SYNC before using what another unit writes, because
//    each instruction executes to completion when it issues;
//  - a cycle estimate that mirrors the RTL's concurrency: each unit has a busy-until time, an instruction
//    for a busy unit stalls issue, SYNC and HALT wait for the units. The perf counters report this estimate;
//  - the issue trace of that estimate while profiling (set_profile), the record the chip's trace port gives.
//  - with config.hbm_timing, HBM time from a cycle-level twin of the core's HBM subsystem (sim/hbm/hbm_twin.h:
//    the line adapter, each channel's FR-FCFS controller with its queues, write draining, merging and
//    forwarding, refresh and JEDEC timing): each DMA_LD/DMA_ST and host DMA presents its lines to the twin
//    one a cycle from its start and is done after its last line's answer; without it, a fixed hbm_latency.
//    A DMA's done time moves when the next DMA's requests delay its last answer (HbmTwin::LastAnswer).
// What it does not model: the port's round-robin arbitration between the core's DMA unit and the host DMA
// engine (the twin serves their streams first come, first served, and a host DMA's done time does not see
// streams that start after it), HBM timing of RDMA writes arriving from other cores (fixed hbm_latency),
// and the order of memory accesses inside a unit (programs that race get the "executed at issue" answer).
//
// Time only advances through the chip (NextEvent/RunEvent/SetTime); MMIO accesses and backdoor accesses take
// no device time.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "sim/hbm/hbm_twin.h"
#include "sim/model/chip_config.h"
#include "sim/model/host_memory.h"
#include "sim/model/mxu_kernel.h"
#include "sim/model/sparse_memory.h"
#include "sw/base/status.h"
#include "sw/driver/execution_profile.h"
#include "tpu_csr.h"

namespace tpu::model {

// The cycle estimate, taken from the RTL's unit timing. A unit instruction issued in cycle T makes its
// unit busy from T+1; the "free" offsets below say in which cycle after T the next instruction for that
// unit (or a SYNC/HALT waiting on it) can issue. Measured against the verilated chip (tb/core bench, fixed
// HBM latency, no back-pressure), CYCLES/STALL_CYCLES/INSTRET agree exactly for single-unit programs.
struct Timing {
  // DMA_LD/DMA_ST of C lines: done at S + C + hbm_latency + overhead (one line per cycle behind the
  // memory latency), where S = T for a load and, for a store, T or the cycle the last earlier load is
  // done, whichever is later (a store reads VMEM only after earlier loads wrote it); C = 0 at
  // T + dma_empty. The next DMA instruction can issue at S + C + request_gap (the requests are out)
  // unless config.dma_queue instructions are still unfinished; then when the oldest is done.
  uint32_t dma_load_overhead = 1;
  uint32_t dma_store_overhead = 3;
  uint32_t dma_empty = 2;
  uint32_t dma_load_request_gap = 1;
  uint32_t dma_store_request_gap = 3;
  // MXU (rtl/mxu/mxu.sv): a load runs beside multiplies and multiplies follow each other with no gap.
  // MXU_LW alone: busy N+1 cycles, free at T + N + 2; behind a SWAP its reads wait until the rows of
  // the earlier multiply (the back bank) left the array. An MXU_MM may issue in the cycle the load's
  // last line arrives (T + N + 1 alone) and in the cycle the previous multiply reads its last row.
  uint32_t mxu_lw_overhead = 2;
  // MXU_MM of C rows: the array is busy C + 2N + 1 cycles (fill and drain), free at T + C + 2N + 2;
  // C = 0 is never busy (only the SWAP happens). Stalls on VMEM hazards between overlapping MXU
  // commands are not modelled.
  uint32_t mxu_mm_overhead = 2;
  // VADD/VMAX/VSPLAT of C lines: read, compute, write stages, free at T + C + 3; C = 0 at T + 2.
  uint32_t vpu_overhead = 3;
  uint32_t vpu_empty = 2;
  // RDMA of C lines (the link engine): its lines leave one a cycle from T + 1 (the next RDMA to the same
  // core may issue at T + C + rdma_request_gap); the last is written at the destination at its arrival
  // + hbm_latency + dma_store_overhead + rdma_overhead (the network's arbiter slices), and the
  // instruction is done when its acknowledgement is back. Credit stalls on a full link are not modelled.
  uint32_t rdma_overhead = 4;
  uint32_t rdma_request_gap = 2;
  // Host DMA of C lines: done at start + C + hbm_latency + overhead; the overhead includes the host
  // memory's latency (8 cycles in the chip bench).
  uint32_t hdma_to_hbm_overhead = 11;
  uint32_t hdma_to_host_overhead = 9;
  // With the HBM twin (config.hbm_timing): line i of a DMA that starts in cycle S reaches the twin's port
  // (hbm_line_adapter's request) no earlier than S + hbm_port_delay + i (the core's arbiter slice), and
  // the DMA is done hbm_answer_delay + overhead - hbm_port_delay cycles after the port answered its last
  // line (loads and stores alike; measured against the rtl backend, request by request and answer by
  // answer at the port: gemm_bf16_128 and the training steps of tb/system/hlo). A host DMA's lines reach
  // the port from start + hdma_port_delay.
  uint32_t hbm_port_delay = 2;
  uint32_t hbm_answer_delay = 2;
  uint32_t hdma_port_delay = 2;
  // The first instruction issues this many cycles after the doorbell write.
  uint32_t doorbell_to_fetch = 1;
};

// How MXU_MM computes its rows. Both give the same bits (tests check it); kHostFloat is a vectorized
// host-float kernel (sim/model/mxu_kernel.h, on the instruction set set_mxu_isa chooses, by default the
// widest this host has), kNumericsLibrary calls tpu::numerics::MxuMatVec.
enum class MxuKernel { kHostFloat, kNumericsLibrary };

class CoreModel;

// What a core's RDMA reaches: the cores of its board, numbered chip-major (board core b is core
// b % cores-per-chip of chip b / cores-per-chip), and their semaphores, posted at a cycle (the chip runs
// the post as an event then).
class CoreNetwork {
 public:
  // Where the lines of an RDMA are when they have crossed the network to the destination chip: the cycle
  // the last of them arrives at the destination core's arbiter, and the cycles the acknowledgement of the
  // last one takes back to the sender's chip.
  struct Transit {
    uint64_t last_arrival = 0;
    uint64_t ack_cycles = 0;
  };

  virtual ~CoreNetwork() = default;
  virtual uint32_t Cores() const = 0;
  virtual CoreModel& Core(uint32_t index) = 0;
  virtual void PostAt(uint32_t core, uint32_t semaphore, uint64_t cycle) = 0;
  // The chips of the board (CFG_NUM_CHIPS).
  virtual uint32_t Chips() const = 0;
  // `lines` lines (0: a POST alone) that board core `from` starts sending in cycle `issue + 1`, one a
  // cycle, to board core `to`.
  virtual Transit Carry(uint32_t from, uint32_t to, uint64_t issue, uint64_t lines) = 0;
};

class CoreModel {
 public:
  static constexpr uint64_t kNever = ~uint64_t{0};

  // `config` and `timing` are the chip's (they must outlive the core); `core_id` and `chip_id` are read
  // as CFG_CORE_ID and CFG_CHIP_ID; the host DMA engine reads and writes `host`, which every core of the
  // board shares; RDMA reaches the board cores of `network` (null: RDMA is BAD_CORE, CFG_NUM_CHIPS 1).
  CoreModel(const ChipConfig& config, const Timing& timing, uint32_t core_id, uint32_t chip_id, HostMemory* host,
            CoreNetwork* network = nullptr);
  ~CoreModel();
  CoreModel(const CoreModel&) = delete;
  CoreModel& operator=(const CoreModel&) = delete;

  // Power-on reset: the core as constructed (CSRs, sequencer, units, perf counters, time 0, IMEM, VMEM
  // and HBM all zero, the MXU weights zero). The settings below (MXU kernel and instruction set, profile)
  // stay. Clears the memories in place, so it is cheaper than constructing a core.
  void Reset();

  void set_mxu_kernel(MxuKernel kernel) { mxu_kernel_ = kernel; }
  void set_mxu_isa(MxuIsa isa) { mxu_isa_ = isa; }
  // Execution profiling: while `profile` is set, each doorbell clears it and the run fills it
  // (sw/driver/execution_profile.h). nullptr turns profiling off. The profile must outlive its use.
  void set_profile(ExecutionProfile* profile) { profile_ = profile; }

  // The core's MMIO window (byte offsets: CSRs and the IMEM window). Unmapped offsets read 0 and ignore
  // writes, as do writes to read-only registers.
  uint32_t MmioRead(uint32_t offset);
  void MmioWrite(uint32_t offset, uint32_t value);

  // The core's interrupt line: |(IRQ_STATUS & IRQ_ENABLE).
  bool Irq() const;

  // A post of semaphore `index` from outside the core (the host, another core's RDMA); a SEMWAIT waiting
  // on it wakes at `wake`.
  void PostSemaphore(uint32_t index, uint64_t wake);

  // Time, driven by the chip: the cycle of the core's next event (an instruction issue or step of the
  // sequencer, or the host DMA's completion; kNever when nothing will happen by itself), running that
  // event at `at` (>= the core's cycle), and moving idle time forward.
  uint64_t NextEvent() const;
  void RunEvent(uint64_t at);
  void SetTime(uint64_t cycle) { cycle_ = cycle; }
  // The cycle the last run ended (CYCLES stops there); may lie after the last event.
  uint64_t run_stop() const { return run_stop_; }

  uint64_t cycle() const { return cycle_; }
  bool CoreBusy() const { return core_running_; }
  bool HostDmaBusy() const { return hdma_busy_; }

  // Backdoor access (no device time). Addresses are line indices for HBM and VMEM and bytes for host
  // memory; a line is config().line_bytes() bytes, lane 0 first (little endian). Out-of-range accesses
  // return OutOfRange and touch nothing.
  Status ReadHbm(uint64_t line, void* data, uint64_t lines) const;
  Status WriteHbm(uint64_t line, const void* data, uint64_t lines);
  Status ReadVmem(uint64_t line, void* data, uint64_t lines) const;
  Status WriteVmem(uint64_t line, const void* data, uint64_t lines);
  // Scalar register `index` (for tests and debugging).
  uint32_t sreg(unsigned index) const { return index < sregs_.size() ? sregs_[index] : 0; }
  // Number of HBM pages allocated so far (sparse storage).
  size_t hbm_pages_allocated() const;

 private:
  // kIci is the link engine (RDMA); profiles and the RTL's issue trace count it as DMA.
  enum UnitIndex { kDma = 0, kMxu = 1, kVpu = 2, kIci = 3, kNumUnits = 4 };
  // The IRQ_STATUS / IRQ_ENABLE bits that exist.
  static constexpr uint32_t kIrqMask = csr::IRQ_STATUS_CORE_DONE | csr::IRQ_STATUS_CORE_ERROR |
                                       csr::IRQ_STATUS_HDMA_DONE | csr::IRQ_STATUS_HDMA_ERROR |
                                       csr::IRQ_STATUS_SEM_POST;

  void StepCore();
  void Issue(uint64_t word);
  // Records the error of the instruction at pc_ and lets the units drain (RTL: StDrain); the core stops
  // with ERROR when they are idle or the watchdog expires.
  void RaiseCoreError(uint32_t code);
  // SEMWAIT on a zero semaphore: sleep until a post or the watchdog; WakeFromSemaphore ends the sleep.
  void BlockOnSemaphore();
  void WakeFromSemaphore(uint64_t wake);
  void IncrementSemaphore(uint32_t index);  // saturating, from the host or the core
  void FinishCoreError();
  void StopCore();
  // Stalls the sequencer until `ready`, waiting for `unit` (kNumUnits: none, SLD's VMEM read); returns
  // false if the watchdog fired instead.
  bool WaitUntil(uint64_t ready, UnitIndex unit);
  // Profiling: charges the cycles since the last issue to the instruction at pc_ (it issues now).
  void ProfileIssue();
  void ProfileInterval(UnitIndex unit, uint64_t begin, uint64_t end, uint32_t lines, uint32_t hbm_line = 0,
                       uint32_t stride = 0);
  bool CheckVmemRange(uint64_t base, uint64_t count);

  void ExecuteDma(bool load, uint32_t hbm_base, uint32_t vmem_base, uint32_t count, uint32_t stride);
  void ExecuteMxuLoadWeights(uint32_t vmem_base, bool transpose);
  void ExecuteMxuMatmul(uint32_t lhs, uint32_t dst, uint32_t count, bool accumulate);
  void ExecuteVector(uint8_t opcode, uint8_t flags, uint32_t dst, uint32_t src1, uint32_t src2, uint32_t count,
                     uint32_t imm);

  void DoorBell();
  void SoftReset();
  void StartHostDma(uint32_t ctrl);
  void CompleteHostDma();
  uint64_t CounterCycles() const;

  uint32_t* VmemLine(uint64_t line) { return &vmem_[line * config_.lanes]; }

  const ChipConfig& config_;
  const Timing& timing_;
  const uint32_t core_id_;
  const uint32_t chip_id_;
  MxuKernel mxu_kernel_ = MxuKernel::kHostFloat;
  MxuIsa mxu_isa_ = BestMxuIsa();
  uint64_t cycle_ = 0;

  // Memories.
  std::vector<uint64_t> imem_;
  std::vector<uint32_t> vmem_;
  std::unique_ptr<SparseMemory> hbm_;
  std::unique_ptr<HbmTwin> hbm_twin_;  // HBM timing (config.hbm_timing); null: the fixed latency
  HostMemory* host_;
  CoreNetwork* network_;

  // An MXU weight buffer, N x N, row k = input lane, column n = output lane: the fp32 value of each bf16
  // weight (the matmul kernel works on floats), the same weights as bf16 (for kNumericsLibrary) and the
  // exponent range of the values (the kernel's test for its fused path).
  struct MxuWeights {
    std::vector<float> values;
    std::vector<uint16_t> bf16;
    MxuExponentRange range;
  };
  MxuWeights mxu_front_, mxu_back_;
  // MXU_MM scratch: a chunk of LHS rows rounded to bf16 and their results (one row for kNumericsLibrary).
  uint32_t mxu_chunk_rows_;
  std::vector<float> mxu_lhs_;
  std::vector<uint16_t> mxu_lhs_bf16_;
  std::vector<uint32_t> mxu_out_;

  // Sequencer. Reset() returns each member from here on to the value it is initialized with.
  std::array<uint32_t, 16> sregs_{};
  bool core_running_ = false;
  uint32_t pc_ = 0;
  uint64_t core_time_ = 0;  // when the sequencer can issue its next instruction
  uint64_t last_issue_ = 0;        // cycle of the last issue (the watchdog counts from it)
  bool watchdog_expired_ = false;  // the stall at pc_ outlasts WATCHDOG_LIMIT; the core stops at core_time_
  bool draining_ = false;          // an error was raised; the core stops with ERROR at core_time_
  bool sld_read_ = false;          // the SLD at pc_ read its VMEM line in the previous cycle
  // SEMWAIT at pc_ found its semaphore zero in cycle sem_wait_start_: the core sleeps until a host post
  // (MmioWrite wakes it) or the watchdog.
  bool sem_blocked_ = false;
  uint64_t sem_wait_start_ = 0;
  std::array<uint64_t, kNumUnits> unit_busy_until_{};
  // DMA queue: when the request side takes the next instruction, when each unfinished instruction is
  // done (oldest first) and when the last load is done. Each is bounded by unit_busy_until_[kDma].
  uint64_t dma_accept_at_ = 0, dma_last_load_done_ = 0;
  std::deque<uint64_t> dma_done_at_;
  // With the HBM twin, beside each dma_done_at_: the twin's stream and what follows its last answer, so
  // that a later DMA whose requests delay that answer (they share the controllers' queues and banks)
  // moves the done time (kNoStream: the fixed latency).
  static constexpr uint64_t kNoStream = ~uint64_t{0};
  struct DmaStream {
    uint64_t stream = kNoStream;
    uint64_t after_answer = 0;
    bool load = false;
  };
  std::deque<DmaStream> dma_streams_;
  // Link engine: when it takes the next RDMA to ici_core_, the destination of the lines still
  // unacknowledged (another destination waits for unit_busy_until_[kIci], every acknowledgement).
  uint64_t ici_accept_at_ = 0;
  uint32_t ici_core_ = 0;
  // MXU overlap: when an MXU_LW / MXU_MM can issue, when the rows of weight bank b have left the array,
  // and which bank is front. Each is bounded by unit_busy_until_[kMxu] (a flush clears them all).
  uint64_t mxu_lw_ready_ = 0, mxu_mm_ready_ = 0;
  std::array<uint64_t, 2> mxu_bank_free_{};
  int mxu_front_bank_ = 0;

  // CSRs.
  uint32_t start_pc_ = 0;
  bool halted_ = false, error_ = false;
  uint32_t error_code_ = 0, error_pc_ = 0;
  uint32_t irq_status_ = 0, irq_enable_ = kIrqMask;
  std::array<uint32_t, tpu::csr::SEMS> sems_{};  // semaphores (SEM_COUNTS, SEM_COUNTS_HI)
  static constexpr uint32_t kWatchdogLimitAtReset = 1000000;
  uint32_t watchdog_limit_ = kWatchdogLimitAtReset;

  // Perf counters (cleared by the doorbell).
  uint64_t run_start_ = 0, run_stop_ = 0;
  uint64_t mxu_busy_ = 0;
  uint32_t instret_ = 0, dma_lines_ = 0, vpu_busy_ = 0, stall_cycles_ = 0, feed_stall_ = 0;

  // Host DMA engine.
  uint32_t hdma_host_lo_ = 0, hdma_host_hi_ = 0, hdma_hbm_line_ = 0, hdma_lines_ = 0;
  uint32_t hdma_status_ = 0;
  bool hdma_busy_ = false, hdma_to_host_ = false;
  uint64_t hdma_done_at_ = 0;
  uint64_t hdma_host_ = 0, hdma_hbm_ = 0, hdma_count_ = 0;  // latched at start

  // Profiling (null: off): stall cycles of the instruction at pc_ by the unit waited for, until it issues.
  ExecutionProfile* profile_ = nullptr;
  std::array<uint64_t, kNumUnits> pending_stall_on_{};
};

}  // namespace tpu::model
