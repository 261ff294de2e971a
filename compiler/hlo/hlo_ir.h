// HLO IR: HloModule owns HloComputations, which own HloInstructions. Mirrors XLA's classes closely
// enough that passes read like XLA passes. Attributes the IR understands are typed fields; every other
// attribute (metadata, sharding, frontend_attributes, backend_config, precision_config, ...) is kept as
// raw text so printing loses nothing.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "compiler/hlo/hlo_opcode.h"
#include "compiler/hlo/literal.h"
#include "compiler/hlo/shape.h"
#include "sw/base/status.h"

namespace tpu::hlo {

class HloComputation;
class HloModule;

enum class ComparisonDirection { kEq, kNe, kGe, kGt, kLe, kLt };
const char* ComparisonDirectionString(ComparisonDirection direction);  // "EQ", "GT", ...
bool ComparisonDirectionFromString(std::string_view text, ComparisonDirection* direction);

// lhs_batch_dims={...}, lhs_contracting_dims={...}, rhs_batch_dims={...}, rhs_contracting_dims={...}.
// The output has the batch dimensions, then the lhs free dimensions, then the rhs free dimensions.
struct DotDimensionNumbers {
  std::vector<int64_t> lhs_batch_dimensions;
  std::vector<int64_t> lhs_contracting_dimensions;
  std::vector<int64_t> rhs_batch_dimensions;
  std::vector<int64_t> rhs_contracting_dimensions;
  bool operator==(const DotDimensionNumbers& o) const {
    return lhs_batch_dimensions == o.lhs_batch_dimensions && lhs_contracting_dimensions == o.lhs_contracting_dimensions &&
           rhs_batch_dimensions == o.rhs_batch_dimensions && rhs_contracting_dimensions == o.rhs_contracting_dimensions;
  }
};

// One dimension of window={size=3x3 stride=2x2 pad=0_1x0_1 lhs_dilate=1x1 rhs_dilate=1x1 rhs_reversal=0x0}.
struct WindowDimension {
  int64_t size = 1;
  int64_t stride = 1;
  int64_t padding_low = 0;
  int64_t padding_high = 0;
  int64_t window_dilation = 1;  // rhs_dilate
  int64_t base_dilation = 1;    // lhs_dilate
  bool window_reversal = false;  // rhs_reversal
  bool operator==(const WindowDimension& o) const {
    return size == o.size && stride == o.stride && padding_low == o.padding_low && padding_high == o.padding_high &&
           window_dilation == o.window_dilation && base_dilation == o.base_dilation && window_reversal == o.window_reversal;
  }
};
struct Window {
  std::vector<WindowDimension> dimensions;
  bool operator==(const Window& o) const { return dimensions == o.dimensions; }
};
std::string WindowToString(const Window& window);  // "size=3x3 stride=2x2 pad=0_1x0_1"

// dim_labels=b01f_01io->b01f: which dimension of input, kernel and output plays which role.
struct ConvolutionDimensionNumbers {
  int64_t input_batch_dimension = 0;
  int64_t input_feature_dimension = 0;
  std::vector<int64_t> input_spatial_dimensions;
  int64_t kernel_input_feature_dimension = 0;
  int64_t kernel_output_feature_dimension = 0;
  std::vector<int64_t> kernel_spatial_dimensions;
  int64_t output_batch_dimension = 0;
  int64_t output_feature_dimension = 0;
  std::vector<int64_t> output_spatial_dimensions;
  bool operator==(const ConvolutionDimensionNumbers& o) const;
};
std::string ConvolutionDimensionNumbersToString(const ConvolutionDimensionNumbers& dnums);  // "b01f_01io->b01f"

// padding=0_0_0x1_1_0: low_high_interior per dimension (interior optional in text).
struct PaddingDimension {
  int64_t edge_padding_low = 0;
  int64_t edge_padding_high = 0;
  int64_t interior_padding = 0;
  bool operator==(const PaddingDimension& o) const {
    return edge_padding_low == o.edge_padding_low && edge_padding_high == o.edge_padding_high &&
           interior_padding == o.interior_padding;
  }
};
struct PaddingConfig {
  std::vector<PaddingDimension> dimensions;
  bool operator==(const PaddingConfig& o) const { return dimensions == o.dimensions; }
};
std::string PaddingConfigToString(const PaddingConfig& config);  // "0_0x1_1_0"

// Custom-call targets that return their single operand unchanged; accepted by the verifier, run as a
// copy by the interpreter. Currently "AwsNeuronTransferWithStaticRing" (PyTorch/XLA Neuron transfer).
bool IsIdentityCustomCallTarget(std::string_view target);
// The custom-call target of `f16[...] custom-call(f32[...] x)`: x's values as f16 when every one of them is an
// f16 value already (f16-rounding-expansion writes it after its rounding arithmetic). The device keeps the
// words (an f16 is held in the f32 word of its value); the interpreter converts and refuses a value that
// would round.
inline constexpr std::string_view kExactF16Target = "tpusim.ExactF16";

// Opcodes whose instructions act beyond their result (I/O, communication, random state), so they must
// run even when nothing uses their value: infeed, outfeed, send, send-done, recv, recv-done, rng,
// rng-get-and-update-state, and collectives (all-reduce, all-gather, all-to-all, reduce-scatter,
// collective-permute), which every replica must reach together.
bool HasSideEffect(HloOpcode opcode);

class HloInstruction {
 public:
  // A bare instruction; set attributes with the setters. Operands must belong to the same computation.
  static std::unique_ptr<HloInstruction> Create(HloOpcode opcode, const Shape& shape,
                                                std::vector<HloInstruction*> operands, std::string name = "");
  // Common factories (names are made unique when added to a computation with an empty name).
  static std::unique_ptr<HloInstruction> CreateParameter(int64_t parameter_number, const Shape& shape,
                                                         std::string name = "");
  static std::unique_ptr<HloInstruction> CreateConstant(Literal literal, std::string name = "");
  static std::unique_ptr<HloInstruction> CreateUnary(const Shape& shape, HloOpcode opcode, HloInstruction* operand);
  static std::unique_ptr<HloInstruction> CreateBinary(const Shape& shape, HloOpcode opcode, HloInstruction* lhs,
                                                      HloInstruction* rhs);
  static std::unique_ptr<HloInstruction> CreateTernary(const Shape& shape, HloOpcode opcode, HloInstruction* a,
                                                       HloInstruction* b, HloInstruction* c);
  static std::unique_ptr<HloInstruction> CreateCompare(const Shape& shape, HloInstruction* lhs, HloInstruction* rhs,
                                                       ComparisonDirection direction);
  static std::unique_ptr<HloInstruction> CreateBroadcast(const Shape& shape, HloInstruction* operand,
                                                         std::vector<int64_t> dimensions);
  static std::unique_ptr<HloInstruction> CreateReshape(const Shape& shape, HloInstruction* operand);
  static std::unique_ptr<HloInstruction> CreateTranspose(const Shape& shape, HloInstruction* operand,
                                                         std::vector<int64_t> dimensions);
  static std::unique_ptr<HloInstruction> CreateDot(const Shape& shape, HloInstruction* lhs, HloInstruction* rhs,
                                                   const DotDimensionNumbers& dnums);
  static std::unique_ptr<HloInstruction> CreateReduce(const Shape& shape, HloInstruction* operand,
                                                      HloInstruction* init_value, std::vector<int64_t> dimensions,
                                                      HloComputation* reducer);
  static std::unique_ptr<HloInstruction> CreateTuple(std::vector<HloInstruction*> elements);
  static std::unique_ptr<HloInstruction> CreateGetTupleElement(HloInstruction* operand, int64_t index);
  static std::unique_ptr<HloInstruction> CreateConvert(const Shape& shape, HloInstruction* operand);
  static std::unique_ptr<HloInstruction> CreateIota(const Shape& shape, int64_t iota_dimension);
  static std::unique_ptr<HloInstruction> CreateCall(const Shape& shape, std::vector<HloInstruction*> operands,
                                                    HloComputation* computation);

  const std::string& name() const { return name_; }
  // Renames (the parent's name index follows; uniqueness is the caller's business).
  void set_name(std::string name);
  HloOpcode opcode() const { return opcode_; }
  // The opcode's text; for kUnknown the name the text used.
  const std::string& opcode_name() const { return opcode_name_; }
  void set_unknown_opcode_name(std::string name) { opcode_ = HloOpcode::kUnknown; opcode_name_ = std::move(name); }
  const Shape& shape() const { return shape_; }
  Shape* mutable_shape() { return &shape_; }
  void set_shape(const Shape& shape) { shape_ = shape; }

  const std::vector<HloInstruction*>& operands() const { return operands_; }
  HloInstruction* operand(int64_t i) const { return operands_.at(i); }
  int64_t operand_count() const { return static_cast<int64_t>(operands_.size()); }
  // Instructions that use this one as an operand (each listed once).
  const std::vector<HloInstruction*>& users() const { return users_; }
  int64_t user_count() const { return static_cast<int64_t>(users_.size()); }
  void AppendOperand(HloInstruction* operand);
  // Replaces operand i (keeps users lists right).
  Status ReplaceOperandWith(int64_t i, HloInstruction* new_operand);
  // Makes every user of this instruction (and the root pointer of the parent if this is the root)
  // use `replacement` instead. Shapes must be equal (ignoring layout).
  Status ReplaceAllUsesWith(HloInstruction* replacement);

  HloComputation* parent() const { return parent_; }
  bool IsRoot() const;

  // parameter(N)
  int64_t parameter_number() const { return parameter_number_; }
  void set_parameter_number(int64_t n) { parameter_number_ = n; }
  // constant(...): false for `constant({...})`, whose values the dump elided.
  bool has_literal() const { return has_literal_; }
  const Literal& literal() const { return literal_; }
  void set_literal(Literal literal) { literal_ = std::move(literal); has_literal_ = true; }
  void set_literal_elided() { has_literal_ = false; literal_ = Literal(); }
  // dimensions={...} of broadcast, transpose, reduce, reverse, sort, concatenate (one entry), ...
  const std::vector<int64_t>& dimensions() const { return dimensions_; }
  int64_t dimensions(int64_t i) const { return dimensions_.at(i); }
  void set_dimensions(std::vector<int64_t> dimensions) { dimensions_ = std::move(dimensions); has_dimensions_ = true; }
  bool has_dimensions() const { return has_dimensions_; }
  // concatenate's dimension (dimensions={d}).
  int64_t concatenate_dimension() const { return dimensions_.empty() ? 0 : dimensions_[0]; }

  const DotDimensionNumbers& dot_dimension_numbers() const { return dot_dimension_numbers_; }
  void set_dot_dimension_numbers(const DotDimensionNumbers& d) { dot_dimension_numbers_ = d; }

  ComparisonDirection comparison_direction() const { return comparison_direction_; }
  void set_comparison_direction(ComparisonDirection d) { comparison_direction_ = d; }
  // type=TOTALORDER etc. of compare ("" when absent; kept raw, e.g. "TOTALORDER", "FLOAT", "SIGNED").
  const std::string& comparison_type() const { return comparison_type_; }
  void set_comparison_type(std::string type) { comparison_type_ = std::move(type); }

  // slice={[start:limit:stride], ...}
  const std::vector<int64_t>& slice_starts() const { return slice_starts_; }
  const std::vector<int64_t>& slice_limits() const { return slice_limits_; }
  const std::vector<int64_t>& slice_strides() const { return slice_strides_; }
  void set_slice(std::vector<int64_t> starts, std::vector<int64_t> limits, std::vector<int64_t> strides);

  bool has_padding_config() const { return has_padding_config_; }
  const PaddingConfig& padding_config() const { return padding_config_; }
  void set_padding_config(const PaddingConfig& config) { padding_config_ = config; has_padding_config_ = true; }

  bool has_window() const { return has_window_; }
  const Window& window() const { return window_; }
  void set_window(const Window& window) { window_ = window; has_window_ = true; }

  bool has_convolution_dimension_numbers() const { return has_convolution_dimension_numbers_; }
  const ConvolutionDimensionNumbers& convolution_dimension_numbers() const { return convolution_dimension_numbers_; }
  void set_convolution_dimension_numbers(const ConvolutionDimensionNumbers& d) {
    convolution_dimension_numbers_ = d;
    has_convolution_dimension_numbers_ = true;
  }
  int64_t feature_group_count() const { return feature_group_count_; }
  void set_feature_group_count(int64_t n) { feature_group_count_ = n; }
  int64_t batch_group_count() const { return batch_group_count_; }
  void set_batch_group_count(int64_t n) { batch_group_count_ = n; }

  // Called computations with the attribute that names each: to_apply=, calls=, condition=, body=,
  // select=, scatter=, branch_computations=, true_computation=, false_computation=.
  struct CalledComputation {
    std::string attribute;
    HloComputation* computation;
  };
  const std::vector<CalledComputation>& called_computation_attributes() const { return called_; }
  std::vector<HloComputation*> called_computations() const;
  // The computation named by to_apply= (nullptr if none).
  HloComputation* to_apply() const;
  // The computation named by `attribute` (condition, body, ...; nullptr if none).
  HloComputation* called_computation(std::string_view attribute) const;
  void set_to_apply(HloComputation* computation) { SetCalledComputation("to_apply", computation); }
  // Sets (replaces, or appends) the computation of `attribute`.
  void SetCalledComputation(const std::string& attribute, HloComputation* computation);
  void AddCalledComputation(const std::string& attribute, HloComputation* computation) {
    called_.push_back({attribute, computation});
  }
  // Replaces the i-th called computation (index into called_computation_attributes()).
  void set_called_computation(size_t i, HloComputation* computation) { called_.at(i).computation = computation; }

  const std::string& custom_call_target() const { return custom_call_target_; }
  void set_custom_call_target(std::string target) { custom_call_target_ = std::move(target); }

  // get-tuple-element's index=N.
  int64_t tuple_index() const { return tuple_index_; }
  void set_tuple_index(int64_t index) { tuple_index_ = index; }
  // iota's iota_dimension=N.
  int64_t iota_dimension() const { return iota_dimension_; }
  void set_iota_dimension(int64_t d) { iota_dimension_ = d; }
  // sort's is_stable=true.
  bool is_stable() const { return is_stable_; }
  void set_is_stable(bool stable) { is_stable_ = stable; }

  // Every other attribute, in text order: name and value exactly as written, e.g.
  // {"metadata", "{op_type=\"aten__relu\" op_name=\"aten__relu\"}"}, {"sharding", "{replicated}"}.
  const std::vector<std::pair<std::string, std::string>>& raw_attributes() const { return raw_attributes_; }
  // nullptr if absent.
  const std::string* raw_attribute(std::string_view name) const;
  void set_raw_attribute(const std::string& name, std::string value);
  void remove_raw_attribute(std::string_view name);

  // A copy with other operands (same attributes and called computations, no parent, same name).
  std::unique_ptr<HloInstruction> CloneWithNewOperands(const Shape& shape,
                                                       std::vector<HloInstruction*> operands) const;

  // HasSideEffect(opcode()), or a called computation (while body, call, ...) contains such an instruction.
  bool HasSideEffect() const;

  // One line of HLO text (without the leading indentation), as the printer writes it.
  std::string ToString() const;

 private:
  friend class HloComputation;
  HloInstruction(HloOpcode opcode, const Shape& shape);
  void RemoveUser(HloInstruction* user);
  void AddUser(HloInstruction* user);

  std::string name_;
  HloOpcode opcode_;
  std::string opcode_name_;
  Shape shape_;
  std::vector<HloInstruction*> operands_;
  std::vector<HloInstruction*> users_;
  HloComputation* parent_ = nullptr;

  int64_t parameter_number_ = 0;
  bool has_literal_ = false;
  Literal literal_;
  bool has_dimensions_ = false;
  std::vector<int64_t> dimensions_;
  DotDimensionNumbers dot_dimension_numbers_;
  ComparisonDirection comparison_direction_ = ComparisonDirection::kEq;
  std::string comparison_type_;
  std::vector<int64_t> slice_starts_, slice_limits_, slice_strides_;
  bool has_padding_config_ = false;
  PaddingConfig padding_config_;
  bool has_window_ = false;
  Window window_;
  bool has_convolution_dimension_numbers_ = false;
  ConvolutionDimensionNumbers convolution_dimension_numbers_;
  int64_t feature_group_count_ = 1;
  int64_t batch_group_count_ = 1;
  std::vector<CalledComputation> called_;
  std::string custom_call_target_;
  int64_t tuple_index_ = 0;
  int64_t iota_dimension_ = 0;
  bool is_stable_ = false;
  std::vector<std::pair<std::string, std::string>> raw_attributes_;
};

class HloComputation {
 public:
  explicit HloComputation(std::string name) : name_(std::move(name)) {}

  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }
  HloModule* parent() const { return parent_; }
  bool IsEntryComputation() const;

  // Instructions in definition order (the text order for parsed modules; new ones are appended).
  const std::vector<HloInstruction*>& instructions() const { return instruction_order_; }
  int64_t instruction_count() const { return static_cast<int64_t>(instruction_order_.size()); }
  HloInstruction* root_instruction() const { return root_; }
  void set_root_instruction(HloInstruction* root) { root_ = root; }

  // Parameters by number (nullptr where a number is missing, which the verifier reports).
  int64_t num_parameters() const { return static_cast<int64_t>(parameters_.size()); }
  HloInstruction* parameter_instruction(int64_t number) const { return parameters_.at(number); }
  const std::vector<HloInstruction*>& parameter_instructions() const { return parameters_; }

  // Takes ownership; gives the instruction a unique name if it has none (or a clashing one) and registers
  // it with its operands as a user. The first instruction added becomes root until set_root_instruction.
  HloInstruction* AddInstruction(std::unique_ptr<HloInstruction> instruction);
  // Removes an instruction that has no users and is not the root.
  Status RemoveInstruction(HloInstruction* instruction);
  // old->ReplaceAllUsesWith(replacement), then removes `old`.
  Status ReplaceInstruction(HloInstruction* old_instruction, HloInstruction* replacement);
  // Removes every instruction not reachable from the root, except parameters and instructions with side
  // effects (HloInstruction::HasSideEffect), which stay with what they use; returns how many.
  int64_t RemoveDeadInstructions();

  HloInstruction* GetInstructionWithName(std::string_view name) const;
  // Operands before users, in definition order otherwise; every instruction once.
  std::vector<HloInstruction*> MakeInstructionPostOrder() const;

  // `%name (p: f32[2]) -> f32[2]` part of the text.
  std::string SignatureString() const;

 private:
  friend class HloModule;
  friend class HloInstruction;
  std::string UniqueName(std::string_view base);

  std::string name_;
  HloModule* parent_ = nullptr;
  std::vector<std::unique_ptr<HloInstruction>> owned_;
  std::vector<HloInstruction*> instruction_order_;
  std::vector<HloInstruction*> parameters_;
  HloInstruction* root_ = nullptr;
  int64_t next_unique_id_ = 0;
  // Name -> instruction, kept current by HloInstruction::set_name.
  std::unordered_map<std::string, HloInstruction*> by_name_;
};

// An input_output_alias entry: `{0}: (2, {}, must-alias)`: output tuple index {0} aliases parameter 2
// at tuple index {}.
struct InputOutputAlias {
  std::vector<int64_t> output_index;
  int64_t parameter_number = 0;
  std::vector<int64_t> parameter_index;
  std::string kind;  // "must-alias", "may-alias" or "" when the text gave none
};

// The source tables of current XLA dumps (FileNames, FunctionNames, FileLocations, StackFrames) that an
// instruction's `metadata={... stack_frame_id=N}` points into. Ids are 1-based as in the text.
struct StackFrameIndex {
  struct FileLocation {
    int64_t file_name_id = 0, function_name_id = 0, line = 0, end_line = 0, column = 0, end_column = 0;
  };
  struct StackFrame {
    int64_t file_location_id = 0, parent_frame_id = 0;
  };
  std::vector<std::string> file_names, function_names;
  std::vector<FileLocation> file_locations;
  std::vector<StackFrame> stack_frames;

  bool empty() const { return stack_frames.empty(); }
  // "train.py:3, in loss" for frame `id`, the innermost call; "" for an id the tables do not hold.
  std::string Describe(int64_t frame_id) const;
};

class HloModule {
 public:
  explicit HloModule(std::string name) : name_(std::move(name)) {}

  const StackFrameIndex& stack_frames() const { return stack_frames_; }
  StackFrameIndex& mutable_stack_frames() { return stack_frames_; }
  // Where `instruction` comes from in the framework's source, from its metadata: "train.py:12, in loss"
  // through the stack frame tables, or "file:line" from source_file / source_line; "" when unknown.
  std::string SourceOf(const HloInstruction& instruction) const;

  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }

  HloComputation* entry_computation() const { return entry_; }
  // In text order (callees before callers in XLA dumps); the entry is one of them. A copy: passes add
  // computations (reducers, loop bodies) while they walk the list.
  std::vector<HloComputation*> computations() const { return computation_order_; }
  HloComputation* AddComputation(std::unique_ptr<HloComputation> computation, bool is_entry = false);
  HloComputation* AddEmbeddedComputation(std::unique_ptr<HloComputation> c) { return AddComputation(std::move(c), false); }
  HloComputation* GetComputationWithName(std::string_view name) const;
  // Removes computations no instruction calls (the entry stays); returns how many.
  int64_t RemoveUnusedComputations();

  const std::vector<InputOutputAlias>& input_output_aliases() const { return input_output_aliases_; }
  std::vector<InputOutputAlias>& mutable_input_output_aliases() { return input_output_aliases_; }

  // Other `HloModule name, key=value` attributes in text order, e.g. {"entry_computation_layout",
  // "{(f32[2]{0})->f32[2]{0}}"}, {"is_scheduled", "true"}. input_output_alias is kept only structured
  // (its position in this list is remembered by an entry with an empty value).
  const std::vector<std::pair<std::string, std::string>>& raw_attributes() const { return raw_attributes_; }
  std::vector<std::pair<std::string, std::string>>& mutable_raw_attributes() { return raw_attributes_; }

  // Whole-module HLO text (same as PrintHloModule).
  std::string ToString() const;

 private:
  std::string name_;
  HloComputation* entry_ = nullptr;
  std::vector<std::unique_ptr<HloComputation>> owned_;
  std::vector<HloComputation*> computation_order_;
  std::vector<InputOutputAlias> input_output_aliases_;
  std::vector<std::pair<std::string, std::string>> raw_attributes_;
  StackFrameIndex stack_frames_;
};

// " (defined at train.py:12, in loss)" for an instruction whose module knows its source (SourceOf), else
// "": what messages about an instruction append, as TensorFlow's do for a node.
std::string DefinedAt(const HloInstruction& instruction);

// A deep copy of a module, instruction by instruction (printing and re-parsing would format and parse
// every weight of a large network: seconds for EfficientNet with its constants filled in).
StatusOr<std::unique_ptr<HloModule>> CloneModule(const HloModule& module);
// Copies the instructions of `source` into the empty computation `target` (same names, same root);
// the copies call `called(c)` where the originals call c. InvalidArgument when an operand is not defined
// before its user or `called` gives nullptr.
Status CopyInstructions(const HloComputation& source, HloComputation* target,
                        const std::function<HloComputation*(HloComputation*)>& called);

}  // namespace tpu::hlo
