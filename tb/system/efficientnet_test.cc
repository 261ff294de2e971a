// The convolution network path end to end through `tpusim run` on the model backend (and the rtl one
// for the single lowerings): every lowering it needs (convolutions, slice, pad, concatenate, reductions over several dimensions and with min, top-k)
// on random shapes that are not multiples of the lane count, then the shared EfficientNet forward pass
// re-specialized to batch 1: its logits (--root) and its two counts, each within the tolerance of
// docs/numerics.md of the interpreter (tpusim exits 0 only then).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "tb/system/tpusim_process.h"

namespace {

using tpu::system_test::MakeTempDir;
using tpu::system_test::RunTpusim;
using tpu::system_test::TpusimRun;

std::string WriteModule(const std::string& name, const std::string& text) {
  const std::string path = MakeTempDir("efficientnet_test") + "/" + name + ".hlo";
  std::ofstream(path) << text;
  return path;
}

std::string F32(const std::vector<int64_t>& dims) {
  std::string text = "f32[";
  for (size_t i = 0; i < dims.size(); ++i) text += (i ? "," : "") + std::to_string(dims[i]);
  return text + "]";
}

// A module with parameters `params` (name, shape) and the instructions `body` (the last one is ROOT).
std::string Module(const std::string& name, const std::vector<std::pair<std::string, std::string>>& params,
                   const std::vector<std::string>& body, const std::string& result_shape,
                   const std::string& computations = "") {
  std::string text = "HloModule " + name + "\n\n" + computations + "ENTRY %main (";
  for (size_t i = 0; i < params.size(); ++i) text += (i ? ", " : "") + params[i].first + ": " + params[i].second;
  text += ") -> " + result_shape + " {\n";
  for (size_t i = 0; i < params.size(); ++i) {
    text += "  %" + params[i].first + " = " + params[i].second + " parameter(" + std::to_string(i) + ")\n";
  }
  for (size_t i = 0; i < body.size(); ++i) text += std::string(i + 1 == body.size() ? "  ROOT " : "  ") + body[i] + "\n";
  return text + "}\n";
}

const char kSum[] = "%sum (a: f32[], b: f32[]) -> f32[] {\n  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n"
                    "  ROOT %s = f32[] add(f32[] %a, f32[] %b)\n}\n\n";
const char kMin[] = "%min (a: f32[], b: f32[]) -> f32[] {\n  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n"
                    "  ROOT %s = f32[] minimum(f32[] %a, f32[] %b)\n}\n\n";
const char kSumS32[] = "%sum_s32 (a: s32[], b: s32[]) -> s32[] {\n  %a = s32[] parameter(0)\n  %b = s32[] parameter(1)\n"
                       "  ROOT %s = s32[] add(s32[] %a, s32[] %b)\n}\n\n";
const char kGreater[] =
    "%greater (p0: f32[], p1: f32[], p2: s32[], p3: s32[]) -> pred[] {\n  %p2 = s32[] parameter(2)\n"
    "  %p3 = s32[] parameter(3)\n  %p0 = f32[] parameter(0)\n  %p1 = f32[] parameter(1)\n"
    "  ROOT %gt = pred[] compare(f32[] %p0, f32[] %p1), direction=GT, type=TOTALORDER\n}\n\n";

// On the model and on the verilated chip, whose units run concurrently (a missing
// SYNC shows there).
void ExpectRunsWithinTolerance(const std::string& name, const std::string& text, int seed = 1) {
  SCOPED_TRACE(name);
  const std::string path = WriteModule(name, text);
  std::vector<std::string> backends = {"model"};
  backends.push_back("rtl");
  for (const std::string& backend : backends) {
    TpusimRun run = RunTpusim("run " + path + " --backend=" + backend + " --seed=" + std::to_string(seed));
    EXPECT_EQ(run.exit_code, 0) << backend << "\n" << text << "\n" << run.output;
    EXPECT_NE(run.output.find("output 0:"), std::string::npos) << run.output;
  }
}

// A random size in [lo, hi] that is not a multiple of 8.
int64_t Odd(std::mt19937& rng, int64_t lo, int64_t hi) {
  for (;;) {
    const int64_t value = lo + static_cast<int64_t>(rng() % static_cast<uint32_t>(hi - lo + 1));
    if (value % 8 != 0) return value;
  }
}

TEST(ConvolutionNetworkLoweringsTest, SlicesWithStridesAndMinorPrefixes) {
  std::mt19937 rng(11);
  for (int round = 0; round < 3; ++round) {
    const std::vector<int64_t> in = {Odd(rng, 2, 3), Odd(rng, 5, 13), Odd(rng, 5, 13), Odd(rng, 9, 21)};
    const int64_t k = Odd(rng, 1, in[3]);
    const std::vector<int64_t> out = {in[0], (in[1] - 1 + 1) / 2, (in[2] - 2 + 2) / 3, k};
    const std::string slice = "%s = " + F32(out) + " slice(" + F32(in) + " %x), slice={[0:" + std::to_string(in[0]) +
                              "], [1:" + std::to_string(in[1]) + ":2], [2:" + std::to_string(in[2]) + ":3], [0:" +
                              std::to_string(k) + "]}";
    ExpectRunsWithinTolerance("slice" + std::to_string(round), Module("slice", {{"x", F32(in)}}, {slice}, F32(out)));
  }
}

TEST(ConvolutionNetworkLoweringsTest, PadsSpatialDimensions) {
  std::mt19937 rng(12);
  for (int round = 0; round < 2; ++round) {
    const std::vector<int64_t> in = {Odd(rng, 1, 3), Odd(rng, 3, 9), Odd(rng, 3, 9), Odd(rng, 3, 19)};
    const std::vector<int64_t> out = {in[0], in[1] + 3, in[2] + 2, in[3]};
    ExpectRunsWithinTolerance(
        "pad" + std::to_string(round),
        Module("pad", {{"x", F32(in)}},
               {"%zero = f32[] constant(0)", "%p = " + F32(out) + " pad(" + F32(in) + " %x, f32[] %zero), padding=0_0x1_2x2_0x0_0"},
               F32(out)));
  }
  // Negative padding crops.
  ExpectRunsWithinTolerance(
      "pad_crop", Module("pad_crop", {{"x", F32({2, 7, 9, 5})}},
                         {"%zero = f32[] constant(0)",
                          "%p = " + F32({2, 7, 9, 5}) + " pad(" + F32({2, 7, 9, 5}) + " %x, f32[] %zero), padding=0_0x-1_1x1_-1x0_0"},
                         F32({2, 7, 9, 5})));
}

TEST(ConvolutionNetworkLoweringsTest, ConcatenatesAlongRowsAndWholeTiles) {
  ExpectRunsWithinTolerance(
      "concat_rows", Module("concat_rows", {{"a", F32({3, 5, 11})}, {"b", F32({3, 2, 11})}},
                            {"%c = " + F32({3, 7, 11}) + " concatenate(" + F32({3, 5, 11}) + " %a, " + F32({3, 2, 11}) +
                             " %b), dimensions={1}"},
                            F32({3, 7, 11})));
  ExpectRunsWithinTolerance(
      "concat_minor", Module("concat_minor", {{"a", F32({5, 16})}, {"b", F32({5, 7})}},
                             {"%c = " + F32({5, 23}) + " concatenate(" + F32({5, 16}) + " %a, " + F32({5, 7}) +
                              " %b), dimensions={1}"},
                             F32({5, 23})));
}

// x[R,C] -> [R*C] (the top-k match matrix of the classifier) moves elements between lanes.
TEST(ConvolutionNetworkLoweringsTest, FlattensAFewRows) {
  ExpectRunsWithinTolerance("flatten", Module("flatten", {{"x", F32({5, 11})}},
                                              {"%f = " + F32({55}) + " reshape(" + F32({5, 11}) + " %x)"}, F32({55})));
  ExpectRunsWithinTolerance(
      "flatten_pred", Module("flatten_pred", {{"x", F32({5, 3})}, {"y", F32({5, 3})}},
                             {"%c = pred[5,3] compare(" + F32({5, 3}) + " %x, " + F32({5, 3}) + " %y), direction=GT",
                              "%f = pred[15] reshape(pred[5,3] %c)", "%s = s32[15] convert(pred[15] %f)"},
                             "s32[15]"));
}

TEST(ConvolutionNetworkLoweringsTest, ReducesSeveralDimensionsAndWithMinimum) {
  ExpectRunsWithinTolerance(
      "reduce_hw", Module("reduce_hw", {{"x", F32({3, 5, 7, 13})}},
                          {"%zero = f32[] constant(0)",
                           "%r = " + F32({3, 13}) + " reduce(" + F32({3, 5, 7, 13}) +
                               " %x, f32[] %zero), dimensions={1,2}, to_apply=%sum"},
                          F32({3, 13}), kSum));
  ExpectRunsWithinTolerance(
      "reduce_min", Module("reduce_min", {{"x", F32({9, 13})}},
                           {"%inf = f32[] constant(inf)",
                            "%r = " + F32({13}) + " reduce(" + F32({9, 13}) + " %x, f32[] %inf), dimensions={0}, to_apply=%min"},
                           F32({13}), kMin));
  ExpectRunsWithinTolerance(
      "reduce_s32", Module("reduce_s32", {{"x", "s32[11]"}},
                           {"%zero = s32[] constant(0)",
                            "%r = s32[] reduce(s32[11] %x, s32[] %zero), dimensions={0}, to_apply=%sum_s32"},
                           "s32[]", kSumS32));
}

TEST(ConvolutionNetworkLoweringsTest, TopKBySortAndSlice) {
  const std::string values = F32({5, 37}), indices = "s32[5,37]";
  ExpectRunsWithinTolerance(
      "topk",
      Module("topk", {{"x", values}},
             {"%iota = s32[37] iota(), iota_dimension=0",
              "%b = " + indices + " broadcast(s32[37] %iota), dimensions={1}",
              "%sort = (" + values + ", " + indices + ") sort(" + values + " %x, " + indices +
                  " %b), dimensions={1}, is_stable=true, to_apply=%greater",
              "%v = " + values + " get-tuple-element((" + values + ", " + indices + ") %sort), index=0",
              "%vs = f32[5,3] slice(" + values + " %v), slice={[0:5], [0:3]}",
              "%i = " + indices + " get-tuple-element((" + values + ", " + indices + ") %sort), index=1",
              "%is = s32[5,3] slice(" + indices + " %i), slice={[0:5], [0:3]}",
              "%t = (f32[5,3], s32[5,3]) tuple(f32[5,3] %vs, s32[5,3] %is)"},
             "(f32[5,3], s32[5,3])", kGreater));
}

std::string ConvModule(const std::vector<int64_t>& in, const std::vector<int64_t>& kernel, const std::vector<int64_t>& out,
                       const std::string& window, int64_t groups) {
  return Module("conv", {{"x", F32(in)}, {"k", F32(kernel)}},
                {"%c = " + F32(out) + " convolution(" + F32(in) + " %x, " + F32(kernel) + " %k), window={" + window +
                 "}, dim_labels=b01f_01io->b01f, feature_group_count=" + std::to_string(groups)},
                F32(out));
}

TEST(ConvolutionNetworkLoweringsTest, ConvolutionsOfTheNetwork) {
  ExpectRunsWithinTolerance("conv_1x1", ConvModule({2, 5, 7, 6}, {1, 1, 6, 10}, {2, 5, 7, 10}, "size=1x1", 1));
  ExpectRunsWithinTolerance("conv_stem", ConvModule({1, 9, 11, 3}, {3, 3, 3, 5}, {1, 4, 5, 5},
                                                    "size=3x3 stride=2x2 pad=0_1x0_1", 1));
  ExpectRunsWithinTolerance("conv_depthwise3", ConvModule({1, 7, 9, 12}, {3, 3, 1, 12}, {1, 7, 9, 12},
                                                          "size=3x3 pad=1_1x1_1", 12));
  ExpectRunsWithinTolerance("conv_depthwise5s2", ConvModule({2, 9, 7, 10}, {5, 5, 1, 10}, {2, 5, 4, 10},
                                                            "size=5x5 stride=2x2 pad=2_2x2_2", 10));
  ExpectRunsWithinTolerance("conv_depthwise3s2", ConvModule({1, 9, 9, 13}, {3, 3, 1, 13}, {1, 4, 4, 13},
                                                            "size=3x3 stride=2x2 pad=0_1x0_1", 13));
}

const std::string kEfficientNet = std::string(TPU_SHARED_HLO_DIR) + "/efficientnet_forward.hlo";

// The logits of the forward pass at batch 1, then its two counts (top-5 and top-1 matches).
TEST(EfficientNetTest, RunsAtBatchOneWithinToleranceOfTheInterpreter) {
  if (!std::ifstream(kEfficientNet)) GTEST_SKIP() << "no " << kEfficientNet;
  TpusimRun logits = RunTpusim("run " + kEfficientNet + " --backend=model " + EFFICIENTNET_CONFIG_FLAG +
                               " --batch=1 --fill-elided-constants --root=add.2010 --seed=1");
  EXPECT_EQ(logits.exit_code, 0) << logits.output;
  EXPECT_NE(logits.output.find("output 0: f32[1,1000]"), std::string::npos) << logits.output;
  std::printf("logits run: %.1f s\n%s", logits.seconds, logits.output.c_str());
  TpusimRun counts = RunTpusim("run " + kEfficientNet + " --backend=model " + EFFICIENTNET_CONFIG_FLAG +
                               " --batch=1 --fill-elided-constants --seed=1");
  EXPECT_EQ(counts.exit_code, 0) << counts.output;
  EXPECT_NE(counts.output.find("output 1: s32[]"), std::string::npos) << counts.output;
  std::printf("counts run: %.1f s\n%s", counts.seconds, counts.output.c_str());
}

TEST(EfficientNetTest, BadRespecializationsAreClearErrors) {
  if (!std::ifstream(kEfficientNet)) GTEST_SKIP() << "no " << kEfficientNet;
  TpusimRun zero = RunTpusim("run " + kEfficientNet + " --batch=0");
  EXPECT_EQ(zero.exit_code, 1);
  EXPECT_NE(zero.output.find("batch size must be positive"), std::string::npos) << zero.output;
  TpusimRun root = RunTpusim("run " + kEfficientNet + " --batch=1 --root=no.such.instruction");
  EXPECT_EQ(root.exit_code, 1);
  EXPECT_NE(root.output.find("no instruction named 'no.such.instruction'"), std::string::npos) << root.output;
  TpusimRun elided = RunTpusim("run " + kEfficientNet + " --batch=1");
  EXPECT_EQ(elided.exit_code, 1);
  EXPECT_NE(elided.output.find("has no values (the dump elided them)"), std::string::npos) << elided.output;
}

// At the dump's batch of 250 the network does not fit one core, as on a real TPU core: the compiler
// reports the HBM need with the seeds' message before it generates any code.
TEST(EfficientNetTest, AtTheDumpsBatchItDoesNotFitOneCore) {
  if (!std::ifstream(kEfficientNet)) GTEST_SKIP() << "no " << kEfficientNet;
  TpusimRun run = RunTpusim("run " + kEfficientNet + " --backend=model " + EFFICIENTNET_CONFIG_FLAG + " --fill-elided-constants");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("ResourceExhausted"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("Ran out of memory in memory space hbm; used: "), std::string::npos) << run.output;
}

}  // namespace
