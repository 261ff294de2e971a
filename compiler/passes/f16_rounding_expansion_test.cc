#include "compiler/passes/f16_rounding_expansion.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "compiler/hlo/parser.h"
#include "compiler/interpreter/interpreter.h"
#include "compiler/passes/pass_test_util.h"

namespace tpu::compiler {
namespace {

using testing::ExpectRewrite;
using testing::ExpectUnchanged;

TEST(F16RoundingExpansionTest, F32ToF16ConvertBecomesWordArithmetic) {
  F16RoundingExpansion pass;
  const char* input = R"(HloModule round

ENTRY %main (x: f32[4,8]) -> f16[4,8] {
  %x = f32[4,8]{1,0} parameter(0)
  ROOT %h = f16[4,8]{1,0} convert(f32[4,8]{1,0} %x)
}
)";
  const char* checks = R"(
CHECK:      %[[BITS:[a-z.0-9-]+]] = u32[4,8] bitcast-convert(f32[4,8]{1,0} %x)
CHECK:      u32[] constant(2147483648)
CHECK:      %[[SIGN:[a-z.0-9]+]] = u32[4,8] and(u32[4,8] %[[BITS]],
CHECK:      u32[] constant(2147483647)
CHECK:      %[[MAG:[a-z.0-9]+]] = u32[4,8] and(u32[4,8] %[[BITS]],
CHECK:      u32[] constant(13)
CHECK:      u32[4,8] shift-right-logical(u32[4,8] %[[MAG]],
CHECK:      u32[] constant(4095)
CHECK:      u32[] constant(4294959104)
CHECK:      f32[] constant(0.5)
CHECK:      f32[4,8] add(
CHECK-NEXT: f32[4,8] subtract(
CHECK:      f32[] constant(6.1035156e-05)
CHECK:      direction=LT
CHECK:      f32[] constant(65520)
CHECK:      direction=GE
CHECK:      u32[] constant(2139095040)
CHECK:      direction=NE
CHECK:      u32[] constant(2143289344)
CHECK:      u32[4,8] or({{.*}}, u32[4,8] %[[SIGN]])
CHECK:      ROOT %{{[a-z.0-9-]+}} = f16[4,8] custom-call(f32[4,8] %{{[a-z.0-9-]+}}), custom_call_target="tpusim.ExactF16"
CHECK-NOT:  convert(
)";
  ExpectRewrite(pass, input, checks);
}

TEST(F16RoundingExpansionTest, OtherConvertsAreLeftAlone) {
  F16RoundingExpansion pass;
  ExpectUnchanged(pass, R"(HloModule converts

ENTRY %main (h: f16[8], b: f32[8]) -> (f32[8], bf16[8], f16[8]) {
  %h = f16[8]{0} parameter(0)
  %b = f32[8]{0} parameter(1)
  %w = f32[8]{0} convert(f16[8]{0} %h)
  %c = bf16[8]{0} convert(f32[8]{0} %b)
  %same = f16[8]{0} convert(f16[8]{0} %h)
  ROOT %r = (f32[8], bf16[8], f16[8]) tuple(%w, %c, %same)
}
)");
}

// The custom-call that ends the expansion reads f16 values; the interpreter refuses a word that would round.
TEST(F16RoundingExpansionTest, TheExactF16CustomCallRefusesAValueThatWouldRound) {
  std::unique_ptr<hlo::HloModule> module = hlo::ParseHloModule(R"(HloModule exact

ENTRY %main (x: f32[2]) -> f16[2] {
  %x = f32[2]{0} parameter(0)
  ROOT %h = f16[2]{0} custom-call(f32[2]{0} %x), custom_call_target="tpusim.ExactF16"
}
)").value();
  hlo::Literal x(hlo::Shape::Make(hlo::PrimitiveType::F32, {2}));
  x.Set<float>(0, 1.5f);
  x.Set<float>(1, std::ldexp(1.0f, -24));
  StatusOr<std::vector<hlo::Literal>> out = Interpret(*module, {x});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ((*out)[0].Get<hlo::half>(0).bits, 0x3e00);
  EXPECT_EQ((*out)[0].Get<hlo::half>(1).bits, 0x0001);
  x.Set<float>(1, 1.0f + std::ldexp(1.0f, -12));
  out = Interpret(*module, {x});
  EXPECT_EQ(out.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find("element 1"), std::string::npos) << out.status().ToString();
}

// The expansion, evaluated by the interpreter, against the interpreter's own f32 -> f16 conversion
// (hlo::FloatToHalf), bit for bit, on the f32 bit patterns `words`.
class ExpansionRunner {
 public:
  explicit ExpansionRunner(int64_t n) : n_(n) {
    const std::string text = "HloModule round\n\nENTRY %main (x: f32[" + std::to_string(n) + "]) -> f16[" +
                             std::to_string(n) + "] {\n  %x = f32[" + std::to_string(n) +
                             "]{0} parameter(0)\n  ROOT %h = f16[" + std::to_string(n) + "]{0} convert(f32[" +
                             std::to_string(n) + "]{0} %x)\n}\n";
    module_ = hlo::ParseHloModule(text).value();
    F16RoundingExpansion pass;
    EXPECT_TRUE(pass.Run(module_.get()).value());
  }
  // The number of patterns whose expansion differs from FloatToHalf (each reported, up to 10).
  int64_t Mismatches(const std::vector<uint32_t>& words) {
    hlo::Literal x(hlo::Shape::Make(hlo::PrimitiveType::F32, {n_}));
    std::memcpy(x.untyped_data(), words.data(), static_cast<size_t>(n_) * 4);
    StatusOr<std::vector<hlo::Literal>> out = Interpret(*module_, {x});
    EXPECT_TRUE(out.ok()) << out.status().ToString();
    if (!out.ok()) return n_;
    int64_t mismatches = 0;
    for (int64_t i = 0; i < n_; ++i) {
      float value;
      std::memcpy(&value, &words[static_cast<size_t>(i)], 4);
      const uint16_t want = hlo::FloatToHalf(value).bits, got = (*out)[0].Get<hlo::half>(i).bits;
      if (want != got && ++mismatches <= 10) {
        ADD_FAILURE() << "f32 bits " << std::hex << words[static_cast<size_t>(i)] << ": expansion " << got
                      << ", conversion " << want;
      }
    }
    return mismatches;
  }

 private:
  int64_t n_;
  std::unique_ptr<hlo::HloModule> module_;
};

// Every f16 boundary class: each f16 value, the f32 values around it (one f32 ulp below and above, and
// the exact halfway points to both neighbours and one ulp either side of them), both signs; the
// subnormal and overflow edges; f32 subnormals, infinities and NaNs with payloads; then random patterns.
TEST(F16RoundingExpansionTest, RoundsEveryBoundaryClassAndRandomPatternsLikeTheInterpreter) {
  std::vector<uint32_t> words;
  for (uint32_t h = 0; h < 0x7c00; ++h) {
    const float value = hlo::HalfToFloat(hlo::half{static_cast<uint16_t>(h)});
    const float next = hlo::HalfToFloat(hlo::half{static_cast<uint16_t>(h + 1)});
    const float mid = value + (next - value) / 2;  // exact: f16 values have 11 significant bits
    for (float point : {value, mid}) {
      uint32_t bits;
      std::memcpy(&bits, &point, 4);
      for (int d = -2; d <= 2; ++d) {
        if (bits == 0 && d < 0) continue;
        words.push_back(bits + static_cast<uint32_t>(d));
        words.push_back((bits + static_cast<uint32_t>(d)) | 0x80000000u);
      }
    }
  }
  for (uint32_t special : {0x00000001u, 0x007fffffu, 0x00400000u, 0x7f7fffffu, 0x7f800000u, 0x7f800001u,
                           0x7fc00000u, 0x7fffffffu, 0x7fa00000u, 0x477fe000u /* 65504 */, 0x477ff000u /* 65520 */,
                           0x477fefffu, 0x33000000u /* 2^-25 */, 0x33000001u, 0x33c00000u /* 1.5 * 2^-24 */}) {
    words.push_back(special);
    words.push_back(special | 0x80000000u);
  }
  std::mt19937 rng(16);
  while (words.size() % 4096 != 0 || words.size() < (size_t{1} << 22)) words.push_back(static_cast<uint32_t>(rng()));
  const int64_t chunk = 1 << 20;
  ExpansionRunner runner(chunk);
  int64_t mismatches = 0;
  for (size_t start = 0; start < words.size(); start += chunk) {
    std::vector<uint32_t> part(static_cast<size_t>(chunk), 0);
    for (size_t i = 0; i < static_cast<size_t>(chunk) && start + i < words.size(); ++i) part[i] = words[start + i];
    mismatches += runner.Mismatches(part);
  }
  EXPECT_EQ(mismatches, 0) << "of " << words.size() << " patterns";
}

}  // namespace
}  // namespace tpu::compiler
