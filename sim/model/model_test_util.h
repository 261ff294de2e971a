// Helpers shared by the reference model's tests: building programs, loading them through the IMEM
// window, running them, and moving fp32 data in and out of VMEM/HBM.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "sim/model/chip_model.h"
#include "sim/model/disassembler.h"
#include "tpu_csr.h"
#include "tpu_isa.h"

namespace tpu::model::testing {

using tpu::isa::Opcode;

// Instruction constructors in the operand order of docs/isa.md.
inline uint64_t Nop() { return Assemble(Opcode::NOP); }
inline uint64_t Halt() { return Assemble(Opcode::HALT); }
inline uint64_t Li(uint8_t rd, uint32_t imm) { return Assemble(Opcode::LI, rd, 0, 0, 0, 0, imm); }
inline uint64_t Addi(uint8_t rd, uint8_t rs1, uint32_t imm) { return Assemble(Opcode::ADDI, rd, rs1, 0, 0, 0, imm); }
inline uint64_t Add(uint8_t rd, uint8_t rs1, uint8_t rs2) { return Assemble(Opcode::ADD, rd, rs1, rs2); }
inline uint64_t Sub(uint8_t rd, uint8_t rs1, uint8_t rs2) { return Assemble(Opcode::SUB, rd, rs1, rs2); }
inline uint64_t Mul(uint8_t rd, uint8_t rs1, uint8_t rs2) { return Assemble(Opcode::MUL, rd, rs1, rs2); }
inline uint64_t Bne(uint8_t rs1, uint8_t rs2, uint32_t target) { return Assemble(Opcode::BNE, 0, rs1, rs2, 0, 0, target); }
inline uint64_t Beq(uint8_t rs1, uint8_t rs2, uint32_t target) { return Assemble(Opcode::BEQ, 0, rs1, rs2, 0, 0, target); }
inline uint64_t Blt(uint8_t rs1, uint8_t rs2, uint32_t target) { return Assemble(Opcode::BLT, 0, rs1, rs2, 0, 0, target); }
inline uint64_t Jmp(uint32_t target) { return Assemble(Opcode::JMP, 0, 0, 0, 0, 0, target); }
inline uint64_t Sync(uint8_t flags = 0) { return Assemble(Opcode::SYNC, 0, 0, 0, 0, flags); }
inline uint64_t DmaLd(uint8_t hbm, uint8_t vmem, uint8_t count, uint32_t stride) {
  return Assemble(Opcode::DMA_LD, 0, hbm, vmem, count, 0, stride);
}
inline uint64_t DmaSt(uint8_t hbm, uint8_t vmem, uint8_t count, uint32_t stride) {
  return Assemble(Opcode::DMA_ST, 0, hbm, vmem, count, 0, stride);
}
inline uint64_t MxuLw(uint8_t vmem, uint8_t flags = 0) { return Assemble(Opcode::MXU_LW, 0, vmem, 0, 0, flags); }
inline uint64_t MxuMm(uint8_t lhs, uint8_t dst, uint8_t count, uint8_t flags = 0) {
  return Assemble(Opcode::MXU_MM, 0, lhs, dst, count, flags);
}
inline uint64_t Vadd(uint8_t rd, uint8_t rs1, uint8_t rs2, uint8_t rs3, uint8_t flags = 0, uint32_t imm = 0) {
  return Assemble(Opcode::VADD, rd, rs1, rs2, rs3, flags, imm);
}
inline uint64_t Vmax(uint8_t rd, uint8_t rs1, uint8_t rs2, uint8_t rs3, uint8_t flags = 0, uint32_t imm = 0) {
  return Assemble(Opcode::VMAX, rd, rs1, rs2, rs3, flags, imm);
}
inline uint64_t Vsplat(uint8_t rd, uint8_t rs3, uint32_t imm) { return Assemble(Opcode::VSPLAT, rd, 0, 0, rs3, 0, imm); }

inline uint32_t F32(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

// Writes `program` through the IMEM window at `first_word`.
inline void LoadProgram(ChipModel& model, const std::vector<uint64_t>& program, uint32_t first_word = 0) {
  for (size_t i = 0; i < program.size(); ++i) {
    const uint32_t offset = tpu::csr::IMEM_WINDOW + 8 * static_cast<uint32_t>(first_word + i);
    model.MmioWrite(offset, static_cast<uint32_t>(program[i]));
    model.MmioWrite(offset + 4, static_cast<uint32_t>(program[i] >> 32));
  }
}

// Loads, rings the doorbell and runs until idle (bounded); returns STATUS.
inline uint32_t RunProgram(ChipModel& model, const std::vector<uint64_t>& program, uint32_t start_pc = 0,
                           uint64_t max_cycles = 10'000'000) {
  LoadProgram(model, program);
  model.MmioWrite(tpu::csr::START_PC, start_pc);
  model.MmioWrite(tpu::csr::DOORBELL, 1);
  model.Run(max_cycles);
  return model.MmioRead(tpu::csr::STATUS);
}

inline std::vector<uint32_t> ReadVmemWords(const ChipModel& model, uint64_t line, uint64_t lines) {
  std::vector<uint32_t> words(lines * model.config().lanes);
  EXPECT_TRUE(model.ReadVmem(line, words.data(), lines).ok());
  return words;
}

inline void WriteVmemWords(ChipModel& model, uint64_t line, const std::vector<uint32_t>& words) {
  ASSERT_EQ(words.size() % model.config().lanes, 0u);
  ASSERT_TRUE(model.WriteVmem(line, words.data(), words.size() / model.config().lanes).ok());
}

inline std::vector<uint32_t> ReadHbmWords(const ChipModel& model, uint64_t line, uint64_t lines) {
  std::vector<uint32_t> words(lines * model.config().lanes);
  EXPECT_TRUE(model.ReadHbm(line, words.data(), lines).ok());
  return words;
}

inline void WriteHbmWords(ChipModel& model, uint64_t line, const std::vector<uint32_t>& words) {
  ASSERT_EQ(words.size() % model.config().lanes, 0u);
  ASSERT_TRUE(model.WriteHbm(line, words.data(), words.size() / model.config().lanes).ok());
}

// Random fp32 values of moderate magnitude (both signs).
inline std::vector<uint32_t> RandomFloats(std::mt19937& rng, size_t count, float scale = 4.0f) {
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<uint32_t> words(count);
  for (uint32_t& word : words) word = F32(dist(rng));
  return words;
}

// fp32 bit patterns from every class the numerics contract distinguishes: zeros, subnormals, tiny and
// huge normals, infinities, NaNs (quiet, signalling, with payloads), bf16 rounding ties.
inline std::vector<uint32_t> SpecialFloats() {
  return {0x00000000u, 0x80000000u, 0x00000001u, 0x807FFFFFu, 0x00400000u, 0x00800000u, 0x80800000u,
          0x00FFFFFFu, 0x1F800000u, 0x9F800000u, 0x20000000u, 0x3F800000u, 0xBF800000u, 0x3F808000u,
          0x3F818000u, 0x3F80FFFFu, 0x7F7FFFFFu, 0xFF7FFFFFu, 0x7F7F8000u, 0x5F800000u, 0xDF800000u,
          0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0x7FA12345u, 0x40490FDBu};
}

// A value drawn from SpecialFloats() with probability `special`, else a random moderate float.
inline uint32_t MixedFloat(std::mt19937& rng, double special) {
  static const std::vector<uint32_t> specials = SpecialFloats();
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  if (coin(rng) < special) return specials[rng() % specials.size()];
  std::uniform_real_distribution<float> dist(-8.0f, 8.0f);
  return F32(dist(rng));
}

}  // namespace tpu::model::testing
