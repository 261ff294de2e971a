// The SystemC wrapper of the device model: commands driven on its signals reach the model, written
// data comes back on the read bus CL + burst cycles after RD, and legal timing reports no violation.
#include <gtest/gtest.h>

#include <systemc>

#include "sysc/dram_device_sc.h"

namespace tpu {
namespace {

TEST(DramDeviceScTest, WriteThenReadThroughSignals) {
  const DramConfig c;
  // Rising edges at 0.5 ns + k ns: each 1 ns step of the test contains exactly one.
  sc_core::sc_clock clk("clk", 1, sc_core::SC_NS, 0.5, 0.5, sc_core::SC_NS, true);
  sc_core::sc_signal<uint32_t> row_cmd("row_cmd"), row_bank("row_bank"), row_addr("row_addr");
  sc_core::sc_signal<uint32_t> col_cmd("col_cmd"), col_bank("col_bank"), col_addr("col_addr");
  sc_core::sc_signal<sc_dt::sc_bv<512>> wrdata("wrdata"), rddata("rddata");
  sc_core::sc_signal<sc_dt::sc_bv<64>> wrmask("wrmask");
  sc_core::sc_signal<bool> rddata_valid("rddata_valid");
  DramDeviceSc<512> dev("dev", c);
  dev.clk(clk);
  dev.row_cmd(row_cmd);
  dev.row_bank(row_bank);
  dev.row_addr(row_addr);
  dev.col_cmd(col_cmd);
  dev.col_bank(col_bank);
  dev.col_addr(col_addr);
  dev.wrdata(wrdata);
  dev.wrmask(wrmask);
  dev.rddata_valid(rddata_valid);
  dev.rddata(rddata);

  sc_dt::sc_bv<512> pattern;
  for (int i = 0; i < 64; ++i) pattern.range(8 * i + 7, 8 * i) = (i * 7 + 3) & 0xFF;
  sc_dt::sc_bv<64> all_bytes;
  all_bytes = ~sc_dt::sc_bv<64>(0);
  // Each step holds its commands for exactly one cycle (the edge at the end of it samples them).
  auto step = [&](RowCmd r, ColCmd k, int cycles) {
    row_cmd.write(uint32_t(r));
    col_cmd.write(uint32_t(k));
    sc_core::sc_start(1, sc_core::SC_NS);
    row_cmd.write(0);
    col_cmd.write(0);
    if (cycles > 1) sc_core::sc_start(cycles - 1, sc_core::SC_NS);
  };
  row_bank.write(6);
  row_addr.write(1234);
  col_bank.write(6);
  col_addr.write(9);
  wrdata.write(pattern);
  wrmask.write(all_bytes);
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  step(RowCmd::kAct, ColCmd::kNop, c.tRCD);
  step(RowCmd::kNop, ColCmd::kWr, c.tCWL + c.tBURST + c.tWTR_L);
  step(RowCmd::kNop, ColCmd::kRd, 1);
  bool seen = false;
  for (int i = 0; i < 2 * (c.tCL + c.tBURST) && !seen; ++i) {
    if (rddata_valid.read()) {
      seen = true;
      EXPECT_EQ(rddata.read(), pattern);
    }
    sc_core::sc_start(1, sc_core::SC_NS);
  }
  EXPECT_TRUE(seen);
  EXPECT_EQ(dev.device().violations(), 0u)
      << (dev.device().violation_messages().empty() ? "" : dev.device().violation_messages()[0]);
  EXPECT_EQ(dev.device().commands(ColCmd::kRd), 1u);
}

}  // namespace
}  // namespace tpu

int sc_main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
