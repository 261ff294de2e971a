// The loops of the MXU kernel (mxu_kernel.h), written once over a small set of vector operations and
// compiled once per instruction set: mxu_kernel.cc (portable), mxu_kernel_avx2.cc and
// mxu_kernel_avx512.cc (compiled with -mavx2 -mfma and -mavx512f -mavx512dq). Internal to sim/model.
//
// Each of those files defines its `Ops` in an anonymous namespace, so every instantiation of these
// templates is private to its file. For the same reason this header holds only templates and uses nothing
// from the standard library: an inline function compiled with -mavx512f could otherwise be the copy the
// linker keeps, and run on a host without AVX-512.
//
// Ops provides: `Vec`, `kWidth` (floats per Vec), `kRows` x `kVecs` (the register block: rows x vectors
// of accumulators), Zero, Load, Broadcast, Mul, Add, MulAdd (fused or not: only used where both agree,
// see mxu_kernel.h), FlushToZero (a value below 2^-126 in magnitude becomes a zero of its sign),
// LoadBits and StoreCanonical (fp32 bits; a NaN is stored as the canonical NaN).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "sim/model/mxu_kernel.h"

namespace tpu::model::mxu_internal {

struct RowsTimesWeightsArgs {
  const float* a;  // rows x lanes
  uint32_t rows;
  const float* w;  // lanes x lanes
  MxuExponentRange w_range;
  uint32_t lanes;
  uint32_t* out;  // rows x lanes
};

// The x86 paths (mxu_kernel_avx2.cc, mxu_kernel_avx512.cc). RowsTimesWeights* compute the columns from
// `first_column` on in whole vectors and return the first column they left (for a narrower path);
// Accumulate* likewise return how many leading elements they summed.
uint32_t RowsTimesWeightsAvx2(const RowsTimesWeightsArgs& args, uint32_t first_column);
uint32_t RowsTimesWeightsAvx512(const RowsTimesWeightsArgs& args, uint32_t first_column);
size_t AccumulateAvx2(uint32_t* sums, const uint32_t* addends, size_t count);
size_t AccumulateAvx512(uint32_t* sums, const uint32_t* addends, size_t count);

template <class Ops>
struct KernelLoops {
  using Vec = typename Ops::Vec;
  static constexpr uint32_t kWidth = Ops::kWidth;

  // Auto-vectorized (the minimum over nonzero values is taken with 255 standing in for zeros).
  static MxuExponentRange ExponentRangeOf(const float* values, size_t count) {
    uint32_t min_nonzero = 255, max = 0;
    for (size_t i = 0; i < count; ++i) {
      uint32_t bits;
      std::memcpy(&bits, &values[i], sizeof bits);
      const uint32_t magnitude = bits & 0x7FFFFFFFu;
      const uint32_t exponent = magnitude >> 23;
      const uint32_t as_min = magnitude == 0 ? 255u : exponent;
      min_nonzero = as_min < min_nonzero ? as_min : min_nonzero;
      max = exponent > max ? exponent : max;
    }
    return {min_nonzero, max};
  }

  // True when every product of an `a` value with a `w` value is zero or in [2^-112, 2^128) and an exact
  // multiple of 2^-126 (mxu_kernel.h): then the fused path gives the same bits as the flushing one.
  static bool FusedIsExact(const MxuExponentRange& a, const MxuExponentRange& w) {
    return a.min_nonzero + w.min_nonzero >= 142 && a.max + w.max <= 380;
  }

  // kRowBlock rows x kVecBlock vectors of output, starting at `column`, accumulated in registers.
  template <bool kFused, uint32_t kRowBlock, uint32_t kVecBlock>
  static void MultiplyBlock(const float* a, const float* w, uint32_t lanes, uint32_t column, uint32_t* out) {
    Vec acc[kRowBlock][kVecBlock];
#pragma GCC unroll 16
    for (uint32_t r = 0; r < kRowBlock; ++r) {
#pragma GCC unroll 16
      for (uint32_t v = 0; v < kVecBlock; ++v) acc[r][v] = Ops::Zero();  // the column sum starts at +0
    }
    for (uint32_t k = 0; k < lanes; ++k) {
      const float* w_row = w + static_cast<size_t>(k) * lanes + column;
      Vec w_k[kVecBlock];
#pragma GCC unroll 16
      for (uint32_t v = 0; v < kVecBlock; ++v) w_k[v] = Ops::Load(w_row + v * kWidth);
#pragma GCC unroll 16
      for (uint32_t r = 0; r < kRowBlock; ++r) {
        const Vec a_rk = Ops::Broadcast(a[static_cast<size_t>(r) * lanes + k]);
#pragma GCC unroll 16
        for (uint32_t v = 0; v < kVecBlock; ++v) {
          if constexpr (kFused) {
            acc[r][v] = Ops::MulAdd(a_rk, w_k[v], acc[r][v]);
          } else {
            acc[r][v] = Ops::FlushToZero(Ops::Add(acc[r][v], Ops::FlushToZero(Ops::Mul(a_rk, w_k[v]))));
          }
        }
      }
    }
#pragma GCC unroll 16
    for (uint32_t r = 0; r < kRowBlock; ++r) {
#pragma GCC unroll 16
      for (uint32_t v = 0; v < kVecBlock; ++v) {
        Ops::StoreCanonical(out + static_cast<size_t>(r) * lanes + column + v * kWidth, acc[r][v]);
      }
    }
  }

  // The last `vecs` (< kVecBlock) vectors of a row block, as one narrower register block.
  template <bool kFused, uint32_t kRowBlock, uint32_t kVecBlock>
  static void MultiplyLastVectors(uint32_t vecs, const float* a, const float* w, uint32_t lanes, uint32_t column,
                                  uint32_t* out) {
    if constexpr (kVecBlock > 0) {
      if (vecs == kVecBlock) return MultiplyBlock<kFused, kRowBlock, kVecBlock>(a, w, lanes, column, out);
      MultiplyLastVectors<kFused, kRowBlock, kVecBlock - 1>(vecs, a, w, lanes, column, out);
    }
  }

  // kRowBlock rows, columns [first_column, end_column) (a whole number of vectors).
  template <uint32_t kRowBlock>
  static void MultiplyRows(const float* a, const RowsTimesWeightsArgs& args, uint32_t first_column,
                           uint32_t end_column, uint32_t* out) {
    const uint32_t lanes = args.lanes;
    const bool fused = FusedIsExact(ExponentRangeOf(a, static_cast<size_t>(kRowBlock) * lanes), args.w_range);
    constexpr uint32_t kBlockColumns = Ops::kVecs * kWidth;
    uint32_t column = first_column;
    for (; column + kBlockColumns <= end_column; column += kBlockColumns) {
      if (fused) {
        MultiplyBlock<true, kRowBlock, Ops::kVecs>(a, args.w, lanes, column, out);
      } else {
        MultiplyBlock<false, kRowBlock, Ops::kVecs>(a, args.w, lanes, column, out);
      }
    }
    const uint32_t vecs = (end_column - column) / kWidth;
    if (vecs == 0) return;
    if (fused) {
      MultiplyLastVectors<true, kRowBlock, Ops::kVecs - 1>(vecs, a, args.w, lanes, column, out);
    } else {
      MultiplyLastVectors<false, kRowBlock, Ops::kVecs - 1>(vecs, a, args.w, lanes, column, out);
    }
  }

  // The last `rows` (< kRowBlock) rows, as one shorter register block.
  template <uint32_t kRowBlock>
  static void MultiplyLastRows(uint32_t rows, const float* a, const RowsTimesWeightsArgs& args,
                               uint32_t first_column, uint32_t end_column, uint32_t* out) {
    if constexpr (kRowBlock > 0) {
      if (rows == kRowBlock) return MultiplyRows<kRowBlock>(a, args, first_column, end_column, out);
      MultiplyLastRows<kRowBlock - 1>(rows, a, args, first_column, end_column, out);
    }
  }

  static uint32_t RowsTimesWeights(const RowsTimesWeightsArgs& args, uint32_t first_column) {
    const uint32_t lanes = args.lanes;
    const uint32_t end_column = first_column + (lanes - first_column) / kWidth * kWidth;
    if (end_column == first_column) return first_column;
    uint32_t row = 0;
    for (; row + Ops::kRows <= args.rows; row += Ops::kRows) {
      const size_t offset = static_cast<size_t>(row) * lanes;
      MultiplyRows<Ops::kRows>(args.a + offset, args, first_column, end_column, args.out + offset);
    }
    if (row < args.rows) {
      const size_t offset = static_cast<size_t>(row) * lanes;
      MultiplyLastRows<Ops::kRows - 1>(args.rows - row, args.a + offset, args, first_column, end_column,
                                       args.out + offset);
    }
    return end_column;
  }

  // F32Add with the same reasoning as the column sums: inputs flushed (DAZ), an exact sum below 2^-126
  // flushed with the sign of the larger input (the numerics library's FTZ sign), x + (-x) = +0 under RNE.
  static size_t Accumulate(uint32_t* sums, const uint32_t* addends, size_t count) {
    size_t i = 0;
    for (; i + kWidth <= count; i += kWidth) {
      const Vec sum = Ops::Add(Ops::FlushToZero(Ops::LoadBits(sums + i)), Ops::FlushToZero(Ops::LoadBits(addends + i)));
      Ops::StoreCanonical(sums + i, Ops::FlushToZero(sum));
    }
    return i;
  }
};

}  // namespace tpu::model::mxu_internal
