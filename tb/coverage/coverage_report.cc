// coverage_report: line and toggle coverage of rtl/ per module from Verilator coverage files.
//
//   coverage_report [--waivers=FILE] [--report=FILE] COVERAGE.dat...
//
// Prints a table (module, line and toggle points covered of those counted, waived) and ends with
//   coverage line_pct=L toggle_pct=T
// --report writes the table again with every uncovered point (file:line, kind, what) and every waived one
// with its reason. Exit status 1 on an unreadable or malformed input.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "tb/coverage/coverage_data.h"

namespace tpu::coverage {
namespace {

void Table(const Summary& summary, std::ostream& out) {
  char row[256];
  std::snprintf(row, sizeof(row), "%-24s %16s %8s %6s %18s %8s %6s\n", "module", "line hit/total", "line%",
                "waived", "toggle hit/total", "toggle%", "waived");
  out << row;
  auto line = [&](const std::string& name, const ModuleFigures& f) {
    std::snprintf(row, sizeof(row), "%-24s %7llu/%-8llu %8.2f %6llu %8llu/%-9llu %8.2f %6llu\n", name.c_str(),
                  (unsigned long long)f.lines_hit, (unsigned long long)f.lines, Percent(f.lines_hit, f.lines),
                  (unsigned long long)f.lines_waived, (unsigned long long)f.toggles_hit,
                  (unsigned long long)f.toggles, Percent(f.toggles_hit, f.toggles),
                  (unsigned long long)f.toggles_waived);
    out << row;
  };
  for (const auto& [name, figures] : summary.modules) line(name, figures);
  line("total", summary.total);
}

void Details(const Summary& summary, std::ostream& out) {
  out << "\nUncovered (" << summary.uncovered.size() << "):\n";
  for (const Point* point : summary.uncovered)
    out << "  " << point->file << ":" << point->line << " " << KindName(point->kind) << " " << point->module
        << " " << point->what << "\n";
  out << "\nWaived, not covered on purpose (" << summary.waived.size() << "):\n";
  for (const auto& [point, waiver] : summary.waived)
    out << "  " << point->file << ":" << point->line << " " << KindName(point->kind) << " " << point->module
        << " " << point->what << " -- " << waiver->reason << "\n";
  if (!summary.unused_waivers.empty()) {
    out << "\nWaivers that match no uncovered point (covered now, or stale):\n";
    for (const Waiver* waiver : summary.unused_waivers)
      out << "  line " << waiver->source_line << ": " << KindName(waiver->kind) << " " << waiver->module << " "
          << waiver->pattern << "\n";
  }
}

int Main(int argc, char** argv) {
  std::string waiver_file, report_file;
  std::vector<std::string> inputs;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--waivers=", 0) == 0) {
      waiver_file = arg.substr(10);
    } else if (arg.rfind("--report=", 0) == 0) {
      report_file = arg.substr(9);
    } else if (arg == "--help" || arg == "-h") {
      std::cout << "usage: coverage_report [--waivers=FILE] [--report=FILE] COVERAGE.dat...\n";
      return 0;
    } else if (arg.rfind("--", 0) == 0) {
      std::cerr << "coverage_report: unknown flag " << arg << "\n";
      return 1;
    } else {
      inputs.push_back(arg);
    }
  }
  if (inputs.empty()) {
    std::cerr << "coverage_report: no coverage file given\n";
    return 1;
  }
  std::map<std::string, Point> points;
  for (const std::string& input : inputs) {
    std::ifstream in(input);
    if (!in) {
      std::cerr << "coverage_report: cannot read " << input << "\n";
      return 1;
    }
    const Status status = ReadCoverage(in, input, &points);
    if (!status.ok()) {
      std::cerr << "coverage_report: " << status.message() << "\n";
      return 1;
    }
  }
  std::vector<Waiver> waivers;
  if (!waiver_file.empty()) {
    std::ifstream in(waiver_file);
    if (!in) {
      std::cerr << "coverage_report: cannot read " << waiver_file << "\n";
      return 1;
    }
    const Status status = ReadWaivers(in, waiver_file, &waivers);
    if (!status.ok()) {
      std::cerr << "coverage_report: " << status.message() << "\n";
      return 1;
    }
  }
  const Summary summary = Summarize(points, waivers);
  Table(summary, std::cout);
  if (!report_file.empty()) {
    std::ofstream out(report_file);
    Table(summary, out);
    Details(summary, out);
    if (!out) {
      std::cerr << "coverage_report: cannot write " << report_file << "\n";
      return 1;
    }
  }
  char last[128];
  std::snprintf(last, sizeof(last), "coverage line_pct=%.2f toggle_pct=%.2f",
                Percent(summary.total.lines_hit, summary.total.lines),
                Percent(summary.total.toggles_hit, summary.total.toggles));
  std::cout << last << "\n";
  return 0;
}

}  // namespace
}  // namespace tpu::coverage

int main(int argc, char** argv) { return tpu::coverage::Main(argc, argv); }
