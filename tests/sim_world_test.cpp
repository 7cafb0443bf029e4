// World API: handles, argument validation, inputs, capacity overflow, events, WorldDef checks.
//
// Every rejection test also checks that the state hash did not move: a rejected call must leave
// the simulated state exactly as it was.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "broadphase.h"
#include "lockstep/sim/testing.h"
#include "lockstep/sim/world.h"
#include "shape.h"
#include "solver/contact_solver.h"
#include "world_data.h"

namespace {

using lockstep::sim::BodyDef;
using lockstep::sim::BodyId;
using lockstep::sim::BodyType;
using lockstep::sim::BodyView;
using lockstep::sim::ContactEvent;
using lockstep::sim::ContactEventType;
using lockstep::sim::Error;
using lockstep::sim::Input;
using lockstep::sim::kStepStageCount;
using lockstep::sim::Quat;
using lockstep::sim::ShapeType;
using lockstep::sim::step_stage_name;
using lockstep::sim::StepStage;
using lockstep::sim::StepStatus;
using lockstep::sim::Vec3;
using lockstep::sim::World;
using lockstep::sim::WorldDef;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

std::unique_ptr<World> make_world(const WorldDef& def = lockstep::sim::default_world_def()) {
  Error error = Error::invalid_argument;
  std::unique_ptr<World> world = World::create(def, &error);
  EXPECT_EQ(error, Error::none);
  EXPECT_NE(world, nullptr);
  return world;
}

BodyDef ground_def() {
  BodyDef def = lockstep::sim::default_body_def();
  def.type = BodyType::static_body;
  def.shape.type = ShapeType::plane;
  def.shape.plane_normal = Vec3{0, 1, 0};
  def.shape.plane_offset = 0;
  return def;
}

BodyDef sphere_def(Vec3 position, float radius = 0.5f) {
  BodyDef def = lockstep::sim::default_body_def();
  def.type = BodyType::dynamic;
  def.position = position;
  def.shape.type = ShapeType::sphere;
  def.shape.radius = radius;
  return def;
}

BodyId add(World& world, const BodyDef& def) {
  BodyId id{};
  EXPECT_EQ(world.create_body(def, &id), Error::none);
  return id;
}

// ---- handles ------------------------------------------------------------------------------------

TEST(SimWorld, HandlesAreSlotPlusOneAndGeneration) {
  auto world = make_world();
  BodyId a = add(*world, sphere_def({0, 1, 0}));
  BodyId b = add(*world, sphere_def({2, 1, 0}));
  BodyId c = add(*world, sphere_def({4, 1, 0}));
  EXPECT_EQ(a, (BodyId{1, 0}));
  EXPECT_EQ(b, (BodyId{2, 0}));
  EXPECT_EQ(c, (BodyId{3, 0}));
  EXPECT_EQ(world->body_count(), 3u);

  // Destroy the middle one: its handle goes stale, the slot is reused with a new generation.
  EXPECT_EQ(world->destroy_body(b), Error::none);
  EXPECT_FALSE(world->is_alive(b));
  EXPECT_EQ(world->body_count(), 2u);
  BodyView view{};
  EXPECT_EQ(world->get_body(b, &view), Error::stale_handle);
  EXPECT_EQ(world->destroy_body(b), Error::stale_handle);
  EXPECT_EQ(world->set_linear_velocity(b, {1, 0, 0}), Error::stale_handle);

  BodyId d = add(*world, sphere_def({2, 3, 0}));
  EXPECT_EQ(d, (BodyId{2, 1}));  // lowest free slot, bumped generation
  EXPECT_TRUE(world->is_alive(d));
  EXPECT_FALSE(world->is_alive(b));  // the old handle stays stale after reuse
  EXPECT_EQ(world->get_body(b, &view), Error::stale_handle);
  ASSERT_EQ(world->get_body(d, &view), Error::none);
  EXPECT_EQ(view.position.y, 3.0f);

  // Next creation takes the next never-used slot.
  EXPECT_EQ(add(*world, sphere_def({6, 1, 0})), (BodyId{4, 0}));

  // Null and never-existing handles.
  EXPECT_EQ(world->get_body(BodyId{}, &view), Error::null_handle);
  EXPECT_EQ(world->destroy_body(BodyId{}), Error::null_handle);
  EXPECT_EQ(world->get_body(BodyId{99, 0}, &view), Error::stale_handle);
  EXPECT_EQ(world->get_body(BodyId{1, 7}, &view), Error::stale_handle);
  EXPECT_FALSE(world->is_alive(BodyId{}));

  // list_bodies: live bodies in slot order; a short span takes the first ones.
  BodyId ids[8];
  ASSERT_EQ(world->list_bodies(ids), 4u);
  EXPECT_EQ(ids[0], a);
  EXPECT_EQ(ids[1], d);
  EXPECT_EQ(ids[2], c);
  EXPECT_EQ(ids[3], (BodyId{4, 0}));
  EXPECT_EQ(world->list_bodies(std::span<BodyId>(ids, 2)), 2u);
}

TEST(SimWorld, SameCallSequenceGivesSameHandlesAndHash) {
  auto run = [](std::vector<BodyId>* ids) {
    auto world = make_world();
    ids->push_back(add(*world, ground_def()));
    for (int i = 0; i < 6; ++i)
      ids->push_back(add(*world, sphere_def({float(i), 2, 0})));
    EXPECT_EQ(world->destroy_body((*ids)[2]), Error::none);
    EXPECT_EQ(world->destroy_body((*ids)[4]), Error::none);
    ids->push_back(add(*world, sphere_def({0, 5, 0})));
    ids->push_back(add(*world, sphere_def({1, 5, 0})));
    ids->push_back(add(*world, sphere_def({2, 5, 0})));
    for (int i = 0; i < 30; ++i)
      world->step();
    return world->state_hash();
  };
  std::vector<BodyId> first, second;
  const uint64_t h1 = run(&first);
  const uint64_t h2 = run(&second);
  EXPECT_EQ(first, second);
  EXPECT_EQ(h1, h2);
  // The reuse order is the lowest free slot first: slots 2 then 4 (index1 3 and 5), then 8.
  EXPECT_EQ(first[7], (BodyId{3, 1}));
  EXPECT_EQ(first[8], (BodyId{5, 1}));
  EXPECT_EQ(first[9], (BodyId{8, 0}));
}

TEST(SimWorld, BodyCapacityIsEnforced) {
  WorldDef def = lockstep::sim::default_world_def();
  def.max_bodies = 3;
  auto world = make_world(def);
  for (int i = 0; i < 3; ++i)
    add(*world, sphere_def({float(i) * 2, 1, 0}));
  const uint64_t hash = world->state_hash();
  BodyId id{};
  EXPECT_EQ(world->create_body(sphere_def({9, 1, 0}), &id), Error::capacity_bodies);
  EXPECT_TRUE(id.is_null());
  EXPECT_EQ(world->state_hash(), hash);
  EXPECT_EQ(world->counters().api_calls_rejected, 1u);
}

// ---- argument validation ------------------------------------------------------------------------

// Runs `call` expecting `want`, and checks that the hash and the rejection counter behave.
template <typename Call>
void expect_rejected(World& world, Error want, Call call, const char* what) {
  const uint64_t hash = world.state_hash();
  const uint64_t rejected = world.counters().api_calls_rejected;
  EXPECT_EQ(call(), want) << what;
  EXPECT_EQ(world.state_hash(), hash) << what;
  EXPECT_EQ(world.counters().api_calls_rejected, rejected + 1) << what;
}

TEST(SimWorld, CreateBodyRejectsBadDefinitions) {
  auto world = make_world();
  add(*world, ground_def());
  BodyId out{};
  auto create = [&](BodyDef def) {
    return [&world, def, &out] { return world->create_body(def, &out); };
  };

  BodyDef d = sphere_def({0, 1, 0});
  d.position.x = kNaN;
  expect_rejected(*world, Error::non_finite, create(d), "NaN position");
  d = sphere_def({0, 1, 0});
  d.orientation.w = kInf;
  expect_rejected(*world, Error::non_finite, create(d), "inf orientation");
  d = sphere_def({0, 1, 0});
  d.linear_velocity.y = -kInf;
  expect_rejected(*world, Error::non_finite, create(d), "inf velocity");
  d = sphere_def({0, 1, 0});
  d.angular_velocity.z = kNaN;
  expect_rejected(*world, Error::non_finite, create(d), "NaN angular velocity");
  d = sphere_def({0, 1, 0});
  d.linear_damping = kNaN;
  expect_rejected(*world, Error::non_finite, create(d), "NaN damping");
  d = sphere_def({0, 1, 0});
  d.shape.radius = kNaN;
  expect_rejected(*world, Error::non_finite, create(d), "NaN radius");
  d = sphere_def({0, 1, 0});
  d.shape.friction = kInf;
  expect_rejected(*world, Error::non_finite, create(d), "inf friction");

  d = sphere_def({0, 1, 0});
  d.orientation = Quat{0, 0, 0, 0};
  expect_rejected(*world, Error::invalid_argument, create(d), "zero quaternion");
  d = sphere_def({0, 1, 0});
  d.shape.radius = 0;
  expect_rejected(*world, Error::invalid_argument, create(d), "zero radius");
  d = sphere_def({0, 1, 0});
  d.shape.restitution = 1.5f;
  expect_rejected(*world, Error::invalid_argument, create(d), "restitution > 1");
  d = sphere_def({0, 1, 0});
  d.linear_damping = -1;
  expect_rejected(*world, Error::invalid_argument, create(d), "negative damping");
  d = sphere_def({0, 1, 0});
  d.position.z = 2.0e5f;  // beyond the 1e5 m coordinate limit
  expect_rejected(*world, Error::invalid_argument, create(d), "far position");
  d = sphere_def({0, 1, 0});
  d.linear_velocity = {world->def().max_linear_speed * 1.01f, 0, 0};
  expect_rejected(*world, Error::invalid_argument, create(d), "too fast");
  d = sphere_def({0, 1, 0});
  d.angular_velocity = {0, world->def().max_angular_speed * 1.01f, 0};
  expect_rejected(*world, Error::invalid_argument, create(d), "spinning too fast");
  d = sphere_def({0, 1, 0});
  d.type = static_cast<BodyType>(7);
  expect_rejected(*world, Error::invalid_argument, create(d), "unknown body type");
  d = sphere_def({0, 1, 0});
  d.shape.type = static_cast<ShapeType>(9);
  expect_rejected(*world, Error::invalid_argument, create(d), "unknown shape type");

  d = ground_def();
  d.type = BodyType::dynamic;
  expect_rejected(*world, Error::wrong_body_type, create(d), "dynamic plane");
  d = ground_def();
  d.type = BodyType::kinematic;
  expect_rejected(*world, Error::wrong_body_type, create(d), "kinematic plane");
  d = sphere_def({0, 1, 0});
  d.type = BodyType::static_body;
  d.linear_velocity = {1, 0, 0};
  expect_rejected(*world, Error::wrong_body_type, create(d), "moving static body");

  expect_rejected(
      *world, Error::invalid_argument,
      [&world] {
        return world->create_body(sphere_def({0, 1, 0}), nullptr);
      },
      "null out_id");
  EXPECT_EQ(world->body_count(), 1u);

  // A non-unit but finite quaternion is accepted and normalized.
  d = sphere_def({0, 1, 0});
  d.orientation = Quat{0, 0, 0, 2};
  ASSERT_EQ(world->create_body(d, &out), Error::none);
  BodyView view{};
  ASSERT_EQ(world->get_body(out, &view), Error::none);
  EXPECT_EQ(view.orientation.w, 1.0f);
}

TEST(SimWorld, SettersRejectNonFiniteAndOutOfRange) {
  auto world = make_world();
  BodyId ground = add(*world, ground_def());
  BodyId ball = add(*world, sphere_def({0, 2, 0}));
  BodyDef kin = sphere_def({3, 2, 0});
  kin.type = BodyType::kinematic;
  BodyId kinematic = add(*world, kin);
  const float vmax = world->def().max_linear_speed, wmax = world->def().max_angular_speed;

  expect_rejected(
      *world, Error::non_finite,
      [&] {
        return world->set_linear_velocity(ball, {kNaN, 0, 0});
      },
      "v NaN");
  expect_rejected(
      *world, Error::non_finite,
      [&] {
        return world->set_linear_velocity(ball, {0, kInf, 0});
      },
      "v inf");
  expect_rejected(
      *world, Error::invalid_argument,
      [&] {
        return world->set_linear_velocity(ball, {vmax, vmax, 0});
      },
      "v too fast");
  expect_rejected(
      *world, Error::wrong_body_type,
      [&] {
        return world->set_linear_velocity(ground, {1, 0, 0});
      },
      "v static");
  expect_rejected(
      *world, Error::null_handle,
      [&] {
        return world->set_linear_velocity(BodyId{}, {1, 0, 0});
      },
      "v null");

  expect_rejected(
      *world, Error::non_finite,
      [&] {
        return world->set_angular_velocity(ball, {0, 0, kNaN});
      },
      "w NaN");
  expect_rejected(
      *world, Error::invalid_argument,
      [&] {
        return world->set_angular_velocity(ball, {wmax * 2, 0, 0});
      },
      "w too fast");
  expect_rejected(
      *world, Error::wrong_body_type,
      [&] {
        return world->set_angular_velocity(ground, {0, 0, 0});
      },
      "w static");

  expect_rejected(
      *world, Error::non_finite,
      [&] {
        return world->set_transform(ball, {kNaN, 0, 0}, Quat{});
      },
      "p NaN");
  expect_rejected(
      *world, Error::non_finite,
      [&] {
        return world->set_transform(ball, {0, 0, 0}, Quat{0, kInf, 0, 1});
      },
      "q inf");
  expect_rejected(
      *world, Error::invalid_argument,
      [&] {
        return world->set_transform(ball, {0, 0, 0}, Quat{0, 0, 0, 0});
      },
      "q zero");
  expect_rejected(
      *world, Error::invalid_argument,
      [&] {
        return world->set_transform(ball, {0, -3e5f, 0}, Quat{});
      },
      "p far");

  expect_rejected(
      *world, Error::non_finite,
      [&] {
        return world->apply_impulse(ball, {kNaN, 0, 0}, {0, 2, 0});
      },
      "impulse NaN");
  expect_rejected(
      *world, Error::non_finite,
      [&] {
        return world->apply_impulse(ball, {1, 0, 0}, {0, kInf, 0});
      },
      "point inf");
  expect_rejected(
      *world, Error::wrong_body_type,
      [&] {
        return world->apply_impulse(ground, {1, 0, 0}, {0, 0, 0});
      },
      "impulse static");
  expect_rejected(
      *world, Error::wrong_body_type,
      [&] {
        return world->apply_impulse(kinematic, {1, 0, 0}, {3, 2, 0});
      },
      "impulse kinematic");
  // Finite but so large that the velocity of a 4 mg pebble overflows float.
  BodyDef pebble_def = sphere_def({0, 5, 0}, 0.01f);
  pebble_def.shape.density = 1.0f;
  BodyId pebble = add(*world, pebble_def);
  expect_rejected(
      *world, Error::invalid_argument,
      [&] {
        return world->apply_impulse(pebble, {3e38f, 0, 0}, {0, 5, 0});
      },
      "impulse overflow");

  expect_rejected(
      *world, Error::non_finite,
      [&] {
        return debug_perturb_position(*world, ball, {0, kNaN, 0});
      },
      "perturb NaN");
  expect_rejected(
      *world, Error::stale_handle,
      [&] {
        return debug_perturb_position(*world, BodyId{9, 0}, {0, 1, 0});
      },
      "perturb stale");

  // Accepted edits do change the hash.
  uint64_t hash = world->state_hash();
  EXPECT_EQ(world->set_linear_velocity(kinematic, {1, 0, 0}), Error::none);  // kinematic may move
  EXPECT_NE(world->state_hash(), hash);
  hash = world->state_hash();
  EXPECT_EQ(world->apply_impulse(ball, {0, 0, 1}, {0, 2.5f, 0}), Error::none);
  EXPECT_NE(world->state_hash(), hash);
  hash = world->state_hash();
  EXPECT_EQ(world->set_transform(ground, {0, -1, 0}, Quat{}),
            Error::none);  // statics may be placed
  EXPECT_NE(world->state_hash(), hash);
}

TEST(SimWorld, ApplyImpulseAtPointChangesVelocities) {
  WorldDef def = lockstep::sim::default_world_def();
  auto world = make_world(def);
  BodyId ball = add(*world, sphere_def({0, 0, 0}, 0.5f));
  BodyView view{};
  ASSERT_EQ(world->get_body(ball, &view), Error::none);
  const double m = view.mass_kg;
  // Solid sphere: I = 2/5·m·r²; impulse (0, 0, P) at (r, 0, 0): ω = I⁻¹(r × P) = (0, −rP/I, 0).
  const double inertia = 0.4 * m * 0.25;
  ASSERT_EQ(world->apply_impulse(ball, {0, 0, 10}, {0.5f, 0, 0}), Error::none);
  ASSERT_EQ(world->get_body(ball, &view), Error::none);
  EXPECT_NEAR(view.linear_velocity.z, 10.0 / m, 1e-6 * 10.0 / m);
  EXPECT_NEAR(view.angular_velocity.y, -0.5 * 10.0 / inertia, 1e-5 * 5.0 / inertia);
  EXPECT_EQ(view.angular_velocity.x, 0.0f);
}

// ---- inputs -------------------------------------------------------------------------------------

Input push(uint32_t player, uint32_t sequence, BodyId body, int32_t lx, int32_t ly = 0,
           int32_t lz = 0) {
  Input in;
  in.player = player;
  in.sequence = sequence;
  in.body = body;
  in.linear_impulse[0] = lx;
  in.linear_impulse[1] = ly;
  in.linear_impulse[2] = lz;
  return in;
}

TEST(SimWorld, QueueInputRejectsBadInputs) {
  WorldDef def = lockstep::sim::default_world_def();
  def.max_inputs_per_tick = 3;
  def.max_input_linear_impulse = 2.0f;   // 2 N·s → 2048 in fixed point (2^10 per N·s)
  def.max_input_angular_impulse = 0.5f;  // → 512
  auto world = make_world(def);
  BodyId ground = add(*world, ground_def());
  BodyDef owned = sphere_def({0, 1, 0});
  owned.owner_player = 7;
  BodyId mine = add(*world, owned);
  BodyId anyone = add(*world, sphere_def({3, 1, 0}));
  BodyId doomed = add(*world, sphere_def({6, 1, 0}));
  ASSERT_EQ(world->destroy_body(doomed), Error::none);

  auto expect_input = [&](const Input& in, Error want, const char* what) {
    const uint64_t hash = world->state_hash();
    const uint64_t rejected = world->counters().inputs_rejected;
    EXPECT_EQ(world->queue_input(in), want) << what;
    if (want != Error::none) {
      EXPECT_EQ(world->state_hash(), hash) << what;
      EXPECT_EQ(world->counters().inputs_rejected, rejected + 1) << what;
    }
  };
  expect_input(push(7, 1, BodyId{}, 1), Error::null_handle, "null body");
  expect_input(push(7, 1, doomed, 1), Error::stale_handle, "dead body");
  expect_input(push(7, 1, BodyId{40, 0}, 1), Error::stale_handle, "never existed");
  expect_input(push(7, 1, ground, 1), Error::wrong_body_type, "static body");
  expect_input(push(8, 1, mine, 1), Error::invalid_argument, "another player's body");
  expect_input(push(7, 1, mine, 2049), Error::input_out_of_range, "linear over limit");
  expect_input(push(7, 1, mine, 0, -2049), Error::input_out_of_range, "negative over limit");
  expect_input(push(7, 1, mine, std::numeric_limits<int32_t>::min()), Error::input_out_of_range,
               "INT32_MIN");
  Input spin = push(7, 1, mine, 0);
  spin.angular_impulse[2] = 513;
  expect_input(spin, Error::input_out_of_range, "angular over limit");
  spin.angular_impulse[2] = -512;
  expect_input(spin, Error::none, "angular at limit");
  expect_input(push(7, 2, mine, 2048, -2048, 2048), Error::none, "linear at limit");
  expect_input(push(3, 1, anyone, 5), Error::none, "unowned body, any player");
  expect_input(push(3, 2, anyone, 5), Error::capacity_inputs, "tick capacity full");
  EXPECT_EQ(world->counters().inputs_accepted, 3u);
  EXPECT_EQ(world->counters().inputs_rejected, 10u);

  // The step applies and empties the queue: capacity is per tick.
  world->step();
  EXPECT_EQ(world->last_step_stats().inputs_applied, 3u);
  expect_input(push(3, 3, anyone, 5), Error::none, "next tick has room again");
}

TEST(SimWorld, InputsAreAppliedInTotalOrderWhateverTheQueueOrder) {
  WorldDef def = lockstep::sim::default_world_def();
  def.gravity = Vec3{0, 0, 0};
  // Three pushes on one body whose float sum depends on the order of addition.
  auto run = [&def](const std::vector<int>& order, uint64_t* hash_before) {
    auto world = make_world(def);
    BodyId a = add(*world, sphere_def({0, 0, 0}));
    BodyId b = add(*world, sphere_def({5, 0, 0}));
    const Input inputs[] = {push(2, 9, a, 1 << 20), push(1, 4, a, 3), push(2, 1, a, -(1 << 20)),
                            push(1, 4, b, 7), push(1, 4, a, 1)};
    for (int i : order)
      EXPECT_EQ(world->queue_input(inputs[i]), Error::none);
    *hash_before = world->state_hash();
    world->step();
    BodyView view{};
    EXPECT_EQ(world->get_body(a, &view), Error::none);
    return std::make_pair(world->state_hash(), view.linear_velocity.x);
  };
  uint64_t before1 = 0, before2 = 0, before3 = 0;
  const auto r1 = run({0, 1, 2, 3, 4}, &before1);
  const auto r2 = run({4, 3, 2, 1, 0}, &before2);
  const auto r3 = run({2, 4, 0, 3, 1}, &before3);
  EXPECT_EQ(before1, before2);  // the queue is kept in canonical order, so even the pre-step
  EXPECT_EQ(before1, before3);  // state is independent of the queue order
  EXPECT_EQ(r1.first, r2.first);
  EXPECT_EQ(r1.first, r3.first);

  // Independent check of the order (player, sequence, body, then the fields): on body a that is
  // (1,4,a,+1), (1,4,a,+3), (2,1,a,−2^20), (2,9,a,+2^20), each scaled by 2^-10 and 1/m.
  auto world = make_world(def);
  BodyId a = add(*world, sphere_def({0, 0, 0}));
  BodyView view{};
  ASSERT_EQ(world->get_body(a, &view), Error::none);
  const float inv_m = 1.0f / view.mass_kg;
  const float s = 1.0f / 1024.0f;
  auto dv = [&](int32_t v) { return inv_m * (float(v) * s); };
  float sorted = 0.0f;
  for (int32_t v : {1, 3, -(1 << 20), 1 << 20})
    sorted = sorted + dv(v);
  float queued = 0.0f;  // the order of the first queue above
  for (int32_t v : {1 << 20, 3, -(1 << 20), 1})
    queued = queued + dv(v);
  ASSERT_NE(sorted, queued) << "the test needs inputs whose sum depends on the order";
  EXPECT_EQ(r1.second, sorted);
}

TEST(SimWorld, InputsOfADestroyedBodyLeaveWithIt) {
  auto world = make_world();
  BodyId a = add(*world, sphere_def({0, 5, 0}));
  BodyId b = add(*world, sphere_def({3, 5, 0}));
  ASSERT_EQ(world->queue_input(push(1, 1, a, 100)), Error::none);
  ASSERT_EQ(world->queue_input(push(1, 2, b, 100)), Error::none);
  ASSERT_EQ(world->destroy_body(a), Error::none);
  world->step();
  EXPECT_EQ(world->last_step_stats().inputs_applied, 1u);
}

// ---- overflow -----------------------------------------------------------------------------------

WorldDef tiny_def() {
  WorldDef def = lockstep::sim::default_world_def();
  def.max_bodies = 64;
  def.max_candidate_pairs = 12;
  def.max_contact_pairs = 8;
  def.max_contact_points = 100;
  def.max_events = 3;
  return def;
}

// Few points but room for every pair: the point capacity runs out first.
WorldDef few_points_def() {
  WorldDef def = lockstep::sim::default_world_def();
  def.max_bodies = 64;
  def.max_contact_points = 10;
  return def;
}

// 40 spheres in a tight 8 × 5 grid resting on and against each other over a ground plane, and
// two boxes (4 points each on the ground).
void build_crowd(World& world) {
  add(world, ground_def());
  for (int i = 0; i < 40; ++i) {
    const float x = float(i % 8) * 0.95f, z = float(i / 8) * 0.95f;
    add(world, sphere_def({x, 0.49f, z}));
  }
  for (int i = 0; i < 2; ++i) {
    BodyDef box = sphere_def({float(i) * 2.0f, 0.5f, -3.0f});
    box.shape.type = ShapeType::box;
    add(world, box);
  }
}

// Two identical worlds step in lockstep: same status, same drops, same hashes. Returns the
// union of the overflow bits seen.
uint32_t run_overflowing_pair(const WorldDef& def) {
  auto w1 = make_world(def);
  auto w2 = make_world(def);
  build_crowd(*w1);
  build_crowd(*w2);
  uint32_t overflow_bits = 0;
  for (int i = 0; i < 120; ++i) {
    const StepStatus s1 = w1->step();
    const StepStatus s2 = w2->step();
    EXPECT_EQ(s1.overflow, s2.overflow) << "step " << i;
    EXPECT_EQ(w1->state_hash(), w2->state_hash()) << "step " << i;
    const auto& a = w1->last_step_stats();
    const auto& b = w2->last_step_stats();
    EXPECT_EQ(a.dropped_candidate_pairs, b.dropped_candidate_pairs);
    EXPECT_EQ(a.dropped_contact_pairs, b.dropped_contact_pairs);
    EXPECT_EQ(a.dropped_contact_points, b.dropped_contact_points);
    EXPECT_EQ(a.dropped_events, b.dropped_events);
    // The capacities in use (a 0 in `def` is derived from max_bodies).
    const WorldDef& used = w1->def();
    EXPECT_LE(a.candidate_pairs, used.max_candidate_pairs);
    EXPECT_LE(a.manifolds, used.max_contact_pairs);
    EXPECT_LE(a.contact_points, used.max_contact_points);
    EXPECT_LE(w1->events().size(), used.max_events);
    EXPECT_EQ(s1.ok(), s1.overflow == 0);
    // A flag is set exactly when something of that kind was dropped.
    EXPECT_EQ((s1.overflow & lockstep::sim::overflow_candidate_pairs) != 0,
              a.dropped_candidate_pairs > 0);
    EXPECT_EQ((s1.overflow & lockstep::sim::overflow_contact_pairs) != 0,
              a.dropped_contact_pairs > 0);
    EXPECT_EQ((s1.overflow & lockstep::sim::overflow_contact_points) != 0,
              a.dropped_contact_points > 0);
    EXPECT_EQ((s1.overflow & lockstep::sim::overflow_events) != 0, a.dropped_events > 0);
    overflow_bits |= s1.overflow;
  }
  EXPECT_GT(w1->counters().overflow_steps, 0u);
  EXPECT_EQ(w1->counters().overflow_steps, w2->counters().overflow_steps);
  // And the world is still sane: every body finite.
  BodyId ids[64];
  const uint32_t n = w1->list_bodies(ids);
  EXPECT_EQ(n, 43u);
  for (uint32_t i = 0; i < n; ++i) {
    BodyView v{};
    EXPECT_EQ(w1->get_body(ids[i], &v), Error::none);
    EXPECT_TRUE(std::isfinite(v.position.x) && std::isfinite(v.position.y) &&
                std::isfinite(v.position.z));
  }
  return overflow_bits;
}

TEST(SimWorld, OverflowDropsDeterministicallyAndKeepsStepping) {
  const uint32_t tiny = run_overflowing_pair(tiny_def());
  EXPECT_NE(tiny & lockstep::sim::overflow_candidate_pairs, 0u);
  EXPECT_NE(tiny & lockstep::sim::overflow_contact_pairs, 0u);
  EXPECT_NE(tiny & lockstep::sim::overflow_events, 0u);
  const uint32_t few_points = run_overflowing_pair(few_points_def());
  EXPECT_EQ(few_points, lockstep::sim::overflow_contact_points);
}

// Candidate pairs by brute force over all body pairs, with compute_aabb and the same margin:
// the keys (lower slot << 32 | higher slot) of overlapping pairs with a dynamic body, ascending.
std::vector<uint64_t> brute_force_pairs(const World& world) {
  const lockstep::sim::WorldData& w = world_data(world);
  std::vector<uint64_t> keys;
  for (uint32_t i = 0; i < w.slot_count; ++i) {
    for (uint32_t j = i + 1; j < w.slot_count; ++j) {
      const auto& a = w.bodies[i];
      const auto& b = w.bodies[j];
      if (!a.alive || !b.alive) continue;
      if (a.type != BodyType::dynamic && b.type != BodyType::dynamic) continue;
      const auto ba =
          lockstep::sim::compute_aabb(a.shape, lockstep::sim::ShapeLibrary{},
                                      {a.position, a.orientation}, w.def.contact_margin_m);
      const auto bb =
          lockstep::sim::compute_aabb(b.shape, lockstep::sim::ShapeLibrary{},
                                      {b.position, b.orientation}, w.def.contact_margin_m);
      if (lockstep::sim::overlaps(ba, bb)) keys.push_back(lockstep::sim::pair_key(i, j));
    }
  }
  std::sort(keys.begin(), keys.end());
  return keys;
}

std::vector<uint64_t> broadphase_pairs(const World& world) {
  const auto& bp = world_data(world).broadphase;
  return std::vector<uint64_t>(bp.pairs.begin(), bp.pairs.begin() + bp.pair_count);
}

TEST(SimWorld, BroadphaseMatchesBruteForceAndKeepsTheLowestKeysOnOverflow) {
  // Unlimited: the sweep finds exactly the brute-force pairs. The state the broadphase saw is
  // the one before the step's position update, so compare with a copy taken before stepping.
  auto world = make_world();
  build_crowd(*world);
  for (int i = 0; i < 20; ++i) {
    const std::vector<uint64_t> expected = brute_force_pairs(*world);
    world->step();
    ASSERT_EQ(broadphase_pairs(*world), expected) << "step " << i;
    ASSERT_EQ(world->last_step_stats().dropped_candidate_pairs, 0u);
  }
  // Limited: the kept pairs are the `max_candidate_pairs` lowest keys of the full set.
  auto tiny = make_world(tiny_def());
  build_crowd(*tiny);
  for (int i = 0; i < 20; ++i) {
    std::vector<uint64_t> expected = brute_force_pairs(*tiny);
    ASSERT_GT(expected.size(), 12u);
    const uint32_t dropped = static_cast<uint32_t>(expected.size() - 12);
    expected.resize(12);
    tiny->step();
    ASSERT_EQ(broadphase_pairs(*tiny), expected) << "step " << i;
    ASSERT_EQ(tiny->last_step_stats().dropped_candidate_pairs, dropped);
  }
}

// ---- events -------------------------------------------------------------------------------------

TEST(SimWorld, ContactEventsBeginAndEnd) {
  auto world = make_world();
  BodyId ground = add(*world, ground_def());
  BodyId ball = add(*world, sphere_def({0, 1.5f, 0}));
  int begin_step = -1;
  for (int i = 0; i < 120; ++i) {
    world->step();
    for (const ContactEvent& e : world->events()) {
      EXPECT_EQ(e.type, ContactEventType::begin) << "step " << i;
      EXPECT_EQ(e.a, ground);  // lower slot first
      EXPECT_EQ(e.b, ball);
      EXPECT_EQ(begin_step, -1) << "a second begin at step " << i;
      begin_step = i;
    }
  }
  // Free fall of 1 m: ~27 steps (9.81/3600·n(n+1)/2 ≥ 1 − margin); the event comes then.
  EXPECT_GE(begin_step, 20);
  EXPECT_LE(begin_step, 30);
  EXPECT_EQ(world->last_step_stats().begin_events, 0u);
  EXPECT_GT(world->normal_impulse_sum(ball), 0.0f);

  // Launch it upwards: the pair loses its manifold and an end event follows, once.
  ASSERT_EQ(world->set_linear_velocity(ball, {0, 5, 0}), Error::none);
  int end_events = 0;
  for (int i = 0; i < 10; ++i) {
    world->step();
    for (const ContactEvent& e : world->events()) {
      EXPECT_EQ(e.type, ContactEventType::end);
      EXPECT_EQ(e.a, ground);
      EXPECT_EQ(e.b, ball);
      ++end_events;
    }
  }
  EXPECT_EQ(end_events, 1);
  EXPECT_EQ(world->normal_impulse_sum(ball), 0.0f);
}

TEST(SimWorld, DestroyForgetsContactsOfTheBody) {
  auto world = make_world();
  add(*world, ground_def());
  BodyId ball = add(*world, sphere_def({0, 0.5f, 0}));
  BodyId other = add(*world, sphere_def({3, 0.5f, 0}));
  for (int i = 0; i < 10; ++i)
    world->step();
  ASSERT_EQ(world_data(*world).cache.manifold_count, 2u);
  ASSERT_EQ(world->destroy_body(ball), Error::none);
  EXPECT_EQ(world_data(*world).cache.manifold_count, 1u);
  EXPECT_GT(world->normal_impulse_sum(other), 0.0f);
  // No end event for the destroyed body's pair: it is gone, not separated.
  world->step();
  EXPECT_EQ(world->events().size(), 0u);
}

// ---- warm starting ------------------------------------------------------------------------------

TEST(SimWorld, WarmStartMatchesByFeatureThenPositionThenSharesTheRest) {
  using lockstep::sim::CachedManifold;
  using lockstep::sim::CachedPoint;
  using lockstep::sim::ContactCache;
  using lockstep::sim::ContactConstraint;
  using lockstep::sim::ContactPoint;
  // Last step: one manifold (key 7) with four points at the corners of a unit square.
  ContactCache cache;
  cache.manifolds.resize(4);
  cache.points.resize(16);
  cache.manifold_count = 1;
  cache.point_count = 4;
  cache.manifolds[0].key = 7;
  cache.manifolds[0].first_point = 0;
  cache.manifolds[0].point_count = 4;
  const Vec3 corners[4] = {{-0.5f, 0, -0.5f}, {0.5f, 0, -0.5f}, {0.5f, 0, 0.5f}, {-0.5f, 0, 0.5f}};
  for (uint32_t k = 0; k < 4; ++k) {
    CachedPoint& cp = cache.points[k];
    cp.feature = 1 + k;
    cp.normal_impulse = 10.0f * float(k + 1);
    cp.friction_impulse = Vec3{float(k), 0, 1};
    cp.local_anchor_a = corners[k];
  }
  // This step: key 7 again, plus key 9 that is new.
  ContactConstraint constraints[2];
  constraints[0].key = 7;
  constraints[0].normal = Vec3{0, 1, 0};
  lockstep::sim::tangent_basis(constraints[0].normal, &constraints[0].tangent1,
                               &constraints[0].tangent2);
  constraints[0].first_point = 0;
  constraints[0].point_count = 4;
  constraints[1] = constraints[0];
  constraints[1].key = 9;
  constraints[1].first_point = 4;
  constraints[1].point_count = 1;
  ContactPoint points[5];
  points[0].feature = 3;  // same id as old point 2: matched by id, wherever it is
  points[0].local_anchor_a = Vec3{0, 0, 0};
  points[1].feature = 99;  // new id, 4 mm from old point 0 (the id of old point 0 is unused)
  points[1].local_anchor_a = Vec3{-0.5f, 0, -0.496f};
  points[2].feature = 98;  // new id, far from everything
  points[2].local_anchor_a = Vec3{0, 0, 0.2f};
  points[3].feature = 97;
  points[3].local_anchor_a = Vec3{0.2f, 0, 0};
  points[4].feature = 1;  // a different pair: never matched against key 7
  lockstep::sim::SolverCounters counters;
  lockstep::sim::match_warm_start(constraints, points, cache, &counters);

  const Vec3 t1 = constraints[0].tangent1, t2 = constraints[0].tangent2;
  auto projected = [&](Vec3 f) {
    return std::make_pair(lockstep::sim::dot(t1, f), lockstep::sim::dot(t2, f));
  };
  EXPECT_EQ(points[0].normal_impulse, 30.0f);
  EXPECT_EQ(std::make_pair(points[0].tangent_impulse.x, points[0].tangent_impulse.y),
            projected(Vec3{2, 0, 1}));
  EXPECT_EQ(points[1].normal_impulse, 10.0f);
  // Old points 1 and 3 (20 and 40 N·s, friction (1,0,1) and (3,0,1)) are left: shared equally.
  EXPECT_EQ(points[2].normal_impulse, 30.0f);
  EXPECT_EQ(points[3].normal_impulse, 30.0f);
  EXPECT_EQ(std::make_pair(points[3].tangent_impulse.x, points[3].tangent_impulse.y),
            projected(Vec3{2, 0, 1}));
  EXPECT_EQ(points[4].normal_impulse, 0.0f);
  EXPECT_EQ(counters.warm_started_points, 2u);  // shares are a guess, not a match
}

// ---- stats --------------------------------------------------------------------------------------

TEST(SimWorld, StepStatsCountTheStep) {
  auto world = make_world();
  add(*world, ground_def());
  for (int i = 0; i < 4; ++i)
    add(*world, sphere_def({float(i) * 2, 0.5f, 0}));
  for (int i = 0; i < 5; ++i)
    world->step();
  const auto& st = world->last_step_stats();
  EXPECT_EQ(st.tick, 5u);
  EXPECT_EQ(world->tick(), 5u);
  EXPECT_EQ(st.bodies, 5u);
  EXPECT_EQ(st.awake_dynamic_bodies, 4u);
  EXPECT_EQ(st.candidate_pairs, 4u);  // each sphere with the ground; spheres 2 m apart
  EXPECT_EQ(st.manifolds, 4u);
  EXPECT_EQ(st.contact_points, 4u);
  EXPECT_EQ(st.warm_started_points, 4u);
  // Every pass over the contacts: each substep runs velocity_iterations biased passes and
  // relax_iterations relax passes (4 · (1 + 1) = 8 with the defaults).
  const WorldDef& def = world->def();
  EXPECT_EQ(st.velocity_iterations,
            def.substeps * (def.velocity_iterations + def.relax_iterations));
  EXPECT_GE(st.ns_total, st.ns(StepStage::solve));
  // The stages are consecutive laps of one clock: they add up to the total exactly.
  uint64_t sum = 0;
  for (uint64_t ns : st.stage_ns)
    sum += ns;
  EXPECT_EQ(sum, st.ns_total);
  EXPECT_EQ(st.ns(StepStage::apply_commands, StepStage::update_state_hash), st.ns_total);
  EXPECT_GT(st.ns(StepStage::collide_pairs), 0u);
  EXPECT_GT(st.ns(StepStage::store_contacts), 0u);
  EXPECT_GT(st.ns(StepStage::update_state_hash), 0u);
}

TEST(SimWorld, StepStagesHaveTheirOwnNames) {
  // One name per stage, as the enumerator is spelled (tools print them; docs list them).
  std::set<std::string> names;
  for (uint32_t i = 0; i < kStepStageCount; ++i) {
    const std::string name = step_stage_name(static_cast<StepStage>(i));
    EXPECT_NE(name, "?") << i;
    EXPECT_TRUE(names.insert(name).second) << name;
  }
  EXPECT_STREQ(step_stage_name(StepStage::apply_commands), "apply_commands");
  EXPECT_STREQ(step_stage_name(StepStage::update_state_hash), "update_state_hash");
}

// ---- WorldDef -----------------------------------------------------------------------------------

TEST(SimWorld, ValidateWorldDefRejectsBadDefinitions) {
  using lockstep::sim::validate_world_def;
  const WorldDef good = lockstep::sim::default_world_def();
  EXPECT_EQ(validate_world_def(good), Error::none);
  struct Case {
    const char* what;
    void (*edit)(WorldDef&);
    Error want;
  };
  const Case cases[] = {
      {"dt NaN", [](WorldDef& d) { d.dt_s = kNaN; }, Error::non_finite},
      {"dt 0", [](WorldDef& d) { d.dt_s = 0; }, Error::invalid_argument},
      {"dt negative", [](WorldDef& d) { d.dt_s = -0.01f; }, Error::invalid_argument},
      {"dt > 1", [](WorldDef& d) { d.dt_s = 1.5f; }, Error::invalid_argument},
      {"gravity inf", [](WorldDef& d) { d.gravity.y = -kInf; }, Error::non_finite},
      {"gravity huge", [](WorldDef& d) { d.gravity.y = -1e6f; }, Error::invalid_argument},
      {"iterations 0", [](WorldDef& d) { d.velocity_iterations = 0; }, Error::invalid_argument},
      {"iterations 257", [](WorldDef& d) { d.velocity_iterations = 257; }, Error::invalid_argument},
      {"substeps 0", [](WorldDef& d) { d.substeps = 0; }, Error::invalid_argument},
      {"substeps 65", [](WorldDef& d) { d.substeps = 65; }, Error::invalid_argument},
      {"contact hertz NaN", [](WorldDef& d) { d.contact_hertz = kNaN; }, Error::non_finite},
      {"contact hertz < 0", [](WorldDef& d) { d.contact_hertz = -1; }, Error::invalid_argument},
      {"damping ratio inf", [](WorldDef& d) { d.contact_damping_ratio = kInf; }, Error::non_finite},
      {"speculative < margin",
       [](WorldDef& d) { d.max_speculative_margin_m = 0.5f * d.contact_margin_m; },
       Error::invalid_argument},
      {"slop negative", [](WorldDef& d) { d.linear_slop_m = -1e-3f; }, Error::invalid_argument},
      {"reuse distance NaN", [](WorldDef& d) { d.contact_reuse_distance_m = kNaN; },
       Error::non_finite},
      {"reuse distance negative", [](WorldDef& d) { d.contact_reuse_distance_m = -1e-3f; },
       Error::invalid_argument},
      {"reuse angle > 0.5", [](WorldDef& d) { d.contact_reuse_angle_rad = 0.6f; },
       Error::invalid_argument},
      {"margin negative", [](WorldDef& d) { d.contact_margin_m = -0.1f; }, Error::invalid_argument},
      {"max speed 0", [](WorldDef& d) { d.max_linear_speed = 0; }, Error::invalid_argument},
      {"max spin inf", [](WorldDef& d) { d.max_angular_speed = kInf; }, Error::non_finite},
      {"input limit negative", [](WorldDef& d) { d.max_input_linear_impulse = -1; },
       Error::invalid_argument},
      {"bodies 0", [](WorldDef& d) { d.max_bodies = 0; }, Error::invalid_argument},
      {"bodies huge", [](WorldDef& d) { d.max_bodies = 1u << 30; }, Error::invalid_argument},
      // A contact capacity of 0 is derived from max_bodies; past its limit it is refused.
      {"pairs huge", [](WorldDef& d) { d.max_contact_pairs = ~0u; }, Error::invalid_argument},
      {"points huge", [](WorldDef& d) { d.max_contact_points = ~0u; }, Error::invalid_argument},
      {"candidates huge", [](WorldDef& d) { d.max_candidate_pairs = ~0u; },
       Error::invalid_argument},
      {"events huge", [](WorldDef& d) { d.max_events = ~0u; }, Error::invalid_argument},
      {"inputs 0", [](WorldDef& d) { d.max_inputs_per_tick = 0; }, Error::invalid_argument},
  };
  for (const Case& c : cases) {
    WorldDef def = good;
    c.edit(def);
    EXPECT_EQ(validate_world_def(def), c.want) << c.what;
    Error error = Error::none;
    EXPECT_EQ(World::create(def, &error), nullptr) << c.what;
    EXPECT_EQ(error, c.want) << c.what;
  }
  // Edges that are allowed.
  WorldDef edge = good;
  edge.dt_s = 1.0f;
  edge.velocity_iterations = 256;
  edge.max_bodies = 1;
  edge.max_contact_pairs = 0;  // derived: 16, the least
  edge.max_events = 0;
  EXPECT_EQ(validate_world_def(edge), Error::none);
}

// ---- manifold reuse
// ------------------------------------------------------------------------------

BodyDef box_body(Vec3 position, float yaw_rad = 0) {
  BodyDef def = lockstep::sim::default_body_def();
  def.type = BodyType::dynamic;
  def.position = position;
  def.orientation = Quat{0, std::sin(0.5f * yaw_rad), 0, std::cos(0.5f * yaw_rad)};
  def.shape.type = ShapeType::box;
  def.shape.half_extents = Vec3{0.5f, 0.5f, 0.5f};
  def.allow_sleep = false;
  return def;
}

// A resting stack reuses its manifolds (the bodies hardly move relative to each other), and the
// reused points give the same physics as colliding again every step: the same stack stepped with
// reuse off (every manifold from the narrowphase) ends within 0.5 mm and 0.1° of it. Bounds: the
// reuse bounds are 1 mm and 1°, and a reused point is the same material point moved with its
// body, so only the choice of points can lag, by less than that motion.
TEST(SimWorld, RestingStackReusesManifoldsWithTheSamePhysics) {
  WorldDef on = lockstep::sim::default_world_def();
  on.enable_sleep = false;
  WorldDef off = on;
  off.contact_reuse_distance_m = 0;
  std::unique_ptr<World> a = make_world(on);
  std::unique_ptr<World> b = make_world(off);
  std::vector<BodyId> ids_a, ids_b;
  for (World* w : {a.get(), b.get()}) {
    add(*w, ground_def());
    for (int i = 0; i < 5; ++i) {
      (w == a.get() ? ids_a : ids_b)
          .push_back(add(*w, box_body(Vec3{0, 0.5f + float(i), 0}, 0.1f * float(i))));
    }
  }
  uint64_t reused = 0, manifolds = 0, reused_off = 0;
  for (int t = 0; t < 600; ++t) {
    ASSERT_TRUE(a->step().ok());
    ASSERT_TRUE(b->step().ok());
    if (t >= 60) {
      reused += a->last_step_stats().reused_manifolds;
      manifolds += a->last_step_stats().manifolds;
    }
    reused_off += b->last_step_stats().reused_manifolds;
  }
  EXPECT_EQ(reused_off, 0u);
  // Settled from 1 s on: most steps reuse every manifold (a re-collide every few steps at most).
  EXPECT_GT(reused, manifolds / 2) << reused << " of " << manifolds;
  for (size_t i = 0; i < ids_a.size(); ++i) {
    BodyView va{}, vb{};
    ASSERT_EQ(a->get_body(ids_a[i], &va), Error::none);
    ASSERT_EQ(b->get_body(ids_b[i], &vb), Error::none);
    const Vec3 d = va.position - vb.position;
    EXPECT_LT(std::sqrt(dot(d, d)), 5e-4f) << "box " << i;
    const float turn = std::fabs(dot(va.orientation, vb.orientation));
    EXPECT_GT(turn, std::cos(0.5f * 0.1f * 3.14159265f / 180.0f)) << "box " << i;
  }
}

// A box sliding on the ground moves 1.7 cm a step relative to it: never within 1 mm of where its
// points were found, so every step collides again; a box resting beside it reuses.
TEST(SimWorld, MovingPairsAreCollidedEveryStep) {
  WorldDef def = lockstep::sim::default_world_def();
  def.enable_sleep = false;
  std::unique_ptr<World> world = make_world(def);
  add(*world, ground_def());
  BodyDef slider = box_body(Vec3{0, 0.5f, 0});
  slider.shape.friction = 0;
  slider.linear_velocity = Vec3{1, 0, 0};
  add(*world, slider);
  for (int t = 0; t < 120; ++t) {
    ASSERT_TRUE(world->step().ok());
    if (t >= 2) {
      EXPECT_EQ(world->last_step_stats().reused_manifolds, 0u) << "step " << t;
    }
  }
  add(*world, box_body(Vec3{-5, 0.5f, 0}));
  uint32_t reused = 0;
  for (int t = 0; t < 120; ++t) {
    ASSERT_TRUE(world->step().ok());
    reused += world->last_step_stats().reused_manifolds;
    EXPECT_LE(world->last_step_stats().reused_manifolds, 1u);
  }
  EXPECT_GT(reused, 60u);
}

// ---- collision filters
// ----------------------------------------------------------------------------

// Two players (category 2, mask: everything but 2) run into each other and through each other,
// then into a wall (default filter), which stops them. No contact, event or candidate pair is
// ever made between the players, and a snapshot restored into a fresh world keeps the filters.
TEST(SimWorld, PlayersPassThroughEachOtherButNotThroughWalls) {
  WorldDef def = lockstep::sim::default_world_def();
  def.gravity = Vec3{0, 0, 0};
  std::unique_ptr<World> world = make_world(def);
  BodyDef wall = lockstep::sim::default_body_def();
  wall.type = BodyType::static_body;
  wall.shape.type = ShapeType::box;
  wall.shape.half_extents = Vec3{0.5f, 2, 2};
  wall.position = Vec3{6, 0, 0};
  const BodyId wall_id = add(*world, wall);
  BodyDef player = sphere_def(Vec3{-2, 0, 0});
  player.shape.category = 0x2;
  player.shape.mask = ~0x2u;
  player.shape.friction = 0;
  player.linear_velocity = Vec3{3, 0, 0};
  const BodyId left = add(*world, player);
  player.position = Vec3{2, 0, 0};
  player.linear_velocity = Vec3{-3, 0, 0};
  const BodyId right = add(*world, player);
  // A second world that will be restored from the first's snapshot half-way.
  std::unique_ptr<World> restored = make_world(def);
  for (int t = 0; t < 240; ++t) {
    ASSERT_TRUE(world->step().ok());
    for (const lockstep::sim::ContactEvent& e : world->events()) {
      const bool players = (e.a == left && e.b == right) || (e.a == right && e.b == left);
      EXPECT_FALSE(players) << "step " << t;
    }
    if (t == 40) {  // the players overlap now: their centres are 0.4 m apart
      BodyView a{}, b{};
      ASSERT_EQ(world->get_body(left, &a), Error::none);
      ASSERT_EQ(world->get_body(right, &b), Error::none);
      EXPECT_LT(std::fabs(a.position.x - b.position.x), 0.5f);
      EXPECT_EQ(world->last_step_stats().candidate_pairs, 0u);
      std::vector<uint8_t> bytes(world->snapshot_size());
      size_t written = 0;
      ASSERT_EQ(world->save_snapshot(bytes, &written), Error::none);
      bytes.resize(written);
      ASSERT_EQ(restored->restore_snapshot(bytes), Error::none);
    }
    if (t > 40) {
      ASSERT_TRUE(restored->step().ok());
      ASSERT_EQ(restored->state_hash(), world->state_hash()) << "step " << t;
    }
  }
  // The player that went right passed the other and stopped at the wall's face (x = 5.5, radius
  // 0.5): it did not pass through the wall.
  BodyView a{};
  ASSERT_EQ(world->get_body(left, &a), Error::none);
  EXPECT_GT(a.position.x, 4.5f);
  EXPECT_LT(a.position.x, 5.05f);
  EXPECT_FALSE(wall_id.is_null());
}

TEST(SimWorld, FilterThatExcludesEitherSideKeepsThePairOut) {
  // (a.category & b.mask) and (b.category & a.mask) must both be non-zero: one side's mask
  // leaving the other out is enough, whichever side it is.
  for (int side = 0; side < 2; ++side) {
    std::unique_ptr<World> world = make_world();
    add(*world, ground_def());
    BodyDef ball = sphere_def(Vec3{0, 2, 0});
    if (side == 0) {
      ball.shape.mask = ~0x1u;  // the ball does not accept the ground's default category 1
    } else {
      ball.shape.category = 0x4;  // the ground accepts everything: this pair still touches
    }
    const BodyId id = add(*world, ball);
    for (int t = 0; t < 120; ++t)
      ASSERT_TRUE(world->step().ok());
    BodyView b{};
    ASSERT_EQ(world->get_body(id, &b), Error::none);
    if (side == 0) {
      EXPECT_LT(b.position.y, -1.0f) << "fell through the ground";
    } else {
      EXPECT_NEAR(b.position.y, 0.5f, 0.02f) << "rests on the ground";
    }
  }
}

// ---- sensors
// --------------------------------------------------------------------------------------

// A kinematic box sensor (1 m cube) slides at 2 m/s along x through a resting box and a resting
// ball. Each one gets one begin when the sensor reaches it and one end when the sensor has
// passed; nothing in between, and neither moves (a sensor never pushes). Bounds: the sensor's
// faces reach the box's (1 m cube at x = 3) when its centre is at x = 2, and leave at x = 4; at
// 2 m/s from x = -2 those are t = 2 s and 3 s (steps 120 and 180, ± 1 step for the discrete
// motion).
TEST(SimWorld, KinematicSensorReportsEnterAndLeaveAndNeverPushes) {
  WorldDef def = lockstep::sim::default_world_def();
  std::unique_ptr<World> world = make_world(def);
  std::unique_ptr<World> twin = make_world(def);  // the same without the sensor
  add(*world, ground_def());
  add(*twin, ground_def());
  const BodyId box = add(*world, box_body(Vec3{3, 0.5f, 0}));
  const BodyId twin_box = add(*twin, box_body(Vec3{3, 0.5f, 0}));
  BodyDef sensor = box_body(Vec3{-2, 0.6f, 0});
  sensor.type = BodyType::kinematic;
  sensor.shape.sensor = true;
  sensor.linear_velocity = Vec3{2, 0, 0};
  const BodyId trigger = add(*world, sensor);
  int begin_step = -1, end_step = -1, events = 0;
  for (int t = 0; t < 300; ++t) {
    ASSERT_TRUE(world->step().ok());
    ASSERT_TRUE(twin->step().ok());
    for (const lockstep::sim::SensorEvent& e : world->sensor_events()) {
      ++events;
      EXPECT_EQ(e.sensor, trigger);
      EXPECT_EQ(e.visitor, box);
      if (e.type == lockstep::sim::ContactEventType::begin) begin_step = t + 1;
      if (e.type == lockstep::sim::ContactEventType::end) end_step = t + 1;
    }
    // The sensor makes no contact: the box's only manifold is the ground's.
    EXPECT_LE(world->last_step_stats().manifolds, 1u);
  }
  EXPECT_EQ(events, 2);
  EXPECT_NEAR(begin_step, 120, 1);
  EXPECT_NEAR(end_step, 180, 1);
  // The box went through exactly what it does with no sensor in the world, to the bit.
  BodyView a{}, b{};
  ASSERT_EQ(world->get_body(box, &a), Error::none);
  ASSERT_EQ(twin->get_body(twin_box, &b), Error::none);
  EXPECT_EQ(a.position, b.position);
  EXPECT_EQ(a.orientation.w, b.orientation.w);
  EXPECT_EQ(a.linear_velocity, b.linear_velocity);
}

// A static goal zone with a ball dropped through it: begin on entering, end on leaving, and a
// snapshot restored while the ball is inside ends it at the same step with no second begin.
TEST(SimWorld, StaticSensorAndSnapshotsKeepOverlapsExact) {
  WorldDef def = lockstep::sim::default_world_def();
  std::unique_ptr<World> world = make_world(def);
  std::unique_ptr<World> restored = make_world(def);
  BodyDef zone = lockstep::sim::default_body_def();
  zone.type = BodyType::static_body;
  zone.shape.type = ShapeType::box;
  zone.shape.half_extents = Vec3{2, 0.5f, 2};
  zone.shape.sensor = true;
  zone.position = Vec3{0, 5, 0};
  const BodyId goal = add(*world, zone);
  const BodyId ball = add(*world, sphere_def(Vec3{0, 8, 0}, 0.25f));
  std::vector<std::pair<int, lockstep::sim::ContactEventType>> seen, seen_restored;
  bool inside_saved = false;
  for (int t = 0; t < 120; ++t) {
    ASSERT_TRUE(world->step().ok());
    for (const lockstep::sim::SensorEvent& e : world->sensor_events()) {
      EXPECT_EQ(e.sensor, goal);
      EXPECT_EQ(e.visitor, ball);
      seen.emplace_back(t, e.type);
    }
    if (!inside_saved && world->last_step_stats().sensor_overlaps == 1) {
      inside_saved = true;
      std::vector<uint8_t> bytes(world->snapshot_size());
      size_t written = 0;
      ASSERT_EQ(world->save_snapshot(bytes, &written), Error::none);
      bytes.resize(written);
      ASSERT_EQ(restored->restore_snapshot(bytes), Error::none);
      continue;
    }
    if (inside_saved) {
      ASSERT_TRUE(restored->step().ok());
      EXPECT_EQ(restored->state_hash(), world->state_hash()) << "step " << t;
      for (const lockstep::sim::SensorEvent& e : restored->sensor_events())
        seen_restored.emplace_back(t, e.type);
    }
  }
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].second, lockstep::sim::ContactEventType::begin);
  EXPECT_EQ(seen[1].second, lockstep::sim::ContactEventType::end);
  // The restored world saw only the end, at the same step.
  ASSERT_EQ(seen_restored.size(), 1u);
  EXPECT_EQ(seen_restored[0], seen[1]);
}

// A box that falls asleep inside a static sensor stays inside (no end), and when an input wakes
// it while it is still inside, no second begin; when it is pushed out, one end.
TEST(SimWorld, SleepingVisitorStaysInsideItsSensor) {
  std::unique_ptr<World> world = make_world();
  add(*world, ground_def());
  BodyDef zone = lockstep::sim::default_body_def();
  zone.type = BodyType::static_body;
  zone.shape.type = ShapeType::box;
  zone.shape.half_extents = Vec3{1, 1, 1};
  zone.shape.sensor = true;
  zone.position = Vec3{0, 1, 0};
  add(*world, zone);
  BodyDef crate = box_body(Vec3{0, 0.25f, 0});
  crate.shape.half_extents = Vec3{0.25f, 0.25f, 0.25f};
  crate.allow_sleep = true;
  const BodyId id = add(*world, crate);
  int begins = 0, ends = 0;
  auto run = [&](int steps) {
    for (int t = 0; t < steps; ++t) {
      ASSERT_TRUE(world->step().ok());
      for (const lockstep::sim::SensorEvent& e : world->sensor_events())
        (e.type == lockstep::sim::ContactEventType::begin ? begins : ends) += 1;
    }
  };
  run(120);
  BodyView v{};
  ASSERT_EQ(world->get_body(id, &v), Error::none);
  ASSERT_TRUE(v.asleep);
  EXPECT_EQ(begins, 1);
  EXPECT_EQ(ends, 0);
  EXPECT_EQ(world->last_step_stats().sensor_overlaps, 1u);  // held while asleep
  // A small nudge wakes it; it stays inside.
  ASSERT_EQ(world->apply_impulse(id, Vec3{0.1f, 0, 0}, v.position), Error::none);
  run(30);
  EXPECT_EQ(begins, 1);
  EXPECT_EQ(ends, 0);
  // A shove out of the zone: one end.
  ASSERT_EQ(world->set_linear_velocity(id, Vec3{6, 0, 0}), Error::none);
  run(60);
  EXPECT_EQ(begins, 1);
  EXPECT_EQ(ends, 1);
}

// Sensor overlaps beyond max_contact_pairs are dropped and counted, never grown.
TEST(SimWorld, SensorOverlapsBeyondCapacityAreCounted) {
  WorldDef def = lockstep::sim::default_world_def();
  def.gravity = Vec3{0, 0, 0};
  def.max_contact_pairs = 2;
  std::unique_ptr<World> world = make_world(def);
  BodyDef zone = lockstep::sim::default_body_def();
  zone.type = BodyType::static_body;
  zone.shape.type = ShapeType::box;
  zone.shape.half_extents = Vec3{5, 5, 5};
  zone.shape.sensor = true;
  add(*world, zone);
  for (int i = 0; i < 4; ++i)
    add(*world, sphere_def(Vec3{2.0f * float(i) - 3.0f, 0, 0}, 0.25f));
  const lockstep::sim::StepStatus status = world->step();
  EXPECT_TRUE(status.overflow & lockstep::sim::overflow_sensor_overlaps);
  EXPECT_EQ(world->last_step_stats().sensor_overlaps, 2u);
  EXPECT_EQ(world->last_step_stats().dropped_sensor_overlaps, 2u);
  EXPECT_EQ(world->sensor_events().size(), 2u);
}

TEST(SimWorld, FingerprintFollowsTheDefinition) {
  using lockstep::sim::world_def_fingerprint;
  WorldDef a = lockstep::sim::default_world_def();
  WorldDef b = a;
  EXPECT_EQ(world_def_fingerprint(a), world_def_fingerprint(b));
  b.measure_stage_times = !a.measure_stage_times;  // timing only: same simulation
  EXPECT_EQ(world_def_fingerprint(a), world_def_fingerprint(b));
  b = a;
  b.max_events += 1;
  EXPECT_NE(world_def_fingerprint(a), world_def_fingerprint(b));
  b = a;
  b.contact_reuse_angle_rad = 0;
  EXPECT_NE(world_def_fingerprint(a), world_def_fingerprint(b));
  b = a;
  b.gravity.z = -0.0f;  // a different bit pattern is a different definition
  EXPECT_NE(world_def_fingerprint(a), world_def_fingerprint(b));
}

TEST(SimWorld, ErrorMessagesNameEveryError) {
  for (int e = 0; e <= static_cast<int>(Error::snapshot_corrupt); ++e) {
    const char* message = lockstep::sim::error_message(static_cast<Error>(e));
    ASSERT_NE(message, nullptr);
    EXPECT_GT(std::string(message).size(), 5u);
    EXPECT_NE(std::string(message), "unknown error");
  }
}

// ---- contact points (tools) ---------------------------------------------------------------------

// A sphere of radius 0.5 m resting on the plane y = 0 at x = 3: its contact points sit under its
// centre on the plane (within 1 cm: soft contacts settle a few mm deep), the normal points from
// the plane up into the sphere, and the plane sees the same point with the normal reversed.
// A restored snapshot gives the same points (they are read from the warm-start cache, state).
TEST(SimWorld, ContactPointsOfARestingSphereLieUnderItWithTheNormalTowardsIt) {
  auto world = make_world();
  const BodyId ground = add(*world, ground_def());
  const BodyId ball = add(*world, sphere_def({3, 0.5f, 0}));
  const BodyId far_ball = add(*world, sphere_def({10, 5, 0}));
  for (int i = 0; i < 30; ++i)
    world->step();
  std::vector<lockstep::sim::ContactPointView> points(8);
  const uint32_t n = world->contact_points(ball, points);
  ASSERT_GE(n, 1u);
  ASSERT_LE(n, points.size());
  for (uint32_t i = 0; i < n; ++i) {
    EXPECT_EQ(points[i].other, ground);
    EXPECT_NEAR(points[i].point.x, 3.0f, 0.01f);
    EXPECT_NEAR(points[i].point.y, 0.0f, 0.01f);
    EXPECT_NEAR(points[i].point.z, 0.0f, 0.01f);
    EXPECT_NEAR(points[i].normal.y, 1.0f, 1e-4f);
    EXPECT_LE(points[i].separation_m, 0.01f);
    EXPECT_GT(points[i].normal_impulse, 0.0f);
  }
  std::vector<lockstep::sim::ContactPointView> from_ground(8);
  ASSERT_EQ(world->contact_points(ground, from_ground), n);
  EXPECT_EQ(from_ground[0].other, ball);
  EXPECT_NEAR(from_ground[0].normal.y, -1.0f, 1e-4f);
  // The ball still falling touches nothing; a dead or null handle has no points; a short span
  // gets what fits and the full count.
  EXPECT_EQ(world->contact_points(far_ball, points), 0u);
  EXPECT_EQ(world->contact_points(BodyId{}, points), 0u);
  EXPECT_EQ(world->contact_points(ball, std::span<lockstep::sim::ContactPointView>()), n);

  std::vector<uint8_t> snapshot(world->snapshot_size());
  size_t written = 0;
  ASSERT_EQ(world->save_snapshot(snapshot, &written), Error::none);
  auto copy = make_world();
  ASSERT_EQ(copy->restore_snapshot(std::span<const uint8_t>(snapshot.data(), written)),
            Error::none);
  std::vector<lockstep::sim::ContactPointView> restored(8);
  ASSERT_EQ(copy->contact_points(ball, restored), n);
  EXPECT_EQ(restored[0].point.x, points[0].point.x);
  EXPECT_EQ(restored[0].normal.y, points[0].normal.y);
  ASSERT_EQ(world->destroy_body(ball), Error::none);
  EXPECT_EQ(world->contact_points(ball, points), 0u);
}

}  // namespace
