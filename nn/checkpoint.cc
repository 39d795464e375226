#include "jx/nn/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "jx/core/errors.h"
#include "jx/core/shape.h"
#include "jx/core/str_util.h"
#include "jx/nn/safetensors.h"

namespace jx {
namespace {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; a big-endian host needs byte swaps here");

[[noreturn]] void ThrowIo(std::string_view op, const std::string& path, std::string_view what, int err) {
  throw RuntimeError(StrCat("[", op, "] ", path, ": ", what, ": ", std::strerror(err)));
}

// Writes all of [data, data + n) to fd.
bool WriteAll(int fd, const char* data, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, data, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// Removes the temporary file unless Release()d (after the rename).
class TempFile {
 public:
  TempFile(const std::string& target) {
    const std::filesystem::path p(target);
    path_ = (p.parent_path() / ("." + p.filename().string() + ".tmp.XXXXXX")).string();
    fd_ = ::mkstemp(path_.data());
    if (fd_ < 0) ThrowIo("jx::save", target, StrCat("cannot create a temporary file ", path_), errno);
  }
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!released_) ::unlink(path_.c_str());
  }
  int fd() const { return fd_; }
  const std::string& path() const { return path_; }
  int Close() {
    const int rc = ::close(fd_);
    fd_ = -1;
    return rc;
  }
  void Release() { released_ = true; }

 private:
  std::string path_;
  int fd_ = -1;
  bool released_ = false;
};

struct OpenFile {
  std::ifstream in;
  safetensors::Header header;
  uint64_t data_start = 0;
};

OpenFile Open(const std::string& path, std::string_view op) {
  OpenFile f;
  f.in.open(path, std::ios::binary);
  if (!f.in) ThrowIo(op, path, "cannot open", errno);
  f.in.seekg(0, std::ios::end);
  const uint64_t size = static_cast<uint64_t>(f.in.tellg());
  f.in.seekg(0);
  unsigned char len_bytes[8];
  if (size < 8 || !f.in.read(reinterpret_cast<char*>(len_bytes), 8)) {
    throw ValueError(StrCat("[", op, "] ", path, ": not a safetensors file (", size, " bytes)"));
  }
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | len_bytes[i];
  if (n > size - 8 || n > (uint64_t{100} << 20)) {
    throw ValueError(StrCat("[", op, "] ", path, ": not a safetensors file (header length ", n, " in a file of ",
                            size, " bytes)"));
  }
  std::string json(n, '\0');
  if (!f.in.read(json.data(), static_cast<std::streamsize>(n))) ThrowIo(op, path, "read failed", errno);
  f.data_start = 8 + n;
  f.header = safetensors::ParseHeader(json, size - f.data_start, path);
  return f;
}

Array ReadTensor(OpenFile& f, const safetensors::TensorInfo& t, const std::string& path, std::string_view op) {
  Array out = Array::Empty(t.shape, t.dtype);
  f.in.seekg(static_cast<std::streamoff>(f.data_start + t.begin));
  if (t.end > t.begin &&
      !f.in.read(static_cast<char*>(out.mutable_data()), static_cast<std::streamsize>(t.end - t.begin))) {
    ThrowIo(op, path, StrCat("reading tensor \"", t.name, "\" failed"), errno);
  }
  return out;
}

std::string TypeStr(DType d, const Shape& s) { return StrCat(dtype_name(d), ShapeToString(s)); }

}  // namespace

std::vector<std::string> checkpoint_keys(const tree::TreeDef& def) {
  std::vector<std::string> keys = def.KeyPaths();
  for (std::string& k : keys) {
    if (!k.empty() && k[0] == '.') k.erase(0, 1);
  }
  return keys;
}

namespace checkpoint_internal {

void SaveLeaves(const std::string& path, const tree::TreeDef& def, absl::Span<const Array> leaves,
                const std::map<std::string, std::string>& metadata) {
  const std::vector<std::string> keys = checkpoint_keys(def);
  safetensors::Header header;
  header.metadata = metadata;
  std::vector<const char*> data;
  std::set<std::string> seen;
  uint64_t offset = 0;
  for (size_t i = 0; i < leaves.size(); ++i) {
    const Array& x = leaves[i];
    if (!x.is_concrete()) {
      throw TypeError(StrCat("[jx::save] leaf \"", keys[i], "\" is a tracer: save concrete values outside jit/grad"));
    }
    if (!seen.insert(keys[i]).second) {
      throw ValueError(StrCat("[jx::save] two leaves have the key \"", keys[i], "\""));
    }
    data.push_back(static_cast<const char*>(x.data()));  // throws now for a donated array
    const uint64_t n = static_cast<uint64_t>(x.nbytes());
    header.tensors.push_back({keys[i], x.dtype(), x.shape(), offset, offset + n});
    offset += n;
  }
  if (metadata.count("__metadata__") != 0) throw ValueError("[jx::save] metadata may not use the key __metadata__");
  const std::string json = safetensors::SerializeHeader(header);
  unsigned char len_bytes[8];
  for (int i = 0; i < 8; ++i) len_bytes[i] = static_cast<unsigned char>(static_cast<uint64_t>(json.size()) >> (8 * i));

  TempFile tmp(path);
  bool ok = WriteAll(tmp.fd(), reinterpret_cast<const char*>(len_bytes), 8) &&
            WriteAll(tmp.fd(), json.data(), json.size());
  for (size_t i = 0; ok && i < leaves.size(); ++i) {
    ok = WriteAll(tmp.fd(), data[i], static_cast<size_t>(header.tensors[i].end - header.tensors[i].begin));
  }
  if (!ok) ThrowIo("jx::save", path, StrCat("writing ", tmp.path(), " failed"), errno);
  if (::fsync(tmp.fd()) != 0) ThrowIo("jx::save", path, StrCat("fsync of ", tmp.path(), " failed"), errno);
  if (tmp.Close() != 0) ThrowIo("jx::save", path, StrCat("closing ", tmp.path(), " failed"), errno);
  if (std::rename(tmp.path().c_str(), path.c_str()) != 0) {
    ThrowIo("jx::save", path, StrCat("renaming ", tmp.path(), " failed"), errno);
  }
  tmp.Release();
  // Make the rename itself durable.
  const std::string dir = std::filesystem::path(path).parent_path().string();
  const int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

std::vector<Array> LoadLeaves(const std::string& path, const tree::TreeDef& def, absl::Span<const Array> like) {
  OpenFile f = Open(path, "jx::load");
  std::map<std::string_view, const safetensors::TensorInfo*> by_name;
  for (const safetensors::TensorInfo& t : f.header.tensors) by_name[t.name] = &t;
  const std::vector<std::string> keys = checkpoint_keys(def);
  const std::string where = StrCat("[jx::load] ", path, ": ");
  // First pass: check the whole structure before reading any data.
  for (size_t i = 0; i < like.size(); ++i) {
    auto it = by_name.find(keys[i]);
    if (it == by_name.end()) {
      throw ValueError(StrCat(where, "key \"", keys[i], "\" (", TypeStr(like[i].dtype(), like[i].shape()),
                              ") is missing from the file, which has ", f.header.tensors.size(), " tensors"));
    }
    const safetensors::TensorInfo& t = *it->second;
    if (t.shape != like[i].shape()) {
      throw ShapeError(StrCat(where, "key \"", keys[i], "\" has shape ", ShapeToString(t.shape),
                              " in the file but ", ShapeToString(like[i].shape()), " in the target"));
    }
    if (t.dtype != like[i].dtype()) {
      throw TypeError(StrCat(where, "key \"", keys[i], "\" has dtype ", dtype_name(t.dtype), " in the file but ",
                             dtype_name(like[i].dtype()), " in the target"));
    }
  }
  if (f.header.tensors.size() != like.size()) {
    const std::set<std::string> wanted(keys.begin(), keys.end());
    for (const safetensors::TensorInfo& t : f.header.tensors) {
      if (wanted.count(t.name) == 0) {
        throw ValueError(StrCat(where, "key \"", t.name, "\" (", TypeStr(t.dtype, t.shape),
                                ") is in the file but not in the target ", def.ToString()));
      }
    }
  }
  std::vector<Array> out;
  out.reserve(like.size());
  for (size_t i = 0; i < like.size(); ++i) out.push_back(ReadTensor(f, *by_name.at(keys[i]), path, "jx::load"));
  return out;
}

}  // namespace checkpoint_internal

std::map<std::string, Array> load_safetensors(const std::string& path) {
  OpenFile f = Open(path, "load_safetensors");
  std::map<std::string, Array> out;
  for (const safetensors::TensorInfo& t : f.header.tensors) out.emplace(t.name, ReadTensor(f, t, path, "load_safetensors"));
  return out;
}

std::map<std::string, std::string> load_safetensors_metadata(const std::string& path) {
  return Open(path, "load_safetensors_metadata").header.metadata;
}

}  // namespace jx
