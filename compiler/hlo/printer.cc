#include "compiler/hlo/printer.h"

#include <algorithm>

namespace tpu::hlo {

namespace {

std::string IntList(const std::vector<int64_t>& values) {
  std::string out = "{";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(values[i]);
  }
  return out + "}";
}

// Attributes XLA prints after the called computations (and after opcode-specific ones).
bool IsTrailingAttribute(const std::string& name) {
  static const char* const kTrailing[] = {"sharding", "frontend_attributes", "metadata", "backend_config",
                                          "control-predecessors", "statistics", "origin", "schedule",
                                          "result_accuracy"};
  return std::any_of(std::begin(kTrailing), std::end(kTrailing), [&](const char* n) { return name == n; });
}

void AppendOpcodeAttributes(const HloInstruction& instruction, std::vector<std::string>* attributes) {
  HloOpcode opcode = instruction.opcode();
  if (instruction.has_dimensions()) attributes->push_back("dimensions=" + IntList(instruction.dimensions()));
  switch (opcode) {
    case HloOpcode::kSlice: {
      std::string text = "slice={";
      for (size_t i = 0; i < instruction.slice_starts().size(); ++i) {
        if (i) text += ", ";
        text += "[" + std::to_string(instruction.slice_starts()[i]) + ":" + std::to_string(instruction.slice_limits()[i]);
        int64_t stride = i < instruction.slice_strides().size() ? instruction.slice_strides()[i] : 1;
        if (stride != 1) text += ":" + std::to_string(stride);
        text += "]";
      }
      attributes->push_back(text + "}");
      break;
    }
    case HloOpcode::kIota:
      attributes->push_back("iota_dimension=" + std::to_string(instruction.iota_dimension()));
      break;
    case HloOpcode::kGetTupleElement:
      attributes->push_back("index=" + std::to_string(instruction.tuple_index()));
      break;
    case HloOpcode::kDot: {
      const DotDimensionNumbers& d = instruction.dot_dimension_numbers();
      if (!d.lhs_batch_dimensions.empty()) attributes->push_back("lhs_batch_dims=" + IntList(d.lhs_batch_dimensions));
      if (!d.lhs_contracting_dimensions.empty())
        attributes->push_back("lhs_contracting_dims=" + IntList(d.lhs_contracting_dimensions));
      if (!d.rhs_batch_dimensions.empty()) attributes->push_back("rhs_batch_dims=" + IntList(d.rhs_batch_dimensions));
      if (!d.rhs_contracting_dimensions.empty())
        attributes->push_back("rhs_contracting_dims=" + IntList(d.rhs_contracting_dimensions));
      break;
    }
    case HloOpcode::kCompare:
      attributes->push_back(std::string("direction=") + ComparisonDirectionString(instruction.comparison_direction()));
      if (!instruction.comparison_type().empty()) attributes->push_back("type=" + instruction.comparison_type());
      break;
    case HloOpcode::kSort:
      if (instruction.is_stable()) attributes->push_back("is_stable=true");
      break;
    default:
      break;
  }
  if (instruction.has_window() && !instruction.window().dimensions.empty())
    attributes->push_back("window={" + WindowToString(instruction.window()) + "}");
  if (instruction.has_padding_config())
    attributes->push_back("padding=" + PaddingConfigToString(instruction.padding_config()));
  if (instruction.has_convolution_dimension_numbers())
    attributes->push_back("dim_labels=" + ConvolutionDimensionNumbersToString(instruction.convolution_dimension_numbers()));
  if (instruction.feature_group_count() != 1)
    attributes->push_back("feature_group_count=" + std::to_string(instruction.feature_group_count()));
  if (instruction.batch_group_count() != 1)
    attributes->push_back("batch_group_count=" + std::to_string(instruction.batch_group_count()));
  if (opcode == HloOpcode::kCustomCall || !instruction.custom_call_target().empty()) {
    std::string escaped;
    for (char c : instruction.custom_call_target()) {
      if (c == '"' || c == '\\') escaped += '\\';
      escaped += c;
    }
    attributes->push_back("custom_call_target=\"" + escaped + "\"");
  }
}

void AppendCalledComputations(const HloInstruction& instruction, std::vector<std::string>* attributes) {
  const auto& called = instruction.called_computation_attributes();
  for (size_t i = 0; i < called.size();) {
    size_t j = i;
    while (j < called.size() && called[j].attribute == called[i].attribute) ++j;
    auto name = [](const HloComputation* c) { return "%" + (c != nullptr ? c->name() : std::string("null")); };
    if (j - i == 1 && called[i].attribute != "branch_computations") {
      attributes->push_back(called[i].attribute + "=" + name(called[i].computation));
    } else {
      std::string text = called[i].attribute + "={";
      for (size_t k = i; k < j; ++k) {
        if (k > i) text += ", ";
        text += name(called[k].computation);
      }
      attributes->push_back(text + "}");
    }
    i = j;
  }
}

}  // namespace

std::string PrintHloInstruction(const HloInstruction& instruction) {
  std::string out;
  if (instruction.IsRoot()) out += "ROOT ";
  out += "%" + instruction.name() + " = " + instruction.shape().ToString(/*print_layout=*/true) + " " +
         instruction.opcode_name() + "(";
  switch (instruction.opcode()) {
    case HloOpcode::kParameter:
      out += std::to_string(instruction.parameter_number());
      break;
    case HloOpcode::kConstant:
      out += instruction.has_literal() ? instruction.literal().ValuesToString() : "{...}";
      break;
    default:
      for (int64_t i = 0; i < instruction.operand_count(); ++i) {
        if (i) out += ", ";
        if (i > 0 && i % 5 == 0) out += "/*index=" + std::to_string(i) + "*/";
        const HloInstruction* operand = instruction.operand(i);
        out += operand->shape().ToString(true) + " %" + operand->name();
      }
  }
  out += ")";

  std::vector<std::string> attributes;
  AppendOpcodeAttributes(instruction, &attributes);
  for (const auto& [name, value] : instruction.raw_attributes())
    if (!IsTrailingAttribute(name)) attributes.push_back(name + "=" + value);
  AppendCalledComputations(instruction, &attributes);
  for (const auto& [name, value] : instruction.raw_attributes())
    if (IsTrailingAttribute(name)) attributes.push_back(name + "=" + value);
  for (const std::string& attribute : attributes) out += ", " + attribute;
  return out;
}

std::string PrintHloComputation(const HloComputation& computation) {
  std::string out;
  if (computation.IsEntryComputation()) out += "ENTRY ";
  out += computation.SignatureString() + " {\n";
  for (const HloInstruction* instruction : computation.MakeInstructionPostOrder())
    out += "  " + PrintHloInstruction(*instruction) + "\n";
  out += "}\n";
  return out;
}

namespace {
std::string InputOutputAliasText(const std::vector<InputOutputAlias>& aliases) {
  std::string out = "{ ";
  for (size_t i = 0; i < aliases.size(); ++i) {
    const InputOutputAlias& alias = aliases[i];
    if (i) out += ", ";
    out += IntList(alias.output_index) + ": (" + std::to_string(alias.parameter_number) + ", " +
           IntList(alias.parameter_index);
    if (!alias.kind.empty()) out += ", " + alias.kind;
    out += ")";
  }
  return out + " }";
}
}  // namespace

std::string PrintHloModule(const HloModule& module) {
  std::string out = "HloModule " + module.name();
  bool printed_alias = false;
  for (const auto& [name, value] : module.raw_attributes()) {
    if (name == "input_output_alias") {
      if (!module.input_output_aliases().empty() && !printed_alias)
        out += ", input_output_alias=" + InputOutputAliasText(module.input_output_aliases());
      printed_alias = true;
      continue;
    }
    out += ", " + name + "=" + value;
  }
  if (!printed_alias && !module.input_output_aliases().empty())
    out += ", input_output_alias=" + InputOutputAliasText(module.input_output_aliases());
  out += "\n\n";
  for (const HloComputation* computation : module.computations()) out += PrintHloComputation(*computation) + "\n";
  return out;
}

}  // namespace tpu::hlo
