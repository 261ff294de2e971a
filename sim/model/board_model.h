// BoardModel: the reference model of a board of 1, 2 or 4 chips (sim/model/ici.h): ChipModels with chip
// ids 0..N-1 sharing one host memory, their cores numbered chip-major as board cores, and the ICI links
// between the chips on a ring. The board is the cores' network: an RDMA reaches every board core; lines
// to another chip's core cross the links hop by hop. As on a chip, the lines land at issue (bit-exact) and
// the time is an estimate: each hop's link direction is busy while it serializes the lines at its
// bandwidth (shared, in issue order, by every RDMA crossing it) and delivers each line its latency later;
// the destination's semaphore is posted when the last line is written, and the sender is done when the
// acknowledgement of that line is back (one latency per hop). The board steps every chip's events in
// time order (ties: lower chip first), so runs are deterministic.
//
// Time only advances in Run/Step/RunUntilIrq; MMIO accesses and backdoor accesses take no device time.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "sim/model/chip_config.h"
#include "sim/model/chip_model.h"
#include "sim/model/core_model.h"
#include "sim/model/host_memory.h"
#include "sim/model/ici.h"

namespace tpu::model {

class BoardModel : private CoreNetwork {
 public:
  // `chips` must pass ici::CheckBoardChips and `link` ici::CheckLink (std::invalid_argument otherwise).
  explicit BoardModel(const ChipConfig& config, uint32_t chips = 1, const ici::LinkConfig& link = {});

  const ChipConfig& config() const { return config_; }
  const ici::LinkConfig& link() const { return link_; }
  uint32_t num_chips() const { return static_cast<uint32_t>(chips_.size()); }
  uint32_t num_cores() const { return num_chips() * config_.num_cores; }
  ChipModel& chip(uint32_t index) { return *chips_.at(index); }
  const ChipModel& chip(uint32_t index) const { return *chips_.at(index); }
  // Board core `index` (chip index / cores per chip, core index % cores per chip).
  CoreModel& core(uint32_t index) { return chip(index / config_.num_cores).core(index % config_.num_cores); }
  HostMemory& host_memory() { return host_; }

  void set_mxu_kernel(MxuKernel kernel);
  void set_mxu_isa(MxuIsa isa);

  // The board's MMIO space: chip m's MMIO port at m << CHIP_SHIFT (ChipModel::MmioRead). Offsets of a chip
  // the board does not have read 0 and ignore writes.
  uint32_t MmioRead(uint32_t offset);
  void MmioWrite(uint32_t offset, uint32_t value);

  // The interrupt lines, board core b at bit b.
  uint64_t IrqLines() const;

  // As ChipModel's, over every chip.
  uint64_t Run(uint64_t max_cycles);
  void Step(uint64_t cycles);
  uint64_t RunUntilIrq(uint64_t max_cycles, uint64_t lines = ~uint64_t{0});
  uint64_t cycle() const { return cycle_; }

 private:
  enum class StopWhen { kIdle, kIrq, kNever };

  // CoreNetwork: the board's cores and links.
  uint32_t Cores() const override { return num_cores(); }
  CoreModel& Core(uint32_t index) override { return core(index); }
  void PostAt(uint32_t core, uint32_t semaphore, uint64_t cycle) override;
  uint32_t Chips() const override { return num_chips(); }
  Transit Carry(uint32_t from, uint32_t to, uint64_t issue, uint64_t lines) override;

  uint64_t Advance(uint64_t max_cycles, StopWhen stop, uint64_t irq_lines);

  ChipConfig config_;
  ici::LinkConfig link_;
  HostMemory host_;
  std::vector<std::unique_ptr<ChipModel>> chips_;
  // When each link direction (chip, port it leaves through) has serialized what it was given: in units of
  // 1/bytes_per_cycle cycles, so a line of B bytes takes B units.
  std::vector<std::array<uint64_t, ici::kPorts>> link_free_;
  uint64_t cycle_ = 0;
};

}  // namespace tpu::model
