// Narrowphase dispatch and the routines without a box: sphere, capsule, plane; plus box–plane.
//
// Each routine is written for one canonical order, the rounder shape first (sphere < capsule <
// box < plane); collide() swaps the arguments when needed and flips the normal. Positions,
// separations and feature ids do not depend on the argument order.
//
// Every point is built from a point on A's surface and a point on B's surface along the
// manifold normal n (B to A): separation = how far A's point lies along n above B's, and the
// reported position is their midpoint, i.e. A's surface point − ½·separation·n.
//
// Feature ids (uint32). Bits 28..31: the routine tag (collide_internal.h), so ids of different
// routines never collide. Bits 0..27, per routine:
//   sphere–sphere, sphere–capsule, sphere–plane: 0 (a single point).
//   sphere–box:       region of the box the sphere centre is in, rx + 3·ry + 9·rz with
//                     r = 0 inside the slab, 1 below it, 2 above it (a centre inside the box
//                     is pushed through a face and gets that face's region).
//   capsule–capsule:  0x100 for the single closest-point contact; for two nearly parallel
//                     segments 1 / 2 = the lower / upper end of their overlap along A (not which
//                     segment's end bounds it: that flips when equal capsules slide a little).
//   capsule–box:      kind << 24 | ...: kind 1 = box face f (2·axis + (sign > 0)) << 8 | source,
//                     source 0/1 = segment end 0/1, 2 + 2·axis + (side > 0) = the segment was
//                     clipped by that side slab of the face; kind 2 = box edge index
//                     (4·axis + corner bits of the other two axes, lower axis in bit 0);
//                     kind 3 = box region of the closest point, as for sphere–box.
//   capsule–plane:    segment end 0 (−y) or 1 (+y).
//   box–box:          face contact: bit 27 = reference face on B, bits 20..22 reference face,
//                     bits 16..18 incident face, bits 0..5 the clip vertex = (line in << 3 |
//                     line out), lines 0..3 = incident face edges, 4..7 = reference side
//                     planes; edge contact: bit 26, A's edge index << 8 | B's edge index.
//   box–plane:        box vertex index, bit 0/1/2 set = +x/+y/+z corner.
// A box resting on another keeps its reference face, incident face and clip topology from step
// to step, so its four ids repeat and warm starting finds last step's impulses.
#include "collide.h"

#include "collide_internal.h"
#include "collide_mesh.h"

namespace lockstep::sim {

namespace collide_detail {

void closest_segment_params(Vec3 p1, Vec3 d1, Vec3 p2, Vec3 d2, float* s_out, float* t_out) {
  constexpr float kEps = 1.0e-12f;  // m²: shorter segments are points
  Vec3 r = p1 - p2;
  float a = dot(d1, d1), e = dot(d2, d2), f = dot(d2, r);
  float s = 0.0f, t = 0.0f;
  if (a <= kEps && e <= kEps) {
    // Both points.
  } else if (a <= kEps) {
    t = clamp_unit(f / e);
  } else {
    float c = dot(d1, r);
    if (e <= kEps) {
      s = clamp_unit(-c / a);
    } else {
      float b = dot(d1, d2);
      float denom = a * e - b * b;
      // Parallel segments (denominator ~0): any s works; take s = 0 deterministically.
      if (denom > 1.0e-12f * a * e) s = clamp_unit((b * f - c * e) / denom);
      t = (b * s + f) / e;
      if (t < 0.0f) {
        t = 0.0f;
        s = clamp_unit(-c / a);
      } else if (t > 1.0f) {
        t = 1.0f;
        s = clamp_unit((b - c) / a);
      }
    }
  }
  *s_out = s;
  *t_out = t;
}

int reduce_to_four(const Vec3* position, const float* separation, const uint32_t* feature,
                   int count, Vec3 normal, const Manifold& previous, int* keep) {
  // How much deeper than a kept corner a left-out one may be (m).
  constexpr float kDepthBand = 0.002f;
  if (count <= kMaxManifoldPoints) {
    for (int i = 0; i < count; ++i)
      keep[i] = i;
    return count;
  }
  int chosen[kMaxManifoldPoints];
  int n = 0;
  auto taken = [&](int i) {
    for (int k = 0; k < n; ++k) {
      if (chosen[k] == i) return true;
    }
    return false;
  };
  // Last step's corners first: which corners a resting face keeps must not change with every
  // rock of the box (a corner restarted from zero kicks a resting stack).
  for (int i = 0; i < count && n < kMaxManifoldPoints; ++i) {
    for (int k = 0; k < previous.previous_count; ++k) {
      if (previous.previous_features[k] == feature[i]) {
        chosen[n++] = i;
        break;
      }
    }
  }
  // Then by position alone: the farthest along four directions of the contact plane a quarter
  // turn apart (d, n×d, −d, −n×d, with d from tangent_basis(normal) turned by an
  // irrational-looking angle so that the corners of common polygons do not tie). The overlap of
  // two centred faces (a stack, turned or not) is symmetric under a quarter turn, so the four
  // chosen corners are too, and the load spreads evenly: a lopsided choice compresses one side
  // of every contact more and leans the stack. Not the deepest: depths change with every rock of
  // a resting box, and a choice that follows them swaps corners from step to step.
  Vec3 t1, t2;
  tangent_basis(normal, &t1, &t2);
  const Vec3 d = t1 + 0.4142135f * t2, d_perp = t2 - 0.4142135f * t1;
  const Vec3 directions[4] = {d, d_perp, -d, -d_perp};
  for (int k = 0; k < 4 && n < kMaxManifoldPoints; ++k) {
    int best = -1;
    float far = 0.0f;
    for (int i = 0; i < count; ++i) {
      if (taken(i)) continue;
      const float f = dot(position[i], directions[k]);
      if (best < 0 || f > far) far = f, best = i;
    }
    chosen[n++] = best;
  }
  // Never leave out a corner clearly deeper than a kept one: a box landing on an edge has its
  // deep edge corners inside the outline of the others, and without this it comes to rest on the
  // shallow ones with the edge buried. Swap the deepest left-out point for the shallowest kept one
  // while it is deeper by more than kDepthBand (a resting face's corners differ by far less, so
  // this never undoes the symmetric choice above).
  for (int swaps = 0; swaps < kMaxManifoldPoints; ++swaps) {
    int deepest = -1;
    for (int i = 0; i < count; ++i) {
      if (taken(i)) continue;
      if (deepest < 0 || separation[i] < separation[deepest]) deepest = i;
    }
    int shallowest = 0;
    for (int k = 1; k < n; ++k) {
      if (separation[chosen[k]] > separation[chosen[shallowest]]) shallowest = k;
    }
    if (deepest < 0 || !(separation[deepest] < separation[chosen[shallowest]] - kDepthBand)) break;
    chosen[shallowest] = deepest;
  }
  // Ascending, so the output order follows the candidates' order.
  for (int i = 0; i < kMaxManifoldPoints; ++i)
    keep[i] = chosen[i];
  for (int i = 1; i < kMaxManifoldPoints; ++i) {
    int v = keep[i], j = i;
    while (j > 0 && keep[j - 1] > v)
      keep[j] = keep[j - 1], --j;
    keep[j] = v;
  }
  return kMaxManifoldPoints;
}

}  // namespace collide_detail

namespace {

using namespace collide_detail;

// Contact between two round points (sphere centres, or closest points of segments) of radii
// ra and rb; `fallback()` gives the normal when the points coincide (only then is it called).
template <typename Fallback>
void round_points(Vec3 pa, float ra, Vec3 pb, float rb, Fallback fallback, float margin,
                  uint32_t feature, Manifold* out) {
  Vec3 d = pa - pb;
  float dist_sq = length_squared(d);
  float dist = std::sqrt(dist_sq);
  float sep = dist - ra - rb;
  if (sep > margin) return;
  Vec3 n = dist_sq > kDirectionEpsSq ? d * (1.0f / dist) : fallback();
  out->normal = n;
  Vec3 surface_a = pa - n * ra;
  add_point(out, surface_a - n * (0.5f * sep), sep, feature);
}

void capsule_segment(const ShapeDef& c, const Transform& xf, Vec3* p0, Vec3* d) {
  Vec3 axis = to_mat3(xf.q).c1 * c.half_height;
  *p0 = xf.p - axis;
  *d = axis * 2.0f;
}

// A unit vector perpendicular to d (d nonzero), chosen without trig and deterministically.
Vec3 perpendicular(Vec3 d) {
  Vec3 u = normalize_or(d, Vec3{0, 1, 0});
  Vec3 t1, t2;
  tangent_basis(u, &t1, &t2);
  return t1;
}

void sphere_sphere(const ShapeDef& a, const Transform& xa, const ShapeDef& b, const Transform& xb,
                   float margin, Manifold* out) {
  auto up = [] { return Vec3{0, 1, 0}; };
  round_points(xa.p, a.radius, xb.p, b.radius, up, margin, feature_id(kTagSphereSphere, 0), out);
}

void sphere_capsule(const ShapeDef& a, const Transform& xa, const ShapeDef& b, const Transform& xb,
                    float margin, Manifold* out) {
  Vec3 p0, d;
  capsule_segment(b, xb, &p0, &d);
  float dd = dot(d, d);
  float t = dd > 0.0f ? clamp_unit(dot(xa.p - p0, d) / dd) : 0.0f;
  Vec3 q = p0 + d * t;
  // A centre on the segment: push out sideways, not along the axis.
  auto fallback = [dd, d] { return dd > 0.0f ? perpendicular(d) : Vec3{0, 1, 0}; };
  round_points(xa.p, a.radius, q, b.radius, fallback, margin, feature_id(kTagSphereCapsule, 0),
               out);
}

void sphere_plane(const ShapeDef& a, const Transform& xa, const ShapeDef& b, const Transform& xb,
                  float margin, Manifold* out) {
  Vec3 n;
  float offset;
  plane_in_world(b, xb, &n, &offset);
  float sep = dot(n, xa.p) - offset - a.radius;
  if (sep > margin) return;
  out->normal = n;
  Vec3 surface_a = xa.p - n * a.radius;
  add_point(out, surface_a - n * (0.5f * sep), sep, feature_id(kTagSpherePlane, 0));
}

void capsule_capsule(const ShapeDef& a, const Transform& xa, const ShapeDef& b, const Transform& xb,
                     float margin, Manifold* out) {
  // sin² of the largest angle (~1°) at which two segments count as parallel and get two points.
  constexpr float kParallelSinSq = 3.0e-4f;
  // Shorter overlaps than this (m) give one point: two would coincide.
  constexpr float kMinOverlap = 1.0e-4f;

  Vec3 pa, da, pb, db;
  capsule_segment(a, xa, &pa, &da);
  capsule_segment(b, xb, &pb, &db);
  float s, t;
  closest_segment_params(pa, da, pb, db, &s, &t);
  Vec3 ca = pa + da * s, cb = pb + db * t;
  Vec3 diff = ca - cb;
  float dist_sq = length_squared(diff);
  float dist = std::sqrt(dist_sq);
  float ra = a.radius, rb = b.radius;
  if (dist - ra - rb > margin) return;

  float len_a_sq = dot(da, da), len_b_sq = dot(db, db);
  Vec3 axes_cross = cross(da, db);
  float cross_sq = length_squared(axes_cross);
  bool both_segments = len_a_sq > 1.0e-12f && len_b_sq > 1.0e-12f;
  bool parallel = both_segments && cross_sq <= kParallelSinSq * len_a_sq * len_b_sq;

  Vec3 n;
  if (dist_sq > kDirectionEpsSq) {
    n = diff * (1.0f / dist);
  } else {
    // The segments touch: use the common perpendicular, else any perpendicular of a segment,
    // oriented from B's centre to A's.
    if (both_segments && !parallel) {
      n = normalize_or(axes_cross, Vec3{0, 1, 0});
    } else if (len_a_sq > 1.0e-12f) {
      n = perpendicular(da);
    } else if (len_b_sq > 1.0e-12f) {
      n = perpendicular(db);
    } else {
      n = Vec3{0, 1, 0};
    }
    if (dot(n, xa.p - xb.p) < 0.0f) n = -n;
  }

  if (parallel) {
    // Overlap of B's projection onto A, in A's parameter.
    float inv_a = 1.0f / len_a_sq;
    float sb0 = dot(pb - pa, da) * inv_a;
    float sb1 = dot(pb + db - pa, da) * inv_a;
    float lo = sb0 < sb1 ? sb0 : sb1, hi = sb0 < sb1 ? sb1 : sb0;
    if (lo < 0.0f) lo = 0.0f;
    if (hi > 1.0f) hi = 1.0f;
    if ((hi - lo) * std::sqrt(len_a_sq) > kMinOverlap) {
      float inv_b = 1.0f / len_b_sq;
      float params[2] = {lo, hi};
      for (int k = 0; k < 2; ++k) {
        Vec3 x = pa + da * params[k];
        Vec3 y = pb + db * clamp_unit(dot(x - pb, db) * inv_b);
        float sep = dot(x - y, n) - ra - rb;
        if (sep > margin) continue;
        Vec3 surface_a = x - n * ra, surface_b = y + n * rb;
        add_point(out, (surface_a + surface_b) * 0.5f, sep,
                  feature_id(kTagCapsuleCapsule, static_cast<uint32_t>(k) + 1u));
      }
      if (out->count > 0) {
        out->normal = n;
        return;
      }
    }
  }
  out->normal = n;
  float sep = dist - ra - rb;
  Vec3 surface_a = ca - n * ra;
  add_point(out, surface_a - n * (0.5f * sep), sep, feature_id(kTagCapsuleCapsule, 0x100));
}

void capsule_plane(const ShapeDef& a, const Transform& xa, const ShapeDef& b, const Transform& xb,
                   float margin, Manifold* out) {
  Vec3 n;
  float offset;
  plane_in_world(b, xb, &n, &offset);
  Vec3 p0, d;
  capsule_segment(a, xa, &p0, &d);
  // A zero-length capsule is a sphere: one point.
  int ends = a.half_height > 0.0f ? 2 : 1;
  for (int k = 0; k < ends; ++k) {
    Vec3 e = k == 0 ? p0 : p0 + d;
    float sep = dot(n, e) - offset - a.radius;
    if (sep > margin) continue;
    Vec3 surface_a = e - n * a.radius;
    add_point(out, surface_a - n * (0.5f * sep), sep,
              feature_id(kTagCapsulePlane, static_cast<uint32_t>(k)));
  }
  out->normal = n;
}

void box_plane(const ShapeDef& a, const Transform& xa, const ShapeDef& b, const Transform& xb,
               float margin, Manifold* out) {
  Vec3 n;
  float offset;
  plane_in_world(b, xb, &n, &offset);
  Mat3 r = to_mat3(xa.q);
  Vec3 h = a.half_extents;
  Vec3 ex = r.c0 * h.x, ey = r.c1 * h.y, ez = r.c2 * h.z;
  Vec3 pos[8];
  float sep[8];
  uint32_t vertex[8], feature[8];
  int count = 0;
  for (uint32_t v = 0; v < 8; ++v) {
    Vec3 p = xa.p + ((v & 1u) ? ex : -ex) + ((v & 2u) ? ey : -ey) + ((v & 4u) ? ez : -ez);
    float s = dot(n, p) - offset;
    if (s > margin) continue;
    pos[count] = p - n * (0.5f * s);
    sep[count] = s;
    vertex[count] = v;
    feature[count] = feature_id(kTagBoxPlane, v);
    count += 1;
  }
  int keep[kMaxManifoldPoints];
  int kept = reduce_to_four(pos, sep, feature, count, n, *out, keep);
  for (int k = 0; k < kept; ++k) {
    add_point(out, pos[keep[k]], sep[keep[k]], feature_id(kTagBoxPlane, vertex[keep[k]]));
  }
  out->normal = n;
}

// Order in which a shape type comes first in a canonical pair: rounder shapes first.
int canonical_rank(ShapeType type) {
  switch (type) {
    case ShapeType::sphere:
      return 0;
    case ShapeType::capsule:
      return 1;
    case ShapeType::box:
      return 2;
    case ShapeType::hull:
      return 3;
    case ShapeType::plane:
      return 4;
    case ShapeType::compound:  // collided piece by piece (compound.h): never here
    case ShapeType::mesh:      // collide_level, before the canonical routines
    case ShapeType::heightfield:
      break;
  }
  return 5;
}

// Whether the routine of a canonical pair takes a separation hint: round, box or hull against a
// hull, and box–box.
bool takes_hint(const ShapeDef& a, const ShapeDef& b) {
  return b.type == ShapeType::hull || (a.type == ShapeType::box && b.type == ShapeType::box);
}

// a's rank ≤ b's rank. Inlined into both branches of collide(): one call less per pair.
[[gnu::always_inline]] inline void collide_canonical(const ShapeDef& a, const Transform& xa,
                                                     const ShapeDef& b, const Transform& xb,
                                                     const ShapeLibrary& library, float margin,
                                                     Manifold* out, uint32_t* hint) {
  switch (a.type) {
    case ShapeType::sphere:
      switch (b.type) {
        case ShapeType::hull:
          return collide_round_hull(a, xa, library.hull(b), xb, margin, out, hint);
        case ShapeType::sphere:
          return sphere_sphere(a, xa, b, xb, margin, out);
        case ShapeType::capsule:
          return sphere_capsule(a, xa, b, xb, margin, out);
        case ShapeType::box:
          return collide_sphere_box(a, xa, b, xb, margin, out);
        case ShapeType::plane:
          return sphere_plane(a, xa, b, xb, margin, out);
        default:
          return;
      }
    case ShapeType::capsule:
      switch (b.type) {
        case ShapeType::capsule:
          return capsule_capsule(a, xa, b, xb, margin, out);
        case ShapeType::hull:
          return collide_round_hull(a, xa, library.hull(b), xb, margin, out, hint);
        case ShapeType::box:
          return collide_capsule_box(a, xa, b, xb, margin, out);
        case ShapeType::plane:
          return capsule_plane(a, xa, b, xb, margin, out);
        default:
          return;
      }
    case ShapeType::box:
      switch (b.type) {
        case ShapeType::box:
          return collide_box_box(a, xa, b, xb, margin, out, hint);
        case ShapeType::hull:
          return collide_box_hull(a, xa, library.hull(b), xb, margin, out, hint);
        case ShapeType::plane:
          return box_plane(a, xa, b, xb, margin, out);
        default:
          return;
      }
    case ShapeType::hull:
      switch (b.type) {
        case ShapeType::hull:
          return collide_hull_hull(library.hull(a), xa, library.hull(b), xb, margin, out, hint);
        case ShapeType::plane:
          return collide_hull_plane(library.hull(a), xa, b, xb, margin, out);
        default:
          return;
      }
    case ShapeType::plane:
      return;  // Planes are static: plane–plane never collides.
    case ShapeType::compound:
      return;  // The caller collides a compound's children (shape_piece), each a pair of its own.
    case ShapeType::mesh:
    case ShapeType::heightfield:
      return;  // collide() hands level shapes to collide_level.
  }
}

// A piece against a level shape as one manifold: the group holding the deepest point (the step
// takes every group, collide_level; this serves the queries, bullets and sensors).
void collide_level_deepest(const ShapeDef& piece, const Transform& xa, const ShapeDef& level,
                           const Transform& xb, const ShapeLibrary& library, float margin,
                           Manifold* out) {
  if (is_level_shape(piece.type) || piece.type == ShapeType::plane ||
      piece.type == ShapeType::compound) {
    return;
  }
  Manifold groups[kMaxLevelManifolds];
  const uint32_t n = collide_level(piece, xa, level, xb, library, margin, groups, nullptr);
  int best = -1;
  float deepest = 0.0f;
  for (uint32_t g = 0; g < n; ++g) {
    for (int k = 0; k < groups[g].count; ++k) {
      if (best < 0 || groups[g].points[k].separation < deepest) {
        best = static_cast<int>(g);
        deepest = groups[g].points[k].separation;
      }
    }
  }
  if (best < 0) return;
  const int previous_count = out->previous_count;
  uint32_t previous[kMaxManifoldPoints];
  for (int k = 0; k < kMaxManifoldPoints; ++k)
    previous[k] = out->previous_features[k];
  *out = groups[best];
  out->previous_count = previous_count;
  for (int k = 0; k < kMaxManifoldPoints; ++k)
    out->previous_features[k] = previous[k];
}

}  // namespace

void collide(const ShapeDef& a, const Transform& xa, const ShapeDef& b, const Transform& xb,
             const ShapeLibrary& library, float margin, Manifold* out, uint32_t* hint) {
  // The routines that take a hint (takes_hint) read it and write what they found; the others
  // leave it 0.
  uint32_t local_hint = 0;
  if (hint == nullptr) hint = &local_hint;
  const uint32_t given = *hint;
  *hint = 0;
  // Clear every slot so a reused manifold carries no stale bytes past `count` (the previous
  // features are an input and stay).
  Manifold cleared;
  cleared.previous_count = out->previous_count;
  for (int k = 0; k < kMaxManifoldPoints; ++k)
    cleared.previous_features[k] = out->previous_features[k];
  *out = cleared;
  if (is_level_shape(b.type)) {
    collide_level_deepest(a, xa, b, xb, library, margin, out);
  } else if (is_level_shape(a.type)) {
    collide_level_deepest(b, xb, a, xa, library, margin, out);
    out->normal = -out->normal;
  } else if (canonical_rank(a.type) <= canonical_rank(b.type)) {
    if (takes_hint(a, b)) *hint = given;
    collide_canonical(a, xa, b, xb, library, margin, out, hint);
  } else {
    if (takes_hint(b, a)) *hint = given;
    collide_canonical(b, xb, a, xa, library, margin, out, hint);
    out->normal = -out->normal;
  }
  if (out->count == 0) out->normal = Vec3{0, 1, 0};
}

bool deepest_point(const ShapeDef& a, const Transform& xa, const ShapeDef& b, const Transform& xb,
                   const ShapeLibrary& library, float margin, ManifoldPoint* point, Vec3* normal) {
  bool found = false;
  for (uint32_t i = 0; i < shape_piece_count(a, library); ++i) {
    const ShapePiece pa = shape_piece(a, xa, i, library);
    for (uint32_t j = 0; j < shape_piece_count(b, library); ++j) {
      const ShapePiece pb = shape_piece(b, xb, j, library);
      Manifold m;
      collide(pa.shape, pa.xf, pb.shape, pb.xf, library, margin, &m);
      for (int k = 0; k < m.count; ++k) {
        if (found && !(m.points[k].separation < point->separation)) continue;
        found = true;
        *point = m.points[k];
        *normal = m.normal;
      }
    }
  }
  return found;
}

}  // namespace lockstep::sim
