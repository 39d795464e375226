#include "jx/compiler/backend/tpu/tpu_layout.h"

#include <algorithm>
#include <utility>

#include "absl/types/span.h"

namespace jx::tpu {
namespace {

using hlo::Shape;
using hlo::Tile;

int64_t NextPowerOfTwo(int64_t value) {
  int64_t p = 1;
  while (p < value) p *= 2;
  return p;
}

// How many rows of this type one 32-bit sublane holds (1 for 32- and 64-bit types).
int64_t Packing(hlo::PrimitiveType type) {
  const int64_t bytes = hlo::ByteSizeOfPrimitiveType(type);
  return bytes >= 4 ? 1 : 4 / bytes;
}

// Rows of the tile for `rows` rows of data: the full sublane tile, or the next power of two
// when the array has fewer rows (never below the packing factor).
int64_t TileRows(int64_t rows, int64_t packing) {
  const int64_t full = kSublanes * packing;
  return std::clamp(NextPowerOfTwo(std::max<int64_t>(rows, 1)), packing, full);
}

// Dims in physical order, most major first.
std::vector<int64_t> PhysicalDims(const Shape& shape) {
  const hlo::MinorToMajor& m2m = shape.layout().minor_to_major;
  std::vector<int64_t> dims;
  if (static_cast<int64_t>(m2m.size()) != shape.rank()) return hlo::SpanToVector(shape.dimensions());
  for (auto it = m2m.rbegin(); it != m2m.rend(); ++it) dims.push_back(shape.dimensions(*it));
  return dims;
}

// Elements of `dims` (physical, major first) once padded to `tiles` (each tile nested in
// the one before it).
int64_t PaddedElements(absl::Span<const int64_t> dims, absl::Span<const Tile> tiles) {
  if (tiles.empty()) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return n;
  }
  const std::vector<int64_t>& tile = tiles.front().dimensions;
  const size_t tiled = std::min(tile.size(), dims.size());
  int64_t tile_count = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i + tiled < dims.size()) {
      tile_count *= dims[i];  // a major dim the tile does not cover
    } else {
      const int64_t t = tile[tile.size() - (dims.size() - i)];
      tile_count *= RoundUpTo(dims[i], t) / t;
    }
  }
  return tile_count * PaddedElements(tile, tiles.subspan(1));
}

}  // namespace

std::vector<Tile> TpuTilesFor(const Shape& shape) {
  if (!shape.IsArray() || shape.rank() == 0) return {};
  const int64_t packing = Packing(shape.element_type());
  std::vector<Tile> tiles;
  const std::vector<int64_t> dims = PhysicalDims(shape);
  if (shape.rank() == 1) {
    const int64_t rows = (dims[0] + kLanes - 1) / kLanes;
    tiles.push_back(Tile{{TileRows(rows, packing) * kLanes}});
    return tiles;
  }
  const int64_t rows = dims[dims.size() - 2];
  tiles.push_back(Tile{{TileRows(rows, packing), kLanes}});
  if (packing > 1) tiles.push_back(Tile{{packing, 1}});
  return tiles;
}

Shape WithTpuLayout(const Shape& shape, int64_t memory_space) {
  if (shape.IsTuple()) {
    std::vector<Shape> elements;
    for (const Shape& e : shape.tuple_shapes()) elements.push_back(WithTpuLayout(e, memory_space));
    return Shape::Tuple(std::move(elements));
  }
  if (!shape.IsArray()) return shape;
  Shape out = shape;
  hlo::Layout layout = shape.layout();
  if (static_cast<int64_t>(layout.minor_to_major.size()) != shape.rank()) {
    layout = hlo::ShapeUtil::DefaultLayout(shape.rank());
  }
  layout.tiles = TpuTilesFor(out);
  layout.memory_space = memory_space;
  out.set_layout(std::move(layout));
  return out;
}

int64_t PaddedBytes(const Shape& shape) {
  if (shape.IsTuple()) {
    int64_t total = 0;
    for (const Shape& e : shape.tuple_shapes()) total += PaddedBytes(e);
    return total;
  }
  if (!shape.IsArray()) return 0;
  const std::vector<Tile> tiles =
      shape.layout().tiles.empty() ? TpuTilesFor(shape) : shape.layout().tiles;
  return PaddedElements(PhysicalDims(shape), tiles) *
         hlo::ByteSizeOfPrimitiveType(shape.element_type());
}

}  // namespace jx::tpu
