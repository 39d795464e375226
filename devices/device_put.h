// Placing arrays on devices (JAX's jax.devices and jax.device_put).
//
// An array made by jnp is uncommitted: it lives on the default device (the host CPU) and
// follows whatever committed arrays an op or jit call combines it with. device_put(x, d)
// commits x to device d (copying it into d's memory, which counts against a chip's HBM);
// ops and jit calls on committed arrays run on their device and return arrays committed
// there, and combining arrays committed to different devices is a ValueError naming both.
//
//   const jx::Device* chip = jx::devices("tpu")[0];   // after jx::tpu::make_pod(...)
//   jx::Array y = jx::device_put(x, chip);            // y.committed(), y.devices() == {chip}
//   jx::Array z = jnp::sin(y) * 2.0;                  // runs on the chip, committed there
//   jx::Array back = jx::device_put(z);               // to the default device, uncommitted
#pragma once

#include <string_view>
#include <vector>

#include "jx/core/array.h"
#include "jx/core/device.h"
#include "jx/core/pytree.h"

namespace jx {

// The registered devices of a platform: "cpu" (the default: the host CPU), "tpu" (every chip
// of every pod made so far; empty before), or "" for all.
std::vector<const Device*> devices(std::string_view platform = "cpu");

// x committed to device: a sharded x (sharding/sharded_put.h) gathered there (its global
// value, a new allocation on device); else x itself when it is already there, the same buffer when x is an
// uncommitted array on the default device and device is it, else a copy in device's memory
// (allocated through device->Allocate: a ResourceExhaustedError names the device, the bytes
// asked and the bytes free, and nothing changes). Throws on a tracer (device_put is eager).
Array device_put(const Array& x, const Device* device);
// x uncommitted on the default device (a copy to host memory when x lives elsewhere or is
// sharded).
Array device_put(const Array& x);

// device_put of every leaf of a pytree.
template <typename T>
  requires(!std::is_same_v<T, Array> && tree::IsPytree<T>)
T device_put(const T& tree, const Device* device) {
  return tree::map([device](const Array& x) { return device_put(x, device); }, tree);
}
template <typename T>
  requires(!std::is_same_v<T, Array> && tree::IsPytree<T>)
T device_put(const T& tree) {
  return tree::map([](const Array& x) { return device_put(x); }, tree);
}

}  // namespace jx
