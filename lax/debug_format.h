// Internal to jx::debug: Python's str.format, as jax.debug.print applies it to its arguments.
//
// A format string is parsed once into literal text and replacement fields
// (`{}`, `{0}`, `{name}`, each with an optional `!s`/`!r` conversion and a `:spec`), and a
// field's value is written by Python's format(value, spec) rules for a NumPy value: an
// empty spec prints str(array); a non-empty spec applies to 0-d arrays only, as the Python
// scalar they hold (bool and integers as int, floats as float: the format mini-language's
// fill, align, sign, z, #, 0, width, grouping, precision and type); an n-d array with a
// spec is NumPy's TypeError.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "absl/types/span.h"
#include "jx/core/array.h"
#include "jx/core/shape.h"

namespace jx::debug::internal {

struct ReplacementField {
  std::string text;        // the field as written, "{x:.2f}", for errors
  size_t arg = 0;          // index into positional arguments, then named ones
  char conversion = '\0';  // '\0', 's' or 'r'
  std::string spec;        // after ':'
};

using FormatPiece = std::variant<std::string, ReplacementField>;

// Parses fmt against `num_positional` positional arguments and the named ones (whose
// indices follow the positional ones). Throws ValueError naming the field for an unmatched
// brace, an index out of range, an unknown name, mixed automatic and manual numbering,
// attribute or element access, nested fields in a spec, or a bad conversion.
std::vector<FormatPiece> ParseFormat(std::string_view fmt, size_t num_positional,
                                     absl::Span<const std::string> names);

// Checks that a field can format a value of this aval (the spec's syntax and its type
// against the dtype; a spec on an n-d array is a TypeError). Throws naming the field.
void CheckField(std::string_view fmt, const ReplacementField& field, const ShapedArray& aval);

// format(value, spec) after the field's conversion.
std::string FormatField(std::string_view fmt, const ReplacementField& field, const Array& value);

// Python's format(x, spec) for a float, an integer and a string (exposed for tests).
std::string FormatFloat(double x, std::string_view spec);
std::string FormatInt(int64_t x, std::string_view spec);
std::string FormatUInt(uint64_t x, std::string_view spec);
std::string FormatString(std::string_view s, std::string_view spec);

}  // namespace jx::debug::internal
