// Shape geometry: mass properties, bounding boxes, validation.
//
// Capsule inertia (segment along y of half-length h, radius r) = a cylinder of length 2h plus
// two hemispheres. A hemisphere of mass m_h has inertia 2/5·m_h·r² about any axis through the
// centre of its flat face; its centroid sits 3r/8 from that face. About a perpendicular axis
// through the capsule centre (h + 3r/8 from the centroid), by the parallel-axis theorem twice:
//   I = m_h·(2/5·r² − (3r/8)² + (h + 3r/8)²) = m_h·(2/5·r² + h² + 3/4·h·r).
// The cylinder adds m_c·(r²/4 + h²/3) across and m_c·r²/2 along the axis; the two hemispheres
// together (m_s = 2·m_h, a full sphere) add 2/5·m_s·r² along the axis.
#include "shape.h"

#include "collide_internal.h"
#include "lockstep/sim/fields.h"
#include "mesh.h"

namespace lockstep::sim {

namespace {

constexpr float kPi = 3.14159265358979f;

// Plane normals must be unit within this (validate_shape); collide renormalizes them.
constexpr float kPlaneNormalTolerance = 1.0e-3f;

}  // namespace

MassProperties compute_mass_properties(const ShapeDef& shape, const ShapeLibrary& library) {
  MassProperties mp;
  switch (shape.type) {
    case ShapeType::sphere: {
      float r = shape.radius;
      mp.mass = shape.density * (4.0f / 3.0f) * kPi * r * r * r;
      float i = 0.4f * mp.mass * r * r;
      mp.inertia = {i, i, i};
      break;
    }
    case ShapeType::box: {
      Vec3 h = shape.half_extents;
      mp.mass = shape.density * 8.0f * h.x * h.y * h.z;
      // m/12·(w² + d²) with full sizes 2h is m/3·(hw² + hd²).
      float k = mp.mass / 3.0f;
      mp.inertia = {k * (h.y * h.y + h.z * h.z), k * (h.x * h.x + h.z * h.z),
                    k * (h.x * h.x + h.y * h.y)};
      break;
    }
    case ShapeType::capsule: {
      float r = shape.radius, h = shape.half_height;
      float r2 = r * r;
      float m_cyl = shape.density * kPi * r2 * (2.0f * h);
      float m_sph = shape.density * (4.0f / 3.0f) * kPi * r2 * r;
      mp.mass = m_cyl + m_sph;
      float across =
          m_cyl * (0.25f * r2 + h * h / 3.0f) + m_sph * (0.4f * r2 + h * h + 0.75f * h * r);
      float along = m_cyl * 0.5f * r2 + m_sph * 0.4f * r2;
      mp.inertia = {across, along, across};
      break;
    }
    case ShapeType::hull: {
      const HullGeometry& h = library.hull(shape);
      mp.mass = shape.density * h.volume;
      mp.inertia = h.principal_inertia * shape.density;
      mp.principal_frame = h.principal_frame;
      break;
    }
    case ShapeType::compound: {
      const CompoundGeometry& c = library.compound(shape);
      mp.mass = shape.density * c.volume;
      mp.inertia = c.principal_inertia * shape.density;
      mp.principal_frame = c.principal_frame;
      break;
    }
    case ShapeType::plane:
    case ShapeType::mesh:
    case ShapeType::heightfield:
      break;
  }
  return mp;
}

Aabb compute_aabb(const ShapeDef& shape, const ShapeLibrary& library, const Transform& xf,
                  float margin) {
  Vec3 m{margin, margin, margin};
  switch (shape.type) {
    case ShapeType::sphere: {
      float e = shape.radius + margin;
      Vec3 ext{e, e, e};
      return {xf.p - ext, xf.p + ext};
    }
    case ShapeType::box: {
      // Tight box of a rotated box: |R|·h.
      Mat3 r = to_mat3(xf.q);
      Vec3 h = shape.half_extents;
      Vec3 ext = abs_elements(r.c0) * h.x + abs_elements(r.c1) * h.y + abs_elements(r.c2) * h.z;
      ext += m;
      return {xf.p - ext, xf.p + ext};
    }
    case ShapeType::capsule: {
      // The box of the two end spheres.
      Vec3 axis = to_mat3(xf.q).c1 * shape.half_height;
      float e = shape.radius + margin;
      Vec3 ext = abs_elements(axis) + Vec3{e, e, e};
      return {xf.p - ext, xf.p + ext};
    }
    case ShapeType::hull: {
      // The rotated box of the hull's body-space box.
      const HullGeometry& h = library.hull(shape);
      const Mat3 r = to_mat3(xf.q);
      const Vec3 c = (h.lower + h.upper) * 0.5f, half = (h.upper - h.lower) * 0.5f;
      const Vec3 centre = r * c + xf.p;
      Vec3 ext =
          abs_elements(r.c0) * half.x + abs_elements(r.c1) * half.y + abs_elements(r.c2) * half.z;
      ext += m;
      return {centre - ext, centre + ext};
    }
    case ShapeType::compound: {
      // The box of the children's boxes.
      const CompoundGeometry& c = library.compound(shape);
      const ShapePiece first = shape_piece(shape, xf, 0, library);
      Aabb box = compute_aabb(first.shape, library, first.xf, margin);
      for (uint32_t i = 1; i < c.child_count; ++i) {
        const ShapePiece piece = shape_piece(shape, xf, i, library);
        const Aabb child = compute_aabb(piece.shape, library, piece.xf, margin);
        box.lower = min_elements(box.lower, child.lower);
        box.upper = max_elements(box.upper, child.upper);
      }
      return box;
    }
    case ShapeType::mesh:
    case ShapeType::heightfield: {
      // The rotated box of the geometry's body-space box.
      Vec3 lo{}, hi{};
      if (shape.type == ShapeType::mesh && shape.mesh < library.mesh_count) {
        lo = library.meshes[shape.mesh].lower;
        hi = library.meshes[shape.mesh].upper;
      } else if (shape.type == ShapeType::heightfield && shape.mesh < library.heightfield_count) {
        lo = library.heightfields[shape.mesh].lower;
        hi = library.heightfields[shape.mesh].upper;
      }
      const Mat3 r = to_mat3(xf.q);
      const Vec3 c = (lo + hi) * 0.5f, half = (hi - lo) * 0.5f;
      const Vec3 centre = r * c + xf.p;
      Vec3 ext =
          abs_elements(r.c0) * half.x + abs_elements(r.c1) * half.y + abs_elements(r.c2) * half.z;
      ext += m;
      return {centre - ext, centre + ext};
    }
    case ShapeType::plane: {
      // The solid half-space {n·x ≤ d} cut by the cube [−E, E]³: along axis i the tight bound
      // is n_i·x_i ≤ d + E·Σ_{j≠i}|n_j|. For an axis-aligned normal this is exactly the plane,
      // so a y-up ground does not overlap every body's box in y.
      Vec3 n;
      float d;
      collide_detail::plane_in_world(shape, xf, &n, &d);
      constexpr float e = kPlaneExtent;
      Vec3 a = abs_elements(n);
      float lo[3], hi[3];
      for (int i = 0; i < 3; ++i) {
        float ni = element(n, i);
        float others = e * (element(a, (i + 1) % 3) + element(a, (i + 2) % 3));
        lo[i] = -e;
        hi[i] = e;
        if (ni > 0.0f) {
          float bound = (d + others) / ni;
          hi[i] = bound < -e ? -e : (bound > e ? e : bound);
        } else if (ni < 0.0f) {
          float bound = (d + others) / ni;
          lo[i] = bound < -e ? -e : (bound > e ? e : bound);
        }
      }
      return {Vec3{lo[0], lo[1], lo[2]} - m, Vec3{hi[0], hi[1], hi[2]} + m};
    }
  }
  return {xf.p - m, xf.p + m};
}

Error validate_shape(const ShapeDef& shape, const ShapeLibrary& library) {
  if (!all_floats_finite(shape)) return Error::non_finite;
  switch (shape.type) {
    case ShapeType::hull:
      if (shape.hull >= library.hull_count) return Error::unknown_hull;
      break;
    case ShapeType::compound:
      if (shape.compound >= library.compound_count) return Error::unknown_compound;
      break;
    case ShapeType::mesh:
      if (shape.mesh >= library.mesh_count) return Error::unknown_mesh;
      break;
    case ShapeType::heightfield:
      if (shape.mesh >= library.heightfield_count) return Error::unknown_mesh;
      break;
    case ShapeType::sphere:
      if (!(shape.radius > 0.0f)) return Error::invalid_argument;
      break;
    case ShapeType::box: {
      Vec3 h = shape.half_extents;
      if (!(h.x > 0.0f && h.y > 0.0f && h.z > 0.0f)) return Error::invalid_argument;
      break;
    }
    case ShapeType::capsule:
      if (!(shape.radius > 0.0f) || !(shape.half_height >= 0.0f)) return Error::invalid_argument;
      break;
    case ShapeType::plane: {
      float len = length(shape.plane_normal);
      if (!(collide_detail::abs_f(len - 1.0f) <= kPlaneNormalTolerance))
        return Error::invalid_argument;
      break;
    }
    default:
      return Error::invalid_argument;
  }
  if (!(shape.friction >= 0.0f)) return Error::invalid_argument;
  if (!(shape.restitution >= 0.0f && shape.restitution <= 1.0f)) return Error::invalid_argument;
  if (shape.type != ShapeType::plane && shape.type != ShapeType::mesh &&
      shape.type != ShapeType::heightfield) {
    if (!(shape.density > 0.0f)) return Error::invalid_argument;
    // Sizes and densities so large or small that mass or inertia leave the float range.
    MassProperties mp = compute_mass_properties(shape, library);
    if (!(mp.mass > 0.0f) || !is_finite(mp.mass) || !is_finite(mp.inertia) ||
        !(mp.inertia.x > 0.0f && mp.inertia.y > 0.0f && mp.inertia.z > 0.0f)) {
      return Error::invalid_argument;
    }
  }
  return Error::none;
}

float bounding_radius(const ShapeDef& shape, const ShapeLibrary& library) {
  switch (shape.type) {
    case ShapeType::hull:
      return library.hull(shape).radius;
    case ShapeType::compound:
      return library.compound(shape).radius;
    case ShapeType::sphere:
      return shape.radius;
    case ShapeType::box:
      return length(shape.half_extents);
    case ShapeType::capsule:
      return shape.radius + shape.half_height;
    case ShapeType::plane:
    case ShapeType::mesh:
    case ShapeType::heightfield:
      break;
  }
  return 0.0f;
}

}  // namespace lockstep::sim
