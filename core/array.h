// Array: jx's n-dimensional array. Immutable value semantics over a shared buffer, cheap to
// copy. Inside a transformation an Array is a tracer owned by that transformation's
// interpreter; reading a tracer's values on the host throws ConcretizationError.
//
//   jx::Array x = jnp::array({1.f, 2.f, 3.f});
//   x.shape();              // {3}
//   x.dtype();              // jx::float32
//   (x * 2.0).to_vector<float>();   // {2, 4, 6}; the C++ scalar is weakly typed
//   std::cout << x;         // [1. 2. 3.]
//   x.committed();          // false: on the default device (the host CPU), free to follow others
//   jx::device_put(x, jx::devices("tpu")[0]).devices();   // {TPU_0(...)}, committed
#pragma once

#include <concepts>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/types/span.h"
#include "jx/core/axis.h"
#include "jx/core/buffer.h"
#include "jx/core/dtype.h"
#include "jx/core/shape.h"

namespace jx {

class Interpreter;
class ConcreteArray;
class Device;
class Sharding;
struct Shard;

// Registers the host CPU's client with the device registry (idempotent, thread-safe).
// Defined in devices/ (jx_devices, a layer above core), like lax::RegisterAll: the inline
// functions and templates users instantiate call it, so no static initializer is needed
// and core links without the devices layer.
void RegisterBuiltinClients();
// The default device (the first registered "cpu" device), or nullptr before
// RegisterBuiltinClients ran.
const Device* DefaultDevice();

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

// A value in one device's memory, row-major and contiguous (a simulated chip's memory is
// host memory too, so data() reads it directly). device nullptr: the default device,
// uncommitted (JAX's rule: such an array follows the committed arguments of an op);
// committed arrays have their device.
//
// A sharded array (a NamedSharding over several devices) is a ConcreteArray too: its
// shards (each a one-device ConcreteArray committed to its device) hold the data, and the
// global row-major value is assembled on the host at the first read of data()/buffer()
// (printing, to_vector, an op the host runs), once, thread-safely. It is committed to its
// sharding's devices; device() is nullptr.
class ConcreteArray final : public ArrayImpl {
 public:
  ConcreteArray(ShapedArray aval, std::shared_ptr<Buffer> buffer, const Device* device = nullptr,
                bool committed = false)
      : ArrayImpl(Kind::kConcrete, std::move(aval)),
        buffer_(std::move(buffer)),
        device_(device),
        committed_(committed && device != nullptr) {}
  // A sharded array of global type aval (aval.spec as sharding->TypeSpec gives it): one
  // shard per device of sharding->device_set(), in that order, each of the shard shape.
  ConcreteArray(ShapedArray aval, std::shared_ptr<const Sharding> sharding, std::vector<Shard> shards);

  const void* data() const { return buffer()->data(); }
  const std::shared_ptr<Buffer>& buffer() const {
    if (sharded_ != nullptr) AssembleOnce();
    return buffer_;
  }
  const ConcreteArray* ConcreteValue() const override { return this; }
  const Device* device() const { return device_; }
  bool committed() const { return committed_ || sharded_ != nullptr; }
  // The device an op on this array must run on, or nullptr when it may follow others (or
  // when the array is sharded: see sharded()).
  const Device* committed_device() const { return committed_ ? device_ : nullptr; }

  // Non-null for a sharded array (several devices): its sharding and shards.
  struct ShardedValue;  // defined in core/sharding.h
  const ShardedValue* sharded() const { return sharded_.get(); }
  bool is_sharded() const { return sharded_ != nullptr; }
  // The array's sharding: its NamedSharding when sharded, else a SingleDeviceSharding of
  // its device (the default device when uncommitted).
  std::shared_ptr<const Sharding> sharding() const;

 private:
  void AssembleOnce() const;

  mutable std::shared_ptr<Buffer> buffer_;  // assembled lazily when sharded
  const Device* device_;
  bool committed_;
  std::shared_ptr<const ShardedValue> sharded_;
};

// A C++ arithmetic scalar that converts implicitly to a weakly typed 0-d Array.
template <typename T>
concept WeakScalar = std::is_arithmetic_v<T> && !std::is_same_v<T, bool>;

class Array;
class IndexUpdateRef;

// ---- NumPy/JAX indexing (x[...], x.at(...)) ----
// Python's slice(start, stop, step); an absent bound is std::nullopt (Python's None).
//   jx::slice(1, 3)          // 1:3
//   jx::slice()              // :
//   jx::slice({}, {}, -1)    // ::-1
struct Slice {
  std::optional<int64_t> start, stop, step;
};
inline Slice slice(std::optional<int64_t> start = std::nullopt, std::optional<int64_t> stop = std::nullopt,
                   std::optional<int64_t> step = std::nullopt) {
  return Slice{start, stop, step};
}
// jnp.newaxis (None in an index): inserts a dimension of size 1.
struct NewAxis {};
inline constexpr NewAxis newaxis{};
// Python's Ellipsis (`...` in an index): as many full slices as the other indices leave.
struct EllipsisType {};
inline constexpr EllipsisType ellipsis{};

class Index;

class Array {
 public:
  // An empty handle (no value); every operation on it throws.
  Array() = default;
  Array(const Array&) = default;
  Array(Array&&) noexcept = default;
  // Assignable only as an lvalue, so `x[i] = v` and `f(x) = v` do not compile (they would
  // assign to a temporary and change nothing); JAX's updates are x.at(i).set(v).
  Array& operator=(const Array&) & = default;
  Array& operator=(Array&&) & noexcept = default;
  ~Array() = default;
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

  // The devices holding the array (one for a concrete array: its device, or the default
  // device when uncommitted), JAX's x.devices(). Throws on a tracer.
  inline std::vector<const Device*> devices() const;
  // Whether the array was placed on its device explicitly (jx::device_put, or computed from
  // committed arrays); JAX's x.committed. Throws on a tracer.
  bool committed() const;
  // The device the array is committed to, or nullptr (uncommitted, a sharded array, or a
  // tracer).
  const Device* committed_device() const;
  // JAX's x.sharding: a NamedSharding for an array sharded over a mesh, else a
  // SingleDeviceSharding of its device. Throws on a tracer. (core/sharding.h)
  inline std::shared_ptr<const Sharding> sharding() const;
  // JAX's x.addressable_shards: every device's piece with its index and data (one shard, the
  // whole array, when not sharded). Throws on a tracer. Defined in core/sharding.h (Shard).
  inline std::vector<Shard> addressable_shards() const;

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

  // NumPy/JAX indexing (a new array; never a view). Out-of-bounds integer reads clamp, as in
  // JAX; negative indices count from the end; traced integer indices work.
  //   x[2]; x[-1]; x[i_traced];
  //   x[{jx::slice(1, 3), 0}];               // x[1:3, 0]
  //   x[{jx::ellipsis, jx::newaxis}];        // x[..., None]
  //   x[jnp::array({0, 2, 2})];              // gather
  //   x[x > 0];                              // boolean mask (concrete arrays only)
  // `x[i] = v` does not compile (assignment needs an lvalue): use x.at(i).set(v).
  Array operator[](const Index& index) const;
  Array operator[](std::initializer_list<Index> indices) const;
  Array index(const std::vector<Index>& indices) const;
  // JAX's x.at[idx]: functional updates, x.at(i).set(v), .add(v), .get(), ...
  IndexUpdateRef at(const Index& index) const;
  IndexUpdateRef at(std::initializer_list<Index> indices) const;

  // Methods JAX users chain (the same as the jnp functions of the same name).
  Array sum(const Axis& axis = {}, bool keepdims = false, std::optional<DType> dtype = std::nullopt) const;
  Array prod(const Axis& axis = {}, bool keepdims = false, std::optional<DType> dtype = std::nullopt) const;
  Array mean(const Axis& axis = {}, bool keepdims = false, std::optional<DType> dtype = std::nullopt) const;
  Array max(const Axis& axis = {}, bool keepdims = false) const;
  Array min(const Axis& axis = {}, bool keepdims = false) const;
  Array var(const Axis& axis = {}, bool keepdims = false, int64_t ddof = 0) const;
  Array std(const Axis& axis = {}, bool keepdims = false, int64_t ddof = 0) const;
  Array any(const Axis& axis = {}, bool keepdims = false) const;
  Array all(const Axis& axis = {}, bool keepdims = false) const;
  Array argmax(std::optional<int64_t> axis = std::nullopt, bool keepdims = false) const;
  Array argmin(std::optional<int64_t> axis = std::nullopt, bool keepdims = false) const;
  Array cumsum(std::optional<int64_t> axis = std::nullopt, std::optional<DType> dtype = std::nullopt) const;
  Array cumprod(std::optional<int64_t> axis = std::nullopt, std::optional<DType> dtype = std::nullopt) const;
  Array ravel() const;
  Array flatten() const;  // = ravel (JAX arrays are immutable: no copy is needed)
  Array squeeze(const Axis& axis = {}) const;
  Array transpose(std::optional<std::vector<int64_t>> axes = std::nullopt) const;
  Array swapaxes(int64_t axis1, int64_t axis2) const;
  Array clip(const std::optional<Array>& lo, const std::optional<Array>& hi) const;
  Array round(int decimals = 0) const;
  Array dot(const Array& other) const;
  // Waits until the value is computed (jx computes eagerly: returns at once) and returns it;
  // throws RuntimeError on a donated (deleted) array.
  const Array& block_until_ready() const;

  // NumPy's item(i) / item({i, j}): one element by flat index or by coordinates (negative
  // counts from the end; out of range throws IndexError), converted to T.
  template <typename T> T item(int64_t flat_index) const;
  template <typename T> T item(std::initializer_list<int64_t> coordinates) const;

  std::string str() const;  // NumPy's str(): "[1. 2. 3.]"
  std::string repr() const; // "Array([1., 2., 3.], dtype=float32)"

 private:
  [[noreturn]] void ThrowItemError() const;
  // The row-major offset of item(flat) / item({coordinates}); throws IndexError/ValueError.
  int64_t ItemOffset(int64_t flat_index) const;
  int64_t ItemOffset(absl::Span<const int64_t> coordinates) const;
  // The device of the concrete value (nullptr: the default device); throws on a tracer.
  const Device* placed_device() const;
  // The sharding's devices of a sharded concrete value, else nullptr; throws on a tracer.
  const std::vector<const Device*>* sharded_devices() const;
  // sharding() and addressable_shards() once the builtin clients are registered.
  std::shared_ptr<const Sharding> RegisteredSharding() const;
  std::vector<Shard> RegisteredShards() const;
  std::shared_ptr<const ArrayImpl> impl_;
};

using Arrays = absl::InlinedVector<Array, 1>;

// One entry of an index: an integer, a slice, newaxis, an ellipsis, or an Array (an integer
// index, traced or not, of any rank — a gather — or a boolean mask, which must be concrete).
class Index {
 public:
  template <typename T>
    requires std::is_integral_v<T> && (!std::is_same_v<T, bool>)
  Index(T i) : value_(static_cast<int64_t>(i)) {}  // NOLINT: implicit by design
  Index(Slice s) : value_(s) {}                        // NOLINT
  Index(NewAxis) : value_(NewAxis{}) {}                // NOLINT
  Index(EllipsisType) : value_(EllipsisType{}) {}      // NOLINT
  Index(Array a) : value_(std::move(a)) {}             // NOLINT
  // A 0-d boolean index (JAX's x[True] / x[False]): a new axis of size 1 / 0. Only a bool
  // itself: x[1.5] or a pointer must not become x[true].
  template <typename T>
    requires std::is_same_v<T, bool>
  Index(T b) : value_(Array(b)) {}  // NOLINT: implicit by design

  using Value = std::variant<int64_t, Slice, NewAxis, EllipsisType, Array>;
  const Value& value() const { return value_; }

 private:
  Value value_;
};

// JAX's x.at[idx] (x.at(idx) in C++): functional index updates that return a new array.
// Duplicate indices all apply (add accumulates; set keeps one). mode is JAX's: updates drop
// out-of-bounds indices by default ("drop"; "clip" clamps them; "promise_in_bounds"), and
// get() clamps by default ("fill" fills with fill_value, NaN for floats by default). Under
// jit a basic index (integers, traced integers, unit-step slices) updates with
// dynamic_update_slice, other indices with XLA scatter; both run in place when x's buffer is
// dead after the update or donated. divide and power are JAX's: x / ones.at[idx].multiply(v)
// and x ** ones.at[idx].multiply(v) (so an integer x divides into floats); apply(fn) maps a
// scalar function over the indexed elements, once per time an index names an element.
// AtOptions carries JAX's keyword arguments (unique_indices and indices_are_sorted are
// promises, as in JAX: scatter_mul's gradient in the values needs unique_indices).
//   x.at(2).add(10.0);                       // x.at[2].add(10)
//   x.at({jx::slice(), 0}).set(0.0);         // x.at[:, 0].set(0)
//   x.at(20).get("fill", -1.0);              // x.at[20].get(mode='fill', fill_value=-1)
//   x.at(idx).divide(2.0, {.unique_indices = true});
//   x.at(idx).apply([](const Array& e) { return jnp::sin(e); });
struct AtOptions {
  std::string_view mode = {};
  bool indices_are_sorted = false;
  bool unique_indices = false;
};

class IndexUpdateRef {
 public:
  IndexUpdateRef(Array x, std::vector<Index> indices) : x_(std::move(x)), indices_(std::move(indices)) {}
  Array set(const Array& values, std::string_view mode = {}) const { return set(values, AtOptions{mode}); }
  Array add(const Array& values, std::string_view mode = {}) const { return add(values, AtOptions{mode}); }
  Array multiply(const Array& values, std::string_view mode = {}) const { return multiply(values, AtOptions{mode}); }
  Array divide(const Array& values, std::string_view mode = {}) const { return divide(values, AtOptions{mode}); }
  Array power(const Array& values, std::string_view mode = {}) const { return power(values, AtOptions{mode}); }
  Array min(const Array& values, std::string_view mode = {}) const { return min(values, AtOptions{mode}); }
  Array max(const Array& values, std::string_view mode = {}) const { return max(values, AtOptions{mode}); }
  Array apply(const std::function<Array(const Array&)>& fn, std::string_view mode = {}) const {
    return apply(fn, AtOptions{mode});
  }
  Array set(const Array& values, const AtOptions& options) const;
  Array add(const Array& values, const AtOptions& options) const;
  Array multiply(const Array& values, const AtOptions& options) const;
  Array divide(const Array& values, const AtOptions& options) const;
  Array power(const Array& values, const AtOptions& options) const;
  Array min(const Array& values, const AtOptions& options) const;
  Array max(const Array& values, const AtOptions& options) const;
  Array apply(const std::function<Array(const Array&)>& fn, const AtOptions& options) const;
  Array get(std::string_view mode = {}, std::optional<double> fill_value = std::nullopt) const;

 private:
  Array x_;
  std::vector<Index> indices_;
};

std::ostream& operator<<(std::ostream& os, const Array& a);

// Arrays computed on `device` from arguments committed to it are committed there: the same
// buffer as `x`, with that placement (x itself if it already has it).
Array CommitTo(const Array& x, const Device* device);

// The device that committed arguments of one call (an op, a jit call) pin it to, or nullptr
// when none is committed. Throws ValueError naming `op` and both devices when arguments are
// committed to different devices (JAX's rule). Tracers are skipped.
const Device* CommittedDeviceOf(absl::Span<const Array> args, std::string_view op);

inline std::shared_ptr<const Sharding> Array::sharding() const {
  RegisterBuiltinClients();
  return RegisteredSharding();
}

inline std::vector<const Device*> Array::devices() const {
  RegisterBuiltinClients();
  if (const std::vector<const Device*>* set = sharded_devices()) return *set;
  const Device* d = placed_device();
  return {d != nullptr ? d : DefaultDevice()};
}

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
T Array::item(int64_t flat_index) const {
  const int64_t offset = ItemOffset(flat_index);
  T out;
  ConvertElements<T>(dtype(), static_cast<const char*>(data()) + offset * ItemSize(dtype()), 1, &out);
  return out;
}

template <typename T>
T Array::item(std::initializer_list<int64_t> coordinates) const {
  const int64_t offset = ItemOffset(absl::MakeConstSpan(coordinates.begin(), coordinates.size()));
  T out;
  ConvertElements<T>(dtype(), static_cast<const char*>(data()) + offset * ItemSize(dtype()), 1, &out);
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
