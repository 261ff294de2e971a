// The tpusim command line as a subprocess, for the system tests: run it, read what it wrote.
// TPUSIM_BINARY (the path of the tpusim executable) is defined by tb/system/CMakeLists.txt.
#pragma once

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "sw/base/command.h"

namespace tpu::system_test {

using TpusimRun = CommandResult;

// Runs `tpusim ARGUMENTS` (e.g. "run FILE.hlo --backend=rtl") to completion; output has stdout and stderr.
inline TpusimRun RunTpusim(const std::string& arguments) {
  return RunCommand(std::string(TPUSIM_BINARY) + " " + arguments + " 2>&1");
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
