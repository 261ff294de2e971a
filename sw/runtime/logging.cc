#include "sw/runtime/logging.h"

#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

namespace tpu::logging {
namespace {

// An integer environment variable in [min, max], or `fallback` (with a warning if it was set but bad).
int64_t IntFromEnvironment(const char* name, int64_t fallback, int64_t min, int64_t max) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  errno = 0;
  const long long value = std::strtoll(text, &end, 10);
  if (errno != 0 || *end != '\0' || value < min || value > max) {
    std::fprintf(stderr, "tpusim: ignoring %s=%s (expected an integer in [%lld, %lld])\n", name, text,
                 static_cast<long long>(min), static_cast<long long>(max));
    return fallback;
  }
  return value;
}

std::string Basename(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash ? slash + 1 : path;
}

const char kSeverityLetters[] = "IWEF";

}  // namespace

LogOptions LogOptions::FromEnvironment() {
  LogOptions options;
  if (const char* dir = std::getenv("TPU_LOG_DIR"); dir != nullptr && *dir != '\0') options.log_dir = dir;
  options.min_log_level = static_cast<int>(IntFromEnvironment("TPU_MIN_LOG_LEVEL", 0, 0, 3));
  options.stderr_log_level = static_cast<int>(IntFromEnvironment("TPU_STDERR_LOG_LEVEL", 3, 0, 3));
  options.max_log_size_bytes =
      static_cast<uint64_t>(IntFromEnvironment("TPU_MAX_LOG_SIZE_MB", 1024, 1, 1 << 20)) << 20;
  return options;
}

Logger& Logger::Get() {
  static Logger* logger = new Logger(LogOptions::FromEnvironment());  // never destroyed: usable at exit
  return *logger;
}

Logger::Logger(LogOptions options) : options_(std::move(options)) {}

Logger::~Logger() {
  if (file_) std::fclose(file_);
}

void Logger::Configure(LogOptions options) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (file_) std::fclose(file_);
  file_ = nullptr;
  file_path_.clear();
  file_bytes_ = 0;
  rotation_ = 0;
  file_disabled_ = false;
  options_ = std::move(options);
}

std::string Logger::current_file() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return file_path_;
}

bool Logger::OpenFile() {
  if (options_.log_dir.empty() || options_.log_dir == "disabled" || file_disabled_) return false;
  struct stat info;
  if (stat(options_.log_dir.c_str(), &info) != 0) {
    // Only the directory itself is created, not its parents, as libtpu does.
    if (mkdir(options_.log_dir.c_str(), 0755) != 0 && errno != EEXIST) {
      std::fprintf(stderr, "tpusim: cannot create log directory %s: %s; file logging disabled\n",
                   options_.log_dir.c_str(), std::strerror(errno));
      file_disabled_ = true;
      return false;
    }
  } else if (!S_ISDIR(info.st_mode)) {
    std::fprintf(stderr, "tpusim: log directory %s is not a directory; file logging disabled\n",
                 options_.log_dir.c_str());
    file_disabled_ = true;
    return false;
  }
  char host[256] = "localhost";
  gethostname(host, sizeof(host) - 1);
  const char* user = std::getenv("USER");
  const std::time_t now = std::time(nullptr);
  std::tm local;
  localtime_r(&now, &local);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &local);
  std::string path = options_.log_dir + "/tpusim." + host + "." + (user ? user : "unknown") + ".log." + stamp +
                     "." + std::to_string(getpid());
  if (rotation_ > 0) path += "." + std::to_string(rotation_);
  file_ = std::fopen(path.c_str(), "a");
  if (file_ == nullptr) {
    std::fprintf(stderr, "tpusim: cannot open log file %s: %s; file logging disabled\n", path.c_str(),
                 std::strerror(errno));
    file_disabled_ = true;
    return false;
  }
  file_path_ = path;
  file_bytes_ = 0;
  return true;
}

void Logger::Log(Severity severity, const char* file, int line, const std::string& message) {
  const int level = severity < INFO ? INFO : (severity > FATAL ? FATAL : severity);
  std::lock_guard<std::mutex> lock(mutex_);
  const bool to_file = level >= options_.min_log_level;
  const bool to_stderr = level >= options_.stderr_log_level;
  if (!to_file && !to_stderr) return;

  struct timeval now;
  gettimeofday(&now, nullptr);
  std::tm local;
  localtime_r(&now.tv_sec, &local);
  char prefix[96];
  std::snprintf(prefix, sizeof(prefix), "%c%02d%02d %02d:%02d:%02d.%06ld %6d ", kSeverityLetters[level],
                local.tm_mon + 1, local.tm_mday, local.tm_hour, local.tm_min, local.tm_sec,
                static_cast<long>(now.tv_usec), static_cast<int>(getpid()));
  const std::string text = prefix + Basename(file) + ":" + std::to_string(line) + "] " + message + "\n";

  if (to_stderr) std::fputs(text.c_str(), stderr);
  if (!to_file) return;
  if (file_ != nullptr && file_bytes_ + text.size() > options_.max_log_size_bytes && file_bytes_ > 0) {
    std::fclose(file_);
    file_ = nullptr;
    ++rotation_;
  }
  if (file_ == nullptr && !OpenFile()) return;
  std::fputs(text.c_str(), file_);
  std::fflush(file_);
  file_bytes_ += text.size();
}

}  // namespace tpu::logging
