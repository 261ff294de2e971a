// What the code generator knows about one HLO opcode, in one place: whether an instruction of it can be
// lowered, where its value lives, and the code that computes it. Each lowering file adds the handlers
// of the opcodes it lowers (CodeGenerator::Add*Handlers, called by AddOpcodeHandlers); an opcode with no
// handler is not supported. Not part of the compiler's interface.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "compiler/hlo/hlo_ir.h"
#include "compiler/hlo/hlo_opcode.h"
#include "sw/base/status.h"

namespace tpu::compiler::codegen_internal {

class CodeGenerator;

// The element types a lowering takes (CheckSupported reports the others).
enum class ElementTypes {
  kF32,                // f32 values only
  kDeviceWord,         // any 32-bit device word (IsDeviceElementType): data movement, select, convert
  kF32OrInteger,       // f32, or s32/u32/s64 on the VPU's INT lanes
  kF32OrSignedInteger, // f32, s32 or s64: signed compares on the INT lanes
  kMxu,                // f32 or bf16 result and operands: the MXU reads bf16 exactly
  kCompare,            // a pred result of f32, integer or pred operands
  kBits,               // pred, s32 or u32: bitwise ops on the raw words
  kInteger32,          // s32 or u32: shifts of the raw words
  kTupleOfValues,      // no element type of its own: its values are checked where they are defined
  kToken,              // a token: orders side effects, holds no data
  kInfeedValues,       // what an infeed takes in: f32, s32, bf16 and pred arrays (hlo::CheckTpuInfeedTypes)
};
// The types in words, as docs/opcodes.md and the refusal of another type say them.
const char* ElementTypesText(ElementTypes types);

struct OpcodeHandler {
  explicit OpcodeHandler(hlo::HloOpcode opcode) : opcode(opcode) {}

  hlo::HloOpcode opcode;

  // --- support (CheckSupported, in this order) ---
  // Attributes, called computations or targets the lowering does not take, looked at before the value's
  // shape: Unimplemented or the NotFound of UnsupportedOp. Null: every instance.
  std::function<Status(const hlo::HloInstruction&)> check;
  ElementTypes types = ElementTypes::kF32;
  // What else the value needs once its shape and element type are fine (a constant's literal).
  std::function<Status(const hlo::HloInstruction&)> check_value;

  // --- buffers ---
  // When the value is another instruction's buffer as it stands (no code): that instruction (a copy's
  // operand, a tuple's element); nullptr when it has a buffer of its own. Null: always its own.
  std::function<const hlo::HloInstruction*(const hlo::HloInstruction&, uint32_t lanes)> same_buffer_as;
  // Whether the code reads `operand` from HBM; false when the lowering folds it into its instructions
  // (an immediate, a broadcast's row) or reads nothing. Null: every operand is read.
  std::function<bool(const hlo::HloInstruction& instruction, const hlo::HloInstruction& operand, uint32_t lanes)>
      reads_operand;
  // The value the code reads from HBM in place of `operand` (a slice's source, read through the slice's
  // box), so that it lives until then; nullptr: none. Null: never.
  std::function<const hlo::HloInstruction*(const hlo::HloInstruction& instruction,
                                           const hlo::HloInstruction& operand, uint32_t lanes)>
      reads_through;
  // Whether the result may be written over a tensor operand of its shape (a donated parameter): chunk i
  // of every operand is loaded before chunk i of the result is stored, at the same offsets. Null: never.
  std::function<bool(const hlo::HloInstruction&)> in_place;

  // --- code ---
  // Computes the value into its buffer. Null: no code (parameters, constants and the values that are
  // another instruction's buffer).
  std::function<Status(CodeGenerator&, const hlo::HloInstruction&)> emit;

  const hlo::HloInstruction* SameBufferAs(const hlo::HloInstruction& instruction, uint32_t lanes) const {
    return same_buffer_as ? same_buffer_as(instruction, lanes) : nullptr;
  }
  bool ReadsOperand(const hlo::HloInstruction& instruction, const hlo::HloInstruction& operand, uint32_t lanes) const {
    return reads_operand ? reads_operand(instruction, operand, lanes) : true;
  }
  const hlo::HloInstruction* ReadsThrough(const hlo::HloInstruction& instruction, const hlo::HloInstruction& operand,
                                          uint32_t lanes) const {
    return reads_through ? reads_through(instruction, operand, lanes) : nullptr;
  }
  bool InPlace(const hlo::HloInstruction& instruction) const { return in_place ? in_place(instruction) : false; }
};

// At most one handler per opcode.
class OpcodeHandlerTable {
 public:
  // Adds `handler`; a second handler for an opcode is kept out and listed in duplicates().
  void Add(OpcodeHandler handler);
  // The opcode's handler, or nullptr: not supported.
  const OpcodeHandler* Find(hlo::HloOpcode opcode) const;
  // Every handler, in opcode order.
  std::vector<const OpcodeHandler*> handlers() const;
  const std::vector<hlo::HloOpcode>& duplicates() const { return duplicates_; }

 private:
  static constexpr size_t kOpcodeCount = static_cast<size_t>(hlo::HloOpcode::kUnknown);
  std::array<std::optional<OpcodeHandler>, kOpcodeCount> handlers_;
  std::vector<hlo::HloOpcode> duplicates_;
};

// Adds the handlers of every lowering file to `table`.
void AddOpcodeHandlers(OpcodeHandlerTable& table);
// The table AddOpcodeHandlers fills, built on first use (aborts on a duplicate: a programming error).
const OpcodeHandlerTable& OpcodeHandlers();

// The instruction whose buffer holds `instruction`'s value: itself, or, through the handlers'
// same_buffer_as, the copy's operand, the tuple's element, ... (CodeGenerator::BufferOf).
const hlo::HloInstruction* BufferSource(const hlo::HloInstruction* instruction, uint32_t lanes);

// Whether the code generator lowers `instruction`: the NotFound of UnsupportedOp for an opcode without a
// handler, otherwise the handler's checks, a tuple outside the root, and the element types.
Status CheckSupported(const hlo::HloInstruction& instruction);

// What an opcode without a handler gives (the message of the TensorFlow XLA bridge).
inline Status UnsupportedOp(const hlo::HloInstruction& instruction) {
  return NotFound("No registered '" + instruction.opcode_name() +
                  "' OpKernel for XLA_TPU_JIT devices compatible with node " + instruction.name() +
                  hlo::DefinedAt(instruction));
}

}  // namespace tpu::compiler::codegen_internal
