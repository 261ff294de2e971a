// Driver tests on the reference model's transport and on the verilated chip's: the same register
// sequences against both, each error path followed by a successful run.
#include "sw/driver/driver.h"
#include "sw/driver/test_instructions.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "sim/model/chip_config.h"
#include "sim/model/model_transport.h"
#include "tpu_csr.h"
#include "tpu_isa.h"

#include "sysc/rtl_transport.h"

namespace tpu {
namespace {

using isa::Opcode;

using testing::Halt;
using testing::Assemble;
using testing::Li;

// s2 = 5 + 7, then halt: a program whose result is visible in a scalar register.
std::vector<uint64_t> AddProgram() { return {Li(1, 5), Assemble(Opcode::ADDI, 2, 1, 0, 0, 0, 7), Halt()}; }

constexpr uint64_t kTimeout = 1'000'000;

std::vector<uint8_t> RandomBytes(size_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> bytes(count);
  for (auto& b : bytes) b = static_cast<uint8_t>(rng());
  return bytes;
}

std::unique_ptr<Transport> MakeTransport(const std::string& backend, const model::ChipConfig& config) {
  if (backend == "rtl") {
    StatusOr<std::unique_ptr<RtlTransport>> rtl = RtlTransport::Create();
    EXPECT_TRUE(rtl.ok()) << rtl.status();
    return rtl.ok() ? std::move(rtl).value() : nullptr;
  }
  return std::make_unique<model::ModelTransport>(config);
}

class DriverTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    transport_ = MakeTransport(GetParam(), config_);
    ASSERT_NE(transport_, nullptr);
    driver_ = std::make_unique<Driver>(*transport_);
    ASSERT_TRUE(driver_->Reset().ok());
    StatusOr<DeviceInfo> info = driver_->Discover();
    ASSERT_TRUE(info.ok()) << info.status();
  }

  // A reset, discovered driver for each of the first `count` cores of the board.
  std::vector<std::unique_ptr<Driver>> CoreDrivers(uint32_t count) {
    std::vector<std::unique_ptr<Driver>> drivers;
    for (uint32_t core = 0; core < count; ++core) {
      drivers.push_back(std::make_unique<Driver>(*transport_, core));
      EXPECT_TRUE(drivers.back()->Reset().ok()) << "core " << core;
      StatusOr<DeviceInfo> info = drivers.back()->Discover();
      EXPECT_TRUE(info.ok()) << "core " << core << ": " << info.status();
    }
    return drivers;
  }

  // The reference model underneath, or nullptr on the rtl backend (for backdoor checks).
  model::ModelTransport* model() { return dynamic_cast<model::ModelTransport*>(transport_.get()); }

  // Loads and runs a program that must succeed; returns the counters of the run.
  DeviceCounters RunOk(const std::vector<uint64_t>& code) {
    Status loaded = driver_->LoadProgram(code);
    EXPECT_TRUE(loaded.ok()) << loaded;
    Status launched = driver_->Launch(0);
    EXPECT_TRUE(launched.ok()) << launched;
    Status done = driver_->WaitForCompletion(kTimeout);
    EXPECT_TRUE(done.ok()) << done;
    return driver_->ReadCounters();
  }

  // Runs a program that writes a fresh value into an HBM line and reads it back: the device is usable.
  void ExpectUsable() {
    const uint32_t value = 0x3f800000u + (++usable_checks_);
    const uint32_t line = 4242;
    DeviceCounters counters = RunOk({Li(3, 1), Assemble(Opcode::VSPLAT, 0, 0, 0, 3, 0, value),
                                     Assemble(Opcode::SYNC, 0, 0, 0, 0, isa::flag::SYNC_VPU), Li(1, line),
                                     Assemble(Opcode::DMA_ST, 0, 1, 0, 3, 0, 1), Assemble(Opcode::SYNC), Halt()});
    EXPECT_EQ(counters.instructions, 7u);
    StatusOr<std::vector<uint8_t>> bytes = driver_->CopyFromHbm(line, 1);
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    for (size_t lane = 0; lane < bytes->size() / 4; ++lane) {
      uint32_t word;
      std::memcpy(&word, bytes->data() + 4 * lane, 4);
      EXPECT_EQ(word, value) << "lane " << lane;
    }
  }

  Status RunExpectingError(const std::vector<uint64_t>& code, uint64_t timeout = kTimeout) {
    Status loaded = driver_->LoadProgram(code);
    if (!loaded.ok()) return loaded;
    Status launched = driver_->Launch(0);
    if (!launched.ok()) return launched;
    return driver_->WaitForCompletion(timeout);
  }

  model::ChipConfig config_ = model::ChipConfig::Build();
  std::unique_ptr<Transport> transport_;
  std::unique_ptr<Driver> driver_;
  uint32_t usable_checks_ = 0;
};

TEST_P(DriverTest, DiscoversTheConfiguration) {
  const DeviceInfo& info = driver_->info();
  EXPECT_EQ(info.version, csr::VERSION_VALUE);
  EXPECT_EQ(info.lanes, config_.lanes);
  EXPECT_EQ(info.vmem_lines, config_.vmem_lines);
  EXPECT_EQ(info.imem_words, config_.imem_words);
  EXPECT_EQ(info.hbm_lines, config_.hbm_lines);
  EXPECT_EQ(info.num_cores, config_.num_cores);
  EXPECT_EQ(info.sregs, config_.sregs);
  EXPECT_EQ(info.line_bytes, config_.line_bytes());
}

// A bus with nothing on it: every read returns 0.
class EmptyBus : public Transport {
 public:
  std::string name() const override { return "empty"; }
  uint32_t MmioRead(uint32_t) override { return 0; }
  void MmioWrite(uint32_t, uint32_t) override {}
  uint64_t HostMemoryBytes() const override { return 0; }
  void HostWrite(uint64_t, const void*, size_t) override {}
  void HostRead(uint64_t, void*, size_t) override {}
  void Advance(uint64_t cycles) override { cycles_ += cycles; }
  uint32_t CoresPerChip() const override { return 1; }
  bool WaitForInterruptOn(uint64_t, uint64_t timeout) override {
    cycles_ += timeout;
    return false;
  }
  uint64_t Cycles() const override { return cycles_; }

 private:
  uint64_t cycles_ = 0;
};

TEST(DriverDiscoveryTest, NoDeviceIsFailedPrecondition) {
  EmptyBus bus;
  Driver driver(bus);
  StatusOr<DeviceInfo> info = driver.Discover();
  ASSERT_FALSE(info.ok());
  EXPECT_EQ(info.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(info.status().message().find("no tpusim device"), std::string::npos) << info.status();
  // Nothing else works before a successful discovery.
  EXPECT_EQ(driver.LoadProgram({0}).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(driver.Launch(0).code(), StatusCode::kFailedPrecondition);
}

// Every core of the chip is a device of its own: its registers, IMEM, HBM and interrupt line. Both run
// programs at once on data of their own; each ends with its own interrupt and its own results.
TEST_P(DriverTest, EveryCoreRunsItsOwnProgramAtOnce) {
  const uint32_t cores = transport_->Cores();
  EXPECT_EQ(cores, config_.num_cores);
  std::vector<std::unique_ptr<Driver>> drivers = CoreDrivers(cores);
  const uint32_t lanes = driver_->info().lanes;
  for (uint32_t core = 0; core < cores; ++core) {
    Driver& driver = *drivers[core];
    ASSERT_TRUE(driver.discovered());
    EXPECT_EQ(transport_->MmioRead(transport_->MmioOffset(core, csr::CFG_CORE_ID)), core);
    // Two lines of f32 2^k in HBM line 100..101 of this core; the program doubles them (k + 1 more per
    // core, so each core's result shows it ran its own program on its own data) into line 200..201.
    std::vector<float> values(2 * lanes);
    for (uint32_t i = 0; i < values.size(); ++i) values[i] = float(i + 1) * float(core + 1);
    ASSERT_TRUE(driver.CopyToHbm(values.data(), values.size() * 4, 100).ok());
    std::vector<uint64_t> code = {Li(1, 100), Li(2, 0), Li(3, 2), Assemble(Opcode::DMA_LD, 0, 1, 2, 3, 0, 1),
                                  Assemble(Opcode::SYNC)};
    for (uint32_t k = 0; k <= core; ++k) code.insert(code.end(), {Assemble(Opcode::VADD, 2, 2, 2, 3), Assemble(Opcode::SYNC)});
    code.insert(code.end(), {Li(1, 200), Assemble(Opcode::DMA_ST, 0, 1, 2, 3, 0, 1),
                             Assemble(Opcode::SYNC), Halt()});
    ASSERT_TRUE(driver.LoadProgram(code).ok());
  }
  for (auto& driver : drivers) ASSERT_TRUE(driver->Launch(0).ok());
  for (uint32_t core = 0; core < cores; ++core) {
    Status done = drivers[core]->WaitForCompletion(kTimeout);
    ASSERT_TRUE(done.ok()) << "core " << core << ": " << done;
    std::vector<float> out(2 * lanes);
    ASSERT_TRUE(drivers[core]->CopyFromHbm(200, 2, out.data()).ok());
    for (uint32_t i = 0; i < out.size(); ++i)
      EXPECT_EQ(out[i], float(i + 1) * float(core + 1) * float(1u << (core + 1))) << "core " << core << " lane " << i;
    // The other cores' HBM did not see this core's data.
    for (uint32_t other = 0; other < cores; ++other) {
      if (other == core) continue;
      std::vector<float> input(2 * lanes);
      ASSERT_TRUE(drivers[other]->CopyFromHbm(100, 2, input.data()).ok());
      EXPECT_EQ(input[0], float(other + 1)) << "core " << other << "'s input";
    }
  }
  ExpectUsable();
}

// RDMA: core 0 sends lines of its VMEM into core 1's HBM and posts core 1's semaphore 5; core 1 waits on
// it, then loads the lines, doubles them and stores them. Its SEMWAIT is the only synchronization.
TEST_P(DriverTest, RdmaWritesAnotherCoresHbmAndPostsItsSemaphore) {
  if (transport_->Cores() < 2) GTEST_SKIP() << "one core";
  std::vector<std::unique_ptr<Driver>> drivers = CoreDrivers(2);
  Driver& sender = *drivers[0];
  Driver& receiver = *drivers[1];
  ASSERT_TRUE(sender.discovered() && receiver.discovered());
  const uint32_t lanes = sender.info().lanes;
  std::vector<float> values(4 * lanes);
  for (uint32_t i = 0; i < values.size(); ++i) values[i] = 0.25f * float(i) - 3.0f;
  ASSERT_TRUE(sender.CopyToHbm(values.data(), values.size() * 4, 100).ok());
  const uint32_t semaphore = csr::HOST_SEMS + 1;
  ASSERT_TRUE(receiver.LoadProgram({Assemble(Opcode::SEMWAIT, 0, 0, 0, 0, 0, semaphore), Li(1, 300), Li(2, 10), Li(3, 4),
                                    Assemble(Opcode::DMA_LD, 0, 1, 2, 3, 0, 1), Assemble(Opcode::SYNC),
                                    Assemble(Opcode::VADD, 2, 2, 2, 3), Assemble(Opcode::SYNC), Li(1, 400),
                                    Assemble(Opcode::DMA_ST, 0, 1, 2, 3, 0, 1), Assemble(Opcode::SYNC), Halt()})
                  .ok());
  ASSERT_TRUE(sender.LoadProgram({Li(1, 100), Li(2, 0), Li(3, 4), Assemble(Opcode::DMA_LD, 0, 1, 2, 3, 0, 1),
                                  Assemble(Opcode::SYNC), Li(4, 1), Li(1, 300),
                                  Assemble(Opcode::RDMA, 4, 1, 2, 3, isa::flag::RDMA_POST, semaphore),
                                  Assemble(Opcode::SYNC), Halt()})
                  .ok());
  ASSERT_TRUE(receiver.Launch(0).ok());
  ASSERT_TRUE(sender.Launch(0).ok());
  Status sent = sender.WaitForCompletion(kTimeout);
  ASSERT_TRUE(sent.ok()) << sent;
  Status received = receiver.WaitForCompletion(kTimeout);
  ASSERT_TRUE(received.ok()) << received;
  EXPECT_GT(receiver.ReadCounters().feed_stall_cycles, 0u) << "the receiver waited for the lines";
  std::vector<float> landed(values.size()), doubled(values.size()), untouched(values.size());
  ASSERT_TRUE(receiver.CopyFromHbm(300, 4, landed.data()).ok());
  ASSERT_TRUE(receiver.CopyFromHbm(400, 4, doubled.data()).ok());
  ASSERT_TRUE(sender.CopyFromHbm(300, 4, untouched.data()).ok());
  for (uint32_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(landed[i], values[i]) << i;
    EXPECT_EQ(doubled[i], 2 * values[i]) << i;
    EXPECT_EQ(untouched[i], 0.0f) << "the sender's own HBM, line " << 300 + i / lanes;
  }
  EXPECT_EQ(transport_->MmioRead(transport_->MmioOffset(1, csr::SEM_COUNTS_HI)), 0u) << "the post was taken";

  // A core the chip lacks, and a semaphore past the last.
  ASSERT_TRUE(sender.LoadProgram({Li(4, transport_->CoresPerChip()), Li(3, 1),
                                  Assemble(Opcode::RDMA, 4, 1, 2, 3, 0, 0), Halt()}).ok());
  ASSERT_TRUE(sender.Launch(0).ok());
  Status bad_core = sender.WaitForCompletion(kTimeout);
  EXPECT_EQ(bad_core.code(), StatusCode::kOutOfRange) << bad_core;
  EXPECT_NE(bad_core.message().find("BAD_CORE at pc 2"), std::string::npos) << bad_core;
  ASSERT_TRUE(sender.LoadProgram({Li(4, 1), Li(3, 1), Assemble(Opcode::RDMA, 4, 1, 2, 3, isa::flag::RDMA_POST, csr::SEMS),
                                  Halt()}).ok());
  ASSERT_TRUE(sender.Launch(0).ok());
  Status bad_semaphore = sender.WaitForCompletion(kTimeout);
  EXPECT_NE(bad_semaphore.message().find("ILLEGAL_INSTR at pc 2"), std::string::npos) << bad_semaphore;
  ExpectUsable();
}

// An all-reduce of two cores over RDMA, the pattern collectives lower to: each core sends its lines to the
// other at once (both directions of the network busy together, each core's HBM written by the other
// while its own DMA loads), waits for the other's, adds and stores. Sizes of a few lines to a few hundred.
TEST_P(DriverTest, TwoCoresAllReduceOverRdma) {
  if (transport_->Cores() < 2) GTEST_SKIP() << "one core";
  std::vector<std::unique_ptr<Driver>> cores = CoreDrivers(2);
  for (const auto& core : cores) ASSERT_TRUE(core->discovered());
  const uint32_t lanes = driver_->info().lanes;
  const uint32_t semaphore = csr::HOST_SEMS;
  std::mt19937 rng(11);
  for (uint32_t lines : {1u, 7u, 300u}) {
    std::vector<std::vector<float>> inputs(2, std::vector<float>(lines * lanes));
    std::uniform_real_distribution<float> value(-4.0f, 4.0f);
    for (uint32_t core = 0; core < 2; ++core) {
      for (float& v : inputs[core]) v = value(rng);
      ASSERT_TRUE(cores[core]->CopyToHbm(inputs[core].data(), inputs[core].size() * 4, 100).ok());
      // s1 HBM line, s2 own VMEM lines, s3 count, s4 the other core, s5 the received lines in VMEM.
      ASSERT_TRUE(cores[core]->LoadProgram({
          Li(1, 100), Li(2, 0), Li(3, lines), Li(4, 1 - core), Li(5, 4096),
          Assemble(Opcode::DMA_LD, 0, 1, 2, 3, 0, 1), Assemble(Opcode::SYNC),
          Li(1, 5000), Assemble(Opcode::RDMA, 4, 1, 2, 3, isa::flag::RDMA_POST, semaphore),
          Assemble(Opcode::SEMWAIT, 0, 0, 0, 0, 0, semaphore),
          Assemble(Opcode::DMA_LD, 0, 1, 5, 3, 0, 1), Assemble(Opcode::SYNC),
          Assemble(Opcode::VADD, 2, 2, 5, 3), Assemble(Opcode::SYNC),
          Li(1, 9000), Assemble(Opcode::DMA_ST, 0, 1, 2, 3, 0, 1), Assemble(Opcode::SYNC), Halt()}).ok());
    }
    for (auto& core : cores) ASSERT_TRUE(core->Launch(0).ok());
    for (uint32_t core = 0; core < 2; ++core) {
      Status done = cores[core]->WaitForCompletion(kTimeout);
      ASSERT_TRUE(done.ok()) << "core " << core << ", " << lines << " lines: " << done;
    }
    for (uint32_t core = 0; core < 2; ++core) {
      std::vector<float> sum(lines * lanes);
      ASSERT_TRUE(cores[core]->CopyFromHbm(9000, lines, sum.data()).ok());
      for (uint32_t i = 0; i < sum.size(); ++i) {
        ASSERT_EQ(sum[i], inputs[core][i] + inputs[1 - core][i]) << "core " << core << ", " << lines << " lines, " << i;
      }
    }
  }
}

TEST_P(DriverTest, LoadsLaunchesAndCompletesAProgram) {
  const std::vector<uint64_t> code = AddProgram();
  ASSERT_TRUE(driver_->LoadProgram(code).ok());
  StatusOr<std::vector<uint64_t>> readback = driver_->ReadProgram(0, static_cast<uint32_t>(code.size()));
  ASSERT_TRUE(readback.ok()) << readback.status();
  EXPECT_EQ(*readback, code);
  ASSERT_TRUE(driver_->Launch(0).ok());
  Status done = driver_->WaitForCompletion(kTimeout);
  ASSERT_TRUE(done.ok()) << done;
  if (model()) EXPECT_EQ(model()->model().sreg(2), 12u);
  DeviceCounters counters = driver_->ReadCounters();
  EXPECT_EQ(counters.instructions, code.size());
  EXPECT_GE(counters.cycles, code.size());
  EXPECT_TRUE(transport_->MmioRead(csr::STATUS) & csr::STATUS_HALTED);
  // The completion was consumed: nothing left pending.
  EXPECT_EQ(transport_->MmioRead(csr::IRQ_STATUS), 0u);
}

TEST_P(DriverTest, StartsAtTheGivenPc) {
  // Word 0 is illegal; starting at 1 skips it.
  std::vector<uint64_t> code = {Assemble(static_cast<Opcode>(0xff)), Li(2, 99), Halt()};
  ASSERT_TRUE(driver_->LoadProgram(code).ok());
  ASSERT_TRUE(driver_->Launch(1).ok());
  Status done = driver_->WaitForCompletion(kTimeout);
  ASSERT_TRUE(done.ok()) << done;
  if (model()) EXPECT_EQ(model()->model().sreg(2), 99u);
  EXPECT_EQ(driver_->Launch(driver_->info().imem_words).code(), StatusCode::kOutOfRange);
}

TEST_P(DriverTest, ProgramLargerThanImemIsResourceExhausted) {
  std::vector<uint64_t> code(driver_->info().imem_words + 1, Assemble(Opcode::NOP));
  Status loaded = driver_->LoadProgram(code);
  EXPECT_EQ(loaded.code(), StatusCode::kResourceExhausted) << loaded;
  // Exactly full fits.
  code.resize(driver_->info().imem_words);
  code.back() = Halt();
  EXPECT_TRUE(driver_->LoadProgram(code).ok());
  ExpectUsable();
}

TEST_P(DriverTest, IllegalInstructionNamesErrorAndPc) {
  Status error = RunExpectingError({Li(1, 1), Assemble(static_cast<Opcode>(0x7f)), Halt()});
  EXPECT_EQ(error.code(), StatusCode::kInternal) << error;
  EXPECT_NE(error.message().find("ILLEGAL_INSTR"), std::string::npos) << error;
  EXPECT_NE(error.message().find("pc 1"), std::string::npos) << error;
  ExpectUsable();
}

TEST_P(DriverTest, BadHbmAddressInDmaIsOutOfRange) {
  const uint32_t hbm_lines = driver_->info().hbm_lines;
  // DMA_LD s1=hbm_lines-1, s2=0 (VMEM), s3=2 lines, stride 1: the second line is past the end of HBM.
  Status error = RunExpectingError({Li(1, hbm_lines - 1), Li(3, 2), Assemble(Opcode::DMA_LD, 0, 1, 0, 3, 0, 1), Halt()});
  EXPECT_EQ(error.code(), StatusCode::kOutOfRange) << error;
  EXPECT_NE(error.message().find("BAD_HBM_ADDR"), std::string::npos) << error;
  EXPECT_NE(error.message().find("pc 2"), std::string::npos) << error;
  ExpectUsable();
}

TEST_P(DriverTest, BadVmemAddressIsOutOfRange) {
  const uint32_t vmem_lines = driver_->info().vmem_lines;
  Status error = RunExpectingError({Li(1, vmem_lines), Li(3, 1), Assemble(Opcode::VSPLAT, 1, 0, 0, 3, 0, 0), Halt()});
  EXPECT_EQ(error.code(), StatusCode::kOutOfRange) << error;
  EXPECT_NE(error.message().find("BAD_VMEM_ADDR"), std::string::npos) << error;
  ExpectUsable();
}

TEST_P(DriverTest, RunningOffTheEndOfImemIsBadPc) {
  const uint32_t last = driver_->info().imem_words - 1;
  ASSERT_TRUE(driver_->LoadProgram({Assemble(Opcode::JMP, 0, 0, 0, 0, 0, last)}).ok());
  ASSERT_TRUE(driver_->LoadProgram({Assemble(Opcode::NOP)}, last).ok());
  ASSERT_TRUE(driver_->Launch(0).ok());
  Status error = driver_->WaitForCompletion(kTimeout);
  EXPECT_EQ(error.code(), StatusCode::kInternal) << error;
  EXPECT_NE(error.message().find("BAD_PC"), std::string::npos) << error;
  ExpectUsable();
}

TEST_P(DriverTest, InfiniteLoopTimesOutAndTheDeviceIsReset) {
  ASSERT_TRUE(driver_->SetWatchdogLimit(0).ok());
  EXPECT_EQ(driver_->WatchdogLimit(), 0u);
  const uint64_t before = transport_->Cycles();
  Status error = RunExpectingError({Assemble(Opcode::JMP, 0, 0, 0, 0, 0, 0)}, 50'000);
  EXPECT_EQ(error.code(), StatusCode::kDeadlineExceeded) << error;
  EXPECT_NE(error.message().find("reset"), std::string::npos) << error;
  EXPECT_GE(transport_->Cycles() - before, 50'000u);
  EXPECT_FALSE(transport_->MmioRead(csr::STATUS) & csr::STATUS_BUSY);
  ExpectUsable();
}

TEST_P(DriverTest, WatchdogStopsAStalledCore) {
  // VSPLAT over all of VMEM keeps the VPU busy for thousands of cycles; SYNC then issues nothing for
  // longer than the watchdog allows.
  ASSERT_TRUE(driver_->SetWatchdogLimit(50).ok());
  Status error = RunExpectingError(
      {Li(3, driver_->info().vmem_lines), Assemble(Opcode::VSPLAT, 0, 0, 0, 3, 0, 0), Assemble(Opcode::SYNC), Halt()});
  EXPECT_EQ(error.code(), StatusCode::kDeadlineExceeded) << error;
  EXPECT_NE(error.message().find("WATCHDOG"), std::string::npos) << error;
  ASSERT_TRUE(driver_->SetWatchdogLimit(1'000'000).ok());
  ExpectUsable();
}

TEST_P(DriverTest, LaunchWhileBusyIsRefusedAndResetRecovers) {
  ASSERT_TRUE(driver_->SetWatchdogLimit(0).ok());
  ASSERT_TRUE(driver_->LoadProgram({Assemble(Opcode::JMP, 0, 0, 0, 0, 0, 0)}).ok());
  ASSERT_TRUE(driver_->Launch(0).ok());
  transport_->WaitForInterrupt(100);
  EXPECT_EQ(driver_->Launch(0).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(driver_->LoadProgram(AddProgram()).code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(driver_->Reset().ok());
  EXPECT_EQ(transport_->MmioRead(csr::STATUS) & csr::STATUS_BUSY, 0u);
  ExpectUsable();
}

TEST_P(DriverTest, HostDmaRoundTrip) {
  const uint32_t line_bytes = driver_->info().line_bytes;
  // A partial last line: the rest of that line must arrive as zeros.
  const std::vector<uint8_t> data = RandomBytes(37 * line_bytes + 5, 1);
  ASSERT_TRUE(driver_->CopyToHbm(data, 1000).ok());
  StatusOr<std::vector<uint8_t>> back = driver_->CopyFromHbm(1000, 38);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->size(), 38u * line_bytes);
  EXPECT_TRUE(std::equal(data.begin(), data.end(), back->begin()));
  for (size_t i = data.size(); i < back->size(); ++i) EXPECT_EQ((*back)[i], 0) << i;
  // The bytes really are in HBM, where the model's backdoor sees them.
  if (model()) {
    std::vector<uint8_t> backdoor(38 * line_bytes);
    ASSERT_TRUE(model()->model().ReadHbm(1000, backdoor.data(), 38).ok());
    EXPECT_EQ(backdoor, *back);
  }
}

TEST_P(DriverTest, HostDmaIsChunkedThroughASmallStagingArea) {
  const uint32_t line_bytes = driver_->info().line_bytes;
  driver_->SetStagingLimit(3 * line_bytes);
  const std::vector<uint8_t> data = RandomBytes(20 * line_bytes, 2);
  ASSERT_TRUE(driver_->CopyToHbm(data, 5).ok());
  StatusOr<std::vector<uint8_t>> back = driver_->CopyFromHbm(5, 20);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, data);
}

TEST_P(DriverTest, HostDmaToABadHbmAddressIsOutOfRange) {
  const uint32_t hbm_lines = driver_->info().hbm_lines;
  const std::vector<uint8_t> data = RandomBytes(2 * driver_->info().line_bytes, 3);
  Status to = driver_->CopyToHbm(data, hbm_lines - 1);
  EXPECT_EQ(to.code(), StatusCode::kOutOfRange) << to;
  EXPECT_NE(to.message().find("BAD_HBM_ADDR"), std::string::npos) << to;
  StatusOr<std::vector<uint8_t>> from = driver_->CopyFromHbm(hbm_lines, 1);
  EXPECT_EQ(from.status().code(), StatusCode::kOutOfRange) << from.status();
  // The last line itself is fine, and the engine still works.
  ASSERT_TRUE(driver_->CopyToHbm(data.data(), driver_->info().line_bytes, hbm_lines - 1).ok());
  StatusOr<std::vector<uint8_t>> last = driver_->CopyFromHbm(hbm_lines - 1, 1);
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_TRUE(std::equal(last->begin(), last->end(), data.begin()));
  ExpectUsable();
}

TEST_P(DriverTest, HostBusErrorIsReported) {
  if (!model()) GTEST_SKIP() << "host bus errors are injected through the reference model";
  model()->model().SetHostBusErrorRange(0, 1 << 20);
  const std::vector<uint8_t> data = RandomBytes(driver_->info().line_bytes, 4);
  Status error = driver_->CopyToHbm(data, 0);
  EXPECT_FALSE(error.ok());
  EXPECT_NE(error.message().find("HOST_BUS_ERROR"), std::string::npos) << error;
  model()->model().SetHostBusErrorRange(0, 0);
  EXPECT_TRUE(driver_->CopyToHbm(data, 0).ok());
}

TEST_P(DriverTest, ProgramMovesDataThroughVmemAndCountsIt) {
  // HBM[200..208) -> VMEM[0..8) -> HBM[300..308), then compare.
  const uint32_t line_bytes = driver_->info().line_bytes;
  const std::vector<uint8_t> data = RandomBytes(8 * line_bytes, 5);
  ASSERT_TRUE(driver_->CopyToHbm(data, 200).ok());
  DeviceCounters counters = RunOk({Li(1, 200), Li(3, 8), Assemble(Opcode::DMA_LD, 0, 1, 0, 3, 0, 1),
                                   Assemble(Opcode::SYNC, 0, 0, 0, 0, isa::flag::SYNC_DMA), Li(1, 300),
                                   Assemble(Opcode::DMA_ST, 0, 1, 0, 3, 0, 1), Assemble(Opcode::SYNC), Halt()});
  EXPECT_EQ(counters.dma_lines, 16u);
  StatusOr<std::vector<uint8_t>> back = driver_->CopyFromHbm(300, 8);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, data);
}

TEST_P(DriverTest, CompletionOfARunDuringAHostDmaIsNotLost) {
  // A short run finishes while the driver waits for a long host DMA: its completion must still be seen.
  ASSERT_TRUE(driver_->LoadProgram(AddProgram()).ok());
  ASSERT_TRUE(driver_->Launch(0).ok());
  const std::vector<uint8_t> data = RandomBytes(4096 * driver_->info().line_bytes, 6);
  ASSERT_TRUE(driver_->CopyToHbm(data, 50).ok());
  Status done = driver_->WaitForCompletion(kTimeout);
  EXPECT_TRUE(done.ok()) << done;
  if (model()) EXPECT_EQ(model()->model().sreg(2), 12u);
}

// The infeed/outfeed handshake of docs/csr.md, in miniature: the host fills a slot and posts
// SEM_INFEED_FULL; the program takes it, adds 1.0 to the line, stores it into the outfeed slot and posts
// SEM_OUTFEED_FULL, three times. The host answers each post while the core runs.
TEST_P(DriverTest, HostSemaphoresHandOverDataWhileTheCoreRuns) {
  const uint32_t in_slot = 600, out_slot = 700, line_bytes = driver_->info().line_bytes;
  const uint32_t one = 0x3f800000u;
  driver_->ClearSemaphores();
  const std::vector<uint64_t> program = {
      Li(1, in_slot), Li(2, out_slot), Li(3, 1), Li(4, 3),
      /*4: loop*/ Assemble(Opcode::SEMWAIT, 0, 0, 0, 0, 0, csr::SEM_INFEED_FULL),
      Assemble(Opcode::DMA_LD, 0, 1, 0, 3, 0, 1), Assemble(Opcode::SYNC, 0, 0, 0, 0, isa::flag::SYNC_DMA),
      Assemble(Opcode::VADD, 0, 0, 0, 3, isa::flag::VADD_SRC2_IMM, one),
      Assemble(Opcode::SYNC, 0, 0, 0, 0, isa::flag::SYNC_VPU),
      Assemble(Opcode::SEMWAIT, 0, 0, 0, 0, 0, csr::SEM_OUTFEED_FREE), Assemble(Opcode::DMA_ST, 0, 2, 0, 3, 0, 1),
      Assemble(Opcode::SYNC, 0, 0, 0, 0, isa::flag::SYNC_DMA),
      Assemble(Opcode::SEMPOST, 0, 0, 0, 0, 0, csr::SEM_OUTFEED_FULL), Assemble(Opcode::ADDI, 4, 4, 0, 0, 0, 0xffffffffu),
      Assemble(Opcode::BNE, 0, 4, 0, 0, 0, 4), Halt()};
  ASSERT_TRUE(driver_->LoadProgram(program).ok());
  driver_->PostSemaphore(csr::SEM_OUTFEED_FREE);
  ASSERT_TRUE(driver_->Launch(0).ok());
  std::vector<float> received;
  for (int step = 0; step < 3; ++step) {
    std::vector<float> values(line_bytes / 4, static_cast<float>(10 * step));
    ASSERT_TRUE(driver_->CopyToHbm(values.data(), line_bytes, in_slot).ok());
    driver_->PostSemaphore(csr::SEM_INFEED_FULL);
    while (driver_->ReadSemaphores()[csr::SEM_OUTFEED_FULL] == 0) {
      StatusOr<RunEvent> event = driver_->WaitForRunEvent(kTimeout);
      ASSERT_TRUE(event.ok()) << event.status();
    }
    driver_->TakeSemaphore(csr::SEM_OUTFEED_FULL);
    std::vector<float> out(line_bytes / 4);
    ASSERT_TRUE(driver_->CopyFromHbm(out_slot, 1, out.data()).ok());
    driver_->PostSemaphore(csr::SEM_OUTFEED_FREE);
    received.push_back(out[0]);
    EXPECT_EQ(out.back(), 10.0f * step + 1.0f);
  }
  EXPECT_EQ(received, (std::vector<float>{1.0f, 11.0f, 21.0f}));
  ASSERT_TRUE(driver_->WaitForCompletion(kTimeout).ok());
  const DeviceCounters counters = driver_->ReadCounters();
  // The core waited for each batch: the host's transfers happen after the doorbell.
  EXPECT_GT(counters.feed_stall_cycles, 0u);
  EXPECT_LE(counters.feed_stall_cycles, counters.stall_cycles);
  EXPECT_EQ(driver_->ReadSemaphores(), (std::vector<uint32_t>{0, 0, 0, 1}));
  ExpectUsable();
}

TEST_P(DriverTest, AnEmptyInfeedStopsTheCoreWithTheWatchdogAndCountsAsFeedStall) {
  driver_->ClearSemaphores();
  ASSERT_TRUE(driver_->SetWatchdogLimit(5000).ok());
  Status error = RunExpectingError({Assemble(Opcode::SEMWAIT, 0, 0, 0, 0, 0, csr::SEM_INFEED_FULL), Halt()});
  EXPECT_EQ(error.code(), StatusCode::kDeadlineExceeded) << error;
  EXPECT_NE(error.message().find("WATCHDOG"), std::string::npos) << error;
  EXPECT_NE(error.message().find("SEMWAIT"), std::string::npos) << error;
  const DeviceCounters counters = driver_->ReadCounters();
  EXPECT_GE(counters.feed_stall_cycles, 4990u);
  EXPECT_LE(counters.feed_stall_cycles, 5010u);
  ASSERT_TRUE(driver_->SetWatchdogLimit(1'000'000).ok());
  ExpectUsable();
}

TEST_P(DriverTest, SemaphoresSaturateNeverGoNegativeAndTheResetClearsThem) {
  driver_->ClearSemaphores();
  for (int i = 0; i < 300; ++i) driver_->PostSemaphore(1);
  driver_->TakeSemaphore(0);
  driver_->PostSemaphore(csr::HOST_SEMS);  // no such semaphore: ignored
  EXPECT_EQ(driver_->ReadSemaphores(), (std::vector<uint32_t>{0, (1u << csr::SEM_BITS) - 1, 0, 0}));
  // The program's own posts and takes; a post raises the interrupt.
  RunOk({Assemble(Opcode::SEMWAIT, 0, 0, 0, 0, 0, 1), Assemble(Opcode::SEMPOST, 0, 0, 0, 0, 0, 3),
         Assemble(Opcode::SEMPOST, 0, 0, 0, 0, 0, 3), Halt()});
  EXPECT_EQ(driver_->ReadSemaphores(), (std::vector<uint32_t>{0, (1u << csr::SEM_BITS) - 2, 0, 2}));
  ASSERT_TRUE(driver_->Reset().ok());
  EXPECT_EQ(driver_->ReadSemaphores(), (std::vector<uint32_t>{0, 0, 0, 0}));
}

TEST_P(DriverTest, ASemaphoreBeyondTheLastIsAnIllegalInstruction) {
  Status error = RunExpectingError({Assemble(Opcode::SEMPOST, 0, 0, 0, 0, 0, csr::SEMS), Halt()});
  EXPECT_EQ(error.code(), StatusCode::kInternal) << error;
  EXPECT_NE(error.message().find("ILLEGAL_INSTR at pc 0"), std::string::npos) << error;
  ExpectUsable();
}

TEST_P(DriverTest, TheHostLinkChargesTransfersAndLaunchesInDeviceTime) {
  const uint32_t line_bytes = driver_->info().line_bytes;
  const std::vector<uint8_t> data = RandomBytes(64 * line_bytes, 7);
  ASSERT_TRUE(driver_->CopyToHbm(data, 100).ok());  // HBM rows open: the copies below time alike
  uint64_t before = transport_->Cycles();
  ASSERT_TRUE(driver_->CopyToHbm(data, 100).ok());
  const uint64_t without_link = transport_->Cycles() - before;
  driver_->set_host_link(HostLinkModel::PcieGen3x16());
  const uint64_t link_cycles = driver_->host_link().TransferCycles(data.size());
  EXPECT_EQ(link_cycles, 1000 + (data.size() + 11) / 12);
  before = transport_->Cycles();
  ASSERT_TRUE(driver_->CopyToHbm(data, 100).ok());
  EXPECT_NEAR(static_cast<double>(transport_->Cycles() - before), static_cast<double>(without_link + link_cycles),
              without_link * 0.1);
  before = transport_->Cycles();
  RunOk(AddProgram());
  EXPECT_GE(transport_->Cycles() - before, driver_->host_link().launch_latency_cycles);
}

INSTANTIATE_TEST_SUITE_P(Backends, DriverTest, ::testing::Values("model", "rtl"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace tpu

// Own main: with the rtl backend linked in, libsystemc.so brings a main of its own.
int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
