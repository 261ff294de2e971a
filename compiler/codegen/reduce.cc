// Reductions on the VPU.
#include "compiler/codegen/codegen_internal.h"
#include "compiler/passes/codegen_legalization.h"

namespace tpu::compiler::codegen_internal {

namespace {

// The init value's raw bits when it is a scalar f32 or s32 constant (or s64 in the s32 range: its word).
std::optional<uint32_t> InitBits(const HloInstruction& init) {
  if (init.opcode() != HloOpcode::kConstant || !init.has_literal() || init.shape().rank() != 0) return std::nullopt;
  if (init.shape().element_type == hlo::PrimitiveType::F32) return FloatBits(init.literal().Get<float>(0));
  if (init.shape().element_type == hlo::PrimitiveType::S32) {
    return static_cast<uint32_t>(init.literal().Get<int32_t>(0));
  }
  if (init.shape().element_type == hlo::PrimitiveType::S64) {
    const int64_t value = init.literal().Get<int64_t>(0);
    if (value >= INT32_MIN && value <= INT32_MAX) return static_cast<uint32_t>(static_cast<int32_t>(value));
  }
  return std::nullopt;
}

std::string DimsText(const std::vector<int64_t>& dims) {
  std::string text;
  for (int64_t d : dims) text += (text.empty() ? "" : ",") + std::to_string(d);
  return text;
}

// How many items ForChunks(total, chunk, ...) advances its pointers by in all.
uint32_t ForChunksAdvance(uint32_t total, uint32_t chunk) {
  if (total == 0) return 0;
  chunk = std::min(chunk, total);
  const uint32_t full = total / chunk, rest = total % chunk;
  if (full >= 2) return full * chunk;
  return rest > 0 ? chunk : 0;
}

}  // namespace

// Reductions over a block of consecutive non-minor dimensions (dims = {j, ..., k} with k <= rank-2; or
// everything when the minor dimension has one element): the rows of the dimensions after k (inner, k <
// rank-2) stay together as one accumulator of inner * tiles lines, so for every index of the kept
// leading dimensions the VPU combines a contiguous run of such blocks into the accumulator in order.
// The accumulator starts as the first block; a non-identity init value is applied last. add, maximum
// and minimum, on f32 or (INT) s32 values.
Status CodeGenerator::EmitReduce(const HloInstruction& instruction) {
  const HloInstruction& operand = *instruction.operand(0);
  const HloInstruction& init = *instruction.operand(1);
  const HloOpcode op = ReducerOpcode(instruction);
  const int rank = operand.shape().rank();
  const DeviceLayout in = MakeDeviceLayout(operand.shape(), L());
  std::vector<int64_t> dims = instruction.dimensions();
  std::sort(dims.begin(), dims.end());
  const int64_t first = dims.empty() ? 0 : dims[0];
  bool consecutive = !dims.empty();
  for (size_t i = 0; i < dims.size(); ++i) consecutive = consecutive && dims[i] == first + static_cast<int64_t>(i);
  const bool keeps_minor = consecutive && dims.back() <= rank - 2;
  const bool all_with_unit_minor = consecutive && first == 0 && dims.back() == rank - 1 && in.cols == 1;
  if (rank == 0 || (!keeps_minor && !all_with_unit_minor)) {
    return Unimplemented("reduce " + instruction.name() + " over dimensions {" + DimsText(instruction.dimensions()) +
                         "} of " + operand.shape().ToString() +
                         ": only reductions over consecutive non-minor dimensions are supported");
  }
  const bool integer = IsIntegerValue(operand.shape());
  if (!integer && operand.shape().element_type != hlo::PrimitiveType::F32) {
    return Unimplemented("reduce " + instruction.name() + " of " + operand.shape().ToString() +
                         ": only f32 and s32 values are supported");
  }
  const std::optional<uint32_t> init_bits = InitBits(init);
  if (!init_bits) {
    return Unimplemented("reduce " + instruction.name() + ": the init value must be a scalar f32 or s32 constant");
  }
  const ReductionInit init_value{op, integer, init.literal().GetAsDouble(0)};
  const bool init_is_identity = init_value.IsIdentity();
  if (!init_is_identity && !init_value.KeepsPaddingZero() && in.cols % L() != 0) {
    return Unimplemented("reduce " + instruction.name() + ": an init value that is not the identity of the reduction");
  }
  isa::Opcode opcode = isa::Opcode::VADD;
  if (op == HloOpcode::kMaximum) opcode = isa::Opcode::VMAX;
  if (op == HloOpcode::kMinimum) opcode = isa::Opcode::VMIN;
  const uint8_t int_flag = integer ? isa::flag::VADD_INT : 0;
  auto vop = [&](Reg dst, Reg src1, Reg src2, Reg count, uint8_t flags, uint32_t imm) {
    asm_.Emit(opcode, {dst, src1, src2, count, static_cast<uint8_t>(flags | int_flag), imm});
  };
  // Kept leading rows (outer), reduced blocks per kept index (rows) and lines per block (block: the
  // column tiles of the inner rows kept after the reduced dimensions).
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < first; ++d) outer *= operand.shape().dimensions[d];
  for (int64_t d = dims.back() + 1; d < rank - 1; ++d) inner *= operand.shape().dimensions[d];
  const uint64_t block_lines = static_cast<uint64_t>(inner) * in.column_tiles(L());
  const uint32_t block = static_cast<uint32_t>(block_lines);
  const uint32_t rows = static_cast<uint32_t>(outer == 0 || inner == 0 ? 0 : in.rows / outer / inner);
  if (block == 0 || rows == 0 || outer == 0) {
    return Unimplemented("reduce " + instruction.name() + " of an empty operand");
  }
  if (options_.vmem_lines < 2 * block_lines) {
    if (inner == 1) return VmemOverflow(instruction, 2 * block);
    return Unimplemented("reduce " + instruction.name() + " over dimensions {" + DimsText(instruction.dimensions()) +
                         "} of " + operand.shape().ToString() + ": the " + std::to_string(block_lines) +
                         " lines kept per reduced index do not fit the VMEM twice");
  }
  // VMEM: the accumulator at line 0 (addressed through s0), then a chunk of operand rows.
  const uint32_t chunk_rows = (options_.vmem_lines - block) / block;
  TPU_ASSIGN_OR_RETURN(ScopedReg in_hbm, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg out_hbm, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg block_reg, NewReg());
  LoadAddress(in_hbm, &operand, 0);
  LoadAddress(out_hbm, &instruction, 0);
  asm_.Li(block_reg, block);
  auto reduce_block = [&]() -> Status {
    asm_.DmaLoad(in_hbm, kZeroReg, block_reg, 1);
    asm_.Addi(in_hbm, in_hbm, block);
    TPU_RETURN_IF_ERROR(ForChunks(rows - 1, chunk_rows, {{in_hbm, block}}, [&](Reg count, uint32_t) -> Status {
      TPU_ASSIGN_OR_RETURN(ScopedReg buffer, NewReg());
      TPU_ASSIGN_OR_RETURN(ScopedReg lines, NewReg());
      TPU_ASSIGN_OR_RETURN(ScopedReg row, NewReg());
      TPU_ASSIGN_OR_RETURN(ScopedReg row_end, NewReg());
      asm_.Mul(lines, count, block_reg);
      asm_.Li(buffer, block);
      asm_.DmaLoad(in_hbm, buffer, lines, 1);
      asm_.Sync(kSyncDma);
      asm_.Addi(row, buffer, 0);
      asm_.Add(row_end, buffer, lines);
      Assembler::Label loop = asm_.NewLabel();
      asm_.Bind(loop);
      vop(kZeroReg, kZeroReg, row, block_reg, 0, 0);
      asm_.Add(row, row, block_reg);
      asm_.Bne(row, row_end, loop);
      asm_.Sync(kSyncVpu);  // the next chunk's DMA overwrites the rows just read
      return OkStatus();
    }));
    // ForChunks leaves in_hbm at its last chunk: move it to the next block.
    asm_.Addi(in_hbm, in_hbm, (rows - 1 - ForChunksAdvance(rows - 1, chunk_rows)) * block);
    if (!init_is_identity) {
      asm_.Sync(kSyncDma);
      vop(kZeroReg, kZeroReg, kZeroReg, block_reg, isa::flag::VADD_SRC2_IMM, *init_bits);
      asm_.Sync(kSyncVpu);
    }
    asm_.DmaStore(out_hbm, kZeroReg, block_reg, 1);  // after the accumulator's DMA load: same unit, in order
    asm_.Addi(out_hbm, out_hbm, block);
    return OkStatus();
  };
  if (outer == 1) return reduce_block();
  TPU_ASSIGN_OR_RETURN(ScopedReg remaining, NewReg());
  asm_.Li(remaining, static_cast<uint32_t>(outer));
  Assembler::Label next = asm_.NewLabel();
  asm_.Bind(next);
  TPU_RETURN_IF_ERROR(reduce_block());
  asm_.Addi(remaining, remaining, static_cast<uint32_t>(-1));
  asm_.Bne(remaining, kZeroReg, next);
  return OkStatus();
}

void CodeGenerator::AddReduceHandlers(OpcodeHandlerTable& table) {
  OpcodeHandler reduce(HloOpcode::kReduce);
  reduce.check = [](const HloInstruction& instruction) -> Status {
    if (instruction.operand_count() != 2 || ReducerOpcode(instruction) == HloOpcode::kUnknown) {
      return Unimplemented("reduce " + instruction.name() +
                           ": only a single-operand add, maximum or minimum reduction is supported");
    }
    if (instruction.shape().element_type == hlo::PrimitiveType::U32 && ReducerOpcode(instruction) != HloOpcode::kAdd) {
      return Unimplemented("reduce " + instruction.name() + ": the VPU orders integers as s32; a u32 " +
                           HloOpcodeString(ReducerOpcode(instruction)) + " reduction is not lowered");
    }
    return OkStatus();
  };
  reduce.types = ElementTypes::kF32OrInteger;  // s32 with INT
  // The init value is an immediate.
  reduce.reads_operand = [](const HloInstruction& instruction, const HloInstruction& operand, uint32_t) {
    return !(instruction.operand_count() == 2 && instruction.operand(1) == &operand &&
             instruction.operand(0) != &operand && IsScalarF32Constant(operand));
  };
  reduce.emit = [](CodeGenerator& g, const HloInstruction& instruction) { return g.EmitReduce(instruction); };
  table.Add(std::move(reduce));
}

}  // namespace tpu::compiler::codegen_internal
