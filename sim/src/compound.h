// Compound bodies: the children of a CompoundDef placed about their common centre of mass, built
// once when a world is created; and the library through which shapes reach built hulls and
// compounds.
#pragma once

#include <cstdint>

#include "hull.h"
#include "lockstep/sim/math.h"
#include "lockstep/sim/types.h"

namespace lockstep::sim {

/// A compound as the world built it: each child a ShapeDef (its geometry fields; the material is
/// the body's) at a pose in the body frame, whose origin is the compound's centre of mass.
struct CompoundGeometry {
  uint32_t child_count = 0;
  ShapeDef children[kMaxCompoundChildren] = {};
  Transform poses[kMaxCompoundChildren] = {};
  // Mass properties of the solid at unit density, as HullGeometry's.
  float volume = 0;
  Vec3 principal_inertia{};
  Quat principal_frame{};
  Vec3 centre_of_mass{};  // in the frame the children were given in: what was subtracted
  float radius = 0;       // the largest distance from the origin to a point of a child (m)
};

struct MeshGeometry;
struct HeightfieldGeometry;

/// What a shape's geometry needs beyond its ShapeDef: the world's built hulls and compounds,
/// indexed by ShapeDef::hull and ShapeDef::compound. A default ShapeLibrary has none (shapes
/// without hulls or compounds need nothing).
struct ShapeLibrary {
  const HullGeometry* hulls = nullptr;
  uint32_t hull_count = 0;
  const CompoundGeometry* compounds = nullptr;
  uint32_t compound_count = 0;
  // The level's meshes and heightfields (mesh.h), which mesh and heightfield shapes name.
  const MeshGeometry* meshes = nullptr;
  uint32_t mesh_count = 0;
  const HeightfieldGeometry* heightfields = nullptr;
  uint32_t heightfield_count = 0;
  const HullGeometry& hull(const ShapeDef& shape) const { return hulls[shape.hull]; }
  const CompoundGeometry& compound(const ShapeDef& shape) const {
    return compounds[shape.compound];
  }
};

/// Builds a compound from its definition, its hull children reaching the first hull_count hulls
/// of `hulls`: Error::none, non_finite, invalid_compound (no child, more than
/// kMaxCompoundChildren, a plane or compound child, a child pose out of range or not a unit
/// quaternion), unknown_hull, or invalid_argument (a child's size out of range). Deterministic
/// and allocation-free, like build_hull.
Error build_compound(const CompoundDef& def, const HullGeometry* hulls, uint32_t hull_count,
                     CompoundGeometry* out);

/// The pieces a shape collides as: 1 for a plain shape, a compound's child count for a compound.
inline uint32_t shape_piece_count(const ShapeDef& shape, const ShapeLibrary& library) {
  return shape.type == ShapeType::compound ? library.compound(shape).child_count : 1u;
}

/// Piece `i` of a shape at `xf`: the shape itself for a plain shape, a compound's child i (its
/// geometry, the compound's material) at its world pose.
struct ShapePiece {
  ShapeDef shape;
  Transform xf;
};
inline ShapePiece shape_piece(const ShapeDef& shape, const Transform& xf, uint32_t i,
                              const ShapeLibrary& library) {
  if (shape.type != ShapeType::compound) return ShapePiece{shape, xf};
  const CompoundGeometry& c = library.compound(shape);
  ShapePiece piece{c.children[i], Transform{}};
  piece.shape.density = shape.density;
  piece.shape.friction = shape.friction;
  piece.shape.restitution = shape.restitution;
  piece.shape.category = shape.category;
  piece.shape.mask = shape.mask;
  piece.shape.sensor = shape.sensor;
  piece.xf.p = xf.p + rotate(xf.q, c.poses[i].p);
  piece.xf.q = xf.q * c.poses[i].q;
  return piece;
}

}  // namespace lockstep::sim
