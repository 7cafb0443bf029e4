// Sleeping with islands (sim/src/island.h): bodies at rest fall asleep together after
// WorldDef::time_to_sleep_s, cost nothing while asleep, and wake together when touched by an
// awake body, an input, a setter, or the loss of a support. The state (asleep, timers, islands)
// is hashed; snapshots of sleeping worlds are covered in sim_state_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lockstep/sim/scene.h"
#include "lockstep/sim/world.h"
#include "world_data.h"

namespace {

using lockstep::sim::BodyDef;
using lockstep::sim::BodyId;
using lockstep::sim::BodyType;
using lockstep::sim::BodyView;
using lockstep::sim::ContactEventType;
using lockstep::sim::Error;
using lockstep::sim::Input;
using lockstep::sim::Quat;
using lockstep::sim::ShapeType;
using lockstep::sim::StepStats;
using lockstep::sim::Vec3;
using lockstep::sim::World;
using lockstep::sim::WorldDef;

constexpr float kDt = 1.0f / 60.0f;

WorldDef small_def() {
  WorldDef def = lockstep::sim::default_world_def();
  def.max_bodies = 64;
  def.max_contact_pairs = 512;
  def.max_contact_points = 2048;
  def.max_candidate_pairs = 2048;
  def.measure_stage_times = false;
  return def;
}

BodyId add_ground(World& world) {
  BodyDef def = lockstep::sim::default_body_def();
  def.type = BodyType::static_body;
  def.shape.type = ShapeType::plane;
  BodyId id{};
  EXPECT_EQ(world.create_body(def, &id), Error::none);
  return id;
}

BodyId add_box(World& world, Vec3 position, BodyType type = BodyType::dynamic,
               Vec3 half = {0.5f, 0.5f, 0.5f}, bool allow_sleep = true) {
  BodyDef def = lockstep::sim::default_body_def();
  def.type = type;
  def.shape.type = ShapeType::box;
  def.shape.half_extents = half;
  def.position = position;
  def.allow_sleep = allow_sleep;
  BodyId id{};
  EXPECT_EQ(world.create_body(def, &id), Error::none);
  return id;
}

// `count` unit boxes stacked on the ground at (x, z), resting (touching, no gap).
std::vector<BodyId> add_stack(World& world, float x, int count, float z = 0.0f) {
  std::vector<BodyId> ids;
  for (int i = 0; i < count; ++i)
    ids.push_back(add_box(world, {x, 0.5f + static_cast<float>(i), z}));
  return ids;
}

BodyView view(const World& world, BodyId id) {
  BodyView v{};
  EXPECT_EQ(world.get_body(id, &v), Error::none);
  return v;
}

bool asleep(const World& world, BodyId id) {
  return view(world, id).asleep;
}

int count_asleep(const World& world, const std::vector<BodyId>& ids) {
  int n = 0;
  for (BodyId id : ids)
    n += asleep(world, id) ? 1 : 0;
  return n;
}

// Steps until every body of `ids` sleeps; the number of steps taken, or -1 after `max_steps`.
int step_until_asleep(World& world, const std::vector<BodyId>& ids, int max_steps = 1200) {
  for (int i = 1; i <= max_steps; ++i) {
    world.step();
    if (count_asleep(world, ids) == static_cast<int>(ids.size())) return i;
  }
  return -1;
}

bool same_bits(float a, float b) {
  return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b);
}
bool same_pose(const BodyView& a, const BodyView& b) {
  return same_bits(a.position.x, b.position.x) && same_bits(a.position.y, b.position.y) &&
         same_bits(a.position.z, b.position.z) && same_bits(a.orientation.x, b.orientation.x) &&
         same_bits(a.orientation.y, b.orientation.y) &&
         same_bits(a.orientation.z, b.orientation.z) && same_bits(a.orientation.w, b.orientation.w);
}

uint32_t slot_of(BodyId id) {
  return id.index1 - 1;
}

// ---- falling asleep -------------------------------------------------------------------------

TEST(SimSleep, DefaultsAndValidation) {
  WorldDef def = lockstep::sim::default_world_def();
  EXPECT_TRUE(def.enable_sleep);
  EXPECT_EQ(def.sleep_speed_threshold_mps, 0.05f);
  EXPECT_EQ(def.time_to_sleep_s, 0.5f);
  EXPECT_TRUE(lockstep::sim::default_body_def().allow_sleep);
  const uint64_t fingerprint = lockstep::sim::world_def_fingerprint(def);
  struct Case {
    float threshold, time;
    Error want;
  };
  const Case cases[] = {{0.0f, 0.5f, Error::none},
                        {1000.0f, 10000.0f, Error::none},
                        {-0.01f, 0.5f, Error::invalid_argument},
                        {0.05f, 0.0f, Error::invalid_argument},
                        {0.05f, -1.0f, Error::invalid_argument},
                        {0.05f, 1.0e5f, Error::invalid_argument},
                        {NAN, 0.5f, Error::non_finite},
                        {0.05f, INFINITY, Error::non_finite}};
  for (const Case& c : cases) {
    WorldDef d = def;
    d.sleep_speed_threshold_mps = c.threshold;
    d.time_to_sleep_s = c.time;
    EXPECT_EQ(lockstep::sim::validate_world_def(d), c.want) << c.threshold << " " << c.time;
  }
  // Every sleeping field is part of the fingerprint.
  WorldDef d = def;
  d.enable_sleep = false;
  EXPECT_NE(lockstep::sim::world_def_fingerprint(d), fingerprint);
  d = def;
  d.sleep_speed_threshold_mps = 0.06f;
  EXPECT_NE(lockstep::sim::world_def_fingerprint(d), fingerprint);
  d = def;
  d.time_to_sleep_s = 0.75f;
  EXPECT_NE(lockstep::sim::world_def_fingerprint(d), fingerprint);
}

TEST(SimSleep, SceneTextCarriesTheSleepingKeys) {
  lockstep::sim::Scene scene;
  ASSERT_TRUE(lockstep::sim::make_builtin_scene("bounce", &scene));
  scene.def.enable_sleep = false;
  scene.def.sleep_speed_threshold_mps = 0.07f;
  scene.def.time_to_sleep_s = 1.25f;
  scene.bodies[1].allow_sleep = false;
  const std::string text = lockstep::sim::format_scene_text(scene);
  EXPECT_NE(text.find(" enable_sleep=0"), std::string::npos);
  EXPECT_NE(text.find(" sleep_speed_threshold=0.07"), std::string::npos);
  EXPECT_NE(text.find(" time_to_sleep=1.25"), std::string::npos);
  EXPECT_EQ(text.find("allow_sleep=1"), std::string::npos);  // the default is left out
  EXPECT_NE(text.find("allow_sleep=0"), std::string::npos);
  lockstep::sim::Scene back;
  std::string error;
  ASSERT_TRUE(lockstep::sim::parse_scene_text(text, &back, &error)) << error;
  EXPECT_FALSE(back.def.enable_sleep);
  EXPECT_EQ(back.def.sleep_speed_threshold_mps, 0.07f);
  EXPECT_EQ(back.def.time_to_sleep_s, 1.25f);
  EXPECT_EQ(lockstep::sim::world_def_fingerprint(back.def),
            lockstep::sim::world_def_fingerprint(scene.def));
  ASSERT_EQ(back.bodies.size(), scene.bodies.size());
  for (size_t i = 0; i < back.bodies.size(); ++i)
    EXPECT_EQ(back.bodies[i].allow_sleep, i != 1) << i;
  // Out-of-range values are refused with the line.
  EXPECT_FALSE(lockstep::sim::parse_scene_text("world time_to_sleep=0\n", &back, &error));
  EXPECT_NE(error.find("invalid world"), std::string::npos) << error;
  EXPECT_FALSE(lockstep::sim::parse_scene_text("world enable_sleep=maybe\n", &back, &error));
  EXPECT_NE(error.find("not a boolean"), std::string::npos) << error;
}

TEST(SimSleep, BoxOnTheGroundFallsAsleepAfterTimeToSleepAtRest) {
  const WorldDef def = small_def();
  std::unique_ptr<World> world = World::create(def);
  add_ground(*world);
  const BodyId box = add_box(*world, {0, 0.7f, 0});  // dropped from 20 cm
  const float extent = std::sqrt(3.0f) * 0.5f;
  int rest_steps = 0, slept_at = -1;
  lockstep::sim::Vec3 before = view(*world, box).position;
  lockstep::sim::Quat turned_from = view(*world, box).orientation;
  for (int tick = 1; tick <= 600 && slept_at < 0; ++tick) {
    world->step();
    const BodyView v = view(*world, box);
    if (v.asleep) {
      slept_at = tick;
      break;
    }
    // The rest test of island.cpp: this step's velocities, and how far the step moved and turned
    // the box (the solver's Δp, Δθ; here from the poses: the same up to rounding, so ticks within
    // 1 % of a threshold are not judged and the count restarts from the body's own timer).
    const float t = def.sleep_speed_threshold_mps;
    const float speed = std::sqrt(lockstep::sim::dot(v.linear_velocity, v.linear_velocity));
    const float spin = std::sqrt(lockstep::sim::dot(v.angular_velocity, v.angular_velocity));
    const lockstep::sim::Vec3 d = v.position - before;
    const lockstep::sim::Quat q = v.orientation * lockstep::sim::conjugate(turned_from);
    const float turn = 2.0f * std::sqrt(q.x * q.x + q.y * q.y + q.z * q.z);  // small angles (rad)
    before = v.position;
    turned_from = v.orientation;
    const float worst =
        std::max({speed / t, spin * extent / t, std::sqrt(lockstep::sim::dot(d, d)) / (t * kDt),
                  turn * extent / (t * kDt)});
    if (worst > 0.99f && worst < 1.01f) {
      rest_steps = static_cast<int>(v.sleep_timer_s / kDt + 0.5f);
      continue;
    }
    const bool resting = worst <= 1.0f;
    rest_steps = resting ? rest_steps + 1 : 0;
    if (resting) {
      EXPECT_NEAR(v.sleep_timer_s, static_cast<float>(rest_steps) * kDt, 1e-5f) << tick;
    } else {
      EXPECT_EQ(v.sleep_timer_s, 0.0f) << tick;
    }
  }
  ASSERT_GT(slept_at, 0) << "never fell asleep";
  // time_to_sleep / dt = 30 steps at rest, the last of them the step that put it to sleep (the
  // timer is a float sum of dt, which may reach 0.5 one step late).
  EXPECT_GE(rest_steps + 1, 30);
  EXPECT_LE(rest_steps + 1, 31);
  // It fell 20 cm (~0.2 s), landed, and slept about time_to_sleep later.
  EXPECT_LT(slept_at, 90);

  const BodyView first = view(*world, box);
  EXPECT_EQ(first.sleep_timer_s, def.time_to_sleep_s);
  EXPECT_TRUE(first.linear_velocity == Vec3{});
  EXPECT_TRUE(first.angular_velocity == Vec3{});
  EXPECT_NEAR(first.position.y, 0.5f, 0.01f);
  const StepStats& at_sleep = world->last_step_stats();
  EXPECT_EQ(at_sleep.sleeping_bodies, 1u);
  EXPECT_EQ(at_sleep.islands, 1u);
  // Asleep: no integration, no pair, no manifold, the pose kept bit for bit.
  for (int i = 0; i < 120; ++i) {
    world->step();
    const StepStats& st = world->last_step_stats();
    ASSERT_EQ(st.awake_dynamic_bodies, 0u);
    ASSERT_EQ(st.sleeping_bodies, 1u);
    ASSERT_EQ(st.islands, 0u);
    ASSERT_EQ(st.candidate_pairs, 0u);
    ASSERT_EQ(st.manifolds, 0u);
    ASSERT_EQ(world->events().size(), 0u);
    const BodyView v = view(*world, box);
    ASSERT_TRUE(v.asleep);
    ASSERT_TRUE(same_pose(v, first));
    ASSERT_TRUE(v.linear_velocity == Vec3{});
  }
  // Its support is remembered: the held contact keeps its impulse (≈ m·g·h, one substep's).
  const float h = kDt / static_cast<float>(lockstep::sim::default_world_def().substeps);
  EXPECT_NEAR(world->normal_impulse_sum(box), first.mass_kg * 9.81f * h,
              0.05f * first.mass_kg * 9.81f * h);
}

TEST(SimSleep, AStackFallsAsleepAsOneIsland) {
  std::unique_ptr<World> world = World::create(small_def());
  add_ground(*world);
  const std::vector<BodyId> stack = add_stack(*world, 0.0f, 5);
  const BodyId lone = add_box(*world, {4.0f, 0.5f, 0});
  std::vector<int> slept_at(stack.size(), -1);
  int lone_slept_at = -1;
  uint32_t end_events = 0;
  for (int tick = 1; tick <= 600; ++tick) {
    world->step();
    for (const lockstep::sim::ContactEvent& e : world->events())
      end_events += e.type == ContactEventType::end ? 1 : 0;
    for (size_t i = 0; i < stack.size(); ++i) {
      if (slept_at[i] < 0 && asleep(*world, stack[i])) slept_at[i] = tick;
    }
    if (lone_slept_at < 0 && asleep(*world, lone)) lone_slept_at = tick;
  }
  ASSERT_GT(slept_at[0], 0);
  for (size_t i = 1; i < stack.size(); ++i)
    EXPECT_EQ(slept_at[i], slept_at[0]) << "box " << i;
  EXPECT_GT(lone_slept_at, 0);
  // Falling asleep ends no contact.
  EXPECT_EQ(end_events, 0u);
  // One island named after its smallest slot; the lone box is an island of its own.
  const lockstep::sim::WorldData& w = world_data(*world);
  for (BodyId id : stack)
    EXPECT_EQ(w.bodies[slot_of(id)].island, slot_of(stack[0]));
  EXPECT_EQ(w.bodies[slot_of(lone)].island, slot_of(lone));
  // The held contacts stay in the warm-start cache: the stack's 4 box–box and 1 box–ground,
  // and the lone box's ground contact.
  EXPECT_EQ(w.cache.manifold_count, 4u + 1u + 1u);
  EXPECT_GT(world->normal_impulse_sum(stack[0]), 0.0f);
}

TEST(SimSleep, EnableSleepFalseNeverSleeps) {
  WorldDef def = small_def();
  def.enable_sleep = false;
  std::unique_ptr<World> world = World::create(def);
  add_ground(*world);
  const std::vector<BodyId> stack = add_stack(*world, 0.0f, 3);
  for (int tick = 1; tick <= 600; ++tick) {
    world->step();
    const StepStats& st = world->last_step_stats();
    ASSERT_EQ(st.sleeping_bodies, 0u);
    ASSERT_EQ(st.islands, 0u);
    ASSERT_EQ(st.awake_dynamic_bodies, 3u);
    for (BodyId id : stack) {
      const BodyView v = view(*world, id);
      ASSERT_FALSE(v.asleep);
      ASSERT_EQ(v.sleep_timer_s, 0.0f);
    }
  }
}

TEST(SimSleep, AllowSleepFalseKeepsItsWholeIslandAwake) {
  std::unique_ptr<World> world = World::create(small_def());
  add_ground(*world);
  const BodyId player = add_box(*world, {0, 0.5f, 0}, BodyType::dynamic, {0.5f, 0.5f, 0.5f}, false);
  const BodyId rider = add_box(*world, {0, 1.5f, 0});
  const BodyId other = add_box(*world, {4.0f, 0.5f, 0});
  for (int tick = 1; tick <= 600; ++tick)
    world->step();
  EXPECT_FALSE(asleep(*world, player));
  EXPECT_FALSE(view(*world, player).allow_sleep);
  EXPECT_EQ(view(*world, player).sleep_timer_s, 0.0f);
  EXPECT_FALSE(asleep(*world, rider));  // same island
  EXPECT_TRUE(asleep(*world, other));
}

// ---- waking -----------------------------------------------------------------------------------

TEST(SimSleep, ABodyHittingASleepingStackWakesTheWholeStackWarmStarted) {
  std::unique_ptr<World> world = World::create(small_def());
  add_ground(*world);
  const std::vector<BodyId> stack = add_stack(*world, 0.0f, 5);
  ASSERT_GT(step_until_asleep(*world, stack), 0);
  for (int i = 0; i < 10; ++i)
    world->step();
  const std::vector<BodyView> before = [&] {
    std::vector<BodyView> v;
    for (BodyId id : stack)
      v.push_back(view(*world, id));
    return v;
  }();

  // A small heavy box thrown at the top box from the side.
  BodyDef thrown = lockstep::sim::default_body_def();
  thrown.shape.type = ShapeType::box;
  thrown.shape.half_extents = {0.2f, 0.2f, 0.2f};
  thrown.shape.density = 8000.0f;
  thrown.position = {-2.0f, 4.6f, 0};
  thrown.linear_velocity = {10.0f, 0, 0};
  BodyId projectile{};
  ASSERT_EQ(world->create_body(thrown, &projectile), Error::none);
  EXPECT_EQ(count_asleep(*world, stack), 5);  // a dynamic body wakes by contact only

  int woke_at = -1;
  for (int tick = 1; tick <= 60; ++tick) {
    world->step();
    const int sleeping = count_asleep(*world, stack);
    if (sleeping == 5) {
      // Still asleep: not a bit moved.
      for (size_t i = 0; i < stack.size(); ++i)
        ASSERT_TRUE(same_pose(view(*world, stack[i]), before[i]));
      continue;
    }
    // The whole island wakes at once, in the step of the first manifold.
    ASSERT_EQ(sleeping, 0) << "part of the island woke";
    woke_at = tick;
    const StepStats& st = world->last_step_stats();
    EXPECT_EQ(st.awake_dynamic_bodies, 6u);
    EXPECT_EQ(st.sleeping_bodies, 0u);
    // Warm started from the held impulses: every held point matched its cached one.
    EXPECT_GE(st.warm_started_points, 4u * 4u + 4u);
    // The held contacts neither begin nor end; only the projectile's contact begins.
    for (const lockstep::sim::ContactEvent& e : world->events()) {
      EXPECT_EQ(e.type, ContactEventType::begin);
      EXPECT_TRUE(e.a == projectile || e.b == projectile);
    }
    // Timers restarted at the wake, before this step's rest test (which adds at most dt).
    for (BodyId id : stack)
      EXPECT_LE(view(*world, id).sleep_timer_s, kDt);
    break;
  }
  ASSERT_GT(woke_at, 0) << "the stack never woke";
  // And it was hit: the top box moves along x.
  for (int i = 0; i < 30; ++i)
    world->step();
  EXPECT_GT(view(*world, stack[4]).position.x, 0.05f);
  // Everything comes to rest again and sleeps.
  std::vector<BodyId> all = stack;
  all.push_back(projectile);
  EXPECT_GT(step_until_asleep(*world, all, 1800), 0);
}

TEST(SimSleep, InputsAndSettersWakeTheIslandImmediately) {
  std::unique_ptr<World> world = World::create(small_def());
  add_ground(*world);
  const std::vector<BodyId> stack = add_stack(*world, 0.0f, 3);
  const std::vector<BodyId> other = add_stack(*world, 5.0f, 2);
  std::vector<BodyId> all = stack;
  all.insert(all.end(), other.begin(), other.end());

  struct Wake {
    const char* what;
    Error (*call)(World&, BodyId);
  };
  const Wake wakes[] = {
      {"queue_input",
       [](World& w, BodyId id) {
         Input in;
         in.player = 1;
         in.body = id;
         return w.queue_input(in);  // even a zero impulse
       }},
      {"set_linear_velocity",
       [](World& w, BodyId id) {
         return w.set_linear_velocity(id, {0, 0, 0});
       }},
      {"set_angular_velocity",
       [](World& w, BodyId id) {
         return w.set_angular_velocity(id, {0, 0.1f, 0});
       }},
      {"apply_impulse",
       [](World& w, BodyId id) {
         BodyView v{};
         w.get_body(id, &v);
         return w.apply_impulse(id, {1, 0, 0}, v.position);
       }},
      {"set_transform",
       [](World& w, BodyId id) {
         BodyView v{};
         w.get_body(id, &v);
         return w.set_transform(id, v.position, v.orientation);
       }},
  };
  for (const Wake& wake : wakes) {
    ASSERT_GT(step_until_asleep(*world, all), 0) << wake.what;
    const uint64_t hash = world->state_hash();
    // A rejected call wakes nothing.
    EXPECT_NE(world->set_linear_velocity(stack[1], {NAN, 0, 0}), Error::none);
    EXPECT_EQ(count_asleep(*world, stack), 3) << wake.what;
    EXPECT_EQ(world->state_hash(), hash);
    // The call on the middle box wakes the three boxes before any step; the other stack sleeps.
    ASSERT_EQ(wake.call(*world, stack[1]), Error::none) << wake.what;
    EXPECT_EQ(count_asleep(*world, stack), 0) << wake.what;
    EXPECT_EQ(count_asleep(*world, other), 2) << wake.what;
    for (BodyId id : stack)
      EXPECT_EQ(view(*world, id).sleep_timer_s, 0.0f) << wake.what;
    EXPECT_NE(world->state_hash(), hash) << wake.what;
    world->step();
    EXPECT_EQ(world->last_step_stats().awake_dynamic_bodies, 3u) << wake.what;
  }
  // On an awake body a setter restarts its rest timer.
  for (int i = 0; i < 10; ++i)
    world->step();
  ASSERT_GT(view(*world, stack[0]).sleep_timer_s, 0.0f);
  ASSERT_EQ(world->set_angular_velocity(stack[0], {0, 0, 0}), Error::none);
  EXPECT_EQ(view(*world, stack[0]).sleep_timer_s, 0.0f);
}

TEST(SimSleep, DestroyingASupportWakesWhatRestedOnItAndItFalls) {
  std::unique_ptr<World> world = World::create(small_def());
  add_ground(*world);
  // A box on a static table, and a dynamic stack whose bottom box will be destroyed.
  const BodyId table = add_box(*world, {0, 1.0f, 0}, BodyType::static_body, {1.0f, 1.0f, 1.0f});
  const BodyId on_table = add_box(*world, {0, 2.5f, 0});
  const std::vector<BodyId> stack = add_stack(*world, 5.0f, 3);
  const BodyId bystander = add_box(*world, {-5.0f, 0.5f, 0});
  std::vector<BodyId> all = stack;
  all.push_back(on_table);
  all.push_back(bystander);
  ASSERT_GT(step_until_asleep(*world, all), 0);

  ASSERT_EQ(world->destroy_body(table), Error::none);
  EXPECT_FALSE(asleep(*world, on_table));
  EXPECT_EQ(count_asleep(*world, stack), 3);
  EXPECT_TRUE(asleep(*world, bystander));
  ASSERT_EQ(world->destroy_body(stack[0]), Error::none);
  EXPECT_FALSE(asleep(*world, stack[1]));
  EXPECT_FALSE(asleep(*world, stack[2]));
  EXPECT_TRUE(asleep(*world, bystander));

  const float table_top_y = view(*world, on_table).position.y;
  const float stack_y = view(*world, stack[1]).position.y;
  for (int i = 0; i < 60; ++i)
    world->step();
  // Both fell by about a metre onto the ground / the lost box's place.
  EXPECT_LT(view(*world, on_table).position.y, table_top_y - 1.5f);
  EXPECT_LT(view(*world, stack[1]).position.y, stack_y - 0.9f);
  EXPECT_TRUE(asleep(*world, bystander));
}

TEST(SimSleep, KinematicBodies) {
  std::unique_ptr<World> world = World::create(small_def());
  add_ground(*world);
  // A box on a resting kinematic platform falls asleep; the platform starting to move wakes it
  // in the next step (by contact), not at the call.
  const BodyId platform = add_box(*world, {0, 0.25f, 0}, BodyType::kinematic, {2.0f, 0.25f, 2.0f});
  const BodyId box = add_box(*world, {0, 1.0f, 0});
  ASSERT_GT(step_until_asleep(*world, {box}), 0);
  ASSERT_EQ(world->set_linear_velocity(platform, {0, 0.5f, 0}), Error::none);
  EXPECT_TRUE(asleep(*world, box));
  world->step();
  EXPECT_FALSE(asleep(*world, box));
  // Riding the moving platform it never sleeps, though it moves slower than the threshold.
  ASSERT_EQ(world->set_linear_velocity(platform, {0, 0.01f, 0}), Error::none);
  for (int i = 0; i < 300; ++i) {
    world->step();
    ASSERT_FALSE(asleep(*world, box));
  }
  // Stopped, it sleeps again.
  ASSERT_EQ(world->set_linear_velocity(platform, {0, 0, 0}), Error::none);
  EXPECT_GT(step_until_asleep(*world, {box}), 0);
}

TEST(SimSleep, StaticBodiesCreatedOrMovedOntoSleepersWakeThem) {
  std::unique_ptr<World> world = World::create(small_def());
  add_ground(*world);
  const BodyId a = add_box(*world, {0, 0.5f, 0});
  const BodyId b = add_box(*world, {5.0f, 0.5f, 0});
  ASSERT_GT(step_until_asleep(*world, {a, b}), 0);
  // A static wall created overlapping a wakes a (its pairs are not swept while it sleeps).
  const BodyId wall = add_box(*world, {0.9f, 0.5f, 0}, BodyType::static_body, {0.5f, 2.0f, 2.0f});
  EXPECT_FALSE(asleep(*world, a));
  EXPECT_TRUE(asleep(*world, b));
  ASSERT_GT(step_until_asleep(*world, {a}), 0);
  // Moved away, it wakes what it touched; moved into b, it wakes b.
  ASSERT_EQ(world->set_transform(wall, {5.9f, 0.5f, 0}, Quat{}), Error::none);
  EXPECT_FALSE(asleep(*world, a));
  EXPECT_FALSE(asleep(*world, b));
}

// ---- state ------------------------------------------------------------------------------------

TEST(SimSleep, TheHashCoversTheSleepState) {
  std::unique_ptr<World> world = World::create(small_def());
  add_ground(*world);
  const BodyId box = add_box(*world, {0, 0.5f, 0});
  ASSERT_GT(step_until_asleep(*world, {box}), 0);
  lockstep::sim::WorldData& w = world_data(*world);
  lockstep::sim::BodyRecord& r = w.bodies[slot_of(box)];
  const uint64_t hash = world->state_hash();
  // Only the flag differs (velocities are 0 either way): another state, another hash.
  r.asleep = false;
  r.island = 0;
  w.hash_dirty = true;
  const uint64_t awake_hash = world->state_hash();
  EXPECT_NE(awake_hash, hash);
  // Only the timer differs.
  r.sleep_timer_s = 0.25f;
  w.hash_dirty = true;
  EXPECT_NE(world->state_hash(), awake_hash);
  r.asleep = true;
  r.island = slot_of(box);
  r.sleep_timer_s = w.def.time_to_sleep_s;
  w.hash_dirty = true;
  EXPECT_EQ(world->state_hash(), hash);
}

TEST(SimSleep, SleepingSceneStepsAreAPureFunctionOfTheState) {
  // Two worlds built the same way, one of them saved and restored into a fresh world at every
  // 40th tick: the same hashes while stacks sleep, wake (a thrown box) and sleep again.
  auto build = [](World& world) {
    add_ground(world);
    add_stack(world, 0.0f, 4);
    add_stack(world, 3.0f, 2);
  };
  auto script = [](World& world) {
    if (world.tick() == 150) {
      BodyDef thrown = lockstep::sim::default_body_def();
      thrown.shape.type = ShapeType::box;
      thrown.shape.half_extents = {0.25f, 0.25f, 0.25f};
      thrown.position = {-3.0f, 3.5f, 0};
      thrown.linear_velocity = {8.0f, 0, 0};
      BodyId id{};
      ASSERT_EQ(world.create_body(thrown, &id), Error::none);
    }
  };
  std::unique_ptr<World> a = World::create(small_def());
  std::unique_ptr<World> b = World::create(small_def());
  build(*a);
  build(*b);
  std::vector<uint8_t> bytes(a->max_snapshot_size());
  uint32_t max_sleeping = 0, mixed_steps = 0;
  for (int tick = 0; tick < 600; ++tick) {
    script(*a);
    script(*b);
    a->step();
    b->step();
    ASSERT_EQ(a->state_hash(), b->state_hash()) << "tick " << a->tick();
    const StepStats& st = a->last_step_stats();
    max_sleeping = st.sleeping_bodies > max_sleeping ? st.sleeping_bodies : max_sleeping;
    if (st.sleeping_bodies > 0 && st.awake_dynamic_bodies > 0) ++mixed_steps;
    if (tick % 40 == 39) {
      size_t written = 0;
      ASSERT_EQ(b->save_snapshot(bytes, &written), Error::none);
      std::unique_ptr<World> fresh = World::create(small_def());
      ASSERT_EQ(fresh->restore_snapshot({bytes.data(), written}), Error::none);
      ASSERT_EQ(fresh->state_hash(), b->state_hash());
      b = std::move(fresh);
    }
  }
  EXPECT_GE(max_sleeping, 6u);  // both stacks slept
  EXPECT_GT(mixed_steps, 10u);  // and snapshots were taken with some bodies asleep, some awake
}

}  // namespace
