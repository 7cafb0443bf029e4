// lockstep-server configuration: one plain struct with defaults, a validity check, and the
// command-line / config-file options that fill it (CLI11; a config file is TOML or INI whose
// keys are the long option names, e.g. `tick-rate = 60`).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace lockstep::server {

/// What happens to an input whose target tick has already been stepped when it arrives.
enum class LateInputPolicy : uint8_t {
  apply_next_tick = 0,  // applied at the next tick to be stepped (counted as late)
  drop = 1,             // rejected with Error{input_late} (counted as late)
};

/// "apply_next_tick" / "drop".
const char* late_input_policy_name(LateInputPolicy policy);

struct ServerConfig {
  // ---- network ----------------------------------------------------------------------------
  std::string bind_address = "0.0.0.0";
  uint16_t port = 7777;  // 0 = an ephemeral port (Server::port() reports it)
  /// The WebSocket listener for browser clients (docs/web.md): the same frames, one per binary
  /// message, on the same sessions as TCP. -1 = none, 0 = an ephemeral port (Server::ws_port()).
  int32_t ws_port = -1;
  /// Origins a WebSocket handshake may come from (exact match, e.g. "https://game.example");
  /// empty = any Origin or none. A browser always sends one; other clients usually do not.
  std::vector<std::string> ws_allowed_origins;
  uint32_t max_connections = 1024;
  /// SO_SNDBUF of accepted sockets; 0 keeps the OS default (auto-tuned). Tests make it small so
  /// a client that stops reading fills our queue quickly.
  uint32_t socket_send_buffer_bytes = 0;
  /// Worker threads the rooms run on (1..64; 0 = one per core). Each room lives on one worker
  /// for its whole life; accepting, Hellos and stats stay on the thread that calls run(). With
  /// 1 everything runs on that one thread (docs/design-decisions.md, "Service").
  uint32_t threads = 0;

  // ---- rooms ------------------------------------------------------------------------------
  /// The scene of a room whose creating Hello names none: a built-in scene
  /// (sim::builtin_scene_names()) or the path of a scene file (docs/scene-format.md), served
  /// under the file's stem.
  std::string scene = "inputs";
  /// Every `*.scene` file in this folder is served too, by its stem: a Hello that creates a room
  /// may name one (Hello.scene). Read and checked at start(); "" = none.
  std::string scene_dir;
  std::string default_room = "default";  // room of a Hello with an empty room name
  uint32_t tick_rate_hz = 60;            // 1..schema::kMaxTickRateHz
  uint32_t input_delay_ticks = 2;        // announced in Welcome; < input_window_ticks
  uint32_t max_rooms = 128;
  uint32_t max_players_per_room = 4;     // lockstep clients, player ids 1..N
  uint32_t max_spectators_per_room = 8;  // thin clients (player id 0, no inputs)
  /// An empty room keeps ticking this long for a reconnect, then closes.
  std::chrono::milliseconds empty_room_grace{10'000};
  /// Ticks one wake of a room's timer may run when behind (TickClockConfig::max_catch_up_ticks).
  uint32_t max_catch_up_ticks = 4;
  /// A room more than this many ticks behind its schedule (it cannot keep up: the machine is
  /// overloaded) moves its schedule later instead of falling further behind, and tells its
  /// clients in the Pongs (tick_clock.h, "Slipping"). 0 = auto: a quarter of the input window,
  /// at least max_catch_up_ticks, so that a client stamping from the schedule stays within the
  /// window the room accepts.
  uint32_t max_schedule_lag_ticks = 0;
  /// Game rules every room runs (room_rules.h): a built-in name ("sumo"), "" = each scene's own
  /// `rules` line, "none" = no rules even where a scene names some.
  std::string rules;
  /// In a scene with a `player` line, a player who leaves keeps its bodies this long (rounded up
  /// to whole ticks) before the room destroys them; a player who joins with its id before then
  /// takes them over.
  std::chrono::milliseconds player_leave_grace{2'000};
  /// Game messages (clients' small messages for the rules, RoomRules::on_message): bytes per
  /// message at most (1..schema::kMaxGameMessageBytes), and messages per second per player at
  /// most (a token bucket counted in ticks, one second deep; 0 = no limit). A message over
  /// either is refused with a message_rejected Error; the player stays connected.
  uint32_t max_game_message_bytes = 256;
  uint32_t max_game_messages_per_s = 10;

  // ---- inputs -----------------------------------------------------------------------------
  LateInputPolicy late_input_policy = LateInputPolicy::apply_next_tick;
  /// Future ticks an input may target: next tick .. next tick + window − 1.
  uint32_t input_window_ticks = 64;
  uint32_t max_inputs_per_player_per_tick = 16;

  // ---- thin clients -------------------------------------------------------------------------
  uint32_t max_snapshot_rate_hz = 20;  // granted rate = min(asked, this, tick rate)
  /// A scene's level geometry (meshes, heightfields) up to this many bytes rides in the Welcome;
  /// a bigger one is sent as its digest alone, and clients load the level from their own copy
  /// of the scene's files (ClientOptions::scene_file). Welcomes are one frame: at most the frame
  /// cap less 1 MiB is ever carried.
  uint64_t max_welcome_level_bytes = uint64_t{4} << 20;
  uint32_t default_snapshot_rate_hz = 10;  // when a thin Hello asks for 0

  // ---- sessions ---------------------------------------------------------------------------
  /// Bytes a session may have queued for sending (in flight included); a client whose queue
  /// would grow past it is disconnected with slow_consumer. 0 = auto: max(1 MiB, the scene's
  /// largest snapshot frame + 64 KiB). An explicit value must hold the largest snapshot frame.
  uint64_t queue_limit_bytes = 0;
  /// A client must send something (Pings: the SDK sends one every 250 ms) at least this often;
  /// a write that makes no progress for this long also ends the session.
  std::chrono::milliseconds read_timeout{10'000};
  /// How long a closing session (fatal Error, shutdown) may take to flush its queue.
  std::chrono::milliseconds flush_timeout{1'000};

  // ---- replays (docs/server.md "Replays") ----------------------------------------------------
  /// Where desync dumps, shutdown dumps and whole-match recordings go (created when first
  /// needed); empty = no replay files (and no replay windows).
  std::string replay_dir = "replays";
  /// Every room keeps this much of its past (ticks, inputs, hashes, keyframes) in memory fixed at
  /// room creation, and writes it to replay_dir on a DesyncReport; 0 = no replay window.
  uint32_t replay_window_seconds = 10;
  /// A keyframe (world snapshot) every N ticks, in windows and whole-match recordings.
  uint32_t keyframe_interval_ticks = 120;
  /// At most one desync dump per room this often; reports in between are counted, not written
  /// (a hostile client must not make the server write files in a loop).
  std::chrono::milliseconds replay_dump_interval{10'000};
  /// On a graceful shutdown every room also writes its window.
  bool dump_replays_on_shutdown = true;
  /// Records every room's whole match to replay_dir: encoded on the room's thread, handed to the
  /// file-writing thread in chunks of a second of ticks or 64 KiB (so a kill -9 loses about the
  /// last second).
  bool record_matches = false;
  /// When the file writer falls behind, a room keeps its recording's chunk and retries; past
  /// this many bytes waiting it gives the recording up (warning log, counted in
  /// lockstep_file_writes_total{result="abandoned"}, the temporary file removed) and the match
  /// goes on. Memory per recording room is bounded by it.
  uint64_t record_max_pending_bytes = 8 * 1024 * 1024;

  // ---- hostile clients (docs/security.md) ---------------------------------------------------
  /// A file of 64 hex digits: the key join tokens are signed with. Empty = no tokens asked for
  /// (the server is open; it says so at start-up).
  std::string token_key_file;
  /// A token expiring further ahead than this is refused (the used-token memory stays short).
  uint32_t max_token_ttl_s = 3600;
  /// Used tokens remembered (until they expire) at most; when full, new tokens are refused.
  uint32_t used_token_capacity = 100'000;
  /// Per connection, over any one second (a budget refilled continuously, one second deep):
  /// frames and bytes a client may send; over either → Error and close. 0 = no limit.
  uint32_t max_frames_per_s = 1'000;
  uint64_t max_bytes_per_s = 1'048'576;
  /// Resyncs (a full snapshot for a ResyncRequest) per connection (server/src/resync_budget.h):
  /// the first resync_burst at the next tick, then each resync_backoff after the one before,
  /// doubled per resync up to resync_max_backoff (requests in between wait and are folded into
  /// one); a minute without a resync starts over. Their snapshots count against
  /// max_bytes_per_s. More than max_resync_requests_per_minute requests (a budget refilled
  /// continuously, one minute deep) → Error and close. 0 = no limit on requests.
  uint32_t resync_burst = 2;
  std::chrono::milliseconds resync_backoff{1'000};
  std::chrono::milliseconds resync_max_backoff{16'000};
  uint32_t max_resync_requests_per_minute = 12;
  /// Open connections per remote address at most (0 = no limit); more are closed at accept.
  uint32_t max_connections_per_ip = 256;
  /// Rooms a remote address may create per minute at most (0 = no limit).
  uint32_t max_rooms_per_ip_per_minute = 60;
  /// A connection that has not sent a Hello after this long is closed (apart from read_timeout).
  std::chrono::milliseconds hello_timeout{5'000};

  // ---- operations -------------------------------------------------------------------------
  /// Per-room counters are logged this often (0 = never).
  std::chrono::milliseconds stats_log_interval{10'000};
  /// The newest closed rooms kept for stats (the `summary` line at exit, the stats JSON); older
  /// ones leave the list, their counters stay in the totals. Each costs its RoomStats, about
  /// 2 KB plus about 200 B per client it remembers (at most 64), and is copied into every
  /// stats snapshot. 0 = none.
  uint32_t summary_closed_rooms = 1024;
  /// SIGINT/SIGTERM start a graceful shutdown inside run() (the app sets it; tests do not).
  bool handle_signals = false;
};

/// Empty when `config` is usable, else one line saying what is wrong. Does not look at the
/// scene's sizes (Server::start does, once the scene is built).
std::string server_config_error(const ServerConfig& config);
/// max_schedule_lag_ticks with 0 resolved.
uint32_t effective_schedule_lag_ticks(const ServerConfig& config);
/// Worker threads at most (ServerConfig::threads).
inline constexpr uint32_t kMaxThreads = 64;
/// ServerConfig::threads with 0 resolved: one per core (at least 1, at most kMaxThreads).
uint32_t effective_threads(const ServerConfig& config);

/// Adds the server's options to `app`, bound to the fields of *config (which must outlive the
/// parse), plus `--config FILE` (TOML/INI, keys = long option names).
void add_server_options(CLI::App& app, ServerConfig* config);

}  // namespace lockstep::server
