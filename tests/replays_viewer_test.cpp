// The replay viewer's page builder (replays/viewer_page.h) on the committed golden replays: a
// replay without a desync, a made client desync dump viewed alone and against the server's
// replay, and files that cannot be viewed. The page itself is checked in a browser by
// viewer_browser_test.py; here the data it is given.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lockstep/replays/viewer_page.h"
#include "lockstep/sim/testing.h"

namespace {

using namespace lockstep;

replays::LoadedReplay load(const std::string& name) {
  replays::LoadedReplay replay;
  std::string error;
  EXPECT_TRUE(
      replays::load_replay_file(std::string(LOCKSTEP_GOLDEN_REPLAYS) + "/" + name, &replay, &error))
      << error;
  return replay;
}

// What a client's desync dump of `server` looks like when its body `victim` was moved 0.5 m
// along x before the step that makes `tick`: the ticks up to it, the client's own hash there,
// and its own state as a last keyframe.
replays::LoadedReplay made_client_dump(const replays::LoadedReplay& server, sim::BodyId victim,
                                       uint64_t tick) {
  replays::LoadedReplay dump = server;
  dump.header.writer = replays::ReplayWriterKind::client;
  dump.header.player_id = 1;
  dump.ticks.resize(static_cast<size_t>(tick - server.header.first_tick));
  std::string error;
  std::unique_ptr<sim::World> world = replays::simulate_replay_to(server, tick - 1, &error);
  if (world == nullptr) {  // an empty dump: the caller's ASSERT on its ticks stops the test
    ADD_FAILURE() << error;
    return {};
  }
  EXPECT_EQ(debug_perturb_position(*world, victim, {0.5f, 0, 0}), sim::Error::none);
  const replays::ReplayTick& record = dump.ticks.back();
  for (const sim::Input& in : record.inputs)
    world->queue_input(in);
  world->step();
  for (replays::ReplayTick& t : dump.ticks)
    t.client_hash = t.authoritative_hash;
  dump.ticks.back().client_hash = world->state_hash();
  replays::ReplayKeyframe own{tick, world->state_hash(),
                              std::vector<uint8_t>(world->snapshot_size())};
  size_t written = 0;
  EXPECT_EQ(world->save_snapshot(own.snapshot, &written), sim::Error::none);
  own.snapshot.resize(written);
  dump.keyframes = {server.keyframes.front(), own};
  return dump;
}

bool has(const std::string& html, const std::string& text) {
  return html.find(text) != std::string::npos;
}

TEST(ReplaysViewer, GoldenReplayGivesAPageWithEveryTickAndNoDesync) {
  const replays::LoadedReplay golden = load("inputs_4p_600.lsr");
  const replays::ViewerPage page = replays::make_viewer_page(golden, nullptr);
  ASSERT_TRUE(page.ok) << page.error;
  EXPECT_EQ(page.first_tick, 0u);
  EXPECT_EQ(page.last_tick, 600u);
  EXPECT_EQ(page.bodies, 105u);  // the inputs scene never spawns or destroys
  EXPECT_FALSE(page.first_divergent_tick);
  EXPECT_EQ(page.other_pose_bytes, 0u);
  EXPECT_GT(page.pose_bytes, 0u);
  // A small world: every body's contacts are written.
  EXPECT_GT(page.contact_bytes, 601u);
  EXPECT_TRUE(has(page.html, "\"desync\":null"));
  EXPECT_TRUE(has(page.html, "\"run_b\":null"));
  // Every marker of the template was filled; nothing is fetched from elsewhere.
  EXPECT_FALSE(has(page.html, "LOCKSTEP_"));
  EXPECT_FALSE(has(page.html, "http://"));
  EXPECT_FALSE(has(page.html, "https://"));
  EXPECT_FALSE(has(page.html, " src="));
  // The re-simulated hash of the last tick is the recorded one, and both are in the page.
  char last_hash[24];
  std::snprintf(last_hash, sizeof(last_hash), "\"%016llx\"]",
                static_cast<unsigned long long>(golden.ticks.back().authoritative_hash));
  EXPECT_TRUE(has(page.html, last_hash)) << last_hash;
}

TEST(ReplaysViewer, MadeClientDesyncIsMarkedAloneAndAgainstTheServerReplay) {
  const replays::LoadedReplay golden = load("inputs_4p_600.lsr");
  const sim::BodyId victim{17, 0};
  const replays::LoadedReplay dump = made_client_dump(golden, victim, 200);
  ASSERT_EQ(dump.ticks.size(), 200u - golden.header.first_tick);

  for (const bool alone : {true, false}) {
    SCOPED_TRACE(alone ? "client dump alone" : "server replay --against the client dump");
    const replays::ViewerPage page =
        alone ? replays::make_viewer_page(dump, nullptr) : replays::make_viewer_page(golden, &dump);
    ASSERT_TRUE(page.ok) << page.error;
    ASSERT_EQ(page.first_divergent_tick, std::optional<uint64_t>(200));
    EXPECT_EQ(page.last_tick, alone ? 200u : 600u);
    EXPECT_GT(page.fields, 0u);
    EXPECT_GT(page.other_pose_bytes, 0u);  // the other run from tick 200
    EXPECT_TRUE(has(page.html, "\"desync\":{\"first_tick\":200"));
    EXPECT_TRUE(has(page.html, "{\"body\":\"17:0\",\"field\":\"position.x\""));
    EXPECT_TRUE(has(page.html, "\"run_b\":{\"first_tick\":200"));
    // The client's own hashes sit beside the server's (alone), or the other file's (against).
    EXPECT_TRUE(has(page.html, alone ? "\"client\":[\"" : "\"other\":[\""));
  }
}

TEST(ReplaysViewer, FilesThatCannotBeViewedGiveAnError) {
  const replays::LoadedReplay inputs = load("inputs_4p_600.lsr");
  const replays::LoadedReplay pile = load("pile_pushes_300.lsr");
  replays::ViewerPage page = replays::make_viewer_page(inputs, &pile);
  EXPECT_FALSE(page.ok);
  EXPECT_NE(page.error.find("WorldDef"), std::string::npos) << page.error;
  EXPECT_TRUE(page.html.empty());

  replays::LoadedReplay broken = inputs;
  broken.keyframes.front().snapshot.resize(16);
  page = replays::make_viewer_page(broken, nullptr);
  EXPECT_FALSE(page.ok);
  EXPECT_NE(page.error.find("keyframe"), std::string::npos) << page.error;
}

}  // namespace
