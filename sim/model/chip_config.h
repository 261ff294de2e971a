// ChipConfig: the parameters of one tpusim chip configuration (rtl/config/<name>.cfg), as the reference
// model and the benches use them at run time. Build() is the configuration this build was generated for;
// Named() reads any configuration file, so one binary can model both `tiny` and `v2`.
#pragma once

#include <cstdint>
#include <string>

#include "sim/hbm/hbm_geometry.h"
#include "sw/base/status.h"

namespace tpu::model {

struct ChipConfig {
  std::string name;
  uint32_t lanes = 0;       // lanes per line = MXU size N
  uint32_t vmem_lines = 0;  // VMEM lines per core
  uint32_t imem_words = 0;  // 64-bit instruction words per core
  uint32_t num_cores = 0;
  uint32_t board_chips = 0;  // chips on the board the runtime opens by default (1, 2 or 4)
  uint32_t sregs = 0;  // scalar registers (s0 reads as zero); at most 16 (4-bit register fields)
  uint64_t hbm_lines = 0;
  uint64_t host_mem_bytes = 0;  // host memory the host DMA engine can reach
  uint32_t hbm_latency = 0;     // cycles of the memory behind the HBM port
  uint32_t dma_queue = 0;       // DMA instructions in flight (the next issues while earlier ones finish)
  uint32_t hbm_channels = 0;    // HBM channels (32 bytes per cycle each at the pin peak, docs/hbm.md)
  // Per channel (docs/hbm.md): 64-byte column bursts, 2^col per row, 2^(bg+ba) banks, 2^row rows.
  uint32_t hbm_col_bits = 0, hbm_bg_bits = 0, hbm_ba_bits = 0, hbm_row_bits = 0;
  // A model option, not a parameter of the chip: true times HBM accesses with the twin of the HBM
  // subsystem (sim/hbm/hbm_twin.h), false with the fixed hbm_latency.
  bool hbm_timing = false;

  uint32_t line_bytes() const { return lanes * 4; }
  // The HBM's line mapping (sim/hbm/hbm_geometry.h).
  HbmGeometry hbm_geometry() const;

  // The configuration tpu_config.h was generated from (this build's TPU_CONFIG).
  static ChipConfig Build();

  // Reads rtl/config/<name>.cfg of the source tree this library was built from. `name` is a bare name
  // such as "tiny" or "v2".
  static StatusOr<ChipConfig> Named(const std::string& name);

  // Reads a configuration file ("param NAME VALUE  # comment" lines) and checks that every parameter the
  // model needs is present and sensible.
  static StatusOr<ChipConfig> FromFile(const std::string& path);

  // Checks the values (non-zero sizes, register count that the encoding can address, ...).
  Status Validate() const;
};

}  // namespace tpu::model
