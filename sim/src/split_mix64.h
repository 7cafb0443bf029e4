// SplitMix64 (Steele, Lea, Flood 2014): the project's own seeded generator, defined by integer
// operations only, so the same seed gives the same numbers on every platform (the standard
// library's distributions differ between implementations). Used by the built-in scenes and by
// the benchmark scenes.
#pragma once

#include <cstdint>

#include "lockstep/sim/math.h"
#include "lockstep/sim/types.h"

namespace lockstep::sim {

struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    state += 0x9e3779b97f4a7c15ull;
    uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, 1): the top 24 bits, converted exactly.
  float unit() { return static_cast<float>(next() >> 40) * (1.0f / 16777216.0f); }
  /// Uniform in [lo, hi).
  float uniform(float lo, float hi) { return lo + (hi - lo) * unit(); }
  /// Uniform integer in [0, n); n > 0 (modulo bias is irrelevant here).
  uint32_t below(uint32_t n) { return static_cast<uint32_t>(next() % n); }
  /// A uniformly distributed unit quaternion by rejection from the 4-cube (no trig).
  Quat orientation() {
    for (;;) {
      Quat q{uniform(-1, 1), uniform(-1, 1), uniform(-1, 1), uniform(-1, 1)};
      float len_sq = dot(q, q);
      if (len_sq > 0.01f && len_sq <= 1.0f) return normalize(q);
    }
  }
};

/// The `pile` scene's mix of shapes (also the benchmarks' `rain`): a box, sphere or capsule with
/// random sizes, each inside a 0.6 m bounding sphere (box half extents ≤ 0.34 m, so its
/// bounding radius ≤ 0.34·√3 < 0.6; capsule radius + half height ≤ 0.6). Sets type and sizes.
inline void random_pile_shape(SplitMix64& rng, ShapeDef* shape) {
  switch (rng.below(3)) {
    case 0:
      shape->type = ShapeType::box;
      shape->half_extents = {rng.uniform(0.15f, 0.34f), rng.uniform(0.15f, 0.34f),
                             rng.uniform(0.15f, 0.34f)};
      break;
    case 1:
      shape->type = ShapeType::sphere;
      shape->radius = rng.uniform(0.2f, 0.45f);
      break;
    default:
      shape->type = ShapeType::capsule;
      shape->radius = rng.uniform(0.15f, 0.3f);
      shape->half_height = rng.uniform(0.1f, 0.3f);
      break;
  }
}

}  // namespace lockstep::sim
