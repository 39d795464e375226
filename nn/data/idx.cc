#include "jx/nn/data/idx.h"

#include <zlib.h>

#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

#include "jx/core/dtype.h"
#include "jx/core/errors.h"
#include "jx/core/str_util.h"

namespace jx::data {
namespace {

[[noreturn]] void Fail(std::string_view source, std::string_view message) {
  throw ValueError(StrCat("[read_idx] ", source, ": ", message));
}

std::optional<DType> IdxDType(uint8_t code) {
  switch (code) {
    case 0x08: return uint8;
    case 0x09: return int8;
    case 0x0B: return int16;
    case 0x0C: return int32;
    case 0x0D: return float32;
    case 0x0E: return float64;
    default: return std::nullopt;
  }
}

uint32_t LoadBigEndian32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

// Reverses the bytes of each `item_size`-byte element in place (big-endian file -> host order).
void SwapElements(unsigned char* data, int64_t count, int64_t item_size) {
  for (int64_t i = 0; i < count; ++i) {
    unsigned char* e = data + i * item_size;
    for (int64_t a = 0, b = item_size - 1; a < b; ++a, --b) std::swap(e[a], e[b]);
  }
}

// The whole file, inflated when it is gzip (gzread passes plain files through unchanged).
std::string ReadMaybeGzipped(const std::string& path) {
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) {
    Fail(path, StrCat("cannot open: ", errno != 0 ? std::strerror(errno) : "out of memory"));
  }
  gzbuffer(file, 1 << 20);
  std::string out;
  std::vector<char> chunk(1 << 20);
  while (true) {
    const int n = gzread(file, chunk.data(), static_cast<unsigned>(chunk.size()));
    if (n < 0) {
      int code = 0;
      const std::string message = gzerror(file, &code);
      gzclose(file);
      Fail(path, StrCat("read failed (", message, ")"));
    }
    if (n == 0) break;
    out.append(chunk.data(), static_cast<size_t>(n));
  }
  gzclose(file);
  return out;
}

}  // namespace

Array parse_idx(std::string_view bytes, std::string_view source) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  if (bytes.size() < 4) Fail(source, StrCat("too short for an IDX header (", bytes.size(), " bytes)"));
  if (p[0] != 0 || p[1] != 0) {
    Fail(source, StrCat("not an IDX file: the magic number starts with ", int{p[0]}, ", ", int{p[1]},
                        ", not 0, 0"));
  }
  const std::optional<DType> dtype = IdxDType(p[2]);
  if (!dtype) {
    Fail(source, StrCat("unknown IDX element type 0x", absl::Hex(p[2]),
                        " (known: 0x08 uint8, 0x09 int8, 0x0B int16, 0x0C int32, 0x0D float32, 0x0E float64)"));
  }
  const int64_t ndim = p[3];
  const size_t header = 4 + 4 * static_cast<size_t>(ndim);
  if (bytes.size() < header) Fail(source, StrCat("truncated header: ", ndim, " dimensions need ", header, " bytes"));
  Shape shape;
  int64_t count = 1;
  for (int64_t i = 0; i < ndim; ++i) {
    const int64_t d = LoadBigEndian32(p + 4 + 4 * i);
    shape.push_back(d);
    count *= d;
  }
  const int64_t item = ItemSize(*dtype);
  const uint64_t expected = header + static_cast<uint64_t>(count) * static_cast<uint64_t>(item);
  if (bytes.size() != expected) {
    Fail(source, StrCat("shape ", ShapeToString(shape), " of ", dtype_name(*dtype), " needs ", expected,
                        " bytes, the file has ", bytes.size()));
  }
  Array out = Array::Empty(shape, *dtype);
  auto* data = static_cast<unsigned char*>(out.mutable_data());
  if (count > 0) std::memcpy(data, p + header, static_cast<size_t>(count * item));
  if constexpr (std::endian::native == std::endian::little) {
    if (item > 1) SwapElements(data, count, item);
  }
  return out;
}

Array read_idx(const std::string& path) { return parse_idx(ReadMaybeGzipped(path), path); }

}  // namespace jx::data
