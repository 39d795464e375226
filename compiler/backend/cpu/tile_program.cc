#include "jx/compiler/backend/cpu/tile_program.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "jx/compiler/backend/cpu/tile_ops.h"
#include "jx/compiler/hlo/hlo_computation.h"
#include "jx/compiler/hlo/hlo_evaluator.h"
#include "jx/compiler/hlo/instruction_map.h"
#include "jx/compiler/hlo/instruction_prefetch.h"
#include "jx/compiler/hlo/status_macros.h"
#include "jx/compiler/hlo/str_util.h"

namespace jx::cpu::internal {

using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::Literal;
using hlo::Shape;

namespace {

constexpr int kMaxRank = 64;
// Bytes of L1 a strip's working set may take: the live registers plus this strip and the
// prefetched next strip of every streamed input and of the output (L1D is 32-48 KiB).
constexpr int64_t kStripWorkingSet = 20 << 10;
// A program of several ops (a chain) runs strips of this many bytes of its widest type: each
// op's result is still in L1 when the next op reads it, and the loop around the ops runs
// often enough that the next strip's prefetches keep ahead. (The 8-op chain over 16M f32, in
// process CPU time on the shared 2-core machine: 1.60-1.71x hand-fused with working-set
// strips of 2.9 KB, 1.44-1.53x with 1 KB, 1.47-1.52x with 768 bytes, which was slower on
// L2-resident data. With the faster exp, before straight evaluation: 1.40-1.47x with 1 KB,
// 1.49-1.55x with 2 KB, 1.50-1.60x with 4 KB; with it, 1.26-1.33x with 1 KB.) A lone op streams from its input to its output and keeps the longer
// strips, where fewer calls cost less, and so do programs whose loads restart an odometer
// per strip (gathers, iota, broadcast runs).
constexpr int64_t kChainStripBytes = 1024;

std::vector<int64_t> RowMajor(absl::Span<const int64_t> dims) {
  std::vector<int64_t> s(dims.size());
  int64_t acc = 1;
  for (int64_t i = static_cast<int64_t>(dims.size()) - 1; i >= 0; --i) {
    s[i] = acc;
    acc *= dims[i];
  }
  return s;
}

int64_t Product(absl::Span<const int64_t> dims) {
  int64_t p = 1;
  for (int64_t d : dims) p *= d;
  return p;
}

// Strides of size-1 dims never matter (that coordinate is always 0).
std::vector<int64_t> Normalized(const std::vector<int64_t>& strides,
                                const std::vector<int64_t>& dims) {
  std::vector<int64_t> s = strides;
  for (size_t k = 0; k < s.size(); ++k) {
    if (dims[k] == 1) s[k] = 0;
  }
  return s;
}

std::vector<int64_t> NonUnitDims(absl::Span<const int64_t> dims) {
  std::vector<int64_t> v;
  for (int64_t d : dims) {
    if (d != 1) v.push_back(d);
  }
  return v;
}

// The same stage with size-1 dims dropped and adjacent dims walked as one merged
// (strides[k] == strides[k + 1] * dims[k + 1]), so runs along the innermost dim are as long
// as the map allows.
IndexStage Simplified(const IndexStage& s) {
  IndexStage out;
  out.offset = s.offset;
  for (size_t k = 0; k < s.dims.size(); ++k) {
    if (s.dims[k] == 1) continue;
    if (!out.dims.empty() && out.strides.back() == s.strides[k] * s.dims[k]) {
      out.dims.back() *= s.dims[k];
      out.strides.back() = s.strides[k];
    } else {
      out.dims.push_back(s.dims[k]);
      out.strides.push_back(s.strides[k]);
    }
  }
  return out;
}

// The current stage as linear positions in the instruction's row-major element order.
IndexStage FinishStage(const IndexMap& m, absl::Span<const int64_t> x_dims) {
  IndexStage s;
  s.dims = m.q_dims;
  s.strides.assign(m.q_dims.size(), 0);
  const std::vector<int64_t> rm = RowMajor(x_dims);
  for (size_t j = 0; j < m.x.size(); ++j) {
    s.offset += m.x[j].offset * rm[j];
    if (m.x[j].q_dim >= 0) s.strides[m.x[j].q_dim] += m.x[j].mult * rm[j];
  }
  return s;
}

// L_out == L_in for every input position.
bool IsIdentityStage(const IndexStage& s) {
  return s.offset == 0 && Normalized(s.strides, s.dims) == Normalized(RowMajor(s.dims), s.dims);
}
bool IsShiftStage(const IndexStage& s) {
  return Normalized(s.strides, s.dims) == Normalized(RowMajor(s.dims), s.dims);
}

// The map of operand 0 of the shape op `instr`, given instr's own map.
IndexMap ThroughShapeOp(const HloInstruction& instr, const IndexMap& m) {
  const Shape& ys = instr.operand(0)->shape();
  absl::Span<const int64_t> y_dims = ys.dimensions();
  IndexMap out;
  out.stages = m.stages;
  out.q_dims = m.q_dims;
  out.x.resize(y_dims.size());
  switch (instr.opcode()) {
    case HloOpcode::kBroadcast:
      for (size_t i = 0; i < y_dims.size(); ++i) out.x[i] = m.x[instr.dimensions(i)];
      break;
    case HloOpcode::kTranspose:
      for (size_t i = 0; i < m.x.size(); ++i) out.x[instr.dimensions(i)] = m.x[i];
      break;
    case HloOpcode::kSlice:
      for (size_t i = 0; i < y_dims.size(); ++i) {
        const int64_t start = instr.slice_starts()[i];
        const int64_t stride = instr.slice_strides().empty() ? 1 : instr.slice_strides()[i];
        out.x[i] = {m.x[i].q_dim, m.x[i].mult * stride, start + stride * m.x[i].offset};
      }
      break;
    case HloOpcode::kReverse:
      out.x = m.x;
      for (int64_t d : instr.dimensions()) {
        out.x[d] = {m.x[d].q_dim, -m.x[d].mult, (y_dims[d] - 1) - m.x[d].offset};
      }
      break;
    case HloOpcode::kCopy:
      out.x = m.x;
      break;
    default: {  // reshape / bitcast: the linear position is kept
      if (y_dims == instr.shape().dimensions()) {
        out.x = m.x;
        break;
      }
      if (absl::Span<const int64_t> x_dims = instr.shape().dimensions();
          NonUnitDims(y_dims) == NonUnitDims(x_dims)) {
        // Only size-1 dims added or dropped: every other dim keeps its coordinate, in order,
        // so the map stays one stage (no index vector for the loads under it).
        size_t j = 0;
        for (size_t i = 0; i < y_dims.size(); ++i) {
          if (y_dims[i] == 1) continue;  // out.x[i] stays {-1, 0, 0}: coordinate 0
          while (x_dims[j] == 1) ++j;
          out.x[i] = m.x[j++];
        }
        break;
      }
      IndexStage s = FinishStage(m, instr.shape().dimensions());
      if (!IsIdentityStage(s)) out.stages.push_back(std::move(s));
      out = IndexMap{std::move(out.stages), {}, {}};
      IndexMap id = IndexMap::Identity(y_dims);
      out.q_dims = std::move(id.q_dims);
      out.x = std::move(id.x);
      break;
    }
  }
  return out;
}

bool IsTransparent(const HloInstruction& instr) {
  switch (instr.opcode()) {
    case HloOpcode::kBroadcast: case HloOpcode::kTranspose: case HloOpcode::kSlice:
    case HloOpcode::kReverse: case HloOpcode::kReshape: case HloOpcode::kCopy:
      return true;
    case HloOpcode::kBitcast:
      return instr.shape().element_type() == instr.operand(0)->shape().element_type() &&
             Product(instr.shape().dimensions()) ==
                 Product(instr.operand(0)->shape().dimensions());
    default:
      return false;
  }
}

// Starts loading what the walk from the root reads of an instruction: its opcode, id and
// operands, and its shape's element type and dims (the first two of its five cache lines;
// loading all five spent the memory's bandwidth on lines the walk never reads).
void PrefetchWalkedLines(const HloInstruction* instr) {
  __builtin_prefetch(instr);
  __builtin_prefetch(&instr->shape());
}

// For each instruction of a fused computation (by unique id), the one stored kPrefetchAhead
// slots before it. The walk from the root meets a fused chain's instructions in reverse
// storage order (operands are created before their users), and each step reads an operand
// the previous step found: on a program past the cache, a miss that waits for the one
// before. Given the instruction it expands, the walk loads the one it will reach
// kPrefetchAhead steps later meanwhile. (A table of the instructions themselves: GCC 12
// dropped the prefetch when it followed slot arithmetic and a bounds check.)
class PrefetchTable {
 public:
  // `stored` and `ahead` are the caller's (kept between compiles: a 100k-instruction
  // kernel's are 2.4 MB); the table uses them until it is destroyed.
  PrefetchTable(const hlo::HloComputation& c, std::vector<std::pair<const HloInstruction*, int64_t>>& stored,
                std::vector<const HloInstruction*>& ahead)
      : ahead_(ahead) {
    // One read of each instruction (its id); the ids are kept for the second loop.
    stored.clear();
    stored.reserve(static_cast<size_t>(c.instruction_count()));
    int64_t hi = -1;
    hlo::ForEachInStorageOrder(c, [](const HloInstruction* ahead) { __builtin_prefetch(ahead); },  // the id's line
                               [&](const HloInstruction* instr) {
      const int64_t id = instr->unique_id();
      lowest_id_ = stored.empty() ? id : std::min(lowest_id_, id);
      hi = std::max(hi, id);
      stored.emplace_back(instr, id);
      return true;
    });
    count_ = stored.size();
    ahead_.clear();
    if (stored.empty() || lowest_id_ < 0) return;
    ahead_.assign(static_cast<size_t>(hi - lowest_id_ + 1), stored.front().first);
    for (size_t i = hlo::kPrefetchAhead; i < stored.size(); ++i) {
      ahead_[stored[i].second - lowest_id_] = stored[i - hlo::kPrefetchAhead].first;
    }
  }
  // The computation's lowest unique id and its number of instructions (for InstructionMap).
  int64_t lowest_id() const { return count_ == 0 ? -1 : lowest_id_; }
  size_t count() const { return count_; }

  void PrefetchAhead(const HloInstruction* instr) const {
    const uint64_t i = static_cast<uint64_t>(instr->unique_id() - lowest_id_);
    if (i < ahead_.size()) PrefetchWalkedLines(ahead_[i]);
  }

 private:
  std::vector<const HloInstruction*>& ahead_;  // by unique id - lowest_id_
  int64_t lowest_id_ = 0;
  size_t count_ = 0;
};

// A frame of TileProgram::Compile's explicit post-order walk (32 bytes: a 100k-op chain is
// a walk 100k frames deep).
struct WalkFrame {
  const HloInstruction* instr;
  int map;                 // in the program's MapTable
  uint32_t children = 0;   // this frame's operands to visit: pending[children, ...)
  uint32_t next = 0;       // the next of them
  uint32_t nodes = 0;      // their nodes: visited[nodes, ...)
  bool expanded = false;
};

// What TileProgram::Compile uses only while it runs, kept by the thread between compiles:
// for a 100k-op fused chain that is ~10 MB of stacks and tables, which fresh vectors paid
// for in page faults and, as they grew by doubling, in copies. A thread keeps the largest
// it has needed. A compile on a thread whose scratch is taken (none nests today) gets its own.
struct CompileScratch {
  std::vector<std::pair<const HloInstruction*, int>> pending;
  std::vector<int> visited;
  std::vector<WalkFrame> stack;
  std::vector<std::pair<const HloInstruction*, int64_t>> stored;  // PrefetchTable's
  std::vector<const HloInstruction*> ahead;                       // PrefetchTable's
  std::vector<int> last_use;
  std::vector<int> free_regs;
  bool in_use = false;
};

// The thread's scratch for the length of one compile (every vector is cleared before use,
// so what an earlier compile left in it is never read).
class ScratchLease {
 public:
  ScratchLease() {
    thread_local CompileScratch kept;
    if (kept.in_use) {
      own_ = std::make_unique<CompileScratch>();
      scratch_ = own_.get();
    } else {
      scratch_ = &kept;
    }
    scratch_->in_use = true;
  }
  ~ScratchLease() { scratch_->in_use = false; }
  ScratchLease(const ScratchLease&) = delete;
  ScratchLease& operator=(const ScratchLease&) = delete;
  CompileScratch& operator*() const { return *scratch_; }
  CompileScratch* operator->() const { return scratch_; }

 private:
  std::unique_ptr<CompileScratch> own_;
  CompileScratch* scratch_;
};

// The distinct index maps of one program, numbered. An elementwise operand is read at its
// user's map, so most instructions share a map: the memo keys on (instruction, map number)
// and a map is copied only where a shape op or a scalar broadcast makes a new one.
class MapTable {
 public:
  int Intern(IndexMap m) {
    auto [it, inserted] = ids_.try_emplace(Bytes(m), static_cast<int>(maps_.size()));
    if (inserted) maps_.push_back(std::move(m));
    return it->second;
  }
  // Valid until the next Intern.
  const IndexMap& operator[](int id) const { return maps_[id]; }

 private:
  static std::string Bytes(const IndexMap& m) {
    std::vector<int64_t> v;
    for (const IndexStage& s : m.stages) {
      v.push_back(-1);
      v.insert(v.end(), s.dims.begin(), s.dims.end());
      v.push_back(-2);
      v.insert(v.end(), s.strides.begin(), s.strides.end());
      v.push_back(s.offset);
    }
    v.push_back(-3);
    v.insert(v.end(), m.q_dims.begin(), m.q_dims.end());
    v.push_back(-4);
    for (const AffineDim& a : m.x) {
      v.push_back(a.q_dim);
      v.push_back(a.mult);
      v.push_back(a.offset);
    }
    return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(int64_t));
  }

  absl::flat_hash_map<std::string, int> ids_;
  std::vector<IndexMap> maps_;
};

// Per-thread scratch: registers and index vectors of the tile being computed.
uint8_t* ThreadScratch(size_t bytes) {
  struct Buffer {
    uint8_t* data = nullptr;
    size_t size = 0;
    ~Buffer() { std::free(data); }
  };
  thread_local Buffer buf;
  if (buf.size < bytes) {
    std::free(buf.data);
    buf.size = (bytes + 63) / 64 * 64;
    buf.data = static_cast<uint8_t*>(std::aligned_alloc(64, buf.size));
  }
  return buf.data;
}

// The odometer of a stage: q, the current output position delinearized over the stage's
// dims, and lin, its source position. Set by division once, then advanced without dividing
// as long as a step is shorter than twice a dim's extent (a run, or a strip).
struct RunCursor {
  int64_t q[kMaxRank];
  int64_t lin;
  void Start(const IndexStage& s, int64_t pos) {
    lin = s.offset;
    for (int k = static_cast<int>(s.dims.size()) - 1; k >= 0; --k) {
      q[k] = pos % s.dims[k];
      pos /= s.dims[k];
      lin += q[k] * s.strides[k];
    }
  }
  void Advance(const IndexStage& s, int64_t m) {
    for (int k = static_cast<int>(s.dims.size()) - 1; k >= 0 && m > 0; --k) {
      int64_t next = q[k] + m;
      if (next < s.dims[k]) {
        lin += m * s.strides[k];
        q[k] = next;
        return;
      }
      m = next < 2 * s.dims[k] ? 1 : next / s.dims[k];
      next -= m * s.dims[k];
      lin += (next - q[k]) * s.strides[k];
      q[k] = next;
    }
  }
};

// Linear source positions for output elements [start, start + n) through `stages`.
void ComputeIndices(const std::vector<IndexStage>& stages, int64_t start, int64_t n,
                    int64_t* idx) {
  const IndexStage& s0 = stages[0];
  const int r = static_cast<int>(s0.dims.size());
  RunCursor c;
  c.Start(s0, start);
  if (r == 0) {
    for (int64_t j = 0; j < n; ++j) idx[j] = c.lin;
  } else {
    const int64_t inner = s0.dims[r - 1], inner_stride = s0.strides[r - 1];
    for (int64_t j = 0; j < n;) {
      // A run along the innermost dim, then one odometer carry.
      const int64_t run = std::min(inner - c.q[r - 1], n - j);
      for (int64_t t = 0; t < run; ++t) idx[j + t] = c.lin + t * inner_stride;
      j += run;
      c.Advance(s0, run);
    }
  }
  for (size_t si = 1; si < stages.size(); ++si) {
    const IndexStage& s = stages[si];
    const int rk = static_cast<int>(s.dims.size());
    for (int64_t j = 0; j < n; ++j) {
      int64_t v = idx[j], l = s.offset;
      for (int k = rk - 1; k >= 0; --k) {
        l += (v % s.dims[k]) * s.strides[k];
        v /= s.dims[k];
      }
      idx[j] = l;
    }
  }
}

// Output elements [start, start + n) loaded through a single index stage, one run along its
// innermost dim at a time: a run with stride 1 is copied, a run with stride 0 (a broadcast
// along the inner dim) is one value splatted, any other stride a strided copy. No index is
// computed per element.
template <typename Bits>
void GatherRuns(const IndexStage& s, const void* src, int64_t start, int64_t n, void* out) {
  const Bits* in = static_cast<const Bits*>(src);
  Bits* o = static_cast<Bits*>(out);
  const int r = static_cast<int>(s.dims.size());
  if (r == 0) {
    std::fill(o, o + n, in[s.offset]);
    return;
  }
  RunCursor c;
  c.Start(s, start);
  const int64_t inner = s.dims[r - 1], inner_stride = s.strides[r - 1];
  for (int64_t j = 0; j < n;) {
    const int64_t run = std::min(inner - c.q[r - 1], n - j);
    const Bits* from = in + c.lin;
    if (inner_stride == 1) {
      std::memcpy(o + j, from, run * sizeof(Bits));
    } else if (inner_stride == 0) {
      std::fill(o + j, o + j + run, *from);
    } else {
      for (int64_t t = 0; t < run; ++t) o[j + t] = from[t * inner_stride];
    }
    j += run;
    c.Advance(s, run);
  }
}
void GatherRunsBytes(const IndexStage& s, const void* src, int64_t start, int64_t n,
                     int64_t esize, void* out) {
  switch (esize) {
    case 1: return GatherRuns<uint8_t>(s, src, start, n, out);
    case 2: return GatherRuns<uint16_t>(s, src, start, n, out);
    case 4: return GatherRuns<uint32_t>(s, src, start, n, out);
    default: return GatherRuns<uint64_t>(s, src, start, n, out);
  }
}

template <typename Bits>
void Gather(const void* src, const int64_t* idx, int64_t n, void* out) {
  const Bits* s = static_cast<const Bits*>(src);
  Bits* o = static_cast<Bits*>(out);
  for (int64_t j = 0; j < n; ++j) o[j] = s[idx[j]];
}
void GatherBytes(const void* src, const int64_t* idx, int64_t n, int64_t esize, void* out) {
  switch (esize) {
    case 1: return Gather<uint8_t>(src, idx, n, out);
    case 2: return Gather<uint16_t>(src, idx, n, out);
    case 4: return Gather<uint32_t>(src, idx, n, out);
    default: return Gather<uint64_t>(src, idx, n, out);
  }
}
template <typename Bits>
void Splat(const void* src, int64_t n, void* out) {
  Bits v;
  std::memcpy(&v, src, sizeof(Bits));
  Bits* o = static_cast<Bits*>(out);
  for (int64_t j = 0; j < n; ++j) o[j] = v;
}
void SplatBytes(const void* src, int64_t n, int64_t esize, void* out) {
  switch (esize) {
    case 1: return Splat<uint8_t>(src, n, out);
    case 2: return Splat<uint16_t>(src, n, out);
    case 4: return Splat<uint32_t>(src, n, out);
    default: return Splat<uint64_t>(src, n, out);
  }
}

}  // namespace

IndexMap IndexMap::Identity(absl::Span<const int64_t> dims) {
  IndexMap m;
  m.q_dims.assign(dims.begin(), dims.end());
  for (size_t j = 0; j < dims.size(); ++j) m.x.push_back({static_cast<int64_t>(j), 1, 0});
  return m;
}

LeafResolver ParameterLeaves() {
  return [](const HloInstruction* instr) -> int {
    return instr->opcode() == HloOpcode::kParameter ? static_cast<int>(instr->parameter_number())
                                                    : -1;
  };
}

LeafResolver OperandLeaves(const HloInstruction* root) {
  return [root](const HloInstruction* instr) -> int {
    if (instr == root) return -1;
    for (int64_t i = 0; i < root->operand_count(); ++i) {
      if (root->operand(i) == instr) return static_cast<int>(i);
    }
    return -1;
  };
}

// A load or an op. A 100k-op fused chain compiles to 100k nodes, so a node is small (56
// bytes): its operands are a range of operand_nodes_, and what few nodes need lives in side
// tables (index stages, an op's loops for operands read as one value, a fallback op).
struct TileProgram::Node {
  enum Kind : uint8_t { kContiguous, kScalar, kRunGather, kGather, kIota, kNative, kFallback };
  Kind kind = kContiguous;
  bool splat = false;             // kScalar: some reader needs the value as a tile
  uint8_t scalar_operands = 0;    // kNative: operands read as one value (tile_ops.h)
  int32_t esize = 0;
  int32_t input = -1;             // source slot, or -1 for constant data
  int32_t reg = -1;
  int32_t first_operand = 0;      // ops: operand_nodes_[first_operand, + num_operands)
  int32_t num_operands = 0;
  // kRunGather / kGather / kIota: in indexed_loads_; kNative with a run-gather operand: in
  // scalar_variants_; kFallback: in fallback_ops_; -1 otherwise.
  int32_t extra = -1;
  int64_t offset = 0;                 // kContiguous / kScalar
  const uint8_t* constant = nullptr;  // constant source
  TileOpFn fn = nullptr;              // kNative
};

struct TileProgram::IndexedLoad {
  std::vector<IndexStage> stages;     // kRunGather (one stage) / kGather / kIota
  // kRunGather with a stride-0 or stride-1 innermost dim: its run length (0 otherwise). A
  // strip inside one run reads the source in place, or as one value for stride 0.
  int64_t run = 0;
  IndexToValueFn to_value = nullptr;  // kIota
};

// A native op's loop for each set of operands read as one value (nullptr where it has
// none), for strips where a broadcast-run operand is one value.
struct TileProgram::ScalarVariants {
  TileOpFn fn[8] = {};
};

struct TileProgram::Step {
  TileOpFn fn = nullptr;
  int node = 0;      // the op's node (its value's slot)
  int num_args = 0;
  int args[3] = {};  // operand nodes
  int reg = -1;      // scratch register of the result (unless the root writes to out)
};

TileProgram::~TileProgram() = default;

absl::Span<const int> TileProgram::operands(const Node& n) const {
  return absl::MakeConstSpan(operand_nodes_.data() + n.first_operand, static_cast<size_t>(n.num_operands));
}

absl::StatusOr<std::unique_ptr<TileProgram>> TileProgram::Compile(
    const HloInstruction* root, const LeafResolver& leaves, int64_t tile_elements,
    const IndexMap* root_map) {
  if (!root->shape().IsArray()) return absl::UnimplementedError("tuple-shaped root");
  std::unique_ptr<TileProgram> p(new TileProgram());
  p->tile_ = std::max<int64_t>(16, (tile_elements + 15) / 16 * 16);
  p->esize_ = hlo::ByteSizeOfPrimitiveType(root->shape().element_type());
  const int64_t tile = p->tile_;
  int fallback_count = 0;

  // Source loads and iota: the map decides how a leaf is read.
  auto add_load = [&](const HloInstruction& instr, const IndexMap& m, int input,
                      const uint8_t* constant) {
    Node n;
    n.esize = static_cast<int32_t>(hlo::ByteSizeOfPrimitiveType(instr.shape().element_type()));
    n.input = input;
    n.constant = constant;
    std::vector<IndexStage> stages = m.stages;
    IndexStage last = FinishStage(m, instr.shape().dimensions());
    if (!IsIdentityStage(last)) stages.push_back(std::move(last));
    bool all_zero = !stages.empty();
    if (!stages.empty()) {
      for (int64_t s : Normalized(stages.back().strides, stages.back().dims)) all_zero &= s == 0;
    }
    if (stages.empty()) {
      n.kind = Node::kContiguous;
    } else if (stages.size() == 1 && IsShiftStage(stages[0])) {
      n.kind = Node::kContiguous;
      n.offset = stages[0].offset;
    } else if (all_zero) {
      n.kind = Node::kScalar;
      n.offset = stages.back().offset;
    } else {
      n.kind = stages.size() == 1 ? Node::kRunGather : Node::kGather;
      for (IndexStage& s : stages) s = Simplified(s);
      IndexedLoad load;
      if (n.kind == Node::kRunGather && !stages[0].dims.empty() &&
          (stages[0].strides.back() == 0 || stages[0].strides.back() == 1)) {
        load.run = stages[0].dims.back();
      }
      load.stages = std::move(stages);
      n.extra = static_cast<int32_t>(p->indexed_loads_.size());
      p->indexed_loads_.push_back(std::move(load));
    }
    p->nodes_.push_back(std::move(n));
    return static_cast<int>(p->nodes_.size() - 1);
  };

  // An explicit post-order walk. The operands still to visit and the nodes of those
  // visited live in two stacks shared by every frame (a frame owns the tail it pushed), so a
  // step allocates nothing once the stacks have grown.
  using Frame = WalkFrame;
  const ScratchLease scratch;
  MapTable maps;
  // Per instruction, the node built for each index map it was reached with (nearly always
  // one). A fused computation is the kernel, so a table over its ids costs the kernel's size
  // (a hash map of 100k entries for a long fused chain cost a cache miss per lookup); a root
  // in a bigger computation (an unfused op) walks a few instructions: hashed.
  // The first (map, node) of each instruction is in the table, any other in `more_built`.
  struct Built {
    int map = -1;
    int node = -1;
  };
  const hlo::HloComputation* kernel = root->parent();
  const bool whole_kernel = kernel != nullptr && kernel->IsFusionComputation();
  const std::optional<PrefetchTable> prefetch =
      whole_kernel ? std::optional<PrefetchTable>(std::in_place, *kernel, scratch->stored, scratch->ahead)
                   : std::nullopt;
  hlo::InstructionMap<Built> memo = whole_kernel ? hlo::InstructionMap<Built>(prefetch->lowest_id(), prefetch->count())
                                                 : hlo::InstructionMap<Built>(-1, 0);
  absl::flat_hash_map<std::pair<const HloInstruction*, int>, int> more_built;
  auto built_node = [&](const HloInstruction* instr, int map) {
    const Built& b = memo.Get(instr);
    if (b.map == map) return b.node;
    if (b.map < 0 || more_built.empty()) return -1;
    auto it = more_built.find({instr, map});
    return it == more_built.end() ? -1 : it->second;
  };
  // About a node per instruction: growing by doubling would move every node and hold both
  // copies at once (40 MB of nodes at the peak for a 100k-op fused chain).
  if (whole_kernel) {
    p->nodes_.reserve(static_cast<size_t>(kernel->instruction_count()));
    p->operand_nodes_.reserve(2 * static_cast<size_t>(kernel->instruction_count()));
  }
  std::vector<std::pair<const HloInstruction*, int>>& pending = scratch->pending;
  std::vector<int>& visited = scratch->visited;
  std::vector<Frame>& stack = scratch->stack;
  pending.clear();
  visited.clear();
  stack.clear();
  auto push = [&](const HloInstruction* instr, int map) {
    const auto children = static_cast<uint32_t>(pending.size());
    stack.push_back({.instr = instr, .map = map, .children = children, .next = children,
                     .nodes = static_cast<uint32_t>(visited.size())});
  };
  push(root, maps.Intern(root_map != nullptr ? *root_map : IndexMap::Identity(root->shape().dimensions())));
  // Pops the finished top frame, handing its node to the frame below.
  int result = -1;
  auto finish = [&](int node) {
    const Frame& f = stack.back();
    Built& built = memo[f.instr];
    if (built.map < 0) {
      built = {f.map, node};
    } else if (built.map != f.map) {
      more_built.try_emplace({f.instr, f.map}, node);
    }
    pending.resize(f.children);
    visited.resize(f.nodes);
    stack.pop_back();
    if (stack.empty()) result = node; else visited.push_back(node);
    // The frames below finish next, reading their instructions again (long evicted on a
    // deep walk); their addresses are on the stack.
    if (stack.size() > hlo::kPrefetchAhead) PrefetchWalkedLines(stack[stack.size() - 1 - hlo::kPrefetchAhead].instr);
  };
  while (!stack.empty()) {
    Frame& f = stack.back();
    if (!f.expanded) {
      const IndexMap& map = maps[f.map];  // until the next Intern
      f.expanded = true;
      int node = built_node(f.instr, f.map);
      if (node >= 0) {  // reached before with this map
        finish(node);
        continue;
      }
      if (prefetch) prefetch->PrefetchAhead(f.instr);
      if (const int slot = leaves(f.instr); slot >= 0) {
        if (!f.instr->shape().IsArray()) return absl::UnimplementedError("tuple leaf");
        p->num_inputs_ = std::max(p->num_inputs_, slot + 1);
        node = add_load(*f.instr, map, slot, nullptr);
      } else if (f.instr->opcode() == HloOpcode::kConstant) {
        if (!f.instr->shape().IsArray()) return absl::UnimplementedError("tuple constant");
        node = add_load(*f.instr, map, -1, f.instr->literal().untyped_data().data());
      } else if (f.instr->opcode() == HloOpcode::kIota) {
        const hlo::PrimitiveType t = f.instr->shape().element_type();
        IndexToValueFn to_value = FindIndexToValue(t);
        if (to_value == nullptr) {
          return absl::UnimplementedError(hlo::StrCat("iota of ", hlo::PrimitiveTypeName(t)));
        }
        const AffineDim& a = map.x[f.instr->iota_dimension()];
        IndexStage s;
        s.dims = map.q_dims;
        s.strides.assign(s.dims.size(), 0);
        if (a.q_dim >= 0) s.strides[a.q_dim] = a.mult;
        s.offset = a.offset;
        IndexedLoad load;
        load.stages = map.stages;
        load.stages.push_back(std::move(s));
        load.to_value = to_value;
        Node n;
        n.kind = Node::kIota;
        n.esize = static_cast<int32_t>(hlo::ByteSizeOfPrimitiveType(t));
        n.extra = static_cast<int32_t>(p->indexed_loads_.size());
        p->indexed_loads_.push_back(std::move(load));
        p->nodes_.push_back(n);
        node = static_cast<int>(p->nodes_.size() - 1);
      } else if (IsTransparent(*f.instr)) {
        const int through = maps.Intern(ThroughShapeOp(*f.instr, map));
        if (static_cast<int>(maps[through].q_dims.size()) > kMaxRank) {
          return absl::UnimplementedError("rank too large");
        }
        pending.emplace_back(f.instr->operand(0), through);
      } else if (f.instr->IsElementwise() && f.instr->shape().IsArray()) {
        for (const HloInstruction* op : f.instr->operands()) {
          if (!op->shape().IsArray()) return absl::UnimplementedError("tuple operand");
          if (op->shape().rank() == f.instr->shape().rank()) {
            pending.emplace_back(op, f.map);
          } else if (op->shape().rank() == 0) {  // implicit scalar broadcast
            IndexMap scalar = maps[f.map];
            scalar.x.clear();
            pending.emplace_back(op, maps.Intern(std::move(scalar)));
          } else {
            return absl::UnimplementedError("elementwise operand of another rank");
          }
        }
      } else {
        return absl::UnimplementedError(
            hlo::StrCat(hlo::HloOpcodeString(f.instr->opcode()), " in a loop kernel"));
      }
      if (node >= 0) {
        finish(node);
        continue;
      }
    }
    if (f.next < pending.size()) {
      const auto [child, child_map] = pending[f.next++];
      push(child, child_map);  // invalidates f
      continue;
    }
    int node;
    if (IsTransparent(*f.instr)) {
      node = visited[f.nodes];
    } else {
      Node n;
      n.esize = static_cast<int32_t>(hlo::ByteSizeOfPrimitiveType(f.instr->shape().element_type()));
      n.first_operand = static_cast<int32_t>(p->operand_nodes_.size());
      p->operand_nodes_.insert(p->operand_nodes_.end(), visited.begin() + static_cast<std::ptrdiff_t>(f.nodes),
                               visited.end());
      if (f.instr->opcode() == HloOpcode::kReducePrecision) {
        // Its parameters travel as a second, scalar operand (the library kernel's in[1]).
        auto bits = std::make_unique<lax::kernels::ReducePrecisionBits>();
        bits->exponent_bits = static_cast<int32_t>(std::min<int64_t>(f.instr->exponent_bits(), 64));
        bits->mantissa_bits = static_cast<int32_t>(std::min<int64_t>(f.instr->mantissa_bits(), 64));
        Node params;
        params.kind = Node::kScalar;
        params.esize = sizeof(lax::kernels::ReducePrecisionBits);
        params.constant = reinterpret_cast<const uint8_t*>(bits.get());
        p->op_params_.push_back(std::move(bits));
        p->nodes_.push_back(params);
        p->operand_nodes_.push_back(static_cast<int>(p->nodes_.size() - 1));
      }
      n.num_operands = static_cast<int32_t>(p->operand_nodes_.size()) - n.first_operand;
      const int* operands = p->operand_nodes_.data() + n.first_operand;
      // Scalar operands (broadcast constants, scalar parameters) stay in a register when
      // the op has a loop for that, instead of being splatted into a tile first.
      unsigned scalars = 0;
      for (int k = 0; k < n.num_operands && k < 8; ++k) {
        if (p->nodes_[operands[k]].kind == Node::kScalar) scalars |= 1u << k;
      }
      n.fn = scalars != 0 ? FindNativeTileOp(*f.instr, scalars) : nullptr;
      if (n.fn != nullptr) {
        n.scalar_operands = scalars;
      } else {
        n.fn = FindNativeTileOp(*f.instr);
      }
      n.kind = n.fn != nullptr ? Node::kNative : Node::kFallback;
      // Only an operand loaded run by run can be one value in a strip.
      bool run_operand = false;
      for (int k = 0; k < n.num_operands; ++k) run_operand |= p->nodes_[operands[k]].kind == Node::kRunGather;
      if (n.kind == Node::kNative && n.num_operands <= 3 && run_operand) {
        ScalarVariants v;
        for (unsigned mask = 1; mask < (1u << n.num_operands); ++mask) {
          if ((mask & n.scalar_operands) == n.scalar_operands) v.fn[mask] = FindNativeTileOp(*f.instr, mask);
        }
        v.fn[n.scalar_operands] = n.fn;
        n.extra = static_cast<int32_t>(p->scalar_variants_.size());
        p->scalar_variants_.push_back(v);
      }
      if (n.kind == Node::kFallback) {
        // Slow path: the op runs through the reference evaluator on [tile] literals.
        if (p->fallback_module_ == nullptr) {
          p->fallback_module_ = std::make_unique<hlo::HloModule>("tile_fallback");
        }
        hlo::HloComputation* c = p->fallback_module_->AddComputation(
            hlo::StrCat("op_", fallback_count++));
        std::vector<HloInstruction*> params;
        for (int64_t i = 0; i < f.instr->operand_count(); ++i) {
          auto param = HloInstruction::Create(
              HloOpcode::kParameter,
              Shape(f.instr->operand(i)->shape().element_type(), {tile}), {});
          param->set_parameter_number(i);
          params.push_back(c->AddInstruction(std::move(param)));
        }
        auto op = HloInstruction::Create(
            f.instr->opcode(), Shape(f.instr->shape().element_type(), {tile}), params);
        if (f.instr->opcode() == HloOpcode::kCompare) {
          op->set_comparison_direction(f.instr->comparison_direction());
          if (f.instr->HasAttr(hlo::HloAttr::kCompareType)) {
            op->set_comparison_type(f.instr->comparison_type());
          }
        }
        if (f.instr->opcode() == HloOpcode::kReducePrecision) {
          op->set_reduce_precision_bits(f.instr->exponent_bits(), f.instr->mantissa_bits());
        }
        HloInstruction* added = c->AddInstruction(std::move(op));
        c->set_root_instruction(added);
        n.extra = static_cast<int32_t>(p->fallback_ops_.size());
        p->fallback_ops_.push_back(added);
      }
      p->nodes_.push_back(n);
      node = static_cast<int>(p->nodes_.size() - 1);
    }
    finish(node);
  }

  // The root must be the last node (it is, unless it was memoized earlier: then copy it).
  if (result != static_cast<int>(p->nodes_.size()) - 1) {
    return absl::InternalError("tile program root is not the last node");
  }
  // A scalar load is splatted only for readers that need it as a tile.
  for (const Node& n : p->nodes_) {
    for (int k = 0; k < n.num_operands; ++k) {
      if (((n.scalar_operands >> k) & 1) == 0) p->nodes_[p->operand_nodes_[n.first_operand + k]].splat = true;
    }
  }
  p->nodes_[result].splat = true;
  // Registers: every node but in-place contiguous loads and unsplatted scalars gets one;
  // freed after its last use.
  std::vector<int>& last_use = scratch->last_use;
  last_use.assign(p->nodes_.size(), -1);
  for (size_t i = 0; i < p->nodes_.size(); ++i) {
    for (int op : p->operands(p->nodes_[i])) last_use[op] = static_cast<int>(i);
  }
  last_use[result] = static_cast<int>(p->nodes_.size());
  std::vector<int>& free_regs = scratch->free_regs;
  free_regs.clear();
  int num_regs = 0;
  for (size_t i = 0; i < p->nodes_.size(); ++i) {
    Node& n = p->nodes_[i];
    const bool in_place_load =
        n.kind == Node::kContiguous || (n.kind == Node::kScalar && !n.splat);
    if (!in_place_load || static_cast<int>(i) == result) {
      if (free_regs.empty()) {
        n.reg = num_regs++;
      } else {
        n.reg = free_regs.back();
        free_regs.pop_back();
      }
    }
    for (int op : p->operands(n)) {
      if (last_use[op] == static_cast<int>(i) && p->nodes_[op].reg >= 0) {
        // An operand used twice by this node is freed once.
        bool seen = false;
        for (int r : free_regs) seen |= r == p->nodes_[op].reg;
        if (!seen) free_regs.push_back(p->nodes_[op].reg);
      }
    }
  }
  p->num_registers_ = num_regs;
  // Strip size: ops run strip by strip within a tile so that one op's operands and result
  // are still in L1 when the next op reads them. (A fallback op runs the evaluator on
  // whole [tile] literals, so a program with one keeps strip = tile.)
  int64_t max_esize = 1, streams = 1, index_bytes = 0;
  bool restarts_per_strip = false;  // a load that restarts an odometer every strip
  for (const Node& n : p->nodes_) {
    max_esize = std::max<int64_t>(max_esize, n.esize);
    streams += n.kind == Node::kContiguous && n.input >= 0;
    if (n.kind == Node::kGather || n.kind == Node::kIota) index_bytes = 8;
    restarts_per_strip |= n.kind == Node::kGather || n.kind == Node::kIota || n.kind == Node::kRunGather;
  }
  const int64_t per_element = (num_regs + 2 * streams) * max_esize + index_bytes;
  int64_t strip = kStripWorkingSet / per_element / 16 * 16;
  int native_ops = 0;
  for (const Node& n : p->nodes_) native_ops += n.kind == Node::kNative;
  if (native_ops >= 2 && !restarts_per_strip) strip = std::min(strip, kChainStripBytes / max_esize);
  // Broadcast runs shorter than a strip: strips of one run each (tiles hold whole runs), so
  // that every strip reads its runs in place or as one value, without copies.
  int64_t run = 0;
  for (IndexedLoad& load : p->indexed_loads_) {
    if (fallback_count > 0) load.run = 0;  // the evaluator reads every operand as a tile
    if (load.run > 0) run = run == 0 ? load.run : std::min(run, load.run);
  }
  if (run >= 64 && run < strip && tile % run == 0) strip = run;
  p->strip_ = fallback_count > 0 ? tile : std::clamp<int64_t>(strip / 16 * 16, 64, tile);
  if (fallback_count > 0) TileFallbackRecorder::Record(p->FallbackOpNames());
  // Straight programs: steps for the native ops, their operand slots fixed now.
  p->straight_ = fallback_count == 0;
  if (p->straight_) p->steps_.reserve(native_ops);  // one block, not a doubling series
  int contiguous_loads = 0;
  for (size_t i = 0; i < p->nodes_.size() && p->straight_; ++i) {
    const Node& n = p->nodes_[i];
    if (n.kind == Node::kContiguous) {
      p->straight_ = n.reg < 0 && ++contiguous_loads <= 8;
    } else if (n.kind == Node::kScalar) {
      p->straight_ = !n.splat;
    } else if (n.kind == Node::kNative && n.num_operands <= 3) {
      Step step{n.fn, static_cast<int>(i), n.num_operands, {}, n.reg};
      const absl::Span<const int> operands = p->operands(n);
      std::copy(operands.begin(), operands.end(), step.args);
      p->steps_.push_back(step);
    } else {
      p->straight_ = false;
    }
  }
  if (!p->straight_) p->steps_ = std::vector<Step>();
  return p;
}

namespace {
thread_local TileFallbackRecorder* g_innermost_recorder = nullptr;
}  // namespace

TileFallbackRecorder::TileFallbackRecorder() : parent_(g_innermost_recorder) { g_innermost_recorder = this; }
TileFallbackRecorder::~TileFallbackRecorder() { g_innermost_recorder = parent_; }

void TileFallbackRecorder::Record(const std::string& op_names) {
  TileFallbackRecorder* r = g_innermost_recorder;
  if (r == nullptr) return;
  if (!r->ops_.empty()) r->ops_ += ", ";
  r->ops_ += op_names;
}

bool TileProgram::InputReadInPlace(int slot) const {
  for (const Node& n : nodes_) {
    if (n.input != slot || n.constant != nullptr) continue;
    if (n.kind == Node::kContiguous && n.offset == 0) continue;
    if (n.kind == Node::kContiguous || n.kind == Node::kScalar || n.kind == Node::kRunGather ||
        n.kind == Node::kGather) {
      return false;
    }
  }
  return true;
}

int TileProgram::num_indexed_loads() const {
  int count = 0;
  for (const Node& n : nodes_) count += n.kind == Node::kGather || n.kind == Node::kIota;
  return count;
}

int TileProgram::num_fallback_ops() const {
  int count = 0;
  for (const Node& n : nodes_) count += n.kind == Node::kFallback;
  return count;
}

std::string TileProgram::FallbackOpNames() const {
  std::string names;
  for (const Node& n : nodes_) {
    if (n.kind != Node::kFallback) continue;
    if (!names.empty()) names += ", ";
    const HloInstruction* op = fallback_ops_[n.extra];
    names += hlo::StrCat(hlo::HloOpcodeString(op->opcode()), " ",
                         hlo::PrimitiveTypeName(op->shape().element_type()));
  }
  return names;
}

void TileProgram::EvaluateStraight(const void* const* inputs, int64_t start, int64_t n,
                                   void* out, bool in_place) const {
  const size_t reg_bytes = static_cast<size_t>(strip_) * 8 + 320;  // as Evaluate's
  uint8_t* scratch = ThreadScratch(reg_bytes * num_registers_ + nodes_.size() * sizeof(const void*));
  const void** ptr = reinterpret_cast<const void**>(scratch + reg_bytes * num_registers_);
  // Loads are read in place and scalars as one value: element `start` of each, once.
  struct Load {
    int node;
    const char* base;
    int64_t esize;
  };
  Load loads[8];  // straight programs have at most 8
  int num_loads = 0;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node& node = nodes_[i];
    if (node.kind == Node::kNative) continue;
    const char* src = node.constant != nullptr ? reinterpret_cast<const char*>(node.constant)
                                               : static_cast<const char*>(inputs[node.input]);
    if (node.kind == Node::kScalar) {
      ptr[i] = src + node.offset * node.esize;
    } else {
      loads[num_loads++] = {static_cast<int>(i), src + (node.offset + start) * node.esize, node.esize};
    }
  }
  // The next strip of every streamed load and of the output is prefetched while this one
  // computes, spread over the ops (as Evaluate does): step j prefetches bytes
  // [share * j, share * (j + 1)) of those strips laid end to end, loads first. Past the
  // tile's end that is the next tile's first strip, usually this thread's next.
  const int num_steps = static_cast<int>(steps_.size());
  const int num_streams = num_loads + (in_place ? 0 : 1);
  int64_t stream_bytes = 0;
  for (int k = 0; k < num_streams; ++k) stream_bytes += strip_ * (k < num_loads ? loads[k].esize : esize_);
  const int64_t share = (stream_bytes / num_steps + 63) / 64 * 64;
  char* out_bytes = static_cast<char*>(out);
  auto prefetch = [&](int64_t s, int64_t m, int j) {
    int64_t lo = share * j, hi = std::min(stream_bytes, share * (j + 1));
    for (int k = 0; k < num_streams && lo < hi; ++k) {
      const bool is_out = k == num_loads;
      const int64_t es = is_out ? esize_ : loads[k].esize, len = strip_ * es;
      const char* next = (is_out ? out_bytes : loads[k].base) + (s + m) * es;
      if (lo < len) {
        const char* end = next + std::min(hi, len);
        if (is_out) {
          for (const char* a = next + lo; a < end; a += 64) __builtin_prefetch(a, 1, 3);
        } else {
          for (const char* a = next + lo; a < end; a += 64) __builtin_prefetch(a, 0, 3);
        }
      }
      lo = std::max<int64_t>(0, lo - len);
      hi -= len;
    }
  };
  const int root = static_cast<int>(nodes_.size()) - 1;
  for (int64_t s = 0; s < n; s += strip_) {
    const int64_t m = std::min(strip_, n - s);
    for (int k = 0; k < num_loads; ++k) ptr[loads[k].node] = loads[k].base + s * loads[k].esize;
    for (int j = 0; j < num_steps; ++j) {
      prefetch(s, m, j);
      const Step& step = steps_[j];
      void* dest = step.node == root && !in_place ? static_cast<void*>(out_bytes + s * esize_)
                                                  : static_cast<void*>(scratch + reg_bytes * step.reg);
      const void* args[3];
      for (int k = 0; k < step.num_args; ++k) args[k] = ptr[step.args[k]];
      step.fn(args, dest, m);
      ptr[step.node] = dest;
    }
    if (in_place) std::memmove(out_bytes + s * esize_, ptr[root], m * esize_);
  }
}

void TileProgram::Evaluate(const void* const* inputs, int64_t start, int64_t n, void* out,
                           bool in_place) const {
  if (n <= 0) return;
  if (straight_) return EvaluateStraight(inputs, start, n, out, in_place);
  // Registers are staggered by 5 cache lines so that a loop's operands and result never sit
  // at the same address modulo 4 KiB (4K aliasing stalls loads behind unrelated stores).
  const size_t reg_bytes = static_cast<size_t>(strip_) * 8 + 320;
  uint8_t* scratch = ThreadScratch(reg_bytes * (num_registers_ + 1) +
                                   nodes_.size() * (sizeof(RunCursor) + sizeof(const void*) + 1));
  int64_t* idx = reinterpret_cast<int64_t*>(scratch + reg_bytes * num_registers_);
  RunCursor* cursor = reinterpret_cast<RunCursor*>(scratch + reg_bytes * (num_registers_ + 1));
  const void** ptr = reinterpret_cast<const void**>(cursor + nodes_.size());
  // Per node: its value in this strip is one element at ptr (a stride-0 run).
  uint8_t* one_value = reinterpret_cast<uint8_t*>(ptr + nodes_.size());
  const int root = static_cast<int>(nodes_.size()) - 1;
  // Streamed inputs and the output: the next strip is prefetched while this one computes,
  // a few lines before each op (the hardware prefetcher falls behind while the ops run,
  // and a burst of prefetches at the start of a strip stalls on the miss queue).
  struct Stream {
    const char* base;  // element `start` of the stream
    int64_t esize;
    bool write;
  };
  Stream streams[8];
  int num_streams = 0;
  for (const Node& node : nodes_) {
    if (node.kind == Node::kContiguous && node.input >= 0 && num_streams < 7) {
      streams[num_streams++] = {static_cast<const char*>(inputs[node.input]) +
                                    (node.offset + start) * node.esize,
                                node.esize, false};
    }
  }
  if (!in_place) streams[num_streams++] = {static_cast<const char*>(out), esize_, true};
  uint8_t* out_bytes = static_cast<uint8_t*>(out);
  for (int64_t s = 0; s < n; s += strip_) {
    const int64_t m = std::min(strip_, n - s);
    // The next strip, [s + m, s + 2m) of each stream, as one byte range over the streams
    // laid end to end; op i prefetches its share [total * i / ops, total * (i + 1) / ops).
    int64_t total = 0;
    for (int k = 0; k < num_streams; ++k) total += m * streams[k].esize;
    auto prefetch = [&](int64_t lo, int64_t hi) {
      for (int k = 0; k < num_streams && lo < hi; ++k) {
        const int64_t len = m * streams[k].esize;
        if (lo < len) {
          const char* base = streams[k].base + (s + m) * streams[k].esize;
          const char* end = base + std::min(hi, len);
          if (streams[k].write) {
            for (const char* a = base + lo; a < end; a += 64) __builtin_prefetch(a, 1, 3);
          } else {
            for (const char* a = base + lo; a < end; a += 64) __builtin_prefetch(a, 0, 3);
          }
        }
        lo = std::max<int64_t>(0, lo - len);
        hi -= len;
      }
    };
    for (int i = 0; i <= root; ++i) {
      prefetch(total * i / (root + 1) / 64 * 64, total * (i + 1) / (root + 1) / 64 * 64);
      const Node& node = nodes_[i];
      void* dest = node.reg >= 0 ? scratch + reg_bytes * node.reg : nullptr;
      if (i == root && !in_place) dest = out_bytes + s * esize_;
      const uint8_t* src = node.constant != nullptr
                               ? node.constant
                               : static_cast<const uint8_t*>(
                                     node.input >= 0 ? inputs[node.input] : nullptr);
      const int64_t pos = start + s;
      switch (node.kind) {
        case Node::kContiguous:
          if (dest == nullptr) {
            ptr[i] = src + (node.offset + pos) * node.esize;
          } else {
            std::memmove(dest, src + (node.offset + pos) * node.esize, m * node.esize);
            ptr[i] = dest;
          }
          break;
        case Node::kScalar:
          if (dest == nullptr) {
            ptr[i] = src + node.offset * node.esize;
          } else {
            SplatBytes(src + node.offset * node.esize, m, node.esize, dest);
            ptr[i] = dest;
          }
          break;
        case Node::kRunGather: {
          one_value[i] = 0;
          const IndexedLoad& load = indexed_loads_[node.extra];
          const IndexStage& stage = load.stages[0];
          if (load.run > 0 && i != root) {
            RunCursor& c = cursor[i];
            if (s == 0) {
              c.Start(stage, pos);
            } else {
              c.Advance(stage, strip_);
            }
            if (c.q[stage.dims.size() - 1] + m <= load.run) {
              // The strip lies in one run: read in place, or as one value.
              ptr[i] = src + c.lin * node.esize;
              one_value[i] = stage.strides.back() == 0;
              break;
            }
          }
          GatherRunsBytes(stage, src, pos, m, node.esize, dest);
          ptr[i] = dest;
          break;
        }
        case Node::kGather:
          ComputeIndices(indexed_loads_[node.extra].stages, pos, m, idx);
          GatherBytes(src, idx, m, node.esize, dest);
          ptr[i] = dest;
          break;
        case Node::kIota:
          ComputeIndices(indexed_loads_[node.extra].stages, pos, m, idx);
          indexed_loads_[node.extra].to_value(idx, dest, m);
          ptr[i] = dest;
          break;
        case Node::kNative: {
          const void* args[3];
          const int* operands = operand_nodes_.data() + node.first_operand;
          unsigned scalars = node.scalar_operands;
          for (int k = 0; k < node.num_operands; ++k) {
            args[k] = ptr[operands[k]];
            if (nodes_[operands[k]].kind == Node::kRunGather && one_value[operands[k]]) {
              scalars |= 1u << k;
            }
          }
          TileOpFn fn = node.fn;
          if (scalars != node.scalar_operands) {
            fn = node.extra >= 0 ? scalar_variants_[node.extra].fn[scalars] : nullptr;
            if (fn == nullptr) {  // no loop for these scalars: splat them into their registers
              for (int k = 0; k < node.num_operands; ++k) {
                const int op = operands[k];
                if (((scalars & ~node.scalar_operands) >> k & 1) == 0 || !one_value[op]) continue;
                uint8_t* reg = scratch + reg_bytes * nodes_[op].reg;
                SplatBytes(ptr[op], m, nodes_[op].esize, reg);
                ptr[op] = args[k] = reg;
                one_value[op] = 0;
              }
              fn = node.fn;
            }
          }
          fn(args, dest, m);
          ptr[i] = dest;
          break;
        }
        case Node::kFallback: {
          // Slow path: the reference evaluator computes this op on the tile.
          const HloInstruction& op = *fallback_ops_[node.extra];
          const int* operands = operand_nodes_.data() + node.first_operand;
          std::vector<Literal> args;
          std::vector<const Literal*> arg_ptrs;
          args.reserve(node.num_operands);
          for (int k = 0; k < node.num_operands; ++k) {
            args.emplace_back(op.operand(k)->shape());
            const int64_t es = nodes_[operands[k]].esize;
            std::memcpy(args.back().mutable_untyped_data().data(), ptr[operands[k]], m * es);
            arg_ptrs.push_back(&args.back());
          }
          hlo::HloEvaluator evaluator;
          absl::StatusOr<Literal> r = evaluator.EvaluateInstruction(op, arg_ptrs);
          if (r.ok()) {
            std::memcpy(dest, r->untyped_data().data(), m * node.esize);
          } else {
            std::memset(dest, 0xff, m * node.esize);  // unreachable for verified modules
          }
          ptr[i] = dest;
          break;
        }
      }
    }
    if (in_place) std::memmove(out_bytes + s * esize_, ptr[root], m * esize_);
  }
}

}  // namespace jx::cpu::internal
