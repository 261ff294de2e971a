#include "compiler/passes/codegen_legalization.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "compiler/hlo/parser.h"
#include "compiler/hlo/verifier.h"
#include "compiler/interpreter/interpreter.h"
#include "compiler/passes/pass_test_util.h"

namespace tpu::compiler {
namespace {

using testing::Canonical;
using testing::RunPassOnText;
using Dims = std::vector<int64_t>;

std::string DimsText(const Dims& dims) {
  std::string text;
  for (int64_t d : dims) text += (text.empty() ? "" : ",") + std::to_string(d);
  return text;
}

std::string ShapeText(const std::string& type, const Dims& dims) { return type + "[" + DimsText(dims) + "]"; }

std::string ReduceModule(const std::string& type, const std::string& op, const Dims& in, const Dims& reduced,
                         const std::string& init) {
  Dims out;
  for (size_t d = 0; d < in.size(); ++d) {
    if (std::find(reduced.begin(), reduced.end(), static_cast<int64_t>(d)) == reduced.end()) out.push_back(in[d]);
  }
  const std::string scalar = type + "[]";
  return "HloModule r\n\n%reducer (a: " + scalar + ", b: " + scalar + ") -> " + scalar + " {\n  %a = " + scalar +
         " parameter(0)\n  %b = " + scalar + " parameter(1)\n  ROOT %r = " + scalar + " " + op + "(" + scalar +
         " %a, " + scalar + " %b)\n}\n\nENTRY %main (x: " + ShapeText(type, in) + ") -> " + ShapeText(type, out) +
         " {\n  %x = " + ShapeText(type, in) + " parameter(0)\n  %init = " + scalar + " constant(" + init +
         ")\n  ROOT %reduce = " + ShapeText(type, out) + " reduce(" + ShapeText(type, in) + " %x, " + scalar +
         " %init), dimensions={" + DimsText(reduced) + "}, to_apply=%reducer\n}\n";
}

std::string TransposeModule(const std::string& type, const Dims& in, const Dims& perm) {
  Dims out;
  for (int64_t d : perm) out.push_back(in[d]);
  return "HloModule t\n\nENTRY %main (x: " + ShapeText(type, in) + ") -> " + ShapeText(type, out) + " {\n  %x = " +
         ShapeText(type, in) + " parameter(0)\n  ROOT %t = " + ShapeText(type, out) + " transpose(" +
         ShapeText(type, in) + " %x), dimensions={" + DimsText(perm) + "}\n}\n";
}

// Random arguments; small integers for add reductions, so that every summation order gives the same sum.
hlo::Literal RandomArgument(const hlo::Shape& shape, bool integers, std::mt19937& rng) {
  hlo::Literal literal(shape);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  for (int64_t i = 0; i < literal.element_count(); ++i) {
    literal.SetFromDouble(i, integers ? static_cast<double>(static_cast<int>(rng() % 41) - 20) : unit(rng));
  }
  return literal;
}

// Runs the pass on `text` and checks that it changed the module as `expect_change` says, that the
// result verifies, and that it interprets to exactly the original's values on random arguments.
// Returns the rewritten module.
std::unique_ptr<hlo::HloModule> CheckEquivalent(const std::string& text, bool integers, bool expect_change,
                                                CodegenLegalizationOptions options = {}) {
  std::unique_ptr<hlo::HloModule> module = hlo::ParseHloModule(text).value();
  EXPECT_TRUE(hlo::VerifyHloModule(*module).ok()) << text;
  std::mt19937 rng(static_cast<uint32_t>(text.size()));
  std::vector<hlo::Literal> arguments;
  for (const hlo::HloInstruction* parameter : module->entry_computation()->parameter_instructions()) {
    arguments.push_back(RandomArgument(parameter->shape(), integers, rng));
  }
  std::vector<hlo::Literal> expected = hlo::Interpret(*module, arguments).value();
  CodegenLegalization pass(options);
  StatusOr<bool> changed = pass.Run(module.get());
  EXPECT_TRUE(changed.ok()) << changed.status();
  EXPECT_EQ(changed.ok() && *changed, expect_change) << text;
  Status verified = hlo::VerifyHloModule(*module);
  EXPECT_TRUE(verified.ok()) << verified << "\n" << module->ToString();
  std::vector<hlo::Literal> got = hlo::Interpret(*module, arguments).value();
  EXPECT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size() && i < expected.size(); ++i) EXPECT_EQ(got[i], expected[i]) << text;
  return module;
}

// Every transpose left is rank 2 or keeps the minor dimension (a row permutation), every reduce is over
// consecutive dimensions: what codegen takes.
void ExpectOnlyLoweredForms(const hlo::HloModule& module) {
  for (const hlo::HloInstruction* instruction : module.entry_computation()->instructions()) {
    if (instruction->opcode() == hlo::HloOpcode::kTranspose) {
      const Dims& perm = instruction->dimensions();
      EXPECT_TRUE(perm == (Dims{1, 0}) || perm.back() == static_cast<int64_t>(perm.size()) - 1)
          << instruction->ToString();
    }
    if (instruction->opcode() == hlo::HloOpcode::kReduce) {
      Dims dims = instruction->dimensions();
      std::sort(dims.begin(), dims.end());
      const int rank = instruction->operand(0)->shape().rank();
      EXPECT_EQ(dims.back() - dims.front() + 1, static_cast<int64_t>(dims.size())) << instruction->ToString();
      // The minor dimension only of ranks 1 and 2 (codegen preparation), or with one element.
      if (dims.back() == rank - 1 && instruction->operand(0)->shape().dimensions.back() > 1) {
        EXPECT_LE(rank, 2) << instruction->ToString();
      }
    }
  }
}

TEST(CodegenLegalizationTest, VectorToScalarWithInitBecomesIdentityReduceAndAdd) {
  const char* expected = R"(HloModule r

%reducer (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %r = f32[] add(f32[] %a, f32[] %b)
}

ENTRY %main (x: f32[7]) -> f32[] {
  %x = f32[7] parameter(0)
  %init = f32[] constant(1.5)
  %constant.0 = f32[] constant(0)
  %reduce.1 = f32[] reduce(f32[7] %x, f32[] %constant.0), dimensions={0}, to_apply=%reducer
  ROOT %add.2 = f32[] add(f32[] %reduce.1, f32[] %init)
}

)";
  CodegenLegalization pass;
  testing::PassResult result = RunPassOnText(pass, ReduceModule("f32", "add", {7}, {0}, "1.5"));
  EXPECT_TRUE(result.changed);
  EXPECT_EQ(result.printed, expected);
}

TEST(CodegenLegalizationTest, NonConsecutiveDimensionsBecomeOneReducePerRun) {
  const char* expected = R"(HloModule r

%reducer (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %r = f32[] maximum(f32[] %a, f32[] %b)
}

ENTRY %main (x: f32[4,5,6,3]) -> f32[5,3] {
  %x = f32[4,5,6,3] parameter(0)
  %init = f32[] constant(-inf)
  %reduce.0 = f32[4,5,3] reduce(f32[4,5,6,3] %x, f32[] %init), dimensions={2}, to_apply=%reducer
  ROOT %reduce.1 = f32[5,3] reduce(f32[4,5,3] %reduce.0, f32[] %init), dimensions={0}, to_apply=%reducer
}

)";
  CodegenLegalization pass;
  testing::PassResult result = RunPassOnText(pass, ReduceModule("f32", "maximum", {4, 5, 6, 3}, {0, 2}, "-inf"));
  EXPECT_TRUE(result.changed);
  EXPECT_EQ(result.printed, expected);
}

TEST(CodegenLegalizationTest, MinorDimensionOfRank3GoesThroughOnePaddedTranspose) {
  const char* expected = R"(HloModule r

%reducer (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %r = f32[] add(f32[] %a, f32[] %b)
}

ENTRY %main (x: f32[2,3,5]) -> f32[2,3] {
  %x = f32[2,3,5] parameter(0)
  %init = f32[] constant(0)
  %constant.0 = f32[] constant(0)
  %pad.1 = f32[2,128,5] pad(f32[2,3,5] %x, f32[] %constant.0), padding=0_0x0_125x0_0
  %reshape.2 = f32[256,5] reshape(f32[2,128,5] %pad.1)
  %transpose.3 = f32[5,256] transpose(f32[256,5] %reshape.2), dimensions={1,0}
  %reduce.4 = f32[256] reduce(f32[5,256] %transpose.3, f32[] %init), dimensions={0}, to_apply=%reducer
  %reshape.5 = f32[2,128] reshape(f32[256] %reduce.4)
  ROOT %slice.6 = f32[2,3] slice(f32[2,128] %reshape.5), slice={[0:2], [0:3]}
}

)";
  CodegenLegalization pass;
  testing::PassResult result = RunPassOnText(pass, ReduceModule("f32", "add", {2, 3, 5}, {2}, "0"));
  EXPECT_TRUE(result.changed);
  EXPECT_EQ(result.printed, expected);
}

// With 8 lanes (tiny) the rows moved onto lanes are padded to 8, not 128: 16 rows instead of 256.
TEST(CodegenLegalizationTest, MinorDimensionOfRank3PadsToTheLaneMultiple) {
  const char* expected = R"(HloModule r

%reducer (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %r = f32[] add(f32[] %a, f32[] %b)
}

ENTRY %main (x: f32[2,3,5]) -> f32[2,3] {
  %x = f32[2,3,5] parameter(0)
  %init = f32[] constant(0)
  %constant.0 = f32[] constant(0)
  %pad.1 = f32[2,8,5] pad(f32[2,3,5] %x, f32[] %constant.0), padding=0_0x0_5x0_0
  %reshape.2 = f32[16,5] reshape(f32[2,8,5] %pad.1)
  %transpose.3 = f32[5,16] transpose(f32[16,5] %reshape.2), dimensions={1,0}
  %reduce.4 = f32[16] reduce(f32[5,16] %transpose.3, f32[] %init), dimensions={0}, to_apply=%reducer
  %reshape.5 = f32[2,8] reshape(f32[16] %reduce.4)
  ROOT %slice.6 = f32[2,3] slice(f32[2,8] %reshape.5), slice={[0:2], [0:3]}
}

)";
  CodegenLegalization pass(CodegenLegalizationOptions{/*lane_multiple=*/8});
  testing::PassResult result = RunPassOnText(pass, ReduceModule("f32", "add", {2, 3, 5}, {2}, "0"));
  EXPECT_TRUE(result.changed);
  EXPECT_EQ(result.printed, expected);
}

// Codegen moves the rows of a row permutation with DMAs; moving only unit dimensions is a reshape.
TEST(CodegenLegalizationTest, RowPermutationsAreLeftToCodegen) {
  for (const std::string& input : {TransposeModule("f32", {2, 3, 5}, {1, 0, 2}),
                                   TransposeModule("f32", {41, 43, 3}, {1, 0, 2}),
                                   TransposeModule("f32", {2, 3, 4, 5}, {2, 0, 1, 3})}) {
    CodegenLegalization pass;
    testing::PassResult result = RunPassOnText(pass, input);
    EXPECT_FALSE(result.changed) << input;
  }
  std::unique_ptr<hlo::HloModule> module = CheckEquivalent(TransposeModule("f32", {7, 1, 9}, {1, 0, 2}), false, true);
  for (const hlo::HloInstruction* instruction : module->entry_computation()->instructions()) {
    EXPECT_NE(instruction->opcode(), hlo::HloOpcode::kTranspose) << instruction->ToString();
  }
}

// Softmax over the last axis of a rank-3 value broadcasts [2,5] back to [2,5,7]: through the column [10].
TEST(CodegenLegalizationTest, AKeepDimsBroadcastGoesThroughAColumn) {
  CodegenLegalization pass;
  const char* input = R"(HloModule keepdims

ENTRY %main (m: f32[2,5]) -> f32[2,5,7] {
  %m = f32[2,5]{1,0} parameter(0)
  ROOT %b = f32[2,5,7]{2,1,0} broadcast(f32[2,5]{1,0} %m), dimensions={0,1}
}
)";
  const char* checks = R"(
CHECK:      %[[C:reshape.[0-9]+]] = f32[10] reshape(f32[2,5]{1,0} %m)
CHECK-NEXT: %[[S:broadcast.[0-9]+]] = f32[10,7] broadcast(f32[10] %[[C]]), dimensions={0}
CHECK-NEXT: ROOT %{{reshape.[0-9]+}} = f32[2,5,7] reshape(f32[10,7] %[[S]])
)";
  testing::ExpectRewrite(pass, input, checks);
  // A broadcast into the middle repeats the operand in front, then permutes the rows.
  testing::ExpectRewrite(pass, R"(HloModule middle

ENTRY %main (m: f32[2,7]) -> f32[2,5,7] {
  %m = f32[2,7]{1,0} parameter(0)
  ROOT %b = f32[2,5,7]{2,1,0} broadcast(f32[2,7]{1,0} %m), dimensions={0,2}
}
)", R"(
CHECK:      %[[R:broadcast.[0-9]+]] = f32[5,2,7] broadcast(f32[2,7]{1,0} %m), dimensions={1,2}
CHECK-NEXT: ROOT %{{transpose.[0-9]+}} = f32[2,5,7] transpose(f32[5,2,7] %[[R]]), dimensions={1,0,2}
)");
}

// u32 order is the s32 order of the words with the sign bit flipped.
TEST(CodegenLegalizationTest, UnsignedOrderFlipsTheSignBit) {
  CodegenLegalization pass;
  testing::ExpectRewrite(pass, R"(HloModule unsigned

ENTRY %main (a: u32[4], b: u32[4]) -> (pred[4], u32[4]) {
  %a = u32[4]{0} parameter(0)
  %b = u32[4]{0} parameter(1)
  %lt = pred[4]{0} compare(u32[4]{0} %a, u32[4]{0} %b), direction=LT
  %max = u32[4]{0} maximum(u32[4]{0} %a, u32[4]{0} %b)
  ROOT %t = (pred[4], u32[4]) tuple(pred[4]{0} %lt, u32[4]{0} %max)
}
)", R"(
CHECK:      %[[SIGN:constant.[0-9]+]] = u32[] constant(2147483648)
CHECK-NEXT: %[[FLIP:broadcast.[0-9]+]] = u32[4] broadcast(u32[] %[[SIGN]]), dimensions={}
CHECK-NEXT: %[[XA:xor.[0-9]+]] = u32[4] xor(u32[4]{0} %a, u32[4] %[[FLIP]])
CHECK-NEXT: %[[SA:bitcast-convert.[0-9]+]] = s32[4] bitcast-convert(u32[4] %[[XA]])
CHECK:      compare(s32[4] %[[SA]], s32[4] %{{bitcast-convert.[0-9]+}}), direction=LT
CHECK:      s32[4] maximum(
CHECK:      u32[4] xor(u32[4] %{{bitcast-convert.[0-9]+}}, u32[4] %{{broadcast.[0-9]+}})
)");
}

TEST(CodegenLegalizationTest, BatchedTransposeIsOnePaddedTransposeAndARowSwap) {
  const char* expected = R"(HloModule t

ENTRY %main (x: f32[2,3,5]) -> f32[2,5,3] {
  %x = f32[2,3,5] parameter(0)
  %constant.0 = f32[] constant(0)
  %pad.1 = f32[2,128,5] pad(f32[2,3,5] %x, f32[] %constant.0), padding=0_0x0_125x0_0
  %reshape.2 = f32[256,5] reshape(f32[2,128,5] %pad.1)
  %transpose.3 = f32[5,256] transpose(f32[256,5] %reshape.2), dimensions={1,0}
  %reshape.4 = f32[5,2,128] reshape(f32[5,256] %transpose.3)
  %transpose.5 = f32[2,5,128] transpose(f32[5,2,128] %reshape.4), dimensions={1,0,2}
  ROOT %slice.6 = f32[2,5,3] slice(f32[2,5,128] %transpose.5), slice={[0:2], [0:5], [0:3]}
}

)";
  CodegenLegalization pass;
  testing::PassResult result = RunPassOnText(pass, TransposeModule("f32", {2, 3, 5}, {0, 2, 1}));
  EXPECT_TRUE(result.changed);
  EXPECT_EQ(result.printed, expected);
}

TEST(CodegenLegalizationTest, BatchedTransposePadsToTheLaneMultiple) {
  const char* expected = R"(HloModule t

ENTRY %main (x: f32[2,3,5]) -> f32[2,5,3] {
  %x = f32[2,3,5] parameter(0)
  %constant.0 = f32[] constant(0)
  %pad.1 = f32[2,8,5] pad(f32[2,3,5] %x, f32[] %constant.0), padding=0_0x0_5x0_0
  %reshape.2 = f32[16,5] reshape(f32[2,8,5] %pad.1)
  %transpose.3 = f32[5,16] transpose(f32[16,5] %reshape.2), dimensions={1,0}
  %reshape.4 = f32[5,2,8] reshape(f32[5,16] %transpose.3)
  %transpose.5 = f32[2,5,8] transpose(f32[5,2,8] %reshape.4), dimensions={1,0,2}
  ROOT %slice.6 = f32[2,5,3] slice(f32[2,5,8] %transpose.5), slice={[0:2], [0:5], [0:3]}
}

)";
  CodegenLegalization pass(CodegenLegalizationOptions{/*lane_multiple=*/8});
  testing::PassResult result = RunPassOnText(pass, TransposeModule("f32", {2, 3, 5}, {0, 2, 1}));
  EXPECT_TRUE(result.changed);
  EXPECT_EQ(result.printed, expected);
}

TEST(CodegenLegalizationTest, LeavesSupportedFormsUnchanged) {
  const std::vector<std::string> inputs = {
      ReduceModule("f32", "add", {4, 5}, {0}, "0"),               // consecutive, ends before the minor one
      ReduceModule("f32", "add", {4, 5, 6}, {0, 1}, "0"),
      ReduceModule("f32", "maximum", {4, 5, 6}, {1}, "-0.25"),    // init keeps padded lanes +0
      ReduceModule("f32", "minimum", {4, 5, 6}, {0}, "2"),
      ReduceModule("f32", "add", {4, 5}, {1}, "0"),               // minor of rank 2: prepare transposes
      ReduceModule("f32", "add", {4, 5}, {0, 1}, "0"),
      ReduceModule("f32", "maximum", {7}, {0}, "-inf"),
      ReduceModule("s32", "minimum", {9}, {0}, "2147483647"),
      ReduceModule("f32", "add", {3, 4, 1}, {0, 1, 2}, "0"),      // every dimension, minor of one element
      TransposeModule("f32", {4, 5}, {1, 0}),
      TransposeModule("f32", {4, 5, 6}, {0, 1, 2}),
  };
  for (const std::string& input : inputs) {
    CodegenLegalization pass;
    testing::PassResult result = RunPassOnText(pass, input);
    EXPECT_FALSE(result.changed) << input;
    EXPECT_EQ(result.printed, Canonical(input));
  }
}

TEST(CodegenLegalizationTest, ReductionsInterpretToTheSameValues) {
  struct Case {
    std::string type, op;
    Dims in, reduced;
    std::string init;
  };
  const std::vector<Case> cases = {
      {"f32", "add", {7}, {0}, "1.5"},
      {"f32", "maximum", {7}, {0}, "0"},
      {"f32", "minimum", {1}, {0}, "-3"},
      {"s32", "add", {13}, {0}, "5"},
      {"s32", "maximum", {9}, {0}, "-7"},
      {"f32", "add", {4, 9}, {1}, "0.75"},
      {"f32", "maximum", {4, 9}, {0, 1}, "0.5"},
      {"f32", "add", {4, 1}, {1}, "0"},
      {"f32", "add", {5, 7}, {0}, "1.5"},
      {"f32", "add", {3, 7, 9}, {0, 2}, "0"},
      {"f32", "maximum", {3, 7, 9}, {0, 2}, "-inf"},
      {"f32", "add", {3, 7, 9}, {2}, "0"},
      {"f32", "add", {3, 7, 9}, {1, 2}, "0.75"},
      {"f32", "minimum", {3, 7, 9}, {0, 1, 2}, "inf"},
      {"f32", "add", {1, 7, 9}, {2}, "0"},
      {"f32", "add", {130, 1, 9}, {2}, "0"},
      {"f32", "add", {3, 7, 1}, {2}, "0"},
      {"s32", "minimum", {2, 3, 4, 5}, {1, 3}, "0"},
      {"f32", "add", {2, 3, 4, 5}, {0, 2}, "-2"},
      {"f32", "maximum", {2, 3, 4, 5}, {0, 1, 3}, "-0.25"},
  };
  for (const int64_t lanes : {128, 8}) {
    for (const Case& c : cases) {
      SCOPED_TRACE(c.op + " " + ShapeText(c.type, c.in) + " {" + DimsText(c.reduced) + "} init " + c.init +
                   ", lane multiple " + std::to_string(lanes));
      std::unique_ptr<hlo::HloModule> module = CheckEquivalent(ReduceModule(c.type, c.op, c.in, c.reduced, c.init),
                                                               c.op == "add", true, CodegenLegalizationOptions{lanes});
      ExpectOnlyLoweredForms(*module);
    }
  }
}

TEST(CodegenLegalizationTest, InitValueComputedAtRunTimeIsCombinedAfterwards) {
  for (const char* op : {"add", "maximum"}) {
    const std::string module = std::string(R"(HloModule r

%reducer (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %r = f32[] )") + op + R"((f32[] %a, f32[] %b)
}

ENTRY %main (x: f32[3,7,9], init: f32[]) -> f32[3,9] {
  %x = f32[3,7,9] parameter(0)
  %init = f32[] parameter(1)
  ROOT %reduce = f32[3,9] reduce(f32[3,7,9] %x, f32[] %init), dimensions={1}, to_apply=%reducer
}
)";
    SCOPED_TRACE(op);
    std::unique_ptr<hlo::HloModule> result = CheckEquivalent(module, std::string(op) == "add", true);
    const hlo::HloInstruction* root = result->entry_computation()->root_instruction();
    EXPECT_EQ(root->opcode(), std::string(op) == "add" ? hlo::HloOpcode::kAdd : hlo::HloOpcode::kMaximum);
    EXPECT_EQ(root->operand(0)->opcode(), hlo::HloOpcode::kReduce);
    EXPECT_EQ(root->operand(0)->operand(1)->opcode(), hlo::HloOpcode::kConstant);
  }
}

TEST(CodegenLegalizationTest, EveryPermutationOfRanks3And4InterpretsToTheSameValues) {
  for (const Dims& in : {Dims{2, 3, 5}, Dims{7, 1, 9}, Dims{1, 9, 13}, Dims{13, 2, 1}, Dims{2, 3, 4, 5},
                         Dims{3, 1, 2, 9}}) {
    Dims perm(in.size());
    std::iota(perm.begin(), perm.end(), 0);
    while (std::next_permutation(perm.begin(), perm.end())) {
      for (const int64_t lanes : {128, 8}) {
        SCOPED_TRACE(ShapeText("f32", in) + " {" + DimsText(perm) + "}, lane multiple " + std::to_string(lanes));
        // Rewritten unless it is a row permutation that codegen takes as it is (one that moves only unit
        // dimensions becomes reshapes).
        Dims moved;
        for (size_t i = 0; i + 1 < perm.size(); ++i) {
          if (in[perm[i]] != 1) moved.push_back(perm[i]);
        }
        const bool rewritten =
            perm.back() != static_cast<int64_t>(perm.size()) - 1 || std::is_sorted(moved.begin(), moved.end());
        std::unique_ptr<hlo::HloModule> module =
            CheckEquivalent(TransposeModule("s32", in, perm), true, rewritten, CodegenLegalizationOptions{lanes});
        ExpectOnlyLoweredForms(*module);
      }
    }
  }
}

}  // namespace
}  // namespace tpu::compiler
