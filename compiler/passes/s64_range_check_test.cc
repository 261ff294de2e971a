#include "compiler/passes/s64_range_check.h"

#include <gtest/gtest.h>

#include <string>

#include "compiler/hlo/parser.h"

namespace tpu::compiler {
namespace {

Status Check(const std::string& text) {
  std::unique_ptr<hlo::HloModule> module = hlo::ParseHloModule(text).value();
  S64RangeCheck pass;
  StatusOr<bool> changed = pass.Run(module.get());
  if (changed.ok()) EXPECT_FALSE(*changed);
  return changed.status();
}

TEST(S64RangeCheckTest, LabelsIndicesAndSmallArithmeticPass) {
  // PyTorch/XLA's integer labels against an s64 iota, an index computed from them, a bounded sum.
  EXPECT_TRUE(Check(R"(HloModule labels

%add (a: s64[], b: s64[]) -> s64[] {
  %a = s64[] parameter(0)
  %b = s64[] parameter(1)
  ROOT %s = s64[] add(s64[] %a, s64[] %b)
}

ENTRY %main (labels: s64[16]) -> (pred[16,10], s64[16], s64[]) {
  %labels = s64[16]{0} parameter(0)
  %zero = s64[] constant(0)
  %nine = s64[] constant(9)
  %low = s64[16]{0} broadcast(s64[] %zero), dimensions={}
  %high = s64[16]{0} broadcast(s64[] %nine), dimensions={}
  %clamped = s64[16]{0} clamp(s64[16]{0} %low, s64[16]{0} %labels, s64[16]{0} %high)
  %iota = s64[16,10]{1,0} iota(), iota_dimension=1
  %b = s64[16,10]{1,0} broadcast(s64[16]{0} %clamped), dimensions={0}
  %onehot = pred[16,10]{1,0} compare(s64[16,10]{1,0} %iota, s64[16,10]{1,0} %b), direction=EQ
  %ten = s64[16]{0} constant({10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10})
  %row = s64[16]{0} multiply(s64[16]{0} %clamped, s64[16]{0} %ten)
  %sum = s64[] reduce(s64[16]{0} %row, s64[] %zero), dimensions={0}, to_apply=%add
  ROOT %t = (pred[16,10]{1,0}, s64[16]{0}, s64[]) tuple(pred[16,10]{1,0} %onehot, s64[16]{0} %row, s64[] %sum)
}
)").ok());
}

TEST(S64RangeCheckTest, ArithmeticThatMayLeaveTheS32RangeIsRefusedByName) {
  const Status status = Check(R"(HloModule wide

ENTRY %main (x: s64[4]) -> s64[4] {
  %x = s64[4]{0} parameter(0)
  ROOT %twice = s64[4]{0} add(s64[4]{0} %x, s64[4]{0} %x)
}
)");
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kUnimplemented);
  EXPECT_NE(status.message().find("s64 add twice may produce values in [-4294967296, 4294967294]"), std::string::npos)
      << status.message();
  // A float converted to s64 may be anything.
  EXPECT_FALSE(Check(R"(HloModule convert

ENTRY %main (x: f32[4]) -> s64[4] {
  %x = f32[4]{0} parameter(0)
  ROOT %c = s64[4]{0} convert(f32[4]{0} %x)
}
)").ok());
}

TEST(S64RangeCheckTest, ALoopCounterIsBoundedOnlyWhileItsBodyStaysInsideItsStart) {
  // A loop that keeps its s64 state (a select between the state and a constant) passes; a counter that
  // grows without a bound the analysis can see is refused.
  const char* loop = R"(HloModule loop

%cond (s: (s32[], s64[])) -> pred[] {
  %s = (s32[], s64[]) parameter(0)
  %i = s32[] get-tuple-element((s32[], s64[]) %s), index=0
  %n = s32[] constant(10)
  ROOT %lt = pred[] compare(s32[] %i, s32[] %n), direction=LT
}

%body (s: (s32[], s64[])) -> (s32[], s64[]) {
  %s = (s32[], s64[]) parameter(0)
  %i = s32[] get-tuple-element((s32[], s64[]) %s), index=0
  %one = s32[] constant(1)
  %next = s32[] add(s32[] %i, s32[] %one)
  %v = s64[] get-tuple-element((s32[], s64[]) %s), index=1
  %c = s64[] constant(STEP)
  %w = s64[] OP(s64[] %v, s64[] %c)
  ROOT %t = (s32[], s64[]) tuple(s32[] %next, s64[] %w)
}

ENTRY %main (x: s64[]) -> (s32[], s64[]) {
  %x = s64[] parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], s64[]) tuple(s32[] %zero, s64[] %x)
  ROOT %loop = (s32[], s64[]) while((s32[], s64[]) %init), condition=%cond, body=%body
}
)";
  auto with = [&](const std::string& op, const std::string& step) {
    std::string text = loop;
    text.replace(text.find("OP"), 2, op);
    text.replace(text.find("STEP"), 4, step);
    return text;
  };
  EXPECT_TRUE(Check(with("minimum", "5")).ok());
  const Status counter = Check(with("add", "1"));
  ASSERT_FALSE(counter.ok());
  EXPECT_NE(counter.message().find("s64 add w"), std::string::npos) << counter.message();
}

}  // namespace
}  // namespace tpu::compiler
