#include "compiler/codegen/opcode_handler.h"

#include <cstdio>
#include <cstdlib>

#include "compiler/codegen/codegen_internal.h"

namespace tpu::compiler::codegen_internal {

void OpcodeHandlerTable::Add(OpcodeHandler handler) {
  std::optional<OpcodeHandler>& slot = handlers_.at(static_cast<size_t>(handler.opcode));
  if (slot.has_value()) {
    duplicates_.push_back(handler.opcode);
    return;
  }
  slot.emplace(std::move(handler));
}

const OpcodeHandler* OpcodeHandlerTable::Find(hlo::HloOpcode opcode) const {
  const size_t index = static_cast<size_t>(opcode);
  if (index >= handlers_.size() || !handlers_[index].has_value()) return nullptr;
  return &*handlers_[index];
}

std::vector<const OpcodeHandler*> OpcodeHandlerTable::handlers() const {
  std::vector<const OpcodeHandler*> all;
  for (const std::optional<OpcodeHandler>& handler : handlers_) {
    if (handler.has_value()) all.push_back(&*handler);
  }
  return all;
}

// Explicit calls rather than static registrars: a registrar in a static library is dropped by the
// linker unless something references its object file.
void AddOpcodeHandlers(OpcodeHandlerTable& table) {
  CodeGenerator::AddBufferHandlers(table);              // codegen.cc
  CodeGenerator::AddElementwiseHandlers(table);         // elementwise.cc
  CodeGenerator::AddBroadcastTransposeHandlers(table);  // broadcast_transpose.cc
  CodeGenerator::AddReduceHandlers(table);              // reduce.cc
  CodeGenerator::AddDotHandlers(table);                 // dot.cc
  CodeGenerator::AddSlicePadHandlers(table);            // slice_pad.cc
  CodeGenerator::AddRelayoutHandlers(table);            // relayout.cc
  CodeGenerator::AddReverseHandlers(table);             // reverse.cc
  CodeGenerator::AddDepthwiseHandlers(table);           // depthwise.cc
  CodeGenerator::AddPoolHandlers(table);                // pool.cc
  CodeGenerator::AddControlFlowHandlers(table);         // control_flow.cc
  CodeGenerator::AddDynamicSliceHandlers(table);        // dynamic_slice.cc
  CodeGenerator::AddGatherScatterHandlers(table);       // gather_scatter.cc
  CodeGenerator::AddFeedHandlers(table);                // feeds.cc
  CodeGenerator::AddCollectiveHandlers(table);          // collectives.cc
}

const OpcodeHandlerTable& OpcodeHandlers() {
  static const OpcodeHandlerTable* const table = [] {
    auto* table = new OpcodeHandlerTable();
    AddOpcodeHandlers(*table);
    if (!table->duplicates().empty()) {
      std::fprintf(stderr, "codegen: more than one handler for opcode %s\n",
                   hlo::HloOpcodeString(table->duplicates().front()));
      std::abort();
    }
    return table;
  }();
  return *table;
}

namespace {

bool TakesElementTypes(ElementTypes types, const HloInstruction& instruction) {
  const hlo::Shape& shape = instruction.shape();
  const hlo::PrimitiveType type = shape.element_type;
  const bool f32 = type == hlo::PrimitiveType::F32;
  auto mxu_type = [](hlo::PrimitiveType t) { return t == hlo::PrimitiveType::F32 || t == hlo::PrimitiveType::BF16; };
  switch (types) {
    case ElementTypes::kF32:
      return f32;
    case ElementTypes::kDeviceWord:
      return IsDeviceElementType(type);
    case ElementTypes::kF32OrInteger:
      return f32 || IsIntegerValue(shape);
    case ElementTypes::kF32OrSignedInteger:
      return f32 || type == hlo::PrimitiveType::S32 || type == hlo::PrimitiveType::S64;
    case ElementTypes::kMxu:
      return mxu_type(type) && mxu_type(instruction.operand(0)->shape().element_type) &&
             mxu_type(instruction.operand(1)->shape().element_type);
    case ElementTypes::kCompare: {
      const hlo::Shape& operand = instruction.operand(0)->shape();
      return type == hlo::PrimitiveType::PRED &&
             (operand.element_type == hlo::PrimitiveType::F32 || IsIntegerValue(operand) ||
              operand.element_type == hlo::PrimitiveType::PRED);
    }
    case ElementTypes::kBits:
      return type == hlo::PrimitiveType::PRED || type == hlo::PrimitiveType::S32 || type == hlo::PrimitiveType::U32;
    case ElementTypes::kInteger32:
      return type == hlo::PrimitiveType::S32 || type == hlo::PrimitiveType::U32;
    case ElementTypes::kTupleOfValues:
    case ElementTypes::kToken:
    case ElementTypes::kInfeedValues:
      return true;
  }
  return false;
}

}  // namespace

const hlo::HloInstruction* BufferSource(const hlo::HloInstruction* instruction, uint32_t lanes) {
  while (true) {
    const OpcodeHandler* handler = OpcodeHandlers().Find(instruction->opcode());
    const hlo::HloInstruction* buffer = handler != nullptr ? handler->SameBufferAs(*instruction, lanes) : nullptr;
    if (buffer == nullptr) return instruction;
    instruction = buffer;
  }
}

const char* ElementTypesText(ElementTypes types) {
  switch (types) {
    case ElementTypes::kF32: return "f32";
    case ElementTypes::kDeviceWord: return "f32, bf16, f16, s8, s16, s32, u8, u16, u32, pred, s64 (in the s32 range)";
    case ElementTypes::kF32OrInteger: return "f32, s32, u32, s64 (in the s32 range)";
    case ElementTypes::kF32OrSignedInteger: return "f32, s32, s64 (in the s32 range)";
    case ElementTypes::kMxu: return "f32 or bf16 result and operands (bf16 exact on the MXU)";
    case ElementTypes::kCompare: return "pred result of f32, s32, u32, s64 or pred operands";
    case ElementTypes::kBits: return "pred, s32, u32";
    case ElementTypes::kInteger32: return "s32, u32";
    case ElementTypes::kTupleOfValues: return "a tuple of the values above";
    case ElementTypes::kToken: return "token";
    case ElementTypes::kInfeedValues: return "f32, s32, bf16, pred arrays (the TPU infeed types), and a token";
  }
  return "";
}

Status CheckSupported(const HloInstruction& instruction) {
  const OpcodeHandler* handler = OpcodeHandlers().Find(instruction.opcode());
  if (handler == nullptr) return UnsupportedOp(instruction);
  if (handler->check) TPU_RETURN_IF_ERROR(handler->check(instruction));
  // Checked by the handler's check (an infeed) or where the values are defined.
  if (handler->types == ElementTypes::kTupleOfValues || handler->types == ElementTypes::kToken ||
      handler->types == ElementTypes::kInfeedValues) {
    return OkStatus();
  }
  const hlo::Shape& shape = instruction.shape();
  if (shape.IsToken()) return OkStatus();  // orders side effects, holds no data, has no buffer
  if (shape.IsTuple()) {
    // An infeed's data tuple: its elements are the buffers (feeds.cc).
    if (instruction.opcode() == HloOpcode::kGetTupleElement && instruction.operand(0)->opcode() == HloOpcode::kInfeed) {
      return OkStatus();
    }
    // The parameter of a loop's condition or body is its state (checked with the while: control_flow.cc).
    const bool loop_state = instruction.opcode() == HloOpcode::kParameter && instruction.parent() != nullptr &&
                            !instruction.parent()->IsEntryComputation();
    if (loop_state) return OkStatus();
    return Unimplemented(instruction.name() + " produces a tuple outside the root");
  }
  if (!TakesElementTypes(handler->types, instruction)) {
    return Unimplemented(instruction.name() + " has element type " + hlo::PrimitiveTypeName(shape.element_type) +
                         "; this code generator lowers " + instruction.opcode_name() + " for " +
                         ElementTypesText(handler->types) + " only (docs/opcodes.md)");
  }
  if (handler->check_value) return handler->check_value(instruction);
  return OkStatus();
}

}  // namespace tpu::compiler::codegen_internal

namespace tpu::compiler {

std::vector<SupportedOpcode> SupportedOpcodes() {
  std::vector<SupportedOpcode> opcodes;
  for (const codegen_internal::OpcodeHandler* handler : codegen_internal::OpcodeHandlers().handlers()) {
    opcodes.push_back(SupportedOpcode{hlo::HloOpcodeString(handler->opcode), codegen_internal::ElementTypesText(handler->types)});
  }
  return opcodes;
}

}  // namespace tpu::compiler
