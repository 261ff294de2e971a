// The chip's data-path word: one line of LANES 32-bit lanes, lane 0 in the least significant bits.
// Verilator maps ports wider than 64 bits to sc_bv<W>, so every model on a line-wide pin uses this type.
#pragma once

#include <systemc>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "tpu_config.h"

namespace tpu::sysc {

inline constexpr unsigned kLineBits = static_cast<unsigned>(tpu::cfg::kLanes * 32);
inline constexpr size_t kLineBytes = kLineBits / 8;
static_assert(kLineBits > 64, "Verilator maps ports of 64 bits or less to integers, not sc_bv");

using Line = sc_dt::sc_bv<kLineBits>;

// Byte image (little endian, lane 0 first) <-> line, the layout HBM and host memory store.
inline void LineToBytes(const Line& line, uint8_t* bytes) {
  for (unsigned lane = 0; lane < kLineBits / 32; ++lane) {
    const uint32_t word = line.get_word(lane);
    std::memcpy(bytes + 4 * lane, &word, 4);
  }
}

inline Line BytesToLine(const uint8_t* bytes) {
  Line line;
  for (unsigned lane = 0; lane < kLineBits / 32; ++lane) {
    uint32_t word;
    std::memcpy(&word, bytes + 4 * lane, 4);
    line.set_word(lane, word);
  }
  return line;
}

}  // namespace tpu::sysc
