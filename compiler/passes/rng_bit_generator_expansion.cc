#include "compiler/passes/rng_bit_generator_expansion.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "compiler/interpreter/rng_bit_generator.h"
#include "compiler/passes/hlo_builder.h"

namespace tpu::compiler {
namespace {

using hlo::ComparisonDirection;
using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::PrimitiveType;
constexpr PrimitiveType U32 = PrimitiveType::U32;
constexpr PrimitiveType PRED = PrimitiveType::PRED;

// Whether the value needs something known only at run time: a parameter, an infeed, a loop or a call.
bool NeedsRunTimeValues(const HloInstruction* instruction, std::unordered_map<const HloInstruction*, bool>* memo) {
  auto it = memo->find(instruction);
  if (it != memo->end()) return it->second;
  bool needs = instruction->opcode() == HloOpcode::kParameter || instruction->HasSideEffect() ||
               instruction->opcode() == HloOpcode::kInfeed || instruction->opcode() == HloOpcode::kWhile ||
               instruction->opcode() == HloOpcode::kCall || instruction->opcode() == HloOpcode::kConditional ||
               instruction->opcode() == HloOpcode::kCustomCall;
  for (const HloInstruction* operand : instruction->operands()) {
    if (needs) break;
    needs = NeedsRunTimeValues(operand, memo);
  }
  (*memo)[instruction] = needs;
  return needs;
}

Status Refuse(const HloInstruction& rng, const std::string& why) {
  return Unimplemented("rng-bit-generator %" + rng.name() + ": " + why +
                       "; the device holds 64-bit values as their low 32 bits, so a u64 state must come from and "
                       "go to u32 words (bitcast-convert of u32[n,2], as JAX passes a key)");
}

// What the rewrite of one rng-bit-generator needs, checked before anything is added.
struct Plan {
  HloInstruction* rng = nullptr;
  hlo::RngAlgorithm algorithm = hlo::RngAlgorithm::kPhilox;
  HloInstruction* words = nullptr;               // u32[n,2]: the state's words, low first
  HloInstruction* bits = nullptr;                // the get-tuple-element of the bits, if any
  std::vector<HloInstruction*> state_elements;   // get-tuple-elements of the new state
  std::vector<HloInstruction*> state_words;      // their bitcast-converts to u32[n,2]
};

StatusOr<Plan> MakePlan(HloInstruction* rng) {
  Plan plan;
  plan.rng = rng;
  TPU_ASSIGN_OR_RETURN(plan.algorithm, hlo::RngBitGeneratorAlgorithm(*rng));
  const hlo::Shape& state = rng->operand(0)->shape();
  const hlo::Shape& bits = rng->shape().tuple_shapes.at(1);
  const int64_t n = state.rank() == 1 ? state.dimensions[0] : 0;
  const bool three_fry = plan.algorithm == hlo::RngAlgorithm::kThreeFry;
  if (state.element_type != PrimitiveType::U64 || n < 2 || n > (three_fry ? 2 : 3)) {
    return Unimplemented("rng-bit-generator %" + rng->name() + ": a " + state.ToString() + " state (" +
                         (three_fry ? "three-fry takes u64[2]" : "philox takes u64[2] or u64[3]") + ")");
  }
  if (bits.element_type == PrimitiveType::U64) {
    return Unimplemented("rng-bit-generator %" + rng->name() + ": u64 bits; the device holds 64-bit values as their "
                         "low 32 bits, so 64 random bits cannot be held (ask for u32 bits)");
  }
  if (bits.element_type != U32 && bits.element_type != PrimitiveType::U16 && bits.element_type != PrimitiveType::U8) {
    return Unimplemented("rng-bit-generator %" + rng->name() + ": " + hlo::PrimitiveTypeName(bits.element_type) +
                         " bits (u8, u16 or u32)");
  }
  if (bits.ElementCount() >= (int64_t{1} << 32)) {
    return Unimplemented("rng-bit-generator %" + rng->name() + ": 2^32 or more elements");
  }
  const HloInstruction* source = rng->operand(0);
  if (source->opcode() != HloOpcode::kBitcastConvert || source->operand(0)->shape().element_type != U32) {
    return Refuse(*rng, "its state %" + source->name() + " is computed as u64");
  }
  plan.words = source->operand(0);
  if (rng->IsRoot()) return Refuse(*rng, "it is the root, so its new u64 state is an output");
  for (HloInstruction* user : rng->users()) {
    if (user->opcode() != HloOpcode::kGetTupleElement) return Refuse(*rng, "%" + user->name() + " reads its tuple");
    if (user->tuple_index() == 1) {
      plan.bits = user;
      continue;
    }
    if (user->IsRoot()) return Refuse(*rng, "its new state %" + user->name() + " is an output as u64");
    plan.state_elements.push_back(user);
    for (HloInstruction* reader : user->users()) {
      if (reader->opcode() != HloOpcode::kBitcastConvert || reader->shape().element_type != U32) {
        return Refuse(*rng, "%" + reader->name() + " reads its new state as u64");
      }
      plan.state_words.push_back(reader);
    }
  }
  return plan;
}

// u32 arithmetic over one shape in one computation, constants shared by value.
class WordOps {
 public:
  WordOps(HloComputation* computation, std::vector<int64_t> dims)
      : b_(computation), f_(computation, dims), dims_(std::move(dims)) {}

  HloBuilder& b() { return b_; }
  ElementwiseBuilder& f() { return f_; }
  HloInstruction* Scalar(uint32_t value) {
    return b_.Add(HloInstruction::CreateConstant(hlo::Literal::CreateR0<uint32_t>(value)));
  }
  // `value` over the shape, one instruction per value.
  HloInstruction* Splat(uint32_t value) {
    auto it = splats_.find(value);
    if (it == splats_.end()) it = splats_.emplace(value, Broadcast(Scalar(value))).first;
    return it->second;
  }
  HloInstruction* Broadcast(HloInstruction* scalar) {
    return b_.Add(HloInstruction::CreateBroadcast(hlo::Shape::Make(scalar->shape().element_type, dims_), scalar, {}));
  }
  HloInstruction* Xor(HloInstruction* a, HloInstruction* b) { return f_.Binary(HloOpcode::kXor, a, b); }
  HloInstruction* RotateLeft(HloInstruction* v, int distance) {
    return f_.Binary(HloOpcode::kOr, f_.Binary(HloOpcode::kShiftLeft, v, Splat(static_cast<uint32_t>(distance))),
                     f_.Binary(HloOpcode::kShiftRightLogical, v, Splat(static_cast<uint32_t>(32 - distance))));
  }
  // (high, low) words of x * k.
  std::pair<HloInstruction*, HloInstruction*> MultiplyHighLow(HloInstruction* x, uint32_t k) {
    // x * k = (xh 2^16 + xl)(kh 2^16 + kl): four products of 16-bit halves, exact in u32.
    HloInstruction* mask = Splat(0xffffu);
    HloInstruction* sixteen = Splat(16);
    HloInstruction* xl = f_.Binary(HloOpcode::kAnd, x, mask);
    HloInstruction* xh = f_.Binary(HloOpcode::kShiftRightLogical, x, sixteen);
    HloInstruction* ll = f_.Mul(xl, Splat(k & 0xffffu));
    HloInstruction* lh = f_.Mul(xl, Splat(k >> 16));
    HloInstruction* hl = f_.Mul(xh, Splat(k & 0xffffu));
    HloInstruction* hh = f_.Mul(xh, Splat(k >> 16));
    auto high_half = [&](HloInstruction* v) { return f_.Binary(HloOpcode::kShiftRightLogical, v, sixteen); };
    auto low_half = [&](HloInstruction* v) { return f_.Binary(HloOpcode::kAnd, v, mask); };
    HloInstruction* middle = f_.Add(f_.Add(high_half(ll), low_half(lh)), low_half(hl));
    HloInstruction* high = f_.Add(f_.Add(f_.Add(hh, high_half(lh)), high_half(hl)), high_half(middle));
    return {high, f_.Mul(x, Splat(k))};
  }

 private:
  HloBuilder b_;
  ElementwiseBuilder f_;
  std::vector<int64_t> dims_;
  std::map<uint32_t, HloInstruction*> splats_;
};

// Threefry-2x32 as a counted loop of its groups of four rounds (one group of code). State: (group:
// s32[], a, b: u32[dims], the group's rotations r0..r3 and the next group's q0..q3, the keys the
// injection after the group adds (kA to a, kB + step to b) and kC, the one after that, step = group + 1:
// u32[]). A group swaps the rotation sets and rotates (kA, kB, kC) to (kB, kC, kA).
using hlo::kThreeFryGroups;
constexpr int kThreeFryState = 15;
enum ThreeFryElement { kGroup = 0, kA = 1, kB = 2, kRotations = 3, kNextRotations = 7, kKeyA = 11, kKeyB, kKeyC, kStep };

hlo::Shape ThreeFryLoopShape(const std::vector<int64_t>& dims) {
  const hlo::Shape words = hlo::Shape::Make(U32, dims);
  std::vector<hlo::Shape> elements = {hlo::Shape::Make(PrimitiveType::S32, {}), words, words};
  while (elements.size() < kThreeFryState) elements.push_back(hlo::Shape::Make(U32, {}));
  return hlo::Shape::MakeTuple(std::move(elements));
}

// state[index] < limit, as the condition of a counted loop.
HloComputation* CountedCondition(hlo::HloModule* module, const std::string& name, const hlo::Shape& shape,
                                 int64_t index, int32_t limit) {
  auto computation = std::make_unique<HloComputation>(UniqueComputationName(*module, name));
  HloComputation* c = computation.get();
  HloInstruction* state = c->AddInstruction(HloInstruction::CreateParameter(0, shape, "state"));
  HloInstruction* count = c->AddInstruction(HloInstruction::CreateGetTupleElement(state, index));
  HloInstruction* bound = c->AddInstruction(HloInstruction::CreateConstant(hlo::Literal::CreateR0<int32_t>(limit)));
  c->set_root_instruction(c->AddInstruction(
      HloInstruction::CreateCompare(hlo::Shape::Make(PRED, {}), count, bound, ComparisonDirection::kLt)));
  return module->AddEmbeddedComputation(std::move(computation));
}

HloComputation* ThreeFryGroup(hlo::HloModule* module, const std::vector<int64_t>& dims) {
  auto computation = std::make_unique<HloComputation>(UniqueComputationName(*module, "three_fry_group"));
  HloComputation* c = computation.get();
  HloInstruction* state = c->AddInstruction(HloInstruction::CreateParameter(0, ThreeFryLoopShape(dims), "state"));
  HloInstruction* e[kThreeFryState];
  for (int i = 0; i < kThreeFryState; ++i) e[i] = c->AddInstruction(HloInstruction::CreateGetTupleElement(state, i));
  WordOps w(c, dims);
  WordOps s(c, {});
  HloInstruction* a = e[kA];
  HloInstruction* b = e[kB];
  for (int r = 0; r < 4; ++r) {
    HloInstruction* left = e[kRotations + r];
    HloInstruction* right = s.f().Sub(s.Scalar(32), left);
    a = w.f().Add(a, b);
    b = w.Xor(w.f().Binary(HloOpcode::kOr, w.f().Binary(HloOpcode::kShiftLeft, b, w.Broadcast(left)),
                           w.f().Binary(HloOpcode::kShiftRightLogical, b, w.Broadcast(right))),
              a);
  }
  a = w.f().Add(a, w.Broadcast(e[kKeyA]));
  b = w.f().Add(b, w.Broadcast(s.f().Add(e[kKeyB], e[kStep])));
  HloInstruction* group = c->AddInstruction(HloInstruction::CreateBinary(
      hlo::Shape::Make(PrimitiveType::S32, {}), HloOpcode::kAdd, e[kGroup],
      c->AddInstruction(HloInstruction::CreateConstant(hlo::Literal::CreateR0<int32_t>(1)))));
  std::vector<HloInstruction*> next = {group, a, b};
  for (int r = 0; r < 4; ++r) next.push_back(e[kNextRotations + r]);
  for (int r = 0; r < 4; ++r) next.push_back(e[kRotations + r]);
  next.insert(next.end(), {e[kKeyB], e[kKeyC], e[kKeyA], s.f().Add(e[kStep], s.Scalar(1))});
  c->set_root_instruction(c->AddInstruction(HloInstruction::CreateTuple(next)));
  return module->AddEmbeddedComputation(std::move(computation));
}

// Philox-4x32 as a counted loop of its rounds (one round of code: the device's instruction memory is
// small). State: (round: s32[], x0..x3: u32[dims], k0, k1: u32[]).
using hlo::kPhiloxRounds;

hlo::Shape PhiloxLoopShape(const std::vector<int64_t>& dims) {
  const hlo::Shape words = hlo::Shape::Make(U32, dims);
  const hlo::Shape scalar = hlo::Shape::Make(U32, {});
  return hlo::Shape::MakeTuple({hlo::Shape::Make(PrimitiveType::S32, {}), words, words, words, words, scalar, scalar});
}

HloComputation* PhiloxRound(hlo::HloModule* module, const std::vector<int64_t>& dims) {
  auto computation = std::make_unique<HloComputation>(UniqueComputationName(*module, "philox_round"));
  HloComputation* c = computation.get();
  HloInstruction* state = c->AddInstruction(HloInstruction::CreateParameter(0, PhiloxLoopShape(dims), "state"));
  HloInstruction* element[7];
  for (int e = 0; e < 7; ++e) element[e] = c->AddInstruction(HloInstruction::CreateGetTupleElement(state, e));
  HloInstruction** x = element + 1;
  WordOps w(c, dims);
  WordOps s(c, {});
  auto [high0, low0] = w.MultiplyHighLow(x[0], hlo::kPhiloxMultipliers[0]);
  auto [high1, low1] = w.MultiplyHighLow(x[2], hlo::kPhiloxMultipliers[1]);
  HloInstruction* y0 = w.Xor(w.Xor(high1, x[1]), w.Broadcast(element[5]));
  HloInstruction* y2 = w.Xor(w.Xor(high0, x[3]), w.Broadcast(element[6]));
  HloInstruction* round = c->AddInstruction(HloInstruction::CreateBinary(
      hlo::Shape::Make(PrimitiveType::S32, {}), HloOpcode::kAdd, element[0],
      c->AddInstruction(HloInstruction::CreateConstant(hlo::Literal::CreateR0<int32_t>(1)))));
  HloInstruction* k0 = s.f().Add(element[5], s.Scalar(hlo::kPhiloxKeyIncrements[0]));
  HloInstruction* k1 = s.f().Add(element[6], s.Scalar(hlo::kPhiloxKeyIncrements[1]));
  c->set_root_instruction(c->AddInstruction(HloInstruction::CreateTuple({round, y0, low1, y2, low0, k0, k1})));
  return module->AddEmbeddedComputation(std::move(computation));
}

// The rewrite of one rng-bit-generator: u32 arithmetic over the bits' shape (`w_`) and on scalars (`s_`).
class Expander {
 public:
  Expander(hlo::HloModule* module, HloComputation* computation, const Plan& plan)
      : module_(module), plan_(plan), dims_(plan.rng->shape().tuple_shapes[1].dimensions), w_(computation, dims_),
        s_(computation, {}) {}

  Status Run() {
    HloBuilder& b = w_.b();
    const int64_t n = plan_.words->shape().dimensions[0];
    for (int64_t row = 0; row < n; ++row) {
      for (int64_t column = 0; column < 2; ++column) {
        state_.push_back(b.Reshape(b.Slice(plan_.words, {row, column}, {row + 1, column + 1}, {1, 1}), {}));
      }
    }
    std::vector<HloInstruction*> next_state;
    HloInstruction* bits = plan_.algorithm == hlo::RngAlgorithm::kThreeFry ? ThreeFry(&next_state) : Philox(&next_state);
    const PrimitiveType type = plan_.rng->shape().tuple_shapes[1].element_type;
    if (type != U32) bits = b.Convert(bits, type);
    // The new state as u32[n,2]: the key's words, then the counter's.
    std::vector<HloInstruction*> rows;
    rows.push_back(Row(state_[0], state_[1]));
    for (size_t i = 0; i + 1 < next_state.size(); i += 2) rows.push_back(Row(next_state[i], next_state[i + 1]));
    HloInstruction* words = b.Concatenate(rows, 0);
    HloComputation* computation = plan_.rng->parent();
    if (plan_.state_words.empty()) TPU_RETURN_IF_ERROR(RemoveIfDead(computation, words));
    if (plan_.bits != nullptr) TPU_RETURN_IF_ERROR(plan_.bits->ReplaceAllUsesWith(bits));
    for (HloInstruction* reader : plan_.state_words) TPU_RETURN_IF_ERROR(reader->ReplaceAllUsesWith(words));
    // Users before what they read, so that no removal takes away an instruction still listed.
    for (HloInstruction* reader : plan_.state_words) TPU_RETURN_IF_ERROR(computation->RemoveInstruction(reader));
    for (HloInstruction* element : plan_.state_elements) TPU_RETURN_IF_ERROR(computation->RemoveInstruction(element));
    if (plan_.bits != nullptr) TPU_RETURN_IF_ERROR(computation->RemoveInstruction(plan_.bits));
    HloInstruction* state = plan_.rng->operand(0);
    TPU_RETURN_IF_ERROR(computation->RemoveInstruction(plan_.rng));
    return RemoveIfDead(computation, state);
  }

 private:
  HloInstruction* Row(HloInstruction* low, HloInstruction* high) {
    HloBuilder& b = w_.b();
    return b.Concatenate({b.Reshape(low, {1, 1}), b.Reshape(high, {1, 1})}, 1);
  }
  template <typename T>
  HloInstruction* Table(const std::vector<T>& values) {
    hlo::Literal literal(hlo::Shape::Make(hlo::NativeToPrimitive<T>::value, dims_));
    for (size_t i = 0; i < values.size(); ++i) literal.Set<T>(static_cast<int64_t>(i), values[i]);
    return w_.b().Add(HloInstruction::CreateConstant(std::move(literal)));
  }
  // sum = a + b over the bits' shape and whether it wrapped (sum < b).
  std::pair<HloInstruction*, HloInstruction*> AddWithCarry(HloInstruction* a, HloInstruction* b) {
    HloInstruction* sum = w_.f().Add(a, b);
    return {sum, w_.f().Compare(sum, b, ComparisonDirection::kLt)};
  }
  static HloInstruction* Carry(WordOps& ops, HloInstruction* word, HloInstruction* carry) {
    return ops.f().Add(word, ops.b().Convert(carry, U32));
  }

  // Threefry-2x32 of the counter state_[2..3] + the block of each element; the new counter in `next`.
  HloInstruction* ThreeFry(std::vector<HloInstruction*>* next) {
    const int64_t split = hlo::ThreeFrySplitDimension(dims_);
    std::vector<uint32_t> blocks;
    std::vector<bool> second;
    int64_t computed = 1;
    if (split < 0) {
      blocks = {0};
      second = {false};
    } else {
      int64_t outer = 1, inner = 1;
      for (int64_t d = 0; d < split; ++d) outer *= dims_[d];
      for (size_t d = static_cast<size_t>(split) + 1; d < dims_.size(); ++d) inner *= dims_[d];
      const int64_t size = dims_[static_cast<size_t>(split)], half = (size + 1) / 2;
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t c = 0; c < size; ++c)
          for (int64_t i = 0; i < inner; ++i) {
            blocks.push_back(static_cast<uint32_t>((o * half + c / 2) * inner + i));
            second.push_back(c % 2 == 1);
          }
      computed = outer * half * inner;
    }
    auto [x0, carry] = AddWithCarry(w_.Broadcast(state_[2]), Table(blocks));
    HloInstruction* x1 = Carry(w_, w_.Broadcast(state_[3]), carry);
    // Key schedule: ks2 = k0 ^ k1 ^ C; the injection after group g adds ks[(g+1)%3] to a and
    // ks[(g+2)%3] + g + 1 to b.
    ElementwiseBuilder& f = w_.f();
    HloInstruction* ks[3] = {state_[0], state_[1],
                             s_.Xor(s_.Xor(state_[0], state_[1]), s_.Scalar(hlo::kThreeFryKeyParity))};
    HloBuilder& builder = w_.b();
    std::vector<HloInstruction*> init = {builder.Add(HloInstruction::CreateConstant(hlo::Literal::CreateR0<int32_t>(0))),
                                         f.Add(x0, w_.Broadcast(ks[0])), f.Add(x1, w_.Broadcast(ks[1]))};
    for (const auto& rotations : hlo::kThreeFryRotations) {
      for (int r : rotations) init.push_back(s_.Scalar(static_cast<uint32_t>(r)));
    }
    init.insert(init.end(), {ks[1], ks[2], ks[0], s_.Scalar(1)});
    HloInstruction* loop = builder.Add(HloInstruction::Create(
        HloOpcode::kWhile, ThreeFryLoopShape(dims_), {builder.Add(HloInstruction::CreateTuple(init))}));
    loop->AddCalledComputation("condition", CountedCondition(module_, "three_fry_condition", ThreeFryLoopShape(dims_),
                                                             kGroup, kThreeFryGroups));
    loop->AddCalledComputation("body", ThreeFryGroup(module_, dims_));
    HloInstruction* a = builder.Add(HloInstruction::CreateGetTupleElement(loop, kA));
    HloInstruction* b = builder.Add(HloInstruction::CreateGetTupleElement(loop, kB));
    // counter + computed (fewer than 2^32 blocks).
    HloInstruction* low = s_.f().Add(state_[2], s_.Scalar(static_cast<uint32_t>(computed)));
    HloInstruction* wrapped = s_.f().Compare(low, s_.Scalar(static_cast<uint32_t>(computed)), ComparisonDirection::kLt);
    *next = {low, Carry(s_, state_[3], wrapped)};
    return f.Select(Table(second), b, a);
  }

  // Philox-4x32 of the u128 counter + the block of each element (four words a block), its rounds in a
  // counted loop; the new counter (its low 64 bits for a two-word state) in `next`.
  HloInstruction* Philox(std::vector<HloInstruction*>* next) {
    const bool three = state_.size() == 6;
    // The counter's words, low first: state[1], then state[2] (three words) or the key state[0] again.
    HloInstruction* counter[4] = {state_[2], state_[3], three ? state_[4] : state_[0], three ? state_[5] : state_[1]};
    int64_t elements = 1;
    for (int64_t d : dims_) elements *= d;
    std::vector<uint32_t> blocks;
    std::vector<bool> word[3];
    for (int64_t e = 0; e < elements; ++e) {
      blocks.push_back(static_cast<uint32_t>(e / 4));
      for (int w = 0; w < 3; ++w) word[w].push_back(e % 4 == w);
    }
    ElementwiseBuilder& f = w_.f();
    HloInstruction* x[4];
    HloInstruction* carry;
    std::tie(x[0], carry) = AddWithCarry(w_.Broadcast(counter[0]), Table(blocks));
    for (int w = 1; w < 4; ++w) {
      x[w] = Carry(w_, w_.Broadcast(counter[w]), carry);
      if (w < 3) carry = f.Binary(HloOpcode::kAnd, carry, f.Compare(x[w], w_.Splat(0), ComparisonDirection::kEq));
    }
    HloBuilder& b = w_.b();
    HloInstruction* init = b.Add(HloInstruction::CreateTuple(
        {b.Add(HloInstruction::CreateConstant(hlo::Literal::CreateR0<int32_t>(0))), x[0], x[1], x[2], x[3], state_[0],
         state_[1]}));
    HloInstruction* loop = b.Add(HloInstruction::Create(HloOpcode::kWhile, PhiloxLoopShape(dims_), {init}));
    loop->AddCalledComputation("condition", CountedCondition(module_, "philox_condition", PhiloxLoopShape(dims_), 0,
                                                             kPhiloxRounds));
    loop->AddCalledComputation("body", PhiloxRound(module_, dims_));
    for (int w = 0; w < 4; ++w) x[w] = b.Add(HloInstruction::CreateGetTupleElement(loop, w + 1));
    // counter + blocks (fewer than 2^32), carried through the words the state keeps.
    const uint32_t used = static_cast<uint32_t>((elements + 3) / 4);
    HloInstruction* low = s_.f().Add(counter[0], s_.Scalar(used));
    HloInstruction* wrapped = s_.f().Compare(low, s_.Scalar(used), ComparisonDirection::kLt);
    next->push_back(low);
    const int kept = three ? 4 : 2;
    for (int w = 1; w < kept; ++w) {
      next->push_back(Carry(s_, counter[w], wrapped));
      if (w + 1 < kept) {
        wrapped = s_.f().Binary(HloOpcode::kAnd, wrapped,
                                s_.f().Compare(next->back(), s_.Scalar(0), ComparisonDirection::kEq));
      }
    }
    return f.Select(Table(word[0]), x[0], f.Select(Table(word[1]), x[1], f.Select(Table(word[2]), x[2], x[3])));
  }

  hlo::HloModule* module_;
  const Plan& plan_;
  std::vector<int64_t> dims_;
  WordOps w_;
  WordOps s_;
  std::vector<HloInstruction*> state_;  // the state's u32 words as scalars, low first
};

}  // namespace

StatusOr<bool> RngBitGeneratorExpansion::Run(hlo::HloModule* module) {
  bool changed = false;
  for (HloComputation* computation : ProgramComputations(module)) {
    std::unordered_map<const HloInstruction*, bool> run_time;
    std::vector<HloInstruction*> generators;
    for (HloInstruction* instruction : computation->MakeInstructionPostOrder()) {
      if (instruction->opcode() != HloOpcode::kRngBitGenerator) continue;
      // A state of constants folds (fold-parameter-independent) to the interpreter's values.
      if (NeedsRunTimeValues(instruction->operand(0), &run_time)) generators.push_back(instruction);
    }
    for (HloInstruction* generator : generators) {
      TPU_ASSIGN_OR_RETURN(Plan plan, MakePlan(generator));
      TPU_RETURN_IF_ERROR(Expander(module, computation, plan).Run());
      changed = true;
    }
  }
  return changed;
}

}  // namespace tpu::compiler
