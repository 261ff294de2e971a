// The profiler on real programs run by the reference model: the op profile adds up to the device's
// counters, the trace is JSON with the device, unit and host tracks, the findings name the padding of
// the layers, the HTML report holds the timeline, and a backend without an issue trace says so.
#include <gtest/gtest.h>

#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>
#include <set>
#include <sstream>

#include "compiler/hlo/feed_loop_testdata.h"
#include "compiler/hlo/parser.h"
#include "sim/model/model_transport.h"
#include "sw/profiler/html_report.h"
#include "sw/profiler/op_profile.h"
#include "sw/profiler/trace_writer.h"
#include "sw/runtime/client.h"
#include "tpu_config.h"

namespace tpu::profiler {
namespace {

using runtime::Client;

// One dense layer of the MNIST MLP (784 -> 120) with its bias, ReLU and a sum: a dot, elementwise work
// and a reduction.
const char kDenseLayer[] = R"(HloModule dense_784_120
ENTRY %main (x: f32[32,784], w: f32[784,120], b: f32[120]) -> (f32[32,120], f32[32]) {
  %x = f32[32,784]{1,0} parameter(0)
  %w = f32[784,120]{1,0} parameter(1)
  %b = f32[120]{0} parameter(2)
  %dot.1 = f32[32,120]{1,0} dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %bias = f32[32,120]{1,0} broadcast(%b), dimensions={1}
  %add.2 = f32[32,120]{1,0} add(%dot.1, %bias)
  %zero = f32[] constant(0)
  %zeros = f32[32,120]{1,0} broadcast(%zero), dimensions={}
  %relu = f32[32,120]{1,0} maximum(%add.2, %zeros)
  %sum = f32[32]{0} reduce(%relu, %zero), dimensions={1}, to_apply=%add_f32
  ROOT %out = (f32[32,120]{1,0}, f32[32]{0}) tuple(%relu, %sum)
}
%add_f32 (p: f32[], q: f32[]) -> f32[] {
  %p = f32[] parameter(0)
  %q = f32[] parameter(1)
  ROOT %r = f32[] add(%p, %q)
}
)";

// The peaks of this build's configuration, as the driver discovers them.
ChipPeaks Peaks() {
  DeviceInfo device;
  device.lanes = cfg::kLanes;
  device.hbm_channels = cfg::kHbmChannels;
  return PeaksOf(device);
}

struct ProfiledRun {
  compiler::Program program;
  DeviceCounters counters;
  std::shared_ptr<const ExecutionProfile> profile;
};

ProfiledRun RunProfiled(Client& client, const std::string& text) {
  ProfiledRun run;
  auto executable = client.Compile(text);
  EXPECT_TRUE(executable.ok()) << executable.status();
  if (!executable.ok()) return run;
  std::vector<std::unique_ptr<runtime::Buffer>> arguments;
  std::vector<const runtime::Buffer*> pointers;
  for (const compiler::DeviceLayout& layout : (*executable)->program().parameters) {
    auto buffer = client.BufferFromHostLiteral(hlo::Literal(layout.shape, std::vector<float>(layout.shape.ElementCount(), 0.5f)));
    EXPECT_TRUE(buffer.ok()) << buffer.status();
    if (!buffer.ok()) return run;
    pointers.push_back(buffer->get());
    arguments.push_back(std::move(*buffer));
  }
  runtime::ExecuteOptions options;
  options.profile = true;
  auto result = (*executable)->Execute(pointers, options);
  EXPECT_TRUE(result.ok()) << result.status();
  if (!result.ok()) return run;
  run.program = (*executable)->program();
  run.counters = result->counters;
  run.profile = result->profile;
  return run;
}

class ProfilerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto client = Client::Create("model", cfg::kName);
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = std::move(*client);
    run_ = RunProfiled(*client_, kDenseLayer);
    ASSERT_NE(run_.profile, nullptr);
    auto ops = BuildOpProfile(run_.program, *run_.profile, Peaks());
    ASSERT_TRUE(ops.ok()) << ops.status();
    ops_ = std::move(*ops);
  }
  const OpRecord* Find(const std::string& name) const {
    for (const OpRecord& op : ops_.ops) {
      if (op.name == name) return &op;
    }
    return nullptr;
  }

  std::unique_ptr<Client> client_;
  ProfiledRun run_;
  OpProfile ops_;
};

TEST_F(ProfilerTest, OperationsAddUpToTheDeviceCounters) {
  EXPECT_EQ(PeaksOf(client_->device_info()).hbm_bytes_per_cycle, Peaks().hbm_bytes_per_cycle);
  EXPECT_EQ(ops_.cycles, run_.counters.cycles);
  EXPECT_EQ(ops_.total.cycles, run_.counters.cycles);
  EXPECT_EQ(ops_.total.stall_cycles, run_.counters.stall_cycles);
  EXPECT_EQ(ops_.total.instructions, run_.counters.instructions);
  EXPECT_EQ(ops_.total.work[kProfileDma], run_.counters.dma_lines);
  EXPECT_EQ(ops_.total.work[kProfileMxu], run_.counters.mxu_busy_cycles);
  EXPECT_EQ(ops_.total.work[kProfileVpu], run_.counters.vpu_busy_cycles);
  uint64_t cycles = 0, start = 0;
  for (const OpRecord& op : ops_.ops) {
    EXPECT_EQ(op.start_cycle, start) << op.name << ": operations follow each other";
    start += op.cycles;
    cycles += op.cycles;
  }
  EXPECT_EQ(cycles, run_.counters.cycles);
  // The dot is the only operation that uses the MXU.
  const OpRecord* dot = Find("dot.1");
  ASSERT_NE(dot, nullptr) << FormatOpProfile(ops_, 0);
  EXPECT_EQ(dot->category, "dot");
  EXPECT_EQ(dot->work[kProfileMxu], run_.counters.mxu_busy_cycles);
  EXPECT_GT(dot->work[kProfileDma], 0u);
  EXPECT_GT(MxuPercent(*dot, ops_.peaks), 0.0);
  const std::string table = FormatOpProfile(ops_, 3);
  EXPECT_NE(table.find("(the 3 slowest)"), std::string::npos) << table;
  EXPECT_NE(table.find("total"), std::string::npos) << table;
}

TEST_F(ProfilerTest, ChromeTraceIsJsonWithDeviceUnitAndHostTracks) {
  const std::string json = ChromeTraceJson(ops_, *run_.profile, {HostEvent{"compile", 0, 1500}}, TraceOptions{});
  boost::property_tree::ptree tree;
  std::istringstream in(json);
  ASSERT_NO_THROW(boost::property_tree::read_json(in, tree)) << json.substr(0, 2000);
  std::set<std::string> threads;
  uint64_t op_cycles = 0;
  std::set<std::string> unit_slices;
  for (const auto& item : tree.get_child("traceEvents")) {
    const boost::property_tree::ptree& event = item.second;
    const std::string phase = event.get<std::string>("ph");
    if (phase == "M" && event.get<std::string>("name") == "thread_name") threads.insert(event.get<std::string>("args.name"));
    if (phase != "X") continue;
    EXPECT_GE(event.get<double>("dur"), 0.0);
    const int pid = event.get<int>("pid"), tid = event.get<int>("tid");
    if (pid == 1 && tid == 1) op_cycles += event.get<uint64_t>("args.cycles");
    if (pid == 1 && tid > 1) unit_slices.insert(std::to_string(tid) + event.get<std::string>("name"));
  }
  EXPECT_EQ(threads, (std::set<std::string>{"HLO operations", "DMA", "MXU", "VPU", "tpusim"}));
  EXPECT_EQ(op_cycles, run_.counters.cycles) << "the operations' slices cover the run";
  EXPECT_EQ(unit_slices.count("3dot.1"), 1u) << "an MXU slice named after the dot";
  EXPECT_EQ(tree.get<uint64_t>("otherData.cycles"), run_.counters.cycles);
  EXPECT_EQ(JsonString("a\"b\\c\n"), "\"a\\\"b\\\\c\\n\"");
}

TEST_F(ProfilerTest, FindingsNameThePaddingOfTheLayer) {
  auto module = hlo::ParseHloModule(kDenseLayer);
  ASSERT_TRUE(module.ok()) << module.status();
  const std::vector<Finding> findings = PerformanceFindings(**module, ops_);
  const std::string text = FormatFindings(findings);
  const std::string lanes = std::to_string(cfg::kLanes);
  bool padding = false, batch = false;
  for (const Finding& finding : findings) {
    if (finding.check == "padding" && finding.text.find("dot.1") != std::string::npos) {
      padding = true;
      // 784 and 120 features pad to whole tiles (unless the tiles are 8 wide: 784 and 120 are multiples of 8).
      if (cfg::kLanes == 128) {
        EXPECT_NE(finding.text.find("f32[32,896]"), std::string::npos) << text;
        EXPECT_NE(finding.text.find("f32[784,128]"), std::string::npos) << text;
      }
    }
    if (finding.check == "batch") batch = finding.text.find("dot.1 (32)") != std::string::npos;
  }
  EXPECT_EQ(padding, cfg::kLanes == 128) << text;
  EXPECT_EQ(batch, 32 < cfg::kLanes) << text;
  EXPECT_NE(text.find("[mxu-idle]"), std::string::npos) << text;
}

TEST_F(ProfilerTest, HtmlReportHoldsTheTimelineTableAndFindings) {
  const std::vector<std::vector<double>> timeline = UtilizationTimeline(ops_, *run_.profile, 50);
  ASSERT_EQ(timeline.size(), size_t{kProfileUnits});
  double mxu = 0, dma = 0;
  for (int bin = 0; bin < 50; ++bin) {
    for (int unit = 0; unit < kProfileUnits; ++unit) {
      EXPECT_GE(timeline[unit][bin], 0.0);
      EXPECT_LE(timeline[unit][bin], 1.0);
    }
    mxu += timeline[kProfileMxu][bin];
    dma += timeline[kProfileDma][bin];
  }
  EXPECT_GT(mxu, 0.0);
  EXPECT_GT(dma, 0.0);
  HtmlReportOptions options;
  options.title = "dense <layer>";
  const std::string html = HtmlReport(ops_, *run_.profile, {Finding{"padding", "dot.1 pads"}}, options);
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("class=\"unit-mxu\""), std::string::npos);
  EXPECT_NE(html.find(">dot.1<"), std::string::npos);
  EXPECT_NE(html.find("dot.1 pads"), std::string::npos);
  EXPECT_NE(html.find("dense &lt;layer&gt;"), std::string::npos) << "text is escaped";
  EXPECT_EQ(html.find("<script"), std::string::npos) << "self-contained, no script";
}

TEST_F(ProfilerTest, AProfileOfAnotherProgramIsRefused) {
  ExecutionProfile short_profile;
  short_profile.Clear(2);
  EXPECT_EQ(BuildOpProfile(run_.program, short_profile, Peaks()).status().code(), StatusCode::kInvalidArgument);
  ExecutionProfile wrong_cycles = *run_.profile;
  wrong_cycles.cycles += 1;
  const Status status = BuildOpProfile(run_.program, wrong_cycles, Peaks()).status();
  EXPECT_NE(status.message().find("add up"), std::string::npos) << status;
}

// A transport without an issue trace: profiling is refused with a clear error and the device stays usable.
class UntracedTransport : public model::ModelTransport {
 public:
  bool SetProfile(ExecutionProfile*) override { return false; }
};

TEST(ProfilerFeedTest, WaitsForTheHostAreChargedToTheHostAndFoundInfeedBound) {
  // A loop whose batches cross the host link while it runs: each infeed waits for the host's transfer,
  // far longer than the loop's own work.
  auto client = Client::Create("model", cfg::kName);
  ASSERT_TRUE(client.ok()) << client.status();
  for (int step = 0; step < 3; ++step) {
    ASSERT_TRUE((*client)->TransferToInfeed({hlo::Literal(hlo::Shape::Make(hlo::PrimitiveType::F32, {3, 20})),
                                             hlo::Literal(hlo::Shape::Make(hlo::PrimitiveType::S32, {3}))}).ok());
  }
  ProfiledRun run = RunProfiled(**client, hlo::testing::FeedLoopModule(20));
  ASSERT_NE(run.profile, nullptr);
  auto ops = BuildOpProfile(run.program, *run.profile, Peaks());
  ASSERT_TRUE(ops.ok()) << ops.status();
  EXPECT_EQ(ops->total.host_stall_cycles, run.counters.feed_stall_cycles);
  const OpRecord* infeed = nullptr;
  for (const OpRecord& op : ops->ops) {
    if (op.category == "infeed") infeed = &op;
  }
  ASSERT_NE(infeed, nullptr);
  EXPECT_GT(infeed->host_stall_cycles, 0u);
  EXPECT_NE(FormatOpProfile(*ops, 0).find("host\n"), std::string::npos) << FormatOpProfile(*ops, 0);
  auto module = hlo::ParseHloModule(hlo::testing::FeedLoopModule(20));
  ASSERT_TRUE(module.ok());
  bool found = false;
  for (const Finding& finding : PerformanceFindings(**module, *ops)) {
    if (finding.check == "infeed-bound") {
      found = true;
      EXPECT_NE(finding.text.find("waited for the host at its infeeds and outfeeds (most at infeed)"), std::string::npos)
          << finding.text;
    }
  }
  EXPECT_TRUE(found) << FormatFindings(PerformanceFindings(**module, *ops));
}

TEST(ProfilerBackendTest, ABackendWithoutATraceRefusesToProfile) {
  UntracedTransport transport;
  auto client = Client::CreateWithTransport(transport);
  ASSERT_TRUE(client.ok()) << client.status();
  auto executable = (*client)->Compile(kDenseLayer);
  ASSERT_TRUE(executable.ok()) << executable.status();
  std::vector<std::unique_ptr<runtime::Buffer>> arguments;
  std::vector<const runtime::Buffer*> pointers;
  for (const compiler::DeviceLayout& layout : (*executable)->program().parameters) {
    arguments.push_back(std::move((*client)->BufferFromHostLiteral(hlo::Literal(
        layout.shape, std::vector<float>(layout.shape.ElementCount(), 1.0f))).value()));
    pointers.push_back(arguments.back().get());
  }
  runtime::ExecuteOptions options;
  options.profile = true;
  const Status refused = (*executable)->Execute(pointers, options).status();
  EXPECT_EQ(refused.code(), StatusCode::kUnimplemented) << refused;
  EXPECT_NE(refused.message().find("cannot profile"), std::string::npos) << refused;
  auto result = (*executable)->Execute(pointers);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->profile, nullptr);
}

// The verilated chip's trace port gives the same profile record: its sums equal the chip's counters, and
// per operation the instructions issued and the MXU and VPU work equal the model's (the cycles differ by
// what the model does not model: HBM timing).
TEST(ProfilerBackendTest, RtlTraceAgreesWithTheModelOnWhatBothCount) {
  auto model = Client::Create("model", cfg::kName);
  auto rtl = Client::Create("rtl", cfg::kName);
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_TRUE(rtl.ok()) << rtl.status();
  const ProfiledRun on_model = RunProfiled(**model, kDenseLayer);
  const ProfiledRun on_rtl = RunProfiled(**rtl, kDenseLayer);
  ASSERT_NE(on_model.profile, nullptr);
  ASSERT_NE(on_rtl.profile, nullptr);
  auto model_ops = BuildOpProfile(on_model.program, *on_model.profile, Peaks());
  auto rtl_ops = BuildOpProfile(on_rtl.program, *on_rtl.profile, Peaks());
  ASSERT_TRUE(model_ops.ok()) << model_ops.status();
  ASSERT_TRUE(rtl_ops.ok()) << rtl_ops.status();
  EXPECT_EQ(rtl_ops->total.cycles, on_rtl.counters.cycles);
  EXPECT_EQ(rtl_ops->total.stall_cycles, on_rtl.counters.stall_cycles);
  EXPECT_EQ(rtl_ops->total.instructions, on_rtl.counters.instructions);
  EXPECT_EQ(rtl_ops->total.work[kProfileDma], on_rtl.counters.dma_lines);
  EXPECT_EQ(rtl_ops->total.work[kProfileMxu], on_rtl.counters.mxu_busy_cycles);
  EXPECT_EQ(rtl_ops->total.work[kProfileVpu], on_rtl.counters.vpu_busy_cycles);
  uint64_t stalled_on = 0;
  for (uint64_t cycles : rtl_ops->total.stall_on) stalled_on += cycles;
  EXPECT_LE(stalled_on, rtl_ops->total.stall_cycles);
  ASSERT_EQ(rtl_ops->ops.size(), model_ops->ops.size());
  for (size_t i = 0; i < rtl_ops->ops.size(); ++i) {
    const OpRecord& r = rtl_ops->ops[i];
    const OpRecord& m = model_ops->ops[i];
    EXPECT_EQ(r.name, m.name);
    EXPECT_EQ(r.instructions, m.instructions) << r.name;
    EXPECT_EQ(r.work[kProfileMxu], m.work[kProfileMxu]) << r.name;
    EXPECT_EQ(r.work[kProfileVpu], m.work[kProfileVpu]) << r.name;
    EXPECT_EQ(r.work[kProfileDma], m.work[kProfileDma]) << r.name;
  }
  EXPECT_FALSE(on_rtl.profile->intervals.empty());
}

}  // namespace
}  // namespace tpu::profiler
