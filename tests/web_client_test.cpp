// The browser client's core (client_sdk/web/src/web_client.cpp) compiled natively: frames made
// by the protocol's codec, as a server makes them, go in through lsw_receive; the events, the
// verified hashes, a desync, bad bytes and the frames it makes (Hello, InputFrame) are checked.
// The same source is the wasm the page runs; the browser test runs it against a real server.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "level_welcome.h"
#include "lockstep/schema/limits.h"
#include "lockstep/schema/messages.h"
#include "lockstep/sim/scene.h"
#include "lockstep/sim/testing.h"
#include "lockstep/sim/version.h"
#include "lockstep/sim/world.h"

extern "C" {
struct WebClient;
WebClient* lsw_create(uint32_t max_prediction_ticks);
void lsw_destroy(WebClient* c);
uint8_t* lsw_in_buffer(WebClient* c, uint32_t size);
const uint8_t* lsw_out_data(WebClient* c);
const char* lsw_text(WebClient* c);
int32_t lsw_code(WebClient* c);
uint32_t lsw_hello(WebClient* c, const char* room, const char* name, const char* token,
                   const char* scene, int32_t thin);
int32_t lsw_receive(WebClient* c);
double lsw_next_input_tick(WebClient* c);
uint32_t lsw_input(WebClient* c, double tick, uint32_t body_index1, uint32_t body_generation,
                   int32_t velocity, int32_t ix, int32_t iy, int32_t iz, uint32_t buttons);
double lsw_predict(WebClient* c);
double lsw_tick(WebClient* c, int32_t which);
const char* lsw_hash(WebClient* c, int32_t which);
double lsw_ticks_verified(WebClient* c);
double lsw_desyncs(WebClient* c);
double lsw_own_inputs_applied(WebClient* c);
uint32_t lsw_bodies(WebClient* c, int32_t which);
uint32_t lsw_diff_count(WebClient* c);
const float* lsw_diff_data(WebClient* c);
double lsw_diff_tick(WebClient* c);
double lsw_bench_builtin(const char* scene_name, uint32_t ticks, uint32_t warmup, uint32_t rounds);
double lsw_bench_first();
uint32_t lsw_level_triangles(WebClient* c);
const float* lsw_level_data(WebClient* c);
const char* lsw_bench_hash();
}

namespace {

using namespace lockstep;

enum { kJoined = 1, kSnapshot = 2, kTick = 3, kDesync = 4, kError = 5, kClosed = 6 };

std::string hex(uint64_t v) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(v));
  return text;
}

sim::Scene builtin_scene(const char* name) {
  sim::Scene scene;
  EXPECT_TRUE(sim::make_builtin_scene(name, &scene));
  return scene;
}

struct Room {
  sim::Scene scene;
  std::unique_ptr<sim::World> world;
  bool carry_level = true;  // a level scene's Welcome: the geometry, or its digest alone
  Room() : Room(builtin_scene("inputs")) {}
  explicit Room(sim::Scene s) : scene(std::move(s)) { world = sim::build_world(scene); }
  std::vector<uint8_t> welcome() const {
    schema::Welcome w;
    w.player_id = 2;
    w.tick_rate_hz = 60;
    w.input_delay_ticks = 2;
    w.input_window_ticks = 32;
    w.scene = scene.name;
    w.world_def = scene.def;
    w.world_def_fingerprint = sim::world_def_fingerprint(scene.def);
    w.current_tick = world->tick();
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
  std::vector<uint8_t> step(const std::vector<sim::Input>& inputs = {},
                            std::optional<uint64_t> hash = std::nullopt) {
    world->step(sim::TickInput{{}, inputs});
    schema::TickFrame frame;
    frame.tick = world->tick();
    frame.inputs = inputs;
    frame.state_hash = hash.value_or(world->state_hash());
    return schema::encode_frame(frame);
  }
};

int32_t receive(WebClient* c, const std::vector<uint8_t>& frame) {
  uint8_t* in = lsw_in_buffer(c, static_cast<uint32_t>(frame.size()));
  if (!frame.empty()) std::memcpy(in, frame.data(), frame.size());
  return lsw_receive(c);
}

schema::Message decode_out(WebClient* c, uint32_t size) {
  EXPECT_GE(size, 4u);
  schema::Message message;
  EXPECT_TRUE(schema::decode_body(std::span(lsw_out_data(c) + 4, size - 4), &message).ok());
  return message;
}

TEST(WebClient, HelloCarriesWhatThePageAsked) {
  WebClient* c = lsw_create(0);
  const schema::Message m = decode_out(c, lsw_hello(c, "room1", "page", "tok", "sumo", 0));
  ASSERT_TRUE(std::holds_alternative<schema::Hello>(m));
  const auto& hello = std::get<schema::Hello>(m);
  EXPECT_EQ(hello.room, "room1");
  EXPECT_EQ(hello.player_name, "page");
  EXPECT_EQ(hello.auth_token, "tok");
  EXPECT_EQ(hello.scene, "sumo");
  EXPECT_EQ(hello.mode, schema::ClientMode::lockstep);
  EXPECT_EQ(hello.physics_revision, sim::kPhysicsRevision);
  lsw_destroy(c);
}

TEST(WebClient, FollowsTheRoomAndVerifiesEveryTick) {
  Room room;
  for (int i = 0; i < 10; ++i)
    room.step();
  WebClient* c = lsw_create(4);
  EXPECT_EQ(lsw_next_input_tick(c), -1) << "no input before the join snapshot";
  ASSERT_EQ(receive(c, room.welcome()), kJoined) << lsw_text(c);
  ASSERT_EQ(receive(c, room.snapshot()), kSnapshot) << lsw_text(c);
  EXPECT_EQ(lsw_tick(c, 0), 10);
  EXPECT_EQ(lsw_hash(c, 0), hex(room.world->state_hash()));
  EXPECT_EQ(lsw_bodies(c, 0), room.world->body_count());
  EXPECT_EQ(lsw_level_triangles(c), 0u);  // no level in `inputs`
  // Inputs of player 2 (ours) and 3, in the frames as the server applied them.
  const sim::BodyId body = sim::BodyId{2, 0};
  for (int i = 0; i < 60; ++i) {
    sim::Input mine;
    mine.player = 2;
    mine.sequence = static_cast<uint32_t>(i + 1);
    mine.body = body;
    mine.linear_impulse[0] = 300 << 10;
    ASSERT_EQ(receive(c, room.step({mine})), kTick) << lsw_text(c);
    EXPECT_EQ(lsw_hash(c, 0), hex(room.world->state_hash()));
  }
  EXPECT_EQ(lsw_ticks_verified(c), 60);
  EXPECT_EQ(lsw_desyncs(c), 0);
  EXPECT_EQ(lsw_own_inputs_applied(c), 60);
  const double predicted = lsw_predict(c);
  EXPECT_EQ(predicted, lsw_tick(c, 1));
  EXPECT_GT(predicted, lsw_tick(c, 0)) << "the predicted world runs ahead of the verified one";
  EXPECT_LE(predicted, lsw_tick(c, 0) + 4) << "by at most max_prediction_ticks";
  lsw_destroy(c);
}

TEST(WebClient, AHashThatDiffersIsADesync) {
  Room room;
  WebClient* c = lsw_create(0);
  ASSERT_EQ(receive(c, room.welcome()), kJoined);
  ASSERT_EQ(receive(c, room.snapshot()), kSnapshot);
  ASSERT_EQ(receive(c, room.step()), kTick);
  ASSERT_EQ(receive(c, room.step({}, 0x1234)), kDesync);
  EXPECT_EQ(lsw_desyncs(c), 1);
  EXPECT_EQ(lsw_ticks_verified(c), 1);
  // A snapshot puts it back on the room's state.
  ASSERT_EQ(receive(c, room.snapshot()), kSnapshot);
  ASSERT_EQ(receive(c, room.step()), kTick);
  lsw_destroy(c);
}

TEST(WebClient, TheResyncSnapshotNamesTheBodiesThatDiffered) {
  Room room;
  WebClient* c = lsw_create(0);
  ASSERT_EQ(receive(c, room.welcome()), kJoined);
  ASSERT_EQ(receive(c, room.snapshot()), kSnapshot);
  EXPECT_EQ(lsw_diff_tick(c), -1) << "no comparison without a desync";
  ASSERT_EQ(receive(c, room.step()), kTick);
  // The room's world moves a body outside the tick: the page's world is no longer the room's.
  ASSERT_EQ(sim::debug_perturb_position(*room.world, sim::BodyId{10, 0}, sim::Vec3{0.25f, 0, 0}),
            sim::Error::none);
  room.world->step();
  schema::TickFrame frame;
  frame.tick = room.world->tick();
  frame.state_hash = room.world->state_hash();
  ASSERT_EQ(receive(c, schema::encode_frame(frame)), kDesync);
  // Later ticks differ too: one desync, not one a tick.
  ASSERT_EQ(receive(c, room.step()), 0);
  EXPECT_EQ(lsw_desyncs(c), 1);
  ASSERT_EQ(receive(c, room.snapshot()), kSnapshot);
  EXPECT_EQ(lsw_diff_tick(c), static_cast<double>(room.world->tick()));
  ASSERT_GE(lsw_diff_count(c), 1u);
  bool named = false;
  for (uint32_t i = 0; i < lsw_diff_count(c); ++i)
    named = named || lsw_diff_data(c)[i * 13] == 10.0f;
  EXPECT_TRUE(named) << "the moved body is among the differing ones";
  ASSERT_EQ(receive(c, room.step()), kTick) << "verified again after the resync";
  lsw_destroy(c);
}

TEST(WebClient, InputFramesAreStampedInTheWindowAndInOrder) {
  Room room;
  WebClient* c = lsw_create(0);
  ASSERT_EQ(receive(c, room.welcome()), kJoined);
  ASSERT_EQ(receive(c, room.snapshot()), kSnapshot);
  const double tick = lsw_next_input_tick(c);
  EXPECT_GE(tick, 1);
  EXPECT_LE(tick, 31);
  const schema::Message m = decode_out(c, lsw_input(c, tick, 2, 0, 1, 4096, 0, -4096, 5));
  ASSERT_TRUE(std::holds_alternative<schema::InputFrame>(m));
  const auto& frame = std::get<schema::InputFrame>(m);
  EXPECT_EQ(frame.target_tick, static_cast<uint64_t>(tick));
  ASSERT_EQ(frame.inputs.size(), 1u);
  EXPECT_EQ(frame.inputs[0].player, 2u);
  EXPECT_EQ(frame.inputs[0].flags, sim::input_sets_linear_velocity);
  EXPECT_EQ(frame.inputs[0].linear_velocity[0], 4096);
  EXPECT_EQ(frame.inputs[0].linear_velocity[2], -4096);
  EXPECT_EQ(frame.inputs[0].buttons, 5u);
  EXPECT_GE(lsw_next_input_tick(c), tick) << "never before an input already announced";
  lsw_destroy(c);
}

TEST(WebClient, BadBytesAreRefusedNotApplied) {
  Room room;
  WebClient* c = lsw_create(0);
  EXPECT_EQ(receive(c, {1, 2}), -1);
  EXPECT_EQ(receive(c, {5, 0, 0, 0, 1, 2}), -1) << "a length that disagrees with the size";
  EXPECT_EQ(receive(c, {4, 0, 0, 0, 0xde, 0xad, 0xbe, 0xef}), -1) << lsw_text(c);
  // Frames before the join change nothing; a TickFrame out of order closes.
  EXPECT_EQ(receive(c, room.step()), 0);
  ASSERT_EQ(receive(c, room.welcome()), kJoined);
  ASSERT_EQ(receive(c, room.snapshot()), kSnapshot);
  room.step();
  EXPECT_EQ(receive(c, room.step()), kClosed) << "a TickFrame that skips one";
  // Every prefix and every single-byte change of a valid frame: never a crash.
  const std::vector<uint8_t> frame = room.step();
  for (size_t n = 0; n < frame.size(); ++n) {
    (void)receive(c, std::vector<uint8_t>(frame.begin(), frame.begin() + static_cast<long>(n)));
    std::vector<uint8_t> changed = frame;
    changed[n] ^= 0x5a;
    (void)receive(c, changed);
  }
  lsw_destroy(c);
}

TEST(WebClient, ServerErrorsAreEvents) {
  WebClient* c = lsw_create(0);
  EXPECT_EQ(receive(c, schema::encode_frame(
                           schema::ErrorMessage{schema::ErrorCode::input_late, "late", false})),
            kError);
  EXPECT_EQ(lsw_code(c), static_cast<int32_t>(schema::ErrorCode::input_late));
  EXPECT_EQ(receive(c, schema::encode_frame(
                           schema::Disconnect{schema::ErrorCode::server_shutdown, "bye"})),
            kClosed);
  EXPECT_NE(std::string(lsw_text(c)).find("bye"), std::string::npos);
  lsw_destroy(c);
}

TEST(WebClient, ALevelSceneIsBuiltFromTheWelcomeAndVerifies) {
  // The OBJ ramp: the page has no files, so the level comes in the Welcome; the confirmed world,
  // the predicted one and the desync comparison all need it (the snapshots name it).
  Room room(level_welcome::ramp_scene(LOCKSTEP_SOURCE_DIR));
  ASSERT_NE(room.world, nullptr);
  ASSERT_GT(room.world->level_stats().triangles, 0u);
  WebClient* c = lsw_create(4);
  ASSERT_EQ(receive(c, room.welcome()), kJoined) << lsw_text(c);
  ASSERT_EQ(receive(c, room.snapshot()), kSnapshot) << lsw_text(c);
  for (int i = 0; i < 90; ++i) {
    ASSERT_EQ(receive(c, room.step()), kTick) << "tick " << i << ": " << lsw_text(c);
    EXPECT_GE(lsw_predict(c), lsw_tick(c, 0));
  }
  EXPECT_EQ(lsw_ticks_verified(c), 90);
  EXPECT_EQ(lsw_desyncs(c), 0);
  EXPECT_EQ(lsw_hash(c, 0), hex(room.world->state_hash()));
  // The arena for drawing: ramp.obj's one quad (corners (±10, ∓3 or ±3, ±10): it rises 6 m
  // along +x) as two triangles where the static body puts it (at the origin).
  ASSERT_EQ(lsw_level_triangles(c), 2u);
  const float* corners = lsw_level_data(c);
  for (int i = 0; i < 6; ++i) {
    const float x = corners[3 * i], y = corners[3 * i + 1], z = corners[3 * i + 2];
    EXPECT_EQ(std::fabs(x), 10.0f);
    EXPECT_EQ(std::fabs(z), 10.0f);
    EXPECT_EQ(y, x > 0 ? 3.0f : -3.0f);
  }
  lsw_destroy(c);

  // Over the server's Welcome cap the level comes as its digest alone: a page cannot load it.
  room.carry_level = false;
  c = lsw_create(0);
  EXPECT_EQ(receive(c, room.welcome()), kClosed);
  EXPECT_NE(std::string(lsw_text(c)).find("digest only"), std::string::npos) << lsw_text(c);
  lsw_destroy(c);
}

TEST(WebClient, AMessageLongerThanAnyFrameIsNeverBuffered) {
  // A hostile server's huge message: no buffer (the page does not copy it), and the reason.
  WebClient* c = lsw_create(0);
  EXPECT_EQ(lsw_in_buffer(c, 0xffffffffu), nullptr);
  EXPECT_NE(std::string(lsw_text(c)).find("frame limit"), std::string::npos) << lsw_text(c);
  const uint32_t largest = 4u + schema::kMaxServerFrameBytes;  // the length, then the body
  EXPECT_EQ(lsw_in_buffer(c, largest + 1u), nullptr);
  EXPECT_NE(lsw_in_buffer(c, largest), nullptr);
  lsw_destroy(c);
}

TEST(WebClient, BenchmarkRunIsLockstepSimsRun) {
  // The page's benchmark must run what lockstep-sim runs: its hash at tick 120 is the golden
  // chain's (tests/golden/inputs.txt, the default input seed).
  std::ifstream golden(std::string(LOCKSTEP_SOURCE_DIR) + "/tests/golden/inputs.txt");
  std::string line, expected;
  while (std::getline(golden, line)) {
    if (line.rfind("120 ", 0) == 0) expected = line.substr(4);
  }
  ASSERT_EQ(expected.size(), 16u);
  const double best = lsw_bench_builtin("inputs", 120, 60, 2);
  EXPECT_GT(best, 0);
  EXPECT_GE(lsw_bench_first(), best);  // the fastest of two rounds, the first among them
  EXPECT_EQ(std::string(lsw_bench_hash()), expected);
  EXPECT_LT(lsw_bench_builtin("no-such-scene", 120, 60, 1), 0);
  EXPECT_LT(lsw_bench_builtin("inputs", 120, 60, 0), 0);
}

}  // namespace
