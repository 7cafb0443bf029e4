// The step never allocates: every global operator new/delete is replaced by a counting one, a
// 1,000-body scene is built (allocating freely), and then 600 steps with inputs every tick,
// state hashes, snapshots and edits between steps must not allocate a single byte; the same
// for a pile that falls asleep and is woken (sleeping, islands, held contacts).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "alloc_counter.h"
#include "lockstep/sim/query.h"
#include "lockstep/sim/scene.h"
#include "lockstep/sim/testing.h"
#include "lockstep/sim/world.h"

namespace {

using lockstep::sim::BodyDef;
using lockstep::sim::BodyId;
using lockstep::sim::Error;
using lockstep::sim::Input;
using lockstep::sim::World;
using lockstep::testing::AllocationCounter;

TEST(SimAlloc, CounterSeesAllocations) {
  // The counter itself must work, or the zero below proves nothing.
  AllocationCounter counter;
  auto p = std::make_unique<int>(7);
  std::vector<int> v(100);
  auto q = std::unique_ptr<double[]>(new double[4]);
  EXPECT_GE(counter.count(), 3u);
  EXPECT_EQ(*p + v[0] + static_cast<int>(q[0] * 0), 7);
}

TEST(SimAlloc, StepsSnapshotsAndEditsNeverAllocate) {
  lockstep::sim::Scene scene;
  ASSERT_TRUE(lockstep::sim::make_builtin_scene("pile", &scene));
  ASSERT_GE(scene.bodies.size(), 1000u);
  Error error = Error::none;
  std::unique_ptr<World> world = lockstep::sim::build_world(scene, &error);
  ASSERT_EQ(error, Error::none);
  ASSERT_NE(world, nullptr);

  // Everything the loop needs is allocated up front.
  std::vector<BodyId> ids(world->body_count());
  ASSERT_EQ(world->list_bodies(ids), ids.size());
  std::vector<uint8_t> snapshot(world->max_snapshot_size());
  std::vector<uint64_t> hashes;
  hashes.reserve(600);
  BodyDef extra = lockstep::sim::default_body_def();
  extra.position = {0, 30, 0};

  uint64_t allocations = 0;
  uint32_t overflow = 0;
  uint64_t contact_points = 0;
  {
    AllocationCounter counter;
    for (uint32_t tick = 0; tick < 600; ++tick) {
      // Four pushes per tick on dynamic bodies (the first 5 bodies are the floor and walls).
      for (uint32_t k = 0; k < 4; ++k) {
        Input in;
        in.player = 1 + k;
        in.sequence = tick;
        in.body = ids[5 + (tick * 7 + k * 131) % (static_cast<uint32_t>(ids.size()) - 5)];
        in.linear_impulse[0] = static_cast<int32_t>(tick % 64) * 1024 - 32 * 1024;
        in.linear_impulse[1] = 40 * 1024;
        in.angular_impulse[2] = static_cast<int32_t>(k) * 512;
        world->queue_input(in);
      }
      overflow |= world->step().overflow;
      contact_points += world->last_step_stats().contact_points;
      hashes.push_back(world->state_hash());
      (void)world->events();
      if (tick % 100 == 50) {
        // Between steps: edits (lazy hash), a snapshot, a restore, a create and a destroy.
        debug_perturb_position(*world, ids[10], {0, 1e-3f, 0});
        (void)world->state_hash();
        size_t written = 0;
        EXPECT_EQ(world->save_snapshot(snapshot, &written), Error::none);
        EXPECT_EQ(world->restore_snapshot({snapshot.data(), written}), Error::none);
        BodyId id{};
        EXPECT_EQ(world->create_body(extra, &id), Error::none);
        EXPECT_EQ(world->destroy_body(id), Error::none);
        lockstep::sim::BodyView view{};
        EXPECT_EQ(world->get_body(ids[20], &view), Error::none);
        (void)world->normal_impulse_sum(ids[20]);
      }
    }
    allocations = counter.count();
  }
  EXPECT_EQ(allocations, 0u);
  EXPECT_EQ(overflow, 0u);
  EXPECT_EQ(world->tick(), 600u);
  // The scene really collided: on average thousands of contact points per step at the end.
  EXPECT_GT(contact_points / 600, 1000u);
  EXPECT_GT(world->counters().inputs_accepted, 0u);
}

// With hulls: the hulls golden scene's pile and spawns, snapshots, a hull body created and
// destroyed, and ray and overlap queries against and with hulls never allocate.
TEST(SimAlloc, HullsNeverAllocate) {
  std::FILE* f = std::fopen(LOCKSTEP_SCENES_DIR "/hulls.txt", "rb");
  ASSERT_NE(f, nullptr);
  std::string text;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), f)) > 0)
    text.append(buffer, n);
  std::fclose(f);
  lockstep::sim::Scene scene;
  std::string message;
  ASSERT_TRUE(lockstep::sim::parse_scene_text(text, &scene, &message)) << message;
  Error error = Error::none;
  std::unique_ptr<World> world = lockstep::sim::build_world(scene, &error);
  ASSERT_NE(world, nullptr);
  std::vector<uint8_t> snapshot(world->max_snapshot_size());
  BodyDef extra = scene.bodies.back();
  extra.position = {0, 5, 0};
  BodyId found[16];
  uint64_t allocations = 0;
  uint64_t contact_points = 0;
  size_t next_action = 0;
  {
    AllocationCounter counter;
    for (uint64_t tick = 1; tick <= 600; ++tick) {
      for (; next_action < scene.actions.size() && scene.actions[next_action].tick == tick;
           ++next_action) {
        EXPECT_EQ(world->queue_command(scene.actions[next_action].command), Error::none);
      }
      world->step();
      contact_points += world->last_step_stats().contact_points;
      (void)world->state_hash();
      if (tick % 100 == 50) {
        size_t written = 0;
        EXPECT_EQ(world->save_snapshot(snapshot, &written), Error::none);
        EXPECT_EQ(world->restore_snapshot({snapshot.data(), written}), Error::none);
        BodyId id{};
        EXPECT_EQ(world->create_body(extra, &id), Error::none);
        EXPECT_EQ(world->destroy_body(id), Error::none);
        lockstep::sim::RayHit hit;
        const auto ray = lockstep::sim::ray_cast(*world, {0, 5, 0.1f}, {0, -10, 0}, {}, &hit);
        EXPECT_EQ(ray.count, 1u);
        const auto near =
            lockstep::sim::overlap(*world, extra.shape, {{0, 0.5f, 0}, {}}, {}, found);
        EXPECT_EQ(near.error, Error::none);
      }
    }
    allocations = counter.count();
  }
  EXPECT_EQ(allocations, 0u);
  EXPECT_GT(contact_points / 600, 100u);
}

// Level geometry: stepping bodies on a mesh and on a heightfield, and queries against them,
// never allocate (the trees and height grids were built at creation).
TEST(SimAlloc, MeshesAndHeightfieldsNeverAllocate) {
  for (const char* name : {"convex_vs_mesh", "terrain_pile"}) {
    SCOPED_TRACE(name);
    lockstep::sim::Scene scene;
    ASSERT_TRUE(lockstep::sim::make_builtin_scene(name, &scene));
    std::unique_ptr<World> world = lockstep::sim::build_world(scene);
    ASSERT_NE(world, nullptr);
    lockstep::sim::ShapeDef box;
    box.type = lockstep::sim::ShapeType::box;
    BodyId found[16];
    uint64_t allocations = 0, contact_points = 0;
    {
      AllocationCounter counter;
      for (int tick = 0; tick < 150; ++tick) {
        world->step();
        contact_points += world->last_step_stats().contact_points;
        (void)world->state_hash();
      }
      lockstep::sim::RayHit hit;
      EXPECT_EQ(lockstep::sim::ray_cast(*world, {1, 30, 1}, {0, -60, 0}, {}, &hit).error,
                Error::none);
      EXPECT_EQ(
          lockstep::sim::shape_cast(*world, box, {{1, 30, 1}, {}}, {0, -60, 0}, {}, &hit).error,
          Error::none);
      EXPECT_EQ(lockstep::sim::overlap(*world, box, {{0, 0, 0}, {}}, {}, found).error, Error::none);
      allocations = counter.count();
    }
    EXPECT_EQ(allocations, 0u);
    EXPECT_GT(contact_points, 1000u);
  }
}

// Spawn and destroy commands and velocity inputs every tick: the command stage never allocates.
TEST(SimAlloc, CommandsAndVelocityInputsNeverAllocate) {
  lockstep::sim::WorldDef def = lockstep::sim::default_world_def();
  def.max_bodies = 64;
  def.template_count = 1;
  ASSERT_TRUE(lockstep::sim::set_template_name(&def.templates[0], "crate"));
  def.templates[0].shape.type = lockstep::sim::ShapeType::box;
  std::unique_ptr<World> world = World::create(def);
  ASSERT_NE(world, nullptr);
  BodyDef floor = lockstep::sim::default_body_def();
  floor.type = lockstep::sim::BodyType::static_body;
  floor.shape.type = lockstep::sim::ShapeType::plane;
  BodyId floor_id{};
  ASSERT_EQ(world->create_body(floor, &floor_id), Error::none);
  lockstep::sim::StateFieldDef seconds;
  seconds.name[0] = 's';
  seconds.scope = lockstep::sim::StateScope::player;
  ASSERT_EQ(world->declare_state_field(seconds), Error::none);
  std::vector<uint8_t> snapshot(world->max_snapshot_size());
  uint64_t allocations = 0;
  uint32_t spawns = 0, destroys = 0;
  {
    AllocationCounter counter;
    for (uint32_t tick = 0; tick < 300; ++tick) {
      lockstep::sim::Command spawn;
      spawn.sequence = tick;
      spawn.position = {static_cast<float>(tick % 8) - 4.0f, 2.0f, 0.0f};
      if (world->queue_command(spawn) == Error::none) ++spawns;
      for (const lockstep::sim::CommandResult& r : world->command_results()) {
        if (r.type != lockstep::sim::CommandType::spawn || r.body.is_null()) continue;
        Input in;
        in.player = 1;
        in.sequence = tick;
        in.body = r.body;
        in.flags = lockstep::sim::input_sets_linear_velocity;
        in.linear_velocity[0] = 1024;
        world->queue_input(in);
        // Rules' commands: a body moved, game state changed, an event.
        lockstep::sim::Command move;
        move.type = tick % 2 == 0 ? lockstep::sim::CommandType::respawn
                                  : lockstep::sim::CommandType::apply_impulse;
        move.sequence = tick;
        move.body = r.body;
        move.position = {0.0f, 3.0f, 0.0f};
        move.linear_velocity = {0.0f, 1.0f, 0.0f};
        EXPECT_EQ(world->queue_command(move), Error::none);
        lockstep::sim::Command state;
        state.type = lockstep::sim::CommandType::add_state;
        state.sequence = tick;
        state.owner_player = 1 + tick % 64;
        state.score_delta = 1;
        EXPECT_EQ(world->queue_command(state), Error::none);
        state.type = lockstep::sim::CommandType::emit_event;
        EXPECT_EQ(world->queue_command(state), Error::none);
        if (tick % 3 == 0) {
          lockstep::sim::Command destroy;
          destroy.type = lockstep::sim::CommandType::destroy;
          destroy.sequence = tick;
          destroy.body = r.body;
          if (world->queue_command(destroy) == Error::none) ++destroys;
        }
      }
      if (tick % 50 == 25) {
        size_t written = 0;
        EXPECT_EQ(world->save_snapshot(snapshot, &written), Error::none);
        EXPECT_EQ(world->restore_snapshot({snapshot.data(), written}), Error::none);
      }
      world->step();
      (void)world->state_hash();
    }
    allocations = counter.count();
  }
  EXPECT_EQ(allocations, 0u);
  EXPECT_EQ(spawns, 300u);
  EXPECT_GT(destroys, 20u);
  EXPECT_GT(world->body_count(), 1u);
}

TEST(SimAlloc, SleepingAndWakingNeverAllocate) {
  // 144 stacks of two unit boxes on a floor settle and sleep within a few seconds; then a thrown
  // body, an input, a setter, a destroy and a snapshot round trip wake parts of them, which
  // sleep again. (The built-in pile does not settle completely: a few balls perched on others
  // roll off minutes in, so it is not used here.)
  lockstep::sim::Scene scene;
  scene.name = "stacks";
  scene.def = lockstep::sim::default_world_def();
  BodyDef floor = lockstep::sim::default_body_def();
  floor.type = lockstep::sim::BodyType::static_body;
  floor.shape.type = lockstep::sim::ShapeType::box;
  floor.shape.half_extents = {20, 0.5f, 20};
  floor.position = {0, -0.5f, 0};
  scene.bodies.push_back(floor);
  for (int i = 0; i < 12; ++i) {
    for (int j = 0; j < 12; ++j) {
      for (int level = 0; level < 2; ++level) {
        BodyDef box = lockstep::sim::default_body_def();
        box.shape.type = lockstep::sim::ShapeType::box;
        box.position = {-7.7f + 1.4f * static_cast<float>(i), 0.5f + static_cast<float>(level),
                        -7.7f + 1.4f * static_cast<float>(j)};
        scene.bodies.push_back(box);
      }
    }
  }
  Error error = Error::none;
  std::unique_ptr<World> world = lockstep::sim::build_world(scene, &error);
  ASSERT_EQ(error, Error::none);
  std::vector<BodyId> ids(world->body_count());
  ASSERT_EQ(world->list_bodies(ids), ids.size());
  std::vector<uint8_t> snapshot(world->max_snapshot_size());
  BodyDef thrown = lockstep::sim::default_body_def();
  thrown.position = {-7.0f, 3.0f, 0};
  thrown.linear_velocity = {12.0f, 0, 0};

  uint64_t allocations = 0;
  uint32_t most_asleep = 0, woken_after = 0;
  {
    AllocationCounter counter;
    for (uint32_t tick = 0; tick < 1200; ++tick) {
      if (tick == 700) {
        BodyId id{};
        EXPECT_EQ(world->create_body(thrown, &id), Error::none);
      }
      if (tick == 760) {
        Input in;
        in.player = 1;
        in.body = ids[101];
        in.linear_impulse[1] = 50 * 1024;
        EXPECT_EQ(world->queue_input(in), Error::none);
        EXPECT_EQ(world->set_linear_velocity(ids[201], {0, 1, 0}), Error::none);
        EXPECT_EQ(world->destroy_body(ids[251]), Error::none);
      }
      if (tick == 650 || tick == 1100) {
        size_t written = 0;
        EXPECT_EQ(world->save_snapshot(snapshot, &written), Error::none);
        EXPECT_EQ(world->restore_snapshot({snapshot.data(), written}), Error::none);
      }
      world->step();
      (void)world->state_hash();
      const lockstep::sim::StepStats& st = world->last_step_stats();
      most_asleep = st.sleeping_bodies > most_asleep ? st.sleeping_bodies : most_asleep;
      if (tick > 700 && st.sleeping_bodies < most_asleep) ++woken_after;
    }
    allocations = counter.count();
  }
  EXPECT_EQ(allocations, 0u);
  EXPECT_EQ(most_asleep, 288u);  // every stack slept
  EXPECT_GT(woken_after, 30u);   // and parts of it woke
}

}  // namespace

// world_memory_bytes is what a tool checks an untrusted WorldDef against before creating the
// world, so it must match what create takes: within 2 % above (malloc rounding, small blocks)
// and never below by more than that.
TEST(SimAlloc, WorldMemoryBytesMatchesWhatCreateTakes) {
  std::vector<lockstep::sim::WorldDef> defs;
  defs.push_back(lockstep::sim::default_world_def());
  lockstep::sim::WorldDef small = lockstep::sim::default_world_def();
  small.max_bodies = 16;
  small.max_contact_pairs = 64;
  small.max_contact_points = 128;
  small.max_candidate_pairs = 256;
  small.max_events = 32;
  defs.push_back(small);
  lockstep::sim::WorldDef big = lockstep::sim::default_world_def();
  big.max_bodies = 20000;
  big.max_contact_pairs = 70000;
  big.max_contact_points = 200000;
  big.max_candidate_pairs = 200000;
  defs.push_back(big);
  for (const lockstep::sim::WorldDef& def : defs) {
    const int64_t before = lockstep::testing::alloc_totals().live_bytes;
    Error error = Error::none;
    std::unique_ptr<World> world = World::create(def, &error);
    ASSERT_NE(world, nullptr) << lockstep::sim::error_message(error);
    const int64_t taken = lockstep::testing::alloc_totals().live_bytes - before;
    const auto estimate = static_cast<int64_t>(lockstep::sim::world_memory_bytes(def));
    EXPECT_NEAR(static_cast<double>(estimate), static_cast<double>(taken),
                0.02 * static_cast<double>(taken) + 4096.0)
        << "max_bodies " << def.max_bodies;
  }
  // Capacities near the 32-bit limit do not wrap: the estimate is huge, not small.
  lockstep::sim::WorldDef hostile = lockstep::sim::default_world_def();
  hostile.max_bodies = 0xFFFFFFF0u;
  EXPECT_GT(lockstep::sim::world_memory_bytes(hostile), uint64_t{1} << 36);
}

// Contact capacities left 0 derive from max_bodies (WorldDef's rule: 7 manifolds per body, 3.5
// points per manifold, 1.5 candidate pairs and 1 event per manifold); a value given is kept.
// A world sized by the rule is the same world as one with the numbers written out.
TEST(SimAlloc, ContactCapacitiesDeriveFromTheBodiesUnlessGiven) {
  lockstep::sim::WorldDef def = lockstep::sim::default_world_def();
  def.max_bodies = 1000;
  std::unique_ptr<World> derived = World::create(def);
  ASSERT_NE(derived, nullptr);
  EXPECT_EQ(derived->def().max_contact_pairs, 7000u);
  EXPECT_EQ(derived->def().max_contact_points, 24500u);
  EXPECT_EQ(derived->def().max_candidate_pairs, 10500u);
  EXPECT_EQ(derived->def().max_events, 7000u);

  lockstep::sim::WorldDef written = def;
  written.max_contact_pairs = 7000;
  written.max_contact_points = 24500;
  written.max_candidate_pairs = 10500;
  written.max_events = 7000;
  std::unique_ptr<World> explicit_world = World::create(written);
  ASSERT_NE(explicit_world, nullptr);
  derived->step();
  explicit_world->step();
  EXPECT_EQ(derived->state_hash(), explicit_world->state_hash());

  lockstep::sim::WorldDef overridden = def;
  overridden.max_contact_points = 64;
  std::unique_ptr<World> small = World::create(overridden);
  ASSERT_NE(small, nullptr);
  EXPECT_EQ(small->def().max_contact_pairs, 7000u);  // still derived
  EXPECT_EQ(small->def().max_contact_points, 64u);   // kept

  // The built-in 1,240-box pyramid fits its world in 16 MiB (it took 29 MiB with fixed
  // capacities of 16,384 manifolds and 65,536 points) and never runs out of room.
  lockstep::sim::Scene pyramid;
  ASSERT_TRUE(lockstep::sim::make_builtin_scene("pyramid3d", &pyramid));
  EXPECT_LE(lockstep::sim::world_memory_bytes(pyramid.def), uint64_t{16} << 20);
  std::unique_ptr<World> world = lockstep::sim::build_world(pyramid);
  ASSERT_NE(world, nullptr);
  for (int tick = 0; tick < 600; ++tick) {
    ASSERT_TRUE(world->step().ok()) << "tick " << tick;
  }
}
