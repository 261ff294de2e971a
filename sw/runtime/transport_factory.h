// Builds the Transport of a backend. The only place in the runtime that names the backends.
#pragma once

#include <memory>
#include <string>

#include "sw/base/status.h"
#include "sw/driver/transport.h"
#include "sw/runtime/client.h"

namespace tpu::runtime {

// "model": the reference model of rtl/config/<config>.cfg. "rtl": the verilated chips, which exist only
// for the configuration this build was generated for (InvalidArgument naming both otherwise). Either is a
// board of options.chips chips (0: the configuration's BOARD_CHIPS; InvalidArgument unless 1, 2 or 4).
StatusOr<std::unique_ptr<Transport>> CreateTransport(const std::string& backend, const std::string& config,
                                                     const ClientOptions& options);

}  // namespace tpu::runtime
