#include "jx/core/host_callback.h"

#include <mutex>
#include <utility>
#include <vector>

namespace jx {
namespace {

struct Table {
  std::mutex mu;
  std::vector<std::shared_ptr<const HostCallback>> fns;  // id = index
};

Table& GetTable() {
  static Table* table = new Table();
  return *table;
}

}  // namespace

int64_t RegisterHostCallback(std::shared_ptr<const HostCallback> fn) {
  Table& t = GetTable();
  std::lock_guard<std::mutex> lock(t.mu);
  t.fns.push_back(std::move(fn));
  return static_cast<int64_t>(t.fns.size()) - 1;
}

std::shared_ptr<const HostCallback> FindHostCallback(int64_t id) {
  Table& t = GetTable();
  std::lock_guard<std::mutex> lock(t.mu);
  if (id < 0 || id >= static_cast<int64_t>(t.fns.size())) return nullptr;
  return t.fns[static_cast<size_t>(id)];
}

}  // namespace jx
