#include "sim/model/chip_config.h"

#include <fstream>
#include <map>
#include <sstream>

#include "tpu_config.h"

#ifndef TPU_SOURCE_DIR
#error "TPU_SOURCE_DIR must name the source tree (set by sim/model/CMakeLists.txt)"
#endif

namespace tpu::model {

ChipConfig ChipConfig::Build() {
  ChipConfig config;
  config.name = tpu::cfg::kName;
  config.lanes = static_cast<uint32_t>(tpu::cfg::kLanes);
  config.vmem_lines = static_cast<uint32_t>(tpu::cfg::kVmemLines);
  config.imem_words = static_cast<uint32_t>(tpu::cfg::kImemWords);
  config.num_cores = static_cast<uint32_t>(tpu::cfg::kNumCores);
  config.board_chips = static_cast<uint32_t>(tpu::cfg::kBoardChips);
  config.sregs = static_cast<uint32_t>(tpu::cfg::kSregs);
  config.hbm_lines = tpu::cfg::kHbmLines;
  config.host_mem_bytes = tpu::cfg::kHostMemBytes;
  config.hbm_latency = static_cast<uint32_t>(tpu::cfg::kHbmLatency);
  config.dma_queue = static_cast<uint32_t>(tpu::cfg::kDmaQueue);
  config.hbm_channels = static_cast<uint32_t>(tpu::cfg::kHbmChannels);
  config.hbm_col_bits = static_cast<uint32_t>(tpu::cfg::kHbmColBits);
  config.hbm_bg_bits = static_cast<uint32_t>(tpu::cfg::kHbmBgBits);
  config.hbm_ba_bits = static_cast<uint32_t>(tpu::cfg::kHbmBaBits);
  config.hbm_row_bits = static_cast<uint32_t>(tpu::cfg::kHbmRowBits);
  return config;
}

StatusOr<ChipConfig> ChipConfig::Named(const std::string& name) {
  if (name.empty() || name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") !=
                          std::string::npos) {
    return InvalidArgument("configuration name '" + name + "' is not a bare name like 'tiny' or 'v2'");
  }
  StatusOr<ChipConfig> config = FromFile(std::string(TPU_SOURCE_DIR) + "/rtl/config/" + name + ".cfg");
  if (!config.ok() && config.status().code() == StatusCode::kNotFound) {
    return NotFound("unknown chip configuration '" + name + "': " + config.status().message());
  }
  return config;
}

StatusOr<ChipConfig> ChipConfig::FromFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFound("cannot open configuration file " + path);
  std::map<std::string, uint64_t> params;
  std::string line;
  int line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    const size_t hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    std::istringstream fields(line);
    std::string keyword, key, value;
    if (!(fields >> keyword)) continue;  // blank or comment line
    std::string rest;
    if (keyword != "param" || !(fields >> key >> value) || (fields >> rest)) {
      return InvalidArgument(path + ":" + std::to_string(line_number) + ": expected 'param NAME VALUE'");
    }
    size_t used = 0;
    uint64_t number = 0;
    try {
      number = std::stoull(value, &used, 0);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != value.size() || value[0] == '-') {
      return InvalidArgument(path + ":" + std::to_string(line_number) + ": '" + value + "' is not a number");
    }
    params[key] = number;
  }

  ChipConfig config;
  std::string base = path;
  if (size_t slash = base.find_last_of('/'); slash != std::string::npos) base = base.substr(slash + 1);
  if (size_t dot = base.rfind(".cfg"); dot != std::string::npos && dot + 4 == base.size()) base.resize(dot);
  config.name = base;

  std::string missing;
  auto get = [&](const char* key) -> uint64_t {
    auto it = params.find(key);
    if (it == params.end()) {
      missing += std::string(missing.empty() ? "" : ", ") + key;
      return 0;
    }
    return it->second;
  };
  auto get32 = [&](const char* key, uint32_t* out) -> bool {
    uint64_t value = get(key);
    *out = static_cast<uint32_t>(value);
    return value <= 0xFFFFFFFFull;
  };
  bool fits = true;
  fits &= get32("LANES", &config.lanes);
  fits &= get32("VMEM_LINES", &config.vmem_lines);
  fits &= get32("IMEM_WORDS", &config.imem_words);
  fits &= get32("NUM_CORES", &config.num_cores);
  fits &= get32("BOARD_CHIPS", &config.board_chips);
  fits &= get32("SREGS", &config.sregs);
  fits &= get32("HBM_LATENCY", &config.hbm_latency);
  fits &= get32("DMA_QUEUE", &config.dma_queue);
  fits &= get32("HBM_CHANNELS", &config.hbm_channels);
  fits &= get32("HBM_COL_BITS", &config.hbm_col_bits);
  fits &= get32("HBM_BG_BITS", &config.hbm_bg_bits);
  fits &= get32("HBM_BA_BITS", &config.hbm_ba_bits);
  fits &= get32("HBM_ROW_BITS", &config.hbm_row_bits);
  config.hbm_lines = get("HBM_LINES");
  config.host_mem_bytes = get("HOST_MEM_BYTES");
  if (!missing.empty()) return InvalidArgument(path + ": missing parameters: " + missing);
  if (!fits) return InvalidArgument(path + ": a 32-bit parameter is out of range");
  TPU_RETURN_IF_ERROR(config.Validate());
  return config;
}

Status ChipConfig::Validate() const {
  auto bad = [&](const std::string& what) { return InvalidArgument("configuration '" + name + "': " + what); };
  if (lanes == 0 || lanes > 1024) return bad("LANES must be 1..1024");
  if (vmem_lines == 0) return bad("VMEM_LINES must be non-zero");
  // The IMEM window (8 bytes per word from 0x80000) must fit the 20-bit MMIO address space.
  if (imem_words == 0 || imem_words > 65536) return bad("IMEM_WORDS must be 1..65536");
  // RDMA names a board core in 4 bits: four chips of at most four cores.
  if (num_cores == 0 || num_cores > 4) return bad("NUM_CORES must be 1..4");
  if (board_chips != 1 && board_chips != 2 && board_chips != 4) return bad("BOARD_CHIPS must be 1, 2 or 4");
  if (sregs == 0 || sregs > 16) return bad("SREGS must be 1..16 (register fields are 4 bits)");
  // The CSRs that report sizes and the ISA's line addresses are 32 bits.
  if (hbm_lines == 0 || hbm_lines > 0xFFFFFFFFull) return bad("HBM_LINES must be 1..2^32-1");
  if (host_mem_bytes == 0) return bad("HOST_MEM_BYTES must be non-zero");
  if (dma_queue == 0 || dma_queue > 64) return bad("DMA_QUEUE must be 1..64");
  if (hbm_channels == 0 || hbm_channels > 16 || (hbm_channels & (hbm_channels - 1)) != 0) {
    return bad("HBM_CHANNELS must be a power of two, 1..16");
  }
  if (hbm_col_bits == 0 || hbm_col_bits > 8 || hbm_bg_bits > 4 || hbm_ba_bits > 4 || hbm_bg_bits + hbm_ba_bits > 4 ||
      hbm_row_bits == 0 || hbm_row_bits > 20) {
    return bad("HBM_*_BITS out of range");
  }
  return OkStatus();
}

HbmGeometry ChipConfig::hbm_geometry() const {
  HbmGeometry geometry;
  geometry.channels = static_cast<int>(hbm_channels);
  geometry.line_bytes = static_cast<int>(line_bytes());
  geometry.col_bits = static_cast<int>(hbm_col_bits);
  geometry.bg_bits = static_cast<int>(hbm_bg_bits);
  geometry.ba_bits = static_cast<int>(hbm_ba_bits);
  geometry.row_bits = static_cast<int>(hbm_row_bits);
  return geometry;
}

}  // namespace tpu::model
