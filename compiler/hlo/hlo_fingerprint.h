// A 128-bit fingerprint of an HLO module, computed from its structure in one walk (no text):
// equal for modules that print the same (HloModule::ToString with default options) and, with
// overwhelming probability, different for any change the text would show: a name, an opcode,
// a shape or layout, an operand or its order, a constant's bits, an attribute, metadata, the
// computations called. What the text leaves out (unique ids, user order, schedules) is left
// out too, and so is the order of a computation's instructions: modules whose text differs
// only in the order of lines have one graph, one program. Program caches key on it instead
// of the module's text (issue 16), which took as long as the rest of a cache hit's work and
// kept a copy of every cached program's text.
//
//   HloFingerprint fp = FingerprintHloModule(*module);
//   fp.ToString();   // 32 hex digits
#pragma once

#include <cstdint>
#include <string>

namespace jx::hlo {

class HloModule;

struct HloFingerprint {
  uint64_t high = 0;
  uint64_t low = 0;
  std::string ToString() const;  // 32 lower-case hex digits, high first
  friend bool operator==(const HloFingerprint&, const HloFingerprint&) = default;
};

HloFingerprint FingerprintHloModule(const HloModule& module);

}  // namespace jx::hlo
