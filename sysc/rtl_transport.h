// RtlTransport: the driver's Transport over the SystemC platform around the verilated chip
// (--backend=rtl).
//
// One simulation per process: SystemC cannot restart its kernel or destroy modules once simulation has
// started. The first RtlTransport creates the process-wide Platform, which then lives until the process
// exits. At most one RtlTransport may exist at a time; a later one reuses the Platform and starts from a
// fresh device: rst_ni is pulsed, HBM and host memory are cleared (memories inside the chip, IMEM and
// VMEM, keep their contents as real SRAM would over a reset), and Cycles() counts from zero again.
//
// MmioRead/MmioWrite run the kernel just long enough for the TLM access (about 3 device cycles).
// A read that the bridge rejects (misaligned or out-of-range offset) or the chip does not answer returns
// 0xFFFFFFFF, as a failed read does on PCIe; a failed write is dropped; both are counted and kept in
// last_mmio_error(). HostRead/HostWrite use the host memory's debug transport (no device time) and throw
// std::out_of_range for a range outside [0, HostMemoryBytes()). A trace's window counts the cycles of the
// program: it is armed when the transport is created (the file is checked then) and starts with the first
// DOORBELL write. Destroying the transport flushes and closes its trace file.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "sw/base/status.h"
#include "sw/driver/transport.h"
#include "sysc/platform.h"

namespace tpu {

using RtlTraceOptions = sysc::TraceOptions;

class RtlTransport : public Transport {
 public:
  // A board of `chips` chips (1, 2 or 4; sim/model/ici.h). The process-wide platform is built by the first
  // transport with `platform_chips` chips (0: `chips`); a board smaller than the platform runs on its first
  // chips, the others held in reset. Fails with FailedPrecondition while another RtlTransport exists or
  // when the platform has fewer chips than asked for, with InvalidArgument for a board size other than 1, 2
  // or 4, or with the trace's error (an empty window, a file that cannot be written).
  static StatusOr<std::unique_ptr<RtlTransport>> Create(const RtlTraceOptions& trace = {}, uint32_t chips = 1,
                                                        uint32_t platform_chips = 0);
  // Same as Create, for callers that prefer exceptions: throws std::runtime_error with the message.
  explicit RtlTransport(const RtlTraceOptions& trace = {});
  ~RtlTransport() override;
  RtlTransport(const RtlTransport&) = delete;
  RtlTransport& operator=(const RtlTransport&) = delete;

  std::string name() const override { return "rtl"; }
  uint32_t MmioRead(uint32_t offset) override;
  void MmioWrite(uint32_t offset, uint32_t value) override;
  uint64_t HostMemoryBytes() const override;
  void HostWrite(uint64_t address, const void* data, size_t bytes) override;
  void HostRead(uint64_t address, void* data, size_t bytes) override;
  uint32_t Chips() const override { return chips_; }
  uint32_t CoresPerChip() const override { return static_cast<uint32_t>(cfg::kNumCores); }
  bool WaitForInterruptOn(uint64_t lines, uint64_t timeout_cycles) override;
  void Advance(uint64_t cycles) override;
  uint64_t Cycles() const override;
  bool SetProfile(ExecutionProfile* profile) override;

  // Flushes and closes the trace now (the destructor does it too).
  void CloseTrace();
  // The platform cycle the trace window counts from (the first DOORBELL write; 0 before it): FST time is
  // platform cycles * 1000 ps.
  uint64_t trace_origin_cycle() const { return trace_origin_cycle_; }
  uint64_t mmio_errors() const { return mmio_errors_; }
  const Status& last_mmio_error() const { return last_mmio_error_; }
  // The platform underneath, for tests and tools that need its backdoors.
  sysc::Platform& platform() { return *platform_; }

 private:
  struct PassKey {};

 public:
  RtlTransport(PassKey, sysc::Platform* platform, uint32_t chips);

 private:
  static Status Prepare(sysc::Platform** platform, const RtlTraceOptions& trace, uint32_t chips,
                        uint32_t platform_chips);
  void CheckHostRange(uint64_t address, size_t bytes, const char* what) const;

  sysc::Platform* platform_;
  uint32_t chips_ = 1;
  RtlTraceOptions pending_trace_;  // armed: file set until the first DOORBELL starts it
  uint64_t trace_origin_cycle_ = 0;
  uint64_t base_cycle_ = 0;
  uint64_t mmio_errors_ = 0;
  Status last_mmio_error_;
};

}  // namespace tpu
