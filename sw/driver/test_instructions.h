// Instruction words for hand-written test programs (docs/isa.md): the reference model's assembler
// (sim/model/disassembler.h) and the two words every program needs.
#pragma once

#include <cstdint>

#include "sim/model/disassembler.h"

namespace tpu::testing {

using model::Assemble;
inline uint64_t Li(uint8_t rd, uint32_t imm) { return Assemble(isa::Opcode::LI, rd, 0, 0, 0, 0, imm); }
inline uint64_t Halt() { return Assemble(isa::Opcode::HALT); }

}  // namespace tpu::testing
