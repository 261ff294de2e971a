// while loops and conditionals on the sequencer.
//
// Conditions, bodies and branches are lowered in line, between the instructions of the computation that
// holds them (AppendProgramOrder): their values get HBM temporaries by the same liveness as every other
// value. A while's state lives in one HBM buffer per element for the whole loop (Loop::state), and the
// code is
//     copy the initial values into the state buffers
//   top:
//     the condition's instructions
//     DMA its pred into VMEM, SLD it into a register, branch to exit when it is 0 (a condition that
//     compares two s32 scalars of the state or constants -- a counted loop -- has no code of its own:
//     the two are loaded with SLD and compared by the branch)
//     the body's instructions
//     copy the body's results into the state buffers (through temps when one reads another's old value)
//     JMP top
//   exit:
// The body's get-tuple-elements of its parameter, the condition's and the loop's own are the state
// buffers themselves: the state stays in place across iterations and after the loop. A result the body
// computes after its last read of the element's old value is computed straight into the state buffer
// (codegen.cc, `in_state`): the back edge copies only the others.
//
// A conditional's branches read the values passed to them in place (branch_inputs_), and each copies its
// results into the conditional's result buffers, one per element:
//     DMA the selector into VMEM, SLD it, branch to branch k (an index out of range: the last branch)
//   branch 0:  its instructions, copies into the results, JMP exit
//   ...
//   branch n-1: its instructions, copies into the results
//   exit:
// Only one branch runs, so the program order's liveness (branch after branch) is safe for both: a value
// of one branch is never live in another.
#include "compiler/codegen/codegen_internal.h"

namespace tpu::compiler::codegen_internal {

namespace {

const hlo::HloComputation* Condition(const HloInstruction& loop) { return loop.called_computation("condition"); }
const hlo::HloComputation* Body(const HloInstruction& loop) { return loop.called_computation("body"); }

// Every user of a tuple-shaped loop value (the loop, or the parameter of its condition or body) is a
// get-tuple-element: the elements are then buffers of their own.
Status CheckOnlyElementUsers(const HloInstruction& loop, const HloInstruction& value, const std::string& what) {
  for (const HloInstruction* user : value.users()) {
    if (user->opcode() != HloOpcode::kGetTupleElement) {
      return Unimplemented("while " + loop.name() + ": " + what + " is used by " + user->opcode_name() + " " +
                           user->name() + "; only get-tuple-element of the loop state is supported");
    }
  }
  return OkStatus();
}

Status CheckWhile(const HloInstruction& loop) {
  const hlo::HloComputation* condition = Condition(loop);
  const hlo::HloComputation* body = Body(loop);
  if (condition == nullptr || body == nullptr) {
    return InvalidArgument("while " + loop.name() + " needs condition= and body=");
  }
  const hlo::Shape& state = loop.shape();
  if (!state.IsTuple()) return Unimplemented("while " + loop.name() + " with a loop state that is not a tuple");
  for (const hlo::Shape& element : state.tuple_shapes) {
    if (element.IsTuple()) return Unimplemented("while " + loop.name() + " with a nested tuple in its loop state");
  }
  if (loop.operand(0)->opcode() != HloOpcode::kTuple) {
    return Unimplemented("while " + loop.name() + ": the initial state must be a tuple instruction, not " +
                         loop.operand(0)->opcode_name());
  }
  const HloInstruction* body_root = body->root_instruction();
  if (body_root == nullptr || body_root->opcode() != HloOpcode::kTuple ||
      body_root->operand_count() != static_cast<int64_t>(state.tuple_shapes.size())) {
    return Unimplemented("while " + loop.name() + ": the body's root must be a tuple of the loop state's elements");
  }
  const HloInstruction* predicate = condition->root_instruction();
  if (predicate == nullptr || predicate->shape().IsTuple() || predicate->shape().rank() != 0 ||
      predicate->shape().element_type != hlo::PrimitiveType::PRED) {
    return InvalidArgument("while " + loop.name() + ": the condition must return pred[]");
  }
  for (const hlo::HloComputation* computation : {condition, body}) {
    if (computation->num_parameters() != 1) {
      return InvalidArgument("while " + loop.name() + ": " + computation->name() + " must take one parameter");
    }
    TPU_RETURN_IF_ERROR(CheckOnlyElementUsers(loop, *computation->parameter_instruction(0),
                                              "the parameter of " + computation->name()));
  }
  return CheckOnlyElementUsers(loop, loop, "its result");
}

// Whether the loop's condition is compare(a, b) of two s32 scalars, each a constant or an element of the
// loop state: the sequencer then tests it itself (EmitLoopTest).
bool IsScalarTest(const HloInstruction& loop) {
  const HloInstruction* predicate = Condition(loop)->root_instruction();
  if (predicate->opcode() != HloOpcode::kCompare) return false;
  for (const HloInstruction* side : predicate->operands()) {
    if (side->shape().IsTuple() || side->shape().rank() != 0 || side->shape().element_type != hlo::PrimitiveType::S32) {
      return false;
    }
    const bool state = side->opcode() == HloOpcode::kGetTupleElement && side->operand(0)->opcode() == HloOpcode::kParameter;
    const bool constant = side->opcode() == HloOpcode::kConstant && side->has_literal();
    if (!state && !constant) return false;
  }
  return true;
}

Status CheckConditional(const HloInstruction& conditional) {
  const std::string name = "conditional " + conditional.name();
  const std::vector<hlo::HloComputation*> branches = conditional.called_computations();
  if (branches.empty() || conditional.operand_count() != static_cast<int64_t>(branches.size()) + 1) {
    return InvalidArgument(name + " needs one operand per branch after the selector");
  }
  const hlo::Shape& selector = conditional.operand(0)->shape();
  if (selector.IsTuple() || selector.rank() != 0 ||
      (selector.element_type != hlo::PrimitiveType::PRED && selector.element_type != hlo::PrimitiveType::S32)) {
    return InvalidArgument(name + ": the selector must be pred[] or s32[]");
  }
  const hlo::Shape& result = conditional.shape();
  if (result.IsTuple()) {
    for (const hlo::Shape& element : result.tuple_shapes) {
      if (element.IsTuple()) return Unimplemented(name + " with a nested tuple in its result");
    }
    for (const HloInstruction* user : conditional.users()) {
      if (user->opcode() != HloOpcode::kGetTupleElement) {
        return Unimplemented(name + ": its result is used by " + user->opcode_name() + " " + user->name() +
                             "; only get-tuple-element of a tuple result is supported");
      }
    }
  }
  for (size_t k = 0; k < branches.size(); ++k) {
    const hlo::HloComputation& branch = *branches[k];
    if (branch.num_parameters() != 1) return InvalidArgument(name + ": " + branch.name() + " must take one parameter");
    const HloInstruction* root = branch.root_instruction();
    if (result.IsTuple() && (root == nullptr || root->opcode() != HloOpcode::kTuple)) {
      return Unimplemented(name + ": the root of " + branch.name() + " must be a tuple instruction");
    }
    const HloInstruction& parameter = *branch.parameter_instruction(0);
    if (!parameter.shape().IsTuple()) continue;
    // A tuple passed to a branch: each element is read where it is.
    const HloInstruction& input = *conditional.operand(static_cast<int64_t>(k) + 1);
    if (input.opcode() != HloOpcode::kTuple) {
      return Unimplemented(name + ": the tuple passed to " + branch.name() + " must be a tuple instruction, not " +
                           input.opcode_name());
    }
    for (const HloInstruction* element : input.operands()) {
      if (element->shape().IsTuple()) return Unimplemented(name + ": a nested tuple passed to " + branch.name());
    }
    for (const HloInstruction* user : parameter.users()) {
      if (user->opcode() != HloOpcode::kGetTupleElement) {
        return Unimplemented(name + ": the parameter of " + branch.name() + " is used by " + user->opcode_name() +
                             " " + user->name() + "; only get-tuple-element of it is supported");
      }
    }
  }
  return OkStatus();
}

}  // namespace

void CodeGenerator::AddControlFlowHandlers(OpcodeHandlerTable& table) {
  // The driver lowers the loop (AppendProgramOrder, EmitLoop*): it has no code of its own at its position
  // but the back edge, and it reads its initial tuple's elements through copies.
  OpcodeHandler loop(HloOpcode::kWhile);
  loop.check = CheckWhile;
  loop.types = ElementTypes::kTupleOfValues;
  loop.reads_operand = [](const HloInstruction&, const HloInstruction&, uint32_t) { return false; };
  table.Add(std::move(loop));

  // The driver lowers the conditional (AppendProgramOrder, EmitDispatch, EmitBranchEnd); its branches
  // read their inputs where they are.
  OpcodeHandler conditional(HloOpcode::kConditional);
  conditional.check = CheckConditional;
  conditional.types = ElementTypes::kTupleOfValues;
  conditional.reads_operand = [](const HloInstruction&, const HloInstruction&, uint32_t) { return false; };
  table.Add(std::move(conditional));
}

Status CodeGenerator::AppendProgramOrder(const hlo::HloComputation& computation, int depth,
                                         std::vector<HloInstruction*>* order) {
  if (depth > kMaxLoopNesting) {
    return InvalidArgument("while loops and conditionals nested more than " + std::to_string(kMaxLoopNesting) +
                           " deep");
  }
  // Each computation lowered in line has one place in the code (unshare-computations copies the others).
  auto append_inline = [&](const HloInstruction& user, const hlo::HloComputation& called) -> Status {
    if (!inlined_computations_.insert(&called).second) {
      return Internal(user.opcode_name() + " " + user.name() + " calls " + called.name() +
                      ", which another while or conditional calls too (unshare-computations did not run)");
    }
    return AppendProgramOrder(called, depth + 1, order);
  };
  for (HloInstruction* instruction : computation.MakeInstructionPostOrder()) {
    if (instruction->opcode() == HloOpcode::kWhile) {
      TPU_RETURN_IF_ERROR(CheckWhile(*instruction));
      Loop loop;
      loop.instruction = instruction;
      loop.scalar_test = IsScalarTest(*instruction);
      loop.begin = static_cast<int64_t>(order->size());
      TPU_RETURN_IF_ERROR(append_inline(*instruction, *Condition(*instruction)));
      loop.test = static_cast<int64_t>(order->size()) - 1;  // the condition's root comes last
      TPU_RETURN_IF_ERROR(append_inline(*instruction, *Body(*instruction)));
      loop.end = static_cast<int64_t>(order->size());
      order->push_back(instruction);
      loop.top = asm_.NewLabel();
      loop.exit = asm_.NewLabel();
      loops_.push_back(std::move(loop));
      continue;
    }
    if (instruction->opcode() == HloOpcode::kConditional) {
      TPU_RETURN_IF_ERROR(CheckConditional(*instruction));
      Conditional conditional;
      conditional.instruction = instruction;
      const std::vector<hlo::HloComputation*> branches = instruction->called_computations();
      for (size_t k = 0; k < branches.size(); ++k) {
        const HloInstruction* parameter = branches[k]->parameter_instruction(0);
        const HloInstruction* input = instruction->operand(static_cast<int64_t>(k) + 1);
        if (!parameter->shape().IsTuple()) {
          branch_inputs_[parameter] = input;
        } else {
          for (const HloInstruction* element : parameter->users()) {
            branch_inputs_[element] = input->operand(element->tuple_index());
          }
        }
        conditional.branch_begin.push_back(static_cast<int64_t>(order->size()));
        TPU_RETURN_IF_ERROR(append_inline(*instruction, *branches[k]));
        conditional.branches.push_back(asm_.NewLabel());
      }
      conditional.end = static_cast<int64_t>(order->size());
      order->push_back(instruction);
      conditional.exit = asm_.NewLabel();
      conditionals_.push_back(std::move(conditional));
      continue;
    }
    order->push_back(instruction);
  }
  return OkStatus();
}

std::vector<const HloInstruction*> CodeGenerator::StateElements(const Loop& loop, size_t element) const {
  std::vector<const HloInstruction*> elements;
  auto add_users = [&](const HloInstruction& tuple) {
    for (const HloInstruction* user : tuple.users()) {
      if (user->opcode() == HloOpcode::kGetTupleElement && user->tuple_index() == static_cast<int64_t>(element)) {
        elements.push_back(user);
      }
    }
  };
  add_users(*loop.instruction);
  add_users(*Condition(*loop.instruction)->parameter_instruction(0));
  add_users(*Body(*loop.instruction)->parameter_instruction(0));
  return elements;
}

const HloInstruction* CodeGenerator::LoopResult(const Loop& loop, size_t element) const {
  return Body(*loop.instruction)->root_instruction()->operand(static_cast<int64_t>(element));
}

const HloInstruction* CodeGenerator::LoopPredicate(const Loop& loop) const {
  return Condition(*loop.instruction)->root_instruction();
}

Status CodeGenerator::EmitLoopEntry(const Loop& loop) {
  const HloInstruction& initial = *loop.instruction->operand(0);
  for (size_t i = 0; i < loop.state.size(); ++i) {
    const HloInstruction* value = initial.operand(static_cast<int64_t>(i));
    const Location& from = locations_.at(BufferOf(value));
    const Location& to = loop.state[i];
    if (from.kind == to.kind && from.index == to.index && from.offset == to.offset) continue;  // already there
    TPU_RETURN_IF_ERROR(EmitCopy(value, to));
  }
  return OkStatus();
}

Status CodeGenerator::EmitLoopTest(const Loop& loop) {
  if (loop.scalar_test) return EmitScalarLoopTest(loop);
  TPU_ASSIGN_OR_RETURN(ScopedReg value, NewReg());
  TPU_RETURN_IF_ERROR(LoadScalar(value, LoopPredicate(loop)));  // the pred as a 0/1 word
  asm_.Beq(value, kZeroReg, loop.exit);
  return OkStatus();
}

Status CodeGenerator::EmitScalarLoopTest(const Loop& loop) {
  const HloInstruction& compare = *LoopPredicate(loop);
  ScopedReg sides[2];
  for (int i = 0; i < 2; ++i) {
    const HloInstruction& side = *compare.operand(i);
    TPU_ASSIGN_OR_RETURN(sides[i], NewReg());
    if (side.opcode() == HloOpcode::kConstant) {
      asm_.Li(sides[i], static_cast<uint32_t>(side.literal().Get<int32_t>(0)));
      continue;
    }
    TPU_RETURN_IF_ERROR(LoadScalar(sides[i], &side));  // a state element
  }
  const Reg a = sides[0], b = sides[1];
  // Leave the loop when `a direction b` does not hold.
  const hlo::ComparisonDirection direction = compare.comparison_direction();
  switch (direction) {
    case hlo::ComparisonDirection::kLt:
    case hlo::ComparisonDirection::kGt: {
      // a < b (b < a): into the body, else out.
      Assembler::Label body = asm_.NewLabel();
      if (direction == hlo::ComparisonDirection::kLt) {
        asm_.Blt(a, b, body);
      } else {
        asm_.Blt(b, a, body);
      }
      asm_.Jmp(loop.exit);
      asm_.Bind(body);
      break;
    }
    case hlo::ComparisonDirection::kLe: asm_.Blt(b, a, loop.exit); break;
    case hlo::ComparisonDirection::kGe: asm_.Blt(a, b, loop.exit); break;
    case hlo::ComparisonDirection::kEq: asm_.Bne(a, b, loop.exit); break;
    case hlo::ComparisonDirection::kNe: asm_.Beq(a, b, loop.exit); break;
  }
  return OkStatus();
}

Status CodeGenerator::EmitLoopBack(const Loop& loop) {
  auto same = [](const Location& a, const Location& b) {
    return a.kind == b.kind && a.index == b.index && a.offset == b.offset;
  };
  // A result that is another element's old value is staged first: the copies below overwrite it.
  std::vector<Location> sources;
  for (size_t i = 0; i < loop.state.size(); ++i) {
    const HloInstruction* value = LoopResult(loop, i);
    Location source = locations_.at(BufferOf(value));
    if (loop.staged[i] >= 0) {
      const Location temp{RegionKind::kTemp, 0, loop.staged_offsets[i]};
      TPU_RETURN_IF_ERROR(EmitCopyLines(source, temp, MakeDeviceLayout(value->shape(), L()).lines));
      source = temp;
    }
    sources.push_back(source);
  }
  for (size_t i = 0; i < loop.state.size(); ++i) {
    if (same(sources[i], loop.state[i])) continue;  // the body left the element in place
    TPU_RETURN_IF_ERROR(
        EmitCopyLines(sources[i], loop.state[i], MakeDeviceLayout(LoopResult(loop, i)->shape(), L()).lines));
  }
  asm_.Jmp(loop.top);  // top starts with a full SYNC: the copies are done before the condition reads them
  return OkStatus();
}

size_t CodeGenerator::ResultCount(const Conditional& conditional) const {
  const hlo::Shape& result = conditional.instruction->shape();
  return result.IsTuple() ? result.tuple_shapes.size() : 1;
}

std::vector<const HloInstruction*> CodeGenerator::ResultElements(const Conditional& conditional, size_t element) const {
  if (!conditional.instruction->shape().IsTuple()) return {conditional.instruction};
  std::vector<const HloInstruction*> elements;
  for (const HloInstruction* user : conditional.instruction->users()) {
    if (user->tuple_index() == static_cast<int64_t>(element)) elements.push_back(user);
  }
  return elements;
}

const HloInstruction* CodeGenerator::BranchResult(const Conditional& conditional, size_t branch, size_t element) const {
  const HloInstruction* root = conditional.instruction->called_computations()[branch]->root_instruction();
  return conditional.instruction->shape().IsTuple() ? root->operand(static_cast<int64_t>(element)) : root;
}

Status CodeGenerator::EmitDispatch(const Conditional& conditional) {
  TPU_ASSIGN_OR_RETURN(ScopedReg selector, NewReg());
  TPU_RETURN_IF_ERROR(LoadScalar(selector, conditional.instruction->operand(0)));  // the pred (0/1) or the index
  const std::vector<Assembler::Label>& branches = conditional.branches;
  if (conditional.instruction->operand(0)->shape().element_type == hlo::PrimitiveType::PRED) {
    asm_.Beq(selector, kZeroReg, branches[1]);  // true: branch 0 (true_computation), next
    return OkStatus();
  }
  // An index: k for 1 <= k < n-1, every other value but 0 (out of range) the last branch, 0 the next.
  if (branches.size() == 1) return OkStatus();
  TPU_ASSIGN_OR_RETURN(ScopedReg k, NewReg());
  for (size_t b = 1; b + 1 < branches.size(); ++b) {
    asm_.Li(k, static_cast<uint32_t>(b));
    asm_.Beq(selector, k, branches[b]);
  }
  asm_.Bne(selector, kZeroReg, branches.back());
  return OkStatus();
}

Status CodeGenerator::EmitBranchEnd(const Conditional& conditional, size_t branch) {
  for (size_t i = 0; i < conditional.results.size(); ++i) {
    TPU_RETURN_IF_ERROR(EmitCopy(BranchResult(conditional, branch, i), conditional.results[i]));
  }
  if (branch + 1 < conditional.branches.size()) asm_.Jmp(conditional.exit);
  return OkStatus();
}

}  // namespace tpu::compiler::codegen_internal
