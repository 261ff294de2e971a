#include "compiler/passes/rng_bit_generator_expansion.h"

#include <gtest/gtest.h>

#include <random>

#include "compiler/hlo/parser.h"
#include "compiler/interpreter/interpreter.h"
#include "compiler/passes/pass_test_util.h"

namespace tpu::compiler {
namespace {

using testing::ExpectRewrite;
using testing::ExpectUnchanged;
using testing::RunPassOnText;

// A key of u32 words as JAX passes it: `words` u32 -> [n,2] -> u64[n] -> rng-bit-generator, the new state
// back to u32 words.
std::string JaxModule(const std::string& algorithm, const std::string& bits, int64_t state_words = 2) {
  const std::string n = std::to_string(state_words), flat = std::to_string(2 * state_words);
  return "HloModule rbg\n\nENTRY %main {\n"
         "  %k = u32[" + flat + "]{0} parameter(0)\n"
         "  %w = u32[" + n + ",2]{1,0} reshape(%k)\n"
         "  %s = u64[" + n + "]{0} bitcast-convert(%w)\n"
         "  %r = (u64[" + n + "]{0}, " + bits + ") rng-bit-generator(%s), algorithm=" + algorithm + "\n"
         "  %next = u64[" + n + "]{0} get-tuple-element(%r), index=0\n"
         "  %nw = u32[" + n + ",2]{1,0} bitcast-convert(%next)\n"
         "  %nk = u32[" + flat + "]{0} reshape(%nw)\n"
         "  %b = " + bits + " get-tuple-element(%r), index=1\n"
         "  ROOT %t = (u32[" + flat + "]{0}, " + bits + ") tuple(%nk, %b)\n}\n";
}

// The rewritten module computes what the interpreter's rng-bit-generator does, for keys whose counters
// carry across words and wrap.
void ExpectSameValues(const std::string& text, const hlo::HloModule& rewritten, int64_t key_words) {
  auto original = hlo::ParseHloModule(text);
  ASSERT_TRUE(original.ok()) << original.status();
  std::mt19937 rng(5);
  for (int trial = 0; trial < 6; ++trial) {
    std::vector<uint32_t> key(static_cast<size_t>(key_words));
    for (uint32_t& word : key) word = trial < 3 ? 0xffffffffu - static_cast<uint32_t>(rng() % 3 * trial) : rng();
    if (trial == 1) key[1] = 0x12345;  // the key's high word is an ordinary one
    std::vector<hlo::Literal> arguments = {hlo::Literal::CreateR1<uint32_t>(key)};
    auto expected = hlo::Interpret(**original, arguments);
    auto got = hlo::Interpret(rewritten, arguments);
    ASSERT_TRUE(expected.ok()) << expected.status();
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ(got->size(), expected->size());
    for (size_t i = 0; i < got->size(); ++i) EXPECT_EQ((*got)[i], (*expected)[i]) << "output " << i << " trial " << trial;
  }
}

TEST(RngBitGeneratorExpansionTest, PhiloxOfAJaxKeyBecomesU32Arithmetic) {
  RngBitGeneratorExpansion pass;
  const std::string text = JaxModule("rng_default", "u32[3,5]{1,0}");
  // The key's and counter's words as scalars, the counter of each element's block (a constant table)
  // with its carries, the ten rounds in a counted loop, then each element's word of its block.
  const char* checks = R"(
CHECK:      u32[1,1]{1,0} slice(u32[2,2]{1,0} %w), slice={[0:1], [0:1]}
CHECK:      pred[3,5] compare(u32[3,5] %{{[a-z.0-9]+}}, u32[3,5]{1,0} %{{[a-z.0-9]+}}), direction=LT
CHECK:      while({{.*}}), condition=%philox_condition, body=%philox_round
CHECK:      u32[3,5] select(
CHECK:      %philox_condition
CHECK:      ROOT %{{[a-z.0-9]+}} = pred[] compare(s32[] %{{[a-z.0-9.-]+}}, s32[] %{{[a-z.0-9.]+}}), direction=LT
CHECK:      %philox_round
CHECK:      u32[3,5] multiply(
CHECK:      u32[3,5] shift-right-logical(
CHECK-NOT:  rng-bit-generator
CHECK-NOT:  u64
)";
  auto result = ExpectRewrite(pass, text, checks);
  // The new state's words: the key's, then the counter's.
  const std::string failure = testing::CheckLines(result.printed, R"(
CHECK:      %[[KEY:[a-z.0-9]+]] = u32[1,2]{1,0} concatenate(
CHECK:      %[[COUNTER:[a-z.0-9]+]] = u32[1,2]{1,0} concatenate(
CHECK-NEXT: %[[WORDS:[a-z.0-9]+]] = u32[2,2]{1,0} concatenate(u32[1,2]{1,0} %[[KEY]], u32[1,2]{1,0} %[[COUNTER]]), dimensions={0}
CHECK-NEXT: %nk = u32[4]{0} reshape(u32[2,2]{1,0} %[[WORDS]])
)");
  EXPECT_TRUE(failure.empty()) << failure;
  ASSERT_NE(result.module, nullptr);
  ExpectSameValues(text, *result.module, 4);
}

TEST(RngBitGeneratorExpansionTest, ThreeFryRunsItsFiveGroupsInACountedLoop) {
  RngBitGeneratorExpansion pass;
  const std::string text = JaxModule("rng_three_fry", "u32[4,3]{1,0}");
  // Each element's block (a constant table, 4 x 3 split along the even dimension 0), the groups in a
  // loop whose rotations are state, then each element's word of its block.
  const char* checks = R"(
CHECK:      pred[4,3]{1,0} constant({ {false, false, false}, {true, true, true}, {false, false, false}, {true, true, true} })
CHECK:      u32[4,3]{1,0} constant({ {0, 1, 2}, {0, 1, 2}, {3, 4, 5}, {3, 4, 5} })
CHECK:      while({{.*}}), condition=%three_fry_condition, body=%three_fry_group
CHECK:      u32[4,3] select(
CHECK:      %three_fry_condition
CHECK:      ROOT %{{[a-z.0-9]+}} = pred[] compare(s32[] %{{[a-z.0-9.-]+}}, s32[] %{{[a-z.0-9.]+}}), direction=LT
CHECK:      %three_fry_group
CHECK:      u32[4,3] shift-left(u32[4,3] %{{[a-z.0-9.-]+}}, u32[4,3] %{{[a-z.0-9.-]+}})
CHECK-NOT:  rng-bit-generator
)";
  auto result = ExpectRewrite(pass, text, checks);
  ASSERT_NE(result.module, nullptr);
  ExpectSameValues(text, *result.module, 4);
}

TEST(RngBitGeneratorExpansionTest, EveryAlgorithmWidthAndShapeComputesTheInterpretersBits) {
  struct Case {
    const char* algorithm;
    const char* bits;
    int64_t state_words;
  };
  for (const Case& c : {Case{"rng_three_fry", "u32[3,5]{1,0}", 2}, Case{"rng_three_fry", "u32[4,3]{1,0}", 2},
                        Case{"rng_three_fry", "u32[]", 2}, Case{"rng_three_fry", "u8[2,3,5]{2,1,0}", 2},
                        Case{"rng_philox", "u32[7]{0}", 2}, Case{"rng_philox", "u16[5,1,3]{2,1,0}", 2},
                        Case{"rng_philox", "u32[9]{0}", 3}}) {
    SCOPED_TRACE(std::string(c.algorithm) + " " + c.bits);
    RngBitGeneratorExpansion pass;
    const std::string text = JaxModule(c.algorithm, c.bits, c.state_words);
    auto result = ExpectRewrite(pass, text, "CHECK-NOT: rng-bit-generator\nCHECK-NOT: u64\n");
    ASSERT_NE(result.module, nullptr);
    ExpectSameValues(text, *result.module, 2 * c.state_words);
  }
}

TEST(RngBitGeneratorExpansionTest, AConstantStateIsLeftToFolding) {
  RngBitGeneratorExpansion pass;
  ExpectUnchanged(pass, R"(HloModule rbg

ENTRY %main {
  %k = u32[2,2]{1,0} constant({ {1, 2}, {3, 4} })
  %s = u64[2]{0} bitcast-convert(u32[2,2]{1,0} %k)
  %r = (u64[2]{0}, u32[8]{0}) rng-bit-generator(u64[2]{0} %s), algorithm=rng_default
  ROOT %b = u32[8]{0} get-tuple-element((u64[2]{0}, u32[8]{0}) %r), index=1
}
)");
}

// What cannot be held exactly as 32-bit words is refused with the reason, never truncated.
TEST(RngBitGeneratorExpansionTest, U64ValuesTheDeviceCannotHoldAreRefused) {
  auto refusal = [](const std::string& text) {
    RngBitGeneratorExpansion pass;
    auto module = hlo::ParseHloModule(text);
    EXPECT_TRUE(module.ok()) << module.status();
    StatusOr<bool> changed = pass.Run(module->get());
    EXPECT_EQ(changed.status().code(), StatusCode::kUnimplemented);
    return changed.status().message();
  };
  std::string why = refusal(R"(HloModule rbg
ENTRY %main {
  %s = u64[2]{0} parameter(0)
  %r = (u64[2]{0}, u32[8]{0}) rng-bit-generator(%s), algorithm=rng_philox
  ROOT %b = u32[8]{0} get-tuple-element(%r), index=1
}
)");
  EXPECT_NE(why.find("%r: its state %s is computed as u64"), std::string::npos) << why;
  EXPECT_NE(why.find("low 32 bits"), std::string::npos) << why;
  why = refusal(R"(HloModule rbg
ENTRY %main {
  %w = u32[2,2]{1,0} parameter(0)
  %s = u64[2]{0} bitcast-convert(%w)
  %r = (u64[2]{0}, u32[8]{0}) rng-bit-generator(%s), algorithm=rng_philox
  %next = u64[2]{0} get-tuple-element(%r), index=0
  %b = u32[8]{0} get-tuple-element(%r), index=1
  ROOT %t = (u64[2]{0}, u32[8]{0}) tuple(%next, %b)
}
)");
  EXPECT_NE(why.find("%t reads its new state as u64"), std::string::npos) << why;
  why = refusal(R"(HloModule rbg
ENTRY %main {
  %w = u32[2,2]{1,0} parameter(0)
  %s = u64[2]{0} bitcast-convert(%w)
  %r = (u64[2]{0}, u64[8]{0}) rng-bit-generator(%s), algorithm=rng_three_fry
  ROOT %b = u64[8]{0} get-tuple-element(%r), index=1
}
)");
  EXPECT_NE(why.find("u64 bits"), std::string::npos) << why;
}

}  // namespace
}  // namespace tpu::compiler
