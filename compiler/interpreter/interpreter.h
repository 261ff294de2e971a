// HLO interpreter: the CPU golden reference. Runs the entry computation on host Literals in IEEE fp32
// (no bf16 rounding of f32 values). Outputs are flattened: a tuple root gives its elements in order
// (nested tuples flattened depth-first).
#pragma once

#include <deque>
#include <functional>
#include <vector>

#include "compiler/hlo/hlo_ir.h"
#include "compiler/hlo/literal.h"
#include "sw/base/status.h"

namespace tpu::hlo {

struct InterpreterOptions {
  // A while loop that runs more iterations than this is reported as FailedPrecondition, not run forever.
  int64_t max_while_iterations = int64_t{1} << 24;
  // The host side of infeed and outfeed (XLA's TransferToInfeed / TransferFromOutfeed): each infeed
  // takes its value from `infeed` (called with the data shape; a value of another shape is
  // InvalidArgument), each outfeed hands its data to `outfeed`, in program order. Null: an infeed or
  // outfeed is FailedPrecondition. InfeedQueue and OutfeedQueue adapt host queues.
  std::function<StatusOr<Literal>(const Shape& data)> infeed;
  std::function<Status(Literal data)> outfeed;
};

// Infeed values from the front of `queue` (FailedPrecondition when it is empty); outfeed values appended
// to `queue`. The queues must outlive the interpretation.
std::function<StatusOr<Literal>(const Shape&)> InfeedQueue(std::deque<Literal>* queue);
std::function<Status(Literal)> OutfeedQueue(std::vector<Literal>* queue);

// Runs the module as device 0 alone. `arguments` has one Literal per entry parameter, of the parameter's
// shape (layout ignored). Collectives over groups of one are identities; a collective that meets other
// devices is FailedPrecondition.
// Unsupported opcodes give Unimplemented naming the opcode; constants whose values the dump elided give
// FailedPrecondition.
StatusOr<std::vector<Literal>> Interpret(const HloModule& module, const std::vector<Literal>& arguments,
                                         const InterpreterOptions& options = {});

// Runs the module on every device of its grid, each in its own thread: replica_count x num_partitions
// of the module header, or, when the header names neither, as many replicas as `arguments` has lists.
// arguments[d] and the result's [d] belong to device d (replica * num_partitions + partition); replica-id
// and partition-id give each device its place, and collectives meet across devices (see
// compiler/hlo/collective_groups.h for who meets whom, rendezvous.h for how). all-reduce combines in
// group order, so every device of a group gets the same bits. `device_options`, when not empty, has one
// entry per device (its infeed and outfeed). A failure names the device that failed first; devices
// waiting at a collective for a device that failed or ended fail too, instead of hanging.
StatusOr<std::vector<std::vector<Literal>>> InterpretReplicated(const HloModule& module,
                                                                const std::vector<std::vector<Literal>>& arguments,
                                                                const std::vector<InterpreterOptions>& device_options = {});

// Runs one computation on arguments; the result is not flattened (a tuple root gives a tuple Literal).
StatusOr<Literal> InterpretComputation(const HloComputation& computation, const std::vector<Literal>& arguments,
                                       const InterpreterOptions& options = {});

}  // namespace tpu::hlo
