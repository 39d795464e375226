#include "jx/compiler/hlo/hlo_tiling_attributes.h"

#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_join.h"
#include "jx/compiler/hlo/str_util.h"

namespace jx::hlo {
namespace {

// "{key=value, key=value}" -> map; every key once.
absl::StatusOr<absl::flat_hash_map<std::string, std::string>> ParseFields(std::string_view s,
                                                                         std::string_view what) {
  std::string_view body = StripAsciiWhitespace(s);
  if (!ConsumePrefix(&body, "{") || !ConsumeSuffix(&body, "}")) {
    return absl::InvalidArgumentError(StrCat("bad ", what, " \"", s, "\": expected {...}"));
  }
  absl::flat_hash_map<std::string, std::string> fields;
  for (std::string_view field : StrSplit(body, ',', /*skip_empty=*/true)) {
    std::pair<std::string_view, std::string_view> kv = SplitOnce(field, "=");
    std::string key(StripAsciiWhitespace(kv.first));
    if (!fields.emplace(key, std::string(StripAsciiWhitespace(kv.second))).second) {
      return absl::InvalidArgumentError(StrCat("bad ", what, " \"", s, "\": ", key, " twice"));
    }
  }
  return fields;
}

// Reads the fields a struct needs, failing on a missing or malformed one or a stray key.
class FieldReader {
 public:
  FieldReader(absl::flat_hash_map<std::string, std::string> fields, std::string_view what,
              std::string_view text)
      : fields_(std::move(fields)), what_(what), text_(text) {}

  std::vector<int64_t> Dims(std::string_view key) {
    std::vector<int64_t> out;
    const std::string* value = Find(key);
    if (value == nullptr || value->empty()) return out;
    for (std::string_view part : StrSplit(*value, "x")) {
      int64_t v = 0;
      if (!SimpleAtoi(part, &v) || v < 0) Fail(key);
      out.push_back(v);
    }
    return out;
  }
  int64_t Int(std::string_view key) {
    int64_t v = 0;
    const std::string* value = Find(key);
    if (value != nullptr && (!SimpleAtoi(*value, &v) || v < 0)) Fail(key);
    return v;
  }
  absl::Status Finish() {
    if (status_.ok() && used_ != fields_.size()) {
      status_ = absl::InvalidArgumentError(
          StrCat("bad ", what_, " \"", text_, "\": unknown field"));
    }
    return status_;
  }

 private:
  const std::string* Find(std::string_view key) {
    auto it = fields_.find(std::string(key));
    if (it == fields_.end()) {
      Fail(key);
      return nullptr;
    }
    ++used_;
    return &it->second;
  }
  void Fail(std::string_view key) {
    if (status_.ok()) {
      status_ = absl::InvalidArgumentError(
          StrCat("bad ", what_, " \"", text_, "\": field ", key, " missing or malformed"));
    }
  }

  absl::flat_hash_map<std::string, std::string> fields_;
  std::string_view what_, text_;
  size_t used_ = 0;
  absl::Status status_;
};

std::string Dims(const std::vector<int64_t>& dims) { return absl::StrJoin(dims, "x"); }

}  // namespace

double MxuTiling::UsefulFraction() const {
  const double padded = static_cast<double>(padded_m) * padded_k * padded_n;
  return padded > 0 ? static_cast<double>(m) * k * n / padded : 1.0;
}

std::string MxuTilingToString(const MxuTiling& t) {
  return StrCat("{tile=", t.tile_rows, "x", t.tile_cols, ", mkn=", t.m, "x", t.k, "x", t.n,
                      ", padded_mkn=", t.padded_m, "x", t.padded_k, "x", t.padded_n,
                      ", batch=", t.batch, ", k_tiles=", t.k_tiles, ", n_tiles=", t.n_tiles,
                      ", m_groups=", t.m_groups, ", mxus=", t.mxus, ", waves=", t.waves, "}");
}

absl::StatusOr<MxuTiling> ParseMxuTiling(std::string_view s) {
  absl::StatusOr<absl::flat_hash_map<std::string, std::string>> fields = ParseFields(s, "mxu_tiling");
  if (!fields.ok()) return fields.status();
  FieldReader r(*std::move(fields), "mxu_tiling", s);
  MxuTiling t;
  const std::vector<int64_t> tile = r.Dims("tile"), mkn = r.Dims("mkn"), padded = r.Dims("padded_mkn");
  t.batch = r.Int("batch");
  t.k_tiles = r.Int("k_tiles");
  t.n_tiles = r.Int("n_tiles");
  t.m_groups = r.Int("m_groups");
  t.mxus = r.Int("mxus");
  t.waves = r.Int("waves");
  if (absl::Status st = r.Finish(); !st.ok()) return st;
  if (tile.size() != 2 || mkn.size() != 3 || padded.size() != 3) {
    return absl::InvalidArgumentError(
        StrCat("bad mxu_tiling \"", s, "\": tile takes RxC, mkn and padded_mkn MxKxN"));
  }
  t.tile_rows = tile[0];
  t.tile_cols = tile[1];
  t.m = mkn[0], t.k = mkn[1], t.n = mkn[2];
  t.padded_m = padded[0], t.padded_k = padded[1], t.padded_n = padded[2];
  return t;
}

std::string VmemTilingToString(const VmemTiling& t) {
  return StrCat("{grid=", Dims(t.grid), ", block=", Dims(t.block), ", steps=", t.steps,
                      ", vmem_bytes=", t.vmem_bytes, ", hbm_bytes=", t.hbm_bytes, "}");
}

absl::StatusOr<VmemTiling> ParseVmemTiling(std::string_view s) {
  absl::StatusOr<absl::flat_hash_map<std::string, std::string>> fields = ParseFields(s, "vmem_tiling");
  if (!fields.ok()) return fields.status();
  FieldReader r(*std::move(fields), "vmem_tiling", s);
  VmemTiling t;
  t.grid = r.Dims("grid");
  t.block = r.Dims("block");
  t.steps = r.Int("steps");
  t.vmem_bytes = r.Int("vmem_bytes");
  t.hbm_bytes = r.Int("hbm_bytes");
  if (absl::Status st = r.Finish(); !st.ok()) return st;
  if (t.grid.size() != t.block.size()) {
    return absl::InvalidArgumentError(
        StrCat("bad vmem_tiling \"", s, "\": grid and block differ in rank"));
  }
  return t;
}

}  // namespace jx::hlo
