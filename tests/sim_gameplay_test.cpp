// Gameplay through the tick: velocity inputs (a target linear/angular velocity an input sets at
// the start of the step) checked against closed-form kinematics, their limits and rejections,
// and their place in the state (hash, snapshots, the total input order).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
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

// ---- commands and templates --------------------------------------------------------------------

using lockstep::sim::Command;
using lockstep::sim::CommandResult;
using lockstep::sim::CommandType;

WorldDef template_def() {
  WorldDef def = lockstep::sim::default_world_def();
  def.template_count = 2;
  EXPECT_TRUE(lockstep::sim::set_template_name(&def.templates[0], "crate"));
  def.templates[0].shape.type = ShapeType::box;
  def.templates[0].shape.half_extents = {0.5f, 0.5f, 0.5f};
  def.templates[0].shape.category = 4;
  EXPECT_TRUE(lockstep::sim::set_template_name(&def.templates[1], "goal"));
  def.templates[1].type = BodyType::static_body;
  def.templates[1].shape.sensor = true;
  def.templates[1].shape.radius = 2.0f;
  return def;
}

Command spawn(uint32_t sequence, uint32_t template_index, Vec3 position, uint32_t owner = 0) {
  Command c;
  c.type = CommandType::spawn;
  c.sequence = sequence;
  c.template_index = template_index;
  c.position = position;
  c.owner_player = owner;
  return c;
}

Command destroy(uint32_t sequence, BodyId body) {
  Command c;
  c.type = CommandType::destroy;
  c.sequence = sequence;
  c.body = body;
  return c;
}

TEST(SimGameplay, SpawnTakesTheTemplateAndTheCommandsPose) {
  auto world = make_world(template_def());
  EXPECT_EQ(lockstep::sim::find_template(world->def(), "goal"), 1);
  EXPECT_EQ(lockstep::sim::find_template(world->def(), "nope"), -1);
  Command c = spawn(1, 0, {1, 5, 2}, 3);
  c.linear_velocity = {0, 0, 4};
  ASSERT_EQ(world->queue_command(c), Error::none);
  EXPECT_EQ(world->body_count(), 0u);  // applied by the step, not now
  world->step();
  ASSERT_EQ(world->command_results().size(), 1u);
  const CommandResult r = world->command_results()[0];
  EXPECT_EQ(r.error, Error::none);
  EXPECT_EQ(r.body, (BodyId{1, 0}));
  const BodyView v = view_of(*world, r.body);
  EXPECT_EQ(v.type, BodyType::dynamic);
  EXPECT_EQ(v.shape.type, ShapeType::box);
  EXPECT_EQ(v.shape.category, 4u);
  EXPECT_EQ(v.owner_player, 3u);
  EXPECT_NEAR(v.mass_kg, 1000.0f, 1e-2f);  // 1 m³ at the default density
  EXPECT_NEAR(v.position.z, 2.0f + 4.0f * world->def().dt_s, 1e-5f);
  EXPECT_EQ(world->last_step_stats().commands_applied, 1u);
}

// World::step(TickInput) queues commands, then inputs. Queuing the inputs first (what the sync
// tester's re-simulation did) gives the same world every tick, and each refusal is reported in
// its own place.
TEST(SimGameplay, ATickAppliesItsCommandsAndInputsInEitherQueueOrder) {
  auto a = make_world(template_def());
  auto b = make_world(template_def());
  const BodyId ball_a = add(*a, capsule_def(BodyType::dynamic, {0, 1, 0}, 1));
  const BodyId ball_b = add(*b, capsule_def(BodyType::dynamic, {0, 1, 0}, 1));
  ASSERT_EQ(ball_a, ball_b);
  for (uint32_t tick = 1; tick <= 30; ++tick) {
    std::vector<Command> commands = {spawn(tick, 0, {static_cast<float>(tick % 3), 4, 0})};
    if (tick == 10) commands.push_back(destroy(100, ball_a));
    std::vector<Input> inputs = {steer(1, tick, ball_a, kOne, 0, 0)};
    inputs.push_back(steer(2, tick, ball_a, kOne, 0, 0));  // not player 2's body: refused
    std::vector<Error> command_errors(commands.size(), Error::invalid_argument);
    std::vector<Error> input_errors(inputs.size(), Error::invalid_argument);
    a->step(lockstep::sim::TickInput{commands, inputs},
            lockstep::sim::TickErrors{command_errors, input_errors});
    for (const Input& in : inputs)
      b->queue_input(in);
    for (const Command& c : commands)
      b->queue_command(c);
    b->step();
    ASSERT_EQ(a->state_hash(), b->state_hash()) << "tick " << tick;
    for (const Error e : command_errors)
      EXPECT_EQ(e, Error::none) << "tick " << tick;
    // The ball is destroyed by tick 10's step, so from tick 11 its inputs are stale.
    EXPECT_EQ(input_errors[0], tick <= 10 ? Error::none : Error::stale_handle) << "tick " << tick;
    EXPECT_EQ(input_errors[1], tick <= 10 ? Error::invalid_argument : Error::stale_handle);
  }
}

// Two worlds fed the same commands, queued in different call orders, make the same handles and
// hashes every tick: the step applies them in command_less order.
TEST(SimGameplay, SameCommandsGiveSameHandlesInTwoWorlds) {
  auto a = make_world(template_def());
  auto b = make_world(template_def());
  std::vector<BodyId> spawned;
  for (uint32_t tick = 0; tick < 40; ++tick) {
    std::vector<Command> commands;
    commands.push_back(spawn(tick * 3 + 0, 0, {static_cast<float>(tick % 5), 3, 0}));
    if (tick % 4 == 0) commands.push_back(spawn(tick * 3 + 1, 1, {0, 0, 10}));
    if (tick >= 5 && tick % 2 == 1) {
      const BodyId victim = spawned[(tick * 7) % spawned.size()];
      if (a->is_alive(victim)) commands.push_back(destroy(tick * 3 + 2, victim));
    }
    for (const Command& c : commands)
      ASSERT_EQ(a->queue_command(c), Error::none);
    for (size_t i = commands.size(); i-- > 0;)
      ASSERT_EQ(b->queue_command(commands[i]), Error::none);
    ASSERT_EQ(a->state_hash(), b->state_hash()) << "queued, tick " << tick;
    a->step();
    b->step();
    ASSERT_EQ(a->command_results().size(), b->command_results().size());
    for (size_t i = 0; i < a->command_results().size(); ++i) {
      const CommandResult ra = a->command_results()[i], rb = b->command_results()[i];
      EXPECT_EQ(ra.sequence, rb.sequence);
      EXPECT_EQ(ra.body, rb.body);
      EXPECT_EQ(ra.error, Error::none);
      if (ra.type == CommandType::spawn) spawned.push_back(ra.body);
      if (i > 0) {
        EXPECT_LT(a->command_results()[i - 1].sequence, ra.sequence);
      }
    }
    ASSERT_EQ(a->state_hash(), b->state_hash()) << "tick " << tick;
  }
  EXPECT_GT(a->body_count(), 20u);
  // A destroyed slot is reused by the next spawn, with a bumped generation.
  EXPECT_GT(a->counters().commands_accepted, 40u);
}

TEST(SimGameplay, QueuedCommandsAreStateAndRestoreFromSnapshots) {
  auto world = make_world(template_def());
  ASSERT_EQ(world->queue_command(spawn(1, 0, {0, 3, 0})), Error::none);
  world->step();
  const BodyId crate = world->command_results()[0].body;
  const uint64_t before = world->state_hash();
  ASSERT_EQ(world->queue_command(spawn(2, 0, {2, 3, 0})), Error::none);
  ASSERT_EQ(world->queue_command(destroy(3, crate)), Error::none);
  EXPECT_NE(world->state_hash(), before);  // queued commands are hashed
  std::vector<uint8_t> bytes(world->snapshot_size());
  size_t written = 0;
  ASSERT_EQ(world->save_snapshot(bytes, &written), Error::none);
  auto restored = make_world(template_def());
  ASSERT_EQ(restored->restore_snapshot(bytes), Error::none);
  EXPECT_EQ(restored->state_hash(), world->state_hash());
  for (int t = 0; t < 20; ++t) {
    world->step();
    restored->step();
    ASSERT_EQ(restored->state_hash(), world->state_hash()) << "tick " << t;
  }
  EXPECT_FALSE(restored->is_alive(crate));
  EXPECT_EQ(restored->body_count(), 1u);

  // A snapshot from a world with other templates is refused: templates are fingerprinted.
  WorldDef other = template_def();
  other.templates[0].shape.half_extents.x = 0.25f;
  EXPECT_NE(lockstep::sim::world_def_fingerprint(other),
            lockstep::sim::world_def_fingerprint(template_def()));
  auto mismatch = make_world(other);
  EXPECT_EQ(mismatch->restore_snapshot(bytes), Error::snapshot_mismatch);
}

TEST(SimGameplay, BadCommandsAndFullCapacityAreRejectedAndCounted) {
  WorldDef def = template_def();
  def.max_commands_per_tick = 2;
  def.max_bodies = 3;
  auto world = make_world(def);
  auto expect_command = [&](const Command& c, Error want, const char* what) {
    const uint64_t hash = world->state_hash();
    const uint64_t rejected = world->counters().commands_rejected;
    EXPECT_EQ(world->queue_command(c), want) << what;
    if (want != Error::none) {
      EXPECT_EQ(world->state_hash(), hash) << what;
      EXPECT_EQ(world->counters().commands_rejected, rejected + 1) << what;
    }
  };
  expect_command(spawn(1, 2, {0, 1, 0}), Error::unknown_template, "unknown template");
  expect_command(spawn(1, 0, {NAN, 1, 0}), Error::non_finite, "NaN position");
  expect_command(spawn(1, 0, {2e5f, 1, 0}), Error::invalid_argument, "position out of range");
  Command zero_rotation = spawn(1, 0, {0, 1, 0});
  zero_rotation.orientation = {0, 0, 0, 0};
  expect_command(zero_rotation, Error::invalid_argument, "zero quaternion");
  Command moving_static = spawn(1, 1, {0, 1, 0});
  moving_static.linear_velocity = {1, 0, 0};
  expect_command(moving_static, Error::wrong_body_type, "static template with a velocity");
  Command fast = spawn(1, 0, {0, 1, 0});
  fast.linear_velocity = {1e4f, 0, 0};
  expect_command(fast, Error::invalid_argument, "faster than max_linear_speed");
  expect_command(destroy(1, BodyId{}), Error::null_handle, "destroy null");
  expect_command(destroy(1, BodyId{2, 0}), Error::stale_handle, "destroy never-existing");
  // Capacity: two per tick.
  expect_command(spawn(1, 0, {0, 1, 0}), Error::none, "first");
  expect_command(spawn(2, 0, {2, 1, 0}), Error::none, "second");
  expect_command(spawn(3, 0, {4, 1, 0}), Error::capacity_commands, "third: capacity full");
  EXPECT_EQ(world->counters().commands_rejected, 9u);
  world->step();
  // Bodies full when applied: the spawn fails deterministically and is counted.
  expect_command(spawn(4, 0, {6, 1, 0}), Error::none, "third body");
  expect_command(spawn(5, 0, {8, 1, 0}), Error::none, "fourth body: no slot when applied");
  world->step();
  ASSERT_EQ(world->command_results().size(), 2u);
  EXPECT_EQ(world->command_results()[0].error, Error::none);
  EXPECT_EQ(world->command_results()[1].error, Error::capacity_bodies);
  EXPECT_TRUE(world->command_results()[1].body.is_null());
  EXPECT_EQ(world->last_step_stats().commands_failed, 1u);
  EXPECT_EQ(world->counters().commands_failed, 1u);
  EXPECT_EQ(world->body_count(), 3u);
}

TEST(SimGameplay, DestroyOfADeadBodyIsRejected) {
  auto world = make_world(template_def());
  ASSERT_EQ(world->queue_command(spawn(1, 0, {0, 3, 0})), Error::none);
  world->step();
  const BodyId crate = world->command_results()[0].body;
  // Two destroys of one body in one tick: the second fails when applied.
  ASSERT_EQ(world->queue_command(destroy(1, crate)), Error::none);
  ASSERT_EQ(world->queue_command(destroy(2, crate)), Error::none);
  world->step();
  ASSERT_EQ(world->command_results().size(), 2u);
  EXPECT_EQ(world->command_results()[0].error, Error::none);
  EXPECT_EQ(world->command_results()[1].error, Error::stale_handle);
  EXPECT_FALSE(world->is_alive(crate));
  // Once dead, queueing a destroy is refused.
  const uint64_t rejected = world->counters().commands_rejected;
  EXPECT_EQ(world->queue_command(destroy(3, crate)), Error::stale_handle);
  EXPECT_EQ(world->counters().commands_rejected, rejected + 1);
}

TEST(SimGameplay, TemplatesAreValidated) {
  WorldDef def = template_def();
  EXPECT_EQ(lockstep::sim::validate_world_def(def), Error::none);
  def.template_count = lockstep::sim::kMaxBodyTemplates + 1;
  EXPECT_EQ(lockstep::sim::validate_world_def(def), Error::invalid_argument);
  def = template_def();
  ASSERT_TRUE(lockstep::sim::set_template_name(&def.templates[1], "crate"));
  EXPECT_EQ(lockstep::sim::validate_world_def(def), Error::invalid_argument) << "duplicate name";
  def = template_def();
  def.templates[0].name[0] = '\0';
  EXPECT_EQ(lockstep::sim::validate_world_def(def), Error::invalid_argument) << "empty name";
  def = template_def();
  def.templates[0].shape.type = ShapeType::plane;
  EXPECT_EQ(lockstep::sim::validate_world_def(def), Error::wrong_body_type) << "dynamic plane";
  def = template_def();
  def.templates[0].shape.radius = -1;
  def.templates[0].shape.type = ShapeType::sphere;
  EXPECT_NE(lockstep::sim::validate_world_def(def), Error::none) << "negative radius";
  BodyDef unused;
  (void)unused;
  lockstep::sim::BodyTemplate t;
  EXPECT_FALSE(lockstep::sim::set_template_name(&t, ""));
  EXPECT_FALSE(lockstep::sim::set_template_name(&t, "has space"));
  EXPECT_FALSE(lockstep::sim::set_template_name(&t, std::string(32, 'a')));
  EXPECT_TRUE(lockstep::sim::set_template_name(&t, std::string(31, 'a')));
}

}  // namespace

namespace {

lockstep::sim::Command add_score(uint32_t sequence, uint32_t player, int32_t delta) {
  lockstep::sim::Command c;
  c.type = lockstep::sim::CommandType::add_score;
  c.sequence = sequence;
  c.owner_player = player;
  c.score_delta = delta;
  return c;
}

}  // namespace

TEST(SimGameplay, AddScoreChangesHashedScoresThatSnapshotsKeep) {
  auto world = make_world();
  EXPECT_EQ(world->score(1), 0);
  const uint64_t empty = world->state_hash();
  ASSERT_EQ(world->queue_command(add_score(1, 2, 3)), Error::none);
  ASSERT_EQ(world->queue_command(add_score(2, 2, -1)), Error::none);
  ASSERT_EQ(world->queue_command(add_score(3, 1024, 7)), Error::none);
  EXPECT_NE(world->state_hash(), empty);  // queued, so hashed
  EXPECT_EQ(world->score(2), 0);          // applied by the step, not by queueing
  world->step();
  EXPECT_EQ(world->score(2), 2);
  EXPECT_EQ(world->score(1024), 7);
  EXPECT_EQ(world->score(1), 0);
  EXPECT_EQ(world->score(0), 0);     // no such player
  EXPECT_EQ(world->score(1025), 0);  // no such player
  ASSERT_EQ(world->command_results().size(), 3u);
  EXPECT_EQ(world->command_results()[0].error, Error::none);
  EXPECT_EQ(world->last_step_stats().commands_applied, 3u);

  // The scores are state: two worlds differing only in a score hash differently, and a snapshot
  // carries them into a fresh world that keeps stepping in step.
  auto other = make_world();
  ASSERT_EQ(other->queue_command(add_score(1, 2, 3)), Error::none);
  other->step();
  EXPECT_NE(other->state_hash(), world->state_hash());
  std::vector<uint8_t> bytes(world->snapshot_size());
  size_t written = 0;
  ASSERT_EQ(world->save_snapshot(bytes, &written), Error::none);
  auto restored = make_world();
  ASSERT_EQ(restored->restore_snapshot(bytes), Error::none);
  EXPECT_EQ(restored->score(2), 2);
  EXPECT_EQ(restored->score(1024), 7);
  EXPECT_EQ(restored->state_hash(), world->state_hash());
  ASSERT_EQ(world->queue_command(add_score(1, 3, 1)), Error::none);
  ASSERT_EQ(restored->queue_command(add_score(1, 3, 1)), Error::none);
  world->step();
  restored->step();
  EXPECT_EQ(restored->state_hash(), world->state_hash());

  // Restoring a snapshot without scores clears them.
  auto blank = make_world();
  std::vector<uint8_t> blank_bytes(blank->snapshot_size());
  ASSERT_EQ(blank->save_snapshot(blank_bytes, &written), Error::none);
  ASSERT_EQ(restored->restore_snapshot(blank_bytes), Error::none);
  EXPECT_EQ(restored->score(2), 0);
}

TEST(SimGameplay, AddScoreSaturatesAndRejectsBadPlayers) {
  auto world = make_world();
  EXPECT_EQ(world->queue_command(add_score(1, 0, 1)), Error::unknown_player);
  EXPECT_EQ(world->queue_command(add_score(1, lockstep::sim::kMaxPlayers + 1, 1)),
            Error::unknown_player);
  EXPECT_EQ(world->counters().commands_rejected, 2u);
  EXPECT_STREQ(lockstep::sim::error_message(Error::unknown_player),
               "a player index outside 1..kMaxPlayers");
  ASSERT_EQ(world->queue_command(add_score(1, 1, INT32_MAX)), Error::none);
  ASSERT_EQ(world->queue_command(add_score(2, 1, INT32_MAX)), Error::none);
  ASSERT_EQ(world->queue_command(add_score(3, 2, INT32_MIN)), Error::none);
  ASSERT_EQ(world->queue_command(add_score(4, 2, -5)), Error::none);
  world->step();
  EXPECT_EQ(world->score(1), INT32_MAX);
  EXPECT_EQ(world->score(2), INT32_MIN);
}

TEST(SimGameplay, SnapshotWithNonCanonicalScoresIsRefused) {
  auto world = make_world();
  ASSERT_EQ(world->queue_command(add_score(1, 2, 5)), Error::none);
  world->step();
  std::vector<uint8_t> bytes(world->snapshot_size());
  size_t written = 0;
  ASSERT_EQ(world->save_snapshot(bytes, &written), Error::none);
  // The tail is: u32 count (2), i32 score of player 1 (0), i32 of player 2 (5), u64 checksum.
  const size_t count_at = written - 8 - 12;
  ASSERT_EQ(bytes[count_at], 2u);
  std::vector<uint8_t> bad = bytes;
  bad[count_at] = 0xff;  // 255 scores announced: beyond the bytes
  EXPECT_NE(make_world()->restore_snapshot(bad), Error::none);
  // Every truncation is refused, never read past.
  for (size_t n = 0; n < written; n += 7)
    EXPECT_NE(make_world()->restore_snapshot({bytes.data(), n}), Error::none) << n;
}

namespace {

using lockstep::sim::Command;
using lockstep::sim::CommandType;
using lockstep::sim::Quat;

Command body_command(CommandType type, uint32_t sequence, BodyId body) {
  Command c;
  c.type = type;
  c.sequence = sequence;
  c.body = body;
  return c;
}

WorldDef no_gravity() {
  WorldDef def = lockstep::sim::default_world_def();
  def.gravity = Vec3{};
  return def;
}

}  // namespace

// Rules move bodies through commands: each body command does what its type says at the start of
// its step, and a respawn keeps the body's handle.
TEST(SimGameplay, BodyCommandsMoveBodiesAtTheStartOfTheirStep) {
  auto world = make_world(no_gravity());
  BodyDef ball = lockstep::sim::default_body_def();
  ball.allow_sleep = false;
  const BodyId a = add(*world, ball);
  ball.position = Vec3{10, 0, 0};
  const BodyId b = add(*world, ball);
  BodyDef platform = lockstep::sim::default_body_def();
  platform.type = BodyType::kinematic;
  platform.shape.type = ShapeType::box;
  platform.position = Vec3{0, -10, 0};
  const BodyId k = add(*world, platform);
  const float dt = world->def().dt_s;
  const float mass = view_of(*world, a).mass_kg;

  Command pose = body_command(CommandType::set_pose, 1, a);
  pose.position = Vec3{0, 5, 0};
  pose.orientation = Quat{0, 0, 0, 2};  // normalized when applied
  Command velocity = body_command(CommandType::set_velocity, 2, b);
  velocity.linear_velocity = Vec3{0, 0, 3};
  Command impulse = body_command(CommandType::apply_impulse, 3, b);
  impulse.linear_velocity = Vec3{mass * 2.0f, 0, 0};  // +2 m/s along x
  Command target = body_command(CommandType::move_kinematic, 4, k);
  target.position = Vec3{0.5f, -10, 0};
  const uint64_t before = world->state_hash();
  for (const Command& c : {pose, velocity, impulse, target})
    ASSERT_EQ(world->queue_command(c), Error::none) << lockstep::sim::command_type_name(c.type);
  EXPECT_NE(world->state_hash(), before);          // queued, so hashed
  EXPECT_EQ(view_of(*world, a).position.y, 0.0f);  // applied by the step, not by queueing
  world->step();
  ASSERT_EQ(world->command_results().size(), 4u);
  for (const auto& result : world->command_results())
    EXPECT_EQ(result.error, Error::none) << lockstep::sim::command_type_name(result.type);
  EXPECT_EQ(world->command_results()[0].body, a);
  EXPECT_EQ(view_of(*world, a).position.y, 5.0f);
  EXPECT_EQ(view_of(*world, a).orientation.w, 1.0f);
  // set_velocity, then the impulse on top (command_less: the issuer's sequence first).
  const BodyView vb = view_of(*world, b);
  EXPECT_NEAR(vb.linear_velocity.x, 2.0f, 1e-5f);
  EXPECT_NEAR(vb.linear_velocity.z, 3.0f, 1e-5f);
  EXPECT_NEAR(vb.position.z, 3.0f * dt, 1e-5f);
  // The kinematic body reached its target in one step.
  EXPECT_NEAR(view_of(*world, k).position.x, 0.5f, 1e-4f);
  EXPECT_NEAR(view_of(*world, k).linear_velocity.x, 0.5f / dt, 1e-2f);

  // Respawn: a new pose and velocity, the same handle.
  Command respawn = body_command(CommandType::respawn, 5, b);
  respawn.position = Vec3{-4, 1, 0};
  respawn.linear_velocity = Vec3{0, 1, 0};
  ASSERT_EQ(world->queue_command(respawn), Error::none);
  world->step();
  EXPECT_EQ(world->command_results()[0].error, Error::none);
  EXPECT_TRUE(world->is_alive(b));
  const BodyView vr = view_of(*world, b);
  EXPECT_NEAR(vr.position.x, -4.0f, 1e-5f);
  EXPECT_NEAR(vr.position.y, 1.0f + dt, 1e-5f);
  EXPECT_EQ(vr.linear_velocity.x, 0.0f);
  EXPECT_EQ(world->body_count(), 3u);
}

TEST(SimGameplay, BodyCommandsRefuseBadBodiesAndValues) {
  auto world = make_world();
  const BodyId dynamic = add(*world, lockstep::sim::default_body_def());
  BodyDef def = lockstep::sim::default_body_def();
  def.type = BodyType::static_body;
  def.position = Vec3{5, 0, 0};
  const BodyId fixed = add(*world, def);
  def.type = BodyType::kinematic;
  def.position = Vec3{-5, 0, 0};
  const BodyId kinematic = add(*world, def);

  EXPECT_EQ(world->queue_command(body_command(CommandType::set_pose, 1, BodyId{})),
            Error::null_handle);
  EXPECT_EQ(world->queue_command(body_command(CommandType::set_pose, 1, BodyId{9, 1})),
            Error::stale_handle);
  EXPECT_EQ(world->queue_command(body_command(CommandType::set_pose, 1, fixed)),
            Error::wrong_body_type);
  EXPECT_EQ(world->queue_command(body_command(CommandType::apply_impulse, 1, kinematic)),
            Error::wrong_body_type);
  EXPECT_EQ(world->queue_command(body_command(CommandType::move_kinematic, 1, dynamic)),
            Error::wrong_body_type);
  Command c = body_command(CommandType::set_velocity, 1, dynamic);
  c.linear_velocity.x = std::nanf("");
  EXPECT_EQ(world->queue_command(c), Error::non_finite);
  c.linear_velocity.x = 1.0e6f;  // beyond max_linear_speed
  EXPECT_EQ(world->queue_command(c), Error::invalid_argument);
  c = body_command(CommandType::apply_impulse, 1, dynamic);
  c.angular_velocity.y = 2.0e4f;  // beyond max_input_angular_impulse
  EXPECT_EQ(world->queue_command(c), Error::input_out_of_range);
  c = body_command(CommandType::respawn, 1, dynamic);
  c.orientation = Quat{0, 0, 0, 0};
  EXPECT_EQ(world->queue_command(c), Error::invalid_argument);
  c.orientation = Quat{};
  c.position.y = 1.0e7f;  // beyond the world's coordinates
  EXPECT_EQ(world->queue_command(c), Error::invalid_argument);
  // A target the kinematic body could only reach beyond max_linear_speed fails when applied.
  c = body_command(CommandType::move_kinematic, 1, kinematic);
  c.position = Vec3{-5 + 100, 0, 0};
  ASSERT_EQ(world->queue_command(c), Error::none);
  // A body destroyed by an earlier command of the same tick: its later command fails.
  Command destroy = body_command(CommandType::destroy, 2, dynamic);
  Command late = body_command(CommandType::set_velocity, 3, dynamic);
  ASSERT_EQ(world->queue_command(destroy), Error::none);
  ASSERT_EQ(world->queue_command(late), Error::none);
  const uint64_t rejected = world->counters().commands_rejected;
  EXPECT_EQ(rejected, 10u);
  world->step();
  ASSERT_EQ(world->command_results().size(), 3u);
  EXPECT_EQ(world->command_results()[0].error, Error::invalid_argument);
  EXPECT_EQ(world->command_results()[1].error, Error::none);
  EXPECT_EQ(world->command_results()[2].error, Error::stale_handle);
  EXPECT_EQ(world->last_step_stats().commands_failed, 2u);
  EXPECT_NEAR(view_of(*world, kinematic).position.x, -5.0f, 1e-6f);  // unmoved
}

// Queued body commands are state: a snapshot carries them into a fresh world that then steps to
// the same hash.
TEST(SimGameplay, QueuedBodyCommandsTravelInSnapshots) {
  auto world = make_world();
  BodyDef def = lockstep::sim::default_body_def();
  const BodyId ball = add(*world, def);
  def.type = BodyType::kinematic;
  def.position = Vec3{3, 0, 0};
  const BodyId platform = add(*world, def);
  world->step();
  Command respawn = body_command(CommandType::respawn, 1, ball);
  respawn.position = Vec3{0, 4, 0};
  respawn.angular_velocity = Vec3{0, 1, 0};
  Command move = body_command(CommandType::move_kinematic, 2, platform);
  move.position = Vec3{3, 0.1f, 0};
  move.orientation = Quat{0, 0.0087265f, 0, 0.9999619f};  // 1° about y
  Command push = body_command(CommandType::apply_impulse, 3, ball);
  push.linear_velocity = Vec3{10, 0, 0};
  for (const Command& c : {respawn, move, push})
    ASSERT_EQ(world->queue_command(c), Error::none);
  std::vector<uint8_t> bytes(world->snapshot_size());
  size_t written = 0;
  ASSERT_EQ(world->save_snapshot(bytes, &written), Error::none);
  auto restored = make_world();
  ASSERT_EQ(restored->restore_snapshot({bytes.data(), written}), Error::none);
  EXPECT_EQ(restored->state_hash(), world->state_hash());
  for (int i = 0; i < 10; ++i) {
    world->step();
    restored->step();
    ASSERT_EQ(restored->state_hash(), world->state_hash()) << i;
  }
  EXPECT_GT(view_of(*world, platform).angular_velocity.y, 0.0f);
}

namespace {

using lockstep::sim::StateFieldDef;
using lockstep::sim::StateScope;
using lockstep::sim::StateType;

StateFieldDef state_field(const char* name, StateScope scope, StateType type, int32_t value) {
  StateFieldDef f;
  std::strncpy(f.name, name, lockstep::sim::kMaxStateNameBytes);
  f.scope = scope;
  f.type = type;
  f.default_value = value;
  return f;
}

Command state_command(CommandType type, uint32_t sequence, uint32_t field, uint32_t player,
                      int32_t value) {
  Command c;
  c.type = type;
  c.sequence = sequence;
  c.template_index = field;
  c.owner_player = player;
  c.score_delta = value;
  return c;
}

}  // namespace

// Game state: declared fields, changed only by commands in the tick, hashed, and carried by
// snapshots (declarations included) into a world that had none, as a joining client's has.
TEST(SimGameplay, GameStateIsChangedByCommandsHashedAndInSnapshots) {
  auto world = make_world();
  const uint64_t bare = world->state_hash();
  ASSERT_EQ(world->declare_state_field(state_field("round", StateScope::room, StateType::int32, 1)),
            Error::none);
  ASSERT_EQ(
      world->declare_state_field(state_field("hill", StateScope::player, StateType::fixed, 0)),
      Error::none);
  EXPECT_NE(world->state_hash(), bare);  // declarations are state
  EXPECT_EQ(world->find_state_field("hill"), 1u);
  EXPECT_EQ(world->find_state_field("score"), lockstep::sim::kScoreStateField);
  EXPECT_EQ(world->find_state_field("nothing"), lockstep::sim::kNoStateField);
  EXPECT_EQ(world->state(0), 1);

  ASSERT_EQ(world->queue_command(state_command(CommandType::set_state, 1, 0, 0, 3)), Error::none);
  ASSERT_EQ(world->queue_command(state_command(CommandType::add_state, 2, 1, 2, 1 << 15)),
            Error::none);
  ASSERT_EQ(world->queue_command(state_command(CommandType::add_state, 3, 1, 2, 1 << 16)),
            Error::none);
  ASSERT_EQ(world->queue_command(
                state_command(CommandType::add_state, 4, lockstep::sim::kScoreStateField, 3, 5)),
            Error::none);
  EXPECT_EQ(world->state(0), 1);  // applied by the step
  world->step();
  EXPECT_EQ(world->state(0), 3);
  EXPECT_EQ(world->state(1, 2), 3 << 15);
  EXPECT_EQ(lockstep::sim::fixed_state_value(world->state(1, 2)), 1.5);
  EXPECT_EQ(world->state(1, 1), 0);
  EXPECT_EQ(world->score(3), 5);  // the score field is add_score's
  EXPECT_EQ(world->state(lockstep::sim::kScoreStateField, 3), 5);

  // A fresh world without declarations takes them, and the values, from the snapshot.
  std::vector<uint8_t> bytes(world->max_snapshot_size());
  size_t written = 0;
  ASSERT_EQ(world->save_snapshot(bytes, &written), Error::none);
  auto client = make_world();
  ASSERT_EQ(client->restore_snapshot({bytes.data(), written}), Error::none);
  EXPECT_EQ(client->state_hash(), world->state_hash());
  ASSERT_EQ(client->state_fields().size(), 2u);
  EXPECT_EQ(client->state(1, 2), 3 << 15);
  for (auto* w : {world.get(), client.get()})
    ASSERT_EQ(w->queue_command(state_command(CommandType::set_state, 1, 1, 64, -7)), Error::none);
  world->step();
  client->step();
  EXPECT_EQ(client->state_hash(), world->state_hash());
  EXPECT_EQ(client->state(1, 64), -7);
  // Two worlds differing in one value hash differently.
  ASSERT_EQ(client->queue_command(state_command(CommandType::add_state, 1, 0, 0, 1)), Error::none);
  client->step();
  world->step();
  EXPECT_NE(client->state_hash(), world->state_hash());

  // A snapshot of a world without game state clears it.
  auto blank = make_world();
  std::vector<uint8_t> blank_bytes(blank->snapshot_size());
  ASSERT_EQ(blank->save_snapshot(blank_bytes, &written), Error::none);
  ASSERT_EQ(client->restore_snapshot(blank_bytes), Error::none);
  EXPECT_TRUE(client->state_fields().empty());
  EXPECT_EQ(client->state_hash(), blank->state_hash());
  // Every truncation of a snapshot with game state is refused, never read past.
  for (size_t n = 0; n < written; n += 5)
    EXPECT_NE(make_world()->restore_snapshot({bytes.data(), n}), Error::none) << n;
}

TEST(SimGameplay, GameStateRefusesUnknownFieldsPlayersAndDeclarations) {
  auto world = make_world();
  ASSERT_EQ(world->declare_state_field(state_field("king", StateScope::room, StateType::int32, 0)),
            Error::none);
  ASSERT_EQ(
      world->declare_state_field(state_field("lives", StateScope::player, StateType::int32, 3)),
      Error::none);
  // Declarations: repeated, reserved or bad names; beyond the capacity.
  EXPECT_EQ(world->declare_state_field(state_field("king", StateScope::room, StateType::int32, 0)),
            Error::capacity_state_fields);
  EXPECT_EQ(world->declare_state_field(state_field("score", StateScope::room, StateType::int32, 0)),
            Error::capacity_state_fields);
  EXPECT_EQ(world->declare_state_field(state_field("a b", StateScope::room, StateType::int32, 0)),
            Error::capacity_state_fields);
  EXPECT_EQ(world->declare_state_field(state_field("", StateScope::room, StateType::int32, 0)),
            Error::capacity_state_fields);
  StateFieldDef bad_scope = state_field("x", StateScope::room, StateType::int32, 0);
  bad_scope.scope = static_cast<StateScope>(7);
  EXPECT_EQ(world->declare_state_field(bad_scope), Error::invalid_argument);
  for (uint32_t i = 2; i < lockstep::sim::kMaxStateFields; ++i) {
    const std::string name = "f" + std::to_string(i);
    ASSERT_EQ(world->declare_state_field(
                  state_field(name.c_str(), StateScope::room, StateType::int32, 0)),
              Error::none);
  }
  EXPECT_EQ(world->declare_state_field(state_field("full", StateScope::room, StateType::int32, 0)),
            Error::capacity_state_fields);

  // Commands: an undeclared field, a player on a room field, a player beyond the player range.
  EXPECT_EQ(world->queue_command(state_command(CommandType::set_state, 1, 16 + 1, 0, 1)),
            Error::unknown_state_field);
  auto small = make_world();
  EXPECT_EQ(small->queue_command(state_command(CommandType::set_state, 1, 0, 0, 1)),
            Error::unknown_state_field);
  EXPECT_EQ(world->queue_command(state_command(CommandType::set_state, 1, 0, 1, 1)),
            Error::unknown_player);
  EXPECT_EQ(world->queue_command(state_command(CommandType::set_state, 1, 1, 0, 1)),
            Error::unknown_player);
  EXPECT_EQ(world->queue_command(state_command(CommandType::set_state, 1, 1, 65, 1)),
            Error::unknown_player);
  EXPECT_EQ(world->queue_command(
                state_command(CommandType::add_state, 1, lockstep::sim::kScoreStateField, 0, 1)),
            Error::unknown_player);
  // add_state saturates.
  ASSERT_EQ(world->queue_command(state_command(CommandType::add_state, 1, 1, 4, INT32_MAX)),
            Error::none);
  world->step();
  EXPECT_EQ(world->state(1, 4), INT32_MAX);
  EXPECT_EQ(world->state(1, 5), 3);
  EXPECT_STREQ(lockstep::sim::error_message(Error::unknown_state_field),
               "a game state command names a field the world has not declared");
}

// Game events ride the tick as emit_event commands: the step that applies them lists them in
// World::game_events() (in command order), the next step forgets them, and they are not state.
TEST(SimGameplay, EmitEventCommandsAreListedByTheirStep) {
  auto world = make_world();
  Command took_hill = state_command(CommandType::emit_event, 2, 7, 3, 1);
  Command round_over = state_command(CommandType::emit_event, 1, 9, 0, -4);
  ASSERT_EQ(world->queue_command(took_hill), Error::none);
  ASSERT_EQ(world->queue_command(round_over), Error::none);
  EXPECT_EQ(world->queue_command(
                state_command(CommandType::emit_event, 3, 1, lockstep::sim::kMaxPlayers + 1, 0)),
            Error::unknown_player);
  EXPECT_TRUE(world->game_events().empty());
  auto twin = make_world();
  twin->step();
  world->step();
  ASSERT_EQ(world->game_events().size(), 2u);
  EXPECT_EQ(world->game_events()[0].type, 9u);
  EXPECT_EQ(world->game_events()[0].value, -4);
  EXPECT_EQ(world->game_events()[1].type, 7u);
  EXPECT_EQ(world->game_events()[1].player, 3u);
  EXPECT_EQ(world->game_events()[1].sequence, 2u);
  EXPECT_EQ(world->state_hash(), twin->state_hash());  // events change no state
  world->step();
  EXPECT_TRUE(world->game_events().empty());
}
