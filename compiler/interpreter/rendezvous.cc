#include "compiler/interpreter/rendezvous.h"

#include <algorithm>

namespace tpu::hlo {
namespace {

std::string Describe(const HloInstruction& collective, int64_t occurrence) {
  return collective.opcode_name() + " %" + collective.name() + " (execution " + std::to_string(occurrence + 1) + ")";
}

}  // namespace

CollectiveRendezvous::CollectiveRendezvous(int64_t devices)
    : devices_(devices),
      waiting_on_(static_cast<size_t>(devices), nullptr),
      finished_(static_cast<size_t>(devices), false),
      finish_reason_(static_cast<size_t>(devices)) {}

std::string CollectiveRendezvous::Blocked(const Key& key, const Meeting& meeting,
                                          const HloInstruction& collective) const {
  for (size_t i = 0; i < meeting.group.size(); ++i) {
    const int64_t member = meeting.group[i];
    if (meeting.contributions[i] == nullptr && finished_[static_cast<size_t>(member)])
      return Describe(collective, std::get<1>(key)) + " waits for device " + std::to_string(member) + ", which " +
             finish_reason_[static_cast<size_t>(member)] + " without reaching it";
  }
  // Every device that has not ended waits at a meeting that cannot complete: they wait on each other.
  std::string waits;
  for (int64_t d = 0; d < devices_; ++d) {
    if (finished_[static_cast<size_t>(d)]) continue;
    const Key* at = waiting_on_[static_cast<size_t>(d)];
    if (at == nullptr || meetings_.at(*at).complete()) return "";
    waits += (waits.empty() ? "" : ", ") + std::string("device ") + std::to_string(d) + " at " +
             Describe(*std::get<0>(*at), std::get<1>(*at));
  }
  return "the devices wait on each other's collectives: " + waits;
}

StatusOr<std::vector<CollectiveRendezvous::Contribution>> CollectiveRendezvous::Exchange(
    const HloInstruction& collective, int64_t occurrence, const std::vector<int64_t>& group, int64_t device,
    std::vector<Literal> operands) {
  auto position = std::find(group.begin(), group.end(), device);
  if (group.empty() || position == group.end() || device < 0 || device >= devices_)
    return Internal(Describe(collective, occurrence) + ": device " + std::to_string(device) + " is not in its group");
  std::unique_lock<std::mutex> lock(mutex_);
  auto [it, inserted] = meetings_.try_emplace(Key{&collective, occurrence, group.front()});
  Meeting& meeting = it->second;
  if (inserted) {
    meeting.group = group;
    meeting.contributions.resize(group.size());
  } else if (meeting.group != group) {
    return FailedPrecondition(Describe(collective, occurrence) + ": device " + std::to_string(device) +
                              " names another group than the devices already there");
  }
  const size_t index = static_cast<size_t>(position - group.begin());
  if (meeting.contributions[index] != nullptr)
    return Internal(Describe(collective, occurrence) + ": device " + std::to_string(device) + " handed in twice");
  meeting.contributions[index] = std::make_shared<const std::vector<Literal>>(std::move(operands));
  ++meeting.handed_in;
  waiting_on_[static_cast<size_t>(device)] = &it->first;
  changed_.notify_all();
  while (!meeting.complete()) {
    std::string blocked = Blocked(it->first, meeting, collective);
    if (!blocked.empty()) {
      waiting_on_[static_cast<size_t>(device)] = nullptr;
      changed_.notify_all();
      return FailedPrecondition(blocked);
    }
    changed_.wait(lock);
  }
  waiting_on_[static_cast<size_t>(device)] = nullptr;
  std::vector<Contribution> contributions = meeting.contributions;
  if (++meeting.taken == static_cast<int64_t>(meeting.group.size())) meetings_.erase(it);
  return contributions;
}

void CollectiveRendezvous::Finish(int64_t device, const Status& status) {
  std::lock_guard<std::mutex> lock(mutex_);
  finished_[static_cast<size_t>(device)] = true;
  finish_reason_[static_cast<size_t>(device)] = status.ok() ? "ended its program" : "failed (" + status.message() + ")";
  changed_.notify_all();
}

}  // namespace tpu::hlo
