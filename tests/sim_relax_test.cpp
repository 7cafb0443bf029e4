// Relax iterations (world.cpp): passes without the Baumgarte bias after the positions are
// integrated, so the bias velocity that pushes an overlap apart is not carried into the next
// step. Also the WorldDef field's validation, fingerprint and scene-text key.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>

#include "lockstep/sim/scene.h"
#include "lockstep/sim/world.h"

namespace lockstep::sim {
namespace {

// A 1 m cube 3 cm into a static ground box, at rest, no gravity: only the bias moves it.
// Returns the cube's upward velocity and height gain after one step.
struct OneStep {
  float velocity_m_s = 0;
  float rise_m = 0;
};

OneStep overlap_step(uint32_t relax_iterations) {
  WorldDef def = default_world_def();
  def.gravity = Vec3{0, 0, 0};
  def.relax_iterations = relax_iterations;
  Error error = Error::none;
  std::unique_ptr<World> world = World::create(def, &error);
  EXPECT_EQ(error, Error::none);
  if (!world) return {};
  BodyDef ground = default_body_def();
  ground.type = BodyType::static_body;
  ground.shape.type = ShapeType::box;
  ground.shape.half_extents = {5, 0.5f, 5};
  ground.position = {0, -0.5f, 0};
  BodyId id{};
  EXPECT_EQ(world->create_body(ground, &id), Error::none);
  BodyDef cube = default_body_def();
  cube.shape.type = ShapeType::box;
  cube.shape.half_extents = {0.5f, 0.5f, 0.5f};
  cube.position = {0, 0.47f, 0};
  EXPECT_EQ(world->create_body(cube, &id), Error::none);
  world->step();
  BodyView v{};
  EXPECT_EQ(world->get_body(id, &v), Error::none);
  return {v.linear_velocity.y, v.position.y - 0.47f};
}

TEST(SimRelax, RelaxRemovesTheBiasVelocityButKeepsTheCorrection) {
  // Bias target: baumgarte/dt · (depth − slop) = 0.2 · 60 · (0.03 − 0.005) = 0.3 m/s.
  const float bias = 0.2f * 60.0f * (0.03f - 0.005f);
  const OneStep biased = overlap_step(0);
  const OneStep relaxed = overlap_step(4);
  // Without relax the cube leaves the step with the bias velocity (1 %: iterative solve).
  EXPECT_NEAR(biased.velocity_m_s, bias, 0.01f * bias);
  // With relax the position moved just as much (the same biased solve came first: 1e-6 m is
  // rounding of one integration) ...
  EXPECT_NEAR(relaxed.rise_m, bias / 60.0f, 0.01f * bias / 60.0f);
  EXPECT_NEAR(relaxed.rise_m, biased.rise_m, 1.0e-6f);
  // ... but the velocity carried on is back to ~0 (1 mm/s: a few relax sweeps of one contact).
  EXPECT_NEAR(relaxed.velocity_m_s, 0.0f, 1.0e-3f);
}

TEST(SimRelax, FieldIsValidatedFingerprintedAndInSceneText) {
  WorldDef def = default_world_def();
  EXPECT_EQ(def.relax_iterations, 4u);
  def.relax_iterations = 0;
  EXPECT_EQ(validate_world_def(def), Error::none);
  def.relax_iterations = 256;
  EXPECT_EQ(validate_world_def(def), Error::none);
  const uint64_t fp256 = world_def_fingerprint(def);
  def.relax_iterations = 257;
  EXPECT_EQ(validate_world_def(def), Error::invalid_argument);
  def.relax_iterations = 3;
  EXPECT_NE(world_def_fingerprint(def), fp256);
  EXPECT_NE(world_def_fingerprint(def), world_def_fingerprint(default_world_def()));

  Scene scene;
  ASSERT_TRUE(make_builtin_scene("bounce", &scene));
  scene.def.relax_iterations = 3;
  const std::string text = format_scene_text(scene);
  EXPECT_NE(text.find("relax_iterations=3"), std::string::npos);
  Scene back;
  std::string error;
  ASSERT_TRUE(parse_scene_text(text, &back, &error)) << error;
  EXPECT_EQ(back.def.relax_iterations, 3u);
}

}  // namespace
}  // namespace lockstep::sim
