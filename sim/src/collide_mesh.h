// Narrowphase against level geometry: a convex piece (sphere, capsule, box, hull) against the
// triangles of a mesh or heightfield near it (collide_mesh.cpp).
#pragma once

#include <cstdint>

#include "collide.h"
#include "compound.h"

namespace lockstep::sim {

/// Manifolds of one piece against one level shape: at most this many, one per group of
/// triangles whose contact normals agree within about 5°.
inline constexpr uint32_t kMaxLevelManifolds = 8;

/// True for the shapes that are level geometry (static only).
constexpr bool is_level_shape(ShapeType type) {
  return type == ShapeType::mesh || type == ShapeType::heightfield;
}

/// The manifolds of `piece` (A, at xa: a sphere, capsule, box or hull) against the level shape
/// `level` (B, at xb) within `margin`, normals from B to A, each of up to 4 points whose feature
/// ids carry the triangle's index; returns how many (0..kMaxLevelManifolds). Triangles past
/// kMaxGatheredTriangles near the piece are left out and added to *dropped. Deterministic.
uint32_t collide_level(const ShapeDef& piece, const Transform& xa, const ShapeDef& level,
                       const Transform& xb, const ShapeLibrary& library, float margin,
                       Manifold* out, uint32_t* dropped);

/// The triangle whose contact gave a feature id of collide_level's points (its index in the
/// MeshDef or the heightfield's numbering), as the last collide_level call for that pair saw it.
uint32_t level_feature_triangle(uint32_t feature);

}  // namespace lockstep::sim
