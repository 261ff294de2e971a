// program_fuzz_seeds OUT_DIR [FILE.hlo ...]: writes seed inputs for program_fuzzer (program_input.h):
// hand-written programs that use every unit, host DMA descriptors in and out of range, and the code the
// compiler generates for each given HLO module on the tiny target (relocations left unpatched: the
// addresses are as good as any for the fuzzer).
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/driver/compile.h"
#include "compiler/hlo/parser.h"
#include "compiler/hlo/verifier.h"
#include "sim/model/disassembler.h"
#include "tb/fuzz/program_input.h"
#include "tpu_config.h"
#include "tpu_csr.h"
#include "tpu_isa.h"

namespace {

using tpu::fuzz::ProgramFuzzInput;
using tpu::isa::Opcode;
using tpu::model::Assemble;

bool WriteSeed(const std::string& dir, const std::string& name, const ProgramFuzzInput& input) {
  const std::vector<uint8_t> bytes = tpu::fuzz::EncodeProgramFuzzInput(input);
  std::ofstream out(dir + "/" + name, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(out);
}

ProgramFuzzInput Basic(std::vector<uint64_t> program) {
  ProgramFuzzInput input;
  input.cycle_budget = 20000;
  input.watchdog_limit = 5000;
  input.irq_enable = 0xF;
  input.options = 16u << 8;  // 16 lines of data
  input.data_seed = 1;
  input.program = std::move(program);
  return input;
}

// Loads 8 lines from HBM, multiplies them by themselves on the MXU, adds on the VPU, stores back.
std::vector<uint64_t> AllUnitsProgram() {
  const uint8_t flags_all = tpu::isa::flag::SYNC_DMA | tpu::isa::flag::SYNC_MXU | tpu::isa::flag::SYNC_VPU;
  return {
      Assemble(Opcode::LI, 1, 0, 0, 0, 0, 0),     // s1 = HBM line 0
      Assemble(Opcode::LI, 2, 0, 0, 0, 0, 64),    // s2 = VMEM line 64
      Assemble(Opcode::LI, 3, 0, 0, 0, 0, 8),     // s3 = 8 lines
      Assemble(Opcode::LI, 4, 0, 0, 0, 0, 128),   // s4 = VMEM line 128
      Assemble(Opcode::LI, 5, 0, 0, 0, 0, 256),   // s5 = VMEM line 256
      Assemble(Opcode::DMA_LD, 0, 1, 2, 3, 0, 1),
      Assemble(Opcode::SYNC, 0, 0, 0, 0, flags_all),
      Assemble(Opcode::MXU_LW, 0, 2, 0, 0, 0),
      Assemble(Opcode::MXU_MM, 0, 2, 4, 3, tpu::isa::flag::MXU_MM_SWAP),
      Assemble(Opcode::SYNC, 0, 0, 0, 0, flags_all),
      Assemble(Opcode::VADD, 5, 4, 2, 3, 0, 0),
      Assemble(Opcode::VEXP, 5, 5, 0, 3, 0, 0),
      Assemble(Opcode::VTRANS, 4, 5, 0, 3, 0, 0),
      Assemble(Opcode::SYNC, 0, 0, 0, 0, flags_all),
      Assemble(Opcode::DMA_ST, 0, 1, 5, 3, 0, 1),
      Assemble(Opcode::SYNC, 0, 0, 0, 0, flags_all),
      Assemble(Opcode::HALT),
  };
}

// A counted loop of scalar instructions.
std::vector<uint64_t> LoopProgram() {
  return {
      Assemble(Opcode::LI, 1, 0, 0, 0, 0, 100),
      Assemble(Opcode::ADDI, 2, 2, 0, 0, 0, 1),
      Assemble(Opcode::MUL, 3, 2, 2),
      Assemble(Opcode::BLT, 0, 2, 1, 0, 0, 1),
      Assemble(Opcode::HALT),
  };
}

// RDMA over the core network with semaphore posts: to the other core and to itself, then a wait on the
// post to itself and a post to the host.
std::vector<uint64_t> RdmaSemaphoreProgram() {
  const uint8_t post = tpu::isa::flag::RDMA_POST;
  return {
      Assemble(Opcode::LI, 1, 0, 0, 0, 0, 0),       // s1 = HBM line 0
      Assemble(Opcode::LI, 2, 0, 0, 0, 0, 64),      // s2 = VMEM line 64
      Assemble(Opcode::LI, 3, 0, 0, 0, 0, 8),       // s3 = 8 lines
      Assemble(Opcode::LI, 4, 0, 0, 0, 0, 1),       // s4 = core 1
      Assemble(Opcode::RDMA, 4, 1, 2, 3, post, 1),  // core 1's semaphore 1
      Assemble(Opcode::RDMA, 0, 1, 2, 3, post, 2),  // core 0 (s0): its own semaphore 2
      Assemble(Opcode::SEMWAIT, 0, 0, 0, 0, 0, 2),
      Assemble(Opcode::SEMPOST, 0, 0, 0, 0, 0, 0),  // a host semaphore: IRQ SEM_POST
      Assemble(Opcode::SYNC, 0, 0, 0, 0, tpu::isa::flag::SYNC_ICI),
      Assemble(Opcode::HALT),
  };
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: program_fuzz_seeds OUT_DIR [FILE.hlo ...]\n";
    return 1;
  }
  const std::string dir = argv[1];
  bool ok = true;
  ok &= WriteSeed(dir, "halt", Basic({Assemble(Opcode::HALT)}));
  ok &= WriteSeed(dir, "all_units", Basic(AllUnitsProgram()));
  ok &= WriteSeed(dir, "loop", Basic(LoopProgram()));
  ok &= WriteSeed(dir, "spin", Basic({Assemble(Opcode::JMP, 0, 0, 0, 0, 0, 0)}));
  ok &= WriteSeed(dir, "illegal", Basic({uint64_t{0xFF} << 56}));
  ok &= WriteSeed(dir, "rdma_semaphores", Basic(RdmaSemaphoreProgram()));
  ProgramFuzzInput to_hbm = Basic({Assemble(Opcode::HALT)});
  to_hbm.hdma_host_lo = 4096;
  to_hbm.hdma_hbm_line = 100;
  to_hbm.hdma_lines = 64;
  to_hbm.hdma_ctrl = tpu::csr::HDMA_CTRL_START;
  ok &= WriteSeed(dir, "hdma_to_hbm", to_hbm);
  ProgramFuzzInput to_host_out_of_range = to_hbm;
  to_host_out_of_range.hdma_host_lo = 0xFFFFF000u;  // beyond the 256 MiB of host memory
  to_host_out_of_range.hdma_ctrl = tpu::csr::HDMA_CTRL_START | tpu::csr::HDMA_CTRL_TO_HOST;
  to_host_out_of_range.options |= tpu::fuzz::kOptionHostDmaMidRun;
  ok &= WriteSeed(dir, "hdma_to_host_bus_error", to_host_out_of_range);

  // Compiled programs: what real code looks like.
  tpu::compiler::CompileModuleOptions options;
  options.codegen.lanes = static_cast<uint32_t>(tpu::cfg::kLanes);
  options.codegen.vmem_lines = static_cast<uint32_t>(tpu::cfg::kVmemLines);
  options.codegen.imem_words = static_cast<uint32_t>(tpu::cfg::kImemWords);
  options.codegen.hbm_lines = tpu::cfg::kHbmLines;
  for (int i = 2; i < argc; ++i) {
    std::ifstream in(argv[i]);
    std::stringstream text;
    text << in.rdbuf();
    auto module = tpu::hlo::ParseHloModule(text.str());
    if (!module.ok() || !tpu::hlo::VerifyHloModule(*module.value()).ok()) {
      std::cerr << argv[i] << ": not a valid module, skipped\n";
      continue;
    }
    auto program = tpu::compiler::CompileModule(module.value().get(), options);
    if (!program.ok()) {
      std::cerr << argv[i] << ": " << program.status().ToString() << ", skipped\n";
      continue;
    }
    std::string name = argv[i];
    name = name.substr(name.find_last_of('/') + 1);
    ok &= WriteSeed(dir, "compiled_" + name, Basic(program.value().code));
  }
  if (!ok) {
    std::cerr << "program_fuzz_seeds: cannot write to " << dir << "\n";
    return 1;
  }
  return 0;
}
