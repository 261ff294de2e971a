// The chip's data-path word: one line of LANES 32-bit lanes, lane 0 in the least significant bits.
// Verilator maps ports wider than 64 bits to sc_bv<W>, so every model on a line-wide pin uses this type.
#pragma once

#include <systemc>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

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

// The C++ type Verilator gives a SystemC port of W bits.
template <unsigned W>
using Pin = std::conditional_t<W == 1, bool,
            std::conditional_t<(W <= 32), uint32_t, std::conditional_t<(W <= 64), uint64_t, sc_dt::sc_bv<W>>>>;

// The chip's per-core ports are packed, core c at bit c (CoreBits) or at [c*W +: W].
inline constexpr unsigned kCores = static_cast<unsigned>(tpu::cfg::kNumCores);
using CoreBits = Pin<kCores>;
using CoreWords = Pin<kCores * 32>;
using CoreLines = Pin<kCores * kLineBits>;

// `width` (<= 32) bits of a pin value from bit `lsb`.
template <typename T>
uint32_t Field(const T& v, unsigned lsb, unsigned width) {
  if constexpr (std::is_integral_v<T>) {
    return uint32_t((uint64_t(v) >> lsb) & ((uint64_t{1} << width) - 1));
  } else {
    return uint32_t(v.range(int(lsb + width - 1), int(lsb)).to_uint());
  }
}

// Sets `width` (<= 32) bits of a pin value from bit `lsb`.
template <typename T>
void SetField(T* v, unsigned lsb, unsigned width, uint32_t value) {
  if constexpr (std::is_same_v<T, bool>) {
    *v = (value & 1) != 0;
  } else if constexpr (std::is_integral_v<T>) {
    const uint64_t mask = ((uint64_t{1} << width) - 1) << lsb;
    *v = T((uint64_t(*v) & ~mask) | ((uint64_t(value) << lsb) & mask));
  } else {
    v->range(int(lsb + width - 1), int(lsb)) = value;
  }
}

// Line `index` of a pin that packs lines.
template <typename T>
Line LineAt(const T& v, unsigned index) {
  Line line;
  line = v.range(int((index + 1) * kLineBits - 1), int(index * kLineBits));
  return line;
}
template <typename T>
void SetLineAt(T* v, unsigned index, const Line& line) {
  v->range(int((index + 1) * kLineBits - 1), int(index * kLineBits)) = line;
}

}  // namespace tpu::sysc
