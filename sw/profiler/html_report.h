// The HTML report of a profiled run: one self-contained page (inline SVG, no script, no external file)
// with the run's figures, a utilization timeline (the share of each bin of cycles in which the MXU
// streamed rows, the VPU wrote lines and the DMA unit moved data, above a band of the HLO operations),
// the op profile and the findings.
#pragma once

#include <string>
#include <vector>

#include "sw/driver/execution_profile.h"
#include "sw/profiler/op_profile.h"

namespace tpu::profiler {

// Colors of the timeline's unit curves, by ProfileUnit (tests look for them in a screenshot).
inline constexpr const char* kUnitColors[kProfileUnits] = {"#1f77b4", "#d62728", "#2ca02c"};

struct HtmlReportOptions {
  std::string title;      // e.g. the HLO file
  std::string subtitle;   // e.g. "model backend, v2, seed 3"
  int bins = 240;         // timeline resolution
  size_t top_ops = 40;    // rows of the op table
};

// Per bin of the run's cycles, the busy share [0, 1] of each unit (from the merged unit slices).
std::vector<std::vector<double>> UtilizationTimeline(const OpProfile& ops, const ExecutionProfile& profile, int bins);

std::string HtmlReport(const OpProfile& ops, const ExecutionProfile& profile, const std::vector<Finding>& findings,
                       const HtmlReportOptions& options);

}  // namespace tpu::profiler
