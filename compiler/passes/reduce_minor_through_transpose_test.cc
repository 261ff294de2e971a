#include "compiler/passes/reduce_minor_through_transpose.h"

#include <gtest/gtest.h>

#include <string>

#include "compiler/passes/pass_test_util.h"

namespace tpu::compiler {
namespace {

using testing::ExpectRewrite;
using testing::ExpectUnchanged;

// A module that reduces `x` of `in` to `out` over `dims` with `op` and init value `init`.
std::string ReduceModule(const std::string& in, const std::string& out, const std::string& dims,
                         const std::string& op, const std::string& init) {
  return R"(HloModule reduce

%reducer (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %r = f32[] )" + op + R"((f32[] %a, f32[] %b)
}

ENTRY %main (x: )" + in + ") -> " + out + R"( {
  %x = )" + in + R"( parameter(0)
  %init = f32[] constant()" + init + R"()
  ROOT %sum = )" + out + " reduce(" + in + R"( %x, f32[] %init), dimensions={)" + dims + R"(}, to_apply=%reducer
}
)";
}

TEST(ReduceMinorThroughTransposeTest, ReducesTheMinorDimensionOfAMatrixOverDimensionZeroOfItsTranspose) {
  ReduceMinorThroughTranspose pass;
  const char* checks = R"(
CHECK:      %[[T:transpose.[0-9]+]] = f32[8,4] transpose(f32[4,8]{1,0} %x), dimensions={1,0}
CHECK-NEXT: ROOT %reduce.{{[0-9]+}} = f32[4] reduce(f32[8,4] %[[T]], f32[] %init), dimensions={0}, to_apply=%reducer
)";
  ExpectRewrite(pass, ReduceModule("f32[4,8]{1,0}", "f32[4]{0}", "1", "add", "0"), checks);
}

TEST(ReduceMinorThroughTransposeTest, AVectorGoesThroughAColumn) {
  ReduceMinorThroughTranspose pass;
  const char* checks = R"(
CHECK:      %[[ROW:reshape.[0-9]+]] = f32[1,8] reshape(f32[8]{0} %x)
CHECK-NEXT: %[[COLUMN:transpose.[0-9]+]] = f32[8,1] transpose(f32[1,8] %[[ROW]]), dimensions={1,0}
CHECK-NEXT: %[[ONE:reduce.[0-9]+]] = f32[1] reduce(f32[8,1] %[[COLUMN]], f32[] %init), dimensions={0}, to_apply=%reducer
CHECK-NEXT: ROOT %reshape.{{[0-9]+}} = f32[] reshape(f32[1] %[[ONE]])
)";
  ExpectRewrite(pass, ReduceModule("f32[8]{0}", "f32[]", "0", "maximum", "-inf"), checks);
}

TEST(ReduceMinorThroughTransposeTest, AMatrixToAScalarReducesItsRowsFirst) {
  ReduceMinorThroughTranspose pass;
  const char* checks = R"(
CHECK:      %[[ROW:reduce.[0-9]+]] = f32[8] reduce(f32[4,8]{1,0} %x, f32[] %init), dimensions={0}, to_apply=%reducer
CHECK-NEXT: %[[MATRIX:reshape.[0-9]+]] = f32[1,8] reshape(f32[8] %[[ROW]])
CHECK-NEXT: %[[COLUMN:transpose.[0-9]+]] = f32[8,1] transpose(f32[1,8] %[[MATRIX]]), dimensions={1,0}
CHECK-NEXT: %[[ONE:reduce.[0-9]+]] = f32[1] reduce(f32[8,1] %[[COLUMN]], f32[] %init), dimensions={0}, to_apply=%reducer
CHECK-NEXT: ROOT %reshape.{{[0-9]+}} = f32[] reshape(f32[1] %[[ONE]])
)";
  ExpectRewrite(pass, ReduceModule("f32[4,8]{1,0}", "f32[]", "0,1", "add", "0"), checks);
}

TEST(ReduceMinorThroughTransposeTest, LeavesOtherReductionsUnchanged) {
  ReduceMinorThroughTranspose pass;
  // Dimension 0 is what the VPU reduces.
  ExpectUnchanged(pass, ReduceModule("f32[4,8]{1,0}", "f32[8]{0}", "0", "add", "0"));
  // An init value that is not the identity would be applied twice.
  ExpectUnchanged(pass, ReduceModule("f32[4,8]{1,0}", "f32[4]{0}", "1", "add", "1"));
  // A minor dimension of one element.
  ExpectUnchanged(pass, ReduceModule("f32[4,1]{1,0}", "f32[4]{0}", "1", "add", "0"));
}

}  // namespace
}  // namespace tpu::compiler
