// Where the devices of a replicated interpretation meet at a collective. Each device runs in its own
// thread; at a collective it hands in its operands and blocks until every device of its group has handed
// in theirs for the same execution of the same instruction, then reads them all. A device that ends (with
// an error or without reaching the collective) or a set of devices that wait on each other's different
// collectives fails the waiters with FailedPrecondition instead of hanging.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "compiler/hlo/hlo_ir.h"
#include "compiler/hlo/literal.h"
#include "sw/base/status.h"

namespace tpu::hlo {

class CollectiveRendezvous {
 public:
  explicit CollectiveRendezvous(int64_t devices);

  using Contribution = std::shared_ptr<const std::vector<Literal>>;

  // `occurrence` counts the executions of `collective` on `device` (0 first), so a collective inside a
  // loop meets its own iteration on the other devices. `group` lists the devices taking part, `device`
  // among them, in the same order on every member. Returns every member's operands in `group` order.
  StatusOr<std::vector<Contribution>> Exchange(const HloInstruction& collective, int64_t occurrence,
                                               const std::vector<int64_t>& group, int64_t device,
                                               std::vector<Literal> operands);

  // `device` has finished its program (`status` says how); devices waiting for it fail.
  void Finish(int64_t device, const Status& status);

 private:
  using Key = std::tuple<const HloInstruction*, int64_t, int64_t>;  // instruction, occurrence, first member
  struct Meeting {
    std::vector<int64_t> group;
    std::vector<Contribution> contributions;  // in group order; null until handed in
    int64_t handed_in = 0;
    int64_t taken = 0;
    bool complete() const { return handed_in == static_cast<int64_t>(group.size()); }
  };
  // Why `meeting` cannot complete, or "" while it still can. Called with the lock held.
  std::string Blocked(const Key& key, const Meeting& meeting, const HloInstruction& collective) const;

  const int64_t devices_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<Key, Meeting> meetings_;
  std::vector<const Key*> waiting_on_;  // per device: the meeting it waits at, or null
  std::vector<bool> finished_;
  std::vector<std::string> finish_reason_;
};

}  // namespace tpu::hlo
