// Comparison of device outputs with the HLO interpreter's, with the tolerance of docs/numerics.md:
//   |device - reference| <= atol + rtol * |reference|,  rtol = 2^-6,  atol = 2^-6 * max|reference| of the output
// NaN matches only NaN and an infinity only the same infinity. Integer and predicate outputs must be equal.
#pragma once

#include <cstdint>
#include <string>

#include "compiler/hlo/literal.h"

namespace tpu::tpusim {

inline constexpr double kRelativeTolerance = 1.0 / 64;  // 2^-6

struct OutputComparison {
  bool ok = false;
  std::string error;        // why the outputs cannot be compared at all (shape mismatch), else empty
  double max_abs_error = 0;
  // Over elements with |reference| >= atol: near zero the absolute term decides, and a relative error
  // there says nothing (a ReLU output of 1e-6 off by 1e-5 is fine).
  double max_rel_error = 0;
  double atol = 0;           // 2^-6 * max|reference| (0 for integers)
  double rtol = 0;           // 2^-6 (0 for integers)
  int64_t mismatches = 0;    // elements outside the tolerance
  int64_t first_mismatch = -1;  // linear index of the first one
};

OutputComparison CompareOutput(const hlo::Literal& device, const hlo::Literal& reference);

// `what` ("output 0", "outfeed 2.1") and the comparison: "output 0: f32[64,128] max_abs_err=1.2e-03
// max_rel_err=3.4e-03 ok" (FAIL with a note otherwise).
std::string FormatComparison(const std::string& what, const hlo::Literal& reference, const OutputComparison& comparison);

}  // namespace tpu::tpusim
