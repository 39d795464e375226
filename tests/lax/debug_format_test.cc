// jx::debug::print's format strings: Python's str.format as jax.debug.print applies it.
// https://docs.jax.dev/en/latest/_autosummary/jax.debug.print.html ("fmt: A format string,
// e.g. 'hello {x}', that will be used to format input arguments, like str.format") and
// https://docs.jax.dev/en/latest/debugging/print_breakpoint.html; the expected strings of the
// spec table are CPython 3's format(value, spec).
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <jx/jx.h>

#include "jx/lax/debug_format.h"

namespace jx::debug_format_test {
namespace {

namespace jnp = jx::numpy;
using debug::internal::FormatFloat;
using debug::internal::FormatInt;
using debug::internal::FormatString;
using debug::internal::FormatUInt;
using ::testing::internal::CaptureStdout;
using ::testing::internal::GetCapturedStdout;

struct FloatCase {
  double x;
  const char* spec;
  const char* want;
};

TEST(DebugFormat, FloatSpecsMatchPython) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<FloatCase> cases = {
      {2.0, ".2f", "2.00"},
      {static_cast<double>(0.1f), ">8", "0.10000000149011612"},
      {3.14159, ".3", "3.14"},
      {123.0, ".3", "1.23e+02"},
      {1e+16, ">3", "1e+16"},
      {1.5e-05, "<9", "1.5e-05  "},
      {1234.5, ".2", "1.2e+03"},
      {-0.0001, "z.2f", "0.00"},
      {-0.0001, ".2f", "-0.00"},
      {2.0, "#.0f", "2."},
      {0.25, "+.2%", "+25.00%"},
      {-1234.5, "010,.1f", "-001,234.5"},
      {1234567.0, "n", "1.23457e+06"},
      {1e-05, "g", "1e-05"},
      {1.0, "#g", "1.00000"},
      {12345.678, "_.2f", "12_345.68"},
      {-2.5, "^+10.3e", "-2.500e+00"},
      {inf, "010", "0000000inf"},
      {nan, "+F", "+NAN"},
      {0.0, ".3", "0.0"},
      {-0.0, ">5", " -0.0"},
      {100.0, "*^9.1f", "**100.0**"},
      {1.0, ".1", "1e+00"},
      {0.5, ".1", "0.5"},
      {123456789.0, "G", "1.23457E+08"},
      {1e+100, ".3e", "1.000e+100"},
      {9.9999, ".2f", "10.00"},
      {0.000123456, ">1", "0.000123456"},
      {255.0, " 10.4g", "       255"},
  };
  for (const FloatCase& c : cases) {
    EXPECT_EQ(FormatFloat(c.x, c.spec), c.want) << "format(" << c.x << ", '" << c.spec << "')";
  }
}

struct IntCase {
  int64_t x;
  const char* spec;
  const char* want;
};

TEST(DebugFormat, IntSpecsMatchPython) {
  const std::vector<IntCase> cases = {
      {5, ".2f", "5.00"},        {255, "#x", "0xff"},        {255, "_b", "1111_1111"},
      {65, "c", "A"},            {-1234, "010,", "-0,001,234"}, {1234, "08,", "0,001,234"},
      {0xabcde, "08_x", "00a_bcde"}, {-42, "+05d", "-0042"},   {42, " d", " 42"},
      {7, "*<5", "7****"},       {7, "^5", "  7  "},         {-7, "=+6", "-    7"},
      {1234567, ",", "1,234,567"}, {255, "#010X", "0X000000FF"}, {8, "#o", "0o10"},
      {5, "e", "5.000000e+00"},  {std::numeric_limits<int64_t>::min(), "", "-9223372036854775808"},
  };
  for (const IntCase& c : cases) {
    EXPECT_EQ(FormatInt(c.x, c.spec), c.want) << "format(" << c.x << ", '" << c.spec << "')";
  }
  EXPECT_EQ(FormatUInt(std::numeric_limits<uint64_t>::max(), ","), "18,446,744,073,709,551,615");
  EXPECT_EQ(FormatString("abc", ">5"), "  abc");
  EXPECT_EQ(FormatString("abcdef", ".2"), "ab");
}

TEST(DebugFormat, SpecErrorsArePythons) {
  EXPECT_THROW(FormatInt(5, ".2d"), ValueError);    // Precision not allowed in integer format specifier
  EXPECT_THROW(FormatFloat(5.0, "d"), ValueError);  // Unknown format code 'd' for object of type 'float'
  EXPECT_THROW(FormatInt(5, ",x"), ValueError);     // Cannot specify ',' with 'x'.
  EXPECT_THROW(FormatFloat(5.0, ".f"), ValueError); // Format specifier missing precision
  EXPECT_THROW(FormatFloat(5.0, "ff"), ValueError); // Invalid format specifier
  EXPECT_THROW(FormatString("a", "+"), ValueError); // Sign not allowed in string format specifier
  try {
    FormatFloat(5.0, "d");
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(), "Unknown format code 'd' for object of type 'float'");
  }
}

// The jax.debug.print docstring's form: jax.debug.print("hello {x}", x=x).
TEST(DebugPrintFormat, NamedFields) {
  CaptureStdout();
  debug::print("hello {x}", debug::arg("x", jnp::array(std::vector<float>{1, 2})));
  EXPECT_EQ(GetCapturedStdout(), "hello [1. 2.]\n");
  CaptureStdout();
  debug::print("{} and {y} and {y!r}", 1, debug::arg("y", 2.5f));
  EXPECT_EQ(GetCapturedStdout(), "1 and 2.5 and Array(2.5, dtype=float32, weak_type=True)\n");
}

// Format specs apply to 0-d values as Python scalars, under jit as eagerly.
TEST(DebugPrintFormat, SpecsUnderJitAndVmap) {
  auto f = [](const Array& x, const Array& step) {
    debug::print("loss {l:.2f} step {s:>4} {s:#x}", debug::arg("l", x), debug::arg("s", step));
    return x * 2.0f;
  };
  CaptureStdout();
  f(Array(3.14159f), Array(int32_t{42}));
  EXPECT_EQ(GetCapturedStdout(), "loss 3.14 step   42 0x2a\n");
  CaptureStdout();
  jit(f)(Array(3.14159f), Array(int32_t{42}));
  EXPECT_EQ(GetCapturedStdout(), "loss 3.14 step   42 0x2a\n");
  CaptureStdout();
  vmap([](const Array& x) {
    debug::print("{:>8.3f}|", x);
    return x;
  })(jnp::array(std::vector<float>{1.5f, -2.25f}));
  EXPECT_EQ(GetCapturedStdout(), "   1.500|\n  -2.250|\n");
  CaptureStdout();
  debug::print("{:>5}", true);  // Python: format(True, '>5') == '    1'
  EXPECT_EQ(GetCapturedStdout(), "    1\n");
}

std::string MessageOf(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

// Errors name the field, at the call (before anything is staged), as Python's str.format
// raises KeyError/IndexError/ValueError and NumPy TypeError for an n-d array with a spec.
TEST(DebugPrintFormat, ErrorsNameTheField) {
  EXPECT_EQ(MessageOf([] { debug::print("x: {name}", debug::arg("x", 1)); }),
            "[debug.print] format \"x: {name}\": field {name}: no argument named 'name' (named arguments: x)");
  EXPECT_EQ(MessageOf([] { debug::print("x: {x:.2d}", debug::arg("x", 1.5f)); }),
            "[debug.print] format \"x: {x:.2d}\" field {x:.2d} for a f32[] value: "
            "Unknown format code 'd' for object of type 'float'");
  EXPECT_THROW(debug::print("{:.2f}", jnp::array(std::vector<float>{1, 2})), TypeError);
  EXPECT_THROW(debug::print("{x[0]}", debug::arg("x", 1)), ValueError);
  EXPECT_THROW(debug::print("{x!a}", debug::arg("x", 1)), ValueError);
  EXPECT_THROW(debug::print("{x} {x}", debug::arg("x", 1), debug::arg("x", 2)), ValueError);
  EXPECT_THROW(jit([](const Array& x) {
                 debug::print("{:.2f}", x);
                 return x;
               })(jnp::zeros({2})),
               TypeError);
  // A spec on an n-d array after !s formats the string, as Python does.
  CaptureStdout();
  debug::print("{!s:>9}", jnp::array(std::vector<float>{1, 2}));
  EXPECT_EQ(GetCapturedStdout(), "  [1. 2.]\n");
}

}  // namespace
}  // namespace jx::debug_format_test
