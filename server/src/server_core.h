// The server's shared state, owned by Server and reached by rooms and sessions. Everything here
// is touched only on the io_context's one thread (except `running`).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>

#include <asio/awaitable.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/signal_set.hpp>
#include <asio/steady_timer.hpp>

#include "guard.h"
#include "lockstep/schema/messages.h"
#include "lockstep/server/config.h"
#include "lockstep/server/server.h"
#include "lockstep/sim/scene.h"

namespace lockstep::server {

class Room;
class Session;

/// A scene the server serves, checked at start-up; immutable and shared by its rooms.
struct ServedScene {
  sim::Scene scene;    // scene.name: the name Hellos ask for and Welcomes give
  std::string source;  // "built-in" or the file it was read from
  bool builtin = false;
  uint64_t world_def_fingerprint = 0;
  uint64_t max_snapshot_frame_bytes = 0;  // its largest Snapshot frame
  std::string rules;  // the rules its rooms run (config.rules, else the scene's), "" = none
};

struct ServerCore {
  using Clock = std::chrono::steady_clock;

  explicit ServerCore(const ServerConfig& config_in);

  ServerConfig config;
  asio::io_context io{1};  // one thread
  asio::ip::tcp::acceptor acceptor{io};
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

  std::map<std::string, std::shared_ptr<Room>> rooms;
  std::map<uint64_t, std::shared_ptr<Session>> sessions;
  Guard guard;                         // tokens, per-address limits, refusal counters
  std::deque<RoomStats> closed_rooms;  // at most kMaxClosedRooms
  RoomStats closed_rooms_total;        // every closed room's counters added up
  uint64_t rooms_closed = 0;
  uint64_t next_session_id = 1;
  bool started = false;
  bool shutting_down = false;
  std::atomic<bool> running{false};
  Clock::time_point start_time = Clock::now();
  DesyncHook desync_hook;
  RulesFactory rules_factory;

  // Counters.
  uint64_t connections_accepted = 0;
  uint64_t connections_refused = 0;
  uint64_t protocol_errors = 0;
  uint64_t input_errors = 0;
  uint64_t slow_consumer_disconnects = 0;
  uint64_t timeouts = 0;
  uint64_t max_session_queued_bytes = 0;
  uint64_t desync_reports = 0;
  std::array<uint64_t, kErrorCodeCount> errors_by_code{};

  static constexpr size_t kMaxClosedRooms = 256;

  asio::awaitable<void> accept_loop();
  /// Starts a session for an accepted socket (or closes it over max_connections).
  void admit(asio::ip::tcp::socket socket);
  asio::awaitable<void> stats_loop();
  asio::awaitable<void> publish_loop();
  /// Stop accepting, Disconnect every session, stop the rooms; run() returns once every
  /// session has flushed or flush_timeout has passed.
  void begin_shutdown();
  /// The room named `name`, created on first use with `scene_name` ("" = the default scene);
  /// null with *code / *reason when refused (unknown_scene, scene_mismatch, too_many_rooms…).
  std::shared_ptr<Room> find_or_create_room(const std::string& name, const std::string& scene_name,
                                            schema::ErrorCode* code, std::string* reason);
  /// The served scene names, comma-separated (cut short past a few hundred bytes).
  std::string served_scene_list() const;
  /// Closes an empty room (after its grace period) and keeps its summary.
  void close_room(const std::string& name);
  /// A session closed its socket: forget it.
  void on_session_closed(uint64_t id);
  void note_queued_bytes(uint64_t bytes) {
    if (bytes > max_session_queued_bytes) max_session_queued_bytes = bytes;
  }
  ServerStats stats() const;
};

}  // namespace lockstep::server
