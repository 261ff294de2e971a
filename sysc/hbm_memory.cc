#include "sysc/hbm_memory.h"

#include <stdexcept>
#include <string>

namespace tpu::sysc {

HbmMemory::HbmMemory(sc_core::sc_module_name name, uint64_t lines, unsigned latency_cycles,
                     sc_core::sc_time clock_period)
    : sc_core::sc_module(name),
      lines_(lines),
      latency_cycles_(latency_cycles),
      clock_period_(clock_period),
      store_(lines * kLineBytes) {
  if (latency_cycles_ < 1) throw std::invalid_argument("HbmMemory: latency_cycles must be at least 1");
  if (clock_period_ == sc_core::SC_ZERO_TIME) throw std::invalid_argument("HbmMemory: zero clock period");
  SC_METHOD(DriveReady);  // runs once at initialization: the memory never back-pressures
  SC_METHOD(OnClock);
  sensitive << clk_i.pos();
  dont_initialize();
}

void HbmMemory::DriveReady() { req_ready_o.write(true); }

uint64_t HbmMemory::CurrentCycle() const {
  return static_cast<uint64_t>(sc_core::sc_time_stamp() / clock_period_);
}

// Runs on rising clock edges, reading the chip's outputs as they were just before the edge. While no
// request is in flight and hbm_req_valid is low it sleeps until valid rises, so an idle port costs
// nothing per cycle.
void HbmMemory::OnClock() {
  if (!clk_i.posedge()) {
    // Woken by req_valid rising between edges: sample it at the next edge.
    next_trigger(clk_i.posedge_event());
    return;
  }
  if (!rst_ni.read()) {
    in_flight_.clear();
  } else if (req_valid_i.read()) {
    const uint64_t line = req_addr_i.read();
    const bool in_range = line < lines_;
    if (!in_range) ++out_of_range_requests_;
    Response response{CurrentCycle() + latency_cycles_ - 1, Line()};
    uint8_t bytes[kLineBytes];
    if (req_write_i.read()) {
      ++write_requests_;
      if (in_range) {
        LineToBytes(req_wdata_i.read(), bytes);
        store_.Write(line * kLineBytes, bytes, kLineBytes);
      }
    } else {
      ++read_requests_;
      if (in_range) {
        store_.Read(line * kLineBytes, bytes, kLineBytes);
        response.data = BytesToLine(bytes);
      }
    }
    in_flight_.push_back(std::move(response));
  }

  const bool respond = !in_flight_.empty() && in_flight_.front().drive_cycle <= CurrentCycle();
  if (respond) {
    rsp_rdata_o.write(in_flight_.front().data);
    in_flight_.pop_front();
  }
  if (respond != rsp_valid_driven_) {
    rsp_valid_o.write(respond);
    rsp_valid_driven_ = respond;
  }

  if (in_flight_.empty() && !rsp_valid_driven_ && !req_valid_i.read()) {
    next_trigger(req_valid_i.posedge_event());
  } else {
    next_trigger(clk_i.posedge_event());
  }
}

bool HbmMemory::DebugRead(uint64_t byte_address, void* data, size_t bytes) const {
  if (!store_.Contains(byte_address, bytes)) return false;
  store_.Read(byte_address, static_cast<uint8_t*>(data), bytes);
  return true;
}

bool HbmMemory::DebugWrite(uint64_t byte_address, const void* data, size_t bytes) {
  if (!store_.Contains(byte_address, bytes)) return false;
  store_.Write(byte_address, static_cast<const uint8_t*>(data), bytes);
  return true;
}

}  // namespace tpu::sysc
