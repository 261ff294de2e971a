#include "tb/coverage/coverage_data.h"

#include <gtest/gtest.h>

#include <sstream>

namespace tpu::coverage {
namespace {

// A point line as Verilator writes it.
std::string PointLine(const std::string& page, const std::string& file, int line, const std::string& what,
                      const std::string& hier, uint64_t count) {
  return "C '\001t\002" + std::string(page.rfind("v_toggle", 0) == 0 ? "toggle" : "line") + "\001page\002" +
         page + "\001f\002" + file + "\001l\002" + std::to_string(line) + "\001n\0020\001o\002" + what +
         "\001h\002" + hier + "' " + std::to_string(count) + "\n";
}

std::map<std::string, Point> Read(const std::string& text) {
  std::istringstream in(text);
  std::map<std::string, Point> points;
  const Status status = ReadCoverage(in, "test.dat", &points);
  EXPECT_TRUE(status.ok()) << status.message();
  return points;
}

TEST(CoverageData, PointsFoldOverInstancesAndSkipFilesOutsideRtl) {
  const auto points = Read(
      "# SystemC::Coverage-3\n" +
      PointLine("v_line/tpu_fifo", "/src/rtl/core/tpu_fifo.sv", 10, "if", "TOP.a.u_fifo", 0) +
      PointLine("v_line/tpu_fifo__W8", "/src/rtl/core/tpu_fifo.sv", 10, "if", "TOP.b.u_fifo", 3) +
      PointLine("v_toggle/tpu_fifo", "/src/rtl/core/tpu_fifo.sv", 4, "count_q[0]", "TOP.a.u_fifo", 0) +
      PointLine("v_line/tpu_pkg", "/build/gen/tpu_pkg.sv", 1, "block", "TOP", 0));
  ASSERT_EQ(points.size(), 2u);
  const Summary summary = Summarize(points, {});
  EXPECT_EQ(summary.total.lines, 1u);
  EXPECT_EQ(summary.total.lines_hit, 1u);  // one instance (of another parameterization) hit it
  EXPECT_EQ(summary.modules.count("tpu_fifo"), 1u);
  EXPECT_EQ(summary.total.toggles, 1u);
  EXPECT_EQ(summary.total.toggles_hit, 0u);
  ASSERT_EQ(summary.uncovered.size(), 1u);
  EXPECT_EQ(summary.uncovered[0]->file, "rtl/core/tpu_fifo.sv");
  EXPECT_EQ(summary.uncovered[0]->what, "count_q[0]");
}

TEST(CoverageData, MalformedLineIsAnErrorWithItsLine) {
  std::istringstream in("# header\nC 'broken\n");
  std::map<std::string, Point> points;
  const Status status = ReadCoverage(in, "x.dat", &points);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("x.dat:2"), std::string::npos) << status.message();
}

TEST(CoverageData, WaiversTakeUncoveredPointsOutWithTheirReason) {
  const auto points = Read(PointLine("v_toggle/tpu_csr", "rtl/chip/tpu_csr.sv", 7, "cycle_q[60]", "TOP", 0) +
                           PointLine("v_toggle/tpu_csr", "rtl/chip/tpu_csr.sv", 7, "cycle_q[3]", "TOP", 0) +
                           PointLine("v_toggle/tpu_csr", "rtl/chip/tpu_csr.sv", 7, "cycle_q[59]", "TOP", 5) +
                           PointLine("v_line/tpu_csr", "rtl/chip/tpu_csr.sv", 30, "else", "TOP", 0));
  std::istringstream rules(
      "# comment\n"
      "toggle tpu_csr cycle_q\\[(5[0-9]|6[0-3])\\] -- 2^50 cycles are 13 days at 1 GHz\n"
      "line tpu_csr line:30 -- unreachable default\n"
      "line tpu_dma line:1 -- stale\n");
  std::vector<Waiver> waivers;
  ASSERT_TRUE(ReadWaivers(rules, "w.txt", &waivers).ok());
  const Summary summary = Summarize(points, waivers);
  // cycle_q[60] and line 30 waived; cycle_q[59] was hit, so it stays counted; cycle_q[3] is uncovered.
  EXPECT_EQ(summary.total.toggles, 2u);
  EXPECT_EQ(summary.total.toggles_hit, 1u);
  EXPECT_EQ(summary.total.toggles_waived, 1u);
  EXPECT_EQ(summary.total.lines, 0u);
  EXPECT_EQ(summary.total.lines_waived, 1u);
  ASSERT_EQ(summary.waived.size(), 2u);
  for (const auto& [point, waiver] : summary.waived)
    EXPECT_EQ(waiver->reason, point->kind == Kind::kToggle ? "2^50 cycles are 13 days at 1 GHz" : "unreachable default");
  ASSERT_EQ(summary.uncovered.size(), 1u);
  EXPECT_EQ(summary.uncovered[0]->what, "cycle_q[3]");
  ASSERT_EQ(summary.unused_waivers.size(), 1u);
  EXPECT_EQ(summary.unused_waivers[0]->module, "tpu_dma");
}

TEST(CoverageData, WaiverWithoutReasonOrWithBadPatternIsRefused) {
  for (const char* text : {"toggle tpu_csr cycle_q.*\n", "toggle tpu_csr cycle_q.* -- \n", "bit tpu_csr x -- r\n",
                           "toggle tpu_csr cycle_q[ -- bad regex\n"}) {
    std::istringstream in(text);
    std::vector<Waiver> waivers;
    const Status status = ReadWaivers(in, "w.txt", &waivers);
    EXPECT_FALSE(status.ok()) << text;
    EXPECT_NE(status.message().find("w.txt:1"), std::string::npos) << status.message();
  }
}

}  // namespace
}  // namespace tpu::coverage
