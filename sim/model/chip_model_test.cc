// Instruction semantics, CSRs, errors and the cycle estimate of the reference model (tiny configuration).
#include "sim/model/chip_model.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "sim/model/model_test_util.h"
#include "sim/numerics/numerics.h"

namespace tpu::model {
namespace {

using namespace tpu::model::testing;  // NOLINT: test helpers
namespace csr = tpu::csr;
using tpu::isa::Error;
namespace flag = tpu::isa::flag;

class ChipModelTest : public ::testing::Test {
 protected:
  explicit ChipModelTest(const ChipConfig& config = ChipConfig::Build()) : model_(config) {}

  uint32_t Status() { return model_.MmioRead(csr::STATUS); }
  uint32_t Csr(uint32_t offset) { return model_.MmioRead(offset); }
  uint32_t lanes() const { return model_.config().lanes; }

  // Runs `program`; expects it to stop with `error` at `pc`.
  void ExpectError(const std::vector<uint64_t>& program, Error error, uint32_t pc) {
    const uint32_t status = RunProgram(model_, program);
    EXPECT_EQ(status, csr::STATUS_ERROR) << DisassembleProgram(program);
    EXPECT_EQ(Csr(csr::ERROR_CODE), static_cast<uint32_t>(error)) << tpu::isa::ErrorName(Csr(csr::ERROR_CODE));
    EXPECT_EQ(Csr(csr::ERROR_PC), pc);
    EXPECT_EQ(Csr(csr::IRQ_STATUS), csr::IRQ_STATUS_CORE_ERROR);
    EXPECT_TRUE(model_.Irq());
  }

  // Leaves state everywhere, resets, and compares with a new chip: what software sees, then what the same
  // programs do on both.
  void ExpectResetMatchesANewChip();

  ChipModel model_;
};

// The same chip timing its HBM accesses with the twin of the HBM subsystem, whose queues and banks a reset
// must empty as well.
class ChipModelHbmTwinTest : public ChipModelTest {
 protected:
  static ChipConfig WithTwin() {
    ChipConfig config = ChipConfig::Build();
    config.hbm_timing = true;
    return config;
  }
  ChipModelHbmTwinTest() : ChipModelTest(WithTwin()) {}
};

TEST_F(ChipModelTest, ResetValuesAndIdentity) {
  const ChipConfig& config = model_.config();
  EXPECT_EQ(Csr(csr::ID), csr::ID_MAGIC);
  EXPECT_EQ(Csr(csr::VERSION), csr::VERSION_VALUE);
  EXPECT_EQ(Csr(csr::CFG_LANES), config.lanes);
  EXPECT_EQ(Csr(csr::CFG_VMEM_LINES), config.vmem_lines);
  EXPECT_EQ(Csr(csr::CFG_IMEM_WORDS), config.imem_words);
  EXPECT_EQ(Csr(csr::CFG_HBM_LINES), config.hbm_lines);
  EXPECT_EQ(Csr(csr::CFG_NUM_CORES), config.num_cores);
  EXPECT_EQ(Csr(csr::CFG_SREGS), config.sregs);
  EXPECT_EQ(Csr(csr::CFG_HBM_CHANNELS), config.hbm_channels);
  EXPECT_EQ(Csr(csr::STATUS), 0u);
  EXPECT_EQ(Csr(csr::IRQ_STATUS), 0u);
  EXPECT_EQ(Csr(csr::IRQ_ENABLE), 0x1Fu);
  EXPECT_EQ(Csr(csr::WATCHDOG_LIMIT), 1000000u);
  EXPECT_EQ(Csr(csr::HDMA_STATUS), 0u);
  EXPECT_FALSE(model_.Irq());
  // Write-only strobes and unmapped offsets read 0; writes to read-only registers are ignored.
  EXPECT_EQ(Csr(csr::DOORBELL), 0u);
  EXPECT_EQ(Csr(0x3c), 0u);
  model_.MmioWrite(csr::ID, 0);
  model_.MmioWrite(csr::CFG_LANES, 77);
  EXPECT_EQ(Csr(csr::ID), csr::ID_MAGIC);
  EXPECT_EQ(Csr(csr::CFG_LANES), config.lanes);
  EXPECT_EQ(model_.Run(1000), 0u) << "an idle chip has nothing to run";
}

TEST_F(ChipModelTest, RegistersReadBack) {
  model_.MmioWrite(csr::START_PC, 12);
  model_.MmioWrite(csr::WATCHDOG_LIMIT, 0);
  model_.MmioWrite(csr::IRQ_ENABLE, 0xFFFFFFFF);
  model_.MmioWrite(csr::HDMA_HOST_LO, 0x1234);
  model_.MmioWrite(csr::HDMA_HOST_HI, 0x5);
  model_.MmioWrite(csr::HDMA_HBM_LINE, 77);
  model_.MmioWrite(csr::HDMA_LINES, 3);
  EXPECT_EQ(Csr(csr::START_PC), 12u);
  EXPECT_EQ(Csr(csr::WATCHDOG_LIMIT), 0u);
  EXPECT_EQ(Csr(csr::IRQ_ENABLE), 0x1Fu) << "five interrupt sources";
  EXPECT_EQ(Csr(csr::HDMA_HOST_LO), 0x1234u);
  EXPECT_EQ(Csr(csr::HDMA_HOST_HI), 0x5u);
  EXPECT_EQ(Csr(csr::HDMA_HBM_LINE), 77u);
  EXPECT_EQ(Csr(csr::HDMA_LINES), 3u);
}

TEST_F(ChipModelTest, ImemWindowReadsBackAndDropsWritesWhileBusy) {
  const uint64_t word = 0x0123456789ABCDEFull;
  LoadProgram(model_, {word}, 5);
  EXPECT_EQ(Csr(csr::IMEM_WINDOW + 8 * 5), 0x89ABCDEFu);
  EXPECT_EQ(Csr(csr::IMEM_WINDOW + 8 * 5 + 4), 0x01234567u);
  EXPECT_EQ(Csr(csr::IMEM_WINDOW + 8 * model_.config().imem_words), 0u) << "beyond IMEM";

  LoadProgram(model_, {Jmp(0)});  // spins until reset
  model_.MmioWrite(csr::DOORBELL, 1);
  model_.Run(100);
  ASSERT_EQ(Status(), csr::STATUS_BUSY);
  model_.MmioWrite(csr::IMEM_WINDOW + 8 * 5, 0);
  EXPECT_EQ(Csr(csr::IMEM_WINDOW + 8 * 5), 0x89ABCDEFu) << "write while BUSY must be dropped";
}

TEST_F(ChipModelTest, ScalarArithmetic) {
  const uint32_t status = RunProgram(model_, {
      Li(1, 7),
      Li(2, 0xFFFFFFFEu),        // -2
      Addi(3, 1, 0xFFFFFFFFu),   // 7 + (-1) = 6
      Addi(4, 2, 5),             // wraps: 3
      Add(5, 1, 2),              // 5
      Sub(6, 2, 1),              // -9
      Li(7, 0x10001),
      Mul(8, 7, 7),              // 0x100020001 -> low 32 bits
      Li(0, 99),                 // s0 stays 0
      Addi(9, 0, 1),             // reads s0 as 0
      Halt(),
  });
  ASSERT_EQ(status, csr::STATUS_HALTED);
  EXPECT_EQ(model_.sreg(0), 0u);
  EXPECT_EQ(model_.sreg(1), 7u);
  EXPECT_EQ(model_.sreg(3), 6u);
  EXPECT_EQ(model_.sreg(4), 3u);
  EXPECT_EQ(model_.sreg(5), 5u);
  EXPECT_EQ(model_.sreg(6), static_cast<uint32_t>(-9));
  EXPECT_EQ(model_.sreg(8), static_cast<uint32_t>(0x10001ull * 0x10001ull));
  EXPECT_EQ(model_.sreg(9), 1u);
  EXPECT_EQ(Csr(csr::INSTRET), 11u);
  EXPECT_EQ(Csr(csr::IRQ_STATUS), csr::IRQ_STATUS_CORE_DONE);
  EXPECT_TRUE(model_.Irq());
}

TEST_F(ChipModelTest, BranchesAndLoops) {
  const uint32_t status = RunProgram(model_, {
      /*0*/ Li(1, 0),
      /*1*/ Li(2, 10),
      /*2*/ Li(3, 0),
      /*3*/ Addi(1, 1, 1),  // loop: s1 counts to 10, s3 sums 1..10
      /*4*/ Add(3, 3, 1),
      /*5*/ Bne(1, 2, 3),
      /*6*/ Li(4, 0xFFFFFFFFu),  // -1
      /*7*/ Blt(4, 0, 9),        // signed: -1 < 0, taken
      /*8*/ Li(5, 1),            // skipped
      /*9*/ Blt(0, 4, 11),       // 0 < -1 is false
      /*10*/ Li(6, 1),
      /*11*/ Beq(1, 2, 13),      // taken
      /*12*/ Li(7, 1),           // skipped
      /*13*/ Beq(1, 0, 0),       // not taken
      /*14*/ Jmp(16),
      /*15*/ Li(8, 1),           // skipped
      /*16*/ Halt(),
  });
  ASSERT_EQ(status, csr::STATUS_HALTED);
  EXPECT_EQ(model_.sreg(1), 10u);
  EXPECT_EQ(model_.sreg(3), 55u);
  EXPECT_EQ(model_.sreg(5), 0u);
  EXPECT_EQ(model_.sreg(6), 1u);
  EXPECT_EQ(model_.sreg(7), 0u);
  EXPECT_EQ(model_.sreg(8), 0u);
  EXPECT_EQ(Csr(csr::INSTRET), 3u + 30u + 8u);
}

TEST_F(ChipModelTest, StartPcAndDoorbellClearsState) {
  LoadProgram(model_, {Li(1, 5), Halt(), Li(2, 9), Halt()});
  model_.MmioWrite(csr::START_PC, 2);
  model_.MmioWrite(csr::DOORBELL, 1);
  model_.Run(1000);
  EXPECT_EQ(model_.sreg(1), 0u);
  EXPECT_EQ(model_.sreg(2), 9u);
  model_.MmioWrite(csr::START_PC, 0);
  model_.MmioWrite(csr::DOORBELL, 1);
  model_.Run(1000);
  EXPECT_EQ(model_.sreg(1), 5u);
  EXPECT_EQ(model_.sreg(2), 0u) << "the doorbell clears the scalar registers";
  EXPECT_EQ(Csr(csr::INSTRET), 2u) << "and the perf counters";
  // Writing 0 to the doorbell does nothing.
  model_.MmioWrite(csr::DOORBELL, 0);
  EXPECT_EQ(Status(), csr::STATUS_HALTED);
}

TEST_F(ChipModelTest, DoorbellIgnoredWhileBusy) {
  LoadProgram(model_, {Li(1, 1), Addi(2, 2, 1), Jmp(1)});
  model_.MmioWrite(csr::DOORBELL, 1);
  model_.Run(100);
  const uint32_t count = model_.sreg(2);
  EXPECT_GT(count, 10u);
  model_.MmioWrite(csr::DOORBELL, 1);  // would clear s2 if it restarted the core
  model_.Run(10);
  EXPECT_GT(model_.sreg(2), count);
  EXPECT_EQ(model_.Run(500), 500u) << "a spinning core never becomes idle";
}

TEST_F(ChipModelTest, DmaLoadAndStoreWithStride) {
  std::mt19937 rng(1);
  const std::vector<uint32_t> hbm = RandomFloats(rng, 40 * lanes());
  WriteHbmWords(model_, 100, hbm);
  const uint32_t status = RunProgram(model_, {
      Li(1, 100), Li(2, 10), Li(3, 8),
      DmaLd(1, 2, 3, 5),      // VMEM[10+i] = HBM[100 + 5i], i < 8
      Sync(flag::SYNC_DMA),
      Li(4, 1000), Li(5, 10),
      DmaSt(4, 5, 3, 3),      // HBM[1000 + 3i] = VMEM[10+i]
      Li(6, 2000),
      DmaSt(6, 5, 3, 1),      // contiguous
      Li(7, 3000),
      DmaSt(7, 5, 0, 1),      // count 0: nothing
      Halt(),
  });
  ASSERT_EQ(status, csr::STATUS_HALTED);
  const std::vector<uint32_t> vmem = ReadVmemWords(model_, 10, 8);
  for (uint32_t i = 0; i < 8; ++i) {
    for (uint32_t n = 0; n < lanes(); ++n) {
      ASSERT_EQ(vmem[i * lanes() + n], hbm[(5 * i) * lanes() + n]) << "line " << i;
    }
  }
  const std::vector<uint32_t> strided = ReadHbmWords(model_, 1000, 22);
  const std::vector<uint32_t> contiguous = ReadHbmWords(model_, 2000, 8);
  for (uint32_t i = 0; i < 8; ++i) {
    for (uint32_t n = 0; n < lanes(); ++n) {
      EXPECT_EQ(strided[3 * i * lanes() + n], vmem[i * lanes() + n]);
      EXPECT_EQ(contiguous[i * lanes() + n], vmem[i * lanes() + n]);
    }
    if (i < 7) EXPECT_EQ(strided[(3 * i + 1) * lanes()], 0u) << "gap lines untouched";
  }
  EXPECT_EQ(ReadHbmWords(model_, 3000, 1), std::vector<uint32_t>(lanes(), 0u));
  EXPECT_EQ(Csr(csr::DMA_LINES), 24u);
}

TEST_F(ChipModelTest, VsplatVaddVmax) {
  std::mt19937 rng(2);
  const uint32_t count = 6;
  std::vector<uint32_t> a(count * lanes()), b(count * lanes());
  for (uint32_t& v : a) v = MixedFloat(rng, 0.3);
  for (uint32_t& v : b) v = MixedFloat(rng, 0.3);
  WriteVmemWords(model_, 0, a);
  WriteVmemWords(model_, 100, b);
  const uint32_t imm = F32(1.5f);
  const uint32_t status = RunProgram(model_, {
      Li(1, 0), Li(2, 100), Li(3, count),
      Li(4, 200), Vadd(4, 1, 2, 3),                                  // a + b
      Li(5, 300), Vmax(5, 1, 2, 3),                                  // max(a, b)
      Li(6, 400), Vadd(6, 1, 2, 3, flag::VADD_SRC2_BCAST),           // a + b[0]
      Li(7, 500), Vmax(7, 1, 0, 3, flag::VMAX_SRC2_IMM, imm),        // max(a, 1.5)
      Li(8, 600), Vadd(8, 1, 0, 3, flag::VADD_SRC2_IMM, imm),        // a + 1.5
      Li(9, 700), Vsplat(9, 3, 0xDEADBEEF),
      Vadd(2, 2, 1, 3),                                              // in place: b = b + a
      Li(10, 0), Li(11, 800), Vsplat(11, 10, 0x1),                   // count 0
      Halt(),
  });
  ASSERT_EQ(status, csr::STATUS_HALTED);
  const auto sum = ReadVmemWords(model_, 200, count);
  const auto max = ReadVmemWords(model_, 300, count);
  const auto bcast = ReadVmemWords(model_, 400, count);
  const auto max_imm = ReadVmemWords(model_, 500, count);
  const auto add_imm = ReadVmemWords(model_, 600, count);
  const auto splat = ReadVmemWords(model_, 700, count);
  const auto in_place = ReadVmemWords(model_, 100, count);
  for (uint32_t i = 0; i < count * lanes(); ++i) {
    const uint32_t n = i % lanes();
    EXPECT_EQ(sum[i], tpu::numerics::F32Add(a[i], b[i])) << i;
    EXPECT_EQ(max[i], tpu::numerics::F32Max(a[i], b[i])) << i;
    EXPECT_EQ(bcast[i], tpu::numerics::F32Add(a[i], b[n])) << i;
    EXPECT_EQ(max_imm[i], tpu::numerics::F32Max(a[i], imm)) << i;
    EXPECT_EQ(add_imm[i], tpu::numerics::F32Add(a[i], imm)) << i;
    EXPECT_EQ(splat[i], 0xDEADBEEFu);
    EXPECT_EQ(in_place[i], tpu::numerics::F32Add(b[i], a[i])) << i;
  }
  EXPECT_EQ(ReadVmemWords(model_, 800, 1), std::vector<uint32_t>(lanes(), 0u));
  EXPECT_EQ(Csr(csr::VPU_BUSY), 7 * count);
}

// ----- errors --------------------------------------------------------------------------------------------

TEST_F(ChipModelTest, IllegalInstruction) {
  ExpectError({Li(1, 3), Nop(), Assemble(static_cast<Opcode>(0x07)), Halt()}, Error::ILLEGAL_INSTR, 2);
  EXPECT_EQ(model_.sreg(1), 3u);
  ExpectError({Assemble(static_cast<Opcode>(0xFF))}, Error::ILLEGAL_INSTR, 0);
}

TEST_F(ChipModelTest, BadPc) {
  ExpectError({Jmp(model_.config().imem_words + 3)}, Error::BAD_PC, model_.config().imem_words + 3);
  // Running off the end of IMEM.
  std::vector<uint64_t> all_nops(model_.config().imem_words, Nop());
  ExpectError(all_nops, Error::BAD_PC, model_.config().imem_words);
  // START_PC outside IMEM.
  LoadProgram(model_, {Halt()});
  model_.MmioWrite(csr::START_PC, 0xFFFFFFF0u);
  model_.MmioWrite(csr::DOORBELL, 1);
  model_.Run(100);
  EXPECT_EQ(Csr(csr::ERROR_CODE), static_cast<uint32_t>(Error::BAD_PC));
  EXPECT_EQ(Csr(csr::ERROR_PC), 0xFFFFFFF0u);
}

TEST_F(ChipModelTest, BadHbmAddressWritesNothing) {
  const uint32_t hbm_lines = static_cast<uint32_t>(model_.config().hbm_lines);
  WriteVmemWords(model_, 0, std::vector<uint32_t>(4 * lanes(), 0x11111111u));
  // Last line is exactly the top: fine. One more is not.
  ExpectError({Li(1, hbm_lines - 4), Li(3, 4), DmaSt(1, 0, 3, 1), Sync(), Li(1, hbm_lines - 3),
               DmaSt(1, 0, 3, 1), Halt()},
              Error::BAD_HBM_ADDR, 5);
  EXPECT_EQ(ReadHbmWords(model_, hbm_lines - 4, 4), std::vector<uint32_t>(4 * lanes(), 0x11111111u));
  // A stride whose i*imm leaves the 32-bit range (computed in 64 bits).
  ExpectError({Li(1, 0), Li(2, 0), Li(3, 3), DmaLd(1, 2, 3, 0x80000000u), Halt()}, Error::BAD_HBM_ADDR, 3);
  // A base beyond HBM with count 1.
  ExpectError({Li(1, 0xFFFFFFFFu), Li(3, 1), DmaLd(1, 2, 3, 1), Halt()}, Error::BAD_HBM_ADDR, 2);
  EXPECT_EQ(ReadVmemWords(model_, 0, 1), std::vector<uint32_t>(lanes(), 0x11111111u));
  EXPECT_EQ(Csr(csr::DMA_LINES), 0u);
}

TEST_F(ChipModelTest, BadVmemAddressEveryUnit) {
  const uint32_t vmem_lines = model_.config().vmem_lines;
  WriteVmemWords(model_, vmem_lines - 8, std::vector<uint32_t>(8 * lanes(), 0x22222222u));
  const std::vector<uint32_t> untouched(8 * lanes(), 0x22222222u);
  struct Case {
    const char* what;
    uint64_t instr;
  };
  // s1 = vmem_lines - 4, s2 = 0, s3 = 5 (reaches one past the end from s1), s4 = vmem_lines - lanes + 1.
  const Case cases[] = {
      {"DMA_LD", DmaLd(2, 1, 3, 1)},
      {"DMA_ST", DmaSt(2, 1, 3, 1)},
      {"MXU_LW", MxuLw(4)},
      {"MXU_MM lhs", MxuMm(1, 2, 3)},
      {"MXU_MM dst", MxuMm(2, 1, 3)},
      {"VADD dst", Vadd(1, 2, 2, 3)},
      {"VADD src1", Vadd(2, 1, 2, 3)},
      {"VADD src2", Vadd(2, 2, 1, 3)},
      {"VMAX src2", Vmax(2, 2, 1, 3)},
      {"VSPLAT", Vsplat(1, 3, 7)},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    ExpectError({Li(1, vmem_lines - 4), Li(2, 0), Li(3, 5), Li(4, vmem_lines - lanes() + 1), c.instr, Halt()},
                Error::BAD_VMEM_ADDR, 4);
    EXPECT_EQ(ReadVmemWords(model_, vmem_lines - 8, 8), untouched);
  }
  // The same operands that stay inside VMEM are fine: bcast reads one line, imm reads none.
  EXPECT_EQ(RunProgram(model_, {Li(1, vmem_lines - 1), Li(2, 0), Li(3, 5),
                                Vadd(2, 2, 1, 3, flag::VADD_SRC2_BCAST),
                                Vadd(2, 2, 0xF, 3, flag::VADD_SRC2_IMM, 0), Halt()}),
            csr::STATUS_HALTED);
}

TEST_F(ChipModelTest, WatchdogStopsALongWait) {
  model_.MmioWrite(csr::WATCHDOG_LIMIT, 100);
  // One DMA of 500 lines keeps the unit busy much longer than 100 cycles; the SYNC waits on it.
  ExpectError({Li(3, 500), DmaLd(0, 0, 3, 1), Sync(flag::SYNC_DMA), Halt()}, Error::WATCHDOG, 2);
  // A busy loop keeps issuing: no watchdog.
  EXPECT_EQ(RunProgram(model_, {Li(1, 1000), Addi(2, 2, 1), Bne(2, 1, 1), Halt()}), csr::STATUS_HALTED);
  // Limit 0 disables it.
  model_.MmioWrite(csr::WATCHDOG_LIMIT, 0);
  EXPECT_EQ(RunProgram(model_, {Li(3, 500), DmaLd(0, 0, 3, 1), Sync(flag::SYNC_DMA), Halt()}),
            csr::STATUS_HALTED);
}

TEST_F(ChipModelTest, ErrorIsClearedByNextDoorbell) {
  ExpectError({Assemble(static_cast<Opcode>(0x7F))}, Error::ILLEGAL_INSTR, 0);  // no such opcode
  model_.MmioWrite(csr::IRQ_STATUS, csr::IRQ_STATUS_CORE_ERROR);
  EXPECT_EQ(RunProgram(model_, {Halt()}), csr::STATUS_HALTED);
  EXPECT_EQ(Csr(csr::ERROR_CODE), 0u);
}

// ----- reset and interrupts ------------------------------------------------------------------------------

TEST_F(ChipModelTest, SoftResetAbortsAndRecovers) {
  WriteVmemWords(model_, 5000, std::vector<uint32_t>(lanes(), 0x33333333u));
  LoadProgram(model_, {Li(3, 1000), DmaLd(0, 0, 3, 1), Jmp(2)});
  model_.MmioWrite(csr::DOORBELL, 1);
  model_.MmioWrite(csr::HDMA_LINES, 100);
  model_.MmioWrite(csr::HDMA_CTRL, csr::HDMA_CTRL_START);
  model_.Run(20);
  ASSERT_EQ(Status(), csr::STATUS_BUSY | csr::STATUS_HDMA_BUSY);
  model_.MmioWrite(csr::IRQ_STATUS, 0);  // writing zeros clears nothing
  model_.MmioWrite(csr::SOFT_RESET, 1);
  EXPECT_EQ(Status(), 0u);
  EXPECT_EQ(Csr(csr::IRQ_STATUS), 0u);
  EXPECT_EQ(Csr(csr::HDMA_STATUS), 0u);
  EXPECT_EQ(Csr(csr::ERROR_CODE), 0u);
  EXPECT_FALSE(model_.Irq());
  EXPECT_EQ(model_.Run(1000), 0u) << "nothing left running after the reset";
  EXPECT_EQ(Csr(csr::IRQ_STATUS), 0u) << "the aborted host DMA does not complete";
  // Memories keep their contents; the core runs again.
  EXPECT_EQ(ReadVmemWords(model_, 5000, 1), std::vector<uint32_t>(lanes(), 0x33333333u));
  EXPECT_EQ(Csr(csr::IMEM_WINDOW), static_cast<uint32_t>(Li(3, 1000)));
  EXPECT_EQ(RunProgram(model_, {Li(1, 4), Halt()}), csr::STATUS_HALTED);
  EXPECT_EQ(model_.sreg(1), 4u);
}

TEST_F(ChipModelTest, SoftResetClearsAnError) {
  ExpectError({Jmp(0xFFFF)}, Error::BAD_PC, 0xFFFF);
  model_.MmioWrite(csr::SOFT_RESET, 1);
  EXPECT_EQ(Status(), 0u);
  EXPECT_EQ(Csr(csr::ERROR_CODE), 0u);
  EXPECT_FALSE(model_.Irq());
}

// Everything software and the backdoors can see of a chip: each core's CSRs, IMEM, VMEM, first HBM lines,
// HBM pages and time, the host memory's pages, the interrupt lines and the chip's time.
std::vector<uint64_t> Observe(ChipModel& model) {
  const uint32_t lanes = model.config().lanes;
  std::vector<uint64_t> seen;
  for (uint32_t c = 0; c < model.num_cores(); ++c) {
    const uint32_t base = c << csr::CORE_SHIFT;
    for (uint32_t offset = 0; offset < 0x100; offset += 4) seen.push_back(model.MmioRead(base + offset));
    for (uint32_t offset = 0; offset < 8 * model.config().imem_words; offset += 4) {
      seen.push_back(model.MmioRead(base + csr::IMEM_WINDOW + offset));
    }
    CoreModel& core = model.core(c);
    std::vector<uint32_t> words(size_t{model.config().vmem_lines} * lanes);
    EXPECT_TRUE(core.ReadVmem(0, words.data(), model.config().vmem_lines).ok());
    seen.insert(seen.end(), words.begin(), words.end());
    words.assign(size_t{1200} * lanes, 0);
    EXPECT_TRUE(core.ReadHbm(0, words.data(), 1200).ok());
    seen.insert(seen.end(), words.begin(), words.end());
    seen.push_back(core.hbm_pages_allocated());
    seen.push_back(core.cycle());
  }
  seen.push_back(model.host_memory().memory().pages_allocated());
  seen.push_back(model.IrqLines());
  seen.push_back(model.cycle());
  return seen;
}

// Where two observations first differ ("" when they are equal).
std::string FirstDifference(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b) {
  if (a.size() != b.size()) return "sizes " + std::to_string(a.size()) + " and " + std::to_string(b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) {
      return "element " + std::to_string(i) + ": " + std::to_string(a[i]) + " vs " + std::to_string(b[i]);
    }
  }
  return "";
}

TEST_F(ChipModelTest, ResetMatchesANewChip) { ExpectResetMatchesANewChip(); }
TEST_F(ChipModelHbmTwinTest, ResetMatchesANewChip) { ExpectResetMatchesANewChip(); }

void ChipModelTest::ExpectResetMatchesANewChip() {
  // Leave state everywhere: data in every memory, weights in the MXU, a host DMA and core 0 running (blocked
  // on a semaphore, no watchdog), semaphores counted on both cores, CSRs written, a host bus error range.
  std::mt19937 rng(5);
  WriteVmemWords(model_, 0, RandomFloats(rng, 64 * lanes()));
  WriteHbmWords(model_, 0, RandomFloats(rng, 64 * lanes()));
  const std::vector<uint32_t> host_words = RandomFloats(rng, 64 * lanes());
  ASSERT_TRUE(model_.HostWrite(0, host_words.data(), host_words.size() * 4).ok());
  model_.SetHostBusErrorRange(4096, 8192);
  const uint64_t post = Assemble(Opcode::RDMA, 5, 1, 4, 3, tpu::isa::flag::RDMA_POST, 2);
  LoadProgram(model_, {Li(1, 0), Li(2, 256), Li(3, 16), Li(4, 512), Li(5, 1), DmaLd(1, 2, 3, 1),
                       Sync(flag::SYNC_DMA), MxuLw(2), MxuMm(2, 4, 3, flag::MXU_MM_SWAP), MxuLw(4),
                       Sync(flag::SYNC_MXU), Vadd(4, 4, 2, 3), post, Assemble(Opcode::SEMPOST, 0, 0, 0, 0, 0, 1),
                       DmaLd(1, 2, 3, 1), Assemble(Opcode::SEMWAIT, 0, 0, 0, 0, 0, 3)});
  model_.MmioWrite(csr::WATCHDOG_LIMIT, 0);
  model_.MmioWrite(csr::IRQ_ENABLE, csr::IRQ_STATUS_CORE_DONE);
  model_.MmioWrite(csr::DOORBELL, 1);
  model_.MmioWrite(csr::START_PC, 7);
  model_.MmioWrite(csr::SEM_POST, 5);
  const uint32_t core1 = 1u << csr::CORE_SHIFT;
  // Until both semaphore posts have landed (the program then waits on semaphore 3), then a long host DMA
  // that is still running at the reset (started later: the HBM twin would serve it before the DMA loads).
  for (int i = 0; i < 100 && (Csr(csr::SEM_COUNTS) == 0 || model_.MmioRead(core1 + csr::SEM_COUNTS) == 0); ++i) {
    model_.Run(100);
  }
  model_.MmioWrite(csr::HDMA_LINES, 4000);
  model_.MmioWrite(csr::HDMA_HBM_LINE, 100);
  model_.MmioWrite(csr::HDMA_CTRL, csr::HDMA_CTRL_START | csr::HDMA_CTRL_TO_HOST);
  model_.Run(100);
  ASSERT_EQ(Status(), csr::STATUS_BUSY | csr::STATUS_HDMA_BUSY);
  ASSERT_NE(Csr(csr::SEM_COUNTS), 0u);
  ASSERT_NE(model_.MmioRead(core1 + csr::SEM_COUNTS), 0u) << "the RDMA posted on core 1";

  ChipModel fresh(model_.config());
  ASSERT_NE(FirstDifference(Observe(model_), Observe(fresh)), "");
  model_.Reset();
  EXPECT_EQ(FirstDifference(Observe(model_), Observe(fresh)), "");

  // What no CSR shows (MXU weights, unit and queue times, semaphores, the host memory's error range) shows
  // in what the same programs do next.
  const std::vector<uint32_t> lhs = RandomFloats(rng, 16 * lanes());
  for (ChipModel* model : {&model_, &fresh}) {
    WriteVmemWords(*model, 256, lhs);
    model->MmioWrite(csr::WATCHDOG_LIMIT, 500);
    model->MmioWrite(csr::HDMA_HOST_LO, 4096);
    model->MmioWrite(csr::HDMA_HBM_LINE, 1000);
    model->MmioWrite(csr::HDMA_LINES, 8);
    model->MmioWrite(csr::HDMA_CTRL, csr::HDMA_CTRL_START);
    RunProgram(*model, {Li(1, 0), Li(2, 256), Li(3, 16), Li(4, 512), MxuMm(2, 4, 3), DmaLd(1, 2, 3, 1),
                        DmaSt(1, 4, 3, 1), Sync(flag::SYNC_DMA | flag::SYNC_MXU), Vadd(4, 4, 2, 3),
                        Assemble(Opcode::SEMWAIT, 0, 0, 0, 0, 0, 1), Halt()});
    model->MmioWrite(core1 + csr::WATCHDOG_LIMIT, 100);
    for (uint32_t i = 0; i < 2; ++i) {
      const uint64_t word = i == 0 ? Assemble(Opcode::SEMWAIT, 0, 0, 0, 0, 0, 2) : Halt();
      model->MmioWrite(core1 + csr::IMEM_WINDOW + 8 * i, static_cast<uint32_t>(word));
      model->MmioWrite(core1 + csr::IMEM_WINDOW + 8 * i + 4, static_cast<uint32_t>(word >> 32));
    }
    model->MmioWrite(core1 + csr::DOORBELL, 1);
    model->Run(10000);
  }
  EXPECT_EQ(Csr(csr::STATUS), csr::STATUS_ERROR) << "semaphore 1 is zero again: the watchdog";
  EXPECT_EQ(Csr(csr::ERROR_CODE), static_cast<uint32_t>(Error::WATCHDOG));
  EXPECT_EQ(model_.MmioRead((1u << csr::CORE_SHIFT) + csr::ERROR_CODE), static_cast<uint32_t>(Error::WATCHDOG));
  EXPECT_EQ(Csr(csr::HDMA_STATUS), 0u) << "no host bus error range any more";
  EXPECT_EQ(FirstDifference(Observe(model_), Observe(fresh)), "");
}

TEST_F(ChipModelTest, IrqIsWriteOneToClearAndMasked) {
  RunProgram(model_, {Halt()});
  ASSERT_EQ(Csr(csr::IRQ_STATUS), csr::IRQ_STATUS_CORE_DONE);
  EXPECT_TRUE(model_.Irq());
  model_.MmioWrite(csr::IRQ_ENABLE, csr::IRQ_STATUS_CORE_ERROR);
  EXPECT_FALSE(model_.Irq()) << "CORE_DONE is masked";
  EXPECT_EQ(Csr(csr::IRQ_STATUS), csr::IRQ_STATUS_CORE_DONE) << "masking does not clear the status";
  model_.MmioWrite(csr::IRQ_ENABLE, 0xF);
  EXPECT_TRUE(model_.Irq());
  model_.MmioWrite(csr::IRQ_STATUS, csr::IRQ_STATUS_CORE_ERROR);  // other bit: no effect
  EXPECT_TRUE(model_.Irq());
  model_.MmioWrite(csr::IRQ_STATUS, csr::IRQ_STATUS_CORE_DONE);
  EXPECT_FALSE(model_.Irq());
  EXPECT_EQ(Csr(csr::IRQ_STATUS), 0u);
}

TEST_F(ChipModelTest, RunUntilIrqStopsAtTheInterrupt) {
  LoadProgram(model_, {Li(1, 200), Addi(2, 2, 1), Bne(2, 1, 1), Halt()});
  model_.MmioWrite(csr::DOORBELL, 1);
  const uint64_t ran = model_.RunUntilIrq(1'000'000);
  EXPECT_TRUE(model_.Irq());
  EXPECT_LT(ran, 1000u);
  EXPECT_EQ(model_.RunUntilIrq(50), 0u) << "already high";
  model_.MmioWrite(csr::IRQ_STATUS, 0xF);
  EXPECT_EQ(model_.RunUntilIrq(50), 50u) << "idle time passes when nothing can raise it";
}

// ----- cycle estimate ------------------------------------------------------------------------------------

TEST_F(ChipModelTest, CountersFollowTheConcurrencyModel) {
  const uint64_t latency = model_.config().hbm_latency;
  // Two back-to-back DMAs: the second issues once the first has sent its requests, so the memory
  // latency is paid once; SYNC waits for the second.
  RunProgram(model_, {Li(3, 64), DmaLd(0, 0, 3, 1), DmaLd(0, 0, 3, 1), Sync(), Halt()});
  const uint64_t queued_cycles = Csr(csr::CYCLES_LO) | (uint64_t{Csr(csr::CYCLES_HI)} << 32);
  EXPECT_GE(queued_cycles, latency + 128);
  EXPECT_LT(queued_cycles, latency + 128 + 20);
  EXPECT_EQ(Csr(csr::DMA_LINES), 128u);
  EXPECT_EQ(Csr(csr::INSTRET), 5u);
  EXPECT_GE(Csr(csr::STALL_CYCLES), latency + 128 - 10);
  // A store of the lines a load writes waits for that load; the next load only for the store's requests.
  RunProgram(model_, {Li(3, 64), DmaLd(0, 0, 3, 1), DmaSt(0, 0, 3, 1), Sync(), Halt()});
  const uint64_t interlocked = Csr(csr::CYCLES_LO);
  EXPECT_GE(interlocked, 2 * (latency + 64));
  EXPECT_LT(interlocked, 2 * (latency + 64) + 20);
  // With DMA_QUEUE instructions unfinished the next one waits for the oldest.
  std::vector<uint64_t> many = {Li(3, 1)};
  for (uint32_t i = 0; i <= model_.config().dma_queue; ++i) many.push_back(DmaLd(0, 0, 3, 1));
  many.push_back(Halt());
  RunProgram(model_, many);
  if (latency > 4) EXPECT_GE(Csr(csr::CYCLES_LO), 2 * latency);

  // The same amount of work on three different units overlaps.
  RunProgram(model_, {Li(3, 64), Li(4, 1000), Li(5, 2000), DmaLd(0, 0, 3, 1), MxuMm(4, 5, 3),
                      Vsplat(4, 3, 0), Sync(), Halt()});
  const uint64_t overlapped = Csr(csr::CYCLES_LO);
  const uint64_t dma_alone = latency + 64;
  const uint64_t mxu_alone = 64 + 2 * lanes();
  EXPECT_GE(overlapped, std::max(dma_alone, mxu_alone));
  EXPECT_LT(overlapped, std::max(dma_alone, mxu_alone) + 20);
  EXPECT_EQ(Csr(csr::MXU_BUSY_LO), 64u);
  EXPECT_EQ(Csr(csr::MXU_BUSY_HI), 0u);
  EXPECT_EQ(Csr(csr::VPU_BUSY), 64u);
  EXPECT_EQ(Csr(csr::DMA_LINES), 64u);

  // Without SYNC, HALT still waits for every unit.
  RunProgram(model_, {Li(3, 64), DmaLd(0, 0, 3, 1), Halt()});
  EXPECT_GE(Csr(csr::CYCLES_LO), latency + 64);
}

// Exact figures of the RTL's documented timing (rtl/core/tpu_sequencer.sv, rtl/mxu/mxu.sv): one issue per
// cycle, MXU_LW busy N+1 cycles, a SYNC issues in the first cycle its units are idle.
TEST_F(ChipModelTest, CyclesFollowTheRtlTiming) {
  RunProgram(model_, {Li(1, 0), Addi(1, 1, 1), Jmp(4), Nop(), Halt()});
  EXPECT_EQ(Csr(csr::INSTRET), 4u);
  EXPECT_EQ(Csr(csr::CYCLES_LO), 4u) << "no stalls: one cycle per instruction, branches included";
  EXPECT_EQ(Csr(csr::STALL_CYCLES), 0u);

  RunProgram(model_, {Li(1, 0), MxuLw(1), Sync(flag::SYNC_MXU), Halt()});
  EXPECT_EQ(Csr(csr::STALL_CYCLES), lanes() + 1);
  EXPECT_EQ(Csr(csr::CYCLES_LO), 4 + lanes() + 1);

  // MXU_MM of C rows is busy C + 2N + 1 cycles; with count 0 it is never busy.
  RunProgram(model_, {Li(3, 10), MxuMm(0, 0, 3), Sync(), MxuMm(0, 0, 0), Sync(), Halt()});
  EXPECT_EQ(Csr(csr::STALL_CYCLES), 10 + 2 * lanes() + 1);
}

// Errors are raised at issue, before waiting for the unit; the units finish what they were given (the
// core stays BUSY meanwhile), then the core stops with ERROR.
TEST_F(ChipModelTest, ErrorDrainsTheUnitsFirst) {
  std::vector<uint32_t> data(100 * lanes());
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint32_t>(i);
  WriteHbmWords(model_, 0, data);
  LoadProgram(model_, {Li(3, 100), Li(4, 200), DmaLd(0, 4, 3, 1), Li(5, 0xFFFFFF), DmaLd(0, 5, 3, 1), Halt()});
  model_.MmioWrite(csr::DOORBELL, 1);
  model_.Run(7);  // the error is raised in the fifth cycle
  EXPECT_EQ(Status(), csr::STATUS_BUSY) << "draining";
  EXPECT_EQ(Csr(csr::ERROR_CODE), static_cast<uint32_t>(Error::BAD_VMEM_ADDR));
  EXPECT_FALSE(model_.Irq());
  model_.Run(100000);
  EXPECT_EQ(Status(), csr::STATUS_ERROR);
  EXPECT_EQ(Csr(csr::ERROR_PC), 4u);
  EXPECT_TRUE(model_.Irq());
  EXPECT_EQ(ReadVmemWords(model_, 200, 100), data) << "the issued DMA completed";
  EXPECT_GE(Csr(csr::CYCLES_LO), 100 + model_.config().hbm_latency);
  // The next doorbell clears ERROR_PC with the rest of the error state.
  RunProgram(model_, {Halt()});
  EXPECT_EQ(Csr(csr::ERROR_PC), 0u);
}

// The issue trace: every cycle of a run is charged to one instruction word, stalls to the unit waited for,
// unit work to the instruction that gave it; an error's drain goes to the faulting word.
TEST_F(ChipModelTest, ProfileChargesEveryCycleToAnInstruction) {
  ExecutionProfile profile;
  model_.set_profile(&profile);
  const std::vector<uint64_t> program = {Li(3, 64), Li(4, 1000), Li(5, 2000), DmaLd(0, 0, 3, 1), MxuMm(4, 5, 3),
                                         Vsplat(4, 3, 0), Sync(flag::SYNC_DMA), Vsplat(4, 3, 0), Sync(), Halt()};
  RunProgram(model_, program);
  const uint64_t cycles = Csr(csr::CYCLES_LO);
  ASSERT_EQ(profile.pcs.size(), model_.config().imem_words);
  EXPECT_EQ(profile.cycles, cycles);
  uint64_t charged = 0, stalls = 0, issues = 0;
  for (const PcProfile& word : profile.pcs) {
    charged += word.cycles;
    stalls += word.stall_cycles;
    issues += word.issues;
    EXPECT_EQ(word.stall_on[0] + word.stall_on[1] + word.stall_on[2], word.stall_cycles);
  }
  EXPECT_EQ(charged, cycles);
  EXPECT_EQ(stalls, Csr(csr::STALL_CYCLES));
  EXPECT_EQ(issues, Csr(csr::INSTRET));
  EXPECT_EQ(profile.pcs[3].work[kProfileDma], 64u);
  EXPECT_EQ(profile.pcs[4].work[kProfileMxu], 64u);
  EXPECT_EQ(profile.pcs[5].work[kProfileVpu], 64u);
  // The first SYNC waits for the DMA; the second VSPLAT for the first (VPU); the last SYNC for the MXU.
  EXPECT_GT(profile.pcs[6].stall_on[kProfileDma], 0u);
  EXPECT_EQ(profile.pcs[6].stall_cycles, profile.pcs[6].stall_on[kProfileDma]);
  EXPECT_EQ(profile.pcs[2].cycles, 1u) << "an instruction that does not wait takes one cycle";
  ASSERT_EQ(profile.intervals.size(), 4u);
  EXPECT_EQ(profile.intervals[0].unit, kProfileDma);
  EXPECT_EQ(profile.intervals[0].lines, 64u);
  EXPECT_EQ(profile.intervals[1].unit, kProfileMxu);
  EXPECT_EQ(profile.intervals[1].end - profile.intervals[1].begin, 64u);
  for (const UnitInterval& interval : profile.intervals) EXPECT_LE(interval.end, cycles);

  // An error: the faulting word gets the drain, and the sum still holds.
  RunProgram(model_, {Li(3, 100), DmaLd(0, 0, 3, 1), Li(5, 0xFFFFFF), DmaLd(0, 5, 3, 1), Halt()});
  ASSERT_EQ(Status(), csr::STATUS_ERROR);
  charged = 0;
  for (const PcProfile& word : profile.pcs) charged += word.cycles;
  EXPECT_EQ(charged, Csr(csr::CYCLES_LO));
  EXPECT_EQ(profile.pcs[3].issues, 0u);
  EXPECT_GT(profile.pcs[3].cycles, 100u);

  // Off again: the profile keeps the last run.
  model_.set_profile(nullptr);
  RunProgram(model_, {Halt()});
  EXPECT_EQ(profile.pcs[3].issues, 0u);
  EXPECT_GT(profile.pcs[3].cycles, 100u);
}

TEST_F(ChipModelTest, RunHonoursItsBudget) {
  LoadProgram(model_, {Li(3, 2000), DmaLd(0, 0, 3, 1), Sync(), Halt()});
  model_.MmioWrite(csr::DOORBELL, 1);
  const uint64_t start = model_.cycle();
  EXPECT_EQ(model_.Run(100), 100u);
  EXPECT_EQ(model_.cycle(), start + 100);
  EXPECT_EQ(Status(), csr::STATUS_BUSY);
  // CYCLES counts the cycles the sequencer runs, from the first fetch after the doorbell.
  const uint32_t fetch = model_.timing().doorbell_to_fetch;
  EXPECT_EQ(Csr(csr::CYCLES_LO), 100u - fetch) << "CYCLES counts while BUSY";
  const uint64_t rest = model_.Run(1'000'000);
  EXPECT_EQ(Status(), csr::STATUS_HALTED);
  EXPECT_EQ(Csr(csr::CYCLES_LO), 100 + rest - fetch);
  model_.Step(1000);
  EXPECT_EQ(Csr(csr::CYCLES_LO), 100 + rest - fetch) << "counters stop at the halt";
}

}  // namespace
}  // namespace tpu::model
