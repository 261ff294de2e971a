#include "compiler/interpreter/interpreter.h"

namespace tpu::hlo {

StatusOr<std::vector<Literal>> Interpret(const HloModule&, const std::vector<Literal>&) { return Unimplemented("interpreter"); }
StatusOr<Literal> InterpretComputation(const HloComputation&, const std::vector<Literal>&) { return Unimplemented("interpreter"); }

}  // namespace tpu::hlo
