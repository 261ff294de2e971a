// The byte layout of one program_fuzzer input, shared by the fuzzer and the seed writer
// (program_fuzz_seeds.cc). A fixed header of little-endian 32-bit fields, then the program: 64-bit
// little-endian instruction words loaded into IMEM from word 0 (words beyond the IMEM are dropped).
// Short inputs read as zeros past their end, so every byte string is a valid input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace tpu::fuzz {

struct ProgramFuzzInput {
  uint32_t cycle_budget = 0;    // device cycles to run, taken modulo kMaxCycleBudget (plus one)
  uint32_t watchdog_limit = 0;  // WATCHDOG_LIMIT (0 disables the watchdog)
  uint32_t start_pc = 0;        // START_PC, any value (out of range must give BAD_PC)
  uint32_t irq_enable = 0;      // IRQ_ENABLE
  // A host DMA descriptor with arbitrary addresses: HDMA_HOST_LO/HI, HDMA_HBM_LINE, HDMA_LINES, HDMA_CTRL.
  uint32_t hdma_host_lo = 0, hdma_host_hi = 0, hdma_hbm_line = 0, hdma_lines = 0, hdma_ctrl = 0;
  // Bit 0: start the host DMA half-way through the run instead of before the doorbell.
  // Bits 8..15: VMEM/HBM lines pre-filled with pseudo-random floats (seed `data_seed`).
  uint32_t options = 0;
  uint32_t data_seed = 0;
  // One MMIO write half-way through the run (a CSR while the core runs, or the IMEM window).
  uint32_t mmio_offset = 0, mmio_value = 0;
  std::vector<uint64_t> program;
};

inline constexpr size_t kProgramFuzzHeaderWords = 15;
inline constexpr size_t kProgramFuzzHeaderBytes = 4 * kProgramFuzzHeaderWords;
inline constexpr uint32_t kMaxCycleBudget = 100000;
// A run also ends once the core has retired this many instructions (INSTRET): past it, a program is in a
// loop that the budget would only repeat (of 20 000 inputs the fuzzer made, none that stopped by itself
// retired more than 10 000, 8 more than 5 000; the 5% still running when the budget ran out averaged 11 000).
// Above IMEM_WORDS, so that a program running off the end of the IMEM still ends in BAD_PC.
inline constexpr uint32_t kMaxInstructions = 5000;
inline constexpr uint32_t kOptionHostDmaMidRun = 1u << 0;

inline ProgramFuzzInput DecodeProgramFuzzInput(const uint8_t* data, size_t size, size_t max_words) {
  auto word32 = [&](size_t index) {
    uint8_t bytes[4] = {};
    for (size_t i = 0; i < 4; ++i) {
      if (4 * index + i < size) bytes[i] = data[4 * index + i];
    }
    return uint32_t{bytes[0]} | uint32_t{bytes[1]} << 8 | uint32_t{bytes[2]} << 16 | uint32_t{bytes[3]} << 24;
  };
  ProgramFuzzInput input;
  uint32_t* fields[kProgramFuzzHeaderWords] = {
      &input.cycle_budget, &input.watchdog_limit, &input.start_pc,      &input.irq_enable, &input.hdma_host_lo,
      &input.hdma_host_hi, &input.hdma_hbm_line,  &input.hdma_lines,    &input.hdma_ctrl,  &input.options,
      &input.data_seed,    &input.mmio_offset,    &input.mmio_value,    nullptr,           nullptr};
  for (size_t i = 0; i < kProgramFuzzHeaderWords; ++i) {
    if (fields[i] != nullptr) *fields[i] = word32(i);  // the last two words are reserved
  }
  for (size_t offset = kProgramFuzzHeaderBytes; offset < size && input.program.size() < max_words; offset += 8) {
    uint64_t word = 0;
    for (size_t i = 0; i < 8 && offset + i < size; ++i) word |= uint64_t{data[offset + i]} << (8 * i);
    input.program.push_back(word);
  }
  return input;
}

inline std::vector<uint8_t> EncodeProgramFuzzInput(const ProgramFuzzInput& input) {
  const uint32_t header[kProgramFuzzHeaderWords] = {
      input.cycle_budget, input.watchdog_limit, input.start_pc,      input.irq_enable, input.hdma_host_lo,
      input.hdma_host_hi, input.hdma_hbm_line,  input.hdma_lines,    input.hdma_ctrl,  input.options,
      input.data_seed,    input.mmio_offset,    input.mmio_value,    0,                0};
  std::vector<uint8_t> bytes;
  for (uint32_t field : header) {
    for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<uint8_t>(field >> (8 * i)));
  }
  for (uint64_t word : input.program) {
    for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<uint8_t>(word >> (8 * i)));
  }
  return bytes;
}

}  // namespace tpu::fuzz
