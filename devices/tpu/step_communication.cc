#include "jx/devices/tpu/step_communication.h"

#include <algorithm>
#include <iterator>
#include <string_view>

namespace jx::tpu {
namespace {

constexpr std::string_view kKindOrder[] = {"all-gather", "reduce-scatter", "all-reduce", "all-to-all",
                                           "collective-permute"};

size_t KindRank(std::string_view kind) {
  return static_cast<size_t>(std::find(std::begin(kKindOrder), std::end(kKindOrder), kind) -
                             std::begin(kKindOrder));
}

}  // namespace

std::vector<CollectiveKindTotals> CommunicationByKind(const StepReport& step) {
  std::vector<CollectiveKindTotals> kinds;
  for (const CollectiveStepEntry& c : step.collectives) {
    auto it = std::find_if(kinds.begin(), kinds.end(), [&](const CollectiveKindTotals& k) { return k.kind == c.kind; });
    if (it == kinds.end()) it = kinds.insert(kinds.end(), CollectiveKindTotals{.kind = c.kind});
    ++it->collectives;
    it->runs += c.runs;
    it->seconds += c.seconds;
    it->exposed_seconds += c.exposed_seconds;
  }
  std::stable_sort(kinds.begin(), kinds.end(), [](const CollectiveKindTotals& a, const CollectiveKindTotals& b) {
    const size_t ra = KindRank(a.kind), rb = KindRank(b.kind);
    return ra != rb ? ra < rb : (ra == std::size(kKindOrder) && a.kind < b.kind);
  });
  return kinds;
}

}  // namespace jx::tpu
