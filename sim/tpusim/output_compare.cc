#include "sim/tpusim/output_compare.h"

#include <cmath>
#include <cstdio>

namespace tpu::tpusim {

OutputComparison CompareOutput(const hlo::Literal& device, const hlo::Literal& reference) {
  OutputComparison result;
  if (device.IsTuple() || reference.IsTuple()) {
    result.error = "tuples are compared element by element";
    return result;
  }
  if (device.shape() != reference.shape()) {
    result.error = "device shape " + device.shape().ToString() + " differs from the reference shape " +
                   reference.shape().ToString();
    return result;
  }
  const int64_t count = reference.element_count();
  double max_reference = 0;
  for (int64_t i = 0; i < count; ++i) {
    const double r = reference.GetAsDouble(i);
    if (std::isfinite(r)) max_reference = std::max(max_reference, std::fabs(r));
  }
  // Integers (and predicates) have one right answer: the tolerance is for floating-point rounding.
  const bool exact = !hlo::IsFloatingPointType(reference.shape().element_type);
  const double rtol = exact ? 0.0 : kRelativeTolerance;
  result.atol = rtol * max_reference;
  result.rtol = rtol;
  for (int64_t i = 0; i < count; ++i) {
    const double d = device.GetAsDouble(i);
    const double r = reference.GetAsDouble(i);
    bool within;
    if (std::isnan(r) || std::isnan(d)) {
      within = std::isnan(r) && std::isnan(d);
      if (!within) result.max_abs_error = result.max_rel_error = INFINITY;
    } else if (std::isinf(r) || std::isinf(d)) {
      within = d == r;
      if (!within) result.max_abs_error = result.max_rel_error = INFINITY;
    } else {
      const double error = std::fabs(d - r);
      within = error <= result.atol + rtol * std::fabs(r);
      result.max_abs_error = std::max(result.max_abs_error, error);
      if (r != 0 && std::fabs(r) >= result.atol) result.max_rel_error = std::max(result.max_rel_error, error / std::fabs(r));
    }
    if (!within) {
      if (result.mismatches == 0) result.first_mismatch = i;
      ++result.mismatches;
    }
  }
  result.ok = result.mismatches == 0;
  return result;
}

std::string FormatComparison(const std::string& what, const hlo::Literal& reference, const OutputComparison& comparison) {
  std::string line = what + ": " + reference.shape().ToString();
  if (!comparison.error.empty()) return line + " FAIL (" + comparison.error + ")";
  char numbers[96];
  std::snprintf(numbers, sizeof(numbers), " max_abs_err=%.3e max_rel_err=%.3e", comparison.max_abs_error,
                comparison.max_rel_error);
  line += numbers;
  if (comparison.ok) return line + " ok";
  line += " FAIL (" + std::to_string(comparison.mismatches) + " of " + std::to_string(reference.element_count()) +
          " elements outside |d - r| <= atol + rtol*|r|";
  char detail[96];
  std::snprintf(detail, sizeof(detail), ", atol=%.3e rtol=%.3e; first at element %lld)", comparison.atol,
                comparison.rtol, static_cast<long long>(comparison.first_mismatch));
  return line + detail;
}

}  // namespace tpu::tpusim
