#include "compiler/passes/elementwise_expansion.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <type_traits>
#include <random>
#include <string>
#include <vector>

#include "compiler/hlo/literal.h"
#include "compiler/hlo/parser.h"
#include "compiler/interpreter/interpreter.h"
#include "compiler/passes/pass_test_util.h"

namespace tpu::compiler {
namespace {

using hlo::Literal;
using hlo::PrimitiveType;
using hlo::Shape;
using testing::ExpectRewrite;

uint32_t Bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}
float FromBits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

std::string UnaryModule(const std::string& opcode, const std::string& type, int64_t n) {
  const std::string shape = type + "[" + std::to_string(n) + "]{0}";
  return "HloModule m\n\nENTRY %main (x: " + type + "[" + std::to_string(n) + "]) -> " + shape + " {\n  %x = " + shape +
         " parameter(0)\n  ROOT %r = " + shape + " " + opcode + "(" + shape + " %x)\n}\n";
}

TEST(ElementwiseExpansionTest, SineBecomesACodyWaiteReductionPolynomialsAndQuadrantSelects) {
  ElementwiseExpansion pass;
  const char* checks = R"(
CHECK:      f32[] constant(0.63661975)
CHECK:      %[[W:[a-z.0-9]+]] = f32[8] add(
CHECK:      %[[K:[a-z.0-9]+]] = f32[8] subtract(f32[8] %[[W]],
CHECK:      s32[8] bitcast-convert(f32[8] %[[W]])
CHECK:      f32[] constant(1.5703125)
CHECK:      f32[8] multiply(f32[8] %[[K]],
CHECK:      f32[] constant(0.0004825592)
CHECK:      f32[] constant(1.2665987e-06)
CHECK:      f32[] constant(9.895302e-10)
CHECK:      f32[] constant(2.563344e-12)
CHECK:      f32[] constant(2.717971e-06)
CHECK:      s32[8] shift-left(
CHECK:      f32[] constant(102943)
CHECK:      f32[] constant(nan)
CHECK:      ROOT %{{[a-z.0-9]+}} = f32[8] select(
CHECK-NOT:  sine
)";
  ExpectRewrite(pass, UnaryModule("sine", "f32", 8), checks);
}

TEST(ElementwiseExpansionTest, TanIsSineOverCosineOfOneReduction) {
  ElementwiseExpansion pass;
  const char* checks = R"(
CHECK:      f32[] constant(1.5703125)
CHECK-NOT:  constant(1.5703125)
CHECK:      f32[4] divide(
CHECK:      ROOT %{{[a-z.0-9]+}} = f32[4] select(
CHECK-NOT:  tan(
)";
  ExpectRewrite(pass, UnaryModule("tan", "f32", 4), checks);
}

TEST(ElementwiseExpansionTest, ErfIsXlasRationalFormSaturatedAtOne) {
  ElementwiseExpansion pass;
  const char* checks = R"(
CHECK:      f32[] constant(-3.832507)
CHECK:      f32[4] maximum(f32[4]{0} %x,
CHECK:      f32[4] minimum(
CHECK:      f32[] constant(-1.1791603e-07)
CHECK:      f32[] constant(0.00022905065)
CHECK:      f32[4] divide(
CHECK:      pred[4] compare({{.*}}), direction=GE
CHECK:      ROOT %{{[a-z.0-9]+}} = f32[4] select(
CHECK-NOT:  erf(
)";
  ExpectRewrite(pass, UnaryModule("erf", "f32", 4), checks);
}

TEST(ElementwiseExpansionTest, CbrtIsExpOfLogOverThreeAndANewtonStep) {
  ElementwiseExpansion pass;
  const char* checks = R"(
CHECK:      %[[A:[a-z.0-9]+]] = f32[4] abs(f32[4]{0} %x)
CHECK:      f32[4] log(f32[4] %[[A]])
CHECK:      f32[4] exponential(
CHECK:      f32[4] divide(f32[4] %[[A]],
CHECK:      ROOT %{{[a-z.0-9]+}} = f32[4] select(
CHECK-NOT:  cbrt
)";
  ExpectRewrite(pass, UnaryModule("cbrt", "f32", 4), checks);
}

TEST(ElementwiseExpansionTest, NarrowBitCountsRunOnMaskedWords) {
  ElementwiseExpansion pass;
  const char* clz = R"(
CHECK:      u32[] constant(255)
CHECK:      %[[W:[a-z.0-9]+]] = u32[4] convert(s8[4]{0} %x)
CHECK:      u32[4] and(u32[4] %[[W]],
CHECK:      u32[4] shift-right-logical(
CHECK:      u32[] constant(24)
CHECK:      ROOT %{{[a-z.0-9]+}} = s8[4] convert(
CHECK-NOT:  count-leading-zeros
)";
  ExpectRewrite(pass, UnaryModule("count-leading-zeros", "s8", 4), clz);
  const char* popcnt = R"(
CHECK:      s32[] constant(1431655765)
CHECK:      s32[] constant(858993459)
CHECK:      s32[] constant(252645135)
CHECK:      ROOT %{{[a-z.0-9]+}} = s32[4] and(
CHECK-NOT:  popcnt
)";
  ExpectRewrite(pass, UnaryModule("popcnt", "s32", 4), popcnt);
}

TEST(ElementwiseExpansionTest, LeavesOtherTypesAndOpcodesAlone) {
  ElementwiseExpansion pass;
  for (const std::string& text : {UnaryModule("sine", "f64", 4), UnaryModule("exponential", "f32", 4),
                                  UnaryModule("popcnt", "s64", 4), UnaryModule("erf", "bf16", 4)}) {
    testing::PassResult result = testing::RunPassOnText(pass, text);
    EXPECT_FALSE(result.changed) << text;
    EXPECT_EQ(result.printed, testing::Canonical(text));
  }
}

// ---------------------------------------------------------------------------------------------------
// The expansion interpreted in IEEE f32 on the host against the C library in double.

Literal Expanded(const std::string& opcode, const Literal& x) {
  const std::string type = hlo::PrimitiveTypeName(x.shape().element_type);
  StatusOr<std::unique_ptr<hlo::HloModule>> module = hlo::ParseHloModule(UnaryModule(opcode, type, x.element_count()));
  EXPECT_TRUE(module.ok()) << module.status();
  ElementwiseExpansion pass;
  StatusOr<bool> changed = pass.Run(module->get());
  EXPECT_TRUE(changed.ok() && *changed);
  StatusOr<std::vector<Literal>> out = hlo::Interpret(**module, {x});
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? std::move((*out)[0]) : Literal();
}

struct Errors {
  double max_ulp = 0;
  float worst = 0;
  int64_t mismatched_specials = 0;
};

// Error in units of the last place of the exact result rounded to f32 (a result below the smallest normal
// counts in units of 2^-149).
Errors Measure(const std::string& opcode, const std::vector<float>& inputs, const std::function<double(double)>& exact) {
  Literal x(Shape::Make(PrimitiveType::F32, {static_cast<int64_t>(inputs.size())}));
  for (size_t i = 0; i < inputs.size(); ++i) x.Set<float>(i, inputs[i]);
  const Literal y = Expanded(opcode, x);
  Errors errors;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const double want = exact(inputs[i]);
    const float got = y.Get<float>(i);
    if (!std::isfinite(want) || !std::isfinite(got)) {
      const bool same = std::isnan(want) ? std::isnan(got) : got == want;
      errors.mismatched_specials += !same;
      continue;
    }
    const float rounded = static_cast<float>(want);
    int exponent = 0;
    std::frexp(rounded, &exponent);
    const double ulp = std::ldexp(1.0, std::max(exponent - 24, -149));
    const double error = std::fabs(got - want) / ulp;
    if (error > errors.max_ulp) errors.max_ulp = error, errors.worst = inputs[i];
  }
  return errors;
}

// Every `stride`-th f32 bit pattern from `from` to `to` (non-negative, as floats), and their negations.
std::vector<float> Sweep(float from, float to, uint32_t stride) {
  std::vector<float> values;
  for (uint32_t bits = Bits(from); bits <= Bits(to); bits += stride) {
    values.push_back(FromBits(bits));
    values.push_back(-FromBits(bits));
  }
  return values;
}

void Report(const std::string& what, const Errors& errors) {
  std::printf("%s: max %.2f ulp at %.9g\n", what.c_str(), errors.max_ulp, errors.worst);
}

double Tan(double v) { return std::tan(v); }

TEST(ElementwiseExpansionTest, TrigWithinItsBoundsOverADenseSweep) {
  struct Range {
    float to;
    uint32_t stride;
    double sin_cos_bound, tan_bound;
  };
  // Every 997th f32 up to 1, every 4099th up to 102943 (both signs), and the floats next to each multiple
  // of pi/2 there, where the result cancels most. The bounds are the measured maxima, rounded up.
  for (const Range& range : {Range{1.0f, 997, 1.5, 3.0}, Range{kMaxTrigArgument, 4099, 3.0, 5.0},
                             Range{kMaxTrigArgument, 257, 3.5, 6.5}}) {
    if (range.stride == 257) {  // 2.3 million arguments: the floats next to every k * pi/2 instead
      std::vector<float> inputs;
      for (int k = 1; k < 65536; ++k) {
        float near = static_cast<float>(k * 1.5707963267948966), below = near;
        for (int i = 0; i < 4; ++i, near = std::nextafter(near, INFINITY), below = std::nextafter(below, 0.0f)) {
          for (float v : {near, below}) {
            if (v <= kMaxTrigArgument) inputs.push_back(v);
          }
        }
      }
      const Errors sin = Measure("sine", inputs, [](double v) { return std::sin(v); });
      const Errors cos = Measure("cosine", inputs, [](double v) { return std::cos(v); });
      const Errors tan = Measure("tan", inputs, Tan);
      Report("sine next to k * pi/2", sin);
      Report("cosine next to k * pi/2", cos);
      Report("tan next to k * pi/2", tan);
      EXPECT_LE(sin.max_ulp, range.sin_cos_bound);
      EXPECT_LE(cos.max_ulp, range.sin_cos_bound);
      EXPECT_LE(tan.max_ulp, range.tan_bound);
      continue;
    }
    const std::vector<float> inputs = Sweep(0x1p-126f, range.to, range.stride);
    const std::string where = " |x| <= " + std::to_string(range.to);
    const Errors sin = Measure("sine", inputs, [](double v) { return std::sin(v); });
    const Errors cos = Measure("cosine", inputs, [](double v) { return std::cos(v); });
    const Errors tan = Measure("tan", inputs, Tan);
    Report("sine" + where, sin);
    Report("cosine" + where, cos);
    Report("tan" + where, tan);
    EXPECT_LE(sin.max_ulp, range.sin_cos_bound);
    EXPECT_LE(cos.max_ulp, range.sin_cos_bound);
    EXPECT_LE(tan.max_ulp, range.tan_bound);
  }
}

TEST(ElementwiseExpansionTest, TrigSpecialValues) {
  const std::vector<float> inputs = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, kMaxTrigArgument, -kMaxTrigArgument,
                                     std::nextafter(kMaxTrigArgument, INFINITY), 1e30f};
  for (const char* opcode : {"sine", "cosine", "tan"}) {
    Literal x(Shape::Make(PrimitiveType::F32, {static_cast<int64_t>(inputs.size())}));
    for (size_t i = 0; i < inputs.size(); ++i) x.Set<float>(i, inputs[i]);
    const Literal y = Expanded(opcode, x);
    const bool cosine = std::string(opcode) == "cosine";
    EXPECT_EQ(Bits(y.Get<float>(0)), Bits(cosine ? 1.0f : 0.0f)) << opcode;
    EXPECT_EQ(Bits(y.Get<float>(1)), Bits(cosine ? 1.0f : -0.0f)) << opcode;
    for (size_t i : {2, 3, 4, 7, 8}) EXPECT_TRUE(std::isnan(y.Get<float>(i))) << opcode << " of " << inputs[i];
    for (size_t i : {5, 6}) EXPECT_TRUE(std::isfinite(y.Get<float>(i))) << opcode << " of " << inputs[i];
  }
}

TEST(ElementwiseExpansionTest, ErfAndCbrtWithinTheirBoundsOverADenseSweep) {
  const std::vector<float> erf_inputs = Sweep(0x1p-126f, 5.0f, 257);
  const Errors erf = Measure("erf", erf_inputs, [](double v) { return std::erf(v); });
  Report("erf", erf);
  EXPECT_LE(erf.max_ulp, 6.0);
  EXPECT_EQ(erf.mismatched_specials, 0);
  const std::vector<float> cbrt_inputs = Sweep(0x1p-126f, 3e38f, 4099);
  const Errors cbrt = Measure("cbrt", cbrt_inputs, [](double v) { return std::cbrt(v); });
  Report("cbrt", cbrt);
  EXPECT_LE(cbrt.max_ulp, 1.0);
  const std::vector<float> specials = {0.0f, -0.0f, INFINITY, -INFINITY, NAN};
  for (const char* opcode : {"erf", "cbrt"}) {
    const Errors e = Measure(opcode, specials, std::string(opcode) == "erf" ? [](double v) { return std::erf(v); }
                                                                            : [](double v) { return std::cbrt(v); });
    EXPECT_EQ(e.mismatched_specials, 0) << opcode;
    const Literal y = Expanded(opcode, [&] {
      Literal x(Shape::Make(PrimitiveType::F32, {2}));
      x.Set<float>(0, 0.0f);
      x.Set<float>(1, -0.0f);
      return x;
    }());
    EXPECT_EQ(Bits(y.Get<float>(1)), 0x80000000u) << opcode << "(-0) keeps the sign";
  }
}

template <typename T>
void CheckBitCounts(const char* type_name) {
  constexpr int kBits = 8 * sizeof(T);
  std::mt19937 rng(7);
  std::vector<T> values = {0, 1, static_cast<T>(-1), std::numeric_limits<T>::min(), std::numeric_limits<T>::max()};
  for (int i = 0; i < kBits; ++i) values.push_back(static_cast<T>(static_cast<uint64_t>(1) << i));
  for (int i = 0; i < 2000; ++i) values.push_back(static_cast<T>(rng()));
  Literal x(Shape::Make(hlo::NativeToPrimitive<T>::value, {static_cast<int64_t>(values.size())}));
  for (size_t i = 0; i < values.size(); ++i) x.Set<T>(i, values[i]);
  const Literal clz = Expanded("count-leading-zeros", x);
  const Literal popcnt = Expanded("popcnt", x);
  for (size_t i = 0; i < values.size(); ++i) {
    using U = std::make_unsigned_t<T>;
    const U bits = static_cast<U>(values[i]);
    int leading = 0;
    while (leading < kBits && !((bits >> (kBits - 1 - leading)) & 1)) ++leading;
    EXPECT_EQ(clz.Get<T>(i), leading) << type_name << " clz of " << +values[i];
    EXPECT_EQ(popcnt.Get<T>(i), __builtin_popcount(static_cast<uint32_t>(bits))) << type_name << " popcnt of " << +values[i];
  }
}

TEST(ElementwiseExpansionTest, BitCountsAreExact) {
  CheckBitCounts<int32_t>("s32");
  CheckBitCounts<uint32_t>("u32");
  CheckBitCounts<int8_t>("s8");
  CheckBitCounts<uint8_t>("u8");
  CheckBitCounts<int16_t>("s16");
  CheckBitCounts<uint16_t>("u16");
}

}  // namespace
}  // namespace tpu::compiler
