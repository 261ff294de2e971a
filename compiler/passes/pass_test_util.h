// Golden-test helpers for passes: parse input text, run one pass, compare the printed module.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "compiler/hlo/parser.h"
#include "compiler/hlo/printer.h"
#include "compiler/passes/pass.h"

namespace tpu::compiler::testing {

struct PassResult {
  bool changed = false;
  std::string printed;
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
  return result;
}

// The module as the printer writes it (to compare "unchanged" cases independent of spacing).
inline std::string Canonical(const std::string& text) {
  StatusOr<std::unique_ptr<hlo::HloModule>> module = hlo::ParseHloModule(text);
  EXPECT_TRUE(module.ok()) << module.status();
  return module.ok() ? hlo::PrintHloModule(**module) : "";
}

}  // namespace tpu::compiler::testing
