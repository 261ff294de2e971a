// Small file helpers shared by the tools and the Python extension.
#pragma once

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>

#include "sw/base/status.h"

namespace tpu {

// Writes `text` to `path` (replacing it); InvalidArgument naming the path and the reason otherwise.
inline Status WriteTextFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) return InvalidArgument("cannot write " + path + ": " + std::strerror(errno));
  return OkStatus();
}

}  // namespace tpu
