// Transport: the only thing the driver knows about the device underneath it. Two implementations exist:
// the SystemC platform around the verilated chip (sysc/rtl_transport.h, --backend=rtl) and the C++
// reference model (sim/model/model_transport.h, --backend=model). Nothing above this interface may
// know which one it is talking to.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "sw/driver/execution_profile.h"
#include "tpu_csr.h"

namespace tpu {

class Transport {
 public:
  virtual ~Transport() = default;

  // Name of the backend ("rtl" or "model"), for logs only.
  virtual std::string name() const = 0;

  // The board: Chips() chips of CoresPerChip() cores each. Board core c is core c % CoresPerChip() of chip
  // c / CoresPerChip(); its registers and IMEM window are at MmioOffset(c, offset) and its interrupt is
  // line c.
  virtual uint32_t Chips() const { return 1; }
  virtual uint32_t CoresPerChip() const = 0;
  uint32_t Cores() const { return Chips() * CoresPerChip(); }
  uint32_t MmioOffset(uint32_t core, uint32_t offset) const {
    return (core / CoresPerChip()) << csr::CHIP_SHIFT | (core % CoresPerChip()) << csr::CORE_SHIFT | offset;
  }

  // One 32-bit access to the board's MMIO space: chip m's MMIO port at m << CHIP_SHIFT (docs/csr.md).
  virtual uint32_t MmioRead(uint32_t offset) = 0;
  virtual void MmioWrite(uint32_t offset, uint32_t value) = 0;

  // Host memory that the device's host DMA engine reads and writes (bytes [0, HostMemoryBytes())).
  // These are CPU-side accesses: they take no device time.
  virtual uint64_t HostMemoryBytes() const = 0;
  virtual void HostWrite(uint64_t address, const void* data, size_t bytes) = 0;
  virtual void HostRead(uint64_t address, void* data, size_t bytes) = 0;

  // Lets the device run until one of the interrupt lines in the mask `lines` (bit c: board core c) is high
  // or `timeout_cycles` device clock cycles have passed. Returns true if one of them is high on return.
  virtual bool WaitForInterruptOn(uint64_t lines, uint64_t timeout_cycles) = 0;
  bool WaitForInterrupt(uint64_t timeout_cycles) { return WaitForInterruptOn(~uint64_t{0}, timeout_cycles); }

  // Lets the device run for exactly `cycles` device clock cycles, interrupt or not (time the host spends
  // elsewhere, e.g. on the host link).
  virtual void Advance(uint64_t cycles) = 0;

  // Device clock cycles elapsed since the transport was created.
  virtual uint64_t Cycles() const = 0;

  // The chip's issue trace: while `profile` is set, every run (doorbell) clears it and fills it
  // (sw/driver/execution_profile.h); nullptr stops profiling. Returns false, and keeps nothing, if the
  // backend cannot trace.
  virtual bool SetProfile(ExecutionProfile* profile) {
    (void)profile;
    return false;
  }
};

}  // namespace tpu
