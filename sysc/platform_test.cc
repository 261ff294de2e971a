// Tests of the SystemC platform through RtlTransport: register access, programs run from IMEM, DMA
// through HBM, host DMA through the TLM host memory, error recovery and tracing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "sw/driver/test_instructions.h"
#include "sysc/rtl_transport.h"
#include "tpu_config.h"
#include "tpu_csr.h"
#include "tpu_isa.h"

namespace tpu {
namespace {

using isa::Opcode;
constexpr size_t kLineBytes = sysc::kLineBytes;
constexpr uint64_t kRunTimeout = 200000;  // cycles; every program here finishes far sooner

using testing::Halt;
using testing::Li;
using testing::Assemble;

std::vector<uint8_t> RandomBytes(size_t count, uint32_t seed) {
  std::mt19937 generator(seed);
  std::vector<uint8_t> bytes(count);
  for (uint8_t& byte : bytes) byte = static_cast<uint8_t>(generator());
  return bytes;
}

void LoadProgram(Transport& transport, const std::vector<uint64_t>& words) {
  for (size_t i = 0; i < words.size(); ++i) {
    transport.MmioWrite(csr::IMEM_WINDOW + 8 * i, static_cast<uint32_t>(words[i]));
    transport.MmioWrite(csr::IMEM_WINDOW + 8 * i + 4, static_cast<uint32_t>(words[i] >> 32));
  }
}

// Starts the core at pc 0 and waits for its interrupt.
bool RunProgram(Transport& transport, uint64_t timeout = kRunTimeout) {
  transport.MmioWrite(csr::START_PC, 0);
  transport.MmioWrite(csr::DOORBELL, 1);
  return transport.WaitForInterrupt(timeout);
}

std::unique_ptr<RtlTransport> MakeTransport(const RtlTraceOptions& trace = {}) {
  StatusOr<std::unique_ptr<RtlTransport>> transport = RtlTransport::Create(trace);
  EXPECT_TRUE(transport.ok()) << transport.status();
  return transport.ok() ? std::move(transport).value() : nullptr;
}

TEST(PlatformTest, ResetThenIdAndConfigRegisters) {
  auto transport = MakeTransport();
  ASSERT_NE(transport, nullptr);
  EXPECT_EQ(transport->name(), "rtl");
  EXPECT_EQ(transport->MmioRead(csr::ID), csr::ID_MAGIC);
  EXPECT_EQ(transport->MmioRead(csr::VERSION), csr::VERSION_VALUE);
  EXPECT_EQ(transport->MmioRead(csr::CFG_LANES), cfg::kLanes);
  EXPECT_EQ(transport->MmioRead(csr::CFG_VMEM_LINES), cfg::kVmemLines);
  EXPECT_EQ(transport->MmioRead(csr::CFG_IMEM_WORDS), cfg::kImemWords);
  EXPECT_EQ(transport->MmioRead(csr::CFG_HBM_LINES), cfg::kHbmLines);
  EXPECT_EQ(transport->MmioRead(csr::CFG_NUM_CORES), cfg::kNumCores);
  EXPECT_EQ(transport->MmioRead(csr::CFG_SREGS), cfg::kSregs);
  EXPECT_EQ(transport->MmioRead(csr::CFG_HBM_CHANNELS), cfg::kHbmChannels);
  EXPECT_EQ(transport->MmioRead(csr::STATUS), 0u);
  EXPECT_EQ(transport->MmioRead(csr::IRQ_ENABLE), 0x1fu);
  EXPECT_EQ(transport->mmio_errors(), 0u);
  // Device time passes only while the kernel runs: the reset plus a few cycles per access.
  const uint64_t cycles = transport->Cycles();
  EXPECT_GT(cycles, 10u * 2);
  EXPECT_LT(cycles, 10u * 20 + 100);
}

TEST(PlatformTest, ProgramMovesDataWithDmaAndHalts) {
  auto transport = MakeTransport();
  ASSERT_NE(transport, nullptr);
  constexpr uint32_t kSourceLine = 100, kDestLine = 7000, kVmemLine = 16, kLines = 4;
  const std::vector<uint8_t> data = RandomBytes(kLines * kLineBytes, 1);
  ASSERT_TRUE(transport->platform().HbmDebugWrite(0, kSourceLine * kLineBytes, data.data(), data.size()).ok());

  const std::vector<uint64_t> program = {
      Li(1, kSourceLine), Li(2, kVmemLine), Li(3, kLines), Li(4, kDestLine),
      Assemble(Opcode::DMA_LD, 0, 1, 2, 3, 0, 1),
      Assemble(Opcode::SYNC, 0, 0, 0, 0, isa::flag::SYNC_DMA),
      Assemble(Opcode::DMA_ST, 0, 4, 2, 3, 0, 1),
      Assemble(Opcode::SYNC, 0, 0, 0, 0, isa::flag::SYNC_DMA),
      Halt()};
  LoadProgram(*transport, program);
  // The IMEM window reads back what was written.
  for (size_t i = 0; i < program.size(); ++i) {
    const uint64_t word = transport->MmioRead(csr::IMEM_WINDOW + 8 * i) |
                          uint64_t{transport->MmioRead(csr::IMEM_WINDOW + 8 * i + 4)} << 32;
    EXPECT_EQ(word, program[i]) << "IMEM word " << i;
  }

  ASSERT_TRUE(RunProgram(*transport)) << "no interrupt; STATUS=" << transport->MmioRead(csr::STATUS);
  const uint32_t status = transport->MmioRead(csr::STATUS);
  EXPECT_TRUE(status & csr::STATUS_HALTED) << status;
  EXPECT_FALSE(status & (csr::STATUS_BUSY | csr::STATUS_ERROR)) << status;
  EXPECT_EQ(transport->MmioRead(csr::IRQ_STATUS) & csr::IRQ_STATUS_CORE_DONE, csr::IRQ_STATUS_CORE_DONE);
  EXPECT_EQ(transport->MmioRead(csr::ERROR_CODE), 0u);
  EXPECT_EQ(transport->MmioRead(csr::DMA_LINES), 2 * kLines);
  EXPECT_EQ(transport->MmioRead(csr::INSTRET), program.size());

  std::vector<uint8_t> moved(data.size());
  ASSERT_TRUE(transport->platform().HbmDebugRead(0, kDestLine * kLineBytes, moved.data(), moved.size()).ok());
  EXPECT_EQ(moved, data);
  // Each line crossed the HBM port twice (load and store), and each read waited the HBM latency.
  EXPECT_GE(transport->MmioRead(csr::CYCLES_LO), 2 * cfg::kHbmLatency);

  // Clearing CORE_DONE (write one to clear) drops the interrupt line.
  transport->MmioWrite(csr::IRQ_STATUS, csr::IRQ_STATUS_CORE_DONE);
  EXPECT_EQ(transport->platform().IrqLines(), 0u);
  EXPECT_FALSE(transport->WaitForInterrupt(100));
}

TEST(PlatformTest, HostDmaRoundTripThroughHbm) {
  auto transport = MakeTransport();
  ASSERT_NE(transport, nullptr);
  constexpr uint64_t kHostIn = 0x10000, kHostOut = 0x400000;
  constexpr uint32_t kHbmLine = 123456, kLines = 37;
  const std::vector<uint8_t> data = RandomBytes(kLines * kLineBytes, 2);
  transport->HostWrite(kHostIn, data.data(), data.size());

  auto host_dma = [&](uint64_t host_address, bool to_host) {
    transport->MmioWrite(csr::HDMA_HOST_LO, static_cast<uint32_t>(host_address));
    transport->MmioWrite(csr::HDMA_HOST_HI, static_cast<uint32_t>(host_address >> 32));
    transport->MmioWrite(csr::HDMA_HBM_LINE, kHbmLine);
    transport->MmioWrite(csr::HDMA_LINES, kLines);
    transport->MmioWrite(csr::HDMA_CTRL, csr::HDMA_CTRL_START | (to_host ? csr::HDMA_CTRL_TO_HOST : 0));
    ASSERT_TRUE(transport->WaitForInterrupt(kRunTimeout));
    EXPECT_EQ(transport->MmioRead(csr::IRQ_STATUS), csr::IRQ_STATUS_HDMA_DONE);
    EXPECT_EQ(transport->MmioRead(csr::HDMA_STATUS), 0u);
    transport->MmioWrite(csr::IRQ_STATUS, csr::IRQ_STATUS_HDMA_DONE);
  };

  host_dma(kHostIn, /*to_host=*/false);
  std::vector<uint8_t> in_hbm(data.size());
  ASSERT_TRUE(transport->platform().HbmDebugRead(0, uint64_t{kHbmLine} * kLineBytes, in_hbm.data(), in_hbm.size()).ok());
  EXPECT_EQ(in_hbm, data);

  host_dma(kHostOut, /*to_host=*/true);
  std::vector<uint8_t> back(data.size());
  transport->HostRead(kHostOut, back.data(), back.size());
  EXPECT_EQ(back, data);
  EXPECT_EQ(transport->platform().bridge().host_requests(), 2u * kLines);
  EXPECT_EQ(transport->platform().bridge().host_errors(), 0u);
}

TEST(PlatformTest, HostBusErrorReachesTheChip) {
  auto transport = MakeTransport();
  ASSERT_NE(transport, nullptr);
  // Line aligned, so the chip's own check passes; the last lines fall off the end of host memory, and
  // HostMemory answers them with TLM_ADDRESS_ERROR_RESPONSE.
  const uint64_t host_address = transport->HostMemoryBytes() - 2 * kLineBytes;
  transport->MmioWrite(csr::HDMA_HOST_LO, static_cast<uint32_t>(host_address));
  transport->MmioWrite(csr::HDMA_HOST_HI, static_cast<uint32_t>(host_address >> 32));
  transport->MmioWrite(csr::HDMA_HBM_LINE, 0);
  transport->MmioWrite(csr::HDMA_LINES, 4);
  transport->MmioWrite(csr::HDMA_CTRL, csr::HDMA_CTRL_START | csr::HDMA_CTRL_TO_HOST);
  ASSERT_TRUE(transport->WaitForInterrupt(kRunTimeout));
  EXPECT_TRUE(transport->MmioRead(csr::IRQ_STATUS) & csr::IRQ_STATUS_HDMA_ERROR);
  const uint32_t hdma_status = transport->MmioRead(csr::HDMA_STATUS);
  EXPECT_TRUE(hdma_status & csr::HDMA_STATUS_ERROR) << hdma_status;
  EXPECT_EQ((hdma_status & csr::HDMA_STATUS_CODE) >> csr::HDMA_STATUS_CODE_LSB,
            static_cast<uint32_t>(isa::Error::HOST_BUS_ERROR));
  EXPECT_GE(transport->platform().bridge().host_errors(), 1u);
}

TEST(PlatformTest, IllegalInstructionRaisesErrorAndSoftResetRecovers) {
  auto transport = MakeTransport();
  ASSERT_NE(transport, nullptr);
  constexpr uint8_t kIllegalOpcode = 0xff;
  ASSERT_EQ(isa::FindOpcode(kIllegalOpcode), nullptr);
  LoadProgram(*transport, {Assemble(Opcode::NOP), uint64_t{kIllegalOpcode} << 56, Halt()});
  ASSERT_TRUE(RunProgram(*transport));
  uint32_t status = transport->MmioRead(csr::STATUS);
  EXPECT_TRUE(status & csr::STATUS_ERROR) << status;
  EXPECT_FALSE(status & (csr::STATUS_BUSY | csr::STATUS_HALTED)) << status;
  EXPECT_EQ(transport->MmioRead(csr::ERROR_CODE), static_cast<uint32_t>(isa::Error::ILLEGAL_INSTR));
  EXPECT_EQ(transport->MmioRead(csr::ERROR_PC), 1u);
  EXPECT_EQ(transport->MmioRead(csr::IRQ_STATUS), csr::IRQ_STATUS_CORE_ERROR);

  transport->MmioWrite(csr::SOFT_RESET, 1);
  EXPECT_EQ(transport->MmioRead(csr::STATUS), 0u);
  EXPECT_EQ(transport->MmioRead(csr::ERROR_CODE), 0u);
  EXPECT_EQ(transport->MmioRead(csr::IRQ_STATUS), 0u);
  EXPECT_EQ(transport->platform().IrqLines(), 0u);

  // The chip runs again after the soft reset (and the largest timeout is no problem).
  LoadProgram(*transport, {Li(1, 5), Halt()});
  ASSERT_TRUE(RunProgram(*transport, ~uint64_t{0}));
  status = transport->MmioRead(csr::STATUS);
  EXPECT_TRUE(status & csr::STATUS_HALTED) << status;
  EXPECT_EQ(transport->MmioRead(csr::IRQ_STATUS), csr::IRQ_STATUS_CORE_DONE);
}

TEST(PlatformTest, BadMmioAccessesAreErrorsNotHangs) {
  auto transport = MakeTransport();
  ASSERT_NE(transport, nullptr);
  EXPECT_EQ(transport->MmioRead(0x2), 0xffffffffu);  // misaligned
  EXPECT_EQ(transport->mmio_errors(), 1u);
  EXPECT_NE(transport->last_mmio_error().message().find("TLM_ADDRESS_ERROR_RESPONSE"), std::string::npos)
      << transport->last_mmio_error();
  transport->MmioWrite(static_cast<uint32_t>(cfg::kNumCores) << csr::CORE_SHIFT, 1);  // a core the chip lacks
  EXPECT_EQ(transport->mmio_errors(), 2u);
  EXPECT_EQ(transport->MmioRead(csr::ID), csr::ID_MAGIC);  // still usable

  uint8_t byte = 0;
  EXPECT_THROW(transport->HostWrite(transport->HostMemoryBytes(), &byte, 1), std::out_of_range);
  EXPECT_THROW(transport->HostRead(~uint64_t{0}, &byte, 2), std::out_of_range);
  EXPECT_FALSE(transport->platform().HbmDebugRead(0, cfg::kHbmLines * kLineBytes, &byte, 1).ok());
}

TEST(PlatformTest, OneTransportAtATimeAndReuseStartsFresh) {
  auto first = MakeTransport();
  ASSERT_NE(first, nullptr);
  const uint8_t pattern[4] = {1, 2, 3, 4};
  first->HostWrite(64, pattern, sizeof(pattern));
  StatusOr<std::unique_ptr<RtlTransport>> second = RtlTransport::Create();
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kFailedPrecondition);
  first.reset();

  auto third = MakeTransport();
  ASSERT_NE(third, nullptr);
  uint8_t read_back[4] = {9, 9, 9, 9};
  third->HostRead(64, read_back, sizeof(read_back));
  EXPECT_EQ(std::vector<uint8_t>(read_back, read_back + 4), std::vector<uint8_t>(4, 0));
  EXPECT_LT(third->Cycles(), 100u);
  EXPECT_EQ(third->MmioRead(csr::ID), csr::ID_MAGIC);
}

bool HaveFst2Vcd() { return std::system("command -v fst2vcd > /dev/null 2>&1") == 0; }

std::string ConvertToVcd(const std::string& fst) {
  const std::string vcd = fst + ".vcd";
  const std::string command = "fst2vcd -f " + fst + " -o " + vcd + " > /dev/null 2>&1";
  if (std::system(command.c_str()) != 0) return "";
  std::ifstream in(vcd);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Full hierarchical names of the VCD's variables ("scope.scope.name[msb:lsb]"), as GTKWave shows them.
std::set<std::string> VcdSignals(const std::string& vcd) {
  std::set<std::string> signals;
  std::vector<std::string> scopes;
  std::istringstream lines(vcd);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string keyword;
    words >> keyword;
    if (keyword == "$scope") {
      std::string kind, name;
      words >> kind >> name;
      scopes.push_back(name);
    } else if (keyword == "$upscope") {
      if (!scopes.empty()) scopes.pop_back();
    } else if (keyword == "$var") {
      std::string kind, width, code, name, range;
      words >> kind >> width >> code >> name >> range;
      std::string full;
      for (const std::string& scope : scopes) full += scope + ".";
      full += name;
      if (!range.empty() && range[0] == '[') full += range;
      signals.insert(full);
    } else if (keyword == "$enddefinitions") {
      break;
    }
  }
  return signals;
}

// Timestamps (in ps) at which the VCD records changes.
std::vector<uint64_t> VcdTimes(const std::string& vcd) {
  std::vector<uint64_t> times;
  std::istringstream lines(vcd);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.size() > 1 && line[0] == '#') times.push_back(std::stoull(line.substr(1)));
  }
  return times;
}

TEST(PlatformTest, TracedRunWritesAWindowedFst) {
  const std::string fst = (std::filesystem::temp_directory_path() /
                           ("sysc_test_" + std::to_string(::getpid()) + ".fst")).string();
  RtlTraceOptions trace;
  trace.file = fst;
  trace.start_cycle = 40;
  trace.stop_cycle = 140;
  auto transport = MakeTransport(trace);
  ASSERT_NE(transport, nullptr);
  // The FST holds simulation time since the process started the kernel; the window counts the program's
  // cycles, from its DOORBELL write.
  LoadProgram(*transport, {Li(1, 100), Assemble(Opcode::ADDI, 1, 1, 0, 0, 0, 0xffffffffu),
                           Assemble(Opcode::BNE, 0, 1, 0, 0, 0, 1), Halt()});
  EXPECT_EQ(transport->trace_origin_cycle(), 0u) << "armed, not started, before the doorbell";
  const uint64_t before_doorbell = transport->platform().Cycles();
  ASSERT_TRUE(RunProgram(*transport));
  const uint64_t base_cycle = transport->trace_origin_cycle();
  EXPECT_GE(base_cycle, before_doorbell);
  EXPECT_GT(transport->Cycles(), trace.stop_cycle);
  transport.reset();  // flushes and closes the file
  ASSERT_TRUE(std::filesystem::exists(fst));
  EXPECT_GT(std::filesystem::file_size(fst), 0u);
  if (!HaveFst2Vcd()) GTEST_SKIP() << "fst2vcd not installed; FST contents not checked";

  const std::string vcd = ConvertToVcd(fst);
  ASSERT_FALSE(vcd.empty()) << "fst2vcd could not read " << fst;
  EXPECT_NE(vcd.find("clk_i"), std::string::npos);
  EXPECT_NE(vcd.find("mmio_valid_i"), std::string::npos);
  EXPECT_NE(vcd.find("hbm_req_valid_o"), std::string::npos);
  const std::vector<uint64_t> times = VcdTimes(vcd);
  ASSERT_FALSE(times.empty());
  const uint64_t ps_per_cycle = 1000;
  EXPECT_EQ(times.front(), (base_cycle + trace.start_cycle) * ps_per_cycle);
  EXPECT_LT(times.back(), (base_cycle + trace.stop_cycle) * ps_per_cycle);
  EXPECT_GE(times.back(), (base_cycle + trace.stop_cycle - 1) * ps_per_cycle);

  // Every signal of the shipped GTKWave save file exists in a full-depth dump of this chip.
  const std::set<std::string> signals = VcdSignals(vcd);
  std::ifstream save_file(TPU_CHIP_GTKW);
  ASSERT_TRUE(save_file.good()) << "cannot read " << TPU_CHIP_GTKW;
  std::string line;
  int checked = 0, hbm_checked = 0;
  while (std::getline(save_file, line)) {
    if (line.empty() || line[0] == '@' || line[0] == '-' || line[0] == '[' || line[0] == '*' || line[0] == '^') continue;
    EXPECT_EQ(signals.count(line), 1u) << TPU_CHIP_GTKW << " names " << line << ", which the dump does not hold";
    ++checked;
    hbm_checked += line.rfind("platform.hbm.", 0) == 0;
  }
  EXPECT_GT(checked, 50);
  EXPECT_GE(hbm_checked, 20) << "the HBM group: the line port and each channel's command bus and bank state";
  std::filesystem::remove(fst);
  std::filesystem::remove(fst + ".vcd");
}

// Depth 1 holds tpu_chip's own signals, depth 2 adds its blocks' signals. Each depth is checked in a
// process of its own (ctest runs every test separately): Verilator 5.006's FST writer crashes when one
// process reopens a trace with a different set of enabled signals.
void CheckTraceDepth(int depth) {
  if (!HaveFst2Vcd()) GTEST_SKIP() << "fst2vcd not installed";
  const std::string top = "tpu.tpu_chip.";
  const std::string fst = (std::filesystem::temp_directory_path() /
                           ("sysc_depth_" + std::to_string(::getpid()) + "_" + std::to_string(depth) + ".fst"))
                              .string();
  RtlTraceOptions trace;
  trace.file = fst;
  trace.depth = depth;
  auto transport = MakeTransport(trace);
  ASSERT_NE(transport, nullptr);
  LoadProgram(*transport, {Halt()});
  ASSERT_TRUE(RunProgram(*transport));  // the doorbell starts the window
  transport.reset();
  const std::set<std::string> signals = VcdSignals(ConvertToVcd(fst));
  EXPECT_EQ(signals.count(top + "clk_i"), 1u) << "depth " << depth;
  EXPECT_EQ(signals.count(top + "mmio_addr_i[23:0]"), 1u) << "depth " << depth;
  size_t deepest = 0;
  for (const std::string& name : signals) {
    // Without the bit range; scope names such as gen_core[0] keep theirs.
    const std::string below = name.back() == ']' ? name.substr(0, name.rfind('[')) : name;
    if (below.compare(0, top.size(), top) != 0) continue;
    deepest = std::max<size_t>(deepest, std::count(below.begin() + top.size(), below.end(), '.') + 1);
  }
  EXPECT_EQ(deepest, static_cast<size_t>(depth)) << "deepest signal level in a depth " << depth << " dump";
  std::filesystem::remove(fst);
  std::filesystem::remove(fst + ".vcd");
}

TEST(PlatformTest, TraceDepthOneHoldsOnlyTheTop) { CheckTraceDepth(1); }

TEST(PlatformTest, TraceDepthTwoAddsTheBlocks) { CheckTraceDepth(2); }

TEST(PlatformTest, BadTraceOptionsAreRejected) {
  RtlTraceOptions trace;
  trace.file = "/nonexistent-directory/x.fst";
  StatusOr<std::unique_ptr<RtlTransport>> transport = RtlTransport::Create(trace);
  ASSERT_FALSE(transport.ok());
  EXPECT_NE(transport.status().message().find("cannot write"), std::string::npos) << transport.status();
  trace.file = "/tmp/x.fst";
  trace.start_cycle = 10;
  trace.stop_cycle = 10;
  transport = RtlTransport::Create(trace);
  ASSERT_FALSE(transport.ok());
  EXPECT_EQ(transport.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tpu

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
