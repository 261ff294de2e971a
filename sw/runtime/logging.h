// A small logger configured like libtpu's (Cloud TPU troubleshooting guide, "debug logs"):
//   TPU_LOG_DIR           directory of the log files, default /tmp/tpu_logs. Created if missing (parents
//                         are not); if it cannot be created a message goes to stderr, the program goes on
//                         and file logging is off. "disabled" turns file logging off.
//   TPU_MIN_LOG_LEVEL     lowest severity written to the file: 0 INFO, 1 WARNING, 2 ERROR, 3 FATAL (default 0)
//   TPU_STDERR_LOG_LEVEL  lowest severity also written to stderr (default 3)
//   TPU_MAX_LOG_SIZE_MB   a new file is started when the current one reaches about this size (default 1024)
//
// Lines are glog-style: `I1122 05:10:00.123456  4242 runtime.cc:42] message`. Files are named
// tpusim.<host>.<user>.log.<yyyymmdd-hhmmss>.<pid>[.<n>] with n counting rotations.
#pragma once

#include <cstdint>
#include <mutex>
#include <sstream>
#include <string>

namespace tpu::logging {

enum Severity { INFO = 0, WARNING = 1, ERROR = 2, FATAL = 3 };

struct LogOptions {
  std::string log_dir = "/tmp/tpu_logs";  // "disabled" or empty: no file logging
  int min_log_level = 0;
  int stderr_log_level = 3;
  uint64_t max_log_size_bytes = 1024ull << 20;

  // The options the TPU_* environment variables select (invalid values keep the defaults, with a
  // warning on stderr).
  static LogOptions FromEnvironment();
};

class Logger {
 public:
  // The process-wide logger, configured from the environment on first use.
  static Logger& Get();

  explicit Logger(LogOptions options);
  ~Logger();
  Logger(const Logger&) = delete;
  Logger& operator=(const Logger&) = delete;

  // Replaces the configuration (closes the current file; the next message opens a new one).
  void Configure(LogOptions options);
  const LogOptions& options() const { return options_; }

  void Log(Severity severity, const char* file, int line, const std::string& message);

  // Path of the file currently written ("" when file logging is off or nothing was logged yet).
  std::string current_file() const;

 private:
  bool OpenFile();  // with mutex_ held

  mutable std::mutex mutex_;
  LogOptions options_;
  bool file_disabled_ = false;  // set after a failure to create the directory or file
  std::FILE* file_ = nullptr;
  std::string file_path_;
  uint64_t file_bytes_ = 0;
  int rotation_ = 0;
};

// Collects one message and hands it to the logger when destroyed.
class LogMessage {
 public:
  LogMessage(Severity severity, const char* file, int line) : severity_(severity), file_(file), line_(line) {}
  ~LogMessage() { Logger::Get().Log(severity_, file_, line_, stream_.str()); }
  std::ostringstream& stream() { return stream_; }

 private:
  Severity severity_;
  const char* file_;
  int line_;
  std::ostringstream stream_;
};

}  // namespace tpu::logging

// TPU_LOG(INFO) << "..."; FATAL logs like ERROR and does not abort (the runtime returns Statuses instead).
#define TPU_LOG(severity) ::tpu::logging::LogMessage(::tpu::logging::severity, __FILE__, __LINE__).stream()
