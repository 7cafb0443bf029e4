// Scene files on the server: rooms running different scenes side by side, a Hello asking for a
// scene by name, and files refused at start-up. The server is hosted in-process
// (net_test_harness.h) with --scene-dir = tests/scenes/served; clients are the SDK, so every tick
// each client steps its own world (built from the same file) and compares the server's hash.
// Tests wait for conditions (ticks verified, an error received), never for a span of time.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "lockstep/client_sdk/client.h"
#include "lockstep/schema/scene_file.h"
#include "lockstep/server/server.h"
#include "net_test_harness.h"

namespace {

using namespace lockstep;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

const std::string kServedDir = LOCKSTEP_TEST_SCENES "/served";
const std::string kBrokenDir = LOCKSTEP_TEST_SCENES "/broken";

server::ServerConfig scene_config() {
  server::ServerConfig config = net_test::loopback_config();
  config.tick_rate_hz = 240;  // 120 ticks in 0.5 s on an idle machine
  config.input_delay_ticks = 4;
  config.scene_dir = kServedDir;
  return config;
}

// One SDK client and what it reported; pushes its first owned body every tick when asked to.
struct SceneClient {
  explicit SceneClient(std::string client_name) : name(std::move(client_name)) {}

  bool connect(uint16_t port, const std::string& room, client_sdk::ClientOptions options) {
    const bool ok = client.connect("127.0.0.1", port, room, name, "", options);
    if (ok) client.run_thread();
    return ok;
  }

  void pump() {
    client.poll(0ms, [this](const client_sdk::Event& event) {
      if (const auto* j = std::get_if<client_sdk::JoinedEvent>(&event)) {
        joined = *j;
      } else if (const auto* t = std::get_if<client_sdk::TickAppliedEvent>(&event)) {
        hashes[t->tick] = t->state_hash;
        const std::optional<uint64_t> next = client.next_input_tick();
        if (push && next && *next > last_target && !client.owned_bodies().empty()) {
          sim::Input input;
          input.body = client.owned_bodies().front();
          input.sequence = static_cast<uint32_t>(t->tick);
          // Alternating pushes along x (fixed point, 2^-10 N·s): the ball rocks in place.
          input.linear_impulse[0] = ((t->tick / 30) % 2 == 0 ? 1 : -1) * (2 << 10);
          if (const std::optional<uint64_t> target = client.send_input({&input, 1})) {
            last_target = *target;
          }
        }
      } else if (const auto* e = std::get_if<client_sdk::ErrorEvent>(&event)) {
        errors.push_back(*e);
      } else if (const auto* d = std::get_if<client_sdk::DesyncEvent>(&event)) {
        desyncs.push_back(d->tick);
      } else if (const auto* c = std::get_if<client_sdk::DisconnectedEvent>(&event)) {
        disconnected = *c;
      }
    });
  }

  uint64_t last_tick() const { return hashes.empty() ? 0 : hashes.rbegin()->first; }

  std::string describe() const {
    std::string s = name + ": " + std::to_string(hashes.size()) + " ticks verified up to " +
                    std::to_string(last_tick()) + ", " + std::to_string(desyncs.size()) +
                    " desyncs";
    for (const auto& e : errors)
      s += "\n  error " + std::string(schema::error_code_name(e.code)) + ": " + e.message;
    if (disconnected) s += "\n  disconnected: " + disconnected->reason;
    return s;
  }

  std::string name;
  client_sdk::Client client;
  bool push = false;
  uint64_t last_target = 0;
  std::optional<client_sdk::JoinedEvent> joined;
  std::map<uint64_t, uint64_t> hashes;  // tick → state hash, verified against the server's
  std::vector<client_sdk::ErrorEvent> errors;
  std::vector<uint64_t> desyncs;
  std::optional<client_sdk::DisconnectedEvent> disconnected;
};

bool pump_until(const std::vector<SceneClient*>& clients, const std::function<bool()>& done) {
  return net_test::eventually(
      [&] {
        for (SceneClient* c : clients)
          c->pump();
        return done();
      },
      net_test::kHangGuard, 1ms);
}

client_sdk::ClientOptions file_options(const std::string& file) {
  client_sdk::ClientOptions options;
  options.scene_file = kServedDir + "/" + file;
  return options;
}

TEST(NetScenes, TwoRoomsRunTwoSceneFilesAndEveryTickVerifies) {
  net_test::InProcessServer server(scene_config());
  ASSERT_TRUE(server.started());
  // Room "north" is created with the arena, room "south" with the ramp, at the same time. Each
  // client builds its world from the same file the server serves (ClientOptions::scene_file).
  SceneClient arena1("arena1"), arena2("arena2"), ramp1("ramp1");
  arena1.push = arena2.push = ramp1.push = true;
  ASSERT_TRUE(arena1.connect(server.port(), "north", file_options("arena.scene")))
      << arena1.client.last_error();
  ASSERT_TRUE(ramp1.connect(server.port(), "south", file_options("ramp.scene")))
      << ramp1.client.last_error();
  // A second player of the arena asks by name only and brings the scene itself.
  client_sdk::ClientOptions by_name;
  by_name.scene_name = "arena";
  std::string error;
  sim::Scene arena;
  ASSERT_TRUE(schema::load_scene_file(kServedDir + "/arena.scene", &arena, &error)) << error;
  by_name.scene = arena;
  ASSERT_TRUE(arena2.connect(server.port(), "north", by_name)) << arena2.client.last_error();

  const std::vector<SceneClient*> all = {&arena1, &arena2, &ramp1};
  constexpr size_t kTicks = 180;
  const bool done = pump_until(all, [&] {
    for (const SceneClient* c : all) {
      if (c->hashes.size() < kTicks || !c->errors.empty() || c->disconnected) return false;
    }
    return true;
  });
  ASSERT_TRUE(done) << arena1.describe() << "\n" << arena2.describe() << "\n" << ramp1.describe();

  ASSERT_TRUE(arena1.joined && arena2.joined && ramp1.joined);
  EXPECT_EQ(arena1.joined->scene, "arena");
  EXPECT_EQ(arena2.joined->scene, "arena");
  EXPECT_EQ(ramp1.joined->scene, "ramp");
  EXPECT_EQ(arena1.joined->owned_bodies.size(), 1u);  // one ball per player
  EXPECT_EQ(arena2.joined->owned_bodies.size(), 1u);
  EXPECT_NE(arena1.joined->owned_bodies, arena2.joined->owned_bodies);
  for (const SceneClient* c : all) {
    SCOPED_TRACE(c->name);
    EXPECT_TRUE(c->desyncs.empty());
    const client_sdk::ClientStats stats = c->client.stats();
    EXPECT_EQ(stats.desyncs, 0u);
    EXPECT_EQ(stats.ticks_verified, stats.ticks_applied);  // every applied tick matched
    EXPECT_GE(stats.ticks_verified, kTicks);
    EXPECT_GT(stats.inputs_sent, 0u);
  }
  // The two arena players agree tick by tick; the ramp room is a different world.
  size_t shared = 0;
  for (const auto& [tick, hash] : arena2.hashes) {
    const auto it = arena1.hashes.find(tick);
    if (it == arena1.hashes.end()) continue;
    EXPECT_EQ(it->second, hash) << "tick " << tick;
    ++shared;
  }
  EXPECT_GT(shared, 0u);
  const auto ramp_hash = ramp1.hashes.find(arena1.last_tick());
  if (ramp_hash != ramp1.hashes.end()) {
    EXPECT_NE(ramp_hash->second, arena1.hashes.rbegin()->second);
  }

  // The server ran both rooms and accepted the pushes (owned balls, by their owners).
  const server::ServerStats stats = server.stats();
  uint64_t accepted = 0;
  std::map<std::string, std::string> scene_of_room;
  for (const server::RoomStats& room : stats.rooms) {
    accepted += room.inputs_accepted;
    scene_of_room[room.name] = room.scene;
  }
  EXPECT_EQ(scene_of_room["north"], "arena");
  EXPECT_EQ(scene_of_room["south"], "ramp");
  EXPECT_NE(server::summary_json(stats).find(R"("name":"south","scene":"ramp")"),
            std::string::npos);
  EXPECT_GT(accepted, 0u);
  EXPECT_EQ(stats.input_errors, 0u);
}

TEST(NetScenes, ClientsWithoutASceneBuildEachWorldFromTheWelcome) {
  net_test::InProcessServer server(scene_config());
  ASSERT_TRUE(server.started());
  // Two rooms with two different scene files at once; the clients only name the scene (so the
  // rooms they create run it) and bring no file: the Welcome's WorldDef and the join Snapshot
  // make their worlds.
  SceneClient arena("arena"), ramp("ramp");
  arena.push = ramp.push = true;
  client_sdk::ClientOptions arena_options, ramp_options;
  arena_options.scene_name = "arena";
  ramp_options.scene_name = "ramp";
  ASSERT_TRUE(arena.connect(server.port(), "east", arena_options)) << arena.client.last_error();
  ASSERT_TRUE(ramp.connect(server.port(), "west", ramp_options)) << ramp.client.last_error();
  constexpr size_t kTicks = 120;
  ASSERT_TRUE(
      pump_until({&arena, &ramp},
                 [&] { return arena.hashes.size() >= kTicks && ramp.hashes.size() >= kTicks; }))
      << arena.describe() << "\n"
      << ramp.describe();
  for (const SceneClient* c : {&arena, &ramp}) {
    SCOPED_TRACE(c->name);
    EXPECT_TRUE(c->errors.empty()) << c->describe();
    EXPECT_TRUE(c->desyncs.empty());
    const client_sdk::ClientStats stats = c->client.stats();
    EXPECT_EQ(stats.ticks_verified, stats.ticks_applied);
    EXPECT_GT(stats.inputs_sent, 0u);
  }
  EXPECT_EQ(arena.joined->scene, "arena");
  EXPECT_EQ(ramp.joined->scene, "ramp");
  // The worlds are the files' worlds, bit for bit: the same WorldDef fingerprint and bodies.
  std::string error;
  sim::Scene arena_file, ramp_file;
  ASSERT_TRUE(schema::load_scene_file(kServedDir + "/arena.scene", &arena_file, &error)) << error;
  ASSERT_TRUE(schema::load_scene_file(kServedDir + "/ramp.scene", &ramp_file, &error)) << error;
  ASSERT_NE(arena.client.world(), nullptr);
  EXPECT_EQ(sim::world_def_fingerprint(arena.client.world()->def()),
            sim::world_def_fingerprint(arena_file.def));
  EXPECT_EQ(sim::world_def_fingerprint(ramp.client.world()->def()),
            sim::world_def_fingerprint(ramp_file.def));
  EXPECT_EQ(arena.client.world()->body_count(), arena_file.bodies.size());

  // A scene given as a check that is not the room's: a fatal error naming both.
  SceneClient wrong("wrong");
  client_sdk::ClientOptions wrong_options;
  wrong_options.scene = ramp_file;  // but the room runs the arena
  ASSERT_TRUE(wrong.connect(server.port(), "east", wrong_options));
  ASSERT_TRUE(pump_until({&arena, &wrong}, [&] { return !wrong.errors.empty(); }))
      << wrong.describe();
  EXPECT_TRUE(wrong.errors.front().fatal);
  EXPECT_NE(wrong.errors.front().message.find("WorldDef fingerprint of our scene 'ramp' differs "
                                              "from the server's 'arena'"),
            std::string::npos)
      << wrong.errors.front().message;
}

TEST(NetScenes, UnknownSceneNameIsAClearErrorAndOtherRoomsKeepTicking) {
  net_test::InProcessServer server(scene_config());
  ASSERT_TRUE(server.started());
  SceneClient player("player");
  ASSERT_TRUE(player.connect(server.port(), "north", file_options("arena.scene")));
  ASSERT_TRUE(pump_until({&player}, [&] { return player.hashes.size() >= 10; }))
      << player.describe();

  // A room asked for with a scene nobody serves: a fatal unknown_scene naming what is served.
  SceneClient lost("lost");
  client_sdk::ClientOptions options;
  options.scene_name = "atlantis";
  ASSERT_TRUE(lost.connect(server.port(), "west", options));
  ASSERT_TRUE(pump_until({&player, &lost}, [&] { return lost.disconnected.has_value(); }))
      << lost.describe();
  ASSERT_FALSE(lost.errors.empty()) << lost.describe();
  EXPECT_EQ(lost.errors.front().code, schema::ErrorCode::unknown_scene);
  EXPECT_TRUE(lost.errors.front().fatal);
  EXPECT_NE(lost.errors.front().message.find("'atlantis' is not served here"), std::string::npos)
      << lost.errors.front().message;
  EXPECT_NE(lost.errors.front().message.find("arena, inputs, ramp"), std::string::npos)
      << lost.errors.front().message;

  // An existing room asked for with another scene than it runs: scene_mismatch.
  SceneClient wrong("wrong");
  ASSERT_TRUE(wrong.connect(server.port(), "north", file_options("ramp.scene")));
  ASSERT_TRUE(pump_until({&player, &wrong}, [&] { return wrong.disconnected.has_value(); }))
      << wrong.describe();
  ASSERT_FALSE(wrong.errors.empty()) << wrong.describe();
  EXPECT_EQ(wrong.errors.front().code, schema::ErrorCode::scene_mismatch);
  EXPECT_NE(wrong.errors.front().message.find("runs scene 'arena', not 'ramp'"), std::string::npos)
      << wrong.errors.front().message;

  // Counted by code; no room was made for the refused Hello; the arena room kept ticking.
  const uint64_t tick_at_errors = player.last_tick();
  ASSERT_TRUE(pump_until({&player}, [&] { return player.last_tick() >= tick_at_errors + 60; }))
      << player.describe();
  EXPECT_TRUE(player.errors.empty()) << player.describe();
  EXPECT_TRUE(player.desyncs.empty());
  const server::ServerStats stats = server.stats();
  EXPECT_EQ(stats.errors_by_code[static_cast<size_t>(schema::ErrorCode::unknown_scene)], 1u);
  EXPECT_EQ(stats.errors_by_code[static_cast<size_t>(schema::ErrorCode::scene_mismatch)], 1u);
  for (const server::RoomStats& room : stats.rooms)
    EXPECT_NE(room.name, "west");
}

TEST(NetScenes, BadSceneFileStopsTheStartWithFileLineAndReason) {
  const std::string broken = kBrokenDir + "/broken.scene";
  const auto expect_names_the_problem = [&](const std::string& error) {
    EXPECT_NE(error.find(broken), std::string::npos) << error;
    EXPECT_NE(error.find("line 5"), std::string::npos) << error;
    EXPECT_NE(error.find("unknown shape 'cube'"), std::string::npos) << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << "one line: " << error;
  };
  {  // In the scene directory.
    server::ServerConfig config = scene_config();
    config.scene_dir = kBrokenDir;
    server::Server server(config);
    std::string error;
    EXPECT_FALSE(server.start(&error));
    expect_names_the_problem(error);
    EXPECT_EQ(server.port(), 0u);  // never listened
  }
  {  // As the default scene.
    server::ServerConfig config = scene_config();
    config.scene = broken;
    server::Server server(config);
    std::string error;
    EXPECT_FALSE(server.start(&error));
    expect_names_the_problem(error);
  }
  {  // Given to the SDK: connect() refuses with the same line.
    client_sdk::Client client;
    client_sdk::ClientOptions options;
    options.scene_file = broken;
    EXPECT_FALSE(client.connect("127.0.0.1", 1, "r", "p", "", options));
    expect_names_the_problem(client.last_error());
  }
  {  // A directory that does not exist.
    server::ServerConfig config = scene_config();
    config.scene_dir = kBrokenDir + "/missing";
    server::Server server(config);
    std::string error;
    EXPECT_FALSE(server.start(&error));
    EXPECT_NE(error.find("missing"), std::string::npos) << error;
  }
}

TEST(NetScenes, DefaultSceneMayBeAFileServedUnderItsStem) {
  server::ServerConfig config = scene_config();
  config.scene = kServedDir + "/ramp.scene";  // also in scene_dir: served once
  net_test::InProcessServer server(config);
  ASSERT_TRUE(server.started());
  SceneClient player("player");
  ASSERT_TRUE(player.connect(server.port(), "any", file_options("ramp.scene")));
  ASSERT_TRUE(pump_until({&player}, [&] { return player.hashes.size() >= 30; }))
      << player.describe();
  ASSERT_TRUE(player.joined);
  EXPECT_EQ(player.joined->scene, "ramp");
  // A Hello without a scene name gets the default one.
  SceneClient plain("plain");
  client_sdk::ClientOptions options;
  std::string error;
  sim::Scene ramp;
  ASSERT_TRUE(schema::load_scene_file(kServedDir + "/ramp.scene", &ramp, &error)) << error;
  options.scene = ramp;
  ASSERT_TRUE(plain.connect(server.port(), "other", options));
  ASSERT_TRUE(pump_until({&plain}, [&] { return plain.hashes.size() >= 30; })) << plain.describe();
  EXPECT_EQ(plain.joined->scene, "ramp");
}

TEST(SceneFiles, NamedByTheirStemAndCheckedAtLoad) {
  sim::Scene scene;
  std::string error;
  ASSERT_TRUE(schema::load_scene_file(kServedDir + "/arena.scene", &scene, &error)) << error;
  EXPECT_EQ(scene.name, "arena");
  EXPECT_EQ(scene.bodies.size(), 5u);
  ASSERT_TRUE(schema::load_scene("inputs", &scene, &error)) << error;
  EXPECT_EQ(scene.name, "inputs");
  EXPECT_FALSE(schema::load_scene("no-such-scene", &scene, &error));
  EXPECT_NE(error.find("unknown scene 'no-such-scene'"), std::string::npos) << error;
  // Text the world refuses (a body over max_bodies is caught by the parser; a world that will
  // not build is named with its line).
  EXPECT_FALSE(
      schema::load_scene_text("world max_bodies=1\nbody type=static shape=plane "
                              "normal=0,1,0\nbody type=dynamic shape=sphere radius=1\n",
                              "inline", &scene, &error));
  EXPECT_EQ(error.rfind("inline: ", 0), 0u) << error;
  EXPECT_TRUE(schema::valid_scene_name("arena_2-v1.0"));
  EXPECT_FALSE(schema::valid_scene_name(""));
  EXPECT_FALSE(schema::valid_scene_name(".hidden"));
  EXPECT_FALSE(schema::valid_scene_name("a/b"));
  EXPECT_FALSE(schema::valid_scene_name(std::string(65, 'x')));
}

}  // namespace
