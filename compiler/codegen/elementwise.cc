// Elementwise lowerings on the VPU: binary ops, compare, select, convert, exp/log/rsqrt/sqrt/divide.
#include "compiler/codegen/codegen_internal.h"

namespace tpu::compiler::codegen_internal {

Status CodeGenerator::EmitElementwise(const HloInstruction& instruction, HloOpcode op, const HloInstruction* a,
                                      Src2 b) {
  const std::optional<isa::Opcode> opcode = VpuOpcodeFor(op);
  if (!opcode) return UnsupportedOp(instruction);
  VpuOp vpu;
  vpu.opcode = *opcode;
  if (IsIntegerValue(instruction.shape())) vpu.flags = isa::flag::VADD_INT;
  // Negate runs a second instruction on the same lines: + 0 after * -1 turns -0 back into +0.
  vpu.then_add_zero = instruction.opcode() == HloOpcode::kNegate && !IsIntegerValue(instruction.shape());
  return EmitVpu(instruction, vpu, a, b);
}

Status CodeGenerator::EmitVpu(const HloInstruction& instruction, const VpuOp& vpu, const HloInstruction* a,
                              Src2 b) {
  const DeviceLayout layout = MakeDeviceLayout(instruction.shape(), L());
  auto vop = [&](Reg dst, Reg src1, Reg src2, Reg count, uint8_t flags, uint32_t imm) {
    if (vpu.unary) {
      asm_.Emit(vpu.opcode, {dst, src1, kZeroReg, count, vpu.flags, 0});
    } else {
      asm_.Emit(vpu.opcode, {dst, src1, src2, count, static_cast<uint8_t>(flags | vpu.flags), imm});
    }
    if (vpu.then_add_zero) asm_.Vadd(dst, dst, kZeroReg, count, isa::flag::VADD_SRC2_IMM, 0);
  };
  TPU_ASSIGN_OR_RETURN(ScopedReg a_hbm, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg out_hbm, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg a_vmem, NewReg());
  LoadAddress(a_hbm, a, 0);
  LoadAddress(out_hbm, &instruction, 0);
  const uint32_t budget = options_.vmem_lines;

  if (b.kind == Src2::kTensor || b.kind == Src2::kImmediate) {
    const bool tensor = b.kind == Src2::kTensor;
    const uint32_t chunk = tensor ? budget / 2 : budget;
    if (chunk == 0) return VmemOverflow(instruction, 2);
    TPU_ASSIGN_OR_RETURN(ScopedReg b_hbm, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg b_vmem, NewReg());
    if (tensor) LoadAddress(b_hbm, b.value, 0);
    asm_.Li(a_vmem, 0);
    asm_.Li(b_vmem, std::min(chunk, layout.lines));
    std::vector<std::pair<Reg, uint32_t>> pointers = {{a_hbm, 1}, {out_hbm, 1}};
    if (tensor) pointers.push_back({b_hbm, 1});
    return ForChunks(layout.lines, chunk, pointers, [&](Reg count, uint32_t) {
      asm_.DmaLoad(a_hbm, a_vmem, count, 1);
      if (tensor) asm_.DmaLoad(b_hbm, b_vmem, count, 1);
      asm_.Sync(kSyncDma);
      if (tensor) {
        vop(a_vmem, a_vmem, b_vmem, count, 0, 0);
      } else {
        vop(a_vmem, a_vmem, kZeroReg, count, isa::flag::VADD_SRC2_IMM, b.imm);
      }
      asm_.Sync(kSyncVpu);
      asm_.DmaStore(out_hbm, a_vmem, count, 1);
      return OkStatus();
    });
  }

  // Row broadcast: the row's line t is added to line t of every row.
  const uint32_t tiles = static_cast<uint32_t>(layout.column_tiles(L()));
  TPU_ASSIGN_OR_RETURN(ScopedReg row_vmem, NewReg());
  {
    TPU_ASSIGN_OR_RETURN(ScopedReg row_hbm, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg row_count, NewReg());
    if (b.constant_row >= 0) {
      asm_.LoadAddress(row_hbm, RegionKind::kConstant, static_cast<uint32_t>(b.constant_row), 0);
    } else {
      LoadAddress(row_hbm, b.value, 0);
    }
    asm_.Li(row_vmem, 0);
    asm_.Li(row_count, tiles);
    asm_.DmaLoad(row_hbm, row_vmem, row_count, 1);  // waited for by the first SYNC below
  }
  if (tiles == 1) {
    // Rows are whole lines: one VPU instruction per chunk with the row broadcast to every line.
    if (budget <= 1) return VmemOverflow(instruction, 2);
    asm_.Li(a_vmem, 1);
    return ForChunks(layout.lines, budget - 1, {{a_hbm, 1}, {out_hbm, 1}}, [&](Reg count, uint32_t) {
      asm_.DmaLoad(a_hbm, a_vmem, count, 1);
      asm_.Sync(kSyncDma);
      vop(a_vmem, a_vmem, row_vmem, count, isa::flag::VADD_SRC2_BCAST, 0);
      asm_.Sync(kSyncVpu);
      asm_.DmaStore(out_hbm, a_vmem, count, 1);
      return OkStatus();
    });
  }
  // Several lines per row: gather column tile t of a chunk of rows into contiguous lines (strided DMA),
  // apply line t of the row to all of them, scatter them back.
  if (budget <= tiles) return VmemOverflow(instruction, tiles + 1);
  asm_.Li(a_vmem, tiles);
  const uint32_t rows = static_cast<uint32_t>(layout.rows);
  return ForChunks(rows, budget - tiles, {{a_hbm, tiles}, {out_hbm, tiles}}, [&](Reg count, uint32_t) {
    TPU_ASSIGN_OR_RETURN(ScopedReg a_tile, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg out_tile, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg row_line, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg row_end, NewReg());
    asm_.Addi(a_tile, a_hbm, 0);
    asm_.Addi(out_tile, out_hbm, 0);
    asm_.Li(row_line, 0);
    asm_.Li(row_end, tiles);
    Assembler::Label loop = asm_.NewLabel();
    asm_.Bind(loop);
    asm_.DmaLoad(a_tile, a_vmem, count, tiles);
    asm_.Sync(kSyncDma);
    vop(a_vmem, a_vmem, row_line, count, isa::flag::VADD_SRC2_BCAST, 0);
    asm_.Sync(kSyncVpu);
    asm_.DmaStore(out_tile, a_vmem, count, tiles);
    asm_.Addi(a_tile, a_tile, 1);
    asm_.Addi(out_tile, out_tile, 1);
    asm_.Addi(row_line, row_line, 1);
    asm_.Bne(row_line, row_end, loop);
    return OkStatus();
  });
}

// exp, log, rsqrt, sqrt and x / y with the transcendental VPU instructions (docs/numerics.md),
// chunk by chunk in VMEM:
//  - exp, log, rsqrt: VEXP, VLOG, VRSQRT in place;
//  - x / y = x * VRCP(y) (the rcp is ~1 ulp, the product one more rounding);
//  - sqrt(x) = x * VRSQRT(x), and 0 where x == 0 (the product would be 0 * inf = NaN); +inf is not
//    handled (inf * 0 = NaN).
// Padded lanes would hold exp(0) = 1, log(0), rsqrt(0) or 0 * rcp(0): when the minor dimension has
// padding, a second pass clears them (VAND with a row of ones in the logical lanes). sqrt gives 0 there.
Status CodeGenerator::EmitMath(const HloInstruction& instruction, MathKind kind) {
  static const char* const kOpcodeNames[] = {"VEXP", "VLOG", "VRCP", "VRSQRT", "VRSQRT"};
  if (!HasOpcode(kOpcodeNames[static_cast<int>(kind)]) || !HasOpcode("VMUL")) return UnsupportedOp(instruction);
  const DeviceLayout layout = MakeDeviceLayout(instruction.shape(), L());
  constexpr uint32_t kBuffers = 2;
  const uint32_t chunk = options_.vmem_lines / kBuffers;
  if (chunk == 0) return VmemOverflow(instruction, kBuffers);
  const uint32_t used = std::min(chunk, layout.lines);
  TPU_RETURN_IF_ERROR(EmitMathChunks(instruction, kind, chunk, used));
  if (layout.cols % L() == 0 || kind == MathKind::kSqrt) return OkStatus();
  asm_.Sync(kSyncAll);
  VpuOp mask;
  mask.opcode = isa::Opcode::VAND;
  Src2 row;
  row.kind = Src2::kRow;
  TPU_ASSIGN_OR_RETURN(row.constant_row, ConstantRow(0xffffffffu, layout.cols));
  return EmitVpu(instruction, mask, &instruction, row);
}

Status CodeGenerator::EmitMathChunks(const HloInstruction& instruction, MathKind kind, uint32_t chunk,
                                     uint32_t used) {
  const DeviceLayout layout = MakeDeviceLayout(instruction.shape(), L());
  TPU_ASSIGN_OR_RETURN(ScopedReg X, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg A, NewReg());
  asm_.Li(X, 0);
  asm_.Li(A, used);
  TPU_ASSIGN_OR_RETURN(ScopedReg x_hbm, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg y_hbm, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg out_hbm, NewReg());
  LoadAddress(x_hbm, instruction.operand(0), 0);
  if (kind == MathKind::kDivide) LoadAddress(y_hbm, instruction.operand(1), 0);
  LoadAddress(out_hbm, &instruction, 0);
  std::vector<std::pair<Reg, uint32_t>> pointers = {{x_hbm, 1}, {out_hbm, 1}};
  if (kind == MathKind::kDivide) pointers.push_back({y_hbm, 1});

  return ForChunks(layout.lines, chunk, pointers, [&](Reg count, uint32_t) -> Status {
    using isa::Opcode;
    auto unary = [&](Opcode opcode, Reg d, Reg a) { asm_.Emit(opcode, {d, a, kZeroReg, count, 0, 0}); };
    asm_.DmaLoad(x_hbm, X, count, 1);
    if (kind == MathKind::kDivide) asm_.DmaLoad(y_hbm, A, count, 1);
    asm_.Sync(kSyncDma);
    switch (kind) {
      case MathKind::kExp:
        unary(Opcode::VEXP, X, X);
        break;
      case MathKind::kLog:
        unary(Opcode::VLOG, X, X);
        break;
      case MathKind::kRsqrt:
        unary(Opcode::VRSQRT, X, X);
        break;
      case MathKind::kDivide:
        unary(Opcode::VRCP, A, A);
        asm_.Emit(Opcode::VMUL, {X, X, A, count, 0, 0});
        break;
      case MathKind::kSqrt:
        unary(Opcode::VRSQRT, A, X);
        asm_.Emit(Opcode::VMUL, {A, X, A, count, 0, 0});
        asm_.Emit(Opcode::VCMP, {X, X, kZeroReg, count,
                                 static_cast<uint8_t>(isa::flag::VCMP_SRC2_IMM |
                                                      (VcmpDirection(hlo::ComparisonDirection::kNe)
                                                       << isa::flag::VCMP_DIR_LSB)),
                                 0});                                   // 1 where x != 0
        asm_.Emit(Opcode::VSEL, {X, A, kZeroReg, count, isa::flag::VSEL_SRC2_IMM, 0});
        break;
    }
    asm_.Sync(kSyncVpu);
    asm_.DmaStore(out_hbm, X, count, 1);
    return OkStatus();
  });
}

// bf16(x) on the MXU: the lines streamed through identity weights come out rounded to bf16 (products
// with 1.0 are exact, the column sum adds zeros).
Status CodeGenerator::EmitRoundToBf16(const HloInstruction& instruction) {
  const uint32_t lanes = L();
  const DeviceLayout layout = MakeDeviceLayout(instruction.shape(), lanes);
  if (options_.vmem_lines < lanes + 2) return VmemOverflow(instruction, lanes + 2);
  const uint32_t chunk = (options_.vmem_lines - lanes) / 2;
  const uint32_t used = std::min(chunk, layout.lines);
  TPU_ASSIGN_OR_RETURN(ScopedReg identity_reg, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg in_vmem, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg out_vmem, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg in_hbm, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg out_hbm, NewReg());
  {
    TPU_ASSIGN_OR_RETURN(ScopedReg address, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg count, NewReg());
    asm_.LoadAddress(address, RegionKind::kConstant, static_cast<uint32_t>(IdentityRegion()), 0);
    asm_.Li(identity_reg, 0);
    asm_.Li(count, lanes);
    asm_.DmaLoad(address, identity_reg, count, 1);
    asm_.Sync(kSyncDma);
    asm_.MxuLoadWeights(identity_reg, /*transpose=*/false);
    // One line through the swapped-in identity (into a line the chunks overwrite): the identity is then
    // the front buffer for every chunk.
    asm_.Li(in_vmem, lanes);
    asm_.Li(count, 1);
    asm_.MxuMatmul(identity_reg, in_vmem, count, /*accumulate=*/false, /*swap=*/true);
    asm_.Sync(kSyncMxu);
  }
  asm_.Li(in_vmem, lanes);
  asm_.Li(out_vmem, lanes + used);
  LoadAddress(in_hbm, instruction.operand(0), 0);
  LoadAddress(out_hbm, &instruction, 0);
  return ForChunks(layout.lines, chunk, {{in_hbm, 1}, {out_hbm, 1}}, [&](Reg count, uint32_t) {
    asm_.DmaLoad(in_hbm, in_vmem, count, 1);
    asm_.Sync(kSyncDma);
    asm_.MxuMatmul(in_vmem, out_vmem, count, /*accumulate=*/false, /*swap=*/false);
    asm_.Sync(kSyncMxu);
    asm_.DmaStore(out_hbm, out_vmem, count, 1);
    return OkStatus();
  });
}

// compare: VCMP (INT for integer operands) with the direction in its flags; the second operand may be a
// folded broadcast. Padded lanes compare +0 with +0 (or the immediate): when that is true they are
// cleared afterwards with VAND against a row that is all ones in the logical lanes.
Status CodeGenerator::EmitCompare(const HloInstruction& instruction) {
  const HloInstruction* a = instruction.operand(0);
  const HloInstruction* b_value = instruction.operand(1);
  const hlo::ComparisonDirection direction = instruction.comparison_direction();
  VpuOp vpu;
  vpu.opcode = isa::Opcode::VCMP;
  vpu.flags = static_cast<uint8_t>(VcmpDirection(direction) << isa::flag::VCMP_DIR_LSB);
  if (a->shape().element_type != hlo::PrimitiveType::F32) vpu.flags |= isa::flag::VCMP_INT;
  const DeviceLayout layout = MakeDeviceLayout(instruction.shape(), L());
  Src2 b;
  if (FoldableBroadcast(instruction, *b_value)) {
    const HloInstruction& source = *b_value->operand(0);
    if (IsScalarF32Constant(source)) {
      b.kind = Src2::kImmediate;
      b.imm = FloatBits(source.literal().Get<float>(0));
    } else {
      b.kind = Src2::kRow;
      b.value = &source;
    }
  } else {
    b.kind = Src2::kTensor;
    b.value = b_value;
  }
  TPU_RETURN_IF_ERROR(EmitVpu(instruction, vpu, a, b));
  const bool integer = a->shape().element_type != hlo::PrimitiveType::F32;
  const bool padding_true = CompareTrueOnPadding(direction, b.kind == Src2::kImmediate && !integer, b.imm);
  if (layout.cols % L() == 0 || !padding_true) return OkStatus();
  asm_.Sync(kSyncAll);
  VpuOp mask;
  mask.opcode = isa::Opcode::VAND;
  Src2 row;
  row.kind = Src2::kRow;
  TPU_ASSIGN_OR_RETURN(row.constant_row, ConstantRow(0xffffffffu, layout.cols));
  return EmitVpu(instruction, mask, &instruction, row);
}

// select: the predicate is loaded into the result lines, VSEL overwrites them with on-true where the
// predicate is non-zero and with on-false (a tensor or an immediate) elsewhere.
Status CodeGenerator::EmitSelect(const HloInstruction& instruction) {
  const DeviceLayout layout = MakeDeviceLayout(instruction.shape(), L());
  const std::optional<uint32_t> immediate = SelectImmediate(instruction, L());
  const uint32_t buffers = immediate ? 2 : 3;
  const uint32_t chunk = options_.vmem_lines / buffers;
  if (chunk == 0) return VmemOverflow(instruction, buffers);
  TPU_ASSIGN_OR_RETURN(ScopedReg pred_hbm, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg true_hbm, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg false_hbm, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg out_hbm, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg result_vmem, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg true_vmem, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg false_vmem, NewReg());
  LoadAddress(pred_hbm, instruction.operand(0), 0);
  LoadAddress(true_hbm, instruction.operand(1), 0);
  if (!immediate) LoadAddress(false_hbm, instruction.operand(2), 0);
  LoadAddress(out_hbm, &instruction, 0);
  const uint32_t used = std::min(chunk, layout.lines);
  asm_.Li(result_vmem, 0);
  asm_.Li(true_vmem, used);
  asm_.Li(false_vmem, 2 * used);
  std::vector<std::pair<Reg, uint32_t>> pointers = {{pred_hbm, 1}, {true_hbm, 1}, {out_hbm, 1}};
  if (!immediate) pointers.push_back({false_hbm, 1});
  return ForChunks(layout.lines, chunk, pointers, [&](Reg count, uint32_t) {
    asm_.DmaLoad(pred_hbm, result_vmem, count, 1);
    asm_.DmaLoad(true_hbm, true_vmem, count, 1);
    if (!immediate) asm_.DmaLoad(false_hbm, false_vmem, count, 1);
    asm_.Sync(kSyncDma);
    if (immediate) {
      asm_.Emit(isa::Opcode::VSEL, {result_vmem, true_vmem, kZeroReg, count, isa::flag::VSEL_SRC2_IMM, *immediate});
    } else {
      asm_.Emit(isa::Opcode::VSEL, {result_vmem, true_vmem, false_vmem, count, 0, 0});
    }
    asm_.Sync(kSyncVpu);
    asm_.DmaStore(out_hbm, result_vmem, count, 1);
    return OkStatus();
  });
}

// convert between f32 and integers with VCVT (f32 -> integer truncates toward zero, saturating);
// f32 -> pred is x != 0; between integer types and pred (0/1 words) the words stay as they are.
Status CodeGenerator::EmitConvert(const HloInstruction& instruction) {
  const HloInstruction* operand = instruction.operand(0);
  const hlo::PrimitiveType from = operand->shape().element_type, to = instruction.shape().element_type;
  const bool from_f32 = from == hlo::PrimitiveType::F32, to_f32 = to == hlo::PrimitiveType::F32;
  if (from_f32 == to_f32 && (from_f32 || to != hlo::PrimitiveType::PRED)) {
    if (to != hlo::PrimitiveType::PRED || from == hlo::PrimitiveType::PRED) {
      return EmitCopy(operand, locations_.at(&instruction));
    }
  }
  if (to == hlo::PrimitiveType::PRED) {
    // x != 0 (for integers with INT); padded lanes are 0 != 0 = 0.
    VpuOp vpu;
    vpu.opcode = isa::Opcode::VCMP;
    vpu.flags = static_cast<uint8_t>(VcmpDirection(hlo::ComparisonDirection::kNe) << isa::flag::VCMP_DIR_LSB);
    if (!from_f32) vpu.flags |= isa::flag::VCMP_INT;
    Src2 zero;
    zero.kind = Src2::kImmediate;
    zero.imm = 0;
    return EmitVpu(instruction, vpu, operand, zero);
  }
  // VCVT takes one source; the unused second operand of EmitVpu's immediate form is ignored.
  VpuOp vpu;
  vpu.opcode = isa::Opcode::VCVT;
  vpu.flags = to_f32 ? 0 : isa::flag::VCVT_F32_TO_S32;
  vpu.unary = true;
  Src2 none;
  none.kind = Src2::kImmediate;
  return EmitVpu(instruction, vpu, operand, none);
}

}  // namespace tpu::compiler::codegen_internal
