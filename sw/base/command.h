// Runs a shell command line to completion and captures what it printed: for tests that use the
// project's command-line tools as a user would (exit status, messages, time).
#pragma once

#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <string>

namespace tpu {

struct CommandResult {
  int exit_code = -1;  // -1: could not start, or ended by a signal
  std::string output;  // stdout (and stderr where the command line redirects it there)
  double seconds = 0;  // wall time
};

// `command` runs under /bin/sh, so it may set variables and redirect ("X=1 tool args 2>&1").
inline CommandResult RunCommand(const std::string& command) {
  CommandResult result;
  const auto start = std::chrono::steady_clock::now();
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  size_t read;
  while ((read = fread(buffer, 1, sizeof(buffer), pipe)) > 0) result.output.append(buffer, read);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace tpu
