#include "compiler/hlo/parser.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <random>

#include "compiler/hlo/test_util.h"
#include "compiler/hlo/verifier.h"

namespace tpu::hlo {
namespace {

using testing::ReadSharedHlo;

std::unique_ptr<HloModule> MustParse(const std::string& text) {
  auto module = ParseHloModule(text);
  EXPECT_TRUE(module.ok()) << module.status();
  return module.ok() ? std::move(module).value() : nullptr;
}

int64_t CountOpcode(const HloModule& module, HloOpcode opcode) {
  int64_t count = 0;
  for (const HloComputation* computation : module.computations())
    for (const HloInstruction* instruction : computation->instructions()) count += instruction->opcode() == opcode;
  return count;
}

TEST(ParserTest, EverySharedFileParses) {
  for (const char* name : testing::kSharedHloFiles) {
    std::string text = ReadSharedHlo(name);
    if (text.empty()) GTEST_SKIP() << "no ../shared/hlo";
    auto module = ParseHloModule(text);
    ASSERT_TRUE(module.ok()) << name << ": " << module.status();
    EXPECT_NE((*module)->entry_computation(), nullptr);
  }
}

TEST(ParserTest, MamlTrainStepStructure) {
  std::string text = ReadSharedHlo("maml_flax_train_step.hlo");
  if (text.empty()) GTEST_SKIP();
  auto module = MustParse(text);
  ASSERT_NE(module, nullptr);
  EXPECT_EQ(module->name(), "jit_train_step.26");
  const HloComputation* entry = module->entry_computation();
  EXPECT_EQ(entry->name(), "main.156");
  EXPECT_EQ(entry->num_parameters(), 15);
  EXPECT_EQ(entry->parameter_instruction(0)->shape().ToString(), "s32[]");
  EXPECT_EQ(entry->root_instruction()->opcode(), HloOpcode::kTuple);
  EXPECT_EQ(entry->root_instruction()->operand_count(), 14);
  const HloInstruction* dot = entry->GetInstructionWithName("dot.43");
  ASSERT_NE(dot, nullptr);
  EXPECT_EQ(dot->dot_dimension_numbers().lhs_contracting_dimensions, std::vector<int64_t>{1});
  EXPECT_EQ(dot->dot_dimension_numbers().rhs_contracting_dimensions, std::vector<int64_t>{0});
  EXPECT_EQ(dot->operand(0)->name(), "Arg_13.14");
  const HloInstruction* momentum = entry->GetInstructionWithName("constant.29");
  ASSERT_TRUE(momentum->has_literal());
  EXPECT_EQ(momentum->literal().Get<float>(0), 0.9f);
  const HloInstruction* compare = entry->GetInstructionWithName("compare.55");
  EXPECT_EQ(compare->comparison_direction(), ComparisonDirection::kGt);
  const HloInstruction* call = entry->GetInstructionWithName("call.54");
  ASSERT_NE(call->to_apply(), nullptr);
  EXPECT_EQ(call->to_apply()->name(), "jit_relu.49");
  EXPECT_EQ(CountOpcode(*module, HloOpcode::kDot), 8);
}

TEST(ParserTest, PytorchTrainStepAttributes) {
  std::string text = ReadSharedHlo("pytorch_xla_mnist_mlp_train_step.hlo");
  if (text.empty()) GTEST_SKIP();
  auto module = MustParse(text);
  ASSERT_NE(module, nullptr);
  ASSERT_EQ(module->input_output_aliases().size(), 8u);
  EXPECT_EQ(module->input_output_aliases()[0].output_index, std::vector<int64_t>{0});
  EXPECT_EQ(module->input_output_aliases()[0].parameter_number, 2);
  EXPECT_EQ(module->input_output_aliases()[0].kind, "must-alias");
  const HloComputation* entry = module->entry_computation();
  const HloInstruction* transfer = entry->GetInstructionWithName("custom-call.13");
  ASSERT_NE(transfer, nullptr);
  EXPECT_EQ(transfer->custom_call_target(), "AwsNeuronTransferWithStaticRing");
  ASSERT_NE(transfer->raw_attribute("api_version"), nullptr);
  EXPECT_EQ(*transfer->raw_attribute("api_version"), "API_VERSION_UNSPECIFIED");
  const HloInstruction* parameter = entry->GetInstructionWithName("p2.14");
  ASSERT_NE(parameter->raw_attribute("frontend_attributes"), nullptr);
  EXPECT_EQ(*parameter->raw_attribute("frontend_attributes"), "{neff_input_names=\"input2\"}");
  ASSERT_NE(parameter->raw_attribute("metadata"), nullptr);
  EXPECT_NE(parameter->raw_attribute("metadata")->find("source_line=1158"), std::string::npos);
  EXPECT_EQ(CountOpcode(*module, HloOpcode::kCustomCall), 12);
  bool found_negative_infinity = false;
  for (const HloInstruction* instruction : entry->instructions())
    if (instruction->opcode() == HloOpcode::kConstant && instruction->has_literal() &&
        std::isinf(instruction->literal().GetAsDouble(0)) && instruction->literal().GetAsDouble(0) < 0)
      found_negative_infinity = true;
  EXPECT_TRUE(found_negative_infinity);
  const HloInstruction* iota = entry->GetInstructionWithName("iota.1");
  EXPECT_EQ(iota->iota_dimension(), 1);
  EXPECT_EQ(iota->shape().element_type, PrimitiveType::S64);
}

TEST(ParserTest, EfficientNetConvolutionsAndSort) {
  std::string text = ReadSharedHlo("efficientnet_forward.hlo");
  if (text.empty()) GTEST_SKIP();
  auto start = std::chrono::steady_clock::now();
  auto module = MustParse(text);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  ASSERT_NE(module, nullptr);
  EXPECT_LT(ms, 250.0) << "parsing 200 KB should take milliseconds";
  EXPECT_EQ(CountOpcode(*module, HloOpcode::kConvolution), 73);
  const HloComputation* entry = module->entry_computation();
  const HloInstruction* stem = entry->GetInstructionWithName("convolution.374");
  ASSERT_NE(stem, nullptr);
  ASSERT_EQ(stem->window().dimensions.size(), 2u);
  EXPECT_EQ(stem->window().dimensions[0].size, 3);
  EXPECT_EQ(stem->window().dimensions[0].stride, 2);
  EXPECT_EQ(stem->window().dimensions[0].padding_low, 0);
  EXPECT_EQ(stem->window().dimensions[0].padding_high, 1);
  const ConvolutionDimensionNumbers& d = stem->convolution_dimension_numbers();
  EXPECT_EQ(d.input_batch_dimension, 0);
  EXPECT_EQ(d.input_feature_dimension, 3);
  EXPECT_EQ(d.input_spatial_dimensions, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(d.kernel_input_feature_dimension, 2);
  EXPECT_EQ(d.kernel_output_feature_dimension, 3);
  EXPECT_EQ(ConvolutionDimensionNumbersToString(d), "b01f_01io->b01f");
  EXPECT_FALSE(entry->GetInstructionWithName("constant.373")->has_literal());  // {...}
  EXPECT_EQ(entry->GetInstructionWithName("convolution.399")->feature_group_count(), 32);
  const HloComputation* top_k = module->GetComputationWithName("xla_fallback_top_k.2017");
  ASSERT_NE(top_k, nullptr);
  const HloInstruction* sort = top_k->GetInstructionWithName("sort.2021");
  EXPECT_TRUE(sort->is_stable());
  EXPECT_EQ(sort->dimensions(), std::vector<int64_t>{1});
  EXPECT_EQ(sort->shape().tuple_shapes.size(), 2u);
  const HloInstruction* slice = top_k->GetInstructionWithName("slice.2024");
  EXPECT_EQ(slice->slice_limits(), (std::vector<int64_t>{250, 5}));
  EXPECT_EQ(module->GetComputationWithName("region_1.2011")->root_instruction()->comparison_type(), "TOTALORDER");
}

TEST(ParserTest, AcceptsBareNamesUntypedOperandsAndForwardReferences) {
  auto module = MustParse(R"(HloModule m, entry_computation_layout={(f32[2]{0})->f32[2]{0}}

add_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT sum = f32[] add(a, b)
}

ENTRY main {
  ROOT out = f32[2] multiply(x, doubled)
  x = f32[2]{0} parameter(0)
  doubled = f32[2] add(x, x), sharding={replicated}
  total = f32[] reduce(x, zero), dimensions={0}, to_apply=add_f32
  zero = f32[] constant(0)
}
)");
  ASSERT_NE(module, nullptr);
  const HloComputation* entry = module->entry_computation();
  EXPECT_EQ(entry->root_instruction()->name(), "out");
  EXPECT_EQ(entry->root_instruction()->operand(1)->name(), "doubled");
  EXPECT_EQ(entry->GetInstructionWithName("total")->to_apply()->name(), "add_f32");
  EXPECT_EQ(*entry->GetInstructionWithName("doubled")->raw_attribute("sharding"), "{replicated}");
  ASSERT_EQ(module->raw_attributes().size(), 1u);
  EXPECT_EQ(module->raw_attributes()[0].second, "{(f32[2]{0})->f32[2]{0}}");
}

TEST(ParserTest, NestedArrayConstants) {
  auto module = MustParse(R"(HloModule m
ENTRY e {
  ROOT c = s32[2,3]{1,0} constant({ { 1, 2, 3 }, { 4, 5, -6 } })
})");
  ASSERT_NE(module, nullptr);
  const Literal& literal = module->entry_computation()->root_instruction()->literal();
  EXPECT_EQ(literal.Get<int32_t>(5), -6);
  EXPECT_EQ(literal.Get<int32_t>(3), 4);
}

TEST(ParserTest, KeepsUnknownAttributesRaw) {
  auto module = MustParse(R"(HloModule m
ENTRY e {
  p = f32[4] parameter(0)
  ROOT c = f32[4] custom-call(p), custom_call_target="Foo", backend_config="{\"a\": [1, {2}], \"b\": \"x,y\"}", weird={a={b}, c=(1,2)}
})");
  ASSERT_NE(module, nullptr);
  const HloInstruction* call = module->entry_computation()->root_instruction();
  EXPECT_EQ(*call->raw_attribute("backend_config"), R"("{\"a\": [1, {2}], \"b\": \"x,y\"}")");
  EXPECT_EQ(*call->raw_attribute("weird"), "{a={b}, c=(1,2)}");
}

// Parses `text` and expects InvalidArgument starting with `prefix` (the line/column part).
void ExpectError(const std::string& text, const std::string& prefix, const std::string& fragment) {
  auto module = ParseHloModule(text);
  ASSERT_FALSE(module.ok());
  EXPECT_EQ(module.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(module.status().message().rfind(prefix, 0), 0u) << module.status().message();
  EXPECT_NE(module.status().message().find(fragment), std::string::npos) << module.status().message();
}

// Current XLA dumps open with source tables that stack_frame_id metadata points into.
const char kWithSourceTables[] = R"(HloModule jit_f, entry_computation_layout={(f32[8]{0})->f32[8]{0}}

FileNames
1 "model.py"
2 "lib/layers.py"

FunctionNames
1 "<module>"
2 "layer"

FileLocations
1 {file_name_id=1 function_name_id=1 line=12 end_line=12 column=0 end_column=20}
2 {file_name_id=2 function_name_id=2 line=7 end_line=7 column=4 end_column=18}

StackFrames
1 {file_location_id=1 parent_frame_id=0}
2 {file_location_id=2 parent_frame_id=1}


ENTRY %main.1 (x.1: f32[8]) -> f32[8] {
  %x.1 = f32[8]{0} parameter(0), metadata={op_name="x"}
  ROOT %cc.1 = f32[8]{0} custom-call(%x.1), custom_call_target="cublas_kernel", metadata={op_name="jit(f)/k" stack_frame_id=2}
}
)";

TEST(ParserTest, SourceTablesOfCurrentXlaDumpsNameWhereAnInstructionComesFrom) {
  auto module = ParseHloModule(kWithSourceTables);
  ASSERT_TRUE(module.ok()) << module.status();
  const StackFrameIndex& index = (*module)->stack_frames();
  EXPECT_EQ(index.file_names, (std::vector<std::string>{"model.py", "lib/layers.py"}));
  ASSERT_EQ(index.stack_frames.size(), 2u);
  EXPECT_EQ(index.file_locations[1].line, 7);
  const HloInstruction* call = (*module)->entry_computation()->root_instruction();
  EXPECT_EQ((*module)->SourceOf(*call), "lib/layers.py:7, in layer");
  EXPECT_EQ((*module)->SourceOf(*call->operand(0)), "");
  // A refusal names the source line, as TensorFlow's messages name a node's.
  const Status refused = VerifyHloModule(**module);
  EXPECT_EQ(refused.code(), StatusCode::kNotFound) << refused;
  EXPECT_NE(refused.message().find("compatible with node cc.1 (defined at lib/layers.py:7, in layer)"),
            std::string::npos) << refused;
  auto copy = CloneModule(**module);
  ASSERT_TRUE(copy.ok());
  EXPECT_EQ((*copy)->SourceOf(*(*copy)->entry_computation()->root_instruction()), "lib/layers.py:7, in layer");
}

TEST(ParserTest, MalformedSourceTablesAreErrorsWithLineAndColumn) {
  const std::string text = kWithSourceTables;
  auto replace = [&](const std::string& from, const std::string& to) {
    std::string changed = text;
    changed.replace(changed.find(from), from.size(), to);
    return changed;
  };
  ExpectError(replace("2 \"lib/layers.py\"", "3 \"lib/layers.py\""), "line 5, column 1:",
              "FileNames ids count from 1 in order: expected 2, found 3");
  ExpectError(replace("line=7 end_line", "lines=7 end_line"), "line 13, column 38:", "unknown FileLocations field 'lines'");
  ExpectError(replace("2 {file_location_id=2 parent_frame_id=1}", "2 {file_location_id=5 parent_frame_id=1}"),
              "line 17, column 1:", "StackFrames entry 2 names a location that FileLocations does not hold");
  ExpectError(replace("2 {file_location_id=2 parent_frame_id=1}", "2 {file_location_id=2 parent_frame_id=9}"),
              "line 17, column 1:", "StackFrames entry 2 names parent frame 9, which StackFrames does not hold");
  ExpectError(replace("1 \"model.py\"", "1 \"model.py"), "line 4, column 3:", "unterminated string");
}

TEST(ParserTest, MissingParenthesis) {
  ExpectError("HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT n = f32[2] negate(p\n}\n",
              "line 5, column 1:", "')'");
}

TEST(ParserTest, UnknownElementType) {
  ExpectError("HloModule m\nENTRY e {\n  p = f31[2] parameter(0)\n}\n", "line 3, column 7:",
              "unknown element type 'f31'");
}

TEST(ParserTest, BadShape) {
  ExpectError("HloModule m\nENTRY e {\n  p = f32[2,x] parameter(0)\n}\n", "line 3, column 13:", "dimension size");
  ExpectError("HloModule m\nENTRY e {\n  p = f32[2]{1,0} parameter(0)\n}\n", "line 3, column 14:", "layout");
}

TEST(ParserTest, UnterminatedBrace) {
  ExpectError("HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n", "line 2, column 9:", "unterminated computation");
  ExpectError("HloModule m\nENTRY e {\n  ROOT c = f32[2] constant({1, 2)\n}\n", "line 3, column 33:", "'}'");
  ExpectError("HloModule m\nENTRY e {\n  p = f32[2] parameter(0), metadata={op_name=\"x\"\n}\n", "line 3, column 37:",
              "unterminated attribute value");
}

TEST(ParserTest, UnknownOperandName) {
  ExpectError("HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT a = f32[2] add(f32[2] %p, f32[2] %q)\n}\n",
              "line 4, column 41:", "unknown operand name 'q'");
}

TEST(ParserTest, OtherErrors) {
  ExpectError("HloModul m\n", "line 1, column 1:", "HloModule");
  ExpectError("HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  p = f32[2] parameter(1)\n}\n", "line 4, column 3:",
              "duplicate instruction name");
  ExpectError("HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT a = f32[2] add(f32[3] %p, f32[2] %p)\n}\n",
              "line 4, column 30:", "shape f32[3]");
  ExpectError("HloModule m\nENTRY e {\n  p = f32[] parameter(0)\n  ROOT r = f32[] call(p), to_apply=%nowhere\n}\n",
              "line 4, column 36:", "unknown computation 'nowhere'");
  ExpectError("HloModule m\nENTRY e {\n  ROOT c = f32[] constant(abc)\n}\n", "line 3, column 27:", "f32 value");
  ExpectError("HloModule m\nENTRY e {\n  ROOT c = f32[2] constant({1, 2, 3})\n}\n", "line 3, column 34:",
              "2 elements");
  ExpectError("", "line 1, column 1:", "HloModule");
}

TEST(ParserTest, TruncatedAndMutatedTextGivesErrorsNotCrashes) {
  std::string text = ReadSharedHlo("maml_flax_train_step.hlo");
  if (text.empty()) GTEST_SKIP();
  int errors = 0;
  for (size_t cut = 0; cut < text.size(); cut += 61) {
    auto module = ParseHloModule(std::string_view(text).substr(0, cut));
    if (!module.ok()) {
      ++errors;
      EXPECT_EQ(module.status().message().rfind("line ", 0), 0u) << module.status();
    }
  }
  EXPECT_GT(errors, 150);
  std::mt19937 rng(5);
  const char kNoise[] = "{}()[],=%:\"x0-9 \n";
  for (int trial = 0; trial < 300; ++trial) {
    std::string mutated = text;
    for (int k = 0; k < 3; ++k) mutated[rng() % mutated.size()] = kNoise[rng() % (sizeof(kNoise) - 1)];
    auto module = ParseHloModule(mutated);
    if (!module.ok()) EXPECT_EQ(module.status().message().rfind("line ", 0), 0u) << module.status();
  }
}

TEST(ParserTest, StrayClosingBracketInAnAttributeIsAnError) {
  // Found by mutating a real dump: the bracket used to be matched against an empty stack.
  ExpectError("HloModule m\nENTRY e {\n  ROOT p = f32[2] parameter(0), metadata=]op_name=\"x\"}\n}\n",
              "line 3, column 42:", "unexpected ']'");
}

TEST(ParserTest, HugeConstantIsRejectedWithoutAllocating) {
  ExpectError("HloModule m\nENTRY e {\n  ROOT c = f32[100000,100000,100000] constant({1})\n}\n", "line 3, column 47:",
              "more than the text holds");
}

TEST(ParserTest, HugeParameterNumberIsRejectedWithoutAllocating) {
  // Found by hlo_fuzzer (tb/fuzz/regressions/hlo_fuzzer-huge-parameter-number): the number sized the
  // computation's table of parameters, 1.4 GB for this one.
  ExpectError("HloModule m\nENTRY e {\n  ROOT p = f32[2] parameter(177777777)\n}\n", "line 3, column 29:",
              "parameter(177777777) needs parameters 0 to 177777776 too, more than the text holds");
  // Past what a std::vector can hold it threw std::length_error, which ended the process
  // (tb/fuzz/regressions/hlo_fuzzer-huge-parameter-number-length-error).
  ExpectError("HloModule m\nENTRY e {\n  ROOT p = f32[2] parameter(2111111111111111111)\n}\n", "line 3, column 29:",
              "more than the text holds");
  // The largest number a text of this length could hold is accepted (and then found missing its others).
  ExpectError("HloModule m\nENTRY e {\n  ROOT p = f32[2] parameter(9)\n}\n", "line 2, column 9:",
              "computation e has no parameter(0)");
}

TEST(ParserTest, InstructionUsingItselfIsAnErrorAtTheUse) {
  ExpectError("HloModule m\nENTRY e {\n  a = f32[4] parameter(0)\n  ROOT b = f32[4] add(a, b)\n}\n",
              "line 4, column 26:", "instruction %b uses itself as an operand");
}

TEST(ParserTest, OperandCycleNamesEveryInstructionInIt) {
  ExpectError("HloModule m\nENTRY e {\n  a = f32[4] parameter(0)\n  b = f32[4] add(a, c)\n"
              "  ROOT c = f32[4] multiply(b, b)\n}\n",
              "line 5, column 28:", "instructions %b and %c form a cycle: %b uses %c, %c uses %b");
  ExpectError("HloModule m\nENTRY e {\n  x = f32[] negate(z)\n  y = f32[] negate(x)\n  ROOT z = f32[] negate(y)\n}\n",
              "line 4, column 20:", "instructions %x, %z and %y form a cycle: %x uses %z, %z uses %y, %y uses %x");
}

TEST(ParserTest, EveryXlaElementTypeParses) {
  // The verifier rejects the unsupported ones by name; the parser must know them all.
  for (const char* name : {"pred", "s1", "s2", "s4", "s8", "s16", "s32", "s64", "u1", "u2", "u4", "u8", "u16", "u32",
                           "u64", "f16", "bf16", "f32", "f64", "f8e5m2", "f8e4m3", "f8e4m3fn", "f8e4m3b11fnuz",
                           "f8e5m2fnuz", "f8e4m3fnuz", "f8e3m4", "f4e2m1fn", "f8e8m0fnu", "c64", "c128"}) {
    auto module = MustParse(std::string("HloModule m\nENTRY e {\n  ROOT p = ") + name + "[2] parameter(0)\n}\n");
    ASSERT_NE(module, nullptr) << name;
    EXPECT_EQ(module->entry_computation()->root_instruction()->shape().ToString(), std::string(name) + "[2]");
  }
  // Constants of such types keep their text unparsed (complex values are pairs).
  auto module = MustParse("HloModule m\nENTRY e {\n  ROOT c = c64[2] constant({(1, 2), (3, 4)})\n}\n");
  ASSERT_NE(module, nullptr);
  EXPECT_EQ(module->entry_computation()->root_instruction()->shape().element_type, PrimitiveType::C64);
}

TEST(ParserTest, UnknownOpcodeIsKeptForTheVerifier) {
  auto module = MustParse("HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT x = f32[2] frobnicate(p)\n}\n");
  ASSERT_NE(module, nullptr);
  const HloInstruction* root = module->entry_computation()->root_instruction();
  EXPECT_EQ(root->opcode(), HloOpcode::kUnknown);
  EXPECT_EQ(root->opcode_name(), "frobnicate");
}

}  // namespace
}  // namespace tpu::hlo
