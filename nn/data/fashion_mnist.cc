#include "jx/nn/data/fashion_mnist.h"

#include <cstdlib>
#include <filesystem>

#include "jx/core/shape.h"
#include "jx/core/str_util.h"
#include "jx/nn/data/idx.h"

namespace jx::data {
namespace {

constexpr std::string_view kDebianDir = "/usr/share/datasets/fashion-mnist";

// The first existing file among <dir>/<name>.gz and <dir>/<name> over the search directories.
std::string FindFile(const std::string& name, const std::vector<std::string>& dirs) {
  std::vector<std::string> tried;
  for (const std::string& dir : dirs) {
    for (const char* suffix : {".gz", ""}) {
      const std::filesystem::path path = std::filesystem::path(dir) / (name + suffix);
      std::error_code ec;
      if (std::filesystem::is_regular_file(path, ec)) return path.string();
      tried.push_back(path.string());
    }
  }
  std::string message = StrCat("[load_fashion_mnist] ", name, " not found; tried:");
  for (const std::string& path : tried) StrAppend(&message, "\n  ", path);
  StrAppend(&message,
            "\nInstall Debian's dataset-fashion-mnist package (sudo apt-get install dataset-fashion-mnist), or "
            "set JX_FASHION_MNIST_DIR to a directory holding the four *-ubyte(.gz) files.");
  throw DatasetNotFoundError(message);
}

}  // namespace

std::vector<std::string> fashion_mnist_dirs() {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("JX_FASHION_MNIST_DIR"); env != nullptr && *env != '\0') dirs.emplace_back(env);
  dirs.emplace_back(kDebianDir);
  return dirs;
}

FashionMnist load_fashion_mnist(std::string_view split) { return load_fashion_mnist(split, fashion_mnist_dirs()); }

FashionMnist load_fashion_mnist(std::string_view split, const std::vector<std::string>& dirs) {
  std::string prefix;
  if (split == "train") {
    prefix = "train";
  } else if (split == "test") {
    prefix = "t10k";
  } else {
    throw ValueError(StrCat("[load_fashion_mnist] unknown split '", split, "': expected \"train\" or \"test\""));
  }
  // Both paths are resolved before reading, so a missing file is reported before the
  // slow decompression of the other.
  const std::string images_path = FindFile(prefix + "-images-idx3-ubyte", dirs);
  const std::string labels_path = FindFile(prefix + "-labels-idx1-ubyte", dirs);
  FashionMnist out{read_idx(images_path), read_idx(labels_path)};
  const Shape& is = out.images.shape();
  const Shape& ls = out.labels.shape();
  if (out.images.dtype() != uint8 || is.size() != 3 || is[1] != 28 || is[2] != 28) {
    throw ValueError(StrCat("[load_fashion_mnist] ", images_path, ": expected uint8[N,28,28] images, got ",
                            dtype_name(out.images.dtype()), ShapeToString(is)));
  }
  if (out.labels.dtype() != uint8 || ls.size() != 1 || ls[0] != is[0]) {
    throw ValueError(StrCat("[load_fashion_mnist] ", labels_path, ": expected uint8[", is[0], "] labels, got ",
                            dtype_name(out.labels.dtype()), ShapeToString(ls)));
  }
  return out;
}

}  // namespace jx::data
