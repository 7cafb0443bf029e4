// Convex hulls: the polyhedron a HullDef's points span, built once when a world is created, and
// the read-only view the narrowphase walks (a box is viewed the same way, so hull–box and
// hull–hull share one routine).
#pragma once

#include <cstdint>

#include "lockstep/sim/math.h"
#include "lockstep/sim/types.h"

namespace lockstep::sim {

/// Capacities of a built hull: a convex polyhedron with V vertices has at most 2V − 4 faces and
/// 3V − 6 edges (all faces triangles), and its faces list every edge twice.
inline constexpr uint32_t kMaxHullFaces = 2 * kMaxHullPoints - 4;
inline constexpr uint32_t kMaxHullEdges = 3 * kMaxHullPoints - 6;
inline constexpr uint32_t kMaxHullFaceVertices = 2 * kMaxHullEdges;

/// A convex polyhedron in body space with its centre of mass at the origin.
///
/// Faces are convex polygons with no three corners on a line; their corners run counter-clockwise
/// seen from outside (about the outward normal). Edge e runs from edge_vertices[e][0] to [1]; it
/// is a side of face edge_faces[e][0] in that direction and of edge_faces[e][1] in the other.
struct HullGeometry {
  uint32_t vertex_count = 0;
  uint32_t face_count = 0;
  uint32_t edge_count = 0;
  Vec3 vertices[kMaxHullPoints] = {};
  Vec3 face_normals[kMaxHullFaces] = {};    // outward, unit
  float face_offsets[kMaxHullFaces] = {};   // the face's plane: dot(normal, x) = offset
  uint16_t face_first[kMaxHullFaces] = {};  // its first corner in face_vertices
  uint8_t face_size[kMaxHullFaces] = {};
  uint8_t face_vertices[kMaxHullFaceVertices] = {};
  uint8_t edge_vertices[kMaxHullEdges][2] = {};
  uint8_t edge_faces[kMaxHullEdges][2] = {};
  // Mass properties of the solid at unit density: volume (m³), and the inertia tensor's
  // eigenvalues (m⁵) about the principal axes, which are the columns of to_mat3(principal_frame)
  // in body space. A body's inertia is density times these.
  float volume = 0;
  Vec3 principal_inertia{};
  Quat principal_frame{};
  Vec3 centre_of_mass{};  // of the given points' hull, in their frame: what was subtracted
  float radius = 0;       // the largest |vertex| (m)
  Vec3 lower{}, upper{};  // body-space bounding box of the vertices
};

/// Builds the hull of def's points (types.h, HullDef, says what is kept and what is refused):
/// Error::none, non_finite, invalid_argument (a point count outside 4..64, a coordinate beyond
/// the world's range) or degenerate_hull. Deterministic: the same points give the same bits on
/// every target; ties are broken by point index. Allocates nothing.
Error build_hull(const HullDef& def, HullGeometry* out);

/// A convex polyhedron's topology and body-space geometry, as the narrowphase reads it.
struct PolyView {
  uint32_t vertex_count = 0;
  uint32_t face_count = 0;
  uint32_t edge_count = 0;
  const Vec3* vertices = nullptr;
  const Vec3* face_normals = nullptr;
  const float* face_offsets = nullptr;
  const uint16_t* face_first = nullptr;
  const uint8_t* face_size = nullptr;
  const uint8_t* face_vertices = nullptr;
  const uint8_t (*edge_vertices)[2] = nullptr;
  const uint8_t (*edge_faces)[2] = nullptr;
};

PolyView view_of(const HullGeometry& hull);

/// A box as a polyhedron: its eight corners and six face offsets (the topology is shared).
struct BoxPolyhedron {
  Vec3 vertices[8];
  float offsets[6];
  PolyView view() const;
};
BoxPolyhedron box_polyhedron(Vec3 half_extents);

}  // namespace lockstep::sim
