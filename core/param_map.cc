#include "jx/core/param_map.h"

#include <algorithm>

#include "absl/hash/hash.h"
#include "jx/core/str_util.h"
#include "absl/strings/str_join.h"
#include "jx/core/errors.h"

namespace jx {

bool operator==(const Param& a, const Param& b) {
  if (a.value.index() != b.value.index()) return false;
  if (auto* pa = std::get_if<std::shared_ptr<const ParamObject>>(&a.value)) {
    const auto& pb = std::get<std::shared_ptr<const ParamObject>>(b.value);
    if (*pa == pb) return true;
    return *pa && pb && (*pa)->Equals(*pb);
  }
  return a.value == b.value;
}

size_t Param::Hash() const {
  return std::visit(
      [&](const auto& v) -> size_t {
        using V = std::decay_t<decltype(v)>;
        const size_t tag = value.index();
        if constexpr (std::is_same_v<V, ParamNone>) {
          return absl::HashOf(tag);
        } else if constexpr (std::is_same_v<V, ParamList>) {
          size_t h = absl::HashOf(tag, v.size());
          for (const Param& p : v) h = absl::HashOf(h, p.Hash());
          return h;
        } else if constexpr (std::is_same_v<V, std::shared_ptr<const ParamObject>>) {
          return absl::HashOf(tag, v ? v->Hash() : 0);
        } else if constexpr (std::is_same_v<V, DType>) {
          return absl::HashOf(tag, static_cast<int>(v));
        } else {
          return absl::HashOf(tag, v);
        }
      },
      value);
}

std::string Param::ToString() const {
  return std::visit(
      [](const auto& v) -> std::string {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, ParamNone>) {
          return "None";
        } else if constexpr (std::is_same_v<V, bool>) {
          return v ? "True" : "False";
        } else if constexpr (std::is_same_v<V, int64_t>) {
          return StrCat(v);
        } else if constexpr (std::is_same_v<V, double>) {
          return StrCat(v);
        } else if constexpr (std::is_same_v<V, std::string>) {
          return v;
        } else if constexpr (std::is_same_v<V, DType>) {
          return std::string(dtype_name(v));
        } else if constexpr (std::is_same_v<V, std::vector<int64_t>>) {
          if (v.size() == 1) return StrCat("(", v[0], ",)");
          return StrCat("(", absl::StrJoin(v, ", "), ")");
        } else if constexpr (std::is_same_v<V, ParamList>) {
          std::vector<std::string> parts;
          for (const Param& p : v) parts.push_back(p.ToString());
          if (parts.size() == 1) return StrCat("(", parts[0], ",)");
          return StrCat("(", absl::StrJoin(parts, ", "), ")");
        } else {
          return v ? v->ToString() : "None";
        }
      },
      value);
}

ParamMap::ParamMap(std::initializer_list<std::pair<std::string_view, Param>> entries) {
  for (const auto& [name, value] : entries) Set(name, value);
}

ParamMap& ParamMap::Set(std::string_view name, Param value) {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), name,
                             [](const auto& e, std::string_view n) { return e.first < n; });
  if (it != entries_.end() && it->first == name) {
    it->second = std::move(value);
  } else {
    entries_.emplace(it, std::string(name), std::move(value));
  }
  return *this;
}

const Param* ParamMap::Find(std::string_view name) const {
  for (const auto& e : entries_) {
    if (e.first == name) return &e.second;
  }
  return nullptr;
}

const Param& ParamMap::Get(std::string_view name) const {
  const Param* p = Find(name);
  if (p == nullptr) throw InternalError(StrCat("missing primitive parameter '", name, "'"));
  return *p;
}

namespace {
template <typename T>
const T& GetAs(const ParamMap& m, std::string_view name) {
  const Param& p = m.Get(name);
  if (const T* v = std::get_if<T>(&p.value)) return *v;
  throw InternalError(StrCat("primitive parameter '", name, "' has the wrong type: ", p.ToString()));
}
}  // namespace

int64_t ParamMap::GetInt(std::string_view name) const { return GetAs<int64_t>(*this, name); }
double ParamMap::GetDouble(std::string_view name) const {
  const Param& p = Get(name);
  if (const int64_t* i = std::get_if<int64_t>(&p.value)) return static_cast<double>(*i);
  return GetAs<double>(*this, name);
}
bool ParamMap::GetBool(std::string_view name) const { return GetAs<bool>(*this, name); }
DType ParamMap::GetDType(std::string_view name) const { return GetAs<DType>(*this, name); }
const std::string& ParamMap::GetString(std::string_view name) const {
  return GetAs<std::string>(*this, name);
}
const std::vector<int64_t>& ParamMap::GetInts(std::string_view name) const {
  return GetAs<std::vector<int64_t>>(*this, name);
}
const ParamList& ParamMap::GetList(std::string_view name) const { return GetAs<ParamList>(*this, name); }
const std::shared_ptr<const ParamObject>& ParamMap::GetObject(std::string_view name) const {
  return GetAs<std::shared_ptr<const ParamObject>>(*this, name);
}

size_t ParamMap::Hash() const {
  size_t h = absl::HashOf(entries_.size());
  for (const auto& [name, value] : entries_) h = absl::HashOf(h, name, value.Hash());
  return h;
}

std::string ParamMap::ToString() const {
  std::vector<std::string> parts;
  parts.reserve(entries_.size());
  for (const auto& [name, value] : entries_) parts.push_back(StrCat(name, "=", value.ToString()));
  return absl::StrJoin(parts, " ");
}

}  // namespace jx
