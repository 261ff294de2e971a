// GEMMs end to end through `tpusim run`: the software-pipelined dot lowering (compiler/codegen/dot.cc)
// on shapes that are and are not multiples of the MXU size, bf16 and f32, plain and transposed weights.
// On the rtl backend the outputs must be byte-identical to the model's, and a mid-size GEMM must keep
// the MXU busy within the bound derived below.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "tb/system/tpusim_process.h"

namespace {

using tpu::system_test::MakeTempDir;
using tpu::system_test::ReadBytes;
using tpu::system_test::RunTpusim;
using tpu::system_test::TpusimRun;

uint64_t Counter(const std::string& output, const std::string& name) {
  std::smatch match;
  if (!std::regex_search(output, match, std::regex("(^|\n)" + name + ": ([0-9]+)\n"))) return 0;
  return std::stoull(match[2].str());
}

// dot(a[m,k], b) with b [k,n] or, transposed, [n,k], as XLA prints it.
std::string GemmHlo(int m, int k, int n, bool transposed, const std::string& in, const std::string& out) {
  auto shape = [](const std::string& type, int a, int b) {
    return type + "[" + std::to_string(a) + "," + std::to_string(b) + "]";
  };
  const std::string a = shape(in, m, k), b = transposed ? shape(in, n, k) : shape(in, k, n), y = shape(out, m, n);
  return "HloModule jit_gemm\n\nENTRY %main.4 (Arg_0.1: " + a + ", Arg_1.2: " + b + ") -> " + y + " {\n" +
         "  %Arg_0.1 = " + a + "{1,0} parameter(0)\n  %Arg_1.2 = " + b + "{1,0} parameter(1)\n" +
         "  ROOT %dot.3 = " + y + "{1,0} dot(" + a + "{1,0} %Arg_0.1, " + b + "{1,0} %Arg_1.2), " +
         "lhs_contracting_dims={1}, rhs_contracting_dims={" + (transposed ? "1" : "0") + "}\n}\n";
}

struct GemmCase {
  int m, k, n;
  bool transposed;
  const char* in;
  const char* out;
};

class GemmRtl : public ::testing::TestWithParam<GemmCase> {};

TEST_P(GemmRtl, MatchesTheInterpreterAndTheRtlIsByteIdenticalToTheModel) {
  const GemmCase& c = GetParam();
  const std::string dir = MakeTempDir("gemm_test");
  const std::string hlo = dir + "/gemm.hlo";
  std::ofstream(hlo) << GemmHlo(c.m, c.k, c.n, c.transposed, c.in, c.out);
  const TpusimRun model = RunTpusim("run " + hlo + " --backend=model --seed=4 --outputs=" + dir + "/model");
  ASSERT_EQ(model.exit_code, 0) << model.output;
  EXPECT_NE(model.output.find("output 0: " + std::string(c.out) + "["), std::string::npos) << model.output;
  EXPECT_GT(Counter(model.output, "mxu_busy_cycles"), 0u) << model.output;
  const TpusimRun rtl = RunTpusim("run " + hlo + " --backend=rtl --seed=4 --outputs=" + dir + "/rtl");
  ASSERT_EQ(rtl.exit_code, 0) << rtl.output;
  const std::string model_bytes = ReadBytes(dir + "/model/out0.bin");
  EXPECT_FALSE(model_bytes.empty());
  EXPECT_TRUE(model_bytes == ReadBytes(dir + "/rtl/out0.bin")) << "rtl and model outputs differ";
  EXPECT_EQ(Counter(rtl.output, "mxu_busy_cycles"), Counter(model.output, "mxu_busy_cycles"));
}

// Tiny configuration (8 lanes): full tiles; partial K and N tiles; transposed weights; a single N tile;
// two K tiles (the first group is one tile); f32 operands (three MXU passes); bf16 results rounded on
// the VPU; rows in several chunks is covered by compiler/codegen's GemmTest.
INSTANTIATE_TEST_SUITE_P(
    Shapes, GemmRtl,
    ::testing::Values(GemmCase{128, 128, 128, false, "bf16", "f32"}, GemmCase{45, 37, 29, false, "bf16", "bf16"},
                      GemmCase{33, 17, 41, true, "bf16", "bf16"}, GemmCase{100, 24, 8, false, "bf16", "f32"},
                      GemmCase{20, 9, 17, false, "bf16", "f32"}, GemmCase{40, 20, 30, false, "f32", "f32"},
                      GemmCase{64, 50, 70, true, "bf16", "f32"}),
    [](const ::testing::TestParamInfo<GemmCase>& info) {
      const GemmCase& c = info.param;
      return std::to_string(c.m) + "x" + std::to_string(c.k) + "x" + std::to_string(c.n) + (c.transposed ? "_t_" : "_") +
             c.in + "_" + c.out;
    });

// Utilization bound of a 128x128x128 bf16 GEMM (f32 result) on the tiny configuration (LANES L = 8).
// All 16 x 16 weight tiles stream 128 rows each: 32768 MXU cycles. On top of them the schedule of
// dot.cc adds only
//   - the prologue: lhs slice 0 (R = 128 lines) and the first two weight tiles (2L lines) loaded,
//     MXU_LW (L + 1 cycles) before the first multiply;
//   - the epilogue: the array drains (2L + 1) and the last accumulator (R lines) is stored;
//   - four DMA round trips to HBM (prologue, epilogue), allowed 64 cycles each;
//   - 64 cycles for issue slots and the hand-over stalls of the first groups.
// Nothing else may stall the MXU: weights, lhs slices and stores all run beside the multiplies.
// The bound is checked on the model backend with its fixed-latency memory (--hbm-timing=off: a line per
// cycle after a fixed latency): it measures the schedule. The rtl figure (with the HBM behind the DMA)
// is printed beside it.
TEST(GemmUtilization, MidSizeTinyGemmKeepsTheMxuBusy) {
  if (std::string(TPU_CONFIG_NAME) != "tiny") GTEST_SKIP() << "the bound is derived for the tiny configuration";
  constexpr uint64_t L = 8, R = 128, rows = 16 * 16 * R;
  constexpr uint64_t overhead = (R + 2 * L) + (L + 1) + (2 * L + 1) + R + 4 * 64 + 64;
  const std::string dir = MakeTempDir("gemm_test");
  const std::string hlo = dir + "/gemm.hlo";
  std::ofstream(hlo) << GemmHlo(128, 128, 128, false, "bf16", "f32");
  auto report = [&](const std::string& backend) {
    const std::string hbm_timing = backend == "model" ? " --hbm-timing=off" : "";
    const TpusimRun run = RunTpusim("run " + hlo + " --backend=" + backend + " --seed=2" + hbm_timing);
    EXPECT_EQ(run.exit_code, 0) << run.output;
    const uint64_t cycles = Counter(run.output, "cycles"), busy = Counter(run.output, "mxu_busy_cycles");
    EXPECT_EQ(busy, rows) << run.output;
    std::printf("128x128x128 bf16 GEMM on %s: %llu cycles, MXU busy %llu (%.2f%%); bound %.2f%%\n",
                backend.c_str(), (unsigned long long)cycles, (unsigned long long)busy,
                cycles ? 100.0 * double(busy) / double(cycles) : 0.0, 100.0 * double(rows) / double(rows + overhead));
    return cycles;
  };
  const uint64_t cycles = report("model");
  EXPECT_GT(cycles, rows);
  EXPECT_LE(cycles, rows + overhead);
  EXPECT_GT(report("rtl"), rows);
}

}  // namespace
