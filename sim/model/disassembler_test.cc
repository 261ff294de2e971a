#include "sim/model/disassembler.h"

#include <gtest/gtest.h>

#include <random>
#include <sstream>

namespace tpu::model {
namespace {

using tpu::isa::Opcode;

TEST(DisassemblerTest, EncodeDecodeRoundTripForEveryOpcode) {
  std::mt19937 rng(3);
  for (const tpu::isa::OpcodeInfo& info : tpu::isa::kOpcodes) {
    for (int trial = 0; trial < 50; ++trial) {
      tpu::isa::Instr instr;
      instr.opcode = static_cast<uint8_t>(info.opcode);
      instr.rd = rng() & 15;
      instr.rs1 = rng() & 15;
      instr.rs2 = rng() & 15;
      instr.rs3 = rng() & 15;
      instr.flags = rng() & 0xFF;
      instr.imm = rng();
      const uint64_t word = Assemble(info.opcode, instr.rd, instr.rs1, instr.rs2, instr.rs3, instr.flags, instr.imm);
      ASSERT_EQ(word, tpu::isa::Encode(instr));
      const tpu::isa::Instr back = tpu::isa::Decode(word);
      EXPECT_EQ(back.opcode, instr.opcode);
      EXPECT_EQ(back.rd, instr.rd);
      EXPECT_EQ(back.rs1, instr.rs1);
      EXPECT_EQ(back.rs2, instr.rs2);
      EXPECT_EQ(back.rs3, instr.rs3);
      EXPECT_EQ(back.flags, instr.flags);
      EXPECT_EQ(back.imm, instr.imm);
      const std::string text = Disassemble(word);
      EXPECT_EQ(text.rfind(info.name, 0), 0u) << text << " should start with " << info.name;
    }
  }
}

TEST(DisassemblerTest, OperandsAndFlagsByName) {
  EXPECT_EQ(Disassemble(Assemble(Opcode::LI, 1, 0, 0, 0, 0, 4096)), "LI s1, 4096 (0x1000)");
  EXPECT_EQ(Disassemble(Assemble(Opcode::LI, 2, 0, 0, 0, 0, 7)), "LI s2, 7");
  EXPECT_EQ(Disassemble(Assemble(Opcode::ADDI, 3, 3, 0, 0, 0, 0xFFFFFFFFu)), "ADDI s3, s3, -1");
  EXPECT_EQ(Disassemble(Assemble(Opcode::SUB, 4, 5, 6)), "SUB s4, s5, s6");
  EXPECT_EQ(Disassemble(Assemble(Opcode::BNE, 0, 1, 2, 0, 0, 3)), "BNE s1, s2, 3");
  EXPECT_EQ(Disassemble(Assemble(Opcode::JMP, 0, 0, 0, 0, 0, 12)), "JMP 12");
  EXPECT_EQ(Disassemble(Assemble(Opcode::SLD, 4, 2, 0, 0, 0, 5)), "SLD s4, s2, 5");
  EXPECT_EQ(Disassemble(Assemble(Opcode::SYNC)), "SYNC ALL");
  EXPECT_EQ(Disassemble(Assemble(Opcode::SYNC, 0, 0, 0, 0, tpu::isa::flag::SYNC_DMA | tpu::isa::flag::SYNC_VPU)),
            "SYNC DMA VPU");
  EXPECT_EQ(Disassemble(Assemble(Opcode::DMA_LD, 0, 1, 2, 3, 0, 1)), "DMA_LD s1, s2, s3, 1");
  EXPECT_EQ(Disassemble(Assemble(Opcode::MXU_LW, 0, 7, 0, 0, tpu::isa::flag::MXU_LW_TRANSPOSE)),
            "MXU_LW s7 TRANSPOSE");
  EXPECT_EQ(Disassemble(Assemble(Opcode::MXU_MM, 0, 1, 2, 3, tpu::isa::flag::MXU_MM_ACC | tpu::isa::flag::MXU_MM_SWAP)),
            "MXU_MM s1, s2, s3 ACC SWAP");
  EXPECT_EQ(Disassemble(Assemble(Opcode::VADD, 1, 2, 0, 3, tpu::isa::flag::VADD_SRC2_IMM, 0x3F800000u)),
            "VADD s1, s2, s0, s3, 0x3f800000 SRC2_IMM");
  EXPECT_EQ(Disassemble(Assemble(Opcode::VMAX, 1, 2, 4, 3, tpu::isa::flag::VMAX_SRC2_BCAST)),
            "VMAX s1, s2, s4, s3 SRC2_BCAST");
  EXPECT_EQ(Disassemble(Assemble(Opcode::VSPLAT, 9, 0, 0, 3, 0, 0xDEADBEEF)), "VSPLAT s9, s3, 0xdeadbeef");
  EXPECT_EQ(Disassemble(Assemble(Opcode::HALT, 0, 0, 0, 0, 0x80)), "HALT flags=0x80");
  const std::string illegal = Disassemble(0x7F00000000000001ull);
  EXPECT_NE(illegal.find(".word 0x7f00000000000001"), std::string::npos) << illegal;
  EXPECT_NE(illegal.find("illegal"), std::string::npos) << illegal;
}

TEST(DisassemblerTest, ProgramListsOneLinePerInstruction) {
  const std::vector<uint64_t> program = {Assemble(Opcode::LI, 1, 0, 0, 0, 0, 3), Assemble(Opcode::NOP),
                                         Assemble(Opcode::HALT)};
  const std::string text = DisassembleProgram(program, 10);
  std::istringstream lines(text);
  std::string line;
  std::vector<std::string> all;
  while (std::getline(lines, line)) all.push_back(line);
  ASSERT_EQ(all.size(), 3u) << text;
  EXPECT_NE(all[0].find("10:"), std::string::npos);
  EXPECT_NE(all[0].find("LI s1, 3"), std::string::npos);
  EXPECT_NE(all[1].find("11:"), std::string::npos);
  EXPECT_NE(all[2].find("HALT"), std::string::npos);
  EXPECT_NE(all[2].find("0100000000000000"), std::string::npos) << "the raw word is listed";
}

}  // namespace
}  // namespace tpu::model
