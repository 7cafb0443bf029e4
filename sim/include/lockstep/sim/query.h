// Spatial queries on the world as the last step (or edit) left it: ray casts, sphere casts and
// shape overlaps, for hitscan, line of sight, ground checks and trigger tests in game rules.
//
// - Read-only and allocation-free: results go into the caller's storage. The first query after
//   the state changed builds the queries' own tree of the bodies' current boxes (O(n log n),
//   memory taken at World::create); later queries on the same state reuse it. Queries are not
//   safe to run concurrently with each other or with anything that changes the world.
// - Deterministic: only + − × ÷ sqrt; the same world and query give the same bits on every
//   platform. Equal fractions are ordered by body slot, so ties never depend on the tree.
// - Shapes are closed sets: touching counts as overlapping, a ray grazing a surface hits it, and
//   a ray or cast that starts inside (or on) a body hits it at fraction 0, with `point` the start
//   and `normal` pointing back along the translation (the body blocks from the first instant,
//   as solid shapes do). Exclude the caster's own body with QueryFilter::exclude.
// - Bad input never crashes: NaN or infinity gives Error::non_finite; a zero translation, a
//   radius or size ≤ 0, a plane as query shape, coordinates beyond ±kQueryExtent, a null output
//   or an empty span give Error::invalid_argument, with nothing written.
#pragma once

#include <cstdint>
#include <span>

#include "lockstep/sim/types.h"
#include "lockstep/sim/world.h"

namespace lockstep::sim {

/// Largest |coordinate| (m) of a query's points and sizes (the extent of plane bodies).
inline constexpr float kQueryExtent = 1.0e6f;

/// Which bodies a query sees: body B is seen when (B.category & mask_bits) != 0, and
/// (category_bits & B.mask) != 0, and B is not `exclude`, with B's ShapeDef::category and mask:
/// the same rule as two shapes touching. The defaults see every body whose mask has bit 0.
struct QueryFilter {
  uint32_t category_bits = 1;        // what the query is, tested against bodies' masks
  uint32_t mask_bits = 0xffffffffu;  // which body categories the query sees
  BodyId exclude{};                  // a body to ignore, e.g. the shooter (null: none)
};

/// Where a ray or a cast first meets a body.
struct RayHit {
  BodyId body{};
  Vec3 point{};   // on the body's surface (m); the start when fraction is 0 from inside
  Vec3 normal{};  // unit, the body's outward surface normal at `point`
  float fraction =
      0;  // in [0, 1]: the ray (or the cast's centre) is at start + fraction·translation
  // A mesh or heightfield body: the triangle met (its index in the MeshDef, or the heightfield's
  // numbering, level.h); 0 for other bodies.
  uint32_t triangle = 0;
};

/// What a query did: `count` results written, `found` results that exist (more than written
/// when the caller's span was too small: the ones kept are the first in the result order).
struct QueryResult {
  Error error = Error::none;
  uint32_t count = 0;
  uint32_t found = 0;
  bool ok() const { return error == Error::none; }
  bool overflow() const { return found > count; }
};

/// Closest body along origin → origin + translation: count 1 and *hit filled, or count 0.
/// Among equal fractions the lowest body slot wins.
QueryResult ray_cast(const World& world, Vec3 origin, Vec3 translation, const QueryFilter& filter,
                     RayHit* hit);

/// Every body along the ray, one hit each (where it enters), sorted by fraction then body slot.
/// When more exist than `hits` holds, the first ones in that order are kept and found > count.
QueryResult ray_cast_all(const World& world, Vec3 origin, Vec3 translation,
                         const QueryFilter& filter, std::span<RayHit> hits);

/// Bodies whose shapes overlap or touch `shape` (a sphere, box or capsule; only its geometry is
/// read) at `pose`, in slot order. When more exist than `bodies` holds, the lowest slots are kept.
QueryResult overlap(const World& world, const ShapeDef& shape, const Transform& pose,
                    const QueryFilter& filter, std::span<BodyId> bodies);

/// The bodies inside the sensor body `sensor` now: its overlaps as the last step left them (the
/// ones that produced begin events and no end event yet, asleep ones included), in slot order.
/// When more exist than `bodies` holds, the lowest slots are kept. Errors: null_handle or
/// stale_handle for the sensor, wrong_body_type when its shape is not a sensor,
/// invalid_argument for an empty span.
QueryResult bodies_in_sensor(const World& world, BodyId sensor, std::span<BodyId> bodies);

/// First body met by `shape` (a sphere, box, capsule or hull of the world's) moved from `start`
/// along `translation` without turning: count 1 and *hit filled (the contact point on the body,
/// the body's normal there), or count 0. A sphere is exact; the other shapes advance by the
/// narrowphase's separation and hit within 0.1 mm of the surface.
QueryResult shape_cast(const World& world, const ShapeDef& shape, const Transform& start,
                       Vec3 translation, const QueryFilter& filter, RayHit* hit);

}  // namespace lockstep::sim
