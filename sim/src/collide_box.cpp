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

#include "simd/instruction_set.h"

// SSE2 lanes for the box–box axis tests where the sim's baseline is SSE2; everything else (and
// -DLOCKSTEP_SIMD_SCALAR) takes the scalar path with the same bits.
#if defined(LOCKSTEP_SIMD_SSE2)
#define LOCKSTEP_COLLIDE_SSE2 1
#include <emmintrin.h>
#endif

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

// A lower bound of the squared distance collide_capsule_box computes between the segment
// p0 + t·d (t in [0, 1]) and the box [−h, h]: the gap between the segment's bounding box and the
// box. Rounding is monotone, so every rounded point p0 + d·t lies within [min, max] of p0 and
// p0 + d per axis, its distance to the clamped point is at least the gap, and the rounded sum of
// squares (same order: x, y, z) is at least this one: a test that fails on the bound fails on the
// computed distance too, bit for bit.
float segment_box_gap_sq(Vec3 p0, Vec3 d, Vec3 h) {
  const Vec3 p1 = p0 + d;
  float gap[3];
  for (int i = 0; i < 3; ++i) {
    const float a = element(p0, i), b = element(p1, i), e = element(h, i);
    const float lo = a < b ? a : b, hi = a < b ? b : a;
    gap[i] = lo > e ? lo - e : (hi < -e ? hi + e : 0.0f);
  }
  return gap[0] * gap[0] + gap[1] * gap[1] + gap[2] * gap[2];
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
//
// Plain members without initializers: the clip buffers are written before they are read, and
// zeroing 2 × 16 vertices per box pair cost about as much as the clipping itself.
struct ClipVertex {
  float x, y, z;
  uint32_t in_line;
  uint32_t out_line;
};

inline Vec3 position_of(const ClipVertex& v) {
  return Vec3{v.x, v.y, v.z};
}

// Clips `in` (n vertices) by one side plane into `out`, or returns `in` itself when every vertex
// is inside (the clip would copy it unchanged). Sets *m_out to the result's vertex count.
[[gnu::always_inline]] inline const ClipVertex* clip_polygon(const ClipVertex* in, int n,
                                                             Vec3 plane_normal, float plane_offset,
                                                             uint32_t plane_line, float band,
                                                             ClipVertex* out, int* m_out) {
  // Each vertex's distance once (it is both the start of one edge and the end of another).
  float dist[kMaxClipVertices];
  bool all_in = true;
  for (int k = 0; k < n; ++k) {
    dist[k] = dot(plane_normal, position_of(in[k])) - plane_offset;
    all_in = all_in && dist[k] <= band;
  }
  if (all_in) {
    *m_out = n;
    return in;
  }
  int m = 0;
  for (int k = 0; k < n; ++k) {
    const int kb = k + 1 < n ? k + 1 : 0;
    const ClipVertex& a = in[k];
    const ClipVertex& b = in[kb];
    const float da = dist[k];
    const float db = dist[kb];
    bool a_in = da <= band, b_in = db <= band;
    if (a_in && m < kMaxClipVertices) out[m++] = a;
    if (a_in == b_in || m >= kMaxClipVertices) continue;
    if (a_in ? !(da < -band) : !(db < -band)) continue;  // the kept end stands for the crossing
    float t = da / (da - db);
    const Vec3 pa = position_of(a);
    const Vec3 p = pa + (position_of(b) - pa) * t;
    out[m].x = p.x;
    out[m].y = p.y;
    out[m].z = p.z;
    // Leaving: arrives along a's outgoing line, leaves along the plane. Entering: the reverse.
    out[m].in_line = a_in ? a.out_line : plane_line;
    out[m].out_line = a_in ? plane_line : b.in_line;
    ++m;
  }
  *m_out = m;
  return out;
}

// More than 4 clipped points within the margin: keep 4 (reduce_to_four) and add them.
[[gnu::noinline]] void add_reduced_face_points(const ClipVertex* poly, const float* sep_of, int n,
                                               Vec3 n_ref, float margin, uint32_t faces,
                                               Manifold* out) {
  Vec3 pos[kMaxClipVertices];
  float sep[kMaxClipVertices];
  uint32_t feature[kMaxClipVertices];
  int count = 0;
  for (int q = 0; q < n; ++q) {
    float s = sep_of[q];
    if (s > margin) continue;
    pos[count] = position_of(poly[q]) - n_ref * (0.5f * s);
    sep[count] = s;
    feature[count] = feature_id(kTagBoxBox, faces | (poly[q].in_line << 3) | poly[q].out_line);
    count += 1;
  }
  int keep[kMaxManifoldPoints];
  int kept = reduce_to_four(pos, sep, feature, count, n_ref, *out, keep);
  for (int q = 0; q < kept; ++q) {
    add_point(out, pos[keep[q]], sep[keep[q]], feature[keep[q]]);
  }
}

// Separations of the 15 box–box axes: face_a[i] = A's face axis i, face_b[j] = B's face axis j,
// edge[3i + j] = the edge axis a_i × b_j, valid (bit 3i + j of edge_valid) unless the two edges
// are nearly parallel. Every value comes from the same float operations in the same order as
// the scalar formulas below (the SSE2 path computes three of them per instruction, one per lane:
// each lane rounds exactly as the scalar code does), so both paths give the same bits.
struct BoxBoxAxes {
  float face_a[3];
  float face_b[3];
  float edge[12];
  uint32_t edge_valid;
};

// The edge axis a_i × b_j's separation, the scalar formula of box_box_separations, into *s;
// false (and *s untouched) when the two edges are nearly parallel. The SSE2 lanes give the same
// bits.
bool box_edge_separation(const Vec3* axes_a, const float* ha, const Vec3* axes_b, const float* hb,
                         Vec3 t, int i, int j, float* s) {
  Vec3 l = cross(axes_a[i], axes_b[j]);
  const float l_sq = length_squared(l);
  if (!(l_sq > kEdgeParallelSinSq)) return false;
  l = l * (1.0f / std::sqrt(l_sq));
  float sep = abs_f(dot(t, l));
  for (int k = 0; k < 3; ++k) {
    sep -= ha[k] * abs_f(dot(axes_a[k], l));
    sep -= hb[k] * abs_f(dot(axes_b[k], l));
  }
  *s = sep;
  return true;
}

// One face axis's separation, the scalar formula of box_box_separations: face axis i of the box
// (axes, h) against the other box (other_axes, other_h), their centres t apart. The separation
// hints test a single axis with it; the SSE2 lanes give the same bits.
float box_face_separation(const Vec3* axes, const float* h, const Vec3* other_axes,
                          const float* other_h, Vec3 t, int i) {
  return abs_f(dot(t, axes[i])) - h[i] -
         (other_h[0] * abs_f(dot(axes[i], other_axes[0])) +
          other_h[1] * abs_f(dot(axes[i], other_axes[1])) +
          other_h[2] * abs_f(dot(axes[i], other_axes[2])));
}

#if defined(LOCKSTEP_COLLIDE_SSE2)

// v < 0 ? −v : v per lane, as abs_f (−0 and NaN pass through unchanged).
inline __m128 abs_lanes(__m128 v) {
  const __m128 negative = _mm_cmplt_ps(v, _mm_setzero_ps());
  const __m128 negated = _mm_xor_ps(v, _mm_set1_ps(-0.0f));
  return _mm_or_ps(_mm_and_ps(negative, negated), _mm_andnot_ps(negative, v));
}

// dot(u, v) for u broadcast and v given per lane: u.x·v.x + u.y·v.y + u.z·v.z.
inline __m128 dot_lanes(Vec3 u, __m128 vx, __m128 vy, __m128 vz) {
  return _mm_add_ps(_mm_add_ps(_mm_mul_ps(_mm_set1_ps(u.x), vx), _mm_mul_ps(_mm_set1_ps(u.y), vy)),
                    _mm_mul_ps(_mm_set1_ps(u.z), vz));
}

void box_box_separations(const Vec3* axes_a, const Vec3* axes_b, const float* ha, const float* hb,
                         Vec3 t, BoxBoxAxes* out) {
  // Lane i holds axis i (lane 3 repeats axis 2; its results are not used).
  const __m128 ax = _mm_setr_ps(axes_a[0].x, axes_a[1].x, axes_a[2].x, axes_a[2].x);
  const __m128 ay = _mm_setr_ps(axes_a[0].y, axes_a[1].y, axes_a[2].y, axes_a[2].y);
  const __m128 az = _mm_setr_ps(axes_a[0].z, axes_a[1].z, axes_a[2].z, axes_a[2].z);
  const __m128 bx = _mm_setr_ps(axes_b[0].x, axes_b[1].x, axes_b[2].x, axes_b[2].x);
  const __m128 by = _mm_setr_ps(axes_b[0].y, axes_b[1].y, axes_b[2].y, axes_b[2].y);
  const __m128 bz = _mm_setr_ps(axes_b[0].z, axes_b[1].z, axes_b[2].z, axes_b[2].z);

  // Face axes of A (lane i): |t·a_i| − ha_i − (hb_0·|a_i·b_0| + hb_1·|a_i·b_1| + hb_2·|a_i·b_2|),
  // with a_i·b_j = a_i.x·b_j.x + a_i.y·b_j.y + a_i.z·b_j.z (b_j broadcast, a_i per lane).
  const __m128 c0 = abs_lanes(dot_lanes(axes_b[0], ax, ay, az));
  const __m128 c1 = abs_lanes(dot_lanes(axes_b[1], ax, ay, az));
  const __m128 c2 = abs_lanes(dot_lanes(axes_b[2], ax, ay, az));
  // t·a_i = t.x·a_i.x + t.y·a_i.y + t.z·a_i.z (a product is the same bits either way round).
  const __m128 ta = abs_lanes(dot_lanes(t, ax, ay, az));
  const __m128 ha_lanes = _mm_setr_ps(ha[0], ha[1], ha[2], ha[2]);
  const __m128 reach_b =
      _mm_add_ps(_mm_add_ps(_mm_mul_ps(_mm_set1_ps(hb[0]), c0), _mm_mul_ps(_mm_set1_ps(hb[1]), c1)),
                 _mm_mul_ps(_mm_set1_ps(hb[2]), c2));
  alignas(16) float lanes[4];
  _mm_store_ps(lanes, _mm_sub_ps(_mm_sub_ps(ta, ha_lanes), reach_b));
  out->face_a[0] = lanes[0], out->face_a[1] = lanes[1], out->face_a[2] = lanes[2];

  // Face axes of B (lane j): the same with |a_i·b_j| for fixed i across the lanes.
  const __m128 r0 = abs_lanes(dot_lanes(axes_a[0], bx, by, bz));
  const __m128 r1 = abs_lanes(dot_lanes(axes_a[1], bx, by, bz));
  const __m128 r2 = abs_lanes(dot_lanes(axes_a[2], bx, by, bz));
  const __m128 tb = abs_lanes(dot_lanes(t, bx, by, bz));
  const __m128 hb_lanes = _mm_setr_ps(hb[0], hb[1], hb[2], hb[2]);
  const __m128 reach_a =
      _mm_add_ps(_mm_add_ps(_mm_mul_ps(_mm_set1_ps(ha[0]), r0), _mm_mul_ps(_mm_set1_ps(ha[1]), r1)),
                 _mm_mul_ps(_mm_set1_ps(ha[2]), r2));
  _mm_store_ps(lanes, _mm_sub_ps(_mm_sub_ps(tb, hb_lanes), reach_a));
  out->face_b[0] = lanes[0], out->face_b[1] = lanes[1], out->face_b[2] = lanes[2];

  // Edge axes a_i × b_j, lane j.
  uint32_t valid = 0;
  const __m128 parallel_sin_sq = _mm_set1_ps(kEdgeParallelSinSq);
  const __m128 one = _mm_set1_ps(1.0f);
  for (int i = 0; i < 3; ++i) {
    const __m128 ix = _mm_set1_ps(axes_a[i].x), iy = _mm_set1_ps(axes_a[i].y),
                 iz = _mm_set1_ps(axes_a[i].z);
    // cross(a, b) = (a.y·b.z − a.z·b.y, a.z·b.x − a.x·b.z, a.x·b.y − a.y·b.x).
    __m128 lx = _mm_sub_ps(_mm_mul_ps(iy, bz), _mm_mul_ps(iz, by));
    __m128 ly = _mm_sub_ps(_mm_mul_ps(iz, bx), _mm_mul_ps(ix, bz));
    __m128 lz = _mm_sub_ps(_mm_mul_ps(ix, by), _mm_mul_ps(iy, bx));
    const __m128 l_sq =
        _mm_add_ps(_mm_add_ps(_mm_mul_ps(lx, lx), _mm_mul_ps(ly, ly)), _mm_mul_ps(lz, lz));
    valid |= static_cast<uint32_t>(_mm_movemask_ps(_mm_cmpgt_ps(l_sq, parallel_sin_sq)) & 7)
             << (3 * i);
    // l · (1 / sqrt(l²)): sqrtps and divps round like sqrtss and divss.
    const __m128 inv = _mm_div_ps(one, _mm_sqrt_ps(l_sq));
    lx = _mm_mul_ps(lx, inv);
    ly = _mm_mul_ps(ly, inv);
    lz = _mm_mul_ps(lz, inv);
    __m128 s = abs_lanes(dot_lanes(t, lx, ly, lz));
    for (int k = 0; k < 3; ++k) {
      s = _mm_sub_ps(s,
                     _mm_mul_ps(_mm_set1_ps(ha[k]), abs_lanes(dot_lanes(axes_a[k], lx, ly, lz))));
      s = _mm_sub_ps(s,
                     _mm_mul_ps(_mm_set1_ps(hb[k]), abs_lanes(dot_lanes(axes_b[k], lx, ly, lz))));
    }
    _mm_storeu_ps(out->edge + 3 * i, s);  // lane 3 lands in the next row's slot or the padding
  }
  out->edge_valid = valid;
}

#else

void box_box_separations(const Vec3* axes_a, const Vec3* axes_b, const float* ha, const float* hb,
                         Vec3 t, BoxBoxAxes* out) {
  for (int i = 0; i < 3; ++i)
    out->face_a[i] = box_face_separation(axes_a, ha, axes_b, hb, t, i);
  for (int j = 0; j < 3; ++j)
    out->face_b[j] = box_face_separation(axes_b, hb, axes_a, ha, t, j);
  uint32_t valid = 0;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) {
      out->edge[3 * i + j] = 0.0f;
      if (box_edge_separation(axes_a, ha, axes_b, hb, t, i, j, &out->edge[3 * i + j]))
        valid |= 1u << (3 * i + j);
    }
  }
  out->edge_valid = valid;
}

#endif

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

  // Exact early out: past the margin on the bound is past the margin in the test below.
  const float gap_sq = segment_box_gap_sq(p0, d, h);
  if (gap_sq > kDirectionEpsSq && std::sqrt(gap_sq) - radius > margin) return;

  float t = closest_segment_box_param(p0, d, h);
  Vec3 s = p0 + d * t;
  Vec3 diff = s - clamp_to_box(s, h);
  float dist_sq = length_squared(diff);
  if (dist_sq > kDirectionEpsSq) {
    // Segment outside the box.
    if (std::sqrt(dist_sq) - radius > margin) return;
    // The closest point is past one face (a face contact) or past two or three (an edge or a
    // corner). A coordinate within the clip band of its slab counts as inside it: a segment lying
    // parallel to a face and longer than it is equally close all along the face, the search
    // returns an end of that stretch, on the slab's boundary up to rounding, and a rounding just
    // outside must not turn the face's two points into one point at its edge (a plank resting
    // across a longer log would rest on that one point and sink into the log).
    int clamped = 0, face_axis = 0;
    for (int i = 0; i < 3; ++i) {
      const float hi = element(h, i);
      const float band = kClipBand < kClipBandRel * hi ? kClipBand : kClipBandRel * hi;
      if (abs_f(element(s, i)) > hi + band) clamped += 1, face_axis = i;
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

namespace {

// The edge-edge contact along axis_a[edge_a] × axis_b[edge_b]: one point between the closest
// points of A's edge farthest along the axis and B's farthest against it.
void box_box_edge_contact(const Vec3 axes_a[3], const Vec3 axes_b[3], const float ha[3],
                          const float hb[3], const Transform& xa, const Transform& xb, Vec3 t,
                          int edge_a, int edge_b, float margin, Manifold* out) {
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
}

// The face contact: the incident box's face most anti-parallel to the reference face's normal,
// clipped against the reference face's side planes, its points kept (or reduced to four).
void box_box_face_contact(const Vec3 axes_a[3], const Vec3 axes_b[3], const float ha[3],
                          const float hb[3], const Transform& xa, const Transform& xb,
                          bool ref_on_b, int axis_a, int axis_b, float margin, Manifold* out) {
  // Reference box R, incident box I.
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
  const Vec3 v0 = face_c + eu + ev, v1 = face_c - eu + ev, v2 = face_c - eu - ev,
             v3 = face_c + eu - ev;
  poly[0] = {v0.x, v0.y, v0.z, 3, 0};
  poly[1] = {v1.x, v1.y, v1.z, 0, 1};
  poly[2] = {v2.x, v2.y, v2.z, 1, 2};
  poly[3] = {v3.x, v3.y, v3.z, 2, 3};
  int n = 4;
  int j = (ref_axis + 1) % 3, k = (ref_axis + 2) % 3;
  float cj = dot(axes_r[j], pr), ck = dot(axes_r[k], pr);
  float band = kClipBand;
  if (band > kClipBandRel * hr[j]) band = kClipBandRel * hr[j];
  if (band > kClipBandRel * hr[k]) band = kClipBandRel * hr[k];
  // Each clip writes into the buffer its input is not in.
  const ClipVertex* cur = poly;
  cur = clip_polygon(cur, n, axes_r[j], cj + hr[j], 4, band, cur == poly ? scratch : poly, &n);
  cur = clip_polygon(cur, n, -axes_r[j], hr[j] - cj, 5, band, cur == poly ? scratch : poly, &n);
  cur = clip_polygon(cur, n, axes_r[k], ck + hr[k], 6, band, cur == poly ? scratch : poly, &n);
  cur = clip_polygon(cur, n, -axes_r[k], hr[k] - ck, 7, band, cur == poly ? scratch : poly, &n);

  float ref_offset = dot(n_ref, pr) + hr[ref_axis];
  float sep[kMaxClipVertices];
  int count = 0;
  for (int q = 0; q < n; ++q) {
    sep[q] = dot(n_ref, position_of(cur[q])) - ref_offset;
    if (!(sep[q] > margin)) count += 1;
  }
  uint32_t faces = (face_index(ref_axis, ref_sign) << 20) | (face_index(inc_axis, inc_sign) << 16);
  if (ref_on_b) faces |= 1u << 27;
  if (count <= kMaxManifoldPoints) {
    // All of them, in clip order (what reduce_to_four keeps of 4 or fewer).
    for (int q = 0; q < n; ++q) {
      float s = sep[q];
      if (s > margin) continue;
      add_point(out, position_of(cur[q]) - n_ref * (0.5f * s), s,
                feature_id(kTagBoxBox, faces | (cur[q].in_line << 3) | cur[q].out_line));
    }
  } else {
    add_reduced_face_points(cur, sep, n, n_ref, margin, faces, out);
  }
  out->normal = ref_on_b ? n_ref : -n_ref;
}

}  // namespace

void collide_box_box(const ShapeDef& a, const Transform& xa, const ShapeDef& b, const Transform& xb,
                     float margin, Manifold* out, uint32_t* hint) {
  Mat3 ra = to_mat3(xa.q), rb = to_mat3(xb.q);
  const Vec3 axes_a[3] = {ra.c0, ra.c1, ra.c2}, axes_b[3] = {rb.c0, rb.c1, rb.c2};
  const float ha[3] = {a.half_extents.x, a.half_extents.y, a.half_extents.z};
  const float hb[3] = {b.half_extents.x, b.half_extents.y, b.half_extents.z};
  Vec3 t = xb.p - xa.p;
  // An axis that held the pair apart last step (collide.h): that one axis first.
  const uint32_t given = *hint;
  *hint = 0;
  const int axis = hint_index(given) < 9 ? static_cast<int>(hint_index(given)) : 9;
  float edge_sep = 0.0f;
  const bool apart =
      (hint_kind(given) == kHintBoxFaceA && axis < 3 &&
       box_face_separation(axes_a, ha, axes_b, hb, t, axis) > margin) ||
      (hint_kind(given) == kHintBoxFaceB && axis < 3 &&
       box_face_separation(axes_b, hb, axes_a, ha, t, axis) > margin) ||
      (hint_kind(given) == kHintBoxEdge && axis < 9 &&
       box_edge_separation(axes_a, ha, axes_b, hb, t, axis / 3, axis % 3, &edge_sep) &&
       edge_sep > margin);
  if (apart) {
    *hint = given;
    return;
  }
  BoxBoxAxes sat;
  box_box_separations(axes_a, axes_b, ha, hb, t, &sat);

  // Face axes of A, then of B, then the edge axes; the first one beyond the margin ends the test.
  float sep_a = -FLT_MAX, sep_b = -FLT_MAX;
  int axis_a = 0, axis_b = 0;
  for (int i = 0; i < 3; ++i) {
    float s = sat.face_a[i];
    if (s > margin) {
      *hint = separation_hint(kHintBoxFaceA, static_cast<uint32_t>(i));
      return;
    }
    if (s > sep_a) sep_a = s, axis_a = i;
  }
  for (int j = 0; j < 3; ++j) {
    float s = sat.face_b[j];
    if (s > margin) {
      *hint = separation_hint(kHintBoxFaceB, static_cast<uint32_t>(j));
      return;
    }
    if (s > sep_b) sep_b = s, axis_b = j;
  }
  float sep_edge = -FLT_MAX;
  int edge_a = -1, edge_b = -1;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) {
      if (!(sat.edge_valid & (1u << (3 * i + j)))) continue;
      float s = sat.edge[3 * i + j];
      if (s > margin) {
        *hint = separation_hint(kHintBoxEdge, static_cast<uint32_t>(3 * i + j));
        return;
      }
      if (s > sep_edge) sep_edge = s, edge_a = i, edge_b = j;
    }
  }

  bool ref_on_b = clearly_better(sep_b, sep_a);
  float sep_face = ref_on_b ? sep_b : sep_a;

  if (edge_a >= 0 && clearly_better(sep_edge, sep_face)) {
    box_box_edge_contact(axes_a, axes_b, ha, hb, xa, xb, t, edge_a, edge_b, margin, out);
    return;
  }
  box_box_face_contact(axes_a, axes_b, ha, hb, xa, xb, ref_on_b, axis_a, axis_b, margin, out);
}

}  // namespace lockstep::sim::collide_detail
