// The host DMA engine of the reference model, and sparse HBM at the top of v2's range.
#include <gtest/gtest.h>

#include "sim/model/chip_model.h"
#include "sim/model/model_test_util.h"

namespace tpu::model {
namespace {

using namespace tpu::model::testing;  // NOLINT: test helpers
namespace csr = tpu::csr;
using tpu::isa::Error;

class HostDmaTest : public ::testing::Test {
 protected:
  HostDmaTest() : model_(ChipConfig::Build()) {}

  void Start(uint64_t host, uint32_t hbm_line, uint32_t lines, bool to_host) {
    model_.MmioWrite(csr::HDMA_HOST_LO, static_cast<uint32_t>(host));
    model_.MmioWrite(csr::HDMA_HOST_HI, static_cast<uint32_t>(host >> 32));
    model_.MmioWrite(csr::HDMA_HBM_LINE, hbm_line);
    model_.MmioWrite(csr::HDMA_LINES, lines);
    model_.MmioWrite(csr::HDMA_CTRL, csr::HDMA_CTRL_START | (to_host ? csr::HDMA_CTRL_TO_HOST : 0));
  }

  // Starts a host DMA expected to be refused with `error` before moving anything.
  void ExpectRefused(uint64_t host, uint32_t hbm_line, uint32_t lines, bool to_host, Error error) {
    model_.MmioWrite(csr::IRQ_STATUS, 0xF);
    Start(host, hbm_line, lines, to_host);
    EXPECT_EQ(model_.MmioRead(csr::HDMA_STATUS),
              csr::HDMA_STATUS_ERROR | (static_cast<uint32_t>(error) << csr::HDMA_STATUS_CODE_LSB));
    EXPECT_EQ(model_.MmioRead(csr::IRQ_STATUS), csr::IRQ_STATUS_HDMA_ERROR);
    EXPECT_EQ(model_.MmioRead(csr::STATUS) & csr::STATUS_HDMA_BUSY, 0u);
    EXPECT_EQ(model_.Run(1000), 0u);
  }

  uint32_t line_bytes() const { return model_.config().line_bytes(); }
  ChipModel model_;
};

TEST_F(HostDmaTest, HostToHbmAndBack) {
  std::mt19937 rng(5);
  const uint32_t lines = 37;
  std::vector<uint8_t> data(lines * line_bytes());
  for (uint8_t& byte : data) byte = static_cast<uint8_t>(rng());
  const uint64_t host = 3 * line_bytes();
  ASSERT_TRUE(model_.HostWrite(host, data.data(), data.size()).ok());

  Start(host, 1000, lines, /*to_host=*/false);
  EXPECT_EQ(model_.MmioRead(csr::STATUS), csr::STATUS_HDMA_BUSY);
  EXPECT_EQ(model_.MmioRead(csr::HDMA_STATUS), csr::HDMA_STATUS_BUSY);
  const uint64_t cycles = model_.Run(1'000'000);
  EXPECT_GE(cycles, model_.config().hbm_latency + lines) << "latency + one line per cycle";
  EXPECT_EQ(model_.MmioRead(csr::HDMA_STATUS), 0u);
  EXPECT_EQ(model_.MmioRead(csr::IRQ_STATUS), csr::IRQ_STATUS_HDMA_DONE);
  EXPECT_TRUE(model_.Irq());
  std::vector<uint8_t> hbm(data.size());
  ASSERT_TRUE(model_.ReadHbm(1000, hbm.data(), lines).ok());
  EXPECT_EQ(hbm, data);

  model_.MmioWrite(csr::IRQ_STATUS, csr::IRQ_STATUS_HDMA_DONE);
  const uint64_t back = 100 * line_bytes();
  Start(back, 1000, lines, /*to_host=*/true);
  model_.Run(1'000'000);
  EXPECT_EQ(model_.MmioRead(csr::IRQ_STATUS), csr::IRQ_STATUS_HDMA_DONE);
  std::vector<uint8_t> round_trip(data.size());
  ASSERT_TRUE(model_.HostRead(back, round_trip.data(), round_trip.size()).ok());
  EXPECT_EQ(round_trip, data);
}

TEST_F(HostDmaTest, StartIgnoredWhileBusyAndZeroLinesCompletes) {
  Start(0, 0, 500, false);
  Start(0, 10, 1, true);  // ignored
  EXPECT_EQ(model_.MmioRead(csr::HDMA_STATUS), csr::HDMA_STATUS_BUSY);
  model_.Run(100000);
  EXPECT_EQ(model_.MmioRead(csr::IRQ_STATUS), csr::IRQ_STATUS_HDMA_DONE);
  model_.MmioWrite(csr::IRQ_STATUS, 0xF);
  Start(0, 0, 0, false);
  model_.Run(100000);
  EXPECT_EQ(model_.MmioRead(csr::IRQ_STATUS), csr::IRQ_STATUS_HDMA_DONE);
  // A write to HDMA_CTRL without START does nothing.
  model_.MmioWrite(csr::IRQ_STATUS, 0xF);
  model_.MmioWrite(csr::HDMA_CTRL, csr::HDMA_CTRL_TO_HOST);
  EXPECT_EQ(model_.MmioRead(csr::HDMA_STATUS), 0u);
  EXPECT_EQ(model_.Run(1000), 0u);
}

TEST_F(HostDmaTest, AddressErrorsMoveNothing) {
  const uint64_t host_bytes = model_.config().host_mem_bytes;
  const uint32_t hbm_lines = static_cast<uint32_t>(model_.config().hbm_lines);
  const std::vector<uint32_t> marker(model_.config().lanes, 0x5A5A5A5Au);
  WriteHbmWords(model_, hbm_lines - 1, marker);

  ExpectRefused(4, 0, 1, false, Error::BAD_HOST_ADDR);                              // not line aligned
  ExpectRefused(host_bytes + line_bytes() / 2, 0, 1, true, Error::BAD_HOST_ADDR);
  ExpectRefused(0, hbm_lines - 1, 2, false, Error::BAD_HBM_ADDR);                   // leaves HBM
  ExpectRefused(4, 0xFFFFFFFFu, 0xFFFFFFFFu, false, Error::BAD_HOST_ADDR);         // both: host first
  ExpectRefused(0, 0xFFFFFFFFu, 1, false, Error::BAD_HBM_ADDR);
  EXPECT_EQ(ReadHbmWords(model_, hbm_lines - 1, 1), marker);

  // The exact top of both memories is fine.
  model_.MmioWrite(csr::IRQ_STATUS, 0xF);
  Start(host_bytes - line_bytes(), hbm_lines - 1, 1, true);
  model_.Run(1000);
  EXPECT_EQ(model_.MmioRead(csr::IRQ_STATUS), csr::IRQ_STATUS_HDMA_DONE);
  std::vector<uint32_t> top(model_.config().lanes);
  ASSERT_TRUE(model_.HostRead(host_bytes - line_bytes(), top.data(), line_bytes()).ok());
  EXPECT_EQ(top, marker);
  // A new successful start clears the old error.
  EXPECT_EQ(model_.MmioRead(csr::HDMA_STATUS), 0u);
}

// The engine does not know the size of host memory (docs/csr.md): lines beyond it get bus errors, as the
// platform's host memory answers them, after the lines before them have moved.
TEST_F(HostDmaTest, BeyondHostMemoryIsAHostBusError) {
  const uint64_t host_bytes = model_.config().host_mem_bytes;
  const std::vector<uint32_t> line(model_.config().lanes, 0x77777777u);
  WriteHbmWords(model_, 0, line);
  WriteHbmWords(model_, 1, line);
  Start(host_bytes - line_bytes(), 0, 4, /*to_host=*/true);
  model_.Run(10000);
  EXPECT_EQ(model_.MmioRead(csr::HDMA_STATUS),
            csr::HDMA_STATUS_ERROR | (static_cast<uint32_t>(Error::HOST_BUS_ERROR) << csr::HDMA_STATUS_CODE_LSB));
  EXPECT_EQ(model_.MmioRead(csr::IRQ_STATUS), csr::IRQ_STATUS_HDMA_ERROR);
  std::vector<uint32_t> last(model_.config().lanes);
  ASSERT_TRUE(model_.HostRead(host_bytes - line_bytes(), last.data(), line_bytes()).ok());
  EXPECT_EQ(last, line) << "the line inside host memory moved";

  model_.MmioWrite(csr::IRQ_STATUS, 0xF);
  Start(uint64_t{1} << 40, 0, 1, /*to_host=*/false);
  model_.Run(10000);
  EXPECT_EQ(model_.MmioRead(csr::IRQ_STATUS), csr::IRQ_STATUS_HDMA_ERROR);
  EXPECT_EQ(ReadHbmWords(model_, 0, 1), line) << "nothing read, nothing written";
}

TEST_F(HostDmaTest, HostBusErrorStopsTheTransfer) {
  const uint32_t lines = 10;
  std::vector<uint8_t> data(lines * line_bytes(), 0xAB);
  ASSERT_TRUE(model_.HostWrite(0, data.data(), data.size()).ok());
  model_.SetHostBusErrorRange(4 * line_bytes(), 5 * line_bytes());
  Start(0, 0, lines, false);
  model_.Run(10000);
  EXPECT_EQ(model_.MmioRead(csr::HDMA_STATUS),
            csr::HDMA_STATUS_ERROR | (static_cast<uint32_t>(Error::HOST_BUS_ERROR) << csr::HDMA_STATUS_CODE_LSB));
  EXPECT_EQ(model_.MmioRead(csr::IRQ_STATUS), csr::IRQ_STATUS_HDMA_ERROR);
  std::vector<uint8_t> hbm(data.size());
  ASSERT_TRUE(model_.ReadHbm(0, hbm.data(), lines).ok());
  for (uint32_t line = 0; line < lines; ++line) {
    EXPECT_EQ(hbm[line * line_bytes()], line < 4 ? 0xAB : 0x00) << "line " << line;
  }
}

TEST_F(HostDmaTest, RunsWhileTheCoreRuns) {
  std::vector<uint8_t> data(8 * line_bytes(), 0x42);
  ASSERT_TRUE(model_.HostWrite(0, data.data(), data.size()).ok());
  LoadProgram(model_, {Li(1, 300), Addi(2, 2, 1), Bne(2, 1, 1), Halt()});
  model_.MmioWrite(csr::DOORBELL, 1);
  Start(0, 50, 8, false);
  EXPECT_EQ(model_.MmioRead(csr::STATUS), csr::STATUS_BUSY | csr::STATUS_HDMA_BUSY);
  model_.RunUntilIrq(100000);
  EXPECT_EQ(model_.MmioRead(csr::IRQ_STATUS), csr::IRQ_STATUS_HDMA_DONE) << "host DMA finishes first";
  EXPECT_EQ(model_.MmioRead(csr::STATUS), csr::STATUS_BUSY);
  model_.Run(100000);
  EXPECT_EQ(model_.MmioRead(csr::IRQ_STATUS), csr::IRQ_STATUS_HDMA_DONE | csr::IRQ_STATUS_CORE_DONE);
  std::vector<uint8_t> hbm(data.size());
  ASSERT_TRUE(model_.ReadHbm(50, hbm.data(), 8).ok());
  EXPECT_EQ(hbm, data);
}

TEST_F(HostDmaTest, BackdoorRangeChecks) {
  std::vector<uint8_t> buffer(2 * line_bytes());
  EXPECT_EQ(model_.ReadHbm(model_.config().hbm_lines - 1, buffer.data(), 2).code(), StatusCode::kOutOfRange);
  EXPECT_EQ(model_.WriteVmem(model_.config().vmem_lines, buffer.data(), 1).code(), StatusCode::kOutOfRange);
  EXPECT_EQ(model_.HostWrite(model_.config().host_mem_bytes - 1, buffer.data(), 2).code(), StatusCode::kOutOfRange);
  EXPECT_EQ(model_.HostRead(~uint64_t{0}, buffer.data(), 2).code(), StatusCode::kOutOfRange);
  EXPECT_TRUE(model_.ReadVmem(model_.config().vmem_lines - 2, buffer.data(), 2).ok());
}

TEST(SparseHbmTest, TopOfV2Range) {
  StatusOr<ChipConfig> config = ChipConfig::Named("v2");
  ASSERT_TRUE(config.ok()) << config.status();
  ChipModel model(*config);
  const uint32_t lanes = config->lanes;
  const uint32_t top = static_cast<uint32_t>(config->hbm_lines - 1);
  EXPECT_EQ(model.hbm_pages_allocated(), 0u);
  // Never-written lines read as zeros anywhere, including the top.
  EXPECT_EQ(ReadHbmWords(model, top, 1), std::vector<uint32_t>(lanes, 0u));

  // The core writes the top line, reads it back into VMEM; the host DMA brings it to host memory.
  std::vector<uint32_t> line(lanes);
  for (uint32_t n = 0; n < lanes; ++n) line[n] = 0xC0DE0000u + n;
  WriteVmemWords(model, 0, line);
  ASSERT_EQ(RunProgram(model, {Li(1, top), Li(3, 1), Li(4, 7), DmaSt(1, 0, 3, 1), Sync(), DmaLd(1, 4, 3, 1),
                               Li(5, top - (1u << 20)), DmaSt(5, 0, 3, 1), Halt()}),
            csr::STATUS_HALTED);
  EXPECT_EQ(ReadVmemWords(model, 7, 1), line);
  EXPECT_EQ(ReadHbmWords(model, top, 1), line);
  EXPECT_EQ(ReadHbmWords(model, top - 1, 1), std::vector<uint32_t>(lanes, 0u));
  EXPECT_LE(model.hbm_pages_allocated(), 2u) << "gigabytes addressable, pages allocated on first write";

  model.MmioWrite(csr::HDMA_HOST_LO, 0);
  model.MmioWrite(csr::HDMA_HBM_LINE, top);
  model.MmioWrite(csr::HDMA_LINES, 1);
  model.MmioWrite(csr::HDMA_CTRL, csr::HDMA_CTRL_START | csr::HDMA_CTRL_TO_HOST);
  model.Run(10000);
  EXPECT_EQ(model.MmioRead(csr::IRQ_STATUS) & csr::IRQ_STATUS_HDMA_DONE, csr::IRQ_STATUS_HDMA_DONE);
  std::vector<uint32_t> host(lanes);
  ASSERT_TRUE(model.HostRead(0, host.data(), config->line_bytes()).ok());
  EXPECT_EQ(host, line);
  // One past the top is refused.
  EXPECT_EQ(RunProgram(model, {Li(1, top + 1), Li(3, 1), DmaLd(1, 0, 3, 1), Halt()}), csr::STATUS_ERROR);
  EXPECT_EQ(model.MmioRead(csr::ERROR_CODE), static_cast<uint32_t>(Error::BAD_HBM_ADDR));
}

}  // namespace
}  // namespace tpu::model
