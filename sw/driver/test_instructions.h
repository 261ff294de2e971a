// Instruction words for hand-written test programs (docs/isa.md), named as the ISA names their fields.
#pragma once

#include <cstdint>

#include "tpu_isa.h"

namespace tpu::testing {

inline uint64_t Instr(isa::Opcode opcode, uint8_t rd = 0, uint8_t rs1 = 0, uint8_t rs2 = 0, uint8_t rs3 = 0,
                      uint8_t flags = 0, uint32_t imm = 0) {
  isa::Instr instr;
  instr.opcode = static_cast<uint8_t>(opcode);
  instr.rd = rd;
  instr.rs1 = rs1;
  instr.rs2 = rs2;
  instr.rs3 = rs3;
  instr.flags = flags;
  instr.imm = imm;
  return isa::Encode(instr);
}
inline uint64_t Li(uint8_t rd, uint32_t imm) { return Instr(isa::Opcode::LI, rd, 0, 0, 0, 0, imm); }
inline uint64_t Halt() { return Instr(isa::Opcode::HALT); }

}  // namespace tpu::testing
