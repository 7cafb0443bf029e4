// The replay viewer's page builder (replays/viewer_page.h) on the committed golden replays: a
// replay without a desync, a made client desync dump viewed alone and against the server's
// replay, and files that cannot be viewed. The page itself is checked in a browser by
// viewer_browser_test.py; here the data it is given.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lockstep/replays/viewer_page.h"
#include "lockstep/sim/scene.h"
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

namespace {

// The share of the dynamic bodies' positions over the whole replay inside [lo, hi] on each axis,
// and the lowest y a dynamic body reached.
struct Coverage {
  double inside[3] = {0, 0, 0};
  float lowest_y = 0;
  size_t samples = 0;
};
Coverage coverage(const replays::LoadedReplay& replay, const replays::ViewerPage& page) {
  Coverage c;
  std::string error;
  std::unique_ptr<sim::World> world = replays::make_replay_world(replay, &error);
  EXPECT_NE(world, nullptr) << error;
  if (world == nullptr) return c;
  size_t in[3] = {0, 0, 0};
  for (size_t t = 0;; ++t) {
    std::vector<sim::BodyId> ids(world->body_count());
    ids.resize(world->list_bodies(ids));
    for (const sim::BodyId id : ids) {
      sim::BodyView v;
      if (world->get_body(id, &v) != sim::Error::none || v.type != sim::BodyType::dynamic) continue;
      const float p[3] = {v.position.x, v.position.y, v.position.z};
      for (int k = 0; k < 3; ++k)
        in[k] += p[k] >= page.frame_lo[k] && p[k] <= page.frame_hi[k];
      c.lowest_y = c.samples == 0 ? p[1] : std::min(c.lowest_y, p[1]);
      ++c.samples;
    }
    if (t == replay.ticks.size()) break;
    const replays::ReplayTick& r = replay.ticks[t];
    world->step(sim::TickInput{r.commands, r.inputs});
  }
  for (int k = 0; k < 3; ++k)
    c.inside[k] = c.samples ? static_cast<double>(in[k]) / static_cast<double>(c.samples) : 0;
  return c;
}

}  // namespace

TEST(ReplaysViewer, TheCameraFramesTheDynamicBodiesOverTheWholeMatch) {
  // A koth match recording: the players' balls start alone on the platform at tick 0 (their
  // spawns come with the first ticks), a 80 m kill box sits 12 m below it, and a ball that falls
  // (in this recording one rolls off after its bot has stopped steering) is below the platform
  // for a moment before the rules take it away.
  replays::LoadedReplay replay;
  std::string error;
  ASSERT_TRUE(replays::load_replay_file(LOCKSTEP_OLD_REPLAYS "/koth_ready.lsrp", &replay, &error))
      << error;
  const replays::ViewerPage page = replays::make_viewer_page(replay, nullptr);
  ASSERT_TRUE(page.ok) << page.error;
  EXPECT_EQ(page.frame_from, "dynamic bodies over the match");
  const Coverage c = coverage(replay, page);
  ASSERT_GT(c.samples, 1000u);
  for (int k = 0; k < 3; ++k) {
    EXPECT_GE(c.inside[k], 0.95) << "axis " << k;  // 2nd..98th percentile, grown by a ball
    EXPECT_LT(page.frame_lo[k], page.frame_hi[k]);
  }
  // Not the kill box: the frame stays within the platform's reach, above where fallen balls went.
  EXPECT_LT(c.lowest_y, -3.0f);  // some ball did fall
  EXPECT_GT(page.frame_lo[1], -3.0f);
  for (int k : {0, 2}) {
    EXPECT_GT(page.frame_lo[k], -9.0f);
    EXPECT_LT(page.frame_hi[k], 9.0f);
  }
  // The game shown besides the bodies: the rules' events, their state, the clients' messages.
  EXPECT_EQ(page.game_messages, 3u);
  EXPECT_GE(page.game_events, 6u);  // three joins and three "ready"
  EXPECT_GE(page.game_state_changes, 1u);
  EXPECT_TRUE(has(page.html, "\"game_messages\":[[")) << "messages in the page's data";
  EXPECT_TRUE(has(page.html, "\"sensor\":true"));
}

TEST(ReplaysViewer, AWorldWithoutDynamicBodiesIsFramedByItsBodiesAtTheFirstTick) {
  sim::Scene scene;
  ASSERT_TRUE(sim::make_builtin_scene("inputs", &scene));
  scene.bodies.erase(
      std::remove_if(scene.bodies.begin(), scene.bodies.end(),
                     [](const sim::BodyDef& b) { return b.type == sim::BodyType::dynamic; }),
      scene.bodies.end());
  std::unique_ptr<sim::World> world = sim::build_world(scene);
  ASSERT_NE(world, nullptr);
  replays::LoadedReplay replay;
  replay.header = replays::make_replay_header(*world, "", 60);
  replays::ReplayKeyframe k{0, world->state_hash(), std::vector<uint8_t>(world->snapshot_size())};
  size_t written = 0;
  ASSERT_EQ(world->save_snapshot(k.snapshot, &written), sim::Error::none);
  k.snapshot.resize(written);
  replay.keyframes = {k};
  const replays::ViewerPage page = replays::make_viewer_page(replay, nullptr);
  ASSERT_TRUE(page.ok) << page.error;
  EXPECT_EQ(page.frame_from, "bodies at the first tick");
}
