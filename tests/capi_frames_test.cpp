// The C API's bring-your-own-transport path: a world made from a Welcome frame, the join Snapshot
// and TickFrames applied to it with lockstep_world_apply_frame, checked against a world the sim
// steps directly. The frames are made by the protocol's own codec, as a server makes them.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "alloc_counter.h"
#include "level_welcome.h"
#include "lockstep.h"
#include "lockstep/schema/messages.h"
#include "lockstep/sim/scene.h"
#include "lockstep/sim/version.h"
#include "lockstep/sim/world.h"

namespace {

using namespace lockstep;

sim::Scene bounce_scene() {
  sim::Scene scene;
  EXPECT_TRUE(sim::make_builtin_scene("bounce", &scene));
  return scene;
}

struct Server {
  sim::Scene scene;
  std::unique_ptr<sim::World> world;
  bool carry_level = true;  // a level scene's Welcome: the geometry, or its digest alone

  Server() : Server(bounce_scene()) {}
  explicit Server(sim::Scene s) : scene(std::move(s)) { world = sim::build_world(scene); }

  std::vector<uint8_t> welcome(uint32_t physics_revision = sim::kPhysicsRevision) const {
    schema::Welcome w;
    w.player_id = 3;
    w.tick_rate_hz = 60;
    w.input_delay_ticks = 2;
    w.scene = scene.name;
    w.world_def = scene.def;
    w.world_def_fingerprint = sim::world_def_fingerprint(scene.def);
    w.current_tick = world->tick();
    w.physics_revision = physics_revision;
    level_welcome::put_level(scene, *world, carry_level, &w);
    return schema::encode_frame(w);
  }

  std::vector<uint8_t> snapshot() const {
    schema::Snapshot s;
    s.tick = world->tick();
    s.state.resize(world->max_snapshot_size());
    size_t written = 0;
    EXPECT_EQ(world->save_snapshot(s.state, &written), sim::Error::none);
    s.state.resize(written);
    s.state_hash = world->state_hash();
    return schema::encode_frame(s);
  }

  /// Steps the server's world and returns the TickFrame announcing it (hash as given or its own).
  std::vector<uint8_t> step(std::optional<uint64_t> hash = std::nullopt) {
    world->step();
    schema::TickFrame frame;
    frame.tick = world->tick();
    frame.state_hash = hash.value_or(world->state_hash());
    return schema::encode_frame(frame);
  }
};

TEST(CapiFrames, ALevelInTheWelcomeIsPartOfTheWorldAndADigestAloneIsRefused) {
  Server server(level_welcome::ramp_scene(LOCKSTEP_SOURCE_DIR));
  ASSERT_NE(server.world, nullptr);
  for (int i = 0; i < 10; ++i)
    server.step();
  const std::vector<uint8_t> welcome = server.welcome();
  lockstep_world* world = nullptr;
  ASSERT_EQ(lockstep_world_create_from_welcome(welcome.data(), welcome.size(), nullptr, &world),
            LOCKSTEP_OK)
      << lockstep_last_error();
  // The snapshot names the level: a world without it would refuse it.
  const std::vector<uint8_t> snapshot = server.snapshot();
  uint64_t tick = 0, hash = 0;
  ASSERT_EQ(lockstep_world_apply_frame(world, snapshot.data(), snapshot.size(), &tick, &hash),
            LOCKSTEP_OK)
      << lockstep_world_last_error(world);
  for (int i = 0; i < 90; ++i) {
    const std::vector<uint8_t> frame = server.step();
    ASSERT_EQ(lockstep_world_apply_frame(world, frame.data(), frame.size(), &tick, &hash),
              LOCKSTEP_OK)
        << lockstep_world_last_error(world);
  }
  EXPECT_EQ(tick, 100u);
  EXPECT_EQ(hash, server.world->state_hash());
  lockstep_world_destroy(world);

  server.carry_level = false;
  const std::vector<uint8_t> digest_only = server.welcome();
  world = nullptr;
  EXPECT_EQ(
      lockstep_world_create_from_welcome(digest_only.data(), digest_only.size(), nullptr, &world),
      LOCKSTEP_ERR_SCENE_REFUSED);
  EXPECT_EQ(world, nullptr);
  EXPECT_NE(std::string(lockstep_last_error()).find("digest"), std::string::npos)
      << lockstep_last_error();
}

TEST(CapiFrames, WelcomeSnapshotAndTicksFollowTheServer) {
  Server server;
  for (int i = 0; i < 30; ++i)
    server.step();
  const std::vector<uint8_t> welcome = server.welcome();
  lockstep_welcome_info info{};
  lockstep_world* world = nullptr;
  ASSERT_EQ(lockstep_world_create_from_welcome(welcome.data(), welcome.size(), &info, &world),
            LOCKSTEP_OK)
      << lockstep_last_error();
  EXPECT_EQ(info.player_id, 3u);
  EXPECT_EQ(info.tick_rate_hz, 60u);
  EXPECT_EQ(info.input_delay_ticks, 2u);
  EXPECT_EQ(info.current_tick, 30u);
  EXPECT_EQ(info.physics_revision, sim::kPhysicsRevision);

  const std::vector<uint8_t> snapshot = server.snapshot();
  uint64_t tick = 0, hash = 0;
  ASSERT_EQ(lockstep_world_apply_frame(world, snapshot.data(), snapshot.size(), &tick, &hash),
            LOCKSTEP_OK);
  EXPECT_EQ(tick, 30u);
  EXPECT_EQ(hash, server.world->state_hash());

  for (int i = 0; i < 60; ++i) {
    const std::vector<uint8_t> frame = server.step();
    ASSERT_EQ(lockstep_world_apply_frame(world, frame.data(), frame.size(), &tick, &hash),
              LOCKSTEP_OK)
        << lockstep_world_last_error(world);
    EXPECT_EQ(hash, server.world->state_hash());
  }
  EXPECT_EQ(tick, 90u);

  // A frame whose hash is not ours: the world has stepped, and says it desynced.
  const std::vector<uint8_t> wrong = server.step(server.world->state_hash() ^ 1);
  EXPECT_EQ(lockstep_world_apply_frame(world, wrong.data(), wrong.size(), &tick, nullptr),
            LOCKSTEP_ERR_DESYNC);
  EXPECT_EQ(tick, 91u);
  // A frame that skips a tick is refused, the world untouched.
  server.step();
  const std::vector<uint8_t> gap = server.step();
  EXPECT_EQ(lockstep_world_apply_frame(world, gap.data(), gap.size(), &tick, nullptr),
            LOCKSTEP_ERR_INVALID_ARGUMENT);
  lockstep_world_tick(world, &tick);
  EXPECT_EQ(tick, 91u);
  // Another message kind, and the Welcome itself, are not frames to apply.
  EXPECT_EQ(lockstep_world_apply_frame(world, welcome.data(), welcome.size(), nullptr, nullptr),
            LOCKSTEP_ERR_BAD_FRAME);
  lockstep_world_destroy(world);
}

TEST(CapiFrames, WelcomeRefusals) {
  Server server;
  lockstep_world* world = nullptr;
  const std::vector<uint8_t> other = server.welcome(sim::kPhysicsRevision + 1);
  EXPECT_EQ(lockstep_world_create_from_welcome(other.data(), other.size(), nullptr, &world),
            LOCKSTEP_ERR_VERSION);
  EXPECT_EQ(world, nullptr);
  const std::vector<uint8_t> snapshot = server.snapshot();
  EXPECT_EQ(lockstep_world_create_from_welcome(snapshot.data(), snapshot.size(), nullptr, &world),
            LOCKSTEP_ERR_BAD_FRAME);
  // Every cut of a good Welcome is refused with a status, never a crash.
  const std::vector<uint8_t> welcome = server.welcome();
  for (size_t n = 0; n < welcome.size(); ++n) {
    EXPECT_NE(lockstep_world_create_from_welcome(welcome.data(), n, nullptr, &world), LOCKSTEP_OK);
  }
  // A flipped byte anywhere: refused or (where the byte is not checked) a world; never a crash.
  std::vector<uint8_t> flipped = welcome;
  for (size_t i = 0; i < flipped.size(); ++i) {
    flipped[i] ^= 0x5a;
    world = nullptr;
    if (lockstep_world_create_from_welcome(flipped.data(), flipped.size(), nullptr, &world) ==
        LOCKSTEP_OK) {
      lockstep_world_destroy(world);
    }
    flipped[i] ^= 0x5a;
  }
}

// The C layer's promise: a step with commands and inputs, and reading every body back, take no
// memory (the conversion buffers were made with the world). Counted by replacing operator new in
// this program, which the shared library's allocations go through too.
TEST(CapiFrames, StepAndReadAllocateNothing) {
  lockstep_world* world = nullptr;
  lockstep::testing::AllocationCounter creation;
  ASSERT_EQ(lockstep_world_create_builtin("inputs", &world), LOCKSTEP_OK);
  // The counter sees the library's own allocations (creation takes the world's memory).
  EXPECT_GT(creation.count(), 0u);
  std::vector<lockstep_body> bodies(64);
  lockstep_input input{};
  input.player = 1;
  uint32_t count = 0, found = 0;
  ASSERT_EQ(lockstep_world_get_bodies(world, bodies.data(), 64, &count, &found), LOCKSTEP_OK);
  for (uint32_t i = 0; i < count; ++i) {
    if (bodies[i].owner_player == 1) input.body = bodies[i].id;
  }
  ASSERT_NE(input.body.index1, 0u);
  lockstep_command command{};
  command.type = LOCKSTEP_COMMAND_ADD_SCORE;
  command.owner_player = 1;
  command.score_delta = 1;
  lockstep_step_result result{};
  lockstep::testing::AllocationCounter counter;
  for (int t = 0; t < 120; ++t) {
    input.sequence = static_cast<uint32_t>(t + 1);
    input.linear_impulse[0] = (t % 5 - 2) << LOCKSTEP_INPUT_SCALE_LOG2;
    ASSERT_EQ(lockstep_world_step(world, &command, 1, &input, 1, &result), LOCKSTEP_OK);
    ASSERT_EQ(lockstep_world_get_bodies(world, bodies.data(), 64, &count, &found), LOCKSTEP_OK);
  }
  EXPECT_EQ(counter.count(), 0u);
  EXPECT_EQ(result.inputs_rejected, 0u);
  EXPECT_EQ(result.commands_rejected, 0u);
  int32_t score = 0;
  ASSERT_EQ(lockstep_world_state_value(world, LOCKSTEP_SCORE_STATE_FIELD, 1, &score), LOCKSTEP_OK);
  EXPECT_EQ(score, 120);
  lockstep_world_destroy(world);
}

}  // namespace
