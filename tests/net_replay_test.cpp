// Replays end to end over real sockets on 127.0.0.1: a server hosted in this process on
// an ephemeral port, SDK clients, and the replay files both sides write.
//
// What is checked, and against what:
// - a desync provoked at tick 200 (the SDK's test hook moves one body of one client's world by
//   0.5 m along x) makes the server and that client each write a replay window; diff_replays on
//   the two files names tick 200, and the perturbed body's position.x as the field that differs,
//   by about the 0.5 m the test put there (known independently of the code under test);
// - the server's file re-simulates to its own recorded hashes (verify), and the client's file
//   shows its own hash leaving the server's at tick 200;
// - desync dumps are rate-limited per room: a second desync within the interval writes no file;
// - whole-match recording survives kill -9: a child process serving a room with
//   --record-matches is SIGKILLed; its temporary file loads up to its last complete record and
//   verifies, also when cut inside a record.
// Tests wait for files, events and counters, never for a span of time, so a busy machine only
// makes them slower; every wait is bounded (kWait) and ctest adds a TIMEOUT, so nothing hangs.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "lockstep/client_sdk/client.h"
#include "lockstep/replays/recorder.h"
#include "lockstep/replays/viewer_page.h"
#include "lockstep/schema/scene_file.h"
#include "lockstep/server/config.h"
#include "lockstep/server/ops.h"
#include "lockstep/server/server.h"
#include "lockstep/sim/scene.h"
#include "lockstep/sim/testing.h"
#include "net_test_harness.h"

namespace {

using namespace lockstep;
using namespace std::chrono_literals;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// 120 Hz: tick 200 comes 1.7 s after the room opens, time for both clients to join first even on
// a loaded machine under sanitizers (where it is not, the desync test perturbs a later tick).
constexpr uint32_t kTickRateHz = 120;
constexpr uint32_t kInputDelayTicks = 4;  // 33 ms: loopback inputs arrive on time
constexpr uint64_t kPerturbTick = 200;
constexpr float kPerturbX_m = 0.5f;
constexpr auto kWait = net_test::kHangGuard;  // a hang guard, never a measurement

// A fresh directory under the system temp dir, removed at the end.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = fs::temp_directory_path() / ("lockstep_net_replay_" + std::to_string(::getpid()) + "_" +
                                         std::to_string(counter.fetch_add(1)));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  std::string sub(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

// The files in `dir` whose names end with `suffix` (sorted; empty when dir does not exist).
std::vector<std::string> files_ending(const std::string& dir, const std::string& suffix) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().string();
    if (name.size() >= suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      out.push_back(name);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

using TestServer = net_test::InProcessServer;

server::ServerConfig base_config(const std::string& replay_dir) {
  server::ServerConfig config = net_test::loopback_config();
  config.tick_rate_hz = kTickRateHz;
  config.input_delay_ticks = kInputDelayTicks;
  config.replay_dir = replay_dir;
  config.keyframe_interval_ticks = 60;
  return config;
}

// One SDK client sending its scripted inputs once per tick; may perturb its world at set ticks.
struct TestClient {
  explicit TestClient(std::string client_name) : name(std::move(client_name)) {}

  bool connect(uint16_t port, const std::string& replay_dir) {
    client_sdk::ClientOptions options;
    options.replay_dir = replay_dir;
    const bool ok = client.connect("127.0.0.1", port, "default", name, "", options);
    EXPECT_TRUE(ok) << client.last_error();
    if (ok) client.run_thread();
    return ok;
  }

  size_t pump() {
    return client.poll(0ms, [this](const client_sdk::Event& e) { handle(e); });
  }

  void handle(const client_sdk::Event& event) {
    if (const auto* j = std::get_if<client_sdk::JoinedEvent>(&event)) {
      joined = *j;
    } else if (const auto* s = std::get_if<client_sdk::SnapshotEvent>(&event)) {
      if (!script && s->world_view != nullptr) script = sim::make_input_script(s->world());
      if (!join_snapshot_tick) join_snapshot_tick = s->tick;
    } else if (const auto* t = std::get_if<client_sdk::TickAppliedEvent>(&event)) {
      last_tick = t->tick;
      // Perturb inside the handler so it lands on exactly the next tick stepped.
      if (!perturb_at.empty() && perturb_at.front() == t->tick + 1) {
        client.debug_perturb_next_tick(perturbed_body, {kPerturbX_m, 0, 0});
        perturb_at.erase(perturb_at.begin());
      }
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
          if (const std::optional<uint64_t> target = client.send_input(mine)) last_target = *target;
        }
      }
    } else if (const auto* d = std::get_if<client_sdk::DesyncEvent>(&event)) {
      desyncs.push_back(*d);
    } else if (const auto* x = std::get_if<client_sdk::ErrorEvent>(&event)) {
      errors.push_back(x->message);
    } else if (const auto* c = std::get_if<client_sdk::DisconnectedEvent>(&event)) {
      errors.push_back("disconnected: " + c->reason);
    }
  }

  std::string describe() const {
    std::string s = name + ": last tick " + std::to_string(last_tick) + ", " +
                    std::to_string(desyncs.size()) + " desyncs";
    for (const std::string& e : errors)
      s += "\n  " + e;
    return s;
  }

  std::string name;
  client_sdk::Client client;
  std::optional<sim::InputScript> script;
  std::optional<client_sdk::JoinedEvent> joined;
  std::optional<uint64_t> join_snapshot_tick;
  uint64_t last_tick = 0;
  uint64_t last_target = 0;
  std::vector<uint64_t> perturb_at;  // ticks whose step starts from a moved body (ascending)
  sim::BodyId perturbed_body{};
  std::vector<client_sdk::DesyncEvent> desyncs;
  std::vector<std::string> errors;
};

// Polls every client until `done` holds; false when kWait ran out first.
bool pump_until(const std::vector<TestClient*>& clients, const std::function<bool()>& done) {
  const Clock::time_point until = Clock::now() + kWait;
  while (!done()) {
    if (Clock::now() >= until) return false;
    size_t events = 0;
    for (TestClient* c : clients)
      events += c->pump();
    if (events == 0) std::this_thread::sleep_for(500us);
  }
  return true;
}

replays::LoadedReplay load(const std::string& path) {
  replays::LoadedReplay replay;
  std::string error;
  EXPECT_TRUE(replays::load_replay_file(path, &replay, &error)) << path << ": " << error;
  return replay;
}

TEST(NetReplay, DesyncAtTick200IsNamedByDiffOfServerAndClientReplays) {
  TempDir dir;
  server::ServerConfig config = base_config(dir.sub("server"));
  TestServer server(config);
  ASSERT_TRUE(server.started());
  TestClient victim("victim");
  TestClient witness("witness");
  ASSERT_TRUE(victim.connect(server.port(), dir.sub("victim")));
  ASSERT_TRUE(witness.connect(server.port(), dir.sub("witness")));
  ASSERT_TRUE(pump_until({&victim, &witness},
                         [&] {
                           return victim.joined && witness.joined && victim.join_snapshot_tick &&
                                  witness.join_snapshot_tick;
                         }))
      << victim.describe() << "\n"
      << witness.describe();
  ASSERT_FALSE(victim.client.owned_bodies().empty());
  victim.perturbed_body = victim.client.owned_bodies().front();
  // Tick 200, unless a busy machine kept this thread from the clients so long that the victim
  // has stepped close to it already (it steps only inside pump, so 20 ticks on is never missed).
  const uint64_t perturb_tick =
      std::max<uint64_t>(kPerturbTick, std::max(victim.last_tick, *victim.join_snapshot_tick) + 20);
  victim.perturb_at = {perturb_tick};

  // The server writes its window when the report arrives; wait for the published file.
  std::vector<std::string> server_files;
  ASSERT_TRUE(pump_until({&victim, &witness},
                         [&] {
                           server_files = files_ending(dir.sub("server"), ".lsrp");
                           return !victim.desyncs.empty() && !server_files.empty() &&
                                  witness.last_tick >= perturb_tick + 10;
                         }))
      << victim.describe() << "\n"
      << witness.describe();

  ASSERT_EQ(victim.desyncs.size(), 1u) << victim.describe();
  const client_sdk::DesyncEvent& desync = victim.desyncs.front();
  EXPECT_EQ(desync.tick, perturb_tick);
  EXPECT_EQ(desync.replay_error, "");
  ASSERT_FALSE(desync.replay_path.empty());
  EXPECT_TRUE(fs::exists(desync.replay_path)) << desync.replay_path;
  EXPECT_EQ(files_ending(dir.sub("victim"), ".lsrp"), std::vector<std::string>{desync.replay_path});
  EXPECT_TRUE(witness.desyncs.empty()) << witness.describe();
  EXPECT_TRUE(files_ending(dir.sub("witness"), ".lsrp").empty());
  ASSERT_EQ(server_files.size(), 1u);
  EXPECT_NE(server_files.front().find("desync-default-tick"), std::string::npos)
      << server_files.front();
  // Nothing half-written is left under a temporary name.
  EXPECT_TRUE(files_ending(dir.sub("server"), ".tmp").empty());
  EXPECT_TRUE(files_ending(dir.sub("victim"), ".tmp").empty());

  const replays::LoadedReplay on_server = load(server_files.front());
  const replays::LoadedReplay on_client = load(desync.replay_path);
  EXPECT_EQ(on_server.header.writer, replays::ReplayWriterKind::server);
  EXPECT_EQ(on_server.header.room, "default");
  EXPECT_EQ(on_server.header.scene, "inputs");
  EXPECT_EQ(on_server.header.tick_rate_hz, kTickRateHz);
  EXPECT_EQ(on_client.header.writer, replays::ReplayWriterKind::client);
  EXPECT_EQ(on_client.header.player_id, victim.joined->player_id);
  EXPECT_FALSE(on_server.truncated);
  EXPECT_FALSE(on_client.truncated);
  // Both windows reach the bad tick: the client's ends there, the server's at or after it.
  EXPECT_EQ(on_client.last_tick(), perturb_tick);
  EXPECT_GE(on_server.last_tick(), perturb_tick);
  EXPECT_LE(on_server.header.first_tick, *victim.join_snapshot_tick);

  // The server's file is self-consistent: its inputs reproduce every recorded hash.
  const replays::VerifyResult server_verify = replays::verify_replay(on_server);
  EXPECT_TRUE(server_verify.ok) << server_verify.error << " first divergent tick "
                                << server_verify.first_divergent_tick.value_or(0);
  EXPECT_EQ(server_verify.ticks_verified, on_server.ticks.size());
  // The client's own hashes leave the server's at exactly the perturbed tick.
  const replays::VerifyResult client_verify = replays::verify_replay(on_client);
  EXPECT_EQ(client_verify.first_client_mismatch_tick, std::optional<uint64_t>(perturb_tick));

  const replays::DiffResult diff = replays::diff_replays(on_server, on_client);
  ASSERT_TRUE(diff.ok) << diff.error;
  EXPECT_EQ(diff.first_divergent_tick, std::optional<uint64_t>(perturb_tick)) << diff.note;
  EXPECT_EQ(diff.compared_tick, std::optional<uint64_t>(perturb_tick)) << diff.note;
  ASSERT_FALSE(diff.fields.empty()) << diff.note;
  // The position that moved most is the one the test moved, by about the distance it moved it.
  // One 1/120 s step follows the push; if the moved body lands in contact its solver response
  // (velocities change a lot then) moves it by v·dt, a few cm: tolerance 0.1 m of the 0.5 m.
  const auto moved = [](const replays::FieldDiff& f) {
    return f.field.rfind("position.", 0) == 0 ? std::fabs(f.value_a - f.value_b) : 0.0;
  };
  const auto largest =
      std::max_element(diff.fields.begin(), diff.fields.end(),
                       [&](const replays::FieldDiff& a, const replays::FieldDiff& b) {
                         return moved(a) < moved(b);
                       });
  EXPECT_EQ(largest->body, victim.perturbed_body);
  EXPECT_EQ(largest->field, "position.x");
  EXPECT_NEAR(largest->value_b - largest->value_a, kPerturbX_m, 0.1);
  EXPECT_GT(largest->ulps, 0u);
  // The fields come in the stable order diff promises: body slots never go backwards.
  for (size_t i = 1; i < diff.fields.size(); ++i) {
    EXPECT_LE(diff.fields[i - 1].body.index1, diff.fields[i].body.index1) << "field " << i;
  }

  // The viewer's page marks the same tick from the client's dump alone and from the server's
  // dump against it, and shows the server's dump alone (no desync in it: its hashes are its own).
  const replays::ViewerPage client_page = replays::make_viewer_page(on_client, nullptr);
  ASSERT_TRUE(client_page.ok) << client_page.error;
  EXPECT_EQ(client_page.first_divergent_tick, std::optional<uint64_t>(perturb_tick));
  const replays::ViewerPage both_page = replays::make_viewer_page(on_server, &on_client);
  ASSERT_TRUE(both_page.ok) << both_page.error;
  EXPECT_EQ(both_page.first_divergent_tick, std::optional<uint64_t>(perturb_tick));
  const replays::ViewerPage server_page = replays::make_viewer_page(on_server, nullptr);
  ASSERT_TRUE(server_page.ok) << server_page.error;
  EXPECT_FALSE(server_page.first_divergent_tick);
  EXPECT_EQ(server_page.last_tick, on_server.last_tick());
}

TEST(NetReplay, ServerDesyncDumpsAreRateLimitedPerRoom) {
  TempDir dir;
  server::ServerConfig config = base_config(dir.sub("server"));
  config.replay_dump_interval = 60s;  // longer than the test
  TestServer server(config);
  ASSERT_TRUE(server.started());
  TestClient victim("victim");
  ASSERT_TRUE(victim.connect(server.port(), dir.sub("victim")));
  ASSERT_TRUE(pump_until({&victim}, [&] { return victim.joined && victim.join_snapshot_tick; }))
      << victim.describe();
  const uint64_t start = std::max<uint64_t>(victim.last_tick, *victim.join_snapshot_tick);
  victim.perturbed_body = victim.client.owned_bodies().front();
  // Two desyncs 60 ticks apart (the resync in between heals the first).
  victim.perturb_at = {start + 20, start + 80};
  ASSERT_TRUE(pump_until({&victim}, [&] {
    return victim.desyncs.size() >= 2 && victim.last_tick >= start + 100;
  })) << victim.describe();
  // The server has decided about both reports (written or not) once it has counted them: it
  // writes, or declines to, on its thread as each report arrives, before it answers for stats.
  server::ServerStats stats;
  ASSERT_TRUE(server.stats_eventually(
      [](const server::ServerStats& s) { return s.desync_reports >= 2; }, &stats))
      << stats.desync_reports << " desync reports counted";
  EXPECT_EQ(stats.desync_reports, 2u);
  EXPECT_EQ(victim.desyncs.size(), 2u);
  // The client writes each of its own; the server only the first within its interval.
  EXPECT_EQ(files_ending(dir.sub("victim"), ".lsrp").size(), 2u);
  const std::vector<std::string> server_files = files_ending(dir.sub("server"), ".lsrp");
  ASSERT_EQ(server_files.size(), 1u);
  const replays::LoadedReplay on_server = load(server_files.front());
  EXPECT_GE(on_server.last_tick(), start + 20);
  EXPECT_LT(on_server.last_tick(), start + 80);
}

TEST(NetReplay, GracefulShutdownPublishesTheMatchRecordingAndWritesTheWindow) {
  TempDir dir;
  server::ServerConfig config = base_config(dir.sub("server"));
  config.record_matches = true;
  config.dump_replays_on_shutdown = true;
  uint64_t played_to = 0;
  {
    TestServer server(config);
    ASSERT_TRUE(server.started());
    // While the match runs, only its temporary file exists (the file writer's thread creates
    // it from the room's first chunk).
    TestClient player("player");
    ASSERT_TRUE(player.connect(server.port(), ""));
    ASSERT_TRUE(pump_until({&player}, [&] {
      return player.last_tick >= 150 && files_ending(dir.sub("server"), ".lsrp.tmp").size() == 1;
    })) << player.describe();
    EXPECT_TRUE(player.desyncs.empty()) << player.describe();
    EXPECT_TRUE(files_ending(dir.sub("server"), ".lsrp").empty());
    played_to = player.last_tick;
  }  // graceful shutdown

  EXPECT_TRUE(files_ending(dir.sub("server"), ".tmp").empty());
  const std::vector<std::string> files = files_ending(dir.sub("server"), ".lsrp");
  ASSERT_EQ(files.size(), 2u);
  for (const std::string& path : files) {
    const replays::LoadedReplay replay = load(path);
    EXPECT_FALSE(replay.truncated) << path << ": " << replay.integrity;
    EXPECT_GE(replay.last_tick(), played_to) << path;
    const replays::VerifyResult verified = replays::verify_replay(replay);
    EXPECT_TRUE(verified.ok) << path << ": " << verified.error;
    EXPECT_EQ(verified.ticks_verified, replay.ticks.size()) << path;
    EXPECT_GE(verified.ticks_verified, 150u) << path;
  }
  // The whole match starts at tick 0; the window too, as the match is shorter than 10 s.
  EXPECT_NE(files[0].find("/match-default-"), std::string::npos) << files[0];
  EXPECT_NE(files[1].find("/shutdown-default-"), std::string::npos) << files[1];
  EXPECT_EQ(load(files[0]).header.first_tick, 0u);
}

// A room of a scene with level geometry (the built-in terrain_pile: a heightfield under a pile of
// bodies): the match recording and the shutdown window carry the level in their headers and
// re-simulate hash for hash from the files alone.
TEST(NetReplay, RecordingsOfALevelSceneCarryTheLevelAndVerify) {
  TempDir dir;
  server::ServerConfig config = base_config(dir.sub("server"));
  // A small level scene (three bodies on an OBJ ramp): the path under test is the level in the
  // header and its re-simulation, not the step's speed, and the sanitized build runs it too.
  const std::string scene_path = std::string(LOCKSTEP_LEVEL_SCENES) + "/ramp.scene";
  config.scene = scene_path;
  config.record_matches = true;
  config.dump_replays_on_shutdown = true;
  sim::Scene scene;
  std::string error;
  ASSERT_TRUE(schema::load_scene_file(scene_path, &scene, &error)) << error;
  const std::unique_ptr<sim::World> built = sim::build_world(scene);
  ASSERT_NE(built, nullptr);
  const uint64_t level_digest = built->level_stats().digest;
  ASSERT_NE(level_digest, 0u);
  {
    TestServer server(config);
    ASSERT_TRUE(server.started());
    TestClient player("player");
    ASSERT_TRUE(player.connect(server.port(), ""));
    ASSERT_TRUE(pump_until({&player}, [&] { return player.last_tick >= 120; }))
        << player.describe();
    EXPECT_TRUE(player.desyncs.empty()) << player.describe();
  }  // graceful shutdown
  const std::vector<std::string> files = files_ending(dir.sub("server"), ".lsrp");
  ASSERT_EQ(files.size(), 2u);
  for (const std::string& path : files) {
    const replays::LoadedReplay replay = load(path);
    EXPECT_EQ(replay.header.level_heightfields.size(), scene.heightfields.size()) << path;
    EXPECT_EQ(replay.header.level_meshes.size(), scene.meshes.size()) << path;
    EXPECT_EQ(replays::replay_level_digest(replay.header), level_digest) << path;
    const replays::VerifyResult verified = replays::verify_replay(replay);
    EXPECT_TRUE(verified.ok) << path << ": " << verified.error;
    EXPECT_GE(verified.ticks_verified, 120u) << path;
  }
}

// A recording whose chunk waits for the file writer beyond the bound is given up: counted,
// its temporary file removed, and the match goes on. A bound below one tick's record takes that
// path at the first tick after the opening chunk, whatever the writer's speed.
TEST(NetReplay, AMatchRecordingOverItsPendingBoundIsAbandonedAndTheMatchGoesOn) {
  TempDir dir;
  server::ServerConfig config = base_config(dir.sub("server"));
  config.record_matches = true;
  config.record_max_pending_bytes = 1;
  config.dump_replays_on_shutdown = false;
  {
    TestServer server(config);
    ASSERT_TRUE(server.started());
    TestClient player("player");
    ASSERT_TRUE(player.connect(server.port(), ""));
    server::ServerStats stats;
    ASSERT_TRUE(server.stats_eventually(
        [](const server::ServerStats& s) { return s.file_writes_abandoned >= 1; }, &stats));
    EXPECT_EQ(stats.file_writes_abandoned, 1u);
    // The match is unaffected: ticks keep coming, hashes keep agreeing.
    const uint64_t abandoned_by = player.last_tick;
    ASSERT_TRUE(pump_until({&player}, [&] { return player.last_tick >= abandoned_by + 60; }))
        << player.describe();
    EXPECT_TRUE(player.desyncs.empty()) << player.describe();
    const std::string metrics = server::prometheus_text(server.stats(), {});
    EXPECT_NE(metrics.find("lockstep_file_writes_total{result=\"abandoned\"} 1"), std::string::npos)
        << metrics;
  }  // graceful shutdown: the removal was queued before it, so it is done when run() returns
  EXPECT_TRUE(files_ending(dir.sub("server"), ".tmp").empty());
  EXPECT_TRUE(files_ending(dir.sub("server"), ".lsrp").empty());
}

TEST(NetReplay, ReplayOptionsAreChecked) {
  server::ServerConfig config;
  EXPECT_EQ(server::server_config_error(config), "");
  config.keyframe_interval_ticks = 0;
  EXPECT_NE(server::server_config_error(config), "");
  config.keyframe_interval_ticks = 1;  // 600 keyframes in a 10 s window at 60 Hz: allowed
  EXPECT_EQ(server::server_config_error(config), "");
  config.tick_rate_hz = 240;  // 2400 keyframes: too many
  EXPECT_NE(server::server_config_error(config), "");
  config = server::ServerConfig{};
  config.record_matches = true;
  config.replay_dir = "";
  EXPECT_NE(server::server_config_error(config), "");
  config.record_matches = false;
  EXPECT_EQ(server::server_config_error(config), "");  // no dir: no windows, nothing to write
  config.record_max_pending_bytes = 0;
  EXPECT_NE(server::server_config_error(config), "");
  config.record_max_pending_bytes = 1;
  EXPECT_EQ(server::server_config_error(config), "");
  config.replay_window_seconds = 3601;
  EXPECT_NE(server::server_config_error(config), "");
}

// The child of the kill -9 test: a server recording its match (options parsed as on the
// command line) and one client sending inputs, until it is killed. Never returns.
[[noreturn]] void serve_and_play_until_killed(const std::string& replay_dir) {
  alarm(30);  // never outlive a parent that died
  server::ServerConfig config;
  CLI::App app;
  server::add_server_options(app, &config);
  std::vector<std::string> args = {"--bind",
                                   "127.0.0.1",
                                   "--port",
                                   "0",
                                   "--tick-rate",
                                   "240",
                                   "--record-matches",
                                   "--replay-dir",
                                   replay_dir,
                                   "--keyframe-interval-ticks",
                                   "60",
                                   "--stats-interval-ms",
                                   "0"};
  std::reverse(args.begin(), args.end());  // CLI11 takes them last to first
  try {
    app.parse(args);
  } catch (const CLI::ParseError&) {
    _exit(3);
  }
  server::Server server(config);
  std::string error;
  if (!server.start(&error)) _exit(2);
  std::thread serving([&server] { server.run(); });
  TestClient player("player");
  if (!player.client.connect("127.0.0.1", server.port(), "default", "player", "", {})) _exit(4);
  player.client.run_thread();
  for (;;) {
    if (player.pump() == 0) std::this_thread::sleep_for(1ms);
  }
}

TEST(NetReplay, WholeMatchRecordingSurvivesKillDashNineUpToItsLastCompleteRecord) {
  TempDir dir;
  const std::string replay_dir = dir.sub("matches");
  const pid_t child = fork();
  ASSERT_GE(child, 0) << "fork failed";
  if (child == 0) serve_and_play_until_killed(replay_dir);

  // Kill it once the recording holds a second of ticks (240 at 240 Hz) with inputs in them.
  std::string temp_path;
  bool child_exited = false;
  const Clock::time_point until = Clock::now() + kWait;
  while (Clock::now() < until) {
    int status = 0;
    if (waitpid(child, &status, WNOHANG) == child) {
      child_exited = true;
      break;
    }
    const std::vector<std::string> temps = files_ending(replay_dir, ".lsrp.tmp");
    if (!temps.empty()) {
      std::vector<uint8_t> bytes;
      std::ifstream in(temps.front(), std::ios::binary);
      bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
      replays::LoadedReplay partial;
      std::string error;
      if (replays::load_replay(bytes, &partial, &error) && partial.ticks.size() >= 240 &&
          std::any_of(partial.ticks.begin(), partial.ticks.end(),
                      [](const replays::ReplayTick& t) { return !t.inputs.empty(); })) {
        temp_path = temps.front();
        break;
      }
    }
    std::this_thread::sleep_for(20ms);
  }
  if (!child_exited) {
    kill(child, SIGKILL);
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  }
  ASSERT_FALSE(child_exited) << "the recording child exited by itself";
  ASSERT_FALSE(temp_path.empty()) << "no recording with 240 ticks and inputs within the wait";
  // Killed: nothing was published under the final name.
  EXPECT_TRUE(files_ending(replay_dir, ".lsrp").empty());

  const replays::LoadedReplay killed = load(temp_path);
  EXPECT_GE(killed.ticks.size(), 240u);
  EXPECT_EQ(killed.header.writer, replays::ReplayWriterKind::server);
  replays::VerifyResult verified = replays::verify_replay(killed);
  EXPECT_TRUE(verified.ok) << verified.error;
  EXPECT_EQ(verified.ticks_verified, killed.ticks.size());
  EXPECT_EQ(verified.rejected_inputs, 0u);

  // A kill inside a write(2) leaves part of a record: cut 5 bytes off the end to make one.
  std::vector<uint8_t> bytes;
  {
    std::ifstream in(temp_path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  ASSERT_GT(bytes.size(), 5u);
  // A view, not resize(): GCC 12 at -O1 with sanitizers warns about the shrinking resize.
  const std::span<const uint8_t> cut_bytes(bytes.data(), bytes.size() - 5);
  replays::LoadedReplay cut;
  std::string error;
  ASSERT_TRUE(replays::load_replay(cut_bytes, &cut, &error)) << error;
  EXPECT_TRUE(cut.truncated) << cut.integrity;
  EXPECT_EQ(cut.records + 1, killed.records);
  verified = replays::verify_replay(cut);
  EXPECT_TRUE(verified.ok) << verified.error;
  EXPECT_GE(verified.ticks_verified + 1, killed.ticks.size());
}

}  // namespace
