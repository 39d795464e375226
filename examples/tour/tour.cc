// A short tour of jx: arrays, dtypes and promotion, a few ops, printing.
#include <iostream>

#include <jx/jx.h>

namespace lax = jx::lax;

int main() {
  jx::Array x = jx::Array::FromData(std::vector<float>{0.f, 0.5f, 1.f, 1.5f}.data(), {2, 2}, jx::float32);
  std::cout << "x =\n" << x << "\n";
  std::cout << "sin(x) =\n" << lax::sin(x) << "\n";
  std::cout << "promote(int8, uint8) = " << jx::promote_types(jx::int8, jx::uint8) << "\n";
  return 0;
}
