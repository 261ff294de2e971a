// Bad input to `tpusim` is a clear message and exit status 1, never a signal: the built binary is run on
// broken modules, impossible sizes, unsupported types and bad paths.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "sw/base/command.h"

namespace {

using tpu::CommandResult;
using tpu::RunCommand;

namespace fs = std::filesystem;

// A fresh directory per test, removed at the end.
class TpusimErrorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(scratch_.ok());
    fs::create_directory(log_dir_);
  }

  std::string WriteHlo(const std::string& name, const std::string& text) { return scratch_.Write(name, text); }

  // Runs tpusim with the log directory of this test; stderr joins stdout unless `stdout_only`.
  CommandResult Run(const std::string& arguments, bool stdout_only = false) {
    return RunCommand("TPU_LOG_DIR=" + log_dir_.string() + " " + std::string(TPUSIM_BINARY) + " " + arguments +
                      (stdout_only ? " 2>/dev/null" : " 2>&1"));
  }

  // Everything the runs of this test wrote to the TPU_LOG_DIR log files.
  std::string Logs() const {
    std::string all;
    for (const auto& entry : fs::directory_iterator(log_dir_)) {
      std::ifstream in(entry.path());
      std::stringstream text;
      text << in.rdbuf();
      all += text.str();
    }
    return all;
  }

  tpu::ScratchDirectory scratch_{"tpusim_errors_test"};
  const fs::path& dir_ = scratch_.path();
  const fs::path log_dir_ = dir_ / "logs";
};

const char kSelfUse[] = "HloModule m\nENTRY e {\n  a = f32[4] parameter(0)\n  ROOT b = f32[4] add(a, b)\n}\n";

bool Contains(const std::string& text, const std::string& fragment) { return text.find(fragment) != std::string::npos; }

TEST_F(TpusimErrorsTest, InstructionUsingItselfIsAParseErrorNotAnAbort) {
  const CommandResult run = Run("run " + WriteHlo("self.hlo", kSelfUse) + " --backend=model --config=tiny");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_TRUE(Contains(run.output, "line 4, column 26: instruction %b uses itself as an operand")) << run.output;
  const CommandResult cycle = Run("run " +
                              WriteHlo("cycle.hlo", "HloModule m\nENTRY e {\n  a = f32[4] parameter(0)\n"
                                                    "  b = f32[4] add(a, c)\n  ROOT c = f32[4] multiply(b, b)\n}\n") +
                              " --backend=model --config=tiny");
  EXPECT_EQ(cycle.exit_code, 1) << cycle.output;
  EXPECT_TRUE(Contains(cycle.output, "instructions %b and %c form a cycle")) << cycle.output;
}

TEST_F(TpusimErrorsTest, HugeParameterIsOutOfHbmWithItsTrueSizeBeforeAnyHostAllocation) {
  // 10^11 rows of one 32-byte line on tiny: 2.91T (a 32-bit line count made it 36.23G).
  const CommandResult huge = Run("run " +
                             WriteHlo("huge.hlo", "HloModule m\nENTRY e {\n  p = f32[100000000000,8] parameter(0)\n"
                                                  "  ROOT n = f32[100000000000,8] negate(p)\n}\n") +
                             " --backend=model --config=tiny");
  EXPECT_EQ(huge.exit_code, 1) << huge.output;
  EXPECT_TRUE(Contains(huge.output, "ResourceExhaustedError: Ran out of memory in memory space hbm; used: 2.91T; "
                                    "limit: 64.0M"))
      << huge.output;
  // 6.4 GB of arguments used to be filled on the host (32 s) before the HBM check.
  const CommandResult large = Run("run " +
                              WriteHlo("large.hlo", "HloModule m\nENTRY e {\n  p = f32[200000000,8] parameter(0)\n"
                                                    "  ROOT n = f32[200000000,8] negate(p)\n}\n") +
                              " --backend=model --config=tiny");
  EXPECT_EQ(large.exit_code, 1) << large.output;
  // Parameter and output: 5.96G each.
  EXPECT_TRUE(Contains(large.output, "Ran out of memory in memory space hbm; used: 11.92G; limit: 64.0M")) << large.output;
  EXPECT_TRUE(Contains(large.output, "Size: 5.96G, parameter 0 p f32[200000000,8]")) << large.output;
  EXPECT_LT(large.seconds, 10.0) << large.output;
}

TEST_F(TpusimErrorsTest, UnsupportedElementTypeIsNamed) {
  const CommandResult run =
      Run("run " + WriteHlo("c64.hlo", "HloModule m\nENTRY e {\n  ROOT p = c64[4] parameter(0)\n}\n") +
          " --backend=model --config=tiny");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_TRUE(Contains(run.output, "UnimplementedError: element type c64 of parameter p is not supported by this TPU"))
      << run.output;
}

TEST_F(TpusimErrorsTest, HelpPrintsTheUsageOnStdoutAndSucceeds) {
  for (const char* arguments : {"--help", "-h", "run --help"}) {
    const CommandResult run = Run(arguments, /*stdout_only=*/true);
    EXPECT_EQ(run.exit_code, 0) << arguments << "\n" << run.output;
    EXPECT_TRUE(Contains(run.output, "usage:")) << arguments << "\n" << run.output;
  }
}

TEST_F(TpusimErrorsTest, UnwritableOutputsDirectoryFailsBeforeTheRun) {
  const std::string dense = std::string(TPU_SOURCE_DIR) + "/sim/dense_layer.hlo";
  const std::string file = WriteHlo("not_a_directory", "");
  for (const std::string& outputs : {std::string("/proc/tpusim_outputs"), file + "/outputs"}) {
    const CommandResult run = Run("run " + dense + " --backend=model --config=tiny --outputs=" + outputs);
    EXPECT_EQ(run.exit_code, 1) << run.output;
    EXPECT_TRUE(Contains(run.output, "--outputs=" + outputs + ": cannot")) << run.output;
    EXPECT_FALSE(Contains(run.output, "cycles:")) << "the run went ahead:\n" << run.output;
  }
}

TEST_F(TpusimErrorsTest, DirectoryOrMissingFileIsSaidAsSuch) {
  const CommandResult directory = Run("run " + dir_.string() + " --backend=model --config=tiny");
  EXPECT_EQ(directory.exit_code, 1) << directory.output;
  EXPECT_TRUE(Contains(directory.output, dir_.string() + " is a directory, not an HLO file")) << directory.output;
  EXPECT_FALSE(Contains(directory.output, "HloModule")) << directory.output;
  const CommandResult missing = Run("run " + (dir_ / "missing.hlo").string() + " --backend=model --config=tiny");
  EXPECT_EQ(missing.exit_code, 1) << missing.output;
  EXPECT_TRUE(Contains(missing.output, "missing.hlo: no such file")) << missing.output;
}

TEST_F(TpusimErrorsTest, ParseAndCompileErrorsReachTheLog) {
  EXPECT_EQ(Run("run " + WriteHlo("self.hlo", kSelfUse) + " --backend=model --config=tiny").exit_code, 1);
  // The HBM check runs in the compiler.
  EXPECT_EQ(Run("run " +
                WriteHlo("large.hlo", "HloModule m\nENTRY e {\n  p = f32[200000000,8] parameter(0)\n"
                                      "  ROOT n = f32[200000000,8] negate(p)\n}\n") +
                " --backend=model --config=tiny")
                .exit_code,
            1);
  const std::string logs = Logs();
  EXPECT_TRUE(Contains(logs, "\nE") || logs.rfind("E", 0) == 0) << logs;  // glog-style ERROR lines
  EXPECT_TRUE(Contains(logs, "instruction %b uses itself as an operand")) << logs;
  EXPECT_TRUE(Contains(logs, "Ran out of memory in memory space hbm")) << logs;
}

}  // namespace

// The waveform window counts the program's cycles; a start past the program's end is an error (with the
// program's length), not an empty file.
TEST_F(TpusimErrorsTest, TraceWindowPastTheEndOfTheProgramIsAnError) {
  const std::string fst = (dir_ / "late.fst").string();
  const CommandResult run = Run("run " + std::string(TPU_SOURCE_DIR) + "/sim/dense_layer.hlo --backend=rtl --trace=" +
                                fst + " --trace-start=100000000");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_TRUE(Contains(run.output, "--trace-start=100000000 is past the end of the program")) << run.output;
  EXPECT_FALSE(fs::exists(fst)) << "no empty waveform is left behind";
}
