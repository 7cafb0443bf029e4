// The client session: join, the local world, per-tick verification, resync, events. Runs on the
// caller's thread inside poll(); the transport (connection.h) feeds it decoded messages.
#include "lockstep/client_sdk/client.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <random>
#include <utility>

#include "connection.h"
#include "lockstep/replays/file_name.h"
#include "lockstep/replays/recorder.h"
#include "lockstep/schema/level_file.h"
#include "lockstep/schema/scene_file.h"
#include "lockstep/sim/state_diff.h"
#include "lockstep/sim/sync_test.h"
#include "lockstep/sim/testing.h"
#include "lockstep/sim/version.h"

namespace lockstep::client_sdk {
namespace {

// A level digest as 16 hex digits, the way errors name it.
std::string hex64(uint64_t value) {
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(value));
  return text;
}

}  // namespace

struct Client::Impl {
  ClientOptions options;
  EventHandler handler;
  std::unique_ptr<detail::Connection> connection;
  std::string last_error;

  // Caller-thread state.
  std::unique_ptr<sim::World> world;
  uint32_t player_id = 0;
  std::vector<sim::BodyId> owned_bodies;
  uint16_t tick_rate_hz = 0;
  uint16_t input_delay_ticks = 0;
  uint16_t protocol_version = 0;  // the Welcome's
  bool joined = false;
  bool have_snapshot = false;
  bool awaiting_snapshot = false;  // after a desync: frames are skipped until a snapshot arrives
  bool resync_requested = false;   // the awaited snapshot answers our ResyncRequest
  bool fatal_error = false;        // a local failure closed the connection
  std::atomic<ClientState> state{ClientState::idle};
  std::optional<std::pair<sim::BodyId, sim::Vec3>> perturb_next_tick;
  uint64_t last_stamped_tick = 0;
  // The highest tick next_input_tick() has announced. The clock estimate and the cap under it
  // can step back when a shorter round trip is measured; a stamp never goes below what was
  // announced, so "send when next_input_tick() is past the tick I last sent for" never sends
  // twice for one tick. Safe: the room's tick only grows, so a tick inside its input window
  // once stays inside it.
  mutable uint64_t announced_input_tick = 0;
  uint32_t input_frame_sequence = 0;
  std::atomic<uint64_t> stamps_capped{0};
  // Input::sequence for inputs sent without one. Starts at a random value: a client that
  // restarts and rejoins as the same player within the room's memory of sequences (10 s) would
  // otherwise send 1, 2, 3… again and have them dropped as repeats.
  uint32_t input_sequence = std::random_device{}();

  // Replay window (options.replay_dir): made at the join snapshot, fed every stepped tick.
  std::string room;
  std::string scene_name;  // "" for a custom ClientOptions::scene
  replays::ReplayHeader replay_header;
  // The world's level, kept for replay headers (only with a replay directory): a dump of a level
  // scene is re-simulated with it.
  std::vector<sim::SceneMesh> replay_level_meshes;
  std::vector<sim::SceneHeightfield> replay_level_heightfields;
  std::unique_ptr<replays::ReplayWindow> replay_window;

  // Desync loops (options.max_recurring_desyncs): the tick of the last resync snapshot, and the
  // run of desyncs that each came back soon after the resync before them.
  std::optional<uint64_t> resynced_at_tick;
  struct DesyncLoop {
    uint64_t first_tick = 0;   // the desync that started the run
    std::string first_replay;  // its replay file ("" when none was written)
    std::string first_replay_error;
    uint32_t recurring = 0;  // desyncs since, each within recurring_desync_ticks of a resync
    uint64_t min_gap_ticks = 0, max_gap_ticks = 0;
  } desync_loop;

  // Prediction (options.prediction): made at the join snapshot, reset at every later one.
  std::unique_ptr<Prediction> prediction;
  // Sync test (options.sync_test): remade at every snapshot.
  std::unique_ptr<sim::SyncTester> sync_tester;
  bool sync_test_reported = false;

  // Simulated latency (options.simulated_latency): messages and input frames held until due.
  using Clock = std::chrono::steady_clock;
  std::mt19937_64 latency_rng;
  std::deque<std::pair<Clock::time_point, detail::Inbound>> delayed_inbound;
  std::deque<std::pair<Clock::time_point, schema::SharedFrame>> delayed_outbound;
  Clock::time_point last_inbound_due{}, last_outbound_due{};

  // Session counters, readable from any thread.
  std::atomic<uint64_t> ticks_applied{0}, ticks_verified{0}, desyncs{0}, recurring_desyncs{0},
      snapshots{0}, resyncs{0}, errors{0}, input_frames_sent{0}, inputs_sent{0},
      game_messages_sent{0};
  std::atomic<uint64_t> ticks_predicted{0}, rollbacks{0}, ticks_resimulated{0},
      max_ticks_resimulated{0}, max_rollback_cost_us{0}, prediction_waits{0}, sync_test_ticks{0},
      sync_test_failures{0};

  // Delivery of one poll() call.
  const EventHandler* current = nullptr;
  size_t delivered = 0;

  void deliver(const Event& event) {
    ++delivered;
    if (current != nullptr && *current) (*current)(event);
  }
  void send(const schema::Message& message) {
    if (connection) connection->send(schema::encode_shared_frame(message));
  }
  void fail(ErrorCode code, std::string message, bool fatal);
  void start_resync(std::string reason);
  void handle(schema::Message& message);
  void handle_end(detail::ConnectionEnd& end);
  void on_welcome(const schema::Welcome& welcome);
  /// Sends a frame behind the inputs sent before it (through the simulated latency, if any).
  void send_in_order(schema::SharedFrame encoded) {
    if (options.simulated_latency.count() > 0 || options.simulated_jitter.count() > 0) {
      const auto now = Clock::now();
      delayed_outbound.emplace_back(delayed_due(now, &last_outbound_due), std::move(encoded));
      flush_outbound(now);
    } else {
      connection->send(std::move(encoded));
    }
  }
  void on_snapshot(const schema::Snapshot& snapshot);
  void on_tick_frame(const schema::TickFrame& frame);
  /// Our hash after `tick` differs from the server's: report, write the replay, then resync or,
  /// in a desync loop, give up with the diagnosis.
  void on_desync(uint64_t tick, uint64_t local_hash, uint64_t server_hash);
  /// Counts the desync at `tick` into desync_loop; true when the client should give up.
  bool note_desync_loop(uint64_t tick, const DesyncEvent& event);
  std::string desync_loop_diagnosis() const;
  /// A snapshot was restored: prediction and sync test (re)start from it.
  void restart_prediction();
  /// Rolls back if a confirmation disagreed, then predicts up to the next input tick.
  void update_prediction(std::optional<uint64_t> next_input_tick);
  /// The tick the next input will be stamped for (Client::next_input_tick); *capped (optional)
  /// says whether the room's input window lowered it.
  std::optional<uint64_t> next_input_tick(bool* capped) const;
  void publish_prediction_counters();
  void check_sync_test(uint64_t tick);
  /// When `due` is for the simulated latency: one way's share plus jitter, never before `last`.
  Clock::time_point delayed_due(Clock::time_point now, Clock::time_point* last);
  void flush_outbound(Clock::time_point now);
  /// A snapshot was restored: the window starts (join) or restarts (resync) from it.
  void replay_keyframe();
  /// Writes the window for a desync at `tick`; the path, or "" and *error.
  std::string write_desync_replay(uint64_t tick, std::string* error);
};

void Client::Impl::replay_keyframe() {
  if (options.replay_dir.empty() || options.mode != ClientMode::lockstep || !world) return;
  if (!replay_window) {
    replays::ReplayWindowConfig config;
    config.window_ticks = std::max<uint32_t>(1, options.replay_window_seconds) * tick_rate_hz;
    config.keyframe_interval_ticks = std::max<uint32_t>(1, options.replay_keyframe_interval_ticks);
    replay_window = std::make_unique<replays::ReplayWindow>(*world, config);
    replay_header = replays::make_replay_header(*world, scene_name, tick_rate_hz,
                                                replays::ReplayWriterKind::client, player_id);
    replay_header.room = room;
    replay_header.level_meshes = replay_level_meshes;
    replay_header.level_heightfields = replay_level_heightfields;
    return;
  }
  replay_window->record_keyframe(*world);
}

std::string Client::Impl::write_desync_replay(uint64_t tick, std::string* error) {
  if (!replay_window) {
    *error = "no replay window (not joined with a snapshot yet)";
    return {};
  }
  const std::string path = replays::replay_file_path(
      options.replay_dir, "desync-client-p" + std::to_string(player_id), room, tick);
  std::error_code ec;
  std::filesystem::create_directories(options.replay_dir, ec);
  if (ec) {
    *error = "cannot create replay directory " + options.replay_dir + ": " + ec.message();
    return {};
  }
  // With the live world the file ends with a keyframe of our (divergent) state at `tick`.
  const replays::WriteResult written = replay_window->write_file(path, replay_header, world.get());
  if (!written.ok) {
    *error = written.error;
    return {};
  }
  return path;
}

void Client::Impl::fail(ErrorCode code, std::string message, bool fatal) {
  errors.fetch_add(1, std::memory_order_relaxed);
  last_error = message;
  deliver(ErrorEvent{code, message, fatal});
  if (fatal && connection && !fatal_error) {
    fatal_error = true;
    connection->close(code, std::move(message));
  }
}

void Client::Impl::start_resync(std::string reason) {
  awaiting_snapshot = true;
  resync_requested = true;
  schema::ResyncRequest request;
  request.reason = std::move(reason);
  send(request);
}

void Client::Impl::handle(schema::Message& message) {
  if (const auto* welcome = std::get_if<schema::Welcome>(&message)) {
    on_welcome(*welcome);
  } else if (const auto* snapshot = std::get_if<schema::Snapshot>(&message)) {
    on_snapshot(*snapshot);
  } else if (const auto* frame = std::get_if<schema::TickFrame>(&message)) {
    on_tick_frame(*frame);
  } else if (const auto* error = std::get_if<schema::ErrorMessage>(&message)) {
    errors.fetch_add(1, std::memory_order_relaxed);
    std::string text = std::string(schema::error_code_name(error->code)) + ": " + error->reason;
    if (error->code == ErrorCode::version_mismatch) {
      text += " (server speaks " + std::to_string(error->server_min_protocol_version) + ".." +
              std::to_string(error->server_protocol_version) + ", we speak " +
              std::to_string(schema::kMinProtocolVersion) + ".." +
              std::to_string(schema::kProtocolVersion) + " and simulate physics revision " +
              std::to_string(sim::kPhysicsRevision) + ")";
    }
    last_error = text;
    deliver(ErrorEvent{error->code, std::move(text), error->fatal});
  } else if (auto* disconnect = std::get_if<schema::Disconnect>(&message)) {
    if (state == ClientState::disconnected) return;
    state = ClientState::disconnected;
    deliver(DisconnectedEvent{disconnect->code, std::move(disconnect->reason)});
  } else {
    // Hello, InputFrame, … are client → server only; a server that sends them is broken.
    fail(ErrorCode::unknown_message,
         std::string("unexpected message from the server: ") + schema::message_name(message),
         false);
  }
}

void Client::Impl::handle_end(detail::ConnectionEnd& end) {
  if (state == ClientState::disconnected) return;
  state = ClientState::disconnected;
  deliver(DisconnectedEvent{end.code, std::move(end.reason)});
}

void Client::Impl::on_welcome(const schema::Welcome& welcome) {
  if (joined) {
    fail(ErrorCode::bad_request, "a second Welcome from the server", true);
    return;
  }
  joined = true;
  state = ClientState::joined;
  player_id = welcome.player_id;
  owned_bodies = welcome.owned_bodies;
  tick_rate_hz = welcome.tick_rate_hz;
  input_delay_ticks = welcome.input_delay_ticks;
  protocol_version = welcome.protocol_version;

  // The local world. Since protocol 3 the Welcome carries the room's WorldDef (checked against
  // its fingerprint by the decoder), and the join Snapshot brings every body: no file needed.
  // A scene the client was given (scene_name, scene_file, scene) is a check: a different one is
  // an error naming both.
  std::string problem;
  if (welcome.physics_revision != 0 && welcome.physics_revision != sim::kPhysicsRevision) {
    // Our world would step differently from the room's and diverge at its first contact.
    problem = "the server simulates physics revision " + std::to_string(welcome.physics_revision) +
              ", this client's build " + std::to_string(sim::kPhysicsRevision) +
              ": build the client from the server's lockstep version";
  } else if (!options.scene_name.empty() && welcome.scene != options.scene_name) {
    problem = "the server welcomed us into scene '" + welcome.scene + "', not the '" +
              options.scene_name + "' we asked for";
  } else if (options.scene &&
             sim::world_def_fingerprint(options.scene->def) != welcome.world_def_fingerprint) {
    problem = "WorldDef fingerprint of our scene '" + options.scene->name +
              "' differs from the server's '" + welcome.scene +
              "': a different scene file or library version";
  }
  // The level: the Welcome's geometry, else our own copy of the scene's level files; ours, when
  // we have one, must be the same level (same digest) either way.
  const std::vector<sim::SceneMesh>* level_meshes = &welcome.level_meshes;
  const std::vector<sim::SceneHeightfield>* level_heightfields = &welcome.level_heightfields;
  if (problem.empty() && welcome.level_digest != 0) {
    const bool have_copy =
        options.scene && (!options.scene->meshes.empty() || !options.scene->heightfields.empty());
    const uint64_t ours =
        have_copy
            ? sim::level_digest(
                  schema::view_level(options.scene->meshes, options.scene->heightfields).def())
            : 0;
    if (have_copy && ours != welcome.level_digest) {
      problem = "our copy of the level (digest " + hex64(ours) + ", scene '" + options.scene->name +
                "') differs from the server's (digest " + hex64(welcome.level_digest) +
                "): a different level file";
    } else if (!welcome.level_carried && !have_copy) {
      problem = "the server sends its level (digest " + hex64(welcome.level_digest) +
                ") as its digest only: give ClientOptions::scene_file, the scene file with its "
                "level files";
    } else if (!welcome.level_carried) {
      level_meshes = &options.scene->meshes;
      level_heightfields = &options.scene->heightfields;
    }
  }
  if (problem.empty() && welcome.world_def) {
    // What we hold of the level already, and the bound on what the world will take for it.
    const uint64_t level_bytes =
        schema::level_content_bytes(*level_meshes, *level_heightfields) +
        sim::level_memory_bytes(schema::view_level(*level_meshes, *level_heightfields).def());
    const uint64_t need = sim::world_memory_bytes(*welcome.world_def) + level_bytes;
    if (need > options.max_world_memory_bytes) {
      problem = "the Welcome's world needs " + std::to_string(need) + " bytes (level " +
                std::to_string(level_bytes) + "), over max_world_memory_bytes " +
                std::to_string(options.max_world_memory_bytes);
    }
  }
  if (problem.empty() && welcome.world_def) {
    sim::Error error = sim::Error::none;
    const schema::LevelView level = schema::view_level(*level_meshes, *level_heightfields);
    world = sim::World::create(*welcome.world_def, level.def(), &error);
    if (!world) {
      problem = std::string("cannot make the Welcome's world: ") + sim::error_message(error);
    } else if (!options.replay_dir.empty()) {
      replay_level_meshes = *level_meshes;
      replay_level_heightfields = *level_heightfields;
    }
    // Replay files name built-in scenes only (the tool checks them); others carry the WorldDef.
    sim::Scene builtin;
    scene_name = sim::make_builtin_scene(welcome.scene, &builtin) &&
                         sim::world_def_fingerprint(builtin.def) == welcome.world_def_fingerprint
                     ? welcome.scene
                     : std::string();
  } else if (problem.empty()) {
    problem = "the Welcome carries no WorldDef (a server older than protocol 3?)";
  }
  JoinedEvent joined_event;
  joined_event.player_id = welcome.player_id;
  joined_event.owned_bodies = welcome.owned_bodies;
  joined_event.tick = welcome.current_tick;
  joined_event.tick_rate_hz = welcome.tick_rate_hz;
  joined_event.input_delay_ticks = welcome.input_delay_ticks;
  joined_event.snapshot_rate_hz = welcome.snapshot_rate_hz;
  joined_event.snapshot_interval_ticks = welcome.snapshot_interval_ticks;
  joined_event.scene = welcome.scene;
  deliver(joined_event);
  if (!problem.empty()) {
    // A thin client can live without a view of the world; a lockstep client cannot verify.
    if (options.mode == ClientMode::lockstep) {
      fail(ErrorCode::bad_request, problem, true);
    } else {
      world.reset();
    }
  }
}

void Client::Impl::on_snapshot(const schema::Snapshot& snapshot) {
  if (!joined) {
    fail(ErrorCode::not_joined, "a Snapshot before the Welcome", true);
    return;
  }
  SnapshotEvent event;
  event.tick = snapshot.tick;
  event.state_hash = snapshot.state_hash;
  event.state_bytes = snapshot.state.size();
  event.resync = resync_requested;
  if (world) {
    const sim::Error error = world->restore_snapshot(snapshot.state);
    std::string problem;
    if (error != sim::Error::none) {
      problem = std::string("cannot restore the server's snapshot: ") + sim::error_message(error);
    } else if (world->tick() != snapshot.tick || world->state_hash() != snapshot.state_hash) {
      problem = "the restored snapshot's tick " + std::to_string(world->tick()) + " / hash " +
                std::to_string(world->state_hash()) + " differ from the server's " +
                std::to_string(snapshot.tick) + " / " + std::to_string(snapshot.state_hash);
    }
    if (!problem.empty()) {
      fail(ErrorCode::desync, problem, options.mode == ClientMode::lockstep);
      return;
    }
    event.world_view = world.get();
    // Owned bodies as the restored state has them: gone ones dropped, ours (by owner) added.
    std::erase_if(owned_bodies, [this](sim::BodyId id) { return !world->is_alive(id); });
    if (player_id != 0) {
      std::vector<sim::BodyId> ids(world->body_count());
      ids.resize(world->list_bodies(ids));
      for (const sim::BodyId id : ids) {
        sim::BodyView view;
        if (world->get_body(id, &view) == sim::Error::none && view.owner_player == player_id &&
            std::find(owned_bodies.begin(), owned_bodies.end(), id) == owned_bodies.end()) {
          owned_bodies.push_back(id);
        }
      }
    }
  } else if (options.mode == ClientMode::lockstep) {
    return;  // fail() has already closed the connection
  }
  have_snapshot = true;
  awaiting_snapshot = false;
  replay_keyframe();
  restart_prediction();
  if (resync_requested) {
    resyncs.fetch_add(1, std::memory_order_relaxed);
    resynced_at_tick = snapshot.tick;
  }
  resync_requested = false;
  snapshots.fetch_add(1, std::memory_order_relaxed);
  deliver(event);
}

void Client::Impl::on_tick_frame(const schema::TickFrame& frame) {
  if (options.mode == ClientMode::thin) {
    ticks_applied.fetch_add(1, std::memory_order_relaxed);  // counted; a thin client never steps
    return;
  }
  if (!world || !have_snapshot || awaiting_snapshot) return;
  if (frame.tick <= world->tick()) return;  // already inside the snapshot we restored
  if (frame.tick != world->tick() + 1) {
    const std::string problem = "TickFrame " + std::to_string(frame.tick) + " after tick " +
                                std::to_string(world->tick()) + ": frames are missing";
    if (options.auto_resync) {
      fail(ErrorCode::desync, problem, false);
      start_resync(problem);
    } else {
      fail(ErrorCode::desync, problem, true);
    }
    return;
  }
  // The frame's commands and inputs as the server applied them (World::step(TickInput) orders
  // them); a refusal here that the server accepted shows up as a hash mismatch, which is the
  // check that matters. The test hook's edit goes in before them: nothing they check reads a
  // body's position.
  if (perturb_next_tick) {
    debug_perturb_position(*world, perturb_next_tick->first, perturb_next_tick->second);
    perturb_next_tick.reset();
  }
  const sim::TickInput tick{frame.commands, frame.inputs};
  if (sync_tester) {
    sync_tester->step(*world, tick);  // it records them for its re-simulations
    check_sync_test(frame.tick);
  } else {
    world->step(tick);
  }
  ticks_applied.fetch_add(1, std::memory_order_relaxed);
  // Our bodies follow the spawns (owned by us) and destroys the commands made.
  for (const sim::CommandResult& result : world->command_results()) {
    if (result.error != sim::Error::none || result.body.is_null()) continue;
    if (result.type == sim::CommandType::destroy) {
      std::erase(owned_bodies, result.body);
    } else if (result.type == sim::CommandType::spawn) {
      sim::BodyView view;
      if (world->get_body(result.body, &view) == sim::Error::none &&
          view.owner_player == player_id && player_id != 0) {
        owned_bodies.push_back(result.body);
      }
    }
  }
  const uint64_t local_hash = world->state_hash();
  if (replay_window) {
    replay_window->record_step(*world, frame.inputs, frame.state_hash, local_hash, frame.commands);
  }
  if (local_hash != frame.state_hash) {
    on_desync(frame.tick, local_hash, frame.state_hash);
    return;
  }
  ticks_verified.fetch_add(1, std::memory_order_relaxed);
  if (prediction &&
      prediction->on_confirmed(*world, frame.inputs, frame.commands) != sim::Error::none) {
    prediction->reset(*world);  // cannot happen for consecutive ticks; start over if it does
  }
  TickAppliedEvent event;
  event.tick = frame.tick;
  event.state_hash = local_hash;
  event.input_count = static_cast<uint32_t>(frame.inputs.size());
  event.world_view = world.get();
  deliver(event);
}

void Client::Impl::on_desync(uint64_t tick, uint64_t local_hash, uint64_t server_hash) {
  desyncs.fetch_add(1, std::memory_order_relaxed);
  schema::DesyncReport report;
  report.tick = tick;
  report.client_hash = local_hash;
  report.server_hash = server_hash;
  send(report);
  // Until a snapshot arrives every later hash differs too: stop stepping.
  awaiting_snapshot = true;
  DesyncEvent event;
  event.tick = tick;
  event.local_hash = local_hash;
  event.server_hash = server_hash;
  if (!options.replay_dir.empty()) {
    event.replay_path = write_desync_replay(tick, &event.replay_error);
    if (event.replay_path.empty()) last_error = "replay not written: " + event.replay_error;
  }
  const bool give_up = note_desync_loop(tick, event);
  if (!give_up && options.auto_resync) start_resync("desync at tick " + std::to_string(tick));
  deliver(event);
  if (give_up) fail(ErrorCode::desync, desync_loop_diagnosis(), true);
}

bool Client::Impl::note_desync_loop(uint64_t tick, const DesyncEvent& event) {
  DesyncLoop& loop = desync_loop;
  const bool recurring = resynced_at_tick && tick >= *resynced_at_tick &&
                         tick - *resynced_at_tick <= options.recurring_desync_ticks;
  if (!recurring) {
    // A fresh run: the first desync's replay is the one worth reading (its window holds only
    // ticks this client stepped from the join or from a healthy stretch).
    loop = DesyncLoop{};
    loop.first_tick = tick;
    loop.first_replay = event.replay_path;
    loop.first_replay_error = event.replay_error;
    return false;
  }
  const uint64_t gap = tick - *resynced_at_tick;
  loop.min_gap_ticks = loop.recurring == 0 ? gap : std::min(loop.min_gap_ticks, gap);
  loop.max_gap_ticks = std::max(loop.max_gap_ticks, gap);
  ++loop.recurring;
  recurring_desyncs.fetch_add(1, std::memory_order_relaxed);
  return options.max_recurring_desyncs > 0 && loop.recurring >= options.max_recurring_desyncs;
}

std::string Client::Impl::desync_loop_diagnosis() const {
  const DesyncLoop& loop = desync_loop;
  const std::string gap =
      loop.min_gap_ticks == loop.max_gap_ticks
          ? std::to_string(loop.max_gap_ticks)
          : std::to_string(loop.min_gap_ticks) + "-" + std::to_string(loop.max_gap_ticks);
  std::string replay;
  if (!loop.first_replay.empty()) {
    replay = "replay written to " + loop.first_replay;
  } else if (!loop.first_replay_error.empty()) {
    replay = "no replay: " + loop.first_replay_error;
  } else {
    replay = "no replay (set ClientOptions::replay_dir, lockstep-bot --replay-dir)";
  }
  return "this client's simulation is not deterministic with the server's: hashes diverge again " +
         gap + (gap == "1" ? " tick" : " ticks") + " after each resync (" +
         std::to_string(loop.recurring) + " resyncs in a row); first desync at tick " +
         std::to_string(loop.first_tick) + ", " + replay +
         ". Not resyncing again: build the client with the server's compiler and flags";
}

void Client::Impl::restart_prediction() {
  if (options.mode != ClientMode::lockstep || !world) return;
  if (options.sync_test > 0) {
    sim::Error error = sim::Error::none;
    sync_tester = sim::SyncTester::create(*world, options.sync_test, &error);
    sync_test_reported = false;
  }
  if (!options.prediction) return;
  if (prediction) {
    prediction->reset(*world);
    return;
  }
  PredictionConfig config;
  config.max_prediction_ticks = options.max_prediction_ticks;
  config.predictor = options.input_predictor;
  sim::Error error = sim::Error::none;
  prediction = Prediction::create(*world, player_id, config, &error);
  if (!prediction) {
    fail(ErrorCode::bad_request,
         std::string("cannot start prediction: ") + sim::error_message(error), true);
  }
}

void Client::Impl::check_sync_test(uint64_t tick) {
  sync_test_ticks.store(sync_tester->ticks_compared(), std::memory_order_relaxed);
  if (!sync_tester->failed() || sync_test_reported) return;
  sync_test_reported = true;
  sync_test_failures.fetch_add(1, std::memory_order_relaxed);
  const sim::SyncTestFailure& failure = sync_tester->failure();
  std::string text = "sync test failed at tick " + std::to_string(failure.tick) + " (confirmed " +
                     std::to_string(tick) + "): ";
  if (failure.hash_misses_state) {
    text += "hashes agree but the re-simulated state differs (the hash misses part of it)";
  } else {
    text += "hash " + std::to_string(failure.hash) + " re-simulated as " +
            std::to_string(failure.resimulated_hash);
  }
  const std::vector<sim::StateFieldDiff> diffs =
      sim::diff_state(sync_tester->recorded_at_failure(), sync_tester->resimulated_at_failure(), 1);
  if (!diffs.empty()) {
    const sim::StateFieldDiff& d = diffs.front();
    text += d.body.is_null()
                ? "; first difference: player " + std::to_string(d.player) + " " + d.field
                : "; first difference: body " + std::to_string(d.body.index1 - 1) + " " + d.field;
    text += " (" + std::to_string(d.value_a) + " vs " + std::to_string(d.value_b) + ")";
  } else {
    text += "; no body or score field differs (the difference is in other state)";
  }
  fail(ErrorCode::desync, std::move(text), false);
}

void Client::Impl::publish_prediction_counters() {
  const Prediction::Counters& c = prediction->counters();
  ticks_predicted.store(c.ticks_predicted, std::memory_order_relaxed);
  rollbacks.store(c.rollbacks, std::memory_order_relaxed);
  ticks_resimulated.store(c.ticks_resimulated, std::memory_order_relaxed);
  max_ticks_resimulated.store(c.max_ticks_resimulated, std::memory_order_relaxed);
  prediction_waits.store(c.waits, std::memory_order_relaxed);
}

void Client::Impl::update_prediction(std::optional<uint64_t> next_input_tick) {
  if (!prediction || !world || !have_snapshot || awaiting_snapshot) return;
  RollbackReport report;
  if (prediction->reconcile(*world, &report)) {
    const auto cost_us = static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(report.cost).count());
    if (cost_us > max_rollback_cost_us.load(std::memory_order_relaxed)) {
      max_rollback_cost_us.store(cost_us, std::memory_order_relaxed);
    }
    RolledBackEvent event;
    event.from_tick = report.from_tick;
    event.ticks_resimulated = report.ticks_resimulated;
    event.cost_us = static_cast<uint32_t>(std::min<uint64_t>(cost_us, UINT32_MAX));
    deliver(event);
  }
  // Up to the tick before the next input's: that tick waits for the game's input for it, so our
  // own input is in the predicted world as soon as it is sent.
  if (next_input_tick && *next_input_tick > 0) {
    const uint64_t confirmed = world->tick();
    prediction->advance(*next_input_tick - 1, [&](uint64_t tick) {
      TickPredictedEvent event;
      event.tick = tick;
      event.confirmed_tick = confirmed;
      event.world_view = &prediction->world();
      deliver(event);
    });
  }
  publish_prediction_counters();
}

Client::Impl::Clock::time_point Client::Impl::delayed_due(Clock::time_point now,
                                                          Clock::time_point* last) {
  const auto half = std::chrono::duration_cast<Clock::duration>(options.simulated_latency) / 2;
  const auto jitter_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(options.simulated_jitter).count();
  int64_t offset_ns = 0;
  if (jitter_ns > 0) {
    offset_ns = std::uniform_int_distribution<int64_t>(-jitter_ns, jitter_ns)(latency_rng);
  }
  Clock::time_point due = now + half + std::chrono::nanoseconds(offset_ns);
  if (due < now) due = now;
  if (due < *last) due = *last;  // a stream never overtakes itself
  *last = due;
  return due;
}

void Client::Impl::flush_outbound(Clock::time_point now) {
  while (!delayed_outbound.empty() && delayed_outbound.front().first <= now) {
    if (connection) connection->send(std::move(delayed_outbound.front().second));
    delayed_outbound.pop_front();
  }
}

// ---- Client ---------------------------------------------------------------------------------

Client::Client() : impl_(std::make_unique<Impl>()) {}

Client::~Client() = default;

bool Client::connect(const std::string& host, uint16_t port, const std::string& room,
                     const std::string& name, const std::string& token,
                     const ClientOptions& options) {
  Impl& s = *impl_;
  if (s.connection) {
    s.last_error = "connect() called twice: one Client is one connection";
    return false;
  }
  if (host.empty() || port == 0) {
    s.last_error = "connect() needs a host and a non-zero port";
    return false;
  }
  if (options.max_frame_bytes == 0 || options.max_pending_messages == 0 ||
      options.max_send_queue_bytes < schema::kMaxClientFrameBytes ||
      options.ping_interval.count() <= 0 || options.read_timeout.count() <= 0 ||
      options.connect_timeout.count() <= 0) {
    s.last_error =
        "invalid ClientOptions: caps and intervals must be positive (send queue at "
        "least one client frame)";
    return false;
  }
  if (!options.scene_name.empty() && !schema::valid_scene_name(options.scene_name)) {
    s.last_error = "invalid ClientOptions::scene_name '" + options.scene_name +
                   "': 1..64 letters, digits, '_', '-' or '.'";
    return false;
  }
  s.options = options;
  if (!options.scene_file.empty()) {
    // Read now, never on the tick path; the same loader the server uses, so the same name.
    sim::Scene scene;
    if (!schema::load_scene_file(options.scene_file, &scene, &s.last_error)) return false;
    if (s.options.scene_name.empty()) s.options.scene_name = scene.name;
    s.options.scene = std::move(scene);
  }
  if (options.prediction &&
      (options.mode != ClientMode::lockstep || options.max_prediction_ticks == 0 ||
       options.max_prediction_ticks > Prediction::kMaxPredictionTicks)) {
    s.last_error =
        "invalid ClientOptions: prediction needs lockstep mode and max_prediction_ticks "
        "in 1.." +
        std::to_string(Prediction::kMaxPredictionTicks);
    return false;
  }
  if (options.sync_test > sim::SyncTester::kMaxRollbackTicks) {
    s.last_error = "invalid ClientOptions: sync_test is at most " +
                   std::to_string(sim::SyncTester::kMaxRollbackTicks) + " ticks";
    return false;
  }
  if (options.simulated_latency.count() < 0 || options.simulated_jitter.count() < 0) {
    s.last_error = "invalid ClientOptions: simulated latency and jitter cannot be negative";
    return false;
  }
  s.latency_rng.seed(options.simulated_latency_seed);
  s.room = room;
  detail::ConnectionConfig config;
  config.ping_interval = options.ping_interval;
  config.connect_timeout = options.connect_timeout;
  config.read_timeout = options.read_timeout;
  config.max_frame_bytes = options.max_frame_bytes;
  config.max_send_queue_bytes = options.max_send_queue_bytes;
  config.max_pending_messages = options.max_pending_messages;
  s.connection = std::make_unique<detail::Connection>(config);

  schema::Hello hello;
  hello.room = room;
  hello.player_name = name;
  hello.auth_token = token;
  hello.mode = options.mode;
  hello.snapshot_rate_hz = options.snapshot_rate_hz;
  hello.scene = s.options.scene_name;
  s.connection->start(host, port, hello);
  s.state = ClientState::connecting;
  return true;
}

void Client::run_thread() {
  if (impl_->connection) impl_->connection->run_thread();
}

size_t Client::poll(std::chrono::milliseconds wait, const EventHandler& handler) {
  Impl& s = *impl_;
  if (!s.connection) return 0;
  const bool delaying =
      s.options.simulated_latency.count() > 0 || s.options.simulated_jitter.count() > 0;
  if (delaying) {
    // Wake for the next held item rather than sleeping past it.
    auto now = Impl::Clock::now();
    for (const auto* due :
         {s.delayed_inbound.empty() ? nullptr : &s.delayed_inbound.front().first,
          s.delayed_outbound.empty() ? nullptr : &s.delayed_outbound.front().first}) {
      if (due == nullptr) continue;
      const auto until = std::chrono::ceil<std::chrono::milliseconds>(*due - now);
      wait = std::max(std::chrono::milliseconds(0), std::min(wait, until));
    }
  }
  if (s.connection->threaded()) {
    s.connection->wait_inbound(wait);
  } else {
    s.connection->poll_io(wait);
  }
  s.current = handler ? &handler : &s.handler;
  s.delivered = 0;
  auto process = [&s](detail::Inbound& item) {
    if (auto* message = std::get_if<schema::Message>(&item)) {
      if (s.state != ClientState::disconnected) s.handle(*message);
    } else {
      s.handle_end(std::get<detail::ConnectionEnd>(item));
    }
  };
  // Bounded, so a server that sends faster than we step cannot keep poll() from returning.
  detail::Inbound item;
  if (delaying) {
    const auto now = Impl::Clock::now();
    s.flush_outbound(now);
    while (s.delayed_inbound.size() < s.options.max_pending_messages && s.connection->pop(&item)) {
      s.delayed_inbound.emplace_back(s.delayed_due(now, &s.last_inbound_due), std::move(item));
    }
    for (size_t taken = 0; taken < s.options.max_pending_messages && !s.delayed_inbound.empty() &&
                           s.delayed_inbound.front().first <= now;
         ++taken) {
      detail::Inbound held = std::move(s.delayed_inbound.front().second);
      s.delayed_inbound.pop_front();
      process(held);
    }
  } else {
    for (size_t taken = 0; taken < s.options.max_pending_messages && s.connection->pop(&item);
         ++taken) {
      process(item);
    }
  }
  if (s.prediction && s.state != ClientState::disconnected) s.update_prediction(next_input_tick());
  s.current = nullptr;
  return s.delivered;
}

std::vector<Event> Client::poll_events(std::chrono::milliseconds wait) {
  std::vector<Event> events;
  poll(wait, [&events](const Event& event) { events.push_back(event); });
  return events;
}

void Client::set_event_handler(EventHandler handler) {
  impl_->handler = std::move(handler);
}

std::optional<uint64_t> Client::Impl::next_input_tick(bool* capped) const {
  if (!connection || !joined || state == ClientState::disconnected) return std::nullopt;
  const uint16_t delay = options.input_delay_ticks.value_or(input_delay_ticks);
  // Time sync puts the input where the server will be input_delay ticks from now, but never
  // past what the room is sure to accept (Connection::target_tick); never earlier than an input
  // already sent, so a player's inputs reach the sim in order.
  std::optional<uint64_t> target =
      connection->target_tick(std::chrono::steady_clock::now(), delay, capped);
  if (!target && world) target = world->tick() + delay;
  if (!target) return std::nullopt;
  announced_input_tick = std::max({announced_input_tick, last_stamped_tick, *target});
  return announced_input_tick;
}

std::optional<uint64_t> Client::next_input_tick() const {
  return impl_->next_input_tick(nullptr);
}

std::optional<uint64_t> Client::send_input(std::span<const sim::Input> inputs) {
  Impl& s = *impl_;
  bool capped = false;
  const std::optional<uint64_t> next = s.next_input_tick(&capped);
  if (!next) return std::nullopt;
  const uint64_t stamped = *next;

  schema::InputFrame frame;
  frame.target_tick = stamped;
  frame.sequence = ++s.input_frame_sequence;
  frame.inputs.assign(inputs.begin(), inputs.end());
  for (sim::Input& input : frame.inputs) {
    input.player = s.player_id;
    if (input.sequence == 0) {
      // 0 is "not set": the room takes a (player, sequence) once, so each input needs its own.
      if (++s.input_sequence == 0) ++s.input_sequence;
      input.sequence = s.input_sequence;
    }
  }
  schema::SharedFrame encoded = schema::encode_shared_frame(frame);
  if (encoded->size() > schema::kFrameHeaderBytes + schema::kMaxClientFrameBytes) {
    s.last_error = "send_input: " + std::to_string(inputs.size()) +
                   " inputs make a frame over the server's client-frame cap";
    return std::nullopt;
  }
  s.last_stamped_tick = stamped;
  if (capped) s.stamps_capped.fetch_add(1, std::memory_order_relaxed);
  if (s.prediction) {
    const sim::Error error = s.prediction->add_local_inputs(stamped, frame.inputs);
    // Not predicted (too far ahead of the confirmed tick): the confirmation corrects it.
    if (error != sim::Error::none) {
      s.last_error = std::string("send_input: not predicted: ") + sim::error_message(error);
    }
  }
  s.send_in_order(std::move(encoded));
  s.input_frames_sent.fetch_add(1, std::memory_order_relaxed);
  s.inputs_sent.fetch_add(inputs.size(), std::memory_order_relaxed);
  return stamped;
}

bool Client::send_game_message(std::span<const uint8_t> data) {
  Impl& s = *impl_;
  if (!s.connection || !s.joined || s.state == ClientState::disconnected) {
    s.last_error = "send_game_message: not joined";
    return false;
  }
  if (s.protocol_version < schema::kFirstVersionWithGameMessages) {
    s.last_error = "send_game_message: the server speaks protocol " +
                   std::to_string(s.protocol_version) + ", game messages need " +
                   std::to_string(schema::kFirstVersionWithGameMessages);
    return false;
  }
  if (data.empty() || data.size() > schema::kMaxGameMessageBytes) {
    s.last_error =
        "send_game_message: " + std::to_string(data.size()) + " bytes; a game message holds 1.." +
        std::to_string(schema::kMaxGameMessageBytes) + " (the server's own limit may be lower)";
    return false;
  }
  s.send_in_order(schema::encode_shared_frame(
      schema::GameMessage{std::vector<uint8_t>(data.begin(), data.end())}));
  s.game_messages_sent.fetch_add(1, std::memory_order_relaxed);
  return true;
}

bool Client::send_game_message(std::string_view text) {
  return send_game_message(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

void Client::request_resync(const std::string& reason) {
  Impl& s = *impl_;
  if (!s.connection || !s.joined || s.state == ClientState::disconnected) return;
  s.start_resync(reason);
}

void Client::close() {
  if (impl_->connection) impl_->connection->close(ErrorCode::none, "closed by the client");
}

void Client::debug_perturb_next_tick(sim::BodyId body, sim::Vec3 delta) {
  impl_->perturb_next_tick = std::make_pair(body, delta);
}

void Client::debug_perturb_predicted(sim::BodyId body, sim::Vec3 delta) {
  if (impl_->prediction) impl_->prediction->debug_perturb(body, delta);
}

const sim::World* Client::confirmed_world() const {
  return impl_->world.get();
}
const sim::World* Client::predicted_world() const {
  return impl_->prediction ? &impl_->prediction->world() : nullptr;
}

ClientState Client::state() const {
  return impl_->state;
}
uint32_t Client::player_id() const {
  return impl_->player_id;
}
const std::vector<sim::BodyId>& Client::owned_bodies() const {
  return impl_->owned_bodies;
}
uint16_t Client::tick_rate_hz() const {
  return impl_->tick_rate_hz;
}
uint16_t Client::input_delay_ticks() const {
  return impl_->options.input_delay_ticks.value_or(impl_->input_delay_ticks);
}
const sim::World* Client::world() const {
  return impl_->world.get();
}
std::string Client::last_error() const {
  return impl_->last_error;
}

std::optional<uint64_t> Client::estimated_server_tick() const {
  if (!impl_->connection) return std::nullopt;
  return impl_->connection->estimated_server_tick(std::chrono::steady_clock::now());
}

ClientStats Client::stats() const {
  const Impl& s = *impl_;
  ClientStats out;
  auto load = [](const std::atomic<uint64_t>& v) { return v.load(std::memory_order_relaxed); };
  out.ticks_applied = load(s.ticks_applied);
  out.ticks_verified = load(s.ticks_verified);
  out.desyncs = load(s.desyncs);
  out.recurring_desyncs = load(s.recurring_desyncs);
  out.snapshots = load(s.snapshots);
  out.resyncs = load(s.resyncs);
  out.errors = load(s.errors);
  out.input_frames_sent = load(s.input_frames_sent);
  out.inputs_sent = load(s.inputs_sent);
  out.game_messages_sent = load(s.game_messages_sent);
  out.ticks_predicted = load(s.ticks_predicted);
  out.rollbacks = load(s.rollbacks);
  out.ticks_resimulated = load(s.ticks_resimulated);
  out.max_ticks_resimulated = load(s.max_ticks_resimulated);
  out.max_rollback_cost_us = load(s.max_rollback_cost_us);
  out.prediction_waits = load(s.prediction_waits);
  out.sync_test_ticks = load(s.sync_test_ticks);
  out.sync_test_failures = load(s.sync_test_failures);
  if (s.connection) {
    const detail::TransportCounters& t = s.connection->counters();
    out.bytes_in = load(t.bytes_in);
    out.bytes_out = load(t.bytes_out);
    out.frames_in = load(t.frames_in);
    out.frames_out = load(t.frames_out);
    out.pongs = load(t.pongs);
    out.schedule_moves = load(t.schedule_moves);
    out.stamps_capped = load(s.stamps_capped);
    const detail::RttFigures rtt = s.connection->rtt();
    out.rtt_last = rtt.last;
    out.rtt_min = rtt.min;
    out.rtt_smoothed = rtt.smoothed;
  }
  return out;
}

std::chrono::nanoseconds Client::rtt_quantile(double q) const {
  if (!impl_->connection) return std::chrono::nanoseconds(0);
  return impl_->connection->rtt_quantile(q);
}

}  // namespace lockstep::client_sdk
