// lockstep-server as a library: many rooms in one process, on ServerConfig::threads workers.
//
//   Server server(config);
//   std::string error;
//   if (!server.start(&error)) die(error);   // builds the scene once, binds, listens
//   server.run();                            // until request_shutdown() / SIGINT / SIGTERM
//   std::puts(("summary " + summary_json(server.stats())).c_str());
//
// The acceptor, Hellos, the room directory and the stats run on the thread that calls run() (the
// control thread); each room, with its tick timer and its members' sockets, runs on one worker
// thread for its whole life (with threads = 1 the worker is the control thread itself). No lock
// on the tick path, and a room's step never waits for a socket or a disk. Only
// request_shutdown() and collect_stats() may be called from other threads. The wire protocol
// and its tick numbering are described in docs/server.md; the threading model in
// docs/design-decisions.md ("Service").
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lockstep/schema/messages.h"
#include "lockstep/server/config.h"
#include "lockstep/server/room_rules.h"
#include "lockstep/server/tick_clock.h"

namespace lockstep::server {

using schema::kErrorCodeCount;  // one counter per schema::ErrorCode

/// One client of a room, for summaries (live clients and up to 64 that left).
struct ClientSummary {
  uint32_t player_id = 0;  // 0 for a thin client (spectator)
  std::string name;
  schema::ClientMode mode = schema::ClientMode::lockstep;
  bool connected = false;
  double connected_s = 0;
  uint64_t bytes_in = 0;  // wire bytes, frame headers included
  uint64_t bytes_out = 0;
  uint64_t frames_in = 0;
  uint64_t frames_out = 0;
  uint64_t max_queued_bytes = 0;  // high-water mark of its outgoing queue
  uint64_t errors = 0;            // Error frames sent to it
  std::string end_reason;         // why it left ("" while connected)
};

struct RoomStats {
  std::string name;
  std::string scene;    // the scene it runs
  uint32_t thread = 0;  // the worker it runs on (ServerStats::thread_list)
  bool open = true;
  uint64_t tick = 0;          // the world's tick (steps since the room opened)
  uint64_t late_ticks = 0;    // started more than 2 ms after their due time
  uint64_t capped_wakes = 0;  // timer wakes that hit max_catch_up_ticks
  // Times the room, more than max_schedule_lag_ticks behind, moved its schedule later (it could
  // not keep up), and by how much in all: the room ran that much slower than its tick rate.
  uint64_t schedule_slips = 0;
  std::chrono::nanoseconds schedule_slipped{0};
  std::chrono::nanoseconds lateness_p50{0};
  std::chrono::nanoseconds lateness_p99{0};
  std::chrono::nanoseconds lateness_max{0};
  LatenessHistogram lateness;                 // every tick's lateness (for metrics)
  std::chrono::nanoseconds step_time_max{0};  // longest world step
  uint64_t step_time_total_ns = 0;
  // The same steps in the room thread's CPU time (not wall time): what they cost the core,
  // without the time the thread waited for it on a busy machine. 0 where the OS has no
  // per-thread CPU clock.
  uint64_t step_cpu_total_ns = 0;
  uint64_t inputs_accepted = 0;  // applied by the world
  uint64_t inputs_rejected = 0;  // refused at arrival or by the world
  uint64_t inputs_late = 0;      // arrived after their target tick (applied or dropped)
  uint64_t inputs_late_dropped = 0;
  // Repeats of an input already accepted (same player and sequence, another InputFrame): dropped.
  uint64_t inputs_duplicate = 0;
  // Stamped beyond the input window counted from the room's next tick, but within it counted
  // from where the schedule is: the room was behind (an overloaded machine), not the client
  // early. Applied at the window's last tick instead of refused.
  uint64_t inputs_behind_schedule = 0;
  uint64_t bytes_in = 0;
  uint64_t bytes_out = 0;
  uint32_t clients = 0;  // connected now
  uint32_t clients_peak = 0;
  uint64_t clients_joined = 0;
  uint64_t snapshots_sent = 0;
  uint64_t desync_reports = 0;
  uint64_t protocol_errors = 0;  // fatal Errors sent to its members
  uint64_t input_errors = 0;     // non-fatal Errors sent to its members
  uint64_t slow_consumers = 0;
  uint64_t commands_applied = 0;  // commands (joins' spawns, leaves' destroys, rules') applied
  uint64_t commands_refused = 0;  // over the tick's command capacity, or refused by the world
  uint64_t commands_failed = 0;   // queued, then failed when applied (e.g. no free body slot)
  uint64_t game_messages_delivered = 0;  // clients' game messages the rules were given
  uint64_t game_messages_oversize = 0;   // refused: over max_game_message_bytes (or empty)
  uint64_t game_messages_over_rate = 0;  // refused: over max_game_messages_per_s
  uint64_t game_messages_other = 0;      // refused: from a spectator
  std::vector<ClientSummary> client_list;
};

/// Refusals of hostile or unauthorised clients (docs/security.md).
inline constexpr size_t kTokenRefusalReasons = 9;
struct AdmissionStats {
  /// Hellos by token check result, indexed by auth::TokenError: [0] accepted, then missing,
  /// malformed, bad_signature, expired, too_long_lived, wrong_room, replayed, store_full.
  std::array<uint64_t, kTokenRefusalReasons> token_refusals{};
  uint64_t refused_per_ip_connections = 0;  // over max_connections_per_ip (closed at accept)
  uint64_t refused_room_rate = 0;           // over max_rooms_per_ip_per_minute
  uint64_t over_frame_rate = 0;             // closed: over max_frames_per_s
  uint64_t over_byte_rate = 0;              // closed: over max_bytes_per_s
  uint64_t over_resync_budget = 0;          // closed: over max_resync_requests_per_minute
  uint64_t hello_timeouts = 0;              // closed: no Hello within hello_timeout
};

/// One worker thread's load.
struct ThreadStats {
  uint32_t rooms = 0;     // live rooms placed on it
  uint32_t clients = 0;   // their connected clients
  double busy_s = 0;      // time spent running its rooms' ticks since start
  double busy_ratio = 0;  // busy_s / uptime
};

struct ServerStats {
  uint16_t port = 0;
  double uptime_s = 0;
  uint64_t connections_accepted = 0;
  uint64_t connections_refused = 0;  // over max_connections
  uint32_t sessions_open = 0;
  uint64_t protocol_errors = 0;
  uint64_t input_errors = 0;
  uint64_t slow_consumer_disconnects = 0;
  uint64_t timeouts = 0;
  /// High-water mark of any session's outgoing queue (never above the queue limit).
  uint64_t max_session_queued_bytes = 0;
  uint64_t queue_limit_bytes = 0;  // the effective limit
  uint64_t desync_reports = 0;
  std::array<uint64_t, kErrorCodeCount> errors_by_code{};  // Error frames sent, by code
  AdmissionStats admission;
  // Live rooms (open or closing), then the newest ServerConfig::summary_closed_rooms closed ones
  // (oldest first).
  std::vector<RoomStats> rooms;
  size_t live_rooms = 0;      // rooms[0, live_rooms) are the server's (open or stopping)
  bool accepting = false;     // listening and not shutting down
  uint64_t rooms_closed = 0;  // since start
  /// Every closed room's counters added up (add_room_counters), however many have closed: with
  /// the open rooms, monotonic totals for metrics.
  RoomStats closed_rooms_total;
  uint32_t threads = 0;                  // worker threads (ServerConfig::threads resolved)
  std::vector<ThreadStats> thread_list;  // one per worker
  // Replay files handed to the file-writing thread: written, failed, dropped (queue full), and
  // match recordings abandoned by their room (the writer fell behind; match_recorder.h).
  uint64_t file_writes = 0;
  uint64_t file_writes_failed = 0;
  uint64_t file_writes_dropped = 0;
  uint64_t file_writes_abandoned = 0;
};

/// Adds `from`'s counters (ticks, late ticks, lateness histogram, inputs, bytes, desyncs,
/// errors, commands, step time) into *into; gauges (clients) and names are left alone.
void add_room_counters(RoomStats* into, const RoomStats& from);

/// One JSON object (one line): the rooms with ticks, late ticks, lateness p50/p99/max in µs,
/// inputs, bytes, and per-client bytes out (total and per second).
std::string summary_json(const ServerStats& stats);
/// One human-readable line per room, for the log.
std::string room_summary_line(const RoomStats& room);

/// A client reported that its hash differs from the server's.
struct DesyncEvent {
  std::string room;
  uint32_t player_id = 0;
  std::string player_name;
  schema::DesyncReport report;
  uint64_t room_tick = 0;  // the room's tick when the report arrived
};
/// Called on the room's thread (a worker: with threads > 1 several may call it at once) for
/// every DesyncReport, after the room has handed its replay window to the file writer (or,
/// within its dump interval, declined to).
using DesyncHook = std::function<void(const DesyncEvent&)>;

/// Makes the rules named `name` (ServerConfig::rules or a scene's `rules` line) for a room
/// running `scene`; null and *error when it cannot. The default is make_builtin_rules.
using RulesFactory = std::function<std::unique_ptr<RoomRules>(
    const std::string& name, const sim::Scene& scene, std::string* error)>;

/// Called on a room's own thread when the room has decided to close (empty past its grace), with
/// `report`, which tells the control thread (rooms, summary, metrics). Without a hook `report`
/// runs at once; a hook may run it later, from any thread, exactly once (tests use that to hold a
/// room in the state "closing on its worker, not yet forgotten by the control thread").
using RoomCloseHook = std::function<void(const std::string& room, std::function<void()> report)>;

struct ServerCore;

class Server final {
 public:
  explicit Server(const ServerConfig& config);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  /// Checks the config, builds the scene once (name, sizes), binds and listens. False (and
  /// *error set) on failure; call once.
  bool start(std::string* error);
  /// The bound port (the ephemeral one when configured with port 0); 0 before start().
  uint16_t port() const;
  /// The WebSocket port after start() (0 when ServerConfig::ws_port is -1).
  uint16_t ws_port() const;
  /// Serves on the calling thread until a shutdown completes: stop accepting, Disconnect
  /// {server_shutdown} to every session, flush (bounded by flush_timeout), stop the rooms.
  void run();
  /// Starts the graceful shutdown; thread-safe, idempotent.
  void request_shutdown();
  /// Counters, gathered on the server's thread; thread-safe. Nothing when the server thread
  /// does not answer within `timeout`. While run() is not running it reads them directly.
  std::optional<ServerStats> collect_stats(std::chrono::milliseconds timeout) const;
  /// Counters; only on the server's thread or while run() is not running.
  ServerStats stats() const;
  /// Sets the desync hook; before run().
  void set_desync_hook(DesyncHook hook);
  /// Sets the room close hook; before run().
  void set_room_close_hook(RoomCloseHook hook);
  /// Replaces the built-in rules with the embedding application's own; before start() (which
  /// makes each served scene's rules once to check them).
  void set_rules_factory(RulesFactory factory);
  /// Calls `publish` on the server's thread with fresh counters every `interval` while run()
  /// runs, and once more when the shutdown starts; for metrics and health endpoints served from
  /// another thread, which read the last published copy instead of reaching into the server.
  /// Before run().
  void set_stats_publisher(std::chrono::milliseconds interval,
                           std::function<void(const ServerStats&)> publish);
  const ServerConfig& config() const;

 private:
  std::unique_ptr<ServerCore> core_;
};

}  // namespace lockstep::server
