// Bad input to `tpuc` is a clear message and exit status 1, never a signal; --help is not an error.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "sw/base/command.h"

namespace {

using tpu::CommandResult;
using tpu::RunCommand;

namespace fs = std::filesystem;

CommandResult RunTpuc(const std::string& arguments, bool stdout_only = false) {
  return RunCommand(std::string(TPUC_BINARY) + " " + arguments + (stdout_only ? " 2>/dev/null" : " 2>&1"));
}

class TpucErrorsTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(scratch_.ok()); }
  std::string WriteHlo(const std::string& name, const std::string& text) { return scratch_.Write(name, text); }
  tpu::ScratchDirectory scratch_{"tpuc_errors_test"};
  const fs::path& dir_ = scratch_.path();
};

bool Contains(const std::string& text, const std::string& fragment) { return text.find(fragment) != std::string::npos; }

TEST_F(TpucErrorsTest, HelpPrintsTheUsageOnStdoutAndSucceeds) {
  for (const char* arguments : {"--help", "-h"}) {
    const CommandResult run = RunTpuc(arguments, /*stdout_only=*/true);
    EXPECT_EQ(run.exit_code, 0) << arguments << "\n" << run.output;
    EXPECT_TRUE(Contains(run.output, "usage: tpuc")) << arguments << "\n" << run.output;
  }
}

TEST_F(TpucErrorsTest, InstructionUsingItselfIsAnErrorNotAnAbort) {
  const CommandResult run = RunTpuc(
      WriteHlo("self.hlo", "HloModule m\nENTRY e {\n  a = f32[4] parameter(0)\n  ROOT b = f32[4] add(a, b)\n}\n") +
      " --config=tiny");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_TRUE(Contains(run.output, "line 4, column 26: instruction %b uses itself as an operand")) << run.output;
}

TEST_F(TpucErrorsTest, UnsupportedElementTypeIsNamed) {
  const CommandResult run =
      RunTpuc(WriteHlo("c128.hlo", "HloModule m\nENTRY e {\n  ROOT p = c128[4] parameter(0)\n}\n") + " --config=tiny");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_TRUE(Contains(run.output, "UnimplementedError: element type c128 of parameter p is not supported by this TPU"))
      << run.output;
}

TEST_F(TpucErrorsTest, HugeParameterIsOutOfHbmWithItsTrueSize) {
  const CommandResult run = RunTpuc(WriteHlo("huge.hlo", "HloModule m\nENTRY e {\n  p = f32[100000000000,8] parameter(0)\n"
                                                     "  ROOT n = f32[100000000000,8] negate(p)\n}\n") +
                                " --config=tiny");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_TRUE(Contains(run.output, "Ran out of memory in memory space hbm; used: 2.91T; limit: 64.0M")) << run.output;
}

TEST_F(TpucErrorsTest, DirectoryOrMissingFileIsSaidAsSuch) {
  const CommandResult directory = RunTpuc(dir_.string() + " --config=tiny");
  EXPECT_EQ(directory.exit_code, 1) << directory.output;
  EXPECT_TRUE(Contains(directory.output, "is a directory, not an HLO file")) << directory.output;
  const CommandResult missing = RunTpuc((dir_ / "missing.hlo").string() + " --config=tiny");
  EXPECT_EQ(missing.exit_code, 1) << missing.output;
  EXPECT_TRUE(Contains(missing.output, "no such file")) << missing.output;
}

}  // namespace
