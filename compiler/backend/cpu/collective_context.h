// The partition a CPU executable runs as inside a multi-device (SPMD) run, and how its
// collective kernels meet the other partitions. Every device runs the same program; a
// multi-device executor (the TPU client's pod programs, devices/tpu/pod_program.h) gives each
// partition's run a context: its partition id, the partition count, and Exchange, the
// rendezvous where the members of a replica group see each other's buffers. The collective
// kernels (collective_kernels.cc) do the arithmetic on those buffers; the context only moves
// pointers, so any executor (threads, processes with shared memory) can implement it.
//
//   class MyContext : public jx::cpu::CollectiveContext { ... };
//   MyContext ctx(partition, n);
//   exe->Run(args, outs, {.collectives = &ctx});   // per partition, one thread each
//
// A run without a context is partition 0 of 1: partition-id is 0 and a collective whose
// groups have one member copies its operand; anything else fails naming the instruction.
#pragma once

#include <cstdint>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/types/span.h"
#include "jx/compiler/hlo/hlo_instruction.h"

namespace jx::cpu {

class CollectiveContext {
 public:
  virtual ~CollectiveContext() = default;
  virtual int64_t partition_id() const = 0;
  virtual int64_t num_partitions() const = 0;
  // Meets the other members of `group` (partition ids in group order, this partition among
  // them) at the collective `instr`: publishes `send`, waits until every member has, calls
  // read(peers) with every member's send buffer in group order, then waits until every member
  // has finished reading (so no buffer is reused while a peer reads it). Members meet at the
  // same collective because they run the same program: the k-th Exchange of each member of a
  // group meets the k-th of the others. Returns an error instead of blocking forever when the
  // run is aborted (another partition failed).
  virtual absl::Status Exchange(const hlo::HloInstruction& instr, absl::Span<const int64_t> group,
                                const void* send,
                                absl::FunctionRef<void(absl::Span<const void* const> peers)> read) = 0;
};

}  // namespace jx::cpu
