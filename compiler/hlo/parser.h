// Parser of HLO text as XLA writes it (`--xla_dump_to`, HloModule::ToString). Errors are
// InvalidArgument("line L, column C: <what was expected>"), 1-based. Operands may be used before their
// definition, but an instruction that depends on itself is an error at the use that closes the cycle.
// Every XLA element type name parses (c64, f8e4m3fn, s4, ...); the verifier rejects the unsupported ones.
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
