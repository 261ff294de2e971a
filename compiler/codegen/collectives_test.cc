// What the collectives' lowering (collectives.cc) makes of a module, and what it refuses: the rings,
// the receive region and the device patches of a program; the forms it does not lower, by name. Their
// values on the devices are checked by tb/compiler/collective_diff_test.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "compiler/codegen/codegen.h"
#include "compiler/hlo/parser.h"

namespace tpu::compiler {
namespace {

// An all-reduce of f32[rows,8] (one line per row on 8 lanes) on `replicas` devices, `op` the reducer.
std::string AllReduceModule(int replicas, int rows, const std::string& groups = "{}", const std::string& type = "f32",
                            const std::string& op = "add") {
  const std::string shape = type + "[" + std::to_string(rows) + ",8]";
  return "HloModule m, replica_count=" + std::to_string(replicas) + "\n\n%r (a: " + type + "[], b: " + type +
         "[]) -> " + type + "[] {\n  %a = " + type + "[] parameter(0)\n  %b = " + type + "[] parameter(1)\n  ROOT %c = " +
         type + "[] " + op + "(%a, %b)\n}\n\nENTRY %main (x: " + shape + ") -> " + shape + " {\n  %x = " + shape +
         "{1,0} parameter(0)\n  ROOT %s = " + shape + "{1,0} all-reduce(%x), replica_groups=" + groups +
         ", to_apply=%r\n}\n";
}

StatusOr<Program> CompileText(const std::string& text) {
  TPU_ASSIGN_OR_RETURN(std::unique_ptr<hlo::HloModule> module, hlo::ParseHloModule(text));
  CompileOptions options;
  options.lanes = 8;
  return Compile(*module, options);
}

size_t CountPatches(const Program& program, DeviceValue value) {
  return static_cast<size_t>(std::count_if(program.device_patches.begin(), program.device_patches.end(),
                                           [&](const DevicePatch& patch) { return patch.value == value; }));
}

TEST(CollectivesTest, TwoDevicesOneRingTwoSlotsOfAChunk) {
  StatusOr<Program> program = CompileText(AllReduceModule(2, 10));
  ASSERT_TRUE(program.ok()) << program.status();
  EXPECT_EQ(program->replicas, 2u);
  ASSERT_EQ(program->rings.size(), 1u);
  EXPECT_EQ(program->rings[0].groups, (std::vector<std::vector<uint32_t>>{{0, 1}}));
  EXPECT_EQ(program->receive_lines, 2u * 5u);  // 2(p-1) slots of a chunk of 10/2 lines
  // Steps 0 and 1 send (a post each), steps 1 and 2 receive (a wait each).
  EXPECT_EQ(CountPatches(*program, DeviceValue::kPostSemaphore), 2u);
  EXPECT_EQ(CountPatches(*program, DeviceValue::kWaitSemaphore), 2u);
  EXPECT_TRUE(ValidateProgram(*program).ok());
}

TEST(CollectivesTest, MoreThanTwoDevicesGoBothWaysRound) {
  StatusOr<Program> program = CompileText(AllReduceModule(4, 10));
  ASSERT_TRUE(program.ok()) << program.status();
  ASSERT_EQ(program->rings.size(), 2u);
  EXPECT_EQ(program->rings[0].groups, (std::vector<std::vector<uint32_t>>{{0, 1, 2, 3}}));
  EXPECT_EQ(program->rings[1].groups, (std::vector<std::vector<uint32_t>>{{3, 2, 1, 0}}));
  // Each half (5 lines, chunks of 2) has 2(p-1) = 6 slots of a chunk.
  EXPECT_EQ(program->receive_lines, 2u * 6u * 2u);
}

TEST(CollectivesTest, GroupsOfOneDeviceAreACopy) {
  StatusOr<Program> program = CompileText(AllReduceModule(2, 3, "{{0},{1}}"));
  ASSERT_TRUE(program.ok()) << program.status();
  EXPECT_TRUE(program->rings.empty());
  EXPECT_EQ(program->receive_lines, 0u);
  EXPECT_TRUE(program->device_patches.empty());
}

TEST(CollectivesTest, TheIdsArePatchedPerDevice) {
  StatusOr<Program> program = CompileText(R"(HloModule ids, replica_count=2, num_partitions=2
ENTRY %main () -> (u32[], u32[]) {
  %r = u32[] replica-id()
  %p = u32[] partition-id()
  ROOT %t = (u32[], u32[]) tuple(%r, %p)
}
)");
  ASSERT_TRUE(program.ok()) << program.status();
  EXPECT_EQ(program->partitions, 2u);
  EXPECT_EQ(CountPatches(*program, DeviceValue::kReplicaId), 1u);
  EXPECT_EQ(CountPatches(*program, DeviceValue::kPartitionId), 1u);
}

// What the lowering does not take is refused with the instruction's name and the reason.
TEST(CollectivesTest, FormsItDoesNotLowerAreRefusedByName) {
  auto refusal = [](const std::string& text) {
    StatusOr<Program> program = CompileText(text);
    EXPECT_FALSE(program.ok());
    return program.status().message();
  };
  // u32 maximum: the VPU compares integers signed.
  EXPECT_NE(refusal(AllReduceModule(2, 2, "{}", "u32", "maximum")).find("all-reduce s of u32[2,8]"), std::string::npos);
  // Groups of different sizes (the verifier's words; the ring needs one size too).
  EXPECT_NE(refusal(AllReduceModule(3, 2, "{{0,1},{2}}")).find("of equal size"), std::string::npos);
  // All-gather along the minor dimension.
  EXPECT_NE(refusal(R"(HloModule g, replica_count=2
ENTRY %main (x: f32[4,3]) -> f32[4,6] {
  %x = f32[4,3]{1,0} parameter(0)
  ROOT %g = f32[4,6]{1,0} all-gather(%x), dimensions={1}, replica_groups={}
}
)").find("all-gather g along dimension 1"),
            std::string::npos);
  // Six devices, each all-reduce over a pair of a different partner: device 0 would hear from five
  // peers, one more than it has semaphores for.
  std::string many = "HloModule many, replica_count=6\n\n%r (a: f32[], b: f32[]) -> f32[] {\n  %a = f32[] "
                     "parameter(0)\n  %b = f32[] parameter(1)\n  ROOT %c = f32[] add(%a, %b)\n}\n\nENTRY %main (x: "
                     "f32[8]) -> f32[8] {\n  %x0 = f32[8] parameter(0)\n";
  const char* pairs[] = {"{{0,1},{2,3},{4,5}}", "{{0,2},{1,4},{3,5}}", "{{0,3},{1,5},{2,4}}",
                         "{{0,4},{1,3},{2,5}}", "{{0,5},{1,2},{3,4}}"};
  for (int k = 0; k < 5; ++k) {
    many += "  %x" + std::to_string(k + 1) + " = f32[8] all-reduce(%x" + std::to_string(k) + "), replica_groups=" +
            pairs[k] + ", to_apply=%r\n";
  }
  many += "  ROOT %out = f32[8] copy(%x5)\n}\n";
  EXPECT_NE(refusal(many).find("posted by more than 4 peers"), std::string::npos) << refusal(many);
}

}  // namespace
}  // namespace tpu::compiler
