#include "compiler/hlo/hlo_ir.h"

#include <cstdlib>
#include <algorithm>
#include <map>
#include <unordered_set>

#include "compiler/hlo/printer.h"

namespace tpu::hlo {

namespace {
constexpr const char* kDirectionNames[] = {"EQ", "NE", "GE", "GT", "LE", "LT"};

}  // namespace

const char* ComparisonDirectionString(ComparisonDirection direction) {
  return kDirectionNames[static_cast<int>(direction)];
}

bool ComparisonDirectionFromString(std::string_view text, ComparisonDirection* direction) {
  for (int i = 0; i < 6; ++i) {
    if (text == kDirectionNames[i]) {
      *direction = static_cast<ComparisonDirection>(i);
      return true;
    }
  }
  return false;
}

std::string WindowToString(const Window& window) {
  auto field = [&](auto get) {
    std::string out;
    for (size_t i = 0; i < window.dimensions.size(); ++i) {
      if (i) out += 'x';
      out += get(window.dimensions[i]);
    }
    return out;
  };
  auto any = [&](auto predicate) {
    return std::any_of(window.dimensions.begin(), window.dimensions.end(), predicate);
  };
  std::string out = "size=" + field([](const WindowDimension& d) { return std::to_string(d.size); });
  if (any([](const WindowDimension& d) { return d.stride != 1; }))
    out += " stride=" + field([](const WindowDimension& d) { return std::to_string(d.stride); });
  if (any([](const WindowDimension& d) { return d.padding_low != 0 || d.padding_high != 0; }))
    out += " pad=" + field([](const WindowDimension& d) {
      return std::to_string(d.padding_low) + "_" + std::to_string(d.padding_high);
    });
  if (any([](const WindowDimension& d) { return d.base_dilation != 1; }))
    out += " lhs_dilate=" + field([](const WindowDimension& d) { return std::to_string(d.base_dilation); });
  if (any([](const WindowDimension& d) { return d.window_dilation != 1; }))
    out += " rhs_dilate=" + field([](const WindowDimension& d) { return std::to_string(d.window_dilation); });
  if (any([](const WindowDimension& d) { return d.window_reversal; }))
    out += " rhs_reversal=" + field([](const WindowDimension& d) { return std::string(d.window_reversal ? "1" : "0"); });
  return out;
}

bool ConvolutionDimensionNumbers::operator==(const ConvolutionDimensionNumbers& o) const {
  return input_batch_dimension == o.input_batch_dimension && input_feature_dimension == o.input_feature_dimension &&
         input_spatial_dimensions == o.input_spatial_dimensions &&
         kernel_input_feature_dimension == o.kernel_input_feature_dimension &&
         kernel_output_feature_dimension == o.kernel_output_feature_dimension &&
         kernel_spatial_dimensions == o.kernel_spatial_dimensions &&
         output_batch_dimension == o.output_batch_dimension && output_feature_dimension == o.output_feature_dimension &&
         output_spatial_dimensions == o.output_spatial_dimensions;
}

std::string ConvolutionDimensionNumbersToString(const ConvolutionDimensionNumbers& d) {
  auto labels = [](size_t rank, int64_t first, char first_label, int64_t second, char second_label,
                   const std::vector<int64_t>& spatial) {
    std::string out(std::max<size_t>(rank, 0), '?');
    auto put = [&](int64_t index, char label) {
      if (index >= 0 && index < static_cast<int64_t>(out.size())) out[index] = label;
    };
    put(first, first_label);
    put(second, second_label);
    for (size_t i = 0; i < spatial.size(); ++i) put(spatial[i], static_cast<char>('0' + i));
    return out;
  };
  size_t rank = d.input_spatial_dimensions.size() + 2;
  return labels(rank, d.input_batch_dimension, 'b', d.input_feature_dimension, 'f', d.input_spatial_dimensions) + "_" +
         labels(rank, d.kernel_input_feature_dimension, 'i', d.kernel_output_feature_dimension, 'o',
                d.kernel_spatial_dimensions) +
         "->" +
         labels(rank, d.output_batch_dimension, 'b', d.output_feature_dimension, 'f', d.output_spatial_dimensions);
}

std::string PaddingConfigToString(const PaddingConfig& config) {
  std::string out;
  for (size_t i = 0; i < config.dimensions.size(); ++i) {
    const PaddingDimension& d = config.dimensions[i];
    if (i) out += 'x';
    out += std::to_string(d.edge_padding_low) + "_" + std::to_string(d.edge_padding_high);
    if (d.interior_padding != 0) out += "_" + std::to_string(d.interior_padding);
  }
  return out;
}

bool HasSideEffect(HloOpcode opcode) {
  switch (opcode) {
    case HloOpcode::kInfeed:
    case HloOpcode::kOutfeed:
    case HloOpcode::kSend:
    case HloOpcode::kSendDone:
    case HloOpcode::kRecv:
    case HloOpcode::kRecvDone:
    case HloOpcode::kRng:
    case HloOpcode::kRngGetAndUpdateState:
    case HloOpcode::kAllReduce:
    case HloOpcode::kAllGather:
    case HloOpcode::kAllToAll:
    case HloOpcode::kReduceScatter:
    case HloOpcode::kCollectivePermute:
      return true;
    default:
      return false;
  }
}

bool IsIdentityCustomCallTarget(std::string_view target) { return target == "AwsNeuronTransferWithStaticRing"; }

// ---------------------------------------------------------------------------------------------------
// HloInstruction

HloInstruction::HloInstruction(HloOpcode opcode, const Shape& shape)
    : opcode_(opcode), opcode_name_(HloOpcodeString(opcode)), shape_(shape) {}

std::unique_ptr<HloInstruction> HloInstruction::Create(HloOpcode opcode, const Shape& shape,
                                                       std::vector<HloInstruction*> operands, std::string name) {
  std::unique_ptr<HloInstruction> instruction(new HloInstruction(opcode, shape));
  instruction->operands_ = std::move(operands);
  instruction->name_ = std::move(name);
  return instruction;
}

std::unique_ptr<HloInstruction> HloInstruction::CreateParameter(int64_t number, const Shape& shape, std::string name) {
  auto instruction = Create(HloOpcode::kParameter, shape, {}, std::move(name));
  instruction->parameter_number_ = number;
  return instruction;
}

std::unique_ptr<HloInstruction> HloInstruction::CreateConstant(Literal literal, std::string name) {
  auto instruction = Create(HloOpcode::kConstant, literal.shape(), {}, std::move(name));
  if (!instruction->shape_.IsTuple() && instruction->shape_.minor_to_major.empty())
    instruction->shape_.minor_to_major = DefaultMinorToMajor(instruction->shape_.rank());
  instruction->set_literal(std::move(literal));
  return instruction;
}

std::unique_ptr<HloInstruction> HloInstruction::CreateUnary(const Shape& shape, HloOpcode opcode,
                                                            HloInstruction* operand) {
  return Create(opcode, shape, {operand});
}

std::unique_ptr<HloInstruction> HloInstruction::CreateBinary(const Shape& shape, HloOpcode opcode, HloInstruction* lhs,
                                                             HloInstruction* rhs) {
  return Create(opcode, shape, {lhs, rhs});
}

std::unique_ptr<HloInstruction> HloInstruction::CreateTernary(const Shape& shape, HloOpcode opcode, HloInstruction* a,
                                                              HloInstruction* b, HloInstruction* c) {
  return Create(opcode, shape, {a, b, c});
}

std::unique_ptr<HloInstruction> HloInstruction::CreateCompare(const Shape& shape, HloInstruction* lhs,
                                                              HloInstruction* rhs, ComparisonDirection direction) {
  auto instruction = Create(HloOpcode::kCompare, shape, {lhs, rhs});
  instruction->comparison_direction_ = direction;
  return instruction;
}

std::unique_ptr<HloInstruction> HloInstruction::CreateBroadcast(const Shape& shape, HloInstruction* operand,
                                                                std::vector<int64_t> dimensions) {
  auto instruction = Create(HloOpcode::kBroadcast, shape, {operand});
  instruction->set_dimensions(std::move(dimensions));
  return instruction;
}

std::unique_ptr<HloInstruction> HloInstruction::CreateReshape(const Shape& shape, HloInstruction* operand) {
  return Create(HloOpcode::kReshape, shape, {operand});
}

std::unique_ptr<HloInstruction> HloInstruction::CreateTranspose(const Shape& shape, HloInstruction* operand,
                                                                std::vector<int64_t> dimensions) {
  auto instruction = Create(HloOpcode::kTranspose, shape, {operand});
  instruction->set_dimensions(std::move(dimensions));
  return instruction;
}

std::unique_ptr<HloInstruction> HloInstruction::CreateDot(const Shape& shape, HloInstruction* lhs, HloInstruction* rhs,
                                                          const DotDimensionNumbers& dnums) {
  auto instruction = Create(HloOpcode::kDot, shape, {lhs, rhs});
  instruction->dot_dimension_numbers_ = dnums;
  return instruction;
}

std::unique_ptr<HloInstruction> HloInstruction::CreateReduce(const Shape& shape, HloInstruction* operand,
                                                             HloInstruction* init_value,
                                                             std::vector<int64_t> dimensions,
                                                             HloComputation* reducer) {
  auto instruction = Create(HloOpcode::kReduce, shape, {operand, init_value});
  instruction->set_dimensions(std::move(dimensions));
  instruction->set_to_apply(reducer);
  return instruction;
}

std::unique_ptr<HloInstruction> HloInstruction::CreateTuple(std::vector<HloInstruction*> elements) {
  std::vector<Shape> shapes;
  for (HloInstruction* element : elements) shapes.push_back(element->shape());
  return Create(HloOpcode::kTuple, Shape::MakeTuple(std::move(shapes)), std::move(elements));
}

std::unique_ptr<HloInstruction> HloInstruction::CreateGetTupleElement(HloInstruction* operand, int64_t index) {
  Shape shape = operand->shape().IsTuple() && index >= 0 &&
                        index < static_cast<int64_t>(operand->shape().tuple_shapes.size())
                    ? operand->shape().tuple_shapes[index]
                    : Shape();
  auto instruction = Create(HloOpcode::kGetTupleElement, shape, {operand});
  instruction->tuple_index_ = index;
  return instruction;
}

std::unique_ptr<HloInstruction> HloInstruction::CreateConvert(const Shape& shape, HloInstruction* operand) {
  return Create(HloOpcode::kConvert, shape, {operand});
}

std::unique_ptr<HloInstruction> HloInstruction::CreateIota(const Shape& shape, int64_t iota_dimension) {
  auto instruction = Create(HloOpcode::kIota, shape, {});
  instruction->iota_dimension_ = iota_dimension;
  return instruction;
}

std::unique_ptr<HloInstruction> HloInstruction::CreateCall(const Shape& shape, std::vector<HloInstruction*> operands,
                                                           HloComputation* computation) {
  auto instruction = Create(HloOpcode::kCall, shape, std::move(operands));
  instruction->set_to_apply(computation);
  return instruction;
}

void HloInstruction::AddUser(HloInstruction* user) {
  if (std::find(users_.begin(), users_.end(), user) == users_.end()) users_.push_back(user);
}

void HloInstruction::RemoveUser(HloInstruction* user) {
  users_.erase(std::remove(users_.begin(), users_.end(), user), users_.end());
}

void HloInstruction::AppendOperand(HloInstruction* operand) {
  operands_.push_back(operand);
  if (parent_ != nullptr) operand->AddUser(this);
}

Status HloInstruction::ReplaceOperandWith(int64_t i, HloInstruction* new_operand) {
  if (i < 0 || i >= operand_count()) return InvalidArgument("operand index " + std::to_string(i) + " out of range for " + name_);
  HloInstruction* old_operand = operands_[i];
  operands_[i] = new_operand;
  if (parent_ != nullptr) {
    if (std::find(operands_.begin(), operands_.end(), old_operand) == operands_.end()) old_operand->RemoveUser(this);
    new_operand->AddUser(this);
  }
  return OkStatus();
}

Status HloInstruction::ReplaceAllUsesWith(HloInstruction* replacement) {
  if (replacement == this) return OkStatus();
  if (!(replacement->shape() == shape_))
    return InvalidArgument("cannot replace " + name_ + " (" + shape_.ToString() + ") with " + replacement->name() +
                           " (" + replacement->shape().ToString() + "): shapes differ");
  std::vector<HloInstruction*> users = users_;
  for (HloInstruction* user : users) {
    for (auto& operand : user->operands_)
      if (operand == this) operand = replacement;
    replacement->AddUser(user);
  }
  users_.clear();
  if (parent_ != nullptr && parent_->root_instruction() == this) parent_->set_root_instruction(replacement);
  return OkStatus();
}

void HloInstruction::set_name(std::string name) {
  if (parent_ != nullptr) {
    auto it = parent_->by_name_.find(name_);
    if (it != parent_->by_name_.end() && it->second == this) parent_->by_name_.erase(it);
    parent_->by_name_[name] = this;
  }
  name_ = std::move(name);
}

bool HloInstruction::IsRoot() const { return parent_ != nullptr && parent_->root_instruction() == this; }

void HloInstruction::set_slice(std::vector<int64_t> starts, std::vector<int64_t> limits, std::vector<int64_t> strides) {
  slice_starts_ = std::move(starts);
  slice_limits_ = std::move(limits);
  slice_strides_ = std::move(strides);
}

std::vector<HloComputation*> HloInstruction::called_computations() const {
  std::vector<HloComputation*> result;
  for (const CalledComputation& called : called_) result.push_back(called.computation);
  return result;
}

HloComputation* HloInstruction::to_apply() const { return called_computation("to_apply"); }

HloComputation* HloInstruction::called_computation(std::string_view attribute) const {
  for (const CalledComputation& called : called_)
    if (called.attribute == attribute) return called.computation;
  return nullptr;
}

void HloInstruction::SetCalledComputation(const std::string& attribute, HloComputation* computation) {
  for (CalledComputation& called : called_) {
    if (called.attribute == attribute) {
      called.computation = computation;
      return;
    }
  }
  called_.push_back({attribute, computation});
}

const std::string* HloInstruction::raw_attribute(std::string_view name) const {
  for (const auto& [key, value] : raw_attributes_)
    if (key == name) return &value;
  return nullptr;
}

void HloInstruction::set_raw_attribute(const std::string& name, std::string value) {
  for (auto& [key, existing] : raw_attributes_) {
    if (key == name) {
      existing = std::move(value);
      return;
    }
  }
  raw_attributes_.emplace_back(name, std::move(value));
}

void HloInstruction::remove_raw_attribute(std::string_view name) {
  raw_attributes_.erase(std::remove_if(raw_attributes_.begin(), raw_attributes_.end(),
                                       [&](const auto& entry) { return entry.first == name; }),
                        raw_attributes_.end());
}

std::unique_ptr<HloInstruction> HloInstruction::CloneWithNewOperands(const Shape& shape,
                                                                     std::vector<HloInstruction*> operands) const {
  std::unique_ptr<HloInstruction> clone(new HloInstruction(*this));
  clone->shape_ = shape;
  clone->operands_ = std::move(operands);
  clone->users_.clear();
  clone->parent_ = nullptr;
  return clone;
}

bool HloInstruction::HasSideEffect() const {
  if (hlo::HasSideEffect(opcode_)) return true;
  std::unordered_set<const HloComputation*> seen;
  std::vector<const HloComputation*> stack;
  for (const CalledComputation& called : called_)
    if (called.computation != nullptr) stack.push_back(called.computation);
  while (!stack.empty()) {
    const HloComputation* computation = stack.back();
    stack.pop_back();
    if (!seen.insert(computation).second) continue;
    for (const HloInstruction* instruction : computation->instructions()) {
      if (hlo::HasSideEffect(instruction->opcode())) return true;
      for (const CalledComputation& called : instruction->called_)
        if (called.computation != nullptr) stack.push_back(called.computation);
    }
  }
  return false;
}

std::string HloInstruction::ToString() const { return PrintHloInstruction(*this); }

// ---------------------------------------------------------------------------------------------------
// HloComputation

bool HloComputation::IsEntryComputation() const { return parent_ != nullptr && parent_->entry_computation() == this; }

std::string HloComputation::UniqueName(std::string_view base) {
  std::string name;
  do {
    name = std::string(base) + "." + std::to_string(next_unique_id_++);
  } while (GetInstructionWithName(name) != nullptr);
  return name;
}

HloInstruction* HloComputation::AddInstruction(std::unique_ptr<HloInstruction> instruction) {
  HloInstruction* raw = instruction.get();
  if (raw->name_.empty() || GetInstructionWithName(raw->name_) != nullptr) {
    std::string base = raw->name_.empty() ? raw->opcode_name_ : raw->name_;
    raw->name_ = UniqueName(base);
  }
  raw->parent_ = this;
  for (HloInstruction* operand : raw->operands_) operand->AddUser(raw);
  if (raw->opcode_ == HloOpcode::kParameter && raw->parameter_number_ >= 0) {
    if (static_cast<int64_t>(parameters_.size()) <= raw->parameter_number_)
      parameters_.resize(static_cast<size_t>(raw->parameter_number_ + 1), nullptr);
    parameters_[raw->parameter_number_] = raw;
  }
  by_name_[raw->name_] = raw;
  owned_.push_back(std::move(instruction));
  instruction_order_.push_back(raw);
  if (root_ == nullptr) root_ = raw;
  return raw;
}

Status HloComputation::RemoveInstruction(HloInstruction* instruction) {
  if (instruction->user_count() != 0)
    return FailedPrecondition("cannot remove " + instruction->name() + ": it still has users");
  if (instruction == root_) return FailedPrecondition("cannot remove the root " + instruction->name());
  auto it = std::find_if(owned_.begin(), owned_.end(), [&](const auto& p) { return p.get() == instruction; });
  if (it == owned_.end()) return NotFound(instruction->name() + " is not in computation " + name_);
  for (HloInstruction* operand : instruction->operands_) operand->RemoveUser(instruction);
  if (instruction->opcode_ == HloOpcode::kParameter) {
    for (auto& parameter : parameters_)
      if (parameter == instruction) parameter = nullptr;
  }
  instruction_order_.erase(std::find(instruction_order_.begin(), instruction_order_.end(), instruction));
  for (auto entry = by_name_.begin(); entry != by_name_.end(); ++entry) {
    if (entry->second == instruction) {
      by_name_.erase(entry);
      break;
    }
  }
  owned_.erase(it);
  return OkStatus();
}

Status HloComputation::ReplaceInstruction(HloInstruction* old_instruction, HloInstruction* replacement) {
  TPU_RETURN_IF_ERROR(old_instruction->ReplaceAllUsesWith(replacement));
  return RemoveInstruction(old_instruction);
}

int64_t HloComputation::RemoveDeadInstructions() {
  std::unordered_set<const HloInstruction*> live;
  std::vector<HloInstruction*> stack;
  if (root_ != nullptr) stack.push_back(root_);
  for (HloInstruction* instruction : instruction_order_)
    if (instruction->HasSideEffect()) stack.push_back(instruction);
  while (!stack.empty()) {
    HloInstruction* instruction = stack.back();
    stack.pop_back();
    if (!live.insert(instruction).second) continue;
    for (HloInstruction* operand : instruction->operands()) stack.push_back(operand);
  }
  int64_t removed = 0;
  // Users come after operands in post order, so walking it backwards removes users first.
  std::vector<HloInstruction*> order = MakeInstructionPostOrder();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    HloInstruction* instruction = *it;
    if (live.count(instruction) || instruction->opcode() == HloOpcode::kParameter) continue;
    if (RemoveInstruction(instruction).ok()) ++removed;
  }
  return removed;
}

HloInstruction* HloComputation::GetInstructionWithName(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  return it != by_name_.end() ? it->second : nullptr;
}

std::vector<HloInstruction*> HloComputation::MakeInstructionPostOrder() const {
  std::vector<HloInstruction*> order;
  order.reserve(instruction_order_.size());
  std::unordered_set<const HloInstruction*> visited;
  std::unordered_set<const HloInstruction*> on_stack;
  // Iterative DFS: (instruction, next operand index).
  std::vector<std::pair<HloInstruction*, size_t>> stack;
  for (HloInstruction* start : instruction_order_) {
    if (visited.count(start)) continue;
    stack.emplace_back(start, 0);
    on_stack.insert(start);
    while (!stack.empty()) {
      auto& [instruction, next] = stack.back();
      if (next < instruction->operands().size()) {
        HloInstruction* operand = instruction->operands()[next++];
        if (!visited.count(operand) && !on_stack.count(operand) && operand->parent() == this) {
          stack.emplace_back(operand, 0);
          on_stack.insert(operand);
        }
        continue;
      }
      visited.insert(instruction);
      on_stack.erase(instruction);
      order.push_back(instruction);
      stack.pop_back();
    }
  }
  return order;
}

std::string HloComputation::SignatureString() const {
  std::string out = "%" + name_ + " (";
  for (size_t i = 0; i < parameters_.size(); ++i) {
    if (i) out += ", ";
    if (parameters_[i] == nullptr) {
      out += "missing_parameter_" + std::to_string(i) + ": f32[]";
      continue;
    }
    out += parameters_[i]->name() + ": " + parameters_[i]->shape().ToString();
  }
  out += ") -> ";
  out += root_ != nullptr ? root_->shape().ToString() : "()";
  return out;
}

// ---------------------------------------------------------------------------------------------------
// HloModule

HloComputation* HloModule::AddComputation(std::unique_ptr<HloComputation> computation, bool is_entry) {
  HloComputation* raw = computation.get();
  raw->parent_ = this;
  owned_.push_back(std::move(computation));
  computation_order_.push_back(raw);
  if (is_entry) entry_ = raw;
  return raw;
}

HloComputation* HloModule::GetComputationWithName(std::string_view name) const {
  for (HloComputation* computation : computation_order_)
    if (computation->name() == name) return computation;
  return nullptr;
}

int64_t HloModule::RemoveUnusedComputations() {
  std::unordered_set<const HloComputation*> used;
  std::vector<const HloComputation*> stack;
  if (entry_ != nullptr) stack.push_back(entry_);
  while (!stack.empty()) {
    const HloComputation* computation = stack.back();
    stack.pop_back();
    if (!used.insert(computation).second) continue;
    for (HloInstruction* instruction : computation->instructions())
      for (HloComputation* called : instruction->called_computations())
        if (called != nullptr) stack.push_back(called);
  }
  int64_t removed = 0;
  for (size_t i = 0; i < computation_order_.size();) {
    HloComputation* computation = computation_order_[i];
    if (used.count(computation)) {
      ++i;
      continue;
    }
    computation_order_.erase(computation_order_.begin() + static_cast<std::ptrdiff_t>(i));
    owned_.erase(std::find_if(owned_.begin(), owned_.end(), [&](const auto& p) { return p.get() == computation; }));
    ++removed;
  }
  return removed;
}

std::string HloModule::ToString() const { return PrintHloModule(*this); }

std::string StackFrameIndex::Describe(int64_t frame_id) const {
  if (frame_id < 1 || frame_id > static_cast<int64_t>(stack_frames.size())) return "";
  const int64_t location_id = stack_frames[frame_id - 1].file_location_id;
  if (location_id < 1 || location_id > static_cast<int64_t>(file_locations.size())) return "";
  const FileLocation& location = file_locations[location_id - 1];
  auto name = [](const std::vector<std::string>& names, int64_t id) {
    return id >= 1 && id <= static_cast<int64_t>(names.size()) ? names[id - 1] : std::string("?");
  };
  return name(file_names, location.file_name_id) + ":" + std::to_string(location.line) + ", in " +
         name(function_names, location.function_name_id);
}

namespace {

// The value of `key=` in a metadata text such as `{op_name="x" source_line=3 stack_frame_id=2}`.
std::string MetadataField(const std::string& metadata, const std::string& key) {
  size_t at = 0;
  while ((at = metadata.find(key + "=", at)) != std::string::npos) {
    const bool starts_word = at == 0 || metadata[at - 1] == ' ' || metadata[at - 1] == '{';
    at += key.size() + 1;
    if (!starts_word) continue;
    if (at < metadata.size() && metadata[at] == '"') {
      const size_t end = metadata.find('"', at + 1);
      return metadata.substr(at + 1, end == std::string::npos ? std::string::npos : end - at - 1);
    }
    size_t end = at;
    while (end < metadata.size() && metadata[end] != ' ' && metadata[end] != '}') ++end;
    return metadata.substr(at, end - at);
  }
  return "";
}

}  // namespace

std::string DefinedAt(const HloInstruction& instruction) {
  const HloModule* module = instruction.parent() != nullptr ? instruction.parent()->parent() : nullptr;
  const std::string source = module != nullptr ? module->SourceOf(instruction) : "";
  return source.empty() ? "" : " (defined at " + source + ")";
}

std::string HloModule::SourceOf(const HloInstruction& instruction) const {
  const std::string* metadata = instruction.raw_attribute("metadata");
  if (metadata == nullptr) return "";
  if (const std::string frame = MetadataField(*metadata, "stack_frame_id"); !frame.empty()) {
    const std::string described = stack_frames_.Describe(std::atoll(frame.c_str()));
    if (!described.empty()) return described;
  }
  const std::string file = MetadataField(*metadata, "source_file"), line = MetadataField(*metadata, "source_line");
  if (file.empty()) return "";
  return file + (line.empty() ? "" : ":" + line);
}

Status CopyInstructions(const HloComputation& source, HloComputation* target,
                        const std::function<HloComputation*(HloComputation*)>& called) {
  std::map<const HloInstruction*, HloInstruction*> clones;
  for (const HloInstruction* instruction : source.MakeInstructionPostOrder()) {
    std::vector<HloInstruction*> operands;
    for (const HloInstruction* operand : instruction->operands()) {
      // Post order puts operands first unless they form a cycle (which the verifier rejects).
      auto cloned = clones.find(operand);
      if (cloned == clones.end()) {
        return InvalidArgument("cannot clone %" + instruction->name() + ": its operand %" +
                               (operand != nullptr ? operand->name() : std::string("(null)")) +
                               " is not defined before it (an operand cycle or another computation's value)");
      }
      operands.push_back(cloned->second);
    }
    std::unique_ptr<HloInstruction> clone = instruction->CloneWithNewOperands(instruction->shape(), operands);
    for (size_t i = 0; i < instruction->called_computation_attributes().size(); ++i) {
      HloComputation* callee = called(instruction->called_computation_attributes()[i].computation);
      if (callee == nullptr) return InvalidArgument(instruction->name() + " calls a computation outside its module");
      clone->set_called_computation(i, callee);
    }
    clones[instruction] = target->AddInstruction(std::move(clone));
  }
  if (source.root_instruction() != nullptr) {
    auto root = clones.find(source.root_instruction());
    if (root == clones.end()) {
      return InvalidArgument("computation " + source.name() + ": the root is not one of its instructions");
    }
    target->set_root_instruction(root->second);
  }
  return OkStatus();
}

StatusOr<std::unique_ptr<HloModule>> CloneModule(const HloModule& module) {
  auto copy = std::make_unique<HloModule>(module.name());
  copy->mutable_raw_attributes() = module.raw_attributes();
  copy->mutable_input_output_aliases() = module.input_output_aliases();
  copy->mutable_stack_frames() = module.stack_frames();
  std::map<const HloComputation*, HloComputation*> computations;
  for (const HloComputation* computation : module.computations()) {
    computations[computation] = copy->AddComputation(std::make_unique<HloComputation>(computation->name()),
                                                     computation == module.entry_computation());
  }
  for (const HloComputation* computation : module.computations()) {
    TPU_RETURN_IF_ERROR(CopyInstructions(*computation, computations.at(computation), [&](HloComputation* callee) {
      auto found = computations.find(callee);
      return found == computations.end() ? nullptr : found->second;
    }));
  }
  return copy;
}

}  // namespace tpu::hlo
