// The RTL's assertions fire: the link engine (rtl/core/tpu_rdma.sv) alone, verilated with --assert,
// driven by the rules of its interface and then against them on purpose. A fired assertion is recorded
// (fatalOnError off) and its message, which names the time, the block and the assertion, is checked.
#include <gtest/gtest.h>

#include <memory>
#include <regex>
#include <string>

#include "Vtpu_rdma.h"
#include "verilated.h"

namespace {

class LinkEngineAssertions : public ::testing::Test {
 protected:
  void SetUp() override {
    context_ = std::make_unique<VerilatedContext>();
    context_->fatalOnError(false);  // keep running: the test reads what fired
    dut_ = std::make_unique<Vtpu_rdma>(context_.get());
    dut_->rst_ni = 0;
    dut_->net_req_ready_i = 1;
    Tick();
    Tick();
    dut_->rst_ni = 1;
  }

  void Tick() {
    dut_->clk_i = 0;
    dut_->eval();
    context_->timeInc(1);
    dut_->clk_i = 1;
    dut_->eval();
    context_->timeInc(1);
  }

  // Presents an RDMA of `lines` lines to board core `core` for one cycle.
  void Command(uint32_t core, uint32_t lines) {
    dut_->cmd_valid_i = 1;
    dut_->cmd_core_i = core;
    dut_->cmd_line_i = 100;
    dut_->cmd_vmem_i = 0;
    dut_->cmd_count_i = lines;
    dut_->cmd_post_i = 1;
    dut_->cmd_sem_i = 4;
    Tick();
    dut_->cmd_valid_i = 0;
  }

  // Runs `cycles` cycles and returns what the simulation printed meanwhile.
  std::string Run(int cycles) {
    ::testing::internal::CaptureStdout();
    for (int i = 0; i < cycles; ++i) Tick();
    std::fflush(stdout);
    return ::testing::internal::GetCapturedStdout();
  }

  std::unique_ptr<VerilatedContext> context_;
  std::unique_ptr<Vtpu_rdma> dut_;
};

TEST_F(LinkEngineAssertions, ALegalSendFiresNothing) {
  ASSERT_TRUE(dut_->cmd_ready_o);
  Command(1, 3);
  int sent = 0, posts = 0;
  for (int cycle = 0; cycle < 20 && sent < 3; ++cycle) {
    if (dut_->net_req_valid_o) {
      EXPECT_EQ(dut_->net_req_core_o, 1u);
      EXPECT_EQ(dut_->net_req_line_o, 100u + sent);
      posts += dut_->net_req_post_o;
      ++sent;
    }
    Tick();
  }
  EXPECT_EQ(sent, 3);
  EXPECT_EQ(posts, 1) << "the last line carries the post";
  EXPECT_TRUE(dut_->busy_o) << "busy until every line is acknowledged";
  dut_->net_rsp_valid_i = 1;
  const std::string printed = Run(3);
  dut_->net_rsp_valid_i = 0;
  Tick();
  EXPECT_FALSE(dut_->busy_o);
  EXPECT_FALSE(context_->gotError()) << printed;
}

TEST_F(LinkEngineAssertions, AnAcknowledgementOfNoLineFires) {
  dut_->net_rsp_valid_i = 1;
  const std::string printed = Run(1);
  EXPECT_TRUE(context_->gotError());
  // "[time] TOP.tpu_rdma.<assertion>: <condition> does not hold"
  EXPECT_NE(printed.find("tpu_rdma.AcknowledgementOfALineSent: "), std::string::npos) << printed;
  EXPECT_NE(printed.find("does not hold"), std::string::npos) << printed;
  EXPECT_TRUE(std::regex_search(printed, std::regex("\\[[0-9]+\\] TOP\\.tpu_rdma\\.")))
      << "the time first: " << printed;
}

TEST_F(LinkEngineAssertions, ACommandWhileNotReadyFires) {
  dut_->net_req_ready_i = 0;  // the network takes nothing: the engine stays busy with the first
  Command(2, 8);
  Tick();
  ASSERT_FALSE(dut_->cmd_ready_o);
  ::testing::internal::CaptureStdout();
  Command(2, 1);
  std::fflush(stdout);
  const std::string printed = ::testing::internal::GetCapturedStdout();
  EXPECT_TRUE(context_->gotError());
  EXPECT_NE(printed.find("CommandOnlyWhenReady"), std::string::npos) << printed;
}

}  // namespace
