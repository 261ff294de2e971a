// The MXU matmul kernel of the reference model: one LHS row times the front weight buffer, exactly as
// docs/isa.md `matvec` and docs/numerics.md define it, written in host float arithmetic so that the
// compiler vectorizes it across output lanes.
//
// Why host floats give the numerics library's bits (tests compare the two on every input class):
//  - inputs are bf16 values produced by tpu::numerics::F32ToBf16, which are never subnormal;
//  - a bf16 x bf16 product has at most 16 significant bits, so the host product is exact whenever it is
//    normal; a product below 2^-126 is flushed here explicitly (FTZ), above the range it is inf in both;
//  - a sum of two normal-or-zero fp32 values below 2^-126 is exact, so the host's RNE sum followed by an
//    explicit flush equals the contract's "round, then flush";
//  - signed zeros and inf/NaN follow IEEE in both; NaN payloads differ, so a NaN column result is replaced
//    by the canonical NaN at the end (a NaN anywhere in the chain stays NaN);
//  - the per-column order k = 0..N-1 is kept, and the kernel is compiled with -ffp-contract=off (no FMA).
#pragma once

#include <cstdint>

namespace tpu::model {

// out[n] = fp32 bits of sum_k a[k] * w[k * lanes + n] for n in 0..lanes-1 (k ascending, FTZ after every
// multiply and add). `a` holds the bf16 LHS row as floats, `w` the bf16 weights as floats (row k = input
// lane). `scratch` must hold `lanes` floats.
void MxuRowTimesWeights(const float* a, const float* w, uint32_t lanes, float* scratch, uint32_t* out);

}  // namespace tpu::model
