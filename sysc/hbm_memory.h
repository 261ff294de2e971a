// HbmMemory: the simple memory behind the chip's HBM controller port (docs/architecture.md).
//
// What it models: a memory of `lines` lines of kLineBytes each that accepts one request per clock cycle
// (hbm_req_ready is always high) and returns exactly one response per accepted request, reads and writes
// alike, in request order, `latency_cycles` cycles after the cycle it accepted the request. A read returns
// the line as it is after every earlier accepted write. Storage is sparse: a 64 KiB page is allocated on
// its first write and everything never written reads as zero, so gigabytes are addressable.
//
// What it does not model: banks, rows, refresh, channel parallelism, bandwidth limits other than one
// request per cycle, or any timing rule. It is the stand-in that the synthesizable HBM controller plus
// the DRAM device model replace; the chip-side port protocol stays the same.
//
// A request to a line >= `lines` (the chip checks addresses before issuing, so this is a chip bug) reads
// zeros or drops the write, is still answered, and is counted in out_of_range_requests().
#pragma once

#include <systemc>

#include <cstdint>
#include <deque>

#include "sysc/line.h"
#include "sysc/sparse_store.h"

namespace tpu::sysc {

class HbmMemory : public sc_core::sc_module {
 public:
  sc_core::sc_in<bool> clk_i;
  sc_core::sc_in<bool> rst_ni;  // active low, synchronous: drops requests in flight
  sc_core::sc_in<bool> req_valid_i;
  sc_core::sc_out<bool> req_ready_o;
  sc_core::sc_in<bool> req_write_i;
  sc_core::sc_in<uint32_t> req_addr_i;  // line address
  sc_core::sc_in<Line> req_wdata_i;
  sc_core::sc_out<bool> rsp_valid_o;
  sc_core::sc_out<Line> rsp_rdata_o;

  SC_HAS_PROCESS(HbmMemory);
  // name:           module name
  // lines:          capacity in lines of kLineBytes bytes (tpu::cfg::kHbmLines for the chip)
  // latency_cycles: clock cycles from the rising edge that accepts a request to the rising edge at which
  //                 the chip samples its response; at least 1 (tpu::cfg::kHbmLatency for the chip)
  // clock_period:   period of clk_i, used to tell cycles from simulation time while the model sleeps
  HbmMemory(sc_core::sc_module_name name, uint64_t lines, unsigned latency_cycles,
            sc_core::sc_time clock_period);

  uint64_t lines() const { return lines_; }
  unsigned latency_cycles() const { return latency_cycles_; }

  // Backdoor access in bytes at HBM byte address line * kLineBytes; takes no simulated time and is
  // not seen by the port. Returns false (and transfers nothing) when the range leaves the memory.
  bool DebugRead(uint64_t byte_address, void* data, size_t bytes) const;
  bool DebugWrite(uint64_t byte_address, const void* data, size_t bytes);
  // Forgets all contents (every line reads as zero).
  void Clear() { store_.Clear(); }

  uint64_t read_requests() const { return read_requests_; }
  uint64_t write_requests() const { return write_requests_; }
  uint64_t out_of_range_requests() const { return out_of_range_requests_; }

 private:
  struct Response {
    uint64_t drive_cycle;  // the cycle after whose rising edge rsp_valid is driven
    Line data;
  };

  void DriveReady();
  void OnClock();
  uint64_t CurrentCycle() const;

  const uint64_t lines_;
  const unsigned latency_cycles_;
  const sc_core::sc_time clock_period_;
  SparseStore store_;
  std::deque<Response> in_flight_;
  bool rsp_valid_driven_ = false;
  uint64_t read_requests_ = 0;
  uint64_t write_requests_ = 0;
  uint64_t out_of_range_requests_ = 0;
};

}  // namespace tpu::sysc
