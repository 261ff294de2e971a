// End-to-end tests of the code generator: compile HLO modules, run them on the C++ reference model,
// compare with the HLO interpreter within the tolerance of docs/numerics.md, check that padded lanes
// of every output stay zero and that the program synchronizes its units.
#include "compiler/codegen/codegen.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "compiler/codegen/sync_checker.h"
#include "compiler/hlo/parser.h"
#include "compiler/interpreter/interpreter.h"
#include "compiler/passes/pass.h"
#include "compiler/passes/pipeline.h"
#include "sim/model/chip_model.h"
#include "tpu_csr.h"
#include "tpu_isa.h"

namespace tpu::compiler {
namespace {

struct RunResult {
  std::vector<hlo::Literal> outputs;
  uint64_t cycles = 0;
  uint64_t mxu_busy = 0;
  uint32_t instret = 0;
  size_t instructions = 0;
};

// A minimal loader for tests: allocates the regions back to back in HBM, patches the relocations,
// writes IMEM through the MMIO window and the data through the backdoor, runs, reads the outputs.
StatusOr<RunResult> RunOnModel(const Program& program, const std::vector<hlo::Literal>& arguments,
                               const model::ChipConfig& config = model::ChipConfig::Build()) {
  if (config.lanes != program.lanes) return FailedPrecondition("program compiled for other lanes");
  model::ChipModel chip(config);
  uint64_t next_line = 64;  // leave line 0.. unused so that a missing relocation shows up as wrong data
  auto allocate = [&](uint64_t lines) {
    uint64_t base = next_line;
    next_line += lines + 16;  // a gap, so that an overrun lands in memory nobody reads
    return base;
  };
  std::vector<uint64_t> parameter_bases, output_bases, constant_bases;
  for (const DeviceLayout& layout : program.parameters) parameter_bases.push_back(allocate(layout.lines));
  for (const DeviceLayout& layout : program.outputs) output_bases.push_back(allocate(layout.lines));
  for (const DeviceLayout& layout : program.constants) constant_bases.push_back(allocate(layout.lines));
  const uint64_t temp_base = allocate(program.temp_lines);
  // input_output_alias: those outputs live in their parameter's buffer.
  auto aliased = [&](size_t output) { return !program.output_aliases.empty() && program.output_aliases[output] >= 0; };
  for (size_t i = 0; i < program.outputs.size(); ++i) {
    if (aliased(i)) output_bases[i] = parameter_bases[program.output_aliases[i]];
  }
  TPU_ASSIGN_OR_RETURN(std::vector<uint64_t> code,
                       RelocateCode(program, parameter_bases, output_bases, constant_bases, temp_base));
  if (code.size() > config.imem_words) return ResourceExhausted("program does not fit IMEM");
  TPU_RETURN_IF_ERROR(CheckUnitSynchronization(code, SyncCheckOptions{program.lanes}));

  if (arguments.size() != program.parameters.size()) return InvalidArgument("argument count");
  for (size_t i = 0; i < arguments.size(); ++i) {
    std::vector<uint8_t> bytes = ToDeviceBytes(arguments[i], program.parameters[i]);
    TPU_RETURN_IF_ERROR(chip.WriteHbm(parameter_bases[i], bytes.data(), program.parameters[i].lines));
  }
  for (size_t i = 0; i < program.constants.size(); ++i) {
    TPU_RETURN_IF_ERROR(chip.WriteHbm(constant_bases[i], program.constant_bytes[i].data(), program.constants[i].lines));
  }
  // Poison the outputs and temps: every line the program is supposed to write must really be written.
  for (size_t i = 0; i < program.outputs.size(); ++i) {
    if (aliased(i)) continue;
    std::vector<uint8_t> poison(size_t{program.outputs[i].lines} * LineBytes(program.lanes), 0xAB);
    TPU_RETURN_IF_ERROR(chip.WriteHbm(output_bases[i], poison.data(), program.outputs[i].lines));
  }
  for (size_t i = 0; i < code.size(); ++i) {
    const uint32_t offset = csr::IMEM_WINDOW + 8 * static_cast<uint32_t>(i);
    chip.MmioWrite(offset, static_cast<uint32_t>(code[i]));
    chip.MmioWrite(offset + 4, static_cast<uint32_t>(code[i] >> 32));
  }
  chip.MmioWrite(csr::START_PC, 0);
  chip.MmioWrite(csr::DOORBELL, 1);
  chip.Run(200'000'000);
  const uint32_t status = chip.MmioRead(csr::STATUS);
  if (status & csr::STATUS_ERROR) {
    return Internal(std::string("device error ") + isa::ErrorName(chip.MmioRead(csr::ERROR_CODE)) + " at pc " +
                    std::to_string(chip.MmioRead(csr::ERROR_PC)));
  }
  if (!(status & csr::STATUS_HALTED)) return DeadlineExceeded("program did not halt");

  RunResult result;
  result.cycles = chip.MmioRead(csr::CYCLES_LO) | (uint64_t{chip.MmioRead(csr::CYCLES_HI)} << 32);
  result.mxu_busy = chip.MmioRead(csr::MXU_BUSY_LO) | (uint64_t{chip.MmioRead(csr::MXU_BUSY_HI)} << 32);
  result.instret = chip.MmioRead(csr::INSTRET);
  result.instructions = code.size();
  for (size_t i = 0; i < program.outputs.size(); ++i) {
    const DeviceLayout& layout = program.outputs[i];
    std::vector<uint8_t> bytes(size_t{layout.lines} * LineBytes(program.lanes));
    TPU_RETURN_IF_ERROR(chip.ReadHbm(output_bases[i], bytes.data(), layout.lines));
    // Padding invariant: lanes beyond the logical columns are +0.
    for (int64_t r = 0; r < layout.rows; ++r) {
      for (int64_t c = layout.cols; c < layout.padded_cols; ++c) {
        uint32_t word;
        std::memcpy(&word, &bytes[(r * layout.padded_cols + c) * 4], 4);
        if (word != 0) {
          return Internal("output " + std::to_string(i) + " row " + std::to_string(r) + " padded column " +
                          std::to_string(c) + " holds 0x" + std::to_string(word) + ", not zero");
        }
      }
    }
    result.outputs.push_back(FromDeviceBytes(bytes.data(), layout));
  }
  return result;
}

std::string ReadTextFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Compiles `hlo_text` (after the default passes), runs it with seeded random arguments and compares
// every output with the interpreter. Returns the run for further checks.
// Empty when every element satisfies |device - reference| <= atol + rtol*|reference| (docs/numerics.md).
std::string CompareWithTolerance(const hlo::Literal& got, const hlo::Literal& want) {
  if (got.shape() != want.shape()) return "shape " + got.shape().ToString() + " vs " + want.shape().ToString();
  double max_abs = 0;
  for (int64_t i = 0; i < want.element_count(); ++i) max_abs = std::max(max_abs, std::fabs(want.GetAsDouble(i)));
  const double rtol = 1.0 / 64, atol = max_abs / 64;
  for (int64_t i = 0; i < want.element_count(); ++i) {
    const double w = want.GetAsDouble(i), g = got.GetAsDouble(i);
    if (!(std::fabs(g - w) <= atol + rtol * std::fabs(w))) {
      return "element " + std::to_string(i) + ": device " + std::to_string(g) + ", interpreter " + std::to_string(w);
    }
  }
  return "";
}

RunResult CompileRunAndCompare(const std::string& hlo_text, CompileOptions options = {}, uint32_t seed = 1,
                               CompileStats* stats_out = nullptr,
                               std::vector<hlo::Literal>* last_run_expected = nullptr,
                               const model::ChipConfig& config = model::ChipConfig::Build()) {
  RunResult empty;
  StatusOr<std::unique_ptr<hlo::HloModule>> reference = hlo::ParseHloModule(hlo_text);
  EXPECT_TRUE(reference.ok()) << reference.status();
  if (!reference.ok()) return empty;
  StatusOr<std::unique_ptr<hlo::HloModule>> module = hlo::ParseHloModule(hlo_text);
  PassPipeline pipeline("test");
  AddDefaultPasses(&pipeline);
  StatusOr<bool> changed = pipeline.Run(module->get());
  EXPECT_TRUE(changed.ok()) << changed.status();

  options.lanes = config.lanes;
  options.vmem_lines = std::min(options.vmem_lines, config.vmem_lines);
  options.imem_words = config.imem_words;
  CompileStats stats;
  StatusOr<Program> program = Compile(**module, options, &stats);
  EXPECT_TRUE(program.ok()) << program.status();
  if (!program.ok()) return empty;
  if (stats_out != nullptr) *stats_out = stats;

  std::mt19937 rng(seed);
  std::vector<hlo::Literal> arguments;
  const hlo::HloComputation* entry = (*reference)->entry_computation();
  for (int64_t i = 0; i < entry->num_parameters(); ++i) {
    arguments.push_back(hlo::Literal::Random(entry->parameter_instruction(i)->shape(), rng));
  }
  StatusOr<RunResult> run = RunOnModel(*program, arguments, config);
  EXPECT_TRUE(run.ok()) << run.status();
  StatusOr<std::vector<hlo::Literal>> expected = hlo::Interpret(**reference, arguments);
  EXPECT_TRUE(expected.ok()) << expected.status();
  if (run.ok() && !expected.ok()) return *run;
  if (!run.ok() || !expected.ok()) return empty;
  EXPECT_EQ(run->outputs.size(), expected->size());
  for (size_t o = 0; o < std::min(run->outputs.size(), expected->size()); ++o) {
    std::string mismatch = CompareWithTolerance(run->outputs[o], (*expected)[o]);
    EXPECT_TRUE(mismatch.empty()) << "output " << o << ": " << mismatch;
  }
  if (last_run_expected != nullptr) *last_run_expected = std::move(*expected);
  return *run;
}

std::string DotModule(int64_t m, int64_t k, int64_t n, bool transposed_rhs);

TEST(CodegenTest, ToleranceCheckCatchesAWrongElement) {
  std::vector<hlo::Literal> expected;
  RunResult run = CompileRunAndCompare(DotModule(6, 20, 10, false), {}, 5, nullptr, &expected);
  ASSERT_EQ(run.outputs.size(), 1u);
  EXPECT_TRUE(CompareWithTolerance(run.outputs[0], expected[0]).empty());
  hlo::Literal wrong = run.outputs[0];
  wrong.Set<float>(17, wrong.Get<float>(17) + 1.0f);
  EXPECT_FALSE(CompareWithTolerance(wrong, expected[0]).empty());
}

std::string DotModule(int64_t m, int64_t k, int64_t n, bool transposed_rhs) {
  char text[1024];
  const int64_t r0 = transposed_rhs ? n : k, r1 = transposed_rhs ? k : n;
  std::snprintf(text, sizeof(text),
                "HloModule dot_%lldx%lldx%lld\n\n"
                "ENTRY %%main (a: f32[%lld,%lld], b: f32[%lld,%lld]) -> f32[%lld,%lld] {\n"
                "  %%a = f32[%lld,%lld]{1,0} parameter(0)\n"
                "  %%b = f32[%lld,%lld]{1,0} parameter(1)\n"
                "  ROOT %%dot = f32[%lld,%lld]{1,0} dot(f32[%lld,%lld]{1,0} %%a, f32[%lld,%lld]{1,0} %%b), "
                "lhs_contracting_dims={1}, rhs_contracting_dims={%d}\n"
                "}\n",
                (long long)m, (long long)k, (long long)n, (long long)m, (long long)k, (long long)r0, (long long)r1,
                (long long)m, (long long)n, (long long)m, (long long)k, (long long)r0, (long long)r1, (long long)m,
                (long long)n, (long long)m, (long long)k, (long long)r0, (long long)r1, transposed_rhs ? 1 : 0);
  return text;
}

TEST(CodegenTest, DenseLayerMatchesTheInterpreter) {
  std::string text = ReadTextFile(std::string(TPU_SOURCE_DIR) + "/sim/dense_layer.hlo");
  ASSERT_FALSE(text.empty());
  CompileStats stats;
  CompileOptions one_pass;
  one_pass.dot_passes = 1;
  RunResult run = CompileRunAndCompare(text, one_pass, 1, &stats);
  ASSERT_EQ(stats.dots.size(), 1u);
  EXPECT_EQ(stats.dots[0].logical_macs, 64u * 256 * 128);
  std::printf("dense layer 64x256x128 + bias + ReLU: %zu instructions, %u issued, %llu cycles, MXU busy %llu\n",
              run.instructions, run.instret, (unsigned long long)run.cycles, (unsigned long long)run.mxu_busy);
  EXPECT_GT(run.cycles, 0u);

  // The same module for the v2 configuration (128 lanes), on a v2 reference model.
  StatusOr<model::ChipConfig> v2 = model::ChipConfig::Named("v2");
  ASSERT_TRUE(v2.ok()) << v2.status();
  CompileOptions v2_options;
  v2_options.vmem_lines = v2->vmem_lines;
  v2_options.dot_passes = 1;
  RunResult v2_run = CompileRunAndCompare(text, v2_options, 1, nullptr, nullptr, *v2);
  std::printf("dense layer on v2: %zu instructions, %u issued, %llu cycles, MXU busy %llu\n", v2_run.instructions,
              v2_run.instret, (unsigned long long)v2_run.cycles, (unsigned long long)v2_run.mxu_busy);
  EXPECT_GT(v2_run.cycles, 0u);
}

struct DotCase {
  int64_t m, k, n;
  bool transposed;
};

class DotShapes : public ::testing::TestWithParam<DotCase> {};

TEST_P(DotShapes, MatchesTheInterpreter) {
  const DotCase& c = GetParam();
  CompileStats stats;
  CompileOptions one_pass;
  one_pass.dot_passes = 1;
  CompileRunAndCompare(DotModule(c.m, c.k, c.n, c.transposed), one_pass, 7, &stats);
  // Three passes: three dots of the same shape.
  CompileStats split_stats;
  CompileOptions three_passes;
  three_passes.dot_passes = 3;
  CompileRunAndCompare(DotModule(c.m, c.k, c.n, c.transposed), three_passes, 7, &split_stats);
  EXPECT_EQ(split_stats.dots.size(), 3u);
  ASSERT_EQ(stats.dots.size(), 1u);
  EXPECT_EQ(stats.dots[0].logical_macs, uint64_t(c.m * c.k * c.n));
  EXPECT_GE(stats.dots[0].padded_macs, stats.dots[0].logical_macs);
}

INSTANTIATE_TEST_SUITE_P(
    Sizes, DotShapes,
    ::testing::Values(DotCase{5, 13, 7, false}, DotCase{1, 1, 1, false}, DotCase{33, 17, 9, false},
                      DotCase{8, 8, 8, false}, DotCase{16, 24, 40, false}, DotCase{3, 64, 5, false},
                      DotCase{5, 13, 7, true}, DotCase{1, 1, 1, true}, DotCase{33, 17, 9, true},
                      DotCase{16, 16, 16, true}, DotCase{7, 40, 20, true}),
    [](const ::testing::TestParamInfo<DotCase>& info) {
      return std::to_string(info.param.m) + "x" + std::to_string(info.param.k) + "x" + std::to_string(info.param.n) +
             (info.param.transposed ? "_transposed" : "");
    });

TEST(CodegenTest, SmallVmemForcesChunkedLoopsAndStaysCorrect) {
  CompileOptions options;
  options.vmem_lines = 64;  // dot: 24 weight lines + 40 for rows; elementwise: chunks of 32 lines
  CompileRunAndCompare(DotModule(37, 21, 19, false), options, 3);
  CompileRunAndCompare(DotModule(37, 21, 19, true), options, 4);
  const char* text = R"(HloModule ew
ENTRY %main (a: f32[40,30], b: f32[40,30], r: f32[30]) -> (f32[40,30], f32[40,30]) {
  %a = f32[40,30]{1,0} parameter(0)
  %b = f32[40,30]{1,0} parameter(1)
  %r = f32[30]{0} parameter(2)
  %add = f32[40,30]{1,0} add(f32[40,30]{1,0} %a, f32[40,30]{1,0} %b)
  %br = f32[40,30]{1,0} broadcast(f32[30]{0} %r), dimensions={1}
  %max = f32[40,30]{1,0} maximum(f32[40,30]{1,0} %add, f32[40,30]{1,0} %br)
  ROOT %t = (f32[40,30]{1,0}, f32[40,30]{1,0}) tuple(%add, %max)
}
)";
  CompileRunAndCompare(text, options, 5);
}

TEST(CodegenTest, ElementwiseWithBroadcasts) {
  const char* text = R"(HloModule broadcasts
ENTRY %main (x: f32[5,13], y: f32[5,13], row: f32[13], wide: f32[3,2,16], row16: f32[16]) -> (f32[5,13], f32[5,13], f32[5,13], f32[5,13], f32[3,2,16], f32[3,2,16], f32[5,13], f32[5,13]) {
  %x = f32[5,13]{1,0} parameter(0)
  %y = f32[5,13]{1,0} parameter(1)
  %row = f32[13]{0} parameter(2)
  %wide = f32[3,2,16]{2,1,0} parameter(3)
  %row16 = f32[16]{0} parameter(4)
  %sum = f32[5,13]{1,0} add(f32[5,13]{1,0} %x, f32[5,13]{1,0} %y)
  %brow = f32[5,13]{1,0} broadcast(f32[13]{0} %row), dimensions={1}
  %plus_row = f32[5,13]{1,0} add(f32[5,13]{1,0} %brow, f32[5,13]{1,0} %x)
  %half = f32[] constant(0.5)
  %bhalf = f32[5,13]{1,0} broadcast(f32[] %half), dimensions={}
  %max_half = f32[5,13]{1,0} maximum(f32[5,13]{1,0} %x, f32[5,13]{1,0} %bhalf)
  %neg = f32[] constant(-2)
  %bneg = f32[5,13]{1,0} broadcast(f32[] %neg), dimensions={}
  %max_neg = f32[5,13]{1,0} maximum(f32[5,13]{1,0} %bneg, f32[5,13]{1,0} %y)
  %bwide = f32[3,2,16]{2,1,0} broadcast(f32[16]{0} %row16), dimensions={2}
  %wide_sum = f32[3,2,16]{2,1,0} add(f32[3,2,16]{2,1,0} %wide, f32[3,2,16]{2,1,0} %bwide)
  %three = f32[] constant(3)
  %bthree = f32[3,2,16]{2,1,0} broadcast(f32[] %three), dimensions={}
  %wide_plus3 = f32[3,2,16]{2,1,0} add(f32[3,2,16]{2,1,0} %wide, f32[3,2,16]{2,1,0} %bthree)
  ROOT %t = (f32[5,13]{1,0}, f32[5,13]{1,0}, f32[5,13]{1,0}, f32[5,13]{1,0}, f32[3,2,16]{2,1,0}, f32[3,2,16]{2,1,0}, f32[5,13]{1,0}, f32[5,13]{1,0}) tuple(%sum, %plus_row, %max_half, %max_neg, %wide_sum, %wide_plus3, %bhalf, %brow)
}
)";
  CompileRunAndCompare(text, {}, 11);
}

TEST(CodegenTest, OutputsThatAreParametersConstantsOrRepeatedAreCopied) {
  const char* text = R"(HloModule passthrough
ENTRY %main (x: f32[3,9], w: f32[4,16]) -> (f32[3,9], f32[2], f32[3,9], f32[3,9], f32[3,9], f32[64]) {
  %x = f32[3,9]{1,0} parameter(0)
  %w = f32[4,16]{1,0} parameter(1)
  %c = f32[2]{0} constant({1.5, -2})
  %twice = f32[3,9]{1,0} add(f32[3,9]{1,0} %x, f32[3,9]{1,0} %x)
  %zero = f32[] constant(0)
  %bzero = f32[3,9]{1,0} broadcast(f32[] %zero), dimensions={}
  %relu = f32[3,9]{1,0} maximum(f32[3,9]{1,0} %twice, f32[3,9]{1,0} %bzero)
  %copy = f32[3,9]{1,0} copy(f32[3,9]{1,0} %relu)
  %flat = f32[64]{0} reshape(f32[4,16]{1,0} %w)
  %flat_sum = f32[64]{0} add(f32[64]{0} %flat, f32[64]{0} %flat)
  ROOT %t = (f32[3,9]{1,0}, f32[2]{0}, f32[3,9]{1,0}, f32[3,9]{1,0}, f32[3,9]{1,0}, f32[64]{0}) tuple(%x, %c, %relu, %copy, %relu, %flat_sum)
}
)";
  CompileRunAndCompare(text, {}, 13);
}

TEST(CodegenTest, ChainedDotsReuseTempSpace) {
  const char* text = R"(HloModule mlp
ENTRY %main (x: f32[20,30], w1: f32[30,40], w2: f32[40,12], w3: f32[12,40]) -> f32[20,40] {
  %x = f32[20,30]{1,0} parameter(0)
  %w1 = f32[30,40]{1,0} parameter(1)
  %w2 = f32[40,12]{1,0} parameter(2)
  %w3 = f32[12,40]{1,0} parameter(3)
  %h1 = f32[20,40]{1,0} dot(f32[20,30]{1,0} %x, f32[30,40]{1,0} %w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %zero = f32[] constant(0)
  %bzero = f32[20,40]{1,0} broadcast(f32[] %zero), dimensions={}
  %r1 = f32[20,40]{1,0} maximum(f32[20,40]{1,0} %h1, f32[20,40]{1,0} %bzero)
  %h2 = f32[20,12]{1,0} dot(f32[20,40]{1,0} %r1, f32[40,12]{1,0} %w2), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %h3 = f32[20,40]{1,0} dot(f32[20,12]{1,0} %h2, f32[12,40]{1,0} %w3), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
)";
  CompileStats stats;
  CompileOptions one_pass;  // the split dots of more passes keep more values alive
  one_pass.dot_passes = 1;
  CompileRunAndCompare(text, one_pass, 17, &stats);
  // h1 (100 lines) dies at r1, r1 (100) at h2, h2 (20) at h3: the peak is two live values, not three.
  EXPECT_EQ(stats.peak_temp_lines, 200u);
}

TEST(CodegenTest, UnsupportedOpsGetTheTpuKernelError) {
  const char* text = R"(HloModule unsupported
ENTRY %main (x: f32[4,4]) -> f32[4,4] {
  %x = f32[4,4]{1,0} parameter(0)
  ROOT %cholesky.3 = f32[4,4]{1,0} cholesky(f32[4,4]{1,0} %x), lower=true
}
)";
  StatusOr<std::unique_ptr<hlo::HloModule>> module = hlo::ParseHloModule(text);
  ASSERT_TRUE(module.ok()) << module.status();
  StatusOr<Program> program = Compile(**module, {});
  ASSERT_FALSE(program.ok());
  EXPECT_EQ(program.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(program.status().message(),
            "No registered 'cholesky' OpKernel for XLA_TPU_JIT devices compatible with node cholesky.3");
}

// A while loop whose body runs a dot (pipelined MXU code inside the loop) and whose condition is a
// reduction of the state (the trip count depends on the data): the sync checker follows the loop, the
// model's result equals the interpreter's, and the loop's code is one body, not unrolled.
TEST(CodegenTest, WhileLoopsRunTheirBodyOnTheDevice) {
  const char* text = R"(HloModule loop
%sum (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
%cond (p: (f32[12,20], f32[20,20], s32[])) -> pred[] {
  %p = (f32[12,20], f32[20,20], s32[]) parameter(0)
  %x = f32[12,20] get-tuple-element(%p), index=0
  %zero = f32[] constant(0)
  %total = f32[] reduce(%x, %zero), dimensions={0,1}, to_apply=%sum
  %limit = f32[] constant(1e9)
  ROOT %lt = pred[] compare(%total, %limit), direction=LT
}
%body (p: (f32[12,20], f32[20,20], s32[])) -> (f32[12,20], f32[20,20], s32[]) {
  %p = (f32[12,20], f32[20,20], s32[]) parameter(0)
  %x = f32[12,20] get-tuple-element(%p), index=0
  %w = f32[20,20] get-tuple-element(%p), index=1
  %n = s32[] get-tuple-element(%p), index=2
  %a = f32[12,20] abs(%x)
  %d = f32[12,20] dot(%a, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %one = f32[] constant(1)
  %ones = f32[12,20] broadcast(%one), dimensions={}
  %next = f32[12,20] add(%d, %ones)
  %i = s32[] constant(1)
  %count = s32[] add(%n, %i)
  ROOT %t = (f32[12,20], f32[20,20], s32[]) tuple(%next, %w, %count)
}
ENTRY %main (x: f32[12,20], w: f32[20,20]) -> (f32[12,20], s32[]) {
  %x = f32[12,20] parameter(0)
  %w = f32[20,20] parameter(1)
  %aw = f32[20,20] abs(%w)
  %zero = s32[] constant(0)
  %init = (f32[12,20], f32[20,20], s32[]) tuple(%x, %aw, %zero)
  %loop = (f32[12,20], f32[20,20], s32[]) while(%init), condition=%cond, body=%body
  %rx = f32[12,20] get-tuple-element(%loop), index=0
  %trips = s32[] get-tuple-element(%loop), index=2
  ROOT %out = (f32[12,20], s32[]) tuple(%rx, %trips)
}
)";
  CompileStats stats;
  std::vector<hlo::Literal> expected;
  const RunResult run = CompileRunAndCompare(text, {}, 1, &stats, &expected);
  ASSERT_EQ(expected.size(), 2u);
  const int32_t trips = expected[1].Get<int32_t>(0);
  EXPECT_GE(trips, 2) << "the test wants a loop that iterates";
  ASSERT_EQ(run.outputs.size(), 2u);
  EXPECT_EQ(run.outputs[1].Get<int32_t>(0), trips);
  // Every iteration issues the body's instructions again: far more issued than compiled.
  EXPECT_GT(run.instret, uint32_t(trips) * stats.instructions / 2);
}

// A counted loop (the condition compares the s32 counter with a constant) is tested by the sequencer: the
// compare has no code (no VCMP in the program), and the loop runs as often as the interpreter says.
TEST(CodegenTest, CountedLoopsAreTestedOnTheSequencer) {
  const std::string text = R"(HloModule counted
%cond (p: (f32[4,20], s32[])) -> pred[] {
  %p = (f32[4,20], s32[]) parameter(0)
  %i = s32[] get-tuple-element(%p), index=1
  %limit = s32[] constant(7)
  ROOT %lt = pred[] compare(%i, %limit), direction=LT
}
%body (p: (f32[4,20], s32[])) -> (f32[4,20], s32[]) {
  %p = (f32[4,20], s32[]) parameter(0)
  %x = f32[4,20] get-tuple-element(%p), index=0
  %i = s32[] get-tuple-element(%p), index=1
  %half = f32[] constant(0.5)
  %halves = f32[4,20] broadcast(%half), dimensions={}
  %y = f32[4,20] add(%x, %halves)
  %one = s32[] constant(1)
  %next = s32[] add(%i, %one)
  ROOT %t = (f32[4,20], s32[]) tuple(%y, %next)
}
ENTRY %main (x: f32[4,20]) -> (f32[4,20], s32[]) {
  %x = f32[4,20] parameter(0)
  %zero = s32[] constant(0)
  %init = (f32[4,20], s32[]) tuple(%x, %zero)
  %w = (f32[4,20], s32[]) while(%init), condition=%cond, body=%body
  %r = f32[4,20] get-tuple-element(%w), index=0
  %n = s32[] get-tuple-element(%w), index=1
  ROOT %out = (f32[4,20], s32[]) tuple(%r, %n)
}
)";
  std::vector<hlo::Literal> expected;
  const RunResult run = CompileRunAndCompare(text, {}, 1, nullptr, &expected);
  ASSERT_EQ(run.outputs.size(), 2u);
  EXPECT_EQ(run.outputs[1].Get<int32_t>(0), 7);
  StatusOr<std::unique_ptr<hlo::HloModule>> module = hlo::ParseHloModule(text);
  ASSERT_TRUE(module.ok());
  StatusOr<Program> program = Compile(**module, {});
  ASSERT_TRUE(program.ok()) << program.status();
  for (uint64_t word : program->code) {
    EXPECT_NE(static_cast<uint8_t>(word >> 56), static_cast<uint8_t>(isa::Opcode::VCMP)) << "a compare was lowered";
  }
  // Both results are computed straight into the state (the body reads neither old value afterwards): the
  // back edge is the jump alone.
  auto back_edge_words = [](const Program& program) {
    for (const CodeRange& range : program.code_ranges) {
      if (range.what.find(": next iteration") != std::string::npos) return range.end - range.begin;
    }
    return uint32_t{0};
  };
  EXPECT_EQ(back_edge_words(*program), 1u);
  // A result computed while the body still reads its element's old value later (z reads x after y is
  // computed) goes to a temp and is copied at the back edge; z itself, the last reader of w, is in place.
  const std::string later_read = R"(HloModule later
%cond (p: (f32[4,20], f32[4,20], s32[])) -> pred[] {
  %p = (f32[4,20], f32[4,20], s32[]) parameter(0)
  %i = s32[] get-tuple-element(%p), index=2
  %limit = s32[] constant(3)
  ROOT %lt = pred[] compare(%i, %limit), direction=LT
}
%body (p: (f32[4,20], f32[4,20], s32[])) -> (f32[4,20], f32[4,20], s32[]) {
  %p = (f32[4,20], f32[4,20], s32[]) parameter(0)
  %x = f32[4,20] get-tuple-element(%p), index=0
  %w = f32[4,20] get-tuple-element(%p), index=1
  %i = s32[] get-tuple-element(%p), index=2
  %half = f32[] constant(0.5)
  %halves = f32[4,20] broadcast(%half), dimensions={}
  %y = f32[4,20] add(%x, %halves)
  %z = f32[4,20] multiply(%x, %w)
  %one = s32[] constant(1)
  %next = s32[] add(%i, %one)
  ROOT %t = (f32[4,20], f32[4,20], s32[]) tuple(%y, %z, %next)
}
ENTRY %main (x: f32[4,20], w: f32[4,20]) -> (f32[4,20], f32[4,20]) {
  %x = f32[4,20] parameter(0)
  %w = f32[4,20] parameter(1)
  %zero = s32[] constant(0)
  %init = (f32[4,20], f32[4,20], s32[]) tuple(%x, %w, %zero)
  %loop = (f32[4,20], f32[4,20], s32[]) while(%init), condition=%cond, body=%body
  %rx = f32[4,20] get-tuple-element(%loop), index=0
  %rw = f32[4,20] get-tuple-element(%loop), index=1
  ROOT %out = (f32[4,20], f32[4,20]) tuple(%rx, %rw)
}
)";
  CompileRunAndCompare(later_read);
  StatusOr<std::unique_ptr<hlo::HloModule>> reads = hlo::ParseHloModule(later_read);
  ASSERT_TRUE(reads.ok()) << reads.status();
  StatusOr<Program> copied = Compile(**reads, {});
  ASSERT_TRUE(copied.ok()) << copied.status();
  EXPECT_GT(back_edge_words(*copied), 1u);
}

// A conditional as JAX writes lax.cond: an s32 index the device computes from the data (a converted pred),
// a tuple passed to one branch (a dot in it) and an array to the other, a tuple result; the branch taken
// is the one the interpreter takes, under the sync checker.
TEST(CodegenTest, ConditionalsRunTheBranchTheDataSelects) {
  const std::string text = R"(HloModule cond
%sum (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
%scale (x: f32[12,20]) -> (f32[12,20], s32[]) {
  %x = f32[12,20] parameter(0)
  %two = f32[] constant(2)
  %twos = f32[12,20] broadcast(%two), dimensions={}
  %r = f32[12,20] multiply(%x, %twos)
  %taken = s32[] constant(0)
  ROOT %t = (f32[12,20], s32[]) tuple(%r, %taken)
}
%project (p: (f32[12,20], f32[20,20])) -> (f32[12,20], s32[]) {
  %p = (f32[12,20], f32[20,20]) parameter(0)
  %x = f32[12,20] get-tuple-element(%p), index=0
  %w = f32[20,20] get-tuple-element(%p), index=1
  %d = f32[12,20] dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %h = f32[12,20] tanh(%d)
  %taken = s32[] constant(1)
  ROOT %t = (f32[12,20], s32[]) tuple(%h, %taken)
}
ENTRY %main (x: f32[12,20], w: f32[20,20]) -> (f32[12,20], s32[]) {
  %x = f32[12,20] parameter(0)
  %w = f32[20,20] parameter(1)
  %zero = f32[] constant(0)
  %total = f32[] reduce(%x, %zero), dimensions={0,1}, to_apply=%sum
  %limit = f32[] constant(LIMIT)
  %above = pred[] compare(%total, %limit), direction=GT
  %index = s32[] convert(%above)
  %xw = (f32[12,20], f32[20,20]) tuple(%x, %w)
  %c = (f32[12,20], s32[]) conditional(%index, %x, %xw), branch_computations={%scale, %project}
  %r = f32[12,20] get-tuple-element(%c), index=0
  %taken = s32[] get-tuple-element(%c), index=1
  ROOT %out = (f32[12,20], s32[]) tuple(%r, %taken)
}
)";
  // A limit below every possible sum takes branch 1, one above every sum branch 0.
  for (const char* limit : {"-1000", "1000"}) {
    std::string module = text;
    module.replace(module.find("LIMIT"), 5, limit);
    std::vector<hlo::Literal> expected;
    const RunResult run = CompileRunAndCompare(module, {}, 1, nullptr, &expected);
    ASSERT_EQ(expected.size(), 2u);
    EXPECT_EQ(expected[1].Get<int32_t>(0), std::string(limit) == "-1000" ? 1 : 0);
    ASSERT_EQ(run.outputs.size(), 2u);
    EXPECT_EQ(run.outputs[1].Get<int32_t>(0), expected[1].Get<int32_t>(0)) << limit;
  }
  // The conditional itself as the root (expand-tuples gives it its get-tuple-elements).
  std::string root = text;
  root.replace(root.find("LIMIT"), 5, "0");
  root.replace(root.find("  %c = "), 7, "  ROOT %c = ");
  root.erase(root.find("  %r = f32[12,20] get-tuple-element(%c)"));
  root += "}\n";
  const RunResult run = CompileRunAndCompare(root);
  EXPECT_EQ(run.outputs.size(), 2u);
}

// One computation for both branches (and for two loops' bodies, as two inlined calls of one looping
// function give): unshare-computations copies it, each copy is lowered in line once.
TEST(CodegenTest, ComputationsSharedByBranchesAndLoopsAreCopied) {
  const std::string text = R"(HloModule shared
%negate (x: f32[4,20]) -> f32[4,20] {
  %x = f32[4,20] parameter(0)
  ROOT %n = f32[4,20] negate(%x)
}
%cond (p: (f32[4,20], s32[])) -> pred[] {
  %p = (f32[4,20], s32[]) parameter(0)
  %i = s32[] get-tuple-element(%p), index=1
  %limit = s32[] constant(3)
  ROOT %lt = pred[] compare(%i, %limit), direction=LT
}
%body (p: (f32[4,20], s32[])) -> (f32[4,20], s32[]) {
  %p = (f32[4,20], s32[]) parameter(0)
  %x = f32[4,20] get-tuple-element(%p), index=0
  %i = s32[] get-tuple-element(%p), index=1
  %one = s32[] constant(1)
  %parity = s32[] and(%i, %one)
  %zero = s32[] constant(0)
  %even = pred[] compare(%parity, %zero), direction=EQ
  %y = f32[4,20] conditional(%even, %x, %x), true_computation=%negate, false_computation=%negate
  %half = f32[] constant(0.5)
  %halves = f32[4,20] broadcast(%half), dimensions={}
  %z = f32[4,20] add(%y, %halves)
  %next = s32[] add(%i, %one)
  ROOT %t = (f32[4,20], s32[]) tuple(%z, %next)
}
ENTRY %main (x: f32[4,20]) -> f32[4,20] {
  %x = f32[4,20] parameter(0)
  %zero = s32[] constant(0)
  %init = (f32[4,20], s32[]) tuple(%x, %zero)
  %w1 = (f32[4,20], s32[]) while(%init), condition=%cond, body=%body
  %w2 = (f32[4,20], s32[]) while(%w1), condition=%cond, body=%body
  ROOT %r = f32[4,20] get-tuple-element(%w2), index=0
}
)";
  const RunResult run = CompileRunAndCompare(text);
  EXPECT_EQ(run.outputs.size(), 1u);
}

// Loops the code generator does not lower are refused with what to change.
TEST(CodegenTest, UnsupportedWhileFormsAreRefusedClearly) {
  const char* text = R"(HloModule loop
%cond (p: ((f32[4], f32[4]), s32[])) -> pred[] {
  %p = ((f32[4], f32[4]), s32[]) parameter(0)
  %n = s32[] get-tuple-element(%p), index=1
  %limit = s32[] constant(3)
  ROOT %lt = pred[] compare(%n, %limit), direction=LT
}
%body (p: ((f32[4], f32[4]), s32[])) -> ((f32[4], f32[4]), s32[]) {
  %p = ((f32[4], f32[4]), s32[]) parameter(0)
  %pair = (f32[4], f32[4]) get-tuple-element(%p), index=0
  %n = s32[] get-tuple-element(%p), index=1
  %one = s32[] constant(1)
  %next = s32[] add(%n, %one)
  ROOT %t = ((f32[4], f32[4]), s32[]) tuple(%pair, %next)
}
ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  %pair = (f32[4], f32[4]) tuple(%x, %x)
  %zero = s32[] constant(0)
  %init = ((f32[4], f32[4]), s32[]) tuple(%pair, %zero)
  %loop = ((f32[4], f32[4]), s32[]) while(%init), condition=%cond, body=%body
  %r = (f32[4], f32[4]) get-tuple-element(%loop), index=0
  ROOT %first = f32[4] get-tuple-element(%r), index=0
}
)";
  StatusOr<std::unique_ptr<hlo::HloModule>> module = hlo::ParseHloModule(text);
  ASSERT_TRUE(module.ok()) << module.status();
  StatusOr<Program> program = Compile(**module, {});
  ASSERT_FALSE(program.ok());
  EXPECT_EQ(program.status().code(), StatusCode::kUnimplemented);
  EXPECT_EQ(program.status().message(), "while loop with a nested tuple in its loop state");
}

TEST(CodegenTest, ResourceErrorsAreClear) {
  StatusOr<std::unique_ptr<hlo::HloModule>> module = hlo::ParseHloModule(DotModule(4, 4000, 4, false));
  ASSERT_TRUE(module.ok());
  CompileOptions options;
  options.vmem_lines = 64;  // 500 K tiles do not fit next to the weight buffers
  StatusOr<Program> program = Compile(**module, options);
  EXPECT_EQ(program.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(program.status().message().find("Ran out of memory in memory space vmem"), std::string::npos);

  CompileOptions tiny_imem;
  tiny_imem.imem_words = 10;
  module = hlo::ParseHloModule(DotModule(4, 4, 4, false));
  program = Compile(**module, tiny_imem);
  EXPECT_EQ(program.status().code(), StatusCode::kResourceExhausted);
  // The message names the code that takes the space, largest first.
  EXPECT_NE(program.status().message().find("limit: 10 words\nLargest code in imem:\n  1. Size: "), std::string::npos)
      << program.status().message();
  EXPECT_NE(program.status().message().find("1. Size: 32 words, dot = f32[4,4] dot"), std::string::npos)
      << program.status().message();
}

uint32_t FloatBitsForTest(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  return bits;
}

std::string Format(const char* pattern, std::initializer_list<std::string> values) {
  std::string text = pattern;
  for (const std::string& value : values) {
    const size_t at = text.find("$");
    if (at == std::string::npos) break;
    text.replace(at, 1, value);
  }
  return text;
}

struct ReduceCase {
  std::vector<int64_t> dims;     // operand dimensions
  std::vector<int64_t> reduced;  // reduced dimensions
  bool maximum;
};

std::string ShapeText(const std::vector<int64_t>& dims) {
  std::string text = "f32[";
  for (size_t i = 0; i < dims.size(); ++i) text += (i ? "," : "") + std::to_string(dims[i]);
  return text + "]";
}

class ReduceShapes : public ::testing::TestWithParam<ReduceCase> {};

TEST_P(ReduceShapes, MatchesTheInterpreter) {
  const ReduceCase& c = GetParam();
  std::vector<int64_t> kept;
  std::string reduced;
  for (size_t d = 0; d < c.dims.size(); ++d) {
    if (std::find(c.reduced.begin(), c.reduced.end(), int64_t(d)) == c.reduced.end()) kept.push_back(c.dims[d]);
  }
  for (int64_t d : c.reduced) reduced += (reduced.empty() ? "" : ",") + std::to_string(d);
  const std::string text = Format(R"(HloModule reduce
%red (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %r = f32[] $(f32[] %x, f32[] %y)
}
ENTRY %main (a: $) -> $ {
  %a = $ parameter(0)
  %init = f32[] constant($)
  ROOT %reduce = $ reduce($ %a, f32[] %init), dimensions={$}, to_apply=%red
}
)",
                                  {c.maximum ? "maximum" : "add", ShapeText(c.dims), ShapeText(kept), ShapeText(c.dims),
                                   c.maximum ? "-inf" : "0", ShapeText(kept), ShapeText(c.dims), reduced});
  CompileRunAndCompare(text, {}, 11);
}

INSTANTIATE_TEST_SUITE_P(
    Sizes, ReduceShapes,
    ::testing::Values(ReduceCase{{200, 32}, {0}, false}, ReduceCase{{1, 32}, {0}, false},
                      ReduceCase{{5, 13}, {0}, true}, ReduceCase{{37, 84}, {0}, false},
                      ReduceCase{{200, 1}, {0, 1}, false}, ReduceCase{{1, 1}, {0, 1}, false},
                      ReduceCase{{200, 1}, {0}, true}, ReduceCase{{3, 5, 10}, {0, 1}, false},
                      ReduceCase{{9, 120}, {0}, true}, ReduceCase{{32, 10}, {1}, true},
                      ReduceCase{{32, 10}, {1}, false}, ReduceCase{{5, 13}, {1}, false},
                      ReduceCase{{32, 10}, {0, 1}, false}, ReduceCase{{200, 32}, {0, 1}, true},
                      ReduceCase{{10}, {0}, true}, ReduceCase{{84}, {0}, false}),
    [](const ::testing::TestParamInfo<ReduceCase>& info) {
      std::string name = info.param.maximum ? "max" : "sum";
      for (int64_t d : info.param.dims) name += "_" + std::to_string(d);
      name += "_over";
      for (int64_t d : info.param.reduced) name += "_" + std::to_string(d);
      return name;
    });

TEST(CodegenTest, ReduceInChunksWithANonIdentityInit) {
  CompileOptions options;
  options.vmem_lines = 40;  // 4 lines per row: 9 rows per chunk
  CompileRunAndCompare(R"(HloModule reduce_chunks
%red (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %r = f32[] add(f32[] %x, f32[] %y)
}
ENTRY %main (a: f32[50,32]) -> f32[32] {
  %a = f32[50,32]{1,0} parameter(0)
  %init = f32[] constant(1.5)
  ROOT %reduce = f32[32]{0} reduce(f32[50,32]{1,0} %a, f32[] %init), dimensions={0}, to_apply=%red
}
)",
                       options, 12);
}

TEST(CodegenTest, CallsAreInlined) {
  CompileStats stats;
  CompileRunAndCompare(R"(HloModule calls
%relu (p: f32[13,20]) -> f32[13,20] {
  %p = f32[13,20]{1,0} parameter(0)
  %zero = f32[] constant(0)
  %b = f32[13,20]{1,0} broadcast(f32[] %zero), dimensions={}
  ROOT %m = f32[13,20]{1,0} maximum(f32[13,20]{1,0} %p, f32[13,20]{1,0} %b)
}
%outer (q: f32[13,20], r: f32[13,20]) -> f32[13,20] {
  %q = f32[13,20]{1,0} parameter(0)
  %r = f32[13,20]{1,0} parameter(1)
  %c = f32[13,20]{1,0} call(f32[13,20]{1,0} %q), to_apply=%relu
  ROOT %s = f32[13,20]{1,0} add(f32[13,20]{1,0} %c, f32[13,20]{1,0} %r)
}
ENTRY %main (a: f32[13,20], b: f32[13,20]) -> f32[13,20] {
  %a = f32[13,20]{1,0} parameter(0)
  %b = f32[13,20]{1,0} parameter(1)
  ROOT %call = f32[13,20]{1,0} call(f32[13,20]{1,0} %a, f32[13,20]{1,0} %b), to_apply=%outer
}
)",
                       {}, 13, &stats);
}

TEST(CodegenTest, ParameterIndependentValuesBecomeConstants) {
  // iota, a compare of constants and an s32 broadcast are evaluated at compile time; the s32 parameter
  // and the pred constant travel as 32-bit device words.
  const char* text = R"(HloModule folding
ENTRY %main (a: f32[4,10], n: s32[]) -> (f32[4,10], s32[], pred[4,10], s32[4,10]) {
  %a = f32[4,10]{1,0} parameter(0)
  %n = s32[] parameter(1)
  %iota = s32[4,10]{1,0} iota(), iota_dimension=1
  %three = s32[] constant(3)
  %b3 = s32[4,10]{1,0} broadcast(s32[] %three), dimensions={}
  %lt = pred[4,10]{1,0} compare(s32[4,10]{1,0} %iota, s32[4,10]{1,0} %b3), direction=LT
  %iota_f = f32[4,10]{1,0} iota(), iota_dimension=0
  %sum = f32[4,10]{1,0} add(f32[4,10]{1,0} %a, f32[4,10]{1,0} %iota_f)
  ROOT %t = (f32[4,10]{1,0}, s32[], pred[4,10]{1,0}, s32[4,10]{1,0}) tuple(%sum, %n, %lt, %iota)
}
)";
  std::vector<hlo::Literal> expected;
  RunResult run = CompileRunAndCompare(text, {}, 14, nullptr, &expected);
  ASSERT_EQ(run.outputs.size(), 4u);
  EXPECT_EQ(run.outputs[1].shape().element_type, hlo::PrimitiveType::S32);
  EXPECT_EQ(run.outputs[1].Get<int32_t>(0), expected[1].Get<int32_t>(0));
  EXPECT_EQ(run.outputs[2].shape().element_type, hlo::PrimitiveType::PRED);
  for (int64_t i = 0; i < 40; ++i) {
    EXPECT_EQ(run.outputs[2].Get<bool>(i), expected[2].Get<bool>(i));
    EXPECT_EQ(run.outputs[3].Get<int32_t>(i), expected[3].Get<int32_t>(i));
  }
}

TEST(CodegenTest, ReductionsOfConstantsFoldWhateverTheirReducer) {
  // Keras divides a mean by the product of the reduced dimensions, a multiply-reduce of a constant: the
  // device has no multiply reducer, so it must be evaluated at compile time.
  const char* text = R"(HloModule keras_mean
%mul (x: s32[], y: s32[]) -> s32[] {
  %x = s32[] parameter(0)
  %y = s32[] parameter(1)
  ROOT %m = s32[] multiply(s32[] %x, s32[] %y)
}
ENTRY %main (p: f32[4,10]) -> f32[4,10] {
  %p = f32[4,10]{1,0} parameter(0)
  %dims = s32[2]{0} constant({4, 10})
  %one = s32[] constant(1)
  %count = s32[] reduce(s32[2]{0} %dims, s32[] %one), dimensions={0}, to_apply=%mul
  %count_f = f32[] convert(s32[] %count)
  %b = f32[4,10]{1,0} broadcast(f32[] %count_f), dimensions={}
  ROOT %mean = f32[4,10]{1,0} divide(f32[4,10]{1,0} %p, f32[4,10]{1,0} %b)
}
)";
  CompileRunAndCompare(text);
}

TEST(CodegenTest, DeviceWordsRoundTripIntegerAndPredLiterals) {
  std::mt19937 rng(3);
  for (hlo::PrimitiveType type : {hlo::PrimitiveType::S32, hlo::PrimitiveType::S64, hlo::PrimitiveType::PRED,
                                  hlo::PrimitiveType::U32, hlo::PrimitiveType::F32}) {
    const hlo::Shape shape = hlo::Shape::Make(type, {3, 11});
    const hlo::Literal value = hlo::Literal::Random(shape, rng);
    const DeviceLayout layout = MakeDeviceLayout(shape, 8);
    const std::vector<uint8_t> bytes = ToDeviceBytes(value, layout);
    ASSERT_EQ(bytes.size(), size_t{layout.lines} * LineBytes(8));
    const hlo::Literal back = FromDeviceBytes(bytes.data(), layout);
    EXPECT_EQ(back.shape().element_type, type);
    for (int64_t i = 0; i < value.element_count(); ++i) EXPECT_EQ(back.GetAsDouble(i), value.GetAsDouble(i));
  }
}

struct BinaryCase {
  const char* op;           // HLO opcode
  std::vector<int64_t> dims;
  const char* second;       // "tensor", "scalar" (a broadcast constant), "row" (a broadcast rank-1 parameter)
  const char* constant;     // for "scalar"
};

class BinaryOps : public ::testing::TestWithParam<BinaryCase> {};

TEST_P(BinaryOps, MatchesTheInterpreter) {
  const BinaryCase& c = GetParam();
  const std::string shape = ShapeText(c.dims);
  const std::string row = ShapeText({c.dims.back()});
  const std::string rank_minus_one = std::to_string(c.dims.size() - 1);
  std::string text;
  if (std::string(c.second) == "tensor") {
    text = Format(R"(HloModule binary
ENTRY %main (a: $, b: $) -> $ {
  %a = $ parameter(0)
  %b = $ parameter(1)
  ROOT %r = $ $($ %a, $ %b)
}
)", {shape, shape, shape, shape, shape, shape, c.op, shape, shape});
  } else if (std::string(c.second) == "scalar") {
    // The constant on either side: first operand for the second output.
    text = Format(R"(HloModule binary
ENTRY %main (a: $) -> ($, $) {
  %a = $ parameter(0)
  %c = f32[] constant($)
  %b = $ broadcast(f32[] %c), dimensions={}
  %r = $ $($ %a, $ %b)
  %l = $ $($ %b, $ %a)
  ROOT %t = ($, $) tuple(%r, %l)
}
)", {shape, shape, shape, shape, c.constant, shape, shape, c.op, shape, shape, shape, c.op, shape, shape, shape, shape});
  } else {
    text = Format(R"(HloModule binary
ENTRY %main (a: $, v: $) -> ($, $) {
  %a = $ parameter(0)
  %v = $ parameter(1)
  %b = $ broadcast($ %v), dimensions={$}
  %r = $ $($ %a, $ %b)
  %l = $ $($ %b, $ %a)
  ROOT %t = ($, $) tuple(%r, %l)
}
)", {shape, row, shape, shape, shape, row, shape, row, rank_minus_one, shape, c.op, shape, shape, shape, c.op, shape,
     shape, shape, shape});
  }
  CompileRunAndCompare(text, {}, 21);
}

INSTANTIATE_TEST_SUITE_P(
    Ops, BinaryOps,
    ::testing::Values(BinaryCase{"subtract", {200, 1}, "tensor", ""},
                      BinaryCase{"subtract", {13, 20}, "scalar", "0.5"},
                      BinaryCase{"subtract", {7, 33}, "row", ""},
                      BinaryCase{"multiply", {32, 10}, "tensor", ""},
                      BinaryCase{"multiply", {5, 84}, "scalar", "-0.01"},
                      BinaryCase{"multiply", {9, 16}, "scalar", "0.9"},
                      BinaryCase{"multiply", {3, 120}, "row", ""},
                      BinaryCase{"minimum", {11, 9}, "tensor", ""},
                      BinaryCase{"minimum", {4, 12}, "scalar", "-1"}),
    [](const ::testing::TestParamInfo<BinaryCase>& info) {
      std::string name = std::string(info.param.op) + "_" + info.param.second;
      for (int64_t d : info.param.dims) name += "_" + std::to_string(d);
      return name;
    });

struct LaneBroadcastCase {
  std::vector<int64_t> out;
  bool scalar;  // else a rank-1 source along dimension 0
};

class LaneBroadcasts : public ::testing::TestWithParam<LaneBroadcastCase> {};

TEST_P(LaneBroadcasts, MatchTheInterpreter) {
  const LaneBroadcastCase& c = GetParam();
  const std::string out = ShapeText(c.out);
  const std::string in = c.scalar ? "f32[]" : ShapeText({c.out[0]});
  // The broadcast is an output of its own and also feeds an add.
  CompileRunAndCompare(Format(R"(HloModule lane_broadcast
ENTRY %main (v: $, x: $) -> ($, $) {
  %v = $ parameter(0)
  %x = $ parameter(1)
  %b = $ broadcast($ %v), dimensions={$}
  %s = $ add($ %x, $ %b)
  ROOT %t = ($, $) tuple(%b, %s)
}
)", {in, out, out, out, in, out, out, in, c.scalar ? "" : "0", out, out, out, out, out}), {}, 33);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, LaneBroadcasts,
    ::testing::Values(LaneBroadcastCase{{32, 10}, false}, LaneBroadcastCase{{13, 21}, false},
                      LaneBroadcastCase{{8, 8}, false}, LaneBroadcastCase{{3, 1}, false},
                      LaneBroadcastCase{{32, 10}, true}, LaneBroadcastCase{{120, 84}, true},
                      LaneBroadcastCase{{5}, true}, LaneBroadcastCase{{2, 3, 9}, true}, LaneBroadcastCase{{1}, true}),
    [](const ::testing::TestParamInfo<LaneBroadcastCase>& info) {
      std::string name = info.param.scalar ? "scalar" : "column";
      for (int64_t d : info.param.out) name += "_" + std::to_string(d);
      return name;
    });

// A broadcast of a scalar the program reads (a learning rate, say) is not materialized: its users splat it
// into a row on the device. Several column tiles, chunks of rows, negative scalars (x * -v must not turn
// the padding into -0), a compare and a reduce over the padded rows check the padding stays +0.
TEST(CodegenTest, ScalarParameterBroadcastsFoldIntoTheirUsers) {
  const char* text = R"(HloModule scalar_operand
ENTRY %main (x: f32[40,30], v: f32[], w: f32[6]) -> (f32[40,30], f32[40,30], f32[40,30], pred[40,30], f32[40], f32[6]) {
  %x = f32[40,30]{1,0} parameter(0)
  %v = f32[] parameter(1)
  %w = f32[6]{0} parameter(2)
  %bv = f32[40,30]{1,0} broadcast(f32[] %v), dimensions={}
  %sum = f32[40,30]{1,0} add(f32[40,30]{1,0} %x, f32[40,30]{1,0} %bv)
  %product = f32[40,30]{1,0} multiply(f32[40,30]{1,0} %bv, f32[40,30]{1,0} %x)
  %difference = f32[40,30]{1,0} subtract(f32[40,30]{1,0} %x, f32[40,30]{1,0} %bv)
  %greater = pred[40,30]{1,0} compare(f32[40,30]{1,0} %x, f32[40,30]{1,0} %bv), direction=GT
  %zero = f32[] constant(0)
  %rows = f32[40]{0} reduce(f32[40,30]{1,0} %sum, f32[] %zero), dimensions={1}, to_apply=%add_f32
  %bv6 = f32[6]{0} broadcast(f32[] %v), dimensions={}
  %small = f32[6]{0} maximum(f32[6]{0} %w, f32[6]{0} %bv6)
  ROOT %t = (f32[40,30]{1,0}, f32[40,30]{1,0}, f32[40,30]{1,0}, pred[40,30]{1,0}, f32[40]{0}, f32[6]{0}) tuple(%sum, %product, %difference, %greater, %rows, %small)
}
%add_f32 (p: f32[], q: f32[]) -> f32[] {
  %p = f32[] parameter(0)
  %q = f32[] parameter(1)
  ROOT %r = f32[] add(%p, %q)
}
)";
  const model::ChipConfig config = model::ChipConfig::Build();
  CompileOptions chunks;
  chunks.vmem_lines = 64 + 2 * config.lanes;  // the splat's scratch, and rows in several chunks on tiny
  for (uint32_t seed : {1u, 2u, 3u, 4u}) CompileRunAndCompare(text, chunks, seed);
  auto module = hlo::ParseHloModule(text);
  ASSERT_TRUE(module.ok()) << module.status();
  CompileOptions options;
  options.lanes = config.lanes;
  options.vmem_lines = config.vmem_lines;
  options.imem_words = config.imem_words;
  StatusOr<Program> program = Compile(**module, options);
  ASSERT_TRUE(program.ok()) << program.status();
  for (const CodeRange& range : program->code_ranges) {
    EXPECT_EQ(range.what.find("broadcast"), std::string::npos) << range.what << " is materialized";
  }
}

TEST(CodegenTest, ScalarBroadcastInChunks) {
  CompileOptions options;
  options.vmem_lines = 40;  // 16 rows per chunk
  CompileRunAndCompare(R"(HloModule scalar_chunks
ENTRY %main (v: f32[]) -> f32[50,20] {
  %v = f32[] parameter(0)
  ROOT %b = f32[50,20]{1,0} broadcast(f32[] %v), dimensions={}
}
)", options, 34);
}

// Each element of a vector to its own row (VTRANS blocks of LANES rows): the blocks run in a loop, so the
// code does not grow with the rows (1 820 rows once took 3 198 words and overflowed the tiny IMEM).
TEST(CodegenTest, LaneBroadcastOfManyRowsIsALoop) {
  const std::string text = R"(HloModule lanes
ENTRY %main (v: s32[1820]) -> s32[1820,3] {
  %v = s32[1820]{0} parameter(0)
  ROOT %b = s32[1820,3]{1,0} broadcast(s32[1820]{0} %v), dimensions={0}
}
)";
  CompileRunAndCompare(text, {}, 36);
  StatusOr<std::unique_ptr<hlo::HloModule>> module = hlo::ParseHloModule(text);
  ASSERT_TRUE(module.ok());
  StatusOr<Program> program = Compile(**module, {});
  ASSERT_TRUE(program.ok()) << program.status();
  EXPECT_LT(program->code.size(), 100u);
}

class ColumnRowReshapes : public ::testing::TestWithParam<std::pair<std::vector<int64_t>, std::vector<int64_t>>> {};

TEST_P(ColumnRowReshapes, MatchTheInterpreter) {
  const std::string in = ShapeText(GetParam().first), out = ShapeText(GetParam().second);
  CompileRunAndCompare(Format(R"(HloModule reshape
ENTRY %main (a: $, b: $) -> $ {
  %a = $ parameter(0)
  %b = $ parameter(1)
  %r = $ reshape($ %a)
  ROOT %s = $ add($ %r, $ %b)
}
)", {in, out, out, in, out, out, in, out, out, out}), {}, 35);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ColumnRowReshapes,
    ::testing::Values(std::make_pair(std::vector<int64_t>{200, 1}, std::vector<int64_t>{200}),
                      std::make_pair(std::vector<int64_t>{13}, std::vector<int64_t>{13, 1}),
                      std::make_pair(std::vector<int64_t>{1, 32}, std::vector<int64_t>{32, 1}),
                      std::make_pair(std::vector<int64_t>{3, 1, 1}, std::vector<int64_t>{1, 3})),
    [](const ::testing::TestParamInfo<std::pair<std::vector<int64_t>, std::vector<int64_t>>>& info) {
      std::string name = "from";
      for (int64_t d : info.param.first) name += "_" + std::to_string(d);
      name += "_to";
      for (int64_t d : info.param.second) name += "_" + std::to_string(d);
      return name;
    });

TEST(CodegenTest, DivisionByAConstantMatchesTheInterpreter) {
  const char* text = R"(HloModule divide
ENTRY %main (a: f32[200,1], b: f32[]) -> (f32[200,1], f32[]) {
  %a = f32[200,1]{1,0} parameter(0)
  %b = f32[] parameter(1)
  %c = f32[] constant(-3)
  %bc = f32[200,1]{1,0} broadcast(f32[] %c), dimensions={}
  %da = f32[200,1]{1,0} divide(f32[200,1]{1,0} %a, f32[200,1]{1,0} %bc)
  %n = f32[] constant(200)
  %db = f32[] divide(f32[] %b, f32[] %n)
  ROOT %t = (f32[200,1]{1,0}, f32[]) tuple(%da, %db)
}
)";
  CompileRunAndCompare(text, {}, 23);
}

struct CompareCase {
  const char* type;       // operand element type
  const char* direction;
  std::vector<int64_t> dims;
  const char* second;     // "tensor", "scalar" (f32 constant broadcast), "row"
  const char* constant;
};

class Compares : public ::testing::TestWithParam<CompareCase> {};

// The compare feeds a select (f32 result) and is an output itself (pred, exact).
TEST_P(Compares, MatchTheInterpreter) {
  const CompareCase& c = GetParam();
  std::string type = c.type;
  const std::string shape = type + ShapeText(c.dims).substr(3);
  const std::string fshape = ShapeText(c.dims);
  const std::string pshape = "pred" + ShapeText(c.dims).substr(3);
  std::string second_decl, second_param, second_name = "%b";
  if (std::string(c.second) == "tensor") {
    second_param = ", b: " + shape;
    second_decl = "  %b = " + shape + " parameter(1)\n";
  } else if (std::string(c.second) == "scalar") {
    second_decl = std::string("  %c = f32[] constant(") + c.constant + ")\n  %b = " + shape +
                  " broadcast(f32[] %c), dimensions={}\n";
  } else {
    const std::string row = type + "[" + std::to_string(c.dims.back()) + "]";
    second_param = ", v: " + row;
    second_decl = "  %v = " + row + " parameter(1)\n  %b = " + shape + " broadcast(" + row + " %v), dimensions={" +
                  std::to_string(c.dims.size() - 1) + "}\n";
  }
  const std::string text = "HloModule compare\nENTRY %main (a: " + shape + second_param + ", x: " + fshape + ", y: " +
                           fshape + ") -> (" + pshape + ", " + fshape + ") {\n  %a = " + shape + " parameter(0)\n" +
                           second_decl + "  %x = " + fshape + " parameter(" + (second_param.empty() ? "1" : "2") +
                           ")\n  %y = " + fshape + " parameter(" + (second_param.empty() ? "2" : "3") + ")\n  %p = " +
                           pshape + " compare(" + shape + " %a, " + shape + " %b), direction=" + c.direction +
                           "\n  %s = " + fshape + " select(" + pshape + " %p, " + fshape + " %x, " + fshape +
                           " %y)\n  ROOT %t = (" + pshape + ", " + fshape + ") tuple(%p, %s)\n}\n";
  std::vector<hlo::Literal> expected;
  RunResult run = CompileRunAndCompare(text, {}, 24, nullptr, &expected);
  ASSERT_EQ(run.outputs.size(), 2u) << text;
  for (int64_t i = 0; i < expected[0].element_count(); ++i) {
    ASSERT_EQ(run.outputs[0].Get<bool>(i), expected[0].Get<bool>(i)) << "element " << i << "\n" << text;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Directions, Compares,
    ::testing::Values(CompareCase{"f32", "GT", {200, 32}, "scalar", "0"}, CompareCase{"f32", "EQ", {7, 13}, "tensor", ""},
                      CompareCase{"f32", "GE", {5, 9}, "scalar", "0"}, CompareCase{"f32", "LT", {3, 20}, "row", ""},
                      CompareCase{"f32", "NE", {4, 12}, "scalar", "1"}, CompareCase{"f32", "LE", {9}, "tensor", ""},
                      CompareCase{"s32", "EQ", {32, 10}, "tensor", ""}, CompareCase{"s64", "NE", {32}, "tensor", ""},
                      CompareCase{"s32", "LT", {6, 11}, "row", ""}, CompareCase{"s32", "GE", {6, 11}, "tensor", ""}),
    [](const ::testing::TestParamInfo<CompareCase>& info) {
      std::string name = std::string(info.param.type) + "_" + info.param.direction + "_" + info.param.second;
      for (int64_t d : info.param.dims) name += "_" + std::to_string(d);
      return name;
    });

TEST(CodegenTest, SelectWithImmediatesAndScalars) {
  CompileRunAndCompare(R"(HloModule select
ENTRY %main (a: f32[32,10], x: f32[32,10], s: f32[], c: f32[32,16], y: f32[32,16]) -> (f32[32,10], f32[32,16], f32[], f32[32,10]) {
  %a = f32[32,10]{1,0} parameter(0)
  %x = f32[32,10]{1,0} parameter(1)
  %s = f32[] parameter(2)
  %c = f32[32,16]{1,0} parameter(3)
  %y = f32[32,16]{1,0} parameter(4)
  %zero = f32[] constant(0)
  %z = f32[32,10]{1,0} broadcast(f32[] %zero), dimensions={}
  %p = pred[32,10]{1,0} compare(f32[32,10]{1,0} %a, f32[32,10]{1,0} %z), direction=GT
  %r = f32[32,10]{1,0} select(pred[32,10]{1,0} %p, f32[32,10]{1,0} %x, f32[32,10]{1,0} %z)
  %one = f32[] constant(1)
  %o = f32[32,10]{1,0} broadcast(f32[] %one), dimensions={}
  %r2 = f32[32,10]{1,0} select(pred[32,10]{1,0} %p, f32[32,10]{1,0} %x, f32[32,10]{1,0} %o)
  %zw = f32[32,16]{1,0} broadcast(f32[] %zero), dimensions={}
  %pw = pred[32,16]{1,0} compare(f32[32,16]{1,0} %c, f32[32,16]{1,0} %zw), direction=LT
  %ow = f32[32,16]{1,0} broadcast(f32[] %one), dimensions={}
  %w = f32[32,16]{1,0} select(pred[32,16]{1,0} %pw, f32[32,16]{1,0} %y, f32[32,16]{1,0} %ow)
  %q = pred[] compare(f32[] %s, f32[] %zero), direction=NE
  %r3 = f32[] select(pred[] %q, f32[] %s, f32[] %one)
  ROOT %t = (f32[32,10]{1,0}, f32[32,16]{1,0}, f32[], f32[32,10]{1,0}) tuple(%r, %w, %r3, %r2)
}
)", {}, 25);
}

TEST(CodegenTest, IntegerArithmeticAndConversions) {
  const char* text = R"(HloModule integers
ENTRY %main (n: s32[], a: s32[6,11], b: s32[6,11], f: f32[6,11]) -> (s32[], s32[6,11], s32[6,11], f32[6,11], s32[6,11], pred[6,11], f32[6,11]) {
  %n = s32[] parameter(0)
  %a = s32[6,11]{1,0} parameter(1)
  %b = s32[6,11]{1,0} parameter(2)
  %f = f32[6,11]{1,0} parameter(3)
  %one = s32[] constant(1)
  %n1 = s32[] add(s32[] %n, s32[] %one)
  %d = s32[6,11]{1,0} subtract(s32[6,11]{1,0} %a, s32[6,11]{1,0} %b)
  %m = s32[6,11]{1,0} multiply(s32[6,11]{1,0} %d, s32[6,11]{1,0} %b)
  %mx = s32[6,11]{1,0} maximum(s32[6,11]{1,0} %m, s32[6,11]{1,0} %a)
  %ng = s32[6,11]{1,0} negate(s32[6,11]{1,0} %mx)
  %af = f32[6,11]{1,0} convert(s32[6,11]{1,0} %ng)
  %scale = f32[] constant(7.5)
  %fs = f32[6,11]{1,0} broadcast(f32[] %scale), dimensions={}
  %big = f32[6,11]{1,0} multiply(f32[6,11]{1,0} %f, f32[6,11]{1,0} %fs)
  %fi = s32[6,11]{1,0} convert(f32[6,11]{1,0} %big)
  %fp = pred[6,11]{1,0} convert(s32[6,11]{1,0} %fi)
  %pf = f32[6,11]{1,0} convert(pred[6,11]{1,0} %fp)
  ROOT %t = (s32[], s32[6,11]{1,0}, s32[6,11]{1,0}, f32[6,11]{1,0}, s32[6,11]{1,0}, pred[6,11]{1,0}, f32[6,11]{1,0}) tuple(%n1, %mx, %ng, %af, %fi, %fp, %pf)
}
)";
  std::vector<hlo::Literal> expected;
  RunResult run = CompileRunAndCompare(text, {}, 26, nullptr, &expected);
  ASSERT_EQ(run.outputs.size(), expected.size());
  // Integer and pred outputs are exact.
  for (size_t o : {0u, 1u, 2u, 4u, 5u}) {
    for (int64_t i = 0; i < expected[o].element_count(); ++i) {
      EXPECT_EQ(run.outputs[o].GetAsDouble(i), expected[o].GetAsDouble(i)) << "output " << o << " element " << i;
    }
  }
}

class MathShapes : public ::testing::TestWithParam<std::vector<int64_t>> {};

// exp over a wide range, log of positive values from tiny to large, division by values of both signs.
TEST_P(MathShapes, ExpLogAndDivisionMatchTheInterpreter) {
  const std::string shape = ShapeText(GetParam());
  CompileRunAndCompare(Format(R"(HloModule math
ENTRY %main (a: $, b: $) -> ($, $, $, $, $) {
  %a = $ parameter(0)
  %b = $ parameter(1)
  %c = f32[] constant(40)
  %bc = $ broadcast(f32[] %c), dimensions={}
  %wide = $ multiply($ %a, $ %bc)
  %e = $ exponential($ %wide)
  %ea = $ exponential($ %a)
  %l = $ log($ %e)
  %la = $ log($ %ea)
  %d = $ divide($ %b, $ %a)
  ROOT %t = ($, $, $, $, $) tuple(%e, %ea, %l, %la, %d)
}
)", {shape, shape, shape, shape, shape, shape, shape, shape, shape, shape, shape, shape, shape, shape, shape, shape,
     shape, shape, shape, shape, shape, shape, shape, shape, shape, shape, shape, shape, shape, shape, shape, shape,
     shape, shape, shape, shape, shape, shape, shape, shape}),
                       {}, 27);
}

// rsqrt and sqrt of positive values, sqrt of values that are zero in about half the elements.
TEST_P(MathShapes, RsqrtAndSqrtMatchTheInterpreter) {
  const std::string shape = ShapeText(GetParam());
  CompileRunAndCompare(Format(R"(HloModule roots
ENTRY %main (a: $) -> ($, $, $) {
  %a = $ parameter(0)
  %ea = $ exponential($ %a)
  %r = $ rsqrt($ %ea)
  %s = $ sqrt($ %ea)
  %z = f32[] constant(0)
  %bz = $ broadcast(f32[] %z), dimensions={}
  %m = $ maximum($ %a, $ %bz)
  %sm = $ sqrt($ %m)
  ROOT %t = ($, $, $) tuple(%r, %s, %sm)
}
)", {shape, shape, shape, shape, shape, shape, shape, shape, shape, shape, shape, shape, shape, shape, shape,
     shape, shape, shape, shape, shape}),
                       {}, 28);
}

INSTANTIATE_TEST_SUITE_P(Shapes, MathShapes,
                         ::testing::Values(std::vector<int64_t>{32, 10}, std::vector<int64_t>{16, 16},
                                           std::vector<int64_t>{7}, std::vector<int64_t>{}),
                         [](const ::testing::TestParamInfo<std::vector<int64_t>>& info) {
                           std::string name = "s";
                           for (int64_t d : info.param) name += "_" + std::to_string(d);
                           return name;
                         });

TEST(CodegenTest, NegateMatchesTheInterpreter) {
  const char* text = R"(HloModule negate
ENTRY %main (a: f32[200,1], b: f32[6,19]) -> (f32[200,1], f32[6,19]) {
  %a = f32[200,1]{1,0} parameter(0)
  %b = f32[6,19]{1,0} parameter(1)
  %na = f32[200,1]{1,0} negate(f32[200,1]{1,0} %a)
  %nb = f32[6,19]{1,0} negate(f32[6,19]{1,0} %b)
  ROOT %t = (f32[200,1]{1,0}, f32[6,19]{1,0}) tuple(%na, %nb)
}
)";
  CompileRunAndCompare(text, {}, 22);
}

class TransposeShapes : public ::testing::TestWithParam<std::pair<int64_t, int64_t>> {};

TEST_P(TransposeShapes, MatchesTheInterpreter) {
  const auto [r, c] = GetParam();
  const std::string in = ShapeText({r, c}), out = ShapeText({c, r});
  std::vector<hlo::Literal> expected;
  RunResult run = CompileRunAndCompare(Format(R"(HloModule transpose
ENTRY %main (a: $) -> $ {
  %a = $ parameter(0)
  ROOT %t = $ transpose($ %a), dimensions={1,0}
}
)", {in, out, in, out, in}), {}, 31, nullptr, &expected);
  // A transpose that is not only a dot operand keeps every bit.
  ASSERT_EQ(run.outputs.size(), 1u);
  ASSERT_EQ(expected.size(), 1u);
  EXPECT_EQ(std::memcmp(run.outputs[0].untyped_data(), expected[0].untyped_data(), size_t(r * c) * 4), 0);
}

TEST(CodegenTest, TransposeKeepsSmallLargeAndSignedValues) {
  const char* text = R"(HloModule transpose_values
ENTRY %main (a: f32[9,11]) -> f32[11,9] {
  %a = f32[9,11]{1,0} parameter(0)
  ROOT %t = f32[11,9]{1,0} transpose(f32[9,11]{1,0} %a), dimensions={1,0}
}
)";
  StatusOr<std::unique_ptr<hlo::HloModule>> module = hlo::ParseHloModule(text);
  ASSERT_TRUE(module.ok()) << module.status();
  StatusOr<Program> program = Compile(**module, {});
  ASSERT_TRUE(program.ok()) << program.status();
  std::mt19937 rng(36);
  std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
  std::uniform_int_distribution<int> exponent(-100, 100);
  std::vector<float> values(99);
  for (size_t i = 0; i < values.size(); ++i) {
    values[i] = std::ldexp(mantissa(rng), exponent(rng)) * (i % 3 == 0 ? -1.0f : 1.0f);
  }
  values[5] = 0.0f;
  values[6] = -0.0f;
  values[7] = 1.0f + std::ldexp(1.0f, -23);  // needs all three pieces
  StatusOr<RunResult> run = RunOnModel(*program, {hlo::Literal(hlo::Shape::Make(hlo::PrimitiveType::F32, {9, 11}), values)});
  ASSERT_TRUE(run.ok()) << run.status();
  for (int64_t i = 0; i < 9; ++i) {
    for (int64_t j = 0; j < 11; ++j) {
      const float want = values[size_t(i * 11 + j)], got = run->outputs[0].Get<float>(j * 9 + i);
      if (want == 0.0f) {
        EXPECT_EQ(got, 0.0f);
      } else {
        EXPECT_EQ(FloatBitsForTest(got), FloatBitsForTest(want)) << i << "," << j << ": " << got << " vs " << want;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, TransposeShapes,
                         ::testing::Values(std::make_pair(32, 1), std::make_pair(1, 32), std::make_pair(8, 8),
                                           std::make_pair(13, 21), std::make_pair(32, 32), std::make_pair(120, 84),
                                           std::make_pair(17, 3), std::make_pair(1, 1), std::make_pair(40, 16)),
                         [](const ::testing::TestParamInfo<std::pair<int64_t, int64_t>>& info) {
                           return std::to_string(info.param.first) + "x" + std::to_string(info.param.second);
                         });

struct ContractingCase {
  int64_t m, k, n;
  int lhs_dim, rhs_dim;      // contracting dimensions
  bool transpose_lhs, transpose_rhs;  // operands given as transpose instructions
};

class DotContracting : public ::testing::TestWithParam<ContractingCase> {};

TEST_P(DotContracting, MatchesTheInterpreter) {
  const ContractingCase& c = GetParam();
  // Logical operand shapes as the dot sees them.
  const std::vector<int64_t> lhs = c.lhs_dim == 1 ? std::vector<int64_t>{c.m, c.k} : std::vector<int64_t>{c.k, c.m};
  const std::vector<int64_t> rhs = c.rhs_dim == 0 ? std::vector<int64_t>{c.k, c.n} : std::vector<int64_t>{c.n, c.k};
  const std::vector<int64_t> lhs_param = c.transpose_lhs ? std::vector<int64_t>{lhs[1], lhs[0]} : lhs;
  const std::vector<int64_t> rhs_param = c.transpose_rhs ? std::vector<int64_t>{rhs[1], rhs[0]} : rhs;
  std::string body = "  %a = " + ShapeText(lhs_param) + " parameter(0)\n  %b = " + ShapeText(rhs_param) + " parameter(1)\n";
  std::string lhs_name = "%a", rhs_name = "%b";
  if (c.transpose_lhs) {
    body += "  %ta = " + ShapeText(lhs) + " transpose(" + ShapeText(lhs_param) + " %a), dimensions={1,0}\n";
    lhs_name = "%ta";
  }
  if (c.transpose_rhs) {
    body += "  %tb = " + ShapeText(rhs) + " transpose(" + ShapeText(rhs_param) + " %b), dimensions={1,0}\n";
    rhs_name = "%tb";
  }
  body += "  ROOT %d = " + ShapeText({c.m, c.n}) + " dot(" + ShapeText(lhs) + " " + lhs_name + ", " + ShapeText(rhs) +
          " " + rhs_name + "), lhs_contracting_dims={" + std::to_string(c.lhs_dim) + "}, rhs_contracting_dims={" +
          std::to_string(c.rhs_dim) + "}\n";
  const std::string text = "HloModule contracting\nENTRY %main (a: " + ShapeText(lhs_param) + ", b: " +
                           ShapeText(rhs_param) + ") -> " + ShapeText({c.m, c.n}) + " {\n" + body + "}\n";
  CompileRunAndCompare(text, {}, 32);
}

INSTANTIATE_TEST_SUITE_P(
    Forms, DotContracting,
    ::testing::Values(ContractingCase{32, 200, 1, 0, 0, false, false},   // MAML dot.128 (as [32,1])
                      ContractingCase{32, 200, 32, 0, 0, false, false},  // MAML dot.113
                      ContractingCase{84, 32, 120, 0, 1, false, true},   // PyTorch dot.1
                      ContractingCase{32, 784, 120, 1, 0, false, true},  // PyTorch dot.24
                      ContractingCase{13, 9, 21, 1, 1, true, false},
                      ContractingCase{5, 17, 3, 0, 1, true, true}),
    [](const ::testing::TestParamInfo<ContractingCase>& info) {
      const ContractingCase& c = info.param;
      return std::to_string(c.m) + "x" + std::to_string(c.k) + "x" + std::to_string(c.n) + "_lhs" +
             std::to_string(c.lhs_dim) + (c.transpose_lhs ? "t" : "") + "_rhs" + std::to_string(c.rhs_dim) +
             (c.transpose_rhs ? "t" : "");
    });

// The shared JAX and PyTorch/XLA training steps, compiled as the runtime compiles them (no passes). Their
// dots carry no precision_config (DEFAULT: one bf16 pass); the comparison with the f32 interpreter asks
// for HIGH (three passes), as a test against XLA on a CPU does.
class TrainingSteps : public ::testing::TestWithParam<const char*> {};

TEST_P(TrainingSteps, MatchTheInterpreterOnTheModel) {
  const std::string text = ReadTextFile(std::string(TPU_SOURCE_DIR) + "/../shared/hlo/" + GetParam() + ".hlo");
  if (text.empty()) GTEST_SKIP() << "shared/hlo/" << GetParam() << ".hlo is not there";
  StatusOr<std::unique_ptr<hlo::HloModule>> module = hlo::ParseHloModule(text);
  ASSERT_TRUE(module.ok()) << module.status();
  const model::ChipConfig config = model::ChipConfig::Build();
  CompileOptions options;
  options.dot_passes = 3;
  options.lanes = config.lanes;
  options.vmem_lines = config.vmem_lines;
  options.imem_words = config.imem_words;
  CompileStats stats;
  StatusOr<Program> program = Compile(**module, options, &stats);
  ASSERT_TRUE(program.ok()) << program.status();
  std::mt19937 rng(41);
  std::vector<hlo::Literal> arguments;
  const hlo::HloComputation* entry = (*module)->entry_computation();
  for (int64_t i = 0; i < entry->num_parameters(); ++i) {
    arguments.push_back(hlo::Literal::Random(entry->parameter_instruction(i)->shape(), rng));
  }
  StatusOr<RunResult> run = RunOnModel(*program, arguments, config);
  ASSERT_TRUE(run.ok()) << run.status();
  StatusOr<std::vector<hlo::Literal>> expected = hlo::Interpret(**module, arguments);
  ASSERT_TRUE(expected.ok()) << expected.status();
  ASSERT_EQ(run->outputs.size(), expected->size());
  for (size_t o = 0; o < expected->size(); ++o) {
    std::string mismatch = CompareWithTolerance(run->outputs[o], (*expected)[o]);
    EXPECT_TRUE(mismatch.empty()) << "output " << o << ": " << mismatch;
  }
  uint64_t macs = 0;
  for (const DotPaddingReport& dot : stats.dots) macs += dot.logical_macs;
  std::printf("%s: %zu instruction words, %u issued, %llu cycles, MXU busy %llu cycles, %llu logical MACs\n",
              GetParam(), run->instructions, run->instret, (unsigned long long)run->cycles,
              (unsigned long long)run->mxu_busy, (unsigned long long)macs);
}

// The same after the default pass pipeline (inlining, folding, simplification, CSE, ReLU and elementwise
// loop fusion): codegen inlines fusions and lowers their instructions one by one.
TEST_P(TrainingSteps, MatchTheInterpreterAfterTheDefaultPipeline) {
  const std::string text = ReadTextFile(std::string(TPU_SOURCE_DIR) + "/../shared/hlo/" + GetParam() + ".hlo");
  if (text.empty()) GTEST_SKIP() << "shared/hlo/" << GetParam() << ".hlo is not there";
  StatusOr<std::unique_ptr<hlo::HloModule>> reference = hlo::ParseHloModule(text);
  StatusOr<std::unique_ptr<hlo::HloModule>> module = hlo::ParseHloModule(text);
  ASSERT_TRUE(reference.ok() && module.ok());
  StatusOr<bool> changed = RunDefaultPipeline(module->get(), PipelineOptions{});
  ASSERT_TRUE(changed.ok()) << changed.status();
  const model::ChipConfig config = model::ChipConfig::Build();
  CompileOptions options;
  options.dot_passes = 3;
  options.lanes = config.lanes;
  options.vmem_lines = config.vmem_lines;
  options.imem_words = config.imem_words;
  StatusOr<Program> program = Compile(**module, options);
  ASSERT_TRUE(program.ok()) << program.status();
  std::mt19937 rng(42);
  std::vector<hlo::Literal> arguments;
  const hlo::HloComputation* entry = (*reference)->entry_computation();
  for (int64_t i = 0; i < entry->num_parameters(); ++i) {
    arguments.push_back(hlo::Literal::Random(entry->parameter_instruction(i)->shape(), rng));
  }
  StatusOr<RunResult> run = RunOnModel(*program, arguments, config);
  ASSERT_TRUE(run.ok()) << run.status();
  StatusOr<std::vector<hlo::Literal>> expected = hlo::Interpret(**reference, arguments);
  ASSERT_TRUE(expected.ok()) << expected.status();
  ASSERT_EQ(run->outputs.size(), expected->size());
  for (size_t o = 0; o < expected->size(); ++o) {
    std::string mismatch = CompareWithTolerance(run->outputs[o], (*expected)[o]);
    EXPECT_TRUE(mismatch.empty()) << "output " << o << ": " << mismatch;
  }
}

// The same on the v2 configuration (128 lanes).
TEST_P(TrainingSteps, MatchTheInterpreterOnTheV2Model) {
  const std::string text = ReadTextFile(std::string(TPU_SOURCE_DIR) + "/../shared/hlo/" + GetParam() + ".hlo");
  if (text.empty()) GTEST_SKIP() << "shared/hlo/" << GetParam() << ".hlo is not there";
  StatusOr<model::ChipConfig> v2 = model::ChipConfig::Named("v2");
  ASSERT_TRUE(v2.ok()) << v2.status();
  CompileOptions options;
  options.dot_passes = 3;
  options.vmem_lines = v2->vmem_lines;
  RunResult run = CompileRunAndCompare(text, options, 44, nullptr, nullptr, *v2);
  EXPECT_GT(run.cycles, 0u);
  std::printf("%s on v2: %zu instruction words, %llu cycles, MXU busy %llu cycles\n", GetParam(), run.instructions,
              (unsigned long long)run.cycles, (unsigned long long)run.mxu_busy);
}

TEST(CodegenTest, LoopFusionsAreInlined) {
  CompileRunAndCompare(R"(HloModule fusion
%fused (p0: f32[13,20], p1: f32[13,20]) -> f32[13,20] {
  %p0 = f32[13,20]{1,0} parameter(0)
  %p1 = f32[13,20]{1,0} parameter(1)
  %m = f32[13,20]{1,0} multiply(f32[13,20]{1,0} %p0, f32[13,20]{1,0} %p1)
  %c = f32[] constant(0.5)
  %b = f32[13,20]{1,0} broadcast(f32[] %c), dimensions={}
  ROOT %s = f32[13,20]{1,0} subtract(f32[13,20]{1,0} %m, f32[13,20]{1,0} %b)
}
ENTRY %main (a: f32[13,20], b: f32[13,20]) -> f32[13,20] {
  %a = f32[13,20]{1,0} parameter(0)
  %b = f32[13,20]{1,0} parameter(1)
  ROOT %f = f32[13,20]{1,0} fusion(f32[13,20]{1,0} %a, f32[13,20]{1,0} %b), kind=kLoop, calls=%fused
}
)", {}, 43);
}

INSTANTIATE_TEST_SUITE_P(Shared, TrainingSteps,
                         ::testing::Values("maml_flax_train_step", "pytorch_xla_mnist_mlp_train_step"));

uint64_t Word(isa::Opcode op, uint8_t rd, uint8_t rs1, uint8_t rs2, uint8_t rs3, uint8_t flags, uint32_t imm) {
  return isa::Encode({static_cast<uint8_t>(op), rd, rs1, rs2, rs3, flags, imm});
}

TEST(SyncCheckerTest, FindsAMissingSync) {
  // DMA_LD into line 0, then VADD reading line 0 without waiting for the DMA.
  std::vector<uint64_t> code;
  auto emit = [&](isa::Opcode op, uint8_t rd, uint8_t rs1, uint8_t rs2, uint8_t rs3, uint8_t flags, uint32_t imm) {
    code.push_back(Word(op, rd, rs1, rs2, rs3, flags, imm));
  };
  emit(isa::Opcode::LI, 1, 0, 0, 0, 0, 4);
  emit(isa::Opcode::DMA_LD, 0, 0, 0, 1, 0, 1);
  emit(isa::Opcode::VADD, 0, 0, 0, 1, isa::flag::VADD_SRC2_IMM, 0);
  emit(isa::Opcode::HALT, 0, 0, 0, 0, 0, 0);
  Status status = CheckUnitSynchronization(code, {});
  EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(status.message().find("read-after-write"), std::string::npos) << status;
  // With SYNC DMA in between it is fine.
  code.insert(code.begin() + 2, Word(isa::Opcode::SYNC, 0, 0, 0, 0, isa::flag::SYNC_DMA, 0));
  EXPECT_TRUE(CheckUnitSynchronization(code, {}).ok());
}

TEST(SyncCheckerTest, ScalarLoadWaitsForTheUnitAndLoopsOnData) {
  // VSPLAT line 3, SLD of line 3 without a SYNC: a race. With SYNC VPU: a loop on the loaded value
  // (taken while it reads 1: the checker follows two iterations) that ends at HALT.
  std::vector<uint64_t> code;
  auto emit = [&](isa::Opcode op, uint8_t rd, uint8_t rs1, uint8_t rs2, uint8_t rs3, uint8_t flags, uint32_t imm) {
    code.push_back(Word(op, rd, rs1, rs2, rs3, flags, imm));
  };
  emit(isa::Opcode::LI, 1, 0, 0, 0, 0, 1);
  emit(isa::Opcode::LI, 2, 0, 0, 0, 0, 3);
  emit(isa::Opcode::VSPLAT, 2, 0, 0, 1, 0, 1);
  emit(isa::Opcode::SLD, 4, 0, 0, 0, 0, 3);      // pc 3: loop top
  emit(isa::Opcode::BEQ, 0, 4, 0, 0, 0, 6);
  emit(isa::Opcode::JMP, 0, 0, 0, 0, 0, 3);
  emit(isa::Opcode::HALT, 0, 0, 0, 0, 0, 0);
  Status status = CheckUnitSynchronization(code, {});
  EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(status.message().find("(SLD) reads VMEM [3, 4)"), std::string::npos) << status;
  code.insert(code.begin() + 3, Word(isa::Opcode::SYNC, 0, 0, 0, 0, isa::flag::SYNC_VPU, 0));
  code[5] = Word(isa::Opcode::BEQ, 0, 4, 0, 0, 0, 7);
  code[6] = Word(isa::Opcode::JMP, 0, 0, 0, 0, 0, 4);
  EXPECT_TRUE(CheckUnitSynchronization(code, {}).ok()) << CheckUnitSynchronization(code, {});
}

TEST(SyncCheckerTest, TheLinkEngineReadsAfterLoadsAndIsWaitedForWithSyncIci) {
  // DMA_LD lines 0..3, RDMA them to core 1: no SYNC needed (the engine waits for earlier loads). Then a
  // DMA_LD into the same lines while the RDMA may still read them: a race that only SYNC ICI removes
  // (SYNC DMA does not); a second RDMA in between also retires the first one's reads.
  std::vector<uint64_t> code;
  auto emit = [&](isa::Opcode op, uint8_t rd, uint8_t rs1, uint8_t rs2, uint8_t rs3, uint8_t flags, uint32_t imm) {
    code.push_back(Word(op, rd, rs1, rs2, rs3, flags, imm));
  };
  emit(isa::Opcode::LI, 3, 0, 0, 0, 0, 4);       // s3: 4 lines
  emit(isa::Opcode::LI, 4, 0, 0, 0, 0, 1);       // s4: core 1
  emit(isa::Opcode::LI, 5, 0, 0, 0, 0, 8);       // s5: VMEM line 8
  emit(isa::Opcode::DMA_LD, 0, 0, 0, 3, 0, 1);
  emit(isa::Opcode::RDMA, 4, 0, 0, 3, isa::flag::RDMA_POST, 4);
  emit(isa::Opcode::DMA_LD, 0, 0, 0, 3, 0, 1);   // pc 5
  emit(isa::Opcode::HALT, 0, 0, 0, 0, 0, 0);
  Status status = CheckUnitSynchronization(code, {});
  EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(status.message().find("write-after-read race: pc 5 (DMA)"), std::string::npos) << status;
  EXPECT_NE(status.message().find("(ICI)"), std::string::npos) << status;
  code.insert(code.begin() + 5, Word(isa::Opcode::SYNC, 0, 0, 0, 0, isa::flag::SYNC_DMA, 0));
  EXPECT_FALSE(CheckUnitSynchronization(code, {}).ok()) << "SYNC DMA does not wait for the link engine";
  code[5] = Word(isa::Opcode::SYNC, 0, 0, 0, 0, isa::flag::SYNC_ICI, 0);
  EXPECT_TRUE(CheckUnitSynchronization(code, {}).ok()) << CheckUnitSynchronization(code, {});
  code[5] = Word(isa::Opcode::RDMA, 4, 0, 5, 3, 0, 0);  // another RDMA, of lines 8..11
  EXPECT_TRUE(CheckUnitSynchronization(code, {}).ok()) << CheckUnitSynchronization(code, {});
}

// --- GEMMs on the MXU pipeline (dot.cc) ---

// dot(a[m,k], b) with b [k,n] or, transposed, [n,k]; operands of `in` type, result of `out` type.
std::string GemmModule(int64_t m, int64_t k, int64_t n, bool transposed, const std::string& in, const std::string& out) {
  auto shape = [](const std::string& type, int64_t a, int64_t b) {
    return type + "[" + std::to_string(a) + "," + std::to_string(b) + "]";
  };
  const std::string a = shape(in, m, k), b = transposed ? shape(in, n, k) : shape(in, k, n), y = shape(out, m, n);
  return "HloModule gemm\n\nENTRY %main (a: " + a + ", b: " + b + ") -> " + y + " {\n  %a = " + a +
         "{1,0} parameter(0)\n  %b = " + b + "{1,0} parameter(1)\n  ROOT %dot = " + y + "{1,0} dot(" + a + "{1,0} %a, " +
         b + "{1,0} %b), lhs_contracting_dims={1}, rhs_contracting_dims={" + (transposed ? "1" : "0") + "}\n}\n";
}

struct GemmCase {
  int64_t m, k, n;
  bool transposed;
  const char* in;
  const char* out;
};

class GemmShapes : public ::testing::TestWithParam<GemmCase> {};

TEST_P(GemmShapes, MatchTheInterpreter) {
  const GemmCase& c = GetParam();
  CompileStats stats;
  CompileOptions high;  // the f32 interpreter comparison asks for HIGH (the module has no precision_config)
  high.dot_passes = 3;
  RunResult run = CompileRunAndCompare(GemmModule(c.m, c.k, c.n, c.transposed, c.in, c.out), high, 11, &stats);
  // bf16 operands: one MXU pass whatever dot_passes says; f32 ones: three.
  ASSERT_EQ(stats.dots.size(), std::string(c.in) == "bf16" ? 1u : 3u);
  EXPECT_GT(run.mxu_busy, 0u);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, GemmShapes,
    ::testing::Values(GemmCase{64, 64, 64, false, "bf16", "bf16"}, GemmCase{64, 64, 64, false, "bf16", "f32"},
                      GemmCase{45, 37, 29, false, "bf16", "bf16"}, GemmCase{45, 37, 29, true, "bf16", "f32"},
                      GemmCase{18, 9, 17, false, "bf16", "f32"}, GemmCase{100, 24, 8, false, "bf16", "bf16"},
                      GemmCase{33, 17, 41, true, "bf16", "bf16"}, GemmCase{70, 50, 23, false, "f32", "f32"},
                      GemmCase{40, 16, 16, false, "bf16", "f32"}, GemmCase{24, 33, 100, true, "f32", "f32"},
                      GemmCase{300, 20, 30, false, "bf16", "f32"}, GemmCase{17, 30, 30, false, "bf16", "f32"}),
    [](const ::testing::TestParamInfo<GemmCase>& info) {
      const GemmCase& c = info.param;
      return std::to_string(c.m) + "x" + std::to_string(c.k) + "x" + std::to_string(c.n) + (c.transposed ? "_t_" : "_") +
             c.in + "_" + c.out;
    });

TEST(GemmTest, ChunkedRowsWithASmallVmem) {
  // 200 rows do not fit 600 VMEM lines at once: the pipeline runs them in chunks.
  CompileOptions options;
  options.vmem_lines = 600;
  CompileRunAndCompare(GemmModule(200, 40, 30, false, "bf16", "f32"), options, 12);
  CompileRunAndCompare(GemmModule(200, 40, 30, true, "bf16", "bf16"), options, 13);
}

TEST(GemmTest, Bf16ConvertsRoundToNearestEvenAndBackExactly) {
  // f32 -> bf16 -> f32 against the interpreter, bit for bit, on values around the rounding ties.
  const std::string text = R"(HloModule converts
ENTRY %main (x: f32[40,13]) -> (bf16[40,13], f32[40,13]) {
  %x = f32[40,13]{1,0} parameter(0)
  %b = bf16[40,13]{1,0} convert(f32[40,13]{1,0} %x)
  %f = f32[40,13]{1,0} convert(bf16[40,13]{1,0} %b)
  ROOT %t = (bf16[40,13]{1,0}, f32[40,13]{1,0}) tuple(bf16[40,13]{1,0} %b, f32[40,13]{1,0} %f)
}
)";
  StatusOr<std::unique_ptr<hlo::HloModule>> module = hlo::ParseHloModule(text);
  ASSERT_TRUE(module.ok()) << module.status();
  CompileOptions options;
  options.lanes = model::ChipConfig::Build().lanes;
  options.vmem_lines = model::ChipConfig::Build().vmem_lines;
  StatusOr<Program> program = Compile(**module, options);
  ASSERT_TRUE(program.ok()) << program.status();
  hlo::Shape x_shape;
  x_shape.element_type = hlo::PrimitiveType::F32;
  x_shape.dimensions = {40, 13};
  hlo::Literal x(x_shape);
  std::mt19937 rng(5);
  const uint32_t specials[] = {0x3f808000u, 0x3f818000u, 0x3f807fffu, 0x3f808001u, 0x7f7fffffu, 0xff7fffffu,
                               0x7f800000u, 0xff800000u, 0x00000000u, 0x80000000u, 0x7fffffffu, 0xffc00001u,
                               0xbf808000u, 0x4effff80u};
  for (int64_t i = 0; i < x.element_count(); ++i) {
    uint32_t bits = i < int64_t(std::size(specials)) ? specials[i] : static_cast<uint32_t>(rng());
    if ((bits & 0x7f800000u) == 0) bits &= 0x80000000u;  // subnormals: the device flushes them (DAZ)
    float value;
    std::memcpy(&value, &bits, 4);
    x.Set<float>(i, value);
  }
  StatusOr<RunResult> run = RunOnModel(*program, {x});
  ASSERT_TRUE(run.ok()) << run.status();
  StatusOr<std::vector<hlo::Literal>> expected = hlo::Interpret(**module, {x});
  ASSERT_TRUE(expected.ok()) << expected.status();
  ASSERT_EQ(run->outputs.size(), 2u);
  for (int64_t i = 0; i < x.element_count(); ++i) {
    const float want = hlo::Bfloat16ToFloat((*expected)[0].Get<hlo::bfloat16>(i));
    const float got = hlo::Bfloat16ToFloat(run->outputs[0].Get<hlo::bfloat16>(i));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << "element " << i;
      continue;
    }
    uint32_t want_bits, got_bits, back_bits;
    std::memcpy(&want_bits, &want, 4);
    std::memcpy(&got_bits, &got, 4);
    const float back = run->outputs[1].Get<float>(i);
    std::memcpy(&back_bits, &back, 4);
    EXPECT_EQ(got_bits, want_bits) << "element " << i;
    EXPECT_EQ(back_bits, want_bits) << "element " << i;
  }
}

// The sync checker's MXU rules: results of a multiply are complete only after enough later rows.
struct CodeBuilder {
  std::vector<uint64_t> code;
  void Emit(isa::Opcode op, uint8_t rd, uint8_t rs1, uint8_t rs2, uint8_t rs3, uint8_t flags, uint32_t imm) {
    code.push_back(isa::Encode({static_cast<uint8_t>(op), rd, rs1, rs2, rs3, flags, imm}));
  }
  void Li(uint8_t rd, uint32_t imm) { Emit(isa::Opcode::LI, rd, 0, 0, 0, 0, imm); }
  // MXU_MM from line `lhs` into line `out`, `rows` rows (s1..s3 hold the operands).
  void Matmul(uint32_t lhs, uint32_t out, uint32_t rows) {
    Li(1, lhs);
    Li(2, out);
    Li(3, rows);
    Emit(isa::Opcode::MXU_MM, 0, 1, 2, 3, isa::flag::MXU_MM_SWAP, 0);
  }
  void StoreLines(uint32_t vmem, uint32_t count) {
    Li(4, vmem);
    Li(5, count);
    Emit(isa::Opcode::DMA_ST, 0, 0, 4, 5, 0, 1);
  }
  Status Check() {
    std::vector<uint64_t> program = code;
    program.push_back(isa::Encode({static_cast<uint8_t>(isa::Opcode::HALT), 0, 0, 0, 0, 0, 0}));
    SyncCheckOptions options;
    options.lanes = 8;  // results complete 2*8+2 = 18 rows after a multiply's last one
    return CheckUnitSynchronization(program, options);
  }
};

TEST(SyncCheckerTest, MultiplyResultsNeedEnoughLaterRowsOrASync) {
  {  // Storing the results right after the multiply: they may still be in the array.
    CodeBuilder b;
    b.Matmul(0, 100, 20);
    b.StoreLines(100, 20);
    Status status = b.Check();
    EXPECT_NE(status.message().find("read-after-write"), std::string::npos) << status;
  }
  {  // 18 rows of a later multiply, then another multiply issued: complete.
    CodeBuilder b;
    b.Matmul(0, 100, 20);
    b.Matmul(200, 300, 18);
    b.Matmul(200, 300, 1);
    b.StoreLines(100, 20);
    EXPECT_TRUE(b.Check().ok()) << b.Check();
  }
  {  // The later multiply issued but not yet known to have read its rows.
    CodeBuilder b;
    b.Matmul(0, 100, 20);
    b.Matmul(200, 300, 40);
    b.StoreLines(100, 20);
    EXPECT_FALSE(b.Check().ok());
  }
  {  // Too few rows in between (17 < 18), in two multiplies.
    CodeBuilder b;
    b.Matmul(0, 100, 20);
    b.Matmul(200, 300, 9);
    b.Matmul(200, 300, 8);
    b.Matmul(200, 300, 1);
    b.StoreLines(100, 20);
    EXPECT_FALSE(b.Check().ok());
  }
  {  // A SYNC on the MXU always does.
    CodeBuilder b;
    b.Matmul(0, 100, 20);
    b.Emit(isa::Opcode::SYNC, 0, 0, 0, 0, isa::flag::SYNC_MXU, 0);
    b.StoreLines(100, 20);
    EXPECT_TRUE(b.Check().ok()) << b.Check();
  }
}

TEST(SyncCheckerTest, WeightAndLhsReadsEndWhenTheNextMultiplyIssues) {
  auto load_into = [](CodeBuilder* b, uint32_t vmem) {  // DMA_LD 8 lines into `vmem`
    b->Li(4, vmem);
    b->Li(5, 8);
    b->Emit(isa::Opcode::DMA_LD, 0, 0, 4, 5, 0, 1);
  };
  {  // Overwriting weights an MXU_LW may still read.
    CodeBuilder b;
    b.Li(6, 40);
    b.Emit(isa::Opcode::MXU_LW, 0, 6, 0, 0, 0, 0);
    load_into(&b, 40);
    Status status = b.Check();
    EXPECT_NE(status.message().find("write-after-read"), std::string::npos) << status;
  }
  {  // A multiply accepted after it: the load is complete; its own lhs lines are not yet read.
    CodeBuilder b;
    b.Li(6, 40);
    b.Emit(isa::Opcode::MXU_LW, 0, 6, 0, 0, 0, 0);
    b.Matmul(0, 100, 20);
    load_into(&b, 40);
    EXPECT_TRUE(b.Check().ok()) << b.Check();
    load_into(&b, 8);
    EXPECT_FALSE(b.Check().ok());
  }
  {  // The next multiply issued: the lhs lines of the previous one are read.
    CodeBuilder b;
    b.Matmul(0, 100, 20);
    b.Matmul(200, 300, 1);
    load_into(&b, 8);
    EXPECT_TRUE(b.Check().ok()) << b.Check();
  }
}

}  // namespace
}  // namespace tpu::compiler
