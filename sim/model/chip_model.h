// ChipModel: the fast ISA-level reference model of one tpusim chip: config.num_cores cores (CoreModel,
// which says what is and is not modelled), each with its own MMIO window at core << CORE_SHIFT,
// interrupt line and HBM, the host memory their host DMA engines share, and the core network their RDMA
// uses (a line lands at issue; the destination's semaphore is posted at the RDMA's done time, as an event).
// The chip steps its cores' events and the posts in time order (ties: posts first, then lower core
// first), so runs are deterministic. A chip alone is a board of one chip; on a board of several
// (BoardModel), the board is the cores' network and steps every chip's events in time order.
//
// Time only advances in Run/Step/RunUntilIrq; MMIO accesses and backdoor accesses take no device time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <queue>
#include <tuple>
#include <vector>

#include "sim/model/chip_config.h"
#include "sim/model/core_model.h"
#include "sim/model/host_memory.h"

namespace tpu::model {

class ChipModel : private CoreNetwork {
 public:
  // `chip_id` is read as CFG_CHIP_ID. Host memory of config.host_mem_bytes is the chip's own unless
  // `host` (shared with other chips, outliving this one) is given. The cores' RDMA reaches the cores of
  // `board` (outliving this chip), or of this chip alone when it is null.
  explicit ChipModel(const ChipConfig& config, uint32_t chip_id = 0, HostMemory* host = nullptr,
                     CoreNetwork* board = nullptr);

  const ChipConfig& config() const { return config_; }
  // Power-on reset: the chip as constructed (every core's CoreModel::Reset, no semaphore post on its way,
  // cycle 0, and the host memory zero when it is the chip's own; a shared one is left alone). The timing
  // and the cores' settings stay. Cheaper than constructing a chip: the memories are cleared in place.
  void Reset();
  // The unit timing of every core.
  Timing& timing() { return timing_; }
  void set_mxu_kernel(MxuKernel kernel);
  void set_mxu_isa(MxuIsa isa);
  // Profiles the runs of `core` (see CoreModel::set_profile).
  void set_profile(ExecutionProfile* profile, uint32_t core = 0) { cores_.at(core)->set_profile(profile); }

  // The chip's MMIO port: core c's CSRs and IMEM window at c << CORE_SHIFT. Offsets of a core the chip
  // does not have read 0 and ignore writes, as the RTL does.
  uint32_t MmioRead(uint32_t offset);
  void MmioWrite(uint32_t offset, uint32_t value);

  // The interrupt lines, core c at bit c, and whether any is high.
  uint32_t IrqLines() const;
  bool Irq() const { return IrqLines() != 0; }

  // Advances until every core and host DMA engine is idle or `max_cycles` elapse. Returns the cycles
  // advanced (0 when already idle).
  uint64_t Run(uint64_t max_cycles);
  // Advances exactly `cycles` cycles (idle time passes too).
  void Step(uint64_t cycles);
  // Advances until one of the interrupt lines in `lines` is high or `max_cycles` elapse (idle time passes
  // too). Returns the cycles advanced.
  uint64_t RunUntilIrq(uint64_t max_cycles, uint32_t lines = ~0u);

  // Device clock cycles since construction.
  uint64_t cycle() const { return cycle_; }

  // The chip's events, for the board that steps several chips in time order: when the next happens
  // (CoreModel::kNever: none will by itself), running it at `now` (>= that time and the chip's cycle),
  // the cycle the last run of a core ended (an idle chip's time), and moving idle time forward.
  uint64_t NextEventAt() const;
  void RunNextEvent(uint64_t now);
  uint64_t IdleStop() const;
  void SetTime(uint64_t cycle);
  // Semaphore `semaphore` of this chip's core `core` is posted in cycle `cycle` (>= the chip's cycle).
  void QueuePost(uint32_t core, uint32_t semaphore, uint64_t cycle) { posts_.emplace(cycle, core, semaphore); }

  size_t num_cores() const { return cores_.size(); }
  CoreModel& core(size_t index) { return *cores_.at(index); }
  const CoreModel& core(size_t index) const { return *cores_.at(index); }
  HostMemory& host_memory() { return *host_; }

  // Core 0's state and backdoors (lines of its HBM and VMEM), for single-core programs and tests.
  bool CoreBusy() const { return core(0).CoreBusy(); }
  bool HostDmaBusy() const { return core(0).HostDmaBusy(); }
  Status ReadHbm(uint64_t line, void* data, uint64_t lines) const { return core(0).ReadHbm(line, data, lines); }
  Status WriteHbm(uint64_t line, const void* data, uint64_t lines) { return core(0).WriteHbm(line, data, lines); }
  Status ReadVmem(uint64_t line, void* data, uint64_t lines) const { return core(0).ReadVmem(line, data, lines); }
  Status WriteVmem(uint64_t line, const void* data, uint64_t lines) { return core(0).WriteVmem(line, data, lines); }
  uint32_t sreg(unsigned index) const { return core(0).sreg(index); }
  size_t hbm_pages_allocated() const { return core(0).hbm_pages_allocated(); }
  // The host memory's backdoor (bytes) and its test error range (HostMemory).
  Status HostRead(uint64_t address, void* data, uint64_t bytes) const { return host_->Read(address, data, bytes); }
  Status HostWrite(uint64_t address, const void* data, uint64_t bytes) { return host_->Write(address, data, bytes); }
  void SetHostBusErrorRange(uint64_t begin, uint64_t end) { host_->SetBusErrorRange(begin, end); }

 private:
  enum class StopWhen { kIdle, kIrq, kNever };
  // CoreNetwork of a chip alone: its cores.
  uint32_t Cores() const override { return static_cast<uint32_t>(cores_.size()); }
  CoreModel& Core(uint32_t index) override { return *cores_.at(index); }
  void PostAt(uint32_t core, uint32_t semaphore, uint64_t cycle) override { QueuePost(core, semaphore, cycle); }
  uint32_t Chips() const override { return 1; }
  Transit Carry(uint32_t from, uint32_t to, uint64_t issue, uint64_t lines) override;

  uint64_t Advance(uint64_t max_cycles, StopWhen stop, uint32_t irq_lines);
  // The core a chip MMIO offset names (null: none), turning `offset` into the offset within that core.
  CoreModel* CoreAt(uint32_t* offset);

  ChipConfig config_;
  Timing timing_;
  std::unique_ptr<HostMemory> own_host_;
  HostMemory* host_;
  std::vector<std::unique_ptr<CoreModel>> cores_;
  // Semaphore posts on their way: (cycle, core, semaphore), earliest first.
  std::priority_queue<std::tuple<uint64_t, uint32_t, uint32_t>, std::vector<std::tuple<uint64_t, uint32_t, uint32_t>>,
                      std::greater<>>
      posts_;
  uint64_t cycle_ = 0;
};

}  // namespace tpu::model
