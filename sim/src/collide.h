// Narrowphase: contact manifolds between two shapes.
//
// Conventions (the sign table in contact_solver.cpp uses the same): the manifold normal points
// from B to A; a point's separation is negative when the shapes overlap; the point lies midway
// between the two surfaces, in world space. Feature ids name the pair of geometric features
// (faces, edges, vertices, segment ends) that made a point, so that the same contact in the
// next step gets the same id and can be warm started.
#pragma once

#include <cstdint>

#include "compound.h"
#include "lockstep/sim/math.h"
#include "lockstep/sim/types.h"

namespace lockstep::sim {

inline constexpr int kMaxManifoldPoints = 4;

struct ManifoldPoint {
  Vec3 position{};       // world space, midway between the surfaces
  float separation = 0;  // m, negative = penetration
  uint32_t feature = 0;  // stable id of the feature pair
};

struct Manifold {
  Vec3 normal{0, 1, 0};  // unit, from B to A
  ManifoldPoint points[kMaxManifoldPoints];
  int count = 0;
  // Input, kept by collide(): the feature ids this pair had last step. When more candidate points
  // than kMaxManifoldPoints are found, those with these ids are kept first, so a resting contact
  // keeps its corners (and their warm start) from step to step.
  uint32_t previous_features[kMaxManifoldPoints] = {};
  int previous_count = 0;
};

/// Fills `out` with up to 4 points whose separation is at most `margin` (m). `out->count` is 0
/// when the shapes are farther apart than the margin or the pair has no collision (plane–plane).
/// Deterministic: the same inputs give the same bits, including the order of points. `library`
/// holds the hulls the shapes name.
///
/// `hint` (optional, in and out): a separation hint, a code naming the feature whose own test
/// found the shapes farther apart than the margin (0: none). Out, the feature that did so in this
/// call, when one did (today the separating axes of box–box and the face tests of the hull
/// routines). In, the code an earlier call gave for the same pair: that feature's test runs first,
/// and when it still separates, it is the whole call. The answer is the same with or without a
/// hint, bit for bit: the early test computes what the routine's own test of that feature
/// computes, with the same operands and operations, and that test ends the routine with no points
/// wherever it comes in its order. So a hint changes only how fast a near miss is found, and hints
/// are not part of the state. Any code is safe to pass (an index out of range is ignored).
void collide(const ShapeDef& a, const Transform& xa, const ShapeDef& b, const Transform& xb,
             const ShapeLibrary& library, float margin, Manifold* out, uint32_t* hint = nullptr);

/// The deepest point of the manifolds between the pieces of a and b (compound.h: a compound's
/// children, each collided with each piece of the other; a plain shape is one piece) with its
/// manifold's normal (from B to A): false when no point is within `margin`. Ties keep the first
/// piece pair's point. For shape casts and times of impact, which need only the nearest point.
bool deepest_point(const ShapeDef& a, const Transform& xa, const ShapeDef& b, const Transform& xb,
                   const ShapeLibrary& library, float margin, ManifoldPoint* point, Vec3* normal);

}  // namespace lockstep::sim
