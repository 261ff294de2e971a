#include "tb/coverage/coverage_data.h"

#include <set>
#include <sstream>

namespace tpu::coverage {
namespace {

// Verilator writes each point as `C '<\001key\002value>...' count`.
bool SplitPointLine(const std::string& text, std::map<std::string, std::string>* keys, uint64_t* count) {
  if (text.size() < 4 || text[0] != 'C' || text[1] != ' ' || text[2] != '\'') return false;
  const size_t close = text.rfind('\'');
  if (close == std::string::npos || close < 3) return false;
  const std::string body = text.substr(3, close - 3);
  size_t pos = 0;
  while (pos < body.size()) {
    if (body[pos] != '\001') return false;
    const size_t sep = body.find('\002', pos + 1);
    if (sep == std::string::npos) return false;
    size_t end = body.find('\001', sep + 1);
    if (end == std::string::npos) end = body.size();
    (*keys)[body.substr(pos + 1, sep - pos - 1)] = body.substr(sep + 1, end - sep - 1);
    pos = end;
  }
  std::istringstream rest(text.substr(close + 1));
  return static_cast<bool>(rest >> *count);
}

std::string Trim(const std::string& text) {
  const size_t first = text.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  const size_t last = text.find_last_not_of(" \t\r");
  return text.substr(first, last - first + 1);
}

}  // namespace

const char* KindName(Kind kind) { return kind == Kind::kLine ? "line" : "toggle"; }

bool Waiver::Matches(const Point& point) const {
  if (point.kind != kind || point.module != module) return false;
  if (pattern.rfind("line:", 0) == 0) return pattern.substr(5) == std::to_string(point.line);
  return std::regex_match(point.what, regex);
}

Status ReadCoverage(std::istream& in, const std::string& name, std::map<std::string, Point>* points) {
  std::string text;
  int number = 0;
  while (std::getline(in, text)) {
    ++number;
    if (text.empty() || text[0] == '#') continue;
    std::map<std::string, std::string> keys;
    uint64_t count = 0;
    if (!SplitPointLine(text, &keys, &count))
      return InvalidArgument(name + ":" + std::to_string(number) + ": not a coverage point line");
    const std::string& page = keys["page"];
    const size_t slash = page.find('/');
    if (slash == std::string::npos)
      return InvalidArgument(name + ":" + std::to_string(number) + ": point without a page/module");
    const std::string type = page.substr(0, slash);
    Point point;
    if (type == "v_toggle") {
      point.kind = Kind::kToggle;
    } else if (type == "v_line" || type == "v_branch") {
      point.kind = Kind::kLine;
    } else {
      continue;  // user coverage (cover properties): none in rtl/
    }
    const std::string& file = keys["f"];
    const size_t rtl = file.rfind("/rtl/");
    if (rtl == std::string::npos && file.rfind("rtl/", 0) != 0) continue;
    point.file = rtl == std::string::npos ? file : file.substr(rtl + 1);
    // Verilator names a parameterized copy MODULE__<params>; they are one module here.
    point.module = page.substr(slash + 1);
    point.module = point.module.substr(0, point.module.find("__"));
    point.line = std::atoi(keys["l"].c_str());
    point.what = keys["o"];
    const std::string key = std::string(KindName(point.kind)) + "|" + point.module + "|" + point.file + "|" +
                            keys["l"] + "|" + keys["n"] + "|" + point.what;
    auto [it, inserted] = points->emplace(key, point);
    it->second.count += count;
  }
  return OkStatus();
}

Status ReadWaivers(std::istream& in, const std::string& name, std::vector<Waiver>* waivers) {
  std::string text;
  int number = 0;
  while (std::getline(in, text)) {
    ++number;
    const std::string line = Trim(text);
    if (line.empty() || line[0] == '#') continue;
    const std::string where = name + ":" + std::to_string(number) + ": ";
    const size_t dashes = line.find(" -- ");
    if (dashes == std::string::npos || Trim(line.substr(dashes + 4)).empty())
      return InvalidArgument(where + "a waiver needs a reason after ' -- '");
    std::istringstream fields(line.substr(0, dashes));
    std::string kind, extra;
    Waiver waiver;
    if (!(fields >> kind >> waiver.module >> waiver.pattern) || (fields >> extra))
      return InvalidArgument(where + "expected 'line|toggle MODULE PATTERN -- REASON'");
    if (kind == "line") {
      waiver.kind = Kind::kLine;
    } else if (kind == "toggle") {
      waiver.kind = Kind::kToggle;
    } else {
      return InvalidArgument(where + "unknown kind '" + kind + "' (line or toggle)");
    }
    if (waiver.pattern.rfind("line:", 0) != 0) {
      try {
        waiver.regex = std::regex(waiver.pattern);
      } catch (const std::regex_error& error) {
        return InvalidArgument(where + "bad pattern '" + waiver.pattern + "': " + error.what());
      }
    }
    waiver.reason = Trim(line.substr(dashes + 4));
    waiver.source_line = number;
    waivers->push_back(waiver);
  }
  return OkStatus();
}

Summary Summarize(const std::map<std::string, Point>& points, const std::vector<Waiver>& waivers) {
  Summary summary;
  std::set<const Waiver*> used;
  for (const auto& [key, point] : points) {
    ModuleFigures& module = summary.modules[point.module];
    const bool hit = point.count > 0;
    const Waiver* waiver = nullptr;
    if (!hit) {
      for (const Waiver& candidate : waivers) {
        if (candidate.Matches(point)) {
          waiver = &candidate;
          break;
        }
      }
    }
    for (ModuleFigures* figures : {&module, &summary.total}) {
      uint64_t& total = point.kind == Kind::kLine ? figures->lines : figures->toggles;
      uint64_t& covered = point.kind == Kind::kLine ? figures->lines_hit : figures->toggles_hit;
      uint64_t& waived = point.kind == Kind::kLine ? figures->lines_waived : figures->toggles_waived;
      if (waiver != nullptr) {
        ++waived;
      } else {
        ++total;
        if (hit) ++covered;
      }
    }
    if (waiver != nullptr) {
      summary.waived.emplace_back(&point, waiver);
      used.insert(waiver);
    } else if (!hit) {
      summary.uncovered.push_back(&point);
    }
  }
  for (const Waiver& waiver : waivers) {
    if (used.count(&waiver) == 0) summary.unused_waivers.push_back(&waiver);
  }
  return summary;
}

double Percent(uint64_t hit, uint64_t total) { return total == 0 ? 100.0 : 100.0 * double(hit) / double(total); }

}  // namespace tpu::coverage
