#include "sim/hbm/hbm_geometry.h"

namespace tpu {

DramConfig HbmGeometry::channel_config() const {
  DramConfig c;
  c.col_bits = col_bits;
  c.bg_bits = bg_bits;
  c.ba_bits = ba_bits;
  c.row_bits = row_bits;
  c.burst_bytes = kBeatBytes;
  return c;
}

int HbmGeometry::ChannelOf(uint64_t unit) const {
  // As rtl/hbm/hbm_line_adapter.sv: the XOR of every log2(channels)-bit group of the unit. The adapter
  // folds the 32 bits of its unit (line addresses are 32 bits), so folding all 64 bits here is the same.
  int group_bits = 0;
  while ((1 << group_bits) < channels) ++group_bits;
  if (group_bits == 0) return 0;
  uint64_t folded = 0;
  for (uint64_t rest = unit; rest != 0; rest >>= group_bits) folded ^= rest;
  return int(folded & uint64_t(channels - 1));
}

uint64_t HbmGeometry::LocalBeat(uint64_t line) const {
  const uint64_t unit = line / uint64_t(lines_per_beat());
  return (unit / uint64_t(channels)) * uint64_t(beats_per_line());
}

HbmGeometry::Location HbmGeometry::Locate(uint64_t line, uint32_t byte_in_line) const {
  // As rtl/hbm/hbm_line_adapter.sv: unit = line / LPB, channel = ChannelOf(unit), channel-local beat =
  // (unit / channels) * BPL + byte / 64 for wide lines; narrow lines sit at (line % LPB) * line_bytes.
  const uint64_t lpb = uint64_t(lines_per_beat());
  Location loc{};
  loc.channel = ChannelOf(line / lpb);
  const uint64_t beat = LocalBeat(line) + byte_in_line / kBeatBytes;
  loc.offset = uint32_t((line % lpb) * uint64_t(line_bytes) + byte_in_line % kBeatBytes);
  const BeatFields fields = SplitBeat(beat);
  loc.bank = fields.bank;
  loc.row = fields.row;
  loc.col = fields.col;
  return loc;
}

HbmGeometry::BeatFields HbmGeometry::SplitBeat(uint64_t beat) const {
  BeatFields fields;
  fields.col = uint32_t(beat & ((1ull << col_bits) - 1));
  const uint64_t bg = (beat >> col_bits) & ((1ull << bg_bits) - 1);
  const uint64_t ba = (beat >> (col_bits + bg_bits)) & ((1ull << ba_bits) - 1);
  fields.bank = int((bg << ba_bits) | ba);
  fields.row = uint32_t(beat >> (col_bits + bg_bits + ba_bits));
  return fields;
}

}  // namespace tpu
