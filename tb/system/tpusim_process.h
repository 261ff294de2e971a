// The tpusim command line as a subprocess, for the system tests: run it, read what it wrote.
// TPUSIM_BINARY (the path of the tpusim executable) is defined by tb/system/CMakeLists.txt.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace tpu::system_test {

struct TpusimRun {
  int exit_code = -1;   // -1: could not start, or killed by a signal
  std::string output;   // stdout and stderr
  double seconds = 0;   // wall time of the run
};

// Runs `tpusim ARGUMENTS` (e.g. "run FILE.hlo --backend=rtl") to completion.
inline TpusimRun RunTpusim(const std::string& arguments) {
  const std::string command = std::string(TPUSIM_BINARY) + " " + arguments + " 2>&1";
  TpusimRun run;
  const auto start = std::chrono::steady_clock::now();
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return run;
  char buffer[4096];
  size_t read;
  while ((read = fread(buffer, 1, sizeof(buffer), pipe)) > 0) run.output.append(buffer, read);
  const int status = pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return run;
}

inline std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// A new directory under /tmp named after `test` (falls back to /tmp itself).
inline std::string MakeTempDir(const std::string& test) {
  std::string pattern = "/tmp/tpusim_" + test + ".XXXXXX";
  const char* dir = mkdtemp(pattern.data());
  return dir ? dir : "/tmp";
}

}  // namespace tpu::system_test
