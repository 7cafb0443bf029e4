// The server's shared state, owned by Server and reached by rooms and sessions.
//
// Threads (docs/design-decisions.md, "Service"): the control thread (the one in Server::run(),
// running `io`) owns the acceptor, the signals, the Hello handling, `rooms`, `sessions`, `guard`
// and the stats timers; every field below is touched only there unless marked otherwise. Rooms
// and their joined sessions live on one worker each (`workers`; with one thread the worker is
// `io` itself). Worker threads reach the control thread only by asio::dispatch/post, and bump
// the counters marked "any thread", which are relaxed atomics.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <asio/awaitable.hpp>
#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/signal_set.hpp>
#include <asio/steady_timer.hpp>

#include "file_writer.h"
#include "guard.h"
#include "lockstep/schema/messages.h"
#include "lockstep/server/config.h"
#include "lockstep/server/server.h"
#include "lockstep/sim/scene.h"

namespace lockstep::server {

class Room;
class Session;
class WebSocketListener;

/// A scene the server serves, checked at start-up; immutable and shared by its rooms.
struct ServedScene {
  sim::Scene scene;    // scene.name: the name Hellos ask for and Welcomes give
  std::string source;  // "built-in" or the file it was read from
  bool builtin = false;
  uint64_t world_def_fingerprint = 0;
  uint64_t max_snapshot_frame_bytes = 0;  // its largest Snapshot frame
  std::string rules;  // the rules its rooms run (config.rules, else the scene's), "" = none
  // Its level (sim::level_digest, 0: none), and whether Welcomes carry the geometry (at most
  // config.max_welcome_level_bytes) or only the digest.
  uint64_t level_digest = 0;
  bool level_in_welcome = false;
};

/// A thread the rooms run on. With one thread in all, the only worker runs on the control
/// thread's io_context and has no thread of its own.
struct Worker {
  asio::io_context* io = nullptr;            // own_io, or the control thread's
  std::unique_ptr<asio::io_context> own_io;  // null for the control thread's worker
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  std::thread thread;
  uint32_t rooms = 0;                // control thread: live rooms placed here
  std::atomic<uint64_t> busy_ns{0};  // any thread (its rooms): time spent ticking
};

/// Bumps a counter read by another thread; relaxed (a count, not a synchronisation).
inline void bump(std::atomic<uint64_t>& counter, uint64_t n = 1) {
  counter.fetch_add(n, std::memory_order_relaxed);
}

struct ServerCore {
  using Clock = std::chrono::steady_clock;

  explicit ServerCore(const ServerConfig& config_in);
  ~ServerCore();

  ServerConfig config;
  asio::io_context io{1};  // the control thread
  asio::ip::tcp::acceptor acceptor{io};
  std::unique_ptr<WebSocketListener> websocket;  // config.ws_port >= 0
  asio::signal_set signals{io};
  asio::steady_timer shutdown_timer{io};
  asio::steady_timer stats_timer{io};
  asio::steady_timer publish_timer{io};
  std::chrono::milliseconds publish_interval{0};
  std::function<void(const ServerStats&)> publish;  // Server::set_stats_publisher

  // The scenes served, by the name a Hello gives: the default one (config.scene) and every
  // file of config.scene_dir. Read, parsed and built once at start(); rooms share them.
  std::map<std::string, std::shared_ptr<const ServedScene>> scenes;
  std::shared_ptr<const ServedScene> default_scene;
  uint64_t max_snapshot_frame_bytes = 0;  // over every served scene
  uint64_t queue_limit_bytes = 0;         // effective (auto resolved)
  uint16_t port = 0;

  std::vector<std::unique_ptr<Worker>> workers;  // made by Server::start()
  FileWriter file_writer{kFileWriterQueueJobs};

  std::map<std::string, std::shared_ptr<Room>> rooms;
  // Rooms closing on their worker whose name a new room has taken (find_or_create_room), until
  // their room_closed arrives; listed in stats like open rooms meanwhile.
  std::map<const Room*, std::shared_ptr<Room>> closing_rooms;
  std::map<uint64_t, std::shared_ptr<Session>> sessions;
  Guard guard;                         // tokens, per-address limits, refusal counters
  std::deque<RoomStats> closed_rooms;  // the newest config.summary_closed_rooms
  RoomStats closed_rooms_total;        // every closed room's counters added up
  uint64_t rooms_closed = 0;
  uint64_t next_session_id = 1;
  bool started = false;
  bool shutting_down = false;
  std::atomic<bool> running{false};
  Clock::time_point start_time = Clock::now();
  DesyncHook desync_hook;
  RoomCloseHook room_close_hook;
  RulesFactory rules_factory;

  // Counters.
  uint64_t connections_accepted = 0;
  uint64_t connections_refused = 0;
  // Any thread (sessions and rooms bump them where they run).
  std::atomic<uint64_t> protocol_errors{0};
  std::atomic<uint64_t> input_errors{0};
  std::atomic<uint64_t> slow_consumer_disconnects{0};
  std::atomic<uint64_t> timeouts{0};
  std::atomic<uint64_t> max_session_queued_bytes{0};
  std::atomic<uint64_t> desync_reports{0};
  std::array<std::atomic<uint64_t>, kErrorCodeCount> errors_by_code{};

  static constexpr size_t kFileWriterQueueJobs = 256;

  /// Makes the workers (threads not started yet).
  void make_workers(uint32_t count);
  /// Starts the worker threads (none with one worker).
  void start_workers();
  /// Lets the workers run dry and joins them.
  void join_workers();
  /// The worker a new room goes to: fewest rooms, ties to the lowest index.
  size_t pick_worker() const;
  asio::awaitable<void> accept_loop();
  /// Starts a session for an accepted socket (or closes it over max_connections or
  /// max_connections_per_ip, returning false). `remote` names the peer; "" = the socket's.
  bool admit(asio::ip::tcp::socket socket, std::string remote = {});
  asio::awaitable<void> stats_loop();
  asio::awaitable<void> publish_loop();
  /// Stop accepting, Disconnect every session, stop the rooms; run() returns once every
  /// session has flushed or flush_timeout has passed.
  void begin_shutdown();
  /// The room named `name`, created on first use with `scene_name` ("" = the default scene),
  /// with a join reserved (Room::reserve_join; the caller releases it once joined or given up);
  /// null with *code / *reason when refused (unknown_scene, scene_mismatch, too_many_rooms…).
  /// A room of that name that is closing on its worker is set aside in closing_rooms and a new
  /// one takes the name.
  std::shared_ptr<Room> find_or_create_room(const std::string& name, const std::string& scene_name,
                                            schema::ErrorCode* code, std::string* reason);
  /// The served scene names, comma-separated (cut short past a few hundred bytes).
  std::string served_scene_list() const;
  /// A room stopped itself (empty past its grace period): forget it (from rooms or
  /// closing_rooms) and keep `summary`. On the control thread (rooms on workers dispatch it
  /// there); `room` only identifies it.
  void room_closed(const Room* room, RoomStats summary);
  /// A session closed its socket: forget it. On the control thread.
  void on_session_closed(uint64_t id);
  /// The same from any thread.
  void session_closed(uint64_t id);
  /// Any thread.
  void note_queued_bytes(uint64_t bytes) {
    uint64_t seen = max_session_queued_bytes.load(std::memory_order_relaxed);
    while (bytes > seen && !max_session_queued_bytes.compare_exchange_weak(
                               seen, bytes, std::memory_order_relaxed)) {
    }
  }
  ServerStats stats() const;
};

}  // namespace lockstep::server
