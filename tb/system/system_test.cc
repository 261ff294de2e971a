// System tests: `tpusim run` end to end as users run it (HLO text in, device counters and a checked
// comparison with the interpreter out), on the model backend and the rtl backend.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/hlo/literal.h"
#include "compiler/hlo/shape.h"
#include "sim/tpusim/output_compare.h"
#include "tb/system/tpusim_process.h"

namespace {

using tpu::system_test::MakeTempDir;
using tpu::system_test::ReadBytes;
using tpu::system_test::RunTpusim;
using tpu::system_test::TpusimRun;

std::string WriteFile(const std::string& dir, const std::string& name, const std::string& text) {
  const std::string path = dir + "/" + name;
  std::ofstream(path) << text;
  return path;
}

// dot(x[m,k], w[k,n]) + broadcast(b[n]), the shape of a dense layer without the activation.
std::string DotModule(int m, int k, int n) {
  const std::string x = "f32[" + std::to_string(m) + "," + std::to_string(k) + "]";
  const std::string w = "f32[" + std::to_string(k) + "," + std::to_string(n) + "]";
  const std::string y = "f32[" + std::to_string(m) + "," + std::to_string(n) + "]";
  const std::string b = "f32[" + std::to_string(n) + "]";
  return "HloModule dot_" + std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n) + "\n\n" +
         "ENTRY %main (x: " + x + ", w: " + w + ", b: " + b + ") -> " + y + " {\n" +
         "  %x = " + x + "{1,0} parameter(0)\n" +
         "  %w = " + w + "{1,0} parameter(1)\n" +
         "  %b = " + b + "{0} parameter(2)\n" +
         "  %dot = " + y + "{1,0} dot(" + x + "{1,0} %x, " + w + "{1,0} %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n" +
         "  %bb = " + y + "{1,0} broadcast(" + b + "{0} %b), dimensions={1}\n" +
         "  ROOT %sum = " + y + "{1,0} add(" + y + "{1,0} %dot, " + y + "{1,0} %bb)\n" +
         "}\n";
}

const std::string kDenseLayer = std::string(TPU_SOURCE_DIR) + "/sim/dense_layer.hlo";
const std::string kConfig = TPU_CONFIG_NAME;

// Every output line of a successful run says ok, and the counters are there.
void ExpectPassingRun(const TpusimRun& run, int outputs) {
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(std::regex_search(run.output, std::regex("(^|\n)cycles: [1-9][0-9]*\n"))) << run.output;
  EXPECT_TRUE(std::regex_search(run.output, std::regex("\nmxu_busy_cycles: [0-9]+\n"))) << run.output;
  EXPECT_TRUE(std::regex_search(run.output, std::regex("\ninstructions: [1-9][0-9]*\n"))) << run.output;
  for (int i = 0; i < outputs; ++i) {
    const std::regex line("output " + std::to_string(i) + ": f32\\[[0-9,]*\\] max_abs_err=\\S+ max_rel_err=\\S+ ok\n");
    EXPECT_TRUE(std::regex_search(run.output, line)) << run.output;
  }
  EXPECT_EQ(run.output.find("FAIL"), std::string::npos) << run.output;
}

TEST(TpusimRunTest, DenseLayerOnTheModel) {
  const std::string dir = MakeTempDir("system_test");
  TpusimRun run = RunTpusim("run " + kDenseLayer + " --backend=model --config=" + kConfig +
                            " --seed=1 --outputs=" + dir + "/out");
  ExpectPassingRun(run, 1);
  EXPECT_NE(run.output.find("output 0: f32[64,128] "), std::string::npos) << run.output;
  // The dense layer keeps the MXU busy: 64 rows times (256/N)*(128/N) weight tiles at least.
  std::smatch busy;
  ASSERT_TRUE(std::regex_search(run.output, busy, std::regex("mxu_busy_cycles: ([0-9]+)")));
  EXPECT_GT(std::stoull(busy[1]), 0u);
  // Raw little-endian f32, logical layout.
  EXPECT_EQ(ReadBytes(dir + "/out/out0.bin").size(), 64u * 128 * 4);
}

TEST(TpusimRunTest, SeedsAreReproducibleAndMatter) {
  const std::string dir = MakeTempDir("system_test");
  const std::string base = "run " + kDenseLayer + " --backend=model --config=" + kConfig;
  ASSERT_EQ(RunTpusim(base + " --seed=5 --outputs=" + dir + "/a").exit_code, 0);
  ASSERT_EQ(RunTpusim(base + " --seed=5 --outputs=" + dir + "/b").exit_code, 0);
  ASSERT_EQ(RunTpusim(base + " --seed=6 --outputs=" + dir + "/c").exit_code, 0);
  const std::string a = ReadBytes(dir + "/a/out0.bin");
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(a, ReadBytes(dir + "/b/out0.bin"));
  EXPECT_NE(a, ReadBytes(dir + "/c/out0.bin"));
}

// Shapes whose dimensions are not multiples of the MXU size (8 on tiny, 128 on v2): padding must be
// invisible in the results.
const int kOddShapes[][3] = {{1, 1, 1}, {3, 5, 7}, {13, 27, 19}, {9, 17, 33}, {33, 10, 9}};

TEST(TpusimRunTest, DotsOfShapesNotMultiplesOfTheMxuSize) {
  const std::string dir = MakeTempDir("system_test");
  for (const auto& shape : kOddShapes) {
    const std::string file = WriteFile(dir, "dot.hlo", DotModule(shape[0], shape[1], shape[2]));
    TpusimRun run = RunTpusim("run " + file + " --backend=model --config=" + kConfig + " --seed=2");
    SCOPED_TRACE("dot " + std::to_string(shape[0]) + "x" + std::to_string(shape[1]) + "x" + std::to_string(shape[2]));
    ExpectPassingRun(run, 1);
  }
}

TEST(TpusimRunTest, MalformedHloPrintsLineAndColumnAndExitsOne) {
  const std::string dir = MakeTempDir("system_test");
  const std::string file = WriteFile(dir, "bad.hlo",
                                     "HloModule bad\n\nENTRY %main (x: f32[4]) -> f32[4] {\n"
                                     "  %x = f32[4]{0} parameter(0)\n"
                                     "  ROOT %y = f32[4]{0} add(f32[4]{0} %x, f32[4]{0} %x\n"
                                     "}\n");
  TpusimRun run = RunTpusim("run " + file + " --backend=model --config=" + kConfig);
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_TRUE(std::regex_search(run.output, std::regex("line [0-9]+, column [0-9]+"))) << run.output;
  EXPECT_NE(run.output.find("bad.hlo"), std::string::npos) << run.output;
}

TEST(TpusimRunTest, VerifierErrorsExitOne) {
  const std::string dir = MakeTempDir("system_test");
  // Shape mismatch: add of f32[4] and f32[5].
  const std::string file = WriteFile(dir, "mismatch.hlo",
                                     "HloModule mismatch\n\nENTRY %main (x: f32[4], y: f32[5]) -> f32[4] {\n"
                                     "  %x = f32[4]{0} parameter(0)\n"
                                     "  %y = f32[5]{0} parameter(1)\n"
                                     "  ROOT %z = f32[4]{0} add(f32[4]{0} %x, f32[5]{0} %y)\n"
                                     "}\n");
  TpusimRun run = RunTpusim("run " + file + " --backend=model --config=" + kConfig);
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_EQ(run.output.find("cycles:"), std::string::npos) << run.output;
}

TEST(TpusimRunTest, UnsupportedOpsGetTheTpuMessage) {
  const std::string dir = MakeTempDir("system_test");
  const std::string file = WriteFile(dir, "custom.hlo",
                                     "HloModule custom\n\nENTRY %main (x: f32[4]) -> f32[4] {\n"
                                     "  %x = f32[4]{0} parameter(0)\n"
                                     "  ROOT %y = f32[4]{0} custom-call(f32[4]{0} %x), custom_call_target=\"MyKernel\"\n"
                                     "}\n");
  TpusimRun run = RunTpusim("run " + file + " --backend=model --config=" + kConfig);
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("No registered"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("XLA_TPU_JIT"), std::string::npos) << run.output;
}

TEST(TpusimRunTest, BadCommandLinesExitOne) {
  EXPECT_EQ(RunTpusim("").exit_code, 1);
  EXPECT_EQ(RunTpusim("frobnicate").exit_code, 1);
  EXPECT_EQ(RunTpusim("run").exit_code, 1);
  EXPECT_EQ(RunTpusim("run /nonexistent/file.hlo --backend=model").exit_code, 1);
  EXPECT_EQ(RunTpusim("run " + kDenseLayer + " --backend=fpga").exit_code, 1);
  EXPECT_EQ(RunTpusim("run " + kDenseLayer + " --bogus=1").exit_code, 1);
  EXPECT_EQ(RunTpusim("run " + kDenseLayer + " --backend=model --seed=-3").exit_code, 1);
  TpusimRun trace = RunTpusim("run " + kDenseLayer + " --backend=model --trace=/tmp/x.fst");
  EXPECT_EQ(trace.exit_code, 1);
  EXPECT_NE(trace.output.find("--backend=rtl"), std::string::npos) << trace.output;
}

TEST(TpusimRunTest, AWrongResultCannotPassSilently) {
  // The same run, with the first device element moved by more than the tolerance allows: reported as
  // FAIL with a non-zero exit status.
  TpusimRun run = RunTpusim("run " + kDenseLayer + " --backend=model --config=" + kConfig +
                            " --seed=1 --perturb-output=1000");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_TRUE(std::regex_search(run.output, std::regex("output 0: f32\\[64,128\\] .* FAIL"))) << run.output;
}

TEST(TpusimInfoTest, PrintsDevicesAndConfiguration) {
  TpusimRun run = RunTpusim("info --backend=model --config=" + kConfig);
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("TPU:0 (core 0, worker 0"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("CFG_LANES"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("0x54505553"), std::string::npos) << run.output;
}

// The v2 configuration is a v2-8 by default: four chips of two cores, one host.
TEST(TpusimInfoTest, V2IsAV2_8OfEightDevices) {
  TpusimRun run = RunTpusim("info --backend=model --config=v2");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("*** Num TPU Cores: 8\n"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("*** Num TPU Workers: 1\n"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("*** Num TPU Cores Per Worker: 8\n"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("TPU:7 (core 7, worker 0, chip 3"), std::string::npos) << run.output;
  EXPECT_EQ(run.output.find("TPU:8"), std::string::npos) << run.output;
}

TEST(TpusimInfoTest, ChipsFlagSizesTheBoard) {
  TpusimRun two = RunTpusim("info --backend=model --config=v2 --chips=2");
  EXPECT_EQ(two.exit_code, 0) << two.output;
  EXPECT_NE(two.output.find("*** Num TPU Cores: 4\n"), std::string::npos) << two.output;
  TpusimRun bad = RunTpusim("info --backend=model --chips=3");
  EXPECT_NE(bad.exit_code, 0) << bad.output;
  EXPECT_NE(bad.output.find("--chips must be 1, 2 or 4"), std::string::npos) << bad.output;
}

// A board of four verilated chips: every core answers, and knows its chip and the board size.
TEST(TpusimInfoTest, FourChipRtlBoard) {
  TpusimRun one = RunTpusim("info --backend=rtl --config=" + kConfig + " --chips=1");
  std::smatch per_chip;
  ASSERT_TRUE(std::regex_search(one.output, per_chip, std::regex("Num TPU Cores: ([0-9]+)"))) << one.output;
  TpusimRun run = RunTpusim("info --backend=rtl --config=" + kConfig + " --chips=4");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  const std::string cores = std::to_string(4 * std::stoi(per_chip[1].str()));
  EXPECT_NE(run.output.find("*** Num TPU Cores: " + cores + "\n"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("*** Num TPU Cores Per Worker: " + cores + "\n"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("chip 3, tpusim"), std::string::npos) << run.output;
  EXPECT_TRUE(std::regex_search(run.output, std::regex("CFG_NUM_CHIPS +0x[0-9a-f]+ = 0x00000004"))) << run.output;
}

// The comparison itself: a perturbed output is flagged, one inside the tolerance is not.
TEST(OutputCompareTest, FlagsValuesOutsideTheTolerance) {
  using tpu::hlo::Literal;
  using tpu::hlo::PrimitiveType;
  using tpu::hlo::Shape;
  std::mt19937 rng(3);
  const Literal reference = Literal::Random(Shape::Make(PrimitiveType::F32, {16, 16}), rng);
  double max_reference = 0;
  for (int64_t i = 0; i < reference.element_count(); ++i) {
    max_reference = std::max(max_reference, std::fabs(reference.GetAsDouble(i)));
  }
  const double atol = tpu::tpusim::kRelativeTolerance * max_reference;

  EXPECT_TRUE(tpu::tpusim::CompareOutput(reference, reference).ok);

  Literal inside = reference;
  const double r = reference.GetAsDouble(7);
  inside.SetFromDouble(7, r + 0.9 * (atol + tpu::tpusim::kRelativeTolerance * std::fabs(r)));
  tpu::tpusim::OutputComparison close = tpu::tpusim::CompareOutput(inside, reference);
  EXPECT_TRUE(close.ok);
  EXPECT_GT(close.max_abs_error, 0);

  Literal outside = reference;
  outside.SetFromDouble(7, r + 1.1 * (atol + tpu::tpusim::kRelativeTolerance * std::fabs(r)));
  tpu::tpusim::OutputComparison far = tpu::tpusim::CompareOutput(outside, reference);
  EXPECT_FALSE(far.ok);
  EXPECT_EQ(far.mismatches, 1);
  EXPECT_EQ(far.first_mismatch, 7);
  EXPECT_NE(tpu::tpusim::FormatComparison("output 0", reference, far).find("FAIL"), std::string::npos);

  Literal nan = reference;
  nan.SetFromDouble(3, NAN);
  EXPECT_FALSE(tpu::tpusim::CompareOutput(nan, reference).ok);

  const Literal other_shape = Literal::Random(Shape::Make(PrimitiveType::F32, {16, 15}), rng);
  tpu::tpusim::OutputComparison mismatch = tpu::tpusim::CompareOutput(other_shape, reference);
  EXPECT_FALSE(mismatch.ok);
  EXPECT_FALSE(mismatch.error.empty());

  // Integers have one right answer: off by one is a mismatch however large the values.
  Literal counts = Literal::Random(Shape::Make(PrimitiveType::S32, {16}), rng);
  counts.SetFromDouble(0, 100000);
  EXPECT_TRUE(tpu::tpusim::CompareOutput(counts, counts).ok);
  Literal off_by_one = counts;
  off_by_one.SetFromDouble(5, counts.GetAsDouble(5) + 1);
  tpu::tpusim::OutputComparison exact = tpu::tpusim::CompareOutput(off_by_one, counts);
  EXPECT_FALSE(exact.ok);
  EXPECT_EQ(exact.first_mismatch, 5);
}

// The shared training steps (JAX/Flax MAML and PyTorch/XLA MNIST MLP) end to end: every output within
// tolerance of the interpreter, and on the rtl backend byte-identical to the model.
struct SharedStep {
  const char* name;
  int outputs;
};
const SharedStep kSharedSteps[] = {{"maml_flax_train_step", 14}, {"pytorch_xla_mnist_mlp_train_step", 16}};

std::string SharedHlo(const char* name) { return std::string(TPU_SOURCE_DIR) + "/../shared/hlo/" + name + ".hlo"; }

// Like ExpectPassingRun for outputs of any element type.
void ExpectPassingStep(const TpusimRun& run, int outputs) {
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(std::regex_search(run.output, std::regex("(^|\n)cycles: [1-9][0-9]*\n"))) << run.output;
  for (int i = 0; i < outputs; ++i) {
    const std::regex line("output " + std::to_string(i) + ": [a-z0-9]+\\[[0-9,]*\\] .* ok\n");
    EXPECT_TRUE(std::regex_search(run.output, line)) << "output " << i << "\n" << run.output;
  }
  EXPECT_EQ(run.output.find("FAIL"), std::string::npos) << run.output;
}

TEST(TpusimRunTest, SharedTrainingStepsOnTheModel) {
  for (const SharedStep& step : kSharedSteps) {
    SCOPED_TRACE(step.name);
    if (ReadBytes(SharedHlo(step.name)).empty()) GTEST_SKIP() << "shared/hlo/" << step.name << ".hlo is not there";
    TpusimRun run = RunTpusim("run " + SharedHlo(step.name) + " --backend=model --config=" + kConfig + " --seed=4");
    ExpectPassingStep(run, step.outputs);
    std::printf("%s on the model:\n%s", step.name, run.output.c_str());
  }
}

TEST(TpusimRtlTest, SharedTrainingStepsRtlAndModelAreByteIdentical) {
  for (const SharedStep& step : kSharedSteps) {
    SCOPED_TRACE(step.name);
    const std::string file = SharedHlo(step.name);
    if (ReadBytes(file).empty()) GTEST_SKIP() << "shared/hlo/" << step.name << ".hlo is not there";
    const std::string dir = MakeTempDir("system_test");
    TpusimRun model =
        RunTpusim("run " + file + " --backend=model --config=" + kConfig + " --seed=3 --outputs=" + dir + "/model");
    ExpectPassingStep(model, step.outputs);
    const auto start = std::chrono::steady_clock::now();
    TpusimRun rtl = RunTpusim("run " + file + " --backend=rtl --config=" + kConfig + " --seed=3 --outputs=" + dir + "/rtl");
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ExpectPassingStep(rtl, step.outputs);
    std::printf("%s on the rtl (%.1f s wall):\n%s", step.name, seconds, rtl.output.c_str());
    for (int i = 0; i < step.outputs; ++i) {
      const std::string name = "/out" + std::to_string(i) + ".bin";
      const std::string rtl_bytes = ReadBytes(dir + "/rtl" + name);
      EXPECT_FALSE(rtl_bytes.empty()) << name;
      EXPECT_TRUE(rtl_bytes == ReadBytes(dir + "/model" + name)) << "output " << i << " of " << file;
    }
  }
}

// Calls, transposes on the MXU, a dot contracting the lhs dimension 0, reductions, compile-time
// constants and an s32 value in one module.
const char kLoweringsModule[] = R"(HloModule lowerings
%relu (p: f32[37,21]) -> f32[37,21] {
  %p = f32[37,21]{1,0} parameter(0)
  %zero = f32[] constant(0)
  %b = f32[37,21]{1,0} broadcast(f32[] %zero), dimensions={}
  ROOT %m = f32[37,21]{1,0} maximum(f32[37,21]{1,0} %p, f32[37,21]{1,0} %b)
}
%sum (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %x, f32[] %y)
}
ENTRY %main (a: f32[37,21], g: f32[37,10], n: s32[]) -> (f32[21,37], f32[21,10], f32[21], s32[], f32[37,10]) {
  %a = f32[37,21]{1,0} parameter(0)
  %g = f32[37,10]{1,0} parameter(1)
  %n = s32[] parameter(2)
  %r = f32[37,21]{1,0} call(f32[37,21]{1,0} %a), to_apply=%relu
  %t = f32[21,37]{0,1} transpose(f32[37,21]{1,0} %r), dimensions={1,0}
  %d = f32[21,10]{1,0} dot(f32[37,21]{1,0} %r, f32[37,10]{1,0} %g), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  %zero = f32[] constant(0)
  %s = f32[21]{0} reduce(f32[37,21]{1,0} %r, f32[] %zero), dimensions={0}, to_apply=%sum
  %iota = f32[37,10]{1,0} iota(), iota_dimension=1
  %gi = f32[37,10]{1,0} add(f32[37,10]{1,0} %g, f32[37,10]{1,0} %iota)
  ROOT %out = (f32[21,37]{0,1}, f32[21,10]{1,0}, f32[21]{0}, s32[], f32[37,10]{1,0}) tuple(%t, %d, %s, %n, %gi)
}
)";

TEST(TpusimRunTest, CallsTransposesReductionsAndIntegersOnTheModel) {
  const std::string dir = MakeTempDir("system_test");
  const std::string file = WriteFile(dir, "lowerings.hlo", kLoweringsModule);
  ExpectPassingStep(RunTpusim("run " + file + " --backend=model --config=" + kConfig + " --seed=6"), 5);
}

TEST(TpusimRtlTest, CallsTransposesReductionsAndIntegersRtlAndModelAreByteIdentical) {
  const std::string dir = MakeTempDir("system_test");
  const std::string file = WriteFile(dir, "lowerings.hlo", kLoweringsModule);
  TpusimRun model =
      RunTpusim("run " + file + " --backend=model --config=" + kConfig + " --seed=3 --outputs=" + dir + "/model");
  ExpectPassingStep(model, 5);
  TpusimRun rtl = RunTpusim("run " + file + " --backend=rtl --config=" + kConfig + " --seed=3 --outputs=" + dir + "/rtl");
  ExpectPassingStep(rtl, 5);
  for (int i = 0; i < 5; ++i) {
    const std::string name = "/out" + std::to_string(i) + ".bin";
    const std::string rtl_bytes = ReadBytes(dir + "/rtl" + name);
    EXPECT_FALSE(rtl_bytes.empty()) << name;
    EXPECT_TRUE(rtl_bytes == ReadBytes(dir + "/model" + name)) << "output " << i;
  }
}

// The verilated chip and the reference model produce identical bytes for the same program and inputs.
void ExpectRtlMatchesModel(const std::string& file, int outputs) {
  const std::string dir = MakeTempDir("system_test");
  TpusimRun rtl = RunTpusim("run " + file + " --backend=rtl --config=" + kConfig + " --seed=3 --outputs=" + dir + "/rtl");
  ExpectPassingRun(rtl, outputs);
  TpusimRun model =
      RunTpusim("run " + file + " --backend=model --config=" + kConfig + " --seed=3 --outputs=" + dir + "/model");
  ExpectPassingRun(model, outputs);
  for (int i = 0; i < outputs; ++i) {
    const std::string name = "/out" + std::to_string(i) + ".bin";
    const std::string rtl_bytes = ReadBytes(dir + "/rtl" + name);
    EXPECT_FALSE(rtl_bytes.empty());
    EXPECT_TRUE(rtl_bytes == ReadBytes(dir + "/model" + name)) << "output " << i << " of " << file;
  }
}

TEST(TpusimRtlTest, DenseLayerRtlAndModelAreByteIdentical) { ExpectRtlMatchesModel(kDenseLayer, 1); }

TEST(TpusimRtlTest, OddDotsRtlAndModelAreByteIdentical) {
  const std::string dir = MakeTempDir("system_test");
  for (const auto& shape : kOddShapes) {
    SCOPED_TRACE("dot " + std::to_string(shape[0]) + "x" + std::to_string(shape[1]) + "x" + std::to_string(shape[2]));
    ExpectRtlMatchesModel(WriteFile(dir, "dot.hlo", DotModule(shape[0], shape[1], shape[2])), 1);
  }
}

TEST(TpusimRtlTest, OtherConfigurationIsRefusedNamingBoth) {
  const std::string other = kConfig == "v2" ? "tiny" : "v2";
  TpusimRun run = RunTpusim("run " + kDenseLayer + " --backend=rtl --config=" + other);
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find(other), std::string::npos) << run.output;
  EXPECT_NE(run.output.find(kConfig), std::string::npos) << run.output;
}

}  // namespace
