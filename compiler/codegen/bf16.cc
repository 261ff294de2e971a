// bf16 values. A bf16 element is stored as the f32 word of the same value (program.h), so bf16 -> f32
// is the same buffer (the convert handler) and f32 -> bf16 rounds every word to the nearest bf16 (ties to
// even) on the VPU.
#include "compiler/codegen/codegen_internal.h"

namespace tpu::compiler::codegen_internal {

// Round to nearest even on the raw bits, with s32 lanes: x + 0x7fff + bit16(x), then clear the low 16
// bits. A carry out of the mantissa moves to the next binade (and to inf from the largest finite
// values), as rounding does. Only a NaN whose payload has its upper bits set would carry into the sign,
// hence `canonicalize`: max(x, x) turns every NaN into the canonical 0x7FC00000 (and, DAZ, subnormals
// into zeros, as every VPU operation does). Padded lanes stay +0.
Status CodeGenerator::EmitBf16Rounding(const HloInstruction* from, const HloInstruction& to, bool canonicalize) {
  using isa::Opcode;
  namespace flag = isa::flag;
  const uint32_t lines = MakeDeviceLayout(to.shape(), L()).lines;
  if (options_.vmem_lines < 2) return VmemOverflow(to, 2);
  const uint32_t chunk = options_.vmem_lines / 2;
  TPU_ASSIGN_OR_RETURN(ScopedReg value, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg rounded, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg in_hbm, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg out_hbm, NewReg());
  asm_.Li(value, 0);
  asm_.Li(rounded, chunk);
  LoadAddress(in_hbm, from, 0);
  LoadAddress(out_hbm, &to, 0);
  const uint8_t not_equal = static_cast<uint8_t>(VcmpDirection(hlo::ComparisonDirection::kNe) << flag::VCMP_DIR_LSB);
  return ForChunks(lines, chunk, {{in_hbm, 1}, {out_hbm, 1}}, [&](Reg count, uint32_t) {
    asm_.DmaLoad(in_hbm, value, count, 1);
    asm_.Sync(kSyncDma);  // also the previous chunk's store of `rounded`
    if (canonicalize) asm_.Vmax(value, value, value, count);
    asm_.Emit(Opcode::VAND, {rounded, value, kZeroReg, count, flag::VAND_SRC2_IMM, 0x10000u});
    asm_.Emit(Opcode::VCMP, {rounded, rounded, kZeroReg, count,
                             static_cast<uint8_t>(flag::VCMP_SRC2_IMM | flag::VCMP_INT | not_equal), 0});
    asm_.Emit(Opcode::VADD, {rounded, rounded, value, count, flag::VADD_INT, 0});
    asm_.Emit(Opcode::VADD, {rounded, rounded, kZeroReg, count, static_cast<uint8_t>(flag::VADD_INT | flag::VADD_SRC2_IMM),
                             0x7fffu});
    asm_.Emit(Opcode::VAND, {rounded, rounded, kZeroReg, count, flag::VAND_SRC2_IMM, 0xffff0000u});
    asm_.Sync(kSyncVpu);
    asm_.DmaStore(out_hbm, rounded, count, 1);
    return OkStatus();
  });
}

Status CodeGenerator::EmitBf16Convert(const HloInstruction& instruction) {
  const HloInstruction* operand = instruction.operand(0);
  const hlo::PrimitiveType from = operand->shape().element_type, to = instruction.shape().element_type;
  if (to == hlo::PrimitiveType::BF16 && from == hlo::PrimitiveType::F32) {
    return EmitBf16Rounding(operand, instruction, /*canonicalize=*/true);
  }
  return Unimplemented("convert " + instruction.name() + " from " + hlo::PrimitiveTypeName(from) + " to " +
                       hlo::PrimitiveTypeName(to) + ": bf16 converts only from and to f32");
}

}  // namespace tpu::compiler::codegen_internal
