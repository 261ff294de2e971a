// The configured chip's HBM geometry (generated tpu_config.h: HBM_CHANNELS, HBM_*_BITS, LANES).
#ifndef SYSC_HBM_CONFIG_H_
#define SYSC_HBM_CONFIG_H_

#include "sysc/hbm_map.h"
#include "tpu_config.h"

namespace tpu {

inline HbmGeometry ConfiguredHbmGeometry() {
  HbmGeometry g;
  g.channels = int(cfg::kHbmChannels);
  g.line_bytes = int(cfg::kLanes * 4);
  g.col_bits = int(cfg::kHbmColBits);
  g.bg_bits = int(cfg::kHbmBgBits);
  g.ba_bits = int(cfg::kHbmBaBits);
  g.row_bits = int(cfg::kHbmRowBits);
  return g;
}

// The configuration's HBM_LINES must be exactly what the channels hold (checked at compile time).
static_assert(cfg::kHbmLines * cfg::kLanes * 4 ==
                  cfg::kHbmChannels * (64ull << (cfg::kHbmColBits + cfg::kHbmBgBits + cfg::kHbmBaBits + cfg::kHbmRowBits)),
              "HBM_LINES does not match HBM_CHANNELS and the HBM_*_BITS geometry");

}  // namespace tpu

#endif  // SYSC_HBM_CONFIG_H_
