// Narrowphase routines with a box: sphere–box, capsule–box, box–box (feature ids: collide.cpp).
//
// box–box: separating axis test over 15 axes (3 + 3 face normals, 9 edge cross products; edge
// pairs closer than ~0.06° to parallel are skipped, the face axes cover them). Any axis with a
// separation above the margin ends the test. A's faces are preferred to B's, and faces to
// edges, unless the other axis is clearly better (kAxisAbsTol + kAxisRelTol·|best|): with
// nearly equal axes the manifold must not flip between reference faces, or between a face and
// an edge, from one step to the next. Face axis: the incident face (the other box's face most
// anti-parallel to the reference normal) is clipped against the reference face's four side
// planes (Sutherland–Hodgman, with a small band so that a corner lying on a side plane stays a
// vertex whatever rounding does: see clip_polygon), the vertices within the margin below the
// reference face are kept and reduced to 4. Edge axis: one point between the closest points of the
// two edges.
//
// capsule–box, in the box's frame. First the exact closest points of the segment and the solid
// box: the squared distance along the segment is convex and piecewise quadratic between the
// parameters where the segment crosses a slab face, so it is minimised piece by piece.
//  - Segment outside the box, closest box point on a face (one coordinate clamped): the segment
//    is clipped to that face's side slabs and both clipped ends give a point (a capsule lying
//    on a face gets 2). Closest box point on an edge or a vertex: one point there.
//  - Segment touching or inside the box: SAT over the 3 face normals and the 3 segment × box
//    edge axes; a face axis clips the segment as above, an edge axis gives one point between
//    the closest points of the segment and that box edge.
#include <cfloat>

#include "collide.h"
#include "collide_internal.h"

namespace lockstep::sim::collide_detail {

namespace {

// Axis preference tolerances (see the top): absolute (m) and relative to |separation|.
constexpr float kAxisAbsTol = 5.0e-4f;
constexpr float kAxisRelTol = 0.05f;
// sin² below which two directions count as parallel for an edge cross-product axis (~0.06°).
constexpr float kEdgeParallelSinSq = 1.0e-6f;
// Two clipped capsule points closer than this (m) collapse into one.
constexpr float kMinPointSpacing = 1.0e-4f;
// Clip band (see clip_polygon): an incident vertex this far outside a reference side plane
// still counts as inside (m), at most kClipBandRel of the face's half extent. Float rounding at
// coordinates of ~1e3 m is ~1e-4 m; a resting box's drift between steps is far less.
constexpr float kClipBand = 1.0e-3f;
constexpr float kClipBandRel = 0.01f;
// Room for a quad clipped by four planes (8) plus slack for rounding on near-degenerate input.
constexpr int kMaxClipVertices = 16;

bool clearly_better(float candidate, float best) {
  return candidate > best + kAxisAbsTol + kAxisRelTol * abs_f(best);
}

float sign_of(float v) {
  return v < 0.0f ? -1.0f : 1.0f;
}

// scale · e_i.
Vec3 axis_vector(int i, float scale) {
  return i == 0 ? Vec3{scale, 0, 0} : (i == 1 ? Vec3{0, scale, 0} : Vec3{0, 0, scale});
}

Vec3 with_element(Vec3 v, int i, float value) {
  if (i == 0) v.x = value;
  if (i == 1) v.y = value;
  if (i == 2) v.z = value;
  return v;
}

uint32_t face_index(int axis, float sign) {
  return static_cast<uint32_t>(2 * axis + (sign > 0.0f ? 1 : 0));
}

Vec3 clamp_to_box(Vec3 p, Vec3 h) {
  return min_elements(max_elements(p, -h), h);
}

// rx + 3·ry + 9·rz, r = 0 inside the slab, 1 below, 2 above.
uint32_t region_code(Vec3 p, Vec3 h) {
  uint32_t code = 0, scale = 1;
  for (int i = 0; i < 3; ++i) {
    float v = element(p, i), e = element(h, i);
    code += scale * (v < -e ? 1u : (v > e ? 2u : 0u));
    scale *= 3u;
  }
  return code;
}

// Closest feature of the box [−h, h] to a point, in box space. `distance` is negative inside.
struct PointBox {
  Vec3 normal{};     // unit, out of the box toward the point
  Vec3 box_point{};  // on the box surface
  float distance = 0;
  uint32_t region = 0;
};

PointBox point_box(Vec3 p, Vec3 h) {
  PointBox r;
  Vec3 q = clamp_to_box(p, h);
  Vec3 d = p - q;
  float dist_sq = length_squared(d);
  if (dist_sq > kDirectionEpsSq) {
    float dist = std::sqrt(dist_sq);
    r.normal = d * (1.0f / dist);
    r.box_point = q;
    r.distance = dist;
    r.region = region_code(p, h);
    return r;
  }
  // Inside, or within 1 µm of the surface: leave through the nearest face (lowest axis on ties).
  int axis = 0;
  float best = abs_f(p.x) - h.x;
  for (int i = 1; i < 3; ++i) {
    float g = abs_f(element(p, i)) - element(h, i);
    if (g > best) best = g, axis = i;
  }
  float s = sign_of(element(p, axis));
  r.normal = axis_vector(axis, s);
  r.box_point = with_element(p, axis, s * element(h, axis));
  r.distance = best;
  r.region = (s > 0.0f ? 2u : 1u) * (axis == 0 ? 1u : (axis == 1 ? 3u : 9u));
  return r;
}

// Parameter t in [0, 1] of the point of p0 + t·d closest to the box [−h, h].
float closest_segment_box_param(Vec3 p0, Vec3 d, Vec3 h) {
  float ts[8];
  int n = 0;
  ts[n++] = 0.0f;
  ts[n++] = 1.0f;
  for (int i = 0; i < 3; ++i) {
    float di = element(d, i);
    if (!(abs_f(di) > 1.0e-12f)) continue;
    float pi = element(p0, i), hi = element(h, i);
    float ta = (-hi - pi) / di, tb = (hi - pi) / di;
    if (ta > 0.0f && ta < 1.0f) ts[n++] = ta;
    if (tb > 0.0f && tb < 1.0f) ts[n++] = tb;
  }
  for (int i = 1; i < n; ++i) {
    float v = ts[i];
    int j = i;
    while (j > 0 && ts[j - 1] > v)
      ts[j] = ts[j - 1], --j;
    ts[j] = v;
  }
  float best_t = 0.0f;
  float best = length_squared(p0 - clamp_to_box(p0, h));
  auto consider = [&](float t) {
    Vec3 p = p0 + d * t;
    float f = length_squared(p - clamp_to_box(p, h));
    if (f < best) best = f, best_t = t;
  };
  for (int k = 0; k < n; ++k) {
    consider(ts[k]);
    if (k + 1 == n || !(ts[k + 1] > ts[k])) continue;
    // On this piece the same coordinates are clamped: f(t) = Σ (α_i + t·d_i)².
    Vec3 mid = p0 + d * (0.5f * (ts[k] + ts[k + 1]));
    float num = 0.0f, den = 0.0f;
    for (int i = 0; i < 3; ++i) {
      float m = element(mid, i), hi = element(h, i), di = element(d, i);
      float alpha;
      if (m > hi) {
        alpha = element(p0, i) - hi;
      } else if (m < -hi) {
        alpha = element(p0, i) + hi;
      } else {
        continue;
      }
      num += alpha * di;
      den += di * di;
    }
    if (!(den > 0.0f)) continue;
    float t = -num / den;
    t = t < ts[k] ? ts[k] : (t > ts[k + 1] ? ts[k + 1] : t);
    consider(t);
  }
  return best_t;
}

// Clips p0 + t·d, t in [0, 1], to the slabs |x_j| ≤ h_j of the two axes j ≠ skip. The sources
// name what bounds each end: 0 / 1 = the segment's own end, 2 + 2j + (side > 0) = a slab face.
bool clip_segment_to_face(Vec3 p0, Vec3 d, Vec3 h, int skip, float* t0, float* t1, uint32_t* src0,
                          uint32_t* src1) {
  *t0 = 0.0f, *t1 = 1.0f, *src0 = 0, *src1 = 1;
  for (int j = 0; j < 3; ++j) {
    if (j == skip) continue;
    float p = element(p0, j), dj = element(d, j), hj = element(h, j);
    if (!(abs_f(dj) > 1.0e-12f)) {
      if (abs_f(p) > hj) return false;
      continue;
    }
    float ta = (-hj - p) / dj, tb = (hj - p) / dj;
    uint32_t sa = 2u + 2u * static_cast<uint32_t>(j), sb = sa + 1u;
    if (ta > tb) {
      float tt = ta;
      ta = tb, tb = tt;
      uint32_t ss = sa;
      sa = sb, sb = ss;
    }
    if (ta > *t0) *t0 = ta, *src0 = sa;
    if (tb < *t1) *t1 = tb, *src1 = sb;
  }
  return *t0 <= *t1;
}

// Capsule points against box face (axis, sign), from the segment clipped to the face's side
// slabs, box space in, world space out. Returns false (no points) when the clip is empty.
bool capsule_face_points(Vec3 p0, Vec3 d, Vec3 h, int axis, float sign, float radius, float margin,
                         const Mat3& rot, Vec3 box_pos, Manifold* out) {
  float t[2];
  uint32_t src[2];
  if (!clip_segment_to_face(p0, d, h, axis, &t[0], &t[1], &src[0], &src[1])) return false;
  float h_axis = element(h, axis);
  Vec3 n_local = axis_vector(axis, sign);
  float sep[2];
  for (int k = 0; k < 2; ++k)
    sep[k] = sign * element(p0 + d * t[k], axis) - h_axis - radius;
  int first = 0, last = 1;
  if ((t[1] - t[0]) * length(d) <= kMinPointSpacing) {
    // One point: the deeper end (the first on ties).
    first = last = sep[1] < sep[0] ? 1 : 0;
  }
  uint32_t face = face_index(axis, sign);
  for (int k = first; k <= last; ++k) {
    if (sep[k] > margin) continue;
    Vec3 x = p0 + d * t[k];
    Vec3 on_face = with_element(x, axis, sign * h_axis);
    Vec3 mid = ((x - n_local * radius) + on_face) * 0.5f;
    add_point(out, rot * mid + box_pos, sep[k],
              feature_id(kTagCapsuleBox, (1u << 24) | (face << 8) | src[k]));
  }
  out->normal = rot * n_local;
  return out->count > 0;
}

// One capsule–box point from the box feature closest to a segment point, box space in.
void capsule_region_point(const PointBox& pb, float radius, float margin, const Mat3& rot,
                          Vec3 box_pos, Manifold* out) {
  float sep = pb.distance - radius;
  if (sep > margin) return;
  Vec3 mid = pb.box_point + pb.normal * (0.5f * sep);
  out->normal = rot * pb.normal;
  add_point(out, rot * mid + box_pos, sep, feature_id(kTagCapsuleBox, (3u << 24) | pb.region));
}

// Sutherland–Hodgman clipping that names every vertex by its incoming and outgoing lines
// (incident face edge 0..3 or reference side plane 4..7), which stay the same while a resting
// box jitters. A vertex within `band` outside a plane is kept as it is, and an edge gets a
// crossing point only when its inside end is deeper than `band`: equal boxes stacked face to
// face have their corners on the side planes up to rounding, and without the band a corner
// would be a vertex on one step and a clip point (or a point anywhere along an edge that lies
// in the plane) on the next. Crossings are thus at least `band` from both ends of their edge.
struct ClipVertex {
  Vec3 p{};
  uint32_t in_line = 0;
  uint32_t out_line = 0;
};

int clip_polygon(const ClipVertex* in, int n, Vec3 plane_normal, float plane_offset,
                 uint32_t plane_line, float band, ClipVertex* out) {
  int m = 0;
  for (int k = 0; k < n; ++k) {
    const ClipVertex& a = in[k];
    const ClipVertex& b = in[k + 1 < n ? k + 1 : 0];
    float da = dot(plane_normal, a.p) - plane_offset;
    float db = dot(plane_normal, b.p) - plane_offset;
    bool a_in = da <= band, b_in = db <= band;
    if (a_in && m < kMaxClipVertices) out[m++] = a;
    if (a_in == b_in || m >= kMaxClipVertices) continue;
    if (a_in ? !(da < -band) : !(db < -band)) continue;  // the kept end stands for the crossing
    float t = da / (da - db);
    out[m].p = a.p + (b.p - a.p) * t;
    // Leaving: arrives along a's outgoing line, leaves along the plane. Entering: the reverse.
    out[m].in_line = a_in ? a.out_line : plane_line;
    out[m].out_line = a_in ? plane_line : b.in_line;
    ++m;
  }
  return m;
}

}  // namespace

void collide_sphere_box(const ShapeDef& sphere, const Transform& xa, const ShapeDef& box,
                        const Transform& xb, float margin, Manifold* out) {
  Mat3 rot = to_mat3(xb.q);
  Vec3 c = transpose(rot) * (xa.p - xb.p);
  PointBox pb = point_box(c, box.half_extents);
  float sep = pb.distance - sphere.radius;
  if (sep > margin) return;
  Vec3 mid = pb.box_point + pb.normal * (0.5f * sep);
  out->normal = rot * pb.normal;
  add_point(out, rot * mid + xb.p, sep, feature_id(kTagSphereBox, pb.region));
}

void collide_capsule_box(const ShapeDef& capsule, const Transform& xa, const ShapeDef& box,
                         const Transform& xb, float margin, Manifold* out) {
  Mat3 rot = to_mat3(xb.q);
  Mat3 inv = transpose(rot);
  Vec3 h = box.half_extents;
  float radius = capsule.radius;
  Vec3 c = inv * (xa.p - xb.p);
  Vec3 axis = inv * (to_mat3(xa.q).c1 * capsule.half_height);
  Vec3 p0 = c - axis, d = axis * 2.0f;

  if (!(capsule.half_height > 0.0f)) {
    // A zero-length capsule is a sphere.
    capsule_region_point(point_box(c, h), radius, margin, rot, xb.p, out);
    return;
  }

  float t = closest_segment_box_param(p0, d, h);
  Vec3 s = p0 + d * t;
  Vec3 diff = s - clamp_to_box(s, h);
  float dist_sq = length_squared(diff);
  if (dist_sq > kDirectionEpsSq) {
    // Segment outside the box.
    if (std::sqrt(dist_sq) - radius > margin) return;
    int clamped = 0, face_axis = 0;
    for (int i = 0; i < 3; ++i) {
      if (abs_f(element(s, i)) > element(h, i)) clamped += 1, face_axis = i;
    }
    if (clamped == 1 && capsule_face_points(p0, d, h, face_axis, sign_of(element(s, face_axis)),
                                            radius, margin, rot, xb.p, out)) {
      return;
    }
    capsule_region_point(point_box(s, h), radius, margin, rot, xb.p, out);
    return;
  }

  // Segment touches or enters the box: separating axes.
  Vec3 p1 = p0 + d;
  float face_sep = -FLT_MAX, face_sign = 1.0f;
  int face_axis = 0;
  for (int i = 0; i < 3; ++i) {
    float a = element(p0, i), b = element(p1, i), e = element(h, i);
    float lo = a < b ? a : b, hi = a < b ? b : a;
    float above = lo - e, below = -e - hi;
    float sep = (above >= below ? above : below) - radius;
    if (sep > face_sep) face_sep = sep, face_axis = i, face_sign = above >= below ? 1.0f : -1.0f;
  }
  float edge_sep = -FLT_MAX;
  int edge_axis = -1;
  Vec3 edge_normal{};
  float dd = dot(d, d);
  for (int j = 0; j < 3; ++j) {
    Vec3 l = cross(d, axis_vector(j, 1.0f));
    float l_sq = length_squared(l);
    if (!(l_sq > kEdgeParallelSinSq * dd)) continue;
    l = l * (1.0f / std::sqrt(l_sq));
    float proj = dot(l, c);
    if (proj < 0.0f) l = -l, proj = -proj;
    Vec3 al = abs_elements(l);
    float sep = proj - (h.x * al.x + h.y * al.y + h.z * al.z) - radius;
    if (sep > edge_sep) edge_sep = sep, edge_axis = j, edge_normal = l;
  }

  if (edge_axis >= 0 && clearly_better(edge_sep, face_sep)) {
    // The box edge along edge_axis that is farthest along the normal.
    Vec3 corner{};
    uint32_t bits = 0, bit = 0;
    for (int k = 0; k < 3; ++k) {
      if (k == edge_axis) continue;
      float sk = sign_of(element(edge_normal, k));
      corner = with_element(corner, k, sk * element(h, k));
      if (sk > 0.0f) bits |= 1u << bit;
      bit += 1;
    }
    float he = element(h, edge_axis);
    Vec3 e0 = with_element(corner, edge_axis, -he);
    Vec3 de = axis_vector(edge_axis, 2.0f * he);
    float sa, sb;
    closest_segment_params(p0, d, e0, de, &sa, &sb);
    Vec3 x = p0 + d * sa, on_edge = e0 + de * sb;
    float sep = dot(edge_normal, x - on_edge) - radius;
    if (sep > margin) return;
    Vec3 mid = ((x - edge_normal * radius) + on_edge) * 0.5f;
    out->normal = rot * edge_normal;
    uint32_t edge = 4u * static_cast<uint32_t>(edge_axis) + bits;
    add_point(out, rot * mid + xb.p, sep, feature_id(kTagCapsuleBox, (2u << 24) | edge));
    return;
  }
  if (capsule_face_points(p0, d, h, face_axis, face_sign, radius, margin, rot, xb.p, out)) {
    return;
  }
  // Not expected (the segment part inside the box lies within every slab); stay safe.
  capsule_region_point(point_box(s, h), radius, margin, rot, xb.p, out);
}

void collide_box_box(const ShapeDef& a, const Transform& xa, const ShapeDef& b, const Transform& xb,
                     float margin, Manifold* out) {
  Mat3 ra = to_mat3(xa.q), rb = to_mat3(xb.q);
  const Vec3 axes_a[3] = {ra.c0, ra.c1, ra.c2}, axes_b[3] = {rb.c0, rb.c1, rb.c2};
  const float ha[3] = {a.half_extents.x, a.half_extents.y, a.half_extents.z};
  const float hb[3] = {b.half_extents.x, b.half_extents.y, b.half_extents.z};
  Vec3 t = xb.p - xa.p;
  float abs_c[3][3];
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j)
      abs_c[i][j] = abs_f(dot(axes_a[i], axes_b[j]));
  }

  // Face axes of A, then of B.
  float sep_a = -FLT_MAX, sep_b = -FLT_MAX;
  int axis_a = 0, axis_b = 0;
  for (int i = 0; i < 3; ++i) {
    float s = abs_f(dot(t, axes_a[i])) - ha[i] -
              (hb[0] * abs_c[i][0] + hb[1] * abs_c[i][1] + hb[2] * abs_c[i][2]);
    if (s > margin) return;
    if (s > sep_a) sep_a = s, axis_a = i;
  }
  for (int j = 0; j < 3; ++j) {
    float s = abs_f(dot(t, axes_b[j])) - hb[j] -
              (ha[0] * abs_c[0][j] + ha[1] * abs_c[1][j] + ha[2] * abs_c[2][j]);
    if (s > margin) return;
    if (s > sep_b) sep_b = s, axis_b = j;
  }
  // Edge axes.
  float sep_edge = -FLT_MAX;
  int edge_a = -1, edge_b = -1;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) {
      Vec3 l = cross(axes_a[i], axes_b[j]);
      float l_sq = length_squared(l);
      if (!(l_sq > kEdgeParallelSinSq)) continue;
      l = l * (1.0f / std::sqrt(l_sq));
      float s = abs_f(dot(t, l));
      for (int k = 0; k < 3; ++k) {
        s -= ha[k] * abs_f(dot(axes_a[k], l));
        s -= hb[k] * abs_f(dot(axes_b[k], l));
      }
      if (s > margin) return;
      if (s > sep_edge) sep_edge = s, edge_a = i, edge_b = j;
    }
  }

  bool ref_on_b = clearly_better(sep_b, sep_a);
  float sep_face = ref_on_b ? sep_b : sep_a;

  if (edge_a >= 0 && clearly_better(sep_edge, sep_face)) {
    Vec3 l = normalize_or(cross(axes_a[edge_a], axes_b[edge_b]), Vec3{0, 1, 0});
    if (dot(l, t) < 0.0f) l = -l;  // from A toward B
    // A's edge farthest along l, B's edge farthest against it.
    Vec3 ca = xa.p, cb = xb.p;
    uint32_t bits_a = 0, bits_b = 0, bit_a = 0, bit_b = 0;
    for (int k = 0; k < 3; ++k) {
      if (k != edge_a) {
        float s = sign_of(dot(l, axes_a[k]));
        ca += axes_a[k] * (s * ha[k]);
        if (s > 0.0f) bits_a |= 1u << bit_a;
        bit_a += 1;
      }
      if (k != edge_b) {
        float s = -sign_of(dot(l, axes_b[k]));
        cb += axes_b[k] * (s * hb[k]);
        if (s > 0.0f) bits_b |= 1u << bit_b;
        bit_b += 1;
      }
    }
    Vec3 a0 = ca - axes_a[edge_a] * ha[edge_a], da = axes_a[edge_a] * (2.0f * ha[edge_a]);
    Vec3 b0 = cb - axes_b[edge_b] * hb[edge_b], db = axes_b[edge_b] * (2.0f * hb[edge_b]);
    float s, u;
    closest_segment_params(a0, da, b0, db, &s, &u);
    Vec3 pa = a0 + da * s, pb = b0 + db * u;
    float sep = dot(pb - pa, l);
    if (sep > margin) return;
    out->normal = -l;
    uint32_t id_a = 4u * static_cast<uint32_t>(edge_a) + bits_a;
    uint32_t id_b = 4u * static_cast<uint32_t>(edge_b) + bits_b;
    add_point(out, (pa + pb) * 0.5f, sep, feature_id(kTagBoxBox, (1u << 26) | (id_a << 8) | id_b));
    return;
  }

  // Face contact: reference box R, incident box I.
  const Vec3* axes_r = ref_on_b ? axes_b : axes_a;
  const Vec3* axes_i = ref_on_b ? axes_a : axes_b;
  const float* hr = ref_on_b ? hb : ha;
  const float* hi = ref_on_b ? ha : hb;
  Vec3 pr = ref_on_b ? xb.p : xa.p, pi = ref_on_b ? xa.p : xb.p;
  int ref_axis = ref_on_b ? axis_b : axis_a;
  float ref_sign = sign_of(dot(pi - pr, axes_r[ref_axis]));
  Vec3 n_ref = axes_r[ref_axis] * ref_sign;  // out of the reference face, toward I

  int inc_axis = 0;
  float best = -1.0f;
  for (int m = 0; m < 3; ++m) {
    float v = abs_f(dot(axes_i[m], n_ref));
    if (v > best) best = v, inc_axis = m;
  }
  float inc_sign = dot(axes_i[inc_axis], n_ref) > 0.0f ? -1.0f : 1.0f;
  Vec3 face_c = pi + axes_i[inc_axis] * (inc_sign * hi[inc_axis]);
  int u = (inc_axis + 1) % 3, v = (inc_axis + 2) % 3;
  Vec3 eu = axes_i[u] * hi[u], ev = axes_i[v] * hi[v];

  // Incident vertex q arrives along edge q − 1 and leaves along edge q.
  ClipVertex poly[kMaxClipVertices], scratch[kMaxClipVertices];
  poly[0] = {face_c + eu + ev, 3, 0};
  poly[1] = {face_c - eu + ev, 0, 1};
  poly[2] = {face_c - eu - ev, 1, 2};
  poly[3] = {face_c + eu - ev, 2, 3};
  int n = 4;
  int j = (ref_axis + 1) % 3, k = (ref_axis + 2) % 3;
  float cj = dot(axes_r[j], pr), ck = dot(axes_r[k], pr);
  float band = kClipBand;
  if (band > kClipBandRel * hr[j]) band = kClipBandRel * hr[j];
  if (band > kClipBandRel * hr[k]) band = kClipBandRel * hr[k];
  n = clip_polygon(poly, n, axes_r[j], cj + hr[j], 4, band, scratch);
  n = clip_polygon(scratch, n, -axes_r[j], hr[j] - cj, 5, band, poly);
  n = clip_polygon(poly, n, axes_r[k], ck + hr[k], 6, band, scratch);
  n = clip_polygon(scratch, n, -axes_r[k], hr[k] - ck, 7, band, poly);

  float ref_offset = dot(n_ref, pr) + hr[ref_axis];
  Vec3 pos[kMaxClipVertices];
  float sep[kMaxClipVertices];
  uint32_t vertex_id[kMaxClipVertices];
  int count = 0;
  for (int q = 0; q < n; ++q) {
    float s = dot(n_ref, poly[q].p) - ref_offset;
    if (s > margin) continue;
    pos[count] = poly[q].p - n_ref * (0.5f * s);
    sep[count] = s;
    vertex_id[count] = (poly[q].in_line << 3) | poly[q].out_line;
    count += 1;
  }
  int keep[kMaxManifoldPoints];
  int kept = reduce_to_four(pos, sep, count, n_ref, keep);
  uint32_t faces = (face_index(ref_axis, ref_sign) << 20) | (face_index(inc_axis, inc_sign) << 16);
  if (ref_on_b) faces |= 1u << 27;
  for (int q = 0; q < kept; ++q) {
    add_point(out, pos[keep[q]], sep[keep[q]], feature_id(kTagBoxBox, faces | vertex_id[keep[q]]));
  }
  out->normal = ref_on_b ? n_ref : -n_ref;
}

}  // namespace lockstep::sim::collide_detail
