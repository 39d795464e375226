// jx::data: datasets and input pipelines for training loops. IDX files (read_idx),
// Fashion-MNIST from Debian's dataset-fashion-mnist package (load_fashion_mnist), and batching
// with per-epoch shuffling by jx::random keys and background prefetch (DataLoader).
#pragma once

#include "jx/nn/data/fashion_mnist.h"
#include "jx/nn/data/idx.h"
#include "jx/nn/data/loader.h"
