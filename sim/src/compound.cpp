// Compound bodies (compound.h).
//
// Mass properties: each child's at unit density about its own centre (a hull's in its principal
// frame), summed about the compound's centre of mass c = Σ Vᵢ pᵢ / Σ Vᵢ. A child turned by Rᵢ
// (its pose, then a hull's principal frame) with principal moments Dᵢ contributes
// Rᵢ Dᵢ Rᵢᵀ + Vᵢ (|dᵢ|² 1 − dᵢ dᵢᵀ), dᵢ = pᵢ − c (the parallel-axis theorem). The sum's principal
// axes, by the same Jacobi rotations as a hull's, give the body's principal frame.
#include "compound.h"

#include <cmath>

#include "collide_internal.h"
#include "inertia.h"
#include "lockstep/sim/fields.h"
#include "shape.h"

namespace lockstep::sim {

namespace {

using inertia_detail::add_outer;
using inertia_detail::Sym3;

// A child's position must stay within this of the compound's frame (m), like a body's size.
constexpr float kMaxChildOffset = 1.0e3f;
// A child's quaternion must be unit within this (|q|² − 1); it is normalized when built.
constexpr float kUnitTolerance = 1.0e-3f;

bool child_type_allowed(ShapeType type) {
  return type == ShapeType::sphere || type == ShapeType::box || type == ShapeType::capsule ||
         type == ShapeType::hull;
}

}  // namespace

Error build_compound(const CompoundDef& def, const HullGeometry* hulls, uint32_t hull_count,
                     CompoundGeometry* out) {
  *out = CompoundGeometry{};
  if (def.child_count < 1 || def.child_count > kMaxCompoundChildren) {
    return Error::invalid_compound;
  }
  const ShapeLibrary library{hulls, hull_count};
  CompoundGeometry& g = *out;
  g.child_count = def.child_count;
  float child_volume[kMaxCompoundChildren] = {};
  MassProperties child_mass[kMaxCompoundChildren];
  float volume = 0.0f;
  Vec3 moment{};
  for (uint32_t i = 0; i < def.child_count; ++i) {
    const CompoundChild& c = def.children[i];
    if (!all_floats_finite(c)) return Error::non_finite;
    if (!child_type_allowed(c.type)) return Error::invalid_compound;
    const Vec3 p = c.position;
    if (!(collide_detail::abs_f(p.x) <= kMaxChildOffset &&
          collide_detail::abs_f(p.y) <= kMaxChildOffset &&
          collide_detail::abs_f(p.z) <= kMaxChildOffset)) {
      return Error::invalid_compound;
    }
    const float q2 = dot(c.orientation, c.orientation);
    if (!(collide_detail::abs_f(q2 - 1.0f) <= kUnitTolerance)) return Error::invalid_compound;
    ShapeDef& s = g.children[i];
    s = ShapeDef{};
    s.type = c.type;
    s.radius = c.radius;
    s.half_extents = c.half_extents;
    s.half_height = c.half_height;
    s.hull = c.hull;
    s.density = 1.0f;
    const Error e = validate_shape(s, library);
    if (e != Error::none) return e;
    // A hull child's points are where the child's pose puts them: its built hull is centred on
    // its own centre of mass, so the child's frame moves by that, turned with the child.
    g.poses[i] = Transform{p, normalize(c.orientation)};
    if (c.type == ShapeType::hull) {
      g.poses[i].p = p + rotate(g.poses[i].q, hulls[c.hull].centre_of_mass);
    }
    child_mass[i] = compute_mass_properties(s, library);
    child_volume[i] = child_mass[i].mass;
    volume += child_volume[i];
    moment += g.poses[i].p * child_volume[i];
  }
  if (!(volume > 0.0f) || !std::isfinite(volume)) return Error::invalid_compound;
  const Vec3 centre = moment * (1.0f / volume);
  Sym3 inertia;
  for (uint32_t i = 0; i < def.child_count; ++i) {
    const Mat3 r = to_mat3(g.poses[i].q * child_mass[i].principal_frame);
    const Vec3 m = child_mass[i].inertia;
    const Vec3 axes[3] = {r.c0, r.c1, r.c2};
    const float moments[3] = {m.x, m.y, m.z};
    for (int k = 0; k < 3; ++k)
      add_outer(&inertia, axes[k], axes[k], moments[k]);
    const Vec3 d = g.poses[i].p - centre;
    const float d2 = dot(d, d);
    for (int k = 0; k < 3; ++k)
      inertia.a[k][k] += child_volume[i] * d2;
    add_outer(&inertia, d, d, -child_volume[i]);
  }
  if (!inertia_detail::principal_axes(inertia, &g.principal_inertia, &g.principal_frame)) {
    return Error::invalid_compound;
  }
  g.volume = volume;
  g.centre_of_mass = centre;
  for (uint32_t i = 0; i < def.child_count; ++i) {
    g.poses[i].p = g.poses[i].p - centre;
    const float reach = length(g.poses[i].p) + bounding_radius(g.children[i], library);
    if (reach > g.radius) g.radius = reach;
  }
  return Error::none;
}

}  // namespace lockstep::sim
