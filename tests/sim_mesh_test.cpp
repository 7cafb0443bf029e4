// Level geometry: triangle meshes and heightfields. The builder and its refusals, queries that
// name the triangle, and the physics that must hold with stated tolerances: a ball rolling over
// a floor of 2,048 triangles as on a plane, a box sliding over triangle seams at μg, a capsule
// sliding down a heightfield slope at g(sin − μ cos), a pile that stays on the terrain, a bullet
// that does not pass a one-triangle wall, a box resting at the height it rests at on a plane.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "collide_mesh.h"
#include "lockstep/sim/query.h"
#include "lockstep/sim/scene.h"
#include "lockstep/sim/world.h"
#include "mesh.h"
#include "solver/contact_solver.h"
#include "world_data.h"

namespace {

using namespace lockstep::sim;

// A flat grid mesh in y = height over [x0, x0 + n·cell] × [z0, z0 + n·cell], two triangles per
// cell, front up.
struct Grid {
  std::vector<Vec3> vertices;
  std::vector<uint32_t> indices;
  MeshDef def() const { return MeshDef{vertices, indices}; }
};
Grid flat_grid(int n, float cell, float x0, float z0, float height) {
  Grid g;
  for (int r = 0; r <= n; ++r)
    for (int c = 0; c <= n; ++c)
      g.vertices.push_back(
          {x0 + static_cast<float>(c) * cell, height, z0 + static_cast<float>(r) * cell});
  const auto at = [n](int c, int r) { return static_cast<uint32_t>(r * (n + 1) + c); };
  for (int r = 0; r < n; ++r) {
    for (int c = 0; c < n; ++c) {
      g.indices.insert(g.indices.end(), {at(c, r), at(c + 1, r + 1), at(c + 1, r)});
      g.indices.insert(g.indices.end(), {at(c, r), at(c, r + 1), at(c + 1, r + 1)});
    }
  }
  return g;
}

WorldDef quiet_def() {
  WorldDef def = default_world_def();
  def.enable_sleep = false;
  def.max_bodies = 2048;
  return def;
}

BodyId add_static(World& world, ShapeType type, uint32_t index, Vec3 position = {}) {
  BodyDef b = default_body_def();
  b.type = BodyType::static_body;
  b.shape.type = type;
  b.shape.mesh = index;
  b.shape.friction = 0.5f;
  b.position = position;
  BodyId id;
  EXPECT_EQ(world.create_body(b, &id), Error::none);
  return id;
}

BodyId add_plane(World& world, float friction = 0.5f) {
  BodyDef b = default_body_def();
  b.type = BodyType::static_body;
  b.shape.type = ShapeType::plane;
  b.shape.friction = friction;
  BodyId id;
  EXPECT_EQ(world.create_body(b, &id), Error::none);
  return id;
}

void step(World& world, int steps) {
  for (int i = 0; i < steps; ++i)
    world.step(TickInput{});
}

BodyView view(const World& world, BodyId id) {
  BodyView v;
  EXPECT_EQ(world.get_body(id, &v), Error::none);
  return v;
}

void figure(const char* name, double value, const char* unit, const char* bound) {
  std::printf("[figure] %s = %.6g %s (bound %s)\n", name, value, unit, bound);
}

// ---- the builder
// ---------------------------------------------------------------------------------

TEST(MeshBuild, TreeIsTheSameForTheSameLevelAndCoversEveryTriangleOnce) {
  const Grid g = flat_grid(20, 1.0f, -10, -10, 0);
  const MeshDef mesh = g.def();
  LevelDef level;
  level.meshes = {&mesh, 1};
  std::vector<MeshGeometry> a, b;
  std::vector<HeightfieldGeometry> ha, hb;
  LevelStats sa, sb;
  ASSERT_EQ(build_level(level, &a, &ha, &sa), Error::none);
  ASSERT_EQ(build_level(level, &b, &hb, &sb), Error::none);
  ASSERT_EQ(a[0].triangles.size(), 800u);
  ASSERT_EQ(a[0].nodes.size(), b[0].nodes.size());
  EXPECT_EQ(
      0, std::memcmp(a[0].nodes.data(), b[0].nodes.data(), a[0].nodes.size() * sizeof(MeshNode)));
  EXPECT_EQ(0, std::memcmp(a[0].triangles.data(), b[0].triangles.data(),
                           a[0].triangles.size() * sizeof(LevelTriangle)));
  std::vector<int> seen(800, 0);
  for (const LevelTriangle& t : a[0].triangles)
    seen[t.index] += 1;
  for (int s : seen)
    EXPECT_EQ(s, 1);
  // Every edge of a flat grid is inside it or on its rim; only the rim is active.
  uint32_t active = 0;
  for (const LevelTriangle& t : a[0].triangles)
    active += static_cast<uint32_t>(std::popcount(t.active_edges));
  EXPECT_EQ(active, 4u * 20u);
  EXPECT_EQ(sa.digest, sb.digest);
  EXPECT_NE(sa.digest, 0u);
}

TEST(MeshBuild, ARidgeSteeperThanFiveDegreesIsActiveAValleyIsNot) {
  // Two triangles folded along the z axis: a ridge (roof) and a valley.
  for (float lift : {0.5f, -0.5f}) {
    std::vector<Vec3> v = {{0, 0, 0}, {0, 0, 1}, {-1, -lift, 0.5f}, {1, -lift, 0.5f}};
    std::vector<uint32_t> i = {0, 2, 1, 0, 1, 3};  // both fronts up
    const MeshDef mesh{v, i};
    LevelDef level;
    level.meshes = {&mesh, 1};
    std::vector<MeshGeometry> m;
    std::vector<HeightfieldGeometry> h;
    LevelStats s;
    ASSERT_EQ(build_level(level, &m, &h, &s), Error::none);
    for (const LevelTriangle& t : m[0].triangles) {
      ASSERT_GT(t.normal.y, 0.0f);
      const uint32_t shared = t.index == 0 ? 1u << 2 : 1u << 0;  // the edge 1→0 / 0→1
      EXPECT_EQ((t.active_edges & shared) != 0, lift > 0.0f) << "lift " << lift;
    }
  }
}

TEST(MeshBuild, MalformedLevelsAreRefusedWithAClearError) {
  const WorldDef def = quiet_def();
  Error e = Error::none;
  const auto create = [&](const LevelDef& level) {
    auto w = World::create(def, level, &e);
    return e;
  };
  std::vector<Vec3> v = {{0, 0, 0}, {0, 0, 1}, {1, 0, 0}};
  std::vector<uint32_t> ok = {0, 1, 2};
  {  // NaN vertex
    std::vector<Vec3> bad = v;
    bad[1].y = std::nanf("");
    const MeshDef m{bad, ok};
    EXPECT_EQ(create(LevelDef{{&m, 1}, {}}), Error::invalid_mesh);
  }
  {  // infinite and far vertices
    std::vector<Vec3> bad = v;
    bad[2].x = INFINITY;
    const MeshDef m{bad, ok};
    EXPECT_EQ(create(LevelDef{{&m, 1}, {}}), Error::invalid_mesh);
    bad[2].x = 2.0e5f;
    const MeshDef far{bad, ok};
    EXPECT_EQ(create(LevelDef{{&far, 1}, {}}), Error::invalid_mesh);
  }
  {  // index out of range
    std::vector<uint32_t> bad = {0, 1, 3};
    const MeshDef m{v, bad};
    EXPECT_EQ(create(LevelDef{{&m, 1}, {}}), Error::invalid_mesh);
  }
  {  // indices not a multiple of three
    std::vector<uint32_t> bad = {0, 1};
    const MeshDef m{v, bad};
    EXPECT_EQ(create(LevelDef{{&m, 1}, {}}), Error::invalid_mesh);
  }
  {  // every triangle degenerate: nothing left
    std::vector<uint32_t> bad = {0, 0, 1, 1, 2, 2};
    const MeshDef m{v, bad};
    EXPECT_EQ(create(LevelDef{{&m, 1}, {}}), Error::invalid_mesh);
  }
  {  // over capacity
    const Grid g = flat_grid(10, 1, 0, 0, 0);
    const MeshDef m = g.def();
    LevelDef level{{&m, 1}, {}};
    level.max_triangles = 199;
    EXPECT_EQ(create(level), Error::capacity_mesh);
    level.max_triangles = kMaxLevelTriangles + 1;
    EXPECT_EQ(create(level), Error::capacity_mesh);
    std::vector<MeshDef> many(kMaxMeshes + 1, m);
    EXPECT_EQ(create(LevelDef{many, {}}), Error::capacity_mesh);
  }
  {  // heightfields: wrong sample count, a bad spacing, a NaN height, too small a grid
    std::vector<float> h(16, 0.0f);
    HeightfieldDef f{h, 4, 4, 1, 1};
    EXPECT_EQ(create(LevelDef{{}, {&f, 1}}), Error::none);
    HeightfieldDef wrong = f;
    wrong.rows = 5;
    EXPECT_EQ(create(LevelDef{{}, {&wrong, 1}}), Error::invalid_mesh);
    HeightfieldDef spacing = f;
    spacing.spacing_x = 0;
    EXPECT_EQ(create(LevelDef{{}, {&spacing, 1}}), Error::invalid_mesh);
    spacing.spacing_x = std::nanf("");
    EXPECT_EQ(create(LevelDef{{}, {&spacing, 1}}), Error::invalid_mesh);
    std::vector<float> nan_h = h;
    nan_h[5] = std::nanf("");
    HeightfieldDef nan_f{nan_h, 4, 4, 1, 1};
    EXPECT_EQ(create(LevelDef{{}, {&nan_f, 1}}), Error::invalid_mesh);
    std::vector<float> one(4, 0.0f);
    HeightfieldDef thin{one, 4, 1, 1, 1};
    EXPECT_EQ(create(LevelDef{{}, {&thin, 1}}), Error::invalid_mesh);
  }
}

TEST(MeshBuild, DegenerateTrianglesAreDroppedAndCounted) {
  std::vector<Vec3> v = {{0, 0, 0}, {0, 0, 1}, {1, 0, 0}, {2, 0, 0}};
  std::vector<uint32_t> i = {0, 1, 2, 0, 2, 3, 1, 1, 2};  // the 2nd on a line, the 3rd repeats
  const MeshDef m{v, i};
  Error e;
  auto world = World::create(quiet_def(), LevelDef{{&m, 1}, {}}, &e);
  ASSERT_EQ(e, Error::none);
  EXPECT_EQ(world->level_stats().triangles, 1u);
  EXPECT_EQ(world->level_stats().dropped_triangles, 2u);
}

TEST(MeshBuild, LevelShapesAreStaticOnlyAndNameGeometryTheLevelHas) {
  const Grid g = flat_grid(4, 1, 0, 0, 0);
  const MeshDef m = g.def();
  auto world = World::create(quiet_def(), LevelDef{{&m, 1}, {}});
  ASSERT_NE(world, nullptr);
  BodyDef b = default_body_def();
  b.shape.type = ShapeType::mesh;
  BodyId id;
  EXPECT_EQ(world->create_body(b, &id), Error::unknown_mesh);  // dynamic
  b.type = BodyType::static_body;
  b.shape.mesh = 1;
  EXPECT_EQ(world->create_body(b, &id), Error::unknown_mesh);  // no mesh 1
  b.shape.mesh = 0;
  b.shape.type = ShapeType::heightfield;
  EXPECT_EQ(world->create_body(b, &id), Error::unknown_mesh);  // no heightfield
  b.shape.type = ShapeType::mesh;
  EXPECT_EQ(world->create_body(b, &id), Error::none);
}

TEST(MeshBuild, TheLevelIsPartOfTheSnapshotsIdentity) {
  const Grid g = flat_grid(4, 1, 0, 0, 0);
  const Grid h = flat_grid(4, 1, 0, 0, 0.5f);
  const MeshDef mg = g.def(), mh = h.def();
  auto a = World::create(quiet_def(), LevelDef{{&mg, 1}, {}});
  auto b = World::create(quiet_def(), LevelDef{{&mh, 1}, {}});
  auto c = World::create(quiet_def(), LevelDef{{&mg, 1}, {}});
  add_static(*a, ShapeType::mesh, 0);
  std::vector<uint8_t> bytes(a->snapshot_size());
  size_t n = 0;
  ASSERT_EQ(a->save_snapshot(bytes, &n), Error::none);
  EXPECT_EQ(b->restore_snapshot({bytes.data(), n}), Error::snapshot_mismatch);
  EXPECT_EQ(c->restore_snapshot({bytes.data(), n}), Error::none);
  EXPECT_EQ(c->state_hash(), a->state_hash());
}

TEST(MeshBuild, CreateLikeCopiesTheLevelSoTheSnapshotsRestoreAndStepAlike) {
  // A rollback, prediction or comparison copy of a world: World::create(def) alone lacks the
  // level and refuses the snapshots; create_like has it and steps bit for bit alike.
  const Grid g = flat_grid(8, 1, -4, -4, 0);
  const MeshDef mg = g.def();
  auto a = World::create(quiet_def(), LevelDef{{&mg, 1}, {}});
  ASSERT_NE(a, nullptr);
  add_static(*a, ShapeType::mesh, 0);
  BodyDef box = default_body_def();
  box.shape.type = ShapeType::box;
  box.shape.half_extents = {0.5f, 0.5f, 0.5f};
  box.position = {0.3f, 2.0f, -0.2f};
  box.angular_velocity = {0.4f, 1.0f, 0.2f};
  BodyId id;
  ASSERT_EQ(a->create_body(box, &id), Error::none);
  step(*a, 30);
  std::vector<uint8_t> bytes(a->snapshot_size());
  size_t n = 0;
  ASSERT_EQ(a->save_snapshot(bytes, &n), Error::none);

  auto bare = World::create(a->def());
  ASSERT_NE(bare, nullptr);
  EXPECT_EQ(bare->restore_snapshot({bytes.data(), n}), Error::snapshot_mismatch);

  auto copy = World::create_like(*a);
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(copy->body_count(), 0u);
  EXPECT_EQ(copy->level_stats().digest, a->level_stats().digest);
  EXPECT_EQ(copy->level_stats().triangles, 128u);
  ASSERT_EQ(copy->restore_snapshot({bytes.data(), n}), Error::none);
  EXPECT_EQ(copy->state_hash(), a->state_hash());
  step(*a, 60);
  step(*copy, 60);
  EXPECT_EQ(copy->state_hash(), a->state_hash());
  EXPECT_NEAR(view(*copy, id).position.y, 0.5f, 0.01f);  // resting on the copied mesh
}

// ---- queries
// -------------------------------------------------------------------------------------

TEST(MeshQuery, RayAndShapeCastAndOverlapNameTheTriangle) {
  const Grid g = flat_grid(8, 1, -4, -4, 0);
  const MeshDef m = g.def();
  std::vector<float> heights(9 * 9, 0.0f);
  const HeightfieldDef f{heights, 9, 9, 1, 1};
  for (int kind = 0; kind < 2; ++kind) {
    auto world = kind == 0 ? World::create(quiet_def(), LevelDef{{&m, 1}, {}})
                           : World::create(quiet_def(), LevelDef{{}, {&f, 1}});
    add_static(*world, kind == 0 ? ShapeType::mesh : ShapeType::heightfield, 0,
               kind == 0 ? Vec3{} : Vec3{-4, 0, -4});
    // Cell (c, r) = (5, 6) of the grid: x in [1, 2], z in [2, 3]; the point is in its half 1
    // (the triangle (c, r), (c, r + 1), (c + 1, r + 1): z − r > x − c).
    const Vec3 origin{1.25f, 5, 2.75f};
    RayHit hit;
    const QueryResult r = ray_cast(*world, origin, Vec3{0, -10, 0}, QueryFilter{}, &hit);
    ASSERT_EQ(r.count, 1u) << kind;
    EXPECT_NEAR(hit.fraction, 0.5f, 1e-6f);
    EXPECT_NEAR(hit.normal.y, 1.0f, 1e-6f);
    EXPECT_EQ(hit.triangle, 2u * (6u * 8u + 5u) + 1u) << kind;
    // A sphere cast lands on the same triangle, its radius above the floor.
    ShapeDef ball;
    ball.type = ShapeType::sphere;
    ball.radius = 0.25f;
    const QueryResult s =
        shape_cast(*world, ball, Transform{origin, Quat{}}, Vec3{0, -10, 0}, QueryFilter{}, &hit);
    ASSERT_EQ(s.count, 1u);
    EXPECT_NEAR(hit.fraction * 10.0f, 4.75f, 1e-4f);
    EXPECT_EQ(hit.triangle, 2u * (6u * 8u + 5u) + 1u);
    // A box cast (the narrowphase's advance) stops within the cast tolerance of the floor.
    ShapeDef box;
    box.type = ShapeType::box;
    box.half_extents = {0.2f, 0.2f, 0.2f};
    const QueryResult c =
        shape_cast(*world, box, Transform{origin, Quat{}}, Vec3{0, -10, 0}, QueryFilter{}, &hit);
    ASSERT_EQ(c.count, 1u);
    EXPECT_NEAR(hit.fraction * 10.0f, 4.8f, 2e-3f);
    // Overlap: a box touching the floor, and one above it.
    BodyId bodies[4];
    EXPECT_EQ(
        overlap(*world, box, Transform{{0.5f, 0.1f, 0.5f}, Quat{}}, QueryFilter{}, bodies).count,
        1u);
    EXPECT_EQ(
        overlap(*world, box, Transform{{0.5f, 0.5f, 0.5f}, Quat{}}, QueryFilter{}, bodies).count,
        0u);
  }
}

// ---- the narrowphase against triangles
// -------------------------------------------------------------------------------------

// Manifolds of one piece against a level built from `mesh`, placed at the origin.
struct LevelContact {
  Manifold m[kMaxLevelManifolds];
  uint32_t groups = 0;
};
LevelContact touch(const MeshDef& mesh, const ShapeDef& piece, Vec3 position, Quat q = Quat{},
                   float margin = 0.01f) {
  std::vector<MeshGeometry> meshes;
  std::vector<HeightfieldGeometry> fields;
  LevelStats stats;
  LevelDef level;
  level.meshes = {&mesh, 1};
  EXPECT_EQ(build_level(level, &meshes, &fields, &stats), Error::none);
  ShapeLibrary library;
  library.meshes = meshes.data();
  library.mesh_count = static_cast<uint32_t>(meshes.size());
  ShapeDef shape;
  shape.type = ShapeType::mesh;
  LevelContact c;
  c.groups = collide_level(piece, Transform{position, q}, shape, Transform{}, library, margin, c.m,
                           nullptr);
  return c;
}

TEST(MeshCollide, ASphereMeetsTheFaceAnEdgeOrACornerAndNeverTheBackBeside) {
  // One triangle in y = 0, front up, corners (0,0,0), (0,0,2), (2,0,0): every edge a boundary.
  const std::vector<Vec3> v = {{0, 0, 0}, {0, 0, 2}, {2, 0, 0}};
  const std::vector<uint32_t> i = {0, 1, 2};
  const MeshDef mesh{v, i};
  ShapeDef ball;
  ball.radius = 0.5f;
  {  // over the face, 1 cm into it
    const LevelContact c = touch(mesh, ball, {0.5f, 0.49f, 0.5f});
    ASSERT_EQ(c.groups, 1u);
    ASSERT_EQ(c.m[0].count, 1);
    EXPECT_NEAR(c.m[0].normal.y, 1.0f, 1e-6f);
    EXPECT_NEAR(c.m[0].points[0].separation, -0.01f, 1e-6f);
  }
  {  // beside the edge x = 0, level with the plane: pushed along −x
    const LevelContact c = touch(mesh, ball, {-0.45f, 0.0f, 1.0f});
    ASSERT_EQ(c.groups, 1u);
    EXPECT_NEAR(c.m[0].normal.x, -1.0f, 1e-6f);
    EXPECT_NEAR(c.m[0].points[0].separation, -0.05f, 1e-6f);
  }
  {  // off the corner (0,0,0), diagonally above it
    const LevelContact c = touch(mesh, ball, {-0.28f, 0.28f, -0.28f});
    ASSERT_EQ(c.groups, 1u);
    const float k = 1.0f / std::sqrt(3.0f);
    EXPECT_NEAR(c.m[0].normal.x, -k, 1e-5f);
    EXPECT_NEAR(c.m[0].normal.y, k, 1e-5f);
    EXPECT_NEAR(c.m[0].normal.z, -k, 1e-5f);
  }
  // Centre behind the plane beside the triangle: nothing (never pulled through).
  EXPECT_EQ(touch(mesh, ball, {-0.3f, -0.2f, 1.0f}).groups, 0u);
  {  // Centre 0.3 m behind the plane over the face: pushed out through the front.
    const LevelContact c = touch(mesh, ball, {0.5f, -0.3f, 0.5f});
    ASSERT_EQ(c.groups, 1u);
    EXPECT_NEAR(c.m[0].normal.y, 1.0f, 1e-6f);
    EXPECT_NEAR(c.m[0].points[0].separation, -0.8f, 1e-6f);
  }
  // Deeper than the thickness (1 m): under the surface, left alone.
  EXPECT_EQ(touch(mesh, ball, {0.5f, -0.6f, 0.5f}).groups, 0u);
}

TEST(MeshCollide, ACapsuleLyingOnAFaceGetsTwoPointsAndABoxFourOverASeam) {
  const Grid g = flat_grid(2, 4.0f, -4, -4, 0);  // 8 triangles, 4 m cells, seams through x, z = 0
  const MeshDef mesh = g.def();
  ShapeDef capsule;
  capsule.type = ShapeType::capsule;
  capsule.radius = 0.25f;
  capsule.half_height = 0.5f;
  // Lying along x (local y turned onto x: −90° about z), inside one triangle.
  const float h = 0.70710678f;
  const Quat along_x{0, 0, -h, h};
  {
    const LevelContact c = touch(mesh, capsule, {-2.5f, 0.245f, -1.0f}, along_x);
    ASSERT_EQ(c.groups, 1u);
    ASSERT_EQ(c.m[0].count, 2);
    for (int k = 0; k < 2; ++k) {
      EXPECT_NEAR(c.m[0].points[k].separation, -0.005f, 1e-5f);
      EXPECT_NEAR(c.m[0].normal.y, 1.0f, 1e-6f);
    }
    EXPECT_NEAR(std::fabs(c.m[0].points[0].position.x - c.m[0].points[1].position.x), 1.0f, 1e-4f);
  }
  {  // A box across both seams and a diagonal: one manifold, its four bottom corners, face up.
    ShapeDef box;
    box.type = ShapeType::box;
    box.half_extents = {0.5f, 0.25f, 0.5f};
    const LevelContact c = touch(mesh, box, {0.1f, 0.248f, 0.2f});
    ASSERT_EQ(c.groups, 1u);
    ASSERT_EQ(c.m[0].count, 4);
    EXPECT_NEAR(c.m[0].normal.y, 1.0f, 1e-6f);
    for (int k = 0; k < 4; ++k) {
      EXPECT_NEAR(c.m[0].points[k].separation, -0.002f, 1e-5f);
      EXPECT_NEAR(std::fabs(c.m[0].points[k].position.x - 0.1f), 0.5f, 1e-4f);
      EXPECT_NEAR(std::fabs(c.m[0].points[k].position.z - 0.2f), 0.5f, 1e-4f);
    }
  }
}

TEST(MeshCollide, ABoxOnARidgeTouchesItsActiveEdgeAndNotAFlatSeam) {
  // A roof: two triangles meeting at the ridge x = 0 (y = 0), each falling away at 45°.
  const std::vector<Vec3> v = {{0, 0, -2}, {0, 0, 2}, {-2, -2, 0}, {2, -2, 0}};
  const std::vector<uint32_t> i = {0, 2, 1, 0, 1, 3};
  const MeshDef mesh{v, i};
  ShapeDef box;
  box.type = ShapeType::box;
  box.half_extents = {0.5f, 0.5f, 0.5f};
  // Axis-aligned, its bottom face 1 cm into the ridge: the ridge's edge against the box's face
  // (the box's face is the reference, its normal straight down, i.e. the contact normal up).
  const LevelContact c = touch(mesh, box, {0.0f, 0.49f, 0.0f});
  ASSERT_GE(c.groups, 1u);
  bool up = false;
  for (uint32_t g = 0; g < c.groups; ++g) {
    if (c.m[g].normal.y > 0.999f) {
      up = true;
      for (int k = 0; k < c.m[g].count; ++k) {
        EXPECT_NEAR(c.m[g].points[k].separation, -0.01f, 1e-5f);
        EXPECT_NEAR(c.m[g].points[k].position.x, 0.0f, 1e-4f);  // along the ridge
      }
    }
  }
  EXPECT_TRUE(up);
}

// ---- physics
// -------------------------------------------------------------------------------------

struct Roll {
  float min_speed = 1e9f, max_speed = 0, max_up = 0, max_side = 0;
  Vec3 end{};
};
// A ball of radius 0.5 rolling along +x at 5 m/s from x = −14 for 4 s.
Roll roll_ball(bool on_mesh) {
  const Grid g = flat_grid(32, 1.0f, -16, -16, 0);  // 2,048 triangles
  const MeshDef m = g.def();
  auto world =
      on_mesh ? World::create(quiet_def(), LevelDef{{&m, 1}, {}}) : World::create(quiet_def());
  if (on_mesh)
    add_static(*world, ShapeType::mesh, 0);
  else
    add_plane(*world);
  BodyDef b = default_body_def();
  b.shape.radius = 0.5f;
  b.position = {-14, 0.5f, 0.3f};
  b.linear_velocity = {5, 0, 0};
  b.angular_velocity = {0, 0, -10};  // rolling: ω = v / r
  BodyId id;
  EXPECT_EQ(world->create_body(b, &id), Error::none);
  Roll r;
  step(*world, 30);  // settle
  for (int i = 0; i < 210; ++i) {
    step(*world, 1);
    const BodyView v = view(*world, id);
    const float speed = std::sqrt(v.linear_velocity.x * v.linear_velocity.x +
                                  v.linear_velocity.z * v.linear_velocity.z);
    r.min_speed = std::min(r.min_speed, speed);
    r.max_speed = std::max(r.max_speed, speed);
    r.max_up = std::max(r.max_up, v.linear_velocity.y);
    r.max_side = std::max(r.max_side, std::fabs(v.position.z - 0.3f));
    r.end = v.position;
  }
  return r;
}

TEST(MeshPhysics, ABallRollsOverTwoThousandTrianglesAsOnAPlane) {
  const Roll plane = roll_ball(false), mesh = roll_ball(true);
  figure("mesh_roll_speed_min_over_plane", mesh.min_speed / plane.min_speed, "", "[0.995, 1.005]");
  figure("mesh_roll_speed_max_over_plane", mesh.max_speed / plane.max_speed, "", "[0.995, 1.005]");
  figure("mesh_roll_max_upward_speed", mesh.max_up, "m/s", "<= 0.001");
  figure("mesh_roll_max_sideways_drift", mesh.max_side, "m", "<= 0.001");
  EXPECT_NEAR(mesh.min_speed / plane.min_speed, 1.0f, 0.005f);
  EXPECT_NEAR(mesh.max_speed / plane.max_speed, 1.0f, 0.005f);
  EXPECT_LE(mesh.max_up, 0.001f);
  EXPECT_LE(mesh.max_side, 0.001f);
  EXPECT_GT(mesh.end.x, 0.0f);  // it crossed a few dozen seams
}

TEST(MeshPhysics, ABoxSlidesOverTriangleSeamsAtMuG) {
  const Grid g = flat_grid(40, 0.7f, -14, -14, 0);
  const MeshDef m = g.def();
  auto world = World::create(quiet_def(), LevelDef{{&m, 1}, {}});
  add_static(*world, ShapeType::mesh, 0);
  BodyDef b = default_body_def();
  b.shape.type = ShapeType::box;
  b.shape.half_extents = {0.4f, 0.25f, 0.3f};
  b.shape.friction = 0.5f;
  b.position = {-10, 0.25f, 0.1f};
  BodyId id;
  ASSERT_EQ(world->create_body(b, &id), Error::none);
  step(*world, 30);
  ASSERT_EQ(world->set_linear_velocity(id, Vec3{8, 0, 0}), Error::none);
  step(*world, 6);  // the contact settles into sliding
  const float v0 = view(*world, id).linear_velocity.x;
  float max_up = 0;
  const int steps = 36;
  for (int i = 0; i < steps; ++i) {
    step(*world, 1);
    max_up = std::max(max_up, std::fabs(view(*world, id).linear_velocity.y));
  }
  const float v1 = view(*world, id).linear_velocity.x;
  const float decel = (v0 - v1) / (static_cast<float>(steps) / 60.0f);
  const float mu = combine_friction(0.5f, 0.5f);
  const float expect = mu * 9.81f;
  figure("mesh_slide_deceleration_over_mu_g", decel / expect, "", "[0.98, 1.02]");
  figure("mesh_slide_max_vertical_speed", max_up, "m/s", "<= 0.01");
  EXPECT_NEAR(decel / expect, 1.0f, 0.02f);
  EXPECT_LE(max_up, 0.01f);
  EXPECT_GT(v1, 0.5f);  // still sliding at the end of the window
}

TEST(MeshPhysics, ACapsuleSlidesDownATwentyDegreeHeightfieldAtGSinMinusMuCos) {
  const float angle = 20.0f * 3.14159265f / 180.0f;
  const int n = 64;
  const float spacing = 1.0f;
  std::vector<float> heights(static_cast<size_t>(n * n));
  for (int r = 0; r < n; ++r)
    for (int c = 0; c < n; ++c)
      heights[static_cast<size_t>(r * n + c)] = -std::tan(angle) * static_cast<float>(c) * spacing;
  const HeightfieldDef f{heights, static_cast<uint32_t>(n), static_cast<uint32_t>(n), spacing,
                         spacing};
  auto world = World::create(quiet_def(), LevelDef{{}, {&f, 1}});
  const BodyId ground = add_static(*world, ShapeType::heightfield, 0);
  (void)ground;
  BodyDef b = default_body_def();
  b.shape.type = ShapeType::capsule;
  b.shape.radius = 0.3f;
  b.shape.half_height = 0.6f;
  b.shape.friction = 0.2f;
  // Lying along the slope (its axis, local y, down the slope): turned −110° about z.
  const float half = -110.0f * 3.14159265f / 180.0f * 0.5f;
  b.orientation = Quat{0, 0, std::sin(half), std::cos(half)};
  const float x = 8.0f;
  b.position = {x, -std::tan(angle) * x + 0.3f / std::cos(angle) + 0.001f, 30.2f};
  BodyId id;
  ASSERT_EQ(world->create_body(b, &id), Error::none);
  step(*world, 30);
  const Vec3 v0 = view(*world, id).linear_velocity;
  const int steps = 90;
  step(*world, steps);
  const Vec3 v1 = view(*world, id).linear_velocity;
  const float along0 = std::sqrt(dot(v0, v0)), along1 = std::sqrt(dot(v1, v1));
  const float accel = (along1 - along0) / (static_cast<float>(steps) / 60.0f);
  const float mu = combine_friction(0.2f, 0.5f);
  const float expect = 9.81f * (std::sin(angle) - mu * std::cos(angle));
  figure("heightfield_slope_acceleration_over_expected", accel / expect, "", "[0.97, 1.03]");
  EXPECT_NEAR(accel / expect, 1.0f, 0.03f);
}

// Sampled terrain: gentle hills of 1 m on a 64 × 64 grid of 1 m.
float hill(int c, int r) {
  const float x = static_cast<float>(c), z = static_cast<float>(r);
  return std::sin(0.3f * x) * std::cos(0.25f * z);
}

TEST(MeshPhysics, NothingFallsThroughTheTerrainInASixtySecondPile) {
  const int n = 64;
  std::vector<float> heights(static_cast<size_t>(n * n));
  for (int r = 0; r < n; ++r)
    for (int c = 0; c < n; ++c)
      heights[static_cast<size_t>(r * n + c)] = hill(c, r);
  const HeightfieldDef f{heights, static_cast<uint32_t>(n), static_cast<uint32_t>(n), 1, 1};
  WorldDef def = quiet_def();
  def.enable_sleep = true;
  auto world = World::create(def, LevelDef{{}, {&f, 1}});
  {
    BodyDef t = default_body_def();
    t.type = BodyType::static_body;
    t.shape.type = ShapeType::heightfield;
    t.shape.category = 2;  // so the ray below sees the terrain only
    t.position = {-32, 0, -32};
    BodyId id;
    ASSERT_EQ(world->create_body(t, &id), Error::none);
  }
  std::vector<BodyId> ids;
  for (int i = 0; i < 150; ++i) {
    BodyDef b = default_body_def();
    const int kind = i % 3;
    b.shape.type =
        kind == 0 ? ShapeType::sphere : (kind == 1 ? ShapeType::box : ShapeType::capsule);
    b.shape.radius = 0.3f;
    b.shape.half_extents = {0.3f, 0.25f, 0.35f};
    b.shape.half_height = 0.3f;
    b.position = {static_cast<float>(i % 5) * 1.0f - 2.0f, 3.0f + static_cast<float>(i / 25) * 1.0f,
                  static_cast<float>((i / 5) % 5) * 1.0f - 2.0f};
    BodyId id;
    ASSERT_EQ(world->create_body(b, &id), Error::none);
    ids.push_back(id);
  }
  float worst = 1e9f;
  for (int s = 0; s < 60 * 60; ++s) {
    world->step(TickInput{});
    if (s % 30 != 29) continue;
    for (BodyId id : ids) {
      const BodyView v = view(*world, id);
      RayHit hit;
      const QueryResult q = ray_cast(*world, Vec3{v.position.x, 50, v.position.z}, Vec3{0, -100, 0},
                                     QueryFilter{1, 2, id}, &hit);
      if (q.count == 0) continue;  // off the terrain's edge: no surface under it
      worst = std::min(worst, v.position.y - hit.point.y);
    }
  }
  figure("terrain_pile_lowest_centre_above_surface", worst, "m", ">= 0.2");
  EXPECT_GE(worst, 0.2f);  // no body sunk more than 5 cm below its smallest half size (0.25 m)
}

TEST(MeshPhysics, ABulletSphereAtFiftyMetresPerSecondDoesNotPassAOneTriangleWall) {
  // A wall x = 0 of two triangles facing −x.
  std::vector<Vec3> v = {{0, -2, -2}, {0, -2, 2}, {0, 2, 2}, {0, 2, -2}};
  std::vector<uint32_t> i = {0, 1, 2, 0, 2, 3};
  const MeshDef m{v, i};
  WorldDef def = quiet_def();
  def.gravity = {0, 0, 0};
  auto world = World::create(def, LevelDef{{&m, 1}, {}});
  add_static(*world, ShapeType::mesh, 0);
  {
    const LevelTriangle& t = world_data(*world).meshes[0].triangles[0];
    ASSERT_LT(t.normal.x, -0.99f);
  }
  BodyDef b = default_body_def();
  b.shape.radius = 0.1f;
  b.bullet = true;
  b.position = {-5, 0.1f, 0.3f};
  b.linear_velocity = {50, 0, 0};
  BodyId id;
  ASSERT_EQ(world->create_body(b, &id), Error::none);
  float max_x = -1e9f;
  for (int s = 0; s < 60; ++s) {
    world->step(TickInput{});
    max_x = std::max(max_x, view(*world, id).position.x);
  }
  figure("bullet_max_centre_x", max_x, "m", "< 0 (the wall)");
  EXPECT_LT(max_x, 0.0f);
}

float resting_height(bool on_mesh) {
  const Grid g = flat_grid(8, 1.0f, -4, -4, 0);
  const MeshDef m = g.def();
  auto world =
      on_mesh ? World::create(quiet_def(), LevelDef{{&m, 1}, {}}) : World::create(quiet_def());
  if (on_mesh)
    add_static(*world, ShapeType::mesh, 0);
  else
    add_plane(*world);
  BodyDef b = default_body_def();
  b.shape.type = ShapeType::box;
  b.shape.half_extents = {0.5f, 0.5f, 0.5f};
  b.position = {0.1f, 0.52f, 0.2f};  // straddles a seam and a diagonal
  BodyId id;
  EXPECT_EQ(world->create_body(b, &id), Error::none);
  step(*world, 180);
  return view(*world, id).position.y;
}

TEST(MeshPhysics, ABoxRestsOnAMeshFloorAtItsHeightOnAPlane) {
  const float plane = resting_height(false), mesh = resting_height(true);
  figure("mesh_rest_height_minus_plane", mesh - plane, "m", "|x| <= 0.001");
  EXPECT_NEAR(mesh, plane, 0.001f);
}

TEST(MeshPhysics, ThePileIsDeterministicRunToRun) {
  const auto run = [] {
    std::vector<float> heights(32 * 32);
    for (int r = 0; r < 32; ++r)
      for (int c = 0; c < 32; ++c)
        heights[static_cast<size_t>(r * 32 + c)] = hill(c, r);
    const HeightfieldDef f{heights, 32, 32, 1, 1};
    const Grid g = flat_grid(10, 1, -20, -5, -0.5f);
    const MeshDef m = g.def();
    auto world = World::create(quiet_def(), LevelDef{{&m, 1}, {&f, 1}});
    add_static(*world, ShapeType::heightfield, 0, Vec3{-16, 0, -16});
    add_static(*world, ShapeType::mesh, 0);
    for (int i = 0; i < 40; ++i) {
      BodyDef b = default_body_def();
      b.shape.type = i % 2 == 0 ? ShapeType::box : ShapeType::sphere;
      b.shape.half_extents = {0.3f, 0.3f, 0.3f};
      b.shape.radius = 0.3f;
      b.position = {static_cast<float>(i % 4) - 14.0f, 2.0f + static_cast<float>(i / 4), 0.0f};
      BodyId id;
      EXPECT_EQ(world->create_body(b, &id), Error::none);
    }
    uint64_t h = 0;
    for (int s = 0; s < 200; ++s) {
      world->step(TickInput{});
      h = h * 31 + world->state_hash();
    }
    return h;
  };
  EXPECT_EQ(run(), run());
}

}  // namespace

namespace {

// The built-in convex_vs_mesh scene after its 500 steps: no body under the mesh (a ray down from
// high above meets the mesh below the body's centre), and the boxes and hulls settled: at least
// 95 % of them slower than 5 cm/s (balls and capsules may still roll in the valleys: reported).
TEST(MeshScenes, ConvexVsMeshKeepsEveryBodyOnTheMeshAndComesToRest) {
  Scene scene;
  ASSERT_TRUE(make_builtin_scene("convex_vs_mesh", &scene));
  scene.bodies[0].shape.category = 2;  // the mesh, for the rays below
  Error e;
  auto world = build_world(scene, &e);
  ASSERT_NE(world, nullptr) << error_message(e);
  EXPECT_EQ(world->level_stats().triangles, 20000u);
  figure("convex_vs_mesh_level_memory", static_cast<double>(world->level_stats().memory_bytes),
         "bytes", "(reported)");
  {
    Scene terrain;
    ASSERT_TRUE(make_builtin_scene("terrain_pile", &terrain));
    auto t = build_world(terrain, &e);
    ASSERT_NE(t, nullptr);
    figure("terrain_pile_level_memory", static_cast<double>(t->level_stats().memory_bytes), "bytes",
           "(reported)");
    // The same surface as a mesh: two triangles per cell, the heights as vertices.
    const SceneHeightfield& h = terrain.heightfields[0];
    SceneMesh as_mesh;
    for (uint32_t r = 0; r < h.rows; ++r)
      for (uint32_t c = 0; c < h.columns; ++c)
        as_mesh.vertices.push_back(
            {static_cast<float>(c), h.heights[r * h.columns + c], static_cast<float>(r)});
    for (uint32_t r = 0; r + 1 < h.rows; ++r) {
      for (uint32_t c = 0; c + 1 < h.columns; ++c) {
        const uint32_t a = r * h.columns + c;
        as_mesh.indices.insert(as_mesh.indices.end(), {a, a + h.columns + 1, a + 1});
        as_mesh.indices.insert(as_mesh.indices.end(), {a, a + h.columns, a + h.columns + 1});
      }
    }
    const MeshDef md{as_mesh.vertices, as_mesh.indices};
    auto m = World::create(quiet_def(), LevelDef{{&md, 1}, {}}, &e);
    ASSERT_NE(m, nullptr);
    figure("terrain_as_mesh_level_memory", static_cast<double>(m->level_stats().memory_bytes),
           "bytes", "(reported)");
    EXPECT_LT(t->level_stats().memory_bytes * 20, m->level_stats().memory_bytes);
    // The bound a loader checks a budget with holds what the worlds keep.
    EXPECT_GE(level_memory_bytes(LevelDef{{&md, 1}, {}}), m->level_stats().memory_bytes);
    const HeightfieldDef hd{h.heights, h.columns, h.rows, h.spacing_x, h.spacing_z};
    EXPECT_GE(level_memory_bytes(LevelDef{{}, {&hd, 1}}), t->level_stats().memory_bytes);
  }
  for (int s = 0; s < 500; ++s) {
    const StepStatus status = world->step(TickInput{});
    ASSERT_TRUE(status.ok()) << "overflow at step " << s;
  }
  int under = 0, resting = 0, bodies = 0, round_resting = 0, round_bodies = 0;
  float fastest = 0;
  for (uint32_t i = 1; i < scene.bodies.size(); ++i) {
    const BodyId id{i + 1, 0};
    const BodyView v = view(*world, id);
    ++bodies;
    RayHit hit;
    const QueryResult q = ray_cast(*world, Vec3{v.position.x, 100, v.position.z}, Vec3{0, -200, 0},
                                   QueryFilter{1, 2, id}, &hit);
    if (q.count == 1 && v.position.y < hit.point.y) ++under;
    const float speed = length(v.linear_velocity);
    const uint32_t kind = ((i - 1) / 21) % 4;  // box, ball, capsule, hull
    const bool round = kind == 1 || kind == 2;
    if (round) {
      --bodies;
      ++round_bodies;
      if (speed < 0.05f) ++round_resting;
      continue;
    }
    if (speed < 0.05f) ++resting;
    fastest = std::max(fastest, speed);
  }
  figure("convex_vs_mesh_bodies_under_the_mesh", under, "", "0");
  figure("convex_vs_mesh_resting_fraction", static_cast<double>(resting) / bodies, "", ">= 0.95");
  figure("convex_vs_mesh_fastest_box_or_hull", fastest, "m/s", "(reported)");
  figure("convex_vs_mesh_resting_fraction_balls_capsules",
         static_cast<double>(round_resting) / round_bodies, "", "(reported)");
  EXPECT_EQ(under, 0);
  EXPECT_GE(static_cast<double>(resting) / bodies, 0.95);
}

}  // namespace
