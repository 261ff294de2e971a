#include "compiler/passes/row_gathers.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "compiler/hlo/parser.h"
#include "compiler/hlo/verifier.h"
#include "compiler/interpreter/interpreter.h"
#include "compiler/passes/pass_test_util.h"

namespace tpu::compiler {
namespace {

using testing::ExpectRewrite;
using testing::ExpectUnchanged;

// A module of one gather or scatter: `params` are "name: type" pairs, `root` the instruction's text.
std::string Module(const std::vector<std::string>& params, const std::string& result, const std::string& root) {
  std::string text = R"(HloModule forms

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %r = f32[] add(f32[] %a, f32[] %b)
}

%mul (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %r = f32[] multiply(f32[] %a, f32[] %b)
}

%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %r = f32[] maximum(f32[] %a, f32[] %b)
}

%min (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %r = f32[] minimum(f32[] %a, f32[] %b)
}

%set (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  ROOT %b = f32[] parameter(1)
}

ENTRY %main ()";
  std::string header, body;
  for (size_t i = 0; i < params.size(); ++i) {
    const std::string name = params[i].substr(0, params[i].find(':'));
    const std::string type = params[i].substr(params[i].find(':') + 2);
    header += (i == 0 ? "" : ", ") + params[i];
    body += "  %" + name + " = " + type + " parameter(" + std::to_string(i) + ")\n";
  }
  return text + header + ") -> " + result + " {\n" + body + "  ROOT %r = " + result + " " + root + "\n}\n";
}

// The forms jnp indexing lowers to (jax.jit(f).lower(...).as_text(dialect='hlo')).
struct Form {
  const char* name;
  std::string text;
};

std::vector<Form> Forms() {
  return {
      {"x[idx] on 1-D", Module({"x: f32[10]", "i: s32[3,1]"}, "f32[3]",
                               "gather(f32[10] %x, s32[3,1] %i), offset_dims={}, collapsed_slice_dims={0}, "
                               "start_index_map={0}, index_vector_dim=1, slice_sizes={1}")},
      {"x[idx] with 2-D idx", Module({"x: f32[10]", "i: s32[2,3]"}, "f32[2,3]",
                                     "gather(f32[10] %x, s32[2,3] %i), offset_dims={}, collapsed_slice_dims={0}, "
                                     "start_index_map={0}, index_vector_dim=2, slice_sizes={1}")},
      {"x[:, idx]", Module({"x: f32[6,5]", "i: s32[3,1]"}, "f32[6,3]",
                           "gather(f32[6,5] %x, s32[3,1] %i), offset_dims={0}, collapsed_slice_dims={1}, "
                           "start_index_map={1}, index_vector_dim=1, slice_sizes={6,1}")},
      {"x[idx, :3]", Module({"x: f32[6,5]", "i: s32[4]"}, "f32[4,3]",
                            "gather(f32[6,5] %x, s32[4] %i), offset_dims={1}, collapsed_slice_dims={0}, "
                            "start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}")},
      {"x[:, idx, :] on rank 3", Module({"x: f32[4,3,5]", "i: s32[2,1]"}, "f32[4,2,5]",
                                        "gather(f32[4,3,5] %x, s32[2,1] %i), offset_dims={0,2}, "
                                        "collapsed_slice_dims={1}, start_index_map={1}, index_vector_dim=1, "
                                        "slice_sizes={4,1,5}")},
      {"x[i, j]", Module({"x: f32[6,5]", "i: s32[3,2]"}, "f32[3]",
                         "gather(f32[6,5] %x, s32[3,2] %i), offset_dims={}, collapsed_slice_dims={0,1}, "
                         "start_index_map={0,1}, index_vector_dim=1, slice_sizes={1,1}")},
      {"x[j, i] index vector first", Module({"x: f32[6,5]", "i: s32[2,3]"}, "f32[3]",
                                            "gather(f32[6,5] %x, s32[2,3] %i), offset_dims={}, "
                                            "collapsed_slice_dims={0,1}, start_index_map={1,0}, index_vector_dim=0, "
                                            "slice_sizes={1,1}")},
      {"take_along_axis 0", Module({"x: f32[6,5]", "i: s32[2,5,1]"}, "f32[2,5]",
                                   "gather(f32[6,5] %x, s32[2,5,1] %i), offset_dims={}, collapsed_slice_dims={0}, "
                                   "start_index_map={0}, operand_batching_dims={1}, start_indices_batching_dims={1}, "
                                   "index_vector_dim=2, slice_sizes={1,1}")},
      {"take_along_axis 1", Module({"x: f32[6,5]", "i: s32[6,2,1]"}, "f32[6,2]",
                                   "gather(f32[6,5] %x, s32[6,2,1] %i), offset_dims={}, collapsed_slice_dims={1}, "
                                   "start_index_map={1}, operand_batching_dims={0}, start_indices_batching_dims={0}, "
                                   "index_vector_dim=2, slice_sizes={1,1}")},
      {"x.at[idx].set on 1-D", Module({"x: f32[10]", "i: s32[5,1]", "u: f32[5]"}, "f32[10]",
                                      "scatter(f32[10] %x, s32[5,1] %i, f32[5] %u), update_window_dims={}, "
                                      "inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, "
                                      "to_apply=%set")},
      {"x.at[idx].mul on 1-D", Module({"x: f32[10]", "i: s32[5,1]", "u: f32[5]"}, "f32[10]",
                                      "scatter(f32[10] %x, s32[5,1] %i, f32[5] %u), update_window_dims={}, "
                                      "inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, "
                                      "to_apply=%mul")},
      {"x.at[:, idx].add", Module({"x: f32[6,5]", "i: s32[3,1]", "u: f32[6,3]"}, "f32[6,5]",
                                  "scatter(f32[6,5] %x, s32[3,1] %i, f32[6,3] %u), update_window_dims={0}, "
                                  "inserted_window_dims={1}, scatter_dims_to_operand_dims={1}, index_vector_dim=1, "
                                  "to_apply=%add")},
      {"x.at[i, j].max", Module({"x: f32[6,5]", "i: s32[4,2]", "u: f32[4]"}, "f32[6,5]",
                                "scatter(f32[6,5] %x, s32[4,2] %i, f32[4] %u), update_window_dims={}, "
                                "inserted_window_dims={0,1}, scatter_dims_to_operand_dims={0,1}, index_vector_dim=1, "
                                "to_apply=%max")},
      {"take_along_axis 0 gradient", Module({"x: f32[6,5]", "i: s32[2,5,1]", "u: f32[2,5]"}, "f32[6,5]",
                                            "scatter(f32[6,5] %x, s32[2,5,1] %i, f32[2,5] %u), update_window_dims={}, "
                                            "inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, "
                                            "input_batching_dims={1}, scatter_indices_batching_dims={1}, "
                                            "index_vector_dim=2, to_apply=%min")},
  };
}

// Each form interprets to the same values after the rewrite, indices out of range included (a gather
// clamps each position, a scatter skips the update), and no gather or scatter is left outside the slab form.
TEST(RowGathersTest, EveryFormInterpretsAsBefore) {
  for (const Form& form : Forms()) {
    SCOPED_TRACE(form.name);
    std::unique_ptr<hlo::HloModule> module = hlo::ParseHloModule(form.text).value();
    ASSERT_TRUE(hlo::VerifyHloModule(*module).ok()) << hlo::VerifyHloModule(*module);
    std::mt19937 rng(7);
    std::vector<hlo::Literal> inputs;
    const hlo::Shape& operand = module->entry_computation()->parameter_instruction(0)->shape();
    int64_t largest = 0;
    for (int64_t d : operand.dimensions) largest = std::max(largest, d);
    for (int64_t p = 0; p < module->entry_computation()->num_parameters(); ++p) {
      hlo::Literal value(module->entry_computation()->parameter_instruction(p)->shape());
      for (int64_t i = 0; i < value.element_count(); ++i) {
        // Indices from 2 below 0 to 2 past the largest dimension; values small integers (exact products).
        value.SetFromDouble(i, p == 1 ? static_cast<double>(static_cast<int64_t>(rng() % (largest + 4)) - 2)
                                      : static_cast<double>(static_cast<int>(rng() % 9) - 4));
      }
      inputs.push_back(std::move(value));
    }
    std::vector<hlo::Literal> expected = hlo::Interpret(*module, inputs).value();
    RowGathers pass;
    ASSERT_TRUE(pass.Run(module.get()).value());
    ASSERT_TRUE(hlo::VerifyHloModule(*module).ok()) << hlo::VerifyHloModule(*module);
    EXPECT_FALSE(pass.Run(module.get()).value()) << "the slab form is left as it is";
    std::vector<hlo::Literal> got = hlo::Interpret(*module, inputs).value();
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0], expected[0]);
  }
}

TEST(RowGathersTest, OneDimensionalGatherIsAColumnTable) {
  RowGathers pass;
  ExpectRewrite(pass, Forms()[0].text, R"(
CHECK:      %[[T:reshape.[0-9]+]] = f32[10,1]{1,0} reshape(f32[10] %x)
CHECK-NEXT: %[[G:gather.[0-9]+]] = f32[3,1]{1,0} gather(f32[10,1]{1,0} %[[T]], s32[3,1] %i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,1}
CHECK-NEXT: ROOT {{.*}} = f32[3]{0} reshape(f32[3,1]{1,0} %[[G]])
)");
}

TEST(RowGathersTest, MinorDimensionGatherIsTransposedRows) {
  RowGathers pass;
  ExpectRewrite(pass, Forms()[2].text, R"(
CHECK:      %[[T:transpose.[0-9]+]] = f32[5,6]{1,0} transpose(f32[6,5] %x), dimensions={1,0}
CHECK-NEXT: %[[G:gather.[0-9]+]] = f32[3,6]{1,0} gather(f32[5,6]{1,0} %[[T]], s32[3,1] %i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,6}
CHECK-NEXT: ROOT {{.*}} = f32[6,3]{1,0} transpose(f32[3,6]{1,0} %[[G]]), dimensions={1,0}
)");
}

// Two positions: each clamped into its dimension, then the linear row of the [30,1] table.
TEST(RowGathersTest, IndexVectorOfTwoIsALinearIndex) {
  RowGathers pass;
  ExpectRewrite(pass, Forms()[5].text, R"(
CHECK:      %[[T:reshape.[0-9]+]] = f32[30,1]{1,0} reshape(f32[6,5] %x)
CHECK:      %[[I:slice.[0-9]+]] = s32[3,1]{1,0} slice(s32[3,2] %i), slice={[0:3], [0:1]}
CHECK:      %[[CI:clamp.[0-9]+]] = s32[3,1]{1,0} clamp(s32[] %{{constant.[0-9]+}}, s32[3,1]{1,0} %[[I]], s32[] %{{constant.[0-9]+}})
CHECK:      %[[J:slice.[0-9]+]] = s32[3,1]{1,0} slice(s32[3,2] %i), slice={[0:3], [1:2]}
CHECK:      %[[CJ:clamp.[0-9]+]] = s32[3,1]{1,0} clamp(
CHECK:      %[[M:multiply.[0-9]+]] = s32[3,1]{1,0} multiply(s32[3,1]{1,0} %[[CI]],
CHECK-NEXT: %[[L:add.[0-9]+]] = s32[3,1]{1,0} add(s32[3,1]{1,0} %[[M]], s32[3,1]{1,0} %[[CJ]])
CHECK-NEXT: %[[G:gather.[0-9]+]] = f32[3,1]{1,0} gather(f32[30,1]{1,0} %[[T]], s32[3,1]{1,0} %[[L]]), offset_dims={1}
CHECK-NEXT: ROOT {{.*}} = f32[3]{0} reshape(f32[3,1]{1,0} %[[G]])
)");
}

// A batching dimension is one more position: the index's own, an iota.
TEST(RowGathersTest, TakeAlongAxisPairsTheBatchingDimensionWithAnIota) {
  RowGathers pass;
  ExpectRewrite(pass, Forms()[7].text, R"(
CHECK:      %[[T:reshape.[0-9]+]] = f32[30,1]{1,0} reshape(f32[6,5] %x)
CHECK:      clamp(
CHECK:      %[[IOTA:iota.[0-9]+]] = s32[2,5]{1,0} iota(), iota_dimension=1
CHECK:      gather(f32[30,1]{1,0} %[[T]],
CHECK:      ROOT {{.*}} = f32[2,5]{1,0} reshape(
)");
}

// A scatter's positions are not clamped: an update with any position outside is skipped (row -1).
TEST(RowGathersTest, ScatterAtTwoPositionsSkipsThoseOutside) {
  RowGathers pass;
  ExpectRewrite(pass, Forms()[12].text, R"(
CHECK-NOT:  clamp
CHECK:      compare({{.*}}), direction=GE
CHECK:      compare({{.*}}), direction=LE
CHECK:      %[[L:select.[0-9]+]] = s32[4,1]{1,0} select(
CHECK:      %[[U:reshape.[0-9]+]] = f32[4,1]{1,0} reshape(f32[4] %u)
CHECK-NEXT: %[[S:scatter.[0-9]+]] = f32[30,1]{1,0} scatter(f32[30,1]{1,0} %{{reshape.[0-9]+}}, s32[4,1]{1,0} %[[L]], f32[4,1]{1,0} %[[U]]), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%max
CHECK-NEXT: ROOT {{.*}} = f32[6,5]{1,0} reshape(f32[30,1]{1,0} %[[S]])
)");
}

TEST(RowGathersTest, MinorDimensionScatterIsTransposedRows) {
  RowGathers pass;
  ExpectRewrite(pass, Forms()[11].text, R"(
CHECK:      %[[T:transpose.[0-9]+]] = f32[5,6]{1,0} transpose(f32[6,5] %x), dimensions={1,0}
CHECK:      %[[U:transpose.[0-9]+]] = f32[3,6]{1,0} transpose(f32[6,3] %u), dimensions={1,0}
CHECK-NEXT: %[[S:scatter.[0-9]+]] = f32[5,6]{1,0} scatter(f32[5,6]{1,0} %[[T]], s32[3,1] %i, f32[3,6]{1,0} %[[U]]), update_window_dims={1}, {{.*}}, to_apply=%add
CHECK-NEXT: ROOT {{.*}} = f32[6,5]{1,0} transpose(f32[5,6]{1,0} %[[S]]), dimensions={1,0}
)");
}

TEST(RowGathersTest, SlabFormsAreLeftToCodegen) {
  RowGathers pass;
  ExpectUnchanged(pass, Module({"x: f32[4,3,5]", "i: s32[3,1]"}, "f32[3,3,5]",
                               "gather(f32[4,3,5] %x, s32[3,1] %i), offset_dims={1,2}, collapsed_slice_dims={0}, "
                               "start_index_map={0}, index_vector_dim=1, slice_sizes={1,3,5}"));
  ExpectUnchanged(pass, Module({"x: f32[6,5]", "i: s32[3,1]", "u: f32[3,5]"}, "f32[6,5]",
                               "scatter(f32[6,5] %x, s32[3,1] %i, f32[3,5] %u), update_window_dims={1}, "
                               "inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, "
                               "to_apply=%max"));
}

// Forms codegen refuses by name: several positions along an indexed dimension (a dynamic slice), a
// scatter window over part of a dimension.
TEST(RowGathersTest, WindowsOfSeveralPositionsAreLeft) {
  RowGathers pass;
  ExpectUnchanged(pass, Module({"x: f32[6,5]", "i: s32[3,1]"}, "f32[3,2,5]",
                               "gather(f32[6,5] %x, s32[3,1] %i), offset_dims={1,2}, collapsed_slice_dims={}, "
                               "start_index_map={0}, index_vector_dim=1, slice_sizes={2,5}"));
  ExpectUnchanged(pass, Module({"x: f32[6,5]", "i: s32[3,1]", "u: f32[3,4]"}, "f32[6,5]",
                               "scatter(f32[6,5] %x, s32[3,1] %i, f32[3,4] %u), update_window_dims={1}, "
                               "inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, "
                               "to_apply=%add"));
}

// Indices of every other integer type give the values the module gave before, for indices at and past
// both ends of each dimension and at the ends of the type (u32 2^31 and more clamp to the last position or
// are skipped, never wrap to a negative one), and leave only s32 slab gathers and scatters.
TEST(RowGathersTest, OtherIndexTypesInterpretAsBefore) {
  struct Typed {
    const char* name;
    std::vector<std::string> params;  // x, i[, u] with TYPE for the index type
    std::string result, root;
  };
  const std::vector<Typed> forms = {
      {"x[idx] on 1-D", {"x: f32[10]", "i: TYPE[6,1]"}, "f32[6]",
       "gather(f32[10] %x, TYPE[6,1] %i), offset_dims={}, collapsed_slice_dims={0}, start_index_map={0}, "
       "index_vector_dim=1, slice_sizes={1}"},
      {"slab gather", {"x: f32[10,3]", "i: TYPE[6,1]"}, "f32[6,3]",
       "gather(f32[10,3] %x, TYPE[6,1] %i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, "
       "index_vector_dim=1, slice_sizes={1,3}"},
      {"x[i, j]", {"x: f32[6,5]", "i: TYPE[6,2]"}, "f32[6]",
       "gather(f32[6,5] %x, TYPE[6,2] %i), offset_dims={}, collapsed_slice_dims={0,1}, start_index_map={0,1}, "
       "index_vector_dim=1, slice_sizes={1,1}"},
      {"x.at[idx].add on 1-D", {"x: f32[10]", "i: TYPE[6,1]", "u: f32[6]"}, "f32[10]",
       "scatter(f32[10] %x, TYPE[6,1] %i, f32[6] %u), update_window_dims={}, inserted_window_dims={0}, "
       "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%add"},
      {"slab scatter", {"x: f32[10,3]", "i: TYPE[6,1]", "u: f32[6,3]"}, "f32[10,3]",
       "scatter(f32[10,3] %x, TYPE[6,1] %i, f32[6,3] %u), update_window_dims={1}, inserted_window_dims={0}, "
       "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%set"},
      {"x.at[i, j].max", {"x: f32[6,5]", "i: TYPE[6,2]", "u: f32[6]"}, "f32[6,5]",
       "scatter(f32[6,5] %x, TYPE[6,2] %i, f32[6] %u), update_window_dims={}, inserted_window_dims={0,1}, "
       "scatter_dims_to_operand_dims={0,1}, index_vector_dim=1, to_apply=%max"},
  };
  auto typed = [](std::string text, const std::string& type) {
    for (size_t at = text.find("TYPE"); at != std::string::npos; at = text.find("TYPE")) text.replace(at, 4, type);
    return text;
  };
  struct IndexType {
    std::string name;
    std::vector<double> values;  // besides small ones around the dimensions
  };
  const std::vector<IndexType> types = {
      {"u32", {2147483647.0, 2147483648.0, 4294967295.0, 4294967286.0}},
      {"u8", {255.0, 128.0}},
      {"u16", {65535.0, 32768.0}},
      {"s8", {-128.0, 127.0, -1.0}},
      {"s16", {-32768.0, 32767.0, -1.0}},
      {"s64", {-4294967296.0, 4294967296.0, 2147483648.0, -2147483649.0, -1.0}},
  };
  for (const Typed& form : forms) {
    for (const IndexType& type : types) {
      SCOPED_TRACE(std::string(form.name) + ", " + type.name + " indices");
      std::vector<std::string> params;
      for (const std::string& p : form.params) params.push_back(typed(p, type.name));
      std::unique_ptr<hlo::HloModule> module = hlo::ParseHloModule(Module(params, form.result, typed(form.root, type.name))).value();
      ASSERT_TRUE(hlo::VerifyHloModule(*module).ok()) << hlo::VerifyHloModule(*module);
      std::unique_ptr<hlo::HloModule> rewritten = hlo::CloneModule(*module).value();
      RowGathers pass;
      ASSERT_TRUE(pass.Run(rewritten.get()).value());
      ASSERT_TRUE(hlo::VerifyHloModule(*rewritten).ok()) << hlo::VerifyHloModule(*rewritten);
      for (const hlo::HloInstruction* instruction : rewritten->entry_computation()->instructions()) {
        if (instruction->opcode() == hlo::HloOpcode::kGather || instruction->opcode() == hlo::HloOpcode::kScatter) {
          EXPECT_EQ(instruction->operand(1)->shape().element_type, hlo::PrimitiveType::S32) << instruction->ToString();
        }
      }
      EXPECT_FALSE(pass.Run(rewritten.get()).value()) << "the slab form is left as it is";
      std::mt19937 rng(3);
      for (int trial = 0; trial < 30; ++trial) {
        std::vector<hlo::Literal> inputs;
        const hlo::HloComputation& entry = *module->entry_computation();
        for (int64_t p = 0; p < entry.num_parameters(); ++p) {
          hlo::Literal value(entry.parameter_instruction(p)->shape());
          for (int64_t i = 0; i < value.element_count(); ++i) {
            double v = static_cast<double>(static_cast<int>(rng() % 9) - 4);
            if (p == 1) {
              // Small indices around the dimensions (negative ones only for signed types), or the type's ends.
              const bool is_unsigned = type.name[0] == 'u';
              v = rng() % 3 == 0 ? type.values[rng() % type.values.size()]
                                 : static_cast<double>(static_cast<int>(rng() % 13) - (is_unsigned ? 0 : 2));
            }
            value.SetFromDouble(i, v);
          }
          inputs.push_back(std::move(value));
        }
        std::vector<hlo::Literal> expected = hlo::Interpret(*module, inputs).value();
        std::vector<hlo::Literal> got = hlo::Interpret(*rewritten, inputs).value();
        ASSERT_EQ(got.size(), 1u);
        EXPECT_EQ(got[0], expected[0]) << "trial " << trial << ", indices " << inputs[1].ToString();
      }
    }
  }
}

// jnp.searchsorted's u32 indices: an unsigned minimum keeps 2^31 and more at the last row, then s32.
TEST(RowGathersTest, UnsignedIndicesTakeAnUnsignedMinimumBeforeTheConvert) {
  RowGathers pass;
  ExpectRewrite(pass, Module({"x: f32[12]", "i: u32[12,1]"}, "f32[12,1]",
                             "gather(f32[12] %x, u32[12,1] %i), offset_dims={1}, collapsed_slice_dims={}, "
                             "start_index_map={0}, index_vector_dim=1, slice_sizes={1}"),
                R"(
CHECK:      %[[B:constant.[0-9]+]] = u32[] constant(2147483647)
CHECK-NEXT: %[[BB:broadcast.[0-9]+]] = u32[12,1] broadcast(u32[] %[[B]]), dimensions={}
CHECK-NEXT: %[[M:minimum.[0-9]+]] = u32[12,1] minimum(u32[12,1] %i, u32[12,1] %[[BB]])
CHECK-NEXT: %[[C:convert.[0-9]+]] = s32[12,1] convert(u32[12,1] %[[M]])
CHECK:      gather(f32[12,1]{1,0} %{{reshape.[0-9]+}}, s32[12,1] %[[C]]), offset_dims={1}, collapsed_slice_dims={0}
)");
}

// A slab form only changes its indices; a narrow type converts without a bound.
TEST(RowGathersTest, SlabFormWithNarrowIndicesOnlyConverts) {
  RowGathers pass;
  ExpectRewrite(pass, Module({"x: f32[10,3]", "i: s8[6,1]"}, "f32[6,3]",
                             "gather(f32[10,3] %x, s8[6,1] %i), offset_dims={1}, collapsed_slice_dims={0}, "
                             "start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}"),
                R"(
CHECK:      %i = s8[6,1] parameter(1)
CHECK-NEXT: %[[C:convert.[0-9]+]] = s32[6,1] convert(s8[6,1] %i)
CHECK-NEXT: ROOT {{.*}} = f32[6,3] gather(f32[10,3] %x, s32[6,1] %[[C]]), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}
)");
}

}  // namespace
}  // namespace tpu::compiler
