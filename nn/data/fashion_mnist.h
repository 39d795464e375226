// Fashion-MNIST (Xiao, Rasul & Vollgraf 2017): 70,000 28x28 grayscale images of clothing in 10
// classes, 60,000 for training and 10,000 for testing, read from the IDX files where Debian's
// `dataset-fashion-mnist` package installs them (/usr/share/datasets/fashion-mnist), or from
// the directory named by JX_FASHION_MNIST_DIR, which is searched first. Like
// tfds.load("fashion_mnist"), the arrays are the raw uint8 pixels and labels.
//
//   jx::data::FashionMnist train = jx::data::load_fashion_mnist("train");
//   train.images;  // uint8[60000,28,28]
//   train.labels;  // uint8[60000], class indices into jx::data::kFashionMnistClasses
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "jx/core/array.h"
#include "jx/core/errors.h"

namespace jx::data {

// A dataset's files are not where the loader looked; the message lists the paths tried and
// the package that installs them.
class DatasetNotFoundError : public Error {
  using Error::Error;
};

struct FashionMnist {
  Array images;  // uint8[N, 28, 28]
  Array labels;  // uint8[N]
};

inline constexpr std::array<std::string_view, 10> kFashionMnistClasses = {
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"};

// split is "train" (60,000 examples) or "test" (10,000). Each file is looked up as
// <dir>/<name>.gz then <dir>/<name> in every directory of fashion_mnist_dirs(); throws
// DatasetNotFoundError when none exists, jx::ValueError for another split name or a malformed
// file.
FashionMnist load_fashion_mnist(std::string_view split);
// The same, searching only `dirs`, in order.
FashionMnist load_fashion_mnist(std::string_view split, const std::vector<std::string>& dirs);

// The directories searched, in order: $JX_FASHION_MNIST_DIR when set, then
// /usr/share/datasets/fashion-mnist.
std::vector<std::string> fashion_mnist_dirs();

}  // namespace jx::data
