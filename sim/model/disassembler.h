// Disassembler for tpusim instruction words (docs/isa.md), and a small assembler helper for building
// programs in tests and tools.
//
// Text form: the mnemonic, its operands as the ISA table writes them, then the flags by name, e.g.
//   LI s1, 4096 (0x1000)
//   DMA_LD s1, s2, s3, 1
//   MXU_MM s4, s5, s6 ACC SWAP
//   SYNC DMA MXU            (SYNC ALL for flags = 0)
//   .word 0xff00000000000000   # illegal opcode 0xff
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tpu_isa.h"

namespace tpu::model {

std::string Disassemble(uint64_t word);

// One line per instruction: "index: hex-word  text", indices from `first_index`.
std::string DisassembleProgram(const std::vector<uint64_t>& words, uint32_t first_index = 0);

// The instruction word with these fields (register numbers 0..15; unused fields 0).
inline uint64_t Assemble(tpu::isa::Opcode opcode, uint8_t rd = 0, uint8_t rs1 = 0, uint8_t rs2 = 0,
                         uint8_t rs3 = 0, uint8_t flags = 0, uint32_t imm = 0) {
  tpu::isa::Instr instr;
  instr.opcode = static_cast<uint8_t>(opcode);
  instr.rd = rd;
  instr.rs1 = rs1;
  instr.rs2 = rs2;
  instr.rs3 = rs3;
  instr.flags = flags;
  instr.imm = imm;
  return tpu::isa::Encode(instr);
}

}  // namespace tpu::model
