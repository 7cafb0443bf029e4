// A level served over the network: a server runs scenes/sumo_bowl.scene (its arena an OBJ level
// file), and SDK clients join it with no level file (the Welcome carries the geometry), or with
// their own copy when the Welcome carries only the level's digest; a differing copy and a world
// over the client's memory budget are refused at the join. Tests wait for conditions, never for
// a span of time.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lockstep/client_sdk/client.h"
#include "lockstep/schema/level_file.h"
#include "lockstep/schema/scene_file.h"
#include "lockstep/server/server.h"
#include "net_test_harness.h"

namespace {

using namespace lockstep;
using namespace std::chrono_literals;

const std::string kScenesDir = LOCKSTEP_SCENES_DIR;

server::ServerConfig level_config() {
  server::ServerConfig config = net_test::loopback_config();
  config.tick_rate_hz = 240;
  config.input_delay_ticks = 4;
  config.scene_dir = kScenesDir;
  return config;
}

struct LevelClient {
  bool connect(uint16_t port, const std::string& room, client_sdk::ClientOptions options) {
    options.scene_name = "sumo_bowl";
    const bool ok = client.connect("127.0.0.1", port, room, "p", "", options);
    if (ok) client.run_thread();
    return ok;
  }
  void pump() {
    client.poll(0ms, [this](const client_sdk::Event& event) {
      if (const auto* t = std::get_if<client_sdk::TickAppliedEvent>(&event)) {
        ++ticks;
        (void)t;
      } else if (const auto* e = std::get_if<client_sdk::ErrorEvent>(&event)) {
        errors.push_back(e->message);
      } else if (std::get_if<client_sdk::DesyncEvent>(&event) != nullptr) {
        ++desyncs;
      }
    });
  }
  std::string describe() const {
    std::string s = std::to_string(ticks) + " ticks, " + std::to_string(desyncs) + " desyncs";
    for (const std::string& e : errors)
      s += "\n  error: " + e;
    return s;
  }
  client_sdk::Client client;
  uint64_t ticks = 0;
  uint64_t desyncs = 0;
  std::vector<std::string> errors;
};

bool pump_until(const std::vector<LevelClient*>& clients, const std::function<bool()>& done) {
  return net_test::eventually(
      [&] {
        for (LevelClient* c : clients)
          c->pump();
        return done();
      },
      net_test::kHangGuard, 1ms);
}

sim::Scene bowl_file() {
  sim::Scene scene;
  std::string error;
  EXPECT_TRUE(schema::load_scene_file(kScenesDir + "/sumo_bowl.scene", &scene, &error)) << error;
  return scene;
}

TEST(NetLevel, AClientWithoutTheLevelFileGetsItInTheWelcomeAndVerifiesEveryTick) {
  net_test::InProcessServer server(level_config());
  ASSERT_TRUE(server.started());
  LevelClient bot;
  ASSERT_TRUE(bot.connect(server.port(), "bowl", {})) << bot.client.last_error();
  ASSERT_TRUE(pump_until({&bot}, [&] { return bot.ticks >= 240 || !bot.errors.empty(); }))
      << bot.describe();
  EXPECT_TRUE(bot.errors.empty()) << bot.describe();
  EXPECT_EQ(bot.desyncs, 0u);
  const client_sdk::ClientStats stats = bot.client.stats();
  EXPECT_EQ(stats.ticks_verified, stats.ticks_applied);
  ASSERT_NE(bot.client.world(), nullptr);
  auto reference = sim::build_world(bowl_file());
  ASSERT_NE(reference, nullptr);
  EXPECT_EQ(bot.client.world()->level_stats().digest, reference->level_stats().digest);
  EXPECT_EQ(bot.client.world()->level_stats().triangles, 360u);
}

TEST(NetLevel, APredictingClientsWorldAheadHasTheLevelToo) {
  // The predicted world restores the confirmed world's snapshots and its bodies rest on the bowl:
  // it must be made with the level, not from the WorldDef alone.
  net_test::InProcessServer server(level_config());
  ASSERT_TRUE(server.started());
  LevelClient bot;
  client_sdk::ClientOptions options;
  options.prediction = true;
  ASSERT_TRUE(bot.connect(server.port(), "bowl", options)) << bot.client.last_error();
  ASSERT_TRUE(pump_until({&bot}, [&] { return bot.ticks >= 120 || !bot.errors.empty(); }))
      << bot.describe();
  EXPECT_TRUE(bot.errors.empty()) << bot.describe();
  EXPECT_EQ(bot.desyncs, 0u);
  ASSERT_NE(bot.client.predicted_world(), nullptr);
  EXPECT_EQ(bot.client.predicted_world()->level_stats().digest,
            bot.client.world()->level_stats().digest);
  EXPECT_EQ(bot.client.predicted_world()->level_stats().triangles, 360u);
  EXPECT_GE(bot.client.predicted_world()->tick(), bot.client.world()->tick());
}

TEST(NetLevel, ADigestOnlyWelcomeNeedsTheClientsOwnCopyAndRefusesADifferentOne) {
  server::ServerConfig config = level_config();
  config.max_welcome_level_bytes = 0;  // every level goes as its digest alone
  net_test::InProcessServer server(config);
  ASSERT_TRUE(server.started());

  LevelClient with_file;
  client_sdk::ClientOptions file_options;
  file_options.scene_file = kScenesDir + "/sumo_bowl.scene";
  ASSERT_TRUE(with_file.connect(server.port(), "bowl", file_options))
      << with_file.client.last_error();
  ASSERT_TRUE(pump_until({&with_file}, [&] {
    return with_file.ticks >= 120 || !with_file.errors.empty();
  })) << with_file.describe();
  EXPECT_TRUE(with_file.errors.empty()) << with_file.describe();
  EXPECT_EQ(with_file.desyncs, 0u);

  LevelClient without;
  ASSERT_TRUE(without.connect(server.port(), "bowl", {}));
  ASSERT_TRUE(pump_until({&with_file, &without}, [&] { return !without.errors.empty(); }));
  EXPECT_NE(without.errors.front().find("as its digest only: give ClientOptions::scene_file"),
            std::string::npos)
      << without.describe();

  sim::Scene moved = bowl_file();
  moved.meshes[0].vertices[0].y = 0.001f;  // one vertex moved by a millimetre
  const uint64_t ours =
      sim::level_digest(schema::view_level(moved.meshes, moved.heightfields).def());
  char ours_hex[17];
  std::snprintf(ours_hex, sizeof(ours_hex), "%016llx", static_cast<unsigned long long>(ours));
  LevelClient differing;
  client_sdk::ClientOptions differing_options;
  differing_options.scene = moved;
  ASSERT_TRUE(differing.connect(server.port(), "bowl", differing_options));
  ASSERT_TRUE(pump_until({&with_file, &differing}, [&] { return !differing.errors.empty(); }));
  const std::string& message = differing.errors.front();
  EXPECT_NE(message.find(std::string("our copy of the level (digest ") + ours_hex),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("differs from the server's (digest "), std::string::npos) << message;
}

TEST(NetLevel, AWorldOverTheClientsMemoryBudgetIsRefusedAtTheJoin) {
  net_test::InProcessServer server(level_config());
  ASSERT_TRUE(server.started());
  // The budget the world alone fits in, but not with the level the Welcome brings.
  const sim::Scene bowl = bowl_file();
  const uint64_t level_bytes =
      schema::level_content_bytes(bowl.meshes, bowl.heightfields) +
      sim::level_memory_bytes(schema::view_level(bowl.meshes, bowl.heightfields).def());
  const uint64_t need = sim::world_memory_bytes(bowl.def) + level_bytes;
  LevelClient small;
  client_sdk::ClientOptions options;
  options.max_world_memory_bytes = need - 1;
  ASSERT_TRUE(small.connect(server.port(), "bowl", options));
  ASSERT_TRUE(pump_until({&small}, [&] { return !small.errors.empty(); }));
  EXPECT_NE(small.errors.front().find("the Welcome's world needs " + std::to_string(need) +
                                      " bytes (level " + std::to_string(level_bytes) +
                                      "), over max_world_memory_bytes"),
            std::string::npos)
      << small.describe();
  EXPECT_EQ(small.client.world(), nullptr);

  LevelClient enough;
  options.max_world_memory_bytes = need;
  ASSERT_TRUE(enough.connect(server.port(), "bowl", options));
  ASSERT_TRUE(pump_until({&enough}, [&] { return enough.ticks >= 60 || !enough.errors.empty(); }));
  EXPECT_TRUE(enough.errors.empty()) << enough.describe();
}

}  // namespace
