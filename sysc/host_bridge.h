// HostBridge: joins the host's TLM-2.0 world to the chip's pins.
//
// MMIO (target socket `mmio_socket`): b_transport turns one 4-byte read or write at a byte offset of
// the chip's MMIO space into the pin handshake of docs/architecture.md: it drives mmio_valid for one
// cycle from a rising clock edge and waits for the mmio_rvalid pulse, so each access takes about three
// device cycles of simulated time (any annotated delay is waited first: the access happens in time).
// Error responses: TLM_BURST_ERROR_RESPONSE (length or streaming width not 4), TLM_ADDRESS_ERROR_RESPONSE
// (offset not 4-aligned or of a core the chip does not have), TLM_BYTE_ENABLE_ERROR_RESPONSE (byte enables
// are not supported), TLM_COMMAND_ERROR_RESPONSE (ignore command), TLM_GENERIC_ERROR_RESPONSE (the chip
// gave no mmio_rvalid within `mmio_timeout_cycles`, e.g. while it is held in reset).
// transport_dbg on the same socket is a backdoor into HBM, not into the MMIO space: its address is core c's
// HBM byte address (line * kLineBytes) plus c * HbmBytes(), it takes no simulated time and returns the
// bytes moved.
//
// Host memory (initiator socket `host_socket`): every request the chip makes on its host_req_* pins is
// forwarded with b_transport (one kLineBytes read or write at the request's byte address). The response
// goes back on host_rsp_* in request order, at least `min_host_latency_cycles` cycles after the request
// was accepted plus the target's annotated delay rounded up to whole cycles; a response status other
// than TLM_OK_RESPONSE raises host_rsp_error with that response. host_req_ready is high except while a
// b_transport call that waits is in progress.
#pragma once

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include <cstdint>
#include <deque>
#include <vector>

#include "sysc/hbm_memory.h"
#include "sysc/line.h"
#include "tpu_config.h"
#include "tpu_csr.h"

namespace tpu::sysc {

class HostBridge : public sc_core::sc_module {
 public:
  // Offsets name core c's registers at c << csr::CORE_SHIFT (docs/csr.md); an offset of a core the chip
  // does not have is an address error.
  static constexpr uint64_t kMmioBytes = uint64_t{tpu::cfg::kNumCores} << tpu::csr::CORE_SHIFT;

  tlm_utils::simple_target_socket<HostBridge> mmio_socket;
  tlm_utils::simple_initiator_socket<HostBridge> host_socket;

  sc_core::sc_in<bool> clk_i;
  sc_core::sc_in<bool> rst_ni;
  // MMIO pins (driven towards the chip). They are written from b_transport, i.e. by whichever initiator
  // process calls it, so the signals bound here must allow many writers (SC_MANY_WRITERS).
  sc_core::sc_out<bool> mmio_valid_o;
  sc_core::sc_out<bool> mmio_write_o;
  sc_core::sc_out<uint32_t> mmio_addr_o;
  sc_core::sc_out<uint32_t> mmio_wdata_o;
  sc_core::sc_in<bool> mmio_rvalid_i;
  sc_core::sc_in<uint32_t> mmio_rdata_i;
  // Host memory port (the chip is the master)
  sc_core::sc_in<bool> host_req_valid_i;
  sc_core::sc_out<bool> host_req_ready_o;
  sc_core::sc_in<bool> host_req_write_i;
  sc_core::sc_in<uint64_t> host_req_addr_i;
  sc_core::sc_in<Line> host_req_wdata_i;
  sc_core::sc_out<bool> host_rsp_valid_o;
  sc_core::sc_out<Line> host_rsp_rdata_o;
  sc_core::sc_out<bool> host_rsp_error_o;

  SC_HAS_PROCESS(HostBridge);
  // name:                    module name
  // hbm:                     the HBM of each core, which transport_dbg reads and writes (not owned):
  //                          core c's byte b at debug address c * HbmBytes() + b
  // clock_period:            period of clk_i (converts annotated delays into cycles)
  // mmio_timeout_cycles:     device cycles to wait for mmio_rvalid before answering with an error
  // min_host_latency_cycles: cycles from accepting a host request to the edge at which the chip samples
  //                          its response, before the target's delay is added; at least 1
  HostBridge(sc_core::sc_module_name name, std::vector<HbmMemory*> hbm, sc_core::sc_time clock_period,
             unsigned mmio_timeout_cycles, unsigned min_host_latency_cycles);

  // Bytes of each core's HBM: the stride of the cores in transport_dbg's address space.
  static constexpr uint64_t HbmBytes() { return uint64_t{tpu::cfg::kHbmLines} * kLineBytes; }

  uint64_t mmio_accesses() const { return mmio_accesses_; }
  uint64_t host_requests() const { return host_requests_; }
  uint64_t host_errors() const { return host_errors_; }

 private:
  struct HostResponse {
    uint64_t drive_cycle;  // the cycle after whose rising edge host_rsp_valid is driven
    Line data;
    bool error;
  };

  void MmioBTransport(tlm::tlm_generic_payload& payload, sc_core::sc_time& delay);
  unsigned int MmioTransportDbg(tlm::tlm_generic_payload& payload);
  void HostPortThread();
  void AcceptHostRequest();
  uint64_t CurrentCycle() const;

  const std::vector<HbmMemory*> hbm_;
  const sc_core::sc_time clock_period_;
  const unsigned mmio_timeout_cycles_;
  const unsigned min_host_latency_cycles_;
  sc_core::sc_mutex mmio_lock_;
  std::deque<HostResponse> host_in_flight_;
  bool host_rsp_valid_driven_ = false;
  uint64_t mmio_accesses_ = 0;
  uint64_t host_requests_ = 0;
  uint64_t host_errors_ = 0;
};

}  // namespace tpu::sysc
