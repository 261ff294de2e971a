#include "sim/model/model_transport.h"

#include <stdexcept>

namespace tpu::model {

uint32_t ModelTransport::MmioRead(uint32_t offset) {
  board_.Step(kMmioSampleCycles);
  const uint32_t value = board_.MmioRead(offset);
  board_.Step(kMmioAccessCycles - kMmioSampleCycles);
  return value;
}

void ModelTransport::MmioWrite(uint32_t offset, uint32_t value) {
  board_.Step(kMmioSampleCycles);
  board_.MmioWrite(offset, value);
  board_.Step(kMmioAccessCycles - kMmioSampleCycles);
}

void ModelTransport::HostWrite(uint64_t address, const void* data, size_t bytes) {
  Status status = board_.host_memory().Write(address, data, bytes);
  if (!status.ok()) throw std::out_of_range(status.ToString());
}

void ModelTransport::HostRead(uint64_t address, void* data, size_t bytes) {
  Status status = board_.host_memory().Read(address, data, bytes);
  if (!status.ok()) throw std::out_of_range(status.ToString());
}

bool ModelTransport::WaitForInterruptOn(uint64_t lines, uint64_t timeout_cycles) {
  board_.RunUntilIrq(timeout_cycles, lines);
  return (board_.IrqLines() & lines) != 0;
}

}  // namespace tpu::model
