// Golden-test helpers for passes: parse input text, run one pass, compare the printed module or check
// what matters in it (CheckLines, FileCheck-style).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "compiler/hlo/hlo_opcode.h"
#include "compiler/hlo/parser.h"
#include "compiler/hlo/printer.h"
#include "compiler/passes/pass.h"

namespace tpu::compiler::testing {

struct PassResult {
  bool changed = false;
  std::string printed;
  std::unique_ptr<hlo::HloModule> module;  // `printed` parsed again
};

inline PassResult RunPassOnText(HloPass& pass, const std::string& text) {
  PassResult result;
  StatusOr<std::unique_ptr<hlo::HloModule>> module = hlo::ParseHloModule(text);
  EXPECT_TRUE(module.ok()) << module.status();
  if (!module.ok()) return result;
  StatusOr<bool> changed = pass.Run(module->get());
  EXPECT_TRUE(changed.ok()) << changed.status();
  result.changed = changed.ok() && *changed;
  result.printed = hlo::PrintHloModule(**module);
  // The output must be valid HLO text again.
  StatusOr<std::unique_ptr<hlo::HloModule>> reparsed = hlo::ParseHloModule(result.printed);
  EXPECT_TRUE(reparsed.ok()) << reparsed.status() << "\n" << result.printed;
  if (reparsed.ok()) result.module = std::move(reparsed).value();
  return result;
}

// The module as the printer writes it (to compare "unchanged" cases independent of spacing).
inline std::string Canonical(const std::string& text) {
  StatusOr<std::unique_ptr<hlo::HloModule>> module = hlo::ParseHloModule(text);
  EXPECT_TRUE(module.ok()) << module.status();
  return module.ok() ? hlo::PrintHloModule(**module) : "";
}

// Instructions of `opcode` in every computation of `module`.
inline int64_t CountOpcode(const hlo::HloModule& module, hlo::HloOpcode opcode) {
  int64_t count = 0;
  for (const hlo::HloComputation* computation : module.computations())
    for (const hlo::HloInstruction* instruction : computation->instructions()) count += instruction->opcode() == opcode;
  return count;
}

namespace internal {

// A check pattern as a regular expression: literal text, except `{{regex}}`, `[[NAME:regex]]`, which
// captures the text matched as NAME, and `[[NAME]]`, the text NAME captured earlier. `names` receives
// the names of the capturing groups in order. False if the pattern uses a name not captured yet.
inline bool CheckPattern(const std::string& pattern, const std::map<std::string, std::string>& variables,
                         std::regex* regex, std::vector<std::string>* names) {
  auto literal = [](const std::string& text) {
    std::string escaped;
    for (char c : text) {
      if (std::strchr("\\^$.|?*+()[]{}", c) != nullptr) escaped += '\\';
      escaped += c;
    }
    return escaped;
  };
  std::string expression;
  names->clear();
  for (size_t i = 0; i < pattern.size();) {
    if (pattern.compare(i, 2, "{{") == 0) {
      const size_t end = pattern.find("}}", i + 2);
      if (end != std::string::npos) {
        expression += "(?:" + pattern.substr(i + 2, end - i - 2) + ")";
        i = end + 2;
        continue;
      }
    }
    if (pattern.compare(i, 2, "[[") == 0) {
      const size_t end = pattern.find("]]", i + 2);
      if (end != std::string::npos) {
        const std::string inside = pattern.substr(i + 2, end - i - 2);
        const size_t colon = inside.find(':');
        if (colon != std::string::npos) {
          names->push_back(inside.substr(0, colon));
          expression += "(" + inside.substr(colon + 1) + ")";
        } else {
          auto value = variables.find(inside);
          if (value == variables.end()) return false;
          expression += literal(value->second);
        }
        i = end + 2;
        continue;
      }
    }
    expression += literal(std::string(1, pattern[i++]));
  }
  *regex = std::regex(expression);
  return true;
}

}  // namespace internal

// FileCheck-style expectations on printed HLO, one directive per line of `checks` (blank lines skipped):
//   CHECK: p       a later line contains p (searching from the line after the previous match)
//   CHECK-NEXT: p  the line right after the previous match contains p
//   CHECK-NOT: p   no line between the previous match and the next one (or the end) contains p
// p is literal text except `{{regex}}`, `[[NAME:regex]]` (captures NAME, e.g. an instruction's name) and
// `[[NAME]]` (what NAME captured). Returns "" when every directive holds, else the first that does not
// and the text, as a failure message.
inline std::string CheckLines(const std::string& text, const std::string& checks) {
  std::vector<std::string> lines;
  std::istringstream text_lines(text);
  for (std::string line; std::getline(text_lines, line);) lines.push_back(line);
  auto failure = [&](const std::string& directive, const std::string& why) {
    return directive + "\n  " + why + " in:\n" + text;
  };
  std::map<std::string, std::string> variables;
  size_t next = 0;  // the first line the next directive may match
  std::vector<std::pair<std::string, std::regex>> nots;  // CHECK-NOTs waiting for the next match
  auto check_nots = [&](size_t end) -> std::string {
    for (const auto& [directive, pattern] : nots)
      for (size_t line = next; line < end; ++line)
        if (std::regex_search(lines[line], pattern)) return failure(directive, "matches line " + std::to_string(line + 1));
    nots.clear();
    return "";
  };
  std::istringstream directives(checks);
  for (std::string directive; std::getline(directives, directive);) {
    directive.erase(0, directive.find_first_not_of(" \t"));
    if (directive.empty()) continue;
    const size_t colon = directive.find(':');
    const std::string kind = directive.substr(0, colon);
    std::string pattern_text = colon == std::string::npos ? "" : directive.substr(colon + 1);
    pattern_text.erase(0, pattern_text.find_first_not_of(" \t"));
    if (kind != "CHECK" && kind != "CHECK-NEXT" && kind != "CHECK-NOT") return failure(directive, "unknown directive");
    std::regex pattern;
    std::vector<std::string> names;
    if (!internal::CheckPattern(pattern_text, variables, &pattern, &names)) {
      return failure(directive, "uses a [[NAME]] not captured before");
    }
    if (kind == "CHECK-NOT") {
      nots.emplace_back(directive, pattern);
      continue;
    }
    std::smatch match;
    size_t found = next;
    if (kind == "CHECK-NEXT") {
      if (next == 0 || next >= lines.size() || !std::regex_search(lines[next], match, pattern)) {
        return failure(directive, "does not match line " + std::to_string(next + 1));
      }
    } else {
      while (found < lines.size() && !std::regex_search(lines[found], match, pattern)) ++found;
      if (found == lines.size()) return failure(directive, "matches no line from line " + std::to_string(next + 1));
    }
    for (size_t i = 0; i < names.size() && i + 1 < match.size(); ++i) variables[names[i]] = match[i + 1].str();
    if (std::string error = check_nots(found); !error.empty()) return error;
    next = found + 1;
  }
  return check_nots(lines.size());
}

// Runs `pass` on `input` and expects it to change the module into text that satisfies `checks`
// (CheckLines). Returns the result for further expectations.
inline PassResult ExpectRewrite(HloPass& pass, const std::string& input, const std::string& checks) {
  PassResult result = RunPassOnText(pass, input);
  EXPECT_TRUE(result.changed) << pass.name() << " left the module unchanged:\n" << result.printed;
  const std::string failure = CheckLines(result.printed, checks);
  EXPECT_TRUE(failure.empty()) << failure;
  return result;
}

// Runs `pass` on `input` and expects it to leave the module as it is.
inline void ExpectUnchanged(HloPass& pass, const std::string& input) {
  PassResult result = RunPassOnText(pass, input);
  EXPECT_FALSE(result.changed);
  EXPECT_EQ(result.printed, Canonical(input));
}

}  // namespace tpu::compiler::testing
