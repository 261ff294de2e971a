// Trace files of a profiled run in the Chrome trace event format (JSON; opens in Perfetto and
// chrome://tracing): the device as one process with a track of HLO operations and one per unit (DMA, MXU,
// VPU), and the host as another process with the steps the tool took (compile, transfers, execute).
//
// Device tracks are in device time: cycle c of the run is at c / clock_ghz nanoseconds. The host track is
// in host wall time (a simulated run takes far longer on the host than on the device it models). Unit
// intervals of one operation that touch or overlap are merged into one slice (with their summed lines),
// so a slice is a stretch in which the unit worked without a break for that operation.
#pragma once

#include <string>
#include <vector>

#include "sw/driver/execution_profile.h"
#include "sw/profiler/op_profile.h"

namespace tpu::profiler {

struct HostEvent {
  std::string name;  // "compile", "transfer to device", ...
  double start_us = 0, duration_us = 0;
};

struct TraceOptions {
  std::string device_name = "TPU:0";
  double clock_ghz = 1.0;  // the platform's clock (docs/architecture.md)
};

std::string ChromeTraceJson(const OpProfile& ops, const ExecutionProfile& profile, const std::vector<HostEvent>& host,
                            const TraceOptions& options);

// A merged unit slice of the timeline (what the unit tracks hold), in cycles.
struct UnitSlice {
  int unit = 0;
  size_t op = 0;  // index into OpProfile::ops
  uint64_t begin = 0, end = 0, lines = 0;
};
std::vector<UnitSlice> MergeUnitIntervals(const OpProfile& ops, const ExecutionProfile& profile);

// Quotes `text` as a JSON string.
std::string JsonString(const std::string& text);

}  // namespace tpu::profiler
