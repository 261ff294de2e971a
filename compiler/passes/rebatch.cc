#include "compiler/passes/rebatch.h"

#include <cmath>
#include <map>
#include <random>
#include <vector>

#include "compiler/hlo/verifier.h"

namespace tpu::compiler {
namespace {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::Shape;

class Rebatcher {
 public:
  Rebatcher(int64_t old_batch, int64_t new_batch) : old_(old_batch), new_(new_batch) {}

  // Re-infers the shapes of `computation` whose parameters already have their new shapes.
  Status RebatchComputation(HloComputation* computation) {
    for (HloInstruction* instruction : computation->MakeInstructionPostOrder()) {
      if (instruction->opcode() == HloOpcode::kParameter) continue;
      bool operands_changed = false;
      for (const HloInstruction* operand : instruction->operands()) {
        operands_changed = operands_changed || changed_.count(operand) > 0;
      }
      TPU_ASSIGN_OR_RETURN(Shape shape, NewShape(*instruction, operands_changed));
      if (shape == instruction->shape()) continue;
      shape.minor_to_major = instruction->shape().minor_to_major;
      if (static_cast<int>(shape.minor_to_major.size()) != shape.rank()) shape.minor_to_major.clear();
      instruction->set_shape(shape);
      changed_.insert({instruction, true});
    }
    return OkStatus();
  }

  Status Error(const HloInstruction& instruction, const std::string& why) const {
    return InvalidArgument("cannot re-batch " + instruction.name() + " (" + instruction.shape().ToString() +
                           ") from batch " + std::to_string(old_) + " to " + std::to_string(new_) + ": " + why);
  }

  bool changed(const HloInstruction* instruction) const { return changed_.count(instruction) > 0; }
  void mark_changed(const HloInstruction* instruction) { changed_.insert({instruction, true}); }

 private:
  StatusOr<Shape> NewShape(HloInstruction& instruction, bool operands_changed) {
    const Shape& old_shape = instruction.shape();
    switch (instruction.opcode()) {
      case HloOpcode::kConstant:
        for (int64_t size : old_shape.dimensions) {
          if (size == old_) return Error(instruction, "a constant's shape carries the batch dimension");
        }
        return old_shape;
      case HloOpcode::kIota:
      case HloOpcode::kRng: {
        Shape shape = old_shape;
        for (int64_t& size : shape.dimensions) {
          if (size == old_) size = new_;
        }
        return shape;
      }
      case HloOpcode::kBroadcast: {
        Shape shape = old_shape;
        const Shape& operand = instruction.operand(0)->shape();
        std::vector<bool> mapped(shape.dimensions.size(), false);
        for (size_t i = 0; i < instruction.dimensions().size(); ++i) {
          const int64_t out = instruction.dimensions(static_cast<int64_t>(i));
          shape.dimensions.at(out) = operand.dimensions.at(i);
          mapped[out] = true;
        }
        for (size_t d = 0; d < shape.dimensions.size(); ++d) {
          if (!mapped[d] && shape.dimensions[d] == old_) shape.dimensions[d] = new_;
        }
        return shape;
      }
      case HloOpcode::kReshape:
      case HloOpcode::kBitcast:
        return operands_changed ? ReshapeShape(instruction) : old_shape;
      case HloOpcode::kSlice: {
        if (!operands_changed) return old_shape;
        const Shape& operand = instruction.operand(0)->shape();
        std::vector<int64_t> starts = instruction.slice_starts(), limits = instruction.slice_limits();
        for (int d = 0; d < operand.rank(); ++d) {
          if (operand.dimensions[d] == new_) {
            if (starts[d] != 0 || limits[d] != old_ || instruction.slice_strides()[d] != 1) {
              return Error(instruction, "dimension " + std::to_string(d) + " slices part of the batch");
            }
            limits[d] = new_;
          }
        }
        instruction.set_slice(starts, limits, instruction.slice_strides());
        return hlo::InferShape(instruction);
      }
      case HloOpcode::kCall:
      case HloOpcode::kFusion: {
        if (!operands_changed) return old_shape;
        std::vector<HloComputation*> called = instruction.called_computations();
        if (called.size() != 1) return Error(instruction, "expected one called computation");
        TPU_RETURN_IF_ERROR(RebatchCallee(instruction, called[0]));
        return called[0]->root_instruction()->shape();
      }
      default:
        if (!operands_changed) return old_shape;
        if (instruction.opcode() == HloOpcode::kCustomCall || instruction.opcode() == HloOpcode::kWhile ||
            instruction.opcode() == HloOpcode::kConditional) {
          return Error(instruction, "its shape cannot be inferred from its operands");
        }
        return hlo::InferShape(instruction);
    }
  }

  StatusOr<Shape> ReshapeShape(const HloInstruction& reshape) {
    const Shape& operand = reshape.operand(0)->shape();
    Shape shape = reshape.shape();
    const int64_t old_count = shape.ElementCount();
    if (old_count * new_ % old_ != 0 || operand.ElementCount() != old_count / old_ * new_) {
      return Error(reshape, "the operand's element count does not scale with the batch");
    }
    int chosen = -1;
    for (int d = 0; d < shape.rank() && chosen < 0; ++d) {
      if (shape.dimensions[d] == old_) chosen = d;
    }
    for (int d = 0; d < shape.rank() && chosen < 0; ++d) {
      if (shape.dimensions[d] % old_ == 0) chosen = d;
    }
    if (chosen < 0) return Error(reshape, "no output dimension carries the batch");
    shape.dimensions[chosen] = shape.dimensions[chosen] / old_ * new_;
    return shape;
  }

  Status RebatchCallee(const HloInstruction& call, HloComputation* callee) {
    if (callee->num_parameters() != call.operand_count()) return Error(call, "operand count mismatch");
    auto done = rebatched_.find(callee);
    if (done != rebatched_.end()) {
      for (int64_t i = 0; i < call.operand_count(); ++i) {
        if (callee->parameter_instruction(i)->shape() != call.operand(i)->shape()) {
          return Error(call, "its computation " + callee->name() + " is also called with other shapes");
        }
      }
      return OkStatus();
    }
    rebatched_.insert({callee, true});
    for (int64_t i = 0; i < call.operand_count(); ++i) {
      HloInstruction* parameter = callee->parameter_instruction(i);
      if (parameter->shape() != call.operand(i)->shape()) {
        parameter->set_shape(call.operand(i)->shape());
        mark_changed(parameter);
      }
    }
    return RebatchComputation(callee);
  }

  int64_t old_, new_;
  std::map<const HloInstruction*, bool> changed_;
  std::map<const HloComputation*, bool> rebatched_;
};

// Through reshapes, broadcasts, copies and converts: the instructions that read the value of `constant`.
void CollectUses(const HloInstruction* value, std::vector<std::pair<const HloInstruction*, int64_t>>* uses,
                 int depth = 0) {
  for (const HloInstruction* user : value->users()) {
    const HloOpcode op = user->opcode();
    if (depth < 16 && (op == HloOpcode::kReshape || op == HloOpcode::kBroadcast || op == HloOpcode::kCopy ||
                       op == HloOpcode::kConvert || op == HloOpcode::kBitcast || op == HloOpcode::kTranspose)) {
      CollectUses(user, uses, depth + 1);
      continue;
    }
    for (int64_t i = 0; i < user->operand_count(); ++i) {
      if (user->operand(i) == value) uses->push_back({user, i});
    }
  }
}

enum class ConstantRole { kPositive, kWeights, kScale, kShift };

// How a constant is used, and for weights their fan-in.
ConstantRole RoleOf(const HloInstruction& constant, int64_t* fan_in) {
  std::vector<std::pair<const HloInstruction*, int64_t>> uses;
  CollectUses(&constant, &uses);
  ConstantRole role = ConstantRole::kShift;
  for (const auto& [user, index] : uses) {
    const HloOpcode op = user->opcode();
    if (op == HloOpcode::kRsqrt || op == HloOpcode::kSqrt || op == HloOpcode::kLog ||
        (op == HloOpcode::kDivide && index == 1)) {
      return ConstantRole::kPositive;
    }
    if (op == HloOpcode::kConvolution && index == 1 && user->has_convolution_dimension_numbers()) {
      const Shape& kernel = user->operand(1)->shape();
      const int64_t out = kernel.dimensions.at(user->convolution_dimension_numbers().kernel_output_feature_dimension);
      *fan_in = out == 0 ? 1 : kernel.ElementCount() / out;
      role = ConstantRole::kWeights;
    } else if (op == HloOpcode::kDot && index == 1) {
      int64_t contracted = 1;
      for (int64_t d : user->dot_dimension_numbers().rhs_contracting_dimensions) {
        contracted *= user->operand(1)->shape().dimensions.at(d);
      }
      *fan_in = contracted;
      role = ConstantRole::kWeights;
    } else if (op == HloOpcode::kMultiply && role == ConstantRole::kShift) {
      role = ConstantRole::kScale;
    }
  }
  return role;
}

}  // namespace

StatusOr<bool> Rebatch::Run(hlo::HloModule* module) {
  HloComputation* entry = module->entry_computation();
  if (entry == nullptr) return InvalidArgument("rebatch: the module has no entry computation");
  if (batch_ <= 0) return InvalidArgument("rebatch: the batch size must be positive, got " + std::to_string(batch_));
  int64_t old_batch = -1;
  for (const HloInstruction* parameter : entry->parameter_instructions()) {
    const Shape& shape = parameter->shape();
    if (!shape.IsArray() || shape.rank() == 0) continue;
    if (old_batch < 0) old_batch = shape.dimensions[0];
    if (shape.dimensions[0] != old_batch) {
      return InvalidArgument("rebatch: entry parameters disagree on the batch size: " + parameter->name() + " is " +
                             shape.ToString() + ", an earlier one has " + std::to_string(old_batch) + " rows");
    }
  }
  if (old_batch < 0) return InvalidArgument("rebatch: no entry parameter has a leading (batch) dimension");
  if (old_batch == batch_) return false;
  Rebatcher rebatcher(old_batch, batch_);
  for (HloInstruction* parameter : entry->parameter_instructions()) {
    Shape shape = parameter->shape();
    if (!shape.IsArray() || shape.rank() == 0) continue;
    shape.dimensions[0] = batch_;
    parameter->set_shape(shape);
    rebatcher.mark_changed(parameter);
  }
  TPU_RETURN_IF_ERROR(rebatcher.RebatchComputation(entry));
  auto& attributes = module->mutable_raw_attributes();
  for (auto it = attributes.begin(); it != attributes.end();) {
    it = it->first == "entry_computation_layout" ? attributes.erase(it) : it + 1;
  }
  return true;
}

StatusOr<int> FillElidedConstants(hlo::HloModule* module, uint64_t seed) {
  std::mt19937 rng(static_cast<uint32_t>(seed));
  int filled = 0;
  for (HloComputation* computation : module->computations()) {
    for (HloInstruction* instruction : computation->instructions()) {
      if (instruction->opcode() != HloOpcode::kConstant || instruction->has_literal()) continue;
      const Shape& shape = instruction->shape();
      if (!shape.IsArray()) return InvalidArgument("elided constant " + instruction->name() + " is not an array");
      int64_t fan_in = 1;
      const ConstantRole role = RoleOf(*instruction, &fan_in);
      float low = -0.1f, high = 0.1f;
      if (role == ConstantRole::kPositive || role == ConstantRole::kScale) {
        low = 0.5f;
        high = 1.5f;
      } else if (role == ConstantRole::kWeights) {
        high = static_cast<float>(std::sqrt(3.0 / static_cast<double>(std::max<int64_t>(fan_in, 1))));
        low = -high;
      }
      std::uniform_real_distribution<float> uniform(low, high);
      hlo::Literal literal(shape);
      for (int64_t i = 0; i < literal.element_count(); ++i) {
        double value = 0;
        if (hlo::IsFloatingPointType(shape.element_type)) {
          value = uniform(rng);
        } else if (hlo::IsIntegralType(shape.element_type)) {
          value = static_cast<double>(rng() % 4);
        }
        literal.SetFromDouble(i, value);
      }
      instruction->set_literal(std::move(literal));
      ++filled;
    }
  }
  return filled;
}

Status SetEntryRoot(hlo::HloModule* module, std::string_view name) {
  HloComputation* entry = module->entry_computation();
  if (entry == nullptr) return InvalidArgument("the module has no entry computation");
  HloInstruction* root = entry->GetInstructionWithName(name);
  if (root == nullptr) {
    return NotFound("the entry computation " + entry->name() + " has no instruction named '" + std::string(name) +
                    "' (instructions of called computations are not visible; name the call or its result)");
  }
  entry->set_root_instruction(root);
  entry->RemoveDeadInstructions();
  module->RemoveUnusedComputations();
  auto& attributes = module->mutable_raw_attributes();
  for (auto it = attributes.begin(); it != attributes.end();) {
    it = it->first == "entry_computation_layout" ? attributes.erase(it) : it + 1;
  }
  return OkStatus();
}

}  // namespace tpu::compiler
