// Driver: the register-level protocol of a tpusim chip (docs/csr.md), over any Transport.
//
// The driver owns the CSR sequences: reset and recovery, discovery of the configuration, loading
// instruction memory, launching and waiting for the core, host DMA between host memory and HBM, and the
// performance counters. It never knows which backend (RTL or reference model) is underneath.
//
// Every failure is a Status with an XLA-style code; after any error the device is left usable (a core
// error is cleared by the next doorbell, a timeout resets the device).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sw/base/status.h"
#include "sw/driver/transport.h"

namespace tpu {

// The configuration a chip reports in its ID/CFG_* registers.
struct DeviceInfo {
  uint32_t version = 0;
  uint32_t lanes = 0;        // lanes per line = MXU size N
  uint32_t vmem_lines = 0;   // per core
  uint32_t imem_words = 0;   // per core
  uint32_t hbm_lines = 0;
  uint32_t num_cores = 0;
  uint32_t sregs = 0;
  uint32_t hbm_channels = 0;  // 32 bytes per cycle each at the pin peak
  uint32_t line_bytes = 0;   // lanes * 4
  uint64_t hbm_bytes() const { return uint64_t(hbm_lines) * line_bytes; }
};

// The core's performance counters of the last run (cleared by the doorbell).
struct DeviceCounters {
  uint64_t cycles = 0;           // doorbell to halt or error
  uint64_t mxu_busy_cycles = 0;  // cycles the MXU accepted an LHS row
  uint64_t instructions = 0;     // instructions issued
  uint64_t dma_lines = 0;        // lines moved by the core's DMA unit
  uint64_t vpu_busy_cycles = 0;  // cycles the VPU wrote a line
  uint64_t stall_cycles = 0;     // cycles the sequencer waited on a unit, a SYNC or a host semaphore
  uint64_t feed_stall_cycles = 0;  // of those, cycles SEMWAIT waited for the host (an empty infeed)
};

// The host link (PCIe-class): what a host transfer and a launch cost in device time on top of the chip's
// own host DMA engine, which moves a line per cycle once the data is at the chip. While the link is busy
// the device runs on (the driver lets it advance), so work the device has queued overlaps the transfer.
// The defaults and their sources are in docs/architecture.md ("Host link").
struct HostLinkModel {
  double bytes_per_cycle = 0;            // link bandwidth; 0: no link model at all
  uint64_t transfer_latency_cycles = 0;  // per transfer: descriptor, doorbell and completion round trip
  uint64_t launch_latency_cycles = 0;    // per launch: the runtime's enqueue, doorbell, completion interrupt
  // Device cycles one transfer of `bytes` bytes occupies the link.
  uint64_t TransferCycles(uint64_t bytes) const;
  // PCIe 3.0 x16 at the 1 GHz device clock: 12 bytes per cycle, 1 us per transfer, 10 us per launch.
  static HostLinkModel PcieGen3x16();
};

// What ended a wait on a running program (Driver::WaitForRunEvent).
enum class RunEvent { kCompleted, kSemaphorePosted };

class Driver {
 public:
  // Cycles the host DMA engine may take per line before the driver gives up (plus a fixed allowance).
  static constexpr uint64_t kHostDmaCyclesPerLine = 1000;
  static constexpr uint64_t kHostDmaFixedCycles = 100000;

  // The driver of core `core` of the board (chip core / cores-per-chip, core core % cores-per-chip: its
  // registers at MmioOffset(core), its interrupt line `core`). `transport` must outlive the driver.
  explicit Driver(Transport& transport, uint32_t core = 0) : transport_(transport), core_(core) {}

  Transport& transport() { return transport_; }
  uint32_t core() const { return core_; }

  // Aborts whatever the chip is doing (SOFT_RESET), clears and re-enables the interrupts.
  // Memories keep their contents.
  Status Reset();

  // Reads ID/VERSION/CFG_*. FailedPrecondition "no tpusim device" when the ID is wrong.
  StatusOr<DeviceInfo> Discover();
  bool discovered() const { return discovered_; }
  const DeviceInfo& info() const { return info_; }

  // Writes `code` into IMEM starting at word `first_word` through the IMEM window.
  // ResourceExhausted when it does not fit, FailedPrecondition while the core is busy.
  Status LoadProgram(const std::vector<uint64_t>& code, uint32_t first_word = 0);
  // Reads `count` IMEM words back (for verification and debugging).
  StatusOr<std::vector<uint64_t>> ReadProgram(uint32_t first_word, uint32_t count);

  // Sets the watchdog limit (cycles without an issued instruction; 0 disables it).
  Status SetWatchdogLimit(uint32_t cycles);
  uint32_t WatchdogLimit();

  // Rings the doorbell: the core starts at `start_pc`. FailedPrecondition if it is still busy. The host
  // link's launch latency is charged first unless `charge_latency` is false: the devices of one
  // replicated execution are one enqueue, their doorbells go out together.
  Status Launch(uint32_t start_pc = 0, bool charge_latency = true);

  // The host link every later transfer and launch is charged for (default: none).
  void set_host_link(const HostLinkModel& link) { host_link_ = link; }
  const HostLinkModel& host_link() const { return host_link_; }

  // Host semaphores (docs/csr.md): the counts (SEM_COUNTS, one per semaphore), a post, a take, a clear.
  std::vector<uint32_t> ReadSemaphores();
  void PostSemaphore(uint32_t index);
  void TakeSemaphore(uint32_t index);
  void ClearSemaphores();

  // Lets the device run until the core halts (OK), stops with an error (a typed Status naming the error
  // and its pc), or `timeout_cycles` device cycles pass (DeadlineExceeded; the device is reset).
  // Semaphore posts on the way are ignored.
  // `progress`, if set, is called with the cycles waited so far every `progress_cycles` device cycles.
  using Progress = std::function<void(uint64_t cycles)>;
  Status WaitForCompletion(uint64_t timeout_cycles, const Progress& progress = nullptr,
                           uint64_t progress_cycles = uint64_t{1} << 20);
  // As WaitForCompletion, but also returns (kSemaphorePosted) when the running program posts a host
  // semaphore; the core then still runs. A completion that comes with a post reports kCompleted.
  StatusOr<RunEvent> WaitForRunEvent(uint64_t timeout_cycles, const Progress& progress = nullptr,
                                     uint64_t progress_cycles = uint64_t{1} << 20);


  // Host DMA: copies `bytes` bytes to HBM starting at line `hbm_line`, through host memory. A partial last
  // line is padded with zeros. Chunked when larger than host memory.
  Status CopyToHbm(const void* data, size_t bytes, uint32_t hbm_line);
  Status CopyToHbm(const std::vector<uint8_t>& data, uint32_t hbm_line) {
    return CopyToHbm(data.data(), data.size(), hbm_line);
  }
  // Copies `lines` HBM lines starting at `hbm_line` to the host.
  StatusOr<std::vector<uint8_t>> CopyFromHbm(uint32_t hbm_line, uint32_t lines);
  Status CopyFromHbm(uint32_t hbm_line, uint32_t lines, void* out);

  // Reads the performance counters of the last run.
  DeviceCounters ReadCounters();
  // Whether the core is still running its program (STATUS.BUSY), asked without waiting.
  bool CoreBusy();

  // Limits the host memory the driver stages host DMA through (default: all of it), e.g. to exercise
  // chunking. Rounded down to whole lines; at least one line is used.
  void SetStagingLimit(uint64_t bytes) { staging_limit_bytes_ = bytes; }

 private:
  Status RequireDiscovered() const;
  uint64_t Read64(uint32_t lo_offset);
  // Waits until one of `wanted` IRQ_STATUS bits is set; returns them (and clears them), or
  // DeadlineExceeded after `timeout_cycles`. Unrelated pending bits are cleared so the line can drop.
  StatusOr<uint32_t> WaitForIrq(uint32_t wanted, uint64_t timeout_cycles, const Progress& progress = nullptr,
                                uint64_t progress_cycles = 0);
  // One host DMA of `lines` lines between the staging area and HBM line `hbm_line`.
  Status RunHostDma(uint32_t hbm_line, uint32_t lines, bool to_host);
  // The host memory staging area of this core: its first byte, its size and its lines.
  uint64_t StagingBase() const;
  uint64_t StagingBytes() const;
  uint64_t StagingLines() const;
  // Offset of this core's register `offset` on the transport; this core's interrupt line.
  uint32_t Reg(uint32_t offset) const { return transport_.MmioOffset(core_, offset); }
  uint64_t irq_line() const { return uint64_t{1} << core_; }

  Transport& transport_;
  const uint32_t core_;
  DeviceInfo info_;
  bool discovered_ = false;
  uint64_t staging_limit_bytes_ = UINT64_MAX;
  HostLinkModel host_link_;
  // Interrupt bits seen (and cleared in IRQ_STATUS) while waiting for other ones: a host DMA can finish
  // while the core runs and vice versa; neither completion may be lost.
  uint32_t latched_irqs_ = 0;
};

// The Status for a core error code (ERROR_CODE) at `pc`.
Status CoreErrorStatus(uint32_t error_code, uint32_t pc);

// Human-readable one-line summary, e.g. "lanes=8 vmem_lines=8192 ...".
std::string ToString(const DeviceInfo& info);

}  // namespace tpu
