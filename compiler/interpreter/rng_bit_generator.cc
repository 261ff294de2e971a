#include "compiler/interpreter/rng_bit_generator.h"

#include <array>
#include <cstring>
#include <vector>

namespace tpu::hlo {

namespace {

uint32_t RotateLeft(uint32_t v, int distance) { return (v << distance) | (v >> (32 - distance)); }

uint32_t Low(uint64_t v) { return static_cast<uint32_t>(v); }
uint32_t High(uint64_t v) { return static_cast<uint32_t>(v >> 32); }

Status Refuse(const HloInstruction& instruction, const std::string& why) {
  return Unimplemented("the HLO interpreter does not support rng-bit-generator " + why + " (instruction %" +
                       instruction.name() + ")");
}

// Stores the u32 word `word` as element `e` of `bits` (u8, u16 and u32 keep its low bits).
void StoreWord(Literal* bits, int64_t e, uint32_t word) {
  switch (bits->shape().element_type) {
    case PrimitiveType::U8: bits->Set<uint8_t>(e, static_cast<uint8_t>(word)); break;
    case PrimitiveType::U16: bits->Set<uint16_t>(e, static_cast<uint16_t>(word)); break;
    default: bits->Set<uint32_t>(e, word); break;
  }
}

// three-fry: fills `bits` and returns the counter after it.
uint64_t ThreeFryBits(uint64_t key, uint64_t counter, Literal* bits) {
  const std::vector<int64_t>& dims = bits->shape().dimensions;
  const int64_t n = bits->element_count();
  if (bits->shape().element_type == PrimitiveType::U64) {
    for (int64_t e = 0; e < n; ++e) {
      const uint64_t c = counter + static_cast<uint64_t>(e);
      uint32_t x0 = Low(c), x1 = High(c);
      ThreeFry2x32(Low(key), High(key), &x0, &x1);
      bits->Set<uint64_t>(e, x0 | (static_cast<uint64_t>(x1) << 32));
    }
    return counter + static_cast<uint64_t>(n);
  }
  const int64_t split = ThreeFrySplitDimension(dims);
  if (split < 0) {  // a scalar: the first word of one block
    uint32_t x0 = Low(counter), x1 = High(counter);
    ThreeFry2x32(Low(key), High(key), &x0, &x1);
    StoreWord(bits, 0, x0);
    return counter + 1;
  }
  // Row-major over (outer, dims[split], inner); the half shape has (dims[split] + 1) / 2 in its place.
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < split; ++d) outer *= dims[d];
  for (size_t d = static_cast<size_t>(split) + 1; d < dims.size(); ++d) inner *= dims[d];
  const int64_t size = dims[static_cast<size_t>(split)], half = (size + 1) / 2;
  int64_t e = 0;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t c = 0; c < size; ++c) {
      for (int64_t i = 0; i < inner; ++i, ++e) {
        const uint64_t block = static_cast<uint64_t>((o * half + c / 2) * inner + i);
        const uint64_t x = counter + block;
        uint32_t x0 = Low(x), x1 = High(x);
        ThreeFry2x32(Low(key), High(key), &x0, &x1);
        StoreWord(bits, e, c % 2 == 0 ? x0 : x1);
      }
    }
  }
  return counter + static_cast<uint64_t>(outer * half * inner);
}

// The u128 counter (low, high) plus v.
std::array<uint32_t, 4> CounterPlus(uint64_t low, uint64_t high, uint64_t v) {
  const uint64_t sum = low + v;
  const uint64_t carried = high + (sum < low ? 1 : 0);
  return {Low(sum), High(sum), Low(carried), High(carried)};
}

// philox: fills `bits` and returns the number of blocks used.
int64_t PhiloxBits(uint64_t key, uint64_t low, uint64_t high, Literal* bits) {
  const int64_t n = bits->element_count();
  const bool wide = bits->shape().element_type == PrimitiveType::U64;
  const int64_t per_block = wide ? 2 : 4;
  const int64_t blocks = (n + per_block - 1) / per_block;
  for (int64_t v = 0; v < blocks; ++v) {
    std::array<uint32_t, 4> x = CounterPlus(low, high, static_cast<uint64_t>(v));
    Philox4x32(Low(key), High(key), x.data());
    for (int64_t w = 0; w < per_block && v * per_block + w < n; ++w) {
      const int64_t e = v * per_block + w;
      if (wide) {
        bits->Set<uint64_t>(e, x[2 * w] | (static_cast<uint64_t>(x[2 * w + 1]) << 32));
      } else {
        StoreWord(bits, e, x[static_cast<size_t>(w)]);
      }
    }
  }
  return blocks;
}

}  // namespace

StatusOr<RngAlgorithm> RngBitGeneratorAlgorithm(const HloInstruction& instruction) {
  const std::string* name = instruction.raw_attribute("algorithm");
  const std::string algorithm = name == nullptr ? "rng_default" : *name;
  if (algorithm == "rng_three_fry") return RngAlgorithm::kThreeFry;
  if (algorithm == "rng_philox" || algorithm == "rng_default") return RngAlgorithm::kPhilox;
  return InvalidArgument("rng-bit-generator %" + instruction.name() + " has algorithm=" + algorithm +
                         " (rng_default, rng_three_fry or rng_philox)");
}

void ThreeFry2x32(uint32_t k0, uint32_t k1, uint32_t* x0, uint32_t* x1) {
  const uint32_t ks[3] = {k0, k1, kThreeFryKeyParity ^ k0 ^ k1};
  uint32_t a = *x0 + ks[0], b = *x1 + ks[1];
  for (int group = 0; group < kThreeFryGroups; ++group) {
    for (int r : kThreeFryRotations[group % 2]) {
      a += b;
      b = RotateLeft(b, r) ^ a;
    }
    a += ks[(group + 1) % 3];
    b += ks[(group + 2) % 3] + static_cast<uint32_t>(group + 1);
  }
  *x0 = a;
  *x1 = b;
}

void Philox4x32(uint32_t k0, uint32_t k1, uint32_t x[4]) {
  for (int round = 0; round < kPhiloxRounds; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(x[0]) * kPhiloxMultipliers[0];
    const uint64_t p1 = static_cast<uint64_t>(x[2]) * kPhiloxMultipliers[1];
    const uint32_t next[4] = {High(p1) ^ x[1] ^ k0, Low(p1), High(p0) ^ x[3] ^ k1, Low(p0)};
    std::memcpy(x, next, sizeof(next));
    k0 += kPhiloxKeyIncrements[0];
    k1 += kPhiloxKeyIncrements[1];
  }
}

int64_t ThreeFrySplitDimension(const std::vector<int64_t>& dimensions) {
  if (dimensions.empty()) return -1;
  for (size_t d = 0; d < dimensions.size(); ++d) {
    if (dimensions[d] % 2 == 0) return static_cast<int64_t>(d);
  }
  size_t largest = 0;
  for (size_t d = 1; d < dimensions.size(); ++d) {
    if (dimensions[d] > dimensions[largest]) largest = d;
  }
  return static_cast<int64_t>(largest);
}

StatusOr<Literal> EvaluateRngBitGenerator(const HloInstruction& instruction, const Literal& state) {
  TPU_ASSIGN_OR_RETURN(RngAlgorithm algorithm, RngBitGeneratorAlgorithm(instruction));
  const Shape& shape = instruction.shape();
  if (!shape.IsTuple() || shape.tuple_shapes.size() != 2 || !shape.tuple_shapes[1].IsArray())
    return InvalidArgument("rng-bit-generator %" + instruction.name() + " must give (state, bits), not " +
                           shape.ToString());
  const Shape& state_shape = state.shape();
  const int64_t words = state_shape.rank() == 1 ? state_shape.dimensions[0] : 0;
  if (state_shape.element_type != PrimitiveType::U64 || state_shape.rank() != 1 || words < 2 ||
      !(shape.tuple_shapes[0] == state_shape)) {
    return InvalidArgument("rng-bit-generator %" + instruction.name() + " takes a u64[n] state (n >= 2) and gives " +
                           "it back, not " + state_shape.ToString() + " -> " + shape.tuple_shapes[0].ToString());
  }
  const PrimitiveType type = shape.tuple_shapes[1].element_type;
  if (type != PrimitiveType::U8 && type != PrimitiveType::U16 && type != PrimitiveType::U32 &&
      type != PrimitiveType::U64) {
    return Refuse(instruction, std::string("of ") + PrimitiveTypeName(type) + " bits (u8, u16, u32 or u64)");
  }
  Literal next_state = state;
  Literal bits(Shape::Make(type, shape.tuple_shapes[1].dimensions));
  const uint64_t* in = state.data<uint64_t>();
  uint64_t* out = next_state.data<uint64_t>();
  if (algorithm == RngAlgorithm::kThreeFry) {
    if (words != 2) return Refuse(instruction, "with three-fry and a state of " + std::to_string(words) + " words (2)");
    out[1] = ThreeFryBits(in[0], in[1], &bits);
  } else {
    if (words > 3) return Refuse(instruction, "with philox and a state of " + std::to_string(words) + " words (2 or 3)");
    const uint64_t low = in[1], high = words == 3 ? in[2] : in[0];
    const int64_t blocks = PhiloxBits(in[0], low, high, &bits);
    const std::array<uint32_t, 4> next = CounterPlus(low, high, static_cast<uint64_t>(blocks));
    out[1] = next[0] | (static_cast<uint64_t>(next[1]) << 32);
    if (words == 3) out[2] = next[2] | (static_cast<uint64_t>(next[3]) << 32);
  }
  std::vector<Literal> elements;
  elements.push_back(std::move(next_state));
  elements.push_back(std::move(bits));
  return Literal::MakeTuple(std::move(elements));
}

}  // namespace tpu::hlo
