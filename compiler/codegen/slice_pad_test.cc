// The lowerings of the convolution network path (slice_pad.cc, depthwise.cc, reduce.cc and what
// prepare.h rewrites for them) synchronize their units: the reference model runs every instruction at
// issue and cannot show a missing SYNC, the RTL would. Values are checked on the model by
// tb/system/efficientnet_test.cc; here every program goes through the sync checker.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "compiler/codegen/codegen.h"
#include "compiler/codegen/sync_checker.h"
#include "compiler/hlo/parser.h"
#include "compiler/passes/rebatch.h"

namespace tpu::compiler {
namespace {

void ExpectSynchronized(const std::string& text, const CompileOptions& options) {
  StatusOr<std::unique_ptr<hlo::HloModule>> module = hlo::ParseHloModule(text);
  ASSERT_TRUE(module.ok()) << module.status();
  StatusOr<Program> program = Compile(**module, options);
  ASSERT_TRUE(program.ok()) << program.status() << "\n" << text;
  Status synchronized = CheckUnitSynchronization(program->code, SyncCheckOptions{options.lanes});
  EXPECT_TRUE(synchronized.ok()) << synchronized << "\n" << text;
}

CompileOptions Tiny() {
  CompileOptions options;
  options.lanes = 8;
  options.vmem_lines = 8192;
  return options;
}

TEST(ConvolutionPathSyncTest, SlicePadConcatenate) {
  ExpectSynchronized(R"(HloModule slice
ENTRY %main (x: f32[3,11,13,19]) -> f32[3,5,4,7] {
  %x = f32[3,11,13,19] parameter(0)
  ROOT %s = f32[3,5,4,7] slice(f32[3,11,13,19] %x), slice={[0:3], [1:11:2], [2:13:3], [0:7]}
})", Tiny());
  ExpectSynchronized(R"(HloModule pad
ENTRY %main (x: f32[2,5,7,11]) -> f32[2,8,8,11] {
  %x = f32[2,5,7,11] parameter(0)
  %zero = f32[] constant(0)
  ROOT %p = f32[2,8,8,11] pad(f32[2,5,7,11] %x, f32[] %zero), padding=0_0x1_2x2_-1x0_0
})", Tiny());
  ExpectSynchronized(R"(HloModule concat
ENTRY %main (a: f32[5,16], b: f32[5,7], c: f32[2,23]) -> f32[7,23] {
  %a = f32[5,16] parameter(0)
  %b = f32[5,7] parameter(1)
  %c = f32[2,23] parameter(2)
  %ab = f32[5,23] concatenate(f32[5,16] %a, f32[5,7] %b), dimensions={1}
  ROOT %abc = f32[7,23] concatenate(f32[5,23] %ab, f32[2,23] %c), dimensions={0}
})", Tiny());
}

// Slices, pads and concatenates that move columns to other lanes, and a reshape that changes the rows
// (relayout.cc), with the lanes and VMEM of both configurations.
TEST(ConvolutionPathSyncTest, LaneRelayouts) {
  CompileOptions v2;
  v2.lanes = 128;
  v2.vmem_lines = 32768;
  for (const CompileOptions& options : {Tiny(), v2}) {
    ExpectSynchronized(R"(HloModule grouped
ENTRY %main (x: f32[2,9,300]) -> (f32[2,9,100], f32[2,4,99]) {
  %x = f32[2,9,300] parameter(0)
  %g1 = f32[2,9,100] slice(f32[2,9,300] %x), slice={[0:2], [0:9], [100:200]}
  %s = f32[2,4,99] slice(f32[2,9,300] %x), slice={[0:2], [1:9:2], [3:300:3]}
  ROOT %t = (f32[2,9,100], f32[2,4,99]) tuple(f32[2,9,100] %g1, f32[2,4,99] %s)
})", options);
    ExpectSynchronized(R"(HloModule dilate
ENTRY %main (x: f32[2,7,13]) -> f32[2,15,28] {
  %x = f32[2,7,13] parameter(0)
  %v = f32[] constant(1.5)
  ROOT %p = f32[2,15,28] pad(f32[2,7,13] %x, f32[] %v), padding=0_0x1_1_1x1_2_1
})", options);
    // Enough rows for the software pipeline with 128 lanes too.
    ExpectSynchronized(R"(HloModule pipelined
ENTRY %main (x: f32[600,300], y: f32[600,77]) -> (f32[600,287], f32[600,377], f32[600,599]) {
  %x = f32[600,300] parameter(0)
  %y = f32[600,77] parameter(1)
  %s = f32[600,287] slice(f32[600,300] %x), slice={[0:600], [3:290]}
  %c = f32[600,377] concatenate(f32[600,300] %x, f32[600,77] %y), dimensions={1}
  %z = f32[] constant(-3)
  %p = f32[600,599] pad(f32[600,300] %x, f32[] %z), padding=0_0x0_0_1
  ROOT %t = (f32[600,287], f32[600,377], f32[600,599]) tuple(%s, %c, %p)
})", options);
    ExpectSynchronized(R"(HloModule concat_reshape
ENTRY %main (a: f32[5,7], b: f32[5,9]) -> f32[80] {
  %a = f32[5,7] parameter(0)
  %b = f32[5,9] parameter(1)
  %ab = f32[5,16] concatenate(f32[5,7] %a, f32[5,9] %b), dimensions={1}
  ROOT %r = f32[80] reshape(f32[5,16] %ab)
})", options);
  }
}

TEST(ConvolutionPathSyncTest, ReductionsAndTopK) {
  ExpectSynchronized(R"(HloModule reduce
%sum (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}
%min (a: s32[], b: s32[]) -> s32[] {
  %a = s32[] parameter(0)
  %b = s32[] parameter(1)
  ROOT %s = s32[] minimum(s32[] %a, s32[] %b)
}
ENTRY %main (x: f32[3,5,7,13], y: s32[9,13]) -> (f32[3,13], s32[13]) {
  %x = f32[3,5,7,13] parameter(0)
  %zero = f32[] constant(0)
  %r = f32[3,13] reduce(f32[3,5,7,13] %x, f32[] %zero), dimensions={1,2}, to_apply=%sum
  %y = s32[9,13] parameter(1)
  %big = s32[] constant(2147483647)
  %m = s32[13] reduce(s32[9,13] %y, s32[] %big), dimensions={0}, to_apply=%min
  ROOT %t = (f32[3,13], s32[13]) tuple(f32[3,13] %r, s32[13] %m)
})", Tiny());
  ExpectSynchronized(R"(HloModule topk
%greater (p0: f32[], p1: f32[], p2: s32[], p3: s32[]) -> pred[] {
  %p2 = s32[] parameter(2)
  %p3 = s32[] parameter(3)
  %p0 = f32[] parameter(0)
  %p1 = f32[] parameter(1)
  ROOT %gt = pred[] compare(f32[] %p0, f32[] %p1), direction=GT
}
ENTRY %main (x: f32[5,37]) -> s32[5,3] {
  %x = f32[5,37] parameter(0)
  %iota = s32[37] iota(), iota_dimension=0
  %b = s32[5,37] broadcast(s32[37] %iota), dimensions={1}
  %sort = (f32[5,37], s32[5,37]) sort(f32[5,37] %x, s32[5,37] %b), dimensions={1}, is_stable=true, to_apply=%greater
  %i = s32[5,37] get-tuple-element((f32[5,37], s32[5,37]) %sort), index=1
  ROOT %is = s32[5,3] slice(s32[5,37] %i), slice={[0:5], [0:3]}
})", Tiny());
}

TEST(ConvolutionPathSyncTest, Convolutions) {
  ExpectSynchronized(R"(HloModule depthwise
ENTRY %main (x: f32[2,9,7,10], k: f32[5,5,1,10]) -> f32[2,5,4,10] {
  %x = f32[2,9,7,10] parameter(0)
  %k = f32[5,5,1,10] parameter(1)
  ROOT %c = f32[2,5,4,10] convolution(f32[2,9,7,10] %x, f32[5,5,1,10] %k), window={size=5x5 stride=2x2 pad=2_2x2_2}, dim_labels=b01f_01io->b01f, feature_group_count=10
})", Tiny());
  ExpectSynchronized(R"(HloModule stem
ENTRY %main (x: f32[1,9,11,3], k: f32[3,3,3,5]) -> f32[1,4,5,5] {
  %x = f32[1,9,11,3] parameter(0)
  %k = f32[3,3,3,5] parameter(1)
  ROOT %c = f32[1,4,5,5] convolution(f32[1,9,11,3] %x, f32[3,3,3,5] %k), window={size=3x3 stride=2x2 pad=0_1x0_1}, dim_labels=b01f_01io->b01f
})", Tiny());
}

#ifdef TPU_SHARED_HLO_DIR
// The whole network as tpusim runs it (v2 sizes: the tiny IMEM cannot hold it).
TEST(ConvolutionPathSyncTest, EfficientNetAtBatchOne) {
  std::ifstream in(std::string(TPU_SHARED_HLO_DIR) + "/efficientnet_forward.hlo");
  if (!in) GTEST_SKIP() << "no shared EfficientNet module";
  std::stringstream text;
  text << in.rdbuf();
  std::unique_ptr<hlo::HloModule> module = hlo::ParseHloModule(text.str()).value();
  ASSERT_TRUE(Rebatch(1).Run(module.get()).ok());
  ASSERT_TRUE(FillElidedConstants(module.get(), 1).ok());
  CompileOptions options;
  options.lanes = 128;
  options.vmem_lines = 32768;
  options.imem_words = 16384;
  StatusOr<Program> program = Compile(*module, options);
  ASSERT_TRUE(program.ok()) << program.status();
  Status synchronized = CheckUnitSynchronization(program->code, SyncCheckOptions{options.lanes});
  EXPECT_TRUE(synchronized.ok()) << synchronized;
}
#endif

}  // namespace
}  // namespace tpu::compiler
