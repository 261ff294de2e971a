// More training steps of the kinds real frameworks dump (tb/system/hlo/, written in the text form of a JAX
// `before_optimizations` dump and of a PyTorch/XLA SyncTensorsGraph dump): `tpusim run` on the model
// backend matches the interpreter within the tolerance of docs/numerics.md for several seeds, and the rtl
// backend returns the model's bytes.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "tb/system/tpusim_process.h"

namespace {

using tpu::system_test::MakeTempDir;
using tpu::system_test::ReadBytes;
using tpu::system_test::RunTpusim;
using tpu::system_test::TpusimRun;

struct TrainingModule {
  const char* name;
  int outputs;
  int outfeed_values = 0;    // values its outfeeds send
  int outfeed_elements = 0;  // arrays per value
};

// jax_mlp_tanh_adam_train_step: MLP 20-32-10 with tanh, softmax cross-entropy over integer labels
// (one-hot by an iota compare), optax Adam (abs, power, sqrt, divide, bias corrections 1 - b^t).
// pytorch_xla_mlp_sigmoid_l1_momentum_train_step: MLP 12-24-4 with sigmoid (logistic), L1 loss (abs,
// sign), clip_grad_value_ (clamp), SGD with momentum and weight decay, input_output_alias.
// pytorch_xla_mlp_tanh_mse_adam_train_step: MLP 16-24-6 with tanh, MSE loss (power 2), torch.optim.Adam
// with a tensor step count (scalar power, sqrt and divide on the device), input_output_alias.
// jax_cnn_train_step: 4x4x3 images, conv 3x3 SAME (3 -> 8 channels, NHWC) -> ReLU -> max pool 2x2
// (reduce-window) -> dense 32-10 -> softmax cross-entropy, SGD on every parameter; the max-pool gradient is
// a select-and-scatter (GE, add), the kernel gradient a convolution with dim_labels f01b_i01o->01bf (a 4x4
// window: the windows of its 9 output positions gathered into one dot, compiler/passes/convolution_lowering.h).
// jax_mnist_cnn_train_step: the same network at MNIST size (batch 8 of 28x28x1 images, 8 channels, dense
// 1568-10): the 3x3 windows of the one-channel images are gathered into one matrix for one dot.
// jax_cnn2_train_step: 2x2x3 images, conv 3x3 SAME (3 -> 8) -> tanh -> conv 2x2 SAME (8 -> 8) -> ReLU ->
// max pool 2x2 -> dense 8-10 -> softmax cross-entropy, SGD on every parameter; the second conv's input
// gradient is `reverse` of its kernel's spatial dimensions and a convolution (b01f_01oi->b01f).
// jax_mlp_fori_loop_10_steps: ten SGD steps of an MLP 16-32-10 (ReLU, softmax cross-entropy) in one
// `lax.fori_loop` (a while loop on the device: jax.jit(...).lower(...).as_text(dialect="hlo")), then the
// loss of the trained parameters; the current text format (no % sigils, entry_computation_layout).
// jax_mlp_grad_clip_cond_5_steps: five SGD steps of the same MLP in a `lax.fori_loop`, each clipping the
// global gradient norm to 0.5 with `lax.cond` (a conditional inside the loop body, its index computed on
// the device from the gradients), then the loss.
// jax_mlp_dropout_train_step: an MLP 16-32-10 SGD step with dropout 0.2 drawn by jax.random (threefry:
// u32 adds, xors, shifts and rotations in a while loop, bitcast-convert), returning the next key.
// jax_mlp_infeed_loop_4_steps: four SGD steps of an MLP 16-32-10 in one device loop (tpusim's
// steps_per_execution, training.make_train_loop): each step takes its batch (f32[8,16], s32[8]) from the
// infeed and sends its loss and correct count to the outfeed (after-all tokens, as JAX lowers them).
// jax_xla_dump_mlp_sgd_step: an MLP 16-32-10 SGD step as XLA_FLAGS=--xla_dump_to writes it
// (before_optimizations.txt: the FileNames / FunctionNames / FileLocations / StackFrames tables and
// stack_frame_id metadata of current JAX; the script's and packages' paths shortened).
// jax_rnn_scan_bptt: a tanh RNN over 6 time steps in `lax.scan` and its gradient through time (two while
// loops reading and writing one time step of the sequences with dynamic-slice / dynamic-update-slice).
const TrainingModule kModules[] = {{"jax_mlp_tanh_adam_train_step", 14},
                                   {"pytorch_xla_mlp_sigmoid_l1_momentum_train_step", 10},
                                   {"pytorch_xla_mlp_tanh_mse_adam_train_step", 14},
                                   {"jax_cnn_train_step", 5},
                                   {"jax_mnist_cnn_train_step", 5},
                                   {"jax_cnn2_train_step", 7},
                                   {"jax_mlp_fori_loop_10_steps", 5},
                                   {"jax_mlp_grad_clip_cond_5_steps", 5},
                                   {"jax_mlp_dropout_train_step", 6},
                                   {"jax_rnn_scan_bptt", 4},
                                   {"jax_xla_dump_mlp_sgd_step", 5},
                                   {"jax_mlp_infeed_loop_4_steps", 4, 4, 2}};

std::string ModulePath(const char* name) { return std::string(TPU_SOURCE_DIR) + "/tb/system/hlo/" + name + ".hlo"; }

// Every output is compared and reported ok.
void ExpectPassingStep(const TpusimRun& run, int outputs, int outfeed_values = 0) {
  if (outfeed_values > 0) {
    EXPECT_NE(run.output.find("outfeed_values: " + std::to_string(outfeed_values) + "\n"), std::string::npos) << run.output;
    EXPECT_TRUE(std::regex_search(run.output, std::regex("outfeed " + std::to_string(outfeed_values - 1) + "\\.0: .* ok\n")))
        << run.output;
  }
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(std::regex_search(run.output, std::regex("(^|\n)cycles: [1-9][0-9]*\n"))) << run.output;
  for (int i = 0; i < outputs; ++i) {
    const std::regex line("output " + std::to_string(i) + ": [a-z0-9]+\\[[0-9,]*\\] .* ok\n");
    EXPECT_TRUE(std::regex_search(run.output, line)) << "output " << i << "\n" << run.output;
  }
  EXPECT_EQ(run.output.find("output " + std::to_string(outputs) + ":"), std::string::npos) << run.output;
  EXPECT_EQ(run.output.find("FAIL"), std::string::npos) << run.output;
}

TEST(TrainingModulesTest, MatchTheInterpreterOnTheModel) {
  for (const TrainingModule& module : kModules) {
    for (int seed : {1, 2, 5}) {
      SCOPED_TRACE(std::string(module.name) + " seed " + std::to_string(seed));
      TpusimRun run = RunTpusim("run " + ModulePath(module.name) + " --backend=model --config=" + TPU_CONFIG_NAME +
                                " --seed=" + std::to_string(seed));
      ExpectPassingStep(run, module.outputs, module.outfeed_values);
    }
  }
}

TEST(TrainingModulesTest, RtlAndModelAreByteIdentical) {
  for (const TrainingModule& module : kModules) {
    SCOPED_TRACE(module.name);
    const std::string dir = MakeTempDir("training_modules");
    const std::string common = "run " + ModulePath(module.name) + " --config=" + TPU_CONFIG_NAME + " --seed=3";
    TpusimRun model = RunTpusim(common + " --backend=model --outputs=" + dir + "/model");
    ExpectPassingStep(model, module.outputs, module.outfeed_values);
    const auto start = std::chrono::steady_clock::now();
    TpusimRun rtl = RunTpusim(common + " --backend=rtl --outputs=" + dir + "/rtl");
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ExpectPassingStep(rtl, module.outputs, module.outfeed_values);
    std::printf("%s on the rtl (%.1f s wall):\n%s", module.name, seconds, rtl.output.c_str());
    for (int i = 0; i < module.outputs; ++i) {
      const std::string name = "/out" + std::to_string(i) + ".bin";
      const std::string rtl_bytes = ReadBytes(dir + "/rtl" + name);
      EXPECT_FALSE(rtl_bytes.empty()) << name;
      EXPECT_TRUE(rtl_bytes == ReadBytes(dir + "/model" + name)) << "output " << i << " of " << module.name;
    }
    for (int k = 0; k < module.outfeed_values; ++k) {
      for (int e = 0; e < module.outfeed_elements; ++e) {
        const std::string name = "/outfeed" + std::to_string(k) + "." + std::to_string(e) + ".bin";
        const std::string rtl_bytes = ReadBytes(dir + "/rtl" + name);
        EXPECT_FALSE(rtl_bytes.empty()) << name;
        EXPECT_TRUE(rtl_bytes == ReadBytes(dir + "/model" + name)) << name << " of " << module.name;
      }
    }
  }
}

}  // namespace
