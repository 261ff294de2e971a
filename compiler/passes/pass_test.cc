#include "compiler/passes/pass.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "compiler/hlo/parser.h"

namespace tpu::compiler {
namespace {

const char* kDenseRelu = R"(HloModule dense_relu

ENTRY %main (x: f32[2,8], w: f32[8,8]) -> f32[2,8] {
  %x = f32[2,8]{1,0} parameter(0)
  %w = f32[8,8]{1,0} parameter(1)
  %d = f32[2,8]{1,0} dot(f32[2,8]{1,0} %x, f32[8,8]{1,0} %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %zero = f32[] constant(0)
  %b = f32[2,8]{1,0} broadcast(f32[] %zero), dimensions={}
  ROOT %r = f32[2,8]{1,0} maximum(f32[2,8]{1,0} %d, f32[2,8]{1,0} %b)
}
)";

class FailingPass : public HloPass {
 public:
  std::string_view name() const override { return "always-fails"; }
  StatusOr<bool> Run(hlo::HloModule*) override { return InvalidArgument("cannot run"); }
};

TEST(PassPipelineTest, RunsPassesInOrderAndDumpsAfterEach) {
  auto module = hlo::ParseHloModule(kDenseRelu);
  ASSERT_TRUE(module.ok()) << module.status();
  PassPipeline pipeline("test");
  AddDefaultPasses(&pipeline);
  EXPECT_EQ(pipeline.pass_names(), (std::vector<std::string>{"relu-fusion", "dce"}));
  std::string dir = ::testing::TempDir() + "/pipeline_dump";
  std::filesystem::remove_all(dir);
  pipeline.DumpTo(dir);
  std::vector<std::pair<std::string, bool>> seen;
  pipeline.set_after_pass_hook([&](int, std::string_view name, bool changed, const hlo::HloModule&) {
    seen.push_back({std::string(name), changed});
    return OkStatus();
  });
  StatusOr<bool> changed = pipeline.Run(module->get());
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(seen, (std::vector<std::pair<std::string, bool>>{{"relu-fusion", true}, {"dce", true}}));
  for (const char* file : {"00-input.hlo", "01-relu-fusion.hlo", "02-dce.hlo"}) {
    std::ifstream in(dir + "/" + file);
    ASSERT_TRUE(in.good()) << file;
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_TRUE(hlo::ParseHloModule(text.str()).ok()) << file;
    if (std::string(file) == "02-dce.hlo") EXPECT_EQ(text.str().find("broadcast(f32[] %zero)"), std::string::npos);
    if (std::string(file) == "01-relu-fusion.hlo") EXPECT_NE(text.str().find("fusion("), std::string::npos);
  }
  // Running again finds nothing to do.
  PassPipeline again("again");
  AddDefaultPasses(&again);
  EXPECT_FALSE(*again.Run(module->get()));
}

TEST(PassPipelineTest, AFailingPassStopsThePipelineWithItsName) {
  auto module = hlo::ParseHloModule(kDenseRelu);
  ASSERT_TRUE(module.ok());
  PassPipeline pipeline("test");
  pipeline.AddPass<FailingPass>();
  int hooks = 0;
  pipeline.set_after_pass_hook([&](int, std::string_view, bool, const hlo::HloModule&) {
    ++hooks;
    return OkStatus();
  });
  StatusOr<bool> result = pipeline.Run(module->get());
  EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(result.status().message(), "always-fails: cannot run");
  EXPECT_EQ(hooks, 0);
}

}  // namespace
}  // namespace tpu::compiler
