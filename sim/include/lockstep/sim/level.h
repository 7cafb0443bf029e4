// Level geometry: static triangle meshes and heightfields, handed to World::create beside the
// WorldDef (docs/physics.md, Level geometry).
//
// The data is the caller's: spans that only need to live until World::create returns, which
// copies them into the world's own memory and builds each mesh's tree there. A level loader
// (an OBJ or PGM reader above the sim, or a Welcome message carrying the level) fills vectors of
// its own and points a LevelDef at them:
//
//   std::vector<Vec3> vertices = ...;            // from the file, scaled and posed
//   std::vector<uint32_t> indices = ...;         // 3 per triangle, counter-clockwise seen from
//                                                // the side bodies rest on
//   MeshDef mesh{vertices, indices};
//   LevelDef level;
//   level.meshes = std::span<const MeshDef>(&mesh, 1);
//   auto world = World::create(def, level, &error);
//   // a static body with ShapeDef{type = mesh, mesh = 0} places it
//
// level_digest(level) names the content (bit patterns of every vertex, index and height, in
// order): two peers that computed the same digest hold the same level, and the world's
// fingerprint (snapshots) includes it.
#pragma once

#include <cstdint>
#include <span>

#include "lockstep/sim/math.h"
#include "lockstep/sim/types.h"

namespace lockstep::sim {

/// Capacities of a LevelDef: meshes, heightfields, and triangles in all of them together (a
/// heightfield of C × R samples counts 2·(C − 1)·(R − 1)).
inline constexpr uint32_t kMaxMeshes = 16;
inline constexpr uint32_t kMaxHeightfields = 16;
inline constexpr uint32_t kMaxLevelTriangles = 1u << 22;
/// A coordinate or height beyond this (m) is refused, as a body's position is.
inline constexpr float kMaxLevelCoordinate = 1.0e5f;

/// An indexed triangle mesh in body space (m). Triangles are one-sided: their front is the side
/// their corners turn counter-clockwise around. A triangle whose corners are (nearly) on a line
/// is dropped and counted (World::level_stats); one whose index is past the vertices, or a
/// non-finite or out-of-range vertex, refuses the whole level (Error::invalid_mesh).
struct MeshDef {
  std::span<const Vec3> vertices;
  std::span<const uint32_t> indices;  // 3 per triangle
};

/// A grid of heights in body space: sample (c, r) is the point (c·spacing_x, heights[r·columns +
/// c], r·spacing_z), c < columns, r < rows; each cell is cut into two triangles along the
/// diagonal from (c, r) to (c + 1, r + 1). Their fronts face +y. Only the height grid is kept,
/// the triangles are made when a query or a contact needs them.
struct HeightfieldDef {
  std::span<const float> heights;  // columns · rows, row by row (m)
  uint32_t columns = 0;            // ≥ 2
  uint32_t rows = 0;               // ≥ 2
  float spacing_x = 1.0f;          // m, > 0
  float spacing_z = 1.0f;          // m, > 0
};

/// The level's static geometry: what mesh and heightfield shapes name by index.
struct LevelDef {
  std::span<const MeshDef> meshes;
  std::span<const HeightfieldDef> heightfields;
  // The most triangles the level may hold, all meshes and heightfields together; more refuse
  // the world (Error::capacity_mesh). At most kMaxLevelTriangles.
  uint32_t max_triangles = 1u << 20;
};

/// What World::create made of a LevelDef.
struct LevelStats {
  uint32_t triangles = 0;          // kept mesh triangles, all meshes
  uint32_t dropped_triangles = 0;  // degenerate mesh triangles dropped
  uint32_t heightfield_cells = 0;  // all heightfields
  uint64_t memory_bytes = 0;       // the world's copies: triangles, trees and heights
  uint64_t digest = 0;             // level_digest of the LevelDef
};

/// An upper bound on the heap bytes World::create takes for the level, from its counts alone
/// (nothing is read or allocated): what the world keeps (LevelStats::memory_bytes never exceeds
/// it) plus the build's temporary arrays. A loader checks a level from an untrusted source (a
/// file, a Welcome) against its memory budget with it before creating the world.
uint64_t level_memory_bytes(const LevelDef& level);

/// XXH3-64 of the level's content: every mesh's vertex and index counts, vertices and indices,
/// then every heightfield's size, spacing and heights, in order, little-endian bit patterns.
/// 0 for an empty level.
uint64_t level_digest(const LevelDef& level);

}  // namespace lockstep::sim
