// Transport: the only thing the driver knows about the device underneath it. Two implementations exist:
// the SystemC platform around the verilated chip (sysc/rtl_transport.h, --backend=rtl) and the C++
// reference model (sim/model/model_transport.h, --backend=model). Nothing above this interface may
// know which one it is talking to.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "sw/driver/execution_profile.h"

namespace tpu {

class Transport {
 public:
  virtual ~Transport() = default;

  // Name of the backend ("rtl" or "model"), for logs only.
  virtual std::string name() const = 0;

  // One 32-bit access to the chip's MMIO port. `offset` is a byte offset (CSRs, IMEM window).
  virtual uint32_t MmioRead(uint32_t offset) = 0;
  virtual void MmioWrite(uint32_t offset, uint32_t value) = 0;

  // Host memory that the device's host DMA engine reads and writes (bytes [0, HostMemoryBytes())).
  // These are CPU-side accesses: they take no device time.
  virtual uint64_t HostMemoryBytes() const = 0;
  virtual void HostWrite(uint64_t address, const void* data, size_t bytes) = 0;
  virtual void HostRead(uint64_t address, void* data, size_t bytes) = 0;

  // Lets the device run until its interrupt line is high or `timeout_cycles` device clock cycles have
  // passed. Returns true if the interrupt line is high on return.
  virtual bool WaitForInterrupt(uint64_t timeout_cycles) = 0;

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
