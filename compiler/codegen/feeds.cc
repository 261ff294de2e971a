// infeed, outfeed and after-all: values that cross between the host and the running program.
//
// The program and the host share one HBM slot per direction and the host semaphores of docs/csr.md. An
// infeed waits for SEM_INFEED_FULL (the host wrote the next value into the infeed slot), copies each
// element of the slot into its own buffer and posts SEM_INFEED_FREE; an outfeed waits for
// SEM_OUTFEED_FREE (the host has read the previous value), copies its elements into the outfeed slot and
// posts SEM_OUTFEED_FULL. Tokens order the side effects in HLO and hold no data: after-all has no code
// and no buffer. The order of infeeds (outfeeds) in the program is the program order, as in the HLO.
#include "compiler/codegen/codegen_internal.h"
#include "compiler/hlo/verifier.h"
#include "tpu_csr.h"

namespace tpu::compiler::codegen_internal {

namespace {

const hlo::Shape& InfeedData(const HloInstruction& infeed) { return infeed.shape().tuple_shapes.at(0); }

// The arrays a feed carries: its data's elements, or the data itself.
std::vector<hlo::Shape> DataElements(const hlo::Shape& data) {
  return data.IsTuple() ? data.tuple_shapes : std::vector<hlo::Shape>{data};
}

// An array or a tuple of arrays (what the slots hold), else Unimplemented naming the feed.
Status CheckArrays(const HloInstruction& feed, const hlo::Shape& data) {
  for (const hlo::Shape& element : DataElements(data)) {
    if (!element.IsArray()) {
      return Unimplemented(feed.opcode_name() + " " + feed.name() + " of " + data.ToString() +
                           ": the data must be an array or a tuple of arrays");
    }
  }
  return OkStatus();
}

Status CheckInfeed(const HloInstruction& infeed) {
  const hlo::Shape& data = InfeedData(infeed);
  TPU_RETURN_IF_ERROR(CheckArrays(infeed, data));
  TPU_RETURN_IF_ERROR(hlo::CheckTpuInfeedTypes(data));
  for (const HloInstruction* user : infeed.users()) {
    if (user->opcode() != HloOpcode::kGetTupleElement) {
      return Unimplemented("infeed " + infeed.name() + " is used by " + user->name() +
                           "; only its get-tuple-elements may use it");
    }
    if (user->tuple_index() == 0 && data.IsTuple()) {
      for (const HloInstruction* element : user->users()) {
        if (element->opcode() != HloOpcode::kGetTupleElement) {
          return Unimplemented("the data tuple " + user->name() + " of infeed " + infeed.name() + " is used by " +
                               element->name() + "; only its get-tuple-elements may use it");
        }
      }
    }
  }
  return OkStatus();
}

Status CheckOutfeed(const HloInstruction& outfeed) {
  const hlo::Shape& data = outfeed.operand(0)->shape();
  TPU_RETURN_IF_ERROR(CheckArrays(outfeed, data));
  if (data.IsTuple() && outfeed.operand(0)->opcode() != HloOpcode::kTuple) {
    return Unimplemented("outfeed " + outfeed.name() + " sends " + outfeed.operand(0)->name() +
                         "; a tuple it sends must be a tuple instruction");
  }
  return OkStatus();
}

}  // namespace

void CodeGenerator::AddFeedHandlers(OpcodeHandlerTable& table) {
  auto reads_nothing = [](const HloInstruction&, const HloInstruction&, uint32_t) { return false; };
  OpcodeHandler after_all(HloOpcode::kAfterAll);
  after_all.types = ElementTypes::kToken;
  after_all.reads_operand = reads_nothing;
  table.Add(std::move(after_all));

  OpcodeHandler infeed(HloOpcode::kInfeed);
  infeed.check = CheckInfeed;
  infeed.types = ElementTypes::kInfeedValues;  // CheckInfeed
  infeed.reads_operand = reads_nothing;
  infeed.emit = [](CodeGenerator& gen, const HloInstruction& instruction) {
    return gen.EmitFeed(/*infeed=*/true, gen.InfeedElements(instruction));
  };
  table.Add(std::move(infeed));

  // The outfeed reads its elements when it runs (Run counts them as read there).
  OpcodeHandler outfeed(HloOpcode::kOutfeed);
  outfeed.check = CheckOutfeed;
  outfeed.types = ElementTypes::kToken;  // its data is checked where it is defined
  outfeed.reads_operand = reads_nothing;
  outfeed.emit = [](CodeGenerator& gen, const HloInstruction& instruction) {
    return gen.EmitFeed(/*infeed=*/false, gen.OutfeedElements(instruction));
  };
  table.Add(std::move(outfeed));
}

std::vector<const HloInstruction*> CodeGenerator::InfeedElements(const HloInstruction& infeed) const {
  const hlo::Shape& data = InfeedData(infeed);
  std::vector<const HloInstruction*> elements(DataElements(data).size(), nullptr);
  for (const HloInstruction* user : infeed.users()) {
    if (user->tuple_index() != 0) continue;  // the token
    if (!data.IsTuple()) {
      elements[0] = user;
      continue;
    }
    for (const HloInstruction* element : user->users()) elements.at(element->tuple_index()) = element;
  }
  return elements;
}

std::vector<const HloInstruction*> CodeGenerator::OutfeedElements(const HloInstruction& outfeed) const {
  const HloInstruction* data = outfeed.operand(0);
  if (!data->shape().IsTuple()) return {data};
  return std::vector<const HloInstruction*>(data->operands().begin(), data->operands().end());
}

Status CodeGenerator::CollectFeeds(const std::vector<HloInstruction*>& order) {
  const HloInstruction* first_infeed = nullptr;
  const HloInstruction* first_outfeed = nullptr;
  for (const HloInstruction* instruction : order) {
    const bool is_infeed = instruction->opcode() == HloOpcode::kInfeed;
    if (!is_infeed && instruction->opcode() != HloOpcode::kOutfeed) continue;
    std::vector<DeviceLayout> layouts;
    if (is_infeed) {
      for (const hlo::Shape& element : DataElements(InfeedData(*instruction))) {
        layouts.push_back(MakeDeviceLayout(element, L()));
      }
    } else {
      for (const HloInstruction* element : OutfeedElements(*instruction)) {
        layouts.push_back(MakeDeviceLayout(element->shape(), L()));
      }
    }
    const HloInstruction*& first = is_infeed ? first_infeed : first_outfeed;
    std::vector<DeviceLayout>& program_layouts = is_infeed ? program_.infeed : program_.outfeed;
    if (first == nullptr) {
      first = instruction;
      program_layouts = layouts;
    } else if (layouts != program_layouts) {
      return Unimplemented(std::string(is_infeed ? "infeed " : "outfeed ") + instruction->name() + " of " +
                           ShapesText(layouts) + " and " + first->name() + " of " + ShapesText(program_layouts) +
                           "; a program's infeeds carry one shape, and its outfeeds one shape");
    }
  }
  return OkStatus();
}

Status CodeGenerator::EmitFeed(bool infeed, const std::vector<const HloInstruction*>& values) {
  const std::vector<DeviceLayout>& layouts = infeed ? program_.infeed : program_.outfeed;
  const std::vector<uint32_t> offsets = FeedOffsets(layouts);
  asm_.SemWait(infeed ? csr::SEM_INFEED_FULL : csr::SEM_OUTFEED_FREE);
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] == nullptr || locations_.count(BufferOf(values[i])) == 0) continue;  // an infeed nothing reads
    const Location slot{infeed ? RegionKind::kInfeed : RegionKind::kOutfeed, 0, offsets[i]};
    const Location buffer = locations_.at(BufferOf(values[i]));
    TPU_RETURN_IF_ERROR(EmitCopyLines(infeed ? slot : buffer, infeed ? buffer : slot, layouts[i].lines));
  }
  // The slot is read (infeed) or written (outfeed) before the host may touch it.
  asm_.Sync(kSyncDma);
  asm_.SemPost(infeed ? csr::SEM_INFEED_FREE : csr::SEM_OUTFEED_FULL);
  return OkStatus();
}

}  // namespace tpu::compiler::codegen_internal
