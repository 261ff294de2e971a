#include "sw/profiler/html_report.h"

#include <algorithm>
#include <cstdio>

#include "sw/profiler/trace_writer.h"

namespace tpu::profiler {
namespace {

std::string Escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string Fixed(double value, int digits) {
  char buffer[48];
  std::snprintf(buffer, sizeof(buffer), "%.*f", digits, value);
  return buffer;
}

// A stable color per operation category (the op band of the timeline).
std::string CategoryColor(const std::string& category) {
  static const char* const kPalette[] = {"#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3", "#fdb462",
                                         "#b3de69", "#fccde5", "#d9d9d9", "#bc80bd", "#ccebc5", "#ffed6f"};
  size_t hash = 0;
  for (char c : category) hash = hash * 131 + static_cast<unsigned char>(c);
  return kPalette[hash % (sizeof(kPalette) / sizeof(kPalette[0]))];
}

}  // namespace

std::vector<std::vector<double>> UtilizationTimeline(const OpProfile& ops, const ExecutionProfile& profile, int bins) {
  std::vector<std::vector<double>> busy(kProfileUnits, std::vector<double>(std::max(bins, 1), 0.0));
  if (ops.cycles == 0 || bins <= 0) return busy;
  const double per_bin = static_cast<double>(ops.cycles) / bins;
  for (const UnitSlice& slice : MergeUnitIntervals(ops, profile)) {
    // Spread the slice's cycles over the bins it covers.
    const double begin = static_cast<double>(slice.begin), end = static_cast<double>(slice.end);
    int bin = std::min(bins - 1, static_cast<int>(begin / per_bin));
    for (; bin < bins && bin * per_bin < end; ++bin) {
      const double overlap = std::min(end, (bin + 1) * per_bin) - std::max(begin, bin * per_bin);
      if (overlap > 0) busy[slice.unit][bin] += overlap / per_bin;
    }
  }
  for (auto& unit : busy) {
    for (double& share : unit) share = std::min(share, 1.0);
  }
  return busy;
}

std::string HtmlReport(const OpProfile& ops, const ExecutionProfile& profile, const std::vector<Finding>& findings,
                       const HtmlReportOptions& options) {
  // One row per unit, each a filled curve of its busy share, then the operations band.
  const int width = 1000, row_height = 70, row_gap = 12, band_height = 28, left = 110, top = 10;
  const int bins = std::max(options.bins, 1);
  const std::vector<std::vector<double>> busy = UtilizationTimeline(ops, profile, bins);
  const int band_y = top + kProfileUnits * (row_height + row_gap);
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(left + width + 20) +
                    "\" height=\"" + std::to_string(band_y + band_height + 30) + "\">\n";
  const char* const kRowLabels[kProfileUnits] = {"DMA", "MXU", "VPU"};
  for (int unit = 0; unit < kProfileUnits; ++unit) {
    const int base = top + unit * (row_height + row_gap) + row_height;  // the row's 0% line
    svg += "<rect x=\"" + std::to_string(left) + "\" y=\"" + std::to_string(base - row_height) + "\" width=\"" +
           std::to_string(width) + "\" height=\"" + std::to_string(row_height) + "\" fill=\"#f4f4f4\"/>\n";
    svg += "<text x=\"" + std::to_string(left - 8) + "\" y=\"" + std::to_string(base - row_height / 2 + 4) +
           "\" font-size=\"13\" text-anchor=\"end\">" + kRowLabels[unit] + "</text>\n";
    std::string points = Fixed(left, 1) + "," + std::to_string(base) + " ";
    for (int bin = 0; bin < bins; ++bin) {
      const double y = base - row_height * busy[unit][bin];
      points += Fixed(left + width * double(bin) / bins, 1) + "," + Fixed(y, 1) + " " +
                Fixed(left + width * double(bin + 1) / bins, 1) + "," + Fixed(y, 1) + " ";
    }
    points += Fixed(left + width, 1) + "," + std::to_string(base);
    svg += "<polygon class=\"unit-" + std::string(ProfileUnitName(unit)) + "\" fill=\"" + kUnitColors[unit] +
           "\" stroke=\"none\" points=\"" + points + "\"/>\n";
  }
  // The operations band under the rows.
  for (const OpRecord& op : ops.ops) {
    if (op.cycles == 0 || ops.cycles == 0) continue;
    const double x = left + width * double(op.start_cycle) / double(ops.cycles);
    const double w = std::max(width * double(op.cycles) / double(ops.cycles), 0.5);
    svg += "<rect x=\"" + Fixed(x, 2) + "\" y=\"" + std::to_string(band_y) + "\" width=\"" + Fixed(w, 2) +
           "\" height=\"" + std::to_string(band_height) + "\" fill=\"" + CategoryColor(op.category) +
           "\" stroke=\"#666\" stroke-width=\"0.3\"><title>" + Escape(op.what) + ": " + std::to_string(op.cycles) +
           " cycles</title></rect>\n";
  }
  svg += "<text x=\"" + std::to_string(left - 8) + "\" y=\"" + std::to_string(band_y + band_height / 2 + 4) +
         "\" font-size=\"13\" text-anchor=\"end\">HLO ops</text>\n";
  svg += "<text x=\"" + std::to_string(left) + "\" y=\"" + std::to_string(band_y + band_height + 16) +
         "\" font-size=\"11\">cycle 0</text><text x=\"" + std::to_string(left + width) + "\" y=\"" +
         std::to_string(band_y + band_height + 16) + "\" font-size=\"11\" text-anchor=\"end\">cycle " +
         std::to_string(ops.cycles) + "</text>\n</svg>\n";

  std::string legend;
  const char* const kUnitLabels[kProfileUnits] = {"DMA (moving data)", "MXU (streaming rows)", "VPU (writing lines)"};
  for (int unit = 0; unit < kProfileUnits; ++unit) {
    legend += "<span class=\"key\"><span class=\"swatch\" style=\"background:" + std::string(kUnitColors[unit]) +
              "\"></span>" + kUnitLabels[unit] + "</span>\n";
  }

  std::vector<const OpRecord*> order;
  for (const OpRecord& op : ops.ops) order.push_back(&op);
  std::stable_sort(order.begin(), order.end(), [](const OpRecord* a, const OpRecord* b) { return a->cycles > b->cycles; });
  if (order.size() > options.top_ops) order.resize(options.top_ops);
  std::string table =
      "<table>\n<tr><th>operation</th><th>category</th><th>cycles</th><th>time %</th><th>stall %</th><th>MXU %</th>"
      "<th>VPU %</th><th>HBM %</th><th>instructions</th></tr>\n";
  auto row = [&](const OpRecord& op) {
    const double time = ops.cycles == 0 ? 0.0 : 100.0 * double(op.cycles) / double(ops.cycles);
    const double stall = op.cycles == 0 ? 0.0 : 100.0 * double(op.stall_cycles) / double(op.cycles);
    table += "<tr><td title=\"" + Escape(op.what) + "\">" + Escape(op.name) + "</td><td>" + Escape(op.category) +
             "</td><td>" + std::to_string(op.cycles) + "</td><td>" + Fixed(time, 2) + "</td><td>" + Fixed(stall, 1) +
             "</td><td>" + Fixed(MxuPercent(op, ops.peaks), 1) + "</td><td>" + Fixed(VpuPercent(op), 1) + "</td><td>" +
             Fixed(HbmPercent(op, ops.peaks), 1) + "</td><td>" + std::to_string(op.instructions) + "</td></tr>\n";
  };
  for (const OpRecord* op : order) row(*op);
  row(ops.total);
  table += "</table>\n";

  std::string finding_list = "<ul>\n";
  for (const Finding& finding : findings) {
    finding_list += "<li><b>" + Escape(finding.check) + "</b>: " + Escape(finding.text) + "</li>\n";
  }
  finding_list += "</ul>\n";

  return "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" + Escape(options.title) +
         " profile</title>\n<style>\nbody{font-family:sans-serif;margin:20px;color:#222}\n"
         "table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}\n"
         "td:first-child,td:nth-child(2){text-align:left}.key{margin-right:18px;font-size:13px}\n"
         ".swatch{display:inline-block;width:14px;height:14px;margin-right:5px;vertical-align:middle}\n</style></head>\n"
         "<body>\n<h1>" + Escape(options.title) + "</h1>\n<p>" + Escape(options.subtitle) + "</p>\n<p id=\"summary\">" +
         std::to_string(ops.cycles) + " cycles; MXU " + Fixed(MxuPercent(ops.total, ops.peaks), 1) + "%, VPU " +
         Fixed(VpuPercent(ops.total), 1) + "%, HBM " + Fixed(HbmPercent(ops.total, ops.peaks), 1) + "% of peak; " +
         Fixed(ops.cycles == 0 ? 0.0 : 100.0 * double(ops.total.stall_cycles) / double(ops.cycles), 1) +
         "% of the cycles stalled" + (profile.truncated ? " (timeline truncated: too many unit intervals)" : "") +
         ".</p>\n<h2>Utilization timeline</h2>\n<div>" + legend + "</div>\n" + svg +
         "<p>Each row is the share of the cycles of a bin in which that unit worked (full height: every cycle); the "
         "band below shows the HLO operations in program order (hover for names).</p>\n<h2>Findings</h2>\n" + finding_list +
         "<h2>Op profile</h2>\n" + table + "</body></html>\n";
}

}  // namespace tpu::profiler
