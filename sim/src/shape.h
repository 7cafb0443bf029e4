// Shape geometry the rest of the sim needs: mass properties and bounding boxes.
#pragma once

#include "compound.h"
#include "lockstep/sim/math.h"
#include "lockstep/sim/types.h"

namespace lockstep::sim {

struct Aabb {
  Vec3 lower{}, upper{};
};

constexpr bool overlaps(const Aabb& a, const Aabb& b) {
  return a.lower.x <= b.upper.x && b.lower.x <= a.upper.x && a.lower.y <= b.upper.y &&
         b.lower.y <= a.upper.y && a.lower.z <= b.upper.z && b.lower.z <= a.upper.z;
}

/// Mass (kg) and principal inertia about the centre (kg·m²), about the principal axes: the body
/// axes for spheres, boxes and capsules (capsules lie on y), the columns of
/// to_mat3(principal_frame) in body space for hulls.
struct MassProperties {
  float mass = 0;
  Vec3 inertia{};
  Quat principal_frame{};
};

/// Mass properties of a solid shape of the given density; zero for planes.
MassProperties compute_mass_properties(const ShapeDef& shape, const ShapeLibrary& library);

/// World-space bounding box of a shape at a transform, grown by `margin` on every side.
/// Planes get a box that is infinite-like (±kPlaneExtent) in the plane's directions.
Aabb compute_aabb(const ShapeDef& shape, const ShapeLibrary& library, const Transform& xf,
                  float margin);

/// Distance from the body's centre to the farthest point of its shape (m; 0 for planes).
float bounding_radius(const ShapeDef& shape, const ShapeLibrary& library);

/// Half-size of the box used for planes in the broadphase (m).
inline constexpr float kPlaneExtent = 1.0e6f;

/// Checks a shape definition: Error::none, non_finite, invalid_argument or unknown_hull (a hull
/// index the library does not have).
Error validate_shape(const ShapeDef& shape, const ShapeLibrary& library);

}  // namespace lockstep::sim
