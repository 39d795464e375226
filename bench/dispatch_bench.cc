// Eager dispatch overhead: one small op end to end (wrapper, weak-type check, Bind, abstract
// eval, output allocation, kernel). Target: lax::add on f32[4] under 0.5 us per op.
// The pieces are timed separately so a regression points at its layer.
#include <benchmark/benchmark.h>

#include <jx/jx.h>
#include "jx/core/interpreter.h"

namespace {

using jx::Array;
namespace lax = jx::lax;

Array Small() {
  const float v[4] = {1, 2, 3, 4};
  return Array::FromData(v, {4}, jx::float32);
}

void BM_EagerAddF32x4(benchmark::State& state) {
  Array x = Small(), y = Small();
  for (auto _ : state) benchmark::DoNotOptimize(lax::add(x, y));
}
BENCHMARK(BM_EagerAddF32x4);

void BM_EagerNegF32x4(benchmark::State& state) {
  Array x = Small();
  for (auto _ : state) benchmark::DoNotOptimize(lax::neg(x));
}
BENCHMARK(BM_EagerNegF32x4);

// A weak C++ scalar: adds a convert_element_type (here a no-op) and a broadcast_in_dim.
void BM_EagerAddWeakScalar(benchmark::State& state) {
  Array x = Small();
  for (auto _ : state) benchmark::DoNotOptimize(lax::add(x, 2.0));
}
BENCHMARK(BM_EagerAddWeakScalar);

void BM_EagerLtF32x4(benchmark::State& state) {
  Array x = Small(), y = Small();
  for (auto _ : state) benchmark::DoNotOptimize(lax::lt(x, y));
}
BENCHMARK(BM_EagerLtF32x4);

// Layers: Bind straight to the primitive (no wrapper), and the output allocation alone.
void BM_BindAddF32x4(benchmark::State& state) {
  Array x = Small(), y = Small();
  lax::RegisterAll();
  const Array args[2] = {x, y};
  for (auto _ : state) benchmark::DoNotOptimize(jx::Bind(lax::kAdd, args));
}
BENCHMARK(BM_BindAddF32x4);

void BM_ArrayEmptyF32x4(benchmark::State& state) {
  const jx::ShapedArray aval{{4}, jx::float32};
  for (auto _ : state) benchmark::DoNotOptimize(Array::Empty(aval));
}
BENCHMARK(BM_ArrayEmptyF32x4);

}  // namespace

BENCHMARK_MAIN();
