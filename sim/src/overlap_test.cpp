// Boolean overlap of two shapes, cheaper than a contact manifold (collide()) when only the
// answer is wanted. Each pair is tested in one canonical order (sphere < capsule < box < plane).
//
//   round shapes: the distance between their core point or segment ≤ the sum of the radii
//                 (segment–segment closest points as the narrowphase computes them);
//   with a box:   the squared distance from the core point or segment to the box ≤ r². For a
//                 segment a + t·d that distance is Σ_i max(0, |p_i(t)| − h_i)², convex in t and
//                 quadratic between the t where a coordinate crosses ±h_i: its minimum is at one
//                 of those t, at an end, or at the stationary point of the quadratic in between;
//   box–box:      the 15 separating axes (3 + 3 face normals, 9 edge cross products), the
//                 rotation's absolute values raised by kParallelEps so that near-parallel edges,
//                 whose cross product is ~0, never make a separating axis out of rounding;
//   with a plane: the deepest point of the other shape (support along −n) against the plane;
//   with a hull:  the narrowphase (collide) without a margin.
// Separation must be strict on every test, so shapes that touch exactly overlap.
#include "overlap_test.h"

#include <initializer_list>

#include "collide_internal.h"

namespace lockstep::sim {

namespace {

constexpr float kParallelEps = 1.0e-6f;

int rank_of(ShapeType t) {
  return t == ShapeType::sphere ? 0 : (t == ShapeType::capsule ? 1 : (t == ShapeType::box ? 2 : 3));
}

// A capsule's core segment: p0 + t·d, t in [0, 1].
void capsule_segment(const ShapeDef& c, const Transform& xf, Vec3* p0, Vec3* d) {
  const Vec3 axis = rotate(xf.q, Vec3{0, c.half_height, 0});
  *p0 = xf.p - axis;
  *d = 2.0f * axis;
}

float point_segment_distance_sq(Vec3 p, Vec3 p0, Vec3 d) {
  const float dd = dot(d, d);
  const float t = dd > 0.0f ? collide_detail::clamp_unit(dot(p - p0, d) / dd) : 0.0f;
  const Vec3 gap = p - (p0 + t * d);
  return dot(gap, gap);
}

float excess_sq(Vec3 p, Vec3 h) {
  float sum = 0.0f;
  for (int i = 0; i < 3; ++i) {
    const float v = collide_detail::abs_f(element(p, i)) - element(h, i);
    if (v > 0.0f) sum += v * v;
  }
  return sum;
}

// Squared distance from the segment a + t·d (t in [0, 1]) to the box |x_i| ≤ h_i.
float segment_box_distance_sq(Vec3 a, Vec3 d, Vec3 h) {
  float ts[8];
  int n = 0;
  ts[n++] = 0.0f;
  ts[n++] = 1.0f;
  for (int i = 0; i < 3; ++i) {
    const float di = element(d, i);
    if (di == 0.0f) continue;
    for (const float bound : {-element(h, i), element(h, i)}) {
      const float t = (bound - element(a, i)) / di;
      if (t > 0.0f && t < 1.0f) ts[n++] = t;
    }
  }
  for (int i = 1; i < n; ++i) {  // insertion sort of at most 8 values
    const float t = ts[i];
    int j = i;
    while (j > 0 && ts[j - 1] > t) {
      ts[j] = ts[j - 1];
      --j;
    }
    ts[j] = t;
  }
  float best = excess_sq(a + ts[0] * d, h);
  for (int k = 1; k < n; ++k) {
    const float e = excess_sq(a + ts[k] * d, h);
    best = e < best ? e : best;
    const float lo = ts[k - 1], hi = ts[k];
    if (!(hi > lo)) continue;
    // The coordinates outside the box in the middle of (lo, hi) stay outside on the same side
    // over the whole interval: g(t) = Σ (a_i − s_i + t·d_i)², stationary at −Σ d_i(a_i − s_i)/Σ
    // d_i².
    const Vec3 mid = a + (0.5f * (lo + hi)) * d;
    float aa = 0.0f, bb = 0.0f;
    for (int i = 0; i < 3; ++i) {
      const float m = element(mid, i), half = element(h, i), di = element(d, i);
      float s = 0.0f;
      if (m > half) {
        s = half;
      } else if (m < -half) {
        s = -half;
      } else {
        continue;
      }
      aa += di * di;
      bb += di * (element(a, i) - s);
    }
    if (!(aa > 0.0f)) continue;
    float t = -bb / aa;
    t = t < lo ? lo : (t > hi ? hi : t);
    const float et = excess_sq(a + t * d, h);
    best = et < best ? et : best;
  }
  return best;
}

bool box_box(const ShapeDef& a, const Transform& xa, const ShapeDef& b, const Transform& xb) {
  const Mat3 ra = to_mat3(xa.q), rb = to_mat3(xb.q);
  const Vec3 axes_a[3] = {ra.c0, ra.c1, ra.c2};
  const Vec3 axes_b[3] = {rb.c0, rb.c1, rb.c2};
  const float ea[3] = {a.half_extents.x, a.half_extents.y, a.half_extents.z};
  const float eb[3] = {b.half_extents.x, b.half_extents.y, b.half_extents.z};
  float r[3][3], abs_r[3][3];
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) {
      r[i][j] = dot(axes_a[i], axes_b[j]);
      abs_r[i][j] = collide_detail::abs_f(r[i][j]) + kParallelEps;
    }
  }
  const Vec3 tw = xb.p - xa.p;
  const float t[3] = {dot(tw, axes_a[0]), dot(tw, axes_a[1]), dot(tw, axes_a[2])};
  for (int i = 0; i < 3; ++i) {
    const float rb_i = eb[0] * abs_r[i][0] + eb[1] * abs_r[i][1] + eb[2] * abs_r[i][2];
    if (collide_detail::abs_f(t[i]) > ea[i] + rb_i) return false;
  }
  for (int j = 0; j < 3; ++j) {
    const float ra_j = ea[0] * abs_r[0][j] + ea[1] * abs_r[1][j] + ea[2] * abs_r[2][j];
    const float tj = t[0] * r[0][j] + t[1] * r[1][j] + t[2] * r[2][j];
    if (collide_detail::abs_f(tj) > ra_j + eb[j]) return false;
  }
  // A_i × B_j.
  for (int i = 0; i < 3; ++i) {
    const int i1 = (i + 1) % 3, i2 = (i + 2) % 3;
    for (int j = 0; j < 3; ++j) {
      const int j1 = (j + 1) % 3, j2 = (j + 2) % 3;
      const float ra_ij = ea[i1] * abs_r[i2][j] + ea[i2] * abs_r[i1][j];
      const float rb_ij = eb[j1] * abs_r[i][j2] + eb[j2] * abs_r[i][j1];
      const float tij = t[i2] * r[i1][j] - t[i1] * r[i2][j];
      if (collide_detail::abs_f(tij) > ra_ij + rb_ij) return false;
    }
  }
  return true;
}

// How far below the plane (n·x = offset) the shape reaches: its lowest point along n, minus
// the offset (≤ 0: touching or crossing).
float lowest_above_plane(const ShapeDef& s, const Transform& xf, Vec3 n, float offset) {
  switch (s.type) {
    case ShapeType::sphere:
      return dot(n, xf.p) - s.radius - offset;
    case ShapeType::capsule: {
      Vec3 p0, d;
      capsule_segment(s, xf, &p0, &d);
      const float h0 = dot(n, p0), h1 = dot(n, p0 + d);
      return (h0 < h1 ? h0 : h1) - s.radius - offset;
    }
    case ShapeType::box: {
      const Mat3 r = to_mat3(xf.q);
      const Vec3 h = s.half_extents;
      const float reach = h.x * collide_detail::abs_f(dot(n, r.c0)) +
                          h.y * collide_detail::abs_f(dot(n, r.c1)) +
                          h.z * collide_detail::abs_f(dot(n, r.c2));
      return dot(n, xf.p) - reach - offset;
    }
    case ShapeType::hull:      // shapes_overlap hands hulls to the narrowphase
    case ShapeType::compound:  // and compounds piece by piece
    case ShapeType::plane:
    case ShapeType::mesh:
    case ShapeType::heightfield:
      break;
  }
  return 1.0f;
}

}  // namespace

bool shapes_overlap(const ShapeDef& a_in, const Transform& xa_in, const ShapeDef& b_in,
                    const Transform& xb_in, const ShapeLibrary& library) {
  if (a_in.type == ShapeType::compound || b_in.type == ShapeType::compound) {
    // A compound overlaps when one of its children does.
    for (uint32_t i = 0; i < shape_piece_count(a_in, library); ++i) {
      const ShapePiece pa = shape_piece(a_in, xa_in, i, library);
      for (uint32_t j = 0; j < shape_piece_count(b_in, library); ++j) {
        const ShapePiece pb = shape_piece(b_in, xb_in, j, library);
        if (shapes_overlap(pa.shape, pa.xf, pb.shape, pb.xf, library)) return true;
      }
    }
    return false;
  }
  if (a_in.type == ShapeType::hull || b_in.type == ShapeType::hull ||
      a_in.type == ShapeType::mesh || b_in.type == ShapeType::mesh ||
      a_in.type == ShapeType::heightfield || b_in.type == ShapeType::heightfield) {
    // Hulls: the narrowphase's manifold without a margin; a point at separation ≤ 0 touches.
    Manifold m;
    collide(a_in, xa_in, b_in, xb_in, library, 0.0f, &m);
    for (int k = 0; k < m.count; ++k)
      if (m.points[k].separation <= 0.0f) return true;
    return false;
  }
  const bool swap = rank_of(a_in.type) > rank_of(b_in.type);
  const ShapeDef& a = swap ? b_in : a_in;
  const ShapeDef& b = swap ? a_in : b_in;
  const Transform& xa = swap ? xb_in : xa_in;
  const Transform& xb = swap ? xa_in : xb_in;
  if (b.type == ShapeType::plane) {
    if (a.type == ShapeType::plane) return false;
    Vec3 n;
    float offset;
    collide_detail::plane_in_world(b, xb, &n, &offset);
    return lowest_above_plane(a, xa, n, offset) <= 0.0f;
  }
  if (a.type == ShapeType::sphere) {
    const float r = a.radius;
    if (b.type == ShapeType::sphere) {
      const Vec3 gap = xb.p - xa.p;
      const float sum = r + b.radius;
      return dot(gap, gap) <= sum * sum;
    }
    if (b.type == ShapeType::capsule) {
      Vec3 p0, d;
      capsule_segment(b, xb, &p0, &d);
      const float sum = r + b.radius;
      return point_segment_distance_sq(xa.p, p0, d) <= sum * sum;
    }
    const Vec3 c = inv_rotate(xb.q, xa.p - xb.p);  // box
    return excess_sq(c, b.half_extents) <= r * r;
  }
  if (a.type == ShapeType::capsule) {
    Vec3 p0, d;
    capsule_segment(a, xa, &p0, &d);
    if (b.type == ShapeType::capsule) {
      Vec3 q0, e;
      capsule_segment(b, xb, &q0, &e);
      float s = 0.0f, t = 0.0f;
      collide_detail::closest_segment_params(p0, d, q0, e, &s, &t);
      const Vec3 gap = (p0 + s * d) - (q0 + t * e);
      const float sum = a.radius + b.radius;
      return dot(gap, gap) <= sum * sum;
    }
    // Box: the segment in the box's frame.
    const Vec3 a_local = inv_rotate(xb.q, p0 - xb.p);
    const Vec3 d_local = inv_rotate(xb.q, d);
    return segment_box_distance_sq(a_local, d_local, b.half_extents) <= a.radius * a.radius;
  }
  return box_box(a, xa, b, xb);
}

}  // namespace lockstep::sim
