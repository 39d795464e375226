// Status plumbing for compiler code (Abseil only; core's macros are not visible here).
//
//   HLO_RETURN_IF_ERROR(VerifyHloModule(*module));
//   HLO_ASSIGN_OR_RETURN(HloInstruction* add, b.Add(x, y));
#pragma once

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define HLO_RETURN_IF_ERROR(expr)                    \
  do {                                               \
    if (absl::Status hlo_status_ = (expr); !hlo_status_.ok()) return hlo_status_; \
  } while (0)

#define HLO_STATUS_CONCAT_INNER(a, b) a##b
#define HLO_STATUS_CONCAT(a, b) HLO_STATUS_CONCAT_INNER(a, b)
#define HLO_ASSIGN_OR_RETURN(lhs, expr) \
  HLO_ASSIGN_OR_RETURN_IMPL(HLO_STATUS_CONCAT(hlo_statusor_, __LINE__), lhs, expr)
#define HLO_ASSIGN_OR_RETURN_IMPL(statusor, lhs, expr) \
  auto statusor = (expr);                              \
  if (!statusor.ok()) return statusor.status();        \
  lhs = *std::move(statusor)
