// The chip's HBM as plain facts shared by the SystemC platform (sysc/), the verilated benches (tb/hbm) and
// the reference model's HBM twin (sim/hbm/hbm_twin.h): the JEDEC HBM2 timing and geometry of one channel
// (DramConfig, defaults = rtl/hbm/hbm_ctrl.sv's T_* parameters) and the chip's line -> channel, bank,
// row, column mapping of rtl/hbm/hbm_line_adapter.sv and hbm_ctrl.sv (HbmGeometry). docs/hbm.md explains
// both.
#ifndef SIM_HBM_HBM_GEOMETRY_H_
#define SIM_HBM_HBM_GEOMETRY_H_

#include <cstdint>

namespace tpu {

// Geometry and timing of one channel; defaults are DRAMSim3's HBM2_8Gb_x128 (docs/hbm.md).
struct DramConfig {
  int pc_bits = 0, bg_bits = 2, ba_bits = 2, row_bits = 15, col_bits = 4;  // col = 64-byte burst
  int burst_bytes = 64;
  int tCL = 14, tCWL = 4, tBURST = 2, tRCD = 14, tRP = 14, tRAS = 34, tRC = 48, tWR = 16, tRTP = 6;
  int tRRD_S = 4, tRRD_L = 6, tFAW = 30, tCCD_S = 1, tCCD_L = 2, tWTR_S = 6, tWTR_L = 8, tRTW = 13;
  int tREFI = 3900, tRFC = 260;
  int max_postponed_refreshes = 8;  // JEDEC allows up to 8 postponed REF commands

  int banks() const { return 1 << (pc_bits + bg_bits + ba_bits); }
  int group_of(int bank) const { return bank >> ba_bits; }
  uint64_t bytes() const { return uint64_t(burst_bytes) << (col_bits + row_bits + pc_bits + bg_bits + ba_bits); }
};

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
  // Entries of each channel controller's read and write queue in rtl/hbm/hbm_subsystem.sv (QUEUE): two
  // bursts of a wide line, at least 8; its write-drain watermarks are 3/4 and 1/4 of it.
  int queue_depth() const { return 2 * beats_per_line() > 8 ? 2 * beats_per_line() : 8; }

  struct Location {
    int channel;
    int bank;      // {bank group, bank}
    uint32_t row, col;
    uint32_t offset;  // byte inside the 64-byte beat
  };
  // Channel of a unit (a beat of narrow lines or one wide line, docs/hbm.md): the XOR of every
  // log2(channels)-bit group, so strided streams spread; with local index unit / channels, a bijection.
  int ChannelOf(uint64_t unit) const;
  // The channel-local beat address of the first beat of `line` (hbm_line_adapter's AR/AW address >> 6).
  uint64_t LocalBeat(uint64_t line) const;
  // hbm_ctrl's fields of a channel-local beat address: column, bank group, bank, row from the LSB up.
  struct BeatFields {
    int bank;  // {bank group, bank}
    uint32_t row, col;
  };
  BeatFields SplitBeat(uint64_t beat) const;
  // Where byte `byte_in_line` of `line` lives.
  Location Locate(uint64_t line, uint32_t byte_in_line) const;
};

}  // namespace tpu

#endif  // SIM_HBM_HBM_GEOMETRY_H_
