// Boards of several chips through the driver, on the reference model and, when the SystemC platform is
// built, on the verilated chips joined by the ICI links: the same programs and the same expected bytes on
// both. RDMA between chips (two hops with POST), ring all-reduces over every core of 2- and 4-chip boards,
// BAD_CORE past the board, and the board's identity registers.
//
// One SystemC simulation per process: the rtl cases share one platform of kRtlChips chips and run the
// smaller boards on its first chips (RtlTransport::Create's `chips`).
#include <gtest/gtest.h>

#include <cstring>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "sim/model/chip_config.h"
#include "sim/model/ici.h"
#include "sim/model/model_transport.h"
#include "sw/driver/driver.h"
#include "sw/driver/test_instructions.h"
#include "tpu_csr.h"
#include "tpu_isa.h"

#include "sysc/rtl_transport.h"

namespace tpu {
namespace {

using isa::Opcode;

constexpr uint64_t kTimeout = 2'000'000;
constexpr uint32_t kSemaphore = csr::HOST_SEMS;  // the first of the cores' semaphores

using testing::Halt;
using testing::Assemble;
using testing::Li;

// Program pieces: registers s1 (HBM line), s2 (VMEM line), s3 (count), s4 (core), s5 (second VMEM line).
void Append(std::vector<uint64_t>* code, std::initializer_list<uint64_t> words) { code->insert(code->end(), words); }
void DmaLoad(std::vector<uint64_t>* code, uint32_t hbm, uint32_t vmem, uint32_t lines) {
  Append(code, {Li(1, hbm), Li(2, vmem), Li(3, lines), Assemble(Opcode::DMA_LD, 0, 1, 2, 3, 0, 1), Assemble(Opcode::SYNC)});
}
void DmaStore(std::vector<uint64_t>* code, uint32_t hbm, uint32_t vmem, uint32_t lines) {
  Append(code, {Li(1, hbm), Li(2, vmem), Li(3, lines), Assemble(Opcode::DMA_ST, 0, 1, 2, 3, 0, 1), Assemble(Opcode::SYNC)});
}
// RDMA of `lines` VMEM lines to `core`'s HBM, posting kSemaphore there.
void Rdma(std::vector<uint64_t>* code, uint32_t core, uint32_t hbm, uint32_t vmem, uint32_t lines) {
  Append(code, {Li(4, core), Li(1, hbm), Li(2, vmem), Li(3, lines),
                Assemble(Opcode::RDMA, 4, 1, 2, 3, isa::flag::RDMA_POST, kSemaphore)});
}
void SemWait(std::vector<uint64_t>* code) { code->push_back(Assemble(Opcode::SEMWAIT, 0, 0, 0, 0, 0, kSemaphore)); }
// VMEM[dst..] += VMEM[src..] over `lines` lines.
void Accumulate(std::vector<uint64_t>* code, uint32_t dst, uint32_t src, uint32_t lines) {
  Append(code, {Li(2, dst), Li(5, src), Li(3, lines), Assemble(Opcode::VADD, 2, 2, 5, 3), Assemble(Opcode::SYNC)});
}

// A board on the backend of the parameter: (backend, chips).
class BoardTest : public ::testing::TestWithParam<std::tuple<std::string, uint32_t>> {
 protected:
  static constexpr uint32_t kRtlChips = 4;

  void SetUp() override {
    const auto& [backend, chips] = GetParam();
    if (backend == "rtl") {
      StatusOr<std::unique_ptr<RtlTransport>> rtl = RtlTransport::Create({}, chips, kRtlChips);
      ASSERT_TRUE(rtl.ok()) << rtl.status();
      transport_ = std::move(rtl).value();
    }
    if (backend == "model") transport_ = std::make_unique<model::ModelTransport>(config_, chips);
    ASSERT_NE(transport_, nullptr) << backend;
    ASSERT_EQ(transport_->Chips(), chips);
    for (uint32_t core = 0; core < transport_->Cores(); ++core) {
      cores_.push_back(std::make_unique<Driver>(*transport_, core));
      ASSERT_TRUE(cores_.back()->Reset().ok()) << "core " << core;
      StatusOr<DeviceInfo> info = cores_.back()->Discover();
      ASSERT_TRUE(info.ok()) << "core " << core << ": " << info.status();
    }
  }

  uint32_t lanes() const { return config_.lanes; }

  // Launches every core that has a program and waits for all of them.
  void RunAll(const std::vector<std::vector<uint64_t>>& programs) {
    for (uint32_t core = 0; core < programs.size(); ++core) {
      if (programs[core].empty()) continue;
      ASSERT_TRUE(cores_[core]->LoadProgram(programs[core]).ok()) << "core " << core;
    }
    for (uint32_t core = 0; core < programs.size(); ++core) {
      if (!programs[core].empty()) ASSERT_TRUE(cores_[core]->Launch(0).ok()) << "core " << core;
    }
    for (uint32_t core = 0; core < programs.size(); ++core) {
      if (programs[core].empty()) continue;
      Status done = cores_[core]->WaitForCompletion(kTimeout);
      ASSERT_TRUE(done.ok()) << "core " << core << ": " << done;
    }
  }

  // The board's cores in ring order: the chips in ring order, the cores of a chip one after the other.
  std::vector<uint32_t> RingOfCores() const {
    std::vector<uint32_t> ring;
    for (uint32_t position = 0; position < transport_->Chips(); ++position) {
      for (uint32_t core = 0; core < transport_->CoresPerChip(); ++core)
        ring.push_back(ici::ChipAtPosition(position) * transport_->CoresPerChip() + core);
    }
    return ring;
  }

  model::ChipConfig config_ = model::ChipConfig::Build();
  std::unique_ptr<Transport> transport_;
  std::vector<std::unique_ptr<Driver>> cores_;
};

TEST_P(BoardTest, EveryCoreKnowsItsPlaceOnTheBoard) {
  const uint32_t chips = std::get<1>(GetParam());
  for (uint32_t core = 0; core < transport_->Cores(); ++core) {
    EXPECT_EQ(transport_->MmioRead(transport_->MmioOffset(core, csr::ID)), csr::ID_MAGIC) << core;
    EXPECT_EQ(transport_->MmioRead(transport_->MmioOffset(core, csr::CFG_CHIP_ID)), core / config_.num_cores) << core;
    EXPECT_EQ(transport_->MmioRead(transport_->MmioOffset(core, csr::CFG_CORE_ID)), core % config_.num_cores) << core;
    EXPECT_EQ(transport_->MmioRead(transport_->MmioOffset(core, csr::CFG_NUM_CHIPS)), chips) << core;
  }
}

// A v2-8's board: four chips.
class FourChipBoardTest : public BoardTest {};

// Core 0 of chip 0 sends to the last core of chip 3, two links away (ring 0-1-3-2-0); the receiver waits
// on the POST and copies what arrived.
TEST_P(FourChipBoardTest, RdmaTwoHopsWithPost) {
  ASSERT_EQ(transport_->Chips(), 4u);
  const uint32_t receiver = 3 * config_.num_cores + config_.num_cores - 1;
  ASSERT_EQ(ici::Hops(0, 3, 4), 2u);
  std::mt19937 rng(7);
  for (uint32_t lines : {1u, 300u}) {
    std::vector<uint32_t> data(lines * lanes());
    for (uint32_t& word : data) word = rng();
    ASSERT_TRUE(cores_[0]->CopyToHbm(data.data(), data.size() * 4, 100).ok());
    std::vector<std::vector<uint64_t>> programs(transport_->Cores());
    DmaLoad(&programs[0], 100, 0, lines);
    Rdma(&programs[0], receiver, 5000, 0, lines);
    Append(&programs[0], {Assemble(Opcode::SYNC), Assemble(Opcode::HALT)});
    SemWait(&programs[receiver]);
    DmaLoad(&programs[receiver], 5000, 0, lines);
    DmaStore(&programs[receiver], 7000, 0, lines);
    programs[receiver].push_back(Assemble(Opcode::HALT));
    RunAll(programs);
    std::vector<uint32_t> landed(data.size());
    ASSERT_TRUE(cores_[receiver]->CopyFromHbm(7000, lines, landed.data()).ok());
    EXPECT_EQ(landed, data) << lines << " lines";
    // The sender's run: load, the RDMA and its acknowledgements (the figure docs/interconnect.md quotes).
    std::cout << "[ figures  ] " << std::get<0>(GetParam()) << ": 2-hop RDMA of " << lines << " lines, sender "
              << cores_[0]->ReadCounters().cycles << " cycles, receiver " << cores_[receiver]->ReadCounters().cycles
              << " cycles\n";
  }
}

// A ring all-reduce over every core of the board, as the compiler lowers one: p - 1 reduce-scatter steps
// (send a chunk to the next core with RDMA POST, wait for the previous core's, add it into one's own),
// then p - 1 all-gather steps. Each step uses its own HBM area, so a fast neighbour never overwrites a
// chunk not yet read.
TEST_P(BoardTest, RingAllReduceOverEveryCore) {
  const std::vector<uint32_t> ring = RingOfCores();
  const uint32_t p = static_cast<uint32_t>(ring.size());
  const uint32_t chunk = 3;  // lines per chunk
  const uint32_t total = p * chunk;
  constexpr uint32_t kInput = 100, kScatter = 20000, kGather = 40000, kOutput = 9000, kTmp = 4096;
  std::mt19937 rng(13);
  std::uniform_real_distribution<float> value(-4.0f, 4.0f);
  std::vector<std::vector<float>> inputs(p, std::vector<float>(total * lanes()));
  std::vector<std::vector<uint64_t>> programs(p);
  for (uint32_t r = 0; r < p; ++r) {
    for (float& v : inputs[r]) v = value(rng);
    ASSERT_TRUE(cores_[ring[r]]->CopyToHbm(inputs[r].data(), inputs[r].size() * 4, kInput).ok());
    std::vector<uint64_t>& code = programs[ring[r]];
    const uint32_t next = ring[(r + 1) % p];
    DmaLoad(&code, kInput, 0, total);
    for (uint32_t s = 0; s + 1 < p; ++s) {
      const uint32_t send = (r + p - s) % p, receive = (r + 2 * p - s - 1) % p;
      Rdma(&code, next, kScatter + s * chunk, send * chunk, chunk);
      SemWait(&code);
      DmaLoad(&code, kScatter + s * chunk, kTmp, chunk);
      Accumulate(&code, receive * chunk, kTmp, chunk);
    }
    for (uint32_t s = 0; s + 1 < p; ++s) {
      const uint32_t send = (r + 1 + p - s) % p, receive = (r + p - s) % p;
      Rdma(&code, next, kGather + s * chunk, send * chunk, chunk);
      SemWait(&code);
      DmaLoad(&code, kGather + s * chunk, receive * chunk, chunk);
    }
    DmaStore(&code, kOutput, 0, total);
    code.push_back(Assemble(Opcode::HALT));
  }
  RunAll(programs);
  // Chunk j starts at ring core j and gathers ring cores j+1, j+2, ... in that order.
  const uint32_t chunk_words = chunk * lanes();
  std::vector<float> expected(total * lanes());
  for (uint32_t j = 0; j < p; ++j) {
    for (uint32_t i = j * chunk_words; i < (j + 1) * chunk_words; ++i) {
      float sum = inputs[j][i];
      for (uint32_t k = 1; k < p; ++k) sum = inputs[(j + k) % p][i] + sum;
      expected[i] = sum;
    }
  }
  for (uint32_t r = 0; r < p; ++r) {
    std::vector<float> result(total * lanes());
    ASSERT_TRUE(cores_[ring[r]]->CopyFromHbm(kOutput, total, result.data()).ok());
    ASSERT_EQ(std::memcmp(result.data(), expected.data(), result.size() * 4), 0) << "core " << ring[r];
  }
  std::cout << "[ figures  ] " << std::get<0>(GetParam()) << ": all-reduce of " << total << " lines over " << p
            << " cores, " << cores_[0]->ReadCounters().cycles << " cycles\n";
}

TEST_P(BoardTest, RdmaPastTheBoardIsBadCore) {
  const uint32_t last = transport_->Cores() - 1;
  std::vector<uint64_t> code;
  Rdma(&code, transport_->Cores(), 100, 0, 1);
  code.push_back(Assemble(Opcode::HALT));
  ASSERT_TRUE(cores_[last]->LoadProgram(code).ok());
  ASSERT_TRUE(cores_[last]->Launch(0).ok());
  Status error = cores_[last]->WaitForCompletion(kTimeout);
  EXPECT_EQ(error.code(), StatusCode::kOutOfRange) << error;
  EXPECT_NE(error.message().find("BAD_CORE"), std::string::npos) << error;
  // The last core of the board is still reachable from the first.
  std::vector<std::vector<uint64_t>> programs(transport_->Cores());
  Append(&programs[0], {Li(3, 1), Assemble(Opcode::VSPLAT, 0, 0, 0, 3, 0, 0x40490fdbu), Assemble(Opcode::SYNC)});
  Rdma(&programs[0], last, 123, 0, 1);
  Append(&programs[0], {Assemble(Opcode::SYNC), Assemble(Opcode::HALT)});
  SemWait(&programs[last]);
  programs[last].push_back(Assemble(Opcode::HALT));
  RunAll(programs);
  std::vector<uint32_t> line(lanes());
  ASSERT_TRUE(cores_[last]->CopyFromHbm(123, 1, line.data()).ok());
  EXPECT_EQ(line, std::vector<uint32_t>(lanes(), 0x40490fdbu));
}

std::string Name(const ::testing::TestParamInfo<std::tuple<std::string, uint32_t>>& info) {
  return std::get<0>(info.param) + "_" + std::to_string(std::get<1>(info.param)) + "chips";
}

const auto kBackends = ::testing::Values("model", "rtl");
INSTANTIATE_TEST_SUITE_P(Boards, BoardTest, ::testing::Combine(kBackends, ::testing::Values(2u, 4u)), Name);
INSTANTIATE_TEST_SUITE_P(Boards, FourChipBoardTest, ::testing::Combine(kBackends, ::testing::Values(4u)), Name);

// The model's link timing: a line crosses each link at its bandwidth and latency, and the acknowledgement
// comes back one latency per hop.
TEST(BoardModelTiming, TwoHopsCostTwoLatenciesEachWay) {
  const model::ChipConfig config = model::ChipConfig::Build();
  ici::LinkConfig link;
  link.latency_cycles = 100;
  link.bytes_per_cycle = config.line_bytes();  // a line a cycle
  std::vector<uint64_t> cycles;
  for (uint32_t destination : {1u, 3u * config.num_cores}) {  // same chip, two hops away
    model::ModelTransport transport(config, 4, link);
    Driver sender(transport, 0), receiver(transport, destination);
    ASSERT_TRUE(sender.Reset().ok());
    ASSERT_TRUE(sender.Discover().ok());
    std::vector<uint64_t> code;
    Rdma(&code, destination, 100, 0, 10);
    Append(&code, {Assemble(Opcode::SYNC), Assemble(Opcode::HALT)});
    ASSERT_TRUE(sender.LoadProgram(code).ok());
    ASSERT_TRUE(sender.Launch(0).ok());
    ASSERT_TRUE(sender.WaitForCompletion(kTimeout).ok());
    cycles.push_back(sender.ReadCounters().cycles);
    // The POST arrived: semaphore kSemaphore is the first of SEM_COUNTS_HI.
    EXPECT_EQ(transport.MmioRead(transport.MmioOffset(destination, csr::SEM_COUNTS_HI)) & 0xffu, 1u);
  }
  // Two hops out (a line of serialization and the latency each) and two back.
  EXPECT_EQ(cycles[1] - cycles[0], 2 * (1 + link.latency_cycles) + 2 * link.latency_cycles);
}

TEST(BoardModelTiming, BoardSizesOtherThanOneTwoOrFourAreRefused) {
  EXPECT_TRUE(ici::CheckBoardChips(4).ok());
  EXPECT_EQ(ici::CheckBoardChips(3).code(), StatusCode::kInvalidArgument);
  EXPECT_THROW(model::ModelTransport(model::ChipConfig::Build(), 8), std::invalid_argument);
}

TEST(IciTopology, RingOfAV2_8IsZeroOneThreeTwo) {
  EXPECT_EQ(ici::Neighbour(0, ici::kNext, 4), 1u);
  EXPECT_EQ(ici::Neighbour(1, ici::kNext, 4), 3u);
  EXPECT_EQ(ici::Neighbour(3, ici::kNext, 4), 2u);
  EXPECT_EQ(ici::Neighbour(2, ici::kNext, 4), 0u);
  EXPECT_EQ(ici::Neighbour(0, ici::kPrev, 4), 2u);
  EXPECT_EQ(ici::Route(0, 2, 4), ici::kPrev);
  EXPECT_EQ(ici::Route(0, 3, 4), ici::kNext);  // a tie goes forward
  EXPECT_EQ(ici::Route(1, 0, 2), ici::kNext);
  EXPECT_EQ(ici::Route(2, 2, 4), ici::kPorts);
  EXPECT_EQ(ici::Hops(0, 3, 4), 2u);
  EXPECT_EQ(ici::Hops(2, 1, 4), 2u);
  EXPECT_EQ(ici::Hops(0, 1, 2), 1u);
}

}  // namespace
}  // namespace tpu

// Own main(): libsystemc.so, when linked, defines one too.
int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
