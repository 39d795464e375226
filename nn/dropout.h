// nn::Dropout: in training, zeroes each element with probability rate and scales the kept
// ones by 1 / (1 - rate) (inverted dropout, as Equinox's and PyTorch's), drawing the mask from
// an explicit key; in inference (training = false, or the one-argument call) the identity.
//
//   nn::Dropout drop(0.1);                               // eqx.nn.Dropout(0.1)
//   Array y = drop(x, key, /*training=*/true);           // drop(x, key=key, inference=False)
//   Array z = drop(x);                                   // inference: z is x
#pragma once

#include "jx/core/array.h"
#include "jx/core/pytree.h"

namespace jx::nn {

struct Dropout {
  BOOST_HANA_DEFINE_STRUCT(Dropout, (Static<double>, rate));

  Dropout() : Dropout(0.5) {}
  // rate in [0, 1] (a ValueError naming Dropout otherwise).
  explicit Dropout(double rate);

  Array operator()(const Array& x, const Array& key, bool training) const;
  Array operator()(const Array& x) const { return x; }
};

}  // namespace jx::nn
