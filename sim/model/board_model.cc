#include "sim/model/board_model.h"

#include <algorithm>
#include <stdexcept>

#include "tpu_csr.h"

namespace tpu::model {

BoardModel::BoardModel(const ChipConfig& config, uint32_t chips, const ici::LinkConfig& link)
    : config_(config), link_(link), host_(config.host_mem_bytes) {
  for (const Status& status : {ici::CheckBoardChips(chips), ici::CheckLink(link)}) {
    if (!status.ok()) throw std::invalid_argument(status.message());
  }
  for (uint32_t chip = 0; chip < chips; ++chip)
    chips_.push_back(std::make_unique<ChipModel>(config_, chip, &host_, static_cast<CoreNetwork*>(this)));
  link_free_.resize(chips);
}

void BoardModel::set_mxu_kernel(MxuKernel kernel) {
  for (auto& chip : chips_) chip->set_mxu_kernel(kernel);
}

void BoardModel::set_mxu_isa(MxuIsa isa) {
  for (auto& chip : chips_) chip->set_mxu_isa(isa);
}

uint32_t BoardModel::MmioRead(uint32_t offset) {
  const uint32_t index = offset >> csr::CHIP_SHIFT;
  return index < chips_.size() ? chips_[index]->MmioRead(offset & ((1u << csr::CHIP_SHIFT) - 1)) : 0;
}

void BoardModel::MmioWrite(uint32_t offset, uint32_t value) {
  const uint32_t index = offset >> csr::CHIP_SHIFT;
  if (index < chips_.size()) chips_[index]->MmioWrite(offset & ((1u << csr::CHIP_SHIFT) - 1), value);
}

uint64_t BoardModel::IrqLines() const {
  uint64_t lines = 0;
  for (size_t chip = 0; chip < chips_.size(); ++chip) lines |= uint64_t{chips_[chip]->IrqLines()} << (chip * config_.num_cores);
  return lines;
}

void BoardModel::PostAt(uint32_t core, uint32_t semaphore, uint64_t cycle) {
  chip(core / config_.num_cores).QueuePost(core % config_.num_cores, semaphore, cycle);
}

CoreNetwork::Transit BoardModel::Carry(uint32_t from, uint32_t to, uint64_t issue, uint64_t lines) {
  const uint32_t chips = num_chips();
  const uint32_t to_chip = to / config_.num_cores;
  uint32_t chip = from / config_.num_cores;
  if (chip == to_chip) return {issue + lines, 0};  // the chip's own network: one line a cycle
  // A POST alone still crosses as one packet.
  const uint64_t packets = std::max<uint64_t>(lines, 1);
  const uint64_t unit = link_.bytes_per_cycle;  // units per cycle
  const uint64_t line_units = config_.line_bytes();
  const uint64_t latency = uint64_t{link_.latency_cycles} * unit;
  // When the first and the last line are ready to leave the current chip (in units).
  uint64_t first = (issue + 1) * unit;
  uint64_t last = (issue + packets) * unit;
  uint64_t hops = 0;
  for (; chip != to_chip; ++hops) {
    const ici::Port port = ici::Route(chip, to_chip, chips);
    uint64_t& free = link_free_[chip][port];
    const uint64_t start = std::max(first, free);
    // The link sends no faster than its bandwidth and no line before it has arrived.
    const uint64_t end = std::max(start + packets * line_units, last + line_units);
    free = end;
    first = start + line_units + latency;
    last = end + latency;
    chip = ici::Neighbour(chip, port, chips);
  }
  return {(last + unit - 1) / unit, hops * link_.latency_cycles};
}

uint64_t BoardModel::Run(uint64_t max_cycles) { return Advance(max_cycles, StopWhen::kIdle, 0); }
void BoardModel::Step(uint64_t cycles) { Advance(cycles, StopWhen::kNever, 0); }
uint64_t BoardModel::RunUntilIrq(uint64_t max_cycles, uint64_t lines) {
  return Advance(max_cycles, StopWhen::kIrq, lines);
}

uint64_t BoardModel::Advance(uint64_t max_cycles, StopWhen stop, uint64_t irq_lines) {
  const uint64_t start = cycle_;
  const uint64_t end = max_cycles > CoreModel::kNever - start ? CoreModel::kNever : start + max_cycles;
  while (true) {
    if (stop == StopWhen::kIrq && (IrqLines() & irq_lines) != 0) break;
    ChipModel* next_chip = nullptr;
    uint64_t next = CoreModel::kNever;
    for (auto& chip : chips_) {
      const uint64_t at = chip->NextEventAt();
      if (at < next) {
        next = at;
        next_chip = chip.get();
      }
    }
    if (next_chip == nullptr) {  // nothing will happen by itself any more
      if (stop == StopWhen::kIdle) {
        for (const auto& chip : chips_) cycle_ = std::max(cycle_, std::min(chip->IdleStop(), end));
      } else {
        cycle_ = end;
      }
      break;
    }
    if (next > end) {
      cycle_ = end;
      break;
    }
    cycle_ = std::max(cycle_, next);
    next_chip->RunNextEvent(cycle_);
  }
  for (auto& chip : chips_) chip->SetTime(cycle_);
  return cycle_ - start;
}

}  // namespace tpu::model
