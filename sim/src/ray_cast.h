// A ray, or a sphere swept along a segment, against one shape (the queries' exact tests).
#pragma once

#include "compound.h"
#include "lockstep/sim/math.h"
#include "lockstep/sim/types.h"

namespace lockstep::sim {

/// Where a cast meets a shape: `distance` along the unit direction (m) and the outward unit
/// normal of the shape grown by the cast radius there (the shape's own normal at the contact).
struct CastHit {
  float distance = 0;
  Vec3 normal{};
  bool started_inside = false;  // the origin was inside or on the grown shape (distance 0)
  uint32_t triangle = 0;        // mesh or heightfield: the triangle met (level.h numbering)
};

/// Casts from `origin` along the unit `direction` up to `max_distance` (m) against `shape` at
/// `xf` grown by `radius` ≥ 0 (0: a ray; r: a sphere of radius r). Shapes are closed: a start
/// inside or on the grown shape is a hit at distance 0 with normal −direction, and a ray that
/// only grazes the surface hits it. False when nothing is met within max_distance.
bool cast_against_shape(const ShapeDef& shape, const Transform& xf, const ShapeLibrary& library,
                        Vec3 origin, Vec3 direction, float max_distance, float radius,
                        CastHit* hit);

}  // namespace lockstep::sim
