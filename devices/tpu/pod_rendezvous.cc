#include "jx/devices/tpu/pod_rendezvous.h"

#include <algorithm>

#include "jx/core/str_util.h"

namespace jx::tpu {

absl::Status PodRendezvous::Wait(std::unique_lock<std::mutex>& lock, const int64_t& count, int64_t target) {
  cv_.wait(lock, [&] { return count >= target || !aborted_.ok(); });
  return count >= target ? absl::OkStatus() : aborted_;
}

absl::Status PodRendezvous::Exchange(int64_t partition, int64_t sequence, const hlo::HloInstruction& instr,
                                     absl::Span<const int64_t> group, const void* send,
                                     absl::FunctionRef<void(absl::Span<const void* const>)> read) {
  auto me = std::find(group.begin(), group.end(), partition);
  if (me == group.end() || group.empty()) {
    return absl::InternalError(StrCat("partition ", partition, " exchanging in a group without it"));
  }
  const int64_t n = static_cast<int64_t>(group.size());
  std::unique_lock<std::mutex> lock(mu_);
  if (!aborted_.ok()) return aborted_;
  const std::pair<int64_t, int64_t> key{sequence, group.front()};
  Meeting& m = meetings_[key];
  if (m.buffers.empty()) {
    m.instr = instr.name();
    m.buffers.assign(n, nullptr);
  } else if (m.instr != instr.name()) {
    // The partitions run different collectives at the same point: not one SPMD program.
    const absl::Status mismatch = absl::FailedPreconditionError(
        StrCat("partition ", partition, " reached %", instr.name(), " where its group reached %", m.instr));
    lock.unlock();
    Abort(mismatch);
    return mismatch;
  }
  m.buffers[me - group.begin()] = send;
  ++m.arrived;
  cv_.notify_all();
  if (absl::Status st = Wait(lock, m.arrived, n); !st.ok()) return st;
  const std::vector<const void*> peers = m.buffers;
  lock.unlock();
  read(peers);
  lock.lock();
  ++m.read;
  cv_.notify_all();
  if (absl::Status st = Wait(lock, m.read, n); !st.ok()) return st;
  if (++m.left == n) meetings_.erase(key);
  return absl::OkStatus();
}

void PodRendezvous::Abort(absl::Status why) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (aborted_.ok()) aborted_ = std::move(why);
  }
  cv_.notify_all();
}

}  // namespace jx::tpu
