// The MXU matmul kernel of the reference model: a block of LHS rows times the front weight buffer,
// exactly as docs/isa.md `matvec` and docs/numerics.md define it, written in host float arithmetic and
// vectorized across output lanes (register-blocked over several rows, so that each weight vector is
// loaded once per block of rows), with AVX-512, AVX2+FMA and portable paths chosen at run time.
//
// Why host floats give the numerics library's bits (tests compare the two on every input class):
//  - inputs are bf16 values produced by tpu::numerics::F32ToBf16, which are never subnormal;
//  - a bf16 x bf16 product has at most 16 significant bits, so the host product is exact whenever it is
//    normal; a product below 2^-126 is flushed explicitly (FTZ), above the range it is inf in both; it
//    cannot round up to 2^-126 (the largest 16-bit product below it, 2^-126 - 2^-142, is a subnormal);
//  - a sum of two normal-or-zero fp32 values below 2^-126 is exact, so the host's RNE sum followed by an
//    explicit flush equals the contract's "round, then flush";
//  - signed zeros and inf/NaN follow IEEE in both; NaN payloads differ, so a NaN column result is replaced
//    by the canonical NaN at the end (a NaN anywhere in the chain stays NaN);
//  - the per-column order k = 0..N-1 is kept, and the kernel is compiled with -ffp-contract=off;
//  - the host's MXCSR DAZ/FTZ flags do not change any result (every subnormal is flushed anyway); the
//    rounding mode must be round-to-nearest-even (the caller checks).
//
// Fused fast path. A block of rows whose products are all zero or in [2^-112, 2^128) uses one fused
// multiply-add per element (a plain multiply and add on the portable path) and no flushes. This gives the
// same bits: a bf16 value is m * 2^(E - 134) with an 8-bit integer m and biased exponent E, so when
// E_a + E_w >= 142 for the smallest nonzero exponents every product is an exact multiple of 2^-126 of
// magnitude >= 2^-112 (no product flush, and fma(a, w, c) = RNE(a * w + c) = RNE(fl(a * w) + c)); by
// induction every partial sum is then zero, or a multiple of 2^-126 that is exact below 2^-103 and rounded
// to a grid of at least 2^-126 above it, so it is never below 2^-126 (no sum flush). E_a + E_w <= 380 for
// the largest exponents keeps every finite product below 2^128 (no product overflow, which an FMA would
// not see). Infinities and NaNs give the same results fused or not. ExponentRange is the test.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tpu::model {

// Instruction sets of the host-float kernel, in increasing order; each gives the same bits.
enum class MxuIsa { kPortable = 0, kAvx2 = 1, kAvx512 = 2 };

const char* MxuIsaName(MxuIsa isa);
// Compiled into this build and supported by this host's CPU (and OS).
bool MxuIsaAvailable(MxuIsa isa);
// The widest available instruction set.
MxuIsa BestMxuIsa();

// The smallest biased exponent among the nonzero values and the largest biased exponent of a set of fp32
// values (255 and 0 when all are zero). A subnormal value counts as nonzero with exponent 0.
struct MxuExponentRange {
  uint32_t min_nonzero = 255;
  uint32_t max = 0;
};
MxuExponentRange MxuExponentRangeOf(const float* values, size_t count);

// out[i * lanes + n] = fp32 bits of sum_k a[i * lanes + k] * w[k * lanes + n] for every row i < rows and
// n < lanes (k ascending from +0, FTZ after every multiply and add, canonical NaN). `a` holds bf16 LHS
// rows as floats, `w` the bf16 weights as floats (row k = input lane), `w_range` is
// MxuExponentRangeOf(w, lanes * lanes). `out` must not overlap `a` or `w`. An unavailable `isa` falls
// back to the best available one.
void MxuRowsTimesWeights(const float* a, uint32_t rows, const float* w, const MxuExponentRange& w_range,
                         uint32_t lanes, uint32_t* out, MxuIsa isa);

// values[i] = the fp32 value of tpu::numerics::F32ToBf16(bits[i]) (the MXU's input rounding).
void MxuRoundToBf16(const uint32_t* bits, size_t count, float* values);

// sums[i] = tpu::numerics::F32Add(sums[i], addends[i]) (MXU_MM ACC), bit for bit: DAZ on both inputs,
// RNE, FTZ, canonical NaN. Needs round-to-nearest-even like the kernel.
void MxuAccumulate(uint32_t* sums, const uint32_t* addends, size_t count, MxuIsa isa);

}  // namespace tpu::model
