// Narrowphase routines with a convex hull: hull–plane, sphere/capsule–hull, box/hull–hull.
// Every routine works in world space on the hull's vertices and face planes moved there once.
//
// box/hull–hull (a box is viewed as an 8-vertex polyhedron): separating axes. The face normals
// of A against B's vertices, B's against A's, then the edge pairs whose arcs on the Gauss map
// cross (only those edge pairs can touch: each arc is the set of directions in which the edge is
// the farthest feature; B's normals are negated, as for the Minkowski difference A − B). The
// same preferences as box–box keep a resting contact on one reference face: A's faces before
// B's, faces before edges, unless the other is clearly better. A face axis clips the incident
// face (the other solid's face most anti-parallel to the reference normal) against the
// reference face's side planes; an edge axis gives one point between the two edges.
//
// sphere/capsule–hull: a sphere is a capsule whose segment is a point. When the segment is
// outside the hull, the closest points are exact: the closest point of a convex solid to the
// segment lies on a face (seen from a segment end) or on an edge (against the segment or an
// end), so the ends against the solid and the segment against every edge cover every case.
// Closest hull point on a face: the segment is clipped to the face's side planes and both ends
// give a point, so a capsule lying on a face gets two. When the segment reaches into the hull:
// separating axes over the faces and the segment × edge directions.
//
// Feature ids (bits 0..27, under the routine tag):
//   hull–plane:        the hull vertex index.
//   sphere/capsule–hull: kind << 24; kind 1 = face f << 8 | source (0/1 = segment end,
//                      2 + k = clipped by the side plane of the face's corner k); kind 2 = edge
//                      index; kind 3 = vertex index.
//   box/hull–hull:     face contact: bit 26 = reference face on B, bits 19..25 the reference
//                      face, bits 14..18 the incident face (mod 32), bits 0..13 the clip vertex
//                      (line in << 7 | line out; lines 0..63 = incident edges, 64 + k = the
//                      reference face's side k); edge contact: bit 27, A's edge << 8 | B's edge.
#include <cfloat>

#include "collide.h"
#include "collide_internal.h"
#include "hull.h"

namespace lockstep::sim::collide_detail {

namespace {

// The same axis preferences as box–box (collide_box.cpp).
constexpr float kAxisAbsTol = 5.0e-4f;
constexpr float kAxisRelTol = 0.05f;
constexpr float kEdgeParallelSinSq = 1.0e-6f;
// A clipped vertex this far outside a side plane still counts as inside (m).
constexpr float kClipBand = 1.0e-3f;
// Room for an incident face of up to 64 corners clipped by up to 64 side planes.
constexpr int kMaxClip = 2 * static_cast<int>(kMaxHullPoints) + 8;
// Two clipped segment points closer than this (m) collapse into one.
constexpr float kMinPointSpacing = 1.0e-4f;

bool clearly_better(float candidate, float best) {
  return candidate > best + kAxisAbsTol + kAxisRelTol * abs_f(best);
}

// A polyhedron moved into world space.
struct WorldPoly {
  PolyView view;
  Vec3 centre{};
  // Written by to_world before anything reads them, so left uninitialized (variant members):
  // clearing them would cost 2 KB of stores a call, and the level narrowphase makes one per
  // triangle.
  union {
    Vec3 v[kMaxHullPoints];
  };
  union {
    Vec3 n[kMaxHullFaces];
  };
  float d[kMaxHullFaces];
  WorldPoly() {}
};

// A vertex, and face f's plane (normal and offset), in world space, as to_world computes them:
// the separation hints compute single ones this way and must get the same bits.
Vec3 world_vertex(const PolyView& p, const Mat3& r, Vec3 origin, uint32_t i) {
  return r * p.vertices[i] + origin;
}
void world_face(const PolyView& p, const Mat3& r, Vec3 origin, uint32_t f, Vec3* n, float* d) {
  *n = r * p.face_normals[f];
  *d = p.face_offsets[f] + dot(*n, origin);
}

void to_world(const PolyView& p, const Transform& xf, WorldPoly* w) {
  const Mat3 r = to_mat3(xf.q);
  w->view = p;
  w->centre = xf.p;
  for (uint32_t i = 0; i < p.vertex_count; ++i)
    w->v[i] = world_vertex(p, r, xf.p, i);
  for (uint32_t f = 0; f < p.face_count; ++f)
    world_face(p, r, xf.p, f, &w->n[f], &w->d[f]);
}

Vec3 corner(const WorldPoly& w, uint32_t face, uint32_t k) {
  const PolyView& p = w.view;
  return w.v[p.face_vertices[p.face_first[face] + k % p.face_size[face]]];
}

// The outward normal (unit) and offset of the side plane through corner k → k + 1 of a face.
void side_plane(const WorldPoly& w, uint32_t face, uint32_t k, Vec3* normal, float* offset) {
  const Vec3 a = corner(w, face, k), b = corner(w, face, k + 1);
  *normal = normalize_or(cross(b - a, w.n[face]), Vec3{0, 1, 0});
  *offset = dot(*normal, a);
}

// ---- hull–plane ---------------------------------------------------------------------------------

}  // namespace

void collide_hull_plane(const HullGeometry& hull, const Transform& xa, const ShapeDef& plane,
                        const Transform& xb, float margin, Manifold* out) {
  Vec3 n;
  float d;
  plane_in_world(plane, xb, &n, &d);
  const Mat3 r = to_mat3(xa.q);
  Vec3 pos[kMaxHullPoints];
  float sep[kMaxHullPoints];
  uint32_t feature[kMaxHullPoints];
  int count = 0;
  for (uint32_t i = 0; i < hull.vertex_count; ++i) {
    const Vec3 v = r * hull.vertices[i] + xa.p;
    const float s = dot(n, v) - d;
    if (s > margin) continue;
    pos[count] = v - n * (0.5f * s);
    sep[count] = s;
    feature[count] = feature_id(kTagHullPlane, i);
    count += 1;
  }
  int keep[kMaxManifoldPoints];
  const int kept = reduce_to_four(pos, sep, feature, count, n, *out, keep);
  for (int k = 0; k < kept; ++k)
    add_point(out, pos[keep[k]], sep[keep[k]], feature[keep[k]]);
  out->normal = n;
}

namespace {

// ---- sphere/capsule–hull ------------------------------------------------------------------------

// The closest point of the solid hull to p, with the feature it lies on.
struct PointHull {
  bool inside = false;
  float distance = 0;    // outside: ≥ 0
  Vec3 point{};          // on the hull's surface
  uint32_t feature = 0;  // kind << 24 | index, as in the header
};

bool in_face_prism(const WorldPoly& w, uint32_t face, Vec3 q) {
  for (uint32_t k = 0; k < w.view.face_size[face]; ++k) {
    Vec3 sn;
    float so;
    side_plane(w, face, k, &sn, &so);
    if (dot(sn, q) > so) return false;
  }
  return true;
}

// Closest point of a segment to the edges of the hull: updates *best when closer.
void closest_on_edge(const WorldPoly& w, uint32_t e, Vec3 p, Vec3 d, float* best_sq,
                     Vec3* seg_point, PointHull* best) {
  const PolyView& pv = w.view;
  const Vec3 a = w.v[pv.edge_vertices[e][0]], b = w.v[pv.edge_vertices[e][1]];
  float s, t;
  closest_segment_params(p, d, a, b - a, &s, &t);
  const Vec3 x = p + d * s, y = a + (b - a) * t;
  const float dist_sq = length_squared(x - y);
  if (!(dist_sq < *best_sq)) return;
  *best_sq = dist_sq;
  *seg_point = x;
  best->point = y;
  if (t <= 0.0f)
    best->feature = (3u << 24) | pv.edge_vertices[e][0];
  else if (t >= 1.0f)
    best->feature = (3u << 24) | pv.edge_vertices[e][1];
  else
    best->feature = (2u << 24) | e;
}

// Exact closest points of a segment p + s·d (s in [0, 1]) and the hull, or inside = true when the
// segment meets the solid.
PointHull segment_hull(const WorldPoly& w, Vec3 p, Vec3 d, Vec3* seg_point) {
  const PolyView& pv = w.view;
  PointHull r;
  // Clip the segment against every face plane: what is left lies inside the solid.
  float t0 = 0.0f, t1 = 1.0f;
  for (uint32_t f = 0; f < pv.face_count && t0 <= t1; ++f) {
    const float num = w.d[f] - dot(w.n[f], p);  // ≥ 0 where p is inside this plane
    const float den = dot(w.n[f], d);
    if (den == 0.0f) {
      if (num < 0.0f) t1 = -1.0f;
    } else if (den > 0.0f) {
      const float t = num / den;
      if (t < t1) t1 = t;
    } else {
      const float t = num / den;
      if (t > t0) t0 = t;
    }
  }
  if (t0 <= t1) {
    r.inside = true;
    *seg_point = p + d * t0;
    return r;
  }
  float best_sq = FLT_MAX;
  // Each end against the faces it lies in front of and inside the side planes of.
  for (int end = 0; end < 2; ++end) {
    const Vec3 q = end == 0 ? p : p + d;
    for (uint32_t f = 0; f < pv.face_count; ++f) {
      const float s = dot(w.n[f], q) - w.d[f];
      if (!(s > 0.0f) || !(s * s < best_sq)) continue;
      const Vec3 on = q - w.n[f] * s;
      if (!in_face_prism(w, f, on)) continue;
      best_sq = s * s;
      *seg_point = q;
      r.point = on;
      r.feature = (1u << 24) | (f << 8);
    }
  }
  for (uint32_t e = 0; e < pv.edge_count; ++e)
    closest_on_edge(w, e, p, d, &best_sq, seg_point, &r);
  r.distance = std::sqrt(best_sq);
  return r;
}

// Clips the segment p + s·d to the side planes of a hull face and adds the ends within the margin
// (separation along the face normal, less the radius). Returns the number of points added.
int clip_segment_to_face(const WorldPoly& w, uint32_t face, Vec3 p, Vec3 d, float radius,
                         float margin, Vec3 normal, Manifold* out) {
  float t0 = 0.0f, t1 = 1.0f;
  uint32_t src0 = 0, src1 = 1;
  for (uint32_t k = 0; k < w.view.face_size[face]; ++k) {
    Vec3 sn;
    float so;
    side_plane(w, face, k, &sn, &so);
    const float num = so - dot(sn, p);
    const float den = dot(sn, d);
    if (den == 0.0f) {
      if (num < 0.0f) return 0;
    } else if (den > 0.0f) {
      const float t = num / den;
      if (t < t1) t1 = t, src1 = 2 + k;
    } else {
      const float t = num / den;
      if (t > t0) t0 = t, src0 = 2 + k;
    }
  }
  if (t0 > t1) return 0;
  int added = 0;
  const float spacing = length(d) * (t1 - t0);
  for (int end = 0; end < 2; ++end) {
    if (end == 1 && !(spacing > kMinPointSpacing)) break;
    const Vec3 x = p + d * (end == 0 ? t0 : t1);
    const float sep = dot(w.n[face], x) - w.d[face] - radius;
    if (sep > margin) continue;
    const uint32_t source = end == 0 ? src0 : src1;
    add_point(out, x - normal * (radius + 0.5f * sep), sep,
              feature_id(kTagRoundHull, (1u << 24) | (face << 8) | source));
    added += 1;
  }
  return added;
}

// Whether a face plane of the hull proves the segment p + s·d farther than radius + margin from
// it, by more than the float error of the exact test below. That test would then find no contact
// either (the segment is outside the solid, and every closest point it measures lies on the hull,
// behind that plane): most pairs the broadphase hands over in a pile are such near misses, and
// the exact test measures every edge of the hull.
float face_plane_bound(Vec3 p, Vec3 q, float radius, float margin) {
  // The dot products' rounding grows with the coordinates: 2^-20 of them, and 1 mm besides.
  const float size =
      (abs_f(p.x) + abs_f(p.y) + abs_f(p.z)) + (abs_f(q.x) + abs_f(q.y) + abs_f(q.z));
  return radius + margin + (1.0e-3f + 9.5367432e-7f * size);
}

bool segment_beyond_face(Vec3 n, float offset, Vec3 p, Vec3 q, float bound) {
  const float a = dot(n, p), b = dot(n, q);
  return (a < b ? a : b) - offset > bound;
}

// The separating face's index, or -1.
int face_plane_separates(const WorldPoly& w, Vec3 p, Vec3 d, float radius, float margin) {
  const Vec3 q = p + d;
  const float bound = face_plane_bound(p, q, radius, margin);
  for (uint32_t f = 0; f < w.view.face_count; ++f) {
    if (segment_beyond_face(w.n[f], w.d[f], p, q, bound)) return static_cast<int>(f);
  }
  return -1;
}

// round_hull's hint: face f of the hull at xb holds the segment beyond face_plane_separates'
// bound (the same operands and operations as that test, so the same answer).
bool round_hull_hint_separates(const PolyView& hull, const Transform& xb, uint32_t f, Vec3 p,
                               Vec3 d, float radius, float margin) {
  if (f >= hull.face_count) return false;
  Vec3 n;
  float offset;
  world_face(hull, to_mat3(xb.q), xb.p, f, &n, &offset);
  const Vec3 q = p + d;
  return segment_beyond_face(n, offset, p, q, face_plane_bound(p, q, radius, margin));
}

// *hint: the face that held the segment off when no point is found early (else 0).
void round_hull(Vec3 p, Vec3 d, float radius, const WorldPoly& w, float margin, Manifold* out,
                uint32_t* hint) {
  const PolyView& pv = w.view;
  const int apart = face_plane_separates(w, p, d, radius, margin);
  if (apart >= 0) {
    *hint = separation_hint(kHintRoundHullFace, static_cast<uint32_t>(apart));
    return;
  }
  Vec3 x;
  const PointHull ph = segment_hull(w, p, d, &x);
  if (!ph.inside) {
    const float sep = ph.distance - radius;
    if (sep > margin) return;
    if ((ph.feature >> 24) == 1u && length_squared(d) > 0.0f) {
      const uint32_t face = (ph.feature >> 8) & 0xffu;
      out->normal = w.n[face];
      if (clip_segment_to_face(w, face, p, d, radius, margin, w.n[face], out) > 0) return;
    }
    // The direction between the closest points; touching (under 1 µm apart), the face's normal,
    // or away from the hull's centre at an edge or a corner.
    Vec3 n;
    if (ph.distance * ph.distance > kDirectionEpsSq)
      n = (x - ph.point) * (1.0f / ph.distance);
    else if ((ph.feature >> 24) == 1u)
      n = w.n[(ph.feature >> 8) & 0xffu];
    else
      n = normalize_or(x - w.centre, Vec3{0, 1, 0});
    out->normal = n;
    add_point(out, x - n * (radius + 0.5f * sep), sep, feature_id(kTagRoundHull, ph.feature));
    return;
  }
  // The segment reaches into the solid: separating axes.
  float face_sep = -FLT_MAX;
  uint32_t face = 0;
  const Vec3 q = p + d;
  for (uint32_t f = 0; f < pv.face_count; ++f) {
    const float a = dot(w.n[f], p), b = dot(w.n[f], q);
    const float s = (a < b ? a : b) - w.d[f];
    if (s > face_sep) face_sep = s, face = f;
  }
  float edge_sep = -FLT_MAX;
  uint32_t edge = 0;
  Vec3 edge_axis{};
  const float dd = length_squared(d);
  if (dd > 0.0f) {
    for (uint32_t e = 0; e < pv.edge_count; ++e) {
      const Vec3 a = w.v[pv.edge_vertices[e][0]], b = w.v[pv.edge_vertices[e][1]];
      const Vec3 de = b - a;
      Vec3 l = cross(d, de);
      const float l_sq = length_squared(l);
      if (!(l_sq > kEdgeParallelSinSq * dd * length_squared(de))) continue;
      l = l * (1.0f / std::sqrt(l_sq));
      const Vec3 n1 = w.n[pv.edge_faces[e][0]], n2 = w.n[pv.edge_faces[e][1]];
      if (dot(l, n1 + n2) < 0.0f) l = -l;
      const float c12 = dot(n1, n2);
      if (dot(l, n1) < c12 || dot(l, n2) < c12) continue;  // not between the faces' normals
      const float pa = dot(l, p), pb = dot(l, q);
      const float s = (pa < pb ? pa : pb) - dot(l, a);
      if (s > edge_sep) edge_sep = s, edge = e, edge_axis = l;
    }
  }
  if (edge_sep > -FLT_MAX && clearly_better(edge_sep, face_sep)) {
    const Vec3 a = w.v[pv.edge_vertices[edge][0]], b = w.v[pv.edge_vertices[edge][1]];
    float s, t;
    closest_segment_params(p, d, a, b - a, &s, &t);
    const Vec3 xs = p + d * s, on = a + (b - a) * t;
    const float sep = dot(edge_axis, xs - on) - radius;
    if (sep > margin) return;
    out->normal = edge_axis;
    add_point(out, xs - edge_axis * (radius + 0.5f * sep), sep,
              feature_id(kTagRoundHull, (2u << 24) | edge));
    return;
  }
  if (face_sep - radius > margin) return;
  out->normal = w.n[face];
  if (dd > 0.0f && clip_segment_to_face(w, face, p, d, radius, margin, w.n[face], out) > 0) return;
  // A sphere, or a segment end inside the solid beyond the face's sides: its deepest end.
  const float a = dot(w.n[face], p), b = dot(w.n[face], q);
  const Vec3 deepest = a <= b ? p : q;
  const float sep = (a <= b ? a : b) - w.d[face] - radius;
  add_point(out, deepest - w.n[face] * (radius + 0.5f * sep), sep,
            feature_id(kTagRoundHull, (1u << 24) | (face << 8) | (a <= b ? 0u : 1u)));
}

// ---- box/hull–hull ------------------------------------------------------------------------------

// The separation of the vertices v[0..count) from the plane (n, offset).
float separation_from_plane(Vec3 n, float offset, const Vec3* v, uint32_t count) {
  float lowest = FLT_MAX;
  for (uint32_t i = 0; i < count; ++i) {
    const float s = dot(n, v[i]);
    if (s < lowest) lowest = s;
  }
  return lowest - offset;
}

// The largest separation of B's vertices against A's face planes (A's face that gives it).
float face_query(const WorldPoly& a, const WorldPoly& b, float margin, uint32_t* face) {
  float best = -FLT_MAX;
  for (uint32_t f = 0; f < a.view.face_count; ++f) {
    const float s = separation_from_plane(a.n[f], a.d[f], b.v, b.view.vertex_count);
    if (s > best) best = s, *face = f;
    if (s > margin) break;
  }
  return best;
}

// The largest separation along the cross products of edge pairs that can touch.
float edge_query(const WorldPoly& a, const WorldPoly& b, float margin, uint32_t* edge_a,
                 uint32_t* edge_b, Vec3* axis) {
  float best = -FLT_MAX;
  const PolyView& pa = a.view;
  const PolyView& pb = b.view;
  for (uint32_t i = 0; i < pa.edge_count; ++i) {
    const Vec3 a0 = a.v[pa.edge_vertices[i][0]];
    const Vec3 da = a.v[pa.edge_vertices[i][1]] - a0;
    const Vec3 na1 = a.n[pa.edge_faces[i][0]], na2 = a.n[pa.edge_faces[i][1]];
    const Vec3 plane_a = cross(na1, na2);
    for (uint32_t j = 0; j < pb.edge_count; ++j) {
      // B's arc, negated: from −nb1 to −nb2.
      const Vec3 c = -b.n[pb.edge_faces[j][0]], dn = -b.n[pb.edge_faces[j][1]];
      const float c_side = dot(c, plane_a), d_side = dot(dn, plane_a);
      if (!(c_side * d_side < 0.0f)) continue;
      const Vec3 plane_b = cross(c, dn);
      const float a_side = dot(na1, plane_b), b_side = dot(na2, plane_b);
      if (!(a_side * b_side < 0.0f) || !(c_side * b_side > 0.0f)) continue;
      const Vec3 b0 = b.v[pb.edge_vertices[j][0]];
      const Vec3 db = b.v[pb.edge_vertices[j][1]] - b0;
      Vec3 l = cross(da, db);
      const float l_sq = length_squared(l);
      if (!(l_sq > kEdgeParallelSinSq * length_squared(da) * length_squared(db))) continue;
      l = l * (1.0f / std::sqrt(l_sq));
      if (dot(l, a0 - a.centre) < 0.0f) l = -l;  // out of A
      const float s = dot(l, b0 - a0);
      if (s > best) best = s, *edge_a = i, *edge_b = j, *axis = l;
      if (s > margin) return best;
    }
  }
  return best;
}

void poly_face_contact(const WorldPoly& ref, const WorldPoly& inc, uint32_t ref_face, bool ref_on_b,
                       float margin, Manifold* out) {
  const Vec3 n_ref = ref.n[ref_face];
  uint32_t inc_face = 0;
  float most = FLT_MAX;
  for (uint32_t f = 0; f < inc.view.face_count; ++f) {
    const float c = dot(inc.n[f], n_ref);
    if (c < most) most = c, inc_face = f;
  }
  ClipPoint buf0[kMaxClip], buf1[kMaxClip];
  const uint32_t inc_size = inc.view.face_size[inc_face];
  int n = 0;
  for (uint32_t k = 0; k < inc_size; ++k) {
    // Incident corner k arrives along edge k − 1 and leaves along edge k.
    buf0[n++] = ClipPoint{corner(inc, inc_face, k), (k + inc_size - 1) % inc_size % 64u, k % 64u};
  }
  ClipPoint* cur = buf0;
  ClipPoint* next = buf1;
  const uint32_t ref_size = ref.view.face_size[ref_face];
  for (uint32_t k = 0; k < ref_size && n > 0; ++k) {
    Vec3 sn;
    float so;
    side_plane(ref, ref_face, k, &sn, &so);
    n = clip_polygon(cur, n, sn, so, 64u + k % 64u, kClipBand, kMaxClip, next);
    ClipPoint* t = cur;
    cur = next;
    next = t;
  }
  Vec3 pos[kMaxClip];
  float sep[kMaxClip];
  uint32_t feature[kMaxClip];
  int count = 0;
  const uint32_t faces =
      (ref_on_b ? 1u << 26 : 0u) | ((ref_face & 0x7fu) << 19) | ((inc_face & 0x1fu) << 14);
  for (int q = 0; q < n; ++q) {
    const float s = dot(n_ref, cur[q].p) - ref.d[ref_face];
    if (s > margin) continue;
    pos[count] = cur[q].p - n_ref * (0.5f * s);
    sep[count] = s;
    feature[count] = feature_id(kTagPolyHull, faces | (cur[q].in_line << 7) | cur[q].out_line);
    count += 1;
  }
  const Vec3 normal = ref_on_b ? n_ref : -n_ref;
  int keep[kMaxManifoldPoints];
  const int kept = reduce_to_four(pos, sep, feature, count, n_ref, *out, keep);
  for (int k = 0; k < kept; ++k)
    add_point(out, pos[keep[k]], sep[keep[k]], feature[keep[k]]);
  out->normal = normal;
}

// poly_poly's hint: face f of `ref` (at xr) holds every vertex of `other` (at xo) beyond the
// margin, computed as to_world and face_query compute it (the same bits, so the same answer).
bool poly_face_separates(const PolyView& ref, const Transform& xr, uint32_t f,
                         const PolyView& other, const Transform& xo, float margin) {
  if (f >= ref.face_count) return false;
  Vec3 n;
  float offset;
  world_face(ref, to_mat3(xr.q), xr.p, f, &n, &offset);
  const Mat3 r = to_mat3(xo.q);
  Vec3 v[kMaxHullPoints];
  for (uint32_t i = 0; i < other.vertex_count; ++i)
    v[i] = world_vertex(other, r, xo.p, i);
  return separation_from_plane(n, offset, v, other.vertex_count) > margin;
}

// *hint: in, a face that held the pair apart before (collide.h); out, the face that does now
// when a face query ends the call (else 0).
void poly_poly(const PolyView& pa, const Transform& xa, const PolyView& pb, const Transform& xb,
               float margin, Manifold* out, uint32_t* hint) {
  const uint32_t given = *hint;
  *hint = 0;
  if (given != 0) {
    const uint32_t f = hint_index(given);
    const bool apart =
        hint_kind(given) == kHintPolyFaceA   ? poly_face_separates(pa, xa, f, pb, xb, margin)
        : hint_kind(given) == kHintPolyFaceB ? poly_face_separates(pb, xb, f, pa, xa, margin)
                                             : false;
    if (apart) {
      *hint = given;
      return;
    }
  }
  WorldPoly a, b;
  to_world(pa, xa, &a);
  to_world(pb, xb, &b);
  uint32_t face_a = 0, face_b = 0;
  const float sep_a = face_query(a, b, margin, &face_a);
  if (sep_a > margin) {
    *hint = separation_hint(kHintPolyFaceA, face_a);
    return;
  }
  const float sep_b = face_query(b, a, margin, &face_b);
  if (sep_b > margin) {
    *hint = separation_hint(kHintPolyFaceB, face_b);
    return;
  }
  uint32_t edge_a = 0, edge_b = 0;
  Vec3 axis{};
  const float sep_edge = edge_query(a, b, margin, &edge_a, &edge_b, &axis);
  if (sep_edge > margin) return;
  const bool ref_on_b = clearly_better(sep_b, sep_a);
  const float sep_face = ref_on_b ? sep_b : sep_a;
  if (sep_edge > -FLT_MAX && clearly_better(sep_edge, sep_face)) {
    const Vec3 a0 = a.v[pa.edge_vertices[edge_a][0]];
    const Vec3 da = a.v[pa.edge_vertices[edge_a][1]] - a0;
    const Vec3 b0 = b.v[pb.edge_vertices[edge_b][0]];
    const Vec3 db = b.v[pb.edge_vertices[edge_b][1]] - b0;
    float s, t;
    closest_segment_params(a0, da, b0, db, &s, &t);
    const Vec3 on_a = a0 + da * s, on_b = b0 + db * t;
    const float sep = dot(on_b - on_a, axis);
    if (sep > margin) return;
    out->normal = -axis;
    add_point(out, (on_a + on_b) * 0.5f, sep,
              feature_id(kTagPolyHull, (1u << 27) | ((edge_a & 0xffu) << 8) | (edge_b & 0xffu)));
    return;
  }
  if (ref_on_b)
    poly_face_contact(b, a, face_b, true, margin, out);
  else
    poly_face_contact(a, b, face_a, false, margin, out);
}

}  // namespace

void collide_round_hull(const ShapeDef& round, const Transform& xa, const HullGeometry& hull,
                        const Transform& xb, float margin, Manifold* out, uint32_t* hint) {
  Vec3 p = xa.p, d{};
  if (round.type == ShapeType::capsule) {
    const Vec3 axis = to_mat3(xa.q).c1 * round.half_height;
    p = xa.p - axis;
    d = axis * 2.0f;
  }
  const uint32_t given = *hint;
  *hint = 0;
  if (hint_kind(given) == kHintRoundHullFace &&
      round_hull_hint_separates(view_of(hull), xb, hint_index(given), p, d, round.radius, margin)) {
    *hint = given;
    return;
  }
  WorldPoly w;
  to_world(view_of(hull), xb, &w);
  round_hull(p, d, round.radius, w, margin, out, hint);
}

bool closest_point_on_hull(const HullGeometry& hull, Vec3 p, Vec3* on, float* distance) {
  WorldPoly w;
  to_world(view_of(hull), Transform{}, &w);
  Vec3 x;
  const PointHull ph = segment_hull(w, p, Vec3{}, &x);
  if (ph.inside) return true;
  *on = ph.point;
  *distance = ph.distance;
  return false;
}

void collide_box_hull(const ShapeDef& box, const Transform& xa, const HullGeometry& hull,
                      const Transform& xb, float margin, Manifold* out, uint32_t* hint) {
  const BoxPolyhedron bp = box_polyhedron(box.half_extents);
  poly_poly(bp.view(), xa, view_of(hull), xb, margin, out, hint);
}

void collide_hull_hull(const HullGeometry& a, const Transform& xa, const HullGeometry& b,
                       const Transform& xb, float margin, Manifold* out, uint32_t* hint) {
  poly_poly(view_of(a), xa, view_of(b), xb, margin, out, hint);
}

int clip_polygon(const ClipPoint* in, int count, Vec3 normal, float offset, uint32_t line,
                 float band, int max_out, ClipPoint* out) {
  int m = 0;
  if (count == 0) return 0;
  ClipPoint prev = in[count - 1];
  float dp = dot(normal, prev.p) - offset;
  for (int i = 0; i < count; ++i) {
    const ClipPoint cur = in[i];
    const float dc = dot(normal, cur.p) - offset;
    const bool prev_in = dp <= band, cur_in = dc <= band;
    if (prev_in != cur_in && m < max_out) {
      const float t = dp / (dp - dc);
      ClipPoint x{prev.p + (cur.p - prev.p) * t, 0, 0};
      if (prev_in) {
        x.in_line = prev.out_line;
        x.out_line = line;
      } else {
        x.in_line = line;
        x.out_line = cur.in_line;
      }
      out[m++] = x;
    }
    if (cur_in && m < max_out) out[m++] = cur;
    prev = cur;
    dp = dc;
  }
  return m;
}

}  // namespace lockstep::sim::collide_detail
