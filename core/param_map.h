// ParamMap: a primitive's parameters, canonical (sorted by name), hashable and printable, so
// printing, CSE, cache keys and serialization share one implementation.
//
//   jx::ParamMap p{{"axes", std::vector<int64_t>{0, 2}}, {"keepdims", false}};
//   p.GetInts("axes");   // {0, 2}
//   p.ToString();        // "axes=(0, 2) keepdims=False"
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "jx/core/dtype.h"

namespace jx {

// A parameter value that is not a plain scalar or list (a sub-jaxpr, a sharding, a callable).
class ParamObject {
 public:
  virtual ~ParamObject() = default;
  virtual size_t Hash() const = 0;
  virtual bool Equals(const ParamObject& other) const = 0;
  virtual std::string ToString() const = 0;
};

struct Param;
using ParamList = std::vector<Param>;
struct ParamNone {
  friend bool operator==(ParamNone, ParamNone) { return true; }
};

struct Param {
  using Value = std::variant<ParamNone, bool, int64_t, double, std::string, DType,
                             std::vector<int64_t>, ParamList, std::shared_ptr<const ParamObject>>;
  Value value;

  Param() = default;
  Param(ParamNone) {}
  Param(bool v) : value(v) {}
  Param(int v) : value(int64_t{v}) {}
  Param(int64_t v) : value(v) {}
  Param(double v) : value(v) {}
  Param(const char* v) : value(std::string(v)) {}
  Param(std::string v) : value(std::move(v)) {}
  Param(DType v) : value(v) {}
  Param(std::vector<int64_t> v) : value(std::move(v)) {}
  Param(ParamList v) : value(std::move(v)) {}
  Param(std::shared_ptr<const ParamObject> v) : value(std::move(v)) {}

  bool is_none() const { return std::holds_alternative<ParamNone>(value); }
  size_t Hash() const;
  std::string ToString() const;  // JAX-like: True, 3, 1.5, float32, (0, 1), 'name'
  friend bool operator==(const Param& a, const Param& b);
};

class ParamMap {
 public:
  ParamMap() = default;
  ParamMap(std::initializer_list<std::pair<std::string_view, Param>> entries);

  ParamMap& Set(std::string_view name, Param value);
  const Param* Find(std::string_view name) const;
  bool Has(std::string_view name) const { return Find(name) != nullptr; }

  // Typed access; a missing or mistyped parameter is an InternalError naming it.
  const Param& Get(std::string_view name) const;
  int64_t GetInt(std::string_view name) const;
  double GetDouble(std::string_view name) const;
  bool GetBool(std::string_view name) const;
  DType GetDType(std::string_view name) const;
  const std::string& GetString(std::string_view name) const;
  const std::vector<int64_t>& GetInts(std::string_view name) const;
  const ParamList& GetList(std::string_view name) const;
  const std::shared_ptr<const ParamObject>& GetObject(std::string_view name) const;

  bool empty() const { return entries_.empty(); }
  size_t size() const { return entries_.size(); }
  auto begin() const { return entries_.begin(); }
  auto end() const { return entries_.end(); }

  size_t Hash() const;
  std::string ToString() const;  // "axes=(0, 2) keepdims=False"
  friend bool operator==(const ParamMap& a, const ParamMap& b) { return a.entries_ == b.entries_; }

 private:
  std::vector<std::pair<std::string, Param>> entries_;  // sorted by name
};

}  // namespace jx
