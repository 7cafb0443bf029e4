// Gameplay through the tick: velocity inputs (a target linear/angular velocity an input sets at
// the start of the step) checked against closed-form kinematics, their limits and rejections,
// and their place in the state (hash, snapshots, the total input order).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "lockstep/sim/world.h"

namespace {

using lockstep::sim::BodyDef;
using lockstep::sim::BodyId;
using lockstep::sim::BodyType;
using lockstep::sim::BodyView;
using lockstep::sim::Error;
using lockstep::sim::Input;
using lockstep::sim::kInputScaleLog2;
using lockstep::sim::ShapeType;
using lockstep::sim::Vec3;
using lockstep::sim::World;
using lockstep::sim::WorldDef;

constexpr int32_t kOne = 1 << kInputScaleLog2;  // 1 m/s (or rad/s) in input fixed point

std::unique_ptr<World> make_world(const WorldDef& def = lockstep::sim::default_world_def()) {
  Error error = Error::invalid_argument;
  std::unique_ptr<World> world = World::create(def, &error);
  EXPECT_EQ(error, Error::none);
  return world;
}

BodyId add(World& world, const BodyDef& def) {
  BodyId id{};
  EXPECT_EQ(world.create_body(def, &id), Error::none);
  return id;
}

BodyDef capsule_def(BodyType type, Vec3 position, uint32_t owner = 0) {
  BodyDef def = lockstep::sim::default_body_def();
  def.type = type;
  def.position = position;
  def.shape.type = ShapeType::capsule;
  def.shape.radius = 0.4f;
  def.shape.half_height = 0.5f;
  def.owner_player = owner;
  return def;
}

BodyDef ground_def() {
  BodyDef def = lockstep::sim::default_body_def();
  def.type = BodyType::static_body;
  def.shape.type = ShapeType::plane;
  return def;
}

Input steer(uint32_t player, uint32_t sequence, BodyId body, int32_t vx, int32_t vy, int32_t vz) {
  Input in;
  in.player = player;
  in.sequence = sequence;
  in.body = body;
  in.flags = lockstep::sim::input_sets_linear_velocity;
  in.linear_velocity[0] = vx;
  in.linear_velocity[1] = vy;
  in.linear_velocity[2] = vz;
  return in;
}

BodyView view_of(const World& world, BodyId id) {
  BodyView v{};
  EXPECT_EQ(world.get_body(id, &v), Error::none);
  return v;
}

// ---- velocity inputs: kinematics ---------------------------------------------------------------

// A dynamic capsule in free fall steered every tick: the target replaces the velocity before
// gravity, so after each step vx is the target exactly (no force acts along x) and vy is the
// one step of gravity the target's vy = 0 let back in (semi-implicit Euler over the substeps sums
// to g·dt). x advances target·dt a tick: x(N) = x0 + 3·N·dt.
TEST(SimGameplay, DynamicBodyTakesTargetVelocityBeforeGravity) {
  WorldDef def = lockstep::sim::default_world_def();
  def.enable_sleep = false;
  auto world = make_world(def);
  const BodyId body = add(*world, capsule_def(BodyType::dynamic, {0, 50, 0}, 1));
  constexpr int kTicks = 30;
  for (int t = 0; t < kTicks; ++t) {
    ASSERT_EQ(world->queue_input(steer(1, static_cast<uint32_t>(t), body, 3 * kOne, 0, 0)),
              Error::none);
    world->step();
    const BodyView v = view_of(*world, body);
    EXPECT_EQ(v.linear_velocity.x, 3.0f) << "tick " << t;
    EXPECT_NEAR(v.linear_velocity.y, def.gravity.y * def.dt_s, 1e-5f) << "tick " << t;
  }
  const BodyView v = view_of(*world, body);
  EXPECT_NEAR(v.position.x, 3.0f * kTicks * def.dt_s, 1e-4f);
  // From rest, each substep h = dt/n adds g·h to v, then v·h to y: one step falls
  // g·h²·(1 + … + n) = g·dt²·(n + 1)/(2n).
  const float n = static_cast<float>(def.substeps);
  const float fall_per_step = def.gravity.y * def.dt_s * def.dt_s * (n + 1.0f) / (2.0f * n);
  EXPECT_NEAR(v.position.y, 50.0f + kTicks * fall_per_step, 1e-4f);
  EXPECT_EQ(world->last_step_stats().inputs_applied, 1u);
}

// A dynamic capsule resting on the ground, steered: friction pulls against the target within a
// step, so after the step vx is within μ·g·dt of the target (the most friction can take away).
TEST(SimGameplay, DynamicBodyOnGroundMovesNearTarget) {
  auto world = make_world();
  add(*world, ground_def());
  const BodyId body = add(*world, capsule_def(BodyType::dynamic, {0, 0.9f, 0}, 1));
  for (int t = 0; t < 60; ++t)
    world->step();  // settle
  const float x0 = view_of(*world, body).position.x;
  constexpr int kTicks = 60;
  for (int t = 0; t < kTicks; ++t) {
    ASSERT_EQ(world->queue_input(steer(1, static_cast<uint32_t>(t), body, 2 * kOne, 0, 0)),
              Error::none);
    world->step();
    const float vx = view_of(*world, body).linear_velocity.x;
    const float friction_step = 0.5f * 9.81f * world->def().dt_s;
    EXPECT_LE(vx, 2.0f + 1e-5f) << "tick " << t;
    EXPECT_GE(vx, 2.0f - friction_step - 1e-4f) << "tick " << t;
  }
  const float travelled = view_of(*world, body).position.x - x0;
  const float dt = world->def().dt_s;
  EXPECT_LE(travelled, 2.0f * kTicks * dt + 1e-3f);
  EXPECT_GE(travelled, (2.0f - 0.5f * 9.81f * dt) * kTicks * dt - 1e-3f);
}

// A kinematic capsule commanded once keeps the velocity: x(N) = x0 + v·N·dt, no gravity; a target
// angular velocity turns it by ω·N·dt about the axis.
TEST(SimGameplay, KinematicBodyMovesAtTargetVelocity) {
  auto world = make_world();
  const Vec3 p0{1, 2, 3};
  const BodyId body = add(*world, capsule_def(BodyType::kinematic, p0, 2));
  Input in = steer(2, 0, body, kOne, 0, -2 * kOne);
  in.flags |= lockstep::sim::input_sets_angular_velocity;
  in.angular_velocity[1] = kOne / 2;  // 0.5 rad/s about y
  ASSERT_EQ(world->queue_input(in), Error::none);
  constexpr int kTicks = 120;
  for (int t = 0; t < kTicks; ++t)
    world->step();
  const BodyView v = view_of(*world, body);
  const float time = kTicks * world->def().dt_s;
  EXPECT_EQ(v.linear_velocity.x, 1.0f);
  EXPECT_EQ(v.linear_velocity.y, 0.0f);
  EXPECT_EQ(v.linear_velocity.z, -2.0f);
  EXPECT_NEAR(v.position.x, p0.x + 1.0f * time, 1e-4f);
  EXPECT_NEAR(v.position.y, p0.y, 1e-6f);
  EXPECT_NEAR(v.position.z, p0.z - 2.0f * time, 1e-4f);
  const float half_angle = 0.5f * 0.5f * time;
  EXPECT_NEAR(v.orientation.y, std::sin(half_angle), 1e-3f);
  EXPECT_NEAR(v.orientation.w, std::cos(half_angle), 1e-3f);
  EXPECT_NEAR(v.orientation.x, 0.0f, 1e-6f);
  EXPECT_NEAR(v.orientation.z, 0.0f, 1e-6f);

  // A later input with zero target stops it.
  ASSERT_EQ(world->queue_input(steer(2, 1, body, 0, 0, 0)), Error::none);
  world->step();
  const BodyView stopped = view_of(*world, body);
  world->step();
  EXPECT_EQ(view_of(*world, body).position.x, stopped.position.x);
}

// Impulses add on top of the target (a jump while steering): vy = J/m + g·dt.
TEST(SimGameplay, ImpulseAddsToTargetVelocity) {
  WorldDef def = lockstep::sim::default_world_def();
  auto world = make_world(def);
  const BodyId body = add(*world, capsule_def(BodyType::dynamic, {0, 20, 0}));
  Input in = steer(1, 0, body, 0, 0, kOne);
  in.linear_impulse[1] = 100 * kOne;
  ASSERT_EQ(world->queue_input(in), Error::none);
  world->step();
  const BodyView v = view_of(*world, body);
  EXPECT_EQ(v.linear_velocity.z, 1.0f);
  EXPECT_NEAR(v.linear_velocity.y, 100.0f / v.mass_kg + def.gravity.y * def.dt_s, 1e-4f);
}

// ---- velocity inputs: rejections ---------------------------------------------------------------

TEST(SimGameplay, VelocityInputsOutOfRangeOrNotOwnedAreRejectedAndCounted) {
  WorldDef def = lockstep::sim::default_world_def();
  def.max_input_linear_velocity = 4.0f;   // → 4096 in fixed point
  def.max_input_angular_velocity = 0.5f;  // → 512
  auto world = make_world(def);
  const BodyId ground = add(*world, ground_def());
  const BodyId mine = add(*world, capsule_def(BodyType::dynamic, {0, 1, 0}, 7));
  const BodyId platform = add(*world, capsule_def(BodyType::kinematic, {4, 1, 0}, 7));

  auto expect_input = [&](const Input& in, Error want, const char* what) {
    const uint64_t hash = world->state_hash();
    const uint64_t rejected = world->counters().inputs_rejected;
    const uint64_t accepted = world->counters().inputs_accepted;
    EXPECT_EQ(world->queue_input(in), want) << what;
    if (want != Error::none) {
      EXPECT_EQ(world->state_hash(), hash) << what;
      EXPECT_EQ(world->counters().inputs_rejected, rejected + 1) << what;
    } else {
      EXPECT_EQ(world->counters().inputs_accepted, accepted + 1) << what;
    }
  };
  expect_input(steer(7, 1, mine, 4 * kOne + 1, 0, 0), Error::input_out_of_range, "linear > limit");
  expect_input(steer(7, 1, mine, 0, 0, -4 * kOne - 1), Error::input_out_of_range,
               "negative linear > limit");
  expect_input(steer(7, 1, mine, INT32_MIN, 0, 0), Error::input_out_of_range, "INT32_MIN");
  Input spin = steer(7, 1, mine, 0, 0, 0);
  spin.flags |= lockstep::sim::input_sets_angular_velocity;
  spin.angular_velocity[0] = 513;
  expect_input(spin, Error::input_out_of_range, "angular > limit");
  expect_input(steer(8, 1, mine, kOne, 0, 0), Error::invalid_argument, "another player's body");
  expect_input(steer(8, 1, platform, kOne, 0, 0), Error::invalid_argument,
               "another player's kinematic body");
  expect_input(steer(7, 1, ground, kOne, 0, 0), Error::wrong_body_type, "static body");
  Input unknown = steer(7, 1, mine, 0, 0, 0);
  unknown.flags = 4;
  expect_input(unknown, Error::invalid_argument, "unknown flag bit");
  Input unflagged = steer(7, 1, mine, kOne, 0, 0);
  unflagged.flags = 0;
  expect_input(unflagged, Error::invalid_argument, "velocity without its flag");
  Input kinematic_push = steer(7, 1, platform, kOne, 0, 0);
  kinematic_push.linear_impulse[0] = 1;
  expect_input(kinematic_push, Error::wrong_body_type, "impulse on a kinematic body");

  // At the limits: accepted.
  expect_input(steer(7, 1, mine, 4 * kOne, -4 * kOne, 0), Error::none, "linear at limit");
  Input turn = steer(7, 2, platform, 0, 0, 0);
  turn.flags = lockstep::sim::input_sets_angular_velocity;
  turn.angular_velocity[1] = -512;
  expect_input(turn, Error::none, "angular at limit on a kinematic body");
  EXPECT_EQ(world->counters().inputs_rejected, 10u);
  EXPECT_EQ(world->counters().inputs_accepted, 2u);
}

TEST(SimGameplay, InputVelocityLimitsAreValidatedAndFingerprinted) {
  WorldDef def = lockstep::sim::default_world_def();
  const uint64_t print = lockstep::sim::world_def_fingerprint(def);
  def.max_input_linear_velocity = -1;
  EXPECT_EQ(lockstep::sim::validate_world_def(def), Error::invalid_argument);
  def.max_input_linear_velocity = NAN;
  EXPECT_EQ(lockstep::sim::validate_world_def(def), Error::non_finite);
  def = lockstep::sim::default_world_def();
  def.max_input_angular_velocity = 2.0e4f;
  EXPECT_EQ(lockstep::sim::validate_world_def(def), Error::invalid_argument);
  def = lockstep::sim::default_world_def();
  def.max_input_linear_velocity = 50;
  EXPECT_NE(lockstep::sim::world_def_fingerprint(def), print);
  def = lockstep::sim::default_world_def();
  def.max_input_angular_velocity = 50;
  EXPECT_NE(lockstep::sim::world_def_fingerprint(def), print);
}

// ---- velocity inputs: state -------------------------------------------------------------------

TEST(SimGameplay, QueuedVelocityInputsAreStateAndOrdered) {
  auto world = make_world();
  add(*world, ground_def());
  const BodyId body = add(*world, capsule_def(BodyType::dynamic, {0, 0.9f, 0}));
  const BodyId platform = add(*world, capsule_def(BodyType::kinematic, {3, 2, 0}));
  const uint64_t before = world->state_hash();
  ASSERT_EQ(world->queue_input(steer(1, 0, body, kOne, 0, 0)), Error::none);
  const uint64_t one = world->state_hash();
  EXPECT_NE(one, before);

  // The same input with another target hashes differently.
  auto other = make_world();
  add(*other, ground_def());
  add(*other, capsule_def(BodyType::dynamic, {0, 0.9f, 0}));
  add(*other, capsule_def(BodyType::kinematic, {3, 2, 0}));
  ASSERT_EQ(other->queue_input(steer(1, 0, body, kOne + 1, 0, 0)), Error::none);
  EXPECT_NE(other->state_hash(), one);

  // Snapshot with queued velocity inputs: restored, it steps to the same hashes.
  Input turn = steer(3, 0, platform, 0, kOne, 0);
  turn.flags |= lockstep::sim::input_sets_angular_velocity;
  turn.angular_velocity[2] = -kOne;
  ASSERT_EQ(world->queue_input(turn), Error::none);
  std::vector<uint8_t> bytes(world->snapshot_size());
  size_t written = 0;
  ASSERT_EQ(world->save_snapshot(bytes, &written), Error::none);
  auto restored = make_world();
  ASSERT_EQ(restored->restore_snapshot(bytes), Error::none);
  EXPECT_EQ(restored->state_hash(), world->state_hash());
  for (int t = 0; t < 30; ++t) {
    world->step();
    restored->step();
    ASSERT_EQ(restored->state_hash(), world->state_hash()) << "tick " << t;
  }
  EXPECT_EQ(view_of(*restored, platform).linear_velocity.y, 1.0f);

  // The total order sees flags and targets after buttons.
  Input a = steer(1, 0, body, 1, 0, 0);
  Input b = steer(1, 0, body, 2, 0, 0);
  EXPECT_TRUE(lockstep::sim::input_less(a, b));
  EXPECT_FALSE(lockstep::sim::input_less(b, a));
  EXPECT_FALSE(lockstep::sim::input_less(a, a));
  Input plain = a;
  plain.flags = 0;
  plain.linear_velocity[0] = 0;
  EXPECT_TRUE(lockstep::sim::input_less(plain, a));
}

}  // namespace
