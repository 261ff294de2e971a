// Parser of HLO text as XLA writes it (`--xla_dump_to`, HloModule::ToString). Errors are
// InvalidArgument("line L, column C: <what was expected>"), 1-based.
#pragma once

#include <memory>
#include <string_view>

#include "compiler/hlo/hlo_ir.h"
#include "compiler/hlo/shape.h"
#include "sw/base/status.h"

namespace tpu::hlo {

StatusOr<std::unique_ptr<HloModule>> ParseHloModule(std::string_view text);

// One shape, e.g. "f32[2,3]{1,0}" or "(f32[], s32[4])".
StatusOr<Shape> ParseShape(std::string_view text);

}  // namespace tpu::hlo
