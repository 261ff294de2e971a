// Reductions on the VPU.
#include "compiler/codegen/codegen_internal.h"

namespace tpu::compiler::codegen_internal {

// Reductions that keep only the minor dimension (or reduce everything when the minor dimension has one
// element): the result is one device row, the VPU combines the operand's rows into an accumulator row
// in row order. The accumulator starts as row 0; a non-identity init value is applied last.
Status CodeGenerator::EmitReduce(const HloInstruction& instruction) {
  const HloInstruction& operand = *instruction.operand(0);
  const HloInstruction& init = *instruction.operand(1);
  const HloOpcode op = ReducerOpcode(instruction);
  const int rank = operand.shape().rank();
  const DeviceLayout in = MakeDeviceLayout(operand.shape(), L());
  std::vector<int64_t> dims = instruction.dimensions();
  std::sort(dims.begin(), dims.end());
  bool leading = true;  // dims == {0, ..., rank-2} (or {0, ..., rank-1} with a minor dimension of 1)
  for (size_t i = 0; i < dims.size(); ++i) leading = leading && dims[i] == static_cast<int64_t>(i);
  const bool keeps_minor = leading && static_cast<int>(dims.size()) == rank - 1;
  const bool all_with_unit_minor = leading && static_cast<int>(dims.size()) == rank && in.cols == 1;
  if (rank == 0 || (!keeps_minor && !all_with_unit_minor)) {
    return Unimplemented("reduce " + instruction.name() + " over dimensions {" + [&] {
      std::string text;
      for (int64_t d : instruction.dimensions()) text += (text.empty() ? "" : ",") + std::to_string(d);
      return text;
    }() + "} of " + operand.shape().ToString() + ": only reductions that keep just the minor dimension are supported");
  }
  if (!IsScalarF32Constant(init)) {
    return Unimplemented("reduce " + instruction.name() + ": the init value must be a scalar f32 constant");
  }
  const uint32_t init_bits = FloatBits(init.literal().Get<float>(0));
  const bool init_is_identity = op == HloOpcode::kAdd ? (init_bits == 0u || init_bits == 0x80000000u)
                                                      : init_bits == 0xff800000u;
  if (!init_is_identity && !ImmediateKeepsPaddingZero(op, init_bits) && in.cols % L() != 0) {
    return Unimplemented("reduce " + instruction.name() + ": an init value that is not the identity of the reduction");
  }
  auto vop = [&](Reg dst, Reg src1, Reg src2, Reg count, uint8_t flags, uint32_t imm) {
    if (op == HloOpcode::kAdd) {
      asm_.Vadd(dst, src1, src2, count, flags, imm);
    } else {
      asm_.Vmax(dst, src1, src2, count, flags, imm);
    }
  };
  const uint32_t tiles = static_cast<uint32_t>(in.column_tiles(L()));
  const uint32_t rows = static_cast<uint32_t>(in.rows);
  if (tiles == 0 || rows == 0) {
    return Unimplemented("reduce " + instruction.name() + " of an empty operand");
  }
  if (options_.vmem_lines < 2 * tiles) return VmemOverflow(instruction, 2 * tiles);
  // VMEM: the accumulator at line 0 (addressed through s0), then a chunk of operand rows.
  const uint32_t chunk_rows = (options_.vmem_lines - tiles) / tiles;
  TPU_ASSIGN_OR_RETURN(ScopedReg in_hbm, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg tiles_reg, NewReg());
  LoadAddress(in_hbm, &operand, 0);
  asm_.Li(tiles_reg, tiles);
  asm_.DmaLoad(in_hbm, kZeroReg, tiles_reg, 1);
  asm_.Addi(in_hbm, in_hbm, tiles);
  TPU_RETURN_IF_ERROR(ForChunks(rows - 1, chunk_rows, {{in_hbm, tiles}}, [&](Reg count, uint32_t) -> Status {
    TPU_ASSIGN_OR_RETURN(ScopedReg buffer, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg lines, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg row, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg row_end, NewReg());
    asm_.Mul(lines, count, tiles_reg);
    asm_.Li(buffer, tiles);
    asm_.DmaLoad(in_hbm, buffer, lines, 1);
    asm_.Sync(kSyncDma);
    asm_.Addi(row, buffer, 0);
    asm_.Add(row_end, buffer, lines);
    Assembler::Label loop = asm_.NewLabel();
    asm_.Bind(loop);
    vop(kZeroReg, kZeroReg, row, tiles_reg, 0, 0);
    asm_.Add(row, row, tiles_reg);
    asm_.Bne(row, row_end, loop);
    asm_.Sync(kSyncVpu);  // the next chunk's DMA overwrites the rows just read
    return OkStatus();
  }));
  if (!init_is_identity) {
    asm_.Sync(kSyncDma);
    vop(kZeroReg, kZeroReg, kZeroReg, tiles_reg, isa::flag::VADD_SRC2_IMM, init_bits);
    asm_.Sync(kSyncVpu);
  }
  TPU_ASSIGN_OR_RETURN(ScopedReg out_hbm, NewReg());
  LoadAddress(out_hbm, &instruction, 0);
  asm_.DmaStore(out_hbm, kZeroReg, tiles_reg, 1);  // after the accumulator's DMA load: same unit, in order
  return OkStatus();
}

}  // namespace tpu::compiler::codegen_internal
