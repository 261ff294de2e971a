// Tests of the compile entry point: the dump directory, input_output_alias in the program (which
// outputs are written into parameters in place and which are copied), and the HBM check's message.
// Execution of aliased programs is tested in sw/runtime/runtime_test.cc.
#include "compiler/driver/compile.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "compiler/codegen/buffer_assignment.h"
#include "compiler/codegen/prepare.h"
#include "compiler/hlo/parser.h"
#include "compiler/passes/pass.h"

namespace tpu::compiler {
namespace {

std::unique_ptr<hlo::HloModule> Parse(const std::string& text) {
  StatusOr<std::unique_ptr<hlo::HloModule>> module = hlo::ParseHloModule(text);
  EXPECT_TRUE(module.ok()) << module.status();
  return module.ok() ? std::move(module).value() : nullptr;
}

StatusOr<Program> CompileText(const std::string& text, CompileModuleReport* report = nullptr,
                              uint64_t hbm_lines = 0, const std::string& dump_dir = "", bool fuse_elementwise = true) {
  std::unique_ptr<hlo::HloModule> module = Parse(text);
  if (module == nullptr) return InvalidArgument("does not parse");
  CompileModuleOptions options;
  options.codegen.lanes = 8;
  options.codegen.vmem_lines = 1024;
  options.codegen.hbm_lines = hbm_lines;
  options.codegen.fuse_elementwise = fuse_elementwise;
  options.dump_dir = dump_dir;
  return CompileModule(module.get(), options, report);
}

size_t Count(const Program& program, RegionKind kind) {
  size_t count = 0;
  for (const Relocation& reloc : program.relocations) count += reloc.kind == kind;
  return count;
}

// A training-step shape: w is updated in place (the subtract is its last reader), b is returned as it
// is, and the call is inlined by the codegen preparation.
const char kStep[] = R"(HloModule step, input_output_alias={ {0}: (0, {}, must-alias), {1}: (1, {}, must-alias) }
%scale (x: f32[16,16]) -> f32[16,16] {
  %x = f32[16,16]{1,0} parameter(0)
  %half = f32[] constant(0.5)
  %halves = f32[16,16]{1,0} broadcast(f32[] %half), dimensions={}
  ROOT %scaled = f32[16,16]{1,0} multiply(f32[16,16]{1,0} %x, f32[16,16]{1,0} %halves)
}
ENTRY %main (w: f32[16,16], b: f32[16], g: f32[16,16]) -> (f32[16,16], f32[16]) {
  %w = f32[16,16]{1,0} parameter(0)
  %b = f32[16]{0} parameter(1)
  %g = f32[16,16]{1,0} parameter(2)
  %step = f32[16,16]{1,0} call(f32[16,16]{1,0} %g), to_apply=%scale
  %updated = f32[16,16]{1,0} subtract(f32[16,16]{1,0} %w, f32[16,16]{1,0} %step)
  ROOT %out = (f32[16,16]{1,0}, f32[16]{0}) tuple(f32[16,16]{1,0} %updated, f32[16]{0} %b)
}
)";

std::string WithoutAliases(const std::string& text) {
  std::unique_ptr<hlo::HloModule> module = Parse(text);
  module->mutable_input_output_aliases().clear();
  return module->ToString();
}

TEST(CompileModuleTest, DumpsEveryStepAndTheProgram) {
  const std::string dir = ::testing::TempDir() + "/compile_module_dumps";
  std::filesystem::remove_all(dir);
  CompileModuleReport report;
  StatusOr<Program> program = CompileText(kStep, &report, 0, dir);
  ASSERT_TRUE(program.ok()) << program.status();

  // 00-input, one file per pass of the default pipeline, one per preparation pass, the prepared module,
  // program.asm.
  PassPipeline pipeline("expected");
  AddDefaultPasses(&pipeline);
  PassPipeline prepare("expected-prepare");
  ASSERT_TRUE(AddPrepareForCodegenPasses(&prepare, PrepareOptions{}).ok());
  std::vector<std::string> steps = pipeline.pass_names();
  const size_t default_passes = steps.size();
  for (const std::string& pass : prepare.pass_names()) steps.push_back("prepare." + pass);
  steps.push_back("prepare-for-codegen");
  std::vector<std::string> expected = {"00-input.hlo"};
  for (const std::string& step : steps) {
    char prefix[8];
    std::snprintf(prefix, sizeof(prefix), "%02zu-", expected.size());
    expected.push_back(prefix + step + ".hlo");
  }
  expected.push_back("program.asm");
  EXPECT_EQ(report.dumped_files, expected);
  std::vector<std::string> on_disk;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) on_disk.push_back(entry.path().filename());
  std::sort(on_disk.begin(), on_disk.end());
  EXPECT_EQ(on_disk, expected);

  auto read = [&](const std::string& name) {
    std::ifstream in(dir + "/" + name);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  };
  // Every module dump parses; the preparation's first rewrite (the call inlined) shows from its own dump
  // on; the prepared module is the one after the last preparation pass.
  for (size_t i = 0; i + 1 < expected.size(); ++i) {
    EXPECT_TRUE(hlo::ParseHloModule(read(expected[i])).ok()) << expected[i];
  }
  EXPECT_NE(read(expected[default_passes]).find(" call("), std::string::npos);
  EXPECT_EQ(read(expected[default_passes + 1]).find(" call("), std::string::npos);
  EXPECT_EQ(read(expected[expected.size() - 2]), read(expected[expected.size() - 3]));
  const std::string listing = read("program.asm");
  EXPECT_NE(listing.find("# output 0 is written into parameter 0 (input_output_alias)"), std::string::npos) << listing;
  // One line per instruction word after the comments (hex words: no disassembler in this test).
  size_t code_lines = 0;
  std::istringstream lines(listing);
  for (std::string line; std::getline(lines, line);) code_lines += !line.empty() && line[0] != '#';
  EXPECT_EQ(code_lines, program->code.size()) << listing;
  // The code of each step is named: the call was inlined into a multiply, which runs in one loop with
  // the subtract (a loop fusion named after it).
  const size_t step = listing.find("# --- ");
  ASSERT_NE(step, std::string::npos) << listing;
  EXPECT_NE(listing.find("fusion.updated = f32[16,16] fusion\n", step), std::string::npos) << listing;
  EXPECT_EQ(listing.find(" multiply\n"), std::string::npos) << listing;
  ASSERT_FALSE(program->code_ranges.empty());
  EXPECT_EQ(program->code_ranges.back().end + 1, program->code.size());  // then HALT

  // Timings: every pass, then the preparation and codegen.
  ASSERT_EQ(report.steps.size(), pipeline.pass_names().size() + 2);
  EXPECT_EQ(report.steps[report.steps.size() - 2].name, "prepare-for-codegen");
  EXPECT_EQ(report.steps.back().name, "codegen");
  EXPECT_GT(report.total_ms, 0.0);
}

// A dot whose three MXU passes do not fit an IMEM sized for one pass: codegen prepares the module
// again with fewer passes, and the dumps show only that last preparation.
TEST(CompileModuleTest, DumpsOnlyThePreparationWhoseProgramIsKept) {
  const char* text = R"(HloModule dense
ENTRY %main (x: f32[16,16], w: f32[16,16]) -> f32[16,16] {
  %x = f32[16,16]{1,0} parameter(0)
  %w = f32[16,16]{1,0} parameter(1)
  ROOT %d = f32[16,16]{1,0} dot(f32[16,16]{1,0} %x, f32[16,16]{1,0} %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
)";
  auto compile = [&](int dot_passes, uint32_t imem_words, const std::string& dump_dir, CompileModuleReport* report) {
    std::unique_ptr<hlo::HloModule> module = Parse(text);
    CompileModuleOptions options;
    options.codegen.lanes = 8;
    options.codegen.vmem_lines = 1024;
    options.codegen.dot_passes = dot_passes;
    options.codegen.imem_words = imem_words;
    options.dump_dir = dump_dir;
    return CompileModule(module.get(), options, report);
  };
  StatusOr<Program> one_pass = compile(1, 0, "", nullptr);
  ASSERT_TRUE(one_pass.ok()) << one_pass.status();
  const uint32_t imem_words = static_cast<uint32_t>(one_pass->code.size());
  ASSERT_FALSE(compile(3, imem_words, "", nullptr).ok());
  const std::string dir = ::testing::TempDir() + "/compile_module_retry_dumps";
  std::filesystem::remove_all(dir);
  CompileModuleReport report;
  StatusOr<Program> program = compile(0, imem_words, dir, &report);
  ASSERT_TRUE(program.ok()) << program.status();
  EXPECT_EQ(program->code.size(), one_pass->code.size());

  int split_dots_dumps = 0;
  for (const std::string& file : report.dumped_files) split_dots_dumps += file.find("-prepare.split-dots.") != std::string::npos;
  EXPECT_EQ(split_dots_dumps, 1);
  ASSERT_GE(report.dumped_files.size(), 2u);
  std::ifstream in(dir + "/" + report.dumped_files[report.dumped_files.size() - 2]);
  std::stringstream prepared;
  prepared << in.rdbuf();
  EXPECT_EQ(prepared.str().find(".hi_hi"), std::string::npos) << prepared.str();
}

TEST(CompileModuleTest, NoDumpDirectoryWritesNothing) {
  CompileModuleReport report;
  ASSERT_TRUE(CompileText(kStep, &report).ok());
  EXPECT_TRUE(report.dumped_files.empty());
}

TEST(CompileModuleTest, AliasedOutputsAreWrittenIntoTheirParameters) {
  CompileModuleReport aliased_report, plain_report;
  StatusOr<Program> aliased = CompileText(kStep, &aliased_report);
  StatusOr<Program> plain = CompileText(WithoutAliases(kStep), &plain_report);
  ASSERT_TRUE(aliased.ok()) << aliased.status();
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(aliased->output_aliases, (std::vector<int32_t>{0, 1}));
  EXPECT_TRUE(plain->output_aliases.empty());
  EXPECT_EQ(aliased_report.codegen.aliased_outputs, 2u);
  EXPECT_EQ(aliased_report.codegen.alias_copies, 0u);
  // Nothing is written to output regions: the update goes into w, b is already in place (without the
  // alias, b is copied into its output).
  EXPECT_EQ(Count(*aliased, RegionKind::kOutput), 0u);
  EXPECT_GT(Count(*plain, RegionKind::kOutput), 0u);
  EXPECT_LT(aliased->code.size(), plain->code.size());
  // And the outputs need no HBM of their own.
  const uint64_t output_lines = plain->outputs[0].lines + plain->outputs[1].lines;
  EXPECT_EQ(aliased_report.codegen.hbm_lines + output_lines, plain_report.codegen.hbm_lines);
}

TEST(CompileModuleTest, AParameterReadAfterItsUpdateGetsTheUpdateCopiedAtTheEnd) {
  // The dot reads w after `updated` is computed (post order visits the tuple's operands in order).
  const char text[] = R"(HloModule late_read, input_output_alias={ {0}: (0, {}, must-alias) }
ENTRY %main (w: f32[16,16], g: f32[16,16]) -> (f32[16,16], f32[16,16]) {
  %w = f32[16,16]{1,0} parameter(0)
  %g = f32[16,16]{1,0} parameter(1)
  %updated = f32[16,16]{1,0} subtract(f32[16,16]{1,0} %w, f32[16,16]{1,0} %g)
  %product = f32[16,16]{1,0} dot(f32[16,16]{1,0} %w, f32[16,16]{1,0} %g), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %out = (f32[16,16]{1,0}, f32[16,16]{1,0}) tuple(f32[16,16]{1,0} %updated, f32[16,16]{1,0} %product)
}
)";
  CompileModuleReport report;
  StatusOr<Program> program = CompileText(text, &report);
  ASSERT_TRUE(program.ok()) << program.status();
  EXPECT_EQ(program->output_aliases, (std::vector<int32_t>{0, -1}));
  EXPECT_EQ(report.codegen.alias_copies, 1u);
  EXPECT_GT(program->temp_lines, 0u);  // `updated` waits in a temp
}

TEST(CompileModuleTest, BadAliasesAreClearErrors) {
  const char wrong_shape[] = R"(HloModule wrong_shape, input_output_alias={ {0}: (1, {}, must-alias) }
ENTRY %main (a: f32[4,4], b: f32[4]) -> (f32[4,4]) {
  %a = f32[4,4]{1,0} parameter(0)
  %b = f32[4]{0} parameter(1)
  %n = f32[4,4]{1,0} negate(f32[4,4]{1,0} %a)
  ROOT %t = (f32[4,4]{1,0}) tuple(f32[4,4]{1,0} %n)
}
)";
  StatusOr<Program> program = CompileText(wrong_shape);
  ASSERT_FALSE(program.ok());
  EXPECT_EQ(program.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(program.status().message().find("input_output_alias of output {0} to parameter 1"), std::string::npos)
      << program.status();

  const char twice[] = R"(HloModule twice, input_output_alias={ {0}: (0, {}, must-alias), {1}: (0, {}, must-alias) }
ENTRY %main (a: f32[4,4]) -> (f32[4,4], f32[4,4]) {
  %a = f32[4,4]{1,0} parameter(0)
  %n = f32[4,4]{1,0} negate(f32[4,4]{1,0} %a)
  ROOT %t = (f32[4,4]{1,0}, f32[4,4]{1,0}) tuple(f32[4,4]{1,0} %n, f32[4,4]{1,0} %a)
}
)";
  program = CompileText(twice);
  ASSERT_FALSE(program.ok());
  EXPECT_NE(program.status().message().find("already aliased"), std::string::npos) << program.status();

  const char no_output[] = R"(HloModule no_output, input_output_alias={ {3}: (0, {}, must-alias) }
ENTRY %main (a: f32[4,4]) -> (f32[4,4]) {
  %a = f32[4,4]{1,0} parameter(0)
  ROOT %t = (f32[4,4]{1,0}) tuple(f32[4,4]{1,0} %a)
}
)";
  program = CompileText(no_output);
  ASSERT_FALSE(program.ok());
  EXPECT_NE(program.status().message().find("names no array"), std::string::npos) << program.status();
}

TEST(CompileModuleTest, OutOfHbmIsTheTpuMessageListingTheLargestAllocations) {
  const char text[] = R"(HloModule big
ENTRY %main (x: f32[64,64], y: f32[64,64], z: f32[8]) -> f32[64,64] {
  %x = f32[64,64]{1,0} parameter(0)
  %y = f32[64,64]{1,0} parameter(1)
  %z = f32[8]{0} parameter(2)
  %sum = f32[64,64]{1,0} add(f32[64,64]{1,0} %x, f32[64,64]{1,0} %y)
  ROOT %product = f32[64,64]{1,0} multiply(f32[64,64]{1,0} %sum, f32[64,64]{1,0} %sum)
}
)";
  // Unfused, so that `sum` is a temp in HBM (a loop fusion keeps it in VMEM: one allocation less).
  CompileModuleReport report;
  ASSERT_TRUE(CompileText(text, &report, 0, "", false).ok());
  // 8 lanes: a f32[64,64] is 512 lines of 32 bytes; the temp `sum` too; z one line.
  EXPECT_EQ(report.codegen.hbm_lines, 4u * 512 + 1);
  EXPECT_TRUE(CompileText(text, nullptr, 4 * 512 + 1, "", false).ok());
  StatusOr<Program> program = CompileText(text, nullptr, 4 * 512, "", false);
  ASSERT_FALSE(program.ok());
  EXPECT_EQ(program.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(program.status().message(),
            "Ran out of memory in memory space hbm; used: 64.03K; limit: 64.0K\n"
            "Largest allocations in hbm:\n"
            "  1. Size: 16.0K, parameter 0 x f32[64,64]\n"
            "  2. Size: 16.0K, parameter 1 y f32[64,64]\n"
            "  3. Size: 16.0K, output 0 product f32[64,64]\n"
            "  4. Size: 16.0K, temp region (largest values live at its peak: sum f32[64,64])\n"
            "  5. Size: 32B, parameter 2 z f32[8]");
}

TEST(CompileModuleTest, SizesBeyond32BitLineCountsAreReportedTruly) {
  // 10^11 lines of 32 bytes: a 32-bit line count made this 1215752192 lines (36.23G).
  const char parameter[] = R"(HloModule huge
ENTRY %main {
  %p = f32[100000000000,8]{1,0} parameter(0)
  ROOT %n = f32[100000000000,8]{1,0} negate(%p)
}
)";
  StatusOr<Program> program = CompileText(parameter, nullptr, 2097152);
  ASSERT_FALSE(program.ok());
  EXPECT_EQ(program.status().message(),
            "Ran out of memory in memory space hbm; used: 2.91T; limit: 64.0M\n"
            "Largest allocations in hbm:\n"
            "  1. Size: 2.91T, parameter 0 p f32[100000000000,8]");
  // Without an HBM size the limit is what a 32-bit line count addresses.
  EXPECT_EQ(CompileText(parameter).status().code(), StatusCode::kResourceExhausted);
  // A computed value as large, from a small parameter.
  const char value[] = R"(HloModule huge
ENTRY %main {
  %p = f32[8]{0} parameter(0)
  ROOT %b = f32[100000000000,8]{1,0} broadcast(%p), dimensions={1}
}
)";
  StatusOr<Program> broadcast = CompileText(value, nullptr, 2097152);
  ASSERT_FALSE(broadcast.ok());
  EXPECT_NE(broadcast.status().message().find("used: 2.91T; limit: 64.0M"), std::string::npos) << broadcast.status();
}

TEST(CloneModuleTest, CopiesPrintIdenticallyAndIndependently) {
  std::unique_ptr<hlo::HloModule> module = Parse(kStep);
  StatusOr<std::unique_ptr<hlo::HloModule>> copy = hlo::CloneModule(*module);
  ASSERT_TRUE(copy.ok()) << copy.status();
  EXPECT_EQ((*copy)->ToString(), module->ToString());
  // Changing the copy leaves the original as it was: nothing is shared.
  const std::string before = module->ToString();
  (*copy)->entry_computation()->root_instruction()->set_name("renamed");
  (*copy)->mutable_input_output_aliases().clear();
  EXPECT_NE((*copy)->ToString(), before);
  EXPECT_EQ(module->ToString(), before);
}

TEST(HbmMessageTest, MatchesTheRuntimeAllocatorsFormat) {
  EXPECT_EQ(OutOfMemoryMessage("hbm", 9ull << 30, 8ull << 30), "Ran out of memory in memory space hbm; used: 9.0G; limit: 8.0G");
  EXPECT_EQ(HumanReadableBytes(512), "512B");
  EXPECT_EQ(HumanReadableBytes(1536), "1.5K");
  EXPECT_EQ(HumanReadableBytes(uint64_t(7.48 * (1ull << 30))), "7.48G");
}

}  // namespace
}  // namespace tpu::compiler
