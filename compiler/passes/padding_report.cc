#include "compiler/passes/padding_report.h"

#include <algorithm>
#include <cstdio>

namespace tpu::compiler {
namespace {

using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::Shape;

int64_t RoundUp(int64_t value, int64_t multiple) {
  if (multiple <= 1 || value <= 0) return value;
  return (value + multiple - 1) / multiple * multiple;
}

uint64_t Product(const std::vector<int64_t>& dims, const std::vector<int64_t>& of) {
  uint64_t p = 1;
  for (int64_t d : of) p *= static_cast<uint64_t>(dims[static_cast<size_t>(d)]);
  return p;
}

std::vector<int64_t> FreeDimensions(int rank, const std::vector<int64_t>& batch, const std::vector<int64_t>& contracting) {
  std::vector<int64_t> result;
  for (int i = 0; i < rank; ++i)
    if (std::find(batch.begin(), batch.end(), i) == batch.end() &&
        std::find(contracting.begin(), contracting.end(), i) == contracting.end())
      result.push_back(i);
  return result;
}

// Pads the dimension among `candidates` that is minor-most in the shape's layout (the last one for the
// default row-major layout).
void PadMinorMost(Shape* shape, const std::vector<int64_t>& candidates, int64_t multiple) {
  if (candidates.empty()) return;
  int64_t chosen = candidates.back();
  if (!shape->minor_to_major.empty()) {
    for (int64_t d : shape->minor_to_major)
      if (std::find(candidates.begin(), candidates.end(), d) != candidates.end()) {
        chosen = d;
        break;
      }
  }
  shape->dimensions[static_cast<size_t>(chosen)] = RoundUp(shape->dimensions[static_cast<size_t>(chosen)], multiple);
}

PaddingEntry DotEntry(const HloInstruction& dot, const PaddingReportOptions& o) {
  PaddingEntry entry{dot.name(), HloOpcode::kDot, {}, 0, 0};
  const hlo::DotDimensionNumbers& d = dot.dot_dimension_numbers();
  const Shape& lhs = dot.operand(0)->shape();
  const Shape& rhs = dot.operand(1)->shape();
  std::vector<int64_t> lhs_free = FreeDimensions(lhs.rank(), d.lhs_batch_dimensions, d.lhs_contracting_dimensions);
  std::vector<int64_t> rhs_free = FreeDimensions(rhs.rank(), d.rhs_batch_dimensions, d.rhs_contracting_dimensions);
  Shape lhs_padded = lhs, rhs_padded = rhs, out_padded = dot.shape();
  PadMinorMost(&lhs_padded, lhs_free, o.batch_multiple);
  PadMinorMost(&lhs_padded, d.lhs_contracting_dimensions, o.feature_multiple);
  PadMinorMost(&rhs_padded, d.rhs_contracting_dimensions, o.feature_multiple);
  PadMinorMost(&rhs_padded, rhs_free, o.feature_multiple);
  // Output: batch dimensions, then lhs free, then rhs free dimensions.
  int64_t batch_count = static_cast<int64_t>(d.lhs_batch_dimensions.size());
  std::vector<int64_t> out_rows, out_columns;
  for (size_t i = 0; i < lhs_free.size(); ++i) out_rows.push_back(batch_count + static_cast<int64_t>(i));
  for (size_t i = 0; i < rhs_free.size(); ++i)
    out_columns.push_back(batch_count + static_cast<int64_t>(lhs_free.size() + i));
  PadMinorMost(&out_padded, out_rows, o.batch_multiple);
  PadMinorMost(&out_padded, out_columns, o.feature_multiple);
  entry.tensors = {{"lhs", lhs, lhs_padded}, {"rhs", rhs, rhs_padded}, {"output", dot.shape(), out_padded}};
  auto macs = [&](const Shape& l, const Shape& r) {
    return Product(l.dimensions, d.lhs_batch_dimensions) * Product(l.dimensions, lhs_free) *
           Product(l.dimensions, d.lhs_contracting_dimensions) * Product(r.dimensions, rhs_free);
  };
  entry.logical_macs = macs(lhs, rhs);
  entry.padded_macs = macs(lhs_padded, rhs_padded);
  return entry;
}

PaddingEntry ConvolutionEntry(const HloInstruction& conv, const PaddingReportOptions& o) {
  PaddingEntry entry{conv.name(), HloOpcode::kConvolution, {}, 0, 0};
  const hlo::ConvolutionDimensionNumbers& d = conv.convolution_dimension_numbers();
  const Shape& input = conv.operand(0)->shape();
  const Shape& kernel = conv.operand(1)->shape();
  const Shape& output = conv.shape();
  int64_t groups = std::max<int64_t>(conv.feature_group_count(), 1);
  // Features are padded per group: each group is its own matrix multiplication on the MXU.
  auto pad_features = [&](Shape* shape, int64_t dimension, int64_t per_group_divisor) {
    int64_t& size = shape->dimensions[static_cast<size_t>(dimension)];
    int64_t per_group = size / per_group_divisor;
    size = RoundUp(per_group, o.feature_multiple) * per_group_divisor;
  };
  Shape input_padded = input, kernel_padded = kernel, output_padded = output;
  input_padded.dimensions[static_cast<size_t>(d.input_batch_dimension)] =
      RoundUp(input.dimensions[static_cast<size_t>(d.input_batch_dimension)], o.batch_multiple);
  pad_features(&input_padded, d.input_feature_dimension, groups);
  pad_features(&kernel_padded, d.kernel_input_feature_dimension, 1);
  pad_features(&kernel_padded, d.kernel_output_feature_dimension, groups);
  output_padded.dimensions[static_cast<size_t>(d.output_batch_dimension)] =
      RoundUp(output.dimensions[static_cast<size_t>(d.output_batch_dimension)], o.batch_multiple);
  pad_features(&output_padded, d.output_feature_dimension, groups);
  entry.tensors = {{"input", input, input_padded}, {"kernel", kernel, kernel_padded}, {"output", output, output_padded}};
  auto macs = [&](const Shape& k, const Shape& out) {
    // Every output element sums kernel-input-features x window taps products.
    uint64_t taps = Product(k.dimensions, d.kernel_spatial_dimensions);
    return static_cast<uint64_t>(out.ElementCount()) * taps *
           static_cast<uint64_t>(k.dimensions[static_cast<size_t>(d.kernel_input_feature_dimension)]);
  };
  entry.logical_macs = macs(kernel, output);
  entry.padded_macs = macs(kernel_padded, output_padded);
  return entry;
}

double WastePercent(uint64_t logical, uint64_t padded) {
  return padded == 0 ? 0.0 : 100.0 * static_cast<double>(padded - logical) / static_cast<double>(padded);
}

std::string Percent(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.2f%%", value);
  return buffer;
}

std::string Pad(std::string text, size_t width) {
  if (text.size() < width) text.append(width - text.size(), ' ');
  return text;
}

}  // namespace

double PaddedTensor::waste_percent() const {
  return WastePercent(static_cast<uint64_t>(logical.ElementCount()), static_cast<uint64_t>(padded.ElementCount()));
}

double PaddingEntry::mac_waste_percent() const { return WastePercent(logical_macs, padded_macs); }

std::vector<PaddingEntry> ComputePaddingReport(const hlo::HloModule& module, const PaddingReportOptions& options) {
  std::vector<PaddingEntry> entries;
  for (const hlo::HloComputation* computation : module.computations()) {
    for (const HloInstruction* instruction : computation->instructions()) {
      if (instruction->operand_count() != 2 || !instruction->shape().IsArray() ||
          !instruction->operand(0)->shape().IsArray() || !instruction->operand(1)->shape().IsArray())
        continue;
      if (instruction->opcode() == HloOpcode::kDot) entries.push_back(DotEntry(*instruction, options));
      if (instruction->opcode() == HloOpcode::kConvolution && instruction->has_convolution_dimension_numbers())
        entries.push_back(ConvolutionEntry(*instruction, options));
    }
  }
  return entries;
}

std::string FormatPaddingReport(const std::vector<PaddingEntry>& entries, const PaddingReportOptions& options) {
  std::string out = "padding report: batch to a multiple of " + std::to_string(options.batch_multiple) +
                    ", features to a multiple of " + std::to_string(options.feature_multiple) + " (MXU)\n";
  uint64_t logical_elements = 0, padded_elements = 0, logical_macs = 0, padded_macs = 0;
  int64_t dots = 0, convolutions = 0;
  for (const PaddingEntry& entry : entries) {
    (entry.opcode == HloOpcode::kDot ? dots : convolutions)++;
    out += "%" + entry.instruction + " (" + hlo::HloOpcodeString(entry.opcode) + ")\n";
    for (const PaddedTensor& tensor : entry.tensors) {
      out += "  " + Pad(tensor.role, 7) + Pad(tensor.logical.ToString(), 24) + " -> " + Pad(tensor.padded.ToString(), 24) +
             " " + Percent(tensor.waste_percent()) + " padding\n";
      logical_elements += static_cast<uint64_t>(tensor.logical.ElementCount());
      padded_elements += static_cast<uint64_t>(tensor.padded.ElementCount());
    }
    out += "  " + Pad("MACs", 7) + Pad(std::to_string(entry.logical_macs), 24) + " -> " +
           Pad(std::to_string(entry.padded_macs), 24) + " " + Percent(entry.mac_waste_percent()) + " wasted\n";
    logical_macs += entry.logical_macs;
    padded_macs += entry.padded_macs;
  }
  out += "total: " + std::to_string(dots) + " dot(s), " + std::to_string(convolutions) + " convolution(s); elements " +
         std::to_string(logical_elements) + " -> " + std::to_string(padded_elements) + " (" +
         Percent(WastePercent(logical_elements, padded_elements)) + " padding); MACs " + std::to_string(logical_macs) +
         " -> " + std::to_string(padded_macs) + " (" + Percent(WastePercent(logical_macs, padded_macs)) + " wasted)\n";
  return out;
}

StatusOr<bool> PaddingReport::Run(hlo::HloModule* module) {
  if (options_.batch_multiple <= 0 || options_.feature_multiple <= 0)
    return InvalidArgument("padding multiples must be positive");
  entries_ = ComputePaddingReport(*module, options_);
  text_ = FormatPaddingReport(entries_, options_);
  return false;
}

}  // namespace tpu::compiler
