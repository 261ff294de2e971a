// dynamic-slice and dynamic-update-slice: rows at start indices the device computed.
//
// Each start index of a non-minor dimension is loaded with DMA_LD + SLD, clamped to [0, dimension - size]
// as XLA defines it (a window never leaves the operand), multiplied by the dimension's row step and added
// into one line offset; constant starts are folded at compile time. The rows then move as a row box
// (EmitRowBoxCopy) whose source (slice) or destination (update) is advanced by that offset at run time.
// The minor dimension (lanes) is taken whole: its start always clamps to 0. A window of part of the minor
// dimension would need a lane shift chosen at run time and is refused here; codegen preparation's
// dynamic-slice-minor-to-rows (compiler/passes) turns those into row windows first.
#include "compiler/codegen/codegen_internal.h"

namespace tpu::compiler::codegen_internal {

namespace {

bool IsUpdate(const HloInstruction& instruction) { return instruction.opcode() == HloOpcode::kDynamicUpdateSlice; }
int64_t FirstStart(const HloInstruction& instruction) { return IsUpdate(instruction) ? 2 : 1; }

// The window's size in each dimension: the result's (slice) or the update's.
const std::vector<int64_t>& WindowSizes(const HloInstruction& instruction) {
  return IsUpdate(instruction) ? instruction.operand(1)->shape().dimensions : instruction.shape().dimensions;
}

// A start folded at compile time: a constant.
std::optional<int64_t> ConstantStart(const HloInstruction& start) {
  if (start.opcode() != HloOpcode::kConstant || !start.has_literal()) return std::nullopt;
  return static_cast<int64_t>(start.literal().GetAsDouble(0));
}

Status CheckDynamicSlice(const HloInstruction& instruction) {
  const hlo::Shape& operand = instruction.operand(0)->shape();
  const std::vector<int64_t>& sizes = WindowSizes(instruction);
  const int rank = operand.rank();
  if (rank > 0 && sizes[rank - 1] != operand.dimensions[rank - 1]) {
    return Unimplemented(instruction.opcode_name() + " " + instruction.name() + ": a window of " +
                         std::to_string(sizes[rank - 1]) + " of the " + std::to_string(operand.dimensions[rank - 1]) +
                         " elements of the minor dimension (lanes) is not lowered; only windows of whole rows");
  }
  for (int64_t i = FirstStart(instruction); i < instruction.operand_count(); ++i) {
    const HloInstruction& start = *instruction.operand(i);
    if (start.shape().element_type != hlo::PrimitiveType::S32 && !ConstantStart(start)) {
      return Unimplemented(instruction.opcode_name() + " " + instruction.name() + ": start index " + start.name() +
                           " is " + hlo::PrimitiveTypeName(start.shape().element_type) +
                           "; the device reads s32 start indices (constants of any type)");
    }
  }
  return OkStatus();
}

}  // namespace

StatusOr<uint32_t> CodeGenerator::EmitDynamicRowOffset(const HloInstruction& instruction, Reg offset) {
  const hlo::Shape& operand = instruction.operand(0)->shape();
  const std::vector<int64_t>& sizes = WindowSizes(instruction);
  const std::vector<int64_t> steps = RowSteps(operand, L());
  int64_t fixed = 0;
  asm_.Li(offset, 0);
  for (int d = 0; d + 1 < operand.rank(); ++d) {
    const int64_t limit = operand.dimensions[d] - sizes[d];
    const HloInstruction& start = *instruction.operand(FirstStart(instruction) + d);
    if (limit == 0) continue;  // the window spans the dimension
    if (const std::optional<int64_t> value = ConstantStart(start)) {
      fixed += std::clamp<int64_t>(*value, 0, limit) * steps[d];
      continue;
    }
    TPU_ASSIGN_OR_RETURN(ScopedReg index, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg bound, NewReg());
    TPU_RETURN_IF_ERROR(LoadScalar(index, &start));
    ClampScalar(index, bound, static_cast<uint32_t>(limit));
    asm_.Li(bound, static_cast<uint32_t>(steps[d]));
    asm_.Mul(index, index, bound);
    asm_.Add(offset, offset, index);
  }
  return static_cast<uint32_t>(fixed);
}

Status CodeGenerator::EmitDynamicSlice(const HloInstruction& instruction) {
  const bool update = IsUpdate(instruction);
  const HloInstruction& operand = *instruction.operand(0);
  const HloInstruction& window = update ? *instruction.operand(1) : instruction;  // the rows that move
  const Location result = locations_.at(BufferOf(&instruction));
  // An update starts from the operand's values.
  if (update && BufferOf(&operand) != BufferOf(&instruction)) TPU_RETURN_IF_ERROR(EmitCopy(&operand, result));
  const DeviceLayout window_layout = MakeDeviceLayout(window.shape(), L());
  if (window_layout.lines == 0) return OkStatus();
  if (operand.shape().rank() < 2) {  // the window is the whole vector
    return update ? EmitCopy(instruction.operand(1), result) : EmitCopy(&operand, result);
  }
  TPU_ASSIGN_OR_RETURN(ScopedReg offset, NewReg());
  TPU_ASSIGN_OR_RETURN(const uint32_t fixed, EmitDynamicRowOffset(instruction, offset));
  RowBox box;
  box.tiles = static_cast<uint32_t>(window_layout.column_tiles(L()));
  const std::vector<int64_t> window_steps = RowSteps(window.shape(), L());
  const std::vector<int64_t> operand_steps = RowSteps(operand.shape(), L());
  box.counts.assign(window.shape().dimensions.begin(), window.shape().dimensions.end() - 1);
  if (update) {
    box.src = locations_.at(BufferOf(&window));
    box.src_steps = window_steps;
    box.dst = result;
    box.dst.offset += fixed;
    box.dst_steps = operand_steps;
    box.dst_extra = offset;
  } else {
    box.src = locations_.at(BufferOf(&operand));
    box.src.offset += fixed;
    box.src_steps = operand_steps;
    box.src_extra = offset;
    box.dst = result;
    box.dst_steps = window_steps;
  }
  return EmitRowBoxCopy(box);
}

void CodeGenerator::AddDynamicSliceHandlers(OpcodeHandlerTable& table) {
  for (HloOpcode opcode : {HloOpcode::kDynamicSlice, HloOpcode::kDynamicUpdateSlice}) {
    OpcodeHandler handler(opcode);
    handler.check = CheckDynamicSlice;
    handler.types = ElementTypes::kDeviceWord;
    // Constant starts are folded into the code.
    handler.reads_operand = [](const HloInstruction& instruction, const HloInstruction& operand, uint32_t) {
      for (int64_t i = 0; i < FirstStart(instruction); ++i) {
        if (instruction.operand(i) == &operand) return true;
      }
      return !ConstantStart(operand).has_value();
    };
    handler.emit = [](CodeGenerator& g, const HloInstruction& instruction) { return g.EmitDynamicSlice(instruction); };
    table.Add(std::move(handler));
  }
}

}  // namespace tpu::compiler::codegen_internal
