// Primitive: an interned handle naming one primitive operation ("sin", "dot_general").
// Handles compare and hash as integers; rule tables are vectors indexed by id().
//
//   inline const jx::Primitive kSin = jx::Primitive::Intern("sin");
//   kSin.name();   // "sin"
#pragma once

#include <cstdint>
#include <string_view>

namespace jx {

class Primitive {
 public:
  constexpr Primitive() = default;
  // Returns the handle for name, creating it on first use. Thread-safe.
  static Primitive Intern(std::string_view name);
  // Number of primitives interned so far (ids are dense in [0, Count())).
  static uint32_t Count();

  constexpr uint32_t id() const { return id_; }
  constexpr bool valid() const { return id_ != kInvalid; }
  std::string_view name() const;

  friend constexpr bool operator==(Primitive a, Primitive b) { return a.id_ == b.id_; }
  template <typename H>
  friend H AbslHashValue(H h, Primitive p) { return H::combine(std::move(h), p.id_); }

 private:
  static constexpr uint32_t kInvalid = ~0u;
  constexpr explicit Primitive(uint32_t id) : id_(id) {}
  uint32_t id_ = kInvalid;
};

}  // namespace jx
