#include "compiler/hlo/verifier.h"

#include "compiler/hlo/attributes.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <string>
#include <unordered_map>

namespace tpu::hlo {

namespace {

std::string Describe(const HloInstruction& instruction) {
  return "instruction %" + instruction.name() + " (" + instruction.opcode_name() + ")";
}

Status ShapeError(const HloInstruction& instruction, const std::string& what) {
  return InvalidArgument(Describe(instruction) + ": " + what);
}

std::string IntsToString(const std::vector<int64_t>& values) {
  std::string out = "{";
  for (size_t i = 0; i < values.size(); ++i) out += (i ? "," : "") + std::to_string(values[i]);
  return out + "}";
}

// Output size of one windowed dimension (convolution, reduce-window).
int64_t WindowedOutputSize(int64_t input, const WindowDimension& w) {
  int64_t dilated_input = input == 0 ? 0 : (input - 1) * w.base_dilation + 1;
  int64_t padded = dilated_input + w.padding_low + w.padding_high;
  int64_t dilated_window = (w.size - 1) * w.window_dilation + 1;
  if (padded < dilated_window || w.stride <= 0) return 0;
  return (padded - dilated_window) / w.stride + 1;
}

Status CheckArray(const HloInstruction& instruction, int64_t operand_index) {
  if (!instruction.operand(operand_index)->shape().IsArray())
    return ShapeError(instruction, "operand " + std::to_string(operand_index) + " must be an array, not " +
                                       instruction.operand(operand_index)->shape().ToString());
  return OkStatus();
}

Status CheckWindow(const HloInstruction& instruction, int64_t rank) {
  const Window& window = instruction.window();
  if (static_cast<int64_t>(window.dimensions.size()) != rank)
    return ShapeError(instruction, "window has " + std::to_string(window.dimensions.size()) + " dimensions, expected " +
                                       std::to_string(rank));
  for (const WindowDimension& d : window.dimensions)
    if (d.size <= 0 || d.stride <= 0 || d.base_dilation <= 0 || d.window_dilation <= 0)
      return ShapeError(instruction, "window sizes, strides and dilations must be positive");
  return OkStatus();
}

}  // namespace

StatusOr<Shape> InferShape(const HloInstruction& instruction) {
  HloOpcode opcode = instruction.opcode();
  const Shape& own = instruction.shape();
  int arity = HloOpcodeArity(opcode);
  if (arity != kVariadicOperands && instruction.operand_count() != arity)
    return ShapeError(instruction, "expected " + std::to_string(arity) + " operand(s), got " +
                                       std::to_string(instruction.operand_count()));
  for (const HloInstruction* operand : instruction.operands())
    if (operand == nullptr) return ShapeError(instruction, "missing operand");
  auto operand_shape = [&](int64_t i) -> const Shape& { return instruction.operand(i)->shape(); };

  if (IsElementwiseUnary(opcode)) {
    TPU_RETURN_IF_ERROR(CheckArray(instruction, 0));
    Shape result = operand_shape(0);
    if (opcode == HloOpcode::kConvert || opcode == HloOpcode::kBitcastConvert) result.element_type = own.element_type;
    if (opcode == HloOpcode::kIsFinite) result.element_type = PrimitiveType::PRED;
    if (opcode == HloOpcode::kBitcastConvert) {
      // A change of width adds (to narrower) or drops (from narrower) a minor dimension of the ratio.
      const int64_t to = PrimitiveTypeByteSize(own.element_type);
      const int64_t from = PrimitiveTypeByteSize(operand_shape(0).element_type);
      if (to < from) {
        if (from % to != 0) return ShapeError(instruction, "element widths are not multiples of each other");
        result.dimensions.push_back(from / to);
      } else if (to > from) {
        if (to % from != 0 || result.rank() == 0 || result.dimensions.back() != to / from)
          return ShapeError(instruction, "a bitcast-convert to a wider type takes a minor dimension of " +
                                             std::to_string(to / std::max<int64_t>(from, 1)) + " words, not " +
                                             operand_shape(0).ToString());
        result.dimensions.pop_back();
      }
      if (to != from) result = Shape::Make(own.element_type, result.dimensions);
    }
    return result;
  }
  if (IsElementwiseBinary(opcode)) {
    TPU_RETURN_IF_ERROR(CheckArray(instruction, 0));
    TPU_RETURN_IF_ERROR(CheckArray(instruction, 1));
    const Shape& lhs = operand_shape(0);
    const Shape& rhs = operand_shape(1);
    if (lhs.dimensions != rhs.dimensions)
      return ShapeError(instruction, "operands must have the same dimensions, got " + lhs.ToString() + " and " +
                                         rhs.ToString());
    if (lhs.element_type != rhs.element_type)
      return ShapeError(instruction, "operands must have the same element type, got " + lhs.ToString() + " and " +
                                         rhs.ToString());
    Shape result = lhs;
    if (opcode == HloOpcode::kCompare) result.element_type = PrimitiveType::PRED;
    return result;
  }

  switch (opcode) {
    case HloOpcode::kInfeed:
      // (data, token) infeed(token): what the data is, only the instruction's own shape says.
      if (instruction.operand_count() != 1 || !operand_shape(0).IsToken())
        return ShapeError(instruction, "infeed takes one token operand");
      if (!own.IsTuple() || own.tuple_shapes.size() != 2 || !own.tuple_shapes[1].IsToken())
        return ShapeError(instruction, "an infeed's shape is (data, token[]), got " + own.ToString());
      return own;
    case HloOpcode::kOutfeed:
      if (instruction.operand_count() != 2 || !operand_shape(1).IsToken())
        return ShapeError(instruction, "outfeed takes the data and a token");
      return Shape::MakeToken();
    case HloOpcode::kAfterAll:
      for (int64_t i = 0; i < instruction.operand_count(); ++i) {
        if (!operand_shape(i).IsToken()) return ShapeError(instruction, "after-all takes tokens only");
      }
      return Shape::MakeToken();
    case HloOpcode::kRngBitGenerator:
      // (state, bits) rng-bit-generator(state): the state comes back with the same shape.
      if (!own.IsTuple() || own.tuple_shapes.size() != 2 || !own.tuple_shapes[1].IsArray() ||
          !operand_shape(0).IsArray() || own.tuple_shapes[0] != operand_shape(0))
        return ShapeError(instruction, "an rng-bit-generator of a " + operand_shape(0).ToString() +
                                           " state gives (" + operand_shape(0).ToString() + ", bits), not " +
                                           own.ToString());
      return own;
    case HloOpcode::kParameter:
    case HloOpcode::kIota:
    case HloOpcode::kRng:
    case HloOpcode::kPartitionId:
    case HloOpcode::kReplicaId:
    case HloOpcode::kUnknown:
      if (opcode == HloOpcode::kIota && (instruction.iota_dimension() < 0 || instruction.iota_dimension() >= own.rank()))
        return ShapeError(instruction, "iota_dimension " + std::to_string(instruction.iota_dimension()) +
                                           " out of range for " + own.ToString());
      return own;
    case HloOpcode::kConstant:
      if (instruction.has_literal()) return instruction.literal().shape();
      return own;
    case HloOpcode::kSelect: {
      for (int i = 0; i < 3; ++i) TPU_RETURN_IF_ERROR(CheckArray(instruction, i));
      const Shape& predicate = operand_shape(0);
      if (predicate.element_type != PrimitiveType::PRED)
        return ShapeError(instruction, "the predicate must be pred, got " + predicate.ToString());
      if (operand_shape(1) != operand_shape(2))
        return ShapeError(instruction, "on_true and on_false differ: " + operand_shape(1).ToString() + " vs " +
                                           operand_shape(2).ToString());
      if (predicate.rank() != 0 && predicate.dimensions != operand_shape(1).dimensions)
        return ShapeError(instruction, "the predicate " + predicate.ToString() + " does not match " +
                                           operand_shape(1).ToString());
      return operand_shape(1);
    }
    case HloOpcode::kClamp: {
      for (int i = 0; i < 3; ++i) TPU_RETURN_IF_ERROR(CheckArray(instruction, i));
      const Shape& value = operand_shape(1);
      for (int i : {0, 2}) {
        const Shape& bound = operand_shape(i);
        if (bound.element_type != value.element_type || (bound.rank() != 0 && bound.dimensions != value.dimensions))
          return ShapeError(instruction, "clamp bound " + bound.ToString() + " does not fit " + value.ToString());
      }
      return value;
    }
    case HloOpcode::kBroadcast: {
      TPU_RETURN_IF_ERROR(CheckArray(instruction, 0));
      const Shape& operand = operand_shape(0);
      const auto& dims = instruction.dimensions();
      if (static_cast<int>(dims.size()) != operand.rank())
        return ShapeError(instruction, "dimensions=" + IntsToString(dims) + " must have one entry per operand dimension of " +
                                           operand.ToString());
      for (size_t i = 0; i < dims.size(); ++i) {
        if (dims[i] < 0 || dims[i] >= own.rank() || own.dimensions[dims[i]] != operand.dimensions[i])
          return ShapeError(instruction, "operand dimension " + std::to_string(i) + " of " + operand.ToString() +
                                             " does not map onto dimension " + std::to_string(dims[i]) + " of " +
                                             own.ToString());
      }
      Shape result = own;
      result.element_type = operand.element_type;
      return result;
    }
    case HloOpcode::kReshape:
    case HloOpcode::kBitcast: {
      TPU_RETURN_IF_ERROR(CheckArray(instruction, 0));
      if (own.ElementCount() != operand_shape(0).ElementCount() && opcode == HloOpcode::kReshape)
        return ShapeError(instruction, "cannot reshape " + operand_shape(0).ToString() + " into " + own.ToString() +
                                           ": element counts differ");
      Shape result = own;
      if (opcode == HloOpcode::kReshape) result.element_type = operand_shape(0).element_type;
      return result;
    }
    case HloOpcode::kTranspose: {
      TPU_RETURN_IF_ERROR(CheckArray(instruction, 0));
      const Shape& operand = operand_shape(0);
      std::vector<int64_t> permutation = instruction.dimensions();
      std::vector<int64_t> sorted = permutation;
      std::sort(sorted.begin(), sorted.end());
      for (size_t i = 0; i < sorted.size(); ++i)
        if (sorted[i] != static_cast<int64_t>(i) || static_cast<int>(sorted.size()) != operand.rank())
          return ShapeError(instruction, "dimensions=" + IntsToString(permutation) + " is not a permutation of the operand's dimensions");
      if (static_cast<int>(sorted.size()) != operand.rank())
        return ShapeError(instruction, "dimensions=" + IntsToString(permutation) + " is not a permutation of the operand's dimensions");
      Shape result = Shape::Make(operand.element_type, {});
      for (int64_t p : permutation) result.dimensions.push_back(operand.dimensions[p]);
      return result;
    }
    case HloOpcode::kReverse: {
      TPU_RETURN_IF_ERROR(CheckArray(instruction, 0));
      std::vector<int64_t> reversed = instruction.dimensions();
      std::sort(reversed.begin(), reversed.end());
      for (size_t i = 0; i < reversed.size(); ++i) {
        if (reversed[i] < 0 || reversed[i] >= operand_shape(0).rank() || (i > 0 && reversed[i] == reversed[i - 1]))
          return ShapeError(instruction, "dimensions=" + IntsToString(instruction.dimensions()) +
                                             " are not distinct dimensions of the operand");
      }
      return operand_shape(0);
    }
    case HloOpcode::kCopy:
    case HloOpcode::kOptimizationBarrier:
      return operand_shape(0);
    case HloOpcode::kDot: {
      TPU_RETURN_IF_ERROR(CheckArray(instruction, 0));
      TPU_RETURN_IF_ERROR(CheckArray(instruction, 1));
      const Shape& lhs = operand_shape(0);
      const Shape& rhs = operand_shape(1);
      const DotDimensionNumbers& d = instruction.dot_dimension_numbers();
      auto in_range = [](const std::vector<int64_t>& dims, const Shape& shape) {
        for (int64_t x : dims)
          if (x < 0 || x >= shape.rank()) return false;
        return true;
      };
      if (!in_range(d.lhs_batch_dimensions, lhs) || !in_range(d.lhs_contracting_dimensions, lhs) ||
          !in_range(d.rhs_batch_dimensions, rhs) || !in_range(d.rhs_contracting_dimensions, rhs))
        return ShapeError(instruction, "dot dimension numbers out of range for " + lhs.ToString() + " x " + rhs.ToString());
      if (d.lhs_batch_dimensions.size() != d.rhs_batch_dimensions.size() ||
          d.lhs_contracting_dimensions.size() != d.rhs_contracting_dimensions.size())
        return ShapeError(instruction, "lhs and rhs must have as many batch and contracting dimensions");
      for (size_t i = 0; i < d.lhs_batch_dimensions.size(); ++i)
        if (lhs.dimensions[d.lhs_batch_dimensions[i]] != rhs.dimensions[d.rhs_batch_dimensions[i]])
          return ShapeError(instruction, "batch dimension sizes differ: " + lhs.ToString() + " x " + rhs.ToString());
      for (size_t i = 0; i < d.lhs_contracting_dimensions.size(); ++i)
        if (lhs.dimensions[d.lhs_contracting_dimensions[i]] != rhs.dimensions[d.rhs_contracting_dimensions[i]])
          return ShapeError(instruction, "contracting dimension sizes differ: " + lhs.ToString() + " x " + rhs.ToString());
      Shape result = Shape::Make(own.element_type, {});
      for (int64_t b : d.lhs_batch_dimensions) result.dimensions.push_back(lhs.dimensions[b]);
      auto add_free = [&](const Shape& shape, const std::vector<int64_t>& batch, const std::vector<int64_t>& contracting) {
        for (int i = 0; i < shape.rank(); ++i)
          if (std::find(batch.begin(), batch.end(), i) == batch.end() &&
              std::find(contracting.begin(), contracting.end(), i) == contracting.end())
            result.dimensions.push_back(shape.dimensions[i]);
      };
      add_free(lhs, d.lhs_batch_dimensions, d.lhs_contracting_dimensions);
      add_free(rhs, d.rhs_batch_dimensions, d.rhs_contracting_dimensions);
      return result;
    }
    case HloOpcode::kReduce: {
      int64_t count = instruction.operand_count();
      if (count < 2 || count % 2 != 0) return ShapeError(instruction, "reduce takes inputs and as many init values");
      int64_t inputs = count / 2;
      const Shape& first = operand_shape(0);
      std::vector<Shape> results;
      for (int64_t i = 0; i < inputs; ++i) {
        TPU_RETURN_IF_ERROR(CheckArray(instruction, i));
        if (operand_shape(i).dimensions != first.dimensions)
          return ShapeError(instruction, "reduce inputs must have the same dimensions");
        if (operand_shape(inputs + i).rank() != 0)
          return ShapeError(instruction, "init value " + std::to_string(i) + " must be a scalar");
        Shape result = Shape::Make(operand_shape(inputs + i).element_type, {});
        for (int d = 0; d < first.rank(); ++d)
          if (std::find(instruction.dimensions().begin(), instruction.dimensions().end(), d) == instruction.dimensions().end())
            result.dimensions.push_back(first.dimensions[d]);
        results.push_back(result);
      }
      for (int64_t d : instruction.dimensions())
        if (d < 0 || d >= first.rank())
          return ShapeError(instruction, "reduce dimension " + std::to_string(d) + " out of range for " + first.ToString());
      const HloComputation* reducer = instruction.to_apply();
      if (reducer == nullptr) return ShapeError(instruction, "reduce needs to_apply=");
      if (reducer->num_parameters() != 2 * inputs)
        return ShapeError(instruction, "to_apply=%" + reducer->name() + " must take " + std::to_string(2 * inputs) + " parameters");
      return inputs == 1 ? results[0] : Shape::MakeTuple(results);
    }
    case HloOpcode::kTuple: {
      std::vector<Shape> elements;
      for (const HloInstruction* operand : instruction.operands()) elements.push_back(operand->shape());
      return Shape::MakeTuple(std::move(elements));
    }
    case HloOpcode::kGetTupleElement: {
      const Shape& operand = operand_shape(0);
      if (!operand.IsTuple()) return ShapeError(instruction, "operand must be a tuple, not " + operand.ToString());
      int64_t index = instruction.tuple_index();
      if (index < 0 || index >= static_cast<int64_t>(operand.tuple_shapes.size()))
        return ShapeError(instruction, "index=" + std::to_string(index) + " out of range for " + operand.ToString());
      return operand.tuple_shapes[index];
    }
    case HloOpcode::kCall: {
      const HloComputation* callee = instruction.to_apply();
      if (callee == nullptr) return ShapeError(instruction, "call needs to_apply=");
      if (callee->num_parameters() != instruction.operand_count())
        return ShapeError(instruction, "to_apply=%" + callee->name() + " takes " + std::to_string(callee->num_parameters()) +
                                           " parameters, the call passes " + std::to_string(instruction.operand_count()));
      for (int64_t i = 0; i < instruction.operand_count(); ++i)
        if (operand_shape(i) != callee->parameter_instruction(i)->shape())
          return ShapeError(instruction, "operand " + std::to_string(i) + " " + operand_shape(i).ToString() +
                                             " does not match parameter " + callee->parameter_instruction(i)->shape().ToString());
      return callee->root_instruction()->shape();
    }
    case HloOpcode::kCustomCall:
      if (IsIdentityCustomCallTarget(instruction.custom_call_target())) {
        if (instruction.operand_count() != 1) return ShapeError(instruction, "an identity custom-call takes one operand");
        return operand_shape(0);
      }
      if (instruction.custom_call_target() == kExactF16Target) {
        if (instruction.operand_count() != 1 || !operand_shape(0).IsArray() ||
            operand_shape(0).element_type != PrimitiveType::F32 || !own.IsArray() ||
            own.element_type != PrimitiveType::F16 || own.dimensions != operand_shape(0).dimensions) {
          return ShapeError(instruction, "a custom-call to \"" + std::string(kExactF16Target) +
                                             "\" takes one f32 array and returns f16 of its dimensions");
        }
      }
      return own;
    case HloOpcode::kSlice: {
      TPU_RETURN_IF_ERROR(CheckArray(instruction, 0));
      const Shape& operand = operand_shape(0);
      if (static_cast<int>(instruction.slice_starts().size()) != operand.rank())
        return ShapeError(instruction, "slice needs one [start:limit:stride] per operand dimension");
      Shape result = Shape::Make(operand.element_type, {});
      for (int d = 0; d < operand.rank(); ++d) {
        int64_t start = instruction.slice_starts()[d], limit = instruction.slice_limits()[d],
                stride = instruction.slice_strides()[d];
        if (start < 0 || limit < start || limit > operand.dimensions[d] || stride <= 0)
          return ShapeError(instruction, "slice [" + std::to_string(start) + ":" + std::to_string(limit) + ":" +
                                             std::to_string(stride) + "] out of range for dimension " + std::to_string(d) +
                                             " of " + operand.ToString());
        result.dimensions.push_back((limit - start + stride - 1) / stride);
      }
      return result;
    }
    case HloOpcode::kDynamicSlice:
    case HloOpcode::kDynamicUpdateSlice: {
      // dynamic-slice(operand, starts...), dynamic_slice_sizes={...}; dynamic-update-slice(operand, update,
      // starts...): one scalar integer start per operand dimension.
      TPU_RETURN_IF_ERROR(CheckArray(instruction, 0));
      const Shape& operand = operand_shape(0);
      const bool update = opcode == HloOpcode::kDynamicUpdateSlice;
      const int64_t first_start = update ? 2 : 1;
      if (instruction.operand_count() != first_start + operand.rank())
        return ShapeError(instruction, std::string(update ? "dynamic-update-slice" : "dynamic-slice") + " needs " +
                                           std::to_string(operand.rank()) + " start indices, one per operand dimension");
      for (int64_t i = first_start; i < instruction.operand_count(); ++i) {
        const Shape& start = operand_shape(i);
        if (!start.IsArray() || start.rank() != 0 || !IsIntegralType(start.element_type))
          return ShapeError(instruction, "start index " + std::to_string(i - first_start) + " must be an integer scalar, not " +
                                             start.ToString());
      }
      std::vector<int64_t> sizes;
      if (update) {
        TPU_RETURN_IF_ERROR(CheckArray(instruction, 1));
        const Shape& values = operand_shape(1);
        if (values.rank() != operand.rank() || values.element_type != operand.element_type)
          return ShapeError(instruction, "the update " + values.ToString() + " must have the rank and type of " +
                                             operand.ToString());
        sizes = values.dimensions;
      } else {
        TPU_ASSIGN_OR_RETURN(sizes, GetDynamicSliceSizes(instruction));
        if (static_cast<int>(sizes.size()) != operand.rank())
          return ShapeError(instruction, "dynamic_slice_sizes needs one size per operand dimension");
      }
      for (int d = 0; d < operand.rank(); ++d) {
        if (sizes[d] < 0 || sizes[d] > operand.dimensions[d])
          return ShapeError(instruction, "size " + std::to_string(sizes[d]) + " out of range for dimension " +
                                             std::to_string(d) + " of " + operand.ToString());
      }
      return update ? Shape::Make(operand.element_type, operand.dimensions) : Shape::Make(operand.element_type, sizes);
    }
    case HloOpcode::kConcatenate: {
      if (instruction.operand_count() < 1) return ShapeError(instruction, "concatenate needs operands");
      int64_t dimension = instruction.concatenate_dimension();
      Shape result = operand_shape(0);
      if (dimension < 0 || dimension >= result.rank())
        return ShapeError(instruction, "concatenate dimension out of range");
      for (int64_t i = 1; i < instruction.operand_count(); ++i) {
        const Shape& other = operand_shape(i);
        if (other.rank() != result.rank() || other.element_type != result.element_type)
          return ShapeError(instruction, "concatenate operands must have equal ranks and element types");
        for (int d = 0; d < result.rank(); ++d)
          if (d != dimension && other.dimensions[d] != result.dimensions[d])
            return ShapeError(instruction, "concatenate operands differ outside dimension " + std::to_string(dimension));
        result.dimensions[dimension] += other.dimensions[dimension];
      }
      return result;
    }
    case HloOpcode::kPad: {
      TPU_RETURN_IF_ERROR(CheckArray(instruction, 0));
      const Shape& operand = operand_shape(0);
      if (operand_shape(1).rank() != 0) return ShapeError(instruction, "the padding value must be a scalar");
      const PaddingConfig& config = instruction.padding_config();
      if (static_cast<int>(config.dimensions.size()) != operand.rank())
        return ShapeError(instruction, "padding needs one entry per operand dimension");
      Shape result = Shape::Make(operand.element_type, {});
      for (int d = 0; d < operand.rank(); ++d) {
        const PaddingDimension& p = config.dimensions[d];
        if (p.interior_padding < 0) return ShapeError(instruction, "interior padding must be non-negative");
        int64_t size = operand.dimensions[d];
        int64_t out = p.edge_padding_low + p.edge_padding_high + size + std::max<int64_t>(size - 1, 0) * p.interior_padding;
        if (out < 0) return ShapeError(instruction, "padding makes dimension " + std::to_string(d) + " negative");
        result.dimensions.push_back(out);
      }
      return result;
    }
    case HloOpcode::kConvolution: {
      TPU_RETURN_IF_ERROR(CheckArray(instruction, 0));
      TPU_RETURN_IF_ERROR(CheckArray(instruction, 1));
      if (!instruction.has_convolution_dimension_numbers()) return ShapeError(instruction, "convolution needs dim_labels=");
      const Shape& input = operand_shape(0);
      const Shape& kernel = operand_shape(1);
      const ConvolutionDimensionNumbers& d = instruction.convolution_dimension_numbers();
      int64_t spatial = static_cast<int64_t>(d.input_spatial_dimensions.size());
      if (input.rank() != spatial + 2 || kernel.rank() != spatial + 2)
        return ShapeError(instruction, "dim_labels do not fit input " + input.ToString() + " and kernel " + kernel.ToString());
      TPU_RETURN_IF_ERROR(CheckWindow(instruction, spatial));
      int64_t groups = instruction.feature_group_count();
      int64_t batch_groups = instruction.batch_group_count();
      if (groups <= 0 || batch_groups <= 0) return ShapeError(instruction, "group counts must be positive");
      int64_t input_features = input.dimensions[d.input_feature_dimension];
      int64_t kernel_input = kernel.dimensions[d.kernel_input_feature_dimension];
      int64_t kernel_output = kernel.dimensions[d.kernel_output_feature_dimension];
      if (input_features != kernel_input * groups)
        return ShapeError(instruction, "input features " + std::to_string(input_features) + " != kernel input features " +
                                           std::to_string(kernel_input) + " * feature_group_count " + std::to_string(groups));
      if (kernel_output % groups != 0 || kernel_output % batch_groups != 0)
        return ShapeError(instruction, "kernel output features must divide by the group counts");
      for (int64_t s = 0; s < spatial; ++s)
        if (kernel.dimensions[d.kernel_spatial_dimensions[s]] != instruction.window().dimensions[s].size)
          return ShapeError(instruction, "window size does not match the kernel's spatial dimension " + std::to_string(s));
      Shape result = Shape::Make(own.element_type, std::vector<int64_t>(static_cast<size_t>(spatial + 2), 0));
      result.dimensions[d.output_batch_dimension] = input.dimensions[d.input_batch_dimension] / batch_groups;
      result.dimensions[d.output_feature_dimension] = kernel_output;
      for (int64_t s = 0; s < spatial; ++s)
        result.dimensions[d.output_spatial_dimensions[s]] =
            WindowedOutputSize(input.dimensions[d.input_spatial_dimensions[s]], instruction.window().dimensions[s]);
      return result;
    }
    case HloOpcode::kReduceWindow: {
      if (instruction.to_apply() == nullptr || instruction.to_apply()->num_parameters() != instruction.operand_count())
        return ShapeError(instruction, "reduce-window needs to_apply= taking " +
                                           std::to_string(instruction.operand_count()) + " parameters");
      if (instruction.operand_count() != 2) return own;  // variadic reduce-window: trust the text
      TPU_RETURN_IF_ERROR(CheckArray(instruction, 0));
      const Shape& operand = operand_shape(0);
      TPU_RETURN_IF_ERROR(CheckWindow(instruction, operand.rank()));
      Shape result = Shape::Make(operand_shape(1).element_type, {});
      for (int d = 0; d < operand.rank(); ++d)
        result.dimensions.push_back(WindowedOutputSize(operand.dimensions[d], instruction.window().dimensions[d]));
      return result;
    }
    case HloOpcode::kSort: {
      if (instruction.operand_count() < 1) return ShapeError(instruction, "sort needs operands");
      std::vector<Shape> elements;
      for (const HloInstruction* operand : instruction.operands()) {
        if (operand->shape().dimensions != operand_shape(0).dimensions)
          return ShapeError(instruction, "sort operands must have the same dimensions");
        elements.push_back(operand->shape());
      }
      if (instruction.dimensions().size() != 1 || instruction.dimensions(0) < 0 ||
          instruction.dimensions(0) >= operand_shape(0).rank())
        return ShapeError(instruction, "sort needs one dimension in range");
      return elements.size() == 1 ? elements[0] : Shape::MakeTuple(elements);
    }
    case HloOpcode::kTopK: {
      TPU_RETURN_IF_ERROR(CheckArray(instruction, 0));
      TPU_ASSIGN_OR_RETURN(TopKAttributes attributes, GetTopKAttributes(instruction));
      Shape values = operand_shape(0);
      values.dimensions.back() = attributes.k;
      Shape indices = Shape::Make(PrimitiveType::S32, values.dimensions);
      return Shape::MakeTuple({values, indices});
    }
    case HloOpcode::kSelectAndScatter: {
      TPU_RETURN_IF_ERROR(CheckArray(instruction, 0));
      TPU_RETURN_IF_ERROR(CheckArray(instruction, 1));
      const Shape& operand = operand_shape(0);
      TPU_RETURN_IF_ERROR(CheckWindow(instruction, operand.rank()));
      const HloComputation* select = nullptr;
      const HloComputation* scatter = nullptr;
      for (const auto& called : instruction.called_computation_attributes()) {
        if (called.attribute == "select") select = called.computation;
        if (called.attribute == "scatter") scatter = called.computation;
      }
      if (select == nullptr || scatter == nullptr) return ShapeError(instruction, "select-and-scatter needs select= and scatter=");
      if (select->num_parameters() != 2 || scatter->num_parameters() != 2)
        return ShapeError(instruction, "select= and scatter= must take two parameters");
      if (operand_shape(2).rank() != 0 || operand_shape(2).element_type != operand_shape(1).element_type)
        return ShapeError(instruction, "the init value must be a scalar of the source's element type");
      std::vector<int64_t> windows;
      for (int d = 0; d < operand.rank(); ++d)
        windows.push_back(WindowedOutputSize(operand.dimensions[d], instruction.window().dimensions[d]));
      if (windows != operand_shape(1).dimensions)
        return ShapeError(instruction, "source " + operand_shape(1).ToString() + " must have one element per window (" +
                                           IntsToString(windows) + ")");
      Shape result = operand;
      result.element_type = operand_shape(1).element_type;
      return result;
    }
    case HloOpcode::kFusion: {
      std::vector<HloComputation*> called = instruction.called_computations();
      if (called.size() != 1 || called[0] == nullptr) return ShapeError(instruction, "fusion needs one calls= computation");
      const std::string* kind = instruction.raw_attribute("kind");
      if (kind == nullptr || (*kind != "kLoop" && *kind != "kInput" && *kind != "kOutput" && *kind != "kCustom"))
        return ShapeError(instruction, "fusion needs kind=kLoop, kInput, kOutput or kCustom");
      const HloComputation* fused = called[0];
      if (fused->num_parameters() != instruction.operand_count())
        return ShapeError(instruction, "calls=%" + fused->name() + " takes " + std::to_string(fused->num_parameters()) +
                                           " parameters, the fusion passes " + std::to_string(instruction.operand_count()));
      for (int64_t i = 0; i < instruction.operand_count(); ++i)
        if (fused->parameter_instruction(i) == nullptr || operand_shape(i) != fused->parameter_instruction(i)->shape())
          return ShapeError(instruction, "operand " + std::to_string(i) + " " + operand_shape(i).ToString() +
                                             " does not match the fused parameter");
      if (fused->root_instruction() == nullptr) return ShapeError(instruction, "the fused computation has no root");
      return fused->root_instruction()->shape();
    }
    case HloOpcode::kWhile: {
      const HloComputation* condition = nullptr;
      const HloComputation* body = nullptr;
      for (const auto& called : instruction.called_computation_attributes()) {
        if (called.attribute == "condition") condition = called.computation;
        if (called.attribute == "body") body = called.computation;
      }
      if (condition == nullptr || body == nullptr) return ShapeError(instruction, "while needs condition= and body=");
      const Shape& state = operand_shape(0);
      for (const HloComputation* c : {condition, body})
        if (c->num_parameters() != 1 || c->parameter_instruction(0) == nullptr || c->parameter_instruction(0)->shape() != state)
          return ShapeError(instruction, "%" + c->name() + " must take one parameter of shape " + state.ToString());
      if (condition->root_instruction()->shape() != Shape::Make(PrimitiveType::PRED, {}))
        return ShapeError(instruction, "condition %" + condition->name() + " must return pred[]");
      if (body->root_instruction()->shape() != state)
        return ShapeError(instruction, "body %" + body->name() + " must return the loop state " + state.ToString());
      return state;
    }
    case HloOpcode::kConditional: {
      std::vector<HloComputation*> branches = instruction.called_computations();
      if (branches.empty() || instruction.operand_count() != static_cast<int64_t>(branches.size()) + 1)
        return ShapeError(instruction, "conditional needs one operand per branch after the selector");
      const Shape& selector = operand_shape(0);
      bool is_pred = selector.element_type == PrimitiveType::PRED;
      if (selector.rank() != 0 || !(is_pred || selector.element_type == PrimitiveType::S32))
        return ShapeError(instruction, "the branch selector must be pred[] or s32[], not " + selector.ToString());
      if (is_pred && branches.size() != 2) return ShapeError(instruction, "a pred selector needs two branches");
      for (size_t b = 0; b < branches.size(); ++b) {
        const HloComputation* branch = branches[b];
        if (branch->num_parameters() != 1 || branch->parameter_instruction(0) == nullptr ||
            branch->parameter_instruction(0)->shape() != operand_shape(static_cast<int64_t>(b) + 1))
          return ShapeError(instruction, "branch %" + branch->name() + " must take one parameter of its operand's shape");
        if (branch->root_instruction()->shape() != branches[0]->root_instruction()->shape())
          return ShapeError(instruction, "all branches must return the same shape");
      }
      return branches[0]->root_instruction()->shape();
    }
    case HloOpcode::kGather: {
      TPU_ASSIGN_OR_RETURN(GatherDimensionNumbers d, GetGatherDimensionNumbers(instruction));
      const Shape& indices = operand_shape(1);
      std::vector<int64_t> batch;
      for (int i = 0; i < indices.rank(); ++i)
        if (i != d.index_vector_dim) batch.push_back(indices.dimensions[i]);
      std::vector<int64_t> offsets;
      for (size_t i = 0; i < d.slice_sizes.size(); ++i)
        if (std::find(d.collapsed_slice_dims.begin(), d.collapsed_slice_dims.end(), static_cast<int64_t>(i)) ==
                d.collapsed_slice_dims.end() &&
            std::find(d.operand_batching_dims.begin(), d.operand_batching_dims.end(), static_cast<int64_t>(i)) ==
                d.operand_batching_dims.end())
          offsets.push_back(d.slice_sizes[i]);
      Shape result = Shape::Make(operand_shape(0).element_type, {});
      size_t next_batch = 0, next_offset = 0;
      for (size_t i = 0; i < batch.size() + offsets.size(); ++i) {
        bool is_offset = std::find(d.offset_dims.begin(), d.offset_dims.end(), static_cast<int64_t>(i)) != d.offset_dims.end();
        result.dimensions.push_back(is_offset ? offsets[next_offset++] : batch[next_batch++]);
      }
      return result;
    }
    case HloOpcode::kScatter: {
      TPU_RETURN_IF_ERROR(GetScatterDimensionNumbers(instruction).status());
      int64_t n = instruction.operand_count() / 2;
      const HloComputation* combiner = instruction.to_apply();
      if (combiner == nullptr || combiner->num_parameters() != 2 * n)
        return ShapeError(instruction, "scatter needs to_apply= taking " + std::to_string(2 * n) + " parameters");
      if (n == 1) return operand_shape(0);
      std::vector<Shape> elements;
      for (int64_t i = 0; i < n; ++i) elements.push_back(operand_shape(i));
      return Shape::MakeTuple(elements);
    }
    case HloOpcode::kAllReduce:
    case HloOpcode::kAllGather:
    case HloOpcode::kReduceScatter:
    case HloOpcode::kAllToAll:
    case HloOpcode::kCollectivePermute: {
      if (instruction.operand_count() < 1) return ShapeError(instruction, "a collective needs operands");
      for (int64_t i = 0; i < instruction.operand_count(); ++i) TPU_RETURN_IF_ERROR(CheckArray(instruction, i));
      int64_t group_size = 0;  // 0: all replicas, count unknown here
      if (opcode == HloOpcode::kCollectivePermute) {
        TPU_RETURN_IF_ERROR(GetSourceTargetPairs(instruction).status());
      } else {
        TPU_ASSIGN_OR_RETURN(auto groups, GetReplicaGroups(instruction));
        if (!groups.empty()) group_size = static_cast<int64_t>(groups[0].size());
      }
      if ((opcode == HloOpcode::kAllReduce || opcode == HloOpcode::kReduceScatter) &&
          (instruction.to_apply() == nullptr || instruction.to_apply()->num_parameters() != 2))
        return ShapeError(instruction, "needs to_apply= taking two parameters");
      std::vector<Shape> results;
      for (int64_t i = 0; i < instruction.operand_count(); ++i) {
        Shape result = operand_shape(i);
        if (opcode == HloOpcode::kAllGather || opcode == HloOpcode::kReduceScatter) {
          if (instruction.dimensions().size() != 1 || instruction.dimensions(0) < 0 || instruction.dimensions(0) >= result.rank())
            return ShapeError(instruction, "needs dimensions={d} within the operand rank");
          int64_t d = instruction.dimensions(0);
          const Shape& given = own.IsTuple() ? (i < static_cast<int64_t>(own.tuple_shapes.size()) ? own.tuple_shapes[i] : result)
                                             : own;
          int64_t size = group_size;
          // Without replica_groups the group is every replica: take the factor from the text when it divides.
          if (size == 0 && given.rank() == result.rank() && given.dimensions[d] > 0 && result.dimensions[d] > 0)
            size = opcode == HloOpcode::kAllGather ? given.dimensions[d] / result.dimensions[d]
                                                   : result.dimensions[d] / std::max<int64_t>(given.dimensions[d], 1);
          if (size <= 0) size = 1;
          if (opcode == HloOpcode::kAllGather) {
            result.dimensions[d] *= size;
          } else {
            if (result.dimensions[d] % size != 0)
              return ShapeError(instruction, "dimension " + std::to_string(d) + " does not divide by the group size " +
                                                 std::to_string(size));
            result.dimensions[d] /= size;
          }
        }
        results.push_back(result);
      }
      return results.size() == 1 ? results[0] : Shape::MakeTuple(results);
    }
    default:
      return own;
  }
}

std::vector<const HloInstruction*> FindOperandCycle(const HloComputation& computation) {
  enum class Mark { kOnPath, kDone };
  std::unordered_map<const HloInstruction*, Mark> marks;
  // Depth-first over operands; `path` holds the chain of users from the start to the current instruction,
  // so an operand already on the path closes a cycle made of the path's tail.
  std::vector<std::pair<const HloInstruction*, size_t>> path;  // instruction, next operand to visit
  for (const HloInstruction* start : computation.instructions()) {
    if (marks.count(start)) continue;
    path.emplace_back(start, 0);
    marks[start] = Mark::kOnPath;
    while (!path.empty()) {
      auto& [instruction, next] = path.back();
      if (next == instruction->operands().size()) {
        marks[instruction] = Mark::kDone;
        path.pop_back();
        continue;
      }
      const HloInstruction* operand = instruction->operands()[next++];
      if (operand == nullptr || operand->parent() != &computation) continue;
      auto mark = marks.find(operand);
      if (mark == marks.end()) {
        marks[operand] = Mark::kOnPath;
        path.emplace_back(operand, 0);
      } else if (mark->second == Mark::kOnPath) {
        std::vector<const HloInstruction*> cycle;
        auto first = std::find_if(path.begin(), path.end(), [&](const auto& entry) { return entry.first == operand; });
        for (auto it = first; it != path.end(); ++it) cycle.push_back(it->first);
        return cycle;
      }
    }
  }
  return {};
}

std::string DescribeOperandCycle(const std::vector<const HloInstruction*>& cycle) {
  if (cycle.empty()) return "no operand cycle";
  if (cycle.size() == 1) return "instruction %" + cycle[0]->name() + " uses itself as an operand";
  std::string names, uses;
  for (size_t i = 0; i < cycle.size(); ++i) {
    names += (i == 0 ? "%" : i + 1 == cycle.size() ? " and %" : ", %") + cycle[i]->name();
    uses += (i == 0 ? "%" : ", %") + cycle[i]->name() + " uses %" + cycle[(i + 1) % cycle.size()]->name();
  }
  return "instructions " + names + " form a cycle: " + uses;
}

namespace {

// The first element type of `shape` (recursively for tuples) that the TPU does not support, if any.
bool FindUnsupportedType(const Shape& shape, PrimitiveType* type) {
  if (shape.IsTuple()) {
    for (const Shape& element : shape.tuple_shapes)
      if (FindUnsupportedType(element, type)) return true;
    return false;
  }
  if (IsSupportedPrimitiveType(shape.element_type)) return false;
  *type = shape.element_type;
  return true;
}

Status CheckSupportedTypes(const HloInstruction& instruction) {
  PrimitiveType type;
  if (!FindUnsupportedType(instruction.shape(), &type)) return OkStatus();
  const std::string what = instruction.opcode() == HloOpcode::kParameter
                               ? "parameter " + instruction.name()
                               : "instruction %" + instruction.name() + " (" + instruction.opcode_name() + ")";
  return Unimplemented(std::string("element type ") + PrimitiveTypeName(type) + " of " + what +
                       " is not supported by this TPU");
}

// An array larger than int64 bytes cannot be held anywhere; Shape::ByteSize saturates there.
Status CheckRepresentableSize(const Shape& shape) {
  if (shape.IsTuple()) {
    for (const Shape& element : shape.tuple_shapes) TPU_RETURN_IF_ERROR(CheckRepresentableSize(element));
    return OkStatus();
  }
  if (shape.ByteSize() == std::numeric_limits<int64_t>::max())
    return InvalidArgument("shape " + shape.ToString() + " has more than 2^63 bytes");
  return OkStatus();
}

Status CheckStatic(const Shape& shape) {
  if (shape.IsTuple()) {
    for (const Shape& element : shape.tuple_shapes) TPU_RETURN_IF_ERROR(CheckStatic(element));
    return OkStatus();
  }
  for (int d = 0; d < shape.rank(); ++d)
    if (shape.is_dynamic_dimension(d) || shape.dimensions[d] < 0)
      return ValueError("shape " + shape.ToString() + " must have a fixed size for dimension " + std::to_string(d) +
                        " that is known at graph construction time.");
  return OkStatus();
}

bool ContainsType(const Shape& shape, PrimitiveType type) {
  if (shape.IsTuple())
    return std::any_of(shape.tuple_shapes.begin(), shape.tuple_shapes.end(),
                       [&](const Shape& s) { return ContainsType(s, type); });
  return shape.element_type == type;
}

Status CheckInfeedTypes(const Shape& shape, const VerifierOptions& options) {
  if (shape.IsTuple()) {
    for (const Shape& element : shape.tuple_shapes) TPU_RETURN_IF_ERROR(CheckInfeedTypes(element, options));
    return OkStatus();
  }
  PrimitiveType t = shape.element_type;
  bool allowed = t != PrimitiveType::F64;
  if (options.strict_infeed_types)
    allowed = t == PrimitiveType::F32 || t == PrimitiveType::S32 || t == PrimitiveType::BF16 || t == PrimitiveType::PRED;
  if (!allowed) return TypeError(std::string("DataType ") + PrimitiveTypeName(t) + " is not a supported TPU infeed type.");
  return OkStatus();
}

Status NotRegistered(const std::string& op, const HloInstruction& instruction) {
  return NotFound("No registered '" + op + "' OpKernel for XLA_TPU_JIT devices compatible with node " +
                  instruction.name() + DefinedAt(instruction));
}

Status VerifyInstruction(const HloInstruction& instruction, const VerifierOptions& options) {
  TPU_RETURN_IF_ERROR(CheckStatic(instruction.shape()));
  TPU_RETURN_IF_ERROR(CheckRepresentableSize(instruction.shape()));
  for (const HloInstruction* operand : instruction.operands())
    if (operand == nullptr) return InvalidArgument(Describe(instruction) + ": missing operand");
  HloOpcode opcode = instruction.opcode();
  bool is_entry_parameter = opcode == HloOpcode::kParameter && instruction.parent() != nullptr &&
                            instruction.parent()->IsEntryComputation();
  if (is_entry_parameter || opcode == HloOpcode::kInfeed) {
    TPU_RETURN_IF_ERROR(CheckInfeedTypes(instruction.shape(), options));
  } else if (ContainsType(instruction.shape(), PrimitiveType::F64)) {
    return InvalidArgument(Describe(instruction) + ": element type f64 is not supported on the TPU; convert to f32");
  }
  if (opcode == HloOpcode::kUnknown) return NotRegistered(instruction.opcode_name(), instruction);
  if (opcode == HloOpcode::kCustomCall && !IsIdentityCustomCallTarget(instruction.custom_call_target()))
    return NotRegistered(instruction.custom_call_target(), instruction);
  int arity = HloOpcodeArity(opcode);
  if (arity != kVariadicOperands && instruction.operand_count() != arity)
    return InvalidArgument(Describe(instruction) + ": expected " + std::to_string(arity) + " operand(s), got " +
                           std::to_string(instruction.operand_count()));
  for (const auto& called : instruction.called_computation_attributes())
    if (called.computation == nullptr)
      return InvalidArgument(Describe(instruction) + ": " + called.attribute + "= names no computation");
  TPU_ASSIGN_OR_RETURN(Shape inferred, InferShape(instruction));
  if (inferred != instruction.shape())
    return InvalidArgument(Describe(instruction) + ": shape " + instruction.shape().ToString() +
                           " does not match the inferred shape " + inferred.ToString());
  return OkStatus();
}

// Computations that call each other (a calls b, b calls a) would recurse without end in the inliner and
// the interpreter.
Status CheckNoCallCycle(const HloModule& module) {
  enum class Mark { kOnPath, kDone };
  std::unordered_map<const HloComputation*, Mark> marks;
  std::vector<const HloComputation*> path;
  std::function<Status(const HloComputation*)> visit = [&](const HloComputation* computation) -> Status {
    marks[computation] = Mark::kOnPath;
    path.push_back(computation);
    for (const HloInstruction* instruction : computation->instructions()) {
      for (const HloComputation* called : instruction->called_computations()) {
        if (called == nullptr) continue;
        auto mark = marks.find(called);
        if (mark == marks.end()) {
          TPU_RETURN_IF_ERROR(visit(called));
        } else if (mark->second == Mark::kOnPath) {
          std::string chain;
          for (auto it = std::find(path.begin(), path.end(), called); it != path.end(); ++it)
            chain += (*it)->name() + " calls ";
          return InvalidArgument("computations call each other: " + chain + called->name());
        }
      }
    }
    path.pop_back();
    marks[computation] = Mark::kDone;
    return OkStatus();
  };
  for (const HloComputation* computation : module.computations())
    if (!marks.count(computation)) TPU_RETURN_IF_ERROR(visit(computation));
  return OkStatus();
}

}  // namespace

Status VerifyHloModule(const HloModule& module, const VerifierOptions& options) {
  const HloComputation* entry = module.entry_computation();
  if (entry == nullptr) return InvalidArgument("module " + module.name() + " has no entry computation");
  // Entry parameters first: an unsupported input type is the first thing a user should hear about.
  for (const HloInstruction* parameter : entry->parameter_instructions()) {
    if (parameter == nullptr) return InvalidArgument("entry computation " + entry->name() + " is missing a parameter");
    TPU_RETURN_IF_ERROR(CheckSupportedTypes(*parameter));
    TPU_RETURN_IF_ERROR(CheckStatic(parameter->shape()));
    TPU_RETURN_IF_ERROR(CheckInfeedTypes(parameter->shape(), options));
  }
  // Element types no later check (or pass) knows how to handle, and operand cycles, which every walk
  // over the operands assumes away.
  for (const HloComputation* computation : module.computations()) {
    for (const HloInstruction* instruction : computation->instructions())
      TPU_RETURN_IF_ERROR(CheckSupportedTypes(*instruction));
    std::vector<const HloInstruction*> cycle = FindOperandCycle(*computation);
    if (!cycle.empty())
      return InvalidArgument("computation " + computation->name() + ": " + DescribeOperandCycle(cycle));
  }
  for (const HloComputation* computation : module.computations()) {
    if (computation->root_instruction() == nullptr)
      return InvalidArgument("computation " + computation->name() + " has no root instruction");
    for (int64_t i = 0; i < computation->num_parameters(); ++i)
      if (computation->parameter_instruction(i) == nullptr)
        return InvalidArgument("computation " + computation->name() + " has no parameter(" + std::to_string(i) + ")");
    std::vector<HloInstruction*> order = computation->MakeInstructionPostOrder();
    for (const HloInstruction* instruction : order) {
      for (const HloInstruction* operand : instruction->operands())
        if (operand != nullptr && operand->parent() != computation)
          return InvalidArgument(Describe(*instruction) + ": operand %" + operand->name() + " belongs to another computation");
      Status status = VerifyInstruction(*instruction, options);
      if (!status.ok()) return status;
    }
    for (const HloInstruction* instruction : computation->instructions())
      for (const HloComputation* called : instruction->called_computations())
        if (called == computation)
          return InvalidArgument(Describe(*instruction) + " calls its own computation");
  }
  TPU_RETURN_IF_ERROR(CheckNoCallCycle(module));
  for (const auto& alias : module.input_output_aliases())
    if (alias.parameter_number < 0 || alias.parameter_number >= entry->num_parameters())
      return InvalidArgument("input_output_alias names parameter " + std::to_string(alias.parameter_number) +
                             ", the entry has " + std::to_string(entry->num_parameters()));
  return OkStatus();
}

Status CheckTpuInfeedTypes(const Shape& shape) {
  VerifierOptions strict;
  strict.strict_infeed_types = true;
  return CheckInfeedTypes(shape, strict);
}

}  // namespace tpu::hlo
