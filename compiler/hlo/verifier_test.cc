#include "compiler/hlo/verifier.h"

#include <gtest/gtest.h>

#include "compiler/hlo/parser.h"
#include "compiler/hlo/test_util.h"

namespace tpu::hlo {
namespace {

Status VerifyText(const std::string& text, const VerifierOptions& options = {}) {
  auto module = ParseHloModule(text);
  EXPECT_TRUE(module.ok()) << module.status();
  if (!module.ok()) return module.status();
  return VerifyHloModule(**module, options);
}

std::string Entry(const std::string& body) { return "HloModule m\n\nENTRY %e {\n" + body + "}\n"; }

TEST(VerifierTest, SharedFilesVerify) {
  for (const char* name : testing::kSharedHloFiles) {
    std::string text = testing::ReadSharedHlo(name);
    if (text.empty()) GTEST_SKIP() << "no ../shared/hlo";
    Status status = VerifyText(text);
    EXPECT_TRUE(status.ok()) << name << ": " << status;
  }
}

TEST(VerifierTest, DynamicDimensionIsAValueError) {
  Status status = VerifyText(Entry("  ROOT %p = f32[?,10]{1,0} parameter(0)\n"));
  EXPECT_EQ(status.code(), StatusCode::kValueError);
  EXPECT_EQ(status.ToString(),
            "ValueError: shape f32[?,10] must have a fixed size for dimension 0 that is known at graph construction "
            "time.");
  Status bounded = VerifyText(Entry("  %p = f32[4]{0} parameter(0)\n  ROOT %s = s32[2,<=4]{1,0} custom-call(%p), "
                                    "custom_call_target=\"AwsNeuronTransferWithStaticRing\"\n"));
  EXPECT_EQ(bounded.code(), StatusCode::kValueError);
  EXPECT_NE(bounded.message().find("shape s32[2,<=4] must have a fixed size for dimension 1"), std::string::npos)
      << bounded;
}

TEST(VerifierTest, F64InputIsATypeError) {
  Status status = VerifyText(Entry("  ROOT %p = f64[3]{0} parameter(0)\n"));
  EXPECT_EQ(status.ToString(), "TypeError: DataType f64 is not a supported TPU infeed type.");
}

TEST(VerifierTest, StrictInfeedTypesFollowTheCloudTpuList) {
  std::string text = Entry("  ROOT %p = s64[32]{0} parameter(0)\n");
  EXPECT_TRUE(VerifyText(text).ok());  // PyTorch/XLA feeds s64 labels; accepted by default
  VerifierOptions strict;
  strict.strict_infeed_types = true;
  EXPECT_EQ(VerifyText(text, strict).ToString(), "TypeError: DataType s64 is not a supported TPU infeed type.");
  EXPECT_TRUE(VerifyText(Entry("  ROOT %p = bf16[32]{0} parameter(0)\n"), strict).ok());
}

TEST(VerifierTest, F64InsideTheProgramIsInvalid) {
  Status status = VerifyText(Entry("  %p = f32[3]{0} parameter(0)\n  ROOT %c = f64[3]{0} convert(f32[3]{0} %p)\n"));
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("f64"), std::string::npos);
}

TEST(VerifierTest, UnsupportedElementTypesAreUnimplementedByName) {
  for (const char* name : {"c64", "c128", "f8e4m3fn", "f8e5m2", "s4", "u4", "f4e2m1fn"}) {
    Status status = VerifyText("HloModule m\nENTRY e {\n  ROOT p = " + std::string(name) + "[4] parameter(0)\n}\n");
    EXPECT_EQ(status.ToString(),
              "UnimplementedError: element type " + std::string(name) + " of parameter p is not supported by this TPU");
  }
  Status inside = VerifyText(Entry("  %p = f32[2]{0} parameter(0)\n  ROOT %c = c64[2]{0} convert(%p)\n"));
  EXPECT_EQ(inside.ToString(),
            "UnimplementedError: element type c64 of instruction %c (convert) is not supported by this TPU");
  Status constant = VerifyText(Entry("  ROOT %c = c128[] constant((1, 0))\n"));
  EXPECT_EQ(constant.code(), StatusCode::kUnimplemented) << constant;
}

TEST(VerifierTest, OperandCycleIsRejected) {
  // Built after parsing (the parser rejects a cycle in the text): the verifier must catch it too.
  auto module = ParseHloModule(Entry("  %a = f32[4]{0} parameter(0)\n  %b = f32[4]{0} add(%a, %a)\n"
                                     "  ROOT %c = f32[4]{0} negate(%b)\n"));
  ASSERT_TRUE(module.ok()) << module.status();
  HloComputation* entry = (*module)->entry_computation();
  ASSERT_TRUE(entry->GetInstructionWithName("b")->ReplaceOperandWith(1, entry->GetInstructionWithName("c")).ok());
  Status status = VerifyHloModule(**module);
  EXPECT_EQ(status.ToString(),
            "InvalidArgumentError: computation e: instructions %b and %c form a cycle: %b uses %c, %c uses %b");
  EXPECT_EQ(CloneModule(**module).status().code(), StatusCode::kInvalidArgument);  // an error, not an exception
}

TEST(VerifierTest, ComputationsCallingEachOtherAreRejected) {
  auto module = ParseHloModule("HloModule m\n\n%f (x: f32[]) -> f32[] {\n  %x = f32[] parameter(0)\n"
                               "  ROOT %r = f32[] negate(%x)\n}\n\n"
                               "%g (y: f32[]) -> f32[] {\n  %y = f32[] parameter(0)\n"
                               "  ROOT %r = f32[] call(%y), to_apply=%f\n}\n\n"
                               "ENTRY %e {\n  %p = f32[] parameter(0)\n  ROOT %c = f32[] call(%p), to_apply=%g\n}\n");
  ASSERT_TRUE(module.ok()) << module.status();
  ASSERT_TRUE(VerifyHloModule(**module).ok());
  // %f now calls %g back.
  HloComputation* f = (*module)->GetComputationWithName("f");
  HloInstruction* x = f->GetInstructionWithName("x");
  auto call = HloInstruction::Create(HloOpcode::kCall, x->shape(), {x}, "back");
  call->AddCalledComputation("to_apply", (*module)->GetComputationWithName("g"));
  f->set_root_instruction(f->AddInstruction(std::move(call)));
  Status status = VerifyHloModule(**module);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("computations call each other"), std::string::npos) << status;
}

TEST(VerifierTest, ShapeOfMoreThanInt64BytesIsRejected) {
  Status status = VerifyText(Entry("  ROOT %p = f32[100000000000,100000000000]{1,0} parameter(0)\n"));
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("more than 2^63 bytes"), std::string::npos) << status;
}

TEST(VerifierTest, UnknownOpcodeIsNotRegistered) {
  Status status = VerifyText(Entry("  %p = f32[3]{0} parameter(0)\n  ROOT %w = f32[3]{0} frobnicate(f32[3]{0} %p)\n"));
  EXPECT_EQ(status.ToString(),
            "NotFoundError: No registered 'frobnicate' OpKernel for XLA_TPU_JIT devices compatible with node w");
}

TEST(VerifierTest, UnknownCustomCallTargetIsNotRegistered) {
  Status status = VerifyText(Entry("  %p = f32[3]{0} parameter(0)\n  ROOT %c = f32[3]{0} custom-call(f32[3]{0} %p), "
                                   "custom_call_target=\"SomeHostCallback\"\n"));
  EXPECT_EQ(status.ToString(),
            "NotFoundError: No registered 'SomeHostCallback' OpKernel for XLA_TPU_JIT devices compatible with node c");
  EXPECT_TRUE(VerifyText(Entry("  %p = f32[3]{0} parameter(0)\n  ROOT %c = f32[3]{0} custom-call(f32[3]{0} %p), "
                               "custom_call_target=\"AwsNeuronTransferWithStaticRing\"\n"))
                  .ok());
}

TEST(VerifierTest, ShapeMismatchIsReported) {
  Status status = VerifyText(Entry("  %a = f32[2,3]{1,0} parameter(0)\n  %b = f32[3,4]{1,0} parameter(1)\n"
                                   "  ROOT %d = f32[2,5]{1,0} dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"));
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("shape f32[2,5] does not match the inferred shape f32[2,4]"), std::string::npos)
      << status;
}

TEST(VerifierTest, OperandProblems) {
  Status count = VerifyText(Entry("  %a = f32[2]{0} parameter(0)\n  ROOT %n = f32[2]{0} negate(%a, %a)\n"));
  EXPECT_NE(count.message().find("expected 1 operand(s), got 2"), std::string::npos) << count;
  Status dims = VerifyText(Entry("  %a = f32[2]{0} parameter(0)\n  %b = f32[3]{0} parameter(1)\n"
                                 "  ROOT %s = f32[2]{0} add(%a, %b)\n"));
  EXPECT_NE(dims.message().find("same dimensions"), std::string::npos) << dims;
  Status contracting = VerifyText(Entry("  %a = f32[2,3]{1,0} parameter(0)\n  %b = f32[4,4]{1,0} parameter(1)\n"
                                        "  ROOT %d = f32[2,4]{1,0} dot(%a, %b), lhs_contracting_dims={1}, "
                                        "rhs_contracting_dims={0}\n"));
  EXPECT_NE(contracting.message().find("contracting dimension sizes differ"), std::string::npos) << contracting;
  Status broadcast = VerifyText(Entry("  %a = f32[3]{0} parameter(0)\n  ROOT %b = f32[2,4]{1,0} broadcast(%a), "
                                      "dimensions={1}\n"));
  EXPECT_NE(broadcast.message().find("does not map onto dimension 1"), std::string::npos) << broadcast;
  Status reshape = VerifyText(Entry("  %a = f32[6]{0} parameter(0)\n  ROOT %r = f32[4]{0} reshape(%a)\n"));
  EXPECT_NE(reshape.message().find("element counts differ"), std::string::npos) << reshape;
}

TEST(VerifierTest, ConvolutionShapeInference) {
  std::string good = Entry(
      "  %x = f32[2,9,9,4]{3,2,1,0} parameter(0)\n  %k = f32[3,3,2,6]{3,2,1,0} parameter(1)\n"
      "  ROOT %c = f32[2,5,5,6]{3,2,1,0} convolution(%x, %k), window={size=3x3 stride=2x2 pad=1_1x1_1}, "
      "dim_labels=b01f_01io->b01f, feature_group_count=2\n");
  EXPECT_TRUE(VerifyText(good).ok()) << VerifyText(good);
  std::string bad = good;
  bad.replace(bad.find("f32[2,5,5,6]"), 12, "f32[2,4,4,6]");
  EXPECT_NE(VerifyText(bad).message().find("inferred shape f32[2,5,5,6]"), std::string::npos) << VerifyText(bad);
}

TEST(VerifierTest, InferShapeIsUsableOnItsOwn) {
  auto module = ParseHloModule(Entry("  %a = f32[2,3]{1,0} parameter(0)\n  ROOT %t = f32[3,2]{0,1} transpose(%a), "
                                     "dimensions={1,0}\n"));
  ASSERT_TRUE(module.ok());
  auto shape = InferShape(*(*module)->entry_computation()->root_instruction());
  ASSERT_TRUE(shape.ok()) << shape.status();
  EXPECT_EQ(shape->ToString(), "f32[3,2]");
}


const char* kAdd = "%add (a: f32[], b: f32[]) -> f32[] {\n  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n"
                   "  ROOT %s = f32[] add(%a, %b)\n}\n\n";

std::string WithAdd(const std::string& body) { return std::string("HloModule m\n\n") + kAdd + "ENTRY %e {\n" + body + "}\n"; }

TEST(VerifierTest, GatherShapeInference) {
  const std::string prefix = "  %t = f32[5,3]{1,0} parameter(0)\n  %i = s32[4]{0} parameter(1)\n";
  const std::string attrs = "offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}\n";
  EXPECT_TRUE(VerifyText(Entry(prefix + "  ROOT %g = f32[4,3]{1,0} gather(%t, %i), " + attrs)).ok());
  Status wrong = VerifyText(Entry(prefix + "  ROOT %g = f32[3,4]{1,0} gather(%t, %i), " + attrs));
  EXPECT_EQ(wrong.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(wrong.message().find("inferred shape f32[4,3]"), std::string::npos) << wrong;
  Status too_big = VerifyText(Entry(prefix + "  ROOT %g = f32[4,4]{1,0} gather(%t, %i), offset_dims={1}, "
                                             "collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,4}\n"));
  EXPECT_NE(too_big.message().find("slice size 4 out of range"), std::string::npos) << too_big;
  Status missing = VerifyText(Entry(prefix + "  ROOT %g = f32[4,3]{1,0} gather(%t, %i), offset_dims={1}\n"));
  EXPECT_NE(missing.message().find("missing collapsed_slice_dims="), std::string::npos) << missing;
}

TEST(VerifierTest, DynamicSliceShapeInference) {
  const std::string prefix = "  %a = f32[6,4]{1,0} parameter(0)\n  %i = s32[] parameter(1)\n  %u = f32[2,4]{1,0} parameter(2)\n";
  EXPECT_TRUE(VerifyText(Entry(prefix + "  ROOT %s = f32[2,4]{1,0} dynamic-slice(%a, %i, %i), dynamic_slice_sizes={2,4}\n")).ok());
  EXPECT_TRUE(VerifyText(Entry(prefix + "  ROOT %s = f32[6,4]{1,0} dynamic-update-slice(%a, %u, %i, %i)\n")).ok());
  Status wrong = VerifyText(Entry(prefix + "  ROOT %s = f32[3,4]{1,0} dynamic-slice(%a, %i, %i), dynamic_slice_sizes={2,4}\n"));
  EXPECT_NE(wrong.message().find("inferred shape f32[2,4]"), std::string::npos) << wrong;
  Status starts = VerifyText(Entry(prefix + "  ROOT %s = f32[2,4]{1,0} dynamic-slice(%a, %i), dynamic_slice_sizes={2,4}\n"));
  EXPECT_NE(starts.message().find("needs 2 start indices, one per operand dimension"), std::string::npos) << starts;
  Status too_big = VerifyText(Entry(prefix + "  ROOT %s = f32[7,4]{1,0} dynamic-slice(%a, %i, %i), dynamic_slice_sizes={7,4}\n"));
  EXPECT_NE(too_big.message().find("size 7 out of range for dimension 0"), std::string::npos) << too_big;
  Status float_start = VerifyText(Entry(prefix + "  %f = f32[] parameter(3)\n"
                                        "  ROOT %s = f32[6,4]{1,0} dynamic-update-slice(%a, %u, %f, %i)\n"));
  EXPECT_NE(float_start.message().find("start index 0 must be an integer scalar"), std::string::npos) << float_start;
  Status missing = VerifyText(Entry(prefix + "  ROOT %s = f32[2,4]{1,0} dynamic-slice(%a, %i, %i)\n"));
  EXPECT_NE(missing.message().find("missing dynamic_slice_sizes="), std::string::npos) << missing;
}

// Found by the HLO fuzzer: a reduce-window whose to_apply= was lost reached the interpreter.
TEST(VerifierTest, ReduceWindowNeedsItsComputation) {
  const std::string body = "  %x = f32[4,4]{1,0} parameter(0)\n  %z = f32[] constant(0)\n";
  EXPECT_TRUE(VerifyText(WithAdd(body + "  ROOT %r = f32[2,2]{1,0} reduce-window(%x, %z), window={size=2x2 stride=2x2}, "
                                        "to_apply=%add\n")).ok());
  Status missing = VerifyText(WithAdd(body + "  ROOT %r = f32[2,2]{1,0} reduce-window(%x, %z), window={size=2x2 stride=2x2}\n"));
  EXPECT_NE(missing.message().find("reduce-window needs to_apply= taking 2 parameters"), std::string::npos) << missing;
}

TEST(VerifierTest, ScatterShapeInference) {
  const std::string prefix = "  %a = f32[3,2]{1,0} parameter(0)\n  %i = s32[4]{0} parameter(1)\n";
  const std::string attrs = "update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, "
                            "index_vector_dim=1, to_apply=%add\n";
  EXPECT_TRUE(VerifyText(WithAdd(prefix + "  %u = f32[4,2]{1,0} parameter(2)\n  ROOT %s = f32[3,2]{1,0} scatter(%a, %i, %u), " + attrs)).ok());
  Status mismatch = VerifyText(WithAdd(prefix + "  %u = f32[5,2]{1,0} parameter(2)\n  ROOT %s = f32[3,2]{1,0} scatter(%a, %i, %u), " + attrs));
  EXPECT_NE(mismatch.message().find("does not match the indices"), std::string::npos) << mismatch;
}

TEST(VerifierTest, CollectiveShapeInferenceAndReplicaGroups) {
  const std::string x = "  %x = f32[4,2]{1,0} parameter(0)\n";
  EXPECT_TRUE(VerifyText(WithAdd(x + "  ROOT %r = f32[4,2]{1,0} all-reduce(%x), replica_groups={{0,1}}, to_apply=%add\n")).ok());
  Status shape = VerifyText(WithAdd(x + "  ROOT %r = f32[8,2]{1,0} all-reduce(%x), replica_groups={{0,1}}, to_apply=%add\n"));
  EXPECT_NE(shape.message().find("inferred shape f32[4,2]"), std::string::npos) << shape;
  Status twice = VerifyText(WithAdd(x + "  ROOT %r = f32[4,2]{1,0} all-reduce(%x), replica_groups={{0,1},{1,2}}, to_apply=%add\n"));
  EXPECT_NE(twice.message().find("in two groups"), std::string::npos) << twice;
  Status no_reducer = VerifyText(Entry(x + "  ROOT %r = f32[4,2]{1,0} all-reduce(%x), replica_groups={}\n"));
  EXPECT_NE(no_reducer.message().find("to_apply="), std::string::npos) << no_reducer;
  EXPECT_TRUE(VerifyText(Entry(x + "  ROOT %g = f32[8,2]{1,0} all-gather(%x), replica_groups={{0,1}}, dimensions={0}\n")).ok());
  Status gather = VerifyText(Entry(x + "  ROOT %g = f32[4,4]{1,0} all-gather(%x), replica_groups={{0,1}}, dimensions={0}\n"));
  EXPECT_NE(gather.message().find("inferred shape f32[8,2]"), std::string::npos) << gather;
  EXPECT_TRUE(VerifyText(WithAdd(x + "  ROOT %s = f32[2,2]{1,0} reduce-scatter(%x), replica_groups={{0,1}}, dimensions={0}, to_apply=%add\n")).ok());
  EXPECT_TRUE(VerifyText(Entry(x + "  ROOT %p = f32[4,2]{1,0} collective-permute(%x), source_target_pairs={{0,1},{1,0}}\n")).ok());
  Status pairs = VerifyText(Entry(x + "  ROOT %p = f32[4,2]{1,0} collective-permute(%x), source_target_pairs={{0,1},{0,2}}\n"));
  EXPECT_NE(pairs.message().find("two pairs"), std::string::npos) << pairs;
}


TEST(VerifierTest, ControlFlowAndFusionSignatures) {
  const std::string cond = "%cond (s: f32[2]) -> pred[] {\n  %s = f32[2]{0} parameter(0)\n  ROOT %t = pred[] constant(false)\n}\n\n";
  const std::string body = "%body (s: f32[2]) -> f32[2] {\n  %s = f32[2]{0} parameter(0)\n  ROOT %n = f32[2]{0} negate(%s)\n}\n\n";
  const std::string wide = "%wide (s: f32[3]) -> f32[3] {\n  %s = f32[3]{0} parameter(0)\n  ROOT %n = f32[3]{0} negate(%s)\n}\n\n";
  auto module = [](const std::string& computations, const std::string& entry) {
    return "HloModule m\n\n" + computations + "ENTRY %e {\n" + entry + "}\n";
  };
  EXPECT_TRUE(VerifyText(module(cond + body, "  %x = f32[2]{0} parameter(0)\n  ROOT %w = f32[2]{0} while(%x), condition=%cond, body=%body\n")).ok());
  Status body_shape = VerifyText(module(cond + wide, "  %x = f32[2]{0} parameter(0)\n  ROOT %w = f32[2]{0} while(%x), condition=%cond, body=%wide\n"));
  EXPECT_NE(body_shape.message().find("must take one parameter of shape f32[2]"), std::string::npos) << body_shape;
  Status branches = VerifyText(module(body + wide, "  %p = pred[] parameter(0)\n  %x = f32[2]{0} parameter(1)\n"
                                                   "  %y = f32[3]{0} parameter(2)\n"
                                                   "  ROOT %c = f32[2]{0} conditional(%p, %x, %y), true_computation=%body, false_computation=%wide\n"));
  EXPECT_NE(branches.message().find("same shape"), std::string::npos) << branches;
  Status fusion = VerifyText(module(wide, "  %x = f32[2]{0} parameter(0)\n  ROOT %f = f32[3]{0} fusion(%x), kind=kLoop, calls=%wide\n"));
  EXPECT_NE(fusion.message().find("does not match the fused parameter"), std::string::npos) << fusion;
}

}  // namespace
}  // namespace tpu::hlo
