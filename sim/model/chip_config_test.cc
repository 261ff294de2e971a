#include "sim/model/chip_config.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "tpu_config.h"

namespace tpu::model {
namespace {

TEST(ChipConfigTest, BuildIsTheGeneratedConfiguration) {
  const ChipConfig config = ChipConfig::Build();
  EXPECT_EQ(config.name, tpu::cfg::kName);
  EXPECT_EQ(config.lanes, tpu::cfg::kLanes);
  EXPECT_EQ(config.vmem_lines, tpu::cfg::kVmemLines);
  EXPECT_EQ(config.imem_words, tpu::cfg::kImemWords);
  EXPECT_EQ(config.hbm_lines, tpu::cfg::kHbmLines);
  EXPECT_EQ(config.hbm_latency, tpu::cfg::kHbmLatency);
  EXPECT_EQ(config.dma_queue, tpu::cfg::kDmaQueue);
  EXPECT_EQ(config.host_mem_bytes, tpu::cfg::kHostMemBytes);
  EXPECT_EQ(config.line_bytes(), tpu::cfg::kLanes * 4);
  EXPECT_TRUE(config.Validate().ok());
}

TEST(ChipConfigTest, NamedReadsTheConfigFiles) {
  StatusOr<ChipConfig> built = ChipConfig::Named(tpu::cfg::kName);
  ASSERT_TRUE(built.ok()) << built.status();
  const ChipConfig expected = ChipConfig::Build();
  EXPECT_EQ(built->lanes, expected.lanes);
  EXPECT_EQ(built->vmem_lines, expected.vmem_lines);
  EXPECT_EQ(built->imem_words, expected.imem_words);
  EXPECT_EQ(built->num_cores, expected.num_cores);
  EXPECT_EQ(built->board_chips, expected.board_chips);
  EXPECT_EQ(built->sregs, expected.sregs);
  EXPECT_EQ(built->hbm_lines, expected.hbm_lines);
  EXPECT_EQ(built->hbm_latency, expected.hbm_latency);
  EXPECT_EQ(built->dma_queue, expected.dma_queue);
  EXPECT_EQ(built->host_mem_bytes, expected.host_mem_bytes);

  for (const char* name : {"tiny", "v2"}) {
    StatusOr<ChipConfig> config = ChipConfig::Named(name);
    ASSERT_TRUE(config.ok()) << config.status();
    EXPECT_EQ(config->name, name);
    EXPECT_GT(config->lanes, 0u);
    EXPECT_EQ(config->hbm_lines * config->line_bytes() > (1ull << 32), std::string(name) == "v2")
        << "v2 addresses gigabytes of HBM";
  }
  // A v2-8 by default: four chips of two cores.
  StatusOr<ChipConfig> v2 = ChipConfig::Named("v2");
  ASSERT_TRUE(v2.ok()) << v2.status();
  EXPECT_EQ(v2->board_chips * v2->num_cores, 8u);
}

TEST(ChipConfigTest, BadNamesAndFiles) {
  EXPECT_EQ(ChipConfig::Named("no_such_config").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(ChipConfig::Named("../config/tiny").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ChipConfig::Named("").status().code(), StatusCode::kInvalidArgument);

  const std::string path = ::testing::TempDir() + "/model_config_test.cfg";
  auto write = [&](const std::string& text) {
    std::ofstream(path) << text;
    return ChipConfig::FromFile(path);
  };
  const std::string good =
      "param LANES 4\nparam VMEM_LINES 64\nparam IMEM_WORDS 32\nparam HBM_LINES 1024\nparam NUM_CORES 1\n"
      "param SREGS 16\nparam HBM_LATENCY 3\nparam DMA_QUEUE 2\nparam HBM_CHANNELS 2\nparam HOST_MEM_BYTES 0x1000 # hex works\n"
      "param BOARD_CHIPS 2\nparam HBM_COL_BITS 4\nparam HBM_BG_BITS 2\nparam HBM_BA_BITS 2\nparam HBM_ROW_BITS 11\n";
  StatusOr<ChipConfig> ok = write(good);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->name, "model_config_test");
  EXPECT_EQ(ok->host_mem_bytes, 0x1000u);
  EXPECT_EQ(ok->hbm_channels, 2u);
  EXPECT_EQ(ok->hbm_row_bits, 11u);
  EXPECT_EQ(ok->hbm_geometry().bytes(), 2u * (64u << (4 + 2 + 2 + 11)));

  StatusOr<ChipConfig> missing = write("param LANES 4\n");
  EXPECT_EQ(missing.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(missing.status().message().find("VMEM_LINES"), std::string::npos) << missing.status();
  EXPECT_EQ(write(good + "param LANES four\n").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(write(good + "param LANES -4\n").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(write(good + "LANES 4\n").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(write(good + "param SREGS 17\n").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(write(good + "param BOARD_CHIPS 3\n").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(write(good + "param NUM_CORES 5\n").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(write(good + "param LANES 0\n").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(write(good + "param HBM_CHANNELS 3\n").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(write(good + "param HBM_LINES 0x100000000\n").status().code(), StatusCode::kInvalidArgument);
  std::remove(path.c_str());
  EXPECT_EQ(ChipConfig::FromFile(path).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace tpu::model
