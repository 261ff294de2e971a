#include "sim/model/chip_model.h"

#include <algorithm>

#include "tpu_csr.h"

namespace tpu::model {

ChipModel::ChipModel(const ChipConfig& config, uint32_t chip_id, HostMemory* host, CoreNetwork* board)
    : config_(config),
      own_host_(host == nullptr ? std::make_unique<HostMemory>(config.host_mem_bytes) : nullptr),
      host_(host == nullptr ? own_host_.get() : host) {
  CoreNetwork* network = board != nullptr ? board : static_cast<CoreNetwork*>(this);
  for (uint32_t core = 0; core < config_.num_cores; ++core)
    cores_.push_back(std::make_unique<CoreModel>(config_, timing_, core, chip_id, host_, network));
}

void ChipModel::Reset() {
  if (own_host_ != nullptr) own_host_->Reset();
  for (auto& core : cores_) core->Reset();
  posts_ = {};
  cycle_ = 0;
}

void ChipModel::set_mxu_kernel(MxuKernel kernel) {
  for (auto& core : cores_) core->set_mxu_kernel(kernel);
}

void ChipModel::set_mxu_isa(MxuIsa isa) {
  for (auto& core : cores_) core->set_mxu_isa(isa);
}

CoreModel* ChipModel::CoreAt(uint32_t* offset) {
  const uint32_t index = *offset >> csr::CORE_SHIFT;
  *offset &= (1u << csr::CORE_SHIFT) - 1;
  return index < cores_.size() ? cores_[index].get() : nullptr;
}

uint32_t ChipModel::MmioRead(uint32_t offset) {
  CoreModel* core = CoreAt(&offset);
  return core == nullptr ? 0 : core->MmioRead(offset);
}

void ChipModel::MmioWrite(uint32_t offset, uint32_t value) {
  CoreModel* core = CoreAt(&offset);
  if (core != nullptr) core->MmioWrite(offset, value);
}

uint32_t ChipModel::IrqLines() const {
  uint32_t lines = 0;
  for (size_t c = 0; c < cores_.size(); ++c) lines |= uint32_t{cores_[c]->Irq()} << c;
  return lines;
}

CoreNetwork::Transit ChipModel::Carry(uint32_t, uint32_t, uint64_t issue, uint64_t lines) {
  return {issue + lines, 0};  // one line a cycle through the destination's arbiter
}

uint64_t ChipModel::Run(uint64_t max_cycles) { return Advance(max_cycles, StopWhen::kIdle, 0); }
void ChipModel::Step(uint64_t cycles) { Advance(cycles, StopWhen::kNever, 0); }
uint64_t ChipModel::RunUntilIrq(uint64_t max_cycles, uint32_t lines) {
  return Advance(max_cycles, StopWhen::kIrq, lines);
}

uint64_t ChipModel::NextEventAt() const {
  uint64_t next = posts_.empty() ? CoreModel::kNever : std::get<0>(posts_.top());
  for (const auto& core : cores_) next = std::min(next, core->NextEvent());
  return next;
}

void ChipModel::RunNextEvent(uint64_t now) {
  CoreModel* next_core = nullptr;
  uint64_t next = CoreModel::kNever;
  for (auto& core : cores_) {
    const uint64_t at = core->NextEvent();
    if (at < next) {
      next = at;
      next_core = core.get();
    }
  }
  cycle_ = std::max(cycle_, now);
  if (!posts_.empty() && std::get<0>(posts_.top()) <= next) {
    const auto [at, core, semaphore] = posts_.top();
    posts_.pop();
    cores_[core]->SetTime(cycle_);  // no core is ahead of the chip
    cores_[core]->PostSemaphore(semaphore, cycle_ + 1);
    return;
  }
  if (next_core != nullptr) next_core->RunEvent(cycle_);
}

uint64_t ChipModel::IdleStop() const {
  // A core became idle at the end of its last instruction (run_stop), which may be after the cycle that
  // instruction issued in.
  uint64_t stop = 0;
  for (const auto& core : cores_) stop = std::max(stop, core->run_stop());
  return stop;
}

void ChipModel::SetTime(uint64_t cycle) {
  cycle_ = cycle;
  for (auto& core : cores_) core->SetTime(cycle_);
}

uint64_t ChipModel::Advance(uint64_t max_cycles, StopWhen stop, uint32_t irq_lines) {
  const uint64_t start = cycle_;
  const uint64_t end = max_cycles > CoreModel::kNever - start ? CoreModel::kNever : start + max_cycles;
  while (true) {
    if (stop == StopWhen::kIrq && (IrqLines() & irq_lines) != 0) break;
    const uint64_t next = NextEventAt();
    if (next == CoreModel::kNever) {  // nothing will happen by itself any more
      cycle_ = stop == StopWhen::kIdle ? std::max(cycle_, std::min(IdleStop(), end)) : end;
      break;
    }
    if (next > end) {
      cycle_ = end;
      break;
    }
    RunNextEvent(std::max(cycle_, next));
  }
  SetTime(cycle_);
  return cycle_ - start;
}

}  // namespace tpu::model
