// Level geometry as the world built it: each mesh's triangles in tree order with their active
// edges and a bounding-volume tree over them, and each heightfield's height grid. Built once at
// World::create (allocating), read by the narrowphase and the queries (never allocating).
#pragma once

#include <cstdint>
#include <vector>

#include "lockstep/sim/level.h"
#include "lockstep/sim/math.h"

namespace lockstep::sim {

/// A triangle ready for the narrowphase (56 bytes): corners counter-clockwise about `normal`,
/// the unit front normal; bit k of active_edges set when edge k (corner k to corner k + 1) may
/// push a body sideways (a boundary, or a ridge between faces more than kActiveEdgeAngle apart);
/// `index` is the triangle's index in its MeshDef (or a heightfield's triangle numbering).
struct LevelTriangle {
  Vec3 v[3];
  Vec3 normal;
  uint32_t index = 0;
  uint32_t active_edges = 0;
};

/// A node of a mesh's tree (116 bytes): up to four children with their boxes side by side, so a
/// query reads one run of memory per node and tests the four boxes together. Slot c is a leaf of
/// count[c] (1..4) triangles from triangles[child[c]], an inner node (nodes[child[c]]) when
/// count[c] is 0, or unused when count[c] is kUnusedSlot (its box is then empty: lower > upper).
/// Children are in tree order from slot 0.
struct MeshNode {
  static constexpr uint8_t kUnusedSlot = 0xff;
  float lower_x[4], lower_y[4], lower_z[4];
  float upper_x[4], upper_y[4], upper_z[4];
  uint32_t child[4];
  uint8_t count[4];
};

struct MeshGeometry {
  std::vector<LevelTriangle> triangles;  // in tree order
  std::vector<MeshNode> nodes;           // node 0 is the root
  Vec3 lower{}, upper{};
  uint32_t dropped_triangles = 0;
};

struct HeightfieldGeometry {
  std::vector<float> heights;
  uint32_t columns = 0, rows = 0;
  float spacing_x = 1, spacing_z = 1;
  Vec3 lower{}, upper{};
};

/// Builds every mesh and heightfield of a level: Error::none, invalid_mesh or capacity_mesh.
/// Deterministic (the same level gives the same trees on every target).
Error build_level(const LevelDef& level, std::vector<MeshGeometry>* meshes,
                  std::vector<HeightfieldGeometry>* heightfields, LevelStats* stats);

/// Largest number of triangles a single narrowphase or query visit gathers; more are dropped
/// (the last in tree order) and counted.
inline constexpr uint32_t kMaxGatheredTriangles = 512;

/// Writes the triangles whose boxes meet the box [lower, upper] (body space) to out, up to
/// `capacity`, in a fixed order; returns how many were met (may exceed capacity).
uint32_t gather_mesh_triangles(const MeshGeometry& mesh, Vec3 lower, Vec3 upper, LevelTriangle* out,
                               uint32_t capacity);
uint32_t gather_heightfield_triangles(const HeightfieldGeometry& field, Vec3 lower, Vec3 upper,
                                      LevelTriangle* out, uint32_t capacity);

/// The first hit of a ray (body space, unit direction) with a triangle's front or back within
/// max_distance: true, *distance and the triangle.
bool ray_cast_mesh(const MeshGeometry& mesh, Vec3 origin, Vec3 direction, float max_distance,
                   float* distance, LevelTriangle* triangle);
bool ray_cast_heightfield(const HeightfieldGeometry& field, Vec3 origin, Vec3 direction,
                          float max_distance, float* distance, LevelTriangle* triangle);

/// Ray against one triangle (both sides): the distance along the ray, or false.
bool ray_triangle(Vec3 origin, Vec3 direction, float max_distance, const LevelTriangle& t,
                  float* distance);

}  // namespace lockstep::sim
