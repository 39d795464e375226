#include "jx/nn/data/data.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "jx/jx.h"
#include "tests/nn/temp_dir.h"

namespace jx::data::data_test {
namespace {

namespace fs = std::filesystem;
namespace jnp = jx::numpy;

using jx::testing::TempDir;

void AppendBigEndian(std::string* out, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

// An IDX file's bytes, written by hand: magic, big-endian dims, big-endian elements.
std::string IdxBytes(uint8_t type, const std::vector<uint32_t>& dims, const std::vector<uint64_t>& elements,
                     int item_bytes) {
  std::string out = {0, 0, static_cast<char>(type), static_cast<char>(dims.size())};
  for (uint32_t d : dims) AppendBigEndian(&out, d, 4);
  for (uint64_t e : elements) AppendBigEndian(&out, e, item_bytes);
  return out;
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// Compresses path into path.gz with the system gzip (independent of the reader's zlib use).
std::string Gzip(const std::string& path) {
  const std::string cmd = "gzip -kf '" + path + "'";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  return path + ".gz";
}

TEST(IdxTest, ReadsPlainUint8WithShape) {
  TempDir dir;
  WriteFile(dir / "a-idx2-ubyte", IdxBytes(0x08, {2, 3}, {0, 1, 2, 250, 254, 255}, 1));
  const Array a = read_idx(dir / "a-idx2-ubyte");
  EXPECT_EQ(a.dtype(), uint8);
  EXPECT_EQ(a.shape(), (Shape{2, 3}));
  EXPECT_EQ(a.to_vector<int>(), (std::vector<int>{0, 1, 2, 250, 254, 255}));
}

TEST(IdxTest, ReadsGzippedBigEndianTypes) {
  TempDir dir;
  // int32 -2 and 0x01020304; the file is big-endian.
  WriteFile(dir / "i32", IdxBytes(0x0C, {2}, {0xFFFFFFFEu, 0x01020304u}, 4));
  const Array i = read_idx(Gzip(dir / "i32"));
  EXPECT_EQ(i.dtype(), int32);
  EXPECT_EQ(i.to_vector<int32_t>(), (std::vector<int32_t>{-2, 0x01020304}));

  float f[2] = {1.5f, -0.25f};
  uint32_t fbits[2];
  std::memcpy(fbits, f, sizeof f);
  WriteFile(dir / "f32", IdxBytes(0x0D, {1, 2, 1}, {fbits[0], fbits[1]}, 4));
  const Array fa = read_idx(Gzip(dir / "f32"));
  EXPECT_EQ(fa.dtype(), float32);
  EXPECT_EQ(fa.shape(), (Shape{1, 2, 1}));
  EXPECT_EQ(fa.to_vector<float>(), (std::vector<float>{1.5f, -0.25f}));

  double d = -3.125;
  uint64_t dbits;
  std::memcpy(&dbits, &d, sizeof d);
  WriteFile(dir / "f64", IdxBytes(0x0E, {1}, {dbits}, 8));
  EXPECT_EQ(read_idx(Gzip(dir / "f64")).to_vector<double>(), (std::vector<double>{-3.125}));

  WriteFile(dir / "i16", IdxBytes(0x0B, {3}, {0xFFFF, 0x0102, 7}, 2));
  const Array s = read_idx(dir / "i16");
  EXPECT_EQ(s.dtype(), int16);
  EXPECT_EQ(s.to_vector<int>(), (std::vector<int>{-1, 258, 7}));

  WriteFile(dir / "i8", IdxBytes(0x09, {2}, {0x80, 0x7F}, 1));
  EXPECT_EQ(read_idx(Gzip(dir / "i8")).dtype(), int8);
  EXPECT_EQ(read_idx(dir / "i8.gz").to_vector<int>(), (std::vector<int>{-128, 127}));
}

TEST(IdxTest, ZeroSizedDimension) {
  TempDir dir;
  WriteFile(dir / "empty", IdxBytes(0x08, {0, 28}, {}, 1));
  EXPECT_EQ(read_idx(dir / "empty").shape(), (Shape{0, 28}));
}

void ExpectIdxError(const std::string& path, const std::string& needle) {
  try {
    read_idx(path);
    ADD_FAILURE() << "no error for " << path;
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(IdxTest, ErrorsNameThePathAndTheProblem) {
  TempDir dir;
  ExpectIdxError(dir / "missing.gz", "cannot open");
  WriteFile(dir / "magic", "PK\x03\x04 not idx");
  ExpectIdxError(dir / "magic", "not an IDX file");
  WriteFile(dir / "type", IdxBytes(0x0A, {1}, {0}, 1));
  ExpectIdxError(dir / "type", "unknown IDX element type 0xa");
  std::string truncated = IdxBytes(0x0C, {4}, {1, 2, 3, 4}, 4);
  truncated.resize(truncated.size() - 3);
  WriteFile(dir / "short", truncated);
  ExpectIdxError(Gzip(dir / "short"), "needs 24 bytes, the file has 21");
}

// A tiny Fashion-MNIST layout: n images of 28x28 and n labels.
void WriteFakeFashionMnist(const TempDir& dir, const std::string& prefix, uint32_t n, bool gzip) {
  std::vector<uint64_t> pixels(n * 28 * 28), labels(n);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = i % 251;
  for (uint32_t i = 0; i < n; ++i) labels[i] = i % 10;
  const std::string images = dir / (prefix + "-images-idx3-ubyte");
  const std::string label_file = dir / (prefix + "-labels-idx1-ubyte");
  WriteFile(images, IdxBytes(0x08, {n, 28, 28}, pixels, 1));
  WriteFile(label_file, IdxBytes(0x08, {n}, labels, 1));
  if (gzip) {
    Gzip(images);
    Gzip(label_file);
    fs::remove(images);
    fs::remove(label_file);
  }
}

TEST(FashionMnistTest, ReadsFromGivenDirsGzippedOrPlain) {
  TempDir dir;
  WriteFakeFashionMnist(dir, "train", 12, /*gzip=*/true);
  WriteFakeFashionMnist(dir, "t10k", 5, /*gzip=*/false);
  const FashionMnist train = load_fashion_mnist("train", {dir.path().string()});
  EXPECT_EQ(train.images.shape(), (Shape{12, 28, 28}));
  EXPECT_EQ(train.labels.to_vector<int>()[11], 1);
  const FashionMnist test = load_fashion_mnist("test", {"/nonexistent-jx-dir", dir.path().string()});
  EXPECT_EQ(test.labels.shape(), (Shape{5}));
  EXPECT_EQ(test.images.item<int>({4, 27, 27}), int((4 * 784 + 783) % 251));
}

TEST(FashionMnistTest, EnvironmentOverrideIsSearchedFirst) {
  TempDir dir;
  WriteFakeFashionMnist(dir, "t10k", 3, /*gzip=*/true);
  ::setenv("JX_FASHION_MNIST_DIR", dir.path().c_str(), 1);
  const std::vector<std::string> dirs = fashion_mnist_dirs();
  const FashionMnist test = load_fashion_mnist("test");
  ::unsetenv("JX_FASHION_MNIST_DIR");
  ASSERT_EQ(dirs.size(), 2u);
  EXPECT_EQ(dirs[0], dir.path().string());
  EXPECT_EQ(dirs[1], "/usr/share/datasets/fashion-mnist");
  EXPECT_EQ(test.images.shape()[0], 3);
}

TEST(FashionMnistTest, MissingFilesNameEveryPathTriedAndThePackage) {
  TempDir dir;
  try {
    load_fashion_mnist("train", {dir.path().string()});
    FAIL() << "no error";
  } catch (const DatasetNotFoundError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(dir / "train-images-idx3-ubyte.gz"), std::string::npos) << msg;
    EXPECT_NE(msg.find(dir / "train-images-idx3-ubyte\n"), std::string::npos) << msg;
    EXPECT_NE(msg.find("dataset-fashion-mnist"), std::string::npos) << msg;
    EXPECT_NE(msg.find("JX_FASHION_MNIST_DIR"), std::string::npos) << msg;
  }
  EXPECT_THROW(load_fashion_mnist("validation"), ValueError);
}

TEST(FashionMnistTest, RealTestSplitWhenInstalled) {
  FashionMnist test;
  try {
    test = load_fashion_mnist("test");
  } catch (const DatasetNotFoundError& e) {
    GTEST_SKIP() << e.what();
  }
  EXPECT_EQ(test.images.shape(), (Shape{10000, 28, 28}));
  EXPECT_EQ(test.images.dtype(), uint8);
  // The test split has exactly 1,000 examples of each class.
  const std::vector<int> labels = test.labels.to_vector<int>();
  std::vector<int> counts(10);
  for (int l : labels) counts.at(l)++;
  EXPECT_EQ(counts, std::vector<int>(10, 1000));
}

// --- DataLoader --------------------------------------------------------------------------

// x[i] = [i, 100 + i] (int32[n, 2]), y[i] = i (int32[n]).
std::tuple<Array, Array> Dataset(int n) {
  std::vector<int32_t> x, y;
  for (int i = 0; i < n; ++i) {
    x.push_back(i);
    x.push_back(100 + i);
    y.push_back(i);
  }
  return {jnp::array(x, {n, 2}), jnp::array(y)};
}

// The labels of each batch of an epoch, checking each x row against its label.
template <typename E>
std::vector<std::vector<int>> Collect(E&& epoch) {
  std::vector<std::vector<int>> out;
  for (const auto& [x, y] : epoch) {
    const std::vector<int> ys = y.template to_vector<int>();
    const std::vector<int> xs = x.template to_vector<int>();
    EXPECT_EQ(x.shape(), (Shape{int64_t(ys.size()), 2}));
    for (size_t r = 0; r < ys.size(); ++r) {
      EXPECT_EQ(xs[2 * r], ys[r]);
      EXPECT_EQ(xs[2 * r + 1], 100 + ys[r]);
    }
    out.push_back(ys);
  }
  return out;
}

TEST(DataLoaderTest, InOrderWithShortLastBatch) {
  DataLoader loader(Dataset(10), {.batch_size = 4});
  EXPECT_EQ(loader.num_batches(), 3);
  EXPECT_EQ(loader.num_examples(), 10);
  EXPECT_EQ(Collect(loader.epoch()), (std::vector<std::vector<int>>{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9}}));
}

TEST(DataLoaderTest, DropLastDropsTheShortBatch) {
  DataLoader loader(Dataset(10), {.batch_size = 4, .drop_last = true});
  EXPECT_EQ(loader.num_batches(), 2);
  auto batches = Collect(loader.epoch(jx::random::key(3)));
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[0].size(), 4u);
  EXPECT_EQ(batches[1].size(), 4u);
}

TEST(DataLoaderTest, ShufflingByKeyIsDeterministicAndCoversEveryExampleOnce) {
  for (int prefetch : {0, 1, 3}) {
    DataLoader loader(Dataset(103), {.batch_size = 8, .prefetch = prefetch});
    const Array key = jx::random::key(42);
    const auto a = Collect(loader.epoch(key));
    const auto b = Collect(loader.epoch(key));
    const auto c = Collect(loader.epoch(jx::random::fold_in(key, 1)));
    EXPECT_EQ(a, b) << "prefetch " << prefetch;
    EXPECT_NE(a, c) << "prefetch " << prefetch;
    for (const auto& epoch : {a, c}) {
      std::vector<int> all;
      for (const auto& batch : epoch) all.insert(all.end(), batch.begin(), batch.end());
      std::vector<int> sorted = all;
      std::sort(sorted.begin(), sorted.end());
      std::vector<int> expected(103);
      std::iota(expected.begin(), expected.end(), 0);
      EXPECT_EQ(sorted, expected);
      EXPECT_NE(all, expected);  // shuffled
    }
    // The order is jax.random.permutation's for the key.
    const std::vector<int> perm = jx::random::permutation(key, 103).to_vector<int>();
    EXPECT_EQ(std::vector<int>(perm.begin(), perm.begin() + 8), a[0]);
  }
}

TEST(DataLoaderTest, StructDatasetAndEarlyExit) {
  std::map<std::string, Array> data{{"image", jnp::arange(60).reshape({20, 3})}, {"label", jnp::arange(20)}};
  DataLoader loader(data, {.batch_size = 3, .prefetch = 2});
  int seen = 0;
  for (const std::map<std::string, Array>& batch : loader.epoch(jx::random::key(0))) {
    EXPECT_EQ(batch.at("image").shape(), (Shape{3, 3}));
    if (++seen == 2) break;  // the producer thread is stopped and joined
  }
  EXPECT_EQ(seen, 2);
}

TEST(DataLoaderTest, RejectsBadDatasetsAndOptions) {
  auto [x, y] = Dataset(10);
  try {
    DataLoader(std::tuple{x, y[jx::slice(0, 9)]}, {.batch_size = 2});
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("dataset[1] has 9 examples"), std::string::npos) << e.what();
  }
  EXPECT_THROW(DataLoader(std::tuple{x, y}, {.batch_size = 0}), ValueError);
  EXPECT_THROW(DataLoader(std::tuple{x, Array(1.f)}, {.batch_size = 2}), ValueError);
}

}  // namespace
}  // namespace jx::data::data_test
