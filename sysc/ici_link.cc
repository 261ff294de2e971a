#include "sysc/ici_link.h"

#include <algorithm>

namespace tpu::sysc {

IciLink::IciLink(sc_core::sc_module_name name, uint32_t latency_cycles, uint32_t bytes_per_cycle, uint32_t slots)
    : sc_core::sc_module(name),
      clk_i("clk_i"),
      tx_valid_i("tx_valid_i"),
      tx_packet_i("tx_packet_i"),
      tx_ack_i("tx_ack_i"),
      tx_credit_o("tx_credit_o"),
      rx_valid_o("rx_valid_o"),
      rx_ready_i("rx_ready_i"),
      rx_packet_o("rx_packet_o"),
      rx_ack_o("rx_ack_o"),
      latency_(latency_cycles),
      bytes_per_cycle_(std::max<uint32_t>(bytes_per_cycle, 1)),
      slots_(std::max<uint32_t>(slots, 2)) {
  SC_METHOD(OnClock);
  sensitive << clk_i.pos();
  dont_initialize();
}

void IciLink::Clear() {
  wire_free_ = 0;
  offered_ = false;
  on_wire_.clear();
  buffer_.clear();
  credits_.clear();
  acks_.clear();
}

void IciLink::SetActive(bool active) {
  if (active != active_) {
    quiet_ = !active;
    warming_ = active;
  }
  active_ = active;
  Clear();
}

// At each rising edge: what the chips did in the cycle that just ended (the sender's packet and
// acknowledgements, whether the receiver took the head), then what the link drives in the next cycle.
void IciLink::OnClock() {
  const uint64_t now = ++cycle_;
  if (!active_ || warming_) {
    if (quiet_) {
      rx_valid_o.write(false);
      tx_credit_o.write(false);
      rx_ack_o.write(IciAck{});
      quiet_ = false;
    }
    warming_ = false;
    return;
  }
  if (tx_valid_i.read()) {
    const uint64_t start = std::max(now * bytes_per_cycle_, wire_free_);
    wire_free_ = start + kPacketBytes;
    const uint64_t sent = (wire_free_ + bytes_per_cycle_ - 1) / bytes_per_cycle_;
    on_wire_.emplace_back(sent + latency_, tx_packet_i.read());
    ++packets_;
    if (on_wire_.size() + buffer_.size() > slots_) {
      SC_REPORT_ERROR(name(), "the sender put more packets on the link than it had credits for");
    }
  }
  const IciAck ack = tx_ack_i.read();
  if (ack != IciAck{}) acks_.emplace_back(now + latency_, ack);
  if (offered_ && rx_ready_i.read()) {
    buffer_.pop_front();
    credits_.push_back(now + latency_);
  }
  while (!on_wire_.empty() && on_wire_.front().first <= now) {
    buffer_.push_back(std::move(on_wire_.front().second));
    on_wire_.pop_front();
  }

  offered_ = !buffer_.empty();
  rx_valid_o.write(offered_);
  if (offered_) rx_packet_o.write(buffer_.front());
  const bool credit = !credits_.empty() && credits_.front() <= now;
  if (credit) credits_.pop_front();
  tx_credit_o.write(credit);
  if (!acks_.empty() && acks_.front().first <= now) {
    rx_ack_o.write(acks_.front().second);
    acks_.pop_front();
  } else {
    rx_ack_o.write(IciAck{});
  }
}

}  // namespace tpu::sysc
