#include "compiler/codegen/codegen.h"

#include "compiler/codegen/codegen_internal.h"

namespace tpu::compiler {
namespace codegen_internal {

const HloInstruction* CodeGenerator::BufferOf(const HloInstruction* instruction) const {
  while (true) {
    switch (instruction->opcode()) {
      case HloOpcode::kCopy:
      case HloOpcode::kReshape:
      case HloOpcode::kBitcast:
        instruction = instruction->operand(0);
        continue;
      case HloOpcode::kCustomCall:
        if (hlo::IsIdentityCustomCallTarget(instruction->custom_call_target())) {
          instruction = instruction->operand(0);
          continue;
        }
        return instruction;
      case HloOpcode::kGetTupleElement: {
        const HloInstruction* tuple = instruction->operand(0);
        if (tuple->opcode() != HloOpcode::kTuple) return instruction;
        instruction = tuple->operand(instruction->tuple_index());
        continue;
      }
      default:
        return instruction;
    }
  }
}

void CodeGenerator::FlattenOutputs(const HloInstruction* value, std::vector<const HloInstruction*>* outputs) const {
  if (value->opcode() == HloOpcode::kTuple) {
    for (const HloInstruction* element : value->operands()) FlattenOutputs(element, outputs);
    return;
  }
  if (value->opcode() == HloOpcode::kGetTupleElement && value->operand(0)->opcode() == HloOpcode::kTuple) {
    FlattenOutputs(value->operand(0)->operand(value->tuple_index()), outputs);
    return;
  }
  outputs->push_back(value);
}

bool CodeGenerator::FoldableBroadcast(const HloInstruction& op, const HloInstruction& operand) const {
  if (operand.opcode() != HloOpcode::kBroadcast) return false;
  const HloInstruction& source = *operand.operand(0);
  if (IsScalarF32Constant(source)) return true;
  // A row [N] broadcast along the minor dimension of the output.
  const int rank = op.shape().rank();
  return source.shape().rank() == 1 && rank >= 1 && operand.dimensions().size() == 1 &&
         operand.dimensions(0) == rank - 1 && source.shape().dimensions[0] == op.shape().dimensions.back();
}

bool CodeGenerator::ReadsFromMemory(const HloInstruction& user, const HloInstruction& value) const {
  if ((IsVpuBinary(user.opcode()) || user.opcode() == HloOpcode::kCompare) &&
      value.opcode() == HloOpcode::kBroadcast && FoldableBroadcast(user, value)) {
    // Folded unless both operands are foldable broadcasts: then operand 0 is materialized. Operand 0 of
    // a subtraction or compare is always materialized (the VPU takes the folded operand second).
    if (user.opcode() == HloOpcode::kCompare || !IsCommutative(user.opcode())) return user.operand(0) == &value;
    bool other_foldable = FoldableBroadcast(user, *user.operand(user.operand(0) == &value ? 1 : 0));
    return other_foldable && user.operand(0) == &value;
  }
  if (user.opcode() == HloOpcode::kBroadcast && IsScalarF32Constant(value)) return false;
  // The on-false value of a select may be an immediate.
  if (user.opcode() == HloOpcode::kSelect && user.operand(2) == &value && user.operand(1) != &value &&
      user.operand(0) != &value && SelectImmediate(user, L()).has_value()) {
    return false;
  }
  // A divisor that is a constant becomes the immediate of a multiplication.
  if (user.opcode() == HloOpcode::kDivide && user.operand(1) == &value && user.operand(0) != &value &&
      ScalarConstantValue(value)) {
    return false;
  }
  // The init value of a reduce is an immediate.
  if (user.opcode() == HloOpcode::kReduce && user.operand_count() == 2 && user.operand(1) == &value &&
      user.operand(0) != &value && IsScalarF32Constant(value)) {
    return false;
  }
  if (user.opcode() == HloOpcode::kFusion && IsReluFusion(user)) return true;
  if (user.opcode() == HloOpcode::kTuple || user.opcode() == HloOpcode::kGetTupleElement) return false;
  return true;
}

Status CodeGenerator::CheckSupported(const HloInstruction& instruction) {
  switch (instruction.opcode()) {
    case HloOpcode::kParameter:
    case HloOpcode::kConstant:
    case HloOpcode::kBroadcast:
    case HloOpcode::kDot:
    case HloOpcode::kAdd:
    case HloOpcode::kMaximum:
    case HloOpcode::kTuple:
    case HloOpcode::kGetTupleElement:
    case HloOpcode::kCopy:
    case HloOpcode::kReshape:
    case HloOpcode::kBitcast:
      break;
    case HloOpcode::kTranspose: {
      const std::vector<int64_t>& dims = instruction.dimensions();
      bool identity = true;
      for (size_t i = 0; i < dims.size(); ++i) identity = identity && dims[i] == static_cast<int64_t>(i);
      if (!identity && !(instruction.shape().rank() == 2 && dims == std::vector<int64_t>{1, 0})) {
        return Unimplemented("transpose " + instruction.name() + ": only rank-2 transposes are supported");
      }
      break;
    }
    case HloOpcode::kSubtract:
    case HloOpcode::kMultiply:
    case HloOpcode::kMinimum:
      if (!IsVpuBinary(instruction.opcode())) return UnsupportedOp(instruction);
      break;
    case HloOpcode::kCompare:
      if (!HasOpcode("VCMP") || !HasOpcode("VAND")) return UnsupportedOp(instruction);
      break;
    case HloOpcode::kSelect:
      if (!HasOpcode("VSEL")) return UnsupportedOp(instruction);
      break;
    case HloOpcode::kConvert:
      if (!HasOpcode("VCVT") || !HasOpcode("VCMP")) return UnsupportedOp(instruction);
      break;
    case HloOpcode::kDivide:
      // x / c = x * (1/c) for a constant c: at most one rounding more than the division (docs/numerics.md
      // tolerance); by a computed value, x * rcp(y) (EmitMath).
      if (!IsVpuBinary(HloOpcode::kMultiply)) return UnsupportedOp(instruction);
      break;
    case HloOpcode::kReducePrecision:
      if (!IsBf16Rounding(instruction)) return UnsupportedOp(instruction);
      break;
    case HloOpcode::kExp:
      if (!HasOpcode("VEXP")) return UnsupportedOp(instruction);
      break;
    case HloOpcode::kLog:
      if (!HasOpcode("VLOG")) return UnsupportedOp(instruction);
      break;
    case HloOpcode::kRsqrt:
      if (!HasOpcode("VRSQRT")) return UnsupportedOp(instruction);
      break;
    case HloOpcode::kSqrt:
      if (!HasOpcode("VRSQRT") || !HasOpcode("VMUL") || !HasOpcode("VCMP") || !HasOpcode("VSEL")) {
        return UnsupportedOp(instruction);
      }
      break;
    case HloOpcode::kNegate:
      // -x = (x * -1) + 0: the add turns the -0 of the padded lanes back into +0.
      if (!IsVpuBinary(HloOpcode::kMultiply)) return UnsupportedOp(instruction);
      break;
    case HloOpcode::kAbs:
    case HloOpcode::kSign:
    case HloOpcode::kClamp:
    case HloOpcode::kFloor:
    case HloOpcode::kCeil:
    case HloOpcode::kRoundNearestEven:
    case HloOpcode::kRoundNearestAfz:
      break;
    case HloOpcode::kTanh:
    case HloOpcode::kLogistic:
    case HloOpcode::kPower:
      // VPU sequences around VEXP, VLOG, VRCP and VRSQRT (elementwise.cc).
      if (!HasOpcode("VEXP") || !HasOpcode("VLOG") || !HasOpcode("VRCP") || !HasOpcode("VRSQRT")) {
        return UnsupportedOp(instruction);
      }
      break;
    case HloOpcode::kReduce:
      if (instruction.operand_count() != 2 || ReducerOpcode(instruction) == HloOpcode::kUnknown) {
        return Unimplemented("reduce " + instruction.name() + ": only a single-operand add or maximum reduction is supported");
      }
      break;
    case HloOpcode::kCustomCall:
      if (!hlo::IsIdentityCustomCallTarget(instruction.custom_call_target())) return UnsupportedOp(instruction);
      break;
    case HloOpcode::kFusion:
      if (!IsReluFusion(instruction)) {
        return Unimplemented("fusion " + instruction.name() + " is not a fusion this code generator can lower");
      }
      break;
    default:
      return UnsupportedOp(instruction);
  }
  const hlo::Shape& shape = instruction.shape();
  if (instruction.opcode() == HloOpcode::kTuple) return OkStatus();
  if (shape.IsTuple()) {
    if (instruction.opcode() == HloOpcode::kParameter) {
      return Unimplemented("tuple-shaped parameter " + instruction.name() + " is not supported; pass its elements");
    }
    return Unimplemented(instruction.name() + " produces a tuple outside the root");
  }
  // Data movement, select and convert work on any 32-bit device word; elementwise arithmetic and
  // compares also on s32 lanes (s64 through its low word); the MXU paths on f32 only.
  const hlo::PrimitiveType type = shape.element_type;
  const bool f32 = type == hlo::PrimitiveType::F32;
  bool type_ok = f32;
  switch (instruction.opcode()) {
    case HloOpcode::kParameter:
    case HloOpcode::kConstant:
    case HloOpcode::kGetTupleElement:
    case HloOpcode::kCopy:
    case HloOpcode::kReshape:
    case HloOpcode::kBitcast:
    case HloOpcode::kCustomCall:
    case HloOpcode::kSelect:
    case HloOpcode::kConvert:
      type_ok = IsDeviceElementType(type);
      break;
    case HloOpcode::kBroadcast:
    case HloOpcode::kTranspose:
      // Moved with DMA and VTRANS; the MXU fallbacks (no VTRANS) move f32 only.
      type_ok = IsDeviceElementType(type) && (f32 || HasOpcode("VTRANS"));
      break;
    case HloOpcode::kAdd:
    case HloOpcode::kSubtract:
    case HloOpcode::kMultiply:
    case HloOpcode::kMaximum:
    case HloOpcode::kMinimum:
    case HloOpcode::kNegate:
    case HloOpcode::kAbs:
    case HloOpcode::kSign:
    case HloOpcode::kClamp:
      type_ok = f32 || IsIntegerValue(shape);
      break;
    case HloOpcode::kDot: {
      // bf16 operands reach the MXU exactly; a bf16 result is rounded from the f32 accumulators.
      auto mxu_type = [](hlo::PrimitiveType t) {
        return t == hlo::PrimitiveType::F32 || t == hlo::PrimitiveType::BF16;
      };
      type_ok = mxu_type(type) && mxu_type(instruction.operand(0)->shape().element_type) &&
                mxu_type(instruction.operand(1)->shape().element_type);
      break;
    }
    case HloOpcode::kCompare: {
      const hlo::Shape& operand = instruction.operand(0)->shape();
      type_ok = type == hlo::PrimitiveType::PRED &&
                (operand.element_type == hlo::PrimitiveType::F32 || IsIntegerValue(operand) ||
                 operand.element_type == hlo::PrimitiveType::PRED);
      break;
    }
    default:
      break;
  }
  if (!type_ok) {
    return Unimplemented(instruction.name() + " has element type " + hlo::PrimitiveTypeName(type) +
                         "; this code generator lowers " + instruction.opcode_name() + " for " +
                         (instruction.opcode() == HloOpcode::kCompare ? "f32, s32, s64 and pred operands only"
                                                                      : "f32 values only"));
  }
  if (instruction.opcode() == HloOpcode::kConstant && !instruction.has_literal()) {
    return FailedPrecondition("constant " + instruction.name() + " has no values (the dump elided them)");
  }
  if (instruction.opcode() == HloOpcode::kGetTupleElement &&
      instruction.operand(0)->opcode() != HloOpcode::kTuple) {
    return Unimplemented("get-tuple-element " + instruction.name() + " of a non-tuple instruction");
  }
  if (instruction.opcode() == HloOpcode::kReshape || instruction.opcode() == HloOpcode::kBitcast) {
    DeviceLayout in = MakeDeviceLayout(instruction.operand(0)->shape(), L());
    DeviceLayout out = MakeDeviceLayout(shape, L());
    const bool same_lines = in.rows == out.rows && in.cols == out.cols;
    const bool unpadded = in.cols % L() == 0 && out.cols % L() == 0 && in.lines == out.lines;
    if (!same_lines && !unpadded) {
      return Unimplemented(instruction.name() + ": reshape from " + instruction.operand(0)->shape().ToString() +
                           " to " + shape.ToString() + " changes the device layout");
    }
  }
  return OkStatus();
}

void CodeGenerator::LoadAddress(Reg reg, const HloInstruction* value, uint32_t extra_lines) {
  const Location& location = locations_.at(BufferOf(value));
  asm_.LoadAddress(reg, location.kind, location.index, location.offset + extra_lines);
}

int32_t CodeGenerator::ConstantRegion(const HloInstruction& constant) {
  auto it = constant_regions_.find(&constant);
  if (it != constant_regions_.end()) return it->second;
  DeviceLayout layout = MakeDeviceLayout(constant.shape(), L());
  program_.constants.push_back(layout);
  program_.constant_bytes.push_back(ToDeviceBytes(constant.literal(), layout));
  int32_t index = static_cast<int32_t>(program_.constants.size() - 1);
  constant_regions_[&constant] = index;
  return index;
}

StatusOr<int32_t> CodeGenerator::ConstantRow(uint32_t bits, int64_t cols) {
  auto key = std::make_pair(bits, cols);
  auto it = constant_rows_.find(key);
  if (it != constant_rows_.end()) return it->second;
  float value;
  std::memcpy(&value, &bits, 4);
  hlo::Shape shape = hlo::Shape::Make(hlo::PrimitiveType::F32, {cols});
  DeviceLayout layout = MakeDeviceLayout(shape, L());
  program_.constants.push_back(layout);
  program_.constant_bytes.push_back(
      ToDeviceBytes(hlo::Literal(shape, std::vector<float>(static_cast<size_t>(cols), value)), layout));
  int32_t index = static_cast<int32_t>(program_.constants.size() - 1);
  constant_rows_[key] = index;
  return index;
}

int32_t CodeGenerator::IdentityRegion(float diagonal) {
  const uint32_t lanes = L();
  // Negative column counts: never the key of a constant row.
  auto key = std::make_pair(FloatBits(diagonal), -static_cast<int64_t>(lanes));
  if (auto it = constant_rows_.find(key); it != constant_rows_.end()) return it->second;
  std::vector<float> eye(size_t{lanes} * lanes, 0.0f);
  for (uint32_t i = 0; i < lanes; ++i) eye[size_t{i} * lanes + i] = diagonal;
  hlo::Shape shape = hlo::Shape::Make(hlo::PrimitiveType::F32, {int64_t{lanes}, int64_t{lanes}});
  DeviceLayout layout = MakeDeviceLayout(shape, lanes);
  program_.constants.push_back(layout);
  program_.constant_bytes.push_back(ToDeviceBytes(hlo::Literal(shape, eye), layout));
  const int32_t index = static_cast<int32_t>(program_.constants.size() - 1);
  constant_rows_[key] = index;
  return index;
}

Status CodeGenerator::ForChunks(uint32_t total, uint32_t chunk,
                                const std::vector<std::pair<Reg, uint32_t>>& pointers,
                                const std::function<Status(Reg count, uint32_t count_value)>& body) {
  if (total == 0) return OkStatus();
  chunk = std::min(chunk, total);
  const uint32_t full = total / chunk;
  const uint32_t rest = total % chunk;
  TPU_ASSIGN_OR_RETURN(ScopedReg count, NewReg());
  auto advance = [&](uint32_t items) {
    for (const auto& [reg, step] : pointers) asm_.Addi(reg, reg, items * step);
  };
  asm_.Li(count, chunk);
  if (full >= 2) {
    TPU_ASSIGN_OR_RETURN(ScopedReg remaining, NewReg());
    asm_.Li(remaining, full);
    Assembler::Label loop = asm_.NewLabel();
    asm_.Bind(loop);
    TPU_RETURN_IF_ERROR(body(count, chunk));
    advance(chunk);
    asm_.Addi(remaining, remaining, static_cast<uint32_t>(-1));
    asm_.Bne(remaining, kZeroReg, loop);
  } else {
    TPU_RETURN_IF_ERROR(body(count, chunk));
    if (rest > 0) advance(chunk);
  }
  if (rest > 0) {
    asm_.Li(count, rest);
    TPU_RETURN_IF_ERROR(body(count, rest));
  }
  return OkStatus();
}

Status CodeGenerator::EmitCopy(const HloInstruction* from, Location to) {
  const DeviceLayout layout = MakeDeviceLayout(from->shape(), L());
  TPU_ASSIGN_OR_RETURN(ScopedReg src, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg dst, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg buffer, NewReg());
  LoadAddress(src, from, 0);
  asm_.LoadAddress(dst, to.kind, to.index, to.offset);
  asm_.Li(buffer, 0);
  // One unit moves both ways and completes in order, so no SYNC is needed between load and store.
  return ForChunks(layout.lines, options_.vmem_lines, {{src, 1}, {dst, 1}}, [&](Reg count, uint32_t) {
    asm_.DmaLoad(src, buffer, count, 1);
    asm_.DmaStore(dst, buffer, count, 1);
    return OkStatus();
  });
}

// Rank-2 transpose with VTRANS: a block of LANES operand rows is gathered tile-major (tile t of row i
// at line t*LANES + i, rows past the operand zero), VTRANS turns every tile around, and line c of the
// result is output row c of the block's column tile: one strided store for the whole block.
Status CodeGenerator::StoreColumnTiles(Reg from_vmem, Reg rows, Reg row_hbm, uint32_t first_tile,
                                       uint32_t tile_count, uint32_t row_tiles) {
  TPU_ASSIGN_OR_RETURN(ScopedReg tile_hbm, NewReg());
  asm_.Addi(tile_hbm, row_hbm, first_tile);
  if (tile_count == 1) {
    asm_.DmaStore(tile_hbm, from_vmem, rows, row_tiles);
    return OkStatus();
  }
  TPU_ASSIGN_OR_RETURN(ScopedReg tile_end, NewReg());
  asm_.Addi(tile_end, row_hbm, first_tile + tile_count);
  Assembler::Label loop = asm_.NewLabel();
  asm_.Bind(loop);
  asm_.DmaStore(tile_hbm, from_vmem, rows, row_tiles);
  asm_.Addi(tile_hbm, tile_hbm, 1);
  asm_.Bne(tile_hbm, tile_end, loop);
  return OkStatus();
}

Status CodeGenerator::ForRowBlocks(const HloInstruction& output, uint32_t rows, Reg out_hbm,
                                   const std::function<Status(uint32_t block_rows)>& emit_block) {
  const uint32_t lanes = L();
  const uint32_t full_blocks = rows / lanes, rest_rows = rows % lanes;
  if (full_blocks == 1) {
    TPU_RETURN_IF_ERROR(emit_block(lanes));
  } else if (full_blocks >= 2) {
    TPU_ASSIGN_OR_RETURN(ScopedReg out_end, NewReg());
    LoadAddress(out_end, &output, full_blocks);
    Assembler::Label loop = asm_.NewLabel();
    asm_.Bind(loop);
    TPU_RETURN_IF_ERROR(emit_block(lanes));
    asm_.Bne(out_hbm, out_end, loop);
  }
  if (rest_rows != 0) TPU_RETURN_IF_ERROR(emit_block(rest_rows));
  return OkStatus();
}

Status CodeGenerator::EmitInstruction(const HloInstruction& instruction) {
  switch (instruction.opcode()) {
    case HloOpcode::kDot:
      return EmitDot(instruction);
    case HloOpcode::kBroadcast:
      return EmitBroadcast(instruction);
    case HloOpcode::kReduce:
      return EmitReduce(instruction);
    case HloOpcode::kCompare:
      return EmitCompare(instruction);
    case HloOpcode::kSelect:
      return EmitSelect(instruction);
    case HloOpcode::kConvert:
      if (instruction.shape().element_type == hlo::PrimitiveType::BF16 ||
          instruction.operand(0)->shape().element_type == hlo::PrimitiveType::BF16) {
        return EmitBf16Convert(instruction);
      }
      return EmitConvert(instruction);
    case HloOpcode::kTranspose:
      return EmitTranspose(instruction);
    case HloOpcode::kFusion: {
      // ReLU fusion: maximum with a zero immediate.
      const HloInstruction* root = instruction.called_computations()[0]->root_instruction();
      const HloInstruction* zero = root->operand(0)->opcode() == HloOpcode::kBroadcast ? root->operand(0)
                                                                                      : root->operand(1);
      Src2 b;
      b.kind = Src2::kImmediate;
      b.imm = FloatBits(zero->operand(0)->literal().Get<float>(0));
      return EmitElementwise(instruction, HloOpcode::kMaximum, instruction.operand(0), b);
    }
    case HloOpcode::kReducePrecision:
      return EmitRoundToBf16(instruction);
    case HloOpcode::kExp:
      return EmitMath(instruction, MathKind::kExp);
    case HloOpcode::kLog:
      return EmitMath(instruction, MathKind::kLog);
    case HloOpcode::kRsqrt:
      return EmitMath(instruction, MathKind::kRsqrt);
    case HloOpcode::kSqrt:
      return EmitMath(instruction, MathKind::kSqrt);
    case HloOpcode::kAbs:
      return EmitMath(instruction, MathKind::kAbs);
    case HloOpcode::kSign:
      return EmitMath(instruction, MathKind::kSign);
    case HloOpcode::kTanh:
      return EmitMath(instruction, MathKind::kTanh);
    case HloOpcode::kLogistic:
      return EmitMath(instruction, MathKind::kLogistic);
    case HloOpcode::kFloor:
      return EmitMath(instruction, MathKind::kFloor);
    case HloOpcode::kCeil:
      return EmitMath(instruction, MathKind::kCeil);
    case HloOpcode::kRoundNearestEven:
      return EmitMath(instruction, MathKind::kRoundEven);
    case HloOpcode::kRoundNearestAfz:
      return EmitMath(instruction, MathKind::kRoundAfz);
    case HloOpcode::kPower:
      return EmitMath(instruction, MathKind::kPower);
    case HloOpcode::kClamp:
      return EmitClamp(instruction);
    case HloOpcode::kDivide: {
      if (!ScalarConstantValue(*instruction.operand(1))) return EmitMath(instruction, MathKind::kDivide);
      const uint32_t bits = FloatBits(1.0f / *ScalarConstantValue(*instruction.operand(1)));
      const DeviceLayout layout = MakeDeviceLayout(instruction.shape(), L());
      Src2 b;
      if (layout.cols % L() == 0 || ImmediateKeepsPaddingZero(HloOpcode::kMultiply, bits)) {
        b.kind = Src2::kImmediate;
        b.imm = bits;
      } else {
        b.kind = Src2::kRow;
        TPU_ASSIGN_OR_RETURN(b.constant_row, ConstantRow(bits, layout.cols));
      }
      return EmitElementwise(instruction, HloOpcode::kMultiply, instruction.operand(0), b);
    }
    case HloOpcode::kNegate: {
      Src2 b;
      b.kind = Src2::kImmediate;
      b.imm = IsIntegerValue(instruction.shape()) ? 0xffffffffu : FloatBits(-1.0f);
      return EmitElementwise(instruction, HloOpcode::kMultiply, instruction.operand(0), b);
    }
    case HloOpcode::kSubtract:
    case HloOpcode::kMultiply:
    case HloOpcode::kMinimum:
    case HloOpcode::kAdd:
    case HloOpcode::kMaximum: {
      const HloInstruction* a = instruction.operand(0);
      const HloInstruction* bcast = instruction.operand(1);
      if (IsCommutative(instruction.opcode()) && !FoldableBroadcast(instruction, *bcast) &&
          FoldableBroadcast(instruction, *a)) {
        std::swap(a, bcast);
      }
      TPU_ASSIGN_OR_RETURN(Src2 b, SecondOperand(instruction, instruction.opcode(), *bcast));
      return EmitElementwise(instruction, instruction.opcode(), a, b);
    }
    default:
      return Internal("no emitter for " + instruction.name());
  }
}

StatusOr<Program> CodeGenerator::Run(CompileStats* stats) {
  const hlo::HloComputation* entry = module_.entry_computation();
  if (entry == nullptr || entry->root_instruction() == nullptr) {
    return InvalidArgument("module " + module_.name() + " has no entry computation");
  }
  if (L() == 0 || options_.vmem_lines == 0) return InvalidArgument("CompileOptions: lanes and vmem_lines must be > 0");
  program_.module_name = module_.name();
  program_.lanes = L();

  const std::vector<HloInstruction*> order = entry->MakeInstructionPostOrder();
  for (const HloInstruction* instruction : order) TPU_RETURN_IF_ERROR(CheckSupported(*instruction));

  // Parameters.
  for (int64_t i = 0; i < entry->num_parameters(); ++i) {
    const HloInstruction* parameter = entry->parameter_instruction(i);
    if (parameter == nullptr) return InvalidArgument("entry parameter " + std::to_string(i) + " is missing");
    program_.parameters.push_back(MakeDeviceLayout(parameter->shape(), L()));
    locations_[parameter] = Location{RegionKind::kParameter, static_cast<uint32_t>(i), 0};
  }

  // Which buffer-defining values must exist in HBM: read from memory by some user, or an output.
  std::vector<const HloInstruction*> outputs;
  FlattenOutputs(entry->root_instruction(), &outputs);
  std::set<const HloInstruction*> needed;
  for (const HloInstruction* instruction : order) {
    for (const HloInstruction* operand : instruction->operands()) {
      if (ReadsFromMemory(*instruction, *operand)) needed.insert(BufferOf(operand));
    }
  }
  for (const HloInstruction* output : outputs) needed.insert(BufferOf(output));

  // Outputs: a value computed here is written straight into its output region the first time it
  // appears; parameters, constants and repeated values are copied there at the end.
  std::vector<std::pair<const HloInstruction*, Location>> output_copies;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const HloInstruction* buffer = BufferOf(outputs[i]);
    program_.outputs.push_back(MakeDeviceLayout(outputs[i]->shape(), L()));
    Location location{RegionKind::kOutput, static_cast<uint32_t>(i), 0};
    const bool computed = buffer->opcode() != HloOpcode::kParameter && buffer->opcode() != HloOpcode::kConstant;
    if (computed && locations_.count(buffer) == 0) {
      locations_[buffer] = location;
    } else {
      output_copies.push_back({outputs[i], location});
    }
  }

  // Constants that are read from memory get a region.
  for (const HloInstruction* instruction : order) {
    if (instruction->opcode() == HloOpcode::kConstant && needed.count(instruction) > 0) {
      locations_[instruction] = Location{RegionKind::kConstant, static_cast<uint32_t>(ConstantRegion(*instruction)), 0};
    }
  }

  // Temporaries: liveness-based offsets in the temp region.
  std::vector<BufferRequest> requests;
  std::map<const HloInstruction*, int64_t> position;
  for (size_t i = 0; i < order.size(); ++i) position[order[i]] = static_cast<int64_t>(i);
  std::map<const HloInstruction*, int64_t> last_use;
  for (const HloInstruction* instruction : order) {
    for (const HloInstruction* operand : instruction->operands()) {
      const HloInstruction* buffer = BufferOf(operand);
      last_use[buffer] = std::max(last_use[buffer], position[instruction]);
      // A folded broadcast is read through its source when the user runs.
      if (operand->opcode() == HloOpcode::kBroadcast) {
        const HloInstruction* source = BufferOf(operand->operand(0));
        last_use[source] = std::max(last_use[source], position[instruction]);
      }
    }
  }
  for (const HloInstruction* instruction : order) {
    if (needed.count(instruction) == 0 || locations_.count(instruction) > 0) continue;
    if (BufferOf(instruction) != instruction) continue;
    BufferRequest request;
    request.id = position[instruction];
    request.lines = MakeDeviceLayout(instruction->shape(), L()).lines;
    request.defined_at = position[instruction];
    request.last_use = std::max(last_use[instruction], request.defined_at);
    requests.push_back(request);
  }
  BufferAssignment assignment = AssignBuffers(requests);
  for (const BufferRequest& request : requests) {
    locations_[order[request.id]] = Location{RegionKind::kTemp, 0, assignment.offsets.at(request.id)};
  }
  program_.temp_lines = assignment.peak_lines;

  // Code: one instruction after the other, separated by a full SYNC so that no unit of the previous
  // instruction still touches VMEM the next one reuses.
  bool first = true;
  for (const HloInstruction* instruction : order) {
    if (needed.count(instruction) == 0) continue;
    switch (instruction->opcode()) {
      case HloOpcode::kParameter:
      case HloOpcode::kConstant:
      case HloOpcode::kTuple:
      case HloOpcode::kGetTupleElement:
      case HloOpcode::kCopy:
      case HloOpcode::kReshape:
      case HloOpcode::kBitcast:
      case HloOpcode::kCustomCall:
        continue;  // no code: the value is an existing buffer
      default:
        break;
    }
    if (!first) asm_.Sync(kSyncAll);
    first = false;
    TPU_RETURN_IF_ERROR(EmitInstruction(*instruction));
  }
  for (const auto& [value, location] : output_copies) {
    if (!first) asm_.Sync(kSyncAll);
    first = false;
    TPU_RETURN_IF_ERROR(EmitCopy(value, location));
  }
  asm_.Halt();  // waits for every unit
  TPU_RETURN_IF_ERROR(asm_.Finish(&program_.code, &program_.relocations));

  if (options_.imem_words != 0 && program_.code.size() > options_.imem_words) {
    return ResourceExhausted("Ran out of memory in memory space imem; used: " + std::to_string(program_.code.size()) +
                             " words; limit: " + std::to_string(options_.imem_words) + " words");
  }
  TPU_RETURN_IF_ERROR(ValidateProgram(program_));
  if (stats != nullptr) {
    stats->instructions = static_cast<uint32_t>(program_.code.size());
    stats->peak_temp_lines = program_.temp_lines;
    stats->dots = dots_;
  }
  return std::move(program_);
}

}  // namespace codegen_internal

using codegen_internal::CodeGenerator;

StatusOr<Program> Compile(const hlo::HloModule& module, const CompileOptions& options, CompileStats* stats) {
  if (module.entry_computation() == nullptr || module.entry_computation()->root_instruction() == nullptr) {
    return InvalidArgument("module " + module.name() + " has no entry computation");
  }
  auto compile = [&](int dot_passes, bool pipelined_dots) -> StatusOr<Program> {
    PrepareOptions prepare_options;
    prepare_options.dot_passes = dot_passes;
    TPU_ASSIGN_OR_RETURN(std::unique_ptr<hlo::HloModule> prepared, PrepareForCodegen(module, nullptr, prepare_options));
    CodeGenerator generator(*prepared, options);
    generator.set_pipelined_dots(pipelined_dots);
    return generator.Run(stats);
  };
  // Most precise first; while the code does not fit the IMEM, dots without the software pipeline (less
  // code, dot.cc), then fewer dot passes.
  const std::vector<int> passes = options.dot_passes != 0 ? std::vector<int>{options.dot_passes}
                                                          : std::vector<int>{3, 0, 1};
  StatusOr<Program> program = InvalidArgument("nothing compiled");
  for (int dot_passes : passes) {
    for (bool pipelined_dots : {true, false}) {
      program = compile(dot_passes, pipelined_dots);
      const bool imem_full = !program.ok() && program.status().code() == StatusCode::kResourceExhausted &&
                             program.status().message().find("imem") != std::string::npos;
      if (!imem_full) return program;
    }
  }
  return program;
}

}  // namespace tpu::compiler
