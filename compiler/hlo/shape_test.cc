#include "compiler/hlo/shape.h"

#include <gtest/gtest.h>

#include <limits>

#include "compiler/hlo/parser.h"

namespace tpu::hlo {
namespace {

TEST(ShapeTest, ParsesAndPrintsArraysWithLayouts) {
  auto shape = ParseShape("f32[200,32]{1,0}");
  ASSERT_TRUE(shape.ok()) << shape.status();
  EXPECT_EQ(shape->element_type, PrimitiveType::F32);
  EXPECT_EQ(shape->dimensions, (std::vector<int64_t>{200, 32}));
  EXPECT_EQ(shape->minor_to_major, (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(shape->ElementCount(), 6400);
  EXPECT_EQ(shape->ByteSize(), 25600);
  EXPECT_EQ(shape->ToString(), "f32[200,32]");
  EXPECT_EQ(shape->ToString(true), "f32[200,32]{1,0}");
}

TEST(ShapeTest, KeepsTiledLayoutText) {
  auto shape = ParseShape("bf16[8,128]{1,0:T(8,128)(2,1)}");
  ASSERT_TRUE(shape.ok()) << shape.status();
  EXPECT_EQ(shape->layout_tiling, "T(8,128)(2,1)");
  EXPECT_EQ(shape->ToString(true), "bf16[8,128]{1,0:T(8,128)(2,1)}");
}

TEST(ShapeTest, TuplesScalarsAndTokens) {
  auto shape = ParseShape("(f32[], s32[4]{0}, (pred[2,2]{0,1}), token[])");
  ASSERT_TRUE(shape.ok()) << shape.status();
  ASSERT_TRUE(shape->IsTuple());
  ASSERT_EQ(shape->tuple_shapes.size(), 4u);
  EXPECT_EQ(shape->tuple_shapes[0].rank(), 0);
  EXPECT_EQ(shape->tuple_shapes[0].ElementCount(), 1);
  EXPECT_TRUE(shape->tuple_shapes[3].IsToken());
  EXPECT_EQ(shape->ToString(true), "(f32[], s32[4]{0}, (pred[2,2]{0,1}), token[])");
}

TEST(ShapeTest, DynamicDimensions) {
  auto unbounded = ParseShape("f32[?,10]");
  ASSERT_TRUE(unbounded.ok()) << unbounded.status();
  EXPECT_FALSE(unbounded->IsStatic());
  EXPECT_TRUE(unbounded->is_dynamic_dimension(0));
  EXPECT_EQ(unbounded->ToString(), "f32[?,10]");
  auto bounded = ParseShape("s32[<=8,3]");
  ASSERT_TRUE(bounded.ok()) << bounded.status();
  EXPECT_FALSE(bounded->IsStatic());
  EXPECT_EQ(bounded->dimensions[0], 8);
  EXPECT_EQ(bounded->ToString(), "s32[<=8,3]");
}

TEST(ShapeTest, EqualityIgnoresLayout) {
  Shape a = Shape::MakeWithDefaultLayout(PrimitiveType::F32, {2, 3});
  Shape b = Shape::Make(PrimitiveType::F32, {2, 3});
  b.minor_to_major = {0, 1};
  EXPECT_EQ(a, b);
  EXPECT_FALSE(a.EqualsIncludingLayout(b));
  EXPECT_NE(a, Shape::Make(PrimitiveType::F32, {3, 2}));
  EXPECT_NE(a, Shape::Make(PrimitiveType::S32, {2, 3}));
}

TEST(ShapeTest, BadShapesAreRejected) {
  EXPECT_FALSE(ParseShape("f31[2]").ok());
  EXPECT_FALSE(ParseShape("f32[2").ok());
  EXPECT_FALSE(ParseShape("f32[2]{0,1}").ok());  // layout rank mismatch
  EXPECT_FALSE(ParseShape("f32[a]").ok());
}

TEST(ShapeTest, PrimitiveTypeNamesRoundTrip) {
  for (PrimitiveType type : {PrimitiveType::PRED, PrimitiveType::S8, PrimitiveType::S64, PrimitiveType::U32,
                             PrimitiveType::F16, PrimitiveType::BF16, PrimitiveType::F32, PrimitiveType::F64}) {
    PrimitiveType back;
    ASSERT_TRUE(PrimitiveTypeFromName(PrimitiveTypeName(type), &back));
    EXPECT_EQ(back, type);
  }
}

TEST(ShapeTest, UnsupportedXlaTypesRoundTripAndAreMarked) {
  for (PrimitiveType type : {PrimitiveType::C64, PrimitiveType::C128, PrimitiveType::F8E4M3FN, PrimitiveType::S4,
                             PrimitiveType::U4, PrimitiveType::OPAQUE}) {
    PrimitiveType back;
    ASSERT_TRUE(PrimitiveTypeFromName(PrimitiveTypeName(type), &back));
    EXPECT_EQ(back, type);
    EXPECT_FALSE(IsSupportedPrimitiveType(type)) << PrimitiveTypeName(type);
  }
  EXPECT_TRUE(IsSupportedPrimitiveType(PrimitiveType::F32));
  EXPECT_TRUE(IsSupportedPrimitiveType(PrimitiveType::TOKEN));
}

TEST(ShapeTest, SizesSaturateInsteadOfOverflowing) {
  const Shape huge = Shape::Make(PrimitiveType::F32, {100000000000, 100000000000});
  EXPECT_EQ(huge.ElementCount(), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(huge.ByteSize(), std::numeric_limits<int64_t>::max());
  const Shape big = Shape::Make(PrimitiveType::F32, {100000000000, 8});
  EXPECT_EQ(big.ByteSize(), int64_t{3200000000000});  // 64-bit, exact
}

}  // namespace
}  // namespace tpu::hlo
