#include "compiler/passes/sort_expansion.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "compiler/hlo/parser.h"
#include "compiler/hlo/verifier.h"
#include "compiler/interpreter/interpreter.h"
#include "compiler/passes/pass_test_util.h"

namespace tpu::compiler {
namespace {

using testing::ExpectRewrite;

// jnp.sort's comparator: NaN and -0 made canonical, then a total-order less-than.
constexpr const char* kTotalOrderLess = R"(%lt (a: f32[], b: f32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  %nan = f32[] constant(nan)
  %zero = f32[] constant(0)
  %a_nan = pred[] compare(f32[] %a, f32[] %a), direction=NE
  %a_zero = pred[] compare(f32[] %a, f32[] %zero), direction=EQ
  %a_plus = f32[] select(pred[] %a_zero, f32[] %zero, f32[] %a)
  %a_key = f32[] select(pred[] %a_nan, f32[] %nan, f32[] %a_plus)
  %b_nan = pred[] compare(f32[] %b, f32[] %b), direction=NE
  %b_zero = pred[] compare(f32[] %b, f32[] %zero), direction=EQ
  %b_plus = f32[] select(pred[] %b_zero, f32[] %zero, f32[] %b)
  %b_key = f32[] select(pred[] %b_nan, f32[] %nan, f32[] %b_plus)
  ROOT %less = pred[] compare(f32[] %a_key, f32[] %b_key), direction=LT, type=TOTALORDER
}
)";

TEST(SortExpansionTest, SortBecomesABitonicNetworkInALoop) {
  const std::string input = std::string("HloModule sort\n\n") + kTotalOrderLess + R"(
ENTRY %main (x: f32[5,7]) -> f32[5,7] {
  %x = f32[5,7]{1,0} parameter(0)
  ROOT %sort = f32[5,7]{1,0} sort(f32[5,7]{1,0} %x), dimensions={1}, is_stable=true, to_apply=%lt
}
)";
  const char* checks = R"(
CHECK:      f32[7,5]{1,0} transpose(f32[5,7]{1,0} %x), dimensions={1,0}
CHECK:      f32[8,5]{1,0} pad(
CHECK:      while({{.*}}), condition=%bitonic_sort_condition, body=%bitonic_sort_stage
CHECK:      f32[5,7]{1,0} transpose(
CHECK:      %bitonic_sort_condition
CHECK:      ROOT %{{[a-z.0-9-]+}} = pred[] compare(s32[] %{{[a-z.0-9-]+}}, s32[] %{{[a-z.0-9-]+}}), direction=LT
CHECK:      %bitonic_sort_stage
CHECK:      s32[8,1] xor(
CHECK:      f32[8,5] gather(f32[8,5] %{{[a-z.0-9-]+}}, s32[8,1] %{{[a-z.0-9-]+}})
CHECK:      s32[8,5] bitcast-convert(f32[8,5] %{{[a-z.0-9-]+}})
CHECK:      pred[8,5] compare(s32[8,5] %{{[a-z.0-9-]+}}, s32[8,5] %{{[a-z.0-9-]+}}), direction=LT
CHECK:      f32[8,5] select(
CHECK-NOT:  sort(
)";
  ExpectRewrite(*std::make_unique<SortExpansion>(), input, checks);
}

// The rewritten module gives the sort's results bit for bit (the interpreter runs both).
// Floats are drawn with NaN, +-0 and +-inf unless `ordered_values` (a comparator such as GT is a strict
// weak order only without NaN).
void ExpectSameResults(const std::string& text, uint32_t seed, int distinct, bool ordered_values = false) {
  std::unique_ptr<hlo::HloModule> module = hlo::ParseHloModule(text).value();
  ASSERT_TRUE(hlo::VerifyHloModule(*module).ok());
  std::vector<hlo::Literal> args;
  std::mt19937 rng(seed);
  for (const hlo::HloInstruction* p : module->entry_computation()->parameter_instructions()) {
    hlo::Literal x(p->shape());
    for (int64_t i = 0; i < x.element_count(); ++i) {
      // Few distinct values, so that ties and the stable order among them matter.
      const int pick = static_cast<int>(rng() % distinct);
      const double specials[] = {NAN, -0.0, 0.0, INFINITY, -INFINITY};
      const bool special = !ordered_values && pick < 5 && hlo::IsFloatingPointType(p->shape().element_type);
      x.SetFromDouble(i, special ? specials[pick] : pick - 3.0);
    }
    args.push_back(std::move(x));
  }
  std::vector<hlo::Literal> expected = hlo::Interpret(*module, args).value();
  SortExpansion pass;
  ASSERT_TRUE(pass.Run(module.get()).value());
  ASSERT_TRUE(hlo::VerifyHloModule(*module).ok()) << hlo::VerifyHloModule(*module);
  EXPECT_EQ(testing::CountOpcode(*module, hlo::HloOpcode::kSort), 0);
  std::vector<hlo::Literal> got = hlo::Interpret(*module, args).value();
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i].ToString(), expected[i].ToString()) << "result " << i;
}

std::string SortModule(const std::string& dims, const std::string& layout, int dimension) {
  return std::string("HloModule sort\n\n") + kTotalOrderLess + "\nENTRY %main (x: f32[" + dims + "]) -> f32[" + dims +
         "] {\n  %x = f32[" + dims + "]{" + layout + "} parameter(0)\n  ROOT %sort = f32[" + dims + "]{" + layout +
         "} sort(f32[" + dims + "]{" + layout + "} %x), dimensions={" + std::to_string(dimension) +
         "}, is_stable=true, to_apply=%lt\n}\n";
}

TEST(SortExpansionTest, EveryDimensionAndSizeSortsAsTheInterpreter) {
  ExpectSameResults(SortModule("1", "0", 0), 1, 9);
  ExpectSameResults(SortModule("2", "0", 0), 2, 9);
  ExpectSameResults(SortModule("13", "0", 0), 3, 9);
  ExpectSameResults(SortModule("64", "0", 0), 4, 12);
  ExpectSameResults(SortModule("5,7", "1,0", 1), 5, 9);
  ExpectSameResults(SortModule("9,3", "1,0", 0), 6, 9);
  ExpectSameResults(SortModule("3,5,6", "2,1,0", 0), 7, 9);
  ExpectSameResults(SortModule("3,5,6", "2,1,0", 1), 8, 9);
  ExpectSameResults(SortModule("3,5,6", "2,1,0", 2), 9, 9);
}

TEST(SortExpansionTest, KeysWithPayloadsKeepTheStableOrder) {
  // argsort: values and their positions, descending by value (a GT comparator), ties by position.
  const char* text = R"(HloModule argsort

%gt (a: f32[], b: f32[], i: s32[], j: s32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  %i = s32[] parameter(2)
  %j = s32[] parameter(3)
  ROOT %greater = pred[] compare(f32[] %a, f32[] %b), direction=GT
}

ENTRY %main (x: f32[4,11], p: s32[4,11]) -> (f32[4,11], s32[4,11]) {
  %x = f32[4,11]{1,0} parameter(0)
  %p = s32[4,11]{1,0} parameter(1)
  ROOT %sort = (f32[4,11]{1,0}, s32[4,11]{1,0}) sort(f32[4,11]{1,0} %x, s32[4,11]{1,0} %p), dimensions={1}, to_apply=%gt
}
)";
  ExpectSameResults(text, 11, 4, /*ordered_values=*/true);
  // Two keys: the second breaks the first's ties.
  const char* two_keys = R"(HloModule two_keys

%lex (a: s32[], b: s32[], c: s32[], d: s32[]) -> pred[] {
  %a = s32[] parameter(0)
  %b = s32[] parameter(1)
  %c = s32[] parameter(2)
  %d = s32[] parameter(3)
  %lt = pred[] compare(s32[] %a, s32[] %b), direction=LT
  %eq = pred[] compare(s32[] %a, s32[] %b), direction=EQ
  %lt2 = pred[] compare(s32[] %c, s32[] %d), direction=LT
  %tie = pred[] and(pred[] %eq, pred[] %lt2)
  ROOT %less = pred[] or(pred[] %lt, pred[] %tie)
}

ENTRY %main (x: s32[20], y: s32[20]) -> (s32[20], s32[20]) {
  %x = s32[20]{0} parameter(0)
  %y = s32[20]{0} parameter(1)
  ROOT %sort = (s32[20]{0}, s32[20]{0}) sort(s32[20]{0} %x, s32[20]{0} %y), dimensions={0}, to_apply=%lex
}
)";
  ExpectSameResults(two_keys, 12, 3);
}

TEST(SortExpansionTest, AComparatorThatIsNotElementwiseIsLeftAlone) {
  testing::ExpectUnchanged(*std::make_unique<SortExpansion>(), R"(HloModule sort

%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %sum = f32[] add(f32[] %x, f32[] %y)
}

%odd (a: f32[], b: f32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  %v = f32[2]{0} broadcast(f32[] %a), dimensions={}
  %s = f32[] reduce(f32[2]{0} %v, f32[] %b), dimensions={0}, to_apply=%add
  ROOT %lt = pred[] compare(f32[] %s, f32[] %b), direction=LT
}

ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4]{0} parameter(0)
  ROOT %sort = f32[4]{0} sort(f32[4]{0} %x), dimensions={0}, to_apply=%odd
}
)");
}

}  // namespace
}  // namespace tpu::compiler
