// rng-bit-generator as XLA computes it on the CPU (its RngBitGeneratorExpander), bit for bit:
//   (state', bits) = rng-bit-generator(state), algorithm=rng_default|rng_three_fry|rng_philox
// The state is u64[2] (u64[3] for philox); state[0] is the key, the rest a counter. rng_default is philox,
// the CPU's default. The bits are u8, u16, u32 or u64; narrow ones are the low bits of u32 ones.
//
// three-fry (Threefry-2x32, 20 rounds, key = the two u32 halves of state[0], low first):
//   u64 bits: element e (row-major) is threefry(counter + e) as (low word | high word << 32);
//   u32 bits: the shape is split in two along a dimension (the first even one, else the first largest;
//   a scalar is one element of two): element c of that dimension is word c % 2 of
//   threefry(counter + the half index, c / 2 in place of c, linearized row-major);
//   state' = (key, counter + elements computed) (u64 wrap).
// philox (Philox-4x32, 10 rounds, key = the halves of state[0]): the counter is a u128, low 64 bits
// state[1], high state[2] (state[0], the key itself, when the state has two elements); block v is
// philox(counter + v) (four words) and u32 element e is word e % 4 of block e / 4, u64 element e the
// words 2(e % 2), 2(e % 2) + 1 of block e / 2; state' = (key, counter + blocks) of the state's length
// (the high 64 bits dropped for a two-element state).
#pragma once

#include <cstdint>
#include <string>

#include "compiler/hlo/hlo_ir.h"
#include "compiler/hlo/literal.h"
#include "sw/base/status.h"

namespace tpu::hlo {

enum class RngAlgorithm { kThreeFry, kPhilox };

// The generators' constants, one source for the interpreter and the device expansion
// (compiler/passes/rng_bit_generator_expansion.h).
// Threefry-2x32: five groups of four rounds, a key injection after each group; the groups alternate
// between the two sets of rotations; the third key word is k0 ^ k1 ^ the parity.
inline constexpr int kThreeFryGroups = 5;
inline constexpr int kThreeFryRotations[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
inline constexpr uint32_t kThreeFryKeyParity = 0x1BD11BDAu;
// Philox-4x32: ten rounds; words 0 and 2 are multiplied, the key words step by the increments.
inline constexpr int kPhiloxRounds = 10;
inline constexpr uint32_t kPhiloxMultipliers[2] = {0xD2511F53u, 0xCD9E8D57u};
inline constexpr uint32_t kPhiloxKeyIncrements[2] = {0x9E3779B9u, 0xBB67AE85u};

// The instruction's algorithm= (rng_default is philox); InvalidArgument for another name.
StatusOr<RngAlgorithm> RngBitGeneratorAlgorithm(const HloInstruction& instruction);

// Threefry-2x32 with 20 rounds of the block (x0, x1) under key (k0, k1); writes the two output words.
void ThreeFry2x32(uint32_t k0, uint32_t k1, uint32_t* x0, uint32_t* x1);

// Philox-4x32 with 10 rounds of the block x[4] under key (k0, k1), in place.
void Philox4x32(uint32_t k0, uint32_t k1, uint32_t x[4]);

// The dimension XLA splits the u32 three-fry output along (-1 for a scalar).
int64_t ThreeFrySplitDimension(const std::vector<int64_t>& dimensions);

// The (state', bits) tuple of `instruction` (an rng-bit-generator) for the state `state`.
StatusOr<Literal> EvaluateRngBitGenerator(const HloInstruction& instruction, const Literal& state);

}  // namespace tpu::hlo
