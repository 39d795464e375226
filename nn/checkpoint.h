// Checkpoints: any pytree saved to and loaded from a safetensors file
// (github.com/huggingface/safetensors), one tensor per leaf named by the leaf's key path
// (JAX's keystr without the leading dot: "layers[0].weight", "['w']", "opt_state[1].mu.bias"),
// dtype and shape kept (every jx dtype, bfloat16 as BF16), so other safetensors readers open it.
//
//   jx::save("model.safetensors", model);                      // + {"step": "1000"} metadata
//   Model restored = jx::load("model.safetensors", Model(...)); // `like` gives the structure
//
// load() fails, naming the first mismatching key, when the file does not fit `like`: a key
// `like` has and the file lacks, a key the file has and `like` lacks, or a different shape or
// dtype. save() writes a temporary file in the same directory and renames it over `path` only
// once it is complete and synced, so an interrupted save leaves any previous checkpoint intact.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "jx/core/array.h"
#include "jx/core/pytree.h"

namespace jx {

namespace checkpoint_internal {
void SaveLeaves(const std::string& path, const tree::TreeDef& def, absl::Span<const Array> leaves,
                const std::map<std::string, std::string>& metadata);
std::vector<Array> LoadLeaves(const std::string& path, const tree::TreeDef& def, absl::Span<const Array> like);
}  // namespace checkpoint_internal

// The safetensors name of each leaf of def, in leaf order.
std::vector<std::string> checkpoint_keys(const tree::TreeDef& def);

// Writes tree (host or device arrays, not tracers) to path. Throws jx::RuntimeError when the
// file cannot be written (the previous file at path, if any, is untouched).
template <typename T>
void save(const std::string& path, const T& tree, const std::map<std::string, std::string>& metadata = {}) {
  auto [leaves, def] = tree::flatten(tree);
  checkpoint_internal::SaveLeaves(path, def, leaves, metadata);
}

// A tree of like's structure, dtypes and shapes with the values stored in path. Throws
// jx::ValueError for a missing or extra key or a malformed file, jx::ShapeError / jx::TypeError
// for a shape / dtype that differs from like's.
template <typename T>
T load(const std::string& path, const T& like) {
  auto [leaves, def] = tree::flatten(like);
  return tree::unflatten<T>(def, checkpoint_internal::LoadLeaves(path, def, leaves));
}

// Every tensor of a safetensors file by name (for files written by other tools).
std::map<std::string, Array> load_safetensors(const std::string& path);
// The file's __metadata__ entries.
std::map<std::string, std::string> load_safetensors_metadata(const std::string& path);

}  // namespace jx
