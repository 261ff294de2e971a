// rng-bit-generator (XLA's RngBitGenerator, what JAX's 'rbg' and 'unsafe_rbg' keys emit) as u32 operations
// the device has, bit for bit as the interpreter (compiler/interpreter/rng_bit_generator.h) and XLA on the
// CPU compute it: adds with carries, xors, shifts, multiplies (philox's high product words from 16-bit
// halves), compares and selects.
//
// The device holds 64-bit values as their low 32 bits, so the u64 state must arrive and leave as u32
// words, the way JAX passes a key: the state is a bitcast-convert of u32[n,2] words and every user of the
// new state is a bitcast-convert back to u32[n,2]. Then key and counter are the words' scalars and the new
// state is built from words. Otherwise, and for u64 bits, Unimplemented says why (the 64-bit values could
// not be held exactly). u8 and u16 bits are the low bits of the u32 ones (a convert).
//
// Every output element computes its own block (elementwise over the output shape, with a constant table of
// block indices and word positions): three-fry computes each block twice (its two words are two
// elements), philox four times; no lane moves. The rounds run in counted loops (three-fry's five groups of
// four rounds, their rotations in the loop state; philox's ten rounds), so that one group or round of
// code fits the device's instruction memory. An rng-bit-generator whose state needs no parameter is left
// to fold-parameter-independent, which evaluates it with the interpreter.
#pragma once

#include "compiler/passes/pass.h"

namespace tpu::compiler {

class RngBitGeneratorExpansion : public HloPass {
 public:
  std::string_view name() const override { return "rng-bit-generator-expansion"; }
  StatusOr<bool> Run(hlo::HloModule* module) override;
};

}  // namespace tpu::compiler
