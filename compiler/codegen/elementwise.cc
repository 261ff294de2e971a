// Elementwise lowerings on the VPU: binary ops, clamp, compare, select, convert, and the unary math of
// MathSequence (exp, log, rsqrt, sqrt, divide, abs, sign, tanh, logistic, floor, ceil, round, power).
#include "compiler/codegen/codegen_internal.h"

namespace tpu::compiler::codegen_internal {

Status CodeGenerator::EmitElementwise(const HloInstruction& instruction, HloOpcode op, const HloInstruction* a,
                                      Src2 b) {
  const std::optional<isa::Opcode> opcode = VpuOpcodeFor(op);
  if (!opcode) return UnsupportedOp(instruction);
  VpuOp vpu;
  vpu.opcode = *opcode;
  if (IsIntegerValue(instruction.shape()) && !IsBitwise(op)) vpu.flags = isa::flag::VADD_INT;
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
  LoadAddress(a_hbm, a, 0);
  LoadAddress(out_hbm, &instruction, 0);
  // Every form streams operand a through the sets, computes in place and stores the result.
  ChunkPipeline pipeline;
  pipeline.load_pointers = {{a_hbm, 1}};
  pipeline.store_pointers = {{out_hbm, 1}};
  pipeline.store = [&](const std::vector<Reg>& buffer, Reg count) {
    asm_.DmaStore(out_hbm, buffer[0], count, 1);
    return OkStatus();
  };

  if (b.kind == Src2::kTensor || b.kind == Src2::kImmediate) {
    // A set holds a chunk of a and (a tensor b) a chunk of b.
    const bool tensor = b.kind == Src2::kTensor;
    TPU_ASSIGN_OR_RETURN(ScopedReg b_hbm, NewReg());
    if (tensor) {
      LoadAddress(b_hbm, b.value, 0);
      pipeline.buffers = 2;
      pipeline.load_pointers.push_back({b_hbm, 1});
    }
    pipeline.load = [&](const std::vector<Reg>& buffer, Reg count) {
      asm_.DmaLoad(a_hbm, buffer[0], count, 1);
      if (tensor) asm_.DmaLoad(b_hbm, buffer[1], count, 1);
      return OkStatus();
    };
    pipeline.compute = [&](const std::vector<Reg>& buffer, Reg count) {
      if (tensor) {
        vop(buffer[0], buffer[0], buffer[1], count, 0, 0);
      } else {
        vop(buffer[0], buffer[0], kZeroReg, count, isa::flag::VADD_SRC2_IMM, b.imm);
      }
      return OkStatus();
    };
    return PipelineChunks(instruction, layout.lines, pipeline);
  }

  // Row broadcast: the row's line t is applied to line t of every row. VMEM: the row first.
  const uint32_t tiles = static_cast<uint32_t>(layout.column_tiles(L()));
  TPU_ASSIGN_OR_RETURN(ScopedReg row_vmem, NewReg());
  asm_.Li(row_vmem, 0);
  TPU_RETURN_IF_ERROR(LoadRow(instruction, b, row_vmem, tiles));  // waited for by the first SYNC of the loop
  pipeline.load = [&](const std::vector<Reg>& buffer, Reg count) {
    asm_.DmaLoad(a_hbm, buffer[0], count, 1);
    return OkStatus();
  };
  if (tiles == 1) {
    // Rows are whole lines: the row's line is the broadcast operand of every line.
    pipeline.first_set = 1;
    pipeline.compute = [&](const std::vector<Reg>& buffer, Reg count) {
      vop(buffer[0], buffer[0], row_vmem, count, isa::flag::VADD_SRC2_BCAST, 0);
      return OkStatus();
    };
    return PipelineChunks(instruction, layout.lines, pipeline);
  }
  // Several lines per row: the row repeated over a chunk of rows in VMEM (built once, a VPU pass over a
  // chunk: chunks stay near kRepeatedRowLines however large the VMEM), then chunks of whole rows as
  // tensor-tensor operations against it: contiguous DMA.
  constexpr uint32_t kRepeatedRowLines = 1024;
  pipeline.shared_buffers = 1;
  pipeline.granule = tiles;
  pipeline.max_chunk = std::max(kRepeatedRowLines / tiles, 1u) * tiles;
  pipeline.prologue = [&](uint32_t chunk) {
    asm_.Sync(kSyncDma);  // the row
    return RepeatRow(row_vmem, tiles, chunk);
  };
  pipeline.compute = [&](const std::vector<Reg>& buffer, Reg count) {
    vop(buffer[0], buffer[0], row_vmem, count, 0, 0);
    return OkStatus();
  };
  return PipelineChunks(instruction, layout.lines, pipeline);
}

// Doubling copies (x | x = x, bit for bit): [0, n) to [n, 2n) while that fits, in a code loop when there
// are more than two, then the last, partial copy. Each VOR issues once the VPU has written the lines the
// previous one produced.
Status CodeGenerator::RepeatRow(Reg first_line, uint32_t tiles, uint32_t lines) {
  TPU_ASSIGN_OR_RETURN(ScopedReg source, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg destination, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg count, NewReg());
  uint32_t doublings = 0, have = tiles;
  for (; 2 * have <= lines; have *= 2) ++doublings;
  asm_.Addi(source, first_line, 0);
  asm_.Addi(destination, first_line, tiles);
  asm_.Li(count, tiles);
  auto double_once = [&] {
    asm_.Emit(isa::Opcode::VOR, {destination, source, source, count, 0, 0});
    asm_.Add(destination, destination, count);
    asm_.Add(count, count, count);
  };
  if (doublings > 2) {
    TPU_ASSIGN_OR_RETURN(ScopedReg left, NewReg());
    asm_.Li(left, doublings);
    Assembler::Label loop = asm_.NewLabel();
    asm_.Bind(loop);
    double_once();
    asm_.Addi(left, left, static_cast<uint32_t>(-1));
    asm_.Bne(left, kZeroReg, loop);
  } else {
    for (uint32_t i = 0; i < doublings; ++i) double_once();
  }
  if (have < lines) {
    asm_.Li(count, lines - have);
    asm_.Emit(isa::Opcode::VOR, {destination, source, source, count, 0, 0});
  }
  asm_.Sync(kSyncVpu);
  return OkStatus();
}

// The controller serves reads of one HBM line one after the other, so a stride-0 DMA of n copies costs
// about n times its same-line turnaround (on v2, 2 400 cycles for 128 copies); reading the line once
// and letting the VPU broadcast it (VOR of zeros with SRC2_BCAST) costs two waits and n VPU cycles
// (about 200). With rows of at most kFewLanes lanes (tiny: 8, a 4 096-word IMEM) no copy count exceeds
// the lanes and the DMA is about as fast and five words shorter, which matters there.
Status CodeGenerator::LoadLineCopies(Reg hbm, Reg vmem, uint32_t copies) {
  constexpr uint32_t kFewLanes = 16;
  TPU_ASSIGN_OR_RETURN(ScopedReg count, NewReg());
  if (L() <= kFewLanes && copies <= kFewLanes) {
    asm_.Li(count, copies);
    asm_.DmaLoad(hbm, vmem, count, 0);
    asm_.Sync(kSyncDma);
    return OkStatus();
  }
  TPU_ASSIGN_OR_RETURN(ScopedReg rest, NewReg());
  asm_.Li(count, 1);
  asm_.DmaLoad(hbm, vmem, count, 1);
  asm_.Sync(kSyncDma);
  asm_.Addi(rest, vmem, 1);
  asm_.Li(count, copies - 1);
  asm_.Vsplat(rest, count, 0);
  asm_.Emit(isa::Opcode::VOR, {rest, rest, vmem, count, isa::flag::VOR_SRC2_BCAST, 0});
  asm_.Sync(kSyncVpu);
  return OkStatus();
}

Status CodeGenerator::LoadRow(const HloInstruction& instruction, const Src2& row, Reg row_vmem, uint32_t tiles) {
  if (row.kind == Src2::kSplat) return EmitSplatRow(instruction, *row.value, row_vmem, tiles);
  TPU_ASSIGN_OR_RETURN(ScopedReg row_hbm, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg count, NewReg());
  if (row.constant_row >= 0) {
    asm_.LoadAddress(row_hbm, RegionKind::kConstant, static_cast<uint32_t>(row.constant_row), 0);
  } else {
    LoadAddress(row_hbm, row.value, 0);
  }
  asm_.Li(count, tiles);
  asm_.DmaLoad(row_hbm, row_vmem, count, 1);
  return OkStatus();
}

// The scalar's line holds it in lane 0 and zeros after it: LANES copies of that line (LoadLineCopies)
// transposed by VTRANS make a line with the scalar in every lane, and its AND with the row of ones in the
// logical lanes of `instruction` (a constant row) gives row lines whose padded lanes stay +0.
// VMEM: the row [row_vmem, +tiles), the copies and their transpose in the 2*LANES lines after it (free
// again once this returns: everything here has finished).
Status CodeGenerator::EmitSplatRow(const HloInstruction& instruction, const HloInstruction& scalar, Reg row_vmem,
                                   uint32_t tiles) {
  const uint32_t lanes = L();
  if (options_.vmem_lines < tiles + 2 * lanes) return VmemOverflow(instruction, tiles + 2 * lanes);
  TPU_ASSIGN_OR_RETURN(const int32_t mask, ConstantRow(0xffffffffu, MakeDeviceLayout(instruction.shape(), lanes).cols));
  TPU_ASSIGN_OR_RETURN(ScopedReg hbm, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg copies, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg transposed, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg count, NewReg());
  LoadAddress(hbm, &scalar, 0);
  asm_.Addi(copies, row_vmem, tiles);
  asm_.Addi(transposed, row_vmem, tiles + lanes);
  TPU_RETURN_IF_ERROR(LoadLineCopies(hbm, copies, lanes));
  asm_.LoadAddress(hbm, RegionKind::kConstant, static_cast<uint32_t>(mask), 0);
  asm_.Li(count, tiles);
  asm_.DmaLoad(hbm, row_vmem, count, 1);
  asm_.Sync(kSyncDma);
  asm_.Li(count, 1);
  asm_.Emit(isa::Opcode::VTRANS, {transposed, copies, {}, count, 0, 0});
  asm_.Sync(kSyncVpu);
  asm_.Li(count, tiles);
  asm_.Emit(isa::Opcode::VAND, {row_vmem, row_vmem, transposed, count, isa::flag::VAND_SRC2_BCAST, 0});
  asm_.Sync(kSyncVpu);
  return OkStatus();
}

namespace {

using Step = VpuStep;
constexpr uint32_t kF32Abs = 0x7fffffffu, kF32Sign = 0x80000000u;

uint8_t CmpFlags(hlo::ComparisonDirection direction) {
  return static_cast<uint8_t>(VcmpDirection(direction) << isa::flag::VCMP_DIR_LSB);
}
Step Unary(isa::Opcode opcode, int dst, int src, uint8_t flags = 0) { return {opcode, dst, src, Step::kUnary, flags, 0}; }
Step Binary(isa::Opcode opcode, int dst, int src1, int src2, uint8_t flags = 0) {
  return {opcode, dst, src1, src2, flags, 0};
}
Step Imm(isa::Opcode opcode, int dst, int src1, uint32_t bits, uint8_t flags = 0) {
  return {opcode, dst, src1, Step::kImmediate, flags, bits};
}
Step ImmF(isa::Opcode opcode, int dst, int src1, float value) { return Imm(opcode, dst, src1, FloatBits(value)); }

// The raw bits of a scalar constant of the result's element type (f32, or s32 for integer results), or
// of its broadcast.
std::optional<uint32_t> ScalarConstantBits(const HloInstruction& value, bool integer) {
  const HloInstruction* constant = value.opcode() == HloOpcode::kBroadcast ? value.operand(0) : &value;
  if (constant->opcode() != HloOpcode::kConstant || !constant->has_literal() || constant->shape().rank() != 0) {
    return std::nullopt;
  }
  const hlo::PrimitiveType type = constant->literal().shape().element_type;
  if (!integer && type == hlo::PrimitiveType::F32) return FloatBits(constant->literal().Get<float>(0));
  if (integer && type == hlo::PrimitiveType::S32) return static_cast<uint32_t>(constant->literal().Get<int32_t>(0));
  if (integer && type == hlo::PrimitiveType::U32) return constant->literal().Get<uint32_t>(0);
  return std::nullopt;
}

// op(0, c) == 0 on s32 lanes (INT flag).
bool IntImmediateKeepsPaddingZero(HloOpcode op, uint32_t c) {
  const int32_t value = static_cast<int32_t>(c);
  switch (op) {
    case HloOpcode::kAdd:
    case HloOpcode::kSubtract: return value == 0;
    case HloOpcode::kMultiply: return true;
    case HloOpcode::kMaximum: return value <= 0;
    case HloOpcode::kMinimum: return value >= 0;
    case HloOpcode::kAnd:
    case HloOpcode::kShiftLeft:  // 0 shifted either way is 0
    case HloOpcode::kShiftRightLogical:
    case HloOpcode::kShiftRightArithmetic: return true;
    case HloOpcode::kOr:
    case HloOpcode::kXor: return value == 0;
    default: return false;
  }
}

// round-to-integer of |x| in buffer 1 (buffer 0 holds x): (|x| + 2^23) - 2^23 rounds to nearest even in
// fp32 for |x| < 2^23 (larger values are integers already and are selected from x at the end).
void RoundAbsToEven(std::vector<Step>* steps) {
  using isa::Opcode;
  steps->push_back(Imm(Opcode::VAND, 1, 0, kF32Abs));
  steps->push_back(ImmF(Opcode::VADD, 1, 1, 8388608.0f));
  steps->push_back(ImmF(Opcode::VSUB, 1, 1, 8388608.0f));
}

}  // namespace

// The VPU sequences (docs/numerics.md for the instructions, compiler/codegen/README.md for the accuracy):
//  - exp, log, rsqrt: VEXP, VLOG, VRSQRT in place; x / y = x * VRCP(y);
//  - sqrt(x) = x * VRSQRT(x), and 0 where x == 0 (the product would be 0 * inf = NaN);
//  - abs: VAND with 0x7fffffff (s32: max(x, -x)); sign: clamp(x * 2^127, -1, 1), which keeps +-0 and NaN;
//  - logistic(x) = rcp(1 + exp(-x));
//  - tanh(x) = sign(x) * (1 - e) * rcp(1 + e) with e = exp(-2|x|), and an odd Taylor polynomial to x^11
//    for |x| < 0.25, where 1 - e would cancel;
//  - floor, ceil, round: the fp32 round-to-nearest-even of |x| by adding and subtracting 2^23, adjusted
//    by one where the rounding went the wrong way, the sign of x put back; x itself where |x| >= 2^23 or NaN;
//  - power: x^0.5 is sqrt, x^-0.5 rsqrt, integer constant exponents up to 32 in magnitude multiply
//    (square and multiply; negative ones take VRCP of the product), x^y otherwise exp(y * log(x)) (NaN
//    for x < 0).
// Where f(+0) is not +0 (exp, log, rsqrt, logistic, a division, negative or zero powers) the padded lanes
// are cleared by a second pass when the minor dimension has padding.
StatusOr<VpuSequence> CodeGenerator::MathSequence(const HloInstruction& instruction,
                                                                  MathKind kind) const {
  using isa::Opcode;
  using Dir = hlo::ComparisonDirection;
  const bool integer = IsIntegerValue(instruction.shape());
  const uint8_t int_flag = integer ? isa::flag::VADD_INT : 0;
  VpuSequence s;
  std::vector<Step>& steps = s.steps;
  auto sqrt_steps = [&] {
    s.buffers = 2;
    steps = {Unary(Opcode::VRSQRT, 1, 0), Binary(Opcode::VMUL, 1, 0, 1), Imm(Opcode::VCMP, 0, 0, 0, CmpFlags(Dir::kNe)),
             Imm(Opcode::VSEL, 0, 1, 0)};
  };
  switch (kind) {
    case MathKind::kExp:
      steps = {Unary(Opcode::VEXP, 0, 0)};
      s.mask_padding = true;
      break;
    case MathKind::kLog:
      steps = {Unary(Opcode::VLOG, 0, 0)};
      s.mask_padding = true;
      break;
    case MathKind::kRsqrt:
      steps = {Unary(Opcode::VRSQRT, 0, 0)};
      s.mask_padding = true;
      break;
    case MathKind::kDivide:
      s.buffers = 2;
      s.second_operand = true;
      steps = {Unary(Opcode::VRCP, 1, 1), Binary(Opcode::VMUL, 0, 0, 1)};
      s.mask_padding = true;
      break;
    case MathKind::kSqrt:
      sqrt_steps();
      break;
    case MathKind::kAbs:
      if (integer) {
        s.buffers = 2;
        steps = {Imm(Opcode::VMUL, 1, 0, 0xffffffffu, int_flag), Binary(Opcode::VMAX, 0, 0, 1, int_flag)};
      } else {
        steps = {Imm(Opcode::VAND, 0, 0, kF32Abs)};
      }
      break;
    case MathKind::kSign:
      if (integer) {
        steps = {Imm(Opcode::VMIN, 0, 0, 1u, int_flag), Imm(Opcode::VMAX, 0, 0, 0xffffffffu, int_flag)};
      } else {
        // Every normal |x| times 2^127 is at least 2 (or inf): the clamp leaves +-1, +-0 or NaN.
        steps = {Imm(Opcode::VMUL, 0, 0, 0x7f000000u), ImmF(Opcode::VMAX, 0, 0, -1.0f), ImmF(Opcode::VMIN, 0, 0, 1.0f)};
      }
      break;
    case MathKind::kLogistic:
      steps = {ImmF(Opcode::VMUL, 0, 0, -1.0f), Unary(Opcode::VEXP, 0, 0), ImmF(Opcode::VADD, 0, 0, 1.0f),
               Unary(Opcode::VRCP, 0, 0)};
      s.mask_padding = true;
      break;
    case MathKind::kExpm1:
    case MathKind::kLog1p: {
      // Near 0 the direct forms lose the digits that cancel (e^x - 1, log of 1 + x): there, a Taylor
      // polynomial in Horner form, x (c1 + x (c2 + ... + x cn)); elsewhere VEXP(x) - 1 or VLOG(x + 1).
      // Buffers: 0 x, 1 the direct form, 2 the polynomial, 3 |x| then the choice. Both keep +-0 and the
      // padding (+0) as they are; inf, -inf and NaN take the direct form.
      s.buffers = 4;
      s.result = 3;
      const bool expm1 = kind == MathKind::kExpm1;
      if (expm1) {
        steps = {Unary(Opcode::VEXP, 1, 0), ImmF(Opcode::VADD, 1, 1, -1.0f)};
      } else {
        steps = {ImmF(Opcode::VADD, 1, 0, 1.0f), Unary(Opcode::VLOG, 1, 1)};
      }
      // expm1: 1/k! up to x^7 for |x| < 1/4; log1p: (-1)^(k+1)/k up to x^9 for |x| < 1/8 (the first
      // term left out is below 2^-24 of the result there).
      std::vector<float> c;
      float factorial = 1.0f;
      for (int k = 1; k <= (expm1 ? 7 : 9); ++k) {
        factorial *= static_cast<float>(k);
        c.push_back(expm1 ? 1.0f / factorial : (k % 2 ? 1.0f : -1.0f) / static_cast<float>(k));
      }
      steps.push_back(ImmF(Opcode::VMUL, 2, 0, c.back()));
      for (size_t k = c.size() - 1; k-- > 0;) {
        steps.push_back(ImmF(Opcode::VADD, 2, 2, c[k]));
        steps.push_back(Binary(Opcode::VMUL, 2, 2, 0));
      }
      steps.push_back(Imm(Opcode::VAND, 3, 0, kF32Abs));
      steps.push_back(ImmF(Opcode::VCMP, 3, 3, expm1 ? 0.25f : 0.125f));
      steps.back().flags = CmpFlags(Dir::kLt);
      steps.push_back(Binary(Opcode::VSEL, 3, 2, 1));
      break;
    }
    case MathKind::kTanh: {
      // Buffers: 0 x, 1 the exp form, 2 z = x^2 then the choice, 3 the polynomial.
      s.buffers = 4;
      s.result = 2;
      steps = {Imm(Opcode::VAND, 1, 0, kF32Abs),     ImmF(Opcode::VMUL, 1, 1, -2.0f),
               Unary(Opcode::VEXP, 1, 1),            ImmF(Opcode::VADD, 2, 1, 1.0f),
               Unary(Opcode::VRCP, 2, 2),            ImmF(Opcode::VMUL, 1, 1, -1.0f),
               ImmF(Opcode::VADD, 1, 1, 1.0f),       Binary(Opcode::VMUL, 1, 1, 2),
               Imm(Opcode::VAND, 2, 0, kF32Sign),    Binary(Opcode::VOR, 1, 1, 2),
               Binary(Opcode::VMUL, 2, 0, 0)};
      // tanh(x) = x + x z (c3 + z (c5 + z (c7 + z (c9 + z c11)))), the Taylor coefficients.
      const float c11 = -1382.0f / 155925.0f, c9 = 62.0f / 2835.0f, c7 = -17.0f / 315.0f, c5 = 2.0f / 15.0f,
                  c3 = -1.0f / 3.0f;
      steps.push_back(ImmF(Opcode::VMUL, 3, 2, c11));
      for (float c : {c9, c7, c5, c3}) {
        steps.push_back(ImmF(Opcode::VADD, 3, 3, c));
        steps.push_back(Binary(Opcode::VMUL, 3, 3, 2));
      }
      steps.push_back(Binary(Opcode::VMUL, 3, 3, 0));
      steps.push_back(Binary(Opcode::VADD, 3, 3, 0));
      steps.push_back(ImmF(Opcode::VCMP, 2, 2, 0.0625f));
      steps.back().flags = CmpFlags(Dir::kLt);  // z < 1/16: |x| < 0.25
      steps.push_back(Binary(Opcode::VSEL, 2, 3, 1));
      break;
    }
    case MathKind::kFloor:
    case MathKind::kCeil:
    case MathKind::kRoundEven:
    case MathKind::kRoundAfz: {
      // Buffers: 0 x, 1 the rounded value, 2 scratch and the choice.
      s.buffers = 3;
      s.result = 2;
      RoundAbsToEven(&steps);
      if (kind == MathKind::kRoundAfz) {
        // A tie |x| - r = 0.5 was rounded down to even: move it away from zero.
        steps.push_back(Imm(Opcode::VAND, 2, 0, kF32Abs));
        steps.push_back(Binary(Opcode::VSUB, 2, 2, 1));
        steps.push_back(ImmF(Opcode::VCMP, 2, 2, 0.5f));
        steps.back().flags = CmpFlags(Dir::kGe);
        steps.push_back(Unary(Opcode::VCVT, 2, 2));
        steps.push_back(Binary(Opcode::VADD, 1, 1, 2));
      } else if (kind != MathKind::kRoundEven) {
        // r with the sign of x, minus one where r > x (floor) or plus one where r < x (ceil).
        const bool floor = kind == MathKind::kFloor;
        steps.push_back(Imm(Opcode::VAND, 2, 0, kF32Sign));
        steps.push_back(Binary(Opcode::VOR, 1, 1, 2));
        steps.push_back(Binary(Opcode::VCMP, 2, 1, 0, CmpFlags(floor ? Dir::kGt : Dir::kLt)));
        steps.push_back(Unary(Opcode::VCVT, 2, 2));
        steps.push_back(Binary(floor ? Opcode::VSUB : Opcode::VADD, 1, 1, 2));
      }
      // The sign of x (floor(-0.5) is -0 after the adjustment gave +0), then x where |x| >= 2^23 or NaN.
      steps.push_back(Imm(Opcode::VAND, 2, 0, kF32Sign));
      steps.push_back(Binary(Opcode::VOR, 1, 1, 2));
      steps.push_back(Imm(Opcode::VAND, 2, 0, kF32Abs));
      steps.push_back(ImmF(Opcode::VCMP, 2, 2, 8388608.0f));
      steps.back().flags = CmpFlags(Dir::kLt);
      steps.push_back(Binary(Opcode::VSEL, 2, 1, 0));
      break;
    }
    case MathKind::kPower: {
      const std::optional<float> exponent = ScalarConstantValue(*instruction.operand(1));
      if (exponent && *exponent == 0.5f) {
        sqrt_steps();
      } else if (exponent && *exponent == -0.5f) {
        steps = {Unary(Opcode::VRSQRT, 0, 0)};
        s.mask_padding = true;
      } else if (exponent && *exponent == std::nearbyint(*exponent) && std::fabs(*exponent) <= 32.0f) {
        // Square and multiply: buffer 0 holds x^(2^i), buffer 1 the product of the powers taken so far.
        s.buffers = 2;
        s.result = 1;
        uint32_t n = static_cast<uint32_t>(std::fabs(*exponent));
        if (n == 0) {
          steps = {Imm(Opcode::VAND, 1, 0, 0), ImmF(Opcode::VADD, 1, 1, 1.0f)};  // x^0 = 1, NaN too
        }
        bool first = true;
        while (n != 0) {
          if (n & 1u) {
            steps.push_back(first ? Imm(Opcode::VOR, 1, 0, 0) : Binary(Opcode::VMUL, 1, 1, 0));
            first = false;
          }
          n >>= 1;
          if (n != 0) steps.push_back(Binary(Opcode::VMUL, 0, 0, 0));
        }
        if (*exponent < 0) steps.push_back(Unary(Opcode::VRCP, 1, 1));
        s.mask_padding = *exponent <= 0;
      } else {
        // exp(y * log(x)), y a constant immediate or a tensor in buffer 1.
        steps = {Unary(Opcode::VLOG, 0, 0)};
        if (exponent) {
          steps.push_back(ImmF(Opcode::VMUL, 0, 0, *exponent));
        } else {
          s.buffers = 2;
          s.second_operand = true;
          steps.push_back(Binary(Opcode::VMUL, 0, 0, 1));
        }
        steps.push_back(Unary(Opcode::VEXP, 0, 0));
        s.mask_padding = true;
      }
      break;
    }
  }
  return s;
}

Status CodeGenerator::EmitMath(const HloInstruction& instruction, MathKind kind) {
  TPU_ASSIGN_OR_RETURN(VpuSequence sequence, MathSequence(instruction, kind));
  TPU_RETURN_IF_ERROR(EmitVpuSequence(instruction, sequence));
  const DeviceLayout layout = MakeDeviceLayout(instruction.shape(), L());
  if (layout.cols % L() == 0 || !sequence.mask_padding) return OkStatus();
  asm_.Sync(kSyncAll);
  return ClearPaddedLanes(instruction);
}

// VAND of the stored result with a row that is all ones in the logical lanes and zero in the padding.
Status CodeGenerator::ClearPaddedLanes(const HloInstruction& instruction) {
  VpuOp mask;
  mask.opcode = isa::Opcode::VAND;
  Src2 row;
  row.kind = Src2::kRow;
  TPU_ASSIGN_OR_RETURN(row.constant_row, ConstantRow(0xffffffffu, MakeDeviceLayout(instruction.shape(), L()).cols));
  return EmitVpu(instruction, mask, &instruction, row);
}

Status CodeGenerator::EmitVpuSequence(const HloInstruction& instruction, const VpuSequence& sequence) {
  const DeviceLayout layout = MakeDeviceLayout(instruction.shape(), L());
  TPU_ASSIGN_OR_RETURN(ScopedReg x_hbm, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg y_hbm, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg out_hbm, NewReg());
  LoadAddress(x_hbm, instruction.operand(0), 0);
  if (sequence.second_operand) LoadAddress(y_hbm, instruction.operand(1), 0);
  LoadAddress(out_hbm, &instruction, 0);
  // A set holds the sequence's buffers; buffer 0 (and 1) are loaded with the operands.
  ChunkPipeline pipeline;
  pipeline.buffers = sequence.buffers;
  pipeline.load_pointers = {{x_hbm, 1}};
  if (sequence.second_operand) pipeline.load_pointers.push_back({y_hbm, 1});
  pipeline.store_pointers = {{out_hbm, 1}};
  pipeline.load = [&](const std::vector<Reg>& buffer, Reg count) {
    asm_.DmaLoad(x_hbm, buffer[0], count, 1);
    if (sequence.second_operand) asm_.DmaLoad(y_hbm, buffer[1], count, 1);
    return OkStatus();
  };
  pipeline.compute = [&](const std::vector<Reg>& buffer, Reg count) {
    for (const VpuStep& step : sequence.steps) {
      uint8_t flags = step.flags;
      Reg src2 = kZeroReg;
      if (step.src2 == VpuStep::kImmediate) {
        flags |= isa::flag::VADD_SRC2_IMM;  // the same bit on every binary vector instruction
      } else if (step.src2 != VpuStep::kUnary) {
        src2 = buffer[step.src2];
      }
      asm_.Emit(step.opcode, {buffer[step.dst], buffer[step.src1], src2, count, flags, step.imm});
    }
    return OkStatus();
  };
  pipeline.store = [&](const std::vector<Reg>& buffer, Reg count) {
    asm_.DmaStore(out_hbm, buffer[sequence.result], count, 1);
    return OkStatus();
  };
  return PipelineChunks(instruction, layout.lines, pipeline);
}

StatusOr<Src2> CodeGenerator::ImmediateOrRow(const HloInstruction& instruction, uint32_t bits, bool keeps_zero) {
  const DeviceLayout layout = MakeDeviceLayout(instruction.shape(), L());
  Src2 b;
  if (layout.cols % L() == 0 || keeps_zero) {
    b.kind = Src2::kImmediate;
    b.imm = bits;
  } else {
    b.kind = Src2::kRow;
    TPU_ASSIGN_OR_RETURN(b.constant_row, ConstantRow(bits, layout.cols));
  }
  return b;
}

StatusOr<Src2> CodeGenerator::SecondOperand(const HloInstruction& instruction, HloOpcode op,
                                            const HloInstruction& value) {
  const bool integer = IsIntegerValue(instruction.shape());
  Src2 b;
  if (const std::optional<uint32_t> bits = ScalarConstantBits(value, integer)) {
    return ImmediateOrRow(instruction, *bits,
                          integer ? IntImmediateKeepsPaddingZero(op, *bits) : ImmediateKeepsPaddingZero(op, *bits));
  }
  if (FoldableBroadcast(instruction, value)) {
    b.kind = value.operand(0)->shape().rank() == 0 ? Src2::kSplat : Src2::kRow;
    b.value = value.operand(0);
    return b;
  }
  if (value.shape().dimensions != instruction.shape().dimensions) {
    return Unimplemented(instruction.name() + ": operand " + value.name() + " of shape " + value.shape().ToString() +
                         " is neither a scalar constant, a row broadcast nor of the result's shape " +
                         instruction.shape().ToString());
  }
  b.kind = Src2::kTensor;
  b.value = &value;
  return b;
}

// clamp(lo, x, hi) = min(max(x, lo), hi): max into the result, then min in place. Both keep NaN and
// the padding (SecondOperand only takes immediates that keep it).
Status CodeGenerator::EmitClamp(const HloInstruction& instruction) {
  TPU_ASSIGN_OR_RETURN(Src2 lo, SecondOperand(instruction, HloOpcode::kMaximum, *instruction.operand(0)));
  TPU_ASSIGN_OR_RETURN(Src2 hi, SecondOperand(instruction, HloOpcode::kMinimum, *instruction.operand(2)));
  TPU_RETURN_IF_ERROR(EmitElementwise(instruction, HloOpcode::kMaximum, instruction.operand(1), lo));
  asm_.Sync(kSyncAll);
  return EmitElementwise(instruction, HloOpcode::kMinimum, &instruction, hi);
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
      b.kind = source.shape().rank() == 0 ? Src2::kSplat : Src2::kRow;
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
  return ClearPaddedLanes(instruction);
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
namespace {

// The narrow integer types, kept sign- or zero-extended in a 32-bit word: their width, whether signed.
struct NarrowInteger {
  int bits;
  bool is_signed;
  int64_t min() const { return is_signed ? -(int64_t{1} << (bits - 1)) : 0; }
  int64_t max() const { return is_signed ? (int64_t{1} << (bits - 1)) - 1 : (int64_t{1} << bits) - 1; }
};

std::optional<NarrowInteger> Narrow(hlo::PrimitiveType type) {
  switch (type) {
    case hlo::PrimitiveType::S8: return NarrowInteger{8, true};
    case hlo::PrimitiveType::U8: return NarrowInteger{8, false};
    case hlo::PrimitiveType::S16: return NarrowInteger{16, true};
    case hlo::PrimitiveType::U16: return NarrowInteger{16, false};
    default: return std::nullopt;
  }
}

// Whether every value of integer type `from` is a value of `to` (the word needs no wrapping).
bool IntegerRangeFits(hlo::PrimitiveType from, const NarrowInteger& to) {
  if (from == hlo::PrimitiveType::PRED) return true;
  const std::optional<NarrowInteger> narrow = Narrow(from);
  return narrow.has_value() && narrow->min() >= to.min() && narrow->max() <= to.max();
}

}  // namespace

Status CodeGenerator::EmitConvert(const HloInstruction& instruction) {
  const HloInstruction* operand = instruction.operand(0);
  const hlo::PrimitiveType from = operand->shape().element_type, to = instruction.shape().element_type;
  const bool from_f32 = from == hlo::PrimitiveType::F32, to_f32 = to == hlo::PrimitiveType::F32;
  Src2 none;
  none.kind = Src2::kImmediate;
  if (const std::optional<NarrowInteger> narrow = Narrow(to); narrow.has_value()) {
    // An integer of a wider range wraps to the narrow width (two's complement: shift the low bits up and
    // back, sign-extending; or mask them); an f32 converts to s32 and saturates to the narrow range, as
    // the interpreter's convert does. Zeros (the padded lanes) stay zeros.
    if (!from_f32 && IntegerRangeFits(from, *narrow)) return EmitCopy(operand, locations_.at(&instruction));
    auto immediate = [](int64_t value) {
      Src2 imm;
      imm.kind = Src2::kImmediate;
      imm.imm = static_cast<uint32_t>(value);
      return imm;
    };
    VpuOp vpu;
    if (from_f32) {
      vpu.opcode = isa::Opcode::VCVT;
      vpu.flags = isa::flag::VCVT_F32_TO_S32;
      vpu.unary = true;
      TPU_RETURN_IF_ERROR(EmitVpu(instruction, vpu, operand, none));
      TPU_RETURN_IF_ERROR(EmitVpu(instruction, VpuOp{isa::Opcode::VMAX, isa::flag::VMAX_INT}, &instruction,
                                  immediate(narrow->min())));
      return EmitVpu(instruction, VpuOp{isa::Opcode::VMIN, isa::flag::VMIN_INT}, &instruction, immediate(narrow->max()));
    }
    if (!narrow->is_signed) {
      return EmitVpu(instruction, VpuOp{isa::Opcode::VAND}, operand, immediate((int64_t{1} << narrow->bits) - 1));
    }
    TPU_RETURN_IF_ERROR(EmitVpu(instruction, VpuOp{isa::Opcode::VSHL}, operand, immediate(32 - narrow->bits)));
    return EmitVpu(instruction, VpuOp{isa::Opcode::VSHRA}, &instruction, immediate(32 - narrow->bits));
  }
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
  return EmitVpu(instruction, vpu, operand, none);
}

Status CodeGenerator::EmitBinary(const HloInstruction& instruction) {
  const HloInstruction* a = instruction.operand(0);
  const HloInstruction* bcast = instruction.operand(1);
  if (IsCommutative(instruction.opcode()) && !FoldableBroadcast(instruction, *bcast) &&
      FoldableBroadcast(instruction, *a)) {
    std::swap(a, bcast);
  }
  TPU_ASSIGN_OR_RETURN(Src2 b, SecondOperand(instruction, instruction.opcode(), *bcast));
  return EmitElementwise(instruction, instruction.opcode(), a, b);
}

// -x = (x * -1) + 0: the add turns the -0 of the padded lanes back into +0 (EmitElementwise).
Status CodeGenerator::EmitNegate(const HloInstruction& instruction) {
  Src2 b;
  b.kind = Src2::kImmediate;
  b.imm = IsIntegerValue(instruction.shape()) ? 0xffffffffu : FloatBits(-1.0f);
  return EmitElementwise(instruction, HloOpcode::kMultiply, instruction.operand(0), b);
}

// not x = x xor all ones (1 for pred); a row of them where the padded lanes must stay 0.
Status CodeGenerator::EmitNot(const HloInstruction& instruction) {
  const bool pred = instruction.shape().element_type == hlo::PrimitiveType::PRED;
  TPU_ASSIGN_OR_RETURN(Src2 b, ImmediateOrRow(instruction, pred ? 1u : 0xffffffffu, false));
  return EmitElementwise(instruction, HloOpcode::kXor, instruction.operand(0), b);
}

// x / c = x * (1/c) for a constant c: at most one rounding more than the division (docs/numerics.md
// tolerance); by a computed value, x * rcp(y) (EmitMath).
Status CodeGenerator::EmitDivide(const HloInstruction& instruction) {
  if (!ScalarConstantValue(*instruction.operand(1))) return EmitMath(instruction, MathKind::kDivide);
  const uint32_t bits = FloatBits(1.0f / *ScalarConstantValue(*instruction.operand(1)));
  TPU_ASSIGN_OR_RETURN(Src2 b, ImmediateOrRow(instruction, bits, ImmediateKeepsPaddingZero(HloOpcode::kMultiply, bits)));
  return EmitElementwise(instruction, HloOpcode::kMultiply, instruction.operand(0), b);
}

// ReLU fusion: maximum with a zero immediate.
Status CodeGenerator::EmitReluFusion(const HloInstruction& instruction) {
  const HloInstruction* root = instruction.called_computations()[0]->root_instruction();
  const HloInstruction* zero = root->operand(0)->opcode() == HloOpcode::kBroadcast ? root->operand(0)
                                                                                  : root->operand(1);
  Src2 b;
  b.kind = Src2::kImmediate;
  b.imm = FloatBits(zero->operand(0)->literal().Get<float>(0));
  return EmitElementwise(instruction, HloOpcode::kMaximum, instruction.operand(0), b);
}

namespace {

// A foldable broadcast operand reaches the VPU as a row or an immediate (SecondOperand, EmitCompare) unless
// both operands are foldable: then operand 0 is materialized. Operand 0 of a subtraction or compare is
// always materialized (the VPU takes the folded operand second).
bool ReadsVpuOperand(const HloInstruction& instruction, const HloInstruction& operand, uint32_t) {
  if (!FoldableBroadcast(instruction, operand)) return true;
  if (instruction.opcode() == HloOpcode::kCompare || !IsCommutative(instruction.opcode())) {
    return instruction.operand(0) == &operand;
  }
  const bool other_foldable =
      FoldableBroadcast(instruction, *instruction.operand(instruction.operand(0) == &operand ? 1 : 0));
  return other_foldable && instruction.operand(0) == &operand;
}

// EmitVpu and EmitElementwise store chunk i of the result after loading chunk i of every operand.
bool ChunkByChunk(const HloInstruction&) { return true; }

}  // namespace

// abs and sign also on s32/s64 (signed compares on INT lanes).
const std::vector<CodeGenerator::MathOp>& CodeGenerator::MathOps() {
  static const std::vector<MathOp> ops = {
      {HloOpcode::kExp, MathKind::kExp, ElementTypes::kF32},
      {HloOpcode::kLog, MathKind::kLog, ElementTypes::kF32},
      {HloOpcode::kRsqrt, MathKind::kRsqrt, ElementTypes::kF32},
      {HloOpcode::kSqrt, MathKind::kSqrt, ElementTypes::kF32},
      {HloOpcode::kAbs, MathKind::kAbs, ElementTypes::kF32OrSignedInteger},
      {HloOpcode::kSign, MathKind::kSign, ElementTypes::kF32OrSignedInteger},
      {HloOpcode::kTanh, MathKind::kTanh, ElementTypes::kF32},
      {HloOpcode::kLogistic, MathKind::kLogistic, ElementTypes::kF32},
      {HloOpcode::kExpm1, MathKind::kExpm1, ElementTypes::kF32},
      {HloOpcode::kLog1p, MathKind::kLog1p, ElementTypes::kF32},
      {HloOpcode::kFloor, MathKind::kFloor, ElementTypes::kF32},
      {HloOpcode::kCeil, MathKind::kCeil, ElementTypes::kF32},
      {HloOpcode::kRoundNearestEven, MathKind::kRoundEven, ElementTypes::kF32},
      {HloOpcode::kRoundNearestAfz, MathKind::kRoundAfz, ElementTypes::kF32},
      {HloOpcode::kPower, MathKind::kPower, ElementTypes::kF32},
  };
  return ops;
}

std::optional<CodeGenerator::MathKind> CodeGenerator::MathKindOf(HloOpcode opcode) {
  for (const MathOp& math : MathOps()) {
    if (math.opcode == opcode) return math.kind;
  }
  return std::nullopt;
}

void CodeGenerator::AddElementwiseHandlers(OpcodeHandlerTable& table) {
  for (HloOpcode opcode : {HloOpcode::kAdd, HloOpcode::kSubtract, HloOpcode::kMultiply, HloOpcode::kMaximum,
                           HloOpcode::kMinimum}) {
    OpcodeHandler binary(opcode);
    // The VPU orders integers as s32: maximum and minimum of u32 values would be wrong above 2^31.
    const bool ordered = opcode == HloOpcode::kMaximum || opcode == HloOpcode::kMinimum;
    binary.types = ordered ? ElementTypes::kF32OrSignedInteger : ElementTypes::kF32OrInteger;
    binary.reads_operand = ReadsVpuOperand;
    binary.in_place = ChunkByChunk;
    binary.emit = [](CodeGenerator& g, const HloInstruction& instruction) { return g.EmitBinary(instruction); };
    table.Add(std::move(binary));
  }

  for (HloOpcode opcode : {HloOpcode::kAnd, HloOpcode::kOr, HloOpcode::kXor, HloOpcode::kShiftLeft,
                           HloOpcode::kShiftRightLogical, HloOpcode::kShiftRightArithmetic}) {
    OpcodeHandler bitwise(opcode);
    bitwise.types = IsShift(opcode) ? ElementTypes::kInteger32 : ElementTypes::kBits;
    bitwise.reads_operand = ReadsVpuOperand;
    bitwise.in_place = ChunkByChunk;
    bitwise.emit = [](CodeGenerator& g, const HloInstruction& instruction) { return g.EmitBinary(instruction); };
    table.Add(std::move(bitwise));
  }
  OpcodeHandler bitwise_not(HloOpcode::kNot);
  bitwise_not.types = ElementTypes::kBits;
  bitwise_not.in_place = ChunkByChunk;
  bitwise_not.emit = [](CodeGenerator& g, const HloInstruction& instruction) { return g.EmitNot(instruction); };
  table.Add(std::move(bitwise_not));

  OpcodeHandler negate(HloOpcode::kNegate);
  negate.types = ElementTypes::kF32OrInteger;
  negate.in_place = ChunkByChunk;
  negate.emit = [](CodeGenerator& g, const HloInstruction& instruction) { return g.EmitNegate(instruction); };
  table.Add(std::move(negate));

  // A constant divisor is the immediate (or constant row) of a multiplication.
  OpcodeHandler divide(HloOpcode::kDivide);
  divide.reads_operand = [](const HloInstruction& instruction, const HloInstruction& operand, uint32_t) {
    return !(instruction.operand(1) == &operand && instruction.operand(0) != &operand && ScalarConstantValue(operand));
  };
  divide.in_place = [](const HloInstruction& instruction) {
    return ScalarConstantValue(*instruction.operand(1)).has_value();  // a multiplication (EmitElementwise)
  };
  divide.emit = [](CodeGenerator& g, const HloInstruction& instruction) { return g.EmitDivide(instruction); };
  table.Add(std::move(divide));

  OpcodeHandler compare(HloOpcode::kCompare);
  compare.check = [](const HloInstruction& instruction) -> Status {
    const hlo::ComparisonDirection direction = instruction.comparison_direction();
    if (instruction.operand(0)->shape().element_type == hlo::PrimitiveType::U32 &&
        direction != hlo::ComparisonDirection::kEq && direction != hlo::ComparisonDirection::kNe) {
      return Unimplemented("compare " + instruction.name() + ": the VPU orders integers as s32; direction=" +
                           hlo::ComparisonDirectionString(direction) + " of u32 values is not lowered (EQ and NE are)");
    }
    return OkStatus();
  };
  compare.types = ElementTypes::kCompare;
  compare.reads_operand = ReadsVpuOperand;
  compare.emit = [](CodeGenerator& g, const HloInstruction& instruction) { return g.EmitCompare(instruction); };
  table.Add(std::move(compare));

  // The on-false value may be VSEL's immediate.
  OpcodeHandler select(HloOpcode::kSelect);
  select.types = ElementTypes::kDeviceWord;
  select.reads_operand = [](const HloInstruction& instruction, const HloInstruction& operand, uint32_t lanes) {
    return !(instruction.operand(2) == &operand && instruction.operand(1) != &operand &&
             instruction.operand(0) != &operand && SelectImmediate(instruction, lanes).has_value());
  };
  select.emit = [](CodeGenerator& g, const HloInstruction& instruction) { return g.EmitSelect(instruction); };
  table.Add(std::move(select));

  OpcodeHandler convert(HloOpcode::kConvert);
  convert.types = ElementTypes::kDeviceWord;
  // A bf16 or an f16 is held in the f32 word of its value: to f32 (or its own type) it is the same buffer.
  convert.same_buffer_as = [](const HloInstruction& instruction, uint32_t) -> const HloInstruction* {
    const hlo::PrimitiveType from = instruction.operand(0)->shape().element_type, to = instruction.shape().element_type;
    const bool exact = (from == hlo::PrimitiveType::BF16 || from == hlo::PrimitiveType::F16) &&
                       (to == hlo::PrimitiveType::F32 || to == from);
    return exact ? instruction.operand(0) : nullptr;
  };
  // Converts of f16 other than to f32 go through f32 (f16-normalization) and f32 -> f16 is the arithmetic of
  // f16-rounding-expansion, both in codegen preparation; what is left is not lowered.
  convert.check = [](const HloInstruction& instruction) -> Status {
    const hlo::PrimitiveType from = instruction.operand(0)->shape().element_type, to = instruction.shape().element_type;
    if ((from == hlo::PrimitiveType::F16) == (to == hlo::PrimitiveType::F16) || to == hlo::PrimitiveType::F32) {
      return OkStatus();
    }
    return Unimplemented("convert " + instruction.name() + " from " + hlo::PrimitiveTypeName(from) + " to " +
                         hlo::PrimitiveTypeName(to) +
                         ": f16 converts run as f32 arithmetic written by codegen preparation (f16-normalization, "
                         "f16-rounding-expansion); this one was not rewritten");
  };
  convert.emit = [](CodeGenerator& g, const HloInstruction& instruction) {
    if (instruction.shape().element_type == hlo::PrimitiveType::BF16 ||
        instruction.operand(0)->shape().element_type == hlo::PrimitiveType::BF16) {
      return g.EmitBf16Convert(instruction);  // bf16.cc
    }
    return g.EmitConvert(instruction);
  };
  table.Add(std::move(convert));

  OpcodeHandler clamp(HloOpcode::kClamp);
  clamp.types = ElementTypes::kF32OrSignedInteger;
  clamp.emit = [](CodeGenerator& g, const HloInstruction& instruction) { return g.EmitClamp(instruction); };
  table.Add(std::move(clamp));

  // The fixed VPU sequences of MathSequence.
  for (const MathOp& math : MathOps()) {
    OpcodeHandler handler(math.opcode);
    handler.types = math.types;
    handler.emit = [kind = math.kind](CodeGenerator& g, const HloInstruction& instruction) {
      return g.EmitMath(instruction, kind);
    };
    table.Add(std::move(handler));
  }

  // reduce-precision to bf16 only, through the MXU.
  OpcodeHandler reduce_precision(HloOpcode::kReducePrecision);
  reduce_precision.check = [](const HloInstruction& instruction) -> Status {
    if (!IsBf16Rounding(instruction)) return UnsupportedOp(instruction);
    return OkStatus();
  };
  reduce_precision.emit = [](CodeGenerator& g, const HloInstruction& instruction) {
    return g.EmitRoundToBf16(instruction);
  };
  table.Add(std::move(reduce_precision));

  // The ReLU fusion of compiler/passes/relu_fusion.h is a maximum with zero; loop fusions of what
  // IsLoopFusible takes run as one VPU loop (loop_fusion.cc). Both compute chunk by chunk.
  OpcodeHandler fusion(HloOpcode::kFusion);
  fusion.check = [](const HloInstruction& instruction) -> Status {
    if (!IsReluFusion(instruction) && !IsLoweredLoopFusion(instruction)) {
      return Unimplemented("fusion " + instruction.name() + " is not a fusion this code generator can lower");
    }
    return OkStatus();
  };
  fusion.in_place = ChunkByChunk;
  fusion.emit = [](CodeGenerator& g, const HloInstruction& instruction) {
    return IsReluFusion(instruction) ? g.EmitReluFusion(instruction) : g.EmitLoopFusion(instruction);
  };
  table.Add(std::move(fusion));
}

}  // namespace tpu::compiler::codegen_internal
