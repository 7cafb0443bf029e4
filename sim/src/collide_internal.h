// Pieces of the narrowphase shared by collide.cpp (dispatch, round shapes, planes) and
// collide_box.cpp (everything with a box). Not part of the sim's API.
#pragma once

#include <cstdint>

#include "collide.h"
#include "hull.h"
#include "lockstep/sim/math.h"
#include "lockstep/sim/types.h"

namespace lockstep::sim::collide_detail {

// Routine tags, the top 4 bits of every feature id (layout in collide.cpp's header comment).
enum PairTag : uint32_t {
  kTagSphereSphere = 1,
  kTagSphereCapsule = 2,
  kTagSphereBox = 3,
  kTagSpherePlane = 4,
  kTagCapsuleCapsule = 5,
  kTagCapsuleBox = 6,
  kTagCapsulePlane = 7,
  kTagBoxBox = 8,
  kTagBoxPlane = 9,
  kTagRoundHull = 10,  // sphere or capsule against a hull
  kTagPolyHull = 11,   // box or hull against a hull
  kTagHullPlane = 12,
  kTagLevel = 13,  // anything against a level triangle (collide_mesh.cpp)
};

constexpr uint32_t feature_id(PairTag tag, uint32_t payload) {
  return (static_cast<uint32_t>(tag) << 28) | (payload & 0x0fffffffu);
}

/// Below this squared length (1 µm)² a difference vector is not trusted as a direction (m²).
inline constexpr float kDirectionEpsSq = 1.0e-12f;

inline float clamp_unit(float t) {
  return t < 0.0f ? 0.0f : (t > 1.0f ? 1.0f : t);
}
inline float abs_f(float v) {
  return v < 0.0f ? -v : v;
}
inline float sign_of(float v) {
  return v < 0.0f ? -1.0f : 1.0f;
}
/// scale · e_i (i = 0, 1, 2 for x, y, z).
inline Vec3 axis_vector(int i, float scale) {
  return i == 0 ? Vec3{scale, 0, 0} : (i == 1 ? Vec3{0, scale, 0} : Vec3{0, 0, scale});
}
/// v with element i replaced by value.
inline Vec3 with_element(Vec3 v, int i, float value) {
  if (i == 0) v.x = value;
  if (i == 1) v.y = value;
  if (i == 2) v.z = value;
  return v;
}

/// Appends a point; the caller has checked the capacity and the margin.
inline void add_point(Manifold* m, Vec3 position, float separation, uint32_t feature) {
  ManifoldPoint& p = m->points[m->count];
  p.position = position;
  p.separation = separation;
  p.feature = feature;
  m->count += 1;
}

/// A plane shape in world space: {x : dot(normal, x) = offset}, normal unit, solid below.
/// The body-space normal is only unit within 1e-3 (validate_shape), so it is renormalized here.
inline void plane_in_world(const ShapeDef& plane, const Transform& xf, Vec3* normal,
                           float* offset) {
  float len = length(plane.plane_normal);
  float inv = len > 0.0f ? 1.0f / len : 1.0f;
  Vec3 n_body = plane.plane_normal * inv;
  Vec3 n = to_mat3(xf.q) * n_body;
  // Renormalize once more so a quaternion a few ulps off unit does not leak into the normal.
  n = normalize_or(n, Vec3{0, 1, 0});
  *normal = n;
  *offset = plane.plane_offset * inv + dot(n, xf.p);
}

/// Parameters s, t in [0, 1] of the closest points p1 + s·d1 and p2 + t·d2 of two segments
/// (Ericson, Real-Time Collision Detection 5.1.9). Zero-length segments are allowed.
void closest_segment_params(Vec3 p1, Vec3 d1, Vec3 p2, Vec3 d2, float* s, float* t);

/// Chooses at most 4 of `count` candidate points: first every candidate whose feature id is in
/// `previous` (the pair's points last step, in candidate order, at most 4), then, while fewer
/// than 4 are chosen, by position alone: the farthest along four directions of the contact plane
/// a quarter turn apart (d, n×d, −d, −n×d; d from tangent_basis(normal)); last, while a left-out
/// point is deeper than the shallowest chosen one by more than 2 mm, it takes that one's place.
/// Writes the chosen indices ascending to `keep`; returns how many.
int reduce_to_four(const Vec3* position, const float* separation, const uint32_t* feature,
                   int count, Vec3 normal, const Manifold& previous, int* keep);

// Box routines (collide_box.cpp). Normal from B to A, as in collide().
void collide_sphere_box(const ShapeDef& sphere, const Transform& xa, const ShapeDef& box,
                        const Transform& xb, float margin, Manifold* out);
void collide_capsule_box(const ShapeDef& capsule, const Transform& xa, const ShapeDef& box,
                         const Transform& xb, float margin, Manifold* out);
// Takes collide()'s separation hint, in and out (never null).
void collide_box_box(const ShapeDef& a, const Transform& xa, const ShapeDef& b, const Transform& xb,
                     float margin, Manifold* out, uint32_t* hint);

// Separation hints (collide.h): the kind of feature in bits 28..31, its index below.
inline constexpr uint32_t kHintPolyFaceA = 1;      // box/hull–hull: a face of A held B off
inline constexpr uint32_t kHintPolyFaceB = 2;      // box/hull–hull: a face of B held A off
inline constexpr uint32_t kHintRoundHullFace = 3;  // sphere/capsule–hull: a face of the hull
inline constexpr uint32_t kHintBoxFaceA = 4;       // box–box: a face axis of A
inline constexpr uint32_t kHintBoxFaceB = 5;       // box–box: a face axis of B
inline constexpr uint32_t kHintBoxEdge = 6;        // box–box: edge axis a_i × b_j, index 3i + j
constexpr uint32_t separation_hint(uint32_t kind, uint32_t index) {
  return kind << 28 | (index & 0x0fffffffu);
}
constexpr uint32_t hint_kind(uint32_t hint) {
  return hint >> 28;
}
constexpr uint32_t hint_index(uint32_t hint) {
  return hint & 0x0fffffffu;
}

// Hull routines (collide_hull.cpp). Normal from B to A, as in collide().
void collide_hull_plane(const HullGeometry& hull, const Transform& xa, const ShapeDef& plane,
                        const Transform& xb, float margin, Manifold* out);
// These three take collide()'s separation hint, in and out (never null).
void collide_round_hull(const ShapeDef& round, const Transform& xa, const HullGeometry& hull,
                        const Transform& xb, float margin, Manifold* out, uint32_t* hint);
void collide_box_hull(const ShapeDef& box, const Transform& xa, const HullGeometry& hull,
                      const Transform& xb, float margin, Manifold* out, uint32_t* hint);
void collide_hull_hull(const HullGeometry& a, const Transform& xa, const HullGeometry& b,
                       const Transform& xb, float margin, Manifold* out, uint32_t* hint);
/// The point of the hull's surface closest to p (body space): true when p lies inside the solid
/// (then *on and *distance are not set), else *on and the distance to it.
bool closest_point_on_hull(const HullGeometry& hull, Vec3 p, Vec3* on, float* distance);

/// A point of a polygon being clipped, with the lines (edge ids) it enters and leaves on.
struct ClipPoint {
  Vec3 p;
  uint32_t in_line, out_line;
};
/// Sutherland–Hodgman against {x : dot(normal, x) ≤ offset + band}: writes at most `max_out`
/// points to `out` and returns their count. A crossing point enters on the polygon's line and
/// leaves on `line` (or the other way round). Hull faces and level triangles are clipped by it.
int clip_polygon(const ClipPoint* in, int count, Vec3 normal, float offset, uint32_t line,
                 float band, int max_out, ClipPoint* out);

}  // namespace lockstep::sim::collide_detail
