// Adds instructions to a computation for the rewriting passes: reshapes, transposes and slices that are
// not added when they would change nothing, pads with zeros, rank-2 dots, concatenates.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "compiler/hlo/hlo_ir.h"

namespace tpu::compiler {

// The permutation that undoes `permutation` (a transpose by one, then by the other, changes nothing).
inline std::vector<int64_t> InversePermutation(const std::vector<int64_t>& permutation) {
  std::vector<int64_t> inverse(permutation.size());
  for (size_t i = 0; i < permutation.size(); ++i) inverse[static_cast<size_t>(permutation[i])] = static_cast<int64_t>(i);
  return inverse;
}

// Adds instructions before nothing in particular: the computation orders them by their operands.
class HloBuilder {
 public:
  explicit HloBuilder(hlo::HloComputation* computation) : computation_(computation) {}

  hlo::HloInstruction* Add(std::unique_ptr<hlo::HloInstruction> instruction) {
    return computation_->AddInstruction(std::move(instruction));
  }
  static hlo::Shape ShapeOf(hlo::PrimitiveType type, std::vector<int64_t> dimensions) {
    return hlo::Shape::MakeWithDefaultLayout(type, std::move(dimensions));
  }
  // `instruction` computed on wider values: every operand whose element type `wider` maps to another is
  // converted to it, the instruction runs on those, and a result of a widened type is converted back to
  // it (the convert rounds or wraps). nullptr when neither the result nor an operand is widened.
  hlo::HloInstruction* InWiderType(hlo::HloInstruction* instruction,
                                   const std::function<hlo::PrimitiveType(hlo::PrimitiveType)>& wider) {
    const hlo::PrimitiveType type = instruction->shape().element_type;
    bool widened = wider(type) != type;
    std::vector<hlo::HloInstruction*> operands;
    for (hlo::HloInstruction* operand : instruction->operands()) {
      const hlo::PrimitiveType from = operand->shape().element_type, to = wider(from);
      widened = widened || to != from;
      operands.push_back(to == from ? operand : Convert(operand, to));
    }
    if (!widened) return nullptr;
    if (wider(type) == type) return Add(instruction->CloneWithNewOperands(instruction->shape(), operands));
    hlo::HloInstruction* wide = Add(instruction->CloneWithNewOperands(
        hlo::Shape::Make(wider(type), instruction->shape().dimensions), operands));
    return Convert(wide, type);
  }
  hlo::HloInstruction* Convert(hlo::HloInstruction* x, hlo::PrimitiveType type) {
    return Add(hlo::HloInstruction::CreateConvert(hlo::Shape::Make(type, x->shape().dimensions), x));
  }
  hlo::HloInstruction* Transpose(hlo::HloInstruction* x, const std::vector<int64_t>& permutation) {
    std::vector<int64_t> identity(permutation.size());
    std::iota(identity.begin(), identity.end(), 0);
    if (permutation == identity) return x;
    std::vector<int64_t> dimensions;
    for (int64_t d : permutation) dimensions.push_back(x->shape().dimensions.at(d));
    return Add(hlo::HloInstruction::CreateTranspose(ShapeOf(x->shape().element_type, dimensions), x, permutation));
  }
  hlo::HloInstruction* Reshape(hlo::HloInstruction* x, std::vector<int64_t> dimensions) {
    if (x->shape().dimensions == dimensions) return x;
    return Add(hlo::HloInstruction::CreateReshape(ShapeOf(x->shape().element_type, std::move(dimensions)), x));
  }
  hlo::HloInstruction* Slice(hlo::HloInstruction* x, std::vector<int64_t> starts, std::vector<int64_t> limits,
                             std::vector<int64_t> strides) {
    bool whole = true;
    std::vector<int64_t> dimensions;
    for (size_t d = 0; d < starts.size(); ++d) {
      dimensions.push_back((limits[d] - starts[d] + strides[d] - 1) / strides[d]);
      whole = whole && starts[d] == 0 && limits[d] == x->shape().dimensions[d] && strides[d] == 1;
    }
    if (whole) return x;
    auto slice = hlo::HloInstruction::Create(hlo::HloOpcode::kSlice, ShapeOf(x->shape().element_type, dimensions), {x});
    slice->set_slice(std::move(starts), std::move(limits), std::move(strides));
    return Add(std::move(slice));
  }
  hlo::HloInstruction* Zero(hlo::PrimitiveType type) {
    return Add(hlo::HloInstruction::CreateConstant(hlo::Literal(ShapeOf(type, {}))));
  }
  hlo::HloInstruction* Pad(hlo::HloInstruction* x, const hlo::PaddingConfig& config) {
    std::vector<int64_t> dimensions = x->shape().dimensions;
    bool any = false;
    for (size_t d = 0; d < dimensions.size(); ++d) {
      const hlo::PaddingDimension& p = config.dimensions[d];
      dimensions[d] = p.edge_padding_low + p.edge_padding_high + dimensions[d] +
                      std::max<int64_t>(dimensions[d] - 1, 0) * p.interior_padding;
      any = any || !(p == hlo::PaddingDimension{});
    }
    if (!any) return x;
    auto pad = hlo::HloInstruction::Create(hlo::HloOpcode::kPad, ShapeOf(x->shape().element_type, dimensions),
                                           {x, Zero(x->shape().element_type)});
    pad->set_padding_config(config);
    return Add(std::move(pad));
  }
  // dot(lhs, rhs) over lhs dimension `lhs_contracting` (1: [M,K] x [K,N]; 0: [K,M] x [K,N]).
  hlo::HloInstruction* Dot(hlo::HloInstruction* lhs, hlo::HloInstruction* rhs, hlo::PrimitiveType type,
                           int64_t lhs_contracting = 1) {
    hlo::DotDimensionNumbers dnums;
    dnums.lhs_contracting_dimensions = {lhs_contracting};
    dnums.rhs_contracting_dimensions = {0};
    const int64_t rows = lhs->shape().dimensions[1 - lhs_contracting];
    hlo::HloInstruction* dot =
        Add(hlo::HloInstruction::CreateDot(ShapeOf(type, {rows, rhs->shape().dimensions[1]}), lhs, rhs, dnums));
    if (!dot_precision_.empty()) dot->set_raw_attribute("operand_precision", dot_precision_);
    return dot;
  }
  // The operand_precision every dot gets (the MXU passes the rewritten instruction asked for).
  void set_dot_precision(std::string precision) { dot_precision_ = std::move(precision); }
  hlo::HloInstruction* Binary(hlo::HloOpcode op, hlo::HloInstruction* a, hlo::HloInstruction* b) {
    return Add(hlo::HloInstruction::CreateBinary(a->shape(), op, a, b));
  }
  // acc + term, or term when there is no accumulator yet.
  hlo::HloInstruction* Accumulate(hlo::HloInstruction* acc, hlo::HloInstruction* term) {
    return acc == nullptr ? term : Binary(hlo::HloOpcode::kAdd, acc, term);
  }
  // The computation `op`(a, b) of two scalars of `type` (a reducer), added to `module` once and shared.
  static hlo::HloComputation* ScalarReducer(hlo::HloModule* module, hlo::HloOpcode op, hlo::PrimitiveType type) {
    const std::string name = std::string("reducer_") + hlo::HloOpcodeString(op) + "_" + hlo::PrimitiveTypeName(type);
    if (hlo::HloComputation* existing = module->GetComputationWithName(name)) return existing;
    auto computation = std::make_unique<hlo::HloComputation>(name);
    const hlo::Shape scalar = hlo::Shape::Make(type, {});
    hlo::HloInstruction* a = computation->AddInstruction(hlo::HloInstruction::CreateParameter(0, scalar, "a"));
    hlo::HloInstruction* b = computation->AddInstruction(hlo::HloInstruction::CreateParameter(1, scalar, "b"));
    computation->set_root_instruction(computation->AddInstruction(hlo::HloInstruction::CreateBinary(scalar, op, a, b)));
    return module->AddEmbeddedComputation(std::move(computation));
  }
  hlo::HloInstruction* Concatenate(const std::vector<hlo::HloInstruction*>& parts, int64_t dimension) {
    if (parts.size() == 1) return parts[0];
    std::vector<int64_t> dimensions = parts[0]->shape().dimensions;
    dimensions[dimension] = 0;
    for (const hlo::HloInstruction* part : parts) dimensions[dimension] += part->shape().dimensions[dimension];
    auto concatenate = hlo::HloInstruction::Create(hlo::HloOpcode::kConcatenate,
                                                   ShapeOf(parts[0]->shape().element_type, dimensions), parts);
    concatenate->set_dimensions({dimension});
    return Add(std::move(concatenate));
  }

 private:
  hlo::HloComputation* computation_;
  std::string dot_precision_;
};

// Elementwise operations of one shape (f32 unless said), with scalar constants broadcast to it: the
// arithmetic that expansion passes write out.
class ElementwiseBuilder {
 public:
  ElementwiseBuilder(hlo::HloComputation* computation, std::vector<int64_t> dimensions)
      : b_(computation), dimensions_(std::move(dimensions)) {}

  hlo::Shape Of(hlo::PrimitiveType type) const { return hlo::Shape::Make(type, dimensions_); }
  template <typename T>
  hlo::HloInstruction* Constant(T value) {
    hlo::HloInstruction* scalar = b_.Add(hlo::HloInstruction::CreateConstant(hlo::Literal::CreateR0<T>(value)));
    return b_.Add(hlo::HloInstruction::CreateBroadcast(Of(scalar->shape().element_type), scalar, {}));
  }
  hlo::HloInstruction* Unary(hlo::HloOpcode op, hlo::HloInstruction* a) {
    return b_.Add(hlo::HloInstruction::CreateUnary(Of(a->shape().element_type), op, a));
  }
  hlo::HloInstruction* Binary(hlo::HloOpcode op, hlo::HloInstruction* a, hlo::HloInstruction* b) {
    return b_.Add(hlo::HloInstruction::CreateBinary(Of(a->shape().element_type), op, a, b));
  }
  hlo::HloInstruction* Add(hlo::HloInstruction* a, hlo::HloInstruction* b) { return Binary(hlo::HloOpcode::kAdd, a, b); }
  hlo::HloInstruction* Sub(hlo::HloInstruction* a, hlo::HloInstruction* b) {
    return Binary(hlo::HloOpcode::kSubtract, a, b);
  }
  hlo::HloInstruction* Mul(hlo::HloInstruction* a, hlo::HloInstruction* b) {
    return Binary(hlo::HloOpcode::kMultiply, a, b);
  }
  hlo::HloInstruction* Div(hlo::HloInstruction* a, hlo::HloInstruction* b) { return Binary(hlo::HloOpcode::kDivide, a, b); }
  hlo::HloInstruction* Compare(hlo::HloInstruction* a, hlo::HloInstruction* b, hlo::ComparisonDirection direction) {
    return b_.Add(hlo::HloInstruction::CreateCompare(Of(hlo::PrimitiveType::PRED), a, b, direction));
  }
  hlo::HloInstruction* Select(hlo::HloInstruction* predicate, hlo::HloInstruction* on_true, hlo::HloInstruction* on_false) {
    return b_.Add(hlo::HloInstruction::CreateTernary(Of(on_true->shape().element_type), hlo::HloOpcode::kSelect,
                                                     predicate, on_true, on_false));
  }
  hlo::HloInstruction* Bitcast(hlo::HloInstruction* value, hlo::PrimitiveType type) {
    return b_.Add(hlo::HloInstruction::Create(hlo::HloOpcode::kBitcastConvert, Of(type), {value}));
  }
  // The f32 sign bit of `value` as an s32 word (0x80000000 or 0): -0 and NaN signs included.
  hlo::HloInstruction* SignBit(hlo::HloInstruction* value) {
    return Binary(hlo::HloOpcode::kAnd, Bitcast(value, hlo::PrimitiveType::S32), Constant<int32_t>(INT32_MIN));
  }
  // `magnitude` (non-negative) with the sign bit `sign` (SignBit) set on it: a copysign that keeps -0,
  // which a negate on the device does not (it keeps padded lanes +0).
  hlo::HloInstruction* WithSignBit(hlo::HloInstruction* magnitude, hlo::HloInstruction* sign) {
    return Bitcast(Binary(hlo::HloOpcode::kOr, Bitcast(magnitude, hlo::PrimitiveType::S32), sign),
                   hlo::PrimitiveType::F32);
  }
  // c[0] + c[1] z + ... + c[N-1] z^(N-1) by Horner's rule (the last coefficient first).
  template <size_t N>
  hlo::HloInstruction* Polynomial(hlo::HloInstruction* z, const float (&coefficients)[N]) {
    hlo::HloInstruction* p = Constant(coefficients[N - 1]);
    for (size_t i = N - 1; i-- > 0;) p = Add(Mul(p, z), Constant(coefficients[i]));
    return p;
  }
  // The s32 key of f32 words (`words`, s32) whose s32 order is the floats' total order: -NaN < -inf < ...
  // < -0 < +0 < ... < inf < NaN. The map is its own inverse (keys back to words).
  hlo::HloInstruction* TotalOrderKey(hlo::HloInstruction* words) {
    hlo::HloInstruction* negative = Compare(words, Constant<int32_t>(0), hlo::ComparisonDirection::kLt);
    return Select(negative, Binary(hlo::HloOpcode::kXor, words, Constant<int32_t>(INT32_MAX)), words);
  }
  HloBuilder& builder() { return b_; }

 private:
  HloBuilder b_;
  std::vector<int64_t> dimensions_;
};

}  // namespace tpu::compiler
