// The opinfo table: one record per primitive, driving it through every column of the suite.
// Issue 2's column: eager vs a naive float64 reference on random samples of several shapes
// (including 0-d, empty and non-contiguous-derived inputs). Later columns (jvp vs finite
// differences, vjp/jvp dot product, vmap vs a loop, jit vs eager) reuse the same samples.
//
// A family registers its records in tests/opinfo/<family>_opinfo.cc:
//
//   JX_OPINFO(sin) {
//     return jx::opinfo::Unary("sin", lax::sin, [](double x) { return std::sin(x); },
//                              jx::opinfo::kFloatDTypes);
//   }
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <jx/jx.h>

#include "absl/functional/function_ref.h"

namespace jx::opinfo {

// A float64 host array: the reference implementations work on these with plain loops.
struct RefArray {
  Shape shape;
  std::vector<double> data;
  int64_t size() const { return static_cast<int64_t>(data.size()); }
  double& at(const std::vector<int64_t>& idx);
  double at(const std::vector<int64_t>& idx) const;
};
RefArray ToRef(const Array& a);

// One test case: inputs, the op under test (closing over its parameters) and its reference.
struct Sample {
  std::string description;  // "f32[3,4] axes=(1,)"
  std::vector<Array> args;
  std::function<std::vector<Array>(const std::vector<Array>&)> op;
  std::function<std::vector<RefArray>(const std::vector<RefArray>&)> reference;
  // Output dtypes expected from the op (checked exactly).
  std::vector<DType> out_dtypes;
  // False for special values (infinities, NaNs, ties of max/min) where derivatives are not
  // defined: the derivative columns skip the sample; the eager and vmap columns keep it.
  bool derivatives_defined = true;
};

struct Tolerance {
  double rtol = 0, atol = 0;
};

struct OpInfo {
  std::string name;            // the primitive's printed name
  std::vector<DType> dtypes;   // dtypes the samples cover
  // Samples for one dtype; rng is seeded per (op, dtype) so failures reproduce.
  std::function<std::vector<Sample>(DType, std::mt19937_64&)> samples;
  // Tolerance for comparing an output of dtype d against the float64 reference.
  std::function<Tolerance(DType)> tolerance;
  // Differentiable in the sense of issue 3's columns (integer-valued ops are not).
  bool differentiable = true;
  // A collective: its samples run it inside a shard_map over a mesh of simulated chips
  // (tests/opinfo/collectives_opinfo.cc), so the eager column already runs it on chips. The
  // compiled columns (jit, lowering, tpu) compile its shard_map for the mesh's chips: one
  // program per chip whose HLO collectives move the data.
  bool collective = false;
};

// Whether eager ops on sharded arrays run (the SPMD layer's handler is installed): probed once
// with an op on an array sharded over the collective records' chips. The collective records'
// outputs are sharded; the vmap and composition columns compute on them outside the
// shard_map (stacking, slicing, dot products) and skip these records without it.
bool ShardedEagerOpsRun();

// Default tolerances: tight for exact types, scaled by precision for floats.
Tolerance DefaultTolerance(DType d);

// The registry of records (static registration is fine inside a test binary).
std::vector<OpInfo>& Registry();
struct Registrar {
  explicit Registrar(OpInfo (*make)());
};
#define JX_OPINFO(name)                                           \
  static ::jx::opinfo::OpInfo MakeOpInfo_##name();                \
  static ::jx::opinfo::Registrar registrar_##name(&MakeOpInfo_##name); \
  static ::jx::opinfo::OpInfo MakeOpInfo_##name()

// The record named `name` (throws if none).
const OpInfo& FindOpInfo(const std::string& name);
// Every record's name, for INSTANTIATE_TEST_SUITE_P.
std::vector<std::string> AllOpInfoNames();
// The record's samples for dtype d, with the rng seeded per (op, dtype) so failures reproduce.
std::vector<Sample> SamplesFor(const OpInfo& info, DType d);
// got vs want elementwise within tol (NaNs equal), as gtest failures naming `where` and the
// first few differing elements.
void ExpectArraysClose(const Array& got, const Array& want, const Tolerance& tol, const std::string& where);

// Dtype sets.
inline const std::vector<DType> kFloatDTypes = {float16, bfloat16, float32, float64};
inline const std::vector<DType> kIntDTypes = {int8, int16, int32, int64, uint8, uint16, uint32, uint64};
inline const std::vector<DType> kSignedIntDTypes = {int8, int16, int32, int64};
inline const std::vector<DType> kAllDTypes = {bool_, int8, int16, int32, int64, uint8, uint16, uint32,
                                              uint64, float16, bfloat16, float32, float64};
std::vector<DType> Concat(std::vector<DType> a, const std::vector<DType>& b);

// The shapes elementwise samples use: 0-d, empty, vector, matrix, rank 3, and one large
// enough to take the parallel path.
const std::vector<Shape>& ElementwiseShapes();

// A new array whose element i (row-major) is value(i), called in order, stored as the dtype
// stores a double.
Array FillArray(const Shape& shape, DType dtype, absl::FunctionRef<double(int64_t)> value);
// A copy of a with `count` elements, each picked at random (repeats allowed), replaced in turn
// by value(0), value(1), ...
Array WithValuesAtRandom(const Array& a, std::mt19937_64& rng, int64_t count,
                         absl::FunctionRef<double(int64_t)> value);
// Random array of shape and dtype with values in [lo, hi] (integers: rounded; bool: coin).
Array RandomArray(std::mt19937_64& rng, const Shape& shape, DType dtype, double lo = -3, double hi = 3);
// The same values, produced as a transposed view of a bigger array (the "non-contiguous"
// case: the op sees the result of a transpose/slice, never a fresh buffer).
Array NonContiguousCopy(const Array& a);

// Records for elementwise ops from a scalar double reference.
OpInfo Unary(std::string name, std::function<Array(const Array&)> op, std::function<double(double)> ref,
             std::vector<DType> dtypes, double lo = -3, double hi = 3);
OpInfo Binary(std::string name, std::function<Array(const Array&, const Array&)> op,
              std::function<double(double, double)> ref, std::vector<DType> dtypes, double lo = -3, double hi = 3);

}  // namespace jx::opinfo
