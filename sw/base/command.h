// Runs a shell command line to completion and captures what it printed: for tests that use the
// project's command-line tools as a user would (exit status, messages, time).
#pragma once

#include <stdlib.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

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

// A fresh directory under the system's temporary directory for the files a test hands to a tool; removed
// with everything in it when the object goes. ok() is false if it could not be made.
class ScratchDirectory {
 public:
  // `prefix` names the directory: <tmp>/<prefix>.XXXXXX.
  explicit ScratchDirectory(const std::string& prefix) {
    std::string pattern = (std::filesystem::temp_directory_path() / (prefix + ".XXXXXX")).string();
    if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~ScratchDirectory() {
    std::error_code ignored;
    if (ok()) std::filesystem::remove_all(path_, ignored);
  }
  ScratchDirectory(const ScratchDirectory&) = delete;
  ScratchDirectory& operator=(const ScratchDirectory&) = delete;

  bool ok() const { return !path_.empty(); }
  const std::filesystem::path& path() const { return path_; }
  // Writes `text` to the file `name` in the directory and returns its path.
  std::string Write(const std::string& name, const std::string& text) const {
    const std::filesystem::path file = path_ / name;
    std::ofstream(file) << text;
    return file.string();
  }

 private:
  std::filesystem::path path_;
};

}  // namespace tpu
