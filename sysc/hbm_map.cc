#include "sysc/hbm_map.h"

#include <algorithm>

namespace tpu {

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
