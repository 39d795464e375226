// Batching over arrays that share a leading (example) axis, as a training loop consumes them:
// fixed-size batches, an optional short last batch, a fresh order per epoch drawn from a
// jx::random key (jax.random.permutation), and the next batch gathered on a background thread
// while the current one trains (tf.data's prefetch, PyTorch's DataLoader workers).
//
// A dataset is any pytree of host arrays (a std::tuple, a struct, a std::map); each batch has
// the same type, every leaf sliced along axis 0.
//
//   jx::data::DataLoader loader(std::tuple{images, labels}, {.batch_size = 128, .drop_last = true});
//   for (int epoch = 0; epoch < 10; ++epoch) {
//     for (auto [x, y] : loader.epoch(jx::random::fold_in(key, epoch))) { ... }   // shuffled
//   }
//   for (auto [x, y] : loader.epoch()) { ... }                                     // in order
#pragma once

#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "jx/core/array.h"
#include "jx/core/pytree.h"

namespace jx::data {

struct LoaderOptions {
  int64_t batch_size = 32;
  bool drop_last = false;  // drop the final batch when it would be smaller than batch_size
  int prefetch = 1;        // batches gathered ahead on a background thread (0: gather on demand)
};

namespace data_internal {

// The examples, as the leaves of the dataset pytree (host arrays with one leading length).
struct Source {
  std::vector<Array> leaves;
  int64_t num_examples = 0;
};

// One pass over the examples in a given order. The producer thread (when prefetch > 0)
// gathers batches into a bounded queue; Next() hands them out in order.
class EpochState {
 public:
  EpochState(std::shared_ptr<const Source> source, std::vector<int64_t> order, const LoaderOptions& options);
  ~EpochState();
  EpochState(const EpochState&) = delete;
  EpochState& operator=(const EpochState&) = delete;

  int64_t num_batches() const { return num_batches_; }
  // The next batch's leaves; std::nullopt after the last one. Rethrows a gather failure.
  std::optional<std::vector<Array>> Next();

 private:
  struct Worker;
  std::vector<Array> Gather(int64_t batch) const;

  std::shared_ptr<const Source> source_;
  std::vector<int64_t> order_;
  int64_t batch_size_;
  int64_t num_batches_;
  int64_t next_ = 0;
  std::unique_ptr<Worker> worker_;
};

// Checks the leaves (host arrays, one leading length) and the options; errors name key paths.
std::shared_ptr<const Source> MakeSource(const tree::TreeDef& def, std::vector<Array> leaves,
                                         const LoaderOptions& options);
// A permutation of [0, n) from key (jx::random::permutation), or the identity without a key.
std::vector<int64_t> Order(int64_t n, const Array* key);
int64_t NumBatches(int64_t num_examples, const LoaderOptions& options);

}  // namespace data_internal

// One epoch's batches: an input range, consumed once.
template <typename T>
class Epoch {
 public:
  class iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    using pointer = const T*;
    using reference = const T&;
    iterator() = default;
    const T& operator*() const { return *epoch_->current_; }
    const T* operator->() const { return &*epoch_->current_; }
    iterator& operator++() {
      epoch_->Advance();
      return *this;
    }
    void operator++(int) { ++*this; }
    friend bool operator==(const iterator& it, std::default_sentinel_t) { return it.at_end(); }

   private:
    friend class Epoch;
    explicit iterator(Epoch* e) : epoch_(e) {}
    bool at_end() const { return epoch_ == nullptr || !epoch_->current_.has_value(); }
    Epoch* epoch_ = nullptr;
  };

  Epoch(tree::TreeDef def, std::unique_ptr<data_internal::EpochState> state)
      : def_(std::move(def)), state_(std::move(state)) {}
  Epoch(Epoch&&) noexcept = default;
  Epoch& operator=(Epoch&&) noexcept = default;

  iterator begin() {
    if (!started_) {
      started_ = true;
      Advance();
    }
    return iterator(this);
  }
  std::default_sentinel_t end() const { return {}; }
  int64_t size() const { return state_->num_batches(); }

 private:
  void Advance() {
    std::optional<std::vector<Array>> leaves = state_->Next();
    if (leaves) {
      current_ = tree::unflatten<T>(def_, *leaves);
    } else {
      current_.reset();
    }
  }

  tree::TreeDef def_;
  std::unique_ptr<data_internal::EpochState> state_;
  std::optional<T> current_;
  bool started_ = false;
};

// Batches of a dataset pytree. Throws jx::ValueError when batch_size < 1, a leaf is a scalar
// or a tracer, or the leaves' leading dimensions differ (naming the leaves' key paths).
template <typename T>
class DataLoader {
 public:
  DataLoader(const T& dataset, LoaderOptions options) : options_(options) {
    auto [leaves, def] = tree::flatten(dataset);
    def_ = std::move(def);
    source_ = data_internal::MakeSource(def_, std::move(leaves), options_);
    num_batches_ = data_internal::NumBatches(source_->num_examples, options_);
  }

  // The examples in a random order drawn from key (a fresh key per epoch gives a fresh order;
  // the same key, the same order).
  Epoch<T> epoch(const Array& key) const { return MakeEpoch(&key); }
  // The examples in their stored order.
  Epoch<T> epoch() const { return MakeEpoch(nullptr); }

  int64_t num_examples() const { return source_->num_examples; }
  int64_t num_batches() const { return num_batches_; }  // per epoch
  const LoaderOptions& options() const { return options_; }

 private:
  Epoch<T> MakeEpoch(const Array* key) const {
    return Epoch<T>(def_, std::make_unique<data_internal::EpochState>(
                              source_, data_internal::Order(source_->num_examples, key), options_));
  }

  LoaderOptions options_;
  tree::TreeDef def_;
  std::shared_ptr<const data_internal::Source> source_;
  int64_t num_batches_ = 0;
};

template <typename T>
DataLoader(const T&, LoaderOptions) -> DataLoader<T>;

}  // namespace jx::data
