// HostMemory: the host's DRAM that the chip's host DMA engine reads and writes, as a TLM-2.0 target.
//
// What it models: `size_bytes` bytes of byte-addressable memory at addresses [0, size_bytes), allocated
// lazily in 64 KiB pages (untouched memory reads as zero), with a fixed access latency annotated on
// every b_transport (loosely timed: it never calls wait()). What it does not model: caches, coherence,
// the PCIe link, bandwidth limits or DMI.
//
// Error responses (the payload is left untouched):
//   TLM_ADDRESS_ERROR_RESPONSE      any byte of [address, address + length) outside the memory
//   TLM_BURST_ERROR_RESPONSE        streaming width smaller than the data length (not supported)
//   TLM_BYTE_ENABLE_ERROR_RESPONSE  byte enables given with a zero length
//   TLM_COMMAND_ERROR_RESPONSE      TLM_IGNORE_COMMAND
// Byte enables are honoured. transport_dbg reads and writes the same storage without delay and returns
// the number of bytes moved (0 when the range leaves the memory).
#pragma once

#include <systemc>
#include <tlm>
#include <tlm_utils/multi_passthrough_target_socket.h>

#include <cstdint>

#include "sysc/sparse_store.h"

namespace tpu::sysc {

class HostMemory : public sc_core::sc_module {
 public:
  // Every chip's host bridge binds here (one memory for the board).
  tlm_utils::multi_passthrough_target_socket<HostMemory> socket;

  // name:        module name
  // size_bytes:  capacity in bytes (tpu::cfg::kHostMemBytes for the platform)
  // latency:     time added to the annotated delay of every b_transport (e.g. sc_time(100, SC_NS));
  //              SC_ZERO_TIME makes accesses free
  HostMemory(sc_core::sc_module_name name, uint64_t size_bytes, sc_core::sc_time latency);

  uint64_t size_bytes() const { return store_.size_bytes(); }

  // The debug transport, callable from outside the simulation (the host CPU's view).
  unsigned int DebugTransport(tlm::tlm_generic_payload& payload);
  // Forgets all contents.
  void Clear() { store_.Clear(); }

  uint64_t error_responses() const { return error_responses_; }

 private:
  void BTransport(int initiator, tlm::tlm_generic_payload& payload, sc_core::sc_time& delay);
  unsigned int TransportDbg(int, tlm::tlm_generic_payload& payload) { return DebugTransport(payload); }

  SparseStore store_;
  const sc_core::sc_time latency_;
  uint64_t error_responses_ = 0;
};

}  // namespace tpu::sysc
