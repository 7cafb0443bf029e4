// Built-in scenes with level geometry: convex_vs_mesh (a common mesh benchmark: a wavy 100 × 100
// cell mesh of 20,000 triangles under 1,764 convex bodies) and terrain_pile (1,000 mixed bodies
// dropped on a 256 × 256 heightfield).
//
// Their heights need sine and cosine, which the sim may not take from libm: scene_sin below is a
// Taylor series in double after an exact reduction, only + − × ÷ and floor, so every target
// builds the same level bit for bit.
#include <cmath>
#include <cstdint>

#include "lockstep/sim/scene.h"

namespace lockstep::sim {

namespace {

constexpr double kTwoPi = 6.283185307179586;

// The sine of x to about 1e-12 for |x| up to a few hundred: x − 2πk into [−π, π], then the series
// to x^23 (its first left-out term is below 1e-12 there).
double scene_sin(double x) {
  const double k = std::floor(x / kTwoPi + 0.5);
  const double r = x - k * kTwoPi;
  const double r2 = r * r;
  double term = r, sum = r;
  for (int n = 1; n <= 11; ++n) {
    term = -term * r2 / static_cast<double>((2 * n) * (2 * n + 1));
    sum += term;
  }
  return sum;
}
double scene_cos(double x) {
  return scene_sin(x + 0.25 * kTwoPi);
}

BodyDef dynamic_body(ShapeType type, Vec3 position) {
  BodyDef b = default_body_def();
  b.type = BodyType::dynamic;
  b.position = position;
  b.shape.type = type;
  b.shape.friction = 0.5f;
  b.shape.restitution = 0.6f;
  return b;
}

// The four convex bodies of both scenes: a box 1 × 1.5 × 2 m, a ball of radius 0.5 m, a capsule
// of half height 0.75 m and radius 0.5 m, and the hull of (0, 1, 0), (±1, 0, 0), (0, 0, ±1)
// (WorldDef::hulls[0]).
BodyDef convex_body(int kind, Vec3 position) {
  static constexpr ShapeType kTypes[4] = {ShapeType::box, ShapeType::sphere, ShapeType::capsule,
                                          ShapeType::hull};
  BodyDef b = dynamic_body(kTypes[kind], position);
  b.shape.half_extents = {0.5f, 0.75f, 1.0f};
  b.shape.radius = 0.5f;
  b.shape.half_height = 0.75f;
  b.shape.hull = 0;
  b.allow_sleep = false;
  return b;
}

void add_pyramid_hull(WorldDef* def) {
  HullDef& h = def->hulls[0];
  h.point_count = 5;
  h.points[0] = {0, 1, 0};
  h.points[1] = {1, 0, 0};
  h.points[2] = {-1, 0, 0};
  h.points[3] = {0, 0, 1};
  h.points[4] = {0, 0, -1};
  def->hull_count = 1;
}

BodyDef static_level(ShapeType type, Vec3 position, float friction, float restitution) {
  BodyDef b = default_body_def();
  b.type = BodyType::static_body;
  b.position = position;
  b.shape.type = type;
  b.shape.mesh = 0;
  b.shape.friction = friction;
  b.shape.restitution = restitution;
  return b;
}

}  // namespace

void make_convex_vs_mesh(Scene* scene) {
  constexpr int n = 100;              // cells per side
  constexpr float cell = 3.0f;        // m
  constexpr float max_height = 5.0f;  // m
  const float centre = static_cast<float>(n) * cell / 2.0f;
  SceneMesh mesh;
  mesh.vertices.resize((n + 1) * (n + 1));
  for (int x = 0; x <= n; ++x) {
    for (int z = 0; z <= n; ++z) {
      const double h = scene_sin(static_cast<double>(x) * 50.0 / n) *
                       scene_cos(static_cast<double>(z) * 50.0 / n);
      mesh.vertices[static_cast<size_t>(z * (n + 1) + x)] = {cell * static_cast<float>(x),
                                                             max_height * static_cast<float>(h),
                                                             cell * static_cast<float>(z)};
    }
  }
  // Two triangles per cell, fronts up: (x, z), (x, z + 1), (x + 1, z) and (x + 1, z),
  // (x, z + 1), (x + 1, z + 1).
  for (int x = 0; x < n; ++x) {
    for (int z = 0; z < n; ++z) {
      const uint32_t start = static_cast<uint32_t>((n + 1) * z + x);
      const uint32_t up = static_cast<uint32_t>(n + 1);
      mesh.indices.insert(mesh.indices.end(), {start, start + up, start + 1});
      mesh.indices.insert(mesh.indices.end(), {start + 1, start + up, start + up + 1});
    }
  }
  scene->meshes.push_back(std::move(mesh));
  WorldDef& def = scene->def;
  def = default_world_def();
  def.enable_sleep = false;
  // Two substeps (of one biased and one relaxed pass each): as good as the default four here
  // (every body stays on the mesh, as many come to rest), at about half the solver's cost.
  def.substeps = 2;
  def.max_bodies = 2048;
  def.max_contact_pairs = 16384;
  def.max_contact_points = 65536;
  def.max_candidate_pairs = 32768;
  def.max_events = 16384;
  add_pyramid_hull(&def);
  scene->bodies.push_back(
      static_level(ShapeType::mesh, {-centre, max_height, -centre}, 0.5f, 0.6f));
  for (int x = -10; x <= 10; ++x) {
    for (int kind = 0; kind < 4; ++kind) {
      for (int z = -10; z <= 10; ++z) {
        scene->bodies.push_back(convex_body(
            kind, {7.5f * static_cast<float>(x), 15.0f + 2.0f * static_cast<float>(kind),
                   7.5f * static_cast<float>(z)}));
      }
    }
  }
}

void make_terrain_pile(Scene* scene) {
  constexpr uint32_t kSide = 256;  // samples per side, 1 m apart
  SceneHeightfield field;
  field.columns = kSide;
  field.rows = kSide;
  field.heights.resize(kSide * kSide);
  for (uint32_t r = 0; r < kSide; ++r) {
    for (uint32_t c = 0; c < kSide; ++c) {
      const double x = static_cast<double>(c), z = static_cast<double>(r);
      const double h = 4.0 * scene_sin(0.05 * x) * scene_cos(0.04 * z) +
                       0.5 * scene_sin(0.3 * x) * scene_sin(0.27 * z);
      field.heights[r * kSide + c] = static_cast<float>(h);
    }
  }
  scene->heightfields.push_back(std::move(field));
  WorldDef& def = scene->def;
  def = default_world_def();
  def.max_bodies = 1024 + 8;
  def.max_contact_pairs = 8192;
  def.max_contact_points = 32768;
  def.max_candidate_pairs = 16384;
  def.max_events = 8192;
  add_pyramid_hull(&def);
  const float half = static_cast<float>(kSide - 1) / 2.0f;
  scene->bodies.push_back(static_level(ShapeType::heightfield, {-half, 0, -half}, 0.6f, 0.0f));
  // 10 × 10 columns 2.5 m apart, 10 layers 2.5 m apart from 8 m up: the four kinds in turn.
  for (int layer = 0; layer < 10; ++layer) {
    for (int i = 0; i < 10; ++i) {
      for (int j = 0; j < 10; ++j) {
        const int kind = (layer + i + j) % 4;
        BodyDef b = convex_body(kind, {2.5f * static_cast<float>(i - 5) + 1.25f,
                                       8.0f + 2.5f * static_cast<float>(layer),
                                       2.5f * static_cast<float>(j - 5) + 1.25f});
        b.shape.restitution = 0.0f;
        b.shape.friction = 0.6f;
        b.allow_sleep = true;
        scene->bodies.push_back(b);
      }
    }
  }
}

}  // namespace lockstep::sim
