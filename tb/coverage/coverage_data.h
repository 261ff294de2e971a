// Verilator coverage data (the `coverage.dat` files a model built with --coverage-line/--coverage-toggle
// writes, or their merge by `verilator_coverage --write`), folded per RTL module for the report of
// `make coverage`.
//
// A point counts once per module, not once per instance: a line or a toggle of a module is covered when
// any instance of it (in any of the benches, with any parameters) covered it. Points of files outside
// rtl/ (the generated package) are left out. Waivers take points out of the figures on purpose, each with
// its reason, which the report lists.
#pragma once

#include <cstdint>
#include <istream>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "sw/base/status.h"

namespace tpu::coverage {

enum class Kind { kLine, kToggle };

const char* KindName(Kind kind);

// One coverage point, folded over instances.
struct Point {
  Kind kind = Kind::kLine;
  std::string module;
  std::string file;     // relative to the tree's root, e.g. rtl/core/tpu_dma.sv
  int line = 0;
  std::string what;     // Verilator's comment: "if", "else", "block", ... or the toggled signal and bit
  uint64_t count = 0;   // the sum over instances
};

// A rule that takes points out of the figures: every point of `kind` in `module` whose `what` matches
// `pattern` (a whole-string ECMAScript regex), or, for `line:N` patterns, every point of that line.
struct Waiver {
  Kind kind = Kind::kLine;
  std::string module;
  std::string pattern;
  std::string reason;
  int source_line = 0;  // in the waiver file
  std::regex regex;     // `pattern`, compiled
  bool Matches(const Point& point) const;
};

// Reads the lines of a Verilator coverage file into `points` (folded by module, file, line, what),
// keeping only files whose path contains "/rtl/" (the path is stored from "rtl/" on). Errors name the line.
Status ReadCoverage(std::istream& in, const std::string& name, std::map<std::string, Point>* points);

// Reads a waiver file: one rule a line, `line|toggle MODULE PATTERN -- REASON`; `#` starts a comment line.
// A rule without a reason is an error.
Status ReadWaivers(std::istream& in, const std::string& name, std::vector<Waiver>* waivers);

struct ModuleFigures {
  uint64_t lines = 0, lines_hit = 0, lines_waived = 0;
  uint64_t toggles = 0, toggles_hit = 0, toggles_waived = 0;
};

struct Summary {
  std::map<std::string, ModuleFigures> modules;
  ModuleFigures total;
  std::vector<const Point*> uncovered;                           // not hit, not waived
  std::vector<std::pair<const Point*, const Waiver*>> waived;    // not hit, waived (hit points stay counted)
  std::vector<const Waiver*> unused_waivers;                     // matched no uncovered point
};

// Counts the points per module. A waived point leaves the figures only while it is not hit.
Summary Summarize(const std::map<std::string, Point>& points, const std::vector<Waiver>& waivers);

double Percent(uint64_t hit, uint64_t total);

}  // namespace tpu::coverage
