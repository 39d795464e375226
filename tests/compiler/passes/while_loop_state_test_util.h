// The loop the transpose of a scan leaves, for the while-loop state passes' tests: a ones
// stack carried unchanged and sliced each trip, a stack read each trip, an element read only
// after the loop.
#pragma once

#include <string>
#include <string_view>

#include "jx/compiler/hlo/hlo_module.h"

namespace jx::hlo::testing {

// g += ones[i] * hs[i] over 5 trips; state (i, g, ones, hs, keep); $NEXT_KEEP is element 4's
// next value, $COND_EXTRA more condition lines.
constexpr std::string_view kLoop = R"(HloModule m
%cond (cs: (s32[], s32[4], s32[5,4], s32[5,4], s32[4])) -> pred[] {
  %cs = (s32[], s32[4]{0}, s32[5,4]{1,0}, s32[5,4]{1,0}, s32[4]{0}) parameter(0)
  %ci = s32[] get-tuple-element(%cs), index=0
  %n = s32[] constant(5)$COND_EXTRA
  ROOT %lt = pred[] compare(%ci, %n), direction=LT
}
%body (s: (s32[], s32[4], s32[5,4], s32[5,4], s32[4])) -> (s32[], s32[4], s32[5,4], s32[5,4], s32[4]) {
  %s = (s32[], s32[4]{0}, s32[5,4]{1,0}, s32[5,4]{1,0}, s32[4]{0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %g = s32[4]{0} get-tuple-element(%s), index=1
  %ones = s32[5,4]{1,0} get-tuple-element(%s), index=2
  %hs = s32[5,4]{1,0} get-tuple-element(%s), index=3
  %keep = s32[4]{0} get-tuple-element(%s), index=4
  %z = s32[] constant(0)
  %o = s32[1,4]{1,0} dynamic-slice(%ones, %i, %z), dynamic_slice_sizes={1,4}
  %h = s32[1,4]{1,0} dynamic-slice(%hs, %i, %z), dynamic_slice_sizes={1,4}
  %oh = s32[1,4]{1,0} multiply(%o, %h)
  %r = s32[4]{0} reshape(%oh)
  %g2 = s32[4]{0} add(%g, %r)
  %one = s32[] constant(1)
  %i2 = s32[] add(%i, %one)
  ROOT %t = (s32[], s32[4]{0}, s32[5,4]{1,0}, s32[5,4]{1,0}, s32[4]{0}) tuple(%i2, %g2, %ones, %hs, $NEXT_KEEP)
}
ENTRY %main (p: s32[4], q: s32[5,4], k: s32[4]) -> (s32[4], s32[5,4], s32[4]) {
  %p = s32[4]{0} parameter(0)
  %q = s32[5,4]{1,0} parameter(1)
  %k = s32[4]{0} parameter(2)
  %c0 = s32[] constant(0)
  %c1 = s32[] constant(1)
  %splat = s32[5,4]{1,0} broadcast(%c1), dimensions={}
  %init = (s32[], s32[4]{0}, s32[5,4]{1,0}, s32[5,4]{1,0}, s32[4]{0}) tuple(%c0, %p, %splat, %q, %k)
  %w = (s32[], s32[4]{0}, s32[5,4]{1,0}, s32[5,4]{1,0}, s32[4]{0}) while(%init), condition=%cond, body=%body
  %wg = s32[4]{0} get-tuple-element(%w), index=1
  %wh = s32[5,4]{1,0} get-tuple-element(%w), index=3
  %wk = s32[4]{0} get-tuple-element(%w), index=4
  ROOT %out = (s32[4]{0}, s32[5,4]{1,0}, s32[4]{0}) tuple(%wg, %wh, %wk)
})";

inline std::string Loop(std::string next_keep = "%keep", std::string cond_extra = "") {
  std::string text(kLoop);
  auto put = [&](const std::string& key, const std::string& value) {
    for (size_t at; (at = text.find(key)) != std::string::npos;) text.replace(at, key.size(), value);
  };
  put("$NEXT_KEEP", next_keep);
  put("$COND_EXTRA", cond_extra);
  return text;
}

inline const HloComputation& Body(const HloModule& module) {
  return *module.entry_computation()->root_instruction()->operand(0)->operand(0)->while_body();
}

}  // namespace jx::hlo::testing
