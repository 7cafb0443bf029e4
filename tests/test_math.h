// Test-side helpers shared by the sim tests: double-precision 3-vectors (independent of
// sim/math.h, so an expected value is never computed by the code under test) and a seeded
// generator of doubles on SplitMix64 (the same samples on every machine).
#pragma once

#include <cmath>
#include <cstdint>

#include "lockstep/sim/math.h"

namespace lockstep::testing {

struct D3 {
  double x = 0, y = 0, z = 0;
};
inline D3 d3(sim::Vec3 v) {
  return {v.x, v.y, v.z};
}
inline D3 operator+(D3 a, D3 b) {
  return {a.x + b.x, a.y + b.y, a.z + b.z};
}
inline D3 operator-(D3 a, D3 b) {
  return {a.x - b.x, a.y - b.y, a.z - b.z};
}
inline D3 operator*(double s, D3 a) {
  return {s * a.x, s * a.y, s * a.z};
}
inline double dot(D3 a, D3 b) {
  return a.x * b.x + a.y * b.y + a.z * b.z;
}
inline D3 cross(D3 a, D3 b) {
  return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
}
inline double len(D3 a) {
  return std::sqrt(dot(a, a));
}

/// SplitMix64 (Steele, Lea, Flood 2014) with doubles in [0, 1); tests add their own shapes of
/// sample on top (derive from it: `struct Rng : TestRng { ... }; Rng rng{seed};`).
struct TestRng {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
};

}  // namespace lockstep::testing
