#include "jx/core/primitive.h"

#include <deque>
#include <mutex>
#include <string>

#include "absl/container/flat_hash_map.h"

namespace jx {
namespace {

struct PrimitiveTable {
  std::mutex mu;
  std::deque<std::string> names;  // stable addresses: name() returns views into it
  absl::flat_hash_map<std::string_view, uint32_t> ids;
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
  t.names.emplace_back(name);
  t.ids.emplace(t.names.back(), id);
  return Primitive(id);
}

uint32_t Primitive::Count() {
  PrimitiveTable& t = Table();
  std::lock_guard<std::mutex> lock(t.mu);
  return static_cast<uint32_t>(t.names.size());
}

std::string_view Primitive::name() const {
  if (!valid()) return "<invalid primitive>";
  PrimitiveTable& t = Table();
  std::lock_guard<std::mutex> lock(t.mu);
  return t.names[id_];
}

}  // namespace jx
