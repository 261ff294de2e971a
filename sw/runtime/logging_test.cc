#include "sw/runtime/logging.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace tpu::logging {
namespace {

std::string MakeTempDir() {
  char pattern[] = "/tmp/tpusim_log_test.XXXXXX";
  const char* dir = mkdtemp(pattern);
  EXPECT_NE(dir, nullptr);
  return dir ? dir : "";
}

std::vector<std::string> FilesIn(const std::string& dir) {
  std::vector<std::string> files;
  if (DIR* handle = opendir(dir.c_str())) {
    while (dirent* entry = readdir(handle)) {
      const std::string name = entry->d_name;
      if (name != "." && name != "..") files.push_back(dir + "/" + name);
    }
    closedir(handle);
  }
  return files;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(LoggingTest, WritesGlogStyleLinesIntoTheLogDirectory) {
  const std::string dir = MakeTempDir();
  LogOptions options;
  options.log_dir = dir;
  Logger logger(options);
  logger.Log(INFO, "sw/runtime/client.cc", 42, "hello tpu");
  logger.Log(WARNING, "x.cc", 7, "careful");
  const std::vector<std::string> files = FilesIn(dir);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0], logger.current_file());
  EXPECT_NE(files[0].find("/tpusim."), std::string::npos);
  const std::string text = ReadAll(files[0]);
  EXPECT_EQ(text[0], 'I');
  EXPECT_NE(text.find("client.cc:42] hello tpu\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nW"), std::string::npos) << text;
  EXPECT_NE(text.find("x.cc:7] careful"), std::string::npos) << text;
}

TEST(LoggingTest, MinLogLevelFiltersTheFile) {
  const std::string dir = MakeTempDir();
  LogOptions options;
  options.log_dir = dir;
  options.min_log_level = ERROR;
  Logger logger(options);
  logger.Log(INFO, "a.cc", 1, "not this");
  logger.Log(WARNING, "a.cc", 2, "nor this");
  EXPECT_TRUE(FilesIn(dir).empty());
  logger.Log(ERROR, "a.cc", 3, "this");
  ASSERT_EQ(FilesIn(dir).size(), 1u);
  const std::string text = ReadAll(logger.current_file());
  EXPECT_EQ(text.find("not this"), std::string::npos);
  EXPECT_NE(text.find("this"), std::string::npos);
}

TEST(LoggingTest, StderrGetsOnlyMessagesAtItsLevel) {
  LogOptions options;
  options.log_dir = "disabled";
  options.stderr_log_level = WARNING;
  Logger logger(options);
  ::testing::internal::CaptureStderr();
  logger.Log(INFO, "a.cc", 1, "quiet info");
  logger.Log(WARNING, "a.cc", 2, "loud warning");
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(err.find("quiet info"), std::string::npos) << err;
  EXPECT_NE(err.find("loud warning"), std::string::npos) << err;
}

TEST(LoggingTest, DisabledWritesNoFile) {
  const std::string dir = MakeTempDir();
  LogOptions options;
  options.log_dir = "disabled";
  Logger logger(options);
  logger.Log(ERROR, "a.cc", 1, "message");
  EXPECT_EQ(logger.current_file(), "");
  EXPECT_TRUE(FilesIn(dir).empty());
}

TEST(LoggingTest, RotatesWhenTheFileReachesTheLimit) {
  const std::string dir = MakeTempDir();
  LogOptions options;
  options.log_dir = dir;
  options.max_log_size_bytes = 300;
  Logger logger(options);
  for (int i = 0; i < 20; ++i) logger.Log(INFO, "a.cc", i, std::string(60, 'x'));
  const std::vector<std::string> files = FilesIn(dir);
  EXPECT_GE(files.size(), 4u);
  for (const std::string& file : files) {
    struct stat info;
    ASSERT_EQ(stat(file.c_str(), &info), 0);
    EXPECT_LE(info.st_size, 300) << file;
  }
}

TEST(LoggingTest, CreatesTheDirectoryButNotItsParents) {
  const std::string dir = MakeTempDir();
  LogOptions options;
  options.log_dir = dir + "/logs";
  Logger created(options);
  created.Log(INFO, "a.cc", 1, "m");
  EXPECT_EQ(FilesIn(dir + "/logs").size(), 1u);

  options.log_dir = dir + "/missing/logs";
  Logger refused(options);
  ::testing::internal::CaptureStderr();
  refused.Log(INFO, "a.cc", 1, "m");
  refused.Log(INFO, "a.cc", 2, "m");
  const std::string err = ::testing::internal::GetCapturedStderr();
  // One complaint, then logging is off; the program goes on.
  EXPECT_NE(err.find("cannot create log directory"), std::string::npos) << err;
  EXPECT_EQ(err.find("cannot create log directory"), err.rfind("cannot create log directory"));
  EXPECT_EQ(refused.current_file(), "");
}

TEST(LoggingTest, ReadsTheTpuEnvironmentVariables) {
  setenv("TPU_LOG_DIR", "/tmp/somewhere", 1);
  setenv("TPU_MIN_LOG_LEVEL", "2", 1);
  setenv("TPU_STDERR_LOG_LEVEL", "1", 1);
  setenv("TPU_MAX_LOG_SIZE_MB", "5", 1);
  LogOptions options = LogOptions::FromEnvironment();
  EXPECT_EQ(options.log_dir, "/tmp/somewhere");
  EXPECT_EQ(options.min_log_level, 2);
  EXPECT_EQ(options.stderr_log_level, 1);
  EXPECT_EQ(options.max_log_size_bytes, 5ull << 20);

  setenv("TPU_MIN_LOG_LEVEL", "7", 1);  // out of range: the default stays
  unsetenv("TPU_LOG_DIR");
  unsetenv("TPU_STDERR_LOG_LEVEL");
  unsetenv("TPU_MAX_LOG_SIZE_MB");
  ::testing::internal::CaptureStderr();
  options = LogOptions::FromEnvironment();
  ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(options.log_dir, "/tmp/tpu_logs");
  EXPECT_EQ(options.min_log_level, 0);
  EXPECT_EQ(options.stderr_log_level, 3);
  EXPECT_EQ(options.max_log_size_bytes, 1024ull << 20);
  unsetenv("TPU_MIN_LOG_LEVEL");
}

}  // namespace
}  // namespace tpu::logging
