// The client SDK over real sockets on 127.0.0.1, against a server hosted in this process on an
// ephemeral port (its own thread, net_test_harness.h). The room ticks at 240 Hz so 600 ticks take
// 2.5 s on an idle machine. Tests wait for what they check (ticks verified, inputs counted), not
// for time, and assert no durations, so a busy machine only makes them slower; every wait is
// bounded (kWait) and ctest adds a TIMEOUT on top, so nothing here can hang.
//
// What is checked, and against what:
// - hashes are compared between clients (each computed its own by stepping its own world) and
//   each was compared by the SDK against the server's, so agreement is three-way;
// - a desync is provoked by moving one body of one client's world (the test hook) and must be
//   reported at exactly the next tick, counted by the server, and healed by a resync;
// - thin-client rates are checked by the tick spacing, and against the wall clock only in the
//   direction load cannot fake (no snapshot of a tick before that tick is due).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
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
#include "lockstep/schema/messages.h"
#include "lockstep/server/server.h"
#include "lockstep/sim/scene.h"
#include "lockstep/sim/testing.h"
#include "lockstep/sim/version.h"
#include "net_test_harness.h"

namespace {

using namespace lockstep;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr uint32_t kTickRateHz = 240;
// 4 ticks = 16.7 ms at 240 Hz: ample for loopback even under sanitizers, so inputs are on time.
constexpr uint32_t kInputDelayTicks = 4;
// Upper bound of any single wait below: a hang guard, never a measurement.
constexpr auto kWait = net_test::kHangGuard;

// The room every test here plays in: the inputs scene at 240 Hz on loopback.
server::ServerConfig room_config(uint32_t tick_rate_hz = kTickRateHz) {
  server::ServerConfig config = net_test::loopback_config();
  config.tick_rate_hz = tick_rate_hz;
  config.input_delay_ticks = kInputDelayTicks;
  return config;
}

using TestServer = net_test::InProcessServer;

// One SDK client and everything it reported.
struct TestClient {
  explicit TestClient(std::string client_name) : name(std::move(client_name)) {}

  bool connect(uint16_t port, client_sdk::ClientOptions options = {}, bool own_thread = true) {
    const bool ok = client.connect("127.0.0.1", port, "default", name, "", options);
    EXPECT_TRUE(ok) << client.last_error();
    if (ok && own_thread) client.run_thread();
    return ok;
  }

  size_t pump(std::chrono::milliseconds wait) {
    return client.poll(wait, [this](const client_sdk::Event& e) { handle(e); });
  }

  void handle(const client_sdk::Event& event) {
    if (on_event) on_event(event);
    if (const auto* j = std::get_if<client_sdk::JoinedEvent>(&event)) {
      joined = *j;
    } else if (const auto* t = std::get_if<client_sdk::TickAppliedEvent>(&event)) {
      // The world view must be the state the event names.
      EXPECT_EQ(t->world().tick(), t->tick);
      EXPECT_EQ(t->world().state_hash(), t->state_hash);
      hashes[t->tick] = t->state_hash;
      if (t->input_count > 0) ++ticks_with_inputs;
      // Once per server tick (a poll may apply several ticks at once).
      const std::optional<uint64_t> next = client.next_input_tick();
      if (send_inputs && script && next && *next > last_target) {
        std::vector<sim::Input> all(64);
        const uint32_t n = sim::scripted_inputs(seed, t->tick, *script, t->world(), all);
        std::vector<sim::Input> mine;
        for (uint32_t i = 0; i < n; ++i) {
          if (all[i].player == client.player_id()) mine.push_back(all[i]);
        }
        if (!mine.empty()) {
          const std::optional<uint64_t> target = client.send_input(mine);
          EXPECT_TRUE(target.has_value());
          if (target) {
            // Stamped no earlier than announced (time moves on), ahead of what we have
            // verified, and never backwards.
            EXPECT_GE(*target, *next);
            EXPECT_GT(*target, t->tick);
            EXPECT_GT(*target, last_target);
            last_target = *target;
            ++input_frames_sent;
          }
        }
      }
    } else if (const auto* s = std::get_if<client_sdk::SnapshotEvent>(&event)) {
      snapshots.push_back({s->tick, s->state_hash, s->resync, Clock::now()});
      if (s->world_view != nullptr) {
        EXPECT_EQ(s->world().tick(), s->tick);
        EXPECT_EQ(s->world().state_hash(), s->state_hash);
        if (!script) script = sim::make_input_script(s->world());
      }
    } else if (const auto* d = std::get_if<client_sdk::DesyncEvent>(&event)) {
      desyncs.push_back(*d);
    } else if (const auto* x = std::get_if<client_sdk::ErrorEvent>(&event)) {
      errors.push_back(*x);
    } else if (const auto* c = std::get_if<client_sdk::DisconnectedEvent>(&event)) {
      EXPECT_FALSE(disconnected.has_value()) << "a second DisconnectedEvent";
      disconnected = *c;
    }
  }

  uint64_t last_tick() const { return hashes.empty() ? 0 : hashes.rbegin()->first; }
  uint64_t first_tick() const { return hashes.empty() ? 0 : hashes.begin()->first; }

  struct SnapshotSeen {
    uint64_t tick = 0;
    uint64_t hash = 0;
    bool resync = false;
    Clock::time_point at;
  };

  std::string name;
  client_sdk::Client client;
  std::function<void(const client_sdk::Event&)> on_event;  // called first, on the polling thread
  bool send_inputs = false;
  uint64_t seed = sim::kDefaultInputSeed;
  std::optional<sim::InputScript> script;
  std::optional<client_sdk::JoinedEvent> joined;
  std::map<uint64_t, uint64_t> hashes;  // tick → verified state hash
  std::vector<SnapshotSeen> snapshots;
  std::vector<client_sdk::DesyncEvent> desyncs;
  std::vector<client_sdk::ErrorEvent> errors;
  std::optional<client_sdk::DisconnectedEvent> disconnected;
  uint64_t ticks_with_inputs = 0;
  uint64_t input_frames_sent = 0;
  uint64_t last_target = 0;
};

// Polls every client until `done` holds; false when kWait ran out first.
bool pump_until(const std::vector<TestClient*>& clients, const std::function<bool()>& done,
                std::chrono::milliseconds timeout = kWait) {
  const Clock::time_point until = Clock::now() + timeout;
  while (!done()) {
    if (Clock::now() >= until) return false;
    size_t events = 0;
    for (TestClient* c : clients)
      events += c->pump(0ms);
    if (events == 0) std::this_thread::sleep_for(200us);  // poll-driven clients need polling
  }
  return true;
}

std::string describe(const TestClient& c) {
  std::string s = c.name + ": verified " + std::to_string(c.hashes.size()) + " ticks (" +
                  std::to_string(c.first_tick()) + ".." + std::to_string(c.last_tick()) + "), " +
                  std::to_string(c.desyncs.size()) + " desyncs, " +
                  std::to_string(c.errors.size()) + " errors";
  for (const auto& e : c.errors)
    s += "\n  error: " + e.message;
  if (c.disconnected) s += "\n  disconnected: " + c.disconnected->reason;
  return s;
}

// Waits until the room has counted `inputs_sent` inputs (accepted or rejected: some may still be
// in flight or buffered for a future tick when the clients stopped) and checks that it accepted
// every one; returns the room's stats.
server::RoomStats room_took_every_input(TestServer& server, uint64_t inputs_sent) {
  server::ServerStats stats;
  const bool all_counted = server.stats_eventually(
      [&](const server::ServerStats& s) {
        return !s.rooms.empty() &&
               s.rooms.front().inputs_accepted + s.rooms.front().inputs_rejected >= inputs_sent;
      },
      &stats);
  if (stats.rooms.empty()) {
    ADD_FAILURE() << "no room in the server's stats";
    return {};
  }
  const server::RoomStats& room = stats.rooms.front();
  EXPECT_TRUE(all_counted) << room.inputs_accepted << " accepted, " << room.inputs_rejected
                           << " rejected of " << inputs_sent << " sent";
  EXPECT_EQ(room.inputs_rejected, 0u);
  EXPECT_EQ(room.inputs_accepted, inputs_sent);
  return room;
}

// Every tick both verified has the same hash; returns how many ticks they share.
size_t expect_same_hashes(const TestClient& a, const TestClient& b, uint64_t from_tick = 0) {
  size_t shared = 0;
  for (const auto& [tick, hash] : a.hashes) {
    if (tick < from_tick) continue;
    const auto it = b.hashes.find(tick);
    if (it == b.hashes.end()) continue;
    ++shared;
    EXPECT_EQ(hash, it->second) << a.name << " and " << b.name << " differ at tick " << tick;
  }
  return shared;
}

TEST(NetClient, JoinAndLateJoinSeeTheSameHashes) {
  TestServer server(room_config());
  ASSERT_TRUE(server.started());
  TestClient early("early");
  early.send_inputs = true;
  ASSERT_TRUE(early.connect(server.port()));
  ASSERT_TRUE(pump_until({&early}, [&] { return early.joined && early.hashes.size() >= 120; }))
      << describe(early);
  EXPECT_EQ(early.joined->player_id, 1u);
  EXPECT_EQ(early.joined->tick_rate_hz, kTickRateHz);
  EXPECT_EQ(early.joined->input_delay_ticks, kInputDelayTicks);
  EXPECT_EQ(early.joined->scene, "inputs");
  EXPECT_EQ(early.joined->owned_bodies.size(), 4u);  // the inputs scene: 4 bodies per player
  ASSERT_FALSE(early.snapshots.empty());
  // In sync from the first tick after the join snapshot: no tick is missing.
  EXPECT_EQ(early.first_tick(), early.snapshots.front().tick + 1);
  EXPECT_EQ(early.hashes.size(), early.last_tick() - early.first_tick() + 1);

  // The late joiner is poll-driven (no io thread): the other way a game can run the SDK.
  const uint64_t early_reached = early.last_tick();  // stepped by the room before `late` came
  TestClient late("late");
  ASSERT_TRUE(late.connect(server.port(), {}, /*own_thread=*/false));
  ASSERT_TRUE(pump_until({&early, &late},
                         [&] {
                           return late.joined && late.hashes.size() >= 120 &&
                                  early.last_tick() >= late.last_tick() &&
                                  early.ticks_with_inputs > 60;
                         }))
      << describe(early) << "\n"
      << describe(late);
  EXPECT_EQ(late.joined->player_id, 2u);
  EXPECT_GE(late.joined->tick, early_reached);
  ASSERT_FALSE(late.snapshots.empty());
  EXPECT_GE(late.snapshots.front().tick, early_reached);
  EXPECT_EQ(late.first_tick(), late.snapshots.front().tick + 1);
  EXPECT_EQ(late.hashes.size(), late.last_tick() - late.first_tick() + 1);

  // The late joiner's every tick is one the early client verified, with the same hash.
  const size_t shared = expect_same_hashes(late, early);
  EXPECT_EQ(shared, late.hashes.size());
  // The early client's inputs moved the world (waited for above: it sends once per tick it gets
  // to, and a loaded machine batches several ticks per poll), so the agreement is not about a
  // resting scene.
  for (const TestClient* c : {&early, &late}) {
    EXPECT_TRUE(c->desyncs.empty()) << describe(*c);
    EXPECT_TRUE(c->errors.empty()) << describe(*c);
    EXPECT_FALSE(c->disconnected.has_value()) << describe(*c);
  }
}

TEST(NetClient, FourClientsSixHundredTicksWithInputsNeverDesync) {
  TestServer server(room_config(net_test::kManyWorldsTickRateHz));
  ASSERT_TRUE(server.started());
  std::vector<std::unique_ptr<TestClient>> owned;
  std::vector<TestClient*> clients;
  for (int i = 0; i < 4; ++i) {
    owned.push_back(std::make_unique<TestClient>("bot" + std::to_string(i)));
    owned.back()->send_inputs = true;
    owned.back()->seed = sim::kDefaultInputSeed + static_cast<uint64_t>(i);
    clients.push_back(owned.back().get());
    ASSERT_TRUE(owned.back()->connect(server.port()));
  }
  // 600 ticks each, and at least 150 input frames each: one per tick a client got to, fewer
  // when a poll applied several ticks at once (ASan on two busy cores: 222 in 600 ticks).
  auto all_done = [&] {
    return std::all_of(clients.begin(), clients.end(), [](const TestClient* c) {
      return c->hashes.size() >= 600 && c->input_frames_sent >= 150;
    });
  };
  std::string state;
  const bool finished = pump_until(clients, all_done);
  for (const TestClient* c : clients)
    state += describe(*c) + "\n";
  ASSERT_TRUE(finished) << state;

  std::vector<uint32_t> players;
  for (const TestClient* c : clients) {
    EXPECT_TRUE(c->desyncs.empty()) << describe(*c);
    EXPECT_TRUE(c->errors.empty()) << describe(*c);
    EXPECT_FALSE(c->disconnected.has_value()) << describe(*c);
    EXPECT_EQ(c->client.stats().desyncs, 0u);
    EXPECT_GE(c->client.stats().ticks_verified, 600u);
    players.push_back(c->joined->player_id);
  }
  std::sort(players.begin(), players.end());
  EXPECT_EQ(players, (std::vector<uint32_t>{1, 2, 3, 4}));
  // All four agree tick by tick over the span they share (at least 500 ticks).
  for (size_t i = 1; i < clients.size(); ++i) {
    EXPECT_GE(expect_same_hashes(*clients[0], *clients[i]), 500u);
  }
  // The server applied every input the clients sent and refused none (the SDK stamps the right
  // player and bodies). Stop sending, then wait until the room has counted each one, in flight
  // or buffered for a future tick when they stopped. How many arrived late (and were applied at
  // the next tick) depends on scheduling, so it is not bounded here.
  for (TestClient* c : clients)
    c->send_inputs = false;
  uint64_t inputs_sent = 0;
  uint64_t frames_sent = 0;
  for (const TestClient* c : clients) {
    inputs_sent += c->client.stats().inputs_sent;
    frames_sent += c->input_frames_sent;
  }
  EXPECT_GE(inputs_sent, frames_sent);  // every frame carries at least one input
  const server::RoomStats room = room_took_every_input(server, inputs_sent);
  EXPECT_EQ(room.inputs_late_dropped, 0u);  // the default policy applies late inputs
  EXPECT_EQ(room.desync_reports, 0u);
}

// A room whose steps take twice its tick period cannot keep its 240 Hz: it runs at most at 120,
// on a machine made busy on purpose (two spinning processes on two cores). The room must stay
// playable at the speed it can: it moves its schedule later instead of falling ever further
// behind, the clients hear of it in their Pongs and keep stamping inputs the room accepts.
// Nothing may be refused as beyond the window and nobody may desync.
TEST(NetClient, RoomAtTwiceItsCapacityMovesItsScheduleAndRefusesNoInput) {
  const net_test::BusyProcesses busy(2);
  server::ServerConfig config = room_config();
  config.rules = "slow-steps";
  std::atomic<bool> slow{true};
  // 2 × 1/240 s per step, on top of the step itself.
  TestServer server(config, nullptr, net_test::slow_steps_factory(&slow, 8334us));
  ASSERT_TRUE(server.started());
  TestClient a("a");
  TestClient b("b");
  a.send_inputs = true;
  b.send_inputs = true;
  b.seed = sim::kDefaultInputSeed + 1;
  ASSERT_TRUE(a.connect(server.port()));
  ASSERT_TRUE(b.connect(server.port()));
  std::vector<TestClient*> clients = {&a, &b};
  // Long enough for the schedule to move many times (the lag bound is a quarter of the 64-tick
  // window: 16 ticks, reached in about 16 steps at half speed).
  auto done = [&] {
    return std::all_of(clients.begin(), clients.end(), [](const TestClient* c) {
      return c->hashes.size() >= 300 && c->input_frames_sent >= 60 &&
             c->client.stats().schedule_moves + 1 >= 1;
    });
  };
  const bool finished = pump_until(clients, done);
  ASSERT_TRUE(finished) << describe(a) << "\n" << describe(b);
  slow = false;
  for (TestClient* c : clients)
    c->send_inputs = false;
  uint64_t inputs_sent = 0;
  for (const TestClient* c : clients) {
    EXPECT_TRUE(c->desyncs.empty()) << describe(*c);
    EXPECT_TRUE(c->errors.empty()) << describe(*c);  // an input refused would be an ErrorEvent
    EXPECT_FALSE(c->disconnected.has_value()) << describe(*c);
    inputs_sent += c->client.stats().inputs_sent;
  }
  EXPECT_GE(expect_same_hashes(a, b), 200u);
  const server::RoomStats room = room_took_every_input(server, inputs_sent);
  EXPECT_GE(room.schedule_slips, 2u);
  EXPECT_GT(room.schedule_slipped.count(), 0);
  EXPECT_EQ(room.desync_reports, 0u);
}

// A game that leaves Input::sequence at 0 in every frame: the room takes a (player, sequence)
// once, so the SDK must number them itself, or every input after the first would be dropped as
// a repeat.
TEST(NetClient, InputsSentWithoutASequenceAreEachAppliedOnce) {
  TestServer server(room_config());
  ASSERT_TRUE(server.started());
  TestClient a("a");
  ASSERT_TRUE(a.connect(server.port()));
  ASSERT_TRUE(pump_until({&a}, [&] { return a.joined.has_value() && !a.hashes.empty(); }));
  ASSERT_FALSE(a.joined->owned_bodies.empty());
  constexpr int kFrames = 20;
  uint64_t last = 0;
  for (int i = 0; i < kFrames; ++i) {
    // One frame per tick: wait until the next stamp moves on.
    ASSERT_TRUE(pump_until({&a}, [&] {
      const std::optional<uint64_t> next = a.client.next_input_tick();
      return next && *next > last;
    }));
    sim::Input in;
    in.body = a.joined->owned_bodies[0];
    in.linear_impulse[1] = 1 << 10;  // sequence left 0
    const std::optional<uint64_t> target = a.client.send_input(std::span(&in, 1));
    ASSERT_TRUE(target.has_value()) << a.client.last_error();
    last = *target;
  }
  server::ServerStats stats;
  const bool counted = server.stats_eventually(
      [](const server::ServerStats& s) {
        return !s.rooms.empty() && s.rooms.front().inputs_accepted +
                                           s.rooms.front().inputs_rejected +
                                           s.rooms.front().inputs_duplicate >=
                                       kFrames;
      },
      &stats);
  ASSERT_TRUE(counted);
  EXPECT_EQ(stats.rooms.front().inputs_accepted, uint64_t{kFrames});
  EXPECT_EQ(stats.rooms.front().inputs_duplicate, 0u);
}

TEST(NetClient, InducedDesyncIsDetectedAtItsTickReportedAndHealedByResync) {
  TestServer server(room_config());
  ASSERT_TRUE(server.started());
  TestClient victim("victim");
  TestClient witness("witness");
  victim.send_inputs = true;
  witness.send_inputs = true;
  ASSERT_TRUE(victim.connect(server.port()));
  ASSERT_TRUE(witness.connect(server.port()));
  ASSERT_TRUE(pump_until({&victim, &witness},
                         [&] { return victim.hashes.size() >= 60 && witness.hashes.size() >= 60; }))
      << describe(victim) << "\n"
      << describe(witness);
  ASSERT_TRUE(victim.desyncs.empty());

  // Move one of the victim's own bodies by 0.5 m in its local world only: the next tick the
  // victim steps cannot hash like the server's.
  ASSERT_NE(victim.client.world(), nullptr);
  const uint64_t perturbed_tick = victim.client.world()->tick() + 1;
  ASSERT_FALSE(victim.client.owned_bodies().empty());
  victim.client.debug_perturb_next_tick(victim.client.owned_bodies().front(), {0.5f, 0, 0});

  // Until 60 ticks after the resync snapshot (which the server sends at its current tick: on a
  // loaded machine that is a few ticks after the desync) and the witness has them too.
  auto resync_tick = [&]() -> uint64_t {
    for (const auto& s : victim.snapshots) {
      if (s.resync) return s.tick;
    }
    return UINT64_MAX - 60;
  };
  ASSERT_TRUE(pump_until({&victim, &witness},
                         [&] {
                           return !victim.desyncs.empty() && victim.client.stats().resyncs >= 1 &&
                                  victim.last_tick() >= perturbed_tick + 60 &&
                                  victim.last_tick() >= resync_tick() + 60 &&
                                  witness.last_tick() >= victim.last_tick();
                         }))
      << describe(victim) << "\n"
      << describe(witness);

  ASSERT_EQ(victim.desyncs.size(), 1u) << describe(victim);
  const client_sdk::DesyncEvent& desync = victim.desyncs.front();
  EXPECT_EQ(desync.tick, perturbed_tick);
  EXPECT_NE(desync.local_hash, desync.server_hash);
  // The server's hash for that tick is the one the untouched client verified.
  ASSERT_TRUE(witness.hashes.count(perturbed_tick));
  EXPECT_EQ(desync.server_hash, witness.hashes.at(perturbed_tick));
  EXPECT_FALSE(victim.hashes.count(perturbed_tick)) << "the bad tick was reported as applied";

  // A resync snapshot came, later than the desync, and the victim agrees again from there on.
  const auto resync = std::find_if(victim.snapshots.begin(), victim.snapshots.end(),
                                   [](const auto& s) { return s.resync; });
  ASSERT_NE(resync, victim.snapshots.end());
  EXPECT_GE(resync->tick, perturbed_tick);
  EXPECT_EQ(victim.hashes.lower_bound(perturbed_tick)->first, resync->tick + 1);
  EXPECT_GE(expect_same_hashes(victim, witness, resync->tick + 1), 59u);
  EXPECT_TRUE(witness.desyncs.empty()) << describe(witness);

  // Reported: the server counted exactly one DesyncReport.
  const server::ServerStats stats = server.stats();
  EXPECT_EQ(stats.desync_reports, 1u);
  ASSERT_FALSE(stats.rooms.empty());
  EXPECT_EQ(stats.rooms.front().desync_reports, 1u);
}

TEST(NetClient, ADesyncAfterEveryResyncEndsWithTheDiagnosisNotAResyncLoop) {
  TestServer server(room_config());
  ASSERT_TRUE(server.started());
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("lockstep-desync-loop-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  TestClient broken("broken");
  TestClient witness("witness");
  client_sdk::ClientOptions options;
  options.replay_dir = dir.string();
  ASSERT_TRUE(broken.connect(server.port(), options));
  ASSERT_TRUE(witness.connect(server.port()));
  ASSERT_TRUE(pump_until({&broken, &witness}, [&] { return broken.hashes.size() >= 30; }))
      << describe(broken);

  // A client whose world leaves the server's one tick after the join and after every resync,
  // as one built with other floating-point code does at its first contact.
  ASSERT_FALSE(broken.client.owned_bodies().empty());
  const sim::BodyId body = broken.client.owned_bodies().front();
  const uint64_t first_tick = broken.client.world()->tick() + 1;
  broken.client.debug_perturb_next_tick(body, {0.5f, 0, 0});
  broken.on_event = [&](const client_sdk::Event& event) {
    const auto* s = std::get_if<client_sdk::SnapshotEvent>(&event);
    if (s != nullptr && s->resync) broken.client.debug_perturb_next_tick(body, {0.5f, 0, 0});
  };
  ASSERT_TRUE(pump_until({&broken, &witness}, [&] { return broken.disconnected.has_value(); }))
      << describe(broken);

  // The first desync, then three more one tick after each resync, then the diagnosis: no fifth
  // snapshot pulled from the server.
  const client_sdk::ClientOptions defaults;
  ASSERT_EQ(broken.desyncs.size(), defaults.max_recurring_desyncs + 1) << describe(broken);
  EXPECT_EQ(broken.desyncs.front().tick, first_tick);
  EXPECT_EQ(broken.client.stats().resyncs, defaults.max_recurring_desyncs);
  EXPECT_EQ(broken.client.stats().recurring_desyncs, defaults.max_recurring_desyncs);
  const std::string first_replay = broken.desyncs.front().replay_path;
  ASSERT_FALSE(first_replay.empty()) << broken.desyncs.front().replay_error;
  EXPECT_TRUE(std::filesystem::exists(first_replay));
  ASSERT_FALSE(broken.errors.empty());
  const client_sdk::ErrorEvent& diagnosis = broken.errors.back();
  EXPECT_TRUE(diagnosis.fatal);
  EXPECT_EQ(diagnosis.code, schema::ErrorCode::desync);
  for (const std::string& part :
       {std::string("this client's simulation is not deterministic with the server's: hashes "
                    "diverge again 1 tick after each resync"),
        "first desync at tick " + std::to_string(first_tick),
        "replay written to " + first_replay}) {
    EXPECT_NE(diagnosis.message.find(part), std::string::npos) << diagnosis.message;
  }
  EXPECT_EQ(broken.client.state(), client_sdk::ClientState::disconnected);
  // The others play on.
  const uint64_t until = witness.last_tick() + 30;
  ASSERT_TRUE(pump_until({&witness}, [&] { return witness.last_tick() >= until; }));
  EXPECT_TRUE(witness.desyncs.empty());
  std::filesystem::remove_all(dir);
}

TEST(NetClient, ThinClientGetsSnapshotsAtTheGrantedRate) {
  TestServer server(room_config());
  ASSERT_TRUE(server.started());
  TestClient thin("spectator");
  client_sdk::ClientOptions options;
  options.mode = client_sdk::ClientMode::thin;
  options.snapshot_rate_hz = 10;
  const Clock::time_point before_open = Clock::now();  // the first Hello opens the room
  ASSERT_TRUE(thin.connect(server.port(), options));
  ASSERT_TRUE(pump_until({&thin}, [&] { return thin.snapshots.size() >= 16; })) << describe(thin);
  ASSERT_TRUE(thin.joined.has_value());
  EXPECT_EQ(thin.joined->snapshot_rate_hz, 10);
  EXPECT_EQ(thin.joined->snapshot_interval_ticks, 24u);
  EXPECT_TRUE(thin.hashes.empty()) << "a thin client never steps";
  EXPECT_TRUE(thin.errors.empty()) << describe(thin);

  // Ticks between snapshots: 240 Hz / 10 Hz = 24 (the first one is the join snapshot).
  for (size_t i = 2; i < thin.snapshots.size(); ++i) {
    EXPECT_EQ(thin.snapshots[i].tick - thin.snapshots[i - 1].tick,
              thin.joined->snapshot_interval_ticks)
        << "snapshot " << i;
  }
  // The room ticks no faster than 240 Hz: no snapshot came before its tick was due. (Slower is
  // what a busy machine does, so that direction is left to the tick spacing above.)
  for (const TestClient::SnapshotSeen& seen : thin.snapshots) {
    EXPECT_TRUE(net_test::could_be_due(seen.tick, kTickRateHz, before_open, seen.at))
        << "snapshot of tick " << seen.tick;
  }

  // A rate above the server's limit is granted at the limit (default 20 Hz).
  TestClient greedy("greedy");
  options.snapshot_rate_hz = 1000;
  ASSERT_TRUE(greedy.connect(server.port(), options));
  ASSERT_TRUE(pump_until({&greedy}, [&] { return greedy.snapshots.size() >= 4; }))
      << describe(greedy);
  EXPECT_EQ(greedy.joined->snapshot_rate_hz, 20);
  EXPECT_EQ(greedy.snapshots[3].tick - greedy.snapshots[2].tick, 12u);
}

TEST(NetClient, ServerShutdownGivesADisconnectEventWithItsReason) {
  TestServer server(room_config());
  ASSERT_TRUE(server.started());
  TestClient c("leaver");
  ASSERT_TRUE(c.connect(server.port()));
  ASSERT_TRUE(pump_until({&c}, [&] { return c.hashes.size() >= 10; })) << describe(c);
  server.stop();  // graceful: Disconnect{server_shutdown} to every session, then close
  ASSERT_TRUE(pump_until({&c}, [&] { return c.disconnected.has_value(); })) << describe(c);
  EXPECT_EQ(c.disconnected->code, schema::ErrorCode::server_shutdown);
  EXPECT_FALSE(c.disconnected->reason.empty());
  EXPECT_EQ(c.client.state(), client_sdk::ClientState::disconnected);
  EXPECT_TRUE(c.errors.empty()) << describe(c);
  // After the end nothing can be sent.
  const sim::Input input;
  EXPECT_FALSE(c.client.send_input(std::span<const sim::Input>(&input, 1)).has_value());
}

TEST(NetClient, ConnectingToAClosedPortEndsWithADisconnectEvent) {
  uint16_t port = 0;
  {
    TestServer server(room_config());  // take an ephemeral port, then free it
    ASSERT_TRUE(server.started());
    port = server.port();
  }
  TestClient c("nobody-home");
  ASSERT_TRUE(c.connect(port));
  ASSERT_TRUE(pump_until({&c}, [&] { return c.disconnected.has_value(); }));
  EXPECT_FALSE(c.joined.has_value());
  EXPECT_NE(c.disconnected->reason.find("cannot connect"), std::string::npos)
      << c.disconnected->reason;
}

}  // namespace

TEST(NetClient, AFrameOverTheClientsCapEndsTheConnectionAsABadFrame) {
  TestServer server(room_config());
  ASSERT_TRUE(server.started());
  TestClient c("small-cap");
  client_sdk::ClientOptions options;
  // The Welcome (~200 bytes) fits; the join Snapshot of the inputs scene (100 bodies with
  // their contacts, several KiB) does not, and must be refused from its header alone.
  options.max_frame_bytes = 1024;
  const sim::Input input;
  EXPECT_FALSE(c.client.send_input(std::span<const sim::Input>(&input, 1)).has_value())
      << "send_input before connect";
  ASSERT_TRUE(c.connect(server.port(), options));
  ASSERT_TRUE(pump_until({&c}, [&] { return c.disconnected.has_value(); })) << describe(c);
  EXPECT_TRUE(c.joined.has_value());
  EXPECT_TRUE(c.snapshots.empty());
  EXPECT_EQ(c.disconnected->code, schema::ErrorCode::bad_frame);
  EXPECT_NE(c.disconnected->reason.find("1024"), std::string::npos) << c.disconnected->reason;
}

// A server of another physics revision, played by the test on a plain socket: it reads what the
// client sends first (its Hello) and answers with a Welcome into the inputs scene stating revision
// kPhysicsRevision + 1. A lockstep client must not join: its world would step differently from
// the room's and diverge at the first contact. It says why and closes.
TEST(NetClient, AServerOfAnotherPhysicsRevisionIsRefusedByName) {
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(::listen(listener, 1), 0);
  ASSERT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length), 0);
  const uint16_t port = ntohs(address.sin_port);

  sim::Scene scene;
  ASSERT_TRUE(sim::make_builtin_scene("inputs", &scene));
  schema::Welcome welcome;
  welcome.player_id = 1;
  welcome.scene = "inputs";
  welcome.world_def = scene.def;
  welcome.world_def_fingerprint = sim::world_def_fingerprint(scene.def);
  welcome.physics_revision = sim::kPhysicsRevision + 1;
  const std::vector<uint8_t> frame = schema::encode_frame(welcome);
  const int wait_ms = static_cast<int>(kWait.count());
  std::atomic<bool> answered{false};
  std::thread server([&] {
    pollfd ready{listener, POLLIN, 0};
    if (::poll(&ready, 1, wait_ms) != 1) return;
    const int connection = ::accept(listener, nullptr, nullptr);
    if (connection < 0) return;
    uint8_t buffer[4096];
    pollfd readable{connection, POLLIN, 0};
    if (::poll(&readable, 1, wait_ms) == 1 && ::read(connection, buffer, sizeof buffer) > 0) {
      answered =
          ::write(connection, frame.data(), frame.size()) == static_cast<ssize_t>(frame.size());
      // Until the client closes (or the hang guard).
      while (::poll(&readable, 1, wait_ms) == 1 && ::read(connection, buffer, sizeof buffer) > 0) {
      }
    }
    ::close(connection);
  });

  TestClient c("other-build");
  const bool connected = c.connect(port);
  const bool ended = connected && pump_until({&c}, [&] { return c.disconnected.has_value(); });
  server.join();
  ::close(listener);
  ASSERT_TRUE(connected);
  ASSERT_TRUE(ended) << describe(c);
  EXPECT_TRUE(answered);
  const std::string expected = "the server simulates physics revision " +
                               std::to_string(sim::kPhysicsRevision + 1) +
                               ", this client's build " + std::to_string(sim::kPhysicsRevision);
  bool named = false;
  for (const client_sdk::ErrorEvent& e : c.errors)
    named = named || (e.fatal && e.message.find(expected) != std::string::npos);
  EXPECT_TRUE(named) << describe(c);
  EXPECT_NE(c.disconnected->reason.find(expected), std::string::npos) << c.disconnected->reason;
  EXPECT_EQ(c.client.world(), nullptr) << "the client made the other revision's world";
}
