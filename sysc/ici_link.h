// IciLink: one direction of a chip-to-chip (ICI) link, a SystemC channel between the sending half of one
// chip's link port (tpu_ici_tx: ici_tx_*) and the receiving half of its neighbour's (ici_rx_*).
//
// What it models (docs/interconnect.md): a wire of `bytes_per_cycle` bytes per device cycle and
// `latency_cycles` cycles, and the receive buffer at its far end of `slots` packets. A packet the sender
// puts on tx_valid is serialized at the link's bandwidth behind the packets before it (a packet is
// kPacketBytes bytes) and arrives `latency_cycles` after its last byte left; it waits in the buffer, in
// order, until the receiver takes it (rx_valid/rx_ready). Each packet taken returns a credit to the sender
// (tx_credit, one cycle's pulse) `latency_cycles` later: the sender starts with `slots` credits, so the
// buffer never overflows. The acknowledgement word the sender drives each cycle (tx_ack) arrives
// `latency_cycles` later on rx_ack; acknowledgements use no bandwidth (they are a few bits and would ride
// in the packets' headers). What it does not model: bit errors and retransmission, the link's own
// training, or lanes.
//
// A link is active or idle (SetActive): an idle link drives nothing, so that links of different board
// sizes can share the ports they would drive (the platform wires a board of 2 or 4 chips on the same
// chips; its port signals allow many writers, one active at a time).
#pragma once

#include <systemc>

#include <cstdint>
#include <deque>
#include <string>
#include <utility>

#include "sysc/line.h"
#include "tpu_csr.h"

namespace tpu::sysc {

// The chip's ICI packet (tpu_chip: IciPacketW) and acknowledgement word (IciAckW), per port.
constexpr unsigned Log2Ceil(unsigned value) { return value <= 1 ? 0 : 1 + Log2Ceil((value + 1) / 2); }
inline constexpr unsigned kIciPacketBits = 2 * 4 + 32 + 1 + Log2Ceil(tpu::csr::SEMS) + kLineBits;
inline constexpr unsigned kIciAckBits = 4 * kCores;
inline constexpr unsigned kIciPorts = 2;
using IciPacket = Pin<kIciPacketBits>;
using IciAck = Pin<kIciAckBits>;

class IciLink : public sc_core::sc_module {
 public:
  static constexpr uint64_t kPacketBytes = (kIciPacketBits + 7) / 8;

  sc_core::sc_in<bool> clk_i;
  // The sender's end.
  sc_core::sc_in<bool> tx_valid_i;
  sc_core::sc_in<IciPacket> tx_packet_i;
  sc_core::sc_in<IciAck> tx_ack_i;
  sc_core::sc_out<bool> tx_credit_o;
  // The receiver's end.
  sc_core::sc_out<bool> rx_valid_o;
  sc_core::sc_in<bool> rx_ready_i;
  sc_core::sc_out<IciPacket> rx_packet_o;
  sc_core::sc_out<IciAck> rx_ack_o;

  SC_HAS_PROCESS(IciLink);
  // latency_cycles: device cycles from a packet's last byte leaving to its arrival, and a credit's trip
  // bytes_per_cycle: the link's bandwidth per direction (>= 1)
  // slots:           packets the receive buffer holds (the sender's credits; >= 2)
  IciLink(sc_core::sc_module_name name, uint32_t latency_cycles, uint32_t bytes_per_cycle, uint32_t slots);

  // An idle link forgets what was in flight and drives its outputs low once (at the next edge), then
  // nothing; an activated link starts empty and drives from the edge after that.
  void SetActive(bool active);
  bool active() const { return active_; }
  // Empties the wire and the buffer (a board reset).
  void Clear();

  uint64_t packets() const { return packets_; }

 private:
  void OnClock();

  const uint64_t latency_;
  const uint64_t bytes_per_cycle_;
  const uint32_t slots_;
  bool active_ = false;
  bool quiet_ = false;           // drive the outputs low at the next edge (just made idle)
  bool warming_ = false;         // skip the next edge (just made active; an idle one may still drive it)
  uint64_t cycle_ = 0;           // rising edges seen
  uint64_t wire_free_ = 0;       // when the wire has serialized what it was given, in 1/bytes_per_cycle cycles
  bool offered_ = false;         // rx_valid was driven for the head during the cycle that just ended
  std::deque<std::pair<uint64_t, IciPacket>> on_wire_;  // (arrival cycle, packet)
  std::deque<IciPacket> buffer_;
  std::deque<uint64_t> credits_;                        // cycles credits reach the sender
  std::deque<std::pair<uint64_t, IciAck>> acks_;        // (arrival cycle, word)
  uint64_t packets_ = 0;
};

}  // namespace tpu::sysc
