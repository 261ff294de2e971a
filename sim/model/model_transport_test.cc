#include "sim/model/model_transport.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "sim/model/model_test_util.h"

namespace tpu::model {
namespace {

using namespace tpu::model::testing;  // NOLINT: test helpers
namespace csr = tpu::csr;

TEST(ModelTransportTest, IdentityAndHostMemory) {
  ModelTransport transport;
  tpu::Transport& t = transport;
  EXPECT_EQ(t.name(), "model");
  EXPECT_EQ(t.MmioRead(csr::ID), csr::ID_MAGIC);
  EXPECT_EQ(t.HostMemoryBytes(), transport.model().config().host_mem_bytes);
  const uint64_t value = 0x1122334455667788ull;
  t.HostWrite(t.HostMemoryBytes() - 8, &value, 8);
  uint64_t back = 0;
  t.HostRead(t.HostMemoryBytes() - 8, &back, 8);
  EXPECT_EQ(back, value);
  EXPECT_THROW(t.HostWrite(t.HostMemoryBytes() - 4, &value, 8), std::out_of_range);
  EXPECT_THROW(t.HostRead(t.HostMemoryBytes(), &back, 1), std::out_of_range);
}

TEST(ModelTransportTest, PollingAdvancesTheDevice) {
  ModelTransport transport;
  tpu::Transport& t = transport;
  LoadProgram(transport.model(), {Li(1, 100), Addi(2, 2, 1), Bne(2, 1, 1), Halt()});
  const uint64_t before = t.Cycles();
  t.MmioWrite(csr::DOORBELL, 1);
  int polls = 0;
  while ((t.MmioRead(csr::STATUS) & csr::STATUS_BUSY) && polls < 100000) ++polls;
  EXPECT_EQ(t.MmioRead(csr::STATUS), csr::STATUS_HALTED);
  EXPECT_GT(polls, 10);
  EXPECT_GE(t.Cycles() - before, uint64_t{2} * (polls + 1));
}

TEST(ModelTransportTest, WaitForInterrupt) {
  ModelTransport transport;
  tpu::Transport& t = transport;
  LoadProgram(transport.model(), {Li(3, 100), DmaLd(0, 0, 3, 1), Sync(), Halt()});
  t.MmioWrite(csr::DOORBELL, 1);
  const uint64_t start = t.Cycles();
  EXPECT_FALSE(t.WaitForInterrupt(10)) << "not done after 10 cycles";
  EXPECT_EQ(t.Cycles(), start + 10);
  EXPECT_TRUE(t.WaitForInterrupt(1'000'000));
  EXPECT_LT(t.Cycles() - start, 1000u);
  EXPECT_EQ(t.MmioRead(csr::IRQ_STATUS), csr::IRQ_STATUS_CORE_DONE);
  t.MmioWrite(csr::IRQ_STATUS, csr::IRQ_STATUS_CORE_DONE);
  const uint64_t idle_start = t.Cycles();
  EXPECT_FALSE(t.WaitForInterrupt(5000));
  EXPECT_EQ(t.Cycles(), idle_start + 5000) << "an idle device still lets the time pass";
}

TEST(ModelTransportTest, NamedConfiguration) {
  StatusOr<ChipConfig> v2 = ChipConfig::Named("v2");
  ASSERT_TRUE(v2.ok()) << v2.status();
  ModelTransport transport(*v2);
  EXPECT_EQ(transport.MmioRead(csr::CFG_LANES), 128u);
  EXPECT_EQ(transport.MmioRead(csr::CFG_HBM_LINES), v2->hbm_lines);
}

}  // namespace
}  // namespace tpu::model
