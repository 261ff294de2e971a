#include "sw/profiler/trace_writer.h"

#include <algorithm>
#include <cstdio>

namespace tpu::profiler {
namespace {

constexpr int kDevicePid = 1;
constexpr int kHostPid = 2;
constexpr int kOpsTid = 1;
int UnitTid(int unit) { return 2 + unit; }

std::string Number(double value) {
  char buffer[48];
  std::snprintf(buffer, sizeof(buffer), "%.6g", value);
  return buffer;
}

// The operation whose code holds `pc` (ops are ordered and cover the program).
size_t OpOf(const OpProfile& ops, uint32_t pc) {
  size_t low = 0, high = ops.ops.size();
  while (high - low > 1) {
    const size_t mid = (low + high) / 2;
    if (ops.ops[mid].begin <= pc) {
      low = mid;
    } else {
      high = mid;
    }
  }
  return low;
}

std::string Metadata(const char* what, int pid, int tid, const std::string& name) {
  return std::string("{\"ph\":\"M\",\"name\":\"") + what + "\",\"pid\":" + std::to_string(pid) +
         (tid >= 0 ? ",\"tid\":" + std::to_string(tid) : "") + ",\"args\":{\"name\":" + JsonString(name) + "}}";
}

std::string Slice(const std::string& name, const std::string& category, int pid, int tid, double ts, double dur,
                  const std::string& args) {
  return "{\"ph\":\"X\",\"name\":" + JsonString(name) + ",\"cat\":" + JsonString(category) + ",\"pid\":" +
         std::to_string(pid) + ",\"tid\":" + std::to_string(tid) + ",\"ts\":" + Number(ts) + ",\"dur\":" + Number(dur) +
         ",\"args\":{" + args + "}}";
}

}  // namespace

std::string JsonString(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
          out += escaped;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::vector<UnitSlice> MergeUnitIntervals(const OpProfile& ops, const ExecutionProfile& profile) {
  std::vector<UnitSlice> slices;
  std::vector<size_t> open(kProfileUnits, SIZE_MAX);  // each unit's last slice
  for (const UnitInterval& interval : profile.intervals) {
    if (interval.unit >= kProfileUnits || ops.ops.empty()) continue;
    const size_t op = OpOf(ops, interval.pc);
    size_t& last = open[interval.unit];
    if (last != SIZE_MAX && slices[last].op == op && interval.begin <= slices[last].end) {
      slices[last].end = std::max(slices[last].end, interval.end);
      slices[last].lines += interval.lines;
      continue;
    }
    last = slices.size();
    slices.push_back(UnitSlice{interval.unit, op, interval.begin, interval.end, interval.lines});
  }
  return slices;
}

std::string ChromeTraceJson(const OpProfile& ops, const ExecutionProfile& profile, const std::vector<HostEvent>& host,
                            const TraceOptions& options) {
  const double us_per_cycle = 1e-3 / options.clock_ghz;
  std::vector<std::string> events;
  events.push_back(Metadata("process_name", kDevicePid, -1, options.device_name + " (" + ops.module + ")"));
  events.push_back(Metadata("thread_name", kDevicePid, kOpsTid, "HLO operations"));
  for (int unit = 0; unit < kProfileUnits; ++unit) {
    std::string name = ProfileUnitName(unit);
    for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    events.push_back(Metadata("thread_name", kDevicePid, UnitTid(unit), name));
  }
  events.push_back(Metadata("process_name", kHostPid, -1, "host"));
  events.push_back(Metadata("thread_name", kHostPid, 1, "tpusim"));
  for (const OpRecord& op : ops.ops) {
    if (op.cycles == 0) continue;
    const std::string args = "\"what\":" + JsonString(op.what) + ",\"cycles\":" + std::to_string(op.cycles) +
                             ",\"stall_cycles\":" + std::to_string(op.stall_cycles) +
                             ",\"instructions\":" + std::to_string(op.instructions) +
                             ",\"dma_lines\":" + std::to_string(op.work[kProfileDma]) +
                             ",\"mxu_rows\":" + std::to_string(op.work[kProfileMxu]) +
                             ",\"vpu_lines\":" + std::to_string(op.work[kProfileVpu]);
    events.push_back(Slice(op.name, op.category, kDevicePid, kOpsTid, double(op.start_cycle) * us_per_cycle,
                           double(op.cycles) * us_per_cycle, args));
  }
  for (const UnitSlice& slice : MergeUnitIntervals(ops, profile)) {
    const OpRecord& op = ops.ops[slice.op];
    events.push_back(Slice(op.name, op.category, kDevicePid, UnitTid(slice.unit), double(slice.begin) * us_per_cycle,
                           double(slice.end - slice.begin) * us_per_cycle,
                           "\"lines\":" + std::to_string(slice.lines) + ",\"cycles\":" +
                               std::to_string(slice.end - slice.begin)));
  }
  for (const HostEvent& event : host) {
    events.push_back(Slice(event.name, "host", kHostPid, 1, event.start_us, event.duration_us, ""));
  }
  std::string out = "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"module\":" + JsonString(ops.module) +
                    ",\"cycles\":" + std::to_string(ops.cycles) + ",\"clock_ghz\":" + Number(options.clock_ghz) +
                    ",\"intervals_truncated\":" + (profile.truncated ? "true" : "false") + "},\"traceEvents\":[\n";
  for (size_t i = 0; i < events.size(); ++i) out += events[i] + (i + 1 < events.size() ? ",\n" : "\n");
  return out + "]}\n";
}

}  // namespace tpu::profiler
