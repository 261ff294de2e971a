// HLO text printer: the format ParseHloModule reads; print -> parse -> print is a fixed point.
#pragma once

#include <string>

#include "compiler/hlo/hlo_ir.h"

namespace tpu::hlo {

std::string PrintHloModule(const HloModule& module);
std::string PrintHloComputation(const HloComputation& computation);
// One instruction line without indentation: `%add.1 = f32[2]{0} add(f32[2]{0} %a, f32[2]{0} %b)`.
std::string PrintHloInstruction(const HloInstruction& instruction);

}  // namespace tpu::hlo
