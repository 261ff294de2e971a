#include "sim/model/disassembler.h"

#include <cinttypes>
#include <cstdio>

namespace tpu::model {

namespace {

using tpu::isa::Opcode;

struct FlagName {
  Opcode opcode;
  uint8_t bit;
  const char* name;
};

// Names of the flag bits per opcode; the bit values come from the generated header.
constexpr FlagName kFlagNames[] = {
    {Opcode::SYNC, tpu::isa::flag::SYNC_DMA, "DMA"},
    {Opcode::SYNC, tpu::isa::flag::SYNC_MXU, "MXU"},
    {Opcode::SYNC, tpu::isa::flag::SYNC_VPU, "VPU"},
    {Opcode::SYNC, tpu::isa::flag::SYNC_ICI, "ICI"},
    {Opcode::MXU_LW, tpu::isa::flag::MXU_LW_TRANSPOSE, "TRANSPOSE"},
    {Opcode::MXU_MM, tpu::isa::flag::MXU_MM_ACC, "ACC"},
    {Opcode::MXU_MM, tpu::isa::flag::MXU_MM_SWAP, "SWAP"},
    {Opcode::VADD, tpu::isa::flag::VADD_SRC2_BCAST, "SRC2_BCAST"},
    {Opcode::VADD, tpu::isa::flag::VADD_SRC2_IMM, "SRC2_IMM"},
    {Opcode::VMAX, tpu::isa::flag::VMAX_SRC2_BCAST, "SRC2_BCAST"},
    {Opcode::VMAX, tpu::isa::flag::VMAX_SRC2_IMM, "SRC2_IMM"},
    {Opcode::VSUB, tpu::isa::flag::VSUB_SRC2_BCAST, "SRC2_BCAST"},
    {Opcode::VSUB, tpu::isa::flag::VSUB_SRC2_IMM, "SRC2_IMM"},
    {Opcode::VMUL, tpu::isa::flag::VMUL_SRC2_BCAST, "SRC2_BCAST"},
    {Opcode::VMUL, tpu::isa::flag::VMUL_SRC2_IMM, "SRC2_IMM"},
    {Opcode::VMIN, tpu::isa::flag::VMIN_SRC2_BCAST, "SRC2_BCAST"},
    {Opcode::VMIN, tpu::isa::flag::VMIN_SRC2_IMM, "SRC2_IMM"},
    {Opcode::VAND, tpu::isa::flag::VAND_SRC2_BCAST, "SRC2_BCAST"},
    {Opcode::VAND, tpu::isa::flag::VAND_SRC2_IMM, "SRC2_IMM"},
    {Opcode::VOR, tpu::isa::flag::VOR_SRC2_BCAST, "SRC2_BCAST"},
    {Opcode::VOR, tpu::isa::flag::VOR_SRC2_IMM, "SRC2_IMM"},
    {Opcode::VXOR, tpu::isa::flag::VXOR_SRC2_BCAST, "SRC2_BCAST"},
    {Opcode::VXOR, tpu::isa::flag::VXOR_SRC2_IMM, "SRC2_IMM"},
    {Opcode::VSHL, tpu::isa::flag::VSHL_SRC2_BCAST, "SRC2_BCAST"},
    {Opcode::VSHL, tpu::isa::flag::VSHL_SRC2_IMM, "SRC2_IMM"},
    {Opcode::VSHRL, tpu::isa::flag::VSHRL_SRC2_BCAST, "SRC2_BCAST"},
    {Opcode::VSHRL, tpu::isa::flag::VSHRL_SRC2_IMM, "SRC2_IMM"},
    {Opcode::VSHRA, tpu::isa::flag::VSHRA_SRC2_BCAST, "SRC2_BCAST"},
    {Opcode::VSHRA, tpu::isa::flag::VSHRA_SRC2_IMM, "SRC2_IMM"},
    {Opcode::VCMP, tpu::isa::flag::VCMP_SRC2_BCAST, "SRC2_BCAST"},
    {Opcode::VCMP, tpu::isa::flag::VCMP_SRC2_IMM, "SRC2_IMM"},
    {Opcode::VSEL, tpu::isa::flag::VSEL_SRC2_BCAST, "SRC2_BCAST"},
    {Opcode::VSEL, tpu::isa::flag::VSEL_SRC2_IMM, "SRC2_IMM"},
    {Opcode::VADD, tpu::isa::flag::VADD_INT, "INT"},
    {Opcode::VMAX, tpu::isa::flag::VMAX_INT, "INT"},
    {Opcode::VSUB, tpu::isa::flag::VSUB_INT, "INT"},
    {Opcode::VMUL, tpu::isa::flag::VMUL_INT, "INT"},
    {Opcode::VMIN, tpu::isa::flag::VMIN_INT, "INT"},
    {Opcode::VCMP, tpu::isa::flag::VCMP_INT, "INT"},
    {Opcode::VCVT, tpu::isa::flag::VCVT_F32_TO_S32, "F32_TO_S32"},
};

constexpr const char* kCmpDirNames[8] = {"EQ", "NE", "LT", "LE", "GT", "GE", "DIR6", "DIR7"};

std::string Reg(uint8_t index) { return "s" + std::to_string(index); }

std::string Hex(uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%" PRIx64, value);
  return text;
}

// Decimal, with the hex form too when that is easier to read.
std::string Number(uint32_t value) {
  if (value < 10) return std::to_string(value);
  return std::to_string(value) + " (" + Hex(value) + ")";
}

// " NAME NAME", plus " flags=0x.." for bits this opcode does not define.
std::string Flags(Opcode opcode, uint8_t flags) {
  std::string text;
  uint8_t known = 0;
  if (opcode == Opcode::VCMP) {  // the direction field is always shown
    known |= tpu::isa::flag::VCMP_DIR_MASK;
    text += std::string(" ") + kCmpDirNames[(flags & tpu::isa::flag::VCMP_DIR_MASK) >> tpu::isa::flag::VCMP_DIR_LSB];
  }
  for (const FlagName& flag : kFlagNames) {
    if (flag.opcode != opcode) continue;
    known |= flag.bit;
    if (flags & flag.bit) text += std::string(" ") + flag.name;
  }
  if (flags & ~known) text += " flags=" + Hex(flags & ~known);
  return text;
}

}  // namespace

std::string Disassemble(uint64_t word) {
  const tpu::isa::Instr in = tpu::isa::Decode(word);
  const tpu::isa::OpcodeInfo* info = tpu::isa::FindOpcode(in.opcode);
  if (info == nullptr) {
    char text[64];
    std::snprintf(text, sizeof text, ".word 0x%016" PRIx64 "   # illegal opcode 0x%02x", word, in.opcode);
    return text;
  }
  const std::string name = info->name;
  const std::string flags = Flags(info->opcode, in.flags);
  switch (info->opcode) {
    case Opcode::NOP:
    case Opcode::HALT: return name + flags;
    case Opcode::LI: return name + " " + Reg(in.rd) + ", " + Number(in.imm) + flags;
    case Opcode::ADDI: {
      // ADDI wraps, so a "negative" immediate reads better signed.
      const int32_t signed_imm = static_cast<int32_t>(in.imm);
      const std::string imm = signed_imm < 0 ? std::to_string(signed_imm) : Number(in.imm);
      return name + " " + Reg(in.rd) + ", " + Reg(in.rs1) + ", " + imm + flags;
    }
    case Opcode::ADD:
    case Opcode::SUB:
    case Opcode::MUL: return name + " " + Reg(in.rd) + ", " + Reg(in.rs1) + ", " + Reg(in.rs2) + flags;
    case Opcode::BNE:
    case Opcode::BEQ:
    case Opcode::BLT:
      return name + " " + Reg(in.rs1) + ", " + Reg(in.rs2) + ", " + std::to_string(in.imm) + flags;
    case Opcode::JMP: return name + " " + std::to_string(in.imm) + flags;
    case Opcode::SLD: return name + " " + Reg(in.rd) + ", " + Reg(in.rs1) + ", " + Number(in.imm) + flags;
    case Opcode::SEMWAIT:
    case Opcode::SEMPOST: return name + " " + Number(in.imm) + flags;
    case Opcode::SYNC: {
      constexpr uint8_t kUnits = tpu::isa::flag::SYNC_DMA | tpu::isa::flag::SYNC_MXU | tpu::isa::flag::SYNC_VPU |
                                 tpu::isa::flag::SYNC_ICI;
      return name + ((in.flags & kUnits) == 0 ? " ALL" : "") + flags;
    }
    case Opcode::DMA_LD:
    case Opcode::DMA_ST:
      return name + " " + Reg(in.rs1) + ", " + Reg(in.rs2) + ", " + Reg(in.rs3) + ", " + Number(in.imm) + flags;
    case Opcode::RDMA:
      return name + " " + Reg(in.rd) + ", " + Reg(in.rs1) + ", " + Reg(in.rs2) + ", " + Reg(in.rs3) + ", " +
             Number(in.imm) + flags;
    case Opcode::MXU_LW: return name + " " + Reg(in.rs1) + flags;
    case Opcode::MXU_MM: return name + " " + Reg(in.rs1) + ", " + Reg(in.rs2) + ", " + Reg(in.rs3) + flags;
    case Opcode::VADD:
    case Opcode::VMAX:
    case Opcode::VSUB:
    case Opcode::VMUL:
    case Opcode::VMIN:
    case Opcode::VAND:
    case Opcode::VOR:
    case Opcode::VXOR:
    case Opcode::VSHL:
    case Opcode::VSHRL:
    case Opcode::VSHRA:
    case Opcode::VCMP:
    case Opcode::VSEL: {
      std::string text = name + " " + Reg(in.rd) + ", " + Reg(in.rs1) + ", " + Reg(in.rs2) + ", " + Reg(in.rs3);
      if (in.flags & tpu::isa::flag::VADD_SRC2_IMM) text += ", " + Hex(in.imm);
      return text + flags;
    }
    case Opcode::VCVT:
    case Opcode::VEXP:
    case Opcode::VLOG:
    case Opcode::VRSQRT:
    case Opcode::VRCP:
    case Opcode::VTRANS: return name + " " + Reg(in.rd) + ", " + Reg(in.rs1) + ", " + Reg(in.rs3) + flags;
    case Opcode::VSPLAT: return name + " " + Reg(in.rd) + ", " + Reg(in.rs3) + ", " + Hex(in.imm) + flags;
  }
  return name;
}

std::string DisassembleProgram(const std::vector<uint64_t>& words, uint32_t first_index) {
  std::string text;
  for (size_t i = 0; i < words.size(); ++i) {
    char prefix[40];
    std::snprintf(prefix, sizeof prefix, "%5" PRIu64 ": %016" PRIx64 "  ", uint64_t{first_index} + i, words[i]);
    text += prefix + Disassemble(words[i]) + "\n";
  }
  return text;
}

}  // namespace tpu::model
