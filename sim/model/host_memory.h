// HostMemory: the host memory the model's host DMA engines read and write, shared by every core of the
// board (a v2-8 has one host for its four chips). Sparse: gigabytes cost only the pages written.
#pragma once

#include <cstdint>

#include "sim/model/sparse_memory.h"
#include "sw/base/status.h"

namespace tpu::model {

class HostMemory {
 public:
  explicit HostMemory(uint64_t bytes) : memory_(bytes) {}

  uint64_t bytes() const { return memory_.bytes(); }
  // The storage itself, for the host DMA engines (they check addresses with GoodLines first).
  SparseMemory& memory() { return memory_; }

  // Backdoor access of the host (no device time): OutOfRange beyond the memory, touching nothing.
  Status Read(uint64_t address, void* data, uint64_t bytes) const;
  Status Write(uint64_t address, const void* data, uint64_t bytes);

  // As constructed: every byte zero (no page allocated) and no test error range.
  void Reset() {
    memory_.Clear();
    error_begin_ = error_end_ = 0;
  }

  // Host bus errors: DMA accesses at or beyond bytes() get an error response, as the platform's host
  // memory gives one; this adds [begin, end) (for tests). An empty range disables it.
  void SetBusErrorRange(uint64_t begin, uint64_t end) {
    error_begin_ = begin;
    error_end_ = end;
  }
  // How many of `lines` lines of `line_bytes` from `address` a DMA moves before the first bus error.
  uint64_t GoodLines(uint64_t address, uint64_t lines, uint64_t line_bytes) const;

 private:
  Status CheckRange(uint64_t address, uint64_t bytes) const;

  SparseMemory memory_;
  uint64_t error_begin_ = 0, error_end_ = 0;
};

}  // namespace tpu::model
