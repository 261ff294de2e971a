// The chip's HBM as devices: the line -> channel/bank/row/column mapping of rtl/hbm/hbm_line_adapter.sv
// and hbm_subsystem.sv (docs/hbm.md), and one DramDevice per channel with backdoor byte access through
// that mapping. Plain C++; the SystemC platform and the verilated benches drive the devices' DFI side.
#ifndef SYSC_HBM_MAP_H_
#define SYSC_HBM_MAP_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/hbm/hbm_geometry.h"
#include "sysc/dram_device.h"

namespace tpu {

// HbmGeometry (the line mapping) is in sim/hbm/hbm_geometry.h, shared with the reference model.

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
