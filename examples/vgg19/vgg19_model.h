// VGG19 (Simonyan & Zisserman 2014, configuration E) in jx::nn: 16 3x3 convolutions (SAME,
// stride 1, ReLU) in five blocks of 2, 2, 4, 4, 4 layers with 64, 128, 256, 512, 512 channels,
// each block closed by 2x2 max pooling with stride 2, then the classifier 4096-4096-1000
// (ReLU between; no dropout, so the forward pass is the same in training and inference).
// NHWC images of a side that is a multiple of 32 (224 gives the standard 7x7x512 = 25088
// classifier input). Shared by examples/vgg19 and bench/vgg19_bench.cc.
#pragma once

#include <cstdint>
#include <vector>

#include <jx/jx.h>

namespace vgg19 {

namespace jnp = jx::numpy;
namespace nn = jx::nn;
using jx::Array;

inline constexpr int kBlockLayers[5] = {2, 2, 4, 4, 4};
inline constexpr int64_t kBlockChannels[5] = {64, 128, 256, 512, 512};

struct Vgg19 {
  BOOST_HANA_DEFINE_STRUCT(Vgg19, (std::vector<nn::Conv>, features), (std::vector<nn::Linear>, classifier));
};

// Random weights (PyTorch's default initialization, as nn::Conv and nn::Linear) for
// image_size x image_size x 3 inputs.
inline Vgg19 Init(const Array& key, int64_t image_size, int64_t num_classes = 1000) {
  const Array keys = jx::random::split(key, 19);
  Vgg19 m;
  int64_t in = 3;
  int k = 0;
  for (int b = 0; b < 5; ++b) {
    for (int i = 0; i < kBlockLayers[b]; ++i, ++k) {
      m.features.emplace_back(in, kBlockChannels[b], std::vector<int64_t>{3, 3}, keys[k]);
      in = kBlockChannels[b];
    }
  }
  const int64_t side = image_size / 32;
  m.classifier.emplace_back(512 * side * side, 4096, keys[16]);
  m.classifier.emplace_back(4096, 4096, keys[17]);
  m.classifier.emplace_back(4096, num_classes, keys[18]);
  return m;
}

// Logits [N, num_classes] of images [N, S, S, 3].
inline Array Forward(const Vgg19& m, const Array& images) {
  const nn::MaxPool pool({2, 2}, {.strides = {2, 2}});
  Array h = images;
  size_t k = 0;
  for (int b = 0; b < 5; ++b) {
    for (int i = 0; i < kBlockLayers[b]; ++i) h = nn::relu(m.features[k++](h));
    h = pool(h);
  }
  h = h.reshape({h.shape()[0], -1});
  h = nn::relu(m.classifier[0](h));
  h = nn::relu(m.classifier[1](h));
  return m.classifier[2](h);
}

// Mean softmax cross-entropy against integer labels: the training loss.
inline Array Loss(const Vgg19& m, const Array& images, const Array& labels) {
  return jnp::mean(nn::softmax_cross_entropy_with_integer_labels(Forward(m, images), labels));
}

// The forward+backward step the table times: the loss and its gradient for every parameter.
inline std::pair<Array, Vgg19> LossAndGrad(const Vgg19& m, const Array& images, const Array& labels) {
  return jx::value_and_grad(Loss)(m, images, labels);
}

}  // namespace vgg19
