#include "sysc/host_memory.h"

#include <vector>

namespace tpu::sysc {

HostMemory::HostMemory(sc_core::sc_module_name name, uint64_t size_bytes, sc_core::sc_time latency)
    : sc_core::sc_module(name), socket("socket"), store_(size_bytes), latency_(latency) {
  socket.register_b_transport(this, &HostMemory::BTransport);
  socket.register_transport_dbg(this, &HostMemory::TransportDbg);
}

void HostMemory::BTransport(int /*initiator*/, tlm::tlm_generic_payload& payload, sc_core::sc_time& delay) {
  const uint64_t address = payload.get_address();
  const unsigned int length = payload.get_data_length();
  const tlm::tlm_command command = payload.get_command();
  tlm::tlm_response_status status = tlm::TLM_OK_RESPONSE;
  if (command == tlm::TLM_IGNORE_COMMAND) {
    status = tlm::TLM_COMMAND_ERROR_RESPONSE;
  } else if (!store_.Contains(address, length)) {
    status = tlm::TLM_ADDRESS_ERROR_RESPONSE;
  } else if (payload.get_streaming_width() < length) {
    status = tlm::TLM_BURST_ERROR_RESPONSE;
  } else if (payload.get_byte_enable_ptr() != nullptr && payload.get_byte_enable_length() == 0) {
    status = tlm::TLM_BYTE_ENABLE_ERROR_RESPONSE;
  }
  if (status != tlm::TLM_OK_RESPONSE) {
    ++error_responses_;
    payload.set_response_status(status);
    return;
  }

  uint8_t* data = payload.get_data_ptr();
  const uint8_t* byte_enables = payload.get_byte_enable_ptr();
  const unsigned int enable_length = payload.get_byte_enable_length();
  if (byte_enables == nullptr) {
    if (command == tlm::TLM_READ_COMMAND) {
      store_.Read(address, data, length);
    } else {
      store_.Write(address, data, length);
    }
  } else {
    // Byte enable i applies to data byte i; the enable pattern repeats when it is shorter than the data.
    for (unsigned int i = 0; i < length; ++i) {
      if (byte_enables[i % enable_length] != TLM_BYTE_ENABLED) continue;
      if (command == tlm::TLM_READ_COMMAND) {
        store_.Read(address + i, data + i, 1);
      } else {
        store_.Write(address + i, data + i, 1);
      }
    }
  }
  delay += latency_;
  payload.set_dmi_allowed(false);
  payload.set_response_status(tlm::TLM_OK_RESPONSE);
}

unsigned int HostMemory::DebugTransport(tlm::tlm_generic_payload& payload) {
  const uint64_t address = payload.get_address();
  const unsigned int length = payload.get_data_length();
  if (!store_.Contains(address, length)) return 0;
  if (payload.get_command() == tlm::TLM_READ_COMMAND) {
    store_.Read(address, payload.get_data_ptr(), length);
  } else if (payload.get_command() == tlm::TLM_WRITE_COMMAND) {
    store_.Write(address, payload.get_data_ptr(), length);
  } else {
    return 0;
  }
  return length;
}

}  // namespace tpu::sysc
