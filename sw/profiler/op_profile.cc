#include "sw/profiler/op_profile.h"

#include <algorithm>
#include <cstdio>

#include "compiler/passes/padding_report.h"
#include "tpu_isa.h"

namespace tpu::profiler {
namespace {

// Adds a word's (or an operation's) counts to `sum`.
void Add(uint64_t instructions, uint64_t cycles, uint64_t stall_cycles, const std::array<uint64_t, kProfileUnits>& stall_on,
         const std::array<uint64_t, kProfileUnits>& work, OpRecord* sum) {
  sum->instructions += instructions;
  sum->cycles += cycles;
  sum->stall_cycles += stall_cycles;
  for (int unit = 0; unit < kProfileUnits; ++unit) {
    sum->stall_on[unit] += stall_on[unit];
    sum->work[unit] += work[unit];
  }
}
// `host_wait`: the word is a SEMWAIT, whose stalls wait for the host rather than for a unit.
void Accumulate(const PcProfile& word, bool host_wait, OpRecord* op) {
  Add(word.issues, word.cycles, word.stall_cycles, word.stall_on, word.work, op);
  if (host_wait) op->host_stall_cycles += word.stall_cycles;
}
void AddTo(const OpRecord& op, OpRecord* sum) {
  Add(op.instructions, op.cycles, op.stall_cycles, op.stall_on, op.work, sum);
  sum->host_stall_cycles += op.host_stall_cycles;
}

bool IsHostWait(const std::vector<uint64_t>& code, size_t pc) {
  return pc < code.size() && isa::Decode(code[pc]).opcode == static_cast<uint8_t>(isa::Opcode::SEMWAIT);
}

double Percent(double part, double whole) { return whole <= 0 ? 0.0 : 100.0 * part / whole; }

std::string Format(const char* format, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), format, value);
  return buffer;
}

std::string Shorten(const std::string& text, size_t width) {
  return text.size() <= width ? text : text.substr(0, width - 3) + "...";
}

// The unit an operation's stalls mostly waited for.
int MainStallUnit(const OpRecord& op) {
  return static_cast<int>(std::max_element(op.stall_on.begin(), op.stall_on.end()) - op.stall_on.begin());
}

}  // namespace

StatusOr<OpProfile> BuildOpProfile(const compiler::Program& program, const ExecutionProfile& profile,
                                   const ChipPeaks& peaks) {
  if (profile.pcs.size() < program.code.size()) {
    return InvalidArgument("the profile covers " + std::to_string(profile.pcs.size()) + " instruction words, the program has " +
                           std::to_string(program.code.size()));
  }
  OpProfile result;
  result.module = program.module_name;
  result.peaks = peaks;
  result.cycles = profile.cycles;
  const std::vector<compiler::CodeRange>& ranges = program.code_ranges;
  if (ranges.empty()) {
    OpRecord whole;
    whole.name = whole.category = whole.what = "(program)";
    whole.end = static_cast<uint32_t>(program.code.size());
    result.ops.push_back(whole);
  }
  for (size_t i = 0; i < ranges.size(); ++i) {
    OpRecord op;
    op.what = ranges[i].what;
    const size_t equals = op.what.find(" = ");
    if (equals != std::string::npos) {
      op.name = op.what.substr(0, equals);
      op.category = op.what.substr(op.what.rfind(' ') + 1);
    } else {
      op.name = op.what;
      op.category = op.what.substr(0, op.what.find(' '));
    }
    op.begin = i == 0 ? 0 : ranges[i].begin;
    op.end = i + 1 < ranges.size() ? ranges[i + 1].begin : static_cast<uint32_t>(program.code.size());
    result.ops.push_back(std::move(op));
  }
  uint64_t start = 0;
  result.total.name = result.total.category = result.total.what = "total";
  for (OpRecord& op : result.ops) {
    for (uint32_t pc = op.begin; pc < op.end; ++pc) Accumulate(profile.pcs[pc], IsHostWait(program.code, pc), &op);
    op.start_cycle = start;
    start += op.cycles;
    AddTo(op, &result.total);
  }
  // Words past the program (a run that jumped out of it) still count: the totals must hold every cycle.
  for (size_t pc = program.code.size(); pc < profile.pcs.size(); ++pc) Accumulate(profile.pcs[pc], false, &result.total);
  if (result.total.cycles != profile.cycles) {
    return InvalidArgument("the profile's instruction cycles add up to " + std::to_string(result.total.cycles) +
                           ", the run took " + std::to_string(profile.cycles));
  }
  return result;
}

double MxuPercent(const OpRecord& op, const ChipPeaks& peaks) {
  (void)peaks;  // one LHS row of LANES x LANES MACs per cycle at peak
  return Percent(static_cast<double>(op.work[kProfileMxu]), static_cast<double>(op.cycles));
}
double VpuPercent(const OpRecord& op) {
  return Percent(static_cast<double>(op.work[kProfileVpu]), static_cast<double>(op.cycles));
}
double HbmPercent(const OpRecord& op, const ChipPeaks& peaks) {
  const double bytes = static_cast<double>(op.work[kProfileDma]) * peaks.lanes * 4.0;
  return Percent(bytes, static_cast<double>(op.cycles) * peaks.hbm_bytes_per_cycle);
}

std::string FormatOpProfile(const OpProfile& profile, size_t top) {
  std::vector<const OpRecord*> order;
  for (const OpRecord& op : profile.ops) order.push_back(&op);
  std::stable_sort(order.begin(), order.end(), [](const OpRecord* a, const OpRecord* b) { return a->cycles > b->cycles; });
  if (top != 0 && order.size() > top) order.resize(top);
  std::string out = "op profile of " + profile.module + ": " + std::to_string(profile.cycles) + " cycles, " +
                    std::to_string(profile.ops.size()) + " operations" +
                    (top != 0 && profile.ops.size() > top ? " (the " + std::to_string(top) + " slowest)" : "") + "\n";
  char line[512];
  std::snprintf(line, sizeof(line), "%-44s %-12s %10s %7s %7s %6s %6s %6s %12s\n", "operation", "category", "cycles",
                "time%", "stall%", "mxu%", "vpu%", "hbm%", "stalled on");
  out += line;
  auto row = [&](const OpRecord& op) {
    const bool host = op.host_stall_cycles > op.stall_on[MainStallUnit(op)];
    const std::string stalled = op.stall_cycles == 0 ? "-" : host ? "host" : ProfileUnitName(MainStallUnit(op));
    std::snprintf(line, sizeof(line), "%-44s %-12s %10llu %7s %7s %6s %6s %6s %12s\n", Shorten(op.name, 44).c_str(),
                  Shorten(op.category, 12).c_str(), static_cast<unsigned long long>(op.cycles),
                  Format("%.2f", Percent(double(op.cycles), double(profile.cycles))).c_str(),
                  Format("%.1f", Percent(double(op.stall_cycles), double(op.cycles))).c_str(),
                  Format("%.1f", MxuPercent(op, profile.peaks)).c_str(), Format("%.1f", VpuPercent(op)).c_str(),
                  Format("%.1f", HbmPercent(op, profile.peaks)).c_str(), stalled.c_str());
    out += line;
  };
  for (const OpRecord* op : order) row(*op);
  row(profile.total);
  for (const OpRecord& op : profile.ops) {
    if (HbmPercent(op, profile.peaks) > 100.0) {
      out += "note: hbm% over 100 (" + op.name + ") is DMA faster than the HBM pins allow: the reference model's DMA "
             "moves a line per cycle after a fixed latency, without HBM timing.\n";
      break;
    }
  }
  return out;
}

std::vector<Finding> PerformanceFindings(const hlo::HloModule& module, const OpProfile& profile) {
  std::vector<Finding> findings;
  const uint32_t lanes = profile.peaks.lanes;
  compiler::PaddingReportOptions options;
  options.feature_multiple = lanes;
  std::vector<std::string> few_rows;
  for (const compiler::PaddingEntry& entry : compiler::ComputePaddingReport(module, options)) {
    std::string padded;
    for (const compiler::PaddedTensor& tensor : entry.tensors) {
      if (tensor.logical == tensor.padded) continue;
      padded += std::string(padded.empty() ? "" : ", ") + tensor.role + " " + tensor.logical.ToString() + " -> " +
                tensor.padded.ToString();
    }
    if (!padded.empty() && entry.mac_waste_percent() > 0.0) {
      findings.push_back(Finding{
          "padding", entry.instruction + " (" + hlo::HloOpcodeString(entry.opcode) + "): " + padded + "; " +
                         Format("%.1f", entry.mac_waste_percent()) +
                         "% of its MXU work is padding. Feature dimensions that are multiples of " +
                         std::to_string(lanes) + " (and a batch that is a multiple of 8 per core) fill the MXU tiles."});
    }
    // The rows streamed through each weight tile: the lhs free dimension of a dot.
    if (entry.opcode == hlo::HloOpcode::kDot && !entry.tensors.empty() && entry.tensors[0].logical.rank() == 2) {
      const int64_t rows = entry.tensors[0].logical.dimensions[0];
      if (rows < static_cast<int64_t>(lanes)) few_rows.push_back(entry.instruction + " (" + std::to_string(rows) + ")");
    }
  }
  if (!few_rows.empty()) {
    std::string list;
    for (size_t i = 0; i < few_rows.size(); ++i) list += (i == 0 ? "" : ", ") + few_rows[i];
    findings.push_back(Finding{"batch", "dots that stream fewer than " + std::to_string(lanes) +
                                            " rows through each weight tile, so the MXU spends more time loading "
                                            "weights than multiplying: " + list +
                                            ". A batch that is a multiple of " + std::to_string(lanes) +
                                            " per core keeps the array busy."});
  }
  const OpRecord& total = profile.total;
  if (total.cycles > 0 && 2 * total.stall_cycles > total.cycles) {
    const int unit = MainStallUnit(total);
    std::vector<const OpRecord*> stalled;
    for (const OpRecord& op : profile.ops) stalled.push_back(&op);
    std::stable_sort(stalled.begin(), stalled.end(),
                     [](const OpRecord* a, const OpRecord* b) { return a->stall_cycles > b->stall_cycles; });
    std::string worst;
    for (size_t i = 0; i < std::min<size_t>(3, stalled.size()); ++i) {
      worst += std::string(i == 0 ? "" : ", ") + stalled[i]->name + " " +
               Format("%.1f", Percent(double(stalled[i]->stall_cycles), double(total.cycles))) + "%";
    }
    findings.push_back(Finding{
        unit == kProfileDma ? "memory-bound" : "stalls",
        Format("%.1f", Percent(double(total.stall_cycles), double(total.cycles))) +
            "% of the cycles the sequencer waited, " +
            Format("%.1f", Percent(double(total.stall_on[unit]), double(total.stall_cycles))) + "% of that on the " +
            ProfileUnitName(unit) + " unit; most in " + worst + "." +
            (unit == kProfileDma ? " The step moves data between HBM and VMEM more than it computes." : "")});
  }
  if (total.cycles > 0 && 10 * total.host_stall_cycles >= total.cycles) {
    const OpRecord* worst = &profile.ops.front();
    for (const OpRecord& op : profile.ops) {
      if (op.host_stall_cycles > worst->host_stall_cycles) worst = &op;
    }
    findings.push_back(Finding{
        "infeed-bound", Format("%.1f", Percent(double(total.host_stall_cycles), double(total.cycles))) +
                            "% of the cycles the program waited for the host at its infeeds and outfeeds (most at " +
                            worst->name + "): the host does not deliver values as fast as the device uses them. "
                            "Feed fewer bytes per step (a batch without padding in its minor dimension), or run "
                            "more work per value."});
  }
  findings.push_back(Finding{"mxu-idle", "the MXU streamed rows in " + Format("%.1f", MxuPercent(total, profile.peaks)) +
                                             "% of the cycles (HBM " + Format("%.1f", HbmPercent(total, profile.peaks)) +
                                             "% of its pin peak, VPU " + Format("%.1f", VpuPercent(total)) + "%)."});
  return findings;
}

std::string FormatFindings(const std::vector<Finding>& findings) {
  std::string out = "findings:\n";
  for (const Finding& finding : findings) out += "  [" + finding.check + "] " + finding.text + "\n";
  return out;
}

}  // namespace tpu::profiler
