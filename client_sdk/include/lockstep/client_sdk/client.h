// The client a game links: one connection to a lockstep-server room.
//
//   Client client;
//   client.connect("127.0.0.1", 7777, "default", "alice", "", {});
//   client.run_thread();                      // or leave it out and let poll() drive the socket
//   for (;;) {
//     client.poll(std::chrono::milliseconds(5), [&](const Event& e) { ... });
//     client.send_input(my_inputs);           // stamped for the server's tick + input delay
//   }
//
// Two halves, two threads at most. The transport (socket, frames, pings, time sync) runs on an io
// thread (run_thread) or inside poll(); it decodes every frame (FrameDecoder with the server cap,
// then decode_body's Verifier) and queues the messages. Everything else — the local world, the
// hash check, every event — happens on the caller's thread inside poll(), so an event's world
// view is safe to read while the handler runs and the game never needs a lock.
//
// Lockstep mode: the client makes its world from the WorldDef the Welcome carries (no scene file
// needed; a scene given in ClientOptions is only checked against it), restores the join
// Snapshot (every body, those of earlier players included), then for every TickFrame queues its
// commands (players' spawns and destroys, game rules' scores) and inputs, steps and compares the
// state hash with the server's. A mismatch
// raises a DesyncEvent, sends a DesyncReport and (with auto_resync) a ResyncRequest, and the next
// Snapshot is restored. A desync that comes back soon after each resync is a client that cannot
// follow the server at all (another compiler's floating point, say): after
// max_recurring_desyncs of them the client gives up with a diagnosis instead of resyncing. With
// ClientOptions::replay_dir the client also records a replay window and writes it (with its own
// hashes beside the server's, and its own state at the bad tick) on a desync. Thin mode: no
// stepping; the server streams Snapshots at the granted rate and each one is restored into a local
// world only to give the handler a view of it.
//
// Predicted mode (ClientOptions::prediction, on top of lockstep): a second world runs ahead of
// the verified one with our inputs at once and the others' guessed, and is rolled back and
// re-simulated inside poll() when a confirmation disagrees (prediction.h, docs/client.md).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "lockstep/client_sdk/prediction.h"
#include "lockstep/schema/limits.h"
#include "lockstep/schema/messages.h"
#include "lockstep/sim/scene.h"
#include "lockstep/sim/types.h"
#include "lockstep/sim/world.h"

namespace lockstep::client_sdk {

using schema::ClientMode;
using schema::ErrorCode;

struct ClientOptions {
  ClientMode mode = ClientMode::lockstep;
  /// Snapshots per second asked for in thin mode (the server may grant fewer); 0 = its default.
  uint16_t snapshot_rate_hz = 0;
  /// On a desync, ask the server for a snapshot and restore it. Without it the client stops
  /// stepping after a desync until the game calls request_resync().
  bool auto_resync = true;
  /// Ping period; every Pong is a time-sync sample and an rtt measurement.
  std::chrono::milliseconds ping_interval{250};
  /// Give up when connecting (resolve + TCP connect) takes longer.
  std::chrono::milliseconds connect_timeout{5000};
  /// Disconnect when nothing arrives for this long (a room sends a TickFrame every tick).
  std::chrono::milliseconds read_timeout{10000};
  /// Largest frame body accepted from the server, checked before any body byte is buffered.
  uint32_t max_frame_bytes = schema::kMaxServerFrameBytes;
  /// Bytes the client may have queued for sending; beyond it the connection is closed.
  size_t max_send_queue_bytes = 1u << 20;
  /// Messages received but not yet taken by poll(); beyond it the connection is closed (a game
  /// that stops polling must not make the client buffer without bound). 4096 ≈ 68 s at 60 Hz.
  size_t max_pending_messages = 4096;
  /// The scene to ask for by name (Hello.scene): a room this Hello creates runs it; an
  /// existing room must already run it (else the server refuses with scene_mismatch), and an
  /// unknown name gets unknown_scene. "" = whatever the room runs (a new room: the server's
  /// default scene).
  std::string scene_name;
  /// A scene file (docs/scene-format.md) to build the local world from, read and checked by
  /// connect() (a bad file makes it return false with the file, line and reason). It sets
  /// `scene`, and `scene_name` to the file's stem unless given: the server serves
  /// --scene-dir files under their stems, so the same file gives the same name on both sides.
  std::string scene_file;
  /// A scene the room must run: its WorldDef fingerprint is checked against the Welcome's (a
  /// mismatch is a fatal error naming both scenes). The world itself is always made from the
  /// Welcome's WorldDef and the join Snapshot.
  ///
  /// Its level (Scene::meshes, heightfields; a scene_file's `mesh`/`heightfield` files) is the
  /// client's own copy: used when the Welcome carries only the level's digest (a level over the
  /// server's --max-welcome-level-bytes), and checked against the digest always. A copy that
  /// differs refuses the join with both digests.
  std::optional<sim::Scene> scene;
  /// The most memory the local world may take: sim::world_memory_bytes of the Welcome's
  /// WorldDef plus its level (the level's content as received, and sim::level_memory_bytes for
  /// what the world makes of it). A Welcome asking for more is refused before the world is made.
  uint64_t max_world_memory_bytes = uint64_t{1} << 30;
  /// Lockstep mode: keep a replay window (the last replay_window_seconds of ticks, inputs, the
  /// server's hashes and our own, keyframes; memory fixed at the join snapshot) and write it to
  /// this directory (created when needed) when a desync is detected. Empty = no replay window.
  std::string replay_dir;
  uint32_t replay_window_seconds = 10;
  /// A keyframe (world snapshot) every N ticks in the replay window.
  uint32_t replay_keyframe_interval_ticks = 120;
  /// Lockstep mode: a desync within this many ticks of the resync snapshot that healed the one
  /// before it is a recurring one (600 = 10 s at 60 Hz).
  uint32_t recurring_desync_ticks = 600;
  /// After this many recurring desyncs in a row the client stops resyncing: its simulation does
  /// not agree with the server's and another snapshot will not change that. It closes with a
  /// fatal ErrorEvent (code desync) naming the first desync's tick and replay file, instead of
  /// pulling a full snapshot every few ticks. 0 = resync for ever.
  uint32_t max_recurring_desyncs = 3;

  /// Lockstep mode only: also run a predicted world ahead of the confirmed one (prediction.h).
  /// The confirmed world (world(), confirmed_world()) still steps only TickFrames and is checked
  /// against every server hash; predicted_world() runs up to the tick the next input would be
  /// stamped for, with our inputs applied as soon as send_input() is called and the other
  /// players' inputs predicted, and is rolled back and re-simulated inside poll() when a
  /// confirmation disagrees. Set input_delay_ticks (0 is fine) to see our own inputs sooner.
  bool prediction = false;
  /// How far the predicted world may run ahead of the confirmed one (1 … 60); beyond it the
  /// prediction waits for the server.
  uint32_t max_prediction_ticks = 8;
  /// Other players' inputs for unconfirmed ticks; null = repeat their last confirmed inputs.
  InputPredictor input_predictor;
  /// The input delay our inputs are stamped with; unset = the server's (Welcome). Below the
  /// server's, inputs may reach it after their tick: it applies them at the next one (its late
  /// policy), which a predicting client corrects by rolling back.
  std::optional<uint16_t> input_delay_ticks;
  /// Lockstep mode: after every confirmed tick, also restore the state from this many ticks back
  /// (1 … 64) and simulate again, requiring the same hashes (sim::SyncTester). A failure is a
  /// non-fatal ErrorEvent naming the tick and the first differing field; 0 = off.
  uint32_t sync_test = 0;
  /// Testing and demos: hold every received message and every sent input frame for this long
  /// (half of it each way, so it is the added round trip) plus a uniform random amount in
  /// ±simulated_jitter each way, drawn from simulated_latency_seed. Order is kept, as TCP keeps
  /// it. Pings are not delayed, so time sync still sees the real link. 0 = off.
  std::chrono::milliseconds simulated_latency{0};
  std::chrono::milliseconds simulated_jitter{0};
  uint64_t simulated_latency_seed = 1;
};

/// The room accepted us (lockstep mode: the join snapshot follows as a SnapshotEvent).
struct JoinedEvent {
  uint32_t player_id = 0;
  std::vector<sim::BodyId> owned_bodies;
  uint64_t tick = 0;  // the server's tick when it welcomed us
  uint16_t tick_rate_hz = 0;
  uint16_t input_delay_ticks = 0;
  uint16_t snapshot_rate_hz = 0;         // granted (thin mode), rounded down
  uint32_t snapshot_interval_ticks = 0;  // thin mode: a snapshot every this many ticks (exact)
  std::string scene;
};

/// A TickFrame was applied to the local world and its hash matched the server's (lockstep mode).
struct TickAppliedEvent {
  uint64_t tick = 0;
  uint64_t state_hash = 0;
  uint32_t input_count = 0;
  const sim::World* world_view = nullptr;
  /// The world right after this tick; valid while the handler runs (poll(handler) form).
  const sim::World& world() const { return *world_view; }
};

/// A snapshot was restored: on join, after a resync, or each one of a thin client's stream.
struct SnapshotEvent {
  uint64_t tick = 0;
  uint64_t state_hash = 0;
  size_t state_bytes = 0;
  bool resync = false;  // it answered our ResyncRequest
  const sim::World* world_view = nullptr;
  const sim::World& world() const { return *world_view; }
};

/// The local hash after `tick` differs from the server's: reported to the server already.
struct DesyncEvent {
  uint64_t tick = 0;
  uint64_t local_hash = 0;
  uint64_t server_hash = 0;
  /// The replay window written for it (ClientOptions::replay_dir); "" when none was written.
  std::string replay_path;
  /// Why no replay was written although replay_dir is set ("" otherwise).
  std::string replay_error;
};

/// The predicted world stepped `tick` ahead of confirmation (prediction mode).
struct TickPredictedEvent {
  uint64_t tick = 0;
  uint64_t confirmed_tick = 0;
  const sim::World* world_view = nullptr;
  const sim::World& world() const { return *world_view; }
};

/// A confirmation disagreed with the prediction: the predicted world was restored to the
/// confirmed tick `from_tick` and `ticks_resimulated` ticks were simulated again.
struct RolledBackEvent {
  uint64_t from_tick = 0;
  uint32_t ticks_resimulated = 0;
  uint32_t cost_us = 0;  // restore + re-simulation, wall clock
};

/// The connection is over (always the last event).
struct DisconnectedEvent {
  ErrorCode code = ErrorCode::none;  // none: closed by us or an orderly end of stream
  std::string reason;
};

/// An Error frame from the server, or a local failure; `fatal` ones end the connection.
struct ErrorEvent {
  ErrorCode code = ErrorCode::none;
  std::string message;
  bool fatal = false;
};

using Event = std::variant<JoinedEvent, TickAppliedEvent, SnapshotEvent, DesyncEvent,
                           DisconnectedEvent, ErrorEvent, TickPredictedEvent, RolledBackEvent>;
using EventHandler = std::function<void(const Event&)>;

enum class ClientState : uint8_t { idle, connecting, joined, disconnected };

struct ClientStats {
  uint64_t ticks_applied = 0;   // TickFrames stepped locally (lockstep) or received (thin)
  uint64_t ticks_verified = 0;  // stepped and equal to the server's hash
  uint64_t desyncs = 0;
  uint64_t recurring_desyncs = 0;  // desyncs soon after a resync (ClientOptions)
  uint64_t snapshots = 0;          // restored (join, resyncs, thin stream)
  uint64_t resyncs = 0;            // snapshots that answered a ResyncRequest
  uint64_t errors = 0;             // Error frames received plus local failures
  uint64_t input_frames_sent = 0;
  uint64_t inputs_sent = 0;
  uint64_t game_messages_sent = 0;
  uint64_t bytes_in = 0;  // wire bytes, frame headers included
  uint64_t bytes_out = 0;
  uint64_t frames_in = 0;
  uint64_t frames_out = 0;
  uint64_t pongs = 0;
  // Pongs that said the room had moved its schedule later again (it could not keep up); time
  // sync follows the move.
  uint64_t schedule_moves = 0;
  // Inputs whose clock-based stamp was past the room's last TickFrame + its input window, and
  // were stamped at that last acceptable tick instead.
  uint64_t stamps_capped = 0;
  std::chrono::nanoseconds rtt_last{0};
  std::chrono::nanoseconds rtt_min{0};       // the time-sync window's least rtt
  std::chrono::nanoseconds rtt_smoothed{0};  // SRTT, gain 1/8
  // Prediction mode.
  uint64_t ticks_predicted = 0;
  uint64_t rollbacks = 0;
  uint64_t ticks_resimulated = 0;  // over all rollbacks
  uint64_t max_ticks_resimulated = 0;
  uint64_t max_rollback_cost_us = 0;
  uint64_t prediction_waits = 0;  // polls where the bound held the prediction back
  // Sync test (ClientOptions::sync_test).
  uint64_t sync_test_ticks = 0;  // ticks re-simulated and compared
  uint64_t sync_test_failures = 0;
};

class Client final {
 public:
  Client();
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  /// Starts connecting and sends Hello; false (and the reason in last_error()) when the
  /// arguments are invalid or the client was already connected. Progress arrives as events.
  bool connect(const std::string& host, uint16_t port, const std::string& room,
               const std::string& name, const std::string& token,
               const ClientOptions& options = {});
  /// Moves the transport onto its own io thread; without it, poll() drives the socket.
  void run_thread();

  /// Runs ready transport work (unless run_thread), waiting up to `wait` for something to
  /// arrive, then processes every received message on this thread, calling `handler` (or the
  /// one from set_event_handler) once per event. Returns the number of events delivered.
  size_t poll(std::chrono::milliseconds wait = std::chrono::milliseconds(0),
              const EventHandler& handler = nullptr);
  /// poll() that returns the events. A TickAppliedEvent's or SnapshotEvent's world view then
  /// shows the state after the last event of the batch (use the handler form for every tick).
  std::vector<Event> poll_events(std::chrono::milliseconds wait = std::chrono::milliseconds(0));
  /// Handler used by poll() when it is not given one.
  void set_event_handler(EventHandler handler);

  /// Sends inputs for this player's bodies, stamped for max(last stamped tick, estimated server
  /// tick + input delay); fills in Input::player, and Input::sequence where it is 0 (the room
  /// applies an input of a given (player, sequence) once: see docs/protocol.md, "Repeated
  /// inputs"; the SDK's counter starts at a random value per Client, so a restarted client's
  /// inputs are not taken for repeats of its earlier life). Returns the target tick, or nothing
  /// when not joined (or disconnected). Calls stamped for the same tick all apply at that tick, and
  /// the server caps inputs per player per tick: send once per tick (see next_input_tick). Call it
  /// from the thread that polls.
  std::optional<uint64_t> send_input(std::span<const sim::Input> inputs);
  /// The tick send_input() would stamp now; nothing before the Welcome. It never goes down, and
  /// send_input() never stamps below it: a game that sends once per tick skips sending while
  /// this is not past the tick it last sent for (after a poll that applied several ticks at
  /// once, say). Call it from the thread that polls.
  std::optional<uint64_t> next_input_tick() const;
  /// Sends a game message (the game's own bytes: "ready", a chat line) to the room's rules, which
  /// see it at the room's next tick (RoomRules::on_message). False (why in last_error()) when not
  /// joined, the server speaks a protocol without game messages, or the size is outside
  /// 1..schema::kMaxGameMessageBytes. The server refuses one over its own size or rate limit
  /// (256 bytes, 10 per second by default) with a non-fatal ErrorEvent (message_rejected); the
  /// connection stays open. Call it from the thread that polls.
  bool send_game_message(std::span<const uint8_t> data);
  bool send_game_message(std::string_view text);
  /// Asks the server for a snapshot (lockstep mode: restored when it arrives).
  void request_resync(const std::string& reason);
  /// Closes the connection; a DisconnectedEvent follows on the next poll.
  void close();

  /// Test hook: before the next tick is stepped, moves `body` by `delta` in the local world
  /// (sim::debug_perturb_position, lockstep/sim/testing.h), so that tick's hash differs from the
  /// server's.
  void debug_perturb_next_tick(sim::BodyId body, sim::Vec3 delta);

  /// Test hook (prediction mode): moves `body` in the predicted world now, outside the tick;
  /// the next confirmation notices and rolls back.
  void debug_perturb_predicted(sim::BodyId body, sim::Vec3 delta);

  ClientState state() const;
  /// Joined data (0 / empty before the Welcome). Caller's thread.
  uint32_t player_id() const;
  /// The bodies we may push: the Welcome's, then following the TickFrames' spawns (owner = our
  /// player id) and destroys, so a body the server spawns for us on join appears here.
  const std::vector<sim::BodyId>& owned_bodies() const;
  uint16_t tick_rate_hz() const;
  /// The delay our inputs are stamped with: ClientOptions::input_delay_ticks, else the server's.
  uint16_t input_delay_ticks() const;
  /// The local world (lockstep: after the last applied tick; thin: the last snapshot); null
  /// before the join snapshot. Caller's thread only.
  const sim::World* world() const;
  /// The world as of the last confirmed (server-verified) tick: the same as world().
  const sim::World* confirmed_world() const;
  /// Prediction mode: the world ahead of confirmation (null otherwise, or before the join
  /// snapshot). Caller's thread only.
  const sim::World* predicted_world() const;
  /// The server's current tick as estimated by time sync, if there is an estimate.
  std::optional<uint64_t> estimated_server_tick() const;
  /// Counters; safe to call from any thread.
  ClientStats stats() const;
  /// The q-quantile (0 < q <= 1) of the last 1024 round trips; 0 without samples. Any thread.
  std::chrono::nanoseconds rtt_quantile(double q) const;
  /// Why connect() refused, or the last local failure. Caller's thread.
  std::string last_error() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lockstep::client_sdk
