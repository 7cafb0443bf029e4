// Bullet bodies: time of impact against static bodies (time_of_impact.cpp; the sweep_bullets stage
// of step.cpp).
//
// Without the flag a dynamic body is caught by its speculative contacts as long as it moves less
// than WorldDef::max_speculative_margin_m (1 m) a step; a 5 cm projectile at 200 m/s moves 3.3 m
// a step and passes a 10 cm wall. With the flag it must stop at the wall's near face on every
// platform, whatever the phase of the step at which it arrives, and a bullet resting or sliding
// on a floor must not be held back by it.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "lockstep/sim/scene.h"
#include "lockstep/sim/world.h"
#include "time_of_impact.h"

namespace {

using lockstep::sim::BodyDef;
using lockstep::sim::BodyId;
using lockstep::sim::BodyType;
using lockstep::sim::BodyView;
using lockstep::sim::Error;
using lockstep::sim::ShapeDef;
using lockstep::sim::ShapeType;
using lockstep::sim::Vec3;
using lockstep::sim::World;

constexpr float kDt = 1.0f / 60.0f;

struct Shot {
  bool passed = false;  // the centre got beyond the wall's far face
  float min_x = 0, max_x = 0;
  uint32_t impacts = 0;  // StepStats::bullet_impacts summed
};

// A sphere of radius 0.05 m flies along +x at `speed` (no gravity) at a static box 0.1 m thick
// (x in [−0.05, 0.05], 4 m square), starting `offset` of a step's travel short of 3 m away.
Shot fire(float speed, bool bullet, float offset) {
  lockstep::sim::WorldDef def = lockstep::sim::default_world_def();
  def.gravity = Vec3{0, 0, 0};
  std::unique_ptr<World> world = World::create(def);
  BodyDef wall = lockstep::sim::default_body_def();
  wall.type = BodyType::static_body;
  wall.shape.type = ShapeType::box;
  wall.shape.half_extents = {0.05f, 2, 2};
  BodyId wall_id;
  EXPECT_EQ(world->create_body(wall, &wall_id), Error::none);
  BodyDef ball = lockstep::sim::default_body_def();
  ball.shape.radius = 0.05f;
  ball.position = {-3.0f - offset * speed * kDt, 0, 0};
  ball.linear_velocity = {speed, 0, 0};
  ball.bullet = bullet;
  BodyId id;
  EXPECT_EQ(world->create_body(ball, &id), Error::none);
  Shot shot;
  shot.min_x = shot.max_x = ball.position.x;
  for (int tick = 0; tick < 60; ++tick) {
    world->step();
    shot.impacts += world->last_step_stats().bullet_impacts;
    BodyView v;
    EXPECT_EQ(world->get_body(id, &v), Error::none);
    shot.max_x = v.position.x > shot.max_x ? v.position.x : shot.max_x;
    shot.min_x = v.position.x < shot.min_x ? v.position.x : shot.min_x;
    if (v.position.x > 0.05f) shot.passed = true;
  }
  return shot;
}

TEST(SimBullet, FastProjectileStopsAtAThinWall) {
  for (float speed : {120.0f, 200.0f, 400.0f}) {
    for (float offset : {0.0f, 0.25f, 0.5f, 0.75f}) {
      SCOPED_TRACE(testing::Message() << speed << " m/s, offset " << offset);
      const Shot shot = fire(speed, true, offset);
      EXPECT_FALSE(shot.passed);
      // It never gets past the near face (x = −0.05) by more than its radius plus the
      // tolerance of the sweep (the linear slop, 5 mm): centre ≤ −0.05 − 0.05 + 0.005.
      EXPECT_LE(shot.max_x, -0.095f);
      EXPECT_GE(shot.impacts, 1u);
    }
  }
}

TEST(SimBullet, WithoutTheFlagTheSameShotPassesThrough) {
  // The reason for the flag: the speculative margin is bounded (1 m) and 200 m/s is 3.3 m a step.
  const Shot shot = fire(200.0f, false, 0.0f);
  EXPECT_TRUE(shot.passed);
  EXPECT_EQ(shot.impacts, 0u);
}

TEST(SimBullet, ABulletSlidingOnTheFloorIsNotHeldBack) {
  // Touching the floor from the start is the contacts' business: the sweep must not pin it.
  std::unique_ptr<World> world = World::create(lockstep::sim::default_world_def());
  BodyDef floor = lockstep::sim::default_body_def();
  floor.type = BodyType::static_body;
  floor.shape.type = ShapeType::box;
  floor.shape.half_extents = {50, 0.5f, 50};
  floor.position = {0, -0.5f, 0};
  BodyId floor_id;
  ASSERT_EQ(world->create_body(floor, &floor_id), Error::none);
  BodyDef box = lockstep::sim::default_body_def();
  box.shape.type = ShapeType::box;
  box.shape.half_extents = {0.1f, 0.1f, 0.1f};
  box.shape.friction = 0.0f;
  box.position = {0, 0.1f, 0};
  box.linear_velocity = {10, 0, 0};
  box.bullet = true;
  BodyId id;
  ASSERT_EQ(world->create_body(box, &id), Error::none);
  uint32_t impacts = 0;
  for (int tick = 0; tick < 60; ++tick) {
    world->step();
    impacts += world->last_step_stats().bullet_impacts;
  }
  BodyView v;
  ASSERT_EQ(world->get_body(id, &v), Error::none);
  // Frictionless: 10 m/s for 1 s (combined μ = sqrt(0 · 0.5) = 0). 1 cm: the soft contact's
  // vertical settling moves nothing along x.
  EXPECT_NEAR(v.position.x, 10.0f, 0.01f);
  EXPECT_EQ(impacts, 0u);
}

TEST(SimBullet, TimeOfImpactOfASphereAtABoxIsTheAnalyticOne) {
  // A sphere of radius 0.1 from x = −2 to x = +2 towards a box face at x = −0.5: first contact
  // within the target 1 mm when the centre is at −0.6 (±1 mm), i.e. t = 1.4/4 = 0.35.
  ShapeDef sphere;
  sphere.type = ShapeType::sphere;
  sphere.radius = 0.1f;
  ShapeDef box;
  box.type = ShapeType::box;
  box.half_extents = {0.5f, 0.5f, 0.5f};
  const float t = lockstep::sim::time_of_impact(sphere, {-2, 0, 0}, {2, 0, 0}, {}, box,
                                                lockstep::sim::Transform{{0, 0, 0}, {}},
                                                lockstep::sim::ShapeLibrary{}, 0.001f);
  EXPECT_GE(t, (1.4f - 0.001f) / 4.0f);
  EXPECT_LE(t, 1.4f / 4.0f + 1e-6f);
  // Missing the box (passing 1 m above it): no hit.
  EXPECT_EQ(lockstep::sim::time_of_impact(sphere, {-2, 1.0f, 0}, {2, 1.0f, 0}, {}, box,
                                          lockstep::sim::Transform{{0, 0, 0}, {}},
                                          lockstep::sim::ShapeLibrary{}, 0.001f),
            1.0f);
}

TEST(SimBullet, TheFlagIsStateAndTravelsInSceneText) {
  auto make = [](bool bullet) {
    std::unique_ptr<World> world = World::create(lockstep::sim::default_world_def());
    BodyDef ball = lockstep::sim::default_body_def();
    ball.bullet = bullet;
    BodyId id;
    EXPECT_EQ(world->create_body(ball, &id), Error::none);
    BodyView v;
    EXPECT_EQ(world->get_body(id, &v), Error::none);
    EXPECT_EQ(v.bullet, bullet);
    return world;
  };
  // The flag changes future steps, so it is part of the hash (and of snapshots).
  EXPECT_NE(make(true)->state_hash(), make(false)->state_hash());
  std::unique_ptr<World> source = make(true);
  std::vector<uint8_t> snapshot(source->max_snapshot_size());
  size_t written = 0;
  ASSERT_EQ(source->save_snapshot(snapshot, &written), Error::none);
  std::unique_ptr<World> copy = make(false);
  ASSERT_EQ(copy->restore_snapshot({snapshot.data(), written}), Error::none);
  EXPECT_EQ(copy->state_hash(), source->state_hash());

  lockstep::sim::Scene scene;
  scene.def = lockstep::sim::default_world_def();
  BodyDef ball = lockstep::sim::default_body_def();
  ball.bullet = true;
  scene.bodies.push_back(ball);
  const std::string text = lockstep::sim::format_scene_text(scene);
  EXPECT_NE(text.find("bullet=1"), std::string::npos) << text;
  lockstep::sim::Scene back;
  std::string error;
  ASSERT_TRUE(lockstep::sim::parse_scene_text(text, &back, &error)) << error;
  ASSERT_EQ(back.bodies.size(), 1u);
  EXPECT_TRUE(back.bodies[0].bullet);
}

}  // namespace
