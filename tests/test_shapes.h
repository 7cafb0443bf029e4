// Test-side helpers shared by the sim tests: a ShapeDef of each primitive kind from its sizes.
#pragma once

#include "lockstep/sim/types.h"

namespace lockstep::testing {

inline sim::ShapeDef sphere_shape(float radius) {
  sim::ShapeDef s;
  s.type = sim::ShapeType::sphere;
  s.radius = radius;
  return s;
}

inline sim::ShapeDef box_shape(sim::Vec3 half_extents) {
  sim::ShapeDef s;
  s.type = sim::ShapeType::box;
  s.half_extents = half_extents;
  return s;
}

/// A capsule along its body's y axis.
inline sim::ShapeDef capsule_shape(float radius, float half_height) {
  sim::ShapeDef s;
  s.type = sim::ShapeType::capsule;
  s.radius = radius;
  s.half_height = half_height;
  return s;
}

/// The plane {x : n·x = offset} in body space (a static body's), y up by default.
inline sim::ShapeDef plane_shape(sim::Vec3 normal = {0, 1, 0}, float offset = 0) {
  sim::ShapeDef s;
  s.type = sim::ShapeType::plane;
  s.plane_normal = normal;
  s.plane_offset = offset;
  return s;
}

}  // namespace lockstep::testing
