// The chip-to-chip interconnect (ICI) of a board: how many chips a board may have, how they are wired and
// how a packet finds its way, and the figures of a link. One source for the reference model (BoardModel),
// the SystemC platform (which wires the verilated chips) and, mirrored in tpu_ici_route.sv, the RTL.
//
// A board of 1, 2 or 4 chips. The chips sit on a ring in the order of ring positions 0, 1, 2, 3, and chip
// c is at position c ^ (c >> 1): a v2-8's 2x2 torus 0-1-3-2-0, where every chip uses two of its links.
// Each chip has two ports: kNext toward the following position, kPrev toward the preceding one; port
// kNext of one chip and port kPrev of the next are the two ends of one link. A packet goes the shorter way
// round; a tie (the opposite chip of four) goes through kNext. On two chips every packet goes through
// kNext, so each of the two links carries one direction.
#pragma once

#include <cstdint>
#include <string>

#include "sw/base/status.h"

namespace tpu::ici {

// A link's figures, per direction (docs/interconnect.md). The defaults are TPU v2's: 496 Gbit/s per link,
// about 62 GB/s per direction, i.e. 62 bytes per cycle at the model's 1 GHz; 500 cycles (0.5 us) from
// one chip's port to its neighbour's.
struct LinkConfig {
  uint32_t latency_cycles = 500;
  uint32_t bytes_per_cycle = 62;
};

enum Port : uint32_t { kNext = 0, kPrev = 1, kPorts = 2 };

inline Status CheckBoardChips(uint32_t chips) {
  if (chips == 1 || chips == 2 || chips == 4) return OkStatus();
  return InvalidArgument("a board has 1, 2 or 4 chips, not " + std::to_string(chips));
}

inline Status CheckLink(const LinkConfig& link) {
  if (link.bytes_per_cycle == 0) return InvalidArgument("an ICI link needs a bandwidth of at least 1 byte per cycle");
  return OkStatus();
}

// Ring position of chip `chip` and the chip at position `position` (boards of at most 4 chips).
inline uint32_t RingPosition(uint32_t chip) { return chip ^ (chip >> 1); }
inline uint32_t ChipAtPosition(uint32_t position) { return position ^ (position >> 1); }

// The chip at the other end of `chip`'s port `port` on a board of `chips`.
inline uint32_t Neighbour(uint32_t chip, Port port, uint32_t chips) {
  const uint32_t position = RingPosition(chip);
  return ChipAtPosition(port == kNext ? (position + 1) % chips : (position + chips - 1) % chips);
}

// The port a packet at `chip` for chip `destination` leaves through (kPorts: it has arrived).
inline Port Route(uint32_t chip, uint32_t destination, uint32_t chips) {
  const uint32_t ahead = (RingPosition(destination) + chips - RingPosition(chip)) % chips;
  if (ahead == 0) return kPorts;
  return 2 * ahead <= chips ? kNext : kPrev;
}

// Links a packet from chip `from` to chip `to` crosses.
inline uint32_t Hops(uint32_t from, uint32_t to, uint32_t chips) {
  uint32_t hops = 0;
  for (uint32_t chip = from; chip != to; ++hops) chip = Neighbour(chip, Route(chip, to, chips), chips);
  return hops;
}

}  // namespace tpu::ici
