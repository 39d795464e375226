// Convolution as im2col + GEMM, with a direct path for channels-last depthwise convolutions.
//
// Two orientations, picked by where the lhs feature dim lives:
//  - Channels-last (lhs feature dim innermost, e.g. NHWC): im2col rows of output positions,
//    patch columns ordered (window..., channel); out[rows, O] = patches x W[(window, I), O].
//  - Otherwise (e.g. NCHW): per image, im2col columns of output positions, rows ordered
//    (channel, window...); out[O, positions] = W[O, (I, window)] x cols.
// Each works on scratch tiles of a few hundred KiB, tiles spread over the pool, one
// single-threaded GEMM per tile. 1x1 stride-1 convolutions skip im2col (one big GEMM);
// channels-last depthwise convolutions run a vectorized direct loop. The result lands in
// the orientation's natural layout and is permuted into out_spec when that differs.
// Operands of another dtype than the accumulator are widened once up front. Tiles are cut
// at multiples of kGemmSplitAlign, so results do not depend on the thread count.
//
// Output: an OutputSink takes each tile of the natural-layout result as soon as it is final,
// converts it to out_dtype when that differs from the accumulator and runs the fused
// epilogue over it while it is still in cache. Tile boundaries do not depend on whether an
// epilogue is present, so fused and unfused results agree.
#include "jx/lax/kernels/convolution.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <Eigen/Core>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_join.h"
#include "jx/core/buffer.h"
#include "jx/core/errors.h"
#include "jx/core/parallel.h"
#include "jx/core/shape.h"
#include "jx/lax/kernels/dispatch.h"

namespace jx::lax::kernels {
namespace {

using DimVec = absl::InlinedVector<int64_t, 6>;

Shape ToShape(absl::Span<const int64_t> dims) { return Shape(dims.begin(), dims.end()); }

// Everything the kernels need, in canonical (batch, feature, spatial...) terms.
struct Geometry {
  int nsp = 0;
  int64_t n_out = 0;         // output batch (lhs batch / batch_group_count)
  int64_t o = 0;             // output features
  int64_t groups = 1;        // feature or batch groups
  bool batch_grouped = false;
  int64_t cg = 0, og = 0;    // input channels per patch, output features per group
  DimVec in_size, win, out_size;
  int64_t p = 1, kprod = 1;  // output positions, window positions
  int64_t ls_n = 0, ls_c = 0;
  DimVec ls_sp;
  // tables[i][o * win[i] + k]: lhs offset along spatial dim i, or -1 (padding/dilation hole).
  std::vector<std::vector<int64_t>> tables;

  int64_t kc() const { return kprod * cg; }
  // Offset of group g's first channel of output-batch image n in lhs.
  int64_t ImageBase(int64_t n, int64_t g) const {
    return batch_grouped ? (g * n_out + n) * ls_n : n * ls_n + g * cg * ls_c;
  }
};

Geometry MakeGeometry(const ConvArgs& a) {
  Geometry g;
  g.nsp = static_cast<int>(a.lhs_shape.size()) - 2;
  const std::vector<int64_t> ls = RowMajorStrides(ToShape(a.lhs_shape));
  g.n_out = a.out_shape[a.out_spec[0]];
  g.o = a.out_shape[a.out_spec[1]];
  g.batch_grouped = a.batch_group_count > 1;
  g.groups = g.batch_grouped ? a.batch_group_count : a.feature_group_count;
  g.cg = a.rhs_shape[a.rhs_spec[1]];
  g.og = g.o / g.groups;
  g.ls_n = ls[a.lhs_spec[0]];
  g.ls_c = ls[a.lhs_spec[1]];
  for (int i = 0; i < g.nsp; ++i) {
    const int64_t in = a.lhs_shape[a.lhs_spec[2 + i]], w = a.rhs_shape[a.rhs_spec[2 + i]];
    const int64_t os = a.out_shape[a.out_spec[2 + i]];
    g.in_size.push_back(in);
    g.win.push_back(w);
    g.out_size.push_back(os);
    g.ls_sp.push_back(ls[a.lhs_spec[2 + i]]);
    g.p *= os;
    g.kprod *= w;
    std::vector<int64_t> t(static_cast<size_t>(os * w));
    const int64_t ld = a.lhs_dilation[i];
    for (int64_t oi = 0; oi < os; ++oi) {
      for (int64_t k = 0; k < w; ++k) {
        int64_t idx = oi * a.window_strides[i] + k * a.rhs_dilation[i] - a.padding_low[i];
        if (idx >= 0 && ld > 1) idx = idx % ld == 0 ? idx / ld : -1;
        t[static_cast<size_t>(oi * w + k)] = idx >= 0 && idx < in ? idx * g.ls_sp.back() : -1;
      }
    }
    g.tables.push_back(std::move(t));
  }
  return g;
}

// off[kidx] (row-major over the window) for output position pos (row-major over out_size).
void WindowOffsets(const Geometry& g, int64_t pos, int64_t* off) {
  DimVec o(static_cast<size_t>(g.nsp));
  for (int i = g.nsp - 1; i >= 0; --i) {
    o[i] = pos % g.out_size[i];
    pos /= g.out_size[i];
  }
  off[0] = 0;
  int64_t count = 1;
  for (int i = 0; i < g.nsp; ++i) {
    const int64_t w = g.win[i];
    const int64_t* t = g.tables[i].data() + o[i] * w;
    // Expand in place from the back: entry q becomes entries q*w .. q*w+w-1.
    for (int64_t q = count - 1; q >= 0; --q) {
      const int64_t base = off[q];
      for (int64_t k = w - 1; k >= 0; --k) off[q * w + k] = (base < 0 || t[k] < 0) ? -1 : base + t[k];
    }
    count *= w;
  }
}

// Channels-last patches for output rows [r0, r1) (flattened (n, position)) of group grp:
// patches[(r - r0) * kc + kidx * cg + c].
template <typename Acc>
void Im2ColRows(const Geometry& g, const Acc* lhs, int64_t grp, int64_t r0, int64_t r1, Acc* patches, int64_t* off) {
  const int64_t kc = g.kc(), cg = g.cg, sc = g.ls_c;
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t n = r / g.p;
    WindowOffsets(g, r % g.p, off);
    const Acc* base = lhs + g.ImageBase(n, grp);
    Acc* row = patches + (r - r0) * kc;
    for (int64_t kidx = 0; kidx < g.kprod; ++kidx) {
      Acc* dst = row + kidx * cg;
      if (off[kidx] < 0) {
        std::fill(dst, dst + cg, Acc(0));
      } else if (sc == 1) {
        std::memcpy(dst, base + off[kidx], static_cast<size_t>(cg) * sizeof(Acc));
      } else {
        const Acc* src = base + off[kidx];
        for (int64_t c = 0; c < cg; ++c) dst[c] = src[c * sc];
      }
    }
  }
}

// A run of consecutive columns of one im2col row: `len` columns from j0 reading lhs offsets
// off, off + step, ... (a stride-1 window row is one contiguous run), or zeros (off < 0).
struct ColRun {
  int64_t j0, len, off, step;
};

// Scratch of Im2ColCols, reused across calls.
struct ColScratch {
  std::vector<int64_t> offt, off, run_begin;
  std::vector<ColRun> runs;
};

// Channels-first columns for image n, group grp, positions [p0, p1):
// cols[(c * kprod + kidx) * ld + (pos - p0)]. The runs of each window position are found once
// and reused for every channel.
template <typename Acc>
void Im2ColCols(const Geometry& g, const Acc* lhs, int64_t n, int64_t grp, int64_t p0, int64_t p1, Acc* cols,
                int64_t ld, ColScratch& scratch) {
  const int64_t pc = p1 - p0;
  scratch.offt.resize(static_cast<size_t>(pc * g.kprod));
  scratch.off.resize(static_cast<size_t>(g.kprod));
  int64_t* offt = scratch.offt.data();
  int64_t* off = scratch.off.data();
  std::vector<ColRun>& runs = scratch.runs;
  std::vector<int64_t>& run_begin = scratch.run_begin;
  for (int64_t j = 0; j < pc; ++j) {
    WindowOffsets(g, p0 + j, off);
    for (int64_t kidx = 0; kidx < g.kprod; ++kidx) offt[kidx * pc + j] = off[kidx];
  }
  runs.clear();
  run_begin.assign(static_cast<size_t>(g.kprod + 1), 0);
  for (int64_t kidx = 0; kidx < g.kprod; ++kidx) {
    run_begin[kidx] = static_cast<int64_t>(runs.size());
    const int64_t* t = offt + kidx * pc;
    for (int64_t j = 0; j < pc;) {
      int64_t e = j + 1;
      if (t[j] < 0) {
        while (e < pc && t[e] < 0) ++e;
        runs.push_back({j, e - j, -1, 0});
      } else {
        const int64_t step = e < pc && t[e] >= 0 ? t[e] - t[j] : 1;
        while (e < pc && t[e] >= 0 && t[e] == t[e - 1] + step) ++e;
        runs.push_back({j, e - j, t[j], step});
      }
      j = e;
    }
  }
  run_begin[g.kprod] = static_cast<int64_t>(runs.size());
  const Acc* base = lhs + g.ImageBase(n, grp);
  for (int64_t c = 0; c < g.cg; ++c) {
    const Acc* src = base + c * g.ls_c;
    for (int64_t kidx = 0; kidx < g.kprod; ++kidx) {
      Acc* dst = cols + (c * g.kprod + kidx) * ld;
      for (int64_t r = run_begin[kidx]; r < run_begin[kidx + 1]; ++r) {
        const ColRun& run = runs[static_cast<size_t>(r)];
        Acc* d = dst + run.j0;
        if (run.off < 0) {
          std::fill(d, d + run.len, Acc(0));
        } else if (run.step == 1) {
          std::memcpy(d, src + run.off, static_cast<size_t>(run.len) * sizeof(Acc));
        } else {
          const Acc* sp = src + run.off;
          for (int64_t j = 0; j < run.len; ++j) d[j] = sp[j * run.step];
        }
      }
    }
  }
}

// Where the kernels' natural-layout result goes. When the natural layout is out's own
// layout, finished ranges are converted into out (if the accumulator dtype differs) and
// handed to the epilogue right away; otherwise the caller permutes the whole result at the
// end (Finish does nothing).
struct OutputSink {
  DType acc_dtype = DType::kFloat32, out_dtype = DType::kFloat32;
  const void* acc = nullptr;  // the natural-layout buffer the kernels write
  void* out = nullptr;
  bool ranged = false;   // natural layout == out's layout
  bool convert = false;  // acc is a scratch of another dtype than out
  const OutputEpilogue* epilogue = nullptr;

  bool active() const { return ranged && (convert || (epilogue != nullptr && *epilogue)); }
  // Natural-layout elements [begin, end) are final.
  void Finish(int64_t begin, int64_t end) const {
    if (!active() || begin >= end) return;
    if (convert) {
      const int64_t acc_size = ItemSize(acc_dtype), out_size = ItemSize(out_dtype);
      const int64_t n = end - begin;
      PackConvert(acc_dtype, static_cast<const uint8_t*>(acc) + begin * acc_size, {n}, {1}, out_dtype,
                  static_cast<uint8_t*>(out) + begin * out_size);
    }
    if (epilogue != nullptr && *epilogue) (*epilogue)(begin, end);
  }
  // Rows [r0, r1) of a [rows, cols] natural-layout block, columns [c0, c1).
  void FinishBlock(int64_t r0, int64_t r1, int64_t cols, int64_t c0, int64_t c1) const {
    if (!active()) return;
    if (c0 == 0 && c1 == cols) return Finish(r0 * cols, r1 * cols);
    for (int64_t r = r0; r < r1; ++r) Finish(r * cols + c0, r * cols + c1);
  }
  // Everything, in parallel (for kernels whose last step was one pool-wide GEMM).
  void FinishAll(int64_t total) const {
    if (!active()) return;
    ParallelFor(total, kParallelGrain, [&](int64_t b, int64_t e) { Finish(b, e); });
  }
};

// Rows of finished output handed to the sink at a time by the row-parallel kernels: about
// 64 KiB of float32, so the epilogue reads them from cache.
constexpr int64_t kFinishElems = int64_t{1} << 14;

// Channels-last depthwise (one input channel per group): out[r, c * og + m] =
// sum_k in[n, pos(r, k), c] * w[k, c * og + m], vectorized over channels.
template <typename Acc>
void DepthwiseRows(const Geometry& g, const Acc* lhs, const Acc* w, Acc* out, const OutputSink& sink) {
  const int64_t rows = g.n_out * g.p, ch = g.groups, o = g.o, og = g.og;
  const int64_t grain = std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, g.kprod * o));
  ParallelFor(rows, grain, [&](int64_t r0, int64_t r1) {
    std::vector<int64_t> off(static_cast<size_t>(g.kprod));
    std::vector<Acc> in_buf;
    const bool direct_in = g.ls_c == 1;
    if (!direct_in) in_buf.resize(static_cast<size_t>(ch));
    const int64_t finish_rows = std::max<int64_t>(1, kFinishElems / std::max<int64_t>(1, o));
    int64_t finished = r0;
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t n = r / g.p;
      WindowOffsets(g, r % g.p, off.data());
      Acc* acc = out + r * o;
      std::fill(acc, acc + o, Acc(0));
      const Acc* base = lhs + n * g.ls_n;
      for (int64_t kidx = 0; kidx < g.kprod; ++kidx) {
        if (off[kidx] < 0) continue;
        const Acc* in_row = base + off[kidx];
        if (!direct_in) {
          for (int64_t c = 0; c < ch; ++c) in_buf[c] = in_row[c * g.ls_c];
          in_row = in_buf.data();
        }
        const Acc* wk = w + kidx * o;
        if (og == 1) {
          ArrayMap<Acc>(acc, ch) +=
              ConstArrayMap<Acc>(wk, ch) * ConstArrayMap<Acc>(in_row, ch);
        } else {
          // (og x ch) column-major views: entry (m, c) is feature c * og + m.
          Eigen::Map<Eigen::Array<Acc, Eigen::Dynamic, Eigen::Dynamic>> a(acc, og, ch);
          Eigen::Map<const Eigen::Array<Acc, Eigen::Dynamic, Eigen::Dynamic>> wm(wk, og, ch);
          a += wm.rowwise() * Eigen::Map<const Eigen::Array<Acc, 1, Eigen::Dynamic>>(in_row, ch);
        }
      }
      if (r + 1 == r1 || r + 1 - finished >= finish_rows) {
        sink.Finish(finished * o, (r + 1) * o);
        finished = r + 1;
      }
    }
  });
}

// The stride of the innermost of dims that nest into one axis (stride[a] == stride[b] *
// size[b] for consecutive non-trivial dims), 0 when all have size 1, nullopt otherwise.
std::optional<int64_t> NestedStride(const DimVec& sizes, const DimVec& strides) {
  int64_t prev = -1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == 1) continue;
    if (prev >= 0 && strides[prev] != strides[i] * sizes[i]) return std::nullopt;
    prev = static_cast<int64_t>(i);
  }
  return prev < 0 ? 0 : strides[prev];
}

// True when the dims (sizes, strides) nest as a dense row-major block ignoring size-1 dims.
bool IsDense(const DimVec& sizes, const DimVec& strides) {
  int64_t expect = 1;
  for (int i = static_cast<int>(sizes.size()) - 1; i >= 0; --i) {
    if (sizes[i] == 1) continue;
    if (strides[i] != expect) return false;
    expect *= sizes[i];
  }
  return true;
}

// Uninitialized scratch of n elements from the caching allocator (no page faults on reuse).
template <typename T>
class Scratch {
 public:
  explicit Scratch(int64_t n) : buf_(Buffer::Allocate(std::max<int64_t>(n, 1) * static_cast<int64_t>(sizeof(T)))) {}
  T* data() const { return static_cast<T*>(buf_->data()); }

 private:
  std::shared_ptr<Buffer> buf_;
};

// Patch tiles hold about this many elements (about 512 KiB of float32: cache-resident for the
// tile's GEMM), but at least kMinTileRows rows so repacking the weights per tile stays cheap.
constexpr int64_t kTileElems = int64_t{1} << 17;
constexpr int64_t kMinTileRows = 64;
// When the tiles would not keep the pool busy, the whole patch matrix (up to this many
// elements) is built once and multiplied by one GEMM split over the pool.
constexpr int64_t kWholeElems = int64_t{1} << 23;

// Rows (or columns) per tile for `total` of them at `kc` elements each, split into at least
// 4 tiles per thread when that keeps tiles at kMinTileRows or more; a multiple of
// kGemmSplitAlign.
int64_t TileExtent(int64_t total, int64_t kc, int64_t parallel_units) {
  const int threads = NumThreads();
  int64_t t = std::max(kMinTileRows, kTileElems / std::max<int64_t>(1, kc));
  const int64_t want = 4 * threads;
  if (parallel_units * ((total + t - 1) / t) < want) {
    const int64_t per_unit = (want + parallel_units - 1) / parallel_units;
    t = std::max(kMinTileRows, (total + per_unit - 1) / per_unit);
  }
  // Tiles are GEMMs over a split of the patch rows (columns): aligned so that the result
  // does not depend on the split, hence on the thread count.
  t = (t + kGemmSplitAlign - 1) / kGemmSplitAlign * kGemmSplitAlign;
  return std::max<int64_t>(1, std::min(t, total));
}

// `total` rows (columns) cut into tiles of `extent`; the last tile absorbs a remainder
// shorter than kGemmSplitAlign, which as a GEMM of its own would take other Eigen kernels
// (GEMV for one row) than the same rows inside the unsplit product.
struct Tiling {
  Tiling(int64_t total, int64_t extent) : total(total), extent(extent) {
    count = total / extent;
    const int64_t rem = total % extent;
    if (count == 0 || rem >= kGemmSplitAlign) count += rem > 0 ? 1 : 0;
  }
  int64_t begin(int64_t q) const { return q * extent; }
  int64_t end(int64_t q) const { return q + 1 == count ? total : (q + 1) * extent; }
  int64_t max_extent() const { return std::max(extent, total - (count - 1) * extent); }
  int64_t total, extent, count;
};

bool UseWholeMatrix(int64_t total, int64_t kc, int64_t tiles) {
  return tiles < 2 * NumThreads() && total * kc <= kWholeElems;
}

template <typename Acc>
void ConvChannelsLast(const Geometry& g, const Acc* lhs, const Acc* w, Acc* out, int64_t identity_ld,
                      const OutputSink& sink) {
  const int64_t kc = g.kc(), o = g.o, og = g.og;
  const int64_t rows = g.n_out * g.p;
  auto gemm = [&](int64_t grp, const void* a, int64_t lda, int64_t r0, int64_t r1, bool parallel) {
    GemmArgs args;
    args.dtype = KernelDType<Acc>();
    args.m = r1 - r0;
    args.n = og;
    args.k = kc;
    args.a = a;
    args.lda = lda;
    args.b = w + grp * og;
    args.ldb = o;
    args.c = out + r0 * o + grp * og;
    args.ldc = o;
    args.parallel = parallel;
    Gemm(args);
  };
  if (identity_ld > 0) {
    // 1x1, stride 1: the lhs rows are the patches.
    for (int64_t grp = 0; grp < g.groups; ++grp) gemm(grp, lhs + g.ImageBase(0, grp), identity_ld, 0, rows, true);
    sink.FinishAll(rows * o);
    return;
  }
  const Tiling tiles(rows, TileExtent(rows, kc, 1));
  if (UseWholeMatrix(rows, kc, tiles.count)) {
    Scratch<Acc> patches(rows * kc);
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      const int64_t grain = std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, kc));
      ParallelFor(rows, grain, [&](int64_t r0, int64_t r1) {
        std::vector<int64_t> off(static_cast<size_t>(g.kprod));
        Im2ColRows<Acc>(g, lhs, grp, r0, r1, patches.data() + r0 * kc, off.data());
      });
      gemm(grp, patches.data(), kc, 0, rows, true);
    }
    sink.FinishAll(rows * o);
    return;
  }
  ParallelFor(tiles.count, 1, [&](int64_t t0, int64_t t1) {
    Scratch<Acc> patches(tiles.max_extent() * kc);
    std::vector<int64_t> off(static_cast<size_t>(g.kprod));
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t r0 = tiles.begin(t), r1 = tiles.end(t);
      for (int64_t grp = 0; grp < g.groups; ++grp) {
        Im2ColRows<Acc>(g, lhs, grp, r0, r1, patches.data(), off.data());
        gemm(grp, patches.data(), kc, r0, r1, false);
      }
      sink.Finish(r0 * o, r1 * o);
    }
  });
}

template <typename Acc>
void ConvChannelsFirst(const Geometry& g, const Acc* lhs, const Acc* w, Acc* out, int64_t identity_ld,
                       const OutputSink& sink) {
  const int64_t kc = g.kc(), og = g.og, np = g.p;
  if (identity_ld > 0) {
    // 1x1, stride 1: each image's [C, positions] block is the column matrix.
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      GemmArgs a;
      a.dtype = KernelDType<Acc>();
      a.batch = g.n_out;
      a.m = og;
      a.n = np;
      a.k = kc;
      a.a = w + grp * og * kc;
      a.lda = kc;
      a.b = lhs + g.ImageBase(0, grp);
      a.ldb = identity_ld;
      a.stride_b = g.ls_n;
      a.c = out + grp * og * np;
      a.ldc = np;
      a.stride_c = g.o * np;
      Gemm(a);
    }
    sink.FinishAll(g.n_out * g.o * np);
    return;
  }
  // Columns are (image, position) pairs of one group; a tile may span images (small images),
  // in which case its GEMM lands in scratch and is scattered to each image's [O, P] block.
  const int64_t total = g.n_out * np;
  const Tiling tiles(total, TileExtent(total, kc, g.groups));
  const bool whole = UseWholeMatrix(total, kc, g.groups * tiles.count);
  // Builds columns [q0, q1) of group grp into cols (row stride q1 - q0), in parallel if asked.
  auto im2col = [&](int64_t grp, int64_t q0, int64_t q1, Acc* cols, ColScratch& scratch, bool parallel) {
    const int64_t qn = q1 - q0;
    constexpr int64_t kSeg = 256;
    const int64_t segs = (qn + kSeg - 1) / kSeg;
    auto run = [&](int64_t s0, int64_t s1, ColScratch& sc) {
      for (int64_t q = q0 + s0 * kSeg, qe = std::min(q1, q0 + s1 * kSeg); q < qe;) {
        const int64_t n = q / np, p0 = q % np, p1 = std::min(np, p0 + (qe - q));
        Im2ColCols<Acc>(g, lhs, n, grp, p0, p1, cols + (q - q0), qn, sc);
        q += p1 - p0;
      }
    };
    if (!parallel) return run(0, segs, scratch);
    ParallelFor(segs, 1, [&](int64_t s0, int64_t s1) {
      ColScratch sc;
      run(s0, s1, sc);
    });
  };
  auto tile = [&](int64_t grp, int64_t q0, int64_t q1, Acc* cols, Acc* tmp, ColScratch& scratch, bool parallel) {
    const int64_t qn = q1 - q0;
    im2col(grp, q0, q1, cols, scratch, parallel);
    const int64_t n0 = q0 / np;
    const bool one_image = (q1 - 1) / np == n0;
    GemmArgs a;
    a.dtype = KernelDType<Acc>();
    a.m = og;
    a.n = qn;
    a.k = kc;
    a.a = w + grp * og * kc;
    a.lda = kc;
    a.b = cols;
    a.ldb = qn;
    a.c = one_image ? out + (n0 * g.o + grp * og) * np + q0 % np : tmp;
    a.ldc = one_image ? np : qn;
    a.parallel = parallel;
    Gemm(a);
    // The whole-matrix path (parallel) finishes everything at the end, in parallel.
    if (one_image && (parallel || !sink.active())) return;
    for (int64_t q = q0; q < q1;) {
      const int64_t n = q / np, p0 = q % np, len = std::min(np - p0, q1 - q);
      for (int64_t f = 0; f < og; ++f) {
        const int64_t at = (n * g.o + grp * og + f) * np + p0;
        if (!one_image) std::memcpy(out + at, tmp + f * qn + (q - q0), static_cast<size_t>(len) * sizeof(Acc));
        if (!parallel) sink.Finish(at, at + len);
      }
      q += len;
    }
  };
  if (whole) {
    Scratch<Acc> cols(kc * total);
    Scratch<Acc> tmp(g.n_out > 1 ? og * total : 0);
    ColScratch scratch;
    for (int64_t grp = 0; grp < g.groups; ++grp) tile(grp, 0, total, cols.data(), tmp.data(), scratch, true);
    sink.FinishAll(g.n_out * g.o * np);
    return;
  }
  ParallelFor(g.groups * tiles.count, 1, [&](int64_t t0, int64_t t1) {
    Scratch<Acc> cols(kc * tiles.max_extent());
    Scratch<Acc> tmp(og * tiles.max_extent());
    ColScratch scratch;
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t grp = t / tiles.count, q = t % tiles.count;
      tile(grp, tiles.begin(q), tiles.end(q), cols.data(), tmp.data(), scratch, false);
    }
  });
}


std::string DimsStr(absl::Span<const int64_t> v) { return StrCat("[", absl::StrJoin(v, ","), "]"); }

// Rejects arguments the kernels would read out of bounds with (shape inference normally
// rules them out first).
void CheckArgs(const ConvArgs& a) {
  const size_t rank = a.lhs_shape.size();
  const size_t nsp = rank < 2 ? 0 : rank - 2;
  auto fail = [&](std::string_view why) {
    throw ValueError(StrCat("convolution kernel: ", why, " (lhs ", dtype_name(a.lhs_dtype), DimsStr(a.lhs_shape),
                            ", rhs ", dtype_name(a.rhs_dtype), DimsStr(a.rhs_shape), ", out ",
                            dtype_name(a.out_dtype), DimsStr(a.out_shape), ")"));
  };
  if (rank < 2 || a.rhs_shape.size() != rank || a.out_shape.size() != rank) fail("ranks must agree and be >= 2");
  for (absl::Span<const int64_t> spec : {a.lhs_spec, a.rhs_spec, a.out_spec}) {
    if (spec.size() != rank) fail("dimension numbers must name every dim");
    std::vector<bool> seen(rank, false);
    for (int64_t d : spec) {
      if (d < 0 || d >= static_cast<int64_t>(rank) || seen[d]) fail("dimension numbers must be permutations");
      seen[d] = true;
    }
  }
  for (absl::Span<const int64_t> v : {a.window_strides, a.padding_low, a.padding_high, a.lhs_dilation,
                                      a.rhs_dilation}) {
    if (v.size() != nsp) fail("window attributes need one entry per spatial dim");
  }
  const int64_t groups = std::max(a.feature_group_count, a.batch_group_count);
  if (a.feature_group_count < 1 || a.batch_group_count < 1 || std::min(a.feature_group_count, a.batch_group_count) != 1) {
    fail("group counts must be positive, at most one of them > 1");
  }
  const int64_t o = a.out_shape[a.out_spec[1]];
  if (a.rhs_shape[a.rhs_spec[0]] != o || o % groups != 0) fail("output features must match and divide into groups");
  if (a.lhs_shape[a.lhs_spec[1]] != a.rhs_shape[a.rhs_spec[1]] * a.feature_group_count) {
    fail("lhs features must be rhs input features x feature_group_count");
  }
  if (a.lhs_shape[a.lhs_spec[0]] != a.out_shape[a.out_spec[0]] * a.batch_group_count) {
    fail("lhs batch must be output batch x batch_group_count");
  }
  for (size_t i = 0; i < nsp; ++i) {
    if (a.window_strides[i] < 1 || a.lhs_dilation[i] < 1 || a.rhs_dilation[i] < 1) {
      fail("strides and dilations must be positive");
    }
  }
}

}  // namespace

// The weight-gradient form (the rhs transpose of a channels-last convolution): lhs laid out
// [feature, spatial..., batch] and rhs [in feature, spatial..., out feature], both dense, out
// [spatial..., batch, feature], no groups or lhs dilation, and a window (the forward pass's
// output) at least as large as the output (the forward kernel). Each output position k is
// then a sum over (n, window row) of small transposed products
//   out[k][b, f] += sum_w lhs[n, k * stride + w * dilation - pad, b] * rhs[n, w, f],
// whose lhs rows are a strided matrix with b contiguous and whose rhs rows are contiguous,
// so no im2col is built and every read streams: the generic channels-first path instead
// gathers lhs with a stride of `batch` elements once per batch entry.
bool IsWeightGradientForm(const ConvArgs& a, const Geometry& g, DType acc) {
  const auto rank = static_cast<int64_t>(a.lhs_shape.size());
  if (g.nsp < 1 || g.groups != 1 || a.lhs_dtype != acc || a.rhs_dtype != acc || a.out_dtype != acc) return false;
  if (acc != DType::kFloat32 && acc != DType::kFloat64) return false;
  if (a.lhs_spec[0] != rank - 1 || a.lhs_spec[1] != 0 || a.rhs_spec[0] != rank - 1 || a.rhs_spec[1] != 0 ||
      a.out_spec[0] != rank - 2 || a.out_spec[1] != rank - 1) {
    return false;
  }
  int64_t out_positions = 1;
  for (int i = 0; i < g.nsp; ++i) {
    if (a.lhs_spec[2 + i] != 1 + i || a.rhs_spec[2 + i] != 1 + i || a.out_spec[2 + i] != i) return false;
    if (a.lhs_dilation[i] != 1) return false;
    out_positions *= g.out_size[i];
  }
  // At least a few output positions, so the tasks (one per position) keep the pool busy.
  return out_positions >= 4 && out_positions <= g.kprod;
}

template <typename Acc>
void ConvWeightGradient(const ConvArgs& a, const Geometry& g) {
  const Acc* lhs = static_cast<const Acc*>(a.lhs);
  const Acc* rhs = static_cast<const Acc*>(a.rhs);
  Acc* out = static_cast<Acc*>(a.out);
  const int nsp = g.nsp;
  const int64_t nb = g.n_out, nf = g.o;                   // out [k..., nb, nf]
  const int64_t nn = a.lhs_shape[0];                      // the contracted (feature) dim
  const int64_t in_last = g.in_size[nsp - 1], win_last = g.win[nsp - 1];
  const int64_t stride_last = a.window_strides[nsp - 1], dil_last = a.rhs_dilation[nsp - 1];
  const int64_t pad_last = a.padding_low[nsp - 1];
  int64_t out_positions = 1, win_rows = 1;
  for (int i = 0; i < nsp; ++i) out_positions *= g.out_size[i];
  for (int i = 0; i + 1 < nsp; ++i) win_rows *= g.win[i];
  // Dense strides: lhs [nn, in..., nb], rhs [nn, win..., nf].
  const int64_t lhs_row = nb, rhs_row = nf;
  const std::vector<int64_t> ls = RowMajorStrides(ToShape(a.lhs_shape));
  const std::vector<int64_t> rs = RowMajorStrides(ToShape(a.rhs_shape));
  // One task per output position: each output element sums in a fixed order on one thread.
  ParallelFor(out_positions, 1, [&](int64_t k0, int64_t k1) {
    DimVec o(static_cast<size_t>(nsp)), w(static_cast<size_t>(nsp));
    for (int64_t k = k0; k < k1; ++k) {
      Acc* c = out + k * nb * nf;
      std::fill(c, c + nb * nf, Acc(0));
      for (int64_t r = k, i = nsp - 1; i >= 0; --i) {
        o[i] = r % g.out_size[i];
        r /= g.out_size[i];
      }
      // The window's last dim: positions w with 0 <= o * stride + w * dil - pad < in.
      const int64_t base_last = o[nsp - 1] * stride_last - pad_last;
      int64_t w_lo = 0;
      while (w_lo < win_last && base_last + w_lo * dil_last < 0) ++w_lo;
      int64_t w_hi = win_last;
      while (w_hi > w_lo && base_last + (w_hi - 1) * dil_last >= in_last) --w_hi;
      if (w_lo == w_hi) continue;
      for (int64_t n = 0; n < nn; ++n) {
        for (int64_t row = 0; row < win_rows; ++row) {
          int64_t lhs_off = n * ls[0], rhs_off = n * rs[0];
          bool valid = true;
          for (int64_t r = row, i = nsp - 2; i >= 0; --i) {
            w[i] = r % g.win[i];
            r /= g.win[i];
            const int64_t pos = o[i] * a.window_strides[i] + w[i] * a.rhs_dilation[i] - a.padding_low[i];
            if (pos < 0 || pos >= g.in_size[i]) {
              valid = false;
              break;
            }
            lhs_off += pos * ls[1 + i];
            rhs_off += w[i] * rs[1 + i];
          }
          if (!valid) continue;
          GemmArgs ga;
          ga.dtype = a.out_dtype;
          ga.m = nb;
          ga.n = nf;
          ga.k = w_hi - w_lo;
          ga.a = lhs + lhs_off + (base_last + w_lo * dil_last) * lhs_row;
          ga.lda = dil_last * lhs_row;
          ga.transpose_a = true;  // op(A)[b, p] = a[p * lda + b]
          ga.b = rhs + rhs_off + w_lo * rhs_row;
          ga.ldb = rhs_row;
          ga.c = c;
          ga.ldc = nf;
          ga.accumulate = true;
          ga.parallel = false;
          Gemm(ga);
        }
      }
    }
  });
  if (a.epilogue) {
    const int64_t total = out_positions * nb * nf;
    ParallelFor(total, kParallelGrain, [&](int64_t b, int64_t e) { a.epilogue(b, e); });
  }
}

void ConvGeneralDilated(const ConvArgs& args) {
  CheckArgs(args);
  const int64_t total = NumElements(ToShape(args.out_shape));
  if (total == 0) return;
  const Geometry g = MakeGeometry(args);
  const DType out_dtype = args.out_dtype;
  auto run_epilogue_over_all = [&] {
    if (!args.epilogue) return;
    ParallelFor(total, kParallelGrain, [&](int64_t b, int64_t e) { args.epilogue(b, e); });
  };
  if (g.kc() == 0) {
    std::memset(args.out, 0, static_cast<size_t>(total * ItemSize(out_dtype)));
    return run_epilogue_over_all();
  }
  const DType acc = AccumulationDType(args.lhs_dtype, args.rhs_dtype, out_dtype);
  if (IsWeightGradientForm(args, g, acc)) {
    if (acc == DType::kFloat32) return ConvWeightGradient<float>(args, g);
    return ConvWeightGradient<double>(args, g);
  }
  const int64_t rank = static_cast<int64_t>(args.lhs_shape.size());
  const bool channels_last = args.lhs_spec[1] == rank - 1;

  // Weights as [(window..., I), O] (channels-last) or [O, (I, window...)].
  const std::vector<int64_t> rs = RowMajorStrides(ToShape(args.rhs_shape));
  DimVec wsizes, wstrides;
  auto add_w = [&](int64_t dim) {
    wsizes.push_back(args.rhs_shape[dim]);
    wstrides.push_back(rs[dim]);
  };
  if (channels_last) {
    for (int i = 0; i < g.nsp; ++i) add_w(args.rhs_spec[2 + i]);
    add_w(args.rhs_spec[1]);
    add_w(args.rhs_spec[0]);
  } else {
    add_w(args.rhs_spec[0]);
    add_w(args.rhs_spec[1]);
    for (int i = 0; i < g.nsp; ++i) add_w(args.rhs_spec[2 + i]);
  }
  const void* w = args.rhs;
  std::shared_ptr<Buffer> w_buf;
  if (!SameRepresentation(args.rhs_dtype, acc) || !IsDense(wsizes, wstrides)) {
    w_buf = Buffer::Allocate(NumElements(ToShape(args.rhs_shape)) * ItemSize(acc));
    PackConvert(args.rhs_dtype, args.rhs, wsizes, wstrides, acc, w_buf->data());
    w = w_buf->data();
  }

  // Output in the orientation's natural layout: [N, spatial..., O] or [N, O, spatial...].
  const std::vector<int64_t> out_strides_dense = RowMajorStrides(ToShape(args.out_shape));
  DimVec nat_stride(static_cast<size_t>(rank));  // natural-layout stride of canonical dim j
  {
    int64_t s = 1;
    if (channels_last) {
      nat_stride[1] = 1;
      s = g.o;
      for (int i = g.nsp - 1; i >= 0; --i) {
        nat_stride[2 + i] = s;
        s *= g.out_size[i];
      }
    } else {
      for (int i = g.nsp - 1; i >= 0; --i) {
        nat_stride[2 + i] = s;
        s *= g.out_size[i];
      }
      nat_stride[1] = s;
      s *= g.o;
    }
    nat_stride[0] = s;
  }
  DimVec out_sizes, src_strides;  // out's dims in memory order, read from the natural layout
  bool natural = true;
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t j = std::find(args.out_spec.begin(), args.out_spec.end(), d) - args.out_spec.begin();
    out_sizes.push_back(args.out_shape[d]);
    src_strides.push_back(nat_stride[j]);
    if (args.out_shape[d] != 1 && nat_stride[j] != out_strides_dense[d]) natural = false;
  }
  const bool direct_out = natural && SameRepresentation(out_dtype, acc);
  std::shared_ptr<Buffer> out_buf;
  void* obuf = args.out;
  if (!direct_out) {
    out_buf = Buffer::Allocate(total * ItemSize(acc));
    obuf = out_buf->data();
  }
  OutputSink sink;
  sink.acc_dtype = acc;
  sink.out_dtype = out_dtype;
  sink.acc = obuf;
  sink.out = args.out;
  sink.ranged = natural;
  sink.convert = !direct_out;
  sink.epilogue = &args.epilogue;

  // An lhs of another dtype than the accumulator (f16/bf16, small integers, bool) is widened
  // once, in one vectorizable pass, instead of once per window position that reads it.
  const void* x = args.lhs;
  std::shared_ptr<Buffer> x_buf;
  if (!SameRepresentation(args.lhs_dtype, acc)) {
    const int64_t n = NumElements(ToShape(args.lhs_shape));
    x_buf = Buffer::Allocate(n * ItemSize(acc));
    PackConvert(args.lhs_dtype, args.lhs, {n}, {1}, acc, x_buf->data());
    x = x_buf->data();
  }

  // 1x1 windows with stride 1 and no padding or dilation whose lhs rows (channels-last) or
  // position columns (channels-first) already form a strided matrix need no im2col.
  // identity_ld: that matrix's leading dimension, 0 when im2col is needed.
  int64_t identity_ld = 0;
  bool identity = g.kprod == 1;
  for (int i = 0; i < g.nsp && identity; ++i) {
    identity = args.window_strides[i] == 1 && args.lhs_dilation[i] == 1 && args.padding_low[i] == 0 &&
               args.padding_high[i] == 0;
  }
  if (identity) {
    DimVec sizes, strides;
    if (channels_last) {
      sizes.push_back(g.n_out);
      strides.push_back(g.ls_n);
    }
    for (int i = 0; i < g.nsp; ++i) {
      sizes.push_back(g.in_size[i]);
      strides.push_back(g.ls_sp[i]);
    }
    const std::optional<int64_t> row_stride = NestedStride(sizes, strides);
    if (channels_last) {
      // Rows (n, position) of stride row_stride, channels contiguous.
      if (row_stride && (g.ls_c == 1 || g.cg == 1)) {
        if (*row_stride == 0) identity_ld = std::max<int64_t>(g.cg, 1);
        else if (*row_stride >= g.cg) identity_ld = *row_stride;
      }
    } else if (row_stride && *row_stride <= 1) {
      // Columns (positions) contiguous, channels of stride ls_c.
      identity_ld = g.cg == 1 ? std::max<int64_t>(g.p, 1) : (g.ls_c >= g.p ? g.ls_c : 0);
    }
  }

  auto run = [&](auto acc_tag) {
    using Acc = typename decltype(acc_tag)::type;
    const Acc* in = static_cast<const Acc*>(x);
    const Acc* wt = static_cast<const Acc*>(w);
    Acc* o = static_cast<Acc*>(obuf);
    if (channels_last && !g.batch_grouped && g.groups > 1 && g.cg == 1) {
      DepthwiseRows<Acc>(g, in, wt, o, sink);
    } else if (channels_last) {
      ConvChannelsLast<Acc>(g, in, wt, o, identity_ld, sink);
    } else {
      ConvChannelsFirst<Acc>(g, in, wt, o, identity_ld, sink);
    }
  };
  switch (acc) {
    case DType::kFloat32: run(TypeTag<float>{}); break;
    case DType::kFloat64: run(TypeTag<double>{}); break;
    case DType::kInt32: run(TypeTag<int32_t>{}); break;
    case DType::kInt64: run(TypeTag<int64_t>{}); break;
    default: throw InternalError("convolution kernel: bad accumulation dtype");
  }

  if (!natural) {
    // Permuted into out_spec at the end: the epilogue then runs as its own pass.
    PackConvert(acc, obuf, out_sizes, src_strides, out_dtype, args.out);
    run_epilogue_over_all();
  }
}

}  // namespace jx::lax::kernels
