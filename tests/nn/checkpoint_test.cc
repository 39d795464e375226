#include "jx/nn/checkpoint.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "jx/jx.h"
#include "tests/nn/temp_dir.h"

namespace jx::checkpoint_test {
namespace {

namespace fs = std::filesystem;
namespace jnp = jx::numpy;

using jx::testing::TempDir;

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Layer {
  BOOST_HANA_DEFINE_STRUCT(Layer, (Array, weight), (std::optional<Array>, bias));
};
struct Model {
  BOOST_HANA_DEFINE_STRUCT(Model, (std::vector<Layer>, layers), (Static<std::string>, activation), (Array, scale));
};

Model MakeModel(int64_t hidden, bool bias = true) {
  const Array keys = random::split(random::key(1), 2);
  Model m;
  m.layers.push_back({random::normal(keys[0], {4, hidden}), bias ? std::optional<Array>(jnp::zeros({hidden})) : std::nullopt});
  m.layers.push_back({random::normal(keys[1], {hidden, 2}), jnp::ones({2})});
  m.activation = Static<std::string>{"relu"};
  m.scale = Array::Scalar(0.5, bfloat16);
  return m;
}

bool SameBits(const Array& a, const Array& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.nbytes()) == 0;
}

TEST(CheckpointTest, RoundTripIsBitExactForEveryDtype) {
  TempDir dir;
  std::map<std::string, Array> tree;
  std::mt19937 rng(7);
  for (DType d : {bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, bfloat16, float32,
                  float64}) {
    const Shape shape{3, 5};
    std::vector<unsigned char> bytes(15 * ItemSize(d));
    for (auto& b : bytes) b = static_cast<unsigned char>(rng());
    if (d == bool_) {
      for (auto& b : bytes) b &= 1;
    }
    // Random bits give NaNs with payloads, infinities and subnormals too: all must survive.
    tree[std::string(dtype_name(d))] = Array::FromData(bytes.data(), shape, d);
  }
  tree["scalar"] = Array::Scalar(3.0, float64);
  tree["empty"] = jnp::zeros({0, 4}, int32);
  save(dir / "all.safetensors", tree);
  std::map<std::string, Array> like;
  for (const auto& [k, v] : tree) like[k] = jnp::zeros(v.shape(), v.dtype());
  const auto back = load(dir / "all.safetensors", like);
  for (const auto& [k, v] : tree) EXPECT_TRUE(SameBits(v, back.at(k))) << k;
  // No temporary file is left behind.
  EXPECT_EQ(dir.Files(), std::vector<std::string>{"all.safetensors"});
}

TEST(CheckpointTest, StructKeysAreKeyPaths) {
  TempDir dir;
  const Model m = MakeModel(3);
  save(dir / "m.safetensors", m, {{"step", "100"}});
  const auto tensors = load_safetensors(dir / "m.safetensors");
  std::vector<std::string> names;
  for (const auto& [k, v] : tensors) names.push_back(k);
  EXPECT_EQ(names, (std::vector<std::string>{"layers[0].bias", "layers[0].weight", "layers[1].bias",
                                             "layers[1].weight", "scale"}));
  EXPECT_EQ(tensors.at("scale").dtype(), bfloat16);
  EXPECT_EQ(load_safetensors_metadata(dir / "m.safetensors"), (std::map<std::string, std::string>{{"step", "100"}}));
  const Model back = load(dir / "m.safetensors", MakeModel(3));
  EXPECT_TRUE(SameBits(back.layers[0].weight, m.layers[0].weight));
  EXPECT_TRUE(SameBits(*back.layers[1].bias, *m.layers[1].bias));
  EXPECT_EQ(back.activation.value, "relu");
}

// The file's bytes, checked by hand against the safetensors layout.
TEST(CheckpointTest, BytesFollowTheSafetensorsLayout) {
  TempDir dir;
  std::map<std::string, Array> tree{{"a", jnp::array({1.f, -2.f})}, {"b", jnp::array({true, false, true})}};
  save(dir / "t.safetensors", tree, {{"format", "pt"}});
  const std::string bytes = ReadBytes(dir / "t.safetensors");
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);  // little-endian on this host
  const std::string json = bytes.substr(8, n);
  const std::string expected =
      R"({"__metadata__":{"format":"pt"},"['a']":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("['b']":{"dtype":"BOOL","shape":[3],"data_offsets":[8,11]}})";
  EXPECT_EQ(n % 8, 0u);
  EXPECT_EQ(json.substr(0, expected.size()), expected);
  EXPECT_EQ(json.find_first_not_of(' ', expected.size()), std::string::npos);  // space padding
  ASSERT_EQ(bytes.size(), 8 + n + 11);
  float f[2];
  std::memcpy(f, bytes.data() + 8 + n, 8);
  EXPECT_EQ(f[0], 1.f);
  EXPECT_EQ(f[1], -2.f);
  EXPECT_EQ(bytes.substr(8 + n + 8), std::string("\x01\x00\x01", 3));
}

// Python's json module and NumPy read the file as the safetensors reference reader does.
TEST(CheckpointTest, PythonReadsTheFile) {
  if (std::system("/usr/bin/python3 -c 'import numpy' > /dev/null 2>&1") != 0) GTEST_SKIP() << "no python3 numpy";
  TempDir dir;
  std::map<std::string, Array> tree{{"w", jnp::arange(6, float32).reshape({2, 3})},
                                    {"i", jnp::array({7, -9})},
                                    {"h", jnp::array({0.5f, -1.25f, 3.f}).astype(bfloat16)},
                                    {"f", jnp::array({0.5f, -1.25f, 3.f}).astype(float16)},
                                    {"b", jnp::array({true, false})}};
  save(dir / "p.safetensors", tree);
  const std::string script = dir / "check.py";
  std::ofstream(script) << R"(import json, struct, sys, numpy as np
b = open(sys.argv[1], 'rb').read()
n = struct.unpack('<Q', b[:8])[0]
h = json.loads(b[8:8 + n])
def get(k, dt):
    s, e = h[k]['data_offsets']
    return np.frombuffer(b[8 + n + s:8 + n + e], dtype=dt).reshape(h[k]['shape'])
assert (get("['w']", '<f4') == np.arange(6, dtype=np.float32).reshape(2, 3)).all()
assert (get("['i']", '<i4') == [7, -9]).all() and h["['i']"]['dtype'] == 'I32'
assert (get("['f']", '<f2') == [0.5, -1.25, 3.0]).all() and h["['f']"]['dtype'] == 'F16'
assert (get("['b']", '?') == [True, False]).all() and h["['b']"]['dtype'] == 'BOOL'
# bfloat16: the upper half of a float32 (NumPy has no bf16; torch reads it when installed).
bf = get("['h']", '<u2').astype(np.uint32) << 16
assert (bf.view(np.float32) == [0.5, -1.25, 3.0]).all() and h["['h']"]['dtype'] == 'BF16'
try:
    import torch
    s, e = h["['h']"]['data_offsets']
    t = torch.frombuffer(bytearray(b[8 + n + s:8 + n + e]), dtype=torch.bfloat16)
    assert t.tolist() == [0.5, -1.25, 3.0], t
except ImportError:
    pass
)";
  EXPECT_EQ(std::system(("/usr/bin/python3 " + script + " " + (dir / "p.safetensors")).c_str()), 0);
}

void ExpectLoadError(const std::string& path, const Model& like, const std::string& needle) {
  try {
    load(path, like);
    ADD_FAILURE() << "no error, expected " << needle;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(CheckpointTest, MismatchesNameTheFirstKey) {
  TempDir dir;
  const std::string path = dir / "m.safetensors";
  save(path, MakeModel(3));
  ExpectLoadError(path, MakeModel(5), "key \"layers[0].weight\" has shape (4, 3) in the file but (4, 5)");
  EXPECT_THROW(load(path, MakeModel(5)), ShapeError);
  Model wrong_dtype = MakeModel(3);
  wrong_dtype.scale = Array::Scalar(0.5, float32);
  ExpectLoadError(path, wrong_dtype, "key \"scale\" has dtype bfloat16 in the file but float32");
  EXPECT_THROW(load(path, wrong_dtype), TypeError);
  // The file has layers[0].bias; a model without it has an extra key in the file.
  ExpectLoadError(path, MakeModel(3, /*bias=*/false), "key \"layers[0].bias\" (float32(3,)) is in the file but not");
  Model more = MakeModel(3);
  more.layers.push_back({jnp::zeros({2, 2}), std::nullopt});
  ExpectLoadError(path, more, "key \"layers[2].weight\" (float32(2, 2)) is missing from the file");
  EXPECT_THROW(load(path, more), ValueError);
  EXPECT_THROW(load(dir / "absent.safetensors", more), RuntimeError);
}

TEST(CheckpointTest, RejectsMalformedFiles) {
  TempDir dir;
  std::ofstream(dir / "short") << "abc";
  EXPECT_THROW(load_safetensors(dir / "short"), ValueError);
  auto write = [&](const std::string& name, const std::string& json, size_t data_bytes) {
    std::string bytes(8, '\0');
    const uint64_t n = json.size();
    std::memcpy(bytes.data(), &n, 8);
    std::ofstream(dir / name, std::ios::binary) << bytes << json << std::string(data_bytes, '\0');
  };
  write("offsets", R"({"x":{"dtype":"F32","shape":[4],"data_offsets":[0,12]}})", 12);
  EXPECT_THROW(load_safetensors(dir / "offsets"), ValueError);
  write("past_end", R"({"x":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 8);
  EXPECT_THROW(load_safetensors(dir / "past_end"), ValueError);
  write("dtype", R"({"x":{"dtype":"F8_E4M3","shape":[1],"data_offsets":[0,1]}})", 1);
  try {
    load_safetensors(dir / "dtype");
    ADD_FAILURE();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("F8_E4M3"), std::string::npos) << e.what();
  }
  write("json", R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]})", 4);
  EXPECT_THROW(load_safetensors(dir / "json"), ValueError);
  // A file from another writer: other key order, whitespace, escapes, metadata last.
  write("foreign", "{ \"b\\u00e9\" : {\"shape\": [1], \"dtype\": \"I16\", \"data_offsets\": [2, 4]},\n"
                   " \"a\": {\"dtype\": \"U8\", \"shape\": [2], \"data_offsets\": [0, 2]},"
                   " \"__metadata__\": {\"k\": \"v\\\"\"} }", 4);
  const auto t = load_safetensors(dir / "foreign");
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t.at("b\xc3\xa9").dtype(), int16);
  EXPECT_EQ(t.at("a").shape(), (Shape{2}));
  EXPECT_EQ(load_safetensors_metadata(dir / "foreign").at("k"), "v\"");
}

TEST(CheckpointTest, TracersCannotBeSaved) {
  TempDir dir;
  auto f = [&](const Array& x) {
    save(dir / "x.safetensors", x);
    return x;
  };
  EXPECT_THROW(jx::jit(f)(jnp::ones({2})), TypeError);
}

// A write that fails half-way (the file-size limit stands in for a full disk) leaves the
// previous checkpoint as it was and no temporary file.
TEST(CheckpointTest, InterruptedWriteKeepsThePreviousCheckpoint) {
  TempDir dir;
  const std::string path = dir / "ckpt.safetensors";
  const std::map<std::string, Array> small{{"w", jnp::arange(16, float32)}};
  save(path, small);
  const std::string before = ReadBytes(path);

  const std::map<std::string, Array> big{{"w", jnp::ones({64 * 1024}, float32)}};
  struct rlimit old_limit;
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old_limit), 0);
  struct rlimit limit = old_limit;
  limit.rlim_cur = 4096;  // the new file stops growing after 4 KiB of its 256 KiB
  auto old_handler = ::signal(SIGXFSZ, SIG_IGN);
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &limit), 0);
  std::string error;
  try {
    save(path, big);
  } catch (const RuntimeError& e) {
    error = e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &old_limit);
  ::signal(SIGXFSZ, old_handler);

  EXPECT_NE(error.find("failed"), std::string::npos) << "save did not fail: '" << error << "'";
  EXPECT_EQ(ReadBytes(path), before);
  EXPECT_EQ(dir.Files(), std::vector<std::string>{"ckpt.safetensors"});
  EXPECT_TRUE(SameBits(load(path, small).at("w"), small.at("w")));
  save(path, big);  // and the next save works
  EXPECT_TRUE(SameBits(load(path, big).at("w"), big.at("w")));
}

}  // namespace
}  // namespace jx::checkpoint_test
