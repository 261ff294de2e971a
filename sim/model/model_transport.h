// ModelTransport: the Transport of the C++ reference model (--backend=model). It owns a ChipModel and
// lets the driver talk to it exactly as it talks to the SystemC platform around the verilated chip.
#pragma once

#include <cstdint>
#include <string>

#include "sim/model/chip_model.h"
#include "sw/driver/transport.h"

namespace tpu::model {

class ModelTransport : public tpu::Transport {
 public:
  // Device cycles one MMIO access takes, as on the chip's MMIO port (request, then the response the next
  // cycle). Advancing time on every access means a driver that polls STATUS sees the device progress.
  static constexpr uint64_t kMmioAccessCycles = 2;

  explicit ModelTransport(const ChipConfig& config = ChipConfig::Build()) : model_(config) {}

  std::string name() const override { return "model"; }
  uint32_t MmioRead(uint32_t offset) override;
  void MmioWrite(uint32_t offset, uint32_t value) override;
  uint64_t HostMemoryBytes() const override { return model_.config().host_mem_bytes; }
  // Out-of-range host accesses throw std::out_of_range (the interface has no error channel; the driver
  // checks against HostMemoryBytes()).
  void HostWrite(uint64_t address, const void* data, size_t bytes) override;
  void HostRead(uint64_t address, void* data, size_t bytes) override;
  uint32_t CoresPerChip() const override { return model_.config().num_cores; }
  bool WaitForInterruptOn(uint64_t lines, uint64_t timeout_cycles) override;
  void Advance(uint64_t cycles) override { model_.Step(cycles); }
  uint64_t Cycles() const override { return model_.cycle(); }
  bool SetProfile(ExecutionProfile* profile) override {
    model_.set_profile(profile);
    return true;
  }

  // The model itself, for backdoor access in tests and tools.
  ChipModel& model() { return model_; }
  const ChipModel& model() const { return model_; }

 private:
  ChipModel model_;
};

}  // namespace tpu::model
