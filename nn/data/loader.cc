#include "jx/nn/data/loader.h"

#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "jx/core/errors.h"
#include "jx/core/shape.h"
#include "jx/core/str_util.h"
#include "jx/lax/random/random.h"

namespace jx::data::data_internal {

std::shared_ptr<const Source> MakeSource(const tree::TreeDef& def, std::vector<Array> leaves,
                                         const LoaderOptions& options) {
  if (options.batch_size < 1) throw ValueError(StrCat("[DataLoader] batch_size must be >= 1, got ", options.batch_size));
  if (options.prefetch < 0) throw ValueError(StrCat("[DataLoader] prefetch must be >= 0, got ", options.prefetch));
  if (leaves.empty()) throw ValueError(StrCat("[DataLoader] the dataset ", def.ToString(), " has no arrays"));
  auto source = std::make_shared<Source>();
  for (size_t i = 0; i < leaves.size(); ++i) {
    const Array& x = leaves[i];
    const std::string where = def.IsLeaf() ? std::string("the dataset") : StrCat("dataset", def.KeyPath(i));
    if (!x.is_concrete()) throw ValueError(StrCat("[DataLoader] ", where, " is a tracer; pass host arrays"));
    if (x.ndim() == 0) throw ValueError(StrCat("[DataLoader] ", where, " is a scalar; leaves need an example axis"));
    if (i == 0) {
      source->num_examples = x.shape()[0];
    } else if (x.shape()[0] != source->num_examples) {
      throw ValueError(StrCat("[DataLoader] ", where, " has ", x.shape()[0], " examples (shape ",
                              ShapeToString(x.shape()), ") but dataset", def.KeyPath(0), " has ",
                              source->num_examples));
    }
    x.data();  // a sharded array is assembled once here, not on the worker thread
  }
  source->leaves = std::move(leaves);
  return source;
}

std::vector<int64_t> Order(int64_t n, const Array* key) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  if (key == nullptr) {
    for (int64_t i = 0; i < n; ++i) order[i] = i;
    return order;
  }
  const Array perm = jx::random::permutation(*key, n).astype(int64);
  std::memcpy(order.data(), perm.data(), sizeof(int64_t) * static_cast<size_t>(n));
  return order;
}

int64_t NumBatches(int64_t num_examples, const LoaderOptions& options) {
  return options.drop_last ? num_examples / options.batch_size
                           : (num_examples + options.batch_size - 1) / options.batch_size;
}

// The producer: gathers batches in order into a queue of at most `capacity`.
struct EpochState::Worker {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::vector<Array>> ready;
  std::exception_ptr error;
  bool stop = false;
  size_t capacity = 1;
  std::thread thread;
};

EpochState::EpochState(std::shared_ptr<const Source> source, std::vector<int64_t> order, const LoaderOptions& options)
    : source_(std::move(source)),
      order_(std::move(order)),
      batch_size_(options.batch_size),
      num_batches_(NumBatches(static_cast<int64_t>(order_.size()), options)) {
  if (options.prefetch == 0 || num_batches_ == 0) return;
  worker_ = std::make_unique<Worker>();
  worker_->capacity = static_cast<size_t>(options.prefetch);
  worker_->thread = std::thread([this, w = worker_.get()] {
    for (int64_t b = 0; b < num_batches_; ++b) {
      {
        std::unique_lock<std::mutex> lock(w->mu);
        w->cv.wait(lock, [w] { return w->stop || w->ready.size() < w->capacity; });
        if (w->stop) return;
      }
      std::vector<Array> batch;
      try {
        batch = Gather(b);
      } catch (...) {
        std::lock_guard<std::mutex> lock(w->mu);
        w->error = std::current_exception();
        w->cv.notify_all();
        return;
      }
      std::lock_guard<std::mutex> lock(w->mu);
      w->ready.push_back(std::move(batch));
      w->cv.notify_all();
    }
  });
}

EpochState::~EpochState() {
  if (worker_ == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(worker_->mu);
    worker_->stop = true;
  }
  worker_->cv.notify_all();
  worker_->thread.join();
}

std::optional<std::vector<Array>> EpochState::Next() {
  if (next_ >= num_batches_) return std::nullopt;
  const int64_t b = next_++;
  if (worker_ == nullptr) return Gather(b);
  std::unique_lock<std::mutex> lock(worker_->mu);
  worker_->cv.wait(lock, [w = worker_.get()] { return !w->ready.empty() || w->error != nullptr; });
  if (worker_->ready.empty()) std::rethrow_exception(worker_->error);
  std::vector<Array> batch = std::move(worker_->ready.front());
  worker_->ready.pop_front();
  worker_->cv.notify_all();
  return batch;
}

// Copies the rows order_[b * batch_size, ...) of every leaf into fresh arrays.
std::vector<Array> EpochState::Gather(int64_t b) const {
  const int64_t begin = b * batch_size_;
  const int64_t rows = std::min<int64_t>(batch_size_, static_cast<int64_t>(order_.size()) - begin);
  std::vector<Array> out;
  out.reserve(source_->leaves.size());
  for (const Array& leaf : source_->leaves) {
    Shape shape = leaf.shape();
    const int64_t row_bytes = shape[0] == 0 ? 0 : leaf.nbytes() / shape[0];
    shape[0] = rows;
    Array batch = Array::Empty(shape, leaf.dtype());
    const auto* src = static_cast<const char*>(leaf.data());
    auto* dst = static_cast<char*>(batch.mutable_data());
    for (int64_t r = 0; r < rows; ++r) {
      std::memcpy(dst + r * row_bytes, src + order_[begin + r] * row_bytes, static_cast<size_t>(row_bytes));
    }
    out.push_back(std::move(batch));
  }
  return out;
}

}  // namespace jx::data::data_internal
