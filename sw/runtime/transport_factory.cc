#include "sw/runtime/transport_factory.h"

#include "sim/model/chip_config.h"
#include "sim/model/ici.h"
#include "sim/model/model_transport.h"
#include "sysc/rtl_transport.h"
#include "tpu_config.h"

namespace tpu::runtime {

StatusOr<std::unique_ptr<Transport>> CreateTransport(const std::string& backend, const std::string& config,
                                                     const ClientOptions& options) {
  if (backend == "model") {
    TPU_ASSIGN_OR_RETURN(model::ChipConfig chip, model::ChipConfig::Named(config));
    chip.hbm_timing = options.model_hbm_timing;
    const uint32_t chips = options.chips != 0 ? options.chips : chip.board_chips;
    TPU_RETURN_IF_ERROR(ici::CheckBoardChips(chips));
    return std::unique_ptr<Transport>(std::make_unique<model::ModelTransport>(chip, chips));
  }
  if (backend == "rtl") {
    if (config != cfg::kName) {
      return InvalidArgument("the rtl backend of this build is the '" + std::string(cfg::kName) +
                             "' configuration; '" + config + "' was requested (build with CONFIG=" + config +
                             " to simulate it, or use --backend=model)");
    }
    RtlTraceOptions trace;
    trace.file = options.trace_file;
    trace.depth = options.trace_depth;
    trace.start_cycle = options.trace_start_cycle;
    if (options.trace_stop_cycle != 0) trace.stop_cycle = options.trace_stop_cycle;
    if (trace.stop_cycle <= trace.start_cycle) {
      return InvalidArgument("trace window [" + std::to_string(trace.start_cycle) + ", " +
                             std::to_string(trace.stop_cycle) + ") is empty");
    }
    const uint32_t chips = options.chips != 0 ? options.chips : static_cast<uint32_t>(cfg::kBoardChips);
    TPU_ASSIGN_OR_RETURN(std::unique_ptr<RtlTransport> transport, RtlTransport::Create(trace, chips));
    return std::unique_ptr<Transport>(std::move(transport));
  }
  return InvalidArgument("unknown backend '" + backend + "' (expected rtl or model)");
}

}  // namespace tpu::runtime
