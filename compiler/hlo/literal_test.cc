#include "compiler/hlo/literal.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

namespace tpu::hlo {
namespace {

TEST(LiteralTest, RowMajorStorage) {
  Literal literal = Literal::CreateR2<float>({{1, 2, 3}, {4, 5, 6}});
  EXPECT_EQ(literal.shape().ToString(), "f32[2,3]");
  EXPECT_EQ(literal.Get<float>(1), 2.0f);
  EXPECT_EQ(literal.Get<float>(3), 4.0f);
  EXPECT_EQ(literal.ValuesToString(), "{ {1, 2, 3}, {4, 5, 6} }");
  EXPECT_EQ(literal.ToString(), "f32[2,3] { {1, 2, 3}, {4, 5, 6} }");
}

TEST(LiteralTest, FromFloatsConvertsToElementType) {
  Literal literal(Shape::Make(PrimitiveType::S32, {3}), {1.0f, -2.0f, 7.9f});
  EXPECT_EQ(literal.Get<int32_t>(0), 1);
  EXPECT_EQ(literal.Get<int32_t>(1), -2);
  EXPECT_EQ(literal.Get<int32_t>(2), 7);  // truncation toward zero, like convert
}

TEST(LiteralTest, Bfloat16RoundsToNearestEven) {
  // 1 + 2^-8 is halfway between two bf16 values; ties go to the even one (1.0).
  EXPECT_EQ(Bfloat16ToFloat(FloatToBfloat16(1.0f + std::ldexp(1.0f, -8))), 1.0f);
  EXPECT_EQ(Bfloat16ToFloat(FloatToBfloat16(1.0f + 3 * std::ldexp(1.0f, -8))), 1.0f + std::ldexp(1.0f, -6));
  EXPECT_TRUE(std::isnan(Bfloat16ToFloat(FloatToBfloat16(NAN))));
  EXPECT_TRUE(std::isinf(Bfloat16ToFloat(FloatToBfloat16(3.4e38f))));
}

TEST(LiteralTest, HalfConversions) {
  for (float value : {0.0f, 1.0f, -2.5f, 65504.0f, 6.1035156e-05f, 5.9604645e-08f})
    EXPECT_EQ(HalfToFloat(FloatToHalf(value)), value) << value;
  EXPECT_TRUE(std::isinf(HalfToFloat(FloatToHalf(70000.0f))));
}

TEST(LiteralTest, ShortestRoundTripText) {
  EXPECT_EQ(Literal::CreateR0<float>(0.9f).ValuesToString(), "0.9");
  EXPECT_EQ(Literal::CreateR0<float>(200.0f).ValuesToString(), "200");
  EXPECT_EQ(Literal::CreateR0<float>(-INFINITY).ValuesToString(), "-inf");
  std::string third = Literal::CreateR0<float>(1.0f / 3).ValuesToString();
  EXPECT_EQ(std::strtof(third.c_str(), nullptr), 1.0f / 3);
  EXPECT_LE(third.size(), 10u);  // no more digits than a float needs
  EXPECT_EQ(Literal::CreateR0<bool>(true).ValuesToString(), "true");
  EXPECT_EQ(Literal::CreateR0<int64_t>(-9007199254740993LL).ValuesToString(), "-9007199254740993");
}

TEST(LiteralTest, ConvertSaturatesAndKeeps64BitIntegers) {
  Literal floats = Literal::CreateR1<float>({1e10f, -1e10f, NAN, 2.5f});
  Literal ints = floats.Convert(PrimitiveType::S32);
  EXPECT_EQ(ints.Get<int32_t>(0), std::numeric_limits<int32_t>::max());
  EXPECT_EQ(ints.Get<int32_t>(1), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(ints.Get<int32_t>(2), 0);
  EXPECT_EQ(ints.Get<int32_t>(3), 2);
  Literal big = Literal::CreateR1<int64_t>({(1LL << 60) + 1});
  EXPECT_EQ(big.Convert(PrimitiveType::U64).Get<uint64_t>(0), (1ULL << 60) + 1);
}

TEST(LiteralTest, RandomIsSeededAndTyped) {
  std::mt19937 a(7), b(7);
  Shape shape = Shape::Make(PrimitiveType::F32, {4, 5});
  Literal x = Literal::Random(shape, a);
  Literal y = Literal::Random(shape, b);
  EXPECT_EQ(x, y);
  for (float v : x.ToFloatVector()) {
    EXPECT_GE(v, -1.0f);
    EXPECT_LT(v, 1.0f);
  }
  Literal tuple = Literal::Random(Shape::MakeTuple({shape, Shape::Make(PrimitiveType::S32, {})}), a);
  ASSERT_EQ(tuple.tuple_elements().size(), 2u);
  EXPECT_EQ(tuple.tuple_elements()[1].shape().element_type, PrimitiveType::S32);
}

}  // namespace
}  // namespace tpu::hlo
