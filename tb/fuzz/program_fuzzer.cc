// program_fuzzer: random instruction streams, CSR writes and host DMA descriptors on the reference model
// (sim/model/chip_model.h), loaded and started the way the driver does it: program words through the
// IMEM window, START_PC, DOORBELL. The layout of an input is in program_input.h.
//
// What must hold for every input (a violation aborts, so libFuzzer saves the input):
//  - the host never crashes (sanitizers), and each run is bounded by a small cycle budget;
//  - a core that stopped reports HALTED or ERROR (not both), and ERROR comes with a known ERROR_CODE and
//    the CORE_ERROR interrupt;
//  - a finished host DMA that failed has an error code;
//  - after SOFT_RESET the chip is idle and still runs a one-word HALT program to completion.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <algorithm>
#include <cstdlib>
#include <random>
#include <vector>

#include "sim/model/chip_config.h"
#include "sim/model/chip_model.h"
#include "sim/model/disassembler.h"
#include "tb/fuzz/program_input.h"
#include "tpu_config.h"
#include "tpu_csr.h"
#include "tpu_isa.h"

namespace {

namespace csr = tpu::csr;
using tpu::fuzz::ProgramFuzzInput;
using tpu::model::ChipModel;

[[noreturn]] void Fail(const char* what, ChipModel& model) {
  std::fprintf(stderr, "program_fuzzer: %s (STATUS=0x%x ERROR_CODE=%u ERROR_PC=%u IRQ_STATUS=0x%x HDMA_STATUS=0x%x)\n",
               what, model.MmioRead(csr::STATUS), model.MmioRead(csr::ERROR_CODE), model.MmioRead(csr::ERROR_PC),
               model.MmioRead(csr::IRQ_STATUS), model.MmioRead(csr::HDMA_STATUS));
  std::abort();
}

void LoadProgram(ChipModel& model, const std::vector<uint64_t>& program) {
  for (size_t i = 0; i < program.size(); ++i) {
    const uint32_t offset = csr::IMEM_WINDOW + 8 * static_cast<uint32_t>(i);
    model.MmioWrite(offset, static_cast<uint32_t>(program[i]));
    model.MmioWrite(offset + 4, static_cast<uint32_t>(program[i] >> 32));
  }
}

// Pseudo-random floats (finite and special values) in the first lines of VMEM and HBM, so that vector
// and matrix instructions see varied operands.
void FillData(ChipModel& model, uint32_t lines, uint32_t seed) {
  if (lines == 0) return;
  static const uint32_t kSpecials[] = {0x00000000u, 0x80000000u, 0x00000001u, 0x7F800000u, 0xFF800000u,
                                       0x7FC00000u, 0x7F7FFFFFu, 0x00800000u, 0x3F800000u, 0xBF800000u};
  std::mt19937 rng(seed);
  std::vector<uint32_t> words(size_t{lines} * model.config().lanes);
  for (uint32_t& word : words) word = (rng() % 8 == 0) ? kSpecials[rng() % std::size(kSpecials)] : rng();
  (void)model.WriteVmem(0, words.data(), lines);
  (void)model.WriteHbm(0, words.data(), lines);
}

void StartHostDma(ChipModel& model, const ProgramFuzzInput& input) {
  model.MmioWrite(csr::HDMA_HOST_LO, input.hdma_host_lo);
  model.MmioWrite(csr::HDMA_HOST_HI, input.hdma_host_hi);
  model.MmioWrite(csr::HDMA_HBM_LINE, input.hdma_hbm_line);
  model.MmioWrite(csr::HDMA_LINES, input.hdma_lines);
  model.MmioWrite(csr::HDMA_CTRL, input.hdma_ctrl);
}

// A write that takes the core or its status away from what this input started makes the end state
// unpredictable; the invariants on STATUS and IRQ_STATUS are then skipped.
bool MmioWriteDisturbsStatus(uint32_t offset) {
  return offset == csr::SOFT_RESET || offset == csr::DOORBELL || offset == csr::IRQ_STATUS ||
         offset == csr::HDMA_CTRL;
}

// Runs until the chip is idle, `cycles` cycles pass or the core has retired kMaxInstructions (INSTRET), in
// slices that end exactly where one run of the same length would be.
static_assert(tpu::fuzz::kMaxInstructions > tpu::cfg::kImemWords, "a run off the end of the IMEM must end in BAD_PC");
void RunBounded(ChipModel& model, uint64_t cycles) {
  constexpr uint64_t kSlice = 1000;
  while (cycles > 0 && model.MmioRead(csr::INSTRET) < tpu::fuzz::kMaxInstructions) {
    const uint64_t slice = std::min(cycles, kSlice);
    if (model.Run(slice) < slice) break;  // idle
    cycles -= slice;
  }
}

void CheckStoppedCore(ChipModel& model, bool check_irq) {
  const uint32_t status = model.MmioRead(csr::STATUS);
  const bool halted = (status & csr::STATUS_HALTED) != 0;
  const bool error = (status & csr::STATUS_ERROR) != 0;
  if (!halted && !error) Fail("core stopped without HALTED or ERROR", model);
  if (halted && error) Fail("core reports both HALTED and ERROR", model);
  if (error) {
    const uint32_t code = model.MmioRead(csr::ERROR_CODE);
    if (code == 0 || std::string_view(tpu::isa::ErrorName(code)) == "UNKNOWN_ERROR") {
      Fail("ERROR without a known ERROR_CODE", model);
    }
    if (check_irq && (model.MmioRead(csr::IRQ_STATUS) & csr::IRQ_STATUS_CORE_ERROR) == 0) {
      Fail("ERROR without the CORE_ERROR interrupt", model);
    }
  } else if (check_irq && (model.MmioRead(csr::IRQ_STATUS) & csr::IRQ_STATUS_CORE_DONE) == 0) {
    Fail("HALTED without the CORE_DONE interrupt", model);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const tpu::model::ChipConfig config = tpu::model::ChipConfig::Build();
  const ProgramFuzzInput input = tpu::fuzz::DecodeProgramFuzzInput(data, size, config.imem_words);
  (void)tpu::model::DisassembleProgram(input.program);  // the disassembler must take any word too

  // One chip for every input, new for the first and returned to that state by Reset() after each
  // (chip_model_test checks that a reset chip and a new one behave alike); a fraction of building one.
  static ChipModel model(config);
  FillData(model, (input.options >> 8) & 0xFF, input.data_seed);
  LoadProgram(model, input.program);
  model.MmioWrite(csr::WATCHDOG_LIMIT, input.watchdog_limit);
  model.MmioWrite(csr::IRQ_ENABLE, input.irq_enable);
  model.MmioWrite(csr::START_PC, input.start_pc);
  const bool host_dma_mid_run = (input.options & tpu::fuzz::kOptionHostDmaMidRun) != 0;
  if (!host_dma_mid_run) StartHostDma(model, input);

  const uint64_t budget = 1 + input.cycle_budget % tpu::fuzz::kMaxCycleBudget;
  model.MmioWrite(csr::DOORBELL, 1);
  if ((model.MmioRead(csr::STATUS) & csr::STATUS_BUSY) == 0) Fail("the doorbell did not start the core", model);
  RunBounded(model, budget / 2);
  if (host_dma_mid_run) StartHostDma(model, input);
  // Only CSRs and the IMEM window are mapped; fold the offset onto them (IMEM writes while BUSY are dropped).
  const uint32_t mmio_offset = (input.mmio_offset & 0x80000u) | (input.mmio_offset & 0xFFu);
  model.MmioWrite(mmio_offset, input.mmio_value);
  RunBounded(model, budget - budget / 2);

  const bool undisturbed = !MmioWriteDisturbsStatus(mmio_offset);
  if (!model.CoreBusy() && undisturbed) CheckStoppedCore(model, /*check_irq=*/true);
  if (!model.HostDmaBusy() && undisturbed) {
    const uint32_t hdma_status = model.MmioRead(csr::HDMA_STATUS);
    if ((hdma_status & csr::HDMA_STATUS_ERROR) != 0 && (hdma_status & csr::HDMA_STATUS_CODE) == 0) {
      Fail("host DMA error without an error code", model);
    }
  }

  // Whatever the program did, a soft reset returns the chip to idle and it runs the next program.
  model.MmioWrite(csr::SOFT_RESET, 1);
  model.Run(1000);
  if (model.CoreBusy() || model.HostDmaBusy()) Fail("busy after SOFT_RESET", model);
  model.MmioWrite(csr::WATCHDOG_LIMIT, 1000000);
  LoadProgram(model, {tpu::model::Assemble(tpu::isa::Opcode::HALT)});
  model.MmioWrite(csr::START_PC, 0);
  model.MmioWrite(csr::IRQ_STATUS, ~0u);
  model.MmioWrite(csr::DOORBELL, 1);
  model.Run(1000);
  if (model.CoreBusy()) Fail("a HALT program did not finish after SOFT_RESET", model);
  CheckStoppedCore(model, /*check_irq=*/true);
  if ((model.MmioRead(csr::STATUS) & csr::STATUS_HALTED) == 0) Fail("a HALT program did not halt", model);
  // Here rather than before the next input: the memory pages this input allocated are freed within it, so
  // that libFuzzer does not take them for a leak and run its leak check.
  model.Reset();
  return 0;
}
