// Ray and sphere casts against one shape, in closed form.
//
// Each shape is cast against in its own frame (origin and direction rotated in), where a box is
// axis-aligned and a capsule lies on y, so rays along the axes give exact answers. A sphere of
// radius R swept along a ray meets a shape where its centre's ray meets the shape grown by R: a
// sphere or capsule of radius r + R, a plane moved out by R, a box with rounded edges.
//
// Entry into a ball of radius ρ around c, with m = origin − c, b = m·u (u unit), c₂ = m·m − ρ²:
// the roots of t² + 2bt + c₂ = 0 are −b ∓ √(b² − c₂). The discriminant is computed as
// ρ² − |m − b·u|² (the squared half chord) and the entry as c₂ / (−b + √disc) (the product of the
// roots over the far one), so neither subtracts two nearly equal numbers when the origin is far.
// A capsule's side is the same with m and u projected off its axis (the projected direction
// normalized, the distance scaled back).
//
// Rounded box: the ray enters the box grown by R at p. If p is outside the original box's slab
// on at most one axis, p is on a face of the rounded box. Otherwise p lies in an edge region
// (two axes) or a corner region (three), where the rounded box is the capsule of radius R around
// that edge, or the union of the three edge capsules meeting at that corner; the first entry
// into them is the answer, or a miss (the corners of the grown box are not part of the rounded
// box). The rounded box is convex, so a ray cannot leave an edge capsule and enter a face later.
#include "ray_cast.h"

#include "mesh.h"

#include <cmath>
#include <initializer_list>

#include "collide_internal.h"

namespace lockstep::sim {

namespace {

using collide_detail::axis_vector;
using collide_detail::sign_of;
using collide_detail::with_element;

// A direction whose square length (off the capsule's axis) is below this is taken as parallel
// to the axis: only the end spheres can be met.
constexpr float kParallelSq = 1.0e-12f;

// Entry of the ray into the ball (centre, rho) within max_distance; the origin is outside it.
bool ray_ball(Vec3 origin, Vec3 u, Vec3 centre, float rho, float max_distance, float* t_out) {
  const Vec3 m = origin - centre;
  const float b = dot(m, u);
  if (!(b < 0.0f)) return false;  // outside and not approaching
  const Vec3 chord = m - b * u;
  const float disc = rho * rho - dot(chord, chord);
  if (disc < 0.0f) return false;
  const float c = dot(m, m) - rho * rho;
  float t = c / (-b + std::sqrt(disc));
  if (t < 0.0f) t = 0.0f;  // the caller's inside test and this one may differ by an ulp
  if (!(t <= max_distance)) return false;
  *t_out = t;
  return true;
}

// First entry of the ray into the capsule (segment a–b, radius rho) within max_distance, with
// the outward normal there; the origin is outside the capsule.
bool ray_capsule(Vec3 origin, Vec3 u, Vec3 a, Vec3 b, float rho, float max_distance, float* t_out,
                 Vec3* normal) {
  bool found = false;
  float best = 0.0f;
  Vec3 best_normal{};
  const Vec3 ab = b - a;
  const float len_sq = dot(ab, ab);
  if (len_sq > 0.0f) {
    const float len = std::sqrt(len_sq);
    const Vec3 w{ab.x / len, ab.y / len, ab.z / len};  // exact for axis-aligned segments
    const Vec3 m = origin - a;
    const Vec3 m_off = m - dot(m, w) * w;
    const Vec3 u_off = u - dot(u, w) * w;
    const float u_off_sq = dot(u_off, u_off);
    const float c = dot(m_off, m_off) - rho * rho;
    if (u_off_sq > kParallelSq && c > 0.0f) {
      const float u_off_len = std::sqrt(u_off_sq);
      const Vec3 n_off = u_off * (1.0f / u_off_len);
      const float bb = dot(m_off, n_off);
      if (bb < 0.0f) {
        const Vec3 chord = m_off - bb * n_off;
        const float disc = rho * rho - dot(chord, chord);
        if (disc >= 0.0f) {
          const float t = (c / (-bb + std::sqrt(disc))) / u_off_len;
          const Vec3 q = m + t * u;
          const float s = dot(q, w);
          if (s >= 0.0f && s <= len && t <= max_distance) {
            found = true;
            best = t;
            best_normal = normalize_or(q - s * w, -u);
          }
        }
      }
    }
  }
  for (const Vec3& end : {a, b}) {
    float t = 0.0f;
    if (!ray_ball(origin, u, end, rho, max_distance, &t)) continue;
    if (found && !(t < best)) continue;
    found = true;
    best = t;
    best_normal = normalize_or(origin + t * u - end, -u);
  }
  if (!found) return false;
  *t_out = best;
  *normal = best_normal;
  return true;
}

// Entry of the ray into the box |x_i| ≤ e_i within max_distance and the axis it enters through
// (the lowest on ties); the origin is outside the box.
bool ray_slab(Vec3 origin, Vec3 u, Vec3 e, float max_distance, float* t_out, int* axis_out) {
  float enter = -1.0f;
  float leave = max_distance;
  int axis = -1;
  for (int i = 0; i < 3; ++i) {
    const float o = element(origin, i), d = element(u, i), half = element(e, i);
    if (d == 0.0f) {
      if (o < -half || o > half) return false;
      continue;
    }
    float t1 = (-half - o) / d, t2 = (half - o) / d;
    if (t1 > t2) {
      const float swap = t1;
      t1 = t2;
      t2 = swap;
    }
    if (axis < 0 || t1 > enter) {
      enter = t1;
      axis = i;
    }
    if (t2 < leave) leave = t2;
  }
  if (axis < 0 || enter < 0.0f || enter > leave) return false;
  *t_out = enter;
  *axis_out = axis;
  return true;
}

bool cast_box(const ShapeDef& box, Vec3 o, Vec3 u, float max_distance, float radius, CastHit* hit,
              bool* inside) {
  const Vec3 h = box.half_extents;
  const Vec3 closest = max_elements(min_elements(o, h), -h);
  const Vec3 gap = o - closest;
  if (dot(gap, gap) <= radius * radius) {
    *inside = true;
    return true;
  }
  const Vec3 grown = h + Vec3{radius, radius, radius};
  float t = 0.0f;
  int axis = 0;
  if (!ray_slab(o, u, grown, max_distance, &t, &axis)) return false;
  const Vec3 p = o + t * u;
  int outside = 0;
  int out_axes[3] = {0, 0, 0};
  for (int i = 0; i < 3; ++i) {
    const float v = element(p, i);
    if (v > element(h, i) || v < -element(h, i)) out_axes[outside++] = i;
  }
  if (radius == 0.0f || outside <= 1) {
    const int face = outside == 1 && radius > 0.0f ? out_axes[0] : axis;
    hit->distance = t;
    hit->normal = axis_vector(face, sign_of(element(p, face)));
    return true;
  }
  // Edge or corner region: the capsules of radius R along the box edges there.
  const Vec3 corner{sign_of(p.x) * h.x, sign_of(p.y) * h.y, sign_of(p.z) * h.z};
  bool found = false;
  for (int k = 0; k < 3; ++k) {
    // Edge along k: in an edge region only the axis inside its slab; at a corner, all three.
    if (outside == 2 && (k == out_axes[0] || k == out_axes[1])) continue;
    const Vec3 far_end = with_element(corner, k, -element(corner, k));
    float tk = 0.0f;
    Vec3 nk{};
    if (!ray_capsule(o, u, corner, far_end, radius, max_distance, &tk, &nk)) continue;
    if (found && !(tk < hit->distance)) continue;
    found = true;
    hit->distance = tk;
    hit->normal = nk;
  }
  return found;
}

bool cast_capsule(const ShapeDef& capsule, Vec3 o, Vec3 u, float max_distance, float radius,
                  CastHit* hit, bool* inside) {
  const float rho = capsule.radius + radius;
  const float hh = capsule.half_height;
  const float y = o.y < -hh ? -hh : (o.y > hh ? hh : o.y);
  const Vec3 gap{o.x, o.y - y, o.z};
  if (dot(gap, gap) <= rho * rho) {
    *inside = true;
    return true;
  }
  float t = 0.0f;
  Vec3 n{};
  if (!ray_capsule(o, u, Vec3{0, -hh, 0}, Vec3{0, hh, 0}, rho, max_distance, &t, &n)) return false;
  hit->distance = t;
  hit->normal = n;
  return true;
}

// A ray against a hull grown by `radius`. A ray (radius 0) is clipped by every face plane: it
// enters at the last entering plane. A swept sphere advances conservatively: the exact distance
// from its centre to the hull, less the radius, is a step it can take without touching, so it
// steps by it until within kCastTolerance (a hit) or past max_distance (a miss).
bool cast_hull(const HullGeometry& hull, const Transform& xf, Vec3 origin, Vec3 direction,
               float max_distance, float radius, CastHit* hit, bool* inside) {
  const Vec3 o = inv_rotate(xf.q, origin - xf.p);
  const Vec3 u = inv_rotate(xf.q, direction);
  if (radius == 0.0f) {
    float t0 = 0.0f, t1 = max_distance;
    uint32_t entered = kMaxHullFaces;
    for (uint32_t f = 0; f < hull.face_count; ++f) {
      const Vec3 n = hull.face_normals[f];
      const float num = hull.face_offsets[f] - dot(n, o);
      const float den = dot(n, u);
      if (den == 0.0f) {
        if (num < 0.0f) return false;
      } else if (den < 0.0f) {
        const float t = num / den;
        if (t > t0) t0 = t, entered = f;
      } else {
        const float t = num / den;
        if (t < t1) t1 = t;
      }
      if (t0 > t1) return false;
    }
    if (entered == kMaxHullFaces) {
      *inside = true;
      return true;
    }
    hit->distance = t0;
    hit->normal = rotate(xf.q, hull.face_normals[entered]);
    return true;
  }
  constexpr float kCastTolerance = 1.0e-4f;
  float t = 0.0f;
  for (int i = 0; i < 64; ++i) {
    Vec3 on;
    float distance = 0.0f;
    const Vec3 c = o + u * t;
    if (collide_detail::closest_point_on_hull(hull, c, &on, &distance)) {
      if (t == 0.0f) *inside = true;
      return t == 0.0f;
    }
    const float gap = distance - radius;
    if (gap <= kCastTolerance) {
      if (t == 0.0f && gap <= 0.0f) {
        *inside = true;
        return true;
      }
      hit->distance = t;
      hit->normal = rotate(xf.q, normalize_or(c - on, -u));
      return true;
    }
    t += gap;
    if (t > max_distance) return false;
  }
  return false;
}

}  // namespace

namespace {

// A ray or a sphere against level geometry, in its frame. A ray meets either side of a triangle
// (level triangles are one-sided for contacts, not for sight). A sphere meets a triangle's face
// grown by its radius on the side it comes from, or a corner's ball; the edges' cylinders are
// left out, so at an edge a sphere is found where it meets a face or corner, at most about the
// radius farther on (a sphere never passes between two triangles that share the edge).
bool cast_level(const ShapeDef& shape, const Transform& xf, const ShapeLibrary& library,
                Vec3 origin, Vec3 direction, float max_distance, float radius, CastHit* hit) {
  const Vec3 o = inv_rotate(xf.q, origin - xf.p);
  const Vec3 u = inv_rotate(xf.q, direction);
  const bool is_mesh = shape.type == ShapeType::mesh;
  if (is_mesh ? shape.mesh >= library.mesh_count : shape.mesh >= library.heightfield_count) {
    return false;
  }
  LevelTriangle t;
  float best = 0.0f;
  bool found = false;
  if (radius == 0.0f) {
    found = is_mesh ? ray_cast_mesh(library.meshes[shape.mesh], o, u, max_distance, &best, &t)
                    : ray_cast_heightfield(library.heightfields[shape.mesh], o, u, max_distance,
                                           &best, &t);
  } else {
    const Vec3 end = o + u * max_distance;
    const Vec3 grow{radius, radius, radius};
    const Vec3 lo = min_elements(o, end) - grow, hi = max_elements(o, end) + grow;
    LevelTriangle near[kMaxGatheredTriangles / 4];
    constexpr uint32_t kCap = kMaxGatheredTriangles / 4;
    uint32_t n = is_mesh ? gather_mesh_triangles(library.meshes[shape.mesh], lo, hi, near, kCap)
                         : gather_heightfield_triangles(library.heightfields[shape.mesh], lo, hi,
                                                        near, kCap);
    if (n > kCap) n = kCap;
    best = max_distance;
    for (uint32_t i = 0; i < n; ++i) {
      const LevelTriangle& tri = near[i];
      const float side = dot(o - tri.v[0], tri.normal) >= 0.0f ? radius : -radius;
      LevelTriangle grown = tri;
      for (Vec3& v : grown.v)
        v = v + tri.normal * side;
      float d = 0.0f;
      bool met = ray_triangle(o, u, best, grown, &d);
      for (int k = 0; k < 3; ++k) {
        float dk = 0.0f;
        if (ray_ball(o, u, tri.v[k], radius, best, &dk) && (!met || dk < d)) d = dk, met = true;
      }
      if (met && (!found || d < best)) {
        best = d;
        t = tri;
        found = true;
      }
    }
  }
  if (!found) return false;
  hit->distance = best;
  const Vec3 n = dot(u, t.normal) <= 0.0f ? t.normal : -t.normal;
  hit->normal = rotate(xf.q, n);
  hit->triangle = t.index;
  return true;
}

}  // namespace

bool cast_against_shape(const ShapeDef& shape, const Transform& xf, const ShapeLibrary& library,
                        Vec3 origin, Vec3 direction, float max_distance, float radius,
                        CastHit* hit) {
  if (shape.type == ShapeType::compound) {
    // The nearest child's hit (the lowest child on a tie); a start inside any child is inside.
    bool any = false;
    CastHit best;
    for (uint32_t i = 0; i < shape_piece_count(shape, library); ++i) {
      const ShapePiece piece = shape_piece(shape, xf, i, library);
      CastHit h;
      if (!cast_against_shape(piece.shape, piece.xf, library, origin, direction, max_distance,
                              radius, &h)) {
        continue;
      }
      if (h.started_inside) {
        *hit = h;
        return true;
      }
      if (!any || h.distance < best.distance) best = h;
      any = true;
    }
    if (any) *hit = best;
    return any;
  }
  bool inside = false;
  bool found = false;
  switch (shape.type) {
    case ShapeType::sphere: {
      const float rho = shape.radius + radius;
      const Vec3 m = origin - xf.p;
      if (dot(m, m) <= rho * rho) {
        inside = true;
        break;
      }
      float t = 0.0f;
      if (!ray_ball(origin, direction, xf.p, rho, max_distance, &t)) return false;
      hit->distance = t;
      hit->normal = normalize_or(origin + t * direction - xf.p, -direction);
      return true;
    }
    case ShapeType::plane: {
      Vec3 n;
      float offset;
      collide_detail::plane_in_world(shape, xf, &n, &offset);
      const float s = dot(n, origin) - (offset + radius);
      if (s <= 0.0f) {
        inside = true;
        break;
      }
      const float approach = -dot(n, direction);
      if (!(approach > 0.0f)) return false;
      const float t = s / approach;
      if (!(t <= max_distance)) return false;
      hit->distance = t;
      hit->normal = n;
      return true;
    }
    case ShapeType::hull: {
      CastHit local;
      found = cast_hull(library.hull(shape), xf, origin, direction, max_distance, radius, &local,
                        &inside);
      if (!found || inside) break;
      *hit = local;
      return true;
    }
    case ShapeType::box:
    case ShapeType::capsule: {
      // In the shape's frame; distances are the same there.
      const Vec3 o = inv_rotate(xf.q, origin - xf.p);
      const Vec3 u = inv_rotate(xf.q, direction);
      CastHit local;
      found = shape.type == ShapeType::box
                  ? cast_box(shape, o, u, max_distance, radius, &local, &inside)
                  : cast_capsule(shape, o, u, max_distance, radius, &local, &inside);
      if (!found || inside) break;
      hit->distance = local.distance;
      hit->normal = rotate(xf.q, local.normal);
      return true;
    }
    case ShapeType::compound:  // above
      break;
    case ShapeType::mesh:
    case ShapeType::heightfield:
      return cast_level(shape, xf, library, origin, direction, max_distance, radius, hit);
  }
  if (!inside) return false;
  hit->distance = 0.0f;
  hit->normal = -direction;
  hit->started_inside = true;
  return true;
}

}  // namespace lockstep::sim
