// `tpusim run` output lines that scripts parse: the counters and the MXU utilization in percent.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <regex>
#include <string>

namespace {

std::string RunTpusim(const std::string& arguments, int* exit_code) {
  const std::string command = std::string(TPUSIM_BINARY) + " " + arguments + " 2>&1";
  std::string output;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return output;
  char buffer[4096];
  size_t read;
  while ((read = fread(buffer, 1, sizeof(buffer), pipe)) > 0) output.append(buffer, read);
  const int status = pclose(pipe);
  *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return output;
}

double Field(const std::string& output, const std::string& key) {
  std::smatch match;
  if (!std::regex_search(output, match, std::regex("(^|\n)" + key + ": ([0-9.]+)\n"))) return -1.0;
  return std::stod(match[2]);
}

// MAC slots used / MAC slots available = MXU busy cycles * LANES^2 / (cycles * LANES^2).
TEST(TpusimOutputTest, UtilizationPercentIsBusyCyclesOverCycles) {
  for (const char* file : {"/sim/dense_layer.hlo", "/../shared/hlo/maml_flax_train_step.hlo"}) {
    int exit_code = -1;
    const std::string output =
        RunTpusim("run " + std::string(TPU_SOURCE_DIR) + file + " --backend=model --seed=3", &exit_code);
    ASSERT_EQ(exit_code, 0) << output;
    const double cycles = Field(output, "cycles"), busy = Field(output, "mxu_busy_cycles");
    const double pct = Field(output, "mxu_utilization_pct");
    ASSERT_GT(cycles, 0.0) << output;
    ASSERT_GT(busy, 0.0) << output;
    ASSERT_GE(pct, 0.0) << output;
    EXPECT_NEAR(pct, 100.0 * busy / cycles, 0.005 + 1e-9) << output;
    EXPECT_LE(pct, 100.0);
    // The older line stays for readers of earlier logs.
    EXPECT_NE(output.find("\nmxu_utilization: "), std::string::npos) << output;
  }
}

}  // namespace
