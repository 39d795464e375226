#include "jx/compiler/hlo/hlo_verifier.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "jx/compiler/hlo/instruction_map.h"
#include "jx/compiler/hlo/instruction_prefetch.h"
#include "jx/compiler/hlo/shape_inference.h"
#include "jx/compiler/hlo/str_util.h"

namespace jx::hlo {
namespace {

class Verifier {
 public:
  explicit Verifier(const HloModule& module) : module_(module) {
    for (const HloComputation* c : module.computations()) computations_.insert(c);
  }

  absl::Status Run() {
    if (module_.entry_computation() == nullptr) return Fail("module has no entry computation");
    if (!computations_.contains(module_.entry_computation())) {
      return Fail("the entry computation does not belong to the module");
    }
    if (module_.entry_computation()->IsFusionComputation()) {
      return Fail("the entry computation is a fusion computation");
    }
    // Two walks over the instructions: the names (module-wide), then each computation. The
    // second walk's table of marks per instruction is indexed by unique id from the lowest
    // id a computation starts with (ids grow in storage order unless an instruction moved
    // between computations; a lower id still works, through the table's slower path), so
    // the first reads nothing but names. One walk doing both was slower on a module past
    // the cache (the names' misses no longer overlapped); each walk prefetches what it
    // reads of the instruction a few places ahead.
    absl::flat_hash_set<std::string_view> computation_names;
    int64_t instruction_count = 0;
    int64_t lowest_id = -1;
    for (const HloComputation* c : module_.computations()) {
      if (!computation_names.insert(c->name()).second) {
        return Fail(StrCat("computation name %", c->name(), " is used twice"));
      }
      instruction_count += c->instruction_count();
      for (const HloInstruction* first : c->instructions()) {
        if (lowest_id < 0 || first->unique_id() < lowest_id) lowest_id = first->unique_id();
        break;
      }
    }
    if (absl::Status st = CheckInstructionNames(instruction_count); !st.ok()) return st;
    // Unique ids are module-wide, so one table indexed by id serves every computation (and
    // sees an id given to two of them).
    Marks marks(lowest_id, static_cast<size_t>(instruction_count));
    for (const HloComputation* c : module_.computations()) {
      if (absl::Status st = VerifyComputation(*c, marks); !st.ok()) {
        // Instructions sharing an id share marks, which can make any other check misfire:
        // name the shared id instead.
        if (absl::Status ids = CheckUniqueIds(); !ids.ok()) return ids;
        return st;
      }
    }
    return absl::OkStatus();
  }

 private:
  // Names are checked by their 64-bit hashes: a table slot holds the hash itself, so an
  // insert reads no other instruction (a table of instructions compared by name loaded a
  // random earlier instruction's name whenever 7 bits of two hashes agreed: a miss on a
  // module past the cache). Equal hashes send the module to an exact check of its names
  // (a duplicate name, or once in ~10^9 modules of 100k names, two names with one hash).
  struct IdentityHash {
    size_t operator()(uint64_t hash) const { return hash; }
  };
  using NameHashes = absl::flat_hash_set<uint64_t, IdentityHash>;

  static absl::Status Fail(std::string message) {
    return absl::FailedPreconditionError(std::move(message));
  }
  static absl::Status Fail(const HloComputation& c, std::string_view message) {
    return Fail(StrCat("computation %", c.name(), ": ", message));
  }
  static absl::Status Fail(const HloComputation& c, const HloInstruction& instr,
                           std::string_view message) {
    return Fail(StrCat("computation %", c.name(), ", instruction %", instr.name(), ": ",
                             message));
  }

  // What the walk has noted per instruction, in a table indexed by unique id: the owner
  // check makes sure no two instructions share an entry.
  struct Mark {
    const HloInstruction* owner = nullptr;        // the instruction with this id
    const HloInstruction* operand_of = nullptr;   // last instruction found reading it
    const HloInstruction* listed_user_of = nullptr;  // last instruction found listing it as a user
  };
  using Marks = InstructionMap<Mark>;

  static absl::Status MarkOwner(const HloInstruction& instr, Marks& marks) {
    const HloInstruction*& owner = marks[&instr].owner;
    if (owner != nullptr) {
      return Fail(StrCat("has the unique id ", instr.unique_id(), " of %", owner->name()));
    }
    owner = &instr;
    return absl::OkStatus();
  }

  // How far ahead of each walk its prefetches run (on a 100k module the verifier took 0.87x
  // the time of no prefetching at this distance).
  static constexpr int kVerifierPrefetchAhead = 4;
  // How far ahead of the users loop its prefetches run.
  static constexpr size_t kUserPrefetchAhead = 8;

  absl::Status CheckInstructionNames(int64_t instruction_count) const {
    NameHashes hashes;
    hashes.reserve(instruction_count);  // no rehashing as a big module's names go in
    bool repeated = false;
    for (const HloComputation* c : module_.computations()) {
      ForEachInStorageOrder<kVerifierPrefetchAhead>(
          *c, [](const HloInstruction* ahead) { __builtin_prefetch(&ahead->name()); },  // all it reads
          [&](const HloInstruction* instr) {
            repeated = !hashes.insert(absl::HashOf(std::string_view(instr->name()))).second;
            return !repeated;
          });
      if (repeated) return CheckInstructionNamesExactly();
    }
    return absl::OkStatus();
  }

  // The names compared in full, in the walk's order: the first name met a second time.
  absl::Status CheckInstructionNamesExactly() const {
    absl::flat_hash_set<std::string_view> names;
    for (const HloComputation* c : module_.computations()) {
      for (const HloInstruction* instr : c->instructions()) {
        if (!names.insert(instr->name()).second) {
          return Fail(StrCat("computation %", c->name(), ": instruction name %", instr->name(),
                             " is used twice in the module"));
        }
      }
    }
    return absl::OkStatus();
  }

  absl::Status VerifyComputation(const HloComputation& c, Marks& marks) {
    if (c.parent() != &module_) return Fail(c, "belongs to another module");
    if (c.root_instruction() == nullptr) return Fail(c, "has no root instruction");
    if (c.root_instruction()->parent() != &c) {
      return Fail(c, StrCat("root %", c.root_instruction()->name(),
                                  " is not an instruction of this computation"));
    }
    int64_t parameter_count = 0;
    for (int64_t i = 0; i < c.num_parameters(); ++i) {
      const HloInstruction* p = c.parameter_instruction(i);
      if (p == nullptr) return Fail(c, StrCat("parameter ", i, " is missing"));
      if (p->opcode() != HloOpcode::kParameter || p->parameter_number() != i) {
        return Fail(c, *p, StrCat("sits in parameter slot ", i, " but is ",
                                        HloOpcodeString(p->opcode()), "(",
                                        p->parameter_number(), ")"));
      }
    }
    if (c.IsFusionComputation()) {
      const HloInstruction* fusion = c.FusionInstruction();
      if (fusion->opcode() != HloOpcode::kFusion ||
          fusion->fused_instructions_computation() != &c ||
          !computations_.contains(fusion->parent())) {
        return Fail(c, "is marked as a fusion computation but no fusion instruction calls it");
      }
    }
    EdgeCounts edges;
    absl::Status status = absl::OkStatus();
    // Every line of an instruction the checks read but its name's (the names walk reads
    // that): a line the hardware is left to fetch is a miss per instruction past the cache.
    const auto prefetch = [](const HloInstruction* ahead) {
      __builtin_prefetch(ahead);                                 // opcode, parent, id, operands
      __builtin_prefetch(&ahead->shape());                       // users, element type, dims
      __builtin_prefetch(&ahead->shape().layout().memory_space);  // the layout's tiles, memory space
      __builtin_prefetch(&ahead->called_computations());         // attribute mask, callees
    };
    ForEachInStorageOrder<kVerifierPrefetchAhead>(c, prefetch, [&](const HloInstruction* instr) {
      if (absl::Status st = MarkOwner(*instr, marks); !st.ok()) {
        status = Fail(c, *instr, Message(st));
        return false;
      }
      if (instr->opcode() == HloOpcode::kParameter) ++parameter_count;
      status = VerifyInstruction(c, *instr, marks, edges);
      return status.ok();
    });
    if (!status.ok()) return status;
    if (edges.operands != edges.listed_users) {
      // Some instruction reads an operand that does not list it: find it.
      for (const HloInstruction* instr : c.instructions()) {
        for (const HloInstruction* operand : instr->operands()) {
          if (!operand->HasUser(instr)) {
            return Fail(c, *instr, StrCat("is missing from the users of its operand %",
                                          operand->name()));
          }
        }
      }
      return Fail(c, StrCat("reads ", edges.operands, " distinct operands but lists ",
                            edges.listed_users, " users"));
    }
    if (parameter_count != c.num_parameters()) {
      return Fail(c, StrCat("has ", parameter_count, " parameter instructions but ",
                                  c.num_parameters(), " parameter slots"));
    }
    return absl::OkStatus();
  }

  // After a failed check: the first instruction whose id another one holds, if any (a rare
  // path: its table is a hash map).
  absl::Status CheckUniqueIds() const {
    Marks owners(/*lowest_id=*/-1, 0);
    for (const HloComputation* c : module_.computations()) {
      for (const HloInstruction* instr : c->instructions()) {
        if (absl::Status st = MarkOwner(*instr, owners); !st.ok()) return Fail(*c, *instr, Message(st));
      }
    }
    return absl::OkStatus();
  }

  // Users lists are checked against operand lists by counting, not by looking each operand's
  // user up (a cache miss per read of a parameter that 50k instructions read): every listed
  // user is checked to read the instruction and none is listed twice, so the lists hold no
  // more (operand, user) pairs than the operands give, and equal counts mean none is missing.
  struct EdgeCounts {
    int64_t operands = 0;      // distinct operands, summed over the instructions
    int64_t listed_users = 0;  // users lists' lengths, summed
  };

  absl::Status VerifyInstruction(const HloComputation& c, const HloInstruction& instr,
                                 Marks& marks, EdgeCounts& edges) {
    if (instr.parent() != &c) return Fail(c, instr, "has a different parent computation");
    const int arity = HloOpcodeArity(instr.opcode());
    if (arity != kVariadic && instr.operand_count() != arity) {
      return Fail(c, instr, StrCat(HloOpcodeString(instr.opcode()), " expects ", arity,
                                         " operand(s), got ", instr.operand_count()));
    }
    for (int64_t i = 0; i < instr.operand_count(); ++i) {
      const HloInstruction* operand = instr.operand(i);
      if (operand == nullptr) return Fail(c, instr, StrCat("operand ", i, " is null"));
      if (operand->parent() != &c) {
        return Fail(c, instr, StrCat("operand ", i, " %", operand->name(),
                                           " belongs to another computation"));
      }
      const HloInstruction*& operand_of = marks[operand].operand_of;
      if (operand_of != &instr) ++edges.operands;
      operand_of = &instr;
    }
    const InstructionVector& users = instr.users();
    for (size_t k = 0; k < users.size(); ++k) {
      // An operand read all over the program (a parameter of a long chain) lists thousands
      // of users, each a miss: load them ahead, as the walk does its instructions.
      if (k + kUserPrefetchAhead < users.size()) __builtin_prefetch(users[k + kUserPrefetchAhead]);
      const HloInstruction* user = users[k];
      if (user->parent() != &c) {
        return Fail(c, instr, StrCat("lists %", user->name(),
                                     " as a user, but it belongs to another computation"));
      }
      const HloInstruction*& listed_user_of = marks[user].listed_user_of;
      if (listed_user_of == &instr) {
        return Fail(c, instr, StrCat("lists user %", user->name(), " twice"));
      }
      listed_user_of = &instr;
      ++edges.listed_users;
      if (!user->IsUserOf(&instr)) {
        return Fail(c, instr, StrCat("lists %", user->name(),
                                           " as a user, but it does not use it"));
      }
    }
    for (const HloComputation* callee : instr.called_computations()) {
      if (callee == nullptr || !computations_.contains(callee)) {
        return Fail(c, instr, "calls a computation that is not in the module");
      }
      if (callee == &c) return Fail(c, instr, "calls its own computation");
      // Passes rely on both (a module with no other computations has no loops).
      if (callee == module_.entry_computation()) return Fail(c, instr, "calls the entry computation");
      if (callee->IsFusionComputation() && callee->FusionInstruction() != &instr) {
        return Fail(c, instr, StrCat("calls %", callee->name(), ", the fusion computation of %",
                                     callee->FusionInstruction()->name()));
      }
    }
    if (instr.opcode() == HloOpcode::kFusion) {
      const HloComputation* fused = instr.fused_instructions_computation();
      if (fused != nullptr && fused->FusionInstruction() != &instr) {
        return Fail(c, instr, StrCat("calls %", fused->name(),
                                           ", which is not marked as its fusion computation"));
      }
    }
    if (absl::Status st = ShapeUtil::ValidateShape(instr.shape()); !st.ok()) {
      return Fail(c, instr, Message(st));
    }
    // The mask first: the groups live with the attributes, a line no other check reads.
    if (instr.HasAttr(HloAttr::kReplicaGroups)) {
      if (absl::Status st = CheckReplicaGroupIds(instr.replica_groups()); !st.ok()) {
        return Fail(c, instr, Message(st));
      }
    }
    if (ShapeInference::InferredShapeMatches(instr)) return absl::OkStatus();
    absl::StatusOr<Shape> inferred = ShapeInference::InferInstructionShape(instr);  // what is wrong
    if (!inferred.ok()) return Fail(c, instr, Message(inferred.status()));
    if (!ShapeUtil::Compatible(*inferred, instr.shape())) {
      return Fail(c, instr, StrCat("shape is ", instr.shape().ToString(false),
                                         " but shape inference gives ",
                                         inferred->ToString(false)));
    }
    return absl::OkStatus();
  }

  // Each partition id in at most one group, none negative. Groups in the iota form are a
  // permutation of their ids by construction. A module's listed groups repeat (one list per
  // set of mesh axes) and the verifier runs after every pass that changes the module: a list
  // equal to one checked this run is not marked again.
  absl::Status CheckReplicaGroupIds(const ReplicaGroups& groups) {
    if (groups.empty() || groups.iota() != nullptr) return absl::OkStatus();
    for (size_t i = 0; i < checked_groups_.size(); ++i) {
      if (*checked_groups_[i] != groups) continue;
      std::rotate(checked_groups_.begin(), checked_groups_.begin() + i, checked_groups_.begin() + i + 1);
      return absl::OkStatus();
    }
    std::vector<uint8_t> seen(static_cast<size_t>(groups.num_ids()), 0);  // dense ids: grown if one lies past the count
    for (const std::vector<int64_t>& group : groups) {
      for (const int64_t id : group) {
        if (id < 0) return Invalid(StrCat("replica_groups=", ReplicaGroupsToString(groups), ": negative id ", id));
        const size_t i = static_cast<size_t>(id);
        if (i >= seen.size()) seen.resize(i + 1, 0);
        if (seen[i] != 0) {
          return Invalid(StrCat("replica_groups=", ReplicaGroupsToString(groups), ": partition ", id,
                                " is in more than one group"));
        }
        seen[i] = 1;
      }
    }
    constexpr size_t kRemembered = 8;
    if (checked_groups_.size() == kRemembered) checked_groups_.pop_back();
    checked_groups_.insert(checked_groups_.begin(), &groups);
    return absl::OkStatus();
  }

  static absl::Status Invalid(std::string message) { return absl::InvalidArgumentError(std::move(message)); }

  const HloModule& module_;
  absl::flat_hash_set<const HloComputation*> computations_;
  std::vector<const ReplicaGroups*> checked_groups_;  // most recently matched first
};

}  // namespace

absl::Status VerifyHloModule(const HloModule& module) { return Verifier(module).Run(); }

}  // namespace jx::hlo
