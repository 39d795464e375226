// IDX files (the format of MNIST and Fashion-MNIST, yann.lecun.com/exdb/mnist): a 4-byte magic
// (two zero bytes, a type code, the number of dimensions), the dimensions as big-endian
// uint32s, then the elements in row-major order, big-endian. read_idx returns a jx::Array with
// the file's dtype and shape (0x08 uint8, 0x09 int8, 0x0B int16, 0x0C int32, 0x0D float32,
// 0x0E float64), reading gzip-compressed files (the way the datasets are shipped) through zlib
// and plain files as they are.
//
//   jx::Array images = jx::data::read_idx("train-images-idx3-ubyte.gz");  // uint8[60000,28,28]
#pragma once

#include <string>
#include <string_view>

#include "jx/core/array.h"

namespace jx::data {

// Reads an IDX file, gzip-compressed (detected by its magic bytes 1f 8b) or plain. Throws
// jx::ValueError naming the path when the file cannot be read or is not a well-formed IDX file.
Array read_idx(const std::string& path);

// Decodes IDX bytes already in memory; `source` names them in errors.
Array parse_idx(std::string_view bytes, std::string_view source = "<memory>");

}  // namespace jx::data
