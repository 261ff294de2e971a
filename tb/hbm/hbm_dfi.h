// Connects a verilated top with the DFI ports of rtl/hbm/hbm_subsystem.sv (dfi_*_o/_i, channel c at
// [c*W +: W]) to the per-channel device models of sysc/hbm_map.h. Plain C++ (Verilator without SystemC);
// the field widths come from the geometry, the port types from Verilator (integers or VlWide).
#ifndef TB_HBM_HBM_DFI_H_
#define TB_HBM_HBM_DFI_H_

#include <cstdint>
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "sysc/hbm_map.h"

namespace tpu::hbm_tb {

// `width` bits of a verilated signal from bit `lsb` (width <= 64).
template <typename T>
uint64_t Bits(const T& v, int lsb, int width) {
  const uint64_t mask = width >= 64 ? ~0ull : (1ull << width) - 1;
  if constexpr (std::is_integral_v<T>) {
    return (uint64_t(v) >> lsb) & mask;
  } else {
    uint64_t r = 0;
    for (int got = 0; got < width;) {
      const int bit = lsb + got, take = std::min(32 - bit % 32, width - got);
      r |= uint64_t((v[bit / 32] >> (bit % 32)) & ((take == 32) ? 0xFFFFFFFFu : ((1u << take) - 1))) << got;
      got += take;
    }
    return r & mask;
  }
}

// One cycle of the DFI: before the rising edge (clock low, inputs settled) drives read data due in
// `cycle`; after evaluating the outputs, Commands() hands this cycle's commands to the devices.
template <typename Top>
class HbmDfi {
 public:
  explicit HbmDfi(HbmDram* dram) : dram_(dram) {}

  void DriveReadData(Top& top, uint64_t cycle) {
    const HbmGeometry& g = dram_->geometry();
    uint32_t valid = 0;
    for (int c = 0; c < g.channels; ++c) {
      if (dram_->channel(c).PopReadData(cycle, beat_)) {
        valid |= 1u << c;
        std::memcpy(&top.dfi_rddata_i[size_t(c) * 16], beat_, sizeof beat_);
      }
    }
    top.dfi_rddata_valid_i = valid;
  }

  void Commands(const Top& top, uint64_t cycle) {
    const HbmGeometry& g = dram_->geometry();
    const int nb = g.bg_bits + g.ba_bits;
    for (int c = 0; c < g.channels; ++c) {
      DramDevice& d = dram_->channel(c);
      const auto row_cmd = RowCmd(Bits(top.dfi_row_cmd_o, 3 * c, 3));
      if (row_cmd != RowCmd::kNop) {
        d.Row(cycle, row_cmd, int(Bits(top.dfi_row_bank_o, nb * c, nb)),
              uint32_t(Bits(top.dfi_row_addr_o, g.row_bits * c, g.row_bits)));
      }
      const auto col_cmd = ColCmd(Bits(top.dfi_col_cmd_o, 2 * c, 2));
      if (col_cmd == ColCmd::kNop) continue;
      if (col_cmd == ColCmd::kWr) {
        std::memcpy(beat_, &top.dfi_wrdata_o[size_t(c) * 16], sizeof beat_);
        const uint64_t mask = Bits(top.dfi_wrmask_o, 64 * c, 64);
        std::memcpy(mask_, &mask, sizeof mask_);
      }
      d.Col(cycle, col_cmd, int(Bits(top.dfi_col_bank_o, nb * c, nb)),
            uint32_t(Bits(top.dfi_col_addr_o, g.col_bits * c, g.col_bits)), beat_, mask_);
    }
  }

 private:
  HbmDram* dram_;
  uint8_t beat_[HbmGeometry::kBeatBytes] = {};
  uint8_t mask_[HbmGeometry::kBeatBytes / 8] = {};
};

}  // namespace tpu::hbm_tb

#endif  // TB_HBM_HBM_DFI_H_
