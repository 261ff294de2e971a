#include "compiler/passes/per_device_program.h"

#include <gtest/gtest.h>

#include "compiler/hlo/verifier.h"
#include "compiler/interpreter/interpreter.h"
#include "compiler/passes/pass_test_util.h"

namespace tpu::compiler {
namespace {

using testing::Canonical;
using testing::ExpectRewrite;
using testing::ExpectUnchanged;
using testing::PassResult;

// The blocks of every device when dimension `split` of a rank-`rank` array is cut into `devices` pieces
// in device order (every other dimension whole).
std::vector<std::vector<int64_t>> SplitAlong(int split, int rank, int devices) {
  std::vector<std::vector<int64_t>> blocks(static_cast<size_t>(devices), std::vector<int64_t>(static_cast<size_t>(rank), 0));
  for (int d = 0; d < devices; ++d) blocks[static_cast<size_t>(d)][static_cast<size_t>(split)] = d;
  return blocks;
}

std::vector<std::vector<int64_t>> Whole(int rank, int devices) {
  return std::vector<std::vector<int64_t>>(static_cast<size_t>(devices), std::vector<int64_t>(static_cast<size_t>(rank), 0));
}

void ExpectVerifies(const PassResult& result) {
  ASSERT_NE(result.module, nullptr);
  Status verified = hlo::VerifyHloModule(*result.module);
  EXPECT_TRUE(verified.ok()) << verified << "\n" << result.printed;
}

// What JAX 0.10.2 lowers `jax.pmap(lambda v: (lax.psum(v, 'i'), lax.axis_index('i')), axis_name='i')`
// of an f32[8,4,3] to (`.lower(...).as_text('hlo')`).
constexpr const char* kPmap = R"(HloModule jit__fun, entry_computation_layout={(f32[8,4,3]{2,1,0})->(f32[8,4,3]{2,1,0}, s32[8]{0})}, frontend_attributes={xla.sdy.meshes={mesh = #sdy.mesh<["i"=8]>}}

region_0.1 {
  psum.2 = f32[] parameter(0)
  psum.3 = f32[] parameter(1)
  ROOT add.1 = f32[] add(psum.2, psum.3)
}

xla.sdy.manual_computation_body.2 {
  shard_map.2 = f32[1,4,3]{2,1,0} parameter(0)
  squeeze.1 = f32[4,3]{1,0} reshape(shard_map.2)
  psum.5 = f32[4,3]{1,0} all-reduce(squeeze.1), channel_id=1, replica_groups={{0,1,2,3,4,5,6,7}}, use_global_device_ids=true, to_apply=region_0.1
  broadcast_in_dim.2 = f32[1,4,3]{2,1,0} reshape(psum.5)
  axis_index.4 = u32[] partition-id()
  constant.3 = u32[] constant(1)
  axis_index.5 = u32[] divide(axis_index.4, constant.3)
  constant.2 = u32[] constant(8)
  axis_index.6 = u32[] remainder(axis_index.5, constant.2)
  axis_index.7 = s32[] convert(axis_index.6)
  broadcast_in_dim.3 = s32[1]{0} reshape(axis_index.7)
  ROOT tuple.1 = (f32[1,4,3]{2,1,0}, s32[1]{0}) tuple(broadcast_in_dim.2, broadcast_in_dim.3)
}

ENTRY main.3 {
  flat_args_0_.1 = f32[8,4,3]{2,1,0} parameter(0), sharding={devices=[8,1,1]<=[8]}, frontend_attributes={xla.sdy.sharding="#sdy.sharding<@mesh, [{\"i\"}, {}, {}]>"}
  shard_map.11 = f32[1,4,3]{2,1,0} custom-call(flat_args_0_.1), custom_call_target="xla.sdy.GlobalToLocalShape", custom_call_has_side_effect=true, frontend_attributes={xla.sdy.in_shardings="#sdy.sharding_per_value<[<@mesh, [{\"i\"}, {}, {}]>]>",xla.sdy.manual_axes="#sdy<manual_axes{\"i\"}>"}
  shard_map.12 = (f32[1,4,3]{2,1,0}, s32[1]{0}) call(shard_map.11), to_apply=xla.sdy.manual_computation_body.2, frontend_attributes={inlineable="false"}
  shard_map.13 = f32[1,4,3]{2,1,0} get-tuple-element(shard_map.12), index=0, frontend_attributes={inlineable="false"}
  shard_map.14 = s32[1]{0} get-tuple-element(shard_map.12), index=1, frontend_attributes={inlineable="false"}
  shard_map.15 = (f32[8,4,3]{2,1,0}, s32[8]{0}) custom-call(shard_map.13, shard_map.14), custom_call_target="xla.sdy.LocalToGlobalShape", custom_call_has_side_effect=true, frontend_attributes={xla.sdy.manual_axes="#sdy<manual_axes{\"i\"}>",xla.sdy.out_shardings="#sdy.sharding_per_value<[<@mesh, [{\"i\"}, {}, {}]>, <@mesh, [{\"i\"}]>]>"}
  shard_map.16 = f32[8,4,3]{2,1,0} get-tuple-element(shard_map.15), index=0
  shard_map.18 = f32[8,4,3]{2,1,0} custom-call(shard_map.16), custom_call_target="xla.sdy.FuncResultSharding", custom_call_has_side_effect=true, frontend_attributes={xla.sdy.sharding="#sdy.sharding_per_value<[<@mesh, [{\"i\"}, {}, {}]>]>"}
  reshape.2 = f32[8,4,3]{2,1,0} reshape(shard_map.18), sharding={devices=[8,1,1]<=[8]}
  shard_map.17 = s32[8]{0} get-tuple-element(shard_map.15), index=1
  shard_map.19 = s32[8]{0} custom-call(shard_map.17), custom_call_target="xla.sdy.FuncResultSharding", custom_call_has_side_effect=true, frontend_attributes={xla.sdy.sharding="#sdy.sharding_per_value<[<@mesh, [{\"i\"}]>]>"}
  reshape.3 = s32[8]{0} reshape(shard_map.19), sharding={devices=[8]<=[8]}
  ROOT tuple.3 = (f32[8,4,3]{2,1,0}, s32[8]{0}) tuple(shard_map.18, shard_map.19), sharding={{devices=[8,1,1]<=[8]}, {devices=[8]<=[8]}}
}
)";

TEST(PerDeviceProgramTest, PmapBecomesTheBodyOnEightPartitions) {
  PerDeviceProgram pass;
  PassResult result = ExpectRewrite(pass, kPmap, R"(
    CHECK: HloModule jit__fun, num_partitions=8
    CHECK-NOT: xla.sdy
    CHECK: ENTRY %main.3 (flat_args_0_.1: f32[1,4,3]) -> (f32[1,4,3], s32[1]) {
    CHECK-NEXT: %flat_args_0_.1 = f32[1,4,3]{2,1,0} parameter(0)
    CHECK-NEXT: %squeeze.1 = f32[4,3]{1,0} reshape(f32[1,4,3]{2,1,0} %flat_args_0_.1)
    CHECK-NEXT: %psum.5 = f32[4,3]{1,0} all-reduce(f32[4,3]{1,0} %squeeze.1), channel_id=1, replica_groups={{[{][{]}}0,1,2,3,4,5,6,7}}, use_global_device_ids=true
    CHECK: %axis_index.4 = u32[] partition-id()
    CHECK: ROOT %{{[a-z_.0-9]+}} = (f32[1,4,3]{2,1,0}, s32[1]{0}) tuple(f32[1,4,3]{2,1,0} %broadcast_in_dim.2, s32[1]{0} %broadcast_in_dim.3)
    CHECK-NEXT: }
    CHECK-NOT: custom-call
    CHECK-NOT: sharding=
  )");
  ExpectVerifies(result);
  EXPECT_EQ(pass.devices(), 8);
  ASSERT_EQ(pass.parameter_layouts().size(), 1u);
  const ShardLayout& parameter = pass.parameter_layouts()[0];
  EXPECT_EQ(parameter.ToString(), R"([{"i"}, {}, {}])");
  EXPECT_EQ(parameter.pieces, (std::vector<int64_t>{8, 1, 1}));
  EXPECT_EQ(parameter.device_blocks, SplitAlong(0, 3, 8));
  EXPECT_EQ(parameter.PartShape(hlo::Shape::Make(hlo::PrimitiveType::F32, {8, 4, 3})).dimensions,
            (std::vector<int64_t>{1, 4, 3}));
  ASSERT_EQ(pass.result_layouts().size(), 2u);
  EXPECT_EQ(pass.result_layouts()[0], parameter);
  EXPECT_EQ(pass.result_layouts()[1].pieces, (std::vector<int64_t>{8}));
  EXPECT_EQ(pass.result_layouts()[1].device_blocks, SplitAlong(0, 1, 8));
  // Only the reducer is left beside the entry: the manual body is inlined.
  EXPECT_EQ(result.module->computations().size(), 2u);
}

TEST(PerDeviceProgramTest, TheProgramRunsOnEveryDeviceOfTheMesh) {
  auto module = hlo::ParseHloModule(kPmap);
  ASSERT_TRUE(module.ok()) << module.status();
  PerDeviceProgram pass;
  StatusOr<bool> changed = pass.Run(module->get());
  ASSERT_TRUE(changed.ok()) << changed.status();
  // Device d holds row d of the global f32[8,4,3]: every element d + i / 16.
  std::vector<std::vector<hlo::Literal>> arguments(8);
  for (int d = 0; d < 8; ++d) {
    hlo::Literal part(hlo::Shape::Make(hlo::PrimitiveType::F32, {1, 4, 3}));
    for (int64_t i = 0; i < part.element_count(); ++i) part.Set<float>(i, static_cast<float>(d) + static_cast<float>(i) / 16);
    arguments[static_cast<size_t>(d)].push_back(std::move(part));
  }
  StatusOr<std::vector<std::vector<hlo::Literal>>> outputs = hlo::InterpretReplicated(**module, arguments);
  ASSERT_TRUE(outputs.ok()) << outputs.status();
  ASSERT_EQ(outputs->size(), 8u);
  for (int d = 0; d < 8; ++d) {
    const std::vector<hlo::Literal>& device = (*outputs)[static_cast<size_t>(d)];
    ASSERT_EQ(device.size(), 2u);
    for (int64_t i = 0; i < 12; ++i) EXPECT_EQ(device[0].Get<float>(i), 28.0f + static_cast<float>(i) / 2) << d << " " << i;
    EXPECT_EQ(device[1].Get<int32_t>(0), d);
  }
}

// jax.shard_map over a 2x4 mesh (x, y): in_specs (P('x', 'y'), P()), out_specs (P('x', 'y'), P('x', None),
// P('x')); psum over y, the replicated input's sum, an all_gather over y and axis_index('x').
constexpr const char* kMesh = R"(HloModule jit__lambda, entry_computation_layout={(f32[4,8]{1,0}, f32[3]{0})->(f32[4,8]{1,0}, f32[4,8]{1,0}, s32[2]{0})}, frontend_attributes={xla.sdy.meshes={mesh = #sdy.mesh<["x"=2, "y"=4]>}}

region_0.1 {
  psum.2 = f32[] parameter(0)
  psum.3 = f32[] parameter(1)
  ROOT add.1 = f32[] add(psum.2, psum.3)
}

region_1.2 {
  reduce_sum.3 = f32[] parameter(0)
  reduce_sum.4 = f32[] parameter(1)
  ROOT reduce_sum.5 = f32[] add(reduce_sum.3, reduce_sum.4)
}

xla.sdy.manual_computation_body.3 {
  shard_map.5 = f32[2,2]{1,0} parameter(0)
  psum.5 = f32[2,2]{1,0} all-reduce(shard_map.5), channel_id=1, replica_groups={{0,1,2,3},{4,5,6,7}}, use_global_device_ids=true, to_apply=region_0.1
  shard_map.6 = f32[3]{0} parameter(1)
  constant.5 = f32[] constant(0)
  reduce_sum.7 = f32[] reduce(shard_map.6, constant.5), dimensions={0}, to_apply=region_1.2
  add.4 = f32[2,2]{1,0} broadcast(reduce_sum.7), dimensions={}
  add.5 = f32[2,2]{1,0} add(psum.5, add.4)
  all_gather.1 = f32[2,8]{1,0} all-gather(shard_map.5), channel_id=1, replica_groups={{0,1,2,3},{4,5,6,7}}, dimensions={1}, use_global_device_ids=true
  axis_index.4 = u32[] partition-id()
  constant.4 = u32[] constant(4)
  axis_index.5 = u32[] divide(axis_index.4, constant.4)
  constant.3 = u32[] constant(2)
  axis_index.6 = u32[] remainder(axis_index.5, constant.3)
  axis_index.7 = s32[] convert(axis_index.6)
  broadcast_in_dim.1 = s32[1]{0} reshape(axis_index.7)
  ROOT tuple.1 = (f32[2,2]{1,0}, f32[2,8]{1,0}, s32[1]{0}) tuple(add.5, all_gather.1, broadcast_in_dim.1)
}

ENTRY main.4 {
  a.1 = f32[4,8]{1,0} parameter(0)
  b.1 = f32[3]{0} parameter(1)
  shard_map.15 = (f32[2,2]{1,0}, f32[3]{0}) custom-call(a.1, b.1), custom_call_target="xla.sdy.GlobalToLocalShape", custom_call_has_side_effect=true, frontend_attributes={xla.sdy.in_shardings="#sdy.sharding_per_value<[<@mesh, [{\"x\"}, {\"y\"}]>, <@mesh, [{}]>]>",xla.sdy.manual_axes="#sdy<manual_axes{\"x\", \"y\"}>"}
  shard_map.16 = f32[2,2]{1,0} get-tuple-element(shard_map.15), index=0
  shard_map.17 = f32[3]{0} get-tuple-element(shard_map.15), index=1
  shard_map.18 = (f32[2,2]{1,0}, f32[2,8]{1,0}, s32[1]{0}) call(shard_map.16, shard_map.17), to_apply=xla.sdy.manual_computation_body.3, frontend_attributes={inlineable="false"}
  shard_map.19 = f32[2,2]{1,0} get-tuple-element(shard_map.18), index=0, frontend_attributes={inlineable="false"}
  shard_map.20 = f32[2,8]{1,0} get-tuple-element(shard_map.18), index=1, frontend_attributes={inlineable="false"}
  shard_map.21 = s32[1]{0} get-tuple-element(shard_map.18), index=2, frontend_attributes={inlineable="false"}
  shard_map.22 = (f32[4,8]{1,0}, f32[4,8]{1,0}, s32[2]{0}) custom-call(shard_map.19, shard_map.20, shard_map.21), custom_call_target="xla.sdy.LocalToGlobalShape", custom_call_has_side_effect=true, frontend_attributes={xla.sdy.manual_axes="#sdy<manual_axes{\"x\", \"y\"}>",xla.sdy.out_shardings="#sdy.sharding_per_value<[<@mesh, [{\"x\"}, {\"y\"}]>, <@mesh, [{\"x\"}, {}]>, <@mesh, [{\"x\"}]>]>"}
  shard_map.23 = f32[4,8]{1,0} get-tuple-element(shard_map.22), index=0
  shard_map.24 = f32[4,8]{1,0} get-tuple-element(shard_map.22), index=1
  shard_map.25 = s32[2]{0} get-tuple-element(shard_map.22), index=2
  ROOT tuple.3 = (f32[4,8]{1,0}, f32[4,8]{1,0}, s32[2]{0}) tuple(shard_map.23, shard_map.24, shard_map.25)
}
)";

TEST(PerDeviceProgramTest, ShardMapOverATwoByFourMeshWithAReplicatedInput) {
  PerDeviceProgram pass;
  PassResult result = ExpectRewrite(pass, kMesh, R"(
    CHECK: HloModule jit__lambda, num_partitions=8
    CHECK: ENTRY %main.4 (a.1: f32[2,2], b.1: f32[3]) -> (f32[2,2], f32[2,8], s32[1]) {
    CHECK-NEXT: %a.1 = f32[2,2]{1,0} parameter(0)
    CHECK-NEXT: %b.1 = f32[3]{0} parameter(1)
    CHECK-NEXT: %psum.5 = f32[2,2]{1,0} all-reduce(f32[2,2]{1,0} %a.1), channel_id=1, replica_groups={{[{][{]}}0,1,2,3},{4,5,6,7}}
    CHECK: reduce(f32[3]{0} %b.1,
    CHECK: %all_gather.1 = f32[2,8]{1,0} all-gather(f32[2,2]{1,0} %a.1)
    CHECK: ROOT {{.*}} tuple(f32[2,2]{1,0} %add.5, f32[2,8]{1,0} %all_gather.1, s32[1]{0} %broadcast_in_dim.1)
    CHECK-NOT: manual_computation_body
  )");
  ExpectVerifies(result);
  ASSERT_EQ(pass.parameter_layouts().size(), 2u);
  const ShardLayout& a = pass.parameter_layouts()[0];
  EXPECT_EQ(a.ToString(), R"([{"x"}, {"y"}])");
  EXPECT_EQ(a.pieces, (std::vector<int64_t>{2, 4}));
  // Device d sits at (x, y) = (d / 4, d % 4) of the mesh.
  for (int64_t d = 0; d < 8; ++d) EXPECT_EQ(a.device_blocks[static_cast<size_t>(d)], (std::vector<int64_t>{d / 4, d % 4}));
  const ShardLayout& b = pass.parameter_layouts()[1];
  EXPECT_EQ(b.ToString(), "[{}]");
  EXPECT_EQ(b.pieces, (std::vector<int64_t>{1}));
  EXPECT_EQ(b.device_blocks, Whole(1, 8));
  ASSERT_EQ(pass.result_layouts().size(), 3u);
  EXPECT_EQ(pass.result_layouts()[0], a);
  // Split over x only: replicated over y, so the four devices of a row hold the same block.
  const ShardLayout& gathered = pass.result_layouts()[1];
  EXPECT_EQ(gathered.pieces, (std::vector<int64_t>{2, 1}));
  for (int64_t d = 0; d < 8; ++d) EXPECT_EQ(gathered.device_blocks[static_cast<size_t>(d)], (std::vector<int64_t>{d / 4, 0}));
  EXPECT_EQ(pass.result_layouts()[2].ToString(), R"([{"x"}])");
}

// shard_map in_specs=P(('y', 'x')), out_specs=P(('x', 'y')): one dimension over both axes, in either order.
constexpr const char* kAxisOrder = R"(HloModule jit__lambda, entry_computation_layout={(f32[8]{0})->f32[8]{0}}, frontend_attributes={xla.sdy.meshes={mesh = #sdy.mesh<["x"=2, "y"=4]>}}

xla.sdy.manual_computation_body.1 {
  shard_map.2 = f32[1]{0} parameter(0)
  constant.1 = f32[1]{0} constant({2})
  ROOT mul.1 = f32[1]{0} multiply(shard_map.2, constant.1)
}

ENTRY main.2 {
  a.1 = f32[8]{0} parameter(0)
  shard_map.5 = f32[1]{0} custom-call(a.1), custom_call_target="xla.sdy.GlobalToLocalShape", custom_call_has_side_effect=true, frontend_attributes={xla.sdy.in_shardings="#sdy.sharding_per_value<[<@mesh, [{\"y\", \"x\"}]>]>",xla.sdy.manual_axes="#sdy<manual_axes{\"x\", \"y\"}>"}
  shard_map.6 = f32[1]{0} call(shard_map.5), to_apply=xla.sdy.manual_computation_body.1, frontend_attributes={inlineable="false"}
  ROOT shard_map.7 = f32[8]{0} custom-call(shard_map.6), custom_call_target="xla.sdy.LocalToGlobalShape", custom_call_has_side_effect=true, frontend_attributes={xla.sdy.manual_axes="#sdy<manual_axes{\"x\", \"y\"}>",xla.sdy.out_shardings="#sdy.sharding_per_value<[<@mesh, [{\"x\", \"y\"}]>]>"}
}
)";

TEST(PerDeviceProgramTest, ADimensionSplitOverTwoAxesInEitherOrder) {
  PerDeviceProgram pass;
  PassResult result = ExpectRewrite(pass, kAxisOrder, R"(
    CHECK: ENTRY %main.2 (a.1: f32[1]) -> f32[1] {
    CHECK-NEXT: %a.1 = f32[1]{0} parameter(0)
    CHECK-NEXT: %constant.1 = f32[1]{0} constant({2})
    CHECK-NEXT: ROOT %mul.1 = f32[1]{0} multiply(f32[1]{0} %a.1, f32[1]{0} %constant.1)
    CHECK-NEXT: }
  )");
  ExpectVerifies(result);
  ASSERT_EQ(pass.parameter_layouts().size(), 1u);
  ASSERT_EQ(pass.result_layouts().size(), 1u);
  // y major: device (x, y) holds block 2y + x of the argument, and block 4x + y = d of the result.
  for (int64_t d = 0; d < 8; ++d) {
    EXPECT_EQ(pass.parameter_layouts()[0].device_blocks[static_cast<size_t>(d)][0], 2 * (d % 4) + d / 4) << d;
    EXPECT_EQ(pass.result_layouts()[0].device_blocks[static_cast<size_t>(d)][0], d);
  }
  EXPECT_EQ(pass.parameter_layouts()[0].pieces, (std::vector<int64_t>{8}));
}

// pmap with in_axes=(0, None): the second argument is replicated, and the root reads the result through a
// one-element tuple.
constexpr const char* kPmapReplicated = R"(HloModule jit__fun, entry_computation_layout={(f32[8,4,3]{2,1,0}, f32[3]{0})->f32[8,4,3]{2,1,0}}, frontend_attributes={xla.sdy.meshes={mesh = #sdy.mesh<["i"=8]>}}

xla.sdy.manual_computation_body.1 {
  shard_map.5 = f32[1,4,3]{2,1,0} parameter(0)
  shard_map.6 = f32[3]{0} parameter(1)
  mul.6 = f32[1,4,3]{2,1,0} broadcast(shard_map.6), dimensions={2}
  ROOT mul.7 = f32[1,4,3]{2,1,0} multiply(shard_map.5, mul.6)
}

ENTRY main.2 {
  flat_args_0_.1 = f32[8,4,3]{2,1,0} parameter(0), sharding={devices=[8,1,1]<=[8]}, frontend_attributes={xla.sdy.sharding="#sdy.sharding<@mesh, [{\"i\"}, {}, {}]>"}
  flat_args_1_.1 = f32[3]{0} parameter(1), sharding={replicated}, frontend_attributes={xla.sdy.sharding="#sdy.sharding<@mesh, [{}]>"}
  shard_map.10 = (f32[1,4,3]{2,1,0}, f32[3]{0}) custom-call(flat_args_0_.1, flat_args_1_.1), custom_call_target="xla.sdy.GlobalToLocalShape", custom_call_has_side_effect=true, frontend_attributes={xla.sdy.in_shardings="#sdy.sharding_per_value<[<@mesh, [{\"i\"}, {}, {}]>, <@mesh, [{}]>]>",xla.sdy.manual_axes="#sdy<manual_axes{\"i\"}>"}
  shard_map.11 = f32[1,4,3]{2,1,0} get-tuple-element(shard_map.10), index=0
  shard_map.12 = f32[3]{0} get-tuple-element(shard_map.10), index=1
  shard_map.13 = f32[1,4,3]{2,1,0} call(shard_map.11, shard_map.12), to_apply=xla.sdy.manual_computation_body.1, frontend_attributes={inlineable="false"}
  shard_map.14 = f32[8,4,3]{2,1,0} custom-call(shard_map.13), custom_call_target="xla.sdy.LocalToGlobalShape", custom_call_has_side_effect=true, frontend_attributes={xla.sdy.manual_axes="#sdy<manual_axes{\"i\"}>",xla.sdy.out_shardings="#sdy.sharding_per_value<[<@mesh, [{\"i\"}, {}, {}]>]>"}
  shard_map.15 = f32[8,4,3]{2,1,0} custom-call(shard_map.14), custom_call_target="xla.sdy.FuncResultSharding", custom_call_has_side_effect=true, frontend_attributes={xla.sdy.sharding="#sdy.sharding_per_value<[<@mesh, [{\"i\"}, {}, {}]>]>"}
  tuple.1 = (f32[8,4,3]{2,1,0}) tuple(shard_map.15)
  ROOT get-tuple-element.1 = f32[8,4,3]{2,1,0} get-tuple-element(tuple.1), index=0, sharding={devices=[8,1,1]<=[8]}
}
)";

TEST(PerDeviceProgramTest, AReplicatedParameterKeepsItsShape) {
  PerDeviceProgram pass;
  PassResult result = ExpectRewrite(pass, kPmapReplicated, R"(
    CHECK: HloModule jit__fun, num_partitions=8
    CHECK: ENTRY %main.2 (flat_args_0_.1: f32[1,4,3], flat_args_1_.1: f32[3]) -> f32[1,4,3] {
    CHECK-NEXT: %flat_args_0_.1 = f32[1,4,3]{2,1,0} parameter(0)
    CHECK-NEXT: %flat_args_1_.1 = f32[3]{0} parameter(1)
    CHECK-NEXT: %mul.6 = f32[1,4,3]{2,1,0} broadcast(f32[3]{0} %flat_args_1_.1), dimensions={2}
    CHECK-NEXT: ROOT %mul.7 = f32[1,4,3]{2,1,0} multiply(f32[1,4,3]{2,1,0} %flat_args_0_.1, f32[1,4,3]{2,1,0} %mul.6)
    CHECK-NEXT: }
  )");
  ExpectVerifies(result);
  ASSERT_EQ(pass.parameter_layouts().size(), 2u);
  EXPECT_EQ(pass.parameter_layouts()[0].pieces, (std::vector<int64_t>{8, 1, 1}));
  EXPECT_EQ(pass.parameter_layouts()[1].pieces, (std::vector<int64_t>{1}));
  EXPECT_EQ(pass.parameter_layouts()[1].device_blocks, Whole(1, 8));
  ASSERT_EQ(pass.result_layouts().size(), 1u);
  EXPECT_EQ(pass.result_layouts()[0].device_blocks, SplitAlong(0, 3, 8));
}

// jit(lambda a, b: shard_map(f, in_specs=(P('x'), P()))(a, b + 1)): every device computes b + 1 itself.
constexpr const char* kReplicatedWork = R"(HloModule jit__lambda, frontend_attributes={xla.sdy.meshes={mesh = #sdy.mesh<["x"=2, "y"=4]>}}

xla.sdy.manual_computation_body.1 {
  shard_map.5 = f32[4,4]{1,0} parameter(0)
  shard_map.6 = f32[4]{0} parameter(1)
  mul.7 = f32[4,4]{1,0} broadcast(shard_map.6), dimensions={1}
  ROOT mul.8 = f32[4,4]{1,0} multiply(shard_map.5, mul.7)
}

ENTRY main.2 {
  a.1 = f32[8,4]{1,0} parameter(0)
  b.1 = f32[4]{0} parameter(1)
  constant.1 = f32[] constant(1)
  broadcast.1 = f32[4]{0} broadcast(constant.1), dimensions={}
  add.1 = f32[4]{0} add(b.1, broadcast.1)
  shard_map.9 = (f32[4,4]{1,0}, f32[4]{0}) custom-call(a.1, add.1), custom_call_target="xla.sdy.GlobalToLocalShape", custom_call_has_side_effect=true, frontend_attributes={xla.sdy.in_shardings="#sdy.sharding_per_value<[<@mesh, [{\"x\"}, {}]>, <@mesh, [{}]>]>",xla.sdy.manual_axes="#sdy<manual_axes{\"x\", \"y\"}>"}
  shard_map.10 = f32[4,4]{1,0} get-tuple-element(shard_map.9), index=0
  shard_map.11 = f32[4]{0} get-tuple-element(shard_map.9), index=1
  shard_map.12 = f32[4,4]{1,0} call(shard_map.10, shard_map.11), to_apply=xla.sdy.manual_computation_body.1, frontend_attributes={inlineable="false"}
  ROOT shard_map.13 = f32[8,4]{1,0} custom-call(shard_map.12), custom_call_target="xla.sdy.LocalToGlobalShape", custom_call_has_side_effect=true, frontend_attributes={xla.sdy.manual_axes="#sdy<manual_axes{\"x\", \"y\"}>",xla.sdy.out_shardings="#sdy.sharding_per_value<[<@mesh, [{\"x\"}, {}]>]>"}
}
)";

TEST(PerDeviceProgramTest, GlobalViewWorkOnReplicatedValuesRunsOnEveryDevice) {
  PerDeviceProgram pass;
  PassResult result = ExpectRewrite(pass, kReplicatedWork, R"(
    CHECK: ENTRY %main.2 (a.1: f32[4,4], b.1: f32[4]) -> f32[4,4] {
    CHECK: %add.1 = f32[4]{0} add(f32[4]{0} %b.1, f32[4]{0} %broadcast.1)
    CHECK-NEXT: %mul.7 = f32[4,4]{1,0} broadcast(f32[4]{0} %add.1), dimensions={1}
    CHECK-NEXT: ROOT %mul.8 = f32[4,4]{1,0} multiply(f32[4,4]{1,0} %a.1, f32[4,4]{1,0} %mul.7)
  )");
  ExpectVerifies(result);
  ASSERT_EQ(pass.parameter_layouts().size(), 2u);
  // Split over x, whole over y: devices 0-3 hold rows 0-3, devices 4-7 rows 4-7.
  for (int64_t d = 0; d < 8; ++d)
    EXPECT_EQ(pass.parameter_layouts()[0].device_blocks[static_cast<size_t>(d)], (std::vector<int64_t>{d / 4, 0}));
  EXPECT_EQ(pass.parameter_layouts()[1].device_blocks, Whole(1, 8));
}

// Two shard_maps in a row: the first one's result goes into the second cut as it is.
constexpr const char* kTwoInARow = R"(HloModule jit__lambda, frontend_attributes={xla.sdy.meshes={mesh = #sdy.mesh<["x"=2, "y"=4]>}}

xla.sdy.manual_computation_body.1 {
  shard_map.2 = f32[4,4]{1,0} parameter(0)
  ROOT add.1 = f32[4,4]{1,0} add(shard_map.2, shard_map.2)
}

xla.sdy.manual_computation_body_0.2 {
  shard_map.7 = f32[4,4]{1,0} parameter(0)
  ROOT mul.1 = f32[4,4]{1,0} multiply(shard_map.7, shard_map.7)
}

ENTRY main.3 {
  a.1 = f32[8,4]{1,0} parameter(0)
  shard_map.10 = f32[4,4]{1,0} custom-call(a.1), custom_call_target="xla.sdy.GlobalToLocalShape", custom_call_has_side_effect=true, frontend_attributes={xla.sdy.in_shardings="#sdy.sharding_per_value<[<@mesh, [{\"x\"}, {}]>]>",xla.sdy.manual_axes="#sdy<manual_axes{\"x\", \"y\"}>"}
  shard_map.11 = f32[4,4]{1,0} call(shard_map.10), to_apply=xla.sdy.manual_computation_body.1, frontend_attributes={inlineable="false"}
  shard_map.12 = f32[8,4]{1,0} custom-call(shard_map.11), custom_call_target="xla.sdy.LocalToGlobalShape", custom_call_has_side_effect=true, frontend_attributes={xla.sdy.manual_axes="#sdy<manual_axes{\"x\", \"y\"}>",xla.sdy.out_shardings="#sdy.sharding_per_value<[<@mesh, [{\"x\"}, {}]>]>"}
  shard_map.13 = f32[4,4]{1,0} custom-call(shard_map.12), custom_call_target="xla.sdy.GlobalToLocalShape", custom_call_has_side_effect=true, frontend_attributes={xla.sdy.in_shardings="#sdy.sharding_per_value<[<@mesh, [{\"x\"}, {}]>]>",xla.sdy.manual_axes="#sdy<manual_axes{\"x\", \"y\"}>"}
  shard_map.14 = f32[4,4]{1,0} call(shard_map.13), to_apply=xla.sdy.manual_computation_body_0.2, frontend_attributes={inlineable="false"}
  ROOT shard_map.15 = f32[8,4]{1,0} custom-call(shard_map.14), custom_call_target="xla.sdy.LocalToGlobalShape", custom_call_has_side_effect=true, frontend_attributes={xla.sdy.manual_axes="#sdy<manual_axes{\"x\", \"y\"}>",xla.sdy.out_shardings="#sdy.sharding_per_value<[<@mesh, [{\"x\"}, {}]>]>"}
}
)";

TEST(PerDeviceProgramTest, TwoManualComputationsInARow) {
  PerDeviceProgram pass;
  PassResult result = ExpectRewrite(pass, kTwoInARow, R"(
    CHECK: ENTRY %main.3 (a.1: f32[4,4]) -> f32[4,4] {
    CHECK-NEXT: %a.1 = f32[4,4]{1,0} parameter(0)
    CHECK-NEXT: %add.1 = f32[4,4]{1,0} add(f32[4,4]{1,0} %a.1, f32[4,4]{1,0} %a.1)
    CHECK-NEXT: ROOT %mul.1 = f32[4,4]{1,0} multiply(f32[4,4]{1,0} %add.1, f32[4,4]{1,0} %add.1)
    CHECK-NEXT: }
  )");
  ExpectVerifies(result);
  EXPECT_EQ(result.module->computations().size(), 1u);
}

TEST(PerDeviceProgramTest, LeavesModulesWithoutShardysCustomCallsAlone) {
  PerDeviceProgram pass;
  // jit(lambda a: a * 2) on one device.
  ExpectUnchanged(pass, R"(HloModule jit__lambda, entry_computation_layout={(f32[8,4]{1,0})->f32[8,4]{1,0}}

ENTRY main.1 {
  a.1 = f32[8,4]{1,0} parameter(0)
  constant.1 = f32[] constant(2)
  mul.2 = f32[8,4]{1,0} broadcast(constant.1), dimensions={}
  ROOT mul.3 = f32[8,4]{1,0} multiply(a.1, mul.2)
}
)");
  EXPECT_TRUE(pass.parameter_layouts().empty());
  EXPECT_TRUE(pass.result_layouts().empty());
  // A mesh in the header and an ordinary call are not a manual computation.
  ExpectUnchanged(pass, R"(HloModule meshed, frontend_attributes={xla.sdy.meshes={mesh = #sdy.mesh<["i"=8]>}}

body {
  x = f32[4]{0} parameter(0)
  ROOT n = f32[4]{0} negate(x)
}

ENTRY main {
  p = f32[4]{0} parameter(0)
  ROOT c = f32[4]{0} call(p), to_apply=body
}
)");
  // The per-device program XLA compiles for pmap.
  ExpectUnchanged(pass, R"(HloModule jit__fun, num_partitions=8

%region_0.0 (psum.0: f32[], psum.1: f32[]) -> f32[] {
  %psum.0 = f32[] parameter(0)
  %psum.1 = f32[] parameter(1)
  ROOT %add.0 = f32[] add(%psum.0, %psum.1)
}

ENTRY %main.0_spmd (param.1: f32[1,4,3]) -> f32[4,3] {
  %param.1 = f32[1,4,3]{2,1,0} parameter(0), sharding={devices=[8,1,1]<=[8]}
  %bitcast = f32[4,3]{1,0} bitcast(%param.1)
  ROOT %psum.7 = f32[4,3]{1,0} all-reduce(%bitcast), channel_id=1, replica_groups={{0,1,2,3,4,5,6,7}}, use_global_device_ids=true, to_apply=%region_0.0
}
)");
}

// A small shard_map over a 2x4 mesh for the error cases: a: f32[8,4] split over x, negated.
constexpr const char* kSmall = R"(HloModule small, frontend_attributes={xla.sdy.meshes={mesh = #sdy.mesh<["x"=2, "y"=4]>}}

xla.sdy.manual_computation_body.1 {
  p = f32[4,4]{1,0} parameter(0)
  ROOT n = f32[4,4]{1,0} negate(p)
}

ENTRY main {
  a = f32[8,4]{1,0} parameter(0)
  local = f32[4,4]{1,0} custom-call(a), custom_call_target="xla.sdy.GlobalToLocalShape", frontend_attributes={xla.sdy.in_shardings="#sdy.sharding_per_value<[<@mesh, [{\"x\"}, {}]>]>",xla.sdy.manual_axes="#sdy<manual_axes{\"x\", \"y\"}>"}
  body = f32[4,4]{1,0} call(local), to_apply=xla.sdy.manual_computation_body.1
  ROOT global = f32[8,4]{1,0} custom-call(body), custom_call_target="xla.sdy.LocalToGlobalShape", frontend_attributes={xla.sdy.manual_axes="#sdy<manual_axes{\"x\", \"y\"}>",xla.sdy.out_shardings="#sdy.sharding_per_value<[<@mesh, [{\"x\"}, {}]>]>"}
}
)";

// `text` with every `from` replaced by `to`.
std::string With(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) text.replace(at, from.size(), to);
  return text;
}

TEST(PerDeviceProgramTest, TheSmallModuleOfTheErrorCasesIsHandled) {
  PerDeviceProgram pass;
  ExpectRewrite(pass, kSmall, R"(
    CHECK: HloModule small, num_partitions=8
    CHECK: ROOT %n = f32[4,4]{1,0} negate(f32[4,4]{1,0} %a)
  )");
  // device_ids in the mesh's own order change nothing.
  ExpectRewrite(pass, With(kSmall, R"("y"=4]>)", R"("y"=4], device_ids=[0,1,2,3,4,5,6,7]>)"), R"(
    CHECK: ROOT %n = f32[4,4]{1,0} negate(f32[4,4]{1,0} %a)
  )");
}

// A manual computation's result cut over x goes into one that takes it cut over y.
constexpr const char* kReshard = R"(HloModule reshard, frontend_attributes={xla.sdy.meshes={mesh = #sdy.mesh<["x"=2, "y"=4]>}}

ENTRY main {
  a = f32[8,4]{1,0} parameter(0)
  by_x = f32[4,4]{1,0} custom-call(a), custom_call_target="xla.sdy.GlobalToLocalShape", frontend_attributes={xla.sdy.in_shardings="#sdy.sharding_per_value<[<@mesh, [{\"x\"}, {}]>]>",xla.sdy.manual_axes="#sdy<manual_axes{\"x\", \"y\"}>"}
  global = f32[8,4]{1,0} custom-call(by_x), custom_call_target="xla.sdy.LocalToGlobalShape", frontend_attributes={xla.sdy.manual_axes="#sdy<manual_axes{\"x\", \"y\"}>",xla.sdy.out_shardings="#sdy.sharding_per_value<[<@mesh, [{\"x\"}, {}]>]>"}
  by_y = f32[2,4]{1,0} custom-call(global), custom_call_target="xla.sdy.GlobalToLocalShape", frontend_attributes={xla.sdy.in_shardings="#sdy.sharding_per_value<[<@mesh, [{\"y\"}, {}]>]>",xla.sdy.manual_axes="#sdy<manual_axes{\"x\", \"y\"}>"}
  ROOT result = f32[8,4]{1,0} custom-call(by_y), custom_call_target="xla.sdy.LocalToGlobalShape", frontend_attributes={xla.sdy.manual_axes="#sdy<manual_axes{\"x\", \"y\"}>",xla.sdy.out_shardings="#sdy.sharding_per_value<[<@mesh, [{\"y\"}, {}]>]>"}
}
)";

struct ErrorCase {
  const char* what;
  std::string text;
  StatusCode code;
  const char* message;  // a part of the error message
};

TEST(PerDeviceProgramTest, WhatItDoesNotHandleIsAnErrorNamingTheInstruction) {
  const std::string in_x = R"(<@mesh, [{\"x\"}, {}]>]>",xla.sdy.manual_axes)";
  const std::vector<ErrorCase> cases = {
      {"partially manual (shard_map with axis_names={'x'})",
       With(With(kSmall, R"(manual_axes{\"x\", \"y\"})", R"(manual_axes{\"x\"})"), R"({\"x\"}, {})", R"({\"x\", ?}, {?})"),
       StatusCode::kUnimplemented, "custom-call %local: a manual computation over some of the axes of mesh @mesh"},
      {"global-view work on a split array",
       With(With(kSmall, "ROOT global =", "global ="), R"(]>]>"}
}
)", R"(]>]>"}
  ROOT twice = f32[8,4]{1,0} add(global, global)
}
)"),
       StatusCode::kUnimplemented, R"(add %twice works on %global cut as [{"x"}, {}] outside the manual computation)"},
      {"resharding", kReshard, StatusCode::kUnimplemented,
       R"(custom-call %by_y takes %global cut as [{"y"}, {}], but it is cut as [{"x"}, {}])"},
      {"a parameter cut two ways", With(kReshard, "custom-call(global)", "custom-call(a)"), StatusCode::kUnimplemented,
       R"(custom-call %by_y takes %a cut as [{"y"}, {}], %by_x as [{"x"}, {}])"},
      {"devices in another order", With(kSmall, R"("y"=4]>)", R"("y"=4], device_ids=[7,6,5,4,3,2,1,0]>)"),
       StatusCode::kUnimplemented, "device_ids"},
      {"open dimension", With(kSmall, in_x, R"(<@mesh, [{\"x\", ?}, {}]>]>",xla.sdy.manual_axes)"),
       StatusCode::kUnimplemented, "custom-call %local, value 0: shardings with open dimensions"},
      {"sub-axis", With(kSmall, in_x, R"(<@mesh, [{\"x\"}, {\"y\":(1)2}]>]>",xla.sdy.manual_axes)"),
       StatusCode::kUnimplemented, R"(sub-axes ("y":(1)2))"},
      {"unreduced axes", With(kSmall, in_x, R"(<@mesh, [{\"x\"}, {}], unreduced={\"y\"}>]>",xla.sdy.manual_axes)"),
       StatusCode::kUnimplemented, "unreduced axes"},
      {"a sharding of another rank", With(kSmall, in_x, R"(<@mesh, [{\"x\"}]>]>",xla.sdy.manual_axes)"),
       StatusCode::kInvalidArgument, "custom-call %local, value 0: a sharding of 1 dimensions for f32[8,4]"},
      {"an axis the mesh does not have", With(kSmall, in_x, R"(<@mesh, [{\"z\"}, {}]>]>",xla.sdy.manual_axes)"),
       StatusCode::kInvalidArgument, R"(axis "z" is not an axis of mesh @mesh)"},
      {"a dimension that does not split evenly", With(kSmall, R"("x"=2)", R"("x"=3)"), StatusCode::kInvalidArgument,
       "dimension 0 of f32[8,4] does not split into 3 pieces"},
      {"a local shape that is not the part", With(kSmall, "local = f32[4,4]{1,0}", "local = f32[2,4]{1,0}"),
       StatusCode::kInvalidArgument, "custom-call %local: a device's part of %a cut as [{\"x\"}, {}] is f32[4,4], not f32[2,4]"},
      {"a sharding that does not read", With(kSmall, in_x, R"(<@mesh, [{\"x\"} {}]>]>",xla.sdy.manual_axes)"),
       StatusCode::kInvalidArgument, "custom-call %local: xla.sdy.in_shardings"},
      {"an element the tuple does not have",
       With(kPmap, "index=1, frontend_attributes={inlineable", "index=2, frontend_attributes={inlineable"),
       StatusCode::kInvalidArgument, "get-tuple-element %shard_map.14: no element 2 in (f32[1,4,3], s32[1])"},
      {"operands the manual body does not take", With(kSmall, "call(local)", "call(local, local)"),
       StatusCode::kInvalidArgument, "call %body passes 2 operands to %xla.sdy.manual_computation_body.1, which takes 1"},
      {"no mesh in the header", With(kSmall, R"(HloModule small, frontend_attributes={xla.sdy.meshes={mesh = #sdy.mesh<["x"=2, "y"=4]>}})", "HloModule small"),
       StatusCode::kInvalidArgument, "the module header names no mesh"},
      {"replicas", With(kSmall, "HloModule small,", "HloModule small, replica_count=2,"), StatusCode::kUnimplemented,
       "replica_count=2"},
      {"a shard_map inside another computation",
       With(kSmall, "  ROOT n = f32[4,4]{1,0} negate(p)",
            "  inner = f32[4,4]{1,0} custom-call(p), custom_call_target=\"xla.sdy.GlobalToLocalShape\"\n"
            "  ROOT n = f32[4,4]{1,0} negate(inner)"),
       StatusCode::kUnimplemented, "custom-call %inner in %xla.sdy.manual_computation_body.1"},
      {"shardings without a manual computation",
       R"(HloModule auto, frontend_attributes={xla.sdy.meshes={mesh = #sdy.mesh<["i"=8]>}}

ENTRY main {
  a = f32[8]{0} parameter(0)
  ROOT r = f32[8]{0} custom-call(a), custom_call_target="xla.sdy.FuncResultSharding", frontend_attributes={xla.sdy.sharding="#sdy.sharding_per_value<[<@mesh, [{\"i\"}]>]>"}
}
)",
       StatusCode::kUnimplemented, "custom-call %r: Shardy's custom calls without a manual computation"},
  };
  for (const ErrorCase& error : cases) {
    SCOPED_TRACE(error.what);
    auto module = hlo::ParseHloModule(error.text);
    ASSERT_TRUE(module.ok()) << module.status();
    PerDeviceProgram pass;
    StatusOr<bool> changed = pass.Run(module->get());
    ASSERT_FALSE(changed.ok()) << hlo::PrintHloModule(**module);
    EXPECT_EQ(changed.status().code(), error.code) << changed.status();
    EXPECT_NE(changed.status().message().find(error.message), std::string::npos) << changed.status();
    // Errors come before any change.
    EXPECT_EQ(hlo::PrintHloModule(**module), Canonical(error.text));
  }
}

}  // namespace
}  // namespace tpu::compiler
