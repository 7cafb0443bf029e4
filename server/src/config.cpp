// Server configuration: checks and the CLI11 options (flags and config file share the names).
#include "lockstep/server/config.h"

#include <algorithm>
#include <map>
#include <string>
#include <thread>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "lockstep/schema/messages.h"
#include "lockstep/schema/tick_schedule.h"

namespace lockstep::server {

const char* late_input_policy_name(LateInputPolicy policy) {
  switch (policy) {
    case LateInputPolicy::apply_next_tick:
      return "apply_next_tick";
    case LateInputPolicy::drop:
      return "drop";
  }
  return "?";
}

std::string server_config_error(const ServerConfig& c) {
  if (!schema::valid_tick_rate(c.tick_rate_hz)) {
    return fmt::format("tick rate {} Hz is outside 1..{}", c.tick_rate_hz, schema::kMaxTickRateHz);
  }
  if (c.input_window_ticks < 2 || c.input_window_ticks > 4096) {
    return fmt::format("input window {} ticks is outside 2..4096", c.input_window_ticks);
  }
  if (c.input_delay_ticks >= c.input_window_ticks || c.input_delay_ticks > 65535) {
    return fmt::format("input delay {} ticks must be below the input window ({} ticks)",
                       c.input_delay_ticks, c.input_window_ticks);
  }
  if (c.ws_port < -1 || c.ws_port > 65535) {
    return fmt::format("WebSocket port {} is outside -1..65535 (-1 = none)", c.ws_port);
  }
  if (c.threads > kMaxThreads) {
    return fmt::format("threads {} is outside 1..{} (0 = one per core)", c.threads, kMaxThreads);
  }
  if (c.max_rooms < 1) return "max rooms must be at least 1";
  if (c.max_game_message_bytes < 1 || c.max_game_message_bytes > schema::kMaxGameMessageBytes) {
    return fmt::format("max game message bytes {} is outside 1..{}", c.max_game_message_bytes,
                       schema::kMaxGameMessageBytes);
  }
  if (c.max_players_per_room < 1 || c.max_players_per_room > 1024) {
    return fmt::format("max players per room {} is outside 1..1024", c.max_players_per_room);
  }
  if (c.max_spectators_per_room > 1024) {
    return fmt::format("max spectators per room {} is over 1024", c.max_spectators_per_room);
  }
  if (c.max_inputs_per_player_per_tick < 1 || c.max_inputs_per_player_per_tick > 1024) {
    return fmt::format("max inputs per player per tick {} is outside 1..1024",
                       c.max_inputs_per_player_per_tick);
  }
  // Every room takes its whole input window at creation: keep that bounded (≤ 160 MiB).
  const uint64_t window_inputs =
      uint64_t{c.input_window_ticks} * c.max_players_per_room * c.max_inputs_per_player_per_tick;
  if (window_inputs > (uint64_t{1} << 22)) {
    return fmt::format(
        "input window {} ticks x {} players x {} inputs per tick = {} buffered "
        "inputs per room, over 4194304",
        c.input_window_ticks, c.max_players_per_room, c.max_inputs_per_player_per_tick,
        window_inputs);
  }
  if (c.max_catch_up_ticks < 1) return "max catch-up ticks must be at least 1";
  if (c.max_schedule_lag_ticks != 0 && c.max_schedule_lag_ticks < c.max_catch_up_ticks) {
    return fmt::format(
        "max schedule lag ({} ticks) must be 0 (auto) or at least max catch-up "
        "ticks ({})",
        c.max_schedule_lag_ticks, c.max_catch_up_ticks);
  }
  if (c.max_snapshot_rate_hz < 1 || c.default_snapshot_rate_hz < 1) {
    return "snapshot rates must be at least 1 Hz";
  }
  if (c.max_connections < 1) return "max connections must be at least 1";
  if (c.hello_timeout.count() < 1) return "hello timeout must be at least 1 ms";
  if (c.used_token_capacity < 1) return "used-token capacity must be at least 1";
  if (c.resync_backoff.count() < 1 || c.resync_max_backoff < c.resync_backoff) {
    return fmt::format(
        "resync backoff must be at least 1 ms and at most the max resync backoff "
        "(got {} ms and {} ms)",
        c.resync_backoff.count(), c.resync_max_backoff.count());
  }
  if (c.read_timeout.count() < 1 || c.flush_timeout.count() < 1) {
    return "read and flush timeouts must be at least 1 ms";
  }
  if (c.empty_room_grace.count() < 0 || c.stats_log_interval.count() < 0 ||
      c.player_leave_grace.count() < 0) {
    return "durations must not be negative";
  }
  if (c.default_room.empty() || c.default_room.size() > 64) {
    return "the default room name must be 1..64 bytes";
  }
  if (c.socket_send_buffer_bytes > (1u << 30)) return "socket send buffer is over 1 GiB";
  if (c.replay_window_seconds > 3600) {
    return fmt::format("replay window {} s is over 3600 s", c.replay_window_seconds);
  }
  if (c.keyframe_interval_ticks < 1 || c.keyframe_interval_ticks > 1'000'000) {
    return fmt::format("keyframe interval {} ticks is outside 1..1000000",
                       c.keyframe_interval_ticks);
  }
  // A window holds about window / interval keyframes of a whole snapshot each: keep it sane.
  const uint64_t window_ticks = uint64_t{c.replay_window_seconds} * c.tick_rate_hz;
  if (window_ticks / c.keyframe_interval_ticks > 1024) {
    return fmt::format(
        "a replay window of {} ticks with a keyframe every {} ticks keeps over 1024 keyframes: "
        "raise --keyframe-interval-ticks",
        window_ticks, c.keyframe_interval_ticks);
  }
  if (c.replay_dump_interval.count() < 0) return "durations must not be negative";
  // Without a directory there are no windows, so a shutdown dump has nothing to write.
  if (c.record_matches && c.replay_dir.empty()) return "--record-matches needs a replay directory";
  if (c.record_max_pending_bytes == 0) return "--record-max-pending-bytes must be at least 1";
  return {};
}

namespace {

// The options in groups, in the order --help lists them.

void add_ms_option(CLI::App& app, const char* name, std::chrono::milliseconds* value,
                   const char* help) {
  app.add_option_function<int64_t>(
         name, [value](int64_t v) { *value = std::chrono::milliseconds(v); }, help)
      ->default_str(std::to_string(value->count()));
}

// Where the server listens and how many connections it takes.
void add_listen_options(CLI::App& app, ServerConfig* config) {
  app.set_config("--config", "", "Read options from a TOML/INI file (keys = long option names)");
  app.add_option("--bind", config->bind_address, "Address to listen on")->capture_default_str();
  app.add_option("--port", config->port, "TCP port (0 = ephemeral)")->capture_default_str();
  app.add_option("--ws-port", config->ws_port,
                 "WebSocket port for browser clients (-1 = none, 0 = ephemeral)")
      ->capture_default_str();
  app.add_option("--ws-allow-origin", config->ws_allowed_origins,
                 "Origin a WebSocket handshake may come from (repeat; none given = any)");
  app.add_option("--max-connections", config->max_connections, "Open connections at most")
      ->capture_default_str();
  app.add_option("--socket-send-buffer-bytes", config->socket_send_buffer_bytes,
                 "SO_SNDBUF of client sockets (0 = OS default)")
      ->capture_default_str();
  app.add_option("--threads", config->threads,
                 "Worker threads for the rooms (1..64, 0 = one per core)")
      ->capture_default_str();
}

// Rooms: scenes, rate, sizes, lifetimes, rules and the schedule.
void add_room_options(CLI::App& app, ServerConfig* config) {
  app.add_option("--scene", config->scene,
                 "Scene of rooms whose Hello names none: a built-in name or a scene file")
      ->capture_default_str();
  app.add_option("--scene-dir", config->scene_dir,
                 "Also serve every *.scene file in DIR, by file stem, to Hellos that name it");
  app.add_option("--default-room", config->default_room, "Room of a Hello without a room name")
      ->capture_default_str();
  app.add_option("--tick-rate", config->tick_rate_hz, "Ticks per second (1..1000)")
      ->capture_default_str();
  app.add_option("--input-delay", config->input_delay_ticks,
                 "Input delay in ticks announced to clients")
      ->capture_default_str();
  app.add_option("--max-rooms", config->max_rooms, "Rooms at most")->capture_default_str();
  app.add_option("--max-players", config->max_players_per_room, "Lockstep players per room at most")
      ->capture_default_str();
  app.add_option("--max-spectators", config->max_spectators_per_room,
                 "Thin clients (spectators) per room at most")
      ->capture_default_str();
  add_ms_option(app, "--empty-room-grace-ms", &config->empty_room_grace,
                "An empty room closes after this long");
  app.add_option("--rules", config->rules,
                 "Game rules of every room: sumo, none, or empty for each scene's 'rules' line");
  add_ms_option(app, "--player-leave-grace-ms", &config->player_leave_grace,
                "A leaving player's bodies are destroyed after this long");
  app.add_option("--max-game-message-bytes", config->max_game_message_bytes,
                 "Bytes per game message for the rules at most")
      ->capture_default_str();
  app.add_option("--max-game-messages-per-s", config->max_game_messages_per_s,
                 "Game messages per second per player at most (0 = no limit)")
      ->capture_default_str();
  app.add_option("--max-catch-up-ticks", config->max_catch_up_ticks,
                 "Ticks run per timer wake at most when behind")
      ->capture_default_str();
  app.add_option("--max-schedule-lag-ticks", config->max_schedule_lag_ticks,
                 "A room further behind its schedule moves the schedule later (0 = a quarter "
                 "of the input window)")
      ->capture_default_str();
}

// Inputs and thin clients' snapshots.
void add_input_options(CLI::App& app, ServerConfig* config) {
  const std::map<std::string, LateInputPolicy> policies = {
      {"apply_next_tick", LateInputPolicy::apply_next_tick}, {"drop", LateInputPolicy::drop}};
  app.add_option("--late-inputs", config->late_input_policy,
                 "Inputs for a tick already stepped: apply_next_tick or drop")
      ->transform(CLI::CheckedTransformer(policies, CLI::ignore_case))
      ->default_str(late_input_policy_name(config->late_input_policy));
  app.add_option("--input-window", config->input_window_ticks, "Future ticks an input may target")
      ->capture_default_str();
  app.add_option("--max-inputs-per-tick", config->max_inputs_per_player_per_tick,
                 "Inputs per player per tick at most")
      ->capture_default_str();
  app.add_option("--max-snapshot-rate", config->max_snapshot_rate_hz,
                 "Snapshots per second granted to thin clients at most")
      ->capture_default_str();
  app.add_option("--default-snapshot-rate", config->default_snapshot_rate_hz,
                 "Snapshot rate of a thin client that asks for 0")
      ->capture_default_str();
}

// Outgoing queues, deadlines and the stats log.
void add_session_options(CLI::App& app, ServerConfig* config) {
  app.add_option("--queue-limit-bytes", config->queue_limit_bytes,
                 "Outgoing queue per client in bytes; over it the client is dropped (0 = auto)")
      ->capture_default_str();
  add_ms_option(app, "--read-timeout-ms", &config->read_timeout,
                "Drop a client that sends nothing for this long");
  add_ms_option(app, "--flush-timeout-ms", &config->flush_timeout,
                "Time a closing connection may take to flush");
  add_ms_option(app, "--stats-interval-ms", &config->stats_log_interval,
                "Log per-room counters this often (0 = never)");
  app.add_option("--summary-closed-rooms", config->summary_closed_rooms,
                 "Closed rooms listed in the exit summary and stats, newest kept (about 2 KB "
                 "each, more with many clients)")
      ->capture_default_str();
}

// Replay windows, dumps and match recordings.
void add_replay_options(CLI::App& app, ServerConfig* config) {
  app.add_option("--replay-dir", config->replay_dir,
                 "Directory of desync dumps and match recordings (created when needed)")
      ->capture_default_str();
  app.add_option("--replay-window-seconds", config->replay_window_seconds,
                 "Seconds of past every room keeps for desync dumps (0 = none)")
      ->capture_default_str();
  app.add_option("--keyframe-interval-ticks", config->keyframe_interval_ticks,
                 "A world snapshot every N ticks in replay windows and recordings")
      ->capture_default_str();
  add_ms_option(app, "--replay-dump-interval-ms", &config->replay_dump_interval,
                "At most one desync dump per room this often");
  app.add_flag("--dump-replays-on-shutdown,!--no-dump-replays-on-shutdown",
               config->dump_replays_on_shutdown,
               "Write every room's replay window on a graceful shutdown (default on)");
  app.add_flag("--record-matches", config->record_matches,
               "Record every room's whole match to the replay directory");
  app.add_option("--record-max-pending-bytes", config->record_max_pending_bytes,
                 "A room gives its match recording up when this many bytes wait for the file "
                 "writer")
      ->capture_default_str();
}

// Join tokens and per-connection and per-address limits.
void add_admission_options(CLI::App& app, ServerConfig* config) {
  app.add_option("--token-key-file", config->token_key_file,
                 "Key (64 hex digits) join tokens are signed with; without it the server is open");
  app.add_option("--max-token-ttl-s", config->max_token_ttl_s,
                 "Refuse tokens that expire further ahead than this")
      ->capture_default_str();
  app.add_option("--used-token-capacity", config->used_token_capacity,
                 "Used tokens remembered until they expire, at most")
      ->capture_default_str();
  app.add_option("--max-welcome-level-bytes", config->max_welcome_level_bytes,
                 "Level geometry up to this size rides in the Welcome; above, only its digest "
                 "(clients load their own copy)")
      ->capture_default_str();
  app.add_option("--max-frames-per-s", config->max_frames_per_s,
                 "Frames a connection may send per second (0 = no limit)")
      ->capture_default_str();
  app.add_option("--max-bytes-per-s", config->max_bytes_per_s,
                 "Bytes a connection may send per second (0 = no limit)")
      ->capture_default_str();
  app.add_option("--resync-burst", config->resync_burst,
                 "Resyncs a client gets at once before the backoff starts")
      ->capture_default_str();
  app.add_option_function<int64_t>(
         "--resync-backoff-ms",
         [config](int64_t v) { config->resync_backoff = std::chrono::milliseconds(v); },
         "Wait between resyncs after the burst, doubled per resync")
      ->default_str(std::to_string(config->resync_backoff.count()));
  app.add_option_function<int64_t>(
         "--resync-max-backoff-ms",
         [config](int64_t v) { config->resync_max_backoff = std::chrono::milliseconds(v); },
         "Longest wait between two resyncs of one client")
      ->default_str(std::to_string(config->resync_max_backoff.count()));
  app.add_option("--max-resync-requests-per-minute", config->max_resync_requests_per_minute,
                 "ResyncRequests a connection may send per minute; over it, closed (0 = no limit)")
      ->capture_default_str();
  app.add_option("--max-connections-per-ip", config->max_connections_per_ip,
                 "Open connections per remote address (0 = no limit)")
      ->capture_default_str();
  app.add_option("--max-rooms-per-ip-per-minute", config->max_rooms_per_ip_per_minute,
                 "Rooms a remote address may create per minute (0 = no limit)")
      ->capture_default_str();
  add_ms_option(app, "--hello-timeout-ms", &config->hello_timeout,
                "Close a connection that sends no Hello for this long");
}

}  // namespace

void add_server_options(CLI::App& app, ServerConfig* config) {
  add_listen_options(app, config);
  add_room_options(app, config);
  add_input_options(app, config);
  add_session_options(app, config);
  add_replay_options(app, config);
  add_admission_options(app, config);
}

}  // namespace lockstep::server

namespace lockstep::server {

uint32_t effective_schedule_lag_ticks(const ServerConfig& config) {
  if (config.max_schedule_lag_ticks != 0) return config.max_schedule_lag_ticks;
  return std::max(config.max_catch_up_ticks, config.input_window_ticks / 4);
}

uint32_t effective_threads(const ServerConfig& config) {
  if (config.threads != 0) return std::min(config.threads, kMaxThreads);
  return std::clamp<uint32_t>(std::thread::hardware_concurrency(), 1, kMaxThreads);
}

}  // namespace lockstep::server
