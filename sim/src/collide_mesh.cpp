// Narrowphase against level geometry (collide_mesh.h).
//
// Each triangle near the piece is collided as what it is, a flat triangle, by a routine for the
// kind of piece; the piece is moved into the level's frame once per call, not once per triangle.
//
// One-sided, with a thickness. A triangle pushes a piece only out through its front: a contact
// normal never points behind it (n·N ≥ 0, n the front normal), and a triangle only acts while the
// piece's lowest point along n lies within [−kBackDepth, margin] of its plane. A piece overlapping
// the plane by more than kBackDepth (1 m) is under the surface and left alone; one overlapping it
// by less is pushed out through the front, never pulled through.
//
// - Sphere: the closest point of the triangle to the centre (its face, an edge or a corner). A
//   centre over the face gives the face's normal at any depth within the thickness; a centre beside
//   the triangle gives the direction from the edge or corner to it, if it is in front of the plane
//   (behind the plane and beside the triangle, this triangle is not the one that holds it).
// - Capsule: the part of the segment over the face (the segment clipped to the triangle's side
//   planes) against the closest points of the segment and each edge. The face wins when it is as
//   close, with a point at each end of the clipped part (a capsule lying on the face gets two);
//   an edge gives one point between the closest points.
// - Box or hull: separating axes of a convex polyhedron and a flat triangle: the triangle's
//   normal, the polyhedron's face normals, and the cross products of the edge pairs that can
//   touch (the polyhedron's edge must be its farthest feature towards the triangle: the axis lies
//   on the edge's arc between its two face normals; the triangle's edge must be its farthest
//   feature towards the piece: the axis leans out of that edge's side). Every axis ends the test
//   when it separates; only axes on the front side may be the contact normal. The triangle's
//   normal is preferred to the polyhedron's faces and faces to edges unless the other is clearly
//   better (the same tolerances as hull–hull), so a piece resting on a face keeps that face from
//   step to step. The triangle's face clips the polyhedron's incident face (its face most
//   anti-parallel to n) against the triangle's side planes; a polyhedron face clips the triangle
//   against its own side planes; an edge pair gives one point between the two edges.
//
// Internal edges. A contact whose normal leans away from the triangle's front normal towards an
// edge (or corner) comes from that edge. When every edge it leans over is inactive (mesh.h: flat,
// gently bent or a valley), the neighbour's own face holds the body there, and the edge normal
// would only kick it up or sideways: the contact is made again along the triangle's normal,
// keeping only what lies over the triangle. A body sliding or rolling across a flat seam so sees
// one normal, the face's, on both sides.
//
// The triangles' manifolds are merged by normal (within kMergeCos, in the order the tree gives
// the triangles) into at most kMaxLevelManifolds manifolds, each cut to four points by
// reduce_to_four: a box on a flat floor of many triangles has one manifold of four corners.
#include "collide_mesh.h"

#include <cfloat>

#include "collide_internal.h"
#include "hull.h"
#include "mesh.h"
#include "shape.h"

namespace lockstep::sim {

namespace {

using namespace collide_detail;

constexpr float kBackDepth = 1.0f;              // m: the thickness behind the front face
constexpr float kFaceCos = 0.999999f;           // a normal this close to the face's is the face's
constexpr float kMergeCos = 0.9962f;            // 5°: triangles' manifolds merged into one
constexpr float kInsideBand = 1.0e-3f;          // m: a point this far outside still counts
constexpr float kSamePointSq = 2.5e-5f;         // m²: points of a group closer than 5 mm are one
constexpr uint32_t kMaxTrianglesPerCall = 128;  // scratch on the stack (wasm's is small)
constexpr int kMaxCandidatePoints = 256;
// Axis preferences of the polyhedron routine, as hull–hull's (collide_hull.cpp).
constexpr float kAxisAbsTol = 5.0e-4f;
constexpr float kAxisRelTol = 0.05f;
constexpr float kEdgeParallelSinSq = 1.0e-6f;
// A capsule's face contact wins over an edge contact as close as it within this (m).
constexpr float kFaceTieTol = 1.0e-5f;
// Two clipped segment points closer than this (m) collapse into one.
constexpr float kMinPointSpacing = 1.0e-4f;
// Room for an incident face of up to kMaxHullPoints corners clipped by three side planes, or a
// triangle clipped by a face of as many sides (each plane adds at most one corner).
constexpr int kMaxClip = static_cast<int>(kMaxHullPoints) + 8;

bool clearly_better(float candidate, float best) {
  return candidate > best + kAxisAbsTol + kAxisRelTol * abs_f(best);
}

uint32_t level_feature(uint32_t triangle, uint32_t sub) {
  const uint32_t mixed = (sub * 0x9E3779B1u) >> 26;  // 6 bits of the routine's own id
  return feature_id(kTagLevel, (triangle << 6) | mixed);
}

uint32_t next_corner(uint32_t k) {
  return k == 2 ? 0u : k + 1u;
}

// The unit outward normal of the triangle's side plane over edge k (corner k to k + 1).
Vec3 side_normal(const LevelTriangle& t, uint32_t k) {
  return normalize_or(cross(t.v[next_corner(k)] - t.v[k], t.normal), Vec3{});
}

// Whether a point (the level's frame) lies over the triangle, within kInsideBand.
bool over_triangle(const LevelTriangle& t, Vec3 p) {
  for (uint32_t k = 0; k < 3; ++k) {
    if (dot(p - t.v[k], side_normal(t, k)) > kInsideBand) return false;
  }
  return true;
}

// Whether a contact normal from the triangle may stand: the face's own normal, or one leaning
// over at least one active edge (a genuine edge or corner contact).
bool edge_normal_allowed(const LevelTriangle& t, Vec3 normal) {
  const float along = dot(normal, t.normal);
  if (along >= kFaceCos) return true;
  const Vec3 lean = normal - t.normal * along;
  for (uint32_t k = 0; k < 3; ++k) {
    const Vec3 side = cross(t.v[next_corner(k)] - t.v[k], t.normal);
    if (dot(lean, side) > 0.0f && (t.active_edges & (1u << k)) != 0) return true;
  }
  return false;
}

// ---- the piece in the level's frame -------------------------------------------------------------

// A polyhedron (box or hull) moved into the level's frame. The arrays are written by
// make_local_poly before anything reads them, so left uninitialized (variant members).
struct LocalPoly {
  PolyView view;
  Vec3 centre{};
  union {
    Vec3 v[kMaxHullPoints];
  };
  union {
    Vec3 n[kMaxHullFaces];
  };
  float d[kMaxHullFaces];
  // Per edge: its direction (corner 0 to 1) and the two planes that bound its arc on the Gauss
  // map: a direction u (perpendicular to the edge) lies on the arc between the faces' normals
  // m1 and m2 when dot(u, arc_a) ≥ 0 and dot(u, arc_b) ≥ 0, with w = m1 × m2, arc_a = w × m1 and
  // arc_b = m2 × w. Only signs are read, so no square root per triangle.
  union {
    Vec3 edge_dir[kMaxHullEdges];
  };
  union {
    Vec3 arc_a[kMaxHullEdges];
  };
  union {
    Vec3 arc_b[kMaxHullEdges];
  };
  float edge_sq[kMaxHullEdges];
  // A box also keeps its axes (unit, the level's frame) and half extents: its twelve edges run
  // along three directions, so poly_triangle tests 3 × 3 edge axes instead of 12 × 3.
  bool is_box = false;
  Vec3 box_axis[3];
  float box_half[3];
  LocalPoly() {}
};

// `edges`: also each edge's direction and arc planes (a box does without: poly_triangle tests
// its three edge directions directly).
void make_local_poly(const PolyView& p, const Transform& xf, bool edges, LocalPoly* w) {
  const Mat3 r = to_mat3(xf.q);
  w->view = p;
  w->view.vertices = nullptr;  // the body-space arrays may not outlive the call
  w->view.face_normals = nullptr;
  w->view.face_offsets = nullptr;
  w->centre = xf.p;
  for (uint32_t i = 0; i < p.vertex_count; ++i)
    w->v[i] = r * p.vertices[i] + xf.p;
  for (uint32_t f = 0; f < p.face_count; ++f) {
    w->n[f] = r * p.face_normals[f];
    w->d[f] = p.face_offsets[f] + dot(w->n[f], xf.p);
  }
  for (uint32_t e = 0; edges && e < p.edge_count; ++e) {
    const Vec3 m1 = w->n[p.edge_faces[e][0]], m2 = w->n[p.edge_faces[e][1]];
    const Vec3 across = cross(m1, m2);
    w->edge_dir[e] = w->v[p.edge_vertices[e][1]] - w->v[p.edge_vertices[e][0]];
    w->edge_sq[e] = length_squared(w->edge_dir[e]);
    w->arc_a[e] = cross(across, m1);
    w->arc_b[e] = cross(m2, across);
  }
}

Vec3 face_corner(const LocalPoly& w, uint32_t face, uint32_t k) {
  const PolyView& p = w.view;
  return w.v[p.face_vertices[p.face_first[face] + k % p.face_size[face]]];
}

// ---- sphere–triangle ----------------------------------------------------------------------------

// The point of the triangle closest to p, and where it lies: 0 = the face, 1 + k = edge k,
// 4 + k = corner k. Barycentric regions, tested corner, edge, corner, edge, edge, face.
Vec3 closest_on_triangle(const LevelTriangle& t, Vec3 p, uint32_t* where) {
  const Vec3 a = t.v[0], b = t.v[1], c = t.v[2];
  const Vec3 ab = b - a, ac = c - a, ap = p - a;
  const float d1 = dot(ab, ap), d2 = dot(ac, ap);
  if (d1 <= 0.0f && d2 <= 0.0f) {
    *where = 4;
    return a;
  }
  const Vec3 bp = p - b;
  const float d3 = dot(ab, bp), d4 = dot(ac, bp);
  if (d3 >= 0.0f && d4 <= d3) {
    *where = 5;
    return b;
  }
  const float vc = d1 * d4 - d3 * d2;
  if (vc <= 0.0f && d1 >= 0.0f && d3 <= 0.0f) {
    *where = 1;  // edge 0: a → b
    return a + ab * (d1 / (d1 - d3));
  }
  const Vec3 cp = p - c;
  const float d5 = dot(ab, cp), d6 = dot(ac, cp);
  if (d6 >= 0.0f && d5 <= d6) {
    *where = 6;
    return c;
  }
  const float vb = d5 * d2 - d1 * d6;
  if (vb <= 0.0f && d2 >= 0.0f && d6 <= 0.0f) {
    *where = 3;  // edge 2: c → a
    return a + ac * (d2 / (d2 - d6));
  }
  const float va = d3 * d6 - d5 * d4;
  if (va <= 0.0f && d4 - d3 >= 0.0f && d5 - d6 >= 0.0f) {
    *where = 2;  // edge 1: b → c
    return b + (c - b) * ((d4 - d3) / ((d4 - d3) + (d5 - d6)));
  }
  *where = 0;
  return p - t.normal * dot(t.normal, p - a);
}

void sphere_triangle(Vec3 centre, float radius, const LevelTriangle& t, float margin, Manifold* m) {
  const Vec3 n = t.normal;
  const float height = dot(n, centre - t.v[0]);
  uint32_t where = 0;
  const Vec3 q = closest_on_triangle(t, centre, &where);
  if (where == 0) {
    const float sep = height - radius;
    if (sep > margin) return;
    m->normal = n;
    add_point(m, centre - n * (radius + 0.5f * sep), sep, 0);
    return;
  }
  if (height < 0.0f) return;  // behind the plane and beside the triangle
  const Vec3 d = centre - q;
  const float dist_sq = length_squared(d);
  const float dist = std::sqrt(dist_sq);
  const float sep = dist - radius;
  if (sep > margin) return;
  const Vec3 normal = dist_sq > kDirectionEpsSq ? d * (1.0f / dist) : n;
  if (!edge_normal_allowed(t, normal)) {
    // An inactive edge: the face's normal, if the centre is over the face after all.
    const float face_sep = height - radius;
    if (face_sep > margin || !over_triangle(t, centre)) return;
    m->normal = n;
    add_point(m, centre - n * (radius + 0.5f * face_sep), face_sep, 0);
    return;
  }
  m->normal = normal;
  add_point(m, centre - normal * (radius + 0.5f * sep), sep, where);
}

// ---- capsule–triangle ---------------------------------------------------------------------------

// The segment's part over the face: p + s·d for s in [*s0, *s1], clipped by the triangle's side
// planes; sources 0 / 1 = the segment's own end, 2 + k = side k. False when nothing is over it.
bool segment_over_triangle(const LevelTriangle& t, Vec3 p, Vec3 d, float* s0, float* s1,
                           uint32_t* src0, uint32_t* src1) {
  float lo = 0.0f, hi = 1.0f;
  uint32_t a = 0, b = 1;
  for (uint32_t k = 0; k < 3; ++k) {
    // The side's normal need not be unit: the crossing parameter is a ratio.
    const Vec3 side = cross(t.v[next_corner(k)] - t.v[k], t.normal);
    const float num = dot(side, t.v[k] - p);  // ≥ 0 where p is inside this side
    const float den = dot(side, d);
    if (den == 0.0f) {
      if (num < 0.0f) return false;
    } else if (den > 0.0f) {
      const float s = num / den;
      if (s < hi) hi = s, b = 2 + k;
    } else {
      const float s = num / den;
      if (s > lo) lo = s, a = 2 + k;
    }
  }
  if (lo > hi) return false;
  *s0 = lo, *s1 = hi, *src0 = a, *src1 = b;
  return true;
}

// The face contact of the segment's part over the face: a point at each end within the margin.
void capsule_face_points(const LevelTriangle& t, Vec3 p, Vec3 d, float radius, float margin,
                         float s0, float s1, uint32_t src0, uint32_t src1, Manifold* m) {
  const Vec3 n = t.normal;
  m->normal = n;
  const float spacing = length(d) * (s1 - s0);
  for (uint32_t end = 0; end < 2; ++end) {
    if (end == 1 && !(spacing > kMinPointSpacing)) break;
    const Vec3 x = p + d * (end == 0 ? s0 : s1);
    const float sep = dot(n, x - t.v[0]) - radius;
    if (sep > margin) continue;
    add_point(m, x - n * (radius + 0.5f * sep), sep, 8 + 4 * end + (end == 0 ? src0 : src1));
  }
}

void capsule_triangle(Vec3 p, Vec3 d, float radius, const LevelTriangle& t, float margin,
                      Manifold* m) {
  const Vec3 n = t.normal;
  float s0 = 0, s1 = 0;
  uint32_t src0 = 0, src1 = 0;
  const bool over = segment_over_triangle(t, p, d, &s0, &s1, &src0, &src1);
  float face_distance = FLT_MAX;
  if (over) {
    const float h0 = dot(n, p + d * s0 - t.v[0]), h1 = dot(n, p + d * s1 - t.v[0]);
    face_distance = h0 < h1 ? h0 : h1;
    if (face_distance <= 0.0f) {  // the segment reaches the face: a face contact at any depth
      capsule_face_points(t, p, d, radius, margin, s0, s1, src0, src1, m);
      return;
    }
  }
  // The closest points of the segment and each edge.
  float best_sq = FLT_MAX, best_s = 0, best_u = 0;
  uint32_t best_edge = 0;
  for (uint32_t k = 0; k < 3; ++k) {
    const Vec3 a = t.v[k], e = t.v[next_corner(k)] - a;
    float s, u;
    closest_segment_params(p, d, a, e, &s, &u);
    const float dist_sq = length_squared(p + d * s - (a + e * u));
    if (dist_sq < best_sq) best_sq = dist_sq, best_s = s, best_u = u, best_edge = k;
  }
  const float edge_distance = std::sqrt(best_sq);
  if (over && face_distance <= edge_distance + kFaceTieTol) {
    if (face_distance - radius > margin) return;
    capsule_face_points(t, p, d, radius, margin, s0, s1, src0, src1, m);
    return;
  }
  const float sep = edge_distance - radius;
  if (sep > margin) return;
  const Vec3 x = p + d * best_s;
  if (dot(n, x - t.v[0]) < 0.0f) return;  // behind the plane and beside the triangle
  const Vec3 a = t.v[best_edge];
  const Vec3 y = a + (t.v[next_corner(best_edge)] - a) * best_u;
  const Vec3 normal = best_sq > kDirectionEpsSq ? (x - y) * (1.0f / edge_distance) : n;
  if (!edge_normal_allowed(t, normal)) {
    // An inactive edge: the face contact of the part over the face, if any.
    if (over) capsule_face_points(t, p, d, radius, margin, s0, s1, src0, src1, m);
    return;
  }
  m->normal = normal;
  const uint32_t where = best_u <= 0.0f   ? 19 + best_edge
                         : best_u >= 1.0f ? 19 + next_corner(best_edge)
                                          : 16 + best_edge;
  add_point(m, x - normal * (radius + 0.5f * sep), sep, where);
}

// ---- box/hull–triangle --------------------------------------------------------------------------

// The clipping routines' arrays, left uninitialized (variant members) for the reason Scratch
// gives: every entry is written before it is read.
struct ClipScratch {
  union {
    ClipPoint buf0[kMaxClip];
  };
  union {
    ClipPoint buf1[kMaxClip];
  };
  union {
    Vec3 pos[kMaxClip];
  };
  float sep[kMaxClip];
  uint32_t feature[kMaxClip];
  ClipScratch() {}
};

// Adds the candidates to m, cut to four (last step's ids are not known here: the groups are cut
// again with everything the triangles gave).
void add_reduced(const Vec3* pos, const float* sep, const uint32_t* feature, int count, Vec3 normal,
                 Manifold* m) {
  int keep[kMaxManifoldPoints];
  const Manifold none;
  const int kept = reduce_to_four(pos, sep, feature, count, normal, none, keep);
  for (int k = 0; k < kept; ++k)
    add_point(m, pos[keep[k]], sep[keep[k]], feature[keep[k]]);
}

// The triangle's face as the reference: the polyhedron's incident face clipped against the
// triangle's side planes, the points within the margin above the plane.
void poly_triangle_face(const LocalPoly& a, const LevelTriangle& t, float margin, Manifold* m) {
  const Vec3 n = t.normal;
  uint32_t inc = 0;
  float most = FLT_MAX;
  for (uint32_t f = 0; f < a.view.face_count; ++f) {
    const float c = dot(a.n[f], n);
    if (c < most) most = c, inc = f;
  }
  ClipScratch scratch;
  ClipPoint* buf0 = scratch.buf0;
  ClipPoint* buf1 = scratch.buf1;
  const uint32_t size = a.view.face_size[inc];
  int count = 0;
  for (uint32_t k = 0; k < size; ++k)
    buf0[count++] = ClipPoint{face_corner(a, inc, k), (k + size - 1) % size % 64u, k % 64u};
  ClipPoint* cur = buf0;
  ClipPoint* next = buf1;
  for (uint32_t k = 0; k < 3 && count > 0; ++k) {
    const Vec3 side = side_normal(t, k);
    count = clip_polygon(cur, count, side, dot(side, t.v[k]), 64u + k, kInsideBand, kMaxClip, next);
    ClipPoint* swap = cur;
    cur = next;
    next = swap;
  }
  Vec3* pos = scratch.pos;
  float* sep = scratch.sep;
  uint32_t* feature = scratch.feature;
  int kept = 0;
  const float plane = dot(n, t.v[0]);
  for (int q = 0; q < count; ++q) {
    const float s = dot(n, cur[q].p) - plane;
    if (s > margin) continue;
    pos[kept] = cur[q].p - n * (0.5f * s);
    sep[kept] = s;
    feature[kept] = (1u << 20) | ((inc & 0x3fu) << 14) | (cur[q].in_line << 7) | cur[q].out_line;
    ++kept;
  }
  m->normal = n;
  add_reduced(pos, sep, feature, kept, n, m);
}

// A face of the polyhedron as the reference: the triangle clipped against the face's side
// planes, the corners within the margin outside the face. The normal is the face's, reversed.
void poly_face_triangle(const LocalPoly& a, uint32_t face, const LevelTriangle& t, float margin,
                        Manifold* m) {
  const Vec3 fn = a.n[face];
  ClipScratch scratch;
  ClipPoint* buf0 = scratch.buf0;
  ClipPoint* buf1 = scratch.buf1;
  int count = 0;
  for (uint32_t k = 0; k < 3; ++k)
    buf0[count++] = ClipPoint{t.v[k], k == 0 ? 2u : k - 1, k};
  ClipPoint* cur = buf0;
  ClipPoint* next = buf1;
  const uint32_t size = a.view.face_size[face];
  for (uint32_t k = 0; k < size && count > 0; ++k) {
    const Vec3 c0 = face_corner(a, face, k), c1 = face_corner(a, face, k + 1);
    const Vec3 side = normalize_or(cross(c1 - c0, fn), Vec3{0, 1, 0});
    count =
        clip_polygon(cur, count, side, dot(side, c0), 64u + k % 64u, kInsideBand, kMaxClip, next);
    ClipPoint* swap = cur;
    cur = next;
    next = swap;
  }
  Vec3* pos = scratch.pos;
  float* sep = scratch.sep;
  uint32_t* feature = scratch.feature;
  int kept = 0;
  for (int q = 0; q < count; ++q) {
    const float s = dot(fn, cur[q].p) - a.d[face];
    if (s > margin) continue;
    pos[kept] = cur[q].p - fn * (0.5f * s);
    sep[kept] = s;
    feature[kept] = (2u << 20) | ((face & 0x3fu) << 14) | (cur[q].in_line << 7) | cur[q].out_line;
    ++kept;
  }
  m->normal = -fn;
  add_reduced(pos, sep, feature, kept, -fn, m);
}

void poly_triangle(const LocalPoly& a, const LevelTriangle& t, float margin, Manifold* m) {
  const Vec3 n = t.normal;
  const PolyView& pv = a.view;
  // The triangle's front against the polyhedron's vertices; also the thickness test.
  float lowest = FLT_MAX;
  for (uint32_t i = 0; i < pv.vertex_count; ++i) {
    const float s = dot(n, a.v[i]);
    if (s < lowest) lowest = s;
  }
  const float sep_t = lowest - dot(n, t.v[0]);
  if (sep_t > margin || sep_t < -kBackDepth) return;
  // The polyhedron's faces against the triangle's corners. A face turned away from the front
  // (its reversed normal behind the triangle) may separate, but is no contact normal.
  float sep_f = -FLT_MAX;
  uint32_t face = 0;
  for (uint32_t f = 0; f < pv.face_count; ++f) {
    const Vec3 fn = a.n[f];
    float s = dot(fn, t.v[0]);
    const float s1 = dot(fn, t.v[1]), s2 = dot(fn, t.v[2]);
    if (s1 < s) s = s1;
    if (s2 < s) s = s2;
    s -= a.d[f];
    if (s > margin) return;
    if (dot(fn, n) < 0.0f && s > sep_f) sep_f = s, face = f;
  }
  // Edge pairs that can touch.
  float sep_e = -FLT_MAX;
  uint32_t edge_a = 0, edge_t = 0;
  Vec3 axis{};
  Vec3 sides[3], edges[3];
  float edge_sq[3];
  for (uint32_t k = 0; k < 3; ++k) {
    edges[k] = t.v[next_corner(k)] - t.v[k];
    edge_sq[k] = length_squared(edges[k]);
    sides[k] = cross(edges[k], n);
  }
  Vec3 edge_p0{}, edge_d{};  // the piece's edge of the best pair
  if (a.is_box) {
    for (uint32_t j = 0; j < 3; ++j) {
      const Vec3 u = a.box_axis[j];
      for (uint32_t k = 0; k < 3; ++k) {
        // Oriented so that the triangle's edge is its farthest feature along l; the box's nearest
        // edge along this direction is then the one on the −l side of the other two axes.
        Vec3 l = cross(u, edges[k]);
        if (dot(l, sides[k]) < 0.0f) l = -l;
        const float l_sq = length_squared(l);
        if (!(l_sq > kEdgeParallelSinSq * edge_sq[k])) continue;
        l = l * (1.0f / std::sqrt(l_sq));
        Vec3 p0 = a.centre - u * a.box_half[j];
        uint32_t corner = 0;
        for (uint32_t i = 0; i < 3; ++i) {
          if (i == j) continue;
          const bool below = dot(l, a.box_axis[i]) >= 0.0f;
          p0 = below ? p0 - a.box_axis[i] * a.box_half[i] : p0 + a.box_axis[i] * a.box_half[i];
          corner = corner * 2 + (below ? 0u : 1u);
        }
        const float sep = dot(l, p0 - t.v[k]);
        if (sep > margin) return;
        if (dot(l, n) < 0.0f) continue;  // would push the piece behind the triangle
        if (sep > sep_e) {
          sep_e = sep, edge_a = 4 * j + corner, edge_t = k, axis = l;
          edge_p0 = p0, edge_d = u * (2.0f * a.box_half[j]);
        }
      }
    }
  } else {
    for (uint32_t e = 0; e < pv.edge_count; ++e) {
      const Vec3 da = a.edge_dir[e];
      const Vec3 arc_a = a.arc_a[e], arc_b = a.arc_b[e];
      for (uint32_t k = 0; k < 3; ++k) {
        // l, from the triangle to the piece, must put the piece's nearest feature on this edge:
        // −l on the edge's arc (between its faces' normals).
        Vec3 l = cross(da, edges[k]);
        const float xa = dot(l, arc_a), xb = dot(l, arc_b);
        if (xa >= 0.0f && xb >= 0.0f) {
          l = -l;
        } else if (!(xa <= 0.0f && xb <= 0.0f)) {
          continue;
        }
        if (dot(l, sides[k]) < 0.0f) continue;  // the triangle's edge is not its farthest along l
        const float l_sq = length_squared(l);
        if (!(l_sq > kEdgeParallelSinSq * a.edge_sq[e] * edge_sq[k])) continue;
        l = l * (1.0f / std::sqrt(l_sq));
        const Vec3 p0 = a.v[pv.edge_vertices[e][0]];
        const float sep = dot(l, p0 - t.v[k]);
        if (sep > margin) return;
        if (dot(l, n) < 0.0f) continue;  // would push the piece behind the triangle
        if (sep > sep_e) sep_e = sep, edge_a = e, edge_t = k, axis = l, edge_p0 = p0, edge_d = da;
      }
    }
  }
  float best = sep_t;
  int kind = 0;  // 0 the triangle's face, 1 the polyhedron's face, 2 an edge pair
  if (sep_f > -FLT_MAX && clearly_better(sep_f, best)) best = sep_f, kind = 1;
  if (sep_e > -FLT_MAX && clearly_better(sep_e, best)) kind = 2;
  if (kind == 1 && edge_normal_allowed(t, -a.n[face])) {
    poly_face_triangle(a, face, t, margin, m);
    return;
  }
  if (kind == 2 && edge_normal_allowed(t, axis)) {
    const Vec3 a0 = edge_p0, da = edge_d;
    const Vec3 b0 = t.v[edge_t];
    float s, u;
    closest_segment_params(a0, da, b0, edges[edge_t], &s, &u);
    const Vec3 on_a = a0 + da * s, on_t = b0 + edges[edge_t] * u;
    const float sep = dot(on_a - on_t, axis);
    if (sep > margin) return;
    m->normal = axis;
    add_point(m, (on_a + on_t) * 0.5f, sep, (3u << 20) | ((edge_a & 0xffu) << 8) | edge_t);
    return;
  }
  // The triangle's face, or an inactive edge's contact made again along the face's normal.
  poly_triangle_face(a, t, margin, m);
}

// ---- the call -----------------------------------------------------------------------------------

// The piece (A) in the level's frame, prepared once per collide_level call.
struct LocalPiece {
  ShapeType type = ShapeType::sphere;
  float radius = 0;
  Vec3 p{}, d{};  // sphere: the centre, d = 0; capsule: the segment p + s·d, s in [0, 1]
  BoxPolyhedron box;
  LocalPoly poly;  // box and hull
  LocalPiece() {}
};

// False for the shapes that have no level routine (planes, compounds, level shapes).
bool make_local_piece(const ShapeDef& piece, const Transform& local, const ShapeLibrary& library,
                      LocalPiece* out) {
  out->type = piece.type;
  switch (piece.type) {
    case ShapeType::sphere:
      out->radius = piece.radius;
      out->p = local.p;
      return true;
    case ShapeType::capsule: {
      const Vec3 axis = to_mat3(local.q).c1 * piece.half_height;
      out->radius = piece.radius;
      out->p = local.p - axis;
      out->d = axis * 2.0f;
      return true;
    }
    case ShapeType::box: {
      out->box = box_polyhedron(piece.half_extents);
      make_local_poly(out->box.view(), local, false, &out->poly);
      const Mat3 r = to_mat3(local.q);
      out->poly.is_box = true;
      out->poly.box_axis[0] = r.c0;
      out->poly.box_axis[1] = r.c1;
      out->poly.box_axis[2] = r.c2;
      out->poly.box_half[0] = piece.half_extents.x;
      out->poly.box_half[1] = piece.half_extents.y;
      out->poly.box_half[2] = piece.half_extents.z;
      return true;
    }
    case ShapeType::hull:
      make_local_poly(view_of(library.hull(piece)), local, true, &out->poly);
      out->poly.is_box = false;
      return true;
    default:
      return false;
  }
}

// collide_level's arrays, on the stack and left uninitialized (variant members): each entry is
// written before it is read, and clearing 10 KB a call would cost more than most calls' work.
struct Scratch {
  union {
    LevelTriangle triangles[kMaxTrianglesPerCall];
  };
  union {
    Vec3 position[kMaxCandidatePoints];
  };
  union {
    Vec3 group_position[kMaxCandidatePoints];
  };
  LocalPiece piece;
  Scratch() {}
};

// A manifold left uninitialized but for what collide_level sets (a variant member).
struct TriangleManifold {
  union {
    Manifold m;
  };
  TriangleManifold() {}
};

// The manifold of the piece against one triangle, in the level's frame; its points' features are
// the routine's own ids (collide_level adds the triangle's).
void collide_triangle(const LocalPiece& piece, const LevelTriangle& t, float margin, Manifold* m) {
  switch (piece.type) {
    case ShapeType::sphere:
      sphere_triangle(piece.p, piece.radius, t, margin, m);
      return;
    case ShapeType::capsule:
      capsule_triangle(piece.p, piece.d, piece.radius, t, margin, m);
      return;
    case ShapeType::box:
    case ShapeType::hull:
      poly_triangle(piece.poly, t, margin, m);
      return;
    default:
      return;
  }
}

}  // namespace

uint32_t level_feature_triangle(uint32_t feature) {
  return (feature & 0x0fffffffu) >> 6;
}

uint32_t collide_level(const ShapeDef& piece, const Transform& xa, const ShapeDef& level,
                       const Transform& xb, const ShapeLibrary& library, float margin,
                       Manifold* out, uint32_t* dropped) {
  // The piece in the level's frame.
  const Transform local{inv_rotate(xb.q, xa.p - xb.p), conjugate(xb.q) * xa.q};
  const Aabb box = compute_aabb(piece, library, local, margin);
  Scratch scratch;
  LevelTriangle* triangles = scratch.triangles;
  uint32_t found = 0;
  if (level.type == ShapeType::mesh) {
    if (level.mesh >= library.mesh_count) return 0;
    found = gather_mesh_triangles(library.meshes[level.mesh], box.lower, box.upper, triangles,
                                  kMaxTrianglesPerCall);
  } else {
    if (level.mesh >= library.heightfield_count) return 0;
    found = gather_heightfield_triangles(library.heightfields[level.mesh], box.lower, box.upper,
                                         triangles, kMaxTrianglesPerCall);
  }
  if (found > kMaxTrianglesPerCall) {
    if (dropped != nullptr) *dropped += found - kMaxTrianglesPerCall;
    found = kMaxTrianglesPerCall;
  }
  if (found == 0) return 0;
  LocalPiece& lp = scratch.piece;
  if (!make_local_piece(piece, local, library, &lp)) return 0;
  // Candidate points, each with its group.
  Vec3* position = scratch.position;
  float separation[kMaxCandidatePoints];
  uint32_t feature[kMaxCandidatePoints];
  uint8_t group_of[kMaxCandidatePoints];
  Vec3 group_normal[kMaxLevelManifolds];
  uint32_t groups = 0;
  int count = 0;
  // A triangle whose plane the piece does not reach (in front beyond the margin, or behind it
  // deeper than the thickness) cannot touch it: the piece's extent along the normal, exact for
  // spheres, capsules and boxes; hulls take the bounding ball here and the exact extent in
  // poly_triangle.
  const float reach = bounding_radius(piece, library);
  const Vec3 centre = local.p;
  const Mat3 axes = to_mat3(local.q);
  for (uint32_t i = 0; i < found; ++i) {
    const LevelTriangle& t = triangles[i];
    const float height = dot(t.normal, centre - t.v[0]);
    float extent = reach;
    if (piece.type == ShapeType::sphere) {
      extent = piece.radius;
    } else if (piece.type == ShapeType::capsule) {
      extent = piece.radius + abs_f(dot(t.normal, axes.c1)) * piece.half_height;
    } else if (piece.type == ShapeType::box) {
      const Vec3 h = piece.half_extents;
      extent = abs_f(dot(t.normal, axes.c0)) * h.x + abs_f(dot(t.normal, axes.c1)) * h.y +
               abs_f(dot(t.normal, axes.c2)) * h.z;
    }
    // A hull's bounding ball may reach deeper than the hull: its depth is tested exactly later.
    const bool exact = piece.type != ShapeType::hull;
    if (height - extent > margin || (exact && height - extent < -kBackDepth)) continue;
    // Only its normal and points are written and read: no need to clear the whole manifold.
    TriangleManifold tm;
    Manifold& m = tm.m;
    m.count = 0;
    collide_triangle(lp, t, margin, &m);
    if (m.count == 0) continue;
    uint32_t g = 0;
    float best = -2.0f;
    for (uint32_t j = 0; j < groups; ++j) {
      const float d = dot(m.normal, group_normal[j]);
      if (d > best) best = d, g = j;
    }
    if (!(best >= kMergeCos) && groups < kMaxLevelManifolds) {
      g = groups++;
      group_normal[g] = m.normal;
    }
    for (int k = 0; k < m.count && count < kMaxCandidatePoints; ++k) {
      // A point another triangle of the group found already (a ball over a seam touches both
      // triangles at one point): kept once, or the seam would double its stiffness and change
      // the count of points, and so the warm start, as the ball rolls over it.
      bool repeated = false;
      for (int q = 0; q < count && !repeated; ++q) {
        repeated =
            group_of[q] == g && length_squared(position[q] - m.points[k].position) <= kSamePointSq;
      }
      if (repeated) continue;
      position[count] = m.points[k].position;
      separation[count] = m.points[k].separation;
      feature[count] = level_feature(t.index, m.points[k].feature);
      group_of[count] = static_cast<uint8_t>(g);
      ++count;
    }
  }
  const Mat3 r = to_mat3(xb.q);
  Vec3* gp = scratch.group_position;
  for (uint32_t g = 0; g < groups; ++g) {
    float gs[kMaxCandidatePoints];
    uint32_t gf[kMaxCandidatePoints];
    int n = 0;
    for (int k = 0; k < count; ++k) {
      if (group_of[k] != g) continue;
      gp[n] = position[k];
      gs[n] = separation[k];
      gf[n] = feature[k];
      ++n;
    }
    Manifold& m = out[g];
    m = Manifold{};
    int keep[kMaxManifoldPoints];
    const int kept = reduce_to_four(gp, gs, gf, n, group_normal[g], m, keep);
    m.normal = r * group_normal[g];
    for (int k = 0; k < kept; ++k)
      add_point(&m, r * gp[keep[k]] + xb.p, gs[keep[k]], gf[keep[k]]);
  }
  return groups;
}

}  // namespace lockstep::sim
