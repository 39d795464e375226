#include "jx/core/out_sharding.h"

#include "absl/hash/hash.h"
#include "absl/strings/str_join.h"
#include "jx/core/errors.h"
#include "jx/core/str_util.h"

namespace jx {

Param OutShardingParam::Make(std::vector<std::vector<std::string>> spec) {
  return Param(std::shared_ptr<const ParamObject>(std::make_shared<OutShardingParam>(std::move(spec))));
}

size_t OutShardingParam::Hash() const { return absl::HashOf(spec_); }

bool OutShardingParam::Equals(const ParamObject& other) const {
  const auto* o = dynamic_cast<const OutShardingParam*>(&other);
  return o != nullptr && o->spec_ == spec_;
}

std::string OutShardingParam::ToString() const {
  auto quoted = [](std::string* out, const std::string& a) { StrAppend(out, "'", a, "'"); };
  std::vector<std::string> dims;
  for (const std::vector<std::string>& axes : spec_) {
    if (axes.empty()) {
      dims.push_back("None");
    } else if (axes.size() == 1) {
      dims.push_back(StrCat("'", axes[0], "'"));
    } else {
      dims.push_back(StrCat("(", absl::StrJoin(axes, ", ", quoted), ")"));
    }
  }
  return StrCat("P(", absl::StrJoin(dims, ", "), ")");
}

std::vector<std::vector<std::string>> OutSharding::ForRank(std::string_view op, int64_t rank) const {
  if (is_none()) return {};
  if (entries_ > rank) {
    ThrowOpError<ValueError>(op, "out_sharding has ", entries_, " entries for a result of rank ", rank);
  }
  return spec_(rank);
}

namespace {

// JAX's AbstractMesh repr: "AbstractMesh('x': 4, 'y': 2)".
std::string MeshText(const MeshAxisSizes& axes) {
  std::vector<std::string> parts;
  for (const auto& [name, size] : axes) parts.push_back(StrCat("'", name, "': ", size));
  return StrCat("AbstractMesh(", absl::StrJoin(parts, ", "), ")");
}

}  // namespace

void OutSharding::CheckMesh(std::string_view op, absl::Span<const Array> operands) const {
  if (!mesh_.has_value()) return;
  std::optional<MeshAxisSizes> context = MeshAxesOfArguments(operands);
  if (!context.has_value() && ContextMeshAxes() != nullptr) context = *ContextMeshAxes();
  if (!context.has_value() || *context == *mesh_) return;
  ThrowOpError<ValueError>(op, "Context mesh ", MeshText(*context), " should match the mesh of sharding ",
                           MeshText(*mesh_), " passed to ", op, " (the operands' mesh is the context's)");
}

void SetOutSharding(ParamMap& params, std::string_view op, const OutSharding& out_sharding, int64_t rank,
                    absl::Span<const Array> operands) {
  out_sharding.CheckMesh(op, operands);
  if (!out_sharding.is_none()) params.Set("out_sharding", OutShardingParam::Make(out_sharding.ForRank(op, rank)));
}

const std::vector<std::vector<std::string>>* OutShardingOf(const ParamMap& params) {
  const Param* p = params.Find("out_sharding");
  if (p == nullptr || p->is_none()) return nullptr;
  const auto* o = dynamic_cast<const OutShardingParam*>(params.GetObject("out_sharding").get());
  return o == nullptr ? nullptr : &o->spec();
}

}  // namespace jx
