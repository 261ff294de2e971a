#include "sysc/host_bridge.h"

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace tpu::sysc {

HostBridge::HostBridge(sc_core::sc_module_name name, std::vector<HbmMemory*> hbm, sc_core::sc_time clock_period,
                       unsigned mmio_timeout_cycles, unsigned min_host_latency_cycles)
    : sc_core::sc_module(name),
      mmio_socket("mmio_socket"),
      host_socket("host_socket"),
      hbm_(std::move(hbm)),
      clock_period_(clock_period),
      mmio_timeout_cycles_(mmio_timeout_cycles),
      min_host_latency_cycles_(min_host_latency_cycles) {
  if (min_host_latency_cycles_ < 1) throw std::invalid_argument("HostBridge: host latency must be >= 1 cycle");
  mmio_socket.register_b_transport(this, &HostBridge::MmioBTransport);
  mmio_socket.register_transport_dbg(this, &HostBridge::MmioTransportDbg);
  SC_THREAD(HostPortThread);
}

uint64_t HostBridge::CurrentCycle() const {
  return static_cast<uint64_t>(sc_core::sc_time_stamp() / clock_period_);
}

void HostBridge::MmioBTransport(tlm::tlm_generic_payload& payload, sc_core::sc_time& delay) {
  const uint64_t offset = payload.get_address();
  if (payload.get_command() == tlm::TLM_IGNORE_COMMAND) {
    payload.set_response_status(tlm::TLM_COMMAND_ERROR_RESPONSE);
    return;
  }
  if (payload.get_data_length() != 4 || payload.get_streaming_width() < 4) {
    payload.set_response_status(tlm::TLM_BURST_ERROR_RESPONSE);
    return;
  }
  if (offset % 4 != 0 || offset >= kMmioBytes) {
    payload.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
    return;
  }
  if (payload.get_byte_enable_ptr() != nullptr) {
    payload.set_response_status(tlm::TLM_BYTE_ENABLE_ERROR_RESPONSE);
    return;
  }
  const bool is_write = payload.get_command() == tlm::TLM_WRITE_COMMAND;
  uint32_t wdata = 0;
  if (is_write) std::memcpy(&wdata, payload.get_data_ptr(), 4);

  // The pins live in simulated time: catch up with the initiator's local time first.
  sc_core::wait(delay);
  delay = sc_core::SC_ZERO_TIME;
  mmio_lock_.lock();
  ++mmio_accesses_;

  // Drive the request right after a rising edge so the chip samples it on the next one.
  sc_core::wait(clk_i.posedge_event());
  mmio_valid_o.write(true);
  mmio_write_o.write(is_write);
  mmio_addr_o.write(static_cast<uint32_t>(offset));
  mmio_wdata_o.write(wdata);
  sc_core::wait(clk_i.posedge_event());  // the chip samples the access at this edge
  mmio_valid_o.write(false);

  bool answered = false;
  uint32_t rdata = 0;
  for (unsigned waited = 0; waited < mmio_timeout_cycles_ && !answered; ++waited) {
    sc_core::wait(clk_i.posedge_event());
    if (mmio_rvalid_i.read()) {
      answered = true;
      rdata = mmio_rdata_i.read();
    }
  }
  mmio_lock_.unlock();
  if (!answered) {
    payload.set_response_status(tlm::TLM_GENERIC_ERROR_RESPONSE);
    return;
  }
  if (!is_write) std::memcpy(payload.get_data_ptr(), &rdata, 4);
  payload.set_response_status(tlm::TLM_OK_RESPONSE);
}

unsigned int HostBridge::MmioTransportDbg(tlm::tlm_generic_payload& payload) {
  const uint64_t core = payload.get_address() / HbmBytes();
  const uint64_t address = payload.get_address() % HbmBytes();
  const unsigned int length = payload.get_data_length();
  if (core >= hbm_.size()) return 0;
  bool ok = false;
  if (payload.get_command() == tlm::TLM_READ_COMMAND) {
    ok = hbm_[core]->DebugRead(address, payload.get_data_ptr(), length);
  } else if (payload.get_command() == tlm::TLM_WRITE_COMMAND) {
    ok = hbm_[core]->DebugWrite(address, payload.get_data_ptr(), length);
  }
  return ok ? length : 0;
}

// One iteration per rising edge while the port is busy; sleeps until host_req_valid rises otherwise.
void HostBridge::HostPortThread() {
  host_req_ready_o.write(true);
  while (true) {
    if (host_in_flight_.empty() && !host_rsp_valid_driven_ && !host_req_valid_i.read()) {
      sc_core::wait(host_req_valid_i.posedge_event());
    }
    sc_core::wait(clk_i.posedge_event());
    if (!rst_ni.read()) {
      host_in_flight_.clear();
    } else if (host_req_valid_i.read()) {
      AcceptHostRequest();
    }
    const uint64_t now = CurrentCycle();
    const bool respond = !host_in_flight_.empty() && host_in_flight_.front().drive_cycle <= now;
    if (respond) {
      host_rsp_rdata_o.write(host_in_flight_.front().data);
      host_rsp_error_o.write(host_in_flight_.front().error);
      host_in_flight_.pop_front();
    } else if (host_rsp_valid_driven_) {
      host_rsp_error_o.write(false);
    }
    if (respond != host_rsp_valid_driven_) {
      host_rsp_valid_o.write(respond);
      host_rsp_valid_driven_ = respond;
    }
  }
}

void HostBridge::AcceptHostRequest() {
  ++host_requests_;
  const uint64_t accept_cycle = CurrentCycle();
  uint8_t bytes[kLineBytes] = {};
  tlm::tlm_generic_payload payload;
  payload.set_address(host_req_addr_i.read());
  payload.set_data_ptr(bytes);
  payload.set_data_length(kLineBytes);
  payload.set_streaming_width(kLineBytes);
  payload.set_byte_enable_ptr(nullptr);
  payload.set_dmi_allowed(false);
  payload.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  if (host_req_write_i.read()) {
    payload.set_command(tlm::TLM_WRITE_COMMAND);
    LineToBytes(host_req_wdata_i.read(), bytes);
  } else {
    payload.set_command(tlm::TLM_READ_COMMAND);
  }

  sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
  host_req_ready_o.write(false);  // only visible if the target waits; a zero-time call leaves it high
  host_socket->b_transport(payload, delay);
  host_req_ready_o.write(true);

  HostResponse response{0, Line(), !payload.is_response_ok()};
  if (response.error) {
    ++host_errors_;
  } else if (payload.is_read()) {
    response.data = BytesToLine(bytes);
  }
  const uint64_t delay_cycles = static_cast<uint64_t>(std::ceil(delay / clock_period_));
  uint64_t drive_cycle = accept_cycle + min_host_latency_cycles_ - 1 + delay_cycles;
  // Responses leave in request order, at most one per cycle.
  if (!host_in_flight_.empty() && drive_cycle <= host_in_flight_.back().drive_cycle) {
    drive_cycle = host_in_flight_.back().drive_cycle + 1;
  }
  if (drive_cycle < CurrentCycle()) drive_cycle = CurrentCycle();  // the target waited
  response.drive_cycle = drive_cycle;
  host_in_flight_.push_back(std::move(response));
}

}  // namespace tpu::sysc
