// The safetensors file format (github.com/huggingface/safetensors), as checkpoint.h writes and
// reads it: an 8-byte little-endian header length N, N bytes of JSON, then the tensor bytes.
// The JSON maps each tensor name to {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin,
// end]} (offsets into the bytes after the header, little-endian row-major data) and may hold a
// "__metadata__" object of string values. The header is padded with spaces to a multiple of 8
// bytes, as the reference implementation does, so tensor data stays aligned.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "jx/core/dtype.h"
#include "jx/core/shape.h"

namespace jx::safetensors {

struct TensorInfo {
  std::string name;
  DType dtype = float32;
  Shape shape;
  uint64_t begin = 0;  // data_offsets, relative to the end of the header
  uint64_t end = 0;
};

struct Header {
  std::vector<TensorInfo> tensors;  // in the order the JSON lists them
  std::map<std::string, std::string> metadata;
};

// "F32", "BF16", "BOOL", ... (the format's names; every jx dtype has one).
std::string_view DTypeCode(DType d);
std::optional<DType> DTypeFromCode(std::string_view code);

// The JSON text, padded with spaces to a multiple of 8 bytes.
std::string SerializeHeader(const Header& header);

// Parses and validates the JSON (names unique, known dtypes, offsets consistent with dtype and
// shape and within data_size bytes). Throws jx::ValueError naming `source`.
Header ParseHeader(std::string_view json, uint64_t data_size, std::string_view source);

}  // namespace jx::safetensors
