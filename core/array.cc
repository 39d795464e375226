#include "jx/core/array.h"

#include <cstring>
#include <ostream>

#include "jx/core/device.h"
#include "jx/core/errors.h"
#include "jx/core/sharding.h"

namespace jx {

Array Array::Scalar(double value, DType dtype, bool weak_type) {
  Array out = Empty(ShapedArray{{}, dtype, weak_type});
  StoreFromDouble(dtype, out.mutable_data(), 0, value);
  return out;
}

Array Array::Empty(ShapedArray aval) {
  const int64_t nbytes = aval.nbytes();
  return Array(std::make_shared<ConcreteArray>(std::move(aval), Buffer::Allocate(nbytes)));
}

Array Array::FromData(const void* data, Shape shape, DType dtype) {
  Array out = Empty(ShapedArray{std::move(shape), dtype});
  if (out.nbytes() > 0) std::memcpy(out.mutable_data(), data, static_cast<size_t>(out.nbytes()));
  return out;
}

const ShapedArray& Array::aval() const {
  if (!impl_) throw ValueError("use of an empty jx::Array handle (default-constructed Array)");
  return impl_->aval();
}

namespace {
// Whether a concrete value's memory is gone: its buffer donated, or for a sharded value any
// shard's (read without assembling the global value).
bool IsDeleted(const ConcreteArray& c) {
  if (!c.is_sharded()) return c.buffer()->is_deleted();
  for (const Shard& shard : c.sharded()->shards) {
    const ConcreteArray* piece = shard.data.impl() ? shard.data.impl()->ConcreteValue() : nullptr;
    if (piece == nullptr || piece->buffer()->is_deleted()) return true;
  }
  return false;
}

// The concrete value x reads as on the host, or a ConcretizationError saying why it has none.
const ConcreteArray& ReadableValue(const ArrayImpl* impl) {
  if (!impl) throw ValueError("use of an empty jx::Array handle (default-constructed Array)");
  const ConcreteArray* c = impl->kind() == ArrayImpl::Kind::kConcrete
                               ? static_cast<const ConcreteArray*>(impl)
                               : impl->ConcreteValue();
  if (c != nullptr) {
    if (IsDeleted(*c)) {
      throw RuntimeError(StrCat("Array has been deleted with shape=", impl->aval().str(),
                                c->is_sharded() ? ": a shard's buffer" : ": its buffer",
                                " was donated to a jit call (donate_argnums); use the call's result instead"));
    }
    return *c;
  }
  throw ConcretizationError(StrCat(
      "Abstract tracer value encountered where a concrete value is expected: the value of a ",
      impl->aval().str(), " tracer is not known while tracing.", impl->Provenance(),
      " Use jx control flow (lax::cond, lax::while_loop) or mark the argument static instead of reading it "
      "on the host."));
}
}  // namespace

const void* Array::data() const { return ReadableValue(impl_.get()).data(); }

const std::shared_ptr<Buffer>& Array::buffer() const { return ReadableValue(impl_.get()).buffer(); }

const Device* Array::placed_device() const { return ReadableValue(impl_.get()).device(); }

const std::vector<const Device*>* Array::sharded_devices() const {
  const ConcreteArray& c = ReadableValue(impl_.get());
  return c.is_sharded() ? &c.sharded()->sharding->device_set() : nullptr;
}

std::shared_ptr<const Sharding> Array::RegisteredSharding() const { return ReadableValue(impl_.get()).sharding(); }

std::vector<Shard> Array::RegisteredShards() const {
  const ConcreteArray& c = ReadableValue(impl_.get());
  if (c.is_sharded()) return c.sharded()->shards;
  Shard whole;
  whole.device = c.device() != nullptr ? c.device() : DefaultDevice();
  for (int64_t d : shape()) whole.index.emplace_back(0, d);
  whole.data = *this;
  return {whole};
}

bool Array::committed() const { return ReadableValue(impl_.get()).committed(); }

const Device* Array::committed_device() const {
  if (!is_concrete()) return nullptr;
  return static_cast<const ConcreteArray&>(*impl_).committed_device();
}

Array CommitTo(const Array& x, const Device* device) {
  const auto& c = ReadableValue(x.impl().get());
  if (c.committed_device() == device) return x;
  return Array(std::make_shared<ConcreteArray>(x.aval(), c.buffer(), device, /*committed=*/true));
}

namespace {

// "TPU_1(...)" or "NamedSharding(...) over devices [1, 2, ...]": where a committed argument
// lives, for the error naming two of them.
std::string PlaceOf(const ConcreteArray& c) {
  if (!c.is_sharded()) return c.committed_device()->ToString();
  std::string ids;
  for (const Device* d : c.sharded()->sharding->device_set()) StrAppend(&ids, ids.empty() ? "" : ", ", d->id());
  return StrCat(c.sharded()->sharding->ToString(), " over device ids [", ids, "]");
}

}  // namespace

const Device* CommittedDeviceOf(absl::Span<const Array> args, std::string_view op) {
  // The first committed argument fixes the devices: one device, or a sharded argument's
  // device set (in order: arrays on two meshes, even of the same chips, do not mix).
  const ConcreteArray* first = nullptr;
  size_t first_index = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    if (!args[i].defined() || !args[i].is_concrete()) continue;
    const ConcreteArray& c = static_cast<const ConcreteArray&>(*args[i].impl());
    if (!c.committed()) continue;
    if (first == nullptr) {
      first = &c;
      first_index = i;
      continue;
    }
    bool same;
    if (first->is_sharded() && c.is_sharded()) {
      same = first->sharded()->sharding->device_set() == c.sharded()->sharding->device_set();
    } else if (!first->is_sharded() && !c.is_sharded()) {
      same = first->committed_device() == c.committed_device();
    } else {
      // One device against a sharding: the same only for a sharding of that one device.
      const ConcreteArray& one = first->is_sharded() ? c : *first;
      const ConcreteArray& many = first->is_sharded() ? *first : c;
      const auto& set = many.sharded()->sharding->device_set();
      same = set.size() == 1 && set[0] == one.committed_device();
    }
    if (same) continue;
    const bool any_sharded = first->is_sharded() || c.is_sharded();
    ThrowOpError<ValueError>(op, "received arrays committed to different devices: argument ", first_index, " (",
                             args[first_index].aval().str(), ") is on ", PlaceOf(*first), " and argument ", i, " (",
                             args[i].aval().str(), ") is on ", PlaceOf(c),
                             any_sharded ? "; put them on one mesh with jx::device_put(x, NamedSharding(mesh, spec))"
                                         : "; move them to one device with jx::device_put");
  }
  return first != nullptr ? first->committed_device() : nullptr;
}

bool Array::is_deleted() const {
  const ConcreteArray* c = impl_ ? impl_->ConcreteValue() : nullptr;
  return c != nullptr && IsDeleted(*c);
}

void Array::ThrowItemError() const {
  throw ValueError(StrCat("[item] can only convert an array of size 1 to a C++ scalar, got ",
                                aval().str()));
}

namespace {
template <typename T, typename S>
T ConvertOne(S s) {
  if constexpr (std::is_same_v<S, float16_t> || std::is_same_v<S, bfloat16_t>) {
    return ConvertOne<T>(static_cast<float>(s));
  } else if constexpr (std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>) {
    return T(static_cast<float>(s));
  } else if constexpr (std::is_same_v<T, bool>) {
    return s != S{0};
  } else {
    return static_cast<T>(s);
  }
}

template <typename T, typename S>
void ConvertTyped(const void* data, int64_t n, T* out) {
  const S* in = static_cast<const S*>(data);
  for (int64_t i = 0; i < n; ++i) out[i] = ConvertOne<T>(in[i]);
}
}  // namespace

template <typename T>
void ConvertElements(DType src, const void* data, int64_t n, T* out) {
  switch (src) {
    case DType::kBool: return ConvertTyped<T, bool>(data, n, out);
    case DType::kInt8: return ConvertTyped<T, int8_t>(data, n, out);
    case DType::kInt16: return ConvertTyped<T, int16_t>(data, n, out);
    case DType::kInt32: return ConvertTyped<T, int32_t>(data, n, out);
    case DType::kInt64: return ConvertTyped<T, int64_t>(data, n, out);
    case DType::kUInt8: return ConvertTyped<T, uint8_t>(data, n, out);
    case DType::kUInt16: return ConvertTyped<T, uint16_t>(data, n, out);
    case DType::kUInt32: return ConvertTyped<T, uint32_t>(data, n, out);
    case DType::kUInt64: return ConvertTyped<T, uint64_t>(data, n, out);
    case DType::kFloat16: return ConvertTyped<T, float16_t>(data, n, out);
    case DType::kBFloat16: return ConvertTyped<T, bfloat16_t>(data, n, out);
    case DType::kFloat32: return ConvertTyped<T, float>(data, n, out);
    case DType::kFloat64: return ConvertTyped<T, double>(data, n, out);
  }
}

template void ConvertElements<bool>(DType, const void*, int64_t, bool*);
template void ConvertElements<int8_t>(DType, const void*, int64_t, int8_t*);
template void ConvertElements<int16_t>(DType, const void*, int64_t, int16_t*);
template void ConvertElements<int32_t>(DType, const void*, int64_t, int32_t*);
template void ConvertElements<int64_t>(DType, const void*, int64_t, int64_t*);
template void ConvertElements<long long>(DType, const void*, int64_t, long long*);
template void ConvertElements<uint8_t>(DType, const void*, int64_t, uint8_t*);
template void ConvertElements<uint16_t>(DType, const void*, int64_t, uint16_t*);
template void ConvertElements<uint32_t>(DType, const void*, int64_t, uint32_t*);
template void ConvertElements<uint64_t>(DType, const void*, int64_t, uint64_t*);
template void ConvertElements<unsigned long long>(DType, const void*, int64_t, unsigned long long*);
template void ConvertElements<float16_t>(DType, const void*, int64_t, float16_t*);
template void ConvertElements<bfloat16_t>(DType, const void*, int64_t, bfloat16_t*);
template void ConvertElements<float>(DType, const void*, int64_t, float*);
template void ConvertElements<double>(DType, const void*, int64_t, double*);

std::ostream& operator<<(std::ostream& os, const Array& a) { return os << a.str(); }

}  // namespace jx
