// Players' bodies and game rules through the tick: a room running scenes/sumo.scene spawns a
// ball for each player who joins and destroys it after the leave grace, the sumo rules respawn a
// ball that falls into the `fall` sensor and score the last player who touched it, rules that
// ask for more commands than a tick holds are refused and counted while every room keeps
// ticking, and the whole-match recording replays joins, leaves and respawns bit for bit. Clients
// are the SDK with no scene of their own: each world is made from the Welcome and the Snapshot.
// Tests wait for conditions, never for a span of time.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "hill_rules.h"   // server/examples: the worked RoomRules of docs/server.md
#include "koth_client.h"  // client_sdk/examples: the worked client of docs/client.md
#include "lockstep/client_sdk/client.h"
#include "lockstep/replays/replay_reader.h"
#include "lockstep/schema/scene_file.h"
#include "lockstep/server/room_rules.h"
#include "lockstep/server/server.h"
#include "net_test_harness.h"

namespace {

using namespace lockstep;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

const std::string kSumoScene = LOCKSTEP_SCENES_DIR "/sumo.scene";
const std::string kServedDir = LOCKSTEP_TEST_SCENES "/served";

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() / ("lockstep_net_joins_" + std::to_string(::getpid()) + "_" +
                                         std::to_string(counter()++));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string str() const { return path_.string(); }

 private:
  static int& counter() {
    static int n = 0;
    return n;
  }
  fs::path path_;
};

// The one match recording (.lsrp) a test's server wrote into `dir`, loaded.
bool load_the_recording(const std::string& dir, replays::LoadedReplay* replay, std::string* error) {
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() == ".lsrp") files.push_back(entry.path().string());
  }
  if (files.size() != 1) {
    *error = std::to_string(files.size()) + " recordings in " + dir + ", expected one";
    return false;
  }
  return replays::load_replay_file(files[0], replay, error);
}

// Bodies of a world owned by `player`.
std::vector<sim::BodyId> bodies_of(const sim::World& world, uint32_t player) {
  std::vector<sim::BodyId> ids(world.body_count());
  ids.resize(world.list_bodies(ids));
  std::vector<sim::BodyId> out;
  for (const sim::BodyId id : ids) {
    sim::BodyView view;
    if (world.get_body(id, &view) == sim::Error::none && view.owner_player == player) {
      out.push_back(id);
    }
  }
  return out;
}

// An SDK client with no scene of its own; steers its ball along +x while `steer` is set.
struct Player {
  explicit Player(std::string client_name) : name(std::move(client_name)) {}

  bool connect(uint16_t port, const std::string& room, client_sdk::ClientOptions options = {}) {
    const bool ok = client.connect("127.0.0.1", port, room, name, "", options);
    if (ok) client.run_thread();
    return ok;
  }

  void pump() {
    client.poll(0ms, [this](const client_sdk::Event& event) {
      if (const auto* j = std::get_if<client_sdk::JoinedEvent>(&event)) {
        joined = *j;
      } else if (const auto* s = std::get_if<client_sdk::SnapshotEvent>(&event)) {
        if (s->world_view != nullptr && !first_snapshot_owners) {
          first_snapshot_owners.emplace();
          for (uint32_t p = 1; p <= 4; ++p)
            (*first_snapshot_owners)[p] = bodies_of(s->world(), p).size();
        }
      } else if (const auto* t = std::get_if<client_sdk::TickAppliedEvent>(&event)) {
        hashes[t->tick] = t->state_hash;
        const sim::World& world = t->world();
        for (uint32_t p = 1; p <= 4; ++p)
          bodies[p] = bodies_of(world, p).size();
        score1 = world.score(1);
        const uint32_t me = client.player_id();
        if (const auto ones = bodies_of(world, me); !ones.empty()) {
          sim::BodyView view;
          if (world.get_body(ones[0], &view) == sim::Error::none) position1 = view.position;
        }
        score2 = world.score(2);
        const auto owned = client.owned_bodies();
        if (!owned.empty()) {
          if (!first_body) first_body = owned.front();
          body = owned.front();
        }
        const std::optional<uint64_t> next = client.next_input_tick();
        // A target velocity replaces the whole velocity, y included: steer only while the ball is
        // on the platform, or it would hover beside it instead of falling.
        const bool on_platform = position1.y > 0.4f && position1.x < 4.0f;
        if (steer && on_platform && next && *next > last_target && !owned.empty()) {
          sim::Input input;
          input.body = owned.front();
          input.sequence = static_cast<uint32_t>(t->tick);
          input.flags = sim::input_sets_linear_velocity;
          input.linear_velocity[0] = 4 << sim::kInputScaleLog2;  // 4 m/s towards the edge
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
                    " desyncs, bodies of players 1-4: " + std::to_string(bodies.at(1)) + " " +
                    std::to_string(bodies.at(2)) + " " + std::to_string(bodies.at(3)) + " " +
                    std::to_string(bodies.at(4)) + ", own ball at " + std::to_string(position1.x) +
                    "," + std::to_string(position1.y) + "," + std::to_string(position1.z) +
                    ", player " + std::to_string(client.player_id()) + " body " +
                    (body ? std::to_string(body->index1) + ":" + std::to_string(body->generation)
                          : std::string("none")) +
                    ", inputs sent " + std::to_string(client.stats().inputs_sent);
    for (const auto& e : errors)
      s += "\n  error " + std::string(schema::error_code_name(e.code)) + ": " + e.message;
    if (disconnected) s += "\n  disconnected: " + disconnected->reason;
    return s;
  }

  std::string name;
  client_sdk::Client client;
  bool steer = false;
  uint64_t last_target = 0;
  std::optional<client_sdk::JoinedEvent> joined;
  std::optional<std::map<uint32_t, size_t>> first_snapshot_owners;
  std::map<uint64_t, uint64_t> hashes;
  std::map<uint32_t, size_t> bodies{{1, 0}, {2, 0}, {3, 0}, {4, 0}};
  int32_t score1 = 0, score2 = 0;
  sim::Vec3 position1{};  // this player's ball
  std::optional<sim::BodyId> first_body, body;
  std::vector<client_sdk::ErrorEvent> errors;
  std::vector<uint64_t> desyncs;
  std::optional<client_sdk::DisconnectedEvent> disconnected;
};

bool pump_until(const std::vector<Player*>& players, const std::function<bool()>& done) {
  return net_test::eventually(
      [&] {
        for (Player* p : players)
          p->pump();
        return done();
      },
      net_test::kHangGuard, 1ms);
}

server::ServerConfig sumo_config(const std::string& replay_dir) {
  server::ServerConfig config = net_test::loopback_config();
  config.tick_rate_hz = 120;
  config.input_delay_ticks = 4;
  config.scene = kSumoScene;  // its `rules name=sumo` line makes every room play sumo
  config.replay_dir = replay_dir;
  config.record_matches = !replay_dir.empty();
  config.dump_replays_on_shutdown = false;
  config.player_leave_grace = 100ms;
  return config;
}

TEST(NetJoins, JoinSpawnsLeaveDestroysRespawnsAndTheMatchReplaysBitForBit) {
  TempDir dir;
  {
    net_test::InProcessServer server(sumo_config(dir.str()));
    ASSERT_TRUE(server.started());
    Player a("a"), b("b");
    ASSERT_TRUE(a.connect(server.port(), "dojo")) << a.client.last_error();
    ASSERT_TRUE(b.connect(server.port(), "dojo")) << b.client.last_error();
    // Each joining player gets a ball on the next tick, owned by it, seen by both clients.
    ASSERT_TRUE(pump_until({&a, &b},
                           [&] {
                             return a.body && b.body && a.bodies[1] == 1 && a.bodies[2] == 1 &&
                                    b.bodies[1] == 1 && b.bodies[2] == 1;
                           }))
        << a.describe() << "\n"
        << b.describe();
    ASSERT_TRUE(a.joined && b.joined);
    EXPECT_EQ(a.joined->scene, "sumo");
    EXPECT_TRUE(a.joined->owned_bodies.empty());  // spawned by the tick after the Welcome
    EXPECT_NE(*a.body, *b.body);

    // A late joiner sees the earlier players' balls in its join Snapshot.
    Player c("c");
    ASSERT_TRUE(c.connect(server.port(), "dojo"));
    ASSERT_TRUE(pump_until({&a, &b, &c}, [&] { return c.body.has_value(); })) << c.describe();
    ASSERT_TRUE(c.first_snapshot_owners);
    EXPECT_EQ(c.first_snapshot_owners->at(1), 1u);
    EXPECT_EQ(c.first_snapshot_owners->at(2), 1u);
    EXPECT_EQ(c.first_snapshot_owners->at(3), 0u);  // its own comes with the next TickFrame

    // Player a drives off the edge; the sumo rules respawn the ball in the fall sensor at a
    // spawn point, keeping its handle, on every client alike.
    a.steer = true;
    ASSERT_TRUE(pump_until({&a, &b, &c}, [&] { return a.position1.y < -2.0f; })) << a.describe();
    a.steer = false;
    ASSERT_TRUE(pump_until({&a, &b, &c}, [&] { return a.position1.y > 0.0f; })) << a.describe();
    EXPECT_EQ(*a.body, *a.first_body);
    // a and b connected at once: either may be player 1.
    const uint32_t id_a = a.client.player_id(), id_b = b.client.player_id();
    ASSERT_EQ(id_a + id_b, 3u);
    EXPECT_EQ(a.bodies[id_a], 1u);
    const sim::BodyId respawned = *a.body;
    ASSERT_TRUE(pump_until({&a, &b, &c}, [&] { return c.last_tick() >= a.last_tick(); }));
    EXPECT_EQ(*a.body, respawned);

    // Player b leaves: after the grace its ball is destroyed (a destroy in a TickFrame).
    b.client.close();
    ASSERT_TRUE(pump_until({&a, &c}, [&] { return a.bodies[id_b] == 0 && c.bodies[id_b] == 0; }))
        << a.describe() << "\n"
        << c.describe();
    EXPECT_EQ(a.bodies[id_a], 1u);
    EXPECT_EQ(a.bodies[3], 1u);

    for (const Player* p : {&a, &c}) {
      SCOPED_TRACE(p->name);
      EXPECT_TRUE(p->desyncs.empty()) << p->describe();
      EXPECT_TRUE(p->errors.empty()) << p->describe();
      const client_sdk::ClientStats stats = p->client.stats();
      EXPECT_EQ(stats.ticks_verified, stats.ticks_applied);
    }
    const server::ServerStats stats = server.stats();
    ASSERT_EQ(stats.rooms.size(), 1u);
    // 3 join spawns, a respawn, b's destroy; maybe more falls.
    EXPECT_GE(stats.rooms[0].commands_applied, 5u);
    EXPECT_EQ(stats.rooms[0].commands_refused, 0u);
    EXPECT_EQ(stats.rooms[0].commands_failed, 0u);
  }  // graceful shutdown publishes the match recording

  replays::LoadedReplay replay;
  std::string error;
  ASSERT_TRUE(load_the_recording(dir.str(), &replay, &error)) << error;
  size_t spawns = 0, destroys = 0, respawns = 0;
  for (const replays::ReplayTick& tick : replay.ticks) {
    for (const sim::Command& command : tick.commands) {
      spawns += command.type == sim::CommandType::spawn;
      destroys += command.type == sim::CommandType::destroy;
      respawns += command.type == sim::CommandType::respawn;
    }
  }
  EXPECT_EQ(spawns, 3u);    // a, b, c
  EXPECT_GE(destroys, 1u);  // b's leave
  EXPECT_GE(respawns, 1u);  // a's fall
  const replays::VerifyResult verified = replays::verify_replay(replay);
  EXPECT_TRUE(verified.ok) << verified.error << " at tick "
                           << verified.first_divergent_tick.value_or(0);
  EXPECT_EQ(verified.ticks_verified, replay.ticks.size());
}

TEST(NetJoins, APlayerWhoJoinsInTheLeaveGraceTakesOverTheBodies) {
  server::ServerConfig config = sumo_config("");
  config.player_leave_grace = 60s;  // longer than the test: the bodies wait for a new player
  net_test::InProcessServer server(config);
  ASSERT_TRUE(server.started());
  Player first("first");
  ASSERT_TRUE(first.connect(server.port(), "dojo"));
  ASSERT_TRUE(pump_until({&first}, [&] { return first.body.has_value(); })) << first.describe();
  const sim::BodyId body = *first.body;
  first.client.close();
  server::ServerStats left;
  ASSERT_TRUE(server.stats_eventually(
      [](const server::ServerStats& s) { return s.rooms.size() == 1 && s.rooms[0].clients == 0; },
      &left));
  // The next player gets id 1 again, and with it the ball: listed in its Welcome, no new spawn.
  Player second("second");
  ASSERT_TRUE(second.connect(server.port(), "dojo"));
  ASSERT_TRUE(pump_until({&second}, [&] { return second.hashes.size() >= 30; }))
      << second.describe();
  ASSERT_TRUE(second.joined);
  EXPECT_EQ(second.joined->player_id, 1u);
  ASSERT_EQ(second.joined->owned_bodies.size(), 1u);
  EXPECT_EQ(second.joined->owned_bodies[0], body);
  EXPECT_EQ(second.body, std::optional<sim::BodyId>(body));
  EXPECT_EQ(second.bodies[1], 1u);
  EXPECT_TRUE(second.errors.empty()) << second.describe();
  const server::ServerStats stats = server.stats();
  ASSERT_EQ(stats.rooms.size(), 1u);
  EXPECT_EQ(stats.rooms[0].commands_applied, 1u);  // the first player's spawn only
}

// Rules that ask for far more commands each tick than a tick holds.
class FloodRules final : public server::RoomRules {
 public:
  void after_step(const sim::World&, std::span<const sim::SensorEvent>,
                  server::RulesOutput& out) override {
    for (int i = 0; i < 1000; ++i) {
      sim::Command score;
      score.type = sim::CommandType::add_score;
      score.owner_player = 1;
      score.score_delta = 1;
      out.push(score);
    }
  }
};

TEST(NetJoins, RulesOverTheCommandCapacityAreRefusedAndEveryRoomKeepsTicking) {
  server::ServerConfig config = net_test::loopback_config();
  config.tick_rate_hz = 120;
  config.input_delay_ticks = 4;
  config.scene_dir = kServedDir;
  config.rules = "flood-arena";
  net_test::InProcessServer server(config, nullptr,
                                   [](const std::string& name, const sim::Scene& scene,
                                      std::string* error) -> std::unique_ptr<server::RoomRules> {
                                     if (name != "flood-arena") {
                                       *error = "unknown rules";
                                       return nullptr;
                                     }
                                     if (scene.name == "arena")
                                       return std::make_unique<FloodRules>();
                                     struct NoRules final : server::RoomRules {
                                       void after_step(const sim::World&,
                                                       std::span<const sim::SensorEvent>,
                                                       server::RulesOutput&) override {}
                                     };
                                     return std::make_unique<NoRules>();
                                   });
  ASSERT_TRUE(server.started());
  client_sdk::ClientOptions arena, ramp;
  arena.scene_name = "arena";
  ramp.scene_name = "ramp";
  Player flooded("flooded"), calm("calm");
  ASSERT_TRUE(flooded.connect(server.port(), "north", arena));
  ASSERT_TRUE(calm.connect(server.port(), "south", ramp));
  ASSERT_TRUE(pump_until({&flooded, &calm},
                         [&] { return flooded.hashes.size() >= 60 && calm.hashes.size() >= 60; }))
      << flooded.describe() << "\n"
      << calm.describe();
  // Each tick took the first max_commands_per_tick (64) of the flood: scores are state, hashed,
  // and every client verified every tick.
  EXPECT_GE(flooded.score1, 64 * 30);
  EXPECT_EQ(flooded.score1 % 64, 0);
  EXPECT_EQ(calm.score1, 0);
  for (const Player* p : {&flooded, &calm}) {
    EXPECT_TRUE(p->desyncs.empty()) << p->describe();
    EXPECT_TRUE(p->errors.empty()) << p->describe();
  }
  const server::ServerStats stats = server.stats();
  std::map<std::string, server::RoomStats> rooms;
  for (const server::RoomStats& room : stats.rooms)
    rooms[room.name] = room;
  EXPECT_GT(rooms["north"].commands_refused, 900u * 30);
  EXPECT_GT(rooms["north"].commands_applied, 64u * 30);
  EXPECT_EQ(rooms["south"].commands_refused, 0u);
  EXPECT_NE(server::summary_json(stats).find("\"commands_refused\":"), std::string::npos);
  EXPECT_GE(rooms["south"].tick, 60u);
}

// Every hook of a RoomRules, as a room calls it, written down with the world's tick then.
struct HookLog {
  struct Entry {
    std::string hook;
    uint64_t world_tick = 0;
    uint32_t player = 0;
    std::vector<uint32_t> players;  // RoomInfo::players' ids at the call
    size_t bodies = 0;              // join: the player's bodies
    bool bodies_alive = false;      // join: every body it names exists in the world
  };
  std::mutex mutex;
  std::vector<Entry> entries;
  uint32_t tick_rate_hz = 0;
  std::string scene_name;
  // before_step adds 1 to player 1's score for the step about to run; after_step checks the
  // world's score against the count, so a command from before_step must land in that step.
  int32_t before_steps = 0;
  uint64_t score_mismatches = 0;

  std::vector<Entry> copy() {
    std::lock_guard lock(mutex);
    return entries;
  }
  bool has(const std::string& hook, uint32_t player = 0) {
    std::lock_guard lock(mutex);
    for (const Entry& e : entries) {
      if (e.hook == hook && e.player == player) return true;
    }
    return false;
  }
};

class RecordingRules final : public server::RoomRules {
 public:
  explicit RecordingRules(std::shared_ptr<HookLog> log) : log_(std::move(log)) {}

  void on_room_start(const server::RoomInfo& info, const sim::World& world,
                     server::RulesOutput&) override {
    std::lock_guard lock(log_->mutex);
    log_->tick_rate_hz = info.tick_rate_hz;
    log_->scene_name = info.scene_name;
    add("start", world, info, 0);
  }
  void before_step(const server::RoomInfo& info, const sim::World& world,
                   server::RulesOutput& out) override {
    sim::Command score;
    score.type = sim::CommandType::add_score;
    score.owner_player = 1;
    score.score_delta = 1;
    std::lock_guard lock(log_->mutex);
    if (out.push(score)) ++log_->before_steps;
    if (log_->entries.size() < 4) add("before", world, info, 0);
  }
  void on_player_join(const server::RoomInfo& info, const sim::World& world,
                      const server::RoomPlayer& player, server::RulesOutput&) override {
    std::lock_guard lock(log_->mutex);
    HookLog::Entry& e = add("join", world, info, player.id);
    e.bodies = player.bodies.size();
    e.bodies_alive = std::all_of(player.bodies.begin(), player.bodies.end(),
                                 [&](sim::BodyId id) { return world.is_alive(id); });
  }
  void on_player_leave(const server::RoomInfo& info, const sim::World& world,
                       const server::RoomPlayer& player, server::RulesOutput&) override {
    std::lock_guard lock(log_->mutex);
    add("leave", world, info, player.id);
  }
  void after_step(const sim::World& world, std::span<const sim::SensorEvent>,
                  server::RulesOutput&) override {
    std::lock_guard lock(log_->mutex);
    if (world.score(1) != log_->before_steps) ++log_->score_mismatches;
  }
  void on_match_end(const server::RoomInfo& info, const sim::World& world) override {
    std::lock_guard lock(log_->mutex);
    add("end", world, info, 0);
  }

 private:
  HookLog::Entry& add(const char* hook, const sim::World& world, const server::RoomInfo& info,
                      uint32_t player) {
    HookLog::Entry e;
    e.hook = hook;
    e.world_tick = world.tick();
    e.player = player;
    for (const server::RoomPlayer& p : info.players)
      e.players.push_back(p.id);
    log_->entries.push_back(std::move(e));
    return log_->entries.back();
  }
  std::shared_ptr<HookLog> log_;
};

TEST(NetJoins, RulesHooksRunAtTheirPointsInTheTick) {
  auto log = std::make_shared<HookLog>();
  server::ServerConfig config = sumo_config("");
  config.rules = "record";
  {
    net_test::InProcessServer server(config, nullptr,
                                     [log](const std::string&, const sim::Scene&,
                                           std::string*) -> std::unique_ptr<server::RoomRules> {
                                       return std::make_unique<RecordingRules>(log);
                                     });
    ASSERT_TRUE(server.started());
    Player a("a");
    ASSERT_TRUE(a.connect(server.port(), "dojo"));
    ASSERT_TRUE(pump_until({&a}, [&] { return log->has("join", 1) && a.body.has_value(); }))
        << a.describe();
    Player b("b");
    ASSERT_TRUE(b.connect(server.port(), "dojo"));
    ASSERT_TRUE(pump_until({&a, &b}, [&] { return log->has("join", 2); })) << b.describe();
    b.client.close();
    ASSERT_TRUE(pump_until({&a}, [&] { return log->has("leave", 2); })) << a.describe();
    // Clients verified every tick: the rules' scores travelled as commands.
    ASSERT_TRUE(pump_until({&a}, [&] { return a.score1 > 10; })) << a.describe();
    EXPECT_TRUE(a.desyncs.empty()) << a.describe();
    EXPECT_TRUE(a.errors.empty()) << a.describe();
  }  // the shutdown stops the room: on_match_end
  const std::vector<HookLog::Entry> entries = log->copy();
  ASSERT_GE(entries.size(), 5u);
  // Room start first, at tick 0, then before_step of tick 1 (the world still at tick 0).
  EXPECT_EQ(entries[0].hook, "start");
  EXPECT_EQ(entries[0].world_tick, 0u);
  EXPECT_TRUE(entries[0].players.empty());
  EXPECT_EQ(entries[1].hook, "before");
  EXPECT_EQ(entries[1].world_tick, 0u);
  EXPECT_EQ(log->tick_rate_hz, 120u);
  EXPECT_EQ(log->scene_name, "sumo");
  EXPECT_EQ(log->score_mismatches, 0u);
  std::vector<std::string> order;
  for (const HookLog::Entry& e : entries) {
    if (e.hook == "before") continue;
    order.push_back(e.hook + std::to_string(e.player));
    if (e.hook == "join") {
      // After the step that spawned the ball: it exists, and the player is in RoomInfo.
      EXPECT_GE(e.world_tick, 1u);
      EXPECT_EQ(e.bodies, 1u);
      EXPECT_TRUE(e.bodies_alive);
      EXPECT_NE(std::find(e.players.begin(), e.players.end(), e.player), e.players.end());
    }
    if (e.hook == "leave") {
      EXPECT_EQ(std::find(e.players.begin(), e.players.end(), e.player), e.players.end());
      if (e.player == 2) {
        EXPECT_EQ(e.players, std::vector<uint32_t>{1});
      }
    }
  }
  // The shutdown closes a's connection before it stops the room: when a tick runs in between,
  // the rules see a leave too, before the match ends.
  if (order.size() == 6 && order[4] == "leave1") order.erase(order.begin() + 4);
  EXPECT_EQ(order, (std::vector<std::string>{"start0", "join1", "join2", "leave2", "end0"}));
}

// The docs' example driven as a room drives it: a ball of player 1 resting on the hill scores a
// point per second of ticks.
TEST(RoomRulesDocs, TheHillExampleScoresTheKingOncePerSecond) {
  sim::Scene scene;
  std::string error;
  ASSERT_TRUE(sim::parse_scene_text(
      "scene name=hill version=1\n"
      "body name=ground type=static shape=box half=10,0.5,10 pos=0,-0.5,0\n"
      "body name=hill type=static shape=box half=2,1,2 pos=0,1,0 sensor=1\n"
      "body name=ball type=dynamic shape=sphere radius=0.5 pos=0,0.5,0 owner=1\n",
      &scene, &error))
      << error;
  std::unique_ptr<sim::World> world = sim::build_world(scene);
  ASSERT_NE(world, nullptr);
  HillRules rules(sim::find_scene_body(scene, "hill"));
  server::RoomInfo info;
  info.scene = &scene;
  info.scene_name = scene.name;
  info.tick_rate_hz = 60;
  struct Queue final : server::RulesOutput {
    sim::World* world = nullptr;
    uint32_t sequence = 1;
    bool push(const sim::Command& command) override {
      sim::Command c = command;
      c.sequence = sequence++;
      return world->queue_command(c) == sim::Error::none;
    }
  } out;
  out.world = world.get();
  rules.on_room_start(info, *world, out);
  for (int t = 0; t < 60 * 3 + 1; ++t) {
    rules.before_step(info, *world, out);
    world->step();
    rules.after_step(*world, world->sensor_events(), out);
  }
  world->step();  // applies the last point
  EXPECT_EQ(world->score(1), 3);
  // A "ready" from player 2 becomes event 1 about player 2, in the step after the message.
  const std::string ready = "ready";
  rules.on_message(info, *world, 2, world->tick(),
                   std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(ready.data()), 5),
                   out);
  world->step();
  ASSERT_EQ(world->game_events().size(), 1u);
  EXPECT_EQ(world->game_events()[0].type, 1u);
  EXPECT_EQ(world->game_events()[0].player, 2u);
  EXPECT_EQ(world->game_events()[0].value, static_cast<int32_t>(world->tick() - 1));
}

// The worked client of docs/client.md against a koth room: it joins, says "ready" and sees the
// rules' event for it, steers its ball onto the hill and earns hill seconds there.
TEST(ClientDocs, TheWorkedKothClientPlaysSaysReadyAndHoldsTheHill) {
  server::ServerConfig config = net_test::loopback_config();
  config.scene = LOCKSTEP_SCENES_DIR "/koth.scene";
  net_test::InProcessServer server(config);
  ASSERT_TRUE(server.started());
  KothProgress last;
  const auto give_up = std::chrono::steady_clock::now() + net_test::kHangGuard;
  const int code = play_koth("127.0.0.1", server.port(), "hill", [&](const KothProgress& p) {
    last = p;
    return (p.ready_seen && p.hill_seconds >= 1) || std::chrono::steady_clock::now() > give_up;
  });
  EXPECT_EQ(code, 0);
  EXPECT_TRUE(last.said_ready);
  EXPECT_TRUE(last.ready_seen);
  EXPECT_GE(last.hill_seconds, 1);
  EXPECT_EQ(last.score, last.hill_seconds);
  EXPECT_GE(last.events, 3u);  // its join, its ready, its king
}

// A koth client: steers its ball to the hill (the platform's centre) while `climb` is set and
// records, per verified tick, the game state and the game events the tick carried.
struct KothPlayer {
  explicit KothPlayer(bool predict) { options.prediction = predict; }

  bool connect(uint16_t port) {
    const bool ok = client.connect("127.0.0.1", port, "hill", "koth", "", options);
    if (ok) client.run_thread();
    return ok;
  }

  void pump() {
    client.poll(0ms, [this](const client_sdk::Event& event) {
      if (const auto* t = std::get_if<client_sdk::TickAppliedEvent>(&event)) {
        const sim::World& world = t->world();
        const uint32_t seconds = world.find_state_field("hill_seconds");
        const uint32_t king = world.find_state_field("king");
        if (seconds == sim::kNoStateField || king == sim::kNoStateField) return;
        const uint32_t me = client.player_id();
        states[t->tick] = {world.state(seconds, me), world.state(king), world.score(me)};
        for (const sim::GameEvent& e : world.game_events())
          events.push_back({t->tick, e.type, e.player});
        steer(world);
      } else if (const auto* p = std::get_if<client_sdk::TickPredictedEvent>(&event)) {
        const uint32_t seconds = p->world().find_state_field("hill_seconds");
        if (seconds != sim::kNoStateField)
          predicted_seconds = p->world().state(seconds, client.player_id());
      } else if (const auto* e = std::get_if<client_sdk::ErrorEvent>(&event)) {
        errors.push_back(e->message);
      } else if (const auto* d = std::get_if<client_sdk::DesyncEvent>(&event)) {
        desyncs.push_back(d->tick);
      }
    });
  }

  void steer(const sim::World& world) {
    const auto& owned = client.owned_bodies();
    const std::optional<uint64_t> next = client.next_input_tick();
    if (!climb || owned.empty() || !next || *next <= last_target) return;
    sim::BodyView view;
    if (world.get_body(owned.front(), &view) != sim::Error::none || view.position.y < 0.3f) return;
    sim::Input input;
    input.body = owned.front();
    input.sequence = static_cast<uint32_t>(*next);
    input.flags = sim::input_sets_linear_velocity;
    // Towards the centre at up to 3 m/s; y kept, so gravity still acts.
    const float k = 1.5f;
    input.linear_velocity[0] = static_cast<int32_t>(std::clamp(-k * view.position.x, -3.0f, 3.0f) *
                                                    (1 << sim::kInputScaleLog2));
    input.linear_velocity[1] =
        static_cast<int32_t>(view.linear_velocity.y * (1 << sim::kInputScaleLog2));
    input.linear_velocity[2] = static_cast<int32_t>(std::clamp(-k * view.position.z, -3.0f, 3.0f) *
                                                    (1 << sim::kInputScaleLog2));
    if (const std::optional<uint64_t> target = client.send_input({&input, 1})) {
      last_target = *target;
    }
  }

  struct State {
    int32_t hill_seconds = 0, king = 0, score = 0;
    bool operator==(const State&) const = default;
  };
  struct Seen {
    uint64_t tick = 0;
    uint32_t type = 0, player = 0;
  };
  client_sdk::ClientOptions options;
  client_sdk::Client client;
  bool climb = false;
  uint64_t last_target = 0;
  std::map<uint64_t, State> states;
  std::vector<Seen> events;
  std::optional<int32_t> predicted_seconds;
  std::vector<std::string> errors;
  std::vector<uint64_t> desyncs;
};

// King of the hill end to end: a player alone on the hill scores a second of hill time (game
// state) and a point per second, is king (room state) with a game event saying so, and a second
// client (predicting) sees the same state at every tick both verified.
TEST(NetJoins, KothScoresTheKingInGameStateThatEveryClientSees) {
  server::ServerConfig config = net_test::loopback_config();
  config.tick_rate_hz = 60;
  config.input_delay_ticks = 2;
  config.scene = LOCKSTEP_SCENES_DIR "/koth.scene";
  net_test::InProcessServer server(config);
  ASSERT_TRUE(server.started());
  KothPlayer climber(false), watcher(true);
  ASSERT_TRUE(climber.connect(server.port()));
  ASSERT_TRUE(watcher.connect(server.port()));
  climber.climb = true;
  const auto& seconds_of = [](const KothPlayer& p) {
    return p.states.empty() ? 0 : p.states.rbegin()->second.hill_seconds;
  };
  ASSERT_TRUE(net_test::eventually(
      [&] {
        climber.pump();
        watcher.pump();
        return seconds_of(climber) >= 3;
      },
      net_test::kHangGuard, 1ms))
      << climber.states.size() << " ticks, errors " << climber.errors.size();
  const uint32_t me = climber.client.player_id();
  const KothPlayer::State now = climber.states.rbegin()->second;
  EXPECT_EQ(now.king, static_cast<int32_t>(me));
  EXPECT_EQ(now.score, now.hill_seconds);  // a point per second alone on the hill
  // The event that made it king, in the TickFrame of the tick that set `king`.
  const auto took = std::find_if(climber.events.begin(), climber.events.end(),
                                 [&](const auto& e) { return e.type == 1 && e.player == me; });
  ASSERT_NE(took, climber.events.end());
  EXPECT_EQ(climber.states.at(took->tick).king, static_cast<int32_t>(me));
  EXPECT_EQ(climber.states.at(took->tick - 1).king, 0);
  // The watcher saw every tick both verified in the same state, and its predicted world reads the
  // field too.
  ASSERT_TRUE(net_test::eventually(
      [&] {
        climber.pump();
        watcher.pump();
        return !watcher.states.empty() &&
               watcher.states.rbegin()->first >= climber.states.rbegin()->first &&
               watcher.predicted_seconds.has_value();
      },
      net_test::kHangGuard, 1ms));
  size_t compared = 0;
  for (const auto& [tick, state] : climber.states) {
    const auto it = watcher.states.find(tick);
    if (it == watcher.states.end()) continue;
    EXPECT_EQ(it->second.king, state.king) << tick;
    ++compared;
  }
  EXPECT_GT(compared, 100u);
  for (const KothPlayer* p : {&climber, &watcher}) {
    EXPECT_TRUE(p->desyncs.empty());
    EXPECT_TRUE(p->errors.empty()) << p->errors.front();
  }
  const server::ServerStats stats = server.stats();
  ASSERT_EQ(stats.rooms.size(), 1u);
  EXPECT_EQ(stats.rooms[0].commands_refused, 0u);
  EXPECT_EQ(stats.rooms[0].commands_failed, 0u);
}

// Rules that write a game state field the scene does not declare, or a player a room field
// cannot hold, or emit an event about a player beyond kMaxPlayers: each command is refused when
// queued, counted in commands_refused, and the room and its clients go on.
class BadStateRules final : public server::RoomRules {
 public:
  void after_step(const sim::World& world, std::span<const sim::SensorEvent>,
                  server::RulesOutput& out) override {
    out.push(server::set_state_command(5, 1, 7));  // koth declares two fields, not six
    out.push(server::set_state_command(world.find_state_field("king"), 2, 1));  // room field
    out.push(server::event_command(1, sim::kMaxPlayers + 1, 0));
    out.push(server::add_state_command(world.find_state_field("hill_seconds"), 1, 2));  // fine
  }
};

TEST(NetJoins, RulesWritingUnknownStateFieldsAreRefusedAndCounted) {
  server::ServerConfig config = net_test::loopback_config();
  config.tick_rate_hz = 120;
  config.scene = LOCKSTEP_SCENES_DIR "/koth.scene";
  config.rules = "bad-state";
  net_test::InProcessServer server(config, nullptr,
                                   [](const std::string&, const sim::Scene&,
                                      std::string*) -> std::unique_ptr<server::RoomRules> {
                                     return std::make_unique<BadStateRules>();
                                   });
  ASSERT_TRUE(server.started());
  KothPlayer player(false);
  ASSERT_TRUE(player.connect(server.port()));
  ASSERT_TRUE(net_test::eventually(
      [&] {
        player.pump();
        return !player.states.empty() && player.states.rbegin()->second.hill_seconds >= 60;
      },
      net_test::kHangGuard, 1ms));
  EXPECT_TRUE(player.errors.empty());
  EXPECT_TRUE(player.desyncs.empty());
  const server::ServerStats stats = server.stats();
  ASSERT_EQ(stats.rooms.size(), 1u);
  EXPECT_GE(stats.rooms[0].commands_refused, 3u * 30);
  EXPECT_EQ(stats.rooms[0].commands_failed, 0u);
  EXPECT_GE(stats.rooms[0].commands_applied, 30u);
}

TEST(NetJoins, ServerRefusesUnknownRulesAndSumoWithoutItsSensor) {
  server::ServerConfig config = net_test::loopback_config();
  config.scene = kSumoScene;
  config.rules = "chess";
  {
    server::Server server(config);
    std::string error;
    EXPECT_FALSE(server.start(&error));
    EXPECT_NE(error.find("unknown rules 'chess'"), std::string::npos) << error;
  }
  config.scene = kServedDir + "/arena.scene";  // no body named fall
  config.rules = "sumo";
  {
    server::Server server(config);
    std::string error;
    EXPECT_FALSE(server.start(&error));
    EXPECT_NE(error.find("no body named 'fall'"), std::string::npos) << error;
  }
}

// The sumo rules driven in-process, as a room drives them: step, rules, commands for the next
// step. Ball 1 rests near the platform's +x edge; ball 2 rolls into it and knocks it off.
TEST(SumoRules, AFallenBallIsRespawnedAndTheLastToucherScores) {
  sim::Scene scene;
  std::string error;
  ASSERT_TRUE(schema::load_scene_file(kSumoScene, &scene, &error)) << error;
  EXPECT_EQ(scene.rules, "sumo");
  std::unique_ptr<server::RoomRules> rules = server::make_builtin_rules("sumo", scene, &error);
  ASSERT_NE(rules, nullptr) << error;
  std::unique_ptr<sim::World> world = sim::build_world(scene);
  ASSERT_NE(world, nullptr);

  struct Collect final : server::RulesOutput {
    std::vector<sim::Command> commands;
    bool push(const sim::Command& c) override {
      commands.push_back(c);
      return true;
    }
  } out;
  uint32_t sequence = 1;
  auto spawn = [&](uint32_t owner, sim::Vec3 at, sim::Vec3 velocity) {
    sim::Command c;
    c.type = sim::CommandType::spawn;
    c.sequence = sequence++;
    c.template_index = static_cast<uint32_t>(scene.player_template);
    c.position = at;
    c.linear_velocity = velocity;
    c.owner_player = owner;
    ASSERT_EQ(world->queue_command(c), sim::Error::none);
  };
  spawn(1, {3.3f, 0.5f, 0}, {});
  spawn(2, {1.0f, 0.5f, 0}, {6, 0, 0});
  std::vector<sim::Command> issued;
  for (int t = 0; t < 600 && world->score(2) == 0; ++t) {
    for (sim::Command c : out.commands) {
      c.sequence = sequence++;
      ASSERT_EQ(world->queue_command(c), sim::Error::none);
      issued.push_back(c);
    }
    out.commands.clear();
    world->step();
    rules->after_step(*world, world->sensor_events(), out);
  }
  EXPECT_EQ(world->score(2), 1);
  EXPECT_EQ(world->score(1), 0);
  ASSERT_GE(issued.size(), 2u);
  EXPECT_EQ(issued[0].type, sim::CommandType::respawn);
  EXPECT_EQ(issued[1].type, sim::CommandType::add_score);
  EXPECT_EQ(issued[1].owner_player, 2u);
  // The respawn is at the spawn point farthest from ball 2 (wherever it ended up), on the
  // platform, and the ball kept its handle.
  const std::vector<sim::BodyId> ones = bodies_of(*world, 1);
  ASSERT_EQ(ones.size(), 1u);
  EXPECT_EQ(issued[0].body, ones[0]);
  sim::BodyView view;
  ASSERT_EQ(world->get_body(ones[0], &view), sim::Error::none);
  EXPECT_GT(view.position.y, 0.0f);
  EXPECT_LT(view.position.x * view.position.x + view.position.z * view.position.z, 4.0f * 4.0f);
}

}  // namespace

namespace {
// The rules' answer to one hook, collected.
struct CollectedOutput final : server::RulesOutput {
  bool push(const sim::Command& command) override {
    commands.push_back(command);
    return true;
  }
  std::vector<sim::Command> commands;
};
}  // namespace

// A client's game message end to end: the SDK sends "ready", the koth rules see it at the next
// tick and answer with a game event that every client reads in the TickFrame after; the match
// recording keeps the message at the tick the rules saw it, so the koth rules re-run over the
// recording (its world stepped from the first keyframe, its messages given at their ticks) issue
// the very event the recording holds.
TEST(NetJoins, KothTurnsAReadyMessageIntoAnEventAndTheRecordingReRunsIt) {
  TempDir dir;
  server::ServerConfig config = net_test::loopback_config();
  config.tick_rate_hz = 60;
  config.input_delay_ticks = 2;
  config.scene = LOCKSTEP_SCENES_DIR "/koth.scene";
  config.replay_dir = dir.str();
  config.record_matches = true;
  config.dump_replays_on_shutdown = false;
  uint32_t me = 0;
  uint64_t event_tick = 0;
  {
    net_test::InProcessServer server(config);
    ASSERT_TRUE(server.started());
    KothPlayer sayer(false), watcher(false);
    ASSERT_TRUE(sayer.connect(server.port()));
    ASSERT_TRUE(watcher.connect(server.port()));
    ASSERT_TRUE(net_test::eventually(
        [&] {
          sayer.pump();
          watcher.pump();
          return !sayer.states.empty() && !watcher.states.empty();
        },
        net_test::kHangGuard, 1ms));
    me = sayer.client.player_id();
    ASSERT_TRUE(sayer.client.send_game_message("ready")) << sayer.client.last_error();
    ASSERT_TRUE(sayer.client.send_game_message("ready"));  // said twice: one event
    ASSERT_TRUE(sayer.client.send_game_message("hello"));  // not a koth message: no event
    const auto ready_event = [me](const KothPlayer& p) {
      return std::find_if(p.events.begin(), p.events.end(),
                          [me](const auto& e) { return e.type == 5 && e.player == me; });
    };
    ASSERT_TRUE(net_test::eventually(
        [&] {
          sayer.pump();
          watcher.pump();
          return ready_event(sayer) != sayer.events.end() &&
                 ready_event(watcher) != watcher.events.end() &&
                 watcher.states.rbegin()->first > ready_event(sayer)->tick + 5;
        },
        net_test::kHangGuard, 1ms));
    event_tick = ready_event(sayer)->tick;
    EXPECT_EQ(ready_event(watcher)->tick, event_tick);  // the same tick on every client
    for (const KothPlayer* p : {&sayer, &watcher}) {
      EXPECT_EQ(std::count_if(p->events.begin(), p->events.end(),
                              [](const auto& e) { return e.type == 5; }),
                1);
      EXPECT_TRUE(p->desyncs.empty());
      EXPECT_TRUE(p->errors.empty()) << p->errors.front();
    }
    EXPECT_EQ(sayer.client.stats().game_messages_sent, 3u);
    server::ServerStats stats;
    ASSERT_TRUE(server.stats_eventually(
        [](const server::ServerStats& s) {
          return s.rooms.size() == 1 && s.rooms[0].game_messages_delivered == 3;
        },
        &stats));
    EXPECT_EQ(stats.rooms[0].game_messages_oversize + stats.rooms[0].game_messages_over_rate, 0u);
  }  // graceful shutdown publishes the match recording

  replays::LoadedReplay replay;
  std::string error;
  ASSERT_TRUE(load_the_recording(dir.str(), &replay, &error)) << error;
  ASSERT_EQ(replay.game_messages.size(), 3u);
  const auto text = [](const replays::ReplayGameMessage& m) {
    return std::string(m.data.begin(), m.data.end());
  };
  EXPECT_EQ(text(replay.game_messages[0]), "ready");
  EXPECT_EQ(text(replay.game_messages[2]), "hello");
  for (const replays::ReplayGameMessage& m : replay.game_messages)
    EXPECT_EQ(m.player, me);
  // The rules saw the first at the tick before the one whose TickFrame carried their event.
  EXPECT_EQ(replay.game_messages[0].tick + 1, event_tick);
  const replays::VerifyResult verified = replays::verify_replay(replay);
  EXPECT_TRUE(verified.ok) << verified.error;

  // The re-run: fresh koth rules, the world re-simulated from the recording, each message given
  // after the step of its tick; what the rules answer is in the next tick's recorded commands.
  sim::Scene scene;
  ASSERT_TRUE(schema::load_scene_file(config.scene, &scene, &error)) << error;
  std::unique_ptr<server::RoomRules> rules = server::make_builtin_rules("koth", scene, &error);
  ASSERT_NE(rules, nullptr) << error;
  std::unique_ptr<sim::World> world = replays::make_replay_world(replay, &error);
  ASSERT_NE(world, nullptr) << error;
  server::RoomInfo info;
  info.scene = &scene;
  info.tick_rate_hz = replay.header.tick_rate_hz;
  CollectedOutput ignored;
  rules->on_room_start(info, *world, ignored);
  size_t next_message = 0, events_matched = 0;
  for (size_t i = 0; i < replay.ticks.size(); ++i) {
    const replays::ReplayTick& t = replay.ticks[i];
    ASSERT_EQ(world->step(sim::TickInput{t.commands, t.inputs}).ok(), true);
    CollectedOutput out;
    for (; next_message < replay.game_messages.size() &&
           replay.game_messages[next_message].tick == world->tick();
         ++next_message) {
      const replays::ReplayGameMessage& m = replay.game_messages[next_message];
      rules->on_message(info, *world, m.player, m.tick, m.data, out);
    }
    for (const sim::Command& c : out.commands) {
      ASSERT_LT(i + 1, replay.ticks.size());
      const std::vector<sim::Command>& next = replay.ticks[i + 1].commands;
      const bool recorded = std::any_of(next.begin(), next.end(), [&c](const sim::Command& r) {
        return r.type == c.type && r.template_index == c.template_index &&
               r.owner_player == c.owner_player && r.score_delta == c.score_delta;
      });
      EXPECT_TRUE(recorded) << "tick " << world->tick() + 1;
      EXPECT_EQ(world->tick() + 1, event_tick);
      ++events_matched;
    }
  }
  EXPECT_EQ(next_message, replay.game_messages.size());
  EXPECT_EQ(events_matched, 1u);
}

// The SDK's side of the limits: a message over the server's size limit comes back as a non-fatal
// ErrorEvent and the client keeps verifying ticks; one over the codec's cap, or sent before the
// join, is refused locally with the reason in last_error().
TEST(NetJoins, AnOversizeGameMessageIsRefusedAndTheClientPlaysOn) {
  server::ServerConfig config = net_test::loopback_config();
  config.scene = LOCKSTEP_SCENES_DIR "/koth.scene";
  net_test::InProcessServer server(config);
  ASSERT_TRUE(server.started());
  KothPlayer p(false);
  EXPECT_FALSE(p.client.send_game_message("ready"));  // not connected yet
  EXPECT_NE(p.client.last_error().find("not joined"), std::string::npos);
  ASSERT_TRUE(p.connect(server.port()));
  ASSERT_TRUE(net_test::eventually(
      [&] {
        p.pump();
        return !p.states.empty();
      },
      net_test::kHangGuard, 1ms));
  EXPECT_FALSE(p.client.send_game_message(std::string(schema::kMaxGameMessageBytes + 1, 'x')));
  EXPECT_NE(p.client.last_error().find("4096"), std::string::npos) << p.client.last_error();
  ASSERT_TRUE(p.client.send_game_message(std::string(config.max_game_message_bytes + 1, 'x')));
  ASSERT_TRUE(net_test::eventually(
      [&] {
        p.pump();
        return !p.errors.empty();
      },
      net_test::kHangGuard, 1ms));
  EXPECT_NE(p.errors.front().find("at most 256 bytes"), std::string::npos) << p.errors.front();
  const uint64_t refused_at = p.states.rbegin()->first;
  ASSERT_TRUE(net_test::eventually(
      [&] {
        p.pump();
        return p.states.rbegin()->first > refused_at + 30;
      },
      net_test::kHangGuard, 1ms));
  EXPECT_EQ(p.client.state(), client_sdk::ClientState::joined);
  EXPECT_TRUE(p.desyncs.empty());
  EXPECT_EQ(p.errors.size(), 1u);
}
