// Array: jx's n-dimensional array. Immutable value semantics over a shared buffer, cheap to
// copy. Inside a transformation an Array is a tracer owned by that transformation's
// interpreter; reading a tracer's values on the host throws ConcretizationError.
//
//   jx::Array x = jnp::array({1.f, 2.f, 3.f});
//   x.shape();              // {3}
//   x.dtype();              // jx::float32
//   (x * 2.0).to_vector<float>();   // {2, 4, 6}; the C++ scalar is weakly typed
//   std::cout << x;         // [1. 2. 3.]
#pragma once

#include <concepts>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "jx/core/buffer.h"
#include "jx/core/dtype.h"
#include "jx/core/shape.h"

namespace jx {

class Interpreter;
class ConcreteArray;

// The shared state behind an Array: a concrete value or a tracer.
class ArrayImpl {
 public:
  enum class Kind : uint8_t { kConcrete, kTracer };
  ArrayImpl(Kind kind, ShapedArray aval) : aval_(std::move(aval)), kind_(kind) {}
  virtual ~ArrayImpl() = default;

  Kind kind() const { return kind_; }
  const ShapedArray& aval() const { return aval_; }
  // For tracers: which transformation traces the value and which function arguments it
  // depends on, appended to ConcretizationError messages.
  virtual std::string Provenance() const { return {}; }
  // The concrete value behind this one, if it has one (JAX's to_concrete_value): a value
  // itself, or a jvp tracer's concrete primal, so host control flow works under grad and jvp.
  virtual const ConcreteArray* ConcreteValue() const { return nullptr; }

 private:
  ShapedArray aval_;
  Kind kind_;
};

// A value living in host memory, row-major and contiguous.
class ConcreteArray final : public ArrayImpl {
 public:
  ConcreteArray(ShapedArray aval, std::shared_ptr<Buffer> buffer)
      : ArrayImpl(Kind::kConcrete, std::move(aval)), buffer_(std::move(buffer)) {}
  const void* data() const { return buffer_->data(); }
  const std::shared_ptr<Buffer>& buffer() const { return buffer_; }
  const ConcreteArray* ConcreteValue() const override { return this; }

 private:
  std::shared_ptr<Buffer> buffer_;
};

// A C++ arithmetic scalar that converts implicitly to a weakly typed 0-d Array.
template <typename T>
concept WeakScalar = std::is_arithmetic_v<T> && !std::is_same_v<T, bool>;

class Array {
 public:
  // An empty handle (no value); every operation on it throws.
  Array() = default;
  explicit Array(std::shared_ptr<const ArrayImpl> impl) : impl_(std::move(impl)) {}
  // C++ scalars become weakly typed 0-d arrays: floats -> f32 (weak), integers -> i32 (weak).
  template <WeakScalar T>
  Array(T v) : Array(Scalar(static_cast<double>(v), std::is_floating_point_v<T> ? float32 : int32, true)) {}
  Array(bool v) : Array(Scalar(v ? 1.0 : 0.0, bool_, false)) {}

  // A new concrete array of the given type filled from a double (weak types allowed).
  static Array Scalar(double value, DType dtype, bool weak_type = false);
  // A new uninitialized concrete array; kernels fill it through mutable_data().
  static Array Empty(ShapedArray aval);
  static Array Empty(Shape shape, DType dtype) { return Empty(ShapedArray{std::move(shape), dtype}); }
  // Wraps existing typed data (copied).
  static Array FromData(const void* data, Shape shape, DType dtype);

  bool defined() const { return impl_ != nullptr; }
  const ShapedArray& aval() const;
  const Shape& shape() const { return aval().shape; }
  DType dtype() const { return aval().dtype; }
  bool weak_type() const { return aval().weak_type; }
  int64_t ndim() const { return aval().ndim(); }
  int64_t size() const { return aval().size(); }
  int64_t nbytes() const { return aval().nbytes(); }

  bool is_concrete() const { return impl_ && impl_->kind() == ArrayImpl::Kind::kConcrete; }
  // Whether the array's buffer was donated to a jit call (JAX's is_deleted); any use of its
  // value then throws RuntimeError.
  bool is_deleted() const;
  bool is_tracer() const { return impl_ && impl_->kind() == ArrayImpl::Kind::kTracer; }
  const std::shared_ptr<const ArrayImpl>& impl() const { return impl_; }
  // Host data of a concrete array; throws ConcretizationError on a tracer.
  const void* data() const;
  template <typename T> const T* data_as() const { return static_cast<const T*>(data()); }
  // Only for kernels filling a freshly created output (Empty()); arrays are otherwise immutable.
  void* mutable_data() const { return const_cast<void*>(data()); }
  const std::shared_ptr<Buffer>& buffer() const;

  // The single element, converted to T (like NumPy's item() then a C++ cast).
  template <typename T> T item() const;
  // All elements in row-major order, converted to T.
  template <typename T> std::vector<T> to_vector() const;
  // `if (x)`: the truth of a one-element array (a ConcretizationError on a tracer).
  explicit operator bool() const { return item<bool>(); }

  // Defined in lax (they are ops): the same as lax::convert_element_type, jnp::reshape, ...
  Array astype(DType dtype) const;
  Array reshape(Shape new_shape) const;
  Array T() const;
  Array operator[](int64_t index) const;

  std::string str() const;  // NumPy's str(): "[1. 2. 3.]"
  std::string repr() const; // "Array([1., 2., 3.], dtype=float32)"

 private:
  [[noreturn]] void ThrowItemError() const;
  std::shared_ptr<const ArrayImpl> impl_;
};

using Arrays = absl::InlinedVector<Array, 1>;

std::ostream& operator<<(std::ostream& os, const Array& a);

// Converts n elements of dtype src at data into T.
template <typename T> void ConvertElements(DType src, const void* data, int64_t n, T* out);

template <typename T>
T Array::item() const {
  if (size() != 1) ThrowItemError();
  T out;
  ConvertElements<T>(dtype(), data(), 1, &out);
  return out;
}

template <typename T>
std::vector<T> Array::to_vector() const {
  const void* p = data();
  if constexpr (std::is_same_v<T, bool>) {  // std::vector<bool> has no data()
    auto flags = std::make_unique<bool[]>(static_cast<size_t>(size()));
    ConvertElements<bool>(dtype(), p, size(), flags.get());
    return std::vector<bool>(flags.get(), flags.get() + size());
  } else {
    std::vector<T> out(static_cast<size_t>(size()));
    ConvertElements<T>(dtype(), p, size(), out.data());
    return out;
  }
}

}  // namespace jx
