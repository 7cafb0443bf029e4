// SyncTester: rolling back and re-simulating must reproduce every tick; state changed behind the
// tester's back (what a snapshot that misses a field looks like to a rollback client) must be
// caught at the next tick and named down to the body and field.
#include "lockstep/sim/sync_test.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "alloc_counter.h"
#include "lockstep/sim/scene.h"
#include "lockstep/sim/state_diff.h"
#include "lockstep/sim/testing.h"
#include "lockstep/sim/world.h"

namespace {

using lockstep::sim::BodyId;
using lockstep::sim::Command;
using lockstep::sim::CommandType;
using lockstep::sim::Error;
using lockstep::sim::Input;
using lockstep::sim::Scene;
using lockstep::sim::StateFieldDiff;
using lockstep::sim::SyncTester;
using lockstep::sim::TickErrors;
using lockstep::sim::TickInput;
using lockstep::sim::World;

std::unique_ptr<World> inputs_world() {
  Scene scene;
  EXPECT_TRUE(lockstep::sim::make_builtin_scene("inputs", &scene));
  std::unique_ptr<World> world = lockstep::sim::build_world(scene);
  EXPECT_NE(world, nullptr);
  return world;
}

// The built-in `inputs` scene's scripted pushes, through the tester, for `ticks` ticks.
void drive(World& world, SyncTester& tester, uint64_t ticks) {
  const lockstep::sim::InputScript script = lockstep::sim::make_input_script(world);
  std::vector<Input> inputs(world.def().max_inputs_per_tick);
  for (uint64_t t = 0; t < ticks; ++t) {
    const uint32_t n = lockstep::sim::scripted_inputs(7, world.tick(), script, world, inputs);
    tester.step(world, TickInput{{}, {inputs.data(), n}});
  }
}

TEST(SimSyncTest, ScriptedPlayersReSimulateBitForBit) {
  for (uint32_t k : {1u, 3u, 8u}) {
    std::unique_ptr<World> world = inputs_world();
    ASSERT_NE(world, nullptr);
    std::unique_ptr<SyncTester> tester = SyncTester::create(*world, k);
    ASSERT_NE(tester, nullptr);
    drive(*world, *tester, 120);
    EXPECT_FALSE(tester->failed()) << "K=" << k << " tick " << tester->failure().tick;
    // The first k ticks roll back only to the start: 1 + 2 + … + k, then k per tick.
    EXPECT_EQ(tester->ticks_compared(), uint64_t{k} * (k + 1) / 2 + uint64_t{k} * (120 - k));
    EXPECT_EQ(world->tick(), 120u);
  }
}

TEST(SimSyncTest, CommandsAreRecordedAndReplayed) {
  lockstep::sim::WorldDef def = lockstep::sim::default_world_def();
  def.template_count = 1;
  ASSERT_TRUE(lockstep::sim::set_template_name(&def.templates[0], "crate"));
  def.templates[0].shape.type = lockstep::sim::ShapeType::box;
  std::unique_ptr<World> world = World::create(def);
  ASSERT_NE(world, nullptr);
  std::unique_ptr<SyncTester> tester = SyncTester::create(*world, 4);
  ASSERT_NE(tester, nullptr);
  BodyId spawned{};
  for (uint32_t t = 1; t <= 60; ++t) {
    Command c;
    if (t == 5) {
      c.type = CommandType::spawn;
      c.sequence = 1;
      c.position = {0, 3, 0};
    }
    if (t == 20) {
      c.type = CommandType::add_score;
      c.sequence = 3;
      c.owner_player = 2;
      c.score_delta = 5;
    }
    if (t == 40) {
      c.type = CommandType::destroy;
      c.sequence = 2;
      c.body = spawned;
    }
    const bool has_command = t == 5 || t == 20 || t == 40;
    Error e = Error::invalid_argument;
    tester->step(*world, TickInput{{&c, has_command ? 1u : 0u}, {}}, TickErrors{{&e, 1}, {}});
    if (has_command) {
      ASSERT_EQ(e, Error::none) << "tick " << t;
    }
    if (t == 5) spawned = world->command_results()[0].body;
  }
  EXPECT_FALSE(tester->failed()) << "tick " << tester->failure().tick;
  EXPECT_EQ(world->body_count(), 0u);
  EXPECT_EQ(world->score(2), 5);
}

TEST(SimSyncTest, AChangeTheTesterDidNotSeeIsNamedAtTheNextTick) {
  for (uint32_t k : {1u, 2u, 7u}) {
    std::unique_ptr<World> world = inputs_world();
    ASSERT_NE(world, nullptr);
    std::unique_ptr<SyncTester> tester = SyncTester::create(*world, k);
    ASSERT_NE(tester, nullptr);
    drive(*world, *tester, 30);
    ASSERT_FALSE(tester->failed());
    // State that no snapshot before it holds and no recorded input explains: exactly what a
    // field missing from the snapshot looks like after a rollback.
    std::vector<BodyId> ids(world->body_count());
    ids.resize(world->list_bodies(ids));
    BodyId moved{};
    for (BodyId id : ids) {
      lockstep::sim::BodyView v;
      world->get_body(id, &v);
      if (v.type == lockstep::sim::BodyType::dynamic) {
        moved = id;
        break;
      }
    }
    ASSERT_EQ(debug_perturb_position(*world, moved, {0.25f, 0, 0}), Error::none);
    drive(*world, *tester, 5);
    ASSERT_TRUE(tester->failed()) << "K=" << k;
    EXPECT_EQ(tester->failure().tick, 31u);
    EXPECT_NE(tester->failure().hash, tester->failure().resimulated_hash);
    EXPECT_FALSE(tester->failure().hash_misses_state);
    const std::vector<StateFieldDiff> diffs =
        lockstep::sim::diff_state(tester->recorded_at_failure(), tester->resimulated_at_failure());
    ASSERT_FALSE(diffs.empty());
    EXPECT_EQ(diffs[0].body, moved);
    EXPECT_STREQ(diffs[0].field, "position.x");
    // The recorded world is 0.25 m further along x (give or take one tick of motion).
    EXPECT_NEAR(diffs[0].value_a - diffs[0].value_b, 0.25, 0.05);
    EXPECT_EQ(tester->recorded_at_failure().tick(), 31u);
    EXPECT_EQ(tester->resimulated_at_failure().tick(), 31u);
  }
}

TEST(SimSyncTest, RollbackDepthOutOfRangeIsRefused) {
  std::unique_ptr<World> world = inputs_world();
  ASSERT_NE(world, nullptr);
  Error e = Error::none;
  EXPECT_EQ(SyncTester::create(*world, 0, &e), nullptr);
  EXPECT_EQ(e, Error::invalid_argument);
  e = Error::none;
  EXPECT_EQ(SyncTester::create(*world, SyncTester::kMaxRollbackTicks + 1, &e), nullptr);
  EXPECT_EQ(e, Error::invalid_argument);
  EXPECT_NE(SyncTester::create(*world, SyncTester::kMaxRollbackTicks, &e), nullptr);
  EXPECT_EQ(e, Error::none);
}

TEST(SimSyncTest, TheTestedTickAllocatesNothing) {
  std::unique_ptr<World> world = inputs_world();
  ASSERT_NE(world, nullptr);
  std::unique_ptr<SyncTester> tester = SyncTester::create(*world, 7);
  ASSERT_NE(tester, nullptr);
  const lockstep::sim::InputScript script = lockstep::sim::make_input_script(*world);
  std::vector<Input> inputs(world->def().max_inputs_per_tick);
  drive(*world, *tester, 10);
  lockstep::testing::AllocationCounter counter;
  for (int t = 0; t < 20; ++t) {
    const uint32_t n = lockstep::sim::scripted_inputs(7, world->tick(), script, *world, inputs);
    tester->step(*world, TickInput{{}, {inputs.data(), n}});
  }
  EXPECT_EQ(counter.count(), 0u);
  EXPECT_FALSE(tester->failed());
}

}  // namespace
