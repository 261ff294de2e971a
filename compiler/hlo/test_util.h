// Helpers shared by the HLO tests: reading the project's real HLO dumps.
#pragma once

#include <fstream>
#include <sstream>
#include <string>

namespace tpu::hlo::testing {

// Contents of ../shared/hlo/<name>, or "" when the folder is not there.
inline std::string ReadSharedHlo(const std::string& name) {
  std::ifstream file(std::string(TPU_SHARED_HLO_DIR) + "/" + name);
  if (!file) return "";
  std::stringstream buffer;
  buffer << file.rdbuf();
  return buffer.str();
}

inline const char* const kSharedHloFiles[] = {"maml_flax_train_step.hlo", "pytorch_xla_mnist_mlp_train_step.hlo",
                                              "efficientnet_forward.hlo"};

}  // namespace tpu::hlo::testing
