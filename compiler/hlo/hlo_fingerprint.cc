#include "jx/compiler/hlo/hlo_fingerprint.h"

#include <bit>
#include <cstring>
#include <string_view>

#include "absl/strings/str_format.h"
#include "jx/compiler/hlo/hlo_attr_table.h"
#include "jx/compiler/hlo/hlo_module.h"

namespace jx::hlo {
namespace {

// Two 64-bit lanes, each an xxHash64-style accumulator (a bijective round per word, so no
// input can collapse the state) with its own seed and constants, finished by xxHash64's
// avalanche. Strings and vectors are length-prefixed, so concatenations cannot collide.
class Fingerprinter {
 public:
  void Add(uint64_t v) {
    a_ = Round(a_, v, kP1, kP2, 31);
    b_ = Round(b_, v, kP4, kP3, 27);
    ++words_;
  }
  void Add(std::string_view s) {
    Add(static_cast<uint64_t>(s.size()));
    size_t i = 0;
    for (; i + 8 <= s.size(); i += 8) {
      uint64_t w;
      std::memcpy(&w, s.data() + i, 8);
      Add(w);
    }
    if (i < s.size()) {
      uint64_t w = 0;
      std::memcpy(&w, s.data() + i, s.size() - i);
      Add(w);
    }
  }
  // Any integer sequence: a std::vector, an absl::Span or a DimensionVector.
  template <typename Ints>
  void AddInts(const Ints& v) {
    Add(static_cast<uint64_t>(v.size()));
    for (auto x : v) Add(static_cast<uint64_t>(x));
  }
  HloFingerprint Finish() const {
    return HloFingerprint{Avalanche(a_ ^ words_), Avalanche(b_ + words_ * kP5)};
  }

 private:
  static constexpr uint64_t kP1 = 0x9E3779B185EBCA87ULL, kP2 = 0xC2B2AE3D27D4EB4FULL,
                            kP3 = 0x165667B19E3779F9ULL, kP4 = 0x85EBCA77C2B2AE63ULL,
                            kP5 = 0x27D4EB2F165667C5ULL;
  static uint64_t Rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
  static uint64_t Round(uint64_t acc, uint64_t v, uint64_t mul_in, uint64_t mul_out, int r) {
    return Rotl(acc + v * mul_in, r) * mul_out;
  }
  static uint64_t Avalanche(uint64_t h) {
    h ^= h >> 33;
    h *= kP2;
    h ^= h >> 29;
    h *= kP3;
    h ^= h >> 32;
    return h;
  }
  uint64_t a_ = kP1 ^ 0x6A09E667F3BCC908ULL;
  uint64_t b_ = kP2 ^ 0xBB67AE8584CAA73BULL;
  uint64_t words_ = 0;
};

void AddShape(Fingerprinter& fp, const Shape& shape) {
  fp.Add(static_cast<uint64_t>(shape.element_type()));
  fp.AddInts(shape.dimensions());
  const Layout& layout = shape.layout();
  fp.AddInts(layout.minor_to_major);
  fp.Add(static_cast<uint64_t>(layout.tiles.size()));
  for (const Tile& tile : layout.tiles) fp.AddInts(tile.dimensions);
  fp.Add(static_cast<uint64_t>(layout.memory_space));
  fp.Add(static_cast<uint64_t>(shape.tuple_shapes_size()));
  for (const Shape& element : shape.tuple_shapes()) AddShape(fp, element);
}

void AddLiteral(Fingerprinter& fp, const Literal& literal) {
  // The bits, not the printed digits: constants that print alike but differ (NaN payloads)
  // are different programs.
  if (literal.shape().IsTuple()) {
    fp.Add(static_cast<uint64_t>(literal.tuple_elements().size()));
    for (const Literal& element : literal.tuple_elements()) AddLiteral(fp, element);
    return;
  }
  absl::Span<const uint8_t> bytes = literal.untyped_data();
  fp.Add(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

bool IsCalledComputationAttr(HloAttr attr) {
  switch (attr) {
    case HloAttr::kCalls: case HloAttr::kToApply: case HloAttr::kCondition: case HloAttr::kBody:
    case HloAttr::kSelect: case HloAttr::kScatter: case HloAttr::kBranchComputations:
      return true;
    default:
      return false;
  }
}

void AddInstruction(Fingerprinter& fp, const HloInstruction& instr) {
  fp.Add(instr.name());
  fp.Add(static_cast<uint64_t>(instr.opcode()));
  fp.Add(uint64_t{instr.IsRoot()});
  AddShape(fp, instr.shape());
  if (instr.opcode() == HloOpcode::kParameter) fp.Add(static_cast<uint64_t>(instr.parameter_number()));
  if (instr.opcode() == HloOpcode::kConstant) AddLiteral(fp, instr.literal());
  // Operands by name, as the text refers to them (names are unique in a module).
  fp.Add(static_cast<uint64_t>(instr.operand_count()));
  for (const HloInstruction* operand : instr.operands()) fp.Add(operand->name());
  // The attributes present as a bit set first (a loop with no call in it, which the
  // compiler folds), then only those: most instructions have none of the 46.
  uint64_t present = 0;
  for (int a = 0; a < kNumHloAttrs; ++a) present |= uint64_t{instr.HasAttr(static_cast<HloAttr>(a))} << a;
  bool called_added = false;
  for (; present != 0; present &= present - 1) {
    const int a = std::countr_zero(present);
    const HloAttr attr = static_cast<HloAttr>(a);
    fp.Add(static_cast<uint64_t>(a));
    if (attr == HloAttr::kDimensions) {
      fp.AddInts(instr.dimensions());
    } else if (attr == HloAttr::kReplicaGroups) {
      // Device lists as data, in their compact form when they have one: a pod-wide
      // collective names every device (18432 on a v7 pod).
      const ReplicaGroups& groups = instr.replica_groups();
      fp.Add(static_cast<uint64_t>(groups.size()));
      if (const ReplicaGroups::IotaForm* iota = groups.iota()) {
        fp.Add(static_cast<uint64_t>(iota->group_size));
        fp.AddInts(iota->dims);
        fp.AddInts(iota->perm);
      } else {
        for (const std::vector<int64_t>& group : groups) fp.AddInts(group);
      }
    } else if (attr == HloAttr::kSourceTargetPairs) {
      fp.Add(static_cast<uint64_t>(instr.source_target_pairs().size()));
      for (const auto& [source, target] : instr.source_target_pairs()) {
        fp.Add(static_cast<uint64_t>(source));
        fp.Add(static_cast<uint64_t>(target));
      }
    } else if (IsCalledComputationAttr(attr)) {
      // The callees print by name; every slot once (the attributes share one list).
      if (called_added) continue;
      called_added = true;
      fp.Add(static_cast<uint64_t>(instr.called_computations().size()));
      for (const HloComputation* c : instr.called_computations()) fp.Add(c == nullptr ? "" : c->name());
    } else {
      fp.Add(GetHloAttrInfo(attr).print(instr));  // small values: their text is their structure
    }
  }
  const OpMetadata& m = instr.metadata();
  fp.Add(m.op_type);
  fp.Add(m.op_name);
  fp.Add(m.source_file);
  fp.Add(static_cast<uint64_t>(m.source_line));
}

}  // namespace

std::string HloFingerprint::ToString() const { return absl::StrFormat("%016x%016x", high, low); }

HloFingerprint FingerprintHloModule(const HloModule& module) {
  Fingerprinter fp;
  fp.Add(module.name());
  const std::vector<HloComputation*> computations = module.MakeComputationPostOrder();
  fp.Add(static_cast<uint64_t>(computations.size()));
  for (const HloComputation* c : computations) {
    fp.Add(c->name());
    fp.Add(uint64_t{c->IsEntryComputation()});
    fp.Add(static_cast<uint64_t>(c->num_parameters()));
    for (const HloInstruction* p : c->parameter_instructions()) fp.Add(p == nullptr ? "" : p->name());
    // The instructions as a set: each hashed on its own and the hashes summed, so one walk
    // in creation order (memory order) serves and no post order is computed. Names are
    // unique and operands are named, so the set is the graph; only the order the
    // instructions were created in, which the text's line order shows, is left out.
    uint64_t count = 0, high = 0, low = 0;
    for (const HloInstruction* instr : c->instructions()) {
      Fingerprinter one;
      AddInstruction(one, *instr);
      const HloFingerprint h = one.Finish();
      high += h.high;
      low += h.low;
      ++count;
    }
    fp.Add(count);
    fp.Add(high);
    fp.Add(low);
  }
  return fp.Finish();
}

}  // namespace jx::hlo
