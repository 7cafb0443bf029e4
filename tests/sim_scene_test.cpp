// Scenes: the built-in scenes' contents and layouts, building worlds from them, the input
// script, and the text format (exact round trip, and an error naming the line for each kind of
// malformed input).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "collide.h"
#include "field_lists.h"
#include "lockstep/sim/scene.h"
#include "lockstep/sim/testing.h"
#include "lockstep/sim/world.h"
#include "shape.h"

namespace lockstep::sim {
namespace {

bool same_bits(float a, float b) {
  return std::memcmp(&a, &b, sizeof(float)) == 0;
}
bool same_bits(Vec3 a, Vec3 b) {
  return same_bits(a.x, b.x) && same_bits(a.y, b.y) && same_bits(a.z, b.z);
}
bool same_bits(Quat a, Quat b) {
  return same_bits(a.x, b.x) && same_bits(a.y, b.y) && same_bits(a.z, b.z) && same_bits(a.w, b.w);
}

// Bit-for-bit equality of two definitions, every field of their lists (fields.h) compared.
template <class T>
bool same_def(const T& a, const T& b) {
  return testing::first_difference(a, b).empty();
}

Scene builtin(std::string_view name) {
  Scene scene;
  EXPECT_TRUE(make_builtin_scene(name, &scene)) << name;
  return scene;
}

struct Census {
  int dynamic = 0, static_bodies = 0, kinematic = 0;
  int spheres = 0, boxes = 0, capsules = 0, planes = 0;
};

Census census(const Scene& scene) {
  Census c;
  for (const BodyDef& b : scene.bodies) {
    if (b.type == BodyType::dynamic) ++c.dynamic;
    if (b.type == BodyType::static_body) ++c.static_bodies;
    if (b.type == BodyType::kinematic) ++c.kinematic;
    if (b.type != BodyType::dynamic) continue;
    if (b.shape.type == ShapeType::sphere) ++c.spheres;
    if (b.shape.type == ShapeType::box) ++c.boxes;
    if (b.shape.type == ShapeType::capsule) ++c.capsules;
    if (b.shape.type == ShapeType::plane) ++c.planes;
  }
  return c;
}

/// Radius of a sphere about the body's centre that contains its shape.
float enclosing_radius(const ShapeDef& s) {
  switch (s.type) {
    case ShapeType::sphere:
      return s.radius;
    case ShapeType::box:
      return std::sqrt(dot(s.half_extents, s.half_extents));
    case ShapeType::capsule:
      return s.radius + s.half_height;
    case ShapeType::plane:
    case ShapeType::hull:  // no built-in scene has hulls or compounds
    case ShapeType::compound:
    case ShapeType::mesh:  // nor level geometry (level_scene_names)
    case ShapeType::heightfield:
      break;
  }
  return 1e30f;
}

TEST(BuiltinScenes, NamesAreTheFiveScenesAndUnknownNamesFail) {
  std::vector<std::string_view> names(builtin_scene_names().begin(), builtin_scene_names().end());
  EXPECT_EQ(names,
            (std::vector<std::string_view>{"pyramid", "pile", "bounce", "inputs", "pyramid3d"}));
  Scene scene;
  scene.name = "untouched";
  EXPECT_FALSE(make_builtin_scene("cube", &scene));
  EXPECT_FALSE(make_builtin_scene("", &scene));
  EXPECT_EQ(scene.name, "untouched");
  for (std::string_view name : names)
    EXPECT_EQ(builtin(name).name, name);
}

TEST(BuiltinScenes, BodyCountsAsSpecified) {
  Census pyramid = census(builtin("pyramid"));
  EXPECT_EQ(pyramid.dynamic, 210);  // 20 + 19 + ... + 1
  EXPECT_EQ(pyramid.boxes, 210);
  EXPECT_EQ(pyramid.static_bodies, 1);

  Census pile = census(builtin("pile"));
  EXPECT_EQ(pile.dynamic, 1000);
  EXPECT_EQ(pile.static_bodies, 5);  // floor + 4 walls
  // Mixed: each kind drawn with probability 1/3, so far more than 250 of each is expected.
  EXPECT_GT(pile.boxes, 250);
  EXPECT_GT(pile.spheres, 250);
  EXPECT_GT(pile.capsules, 250);
  EXPECT_EQ(pile.boxes + pile.spheres + pile.capsules, 1000);

  Census bounce = census(builtin("bounce"));
  EXPECT_EQ(bounce.dynamic, 4);
  EXPECT_EQ(bounce.spheres, 4);
  EXPECT_EQ(bounce.static_bodies, 1);

  Census inputs = census(builtin("inputs"));
  EXPECT_EQ(inputs.dynamic, 100);

  Census pyramid3d = census(builtin("pyramid3d"));
  EXPECT_EQ(pyramid3d.dynamic, 1240);  // 1² + 2² + ... + 15² = 15·16·31/6
  EXPECT_EQ(pyramid3d.boxes, 1240);
  EXPECT_EQ(pyramid3d.static_bodies, 1);
}

TEST(BuiltinScenes, CapacitiesFitAndDefsAreValid) {
  for (std::string_view name : builtin_scene_names()) {
    Scene scene = builtin(name);
    EXPECT_EQ(validate_world_def(scene.def), Error::none) << name;
    EXPECT_LE(scene.bodies.size(), scene.def.max_bodies) << name;
    for (const BodyDef& b : scene.bodies) {
      ASSERT_EQ(validate_shape(b.shape, lockstep::sim::ShapeLibrary{}), Error::none) << name;
      // Orientations are normalized: |q|² within a few float ulps of 1.
      EXPECT_NEAR(dot(b.orientation, b.orientation), 1.0f, 1e-6f) << name;
    }
  }
}

TEST(BuiltinScenes, PyramidRowsAreCentredWithCentimetreGaps) {
  Scene scene = builtin("pyramid");
  std::vector<std::vector<float>> rows;  // x of the boxes, by row
  for (const BodyDef& b : scene.bodies) {
    if (b.type != BodyType::dynamic) continue;
    EXPECT_TRUE(same_bits(b.shape.half_extents, Vec3{0.5f, 0.5f, 0.5f}));
    // Row r sits at y = 0.51 + 1.01 r (tolerance: float rounding of the product).
    int row = static_cast<int>(std::lround((b.position.y - 0.51f) / 1.01f));
    ASSERT_GE(row, 0);
    ASSERT_LT(row, 20);
    EXPECT_NEAR(b.position.y, 0.51f + 1.01f * static_cast<float>(row), 1e-5f);
    if (rows.size() <= static_cast<size_t>(row)) rows.resize(static_cast<size_t>(row) + 1);
    rows[static_cast<size_t>(row)].push_back(b.position.x);
  }
  ASSERT_EQ(rows.size(), 20u);
  for (size_t r = 0; r < rows.size(); ++r) {
    ASSERT_EQ(rows[r].size(), 20 - r);
    float sum = 0;
    for (size_t j = 0; j + 1 < rows[r].size(); ++j) {
      // Neighbours 1.01 m apart centre to centre: a 1 cm gap (tolerance: rounding at |x| < 10 m).
      EXPECT_NEAR(rows[r][j + 1] - rows[r][j], 1.01f, 1e-5f);
    }
    for (float x : rows[r])
      sum += x;
    EXPECT_NEAR(sum, 0.0f, 1e-4f);  // symmetric about x = 0
  }
}

TEST(BuiltinScenes, Pyramid3dIsJoltsLayout) {
  Scene scene = builtin("pyramid3d");
  const BodyDef& floor = scene.bodies[0];
  EXPECT_EQ(floor.type, BodyType::static_body);
  EXPECT_EQ(floor.shape.type, ShapeType::box);
  EXPECT_TRUE(same_bits(floor.shape.half_extents, Vec3{50, 1, 50}));
  EXPECT_TRUE(same_bits(floor.position, Vec3{0, -1, 0}));

  int per_layer[15] = {};
  bool has_top = false, has_corner_even = false, has_corner_odd = false;
  for (const BodyDef& b : scene.bodies) {
    if (b.type != BodyType::dynamic) continue;
    EXPECT_TRUE(same_bits(b.shape.half_extents, Vec3{1, 1, 1}));
    EXPECT_EQ(b.shape.density, 1000.0f);
    EXPECT_EQ(b.shape.friction, 0.2f);
    // y = 1 + 2.5 i is exact in float for i <= 14.
    float layer_f = (b.position.y - 1.0f) / 2.5f;
    int layer = static_cast<int>(layer_f);
    ASSERT_EQ(static_cast<float>(layer), layer_f);
    ASSERT_GE(layer, 0);
    ASSERT_LT(layer, 15);
    ++per_layer[layer];
    if (b.position == Vec3{-1, 36, -1}) has_top = true;             // i = 14: j = k = 7
    if (b.position == Vec3{-15, 1, -15}) has_corner_even = true;    // i = 0: j = k = 0
    if (b.position == Vec3{-14, 3.5f, -14}) has_corner_odd = true;  // i = 1: j = k = 0, o = 1
  }
  for (int i = 0; i < 15; ++i)
    EXPECT_EQ(per_layer[i], (15 - i) * (15 - i)) << "layer " << i;
  EXPECT_TRUE(has_top);
  EXPECT_TRUE(has_corner_even);
  EXPECT_TRUE(has_corner_odd);
}

TEST(BuiltinScenes, BounceSpheresHaveTheirRestitutions) {
  Scene scene = builtin("bounce");
  // The world combines e = max(eA, eB); the plane's e = 0 lets each sphere's own value show.
  EXPECT_EQ(scene.bodies[0].shape.type, ShapeType::plane);
  EXPECT_EQ(scene.bodies[0].shape.restitution, 0.0f);
  EXPECT_EQ(scene.bodies[0].shape.friction, 0.0f);
  const float expected[4] = {0.0f, 0.3f, 0.6f, 1.0f};
  for (int i = 0; i < 4; ++i) {
    const BodyDef& b = scene.bodies[static_cast<size_t>(i) + 1];
    EXPECT_EQ(b.shape.restitution, expected[i]);
    EXPECT_EQ(b.shape.friction, 0.0f);
    EXPECT_EQ(b.position.y, 2.0f);
    if (i > 0) {  // centres 2 m apart, radius 0.5: never touching
      EXPECT_GE(b.position.x - scene.bodies[static_cast<size_t>(i)].position.x, 1.5f);
    }
  }
}

TEST(BuiltinScenes, InputsSceneHasFourPlayersOfFourBodies) {
  Scene scene = builtin("inputs");
  EXPECT_EQ(scene_player_count(scene), 4u);
  int owned[5] = {};
  for (const BodyDef& b : scene.bodies) {
    ASSERT_LE(b.owner_player, 4u);
    ++owned[b.owner_player];
  }
  for (int p = 1; p <= 4; ++p)
    EXPECT_EQ(owned[p], 4) << "player " << p;
  EXPECT_EQ(scene_player_count(builtin("pile")), 0u);
}

TEST(BuiltinScenes, BuildingIsRepeatableBitForBit) {
  for (std::string_view name : builtin_scene_names()) {
    Scene a = builtin(name), b = builtin(name);
    ASSERT_EQ(a.bodies.size(), b.bodies.size());
    for (size_t i = 0; i < a.bodies.size(); ++i)
      ASSERT_TRUE(same_def(a.bodies[i], b.bodies[i]));
  }
}

// No two bodies (at least one dynamic) start overlapping. Two independent checks: the
// narrowphase with margin 0 (no point deeper than kTouch), and a geometric bound of our own —
// bounding spheres for the rotated shapes of `pile`, world boxes for the axis-aligned scenes.
TEST(BuiltinScenes, NoBodiesStartOverlapping) {
  // pyramid3d's boxes touch face to face (separation exactly 0 in exact arithmetic); allow the
  // narrowphase's float rounding at coordinates up to 50 m.
  constexpr float kTouch = -1e-4f;
  for (std::string_view name : builtin_scene_names()) {
    Scene scene = builtin(name);
    const bool rotated = (name == "pile");
    const size_t n = scene.bodies.size();
    std::vector<Aabb> boxes(n);
    for (size_t i = 0; i < n; ++i) {
      const BodyDef& b = scene.bodies[i];
      boxes[i] = compute_aabb(b.shape, lockstep::sim::ShapeLibrary{},
                              Transform{b.position, b.orientation}, 0.0f);
    }
    int pairs_checked = 0;
    for (size_t i = 0; i < n; ++i) {
      for (size_t j = i + 1; j < n; ++j) {
        const BodyDef& a = scene.bodies[i];
        const BodyDef& b = scene.bodies[j];
        if (a.type != BodyType::dynamic && b.type != BodyType::dynamic) continue;
        if (!overlaps(boxes[i], boxes[j])) continue;
        ++pairs_checked;
        Manifold m;
        collide(a.shape, Transform{a.position, a.orientation}, b.shape,
                Transform{b.position, b.orientation}, lockstep::sim::ShapeLibrary{}, 0.0f, &m);
        for (int k = 0; k < m.count; ++k) {
          ASSERT_GE(m.points[k].separation, kTouch) << name << ": bodies " << i << ", " << j;
        }
        if (a.type != BodyType::dynamic || b.type != BodyType::dynamic) continue;
        if (rotated) {
          float d = length(a.position - b.position);
          ASSERT_GT(d, enclosing_radius(a.shape) + enclosing_radius(b.shape))
              << name << ": bodies " << i << ", " << j;
        } else {
          // Axis-aligned boxes and spheres: the world boxes may touch (pyramid3d) but not
          // overlap by more than rounding in some axis.
          Aabb x = boxes[i], y = boxes[j];
          float depth_x = std::fmin(x.upper.x, y.upper.x) - std::fmax(x.lower.x, y.lower.x);
          float depth_y = std::fmin(x.upper.y, y.upper.y) - std::fmax(x.lower.y, y.lower.y);
          float depth_z = std::fmin(x.upper.z, y.upper.z) - std::fmax(x.lower.z, y.lower.z);
          float depth = std::fmin(depth_x, std::fmin(depth_y, depth_z));
          ASSERT_LE(depth, -kTouch) << name << ": bodies " << i << ", " << j;
        }
      }
    }
    if (name == "pyramid3d") {
      EXPECT_GT(pairs_checked, 1000);  // touching neighbours were seen
    }
  }
}

TEST(BuildWorld, CreatesEveryBodyInOrder) {
  for (std::string_view name : builtin_scene_names()) {
    Scene scene = builtin(name);
    Error e = Error::invalid_argument;
    std::unique_ptr<World> world = build_world(scene, &e);
    ASSERT_NE(world, nullptr) << name << ": " << error_message(e);
    EXPECT_EQ(e, Error::none);
    ASSERT_EQ(world->body_count(), scene.bodies.size()) << name;
    std::vector<BodyId> ids(scene.bodies.size());
    ASSERT_EQ(world->list_bodies(ids), scene.bodies.size());
    for (size_t i = 0; i < ids.size(); ++i) {
      BodyView view;
      ASSERT_EQ(world->get_body(ids[i], &view), Error::none);
      EXPECT_EQ(view.type, scene.bodies[i].type) << name << " body " << i;
      EXPECT_TRUE(same_bits(view.position, scene.bodies[i].position)) << name << " body " << i;
      EXPECT_EQ(view.owner_player, scene.bodies[i].owner_player);
    }
  }
}

TEST(BuildWorld, RefusesScenesThatDoNotFit) {
  Scene scene = builtin("pyramid");
  scene.def.max_bodies = 100;
  Error e = Error::none;
  size_t failed = 0;
  EXPECT_EQ(build_world(scene, &e, &failed), nullptr);
  EXPECT_EQ(e, Error::capacity_bodies);
  EXPECT_EQ(failed, SIZE_MAX);

  scene = builtin("bounce");
  scene.bodies[2].shape.radius = -1;  // refused by create_body
  EXPECT_EQ(build_world(scene, &e, &failed), nullptr);
  EXPECT_NE(e, Error::none);
  EXPECT_EQ(failed, 2u);

  scene = builtin("bounce");
  scene.def.dt_s = 0;
  EXPECT_EQ(build_world(scene, &e, &failed), nullptr);
  EXPECT_EQ(e, Error::invalid_argument);
}

// ---- input script -------------------------------------------------------------------------------

TEST(InputScript, PushesOnlyOwnedBodiesSortedByPlayerWithinLimits) {
  Scene scene = builtin("inputs");
  std::unique_ptr<World> world = build_world(scene);
  ASSERT_NE(world, nullptr);
  InputScript script = make_input_script(*world);
  ASSERT_EQ(script.bodies.size(), 16u);
  std::vector<Input> inputs(64);
  for (uint64_t tick = 0; tick < 90; ++tick) {
    uint32_t count = scripted_inputs(kDefaultInputSeed, tick, script, *world, inputs);
    ASSERT_EQ(count, 16u);
    for (uint32_t i = 0; i < count; ++i) {
      const Input& in = inputs[i];
      BodyView view;
      ASSERT_EQ(world->get_body(in.body, &view), Error::none);
      EXPECT_EQ(view.owner_player, in.player);
      EXPECT_LE(std::abs(in.linear_impulse[0]), script.max_push);
      EXPECT_LE(std::abs(in.linear_impulse[2]), script.max_push);
      EXPECT_TRUE(in.linear_impulse[1] == 0 || in.linear_impulse[1] == script.jump);
      if (i > 0) {
        const Input& prev = inputs[i - 1];
        EXPECT_TRUE(prev.player < in.player ||
                    (prev.player == in.player && prev.sequence < in.sequence));
      }
      EXPECT_EQ(world->queue_input(in), Error::none);
    }
    world->step();
  }
  // A short output span is filled, never overrun.
  std::vector<Input> few(5);
  EXPECT_EQ(scripted_inputs(kDefaultInputSeed, 0, script, *world, few), 5u);
}

TEST(InputScript, SameSeedSameInputsOtherSeedOtherInputs) {
  Scene scene = builtin("inputs");
  std::unique_ptr<World> world = build_world(scene);
  ASSERT_NE(world, nullptr);
  InputScript script = make_input_script(*world);
  std::vector<Input> a(16), b(16), c(16);
  int differing = 0;
  for (uint64_t tick = 0; tick < 60; ++tick) {
    scripted_inputs(7, tick, script, *world, a);
    scripted_inputs(7, tick, script, *world, b);
    scripted_inputs(8, tick, script, *world, c);
    for (size_t i = 0; i < 16; ++i) {
      ASSERT_EQ(std::memcmp(a[i].linear_impulse, b[i].linear_impulse, sizeof(a[i].linear_impulse)),
                0);
      ASSERT_EQ(a[i].buttons, b[i].buttons);
      if (a[i].linear_impulse[0] != c[i].linear_impulse[0]) ++differing;
    }
  }
  EXPECT_GT(differing, 16 * 60 / 2);  // independent draws rarely coincide
}

TEST(InputScript, SimulationWithInputsIsRepeatableAndSeedDependent) {
  auto run = [](uint64_t seed) {
    Scene scene = builtin("inputs");
    std::unique_ptr<World> world = build_world(scene);
    EXPECT_NE(world, nullptr);
    InputScript script = make_input_script(*world);
    std::vector<Input> inputs(scene.def.max_inputs_per_tick);
    for (uint64_t tick = 0; tick < 120; ++tick) {
      uint32_t count = scripted_inputs(seed, world->tick(), script, *world, inputs);
      for (uint32_t i = 0; i < count; ++i)
        EXPECT_EQ(world->queue_input(inputs[i]), Error::none);
      EXPECT_TRUE(world->step().ok());
    }
    return world->state_hash();
  };
  uint64_t first = run(kDefaultInputSeed);
  EXPECT_EQ(first, run(kDefaultInputSeed));
  EXPECT_NE(first, run(kDefaultInputSeed + 1));
}

TEST(InputScript, PushedBodiesStayInTheArena) {
  // Ten seconds of pushing and jumping: nothing is launched over the 2 m walls (inner faces at
  // ±6 m) or through the floor. Jumps only start on the floor, so they cannot stack mid-air.
  Scene scene = builtin("inputs");
  std::unique_ptr<World> world = build_world(scene);
  ASSERT_NE(world, nullptr);
  InputScript script = make_input_script(*world);
  std::vector<Input> inputs(scene.def.max_inputs_per_tick);
  std::vector<BodyId> ids(scene.bodies.size());
  ASSERT_EQ(world->list_bodies(ids), ids.size());
  int jumps = 0;
  for (int tick = 0; tick < 600; ++tick) {
    uint32_t count = scripted_inputs(kDefaultInputSeed, world->tick(), script, *world, inputs);
    for (uint32_t i = 0; i < count; ++i) {
      if (inputs[i].linear_impulse[1] != 0) ++jumps;
      ASSERT_EQ(world->queue_input(inputs[i]), Error::none);
    }
    ASSERT_TRUE(world->step().ok());
  }
  EXPECT_GT(jumps, 10);  // 16 bodies x 600 ticks / 120, fewer while airborne
  for (BodyId id : ids) {
    BodyView v;
    ASSERT_EQ(world->get_body(id, &v), Error::none);
    if (v.type != BodyType::dynamic) continue;
    EXPECT_LT(std::fabs(v.position.x), 6.0f);
    EXPECT_LT(std::fabs(v.position.z), 6.0f);
    EXPECT_GT(v.position.y, 0.0f);
  }
}

// ---- text format --------------------------------------------------------------------------------

TEST(SceneText, RoundTripIsExactForEveryBuiltinScene) {
  for (std::string_view name : builtin_scene_names()) {
    Scene scene = builtin(name);
    std::string text = format_scene_text(scene);
    Scene back;
    std::string error;
    ASSERT_TRUE(parse_scene_text(text, &back, &error)) << name << ": " << error;
    EXPECT_EQ(back.name, scene.name);
    EXPECT_TRUE(same_def(back.def, scene.def)) << name;
    ASSERT_EQ(back.bodies.size(), scene.bodies.size()) << name;
    for (size_t i = 0; i < scene.bodies.size(); ++i) {
      ASSERT_TRUE(same_def(back.bodies[i], scene.bodies[i])) << name << " body " << i;
    }
    EXPECT_EQ(format_scene_text(back), text) << name;
  }
}

TEST(SceneText, RoundTripKeepsAwkwardFloats) {
  Scene scene;
  scene.name = "floats";
  scene.def = default_world_def();
  BodyDef body = default_body_def();
  body.position = {1.0f / 3.0f, -0.0f, 1e-40f};  // a third, negative zero, a subnormal
  body.orientation = normalize(Quat{0.1f, 0.2f, 0.3f, 0.9f});
  body.linear_velocity = {16777217.0f, -1e-7f, 3.4e38f / 1e34f};
  body.angular_velocity = {0.1f, 0.2f, 0.3f};
  body.linear_damping = 0.05f;
  body.angular_damping = 0.1f;
  body.owner_player = 7;
  body.shape.category = 0x80000000u;  // the top bit, written as hex
  body.shape.mask = 0x7ffffffeu;
  body.shape.sensor = true;
  scene.bodies.push_back(body);
  const std::string text = format_scene_text(scene);
  EXPECT_NE(text.find("category=0x80000000 mask=0x7ffffffe"), std::string::npos) << text;
  Scene back;
  std::string error;
  ASSERT_TRUE(parse_scene_text(format_scene_text(scene), &back, &error)) << error;
  ASSERT_EQ(back.bodies.size(), 1u);
  EXPECT_TRUE(same_def(back.bodies[0], body));
  EXPECT_TRUE(std::signbit(back.bodies[0].position.y));
}

TEST(SceneText, ParsesTheDocumentedExample) {
  const char* text =
      "# two boxes on the ground\n"
      "scene name=demo version=1\n"
      "\n"
      "world dt=0.01 gravity=0,-10,0 iterations=4 max_bodies=8   # small world\n"
      "body type=static shape=plane normal=0,1,0 offset=0 friction=0.8\n"
      "body\ttype=dynamic shape=box half=0.5,0.25,0.5 pos=0,1,0 rot=0,0,0,1 vel=1,0,0\r\n"
      "body type=kinematic shape=capsule radius=0.2 half_height=0.3 pos=2,1,0 owner=3 "
      "angvel=0,1,0\n"
      "body type=dynamic shape=sphere radius=0.25 pos=-2,1,0 density=500 restitution=0.5 "
      "linear_damping=0.1 angular_damping=0.2";  // no final newline
  Scene scene;
  std::string error;
  ASSERT_TRUE(parse_scene_text(text, &scene, &error)) << error;
  EXPECT_EQ(scene.name, "demo");
  EXPECT_EQ(scene.def.dt_s, 0.01f);
  EXPECT_TRUE(scene.def.gravity == (Vec3{0, -10, 0}));
  EXPECT_EQ(scene.def.velocity_iterations, 4u);
  EXPECT_EQ(scene.def.max_bodies, 8u);
  // Keys left out keep default_world_def()'s values.
  EXPECT_EQ(scene.def.max_contact_pairs, default_world_def().max_contact_pairs);
  ASSERT_EQ(scene.bodies.size(), 4u);
  EXPECT_EQ(scene.bodies[0].type, BodyType::static_body);
  EXPECT_EQ(scene.bodies[0].shape.type, ShapeType::plane);
  EXPECT_EQ(scene.bodies[0].shape.friction, 0.8f);
  EXPECT_EQ(scene.bodies[1].shape.type, ShapeType::box);
  EXPECT_TRUE(scene.bodies[1].shape.half_extents == (Vec3{0.5f, 0.25f, 0.5f}));
  EXPECT_TRUE(scene.bodies[1].linear_velocity == (Vec3{1, 0, 0}));
  EXPECT_EQ(scene.bodies[2].type, BodyType::kinematic);
  EXPECT_EQ(scene.bodies[2].shape.half_height, 0.3f);
  EXPECT_EQ(scene.bodies[2].owner_player, 3u);
  EXPECT_TRUE(scene.bodies[2].angular_velocity == (Vec3{0, 1, 0}));
  EXPECT_EQ(scene.bodies[3].shape.radius, 0.25f);
  EXPECT_EQ(scene.bodies[3].shape.density, 500.0f);
  EXPECT_EQ(scene.bodies[3].shape.restitution, 0.5f);
  EXPECT_EQ(scene.bodies[3].linear_damping, 0.1f);
  EXPECT_EQ(scene.bodies[3].angular_damping, 0.2f);
  // Defaults of left-out body keys are default_body_def()'s.
  EXPECT_EQ(scene.bodies[3].shape.friction, default_body_def().shape.friction);
  EXPECT_TRUE(same_bits(scene.bodies[3].orientation, Quat{}));

  // An empty text (or only comments) is an empty scene with the default world.
  Scene empty;
  ASSERT_TRUE(parse_scene_text("# nothing\n\n   \n", &empty, &error)) << error;
  EXPECT_TRUE(empty.bodies.empty());
  EXPECT_TRUE(same_def(empty.def, default_world_def()));
}

struct BadCase {
  const char* what;
  std::string body_line;     // placed on line 3, after a comment and a valid line
  const char* must_contain;  // besides "line 3"
};

TEST(SceneText, EachMalformedLineIsNamed) {
  const std::string good = "body type=dynamic shape=sphere radius=0.5 pos=0,1,0\n";
  const BadCase cases[] = {
      {"unknown key", "body type=dynamic shape=sphere radius=1 colour=red", "unknown key 'colour'"},
      {"bad number", "body type=dynamic shape=sphere radius=1.5x", "'1.5x' is not a finite number"},
      {"empty number", "body type=dynamic shape=sphere radius=1 pos=1,,2", "'' is not a finite"},
      {"NaN", "body type=dynamic shape=sphere radius=nan", "'nan' is not a finite number"},
      {"infinity in a vector", "body type=dynamic shape=sphere radius=1 pos=0,inf,0",
       "'inf' is not a finite number"},
      {"overflowing float", "body type=dynamic shape=sphere radius=1e39", "not a finite number"},
      {"missing shape", "body type=dynamic radius=1", "missing key 'shape'"},
      {"missing type", "body shape=sphere radius=1", "missing key 'type'"},
      {"missing box size", "body type=dynamic shape=box pos=0,1,0", "missing key 'half'"},
      {"missing capsule height", "body type=dynamic shape=capsule radius=1",
       "missing key 'half_height'"},
      {"unknown shape", "body type=dynamic shape=cube half=1,1,1",
       "unknown shape 'cube' (expected sphere, box, capsule, plane, hull, compound, mesh, "
       "heightfield)"},
      {"unknown body type", "body type=ghost shape=sphere radius=1",
       "unknown type 'ghost' (expected static, kinematic, dynamic)"},
      {"plane on a dynamic body", "body type=dynamic shape=plane normal=0,1,0",
       "plane shapes are only allowed on static bodies"},
      {"wrong arity (short)", "body type=dynamic shape=sphere radius=1 pos=1,2",
       "key 'pos': needs 3 comma-separated numbers, got 2"},
      {"wrong arity (long)", "body type=dynamic shape=box half=1,1,1,1",
       "key 'half': needs 3 comma-separated numbers, got 4"},
      {"wrong arity (quaternion)", "body type=dynamic shape=sphere radius=1 rot=0,0,1",
       "key 'rot': needs 4 comma-separated numbers, got 3"},
      {"template without a name", "template type=dynamic shape=sphere radius=1",
       "missing key 'name'"},
      {"template with a pose", "template name=crate type=dynamic shape=sphere radius=1 pos=0,1,0",
       "templates take no pose, velocity or owner"},
      {"template with an owner", "template name=crate type=dynamic shape=sphere radius=1 owner=2",
       "templates take no pose, velocity or owner"},
      {"template name with a slash", "template name=a/b type=dynamic shape=sphere radius=1",
       "a name is 1 to 31 bytes"},
      {"template name too long",
       "template name=abcdefghijklmnopqrstuvwxyz0123456 type=dynamic shape=sphere radius=1",
       "a name is 1 to 31 bytes"},
      {"template of unknown shape", "template name=c type=dynamic shape=cube",
       "unknown shape 'cube'"},
      {"key of another shape", "body type=dynamic shape=box half=1,1,1 radius=2",
       "key 'radius' does not apply to shape box"},
      {"duplicate key", "body type=dynamic shape=sphere radius=1 radius=2", "given twice"},
      {"not key=value", "body type=dynamic shape=sphere radius=1 heavy", "expected key=value"},
      {"empty value", "body type=dynamic shape=sphere radius=", "expected key=value"},
      {"unknown directive", "bodies type=dynamic", "unknown directive 'bodies'"},
      {"negative radius", "body type=dynamic shape=sphere radius=-1", "invalid shape sphere"},
      {"restitution above 1", "body type=dynamic shape=sphere radius=1 restitution=2",
       "invalid shape sphere"},
      {"mask with a bad hex digit", "body type=dynamic shape=sphere radius=1 mask=0xfffg",
       "'0xfffg' is not a 32-bit bit set"},
      {"mask of 9 hex digits", "body type=dynamic shape=sphere radius=1 mask=0x1ffffffff",
       "is not a 32-bit bit set"},
      {"negative category", "body type=dynamic shape=sphere radius=1 category=-1",
       "'-1' is not a 32-bit bit set"},
      {"non-unit plane normal", "body type=static shape=plane normal=0,2,0", "invalid shape plane"},
      {"non-unit quaternion", "body type=dynamic shape=sphere radius=1 rot=0,0,0,2",
       "not a unit quaternion"},
      {"far position", "body type=dynamic shape=sphere radius=1 pos=1e6,0,0", "out of range"},
      {"negative damping", "body type=dynamic shape=sphere radius=1 linear_damping=-1", "damping"},
      {"negative owner", "body type=dynamic shape=sphere radius=1 owner=-1",
       "'-1' is not an unsigned 32-bit integer"},
      {"negative capacity", "world max_bodies=-5", "'-5' is not an unsigned 32-bit integer"},
      {"overflowing capacity", "world max_bodies=4294967296", "not an unsigned 32-bit integer"},
      {"fractional count", "world iterations=1.5", "'1.5' is not an unsigned 32-bit integer"},
      {"bad boolean", "world measure_stage_times=yes", "not a boolean"},
      {"invalid world", "world dt=0", "invalid world"},
      // baumgarte was replaced by the soft step's contact_hertz and contact_damping_ratio.
      {"unknown world key", "world gravity=0,-9.81,0 baumgarte=0.2", "unknown key 'baumgarte'"},
      {"unsupported version", "scene version=2", "format version 2 is not supported"},
  };
  for (const BadCase& c : cases) {
    // Line 1: a comment; line 2: a valid body; line 3: the bad line.
    std::string text = "# comment\n" + good + c.body_line + "\n" + good;
    Scene out;
    out.name = "untouched";
    std::string error;
    EXPECT_FALSE(parse_scene_text(text, &out, &error)) << c.what;
    EXPECT_EQ(error.rfind("line 3", 0), 0u) << c.what << ": " << error;
    EXPECT_NE(error.find(c.must_contain), std::string::npos) << c.what << ": " << error;
    EXPECT_EQ(out.name, "untouched") << c.what;  // *out untouched on failure
  }
}

TEST(SceneText, TemplatesRoundTripAndAreChecked) {
  const std::string text =
      "world max_commands_per_tick=9\n"
      "template name=crate type=dynamic shape=box half=0.5,0.25,0.5 density=300 category=0x4\n"
      "template name=goal type=static shape=sphere radius=2 sensor=1\n"
      "body type=static shape=plane normal=0,1,0\n";
  Scene scene;
  std::string error;
  ASSERT_TRUE(parse_scene_text(text, &scene, &error)) << error;
  EXPECT_EQ(scene.def.max_commands_per_tick, 9u);
  ASSERT_EQ(scene.def.template_count, 2u);
  EXPECT_EQ(lockstep::sim::find_template(scene.def, "goal"), 1);
  EXPECT_EQ(scene.def.templates[0].shape.half_extents.y, 0.25f);
  EXPECT_EQ(scene.def.templates[0].shape.category, 4u);
  EXPECT_TRUE(scene.def.templates[1].shape.sensor);
  EXPECT_EQ(scene.def.templates[1].type, BodyType::static_body);
  Scene again;
  ASSERT_TRUE(parse_scene_text(format_scene_text(scene), &again, &error)) << error;
  EXPECT_EQ(lockstep::sim::world_def_fingerprint(again.def),
            lockstep::sim::world_def_fingerprint(scene.def));
  EXPECT_EQ(format_scene_text(again), format_scene_text(scene));

  EXPECT_FALSE(parse_scene_text(text + "template name=goal type=static shape=sphere radius=1\n",
                                &again, &error));
  EXPECT_NE(error.find("line 5"), std::string::npos) << error;
  EXPECT_NE(error.find("a second template named 'goal'"), std::string::npos) << error;
  std::string many;
  for (int i = 0; i <= 16; ++i)
    many += "template name=t" + std::to_string(i) + " type=dynamic shape=sphere radius=1\n";
  EXPECT_FALSE(parse_scene_text(many, &again, &error));
  EXPECT_NE(error.find("line 17: template: more than 16 templates"), std::string::npos) << error;
}

TEST(SceneText, AtLinesScheduleCommandsAndInputs) {
  const std::string head =
      "template name=crate type=dynamic shape=box half=0.5,0.5,0.5\n"
      "body type=static shape=plane normal=0,1,0\n";
  Scene scene;
  std::string error;
  ASSERT_TRUE(parse_scene_text(head + "at tick=5 input player=2 body=1 gen=3 vel=1.5,0,-0.25 "
                                      "impulse=0,2,0 buttons=7\n"
                                      "at tick=2 spawn template=crate pos=0,3,0 vel=0,0,1 owner=4\n"
                                      "at tick=2 destroy body=1 seq=9\n",
                               &scene, &error))
      << error;
  ASSERT_EQ(scene.actions.size(), 3u);
  EXPECT_EQ(scene.actions[0].tick, 2u);  // sorted by tick, file order kept within a tick
  EXPECT_TRUE(scene.actions[0].is_command);
  EXPECT_EQ(scene.actions[0].command.type, lockstep::sim::CommandType::spawn);
  EXPECT_EQ(scene.actions[0].command.position.y, 3.0f);
  EXPECT_EQ(scene.actions[0].command.owner_player, 4u);
  EXPECT_EQ(scene.actions[0].command.sequence, 4u);  // default: its line
  EXPECT_EQ(scene.actions[1].command.type, lockstep::sim::CommandType::destroy);
  EXPECT_EQ(scene.actions[1].command.sequence, 9u);
  const lockstep::sim::Input& in = scene.actions[2].input;
  EXPECT_FALSE(scene.actions[2].is_command);
  EXPECT_EQ(in.player, 2u);
  EXPECT_EQ(in.body, (BodyId{1, 3}));
  EXPECT_EQ(in.flags, lockstep::sim::input_sets_linear_velocity);
  EXPECT_EQ(in.linear_velocity[0], 1536);
  EXPECT_EQ(in.linear_velocity[2], -256);
  EXPECT_EQ(in.linear_impulse[1], 2048);
  EXPECT_EQ(in.buttons, 7u);

  struct Bad {
    const char* line;
    const char* must_contain;
  };
  const Bad bad[] = {
      {"at spawn template=crate", "missing key 'tick'"},
      {"at tick=3 template=crate", "missing key 'do'"},
      {"at tick=0 spawn template=crate", "ticks start at 1"},
      {"at tick=3 spawn template=barrel", "no template named 'barrel'"},
      {"at tick=3 spawn pos=0,1,0", "missing key 'template'"},
      {"at tick=3 spawn template=crate pos=0,nan,0", "not a finite number"},
      {"at tick=3 spawn template=crate pos=0,2e5,0", "invalid spawn"},
      {"at tick=3 spawn template=crate body=2", "unknown key 'body'"},
      {"at tick=3 destroy", "missing key 'body'"},
      {"at tick=3 destroy body=0", "body indices start at 1"},
      {"at tick=3 input body=1 vel=1,0,0", "missing key 'player'"},
      {"at tick=3 input player=1 body=1 vel=0.0001,0,0", "multiples of 1/1024"},
      {"at tick=3 input player=1 body=1 vel=3e6,0,0", "multiples of 1/1024"},
      {"at tick=3 jump player=1", "expected key=value"},
      {"at tick=-1 spawn template=crate", "tick"},
  };
  for (const Bad& b : bad) {
    Scene out;
    EXPECT_FALSE(parse_scene_text(head + b.line + "\n", &out, &error)) << b.line;
    EXPECT_EQ(error.rfind("line 3", 0), 0u) << b.line << ": " << error;
    EXPECT_NE(error.find(b.must_contain), std::string::npos) << b.line << ": " << error;
  }
}

TEST(SceneText, ErrorsGiveTheColumnOfTheOffendingKey) {
  Scene out;
  std::string error;
  EXPECT_FALSE(parse_scene_text("body type=dynamic shape=cube", &out, &error));
  EXPECT_EQ(error.rfind("line 1 col 19: body: unknown shape 'cube'", 0), 0u) << error;
  EXPECT_FALSE(parse_scene_text("world dt=0.01 dt=0.02", &out, &error));
  EXPECT_EQ(error.rfind("line 1 col 15:", 0), 0u) << error;
}

TEST(SceneText, TooManyBodiesForTheWorldIsAnError) {
  Scene out;
  std::string error;
  std::string text = "world max_bodies=1\n";
  text += "body type=dynamic shape=sphere radius=1\nbody type=dynamic shape=sphere radius=1\n";
  EXPECT_FALSE(parse_scene_text(text, &out, &error));
  EXPECT_EQ(error.rfind("line 1: world: max_bodies=1 but the scene has 2 bodies", 0), 0u) << error;
  EXPECT_FALSE(parse_scene_text("world dt=0.01\nworld dt=0.02\n", &out, &error));
  EXPECT_EQ(error.rfind("line 2 col 1: world: a second world line (the first is line 1)", 0), 0u)
      << error;
  EXPECT_FALSE(parse_scene_text("scene name=a\n\nscene name=b\n", &out, &error));
  EXPECT_EQ(error.rfind("line 3 col 1: scene: a second scene line", 0), 0u) << error;
}

}  // namespace
}  // namespace lockstep::sim

namespace lockstep::sim {
namespace {

TEST(SceneText, PlayerSpawnRulesAndNamedBodies) {
  const std::string text =
      "template name=ball type=dynamic shape=sphere radius=0.5 allow_sleep=0\n"
      "body type=static shape=box half=4,0.5,4 name=platform\n"
      "body type=static shape=box half=9,1,9 pos=0,-10,0 sensor=1 name=fall\n"
      "player template=ball\n"
      "spawn pos=1,0.5,0\n"
      "spawn pos=-1,0.5,0 rot=0,1,0,0\n"
      "rules name=sumo\n";
  Scene scene;
  std::string error;
  ASSERT_TRUE(parse_scene_text(text, &scene, &error)) << error;
  EXPECT_EQ(scene.player_template, 0);
  ASSERT_EQ(scene.spawn_points.size(), 2u);
  EXPECT_EQ(scene.spawn_points[1].position.x, -1.0f);
  EXPECT_EQ(scene.spawn_points[1].orientation.y, 1.0f);
  EXPECT_EQ(scene.rules, "sumo");
  EXPECT_EQ(find_scene_body(scene, "fall"), (BodyId{2, 0}));
  EXPECT_EQ(find_scene_body(scene, "platform"), (BodyId{1, 0}));
  EXPECT_TRUE(find_scene_body(scene, "nothing").is_null());
  // The bodies get the handles find_scene_body names.
  auto world = build_world(scene);
  ASSERT_NE(world, nullptr);
  BodyView view;
  ASSERT_EQ(world->get_body(find_scene_body(scene, "fall"), &view), Error::none);
  EXPECT_TRUE(view.shape.sensor);

  Scene again;
  ASSERT_TRUE(parse_scene_text(format_scene_text(scene), &again, &error)) << error;
  EXPECT_EQ(format_scene_text(again), format_scene_text(scene));
  EXPECT_EQ(again.player_template, 0);
  EXPECT_EQ(again.spawn_points.size(), 2u);
  EXPECT_EQ(again.rules, "sumo");
  EXPECT_EQ(find_scene_body(again, "fall"), (BodyId{2, 0}));
}

TEST(SceneText, PlayerSpawnAndRulesLinesAreChecked) {
  const std::string ball = "template name=ball type=dynamic shape=sphere radius=0.5\n";
  const std::string wall = "template name=wall type=static shape=box half=1,1,1\n";
  struct Case {
    std::string text;
    std::string expected;
  };
  const Case cases[] = {
      {ball + "player template=nope\nspawn pos=0,0,0\n",
       "line 2 col 8: player: key 'template': no template named 'nope'"},
      {wall + "player template=wall\nspawn pos=0,0,0\n", "players' bodies must be dynamic"},
      {ball + "player\n", "line 2: player: missing key 'template'"},
      {ball + "player template=ball\n", "line 2: player: the scene has no spawn line"},
      {ball + "spawn pos=0,0,0\n", "line 2: spawn: spawn points need a player line"},
      {ball + "player template=ball\nspawn pos=0,nan,0\n", "line 3 col 7: spawn: key 'pos'"},
      {ball + "player template=ball\nspawn pos=0,1e6,0\n",
       "line 3: spawn: key 'pos' is out of range"},
      {ball + "player template=ball\nspawn pos=0,0,0 rot=0,0,0,2\n", "not a unit quaternion"},
      {ball + "player template=ball\nplayer template=ball\n",
       "line 3 col 1: player: a second player line"},
      {"rules name=a/b\n", "line 1 col 7: rules: key 'name': a name is 1 to 31 bytes"},
      {"rules name=sumo\nrules name=sumo\n", "line 2 col 1: rules: a second rules line"},
      {"rules name=sumo extra=1\n", "rules"},
      {"body type=static shape=box half=1,1,1 name=x\nbody type=static shape=box half=1,1,1 "
       "name=x\n",
       "line 2 col 39: body: key 'name': a second body named 'x'"},
      {"body type=static shape=box half=1,1,1 name=\n", "line 1"},
      {"body type=static shape=box half=1,1,1 name=a#b\n", ""},
  };
  for (const Case& c : cases) {
    Scene scene;
    std::string error;
    if (c.expected.empty()) continue;  // a comment cuts the name: valid
    EXPECT_FALSE(parse_scene_text(c.text, &scene, &error)) << c.text;
    EXPECT_NE(error.find(c.expected), std::string::npos) << c.text << " -> " << error;
  }
}

TEST(SceneText, StateLinesDeclareGameStateFields) {
  const std::string text =
      "state name=round scope=room type=int default=1\n"
      "state name=hill_seconds scope=player type=fixed default=0.5\n"
      "state name=lives scope=player type=int default=-3\n"
      "state name=timer scope=room type=fixed\n";
  Scene scene;
  std::string error;
  ASSERT_TRUE(parse_scene_text(text, &scene, &error)) << error;
  ASSERT_EQ(scene.state_fields.size(), 4u);
  EXPECT_STREQ(scene.state_fields[1].name, "hill_seconds");
  EXPECT_EQ(scene.state_fields[1].scope, lockstep::sim::StateScope::player);
  EXPECT_EQ(scene.state_fields[1].type, lockstep::sim::StateType::fixed);
  EXPECT_EQ(scene.state_fields[1].default_value, 32768);  // 0.5 · 2^16
  EXPECT_EQ(scene.state_fields[2].default_value, -3);
  EXPECT_EQ(scene.state_fields[3].default_value, 0);
  // Round trip, and the world built from it declares them with their defaults.
  Scene back;
  ASSERT_TRUE(parse_scene_text(format_scene_text(scene), &back, &error)) << error;
  ASSERT_EQ(back.state_fields.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_STREQ(back.state_fields[i].name, scene.state_fields[i].name);
    EXPECT_EQ(back.state_fields[i].default_value, scene.state_fields[i].default_value);
    EXPECT_EQ(back.state_fields[i].type, scene.state_fields[i].type);
    EXPECT_EQ(back.state_fields[i].scope, scene.state_fields[i].scope);
  }
  std::unique_ptr<World> world = build_world(scene);
  ASSERT_NE(world, nullptr);
  EXPECT_EQ(world->state_fields().size(), 4u);
  EXPECT_EQ(world->find_state_field("lives"), 2u);
  EXPECT_EQ(world->state(2, 7), -3);
  EXPECT_EQ(world->state(0), 1);

  struct Case {
    std::string text;
    std::string expected;
  };
  const std::string sixteen = [] {
    std::string s;
    for (int i = 0; i < 16; ++i)
      s += "state name=f" + std::to_string(i) + " scope=room type=int\n";
    return s;
  }();
  const Case cases[] = {
      {"state scope=room type=int\n", "line 1: state: missing key 'name'"},
      {"state name=a scope=team type=int\n", "unknown scope 'team' (expected room, player)"},
      {"state name=a scope=room type=float\n", "unknown type 'float' (expected int, fixed)"},
      {"state name=a scope=room\n", "missing key 'type'"},
      {"state name=a type=int\n", "missing key 'scope'"},
      {"state name=score scope=player type=int\n", "'score' is the players' scores"},
      {"state name=a/b scope=room type=int\n", "a name is 1 to 31 bytes"},
      {"state name=a scope=room type=int\nstate name=a scope=player type=int\n",
       "line 2 col 7: state: key 'name': a second state field named 'a'"},
      {"state name=a scope=room type=int default=2147483648\n", "is not a 32-bit integer"},
      {"state name=a scope=room type=int default=1.5\n", "is not a 32-bit integer"},
      {"state name=a scope=room type=fixed default=0.00001\n", "not a multiple of 1/65536"},
      {"state name=a scope=room type=fixed default=40000\n", "not a multiple of 1/65536"},
      {"state name=a scope=room type=int colour=red\n", "unknown key 'colour'"},
      {sixteen + "state name=g scope=room type=int\n", "line 17: state: more than 16 state fields"},
  };
  for (const Case& c : cases) {
    Scene bad;
    EXPECT_FALSE(parse_scene_text(c.text, &bad, &error)) << c.text;
    EXPECT_NE(error.find(c.expected), std::string::npos) << c.text << " -> " << error;
  }
  EXPECT_TRUE(parse_scene_text(sixteen, &scene, &error)) << error;
}

}  // namespace
}  // namespace lockstep::sim
