// The chip's HBM as devices: the line -> channel/bank/row/column mapping of rtl/hbm/hbm_line_adapter.sv
// and hbm_subsystem.sv (docs/hbm.md), and one DramDevice per channel with backdoor byte access through
// that mapping. Plain C++; the SystemC platform and the verilated benches drive the devices' DFI side.
#ifndef SYSC_HBM_MAP_H_
#define SYSC_HBM_MAP_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "sysc/dram_device.h"

namespace tpu {

// Geometry of the chip's HBM (rtl/config/<name>.cfg: HBM_CHANNELS, HBM_*_BITS, LANES).
struct HbmGeometry {
  int channels = 2;
  int line_bytes = 32;
  int col_bits = 4, bg_bits = 2, ba_bits = 2, row_bits = 11;
  static constexpr int kBeatBytes = 64;

  // lines per 64-byte beat (lines narrower than a beat) and beats per line (wider ones); one is 1.
  int lines_per_beat() const { return line_bytes < kBeatBytes ? kBeatBytes / line_bytes : 1; }
  int beats_per_line() const { return line_bytes > kBeatBytes ? line_bytes / kBeatBytes : 1; }
  uint64_t bytes_per_channel() const { return uint64_t(kBeatBytes) << (col_bits + bg_bits + ba_bits + row_bits); }
  uint64_t bytes() const { return bytes_per_channel() * uint64_t(channels); }
  // The device model's configuration of one channel: this geometry, DRAMSim3 HBM2 timing.
  DramConfig channel_config() const;

  struct Location {
    int channel;
    int bank;      // {bank group, bank}
    uint32_t row, col;
    uint32_t offset;  // byte inside the 64-byte beat
  };
  // Channel of a unit (a beat of narrow lines or one wide line, docs/hbm.md): the XOR of every
  // log2(channels)-bit group, so strided streams spread; with local index unit / channels, a bijection.
  int ChannelOf(uint64_t unit) const;
  // Where byte `byte_in_line` of `line` lives.
  Location Locate(uint64_t line, uint32_t byte_in_line) const;
};

// One DramDevice per channel plus backdoor access at chip byte addresses (line * line_bytes + byte).
class HbmDram {
 public:
  explicit HbmDram(const HbmGeometry& geometry);
  const HbmGeometry& geometry() const { return geometry_; }
  DramDevice& channel(int c) { return channels_[size_t(c)]; }
  const DramDevice& channel(int c) const { return channels_[size_t(c)]; }

  // False (and nothing transferred) when [address, address + bytes) leaves the HBM.
  bool Contains(uint64_t address, uint64_t bytes) const {
    return address <= geometry_.bytes() && bytes <= geometry_.bytes() - address;
  }
  bool ReadBytes(uint64_t address, uint8_t* data, size_t bytes) const;
  bool WriteBytes(uint64_t address, const uint8_t* data, size_t bytes);
  // Forgets all contents of every channel.
  void Clear();
  uint64_t violations() const;
  std::vector<std::string> violation_messages() const;

 private:
  // Calls fn(channel, device byte address, chunk offset, chunk bytes) for runs inside one beat.
  template <typename Fn>
  void ForEachChunk(uint64_t address, size_t bytes, Fn fn) const;

  HbmGeometry geometry_;
  std::vector<DramDevice> channels_;
};

}  // namespace tpu

#endif  // SYSC_HBM_MAP_H_
