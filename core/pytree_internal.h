// Implementation details of jx/core/pytree.h: type classification, Static value erasure,
// struct metadata and the N-tree map. Not for direct use; include jx/core/pytree.h.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include <boost/hana/accessors.hpp>
#include <boost/hana/concept/struct.hpp>
#include <boost/hana/first.hpp>
#include <boost/hana/for_each.hpp>
#include <boost/hana/second.hpp>
#include <boost/hana/string.hpp>
#include <boost/hana/unpack.hpp>

#include "absl/hash/hash.h"
#include "jx/core/array.h"
#include "jx/core/str_util.h"

namespace jx {

template <typename T>
struct Static;

namespace tree_internal {


// Type-erased Static value held by a TreeDef.
class StaticValue {
 public:
  virtual ~StaticValue() = default;
  virtual const std::type_info& type() const = 0;
  virtual size_t Hash() const = 0;
  virtual bool Equals(const StaticValue& other) const = 0;  // same type and ==
  virtual std::string ToString() const = 0;
};

std::string StreamToString(const void* value, void (*write)(std::ostream&, const void*));

template <typename T>
std::string StaticToString(const T& v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v ? "True" : "False";
  } else if constexpr (std::is_arithmetic_v<T>) {
    return StrCat(v);
  } else if constexpr (std::is_convertible_v<const T&, std::string_view>) {
    return StrCat("'", std::string_view(v), "'");  // Python's repr of a str
  } else if constexpr (requires(std::ostream& os) { os << v; }) {
    return StreamToString(&v, [](std::ostream& os, const void* p) { os << *static_cast<const T*>(p); });
  } else if constexpr (std::is_enum_v<T>) {
    return StrCat(static_cast<std::underlying_type_t<T>>(v));
  } else {
    return "<static>";
  }
}

template <typename T>
size_t StaticHash(const T& v) {
  if constexpr (requires { std::hash<T>{}(v); }) {
    return std::hash<T>{}(v);
  } else if constexpr (std::is_default_constructible_v<absl::Hash<T>>) {
    return absl::Hash<T>{}(v);
  } else {
    return typeid(T).hash_code();  // unhashable: equal values still compare equal
  }
}

template <typename T>
class StaticValueOf final : public StaticValue {
 public:
  static_assert(std::equality_comparable<T>,
                "jx::Static<T>: T must have operator== (Static values are compared to decide "
                "whether two tree structures, and jit cache entries, are the same)");
  static_assert(!std::is_same_v<T, Array>,
                "jx::Static<jx::Array> is not allowed: Arrays are leaves, not static values");
  explicit StaticValueOf(const T& v) : value_(v) {}
  const T& value() const { return value_; }
  const std::type_info& type() const override { return typeid(T); }
  size_t Hash() const override { return StaticHash(value_); }
  bool Equals(const StaticValue& other) const override {
    return other.type() == typeid(T) &&
           static_cast<bool>(static_cast<const StaticValueOf&>(other).value_ == value_);
  }
  std::string ToString() const override { return StaticToString(value_); }

 private:
  T value_;
};

// Per-struct-type metadata, built once per type and shared by every TreeDef.
struct StructInfo {
  const std::type_info* type;
  std::string name;  // short demangled type name
  std::vector<std::string> fields;
};

// "Layer" for ns::(anonymous namespace)::Layer: namespaces dropped, template args kept.
std::string ShortTypeName(const std::type_info& type);

template <typename T>
const StructInfo& GetStructInfo() {
  static const StructInfo info = [] {
    StructInfo s{&typeid(T), ShortTypeName(typeid(T)), {}};
    boost::hana::for_each(boost::hana::accessors<T>(),
                          [&](auto pair) { s.fields.emplace_back(boost::hana::first(pair).c_str()); });
    return s;
  }();
  return info;
}

enum class Category {
  kNotPytree, kScalar, kArray, kVector, kStdArray, kTupleLike, kDict, kOptional, kStatic, kStruct
};

template <typename T>
struct NodeTraits {
  static constexpr Category kCategory = std::is_arithmetic_v<T> ? Category::kScalar : Category::kNotPytree;
  static constexpr bool kValid = false;
};

// Backs tree::IsPytree; the specializations below recurse through it.
template <typename T>
inline constexpr bool kIsPytree = NodeTraits<std::remove_cvref_t<T>>::kValid;

template <>
struct NodeTraits<Array> {
  static constexpr Category kCategory = Category::kArray;
  static constexpr bool kValid = true;
};
template <typename T, typename A>
struct NodeTraits<std::vector<T, A>> {
  static constexpr Category kCategory = Category::kVector;
  static constexpr bool kValid = kIsPytree<T>;
  using Elem = T;
};
template <typename T, size_t N>
struct NodeTraits<std::array<T, N>> {
  static constexpr Category kCategory = Category::kStdArray;
  static constexpr bool kValid = kIsPytree<T>;
  using Elem = T;
};
template <typename... Ts>
struct NodeTraits<std::tuple<Ts...>> {
  static constexpr Category kCategory = Category::kTupleLike;
  static constexpr bool kValid = (kIsPytree<Ts> && ...);
};
template <typename A, typename B>
struct NodeTraits<std::pair<A, B>> {
  static constexpr Category kCategory = Category::kTupleLike;
  static constexpr bool kValid = kIsPytree<A> && kIsPytree<B>;
};
// Only string keys (JAX dict keys sorted as strings) and the default ordering.
template <typename T, typename C, typename A>
  requires(std::is_same_v<C, std::less<std::string>> || std::is_same_v<C, std::less<>>)
struct NodeTraits<std::map<std::string, T, C, A>> {
  static constexpr Category kCategory = Category::kDict;
  static constexpr bool kValid = kIsPytree<T>;
  using Elem = T;
};
template <typename T>
struct NodeTraits<std::optional<T>> {
  static constexpr Category kCategory = Category::kOptional;
  static constexpr bool kValid = kIsPytree<T>;
  using Elem = T;
};
template <typename T>
struct NodeTraits<Static<T>> {
  static constexpr Category kCategory = Category::kStatic;
  static constexpr bool kValid = true;
};

template <typename T>
constexpr bool StructFieldsArePytrees() {
  return boost::hana::unpack(boost::hana::accessors<T>(), [](auto... pairs) {
    return (kIsPytree<decltype(boost::hana::second(pairs)(std::declval<const T&>()))> && ...);
  });
}
template <typename T>
  requires(boost::hana::Struct<T>::value)
struct NodeTraits<T> {
  static constexpr Category kCategory = Category::kStruct;
  static constexpr bool kValid = StructFieldsArePytrees<T>();
};

template <typename T>
inline constexpr Category kCategoryOf = NodeTraits<std::remove_cvref_t<T>>::kCategory;

// Exactly one assertion fires, naming the offending type in the instantiation trace.
template <typename T>
constexpr void ReportNotPytree() {
  static_assert(!std::is_arithmetic_v<T>,
                "jx::tree: a C++ arithmetic scalar (int, float, double, bool, ...) is not a pytree "
                "leaf; convert it to a jx::Array, or wrap it in jx::Static<T> to make it part of "
                "the tree structure (and of jit's cache key)");
  static_assert(std::is_arithmetic_v<T>,
                "jx::tree: this type is not a pytree. Leaves are jx::Array; containers are "
                "std::vector, std::array, std::tuple, std::pair, std::map<std::string, T>, "
                "std::optional and structs declared with BOOST_HANA_DEFINE_STRUCT or adapted "
                "with BOOST_HANA_ADAPT_STRUCT; wrap any other value in jx::Static<T>");
}

// One step of a key path, linked through the C++ stack; formatted only on error.
struct PathFrame {
  enum Kind : uint8_t { kIndex, kKey, kField };
  const PathFrame* parent;
  Kind kind;
  size_t index = 0;
  std::string_view name = {};
};
std::string FormatPath(const PathFrame* innermost);
[[noreturn]] void ThrowMapMismatch(const PathFrame* path, std::string_view detail);
std::string DescribeKeys(const std::vector<std::string_view>& keys);

template <typename T, typename F, typename... Rest>
T MapImpl(F& f, const PathFrame* path, const T& x, const Rest&... rest);

template <size_t I, typename T, typename F, typename... Rest>
std::tuple_element_t<I, T> MapElement(F& f, const PathFrame* path, const T& x, const Rest&... rest) {
  PathFrame fr{path, PathFrame::kIndex, I};
  return MapImpl<std::tuple_element_t<I, T>>(f, &fr, std::get<I>(x), std::get<I>(rest)...);
}

// Maps f over the leaves of x and the matching leaves of rest (same C++ type; their runtime
// structure is checked as the walk goes: lengths, keys, optional presence, Static values).
template <typename T, typename F, typename... Rest>
T MapImpl(F& f, const PathFrame* path, const T& x, const Rest&... rest) {
  constexpr Category kCat = kCategoryOf<T>;
  if constexpr (kCat == Category::kArray) {
    return Array(f(x, rest...));
  } else if constexpr (kCat == Category::kVector) {
    if (((rest.size() != x.size()) || ...)) {
      size_t other = 0;
      ((other = rest.size() != x.size() ? rest.size() : other), ...);
      ThrowMapMismatch(path, StrCat("list of length ", x.size(), " vs ", other));
    }
    T out;
    out.reserve(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      PathFrame fr{path, PathFrame::kIndex, i};
      out.push_back(MapImpl(f, &fr, x[i], rest[i]...));
    }
    return out;
  } else if constexpr (kCat == Category::kStdArray) {
    T out;
    for (size_t i = 0; i < x.size(); ++i) {
      PathFrame fr{path, PathFrame::kIndex, i};
      out[i] = MapImpl(f, &fr, x[i], rest[i]...);
    }
    return out;
  } else if constexpr (kCat == Category::kTupleLike) {
    return [&]<size_t... I>(std::index_sequence<I...>) {
      return T{MapElement<I>(f, path, x, rest...)...};
    }(std::make_index_sequence<std::tuple_size_v<T>>());
  } else if constexpr (kCat == Category::kDict) {
    auto same_keys = [&](const T& other) {
      if (other.size() != x.size()) return false;
      for (const auto& [k, v] : x) {
        if (!other.contains(k)) return false;
      }
      return true;
    };
    if ((!same_keys(rest) || ...)) {
      std::vector<std::string_view> a, b;
      for (const auto& [k, v] : x) a.push_back(k);
      auto collect = [&](const T& other) {
        if (!b.empty() || same_keys(other)) return;
        for (const auto& [k, v] : other) b.push_back(k);
      };
      (collect(rest), ...);
      ThrowMapMismatch(path, StrCat("dict keys ", DescribeKeys(a), " vs ", DescribeKeys(b)));
    }
    T out;
    size_t i = 0;
    for (const auto& [k, v] : x) {
      PathFrame fr{path, PathFrame::kKey, i++, k};
      out.emplace_hint(out.end(), k, MapImpl(f, &fr, v, rest.find(k)->second...));
    }
    return out;
  } else if constexpr (kCat == Category::kOptional) {
    if (((rest.has_value() != x.has_value()) || ...)) {
      ThrowMapMismatch(path, x.has_value() ? "a value vs None" : "None vs a value");
    }
    if (!x.has_value()) return T(std::nullopt);
    return T(MapImpl(f, path, *x, *rest...));
  } else if constexpr (kCat == Category::kStatic) {
    if constexpr (sizeof...(Rest) > 0) {
      if (!((rest == x) && ...)) {
        std::string other;
        ((other = rest == x ? other : StaticToString(rest.value)), ...);
        ThrowMapMismatch(path, StrCat("Static(", StaticToString(x.value), ") vs Static(", other, ")"));
      }
    }
    return x;
  } else if constexpr (kCat == Category::kStruct) {
    static_assert(std::is_default_constructible_v<T>,
                  "jx::tree: pytree structs must be default-constructible to be rebuilt");
    T out{};
    size_t i = 0;
    boost::hana::for_each(boost::hana::accessors<T>(), [&](auto pair) {
      const auto& get = boost::hana::second(pair);
      PathFrame fr{path, PathFrame::kField, i++, boost::hana::first(pair).c_str()};
      get(out) = MapImpl(f, &fr, get(x), get(rest)...);
    });
    return out;
  } else {
    ReportNotPytree<T>();
  }
}

}  // namespace tree_internal
}  // namespace jx
