#include "jx/core/primitive.h"

#include <array>
#include <atomic>
#include <deque>
#include <mutex>
#include <string>

#include "jx/core/errors.h"

#include "absl/container/flat_hash_map.h"

namespace jx {
namespace {

// Enough for every built-in and user primitive; interning past it is an error.
constexpr uint32_t kMaxPrimitives = 1 << 14;

struct PrimitiveTable {
  std::mutex mu;  // guards interning
  std::deque<std::string> names;  // stable addresses: name() returns views into it
  absl::flat_hash_map<std::string_view, uint32_t> ids;
  // Published after the name is stored, so name() reads without the lock (it runs for
  // every traced equation).
  std::array<std::atomic<const std::string*>, kMaxPrimitives> by_id{};
};

PrimitiveTable& Table() {
  static auto* table = new PrimitiveTable;
  return *table;
}

}  // namespace

Primitive Primitive::Intern(std::string_view name) {
  PrimitiveTable& t = Table();
  std::lock_guard<std::mutex> lock(t.mu);
  auto it = t.ids.find(name);
  if (it != t.ids.end()) return Primitive(it->second);
  const uint32_t id = static_cast<uint32_t>(t.names.size());
  if (id >= kMaxPrimitives) throw InternalError(StrCat("too many primitives (", kMaxPrimitives, ") interning ", name));
  t.names.emplace_back(name);
  t.ids.emplace(t.names.back(), id);
  t.by_id[id].store(&t.names.back(), std::memory_order_release);
  return Primitive(id);
}

uint32_t Primitive::Count() {
  PrimitiveTable& t = Table();
  std::lock_guard<std::mutex> lock(t.mu);
  return static_cast<uint32_t>(t.names.size());
}

std::string_view Primitive::name() const {
  if (!valid() || id_ >= kMaxPrimitives) return "<invalid primitive>";
  const std::string* name = Table().by_id[id_].load(std::memory_order_acquire);
  return name != nullptr ? std::string_view(*name) : std::string_view("<invalid primitive>");
}

}  // namespace jx
