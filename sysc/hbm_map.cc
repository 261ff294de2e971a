#include "sysc/hbm_map.h"

#include <algorithm>

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

HbmGeometry::Location HbmGeometry::Locate(uint64_t line, uint32_t byte_in_line) const {
  // As rtl/hbm/hbm_line_adapter.sv: unit = line / LPB, channel = ChannelOf(unit), channel-local beat =
  // (unit / channels) * BPL + byte / 64 for wide lines; narrow lines sit at (line % LPB) * line_bytes.
  const uint64_t lpb = uint64_t(lines_per_beat()), bpl = uint64_t(beats_per_line());
  const uint64_t unit = line / lpb;
  Location loc{};
  loc.channel = ChannelOf(unit);
  const uint64_t beat = (unit / uint64_t(channels)) * bpl + byte_in_line / kBeatBytes;
  loc.offset = uint32_t((line % lpb) * uint64_t(line_bytes) + byte_in_line % kBeatBytes);
  // hbm_ctrl's fields on the beat address: column, bank group, bank, row from the LSB up.
  loc.col = uint32_t(beat & ((1ull << col_bits) - 1));
  const uint64_t bg = (beat >> col_bits) & ((1ull << bg_bits) - 1);
  const uint64_t ba = (beat >> (col_bits + bg_bits)) & ((1ull << ba_bits) - 1);
  loc.bank = int((bg << ba_bits) | ba);
  loc.row = uint32_t(beat >> (col_bits + bg_bits + ba_bits));
  return loc;
}

HbmDram::HbmDram(const HbmGeometry& geometry) : geometry_(geometry) {
  channels_.reserve(size_t(geometry.channels));
  for (int c = 0; c < geometry.channels; ++c) channels_.emplace_back(geometry.channel_config());
}

template <typename Fn>
void HbmDram::ForEachChunk(uint64_t address, size_t bytes, Fn fn) const {
  const uint64_t line_bytes = uint64_t(geometry_.line_bytes);
  size_t done = 0;
  while (done < bytes) {
    const uint64_t line = address / line_bytes;
    const uint32_t in_line = uint32_t(address % line_bytes);
    // A chunk ends at the end of the line or of the beat, whichever is first.
    const uint64_t beat_left = HbmGeometry::kBeatBytes - in_line % HbmGeometry::kBeatBytes;
    const size_t chunk = size_t(std::min<uint64_t>({bytes - done, line_bytes - in_line, beat_left}));
    const HbmGeometry::Location loc = geometry_.Locate(line, in_line);
    const DramDevice& d = channels_[size_t(loc.channel)];
    fn(loc.channel, d.ByteAddress(loc.bank, loc.row, loc.col) + loc.offset, done, chunk);
    address += chunk;
    done += chunk;
  }
}

bool HbmDram::ReadBytes(uint64_t address, uint8_t* data, size_t bytes) const {
  if (!Contains(address, bytes)) return false;
  ForEachChunk(address, bytes, [&](int c, uint64_t device_address, size_t at, size_t n) {
    channels_[size_t(c)].ReadBytes(device_address, data + at, n);
  });
  return true;
}

bool HbmDram::WriteBytes(uint64_t address, const uint8_t* data, size_t bytes) {
  if (!Contains(address, bytes)) return false;
  ForEachChunk(address, bytes, [&](int c, uint64_t device_address, size_t at, size_t n) {
    channels_[size_t(c)].WriteBytes(device_address, data + at, n);
  });
  return true;
}

void HbmDram::Clear() {
  for (DramDevice& d : channels_) d.ClearStorage();
}

uint64_t HbmDram::violations() const {
  uint64_t n = 0;
  for (const DramDevice& d : channels_) n += d.violations();
  return n;
}

std::vector<std::string> HbmDram::violation_messages() const {
  std::vector<std::string> all;
  for (size_t c = 0; c < channels_.size(); ++c) {
    for (const std::string& m : channels_[c].violation_messages()) all.push_back("channel " + std::to_string(c) + ": " + m);
  }
  return all;
}

}  // namespace tpu
