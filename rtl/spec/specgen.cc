// specgen: turns the machine-readable ISA, CSR and configuration definitions into the C++ headers and
// the SystemVerilog package that software and RTL include. Run by the build; never edit its outputs.
//
//   specgen ISA_DEF CSR_DEF CONFIG_FILE OUT_DIR
//
// writes OUT_DIR/tpu_isa.h, tpu_csr.h, tpu_config.h, tpu_pkg.sv and tpu_opcodes.gtkw_filter (the
// GTKWave translate filter that shows an 8-bit opcode signal, in hex, as its mnemonic).
#include <cstdint>
#include <cstdio>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Line {
  std::string file;
  int number;
  std::vector<std::string> words;
};

[[noreturn]] void Fail(const Line& line, const std::string& message) {
  std::cerr << line.file << ":" << line.number << ": error: " << message << "\n";
  std::exit(1);
}

std::vector<Line> ReadDefinitions(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    std::cerr << "specgen: cannot open " << path << "\n";
    std::exit(1);
  }
  std::vector<Line> lines;
  std::string text;
  int number = 0;
  while (std::getline(in, text)) {
    ++number;
    if (auto hash = text.find('#'); hash != std::string::npos) text.resize(hash);
    std::istringstream words(text);
    Line line{path, number, {}};
    for (std::string word; words >> word;) line.words.push_back(word);
    if (!line.words.empty()) lines.push_back(line);
  }
  return lines;
}

uint64_t ParseNumber(const Line& line, const std::string& text) {
  char* end = nullptr;
  uint64_t value = std::strtoull(text.c_str(), &end, 0);
  if (text.empty() || *end != '\0') Fail(line, "not a number: '" + text + "'");
  return value;
}

void Expect(const Line& line, size_t words) {
  if (line.words.size() != words) {
    Fail(line, "'" + line.words[0] + "' takes " + std::to_string(words - 1) + " values");
  }
}

std::string Hex(uint64_t value) {
  std::ostringstream out;
  out << "0x" << std::hex << value;
  return out.str();
}

struct Field { std::string name; int msb, lsb; };
struct Opcode { std::string name; uint64_t value; std::string unit; };
struct Flag { std::string opcode, name; int bit; };
struct FlagField { std::string opcode, name; int lsb, width; };
struct Named { std::string name; uint64_t value; };
struct Csr { std::string name; uint64_t offset; std::string access; };
struct BitField { std::string reg, name; int lsb, width; };

struct Spec {
  std::vector<Field> fields;
  std::vector<Opcode> opcodes;
  std::vector<Flag> flags;
  std::vector<FlagField> flag_fields;
  std::vector<Named> errors;
  std::vector<Csr> csrs;
  std::vector<BitField> bits;
  std::vector<Named> consts;
  std::vector<Named> params;
  std::string config_name;
};

void ParseIsa(const std::vector<Line>& lines, Spec& spec) {
  for (const Line& line : lines) {
    const std::string& kind = line.words[0];
    if (kind == "field") {
      Expect(line, 4);
      spec.fields.push_back({line.words[1], int(ParseNumber(line, line.words[2])),
                             int(ParseNumber(line, line.words[3]))});
    } else if (kind == "opcode") {
      Expect(line, 4);
      const std::string& unit = line.words[3];
      if (unit != "seq" && unit != "dma" && unit != "ici" && unit != "mxu" && unit != "vpu") Fail(line, "unknown unit " + unit);
      uint64_t value = ParseNumber(line, line.words[2]);
      for (const Opcode& other : spec.opcodes) {
        if (other.value == value) Fail(line, "opcode value reused by " + other.name);
      }
      spec.opcodes.push_back({line.words[1], value, unit});
    } else if (kind == "flag") {
      Expect(line, 4);
      spec.flags.push_back({line.words[1], line.words[2], int(ParseNumber(line, line.words[3]))});
    } else if (kind == "flagfield") {
      Expect(line, 5);
      spec.flag_fields.push_back({line.words[1], line.words[2], int(ParseNumber(line, line.words[3])),
                                  int(ParseNumber(line, line.words[4]))});
    } else if (kind == "error") {
      Expect(line, 3);
      spec.errors.push_back({line.words[1], ParseNumber(line, line.words[2])});
    } else {
      Fail(line, "unknown definition '" + kind + "'");
    }
  }
}

void ParseCsr(const std::vector<Line>& lines, Spec& spec) {
  for (const Line& line : lines) {
    const std::string& kind = line.words[0];
    if (kind == "csr") {
      Expect(line, 4);
      uint64_t offset = ParseNumber(line, line.words[2]);
      if (offset % 4 != 0) Fail(line, "CSR offsets are multiples of 4");
      spec.csrs.push_back({line.words[1], offset, line.words[3]});
    } else if (kind == "bit") {
      Expect(line, 5);
      spec.bits.push_back({line.words[1], line.words[2], int(ParseNumber(line, line.words[3])),
                           int(ParseNumber(line, line.words[4]))});
    } else if (kind == "const") {
      Expect(line, 3);
      spec.consts.push_back({line.words[1], ParseNumber(line, line.words[2])});
    } else {
      Fail(line, "unknown definition '" + kind + "'");
    }
  }
}

void ParseConfig(const std::vector<Line>& lines, Spec& spec) {
  for (const Line& line : lines) {
    if (line.words[0] != "param") Fail(line, "unknown definition '" + line.words[0] + "'");
    Expect(line, 3);
    spec.params.push_back({line.words[1], ParseNumber(line, line.words[2])});
  }
}

std::string UnitEnum(const std::string& unit) {
  if (unit == "seq") return "Unit::kSequencer";
  if (unit == "dma") return "Unit::kDma";
  if (unit == "ici") return "Unit::kIci";
  if (unit == "mxu") return "Unit::kMxu";
  return "Unit::kVpu";
}

const char* kBanner = "// Generated by specgen from rtl/spec and rtl/config. Do not edit.\n";

std::string IsaHeader(const Spec& spec) {
  std::ostringstream o;
  o << kBanner << "#pragma once\n#include <cstdint>\n\nnamespace tpu::isa {\n\n";
  for (const Field& f : spec.fields) {
    std::string name = f.name;
    name[0] = char(std::toupper(name[0]));
    o << "inline constexpr int k" << name << "Msb = " << f.msb << ";\n";
    o << "inline constexpr int k" << name << "Lsb = " << f.lsb << ";\n";
  }
  o << "\nenum class Opcode : uint8_t {\n";
  for (const Opcode& op : spec.opcodes) o << "  " << op.name << " = " << Hex(op.value) << ",\n";
  o << "};\n\nenum class Unit : uint8_t { kSequencer, kDma, kIci, kMxu, kVpu };\n\n";
  o << "struct OpcodeInfo {\n  Opcode opcode;\n  const char* name;\n  Unit unit;\n};\n\n";
  o << "inline constexpr OpcodeInfo kOpcodes[] = {\n";
  for (const Opcode& op : spec.opcodes) {
    o << "    {Opcode::" << op.name << ", \"" << op.name << "\", " << UnitEnum(op.unit) << "},\n";
  }
  o << "};\n\n// The entry for an opcode value, or nullptr for an illegal opcode.\n";
  o << "inline const OpcodeInfo* FindOpcode(uint8_t value) {\n";
  o << "  for (const OpcodeInfo& info : kOpcodes) {\n";
  o << "    if (static_cast<uint8_t>(info.opcode) == value) return &info;\n  }\n  return nullptr;\n}\n\n";
  o << "// Flag bits, named OPCODE_FLAG.\nnamespace flag {\n";
  for (const Flag& f : spec.flags) {
    o << "inline constexpr uint8_t " << f.opcode << "_" << f.name << " = 1u << " << f.bit << ";\n";
  }
  for (const FlagField& f : spec.flag_fields) {
    o << "inline constexpr int " << f.opcode << "_" << f.name << "_LSB = " << f.lsb << ";\n";
    o << "inline constexpr uint8_t " << f.opcode << "_" << f.name << "_MASK = " << Hex(((1u << f.width) - 1) << f.lsb)
      << ";\n";
  }
  o << "}  // namespace flag\n\nenum class Error : uint8_t {\n";
  for (const Named& e : spec.errors) o << "  " << e.name << " = " << e.value << ",\n";
  o << "};\n\ninline const char* ErrorName(uint32_t code) {\n  switch (code) {\n";
  for (const Named& e : spec.errors) o << "    case " << e.value << ": return \"" << e.name << "\";\n";
  o << "    default: return \"UNKNOWN_ERROR\";\n  }\n}\n\n";
  o << "// One decoded instruction word.\nstruct Instr {\n";
  for (const Field& f : spec.fields) {
    o << "  " << (f.msb - f.lsb + 1 > 8 ? "uint32_t " : "uint8_t ") << f.name << " = 0;\n";
  }
  o << "};\n\ninline constexpr uint64_t Encode(const Instr& instr) {\n  uint64_t word = 0;\n";
  for (const Field& f : spec.fields) {
    int width = f.msb - f.lsb + 1;
    uint64_t mask = width == 64 ? ~0ull : ((1ull << width) - 1);
    o << "  word |= (uint64_t(instr." << f.name << ") & " << Hex(mask) << "ull) << " << f.lsb << ";\n";
  }
  o << "  return word;\n}\n\ninline constexpr Instr Decode(uint64_t word) {\n  Instr instr;\n";
  for (const Field& f : spec.fields) {
    int width = f.msb - f.lsb + 1;
    o << "  instr." << f.name << " = static_cast<" << (width > 8 ? "uint32_t" : "uint8_t") << ">((word >> "
      << f.lsb << ") & " << Hex((1ull << width) - 1) << "ull);\n";
  }
  o << "  return instr;\n}\n\n}  // namespace tpu::isa\n";
  return o.str();
}

std::string CsrHeader(const Spec& spec) {
  std::ostringstream o;
  o << kBanner << "#pragma once\n#include <cstdint>\n\nnamespace tpu::csr {\n\n";
  for (const Csr& c : spec.csrs) o << "inline constexpr uint32_t " << c.name << " = " << Hex(c.offset) << ";\n";
  o << "\n";
  for (const BitField& b : spec.bits) {
    o << "inline constexpr int " << b.reg << "_" << b.name << "_LSB = " << b.lsb << ";\n";
    o << "inline constexpr uint32_t " << b.reg << "_" << b.name << " = " << Hex(((1ull << b.width) - 1) << b.lsb)
      << "u;\n";
  }
  o << "\n";
  for (const Named& c : spec.consts) o << "inline constexpr uint32_t " << c.name << " = " << Hex(c.value) << "u;\n";
  o << "\nstruct CsrInfo {\n  uint32_t offset;\n  const char* name;\n  const char* access;\n};\n\n";
  o << "inline constexpr CsrInfo kCsrs[] = {\n";
  for (const Csr& c : spec.csrs) o << "    {" << Hex(c.offset) << ", \"" << c.name << "\", \"" << c.access << "\"},\n";
  o << "};\n\n}  // namespace tpu::csr\n";
  return o.str();
}

std::string ConfigHeader(const Spec& spec) {
  std::ostringstream o;
  o << kBanner << "#pragma once\n#include <cstdint>\n\n// The configuration this build's RTL was generated for.\n";
  o << "namespace tpu::cfg {\n\ninline constexpr const char* kName = \"" << spec.config_name << "\";\n";
  for (const Named& p : spec.params) {
    std::string name = "k";
    bool upper = true;
    for (char ch : p.name) {
      if (ch == '_') { upper = true; continue; }
      name += upper ? ch : char(std::tolower(ch));
      upper = false;
    }
    o << "inline constexpr uint64_t " << name << " = " << p.value << "ull;\n";
  }
  o << "\n}  // namespace tpu::cfg\n";
  return o.str();
}

std::string SvPackage(const Spec& spec) {
  std::ostringstream o;
  o << kBanner << "// verilator lint_off UNUSEDPARAM\n"
    << "// Not every block uses every definition; the package is the whole specification.\n"
    << "package tpu_pkg;\n\n  // Configuration '" << spec.config_name << "'.\n";
  for (const Named& p : spec.params) {
    o << "  localparam int unsigned " << p.name << " = " << p.value << ";\n";
  }
  o << "  localparam int unsigned LINE_W = LANES * 32;\n\n  // Instruction fields.\n";
  for (const Field& f : spec.fields) {
    std::string up;
    for (char ch : f.name) up += char(std::toupper(ch));
    o << "  localparam int unsigned INSN_" << up << "_MSB = " << f.msb << ";\n";
    o << "  localparam int unsigned INSN_" << up << "_LSB = " << f.lsb << ";\n";
  }
  o << "\n  // Opcodes.\n";
  for (const Opcode& op : spec.opcodes) {
    o << "  localparam logic [7:0] OP_" << op.name << " = 8'h" << Hex(op.value).substr(2) << ";\n";
  }
  o << "\n  // Flag bit positions.\n";
  for (const Flag& f : spec.flags) {
    o << "  localparam int unsigned FLAG_" << f.opcode << "_" << f.name << " = " << f.bit << ";\n";
  }
  for (const FlagField& f : spec.flag_fields) {
    o << "  localparam int unsigned FLAG_" << f.opcode << "_" << f.name << "_LSB = " << f.lsb << ";\n";
    o << "  localparam int unsigned FLAG_" << f.opcode << "_" << f.name << "_WIDTH = " << f.width << ";\n";
  }
  o << "\n  // Error codes.\n";
  for (const Named& e : spec.errors) o << "  localparam logic [7:0] ERR_" << e.name << " = 8'd" << e.value << ";\n";
  o << "\n  // CSR byte offsets.\n";
  for (const Csr& c : spec.csrs) {
    o << "  localparam logic [19:0] CSR_" << c.name << " = 20'h" << Hex(c.offset).substr(2) << ";\n";
  }
  o << "\n  // CSR bit fields (LSB positions and widths).\n";
  for (const BitField& b : spec.bits) {
    o << "  localparam int unsigned " << b.reg << "_" << b.name << "_LSB = " << b.lsb << ";\n";
    o << "  localparam int unsigned " << b.reg << "_" << b.name << "_WIDTH = " << b.width << ";\n";
  }
  o << "\n  // Constants.\n";
  for (const Named& c : spec.consts) o << "  localparam logic [31:0] " << c.name << " = 32'h" << Hex(c.value).substr(2) << ";\n";
  o << "\nendpackage\n// verilator lint_on UNUSEDPARAM\n";
  return o.str();
}

// GTKWave translate filter: "<value as GTKWave prints the 8-bit signal in hex> <mnemonic>" per line.
std::string GtkwaveOpcodeFilter(const Spec& spec) {
  std::ostringstream o;
  o << "# Generated by specgen from rtl/spec/isa.def. Do not edit.\n";
  o << "# GTKWave translate filter: an 8-bit opcode (hex) as its mnemonic (sim/chip.gtkw).\n";
  for (const Opcode& op : spec.opcodes) {
    char value[8];
    std::snprintf(value, sizeof(value), "%02X", static_cast<unsigned>(op.value));
    o << value << " " << op.name << "\n";
  }
  return o.str();
}

// Writes only when the text changed, so dependent targets do not rebuild needlessly.
void WriteIfChanged(const std::string& path, const std::string& text) {
  {
    std::ifstream in(path);
    std::stringstream old;
    old << in.rdbuf();
    if (in && old.str() == text) return;
  }
  std::ofstream out(path);
  out << text;
  if (!out) {
    std::cerr << "specgen: cannot write " << path << "\n";
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::cerr << "usage: specgen ISA_DEF CSR_DEF CONFIG_FILE OUT_DIR\n";
    return 2;
  }
  Spec spec;
  ParseIsa(ReadDefinitions(argv[1]), spec);
  ParseCsr(ReadDefinitions(argv[2]), spec);
  ParseConfig(ReadDefinitions(argv[3]), spec);
  std::string config = argv[3];
  config = config.substr(config.find_last_of('/') + 1);
  spec.config_name = config.substr(0, config.find('.'));
  std::string out = argv[4];
  WriteIfChanged(out + "/tpu_isa.h", IsaHeader(spec));
  WriteIfChanged(out + "/tpu_csr.h", CsrHeader(spec));
  WriteIfChanged(out + "/tpu_config.h", ConfigHeader(spec));
  WriteIfChanged(out + "/tpu_pkg.sv", SvPackage(spec));
  WriteIfChanged(out + "/tpu_opcodes.gtkw_filter", GtkwaveOpcodeFilter(spec));
  return 0;
}
