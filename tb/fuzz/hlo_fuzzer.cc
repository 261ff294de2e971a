// hlo_fuzzer: the bytes are HLO text. They go through the parser and the verifier; a module that passes
// and whose every array is small also runs through the HLO interpreter (zero and seeded arguments) and
// through CompileModule for the tiny target (default pass pipeline, codegen preparation, codegen).
//
// Every rejection must come back as a Status. A crash, a sanitizer report, an uncaught exception
// (std::terminate aborts) or a slow unit (libFuzzer's -timeout) is a finding.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <string_view>
#include <vector>

#include "compiler/driver/compile.h"
#include "compiler/hlo/hlo_ir.h"
#include "compiler/hlo/literal.h"
#include "compiler/hlo/parser.h"
#include "compiler/hlo/verifier.h"
#include "compiler/interpreter/interpreter.h"
#include "tpu_config.h"

namespace {

using tpu::hlo::HloComputation;
using tpu::hlo::HloInstruction;
using tpu::hlo::HloModule;
using tpu::hlo::Literal;
using tpu::hlo::Shape;

// Beyond these sizes one input would take more than milliseconds: only parse and verify such modules.
constexpr int64_t kMaxArrayElements = 4096;
constexpr int64_t kMaxInstructions = 2000;
// Longer inputs are mostly the mutator growing text; the seeds are below this.
constexpr size_t kMaxInputBytes = 256 * 1024;

bool ShapeIsSmall(const Shape& shape) {
  if (shape.IsTuple()) {
    for (const Shape& element : shape.tuple_shapes) {
      if (!ShapeIsSmall(element)) return false;
    }
    return true;
  }
  return shape.ElementCount() <= kMaxArrayElements;
}

// True when every value any instruction of any computation produces or reads is small, so that the
// interpreter and the code generator do little work.
bool ModuleIsSmall(const HloModule& module) {
  int64_t instructions = 0;
  for (const HloComputation* computation : module.computations()) {
    for (const HloInstruction* instruction : computation->instructions()) {
      if (++instructions > kMaxInstructions) return false;
      if (!ShapeIsSmall(instruction->shape())) return false;
    }
  }
  return true;
}

// The tiny target, as tpuc --config=tiny reads it from rtl/config/tiny.cfg (the fuzz build is
// configured with TPU_CONFIG=tiny, so tpu_config.h holds those values).
tpu::compiler::CompileModuleOptions TinyTargetOptions() {
  tpu::compiler::CompileModuleOptions options;
  options.codegen.lanes = static_cast<uint32_t>(tpu::cfg::kLanes);
  options.codegen.vmem_lines = static_cast<uint32_t>(tpu::cfg::kVmemLines);
  options.codegen.imem_words = static_cast<uint32_t>(tpu::cfg::kImemWords);
  options.codegen.hbm_lines = tpu::cfg::kHbmLines;
  return options;
}

void RunInterpreter(const HloModule& module, uint32_t seed) {
  const HloComputation* entry = module.entry_computation();
  if (entry == nullptr) return;
  tpu::hlo::InterpreterOptions options;
  options.max_while_iterations = 64;  // bounded work per input; longer loops give a Status
  std::vector<Literal> zeros, seeded;
  std::mt19937 rng(seed);
  for (const HloInstruction* parameter : entry->parameter_instructions()) {
    if (!parameter->shape().IsStatic()) return;
    zeros.emplace_back(parameter->shape());
    seeded.push_back(Literal::Random(parameter->shape(), rng));
  }
  (void)tpu::hlo::Interpret(module, zeros, options);
  (void)tpu::hlo::Interpret(module, seeded, options);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > kMaxInputBytes) return -1;  // not added to the corpus
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  auto parsed = tpu::hlo::ParseHloModule(text);
  if (!parsed.ok()) return 0;
  std::unique_ptr<HloModule> module = std::move(parsed).value();
  if (!tpu::hlo::VerifyHloModule(*module).ok()) return 0;
  (void)tpu::hlo::VerifyHloModule(*module, tpu::hlo::VerifierOptions{/*strict_infeed_types=*/true});
  (void)module->ToString();  // the printer sees every verified module too
  if (!ModuleIsSmall(*module)) return 0;

  // The seed of the random arguments comes from the input, so a crash reproduces from the file alone.
  uint32_t seed = 0;
  for (size_t i = 0; i < size; ++i) seed = seed * 31 + data[i];
  RunInterpreter(*module, seed);

  // CompileModule rewrites the module in place; it gets its own copy so the clone is exercised too.
  auto copy = tpu::hlo::CloneModule(*module);
  if (!copy.ok()) return 0;
  (void)tpu::compiler::CompileModule(copy.value().get(), TinyTargetOptions());
  return 0;
}
