// The server with rooms on two worker threads (ServerConfig::threads = 2), against SDK clients
// over loopback: where rooms go, that rooms on both workers play in sync, that a room on an idle
// worker ticks while the other worker is swamped, that counters of both workers add up, and that
// a shutdown with rooms on both workers writes every room's replay before run() returns.
// Tests wait for what they check, never for a span of time (net_test_harness.h).
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "lockstep/client_sdk/client.h"
#include "lockstep/server/config.h"
#include "lockstep/server/server.h"
#include "lockstep/sim/scene.h"
#include "lockstep/sim/testing.h"
#include "net_test_harness.h"

namespace {

using namespace lockstep;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

constexpr uint32_t kTickRateHz = 240;
constexpr uint32_t kInputDelayTicks = 4;
constexpr auto kWait = net_test::kHangGuard;

server::ServerConfig two_thread_config(uint32_t tick_rate_hz = kTickRateHz) {
  server::ServerConfig config = net_test::loopback_config();
  config.tick_rate_hz = tick_rate_hz;
  config.input_delay_ticks = kInputDelayTicks;
  config.threads = 2;
  return config;
}

using TestServer = net_test::InProcessServer;

// One SDK client in one room, sending the scripted inputs of its player, keeping every hash.
struct TestClient {
  TestClient(std::string client_name, std::string room_name)
      : name(std::move(client_name)), room(std::move(room_name)) {}

  bool connect(uint16_t port) {
    const bool ok = client.connect("127.0.0.1", port, room, name, "", {});
    EXPECT_TRUE(ok) << client.last_error();
    if (ok) client.run_thread();
    return ok;
  }

  size_t pump() {
    return client.poll(0ms, [this](const client_sdk::Event& e) { handle(e); });
  }

  void handle(const client_sdk::Event& event) {
    if (const auto* t = std::get_if<client_sdk::TickAppliedEvent>(&event)) {
      hashes[t->tick] = t->state_hash;
      const std::optional<uint64_t> next = client.next_input_tick();
      if (script && next && *next > last_target) {
        std::vector<sim::Input> all(64);
        const uint32_t n =
            sim::scripted_inputs(sim::kDefaultInputSeed, t->tick, *script, t->world(), all);
        std::vector<sim::Input> mine;
        for (uint32_t i = 0; i < n; ++i) {
          if (all[i].player == client.player_id()) mine.push_back(all[i]);
        }
        if (!mine.empty()) {
          if (const std::optional<uint64_t> target = client.send_input(mine)) {
            last_target = *target;
            ++input_frames_sent;
          }
        }
      }
    } else if (const auto* s = std::get_if<client_sdk::SnapshotEvent>(&event)) {
      if (s->world_view != nullptr && !script) script = sim::make_input_script(s->world());
    } else if (const auto* d = std::get_if<client_sdk::DesyncEvent>(&event)) {
      desyncs.push_back(*d);
    } else if (const auto* x = std::get_if<client_sdk::ErrorEvent>(&event)) {
      errors.push_back(x->message);
    } else if (const auto* c = std::get_if<client_sdk::DisconnectedEvent>(&event)) {
      disconnected = *c;
    }
  }

  uint64_t last_tick() const { return hashes.empty() ? 0 : hashes.rbegin()->first; }
  std::string describe() const {
    std::string s = name + " in " + room + ": " + std::to_string(hashes.size()) +
                    " ticks verified, last " + std::to_string(last_tick()) + ", " +
                    std::to_string(desyncs.size()) + " desyncs";
    for (const std::string& e : errors)
      s += "\n  error: " + e;
    if (disconnected) s += "\n  disconnected: " + disconnected->reason;
    return s;
  }

  std::string name;
  std::string room;
  client_sdk::Client client;
  std::optional<sim::InputScript> script;
  std::map<uint64_t, uint64_t> hashes;  // tick → verified state hash
  std::vector<client_sdk::DesyncEvent> desyncs;
  std::vector<std::string> errors;
  std::optional<client_sdk::DisconnectedEvent> disconnected;
  uint64_t last_target = 0;
  uint64_t input_frames_sent = 0;
};

using Clients = std::vector<std::unique_ptr<TestClient>>;

bool pump_until(const Clients& clients, const std::function<bool()>& done,
                std::chrono::milliseconds timeout = kWait) {
  const Clock::time_point until = Clock::now() + timeout;
  while (!done()) {
    if (Clock::now() >= until) return false;
    size_t events = 0;
    for (const auto& c : clients)
      events += c->pump();
    if (events == 0) std::this_thread::sleep_for(200us);
  }
  return true;
}

std::string describe(const Clients& clients) {
  std::string s;
  for (const auto& c : clients)
    s += c->describe() + "\n";
  return s;
}

const server::RoomStats* find_room(const server::ServerStats& stats, const std::string& name) {
  for (size_t r = 0; r < stats.live_rooms && r < stats.rooms.size(); ++r) {
    if (stats.rooms[r].name == name) return &stats.rooms[r];
  }
  return nullptr;
}

class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = fs::temp_directory_path() / ("lockstep_net_threads_" + std::to_string(::getpid()) +
                                         "_" + std::to_string(counter.fetch_add(1)));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  std::string path() const { return path_.string(); }

 private:
  fs::path path_;
};

TEST(NetThreads, ThreadCountIsCheckedAndResolved) {
  server::ServerConfig config = net_test::loopback_config();
  config.threads = server::kMaxThreads + 1;
  EXPECT_NE(server::server_config_error(config), "");
  config.threads = server::kMaxThreads;
  EXPECT_EQ(server::server_config_error(config), "");
  config.threads = 0;  // one per core
  EXPECT_GE(server::effective_threads(config), 1u);
  config.threads = 3;
  EXPECT_EQ(server::effective_threads(config), 3u);
}

// Four rooms of two players on two workers: each worker gets two rooms (fewest rooms first), every
// player verifies every tick's hash against the server's, the two players of a room agree, and a
// desync provoked in a room on each worker is counted once per room in the server's totals.
TEST(NetThreads, RoomsOnBothWorkersPlayInSyncAndTheirCountersAddUp) {
  TestServer server(two_thread_config(net_test::kManyWorldsTickRateHz));
  ASSERT_TRUE(server.started());
  const std::vector<std::string> rooms = {"alpha", "bravo", "charlie", "delta"};
  Clients clients;
  for (const std::string& room : rooms) {
    for (int p = 0; p < 2; ++p) {
      clients.push_back(std::make_unique<TestClient>(room + "-p" + std::to_string(p + 1), room));
      ASSERT_TRUE(clients.back()->connect(server.port()));
    }
  }
  ASSERT_TRUE(pump_until(clients, [&] {
    return std::all_of(clients.begin(), clients.end(),
                       [](const auto& c) { return c->last_tick() >= 300; });
  })) << describe(clients);

  server::ServerStats stats;
  ASSERT_TRUE(server.stats_eventually(
      [&](const server::ServerStats& s) {
        return s.live_rooms == rooms.size() && s.thread_list.size() == 2;
      },
      &stats));
  EXPECT_EQ(stats.threads, 2u);
  EXPECT_EQ(stats.thread_list[0].rooms, 2u);
  EXPECT_EQ(stats.thread_list[1].rooms, 2u);
  for (const auto& c : clients) {
    EXPECT_TRUE(c->desyncs.empty()) << c->describe();
    EXPECT_TRUE(c->errors.empty()) << c->describe();
    EXPECT_GT(c->input_frames_sent, 0u) << c->describe();
  }
  // The two players of each room saw the same hashes at every tick both verified.
  for (size_t i = 0; i < clients.size(); i += 2) {
    const TestClient& a = *clients[i];
    const TestClient& b = *clients[i + 1];
    size_t compared = 0;
    for (const auto& [tick, hash] : a.hashes) {
      const auto other = b.hashes.find(tick);
      if (other == b.hashes.end()) continue;
      EXPECT_EQ(hash, other->second) << a.room << " tick " << tick;
      ++compared;
    }
    EXPECT_GT(compared, 100u) << a.room;
  }

  // A desync in one room of each worker.
  std::vector<size_t> victims;  // client indexes
  std::vector<std::string> victim_rooms;
  for (uint32_t thread : {0u, 1u}) {
    for (size_t i = 0; i < clients.size(); i += 2) {
      const server::RoomStats* room = find_room(stats, clients[i]->room);
      ASSERT_NE(room, nullptr) << clients[i]->room;
      if (room->thread != thread) continue;
      victims.push_back(i);
      victim_rooms.push_back(clients[i]->room);
      break;
    }
  }
  ASSERT_EQ(victims.size(), 2u);
  for (size_t i : victims) {
    TestClient& victim = *clients[i];
    ASSERT_FALSE(victim.client.owned_bodies().empty()) << victim.describe();
    victim.client.debug_perturb_next_tick(victim.client.owned_bodies().front(), {0.5f, 0, 0});
  }
  ASSERT_TRUE(pump_until(clients, [&] {
    return !clients[victims[0]]->desyncs.empty() && !clients[victims[1]]->desyncs.empty();
  })) << describe(clients);
  ASSERT_TRUE(server.stats_eventually(
      [](const server::ServerStats& s) { return s.desync_reports >= 2; }, &stats))
      << stats.desync_reports;
  EXPECT_EQ(stats.desync_reports, 2u);
  EXPECT_TRUE(server.stats_eventually(
      [&](const server::ServerStats& s) {
        const server::RoomStats* a = find_room(s, victim_rooms[0]);
        const server::RoomStats* b = find_room(s, victim_rooms[1]);
        return a != nullptr && b != nullptr && a->desync_reports == 1 && b->desync_reports == 1;
      },
      &stats));
  const std::string summary = server::summary_json(stats);
  EXPECT_NE(summary.find("\"threads\":2"), std::string::npos) << summary;
}

// Worker 0's room is made to take far longer per step than its tick allows (the worker is never
// idle); a room created then goes to worker 1 and its player still verifies hundreds of ticks.
TEST(NetThreads, ARoomCreatedWhileAnotherWorkerIsSwampedStillTicks) {
  std::atomic<bool> slow{true};
  std::atomic<bool> never{false};
  std::atomic<int> rooms_made{0};
  // The first call checks the served scene at start(); the next makes the first room (slow).
  server::RulesFactory factory = [&](const std::string&, const sim::Scene&,
                                     std::string*) -> std::unique_ptr<server::RoomRules> {
    const int call = rooms_made.fetch_add(1);
    return std::make_unique<net_test::SlowStepRules>(call == 1 ? &slow : &never, 20ms);
  };
  server::ServerConfig config = two_thread_config();
  config.rules = "slow-steps";
  TestServer server(config, nullptr, factory);
  ASSERT_TRUE(server.started());
  Clients clients;
  clients.push_back(std::make_unique<TestClient>("swamped", "swamped"));
  ASSERT_TRUE(clients.back()->connect(server.port()));
  server::ServerStats stats;
  // The swamped room steps slower than its schedule: it has slipped at least once.
  ASSERT_TRUE(server.stats_eventually(
      [](const server::ServerStats& s) {
        const server::RoomStats* r = find_room(s, "swamped");
        return r != nullptr && r->schedule_slips > 0;
      },
      &stats));
  clients.push_back(std::make_unique<TestClient>("lively", "lively"));
  ASSERT_TRUE(clients.back()->connect(server.port()));
  const uint64_t swamped_at_join = clients[0]->last_tick();
  ASSERT_TRUE(pump_until(clients, [&] { return clients[1]->last_tick() >= 480; }))
      << describe(clients);
  ASSERT_TRUE(server.stats_eventually(
      [](const server::ServerStats& s) {
        return s.thread_list.size() == 2 && s.thread_list[0].rooms == 1 &&
               s.thread_list[1].rooms == 1;
      },
      &stats));
  // At 20 ms a step the swamped room makes at most 50 ticks a second; the lively one needed
  // 480 ticks, which it could not have made sharing the swamped room's thread as fast.
  EXPECT_LT(clients[0]->last_tick() - swamped_at_join, 480u) << describe(clients);
  EXPECT_TRUE(clients[1]->desyncs.empty()) << clients[1]->describe();
  slow = false;
}

// A graceful shutdown with rooms on both workers: run() returns, every client got its
// Disconnect, and every room's shutdown replay and published match recording are on disk by
// then (both written by the one file-writing thread).
TEST(NetThreads, ShutdownWithRoomsOnBothWorkersWritesEveryReplay) {
  TempDir dir;
  server::ServerConfig config = two_thread_config();
  config.replay_dir = dir.path();
  config.replay_window_seconds = 5;
  config.dump_replays_on_shutdown = true;
  config.record_matches = true;
  const std::vector<std::string> rooms = {"one", "two", "three", "four"};
  Clients clients;
  {
    TestServer server(config);
    ASSERT_TRUE(server.started());
    for (const std::string& room : rooms) {
      clients.push_back(std::make_unique<TestClient>(room + "-player", room));
      ASSERT_TRUE(clients.back()->connect(server.port()));
    }
    ASSERT_TRUE(pump_until(clients, [&] {
      return std::all_of(clients.begin(), clients.end(),
                         [](const auto& c) { return c->last_tick() >= 60; });
    })) << describe(clients);
    server::ServerStats stats;
    ASSERT_TRUE(server.stats_eventually(
        [](const server::ServerStats& s) {
          return s.thread_list.size() == 2 && s.thread_list[0].rooms == 2 &&
                 s.thread_list[1].rooms == 2;
        },
        &stats));
    ASSERT_TRUE(server.stop());
    const server::ServerStats after = server.server().stats();
    EXPECT_EQ(after.file_writes, 2 * rooms.size());  // a window dump and a recording each
    EXPECT_EQ(after.file_writes_dropped, 0u);
    EXPECT_EQ(after.file_writes_failed, 0u);
    EXPECT_EQ(after.sessions_open, 0u);
  }
  std::vector<std::string> files, matches, temporary;
  for (const auto& entry : fs::directory_iterator(dir.path())) {
    const std::string name = entry.path().filename().string();
    const bool published = name.size() > 5 && name.compare(name.size() - 5, 5, ".lsrp") == 0;
    if (name.rfind("shutdown-", 0) == 0 && published) files.push_back(name);
    if (name.rfind("match-", 0) == 0 && published) matches.push_back(name);
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".tmp") == 0) temporary.push_back(name);
  }
  EXPECT_EQ(files.size(), rooms.size());
  EXPECT_EQ(matches.size(), rooms.size());
  EXPECT_TRUE(temporary.empty()) << temporary.front();
  for (const std::string& room : rooms) {
    for (const std::vector<std::string>* kind : {&files, &matches}) {
      EXPECT_TRUE(std::any_of(kind->begin(), kind->end(), [&](const std::string& f) {
        return f.find("-" + room + "-") != std::string::npos;
      })) << room;
    }
  }
  ASSERT_TRUE(pump_until(clients, [&] {
    return std::all_of(clients.begin(), clients.end(),
                       [](const auto& c) { return c->disconnected.has_value(); });
  })) << describe(clients);
}

}  // namespace
