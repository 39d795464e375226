// Where the chips of a pod program meet at collectives: each chip's thread runs the same
// program and, at a collective, publishes its operand buffer and waits for the other members
// of its replica group (PodRendezvous::Exchange); then every member reads its peers' buffers
// and writes its own result, and waits again until all have read. PartitionContext is one
// chip's view (its partition id, its count of collectives met), the CPU backend's
// CollectiveContext. When a chip's program fails, Abort wakes every waiting chip with the
// error, so no thread is left blocked.
//
//   PodRendezvous rendezvous(8);
//   PartitionContext ctx(rendezvous, /*partition=*/3);
//   exe.Run(in, out, {.collectives = &ctx});   // on chip 3's thread
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "jx/compiler/backend/cpu/collective_context.h"

namespace jx::tpu {

class PodRendezvous {
 public:
  explicit PodRendezvous(int64_t num_partitions) : num_partitions_(num_partitions) {}

  int64_t num_partitions() const { return num_partitions_; }
  // partition's `sequence`-th collective, over `group` (see CollectiveContext::Exchange).
  absl::Status Exchange(int64_t partition, int64_t sequence, const hlo::HloInstruction& instr,
                        absl::Span<const int64_t> group, const void* send,
                        absl::FunctionRef<void(absl::Span<const void* const>)> read);
  // Fails every pending and later Exchange with `why` (the first abort wins).
  void Abort(absl::Status why);

 private:
  struct Meeting {
    std::string instr;            // the collective's name: members must agree
    std::vector<const void*> buffers;
    int64_t arrived = 0, read = 0, left = 0;
  };
  absl::Status Wait(std::unique_lock<std::mutex>& lock, const int64_t& count, int64_t target);

  const int64_t num_partitions_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::pair<int64_t, int64_t>, Meeting> meetings_;  // by (sequence, group's first id)
  absl::Status aborted_;
};

class PartitionContext final : public cpu::CollectiveContext {
 public:
  PartitionContext(PodRendezvous& rendezvous, int64_t partition)
      : rendezvous_(rendezvous), partition_(partition) {}
  int64_t partition_id() const override { return partition_; }
  int64_t num_partitions() const override { return rendezvous_.num_partitions(); }
  absl::Status Exchange(const hlo::HloInstruction& instr, absl::Span<const int64_t> group, const void* send,
                        absl::FunctionRef<void(absl::Span<const void* const>)> read) override {
    return rendezvous_.Exchange(partition_, sequence_++, instr, group, send, read);
  }

 private:
  PodRendezvous& rendezvous_;
  const int64_t partition_;
  int64_t sequence_ = 0;
};

}  // namespace jx::tpu
