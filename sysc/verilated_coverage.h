// Writes the coverage a verilated model has counted (builds configured with -DTPU_COVERAGE=ON, where
// Verilator instruments line and toggle coverage and defines VM_COVERAGE=1 for the sources of every target
// it verilates). `make coverage` (tb/coverage/run.sh) merges the files and reports on them.
//
// A context's coverage points are pointers into its models' counters, so the owner of a model calls
// WriteVerilatedCoverage while the model still exists: a bench when it destroys its model, the SystemC
// platform (whose models live as long as the process) at exit. Nothing is written unless TPU_COVERAGE_DIR
// names a directory, and every call writes a file of its own there (<pid>-<n>.dat), so tests running in
// parallel never share one.
#pragma once

#if VM_COVERAGE
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <string>

#include "verilated.h"
#include "verilated_cov.h"
#endif

class VerilatedContext;

namespace tpu {

// Writes the counts of `context`'s models and forgets its points (a model destroyed after this call leaves
// nothing dangling behind).
inline void WriteVerilatedCoverage(VerilatedContext* context) {
#if VM_COVERAGE
  const char* dir = std::getenv("TPU_COVERAGE_DIR");
  if (dir == nullptr || *dir == '\0') return;
  static std::atomic<unsigned> files{0};
  const std::string path =
      std::string(dir) + "/" + std::to_string(getpid()) + "-" + std::to_string(files++) + ".dat";
  context->coveragep()->write(path.c_str());
  context->coveragep()->clear();
#else
  (void)context;
#endif
}

}  // namespace tpu
