// Pooling on the device (pool.cc): reduce-window and select-and-scatter modules compiled and run on the
// reference model through the runtime, compared bit for bit with the interpreter (same operations in the
// same order), with the padded lanes of every output checked to be zero and the program's unit
// synchronization checked.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "compiler/codegen/device_test_util.h"

namespace tpu::compiler {
namespace {

using hlo::Literal;

struct Dim {
  int64_t size = 1, stride = 1, pad_low = 0, pad_high = 0;
};

std::string ShapeText(const std::vector<int64_t>& dims) {
  std::string text = "f32[";
  for (size_t i = 0; i < dims.size(); ++i) text += (i ? "," : "") + std::to_string(dims[i]);
  text += "]{";
  for (size_t i = 0; i < dims.size(); ++i) text += (i ? "," : "") + std::to_string(dims.size() - 1 - i);
  return text + "}";
}

std::string WindowText(const std::vector<Dim>& window) {
  std::string size, stride, pad;
  for (size_t i = 0; i < window.size(); ++i) {
    const std::string x = i ? "x" : "";
    size += x + std::to_string(window[i].size);
    stride += x + std::to_string(window[i].stride);
    pad += x + std::to_string(window[i].pad_low) + "_" + std::to_string(window[i].pad_high);
  }
  return "window={size=" + size + " stride=" + stride + " pad=" + pad + "}";
}

std::vector<int64_t> Windows(const std::vector<int64_t>& dims, const std::vector<Dim>& window) {
  std::vector<int64_t> out;
  for (size_t i = 0; i < dims.size(); ++i) {
    const Dim& w = window[i];
    out.push_back((dims[i] + w.pad_low + w.pad_high - w.size) / w.stride + 1);
  }
  return out;
}

// NHWC pooling window over H and W.
std::vector<Dim> Nhwc(int64_t size, int64_t stride, int64_t pad_low, int64_t pad_high) {
  return {Dim{}, Dim{size, stride, pad_low, pad_high}, Dim{size, stride, pad_low, pad_high}, Dim{}};
}

const char kComputations[] = R"(%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = f32[] maximum(%a, %b)
}

%min (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = f32[] minimum(%a, %b)
}

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

%ge (a: f32[], b: f32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %c = pred[] compare(%a, %b), direction=GE
}

%gt (a: f32[], b: f32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %c = pred[] compare(%a, %b), direction=GT
}

)";

std::string ReduceWindowModule(const std::vector<int64_t>& dims, const std::vector<Dim>& window, const char* reducer,
                               const char* init) {
  const std::string in = ShapeText(dims), out = ShapeText(Windows(dims, window));
  return std::string("HloModule reduce_window\n\n") + kComputations + "ENTRY %main (x: " + in + ") -> " + out +
         " {\n  %x = " + in + " parameter(0)\n  %init = f32[] constant(" + init + ")\n  ROOT %pool = " + out +
         " reduce-window(" + in + " %x, f32[] %init), " + WindowText(window) + ", to_apply=%" + reducer + "\n}\n";
}

std::string SelectAndScatterModule(const std::vector<int64_t>& dims, const std::vector<Dim>& window,
                                   const char* select, const char* init) {
  const std::string in = ShapeText(dims), source = ShapeText(Windows(dims, window));
  return std::string("HloModule select_and_scatter\n\n") + kComputations + "ENTRY %main (x: " + in +
         ", g: " + source + ") -> " + in + " {\n  %x = " + in + " parameter(0)\n  %g = " + source +
         " parameter(1)\n  %init = f32[] constant(" + init + ")\n  ROOT %grad = " + in + " select-and-scatter(" + in +
         " %x, " + source + " %g, f32[] %init), " + WindowText(window) + ", select=%" + select + ", scatter=%add\n}\n";
}

class PoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StatusOr<std::unique_ptr<runtime::Client>> client = runtime::Client::Create("model", cfg::kName);
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = std::move(client).value();
  }

  // Random arguments: uniform in [-1, 1), or small integers (many ties) when `ties`.
  std::vector<Literal> Arguments(const hlo::HloModule& module, uint32_t seed, bool ties) {
    std::mt19937 rng(seed);
    std::vector<Literal> arguments;
    for (const hlo::HloInstruction* parameter : module.entry_computation()->parameter_instructions()) {
      Literal value = Literal::Random(parameter->shape(), rng);
      if (ties) {
        for (int64_t i = 0; i < value.element_count(); ++i) {
          value.data<float>()[i] = static_cast<float>(static_cast<int>(rng() % 4) - 1);
        }
      }
      arguments.push_back(std::move(value));
    }
    return arguments;
  }

  // Compiles and runs `text`; every output must equal the interpreter's bit for bit (or within the
  // tolerance of docs/numerics.md when `exact` is false) and keep its padded lanes zero.
  void ExpectMatchesInterpreter(const std::string& text, uint32_t seed, bool ties = false, bool exact = true) {
    SCOPED_TRACE(text);
    StatusOr<std::unique_ptr<hlo::HloModule>> module = hlo::ParseHloModule(text);
    ASSERT_TRUE(module.ok()) << module.status();
    const std::vector<Literal> arguments = Arguments(**module, seed, ties);
    StatusOr<std::vector<Literal>> reference = hlo::Interpret(**module, arguments);
    ASSERT_TRUE(reference.ok()) << reference.status();
    StatusOr<std::unique_ptr<runtime::LoadedExecutable>> executable = client_->Compile(**module);
    ASSERT_TRUE(executable.ok()) << executable.status();
    const Program& program = (*executable)->program();
    Status sync = CheckUnitSynchronization(program.code, SyncCheckOptions{program.lanes});
    ASSERT_TRUE(sync.ok()) << sync;
    device_test::ExpectRunMatches(*client_, **executable, arguments, *reference, exact);
  }

  Status CompileError(const std::string& text) {
    StatusOr<std::unique_ptr<hlo::HloModule>> module = hlo::ParseHloModule(text);
    if (!module.ok()) return module.status();
    return client_->Compile(**module).status();
  }

  std::unique_ptr<runtime::Client> client_;
};

TEST_F(PoolTest, MaxPoolForwardMatchesTheInterpreterBitForBit) {
  // 2x2 stride 2 VALID, 3x3 stride 2 SAME, 3x3 stride 1 SAME (overlapping), channels not a multiple of 8,
  // odd sizes that leave a partial window out (VALID) or in the padding (SAME).
  ExpectMatchesInterpreter(ReduceWindowModule({2, 8, 8, 12}, Nhwc(2, 2, 0, 0), "max", "-inf"), 1);
  ExpectMatchesInterpreter(ReduceWindowModule({2, 9, 7, 5}, Nhwc(3, 2, 1, 1), "max", "-inf"), 2);
  ExpectMatchesInterpreter(ReduceWindowModule({1, 7, 9, 19}, Nhwc(3, 1, 1, 1), "max", "-inf"), 3);
  ExpectMatchesInterpreter(ReduceWindowModule({3, 5, 6, 3}, Nhwc(2, 1, 0, 1), "max", "-inf"), 4);
  ExpectMatchesInterpreter(ReduceWindowModule({2, 11, 10, 16}, Nhwc(3, 2, 0, 0), "max", "-inf"), 5);
}

TEST_F(PoolTest, SumAndMinPoolingAndOtherInitValues) {
  // Average pooling's sum (add, init 0) in the interpreter's order; min; an init value that is not the
  // identity (it enters every window and the padded lanes must still be cleared).
  ExpectMatchesInterpreter(ReduceWindowModule({2, 7, 7, 6}, Nhwc(3, 1, 1, 1), "add", "0"), 6);
  ExpectMatchesInterpreter(ReduceWindowModule({1, 8, 6, 10}, Nhwc(2, 2, 1, 1), "add", "0"), 7);
  ExpectMatchesInterpreter(ReduceWindowModule({2, 6, 5, 9}, Nhwc(3, 2, 1, 1), "min", "inf"), 8);
  ExpectMatchesInterpreter(ReduceWindowModule({1, 6, 6, 5}, Nhwc(2, 2, 0, 0), "max", "0.25"), 9);
  ExpectMatchesInterpreter(ReduceWindowModule({1, 5, 5, 7}, Nhwc(3, 2, 1, 1), "add", "1.5"), 10);
}

TEST_F(PoolTest, WindowsOnEveryNonMinorDimensionAndEmptyWindows) {
  // A window on the batch dimension too (rank 4), rank 3 and rank 2 operands, and padding wider than the
  // window (windows that lie entirely in the padding give the init value; padded lanes stay zero).
  ExpectMatchesInterpreter(
      ReduceWindowModule({4, 6, 5, 3}, {Dim{2, 1, 0, 0}, Dim{3, 2, 1, 1}, Dim{2, 1, 0, 0}, Dim{}}, "max", "-inf"), 11);
  ExpectMatchesInterpreter(ReduceWindowModule({3, 11, 6}, {Dim{2, 1, 1, 0}, Dim{4, 3, 2, 2}, Dim{}}, "add", "0"), 12);
  ExpectMatchesInterpreter(ReduceWindowModule({13, 9}, {Dim{4, 3, 2, 2}, Dim{}}, "max", "-inf"), 13);
  ExpectMatchesInterpreter(ReduceWindowModule({1, 4, 4, 5}, Nhwc(2, 2, 3, 3), "max", "-inf"), 14);
}

TEST_F(PoolTest, MaxPoolGradientMatchesTheInterpreterBitForBit) {
  // select GE + scatter add (what JAX and PyTorch/XLA emit for max pooling's gradient): non-overlapping,
  // overlapping (stride < window: a position receives from up to 9 windows, summed in window order) and
  // SAME-padded windows; channel counts that are not multiples of the lanes.
  ExpectMatchesInterpreter(SelectAndScatterModule({2, 8, 8, 12}, Nhwc(2, 2, 0, 0), "ge", "0"), 21);
  ExpectMatchesInterpreter(SelectAndScatterModule({1, 7, 9, 5}, Nhwc(3, 1, 1, 1), "ge", "0"), 22);
  ExpectMatchesInterpreter(SelectAndScatterModule({2, 9, 7, 11}, Nhwc(3, 2, 1, 1), "ge", "0"), 23);
  ExpectMatchesInterpreter(SelectAndScatterModule({1, 10, 11, 3}, Nhwc(3, 2, 0, 0), "ge", "0"), 24);
  ExpectMatchesInterpreter(SelectAndScatterModule({2, 6, 7, 9}, Nhwc(2, 1, 0, 1), "ge", "0"), 25);
}

TEST_F(PoolTest, MaxPoolGradientBreaksTiesLikeTheInterpreter) {
  // Operands of a few integer values: most windows hold their maximum more than once. GE keeps the first
  // position in window order, GT moves to the last one.
  ExpectMatchesInterpreter(SelectAndScatterModule({2, 8, 8, 12}, Nhwc(2, 2, 0, 0), "ge", "0"), 31, true);
  ExpectMatchesInterpreter(SelectAndScatterModule({1, 7, 9, 5}, Nhwc(3, 1, 1, 1), "ge", "0"), 32, true);
  ExpectMatchesInterpreter(SelectAndScatterModule({1, 7, 9, 5}, Nhwc(3, 1, 1, 1), "gt", "0"), 33, true);
  ExpectMatchesInterpreter(SelectAndScatterModule({2, 9, 7, 6}, Nhwc(3, 2, 1, 1), "gt", "0"), 34, true);
}

TEST_F(PoolTest, SelectAndScatterOnOtherRanksAndInitValues) {
  ExpectMatchesInterpreter(
      SelectAndScatterModule({3, 6, 5, 3}, {Dim{2, 1, 0, 0}, Dim{2, 2, 0, 0}, Dim{3, 1, 1, 1}, Dim{}}, "ge", "0"), 41);
  ExpectMatchesInterpreter(SelectAndScatterModule({3, 11, 6}, {Dim{2, 1, 1, 0}, Dim{4, 3, 2, 2}, Dim{}}, "ge", "0"), 42);
  ExpectMatchesInterpreter(SelectAndScatterModule({13, 9}, {Dim{4, 3, 2, 2}, Dim{}}, "ge", "0"), 43);
  // Windows entirely in the padding select nothing; a non-zero init value fills every position.
  ExpectMatchesInterpreter(SelectAndScatterModule({1, 4, 4, 5}, Nhwc(2, 2, 3, 3), "ge", "0.5"), 44);
}

// JAX's SAME padding of one dimension: the total padding split with the extra element at the end.
Dim SamePadding(int64_t size, int64_t window, int64_t stride) {
  const int64_t out = (size + stride - 1) / stride;
  const int64_t total = std::max<int64_t>((out - 1) * stride + window - size, 0);
  return Dim{window, stride, total / 2, total - total / 2};
}

TEST_F(PoolTest, RandomNhwcShapesMatchTheInterpreterBitForBit) {
  std::mt19937 rng(2026);
  auto uniform = [&](int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(rng() % (hi - lo + 1)); };
  for (int i = 0; i < 40; ++i) {
    const int64_t window = uniform(2, 3), stride = uniform(1, 2), channels = uniform(1, 20);
    const std::vector<int64_t> dims = {uniform(1, 3), uniform(window, 11), uniform(window, 11), channels};
    const bool same = rng() % 2 == 0;
    std::vector<Dim> dims_window = Nhwc(window, stride, 0, 0);
    if (same) {
      dims_window[1] = SamePadding(dims[1], window, stride);
      dims_window[2] = SamePadding(dims[2], window, stride);
    }
    SCOPED_TRACE("case " + std::to_string(i));
    ExpectMatchesInterpreter(ReduceWindowModule(dims, dims_window, "max", "-inf"), 100 + i);
    ExpectMatchesInterpreter(SelectAndScatterModule(dims, dims_window, "ge", "0"), 200 + i, /*ties=*/i % 3 == 0);
  }
}

TEST_F(PoolTest, V2ModelMatchesTheInterpreterBitForBit) {
  // 128 lanes: the channels fill part of one line, the rest are padded lanes that must stay zero.
  StatusOr<std::unique_ptr<runtime::Client>> v2 = runtime::Client::Create("model", "v2");
  ASSERT_TRUE(v2.ok()) << v2.status();
  client_ = std::move(v2).value();
  ExpectMatchesInterpreter(ReduceWindowModule({2, 9, 7, 40}, Nhwc(3, 2, 1, 1), "max", "-inf"), 61);
  ExpectMatchesInterpreter(ReduceWindowModule({2, 8, 8, 130}, Nhwc(2, 2, 0, 0), "add", "0"), 62);
  ExpectMatchesInterpreter(SelectAndScatterModule({2, 9, 7, 40}, Nhwc(3, 2, 1, 1), "ge", "0"), 63, true);
  ExpectMatchesInterpreter(SelectAndScatterModule({1, 7, 9, 130}, Nhwc(3, 1, 1, 1), "ge", "0"), 64);
}

TEST_F(PoolTest, VerilatedChipMatchesTheInterpreterBitForBit) {
  StatusOr<std::unique_ptr<runtime::Client>> rtl = runtime::Client::Create("rtl", cfg::kName);
  ASSERT_TRUE(rtl.ok()) << rtl.status();
  client_ = std::move(rtl).value();
  ExpectMatchesInterpreter(ReduceWindowModule({2, 9, 7, 11}, Nhwc(3, 2, 1, 1), "max", "-inf"), 71);
  ExpectMatchesInterpreter(SelectAndScatterModule({2, 9, 7, 11}, Nhwc(3, 2, 1, 1), "ge", "0"), 72, true);
  ExpectMatchesInterpreter(SelectAndScatterModule({1, 7, 9, 5}, Nhwc(3, 1, 1, 1), "ge", "0"), 73);
}

TEST_F(PoolTest, AveragePoolingAsJaxWritesIt) {
  // avg_pool: reduce-window add, then a divide by the window size (a multiply by its reciprocal on the
  // device: within docs/numerics.md's tolerance, not bit-exact).
  const std::string in = ShapeText({2, 8, 8, 6}), out = ShapeText({2, 4, 4, 6});
  const std::string text = std::string("HloModule avg_pool\n\n") + kComputations + "ENTRY %main (x: " + in + ") -> " +
                           out + " {\n  %x = " + in + " parameter(0)\n  %zero = f32[] constant(0)\n  %sum = " + out +
                           " reduce-window(" + in + " %x, f32[] %zero), " + WindowText(Nhwc(2, 2, 0, 0)) +
                           ", to_apply=%add\n  %four = f32[] constant(4)\n  %count = " + out +
                           " broadcast(f32[] %four), dimensions={}\n  ROOT %avg = " + out + " divide(" + out + " %sum, " +
                           out + " %count)\n}\n";
  ExpectMatchesInterpreter(text, 51, false, /*exact=*/false);
}

TEST_F(PoolTest, WindowsOverTheMinorDimensionGoThroughATranspose) {
  // pool-minor-through-transpose moves the minor dimension out of the window.
  ExpectMatchesInterpreter(ReduceWindowModule({2, 8, 8}, {Dim{}, Dim{2, 2, 0, 0}, Dim{2, 2, 0, 0}}, "max", "-inf"), 74);
}

TEST_F(PoolTest, UnsupportedWindowsFailClearly) {
  // A 2x2 window dilated by 2 covers 3x3 input positions: the shapes of a 3x3 window.
  std::string dilated = ReduceWindowModule({1, 8, 8, 4}, Nhwc(3, 1, 0, 0), "max", "-inf");
  dilated.replace(dilated.find("size=1x3x3x1"), 12, "size=1x2x2x1 rhs_dilate=1x2x2x1");
  Status dilation = CompileError(dilated);
  EXPECT_EQ(dilation.code(), StatusCode::kUnimplemented) << dilation;
  EXPECT_NE(dilation.message().find("dilation"), std::string::npos) << dilation;

  std::string lt = SelectAndScatterModule({1, 4, 4, 8}, Nhwc(2, 2, 0, 0), "ge", "0");
  lt.replace(lt.find("scatter=%add"), 12, "scatter=%max");
  Status scatter = CompileError(lt);
  EXPECT_EQ(scatter.code(), StatusCode::kUnimplemented) << scatter;
  EXPECT_NE(scatter.message().find("add scatter"), std::string::npos) << scatter;
}

}  // namespace
}  // namespace tpu::compiler
