// The model with its HBM timed by the twin of the HBM subsystem (ChipConfig::hbm_timing): the same bytes as
// with the fixed latency, and times that see the banks.
#include <gtest/gtest.h>

#include <random>

#include "sim/model/chip_model.h"
#include "sim/model/model_test_util.h"

namespace tpu::model {
namespace {

using namespace tpu::model::testing;  // NOLINT: test helpers
namespace csr = tpu::csr;

ChipConfig WithHbmTiming(bool on) {
  ChipConfig config = ChipConfig::Build();
  config.hbm_timing = on;
  return config;
}

uint64_t Cycles(ChipModel& model) {
  return model.MmioRead(csr::CYCLES_LO) | (uint64_t{model.MmioRead(csr::CYCLES_HI)} << 32);
}

// Loads, strided loads and stores of random data: VMEM and HBM must end the same either way.
TEST(HbmTiming, BytesDoNotDependOnTheTiming) {
  std::vector<std::vector<uint32_t>> vmem, hbm;
  std::vector<uint64_t> cycles;
  for (bool on : {false, true}) {
    ChipModel model(WithHbmTiming(on));
    std::mt19937 rng(11);
    WriteHbmWords(model, 0, RandomFloats(rng, 512 * model.config().lanes));
    RunProgram(model, {Li(1, 0), Li(2, 0), Li(3, 64), DmaLd(1, 2, 3, 3),  // every third line
                       Li(1, 1000), DmaSt(1, 2, 3, 1),                     // stored after the load
                       Li(1, 7), Li(2, 64), DmaLd(1, 2, 3, 1), Sync(),
                       Li(1, 2000), Li(2, 0), Li(3, 128), DmaSt(1, 2, 3, 5), Sync(), Halt()});
    EXPECT_EQ(model.MmioRead(csr::STATUS) & csr::STATUS_ERROR, 0u);
    vmem.push_back(ReadVmemWords(model, 0, 128));
    hbm.push_back(ReadHbmWords(model, 1000, 64));
    std::vector<uint32_t> strided = ReadHbmWords(model, 2000, 128 * 5);
    hbm.back().insert(hbm.back().end(), strided.begin(), strided.end());
    cycles.push_back(Cycles(model));
  }
  EXPECT_EQ(vmem[0], vmem[1]);
  EXPECT_EQ(hbm[0], hbm[1]);
  EXPECT_NE(cycles[0], cycles[1]);
}

// A load whose lines each open a new row of one bank pays a row cycle per line with the twin; with the
// fixed latency it costs what a sequential load costs.
TEST(HbmTiming, RowConflictsCostRowCycles) {
  const ChipConfig base = ChipConfig::Build();
  const HbmGeometry geometry = base.hbm_geometry();
  // Lines one row apart in one bank: the channel-local beat advances by a whole bank's worth of columns.
  const uint32_t row_stride = uint32_t(geometry.channels) * uint32_t(geometry.lines_per_beat())
                              << (geometry.col_bits + geometry.bg_bits + geometry.ba_bits);
  const uint32_t lines = 32;
  auto load_cycles = [&](bool on, uint32_t stride) {
    ChipModel model(WithHbmTiming(on));
    RunProgram(model, {Li(1, 0), Li(2, 0), Li(3, lines), DmaLd(1, 2, 3, stride), Sync(), Halt()});
    return Cycles(model);
  };
  EXPECT_EQ(load_cycles(false, row_stride), load_cycles(false, 1));
  const uint64_t sequential = load_cycles(true, 1), conflicts = load_cycles(true, row_stride);
  const DramConfig timing = geometry.channel_config();
  // The lines land in bank 0 of the channels; the busiest channel has at least lines / channels of them,
  // a row cycle (tRC) apart at best.
  EXPECT_GE(conflicts, uint64_t(lines / uint32_t(geometry.channels) - 1) * uint64_t(timing.tRC));
  EXPECT_LT(sequential, conflicts / 4);
}

TEST(HbmTiming, HostDmaWaitsForTheHbm) {
  ChipModel model(WithHbmTiming(true));
  const uint32_t lines = 300, line_bytes = model.config().line_bytes();
  std::vector<uint8_t> data(lines * line_bytes);
  std::mt19937 rng(3);
  for (uint8_t& byte : data) byte = static_cast<uint8_t>(rng());
  ASSERT_TRUE(model.HostWrite(0, data.data(), data.size()).ok());
  model.MmioWrite(csr::HDMA_HOST_LO, 0);
  model.MmioWrite(csr::HDMA_HOST_HI, 0);
  model.MmioWrite(csr::HDMA_HBM_LINE, 64);
  model.MmioWrite(csr::HDMA_LINES, lines);
  model.MmioWrite(csr::HDMA_CTRL, csr::HDMA_CTRL_START);
  const uint64_t cycles = model.Run(1'000'000);
  EXPECT_EQ(model.MmioRead(csr::HDMA_STATUS), 0u);
  // Each 32-byte line is a 64-byte burst of one of the channels, written once the adapter has its data.
  EXPECT_GE(cycles, uint64_t(lines));
  std::vector<uint8_t> hbm(data.size());
  ASSERT_TRUE(model.ReadHbm(64, hbm.data(), lines).ok());
  EXPECT_EQ(hbm, data);
}

}  // namespace
}  // namespace tpu::model
