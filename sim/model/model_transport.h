// ModelTransport: the Transport of the C++ reference model (--backend=model). It owns a BoardModel of 1, 2
// or 4 chips and lets the driver talk to it exactly as it talks to the SystemC platform around the
// verilated chips.
#pragma once

#include <cstdint>
#include <string>

#include "sim/model/board_model.h"
#include "sim/model/chip_model.h"
#include "sw/driver/transport.h"

namespace tpu::model {

class ModelTransport : public tpu::Transport {
 public:
  // Device cycles one MMIO access takes, as through the platform's host bridge (sysc/host_bridge.cc): the
  // request is driven after the next clock edge, the chip samples it at the edge after that, and the
  // response is there one edge later. The model applies the access where the chip samples it. Advancing
  // time on every access means a driver that polls STATUS sees the device progress, and the cycles before
  // a program starts (which set the HBM refresh phase the program meets) are the platform's.
  static constexpr uint64_t kMmioSampleCycles = 2;
  static constexpr uint64_t kMmioAccessCycles = 3;

  // `chips` and `link` as BoardModel takes them (std::invalid_argument otherwise).
  explicit ModelTransport(const ChipConfig& config = ChipConfig::Build(), uint32_t chips = 1,
                          const ici::LinkConfig& link = {})
      : board_(config, chips, link) {}

  std::string name() const override { return "model"; }
  uint32_t MmioRead(uint32_t offset) override;
  void MmioWrite(uint32_t offset, uint32_t value) override;
  uint64_t HostMemoryBytes() const override { return board_.config().host_mem_bytes; }
  // Out-of-range host accesses throw std::out_of_range (the interface has no error channel; the driver
  // checks against HostMemoryBytes()).
  void HostWrite(uint64_t address, const void* data, size_t bytes) override;
  void HostRead(uint64_t address, void* data, size_t bytes) override;
  uint32_t Chips() const override { return board_.num_chips(); }
  uint32_t CoresPerChip() const override { return board_.config().num_cores; }
  bool WaitForInterruptOn(uint64_t lines, uint64_t timeout_cycles) override;
  void Advance(uint64_t cycles) override { board_.Step(cycles); }
  uint64_t Cycles() const override { return board_.cycle(); }
  // Profiles board core 0.
  bool SetProfile(ExecutionProfile* profile) override {
    board_.chip(0).set_profile(profile);
    return true;
  }

  // The model itself, for backdoor access in tests and tools: the board, and its chip 0.
  BoardModel& board() { return board_; }
  ChipModel& model() { return board_.chip(0); }
  const ChipModel& model() const { return board_.chip(0); }

 private:
  BoardModel board_;
};

}  // namespace tpu::model
