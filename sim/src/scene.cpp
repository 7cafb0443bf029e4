// Built-in scenes, building a world from a scene, and the deterministic input script.
//
// Every number here comes from integer arithmetic, exact int -> float conversions and
// + - * / sqrt on floats (no trig, no <random> distributions), so the same scene is built bit
// for bit on every platform of the determinism matrix. Randomness is our own SplitMix64.
#include "lockstep/sim/scene.h"
#include "lockstep/sim/testing.h"

#include <array>
#include <cstdint>

#include "split_mix64.h"

namespace lockstep::sim {

// The scenes with level geometry (scene_level.cpp).
void make_convex_vs_mesh(Scene* scene);
void make_terrain_pile(Scene* scene);

namespace {

/// One SplitMix64 output for a key: used to hash (seed, tick, body) without state.
uint64_t mix64(uint64_t key) {
  return SplitMix64{key}.next();
}

constexpr std::array<std::string_view, 5> kSceneNames = {"pyramid", "pile", "bounce", "inputs",
                                                         "pyramid3d"};

/// World defaults for up to `bodies` bodies; the contact capacities derive from it.
WorldDef sized_world_def(uint32_t bodies) {
  WorldDef def = default_world_def();
  def.max_bodies = bodies;
  return def;
}

BodyDef static_plane(float friction, float restitution) {
  BodyDef body = default_body_def();
  body.type = BodyType::static_body;
  body.shape.type = ShapeType::plane;
  body.shape.plane_normal = {0, 1, 0};
  body.shape.plane_offset = 0;
  body.shape.friction = friction;
  body.shape.restitution = restitution;
  return body;
}

BodyDef box_body(BodyType type, Vec3 position, Vec3 half_extents, float friction) {
  BodyDef body = default_body_def();
  body.type = type;
  body.position = position;
  body.shape.type = ShapeType::box;
  body.shape.half_extents = half_extents;
  body.shape.friction = friction;
  return body;
}

BodyDef sphere_body(Vec3 position, float radius) {
  BodyDef body = default_body_def();
  body.position = position;
  body.shape.type = ShapeType::sphere;
  body.shape.radius = radius;
  return body;
}

// 20 rows of 1 m boxes (row r holds 20 - r), 1 cm apart horizontally and vertically.
void make_pyramid(Scene* scene) {
  constexpr int kRows = 20;
  constexpr float kHalf = 0.5f;
  constexpr float kPitch = 1.01f;  // box size + 1 cm gap
  scene->def = sized_world_def(256);
  scene->bodies.push_back(static_plane(0.6f, 0));
  for (int row = 0; row < kRows; ++row) {
    int count = kRows - row;
    float y = 0.51f + static_cast<float>(row) * kPitch;
    for (int j = 0; j < count; ++j) {
      // Centred on x = 0: (2j - (count - 1)) * pitch / 2, an exact integer times a constant.
      float x = static_cast<float>(2 * j - (count - 1)) * (0.5f * kPitch);
      scene->bodies.push_back(box_body(BodyType::dynamic, {x, y, 0}, {kHalf, kHalf, kHalf}, 0.6f));
    }
  }
}

// 1000 boxes, spheres and capsules on a jittered 10 x 10 x 10 grid (1.5 m cells), dropped into
// a 16 m x 16 m box with 4 m walls. Every shape fits in a 0.6 m bounding sphere and jitter is at
// most 0.1 m per axis, so neighbours start at least 1.5 - 2 * 0.7 = 0.1 m apart.
void make_pile(Scene* scene) {
  constexpr int kGrid = 10;
  constexpr float kCell = 1.5f;
  constexpr float kJitter = 0.1f;
  scene->def = sized_world_def(1024);
  scene->bodies.push_back(static_plane(0.5f, 0));
  // Walls: inner faces at x, z = ±8, 0.5 m half thickness, 2 m half height.
  scene->bodies.push_back(box_body(BodyType::static_body, {8.5f, 2, 0}, {0.5f, 2, 9}, 0.5f));
  scene->bodies.push_back(box_body(BodyType::static_body, {-8.5f, 2, 0}, {0.5f, 2, 9}, 0.5f));
  scene->bodies.push_back(box_body(BodyType::static_body, {0, 2, 8.5f}, {8, 2, 0.5f}, 0.5f));
  scene->bodies.push_back(box_body(BodyType::static_body, {0, 2, -8.5f}, {8, 2, 0.5f}, 0.5f));

  SplitMix64 rng{0x70117e5ull};
  for (int level = 0; level < kGrid; ++level) {
    for (int i = 0; i < kGrid; ++i) {
      for (int k = 0; k < kGrid; ++k) {
        Vec3 centre{static_cast<float>(2 * i - (kGrid - 1)) * (0.5f * kCell),
                    1.0f + static_cast<float>(level) * kCell,
                    static_cast<float>(2 * k - (kGrid - 1)) * (0.5f * kCell)};
        Vec3 jitter{rng.uniform(-kJitter, kJitter), rng.uniform(-kJitter, kJitter),
                    rng.uniform(-kJitter, kJitter)};
        BodyDef body = default_body_def();
        body.position = centre + jitter;
        body.orientation = rng.orientation();
        random_pile_shape(rng, &body.shape);
        scene->bodies.push_back(body);
      }
    }
  }
}

// Four unit-diameter spheres dropped from 2 m, 2 m apart, restitution 0, 0.3, 0.6 and 1, on a
// frictionless plane. The world combines restitution as e = max(eA, eB), so the plane has
// e = 0 and each sphere's own value decides its bounce.
void make_bounce(Scene* scene) {
  constexpr std::array<float, 4> kRestitution = {0.0f, 0.3f, 0.6f, 1.0f};
  scene->def = sized_world_def(16);
  scene->bodies.push_back(static_plane(0, 0));
  for (int i = 0; i < 4; ++i) {
    BodyDef body = sphere_body({static_cast<float>(2 * i - 3), 2.0f, 0}, 0.5f);
    body.shape.friction = 0;
    body.shape.restitution = kRestitution[static_cast<size_t>(i)];
    scene->bodies.push_back(body);
  }
}

// A 12 m x 12 m walled arena with 100 bodies on a jittered 10 x 10 grid (1.1 m cells). The 16
// bodies at rows and columns {1, 3, 6, 8} are spheres owned by players 1-4 (one quadrant each);
// the rest alternate axis-aligned boxes and spheres that nobody owns.
void make_inputs(Scene* scene) {
  constexpr int kGrid = 10;
  constexpr float kCell = 1.1f;
  constexpr float kJitter = 0.05f;
  scene->def = sized_world_def(128);
  scene->bodies.push_back(static_plane(0.5f, 0));
  scene->bodies.push_back(box_body(BodyType::static_body, {6.5f, 1, 0}, {0.5f, 1, 7}, 0.5f));
  scene->bodies.push_back(box_body(BodyType::static_body, {-6.5f, 1, 0}, {0.5f, 1, 7}, 0.5f));
  scene->bodies.push_back(box_body(BodyType::static_body, {0, 1, 6.5f}, {6, 1, 0.5f}, 0.5f));
  scene->bodies.push_back(box_body(BodyType::static_body, {0, 1, -6.5f}, {6, 1, 0.5f}, 0.5f));

  SplitMix64 rng{0x1aa075ull};
  auto is_player_line = [](int v) { return v == 1 || v == 3 || v == 6 || v == 8; };
  for (int row = 0; row < kGrid; ++row) {
    for (int col = 0; col < kGrid; ++col) {
      float x = static_cast<float>(2 * col - (kGrid - 1)) * (0.5f * kCell) +
                rng.uniform(-kJitter, kJitter);
      float z = static_cast<float>(2 * row - (kGrid - 1)) * (0.5f * kCell) +
                rng.uniform(-kJitter, kJitter);
      BodyDef body;
      if (is_player_line(row) && is_player_line(col)) {
        body = sphere_body({x, 0.36f, z}, 0.35f);
        body.owner_player = 1u + (row > 4 ? 2u : 0u) + (col > 4 ? 1u : 0u);
      } else if ((row + col) % 2 == 0) {
        Vec3 half{rng.uniform(0.2f, 0.3f), rng.uniform(0.2f, 0.3f), rng.uniform(0.2f, 0.3f)};
        body = box_body(BodyType::dynamic, {x, half.y + 0.01f, z}, half, 0.5f);
      } else {
        float radius = rng.uniform(0.2f, 0.35f);
        body = sphere_body({x, radius + 0.01f, z}, radius);
      }
      scene->bodies.push_back(body);
    }
  }
}

// Jolt's performance-test pyramid (PyramidTest): a 100 x 2 x 100 m floor and 15 layers of 2 m
// boxes, layer i at y = 1 + 2.5 i holding (15 - i)^2 boxes; 1^2 + ... + 15^2 = 1240 boxes.
void make_pyramid3d(Scene* scene) {
  constexpr int kLayers = 15;
  scene->def = sized_world_def(1241);  // exactly its bodies: nothing spawns
  BodyDef floor = box_body(BodyType::static_body, {0, -1, 0}, {50, 1, 50}, 0.2f);
  scene->bodies.push_back(floor);
  for (int i = 0; i < kLayers; ++i) {
    int offset = (i % 2 == 1) ? 1 : 0;
    float y = 1.0f + 2.5f * static_cast<float>(i);
    for (int j = i / 2; j < kLayers - (i + 1) / 2; ++j) {
      for (int k = i / 2; k < kLayers - (i + 1) / 2; ++k) {
        Vec3 position{static_cast<float>(-15 + 2 * j + offset), y,
                      static_cast<float>(-15 + 2 * k + offset)};
        BodyDef box = box_body(BodyType::dynamic, position, {1, 1, 1}, 0.2f);
        box.shape.density = 1000;
        scene->bodies.push_back(box);
      }
    }
  }
}

}  // namespace

std::span<const std::string_view> builtin_scene_names() {
  return kSceneNames;
}

std::span<const std::string_view> level_scene_names() {
  static constexpr std::array<std::string_view, 2> kLevelSceneNames = {"convex_vs_mesh",
                                                                       "terrain_pile"};
  return kLevelSceneNames;
}

bool make_builtin_scene(std::string_view name, Scene* out) {
  Scene scene;
  scene.name = std::string(name);
  if (name == "pyramid") {
    make_pyramid(&scene);
  } else if (name == "pile") {
    make_pile(&scene);
  } else if (name == "bounce") {
    make_bounce(&scene);
  } else if (name == "inputs") {
    make_inputs(&scene);
  } else if (name == "pyramid3d") {
    make_pyramid3d(&scene);
  } else if (name == "convex_vs_mesh") {
    make_convex_vs_mesh(&scene);
  } else if (name == "terrain_pile") {
    make_terrain_pile(&scene);
  } else {
    return false;
  }
  *out = std::move(scene);
  return true;
}

std::unique_ptr<World> build_world(const Scene& scene, Error* error, size_t* failed_body) {
  auto fail = [error, failed_body](Error e, size_t body) {
    if (error != nullptr) *error = e;
    if (failed_body != nullptr) *failed_body = body;
    return std::unique_ptr<World>{};
  };
  constexpr size_t kWorld = SIZE_MAX;
  if (scene.bodies.size() > scene.def.max_bodies) return fail(Error::capacity_bodies, kWorld);
  Error e = Error::none;
  std::vector<MeshDef> meshes;
  std::vector<HeightfieldDef> heightfields;
  for (const SceneMesh& m : scene.meshes)
    meshes.push_back(MeshDef{m.vertices, m.indices});
  for (const SceneHeightfield& h : scene.heightfields)
    heightfields.push_back(HeightfieldDef{h.heights, h.columns, h.rows, h.spacing_x, h.spacing_z});
  std::unique_ptr<World> world = World::create(scene.def, LevelDef{meshes, heightfields}, &e);
  if (world == nullptr) return fail(e == Error::none ? Error::invalid_argument : e, kWorld);
  for (size_t i = 0; i < scene.bodies.size(); ++i) {
    BodyId id;
    e = world->create_body(scene.bodies[i], &id);
    if (e != Error::none) return fail(e, i);
  }
  for (const StateFieldDef& field : scene.state_fields) {
    e = world->declare_state_field(field);
    if (e != Error::none) return fail(e, kWorld);
  }
  if (error != nullptr) *error = Error::none;
  return world;
}

uint32_t scene_player_count(const Scene& scene) {
  uint32_t players = 0;
  for (const BodyDef& body : scene.bodies) {
    if (body.owner_player > players) players = body.owner_player;
  }
  return players;
}

InputScript make_input_script(const World& world) {
  InputScript script;
  std::vector<BodyId> ids(world.body_count());
  uint32_t count = world.list_bodies(ids);
  if (count < ids.size()) ids.resize(count);
  for (BodyId id : ids) {
    BodyView view;
    if (world.get_body(id, &view) != Error::none) continue;
    if (view.owner_player == 0 || view.type != BodyType::dynamic) continue;
    script.bodies.push_back(id);
    script.owner_players.push_back(view.owner_player);
  }
  return script;
}

uint32_t scripted_inputs(uint64_t seed, uint64_t tick, const InputScript& script,
                         const World& world, std::span<Input> out) {
  uint32_t max_player = 0;
  for (uint32_t owner : script.owner_players)
    max_player = owner > max_player ? owner : max_player;
  const uint64_t period = script.heading_period_ticks == 0 ? 1 : script.heading_period_ticks;
  const uint64_t push_span = 2 * static_cast<uint64_t>(script.max_push) + 1;
  const uint32_t jump_one_in = script.jump_one_in == 0 ? 1 : script.jump_one_in;
  const float arena = script.arena_half_extent_m;

  uint32_t written = 0;
  // Players in increasing order, each player's bodies in slot order: sorted by (player, seq).
  for (uint32_t player = 1; player <= max_player; ++player) {
    uint32_t sequence_in_tick = 0;
    for (size_t i = 0; i < script.bodies.size(); ++i) {
      if (script.owner_players[i] != player) continue;
      BodyView view;
      if (world.get_body(script.bodies[i], &view) != Error::none) continue;
      if (written >= out.size()) return written;
      // The heading holds for `period` ticks; the per-tick key adds jumps and button bits.
      uint64_t body_key = mix64(seed ^ mix64(static_cast<uint64_t>(i) + 1));
      uint64_t heading = mix64(body_key ^ mix64(tick / period));
      uint64_t per_tick = mix64(body_key ^ mix64(tick + 0x7f4a7c15ull));
      int32_t push_x = static_cast<int32_t>(heading % push_span) - script.max_push;
      int32_t push_z = static_cast<int32_t>((heading >> 32) % push_span) - script.max_push;
      // Outside the arena's inner square, the push points back inwards (comparisons only).
      if (view.position.x > arena && push_x > 0) push_x = -push_x;
      if (view.position.x < -arena && push_x < 0) push_x = -push_x;
      if (view.position.z > arena && push_z > 0) push_z = -push_z;
      if (view.position.z < -arena && push_z < 0) push_z = -push_z;

      Input input;
      input.player = player;
      input.sequence = static_cast<uint32_t>(tick) * 256u + sequence_in_tick++;
      input.body = script.bodies[i];
      input.linear_impulse[0] = push_x;
      bool on_floor = view.position.y < script.jump_below_height_m;  // no jumping in mid-air
      input.linear_impulse[1] = (on_floor && per_tick % jump_one_in == 0) ? script.jump : 0;
      input.linear_impulse[2] = push_z;
      input.buttons = static_cast<uint32_t>(per_tick >> 56);
      out[written++] = input;
    }
  }
  return written;
}

}  // namespace lockstep::sim
