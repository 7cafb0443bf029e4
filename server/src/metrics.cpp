// Metrics: room counters added up, the Prometheus text exposition, per-thread CPU time, and the
// operations options.
#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "lockstep/auth/join_token.h"
#include "lockstep/server/ops.h"

namespace lockstep::server {

void add_room_counters(RoomStats* into, const RoomStats& from) {
  into->tick += from.tick;
  into->late_ticks += from.late_ticks;
  into->capped_wakes += from.capped_wakes;
  into->schedule_slips += from.schedule_slips;
  into->schedule_slipped += from.schedule_slipped;
  into->lateness.merge(from.lateness);
  into->lateness_max = std::max(into->lateness_max, from.lateness_max);
  into->step_time_max = std::max(into->step_time_max, from.step_time_max);
  into->step_time_total_ns += from.step_time_total_ns;
  into->step_cpu_total_ns += from.step_cpu_total_ns;
  into->inputs_accepted += from.inputs_accepted;
  into->inputs_rejected += from.inputs_rejected;
  into->inputs_late += from.inputs_late;
  into->inputs_late_dropped += from.inputs_late_dropped;
  into->inputs_behind_schedule += from.inputs_behind_schedule;
  into->inputs_duplicate += from.inputs_duplicate;
  into->bytes_in += from.bytes_in;
  into->bytes_out += from.bytes_out;
  into->clients_joined += from.clients_joined;
  into->snapshots_sent += from.snapshots_sent;
  into->desync_reports += from.desync_reports;
  into->protocol_errors += from.protocol_errors;
  into->input_errors += from.input_errors;
  into->slow_consumers += from.slow_consumers;
  into->commands_applied += from.commands_applied;
  into->commands_refused += from.commands_refused;
  into->commands_failed += from.commands_failed;
  into->game_messages_delivered += from.game_messages_delivered;
  into->game_messages_oversize += from.game_messages_oversize;
  into->game_messages_over_rate += from.game_messages_over_rate;
  into->game_messages_other += from.game_messages_other;
}

namespace {

// A label value with \, " and newline escaped (the exposition format's rule).
std::string label_value(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\\' || c == '"') {
      out.push_back('\\');
      out.push_back(c);
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

class Exposition {
 public:
  void family(const char* name, const char* type, const char* help) {
    out_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  }
  void sample(const std::string& name, uint64_t value) {
    out_ += fmt::format("{} {}\n", name, value);
  }
  void sample_double(const std::string& name, double value) {
    out_ += fmt::format("{} {}\n", name, value);
  }
  void one(const char* name, const char* type, const char* help, uint64_t value) {
    family(name, type, help);
    sample(name, value);
  }
  void one_double(const char* name, const char* type, const char* help, double value) {
    family(name, type, help);
    sample_double(name, value);
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

// Histogram bounds of the tick lateness: powers of two nanoseconds, 65.5 µs .. 8.6 s. Each is a
// bucket boundary of LatenessHistogram, so the cumulative counts are exact (a bucket holds
// lateness strictly below its bound; a value exactly on a bound falls in the next).
constexpr int kFirstBoundOctave = 16;
constexpr int kLastBoundOctave = 33;

// The rooms added up (the open rooms' counters plus every closed room's) and who is connected.
struct Totals {
  RoomStats rooms;
  uint64_t open_rooms = 0;
  uint64_t clients = 0;
  uint64_t players = 0;
  uint64_t spectators = 0;
};

Totals add_up(const ServerStats& stats) {
  Totals t;
  t.rooms = stats.closed_rooms_total;
  for (size_t r = 0; r < stats.live_rooms && r < stats.rooms.size(); ++r) {
    const RoomStats& room = stats.rooms[r];  // the closed ones after them: in closed_rooms_total
    add_room_counters(&t.rooms, room);
    if (!room.open) continue;
    ++t.open_rooms;
    t.clients += room.clients;
    for (const ClientSummary& client : room.client_list) {
      if (!client.connected) continue;
      if (client.mode == schema::ClientMode::thin) {
        ++t.spectators;
      } else {
        ++t.players;
      }
    }
  }
  return t;
}

void expose_process(Exposition& e, const ServerStats& stats, const ExpositionExtras& extras) {
  e.one("lockstep_up", "gauge", "1 while the server process answers scrapes.", 1);
  e.one("lockstep_ready", "gauge", "1 while the server accepts connections (as /readyz).",
        extras.ready ? 1 : 0);
  e.one_double("lockstep_uptime_seconds", "gauge", "Seconds since the server started listening.",
               stats.uptime_s);
  e.one_double("lockstep_stats_age_seconds", "gauge",
               "Age of the counters this scrape shows (published by the server's thread).",
               extras.stats_age_seconds);
}

void expose_rooms(Exposition& e, const ServerStats& stats, const Totals& t) {
  e.one("lockstep_rooms", "gauge", "Rooms open now.", t.open_rooms);
  e.one("lockstep_rooms_closed_total", "counter", "Rooms closed since start.", stats.rooms_closed);
  e.one("lockstep_clients", "gauge", "Clients in a room now (players and spectators).", t.clients);
  e.family("lockstep_clients_by_mode", "gauge", "Clients in a room now, by mode.");
  e.sample("lockstep_clients_by_mode{mode=\"lockstep\"}", t.players);
  e.sample("lockstep_clients_by_mode{mode=\"thin\"}", t.spectators);
  e.one("lockstep_clients_joined_total", "counter", "Clients that joined a room.",
        t.rooms.clients_joined);
  e.one("lockstep_sessions", "gauge", "Open connections (in a room or not yet).",
        stats.sessions_open);
  e.one("lockstep_connections_accepted_total", "counter", "Connections accepted.",
        stats.connections_accepted);
  e.one("lockstep_connections_refused_total", "counter",
        "Connections refused over the connection limit.", stats.connections_refused);
}

void expose_ticks(Exposition& e, const RoomStats& total) {
  e.one("lockstep_ticks_total", "counter", "Ticks stepped, over every room.", total.tick);
  e.one("lockstep_late_ticks_total", "counter", "Ticks that started over 2 ms after due.",
        total.late_ticks);
  e.one("lockstep_capped_wakes_total", "counter",
        "Timer wakes that hit the catch-up cap and left due ticks for the next wake.",
        total.capped_wakes);
  e.one("lockstep_schedule_slips_total", "counter",
        "Times a room too far behind its schedule moved the schedule later (it cannot keep up).",
        total.schedule_slips);
  e.one_double("lockstep_schedule_slipped_seconds_total", "counter",
               "How much later the rooms' schedules run than their tick rates ask, in all.",
               static_cast<double>(total.schedule_slipped.count()) / 1e9);
  e.one_double("lockstep_step_seconds_total", "counter", "Time spent stepping worlds.",
               static_cast<double>(total.step_time_total_ns) / 1e9);
  e.one_double("lockstep_step_cpu_seconds_total", "counter",
               "CPU time of the room threads spent stepping worlds (a share of the step time "
               "on a busy machine).",
               static_cast<double>(total.step_cpu_total_ns) / 1e9);
  e.one_double("lockstep_tick_lateness_max_seconds", "gauge",
               "Largest tick lateness of any room (open or closed).",
               static_cast<double>(total.lateness_max.count()) / 1e9);
}

// The lateness histogram, cumulative over the power-of-two bounds.
void expose_lateness(Exposition& e, const LatenessHistogram& h) {
  e.family("lockstep_tick_lateness_seconds", "histogram",
           "How late each tick started after its due time.");
  uint64_t cumulative = 0;
  size_t bucket = 0;
  for (int octave = kFirstBoundOctave; octave <= kLastBoundOctave; ++octave) {
    const uint64_t bound_ns = uint64_t{1} << octave;
    while (bucket < LatenessHistogram::kBucketCount &&
           LatenessHistogram::bucket_upper_ns(bucket) <= bound_ns) {
      cumulative += h.bucket_count(bucket);
      ++bucket;
    }
    e.sample(fmt::format("lockstep_tick_lateness_seconds_bucket{{le=\"{}\"}}",
                         static_cast<double>(bound_ns) / 1e9),
             cumulative);
  }
  e.sample("lockstep_tick_lateness_seconds_bucket{le=\"+Inf\"}", h.count());
  e.sample_double("lockstep_tick_lateness_seconds_sum", static_cast<double>(h.sum_ns()) / 1e9);
  e.sample("lockstep_tick_lateness_seconds_count", h.count());
}

void expose_inputs(Exposition& e, const ServerStats& stats, const RoomStats& total) {
  e.family("lockstep_inputs_total", "counter", "Inputs by outcome.");
  e.sample("lockstep_inputs_total{result=\"accepted\"}", total.inputs_accepted);
  e.sample("lockstep_inputs_total{result=\"rejected\"}", total.inputs_rejected);
  e.sample("lockstep_inputs_total{result=\"duplicate\"}", total.inputs_duplicate);
  e.one("lockstep_inputs_late_total", "counter",
        "Inputs that arrived after their target tick (applied later or dropped).",
        total.inputs_late);
  e.one("lockstep_inputs_late_dropped_total", "counter", "Late inputs dropped.",
        total.inputs_late_dropped);
  e.one("lockstep_inputs_behind_schedule_total", "counter",
        "Inputs stamped ahead because their room was behind schedule, applied at the window's "
        "end.",
        total.inputs_behind_schedule);
  e.family("lockstep_commands_total", "counter",
           "World commands (spawn, destroy, score) by outcome.");
  e.sample("lockstep_commands_total{result=\"applied\"}", total.commands_applied);
  e.sample("lockstep_commands_total{result=\"refused\"}", total.commands_refused);
  e.sample("lockstep_commands_total{result=\"failed\"}", total.commands_failed);
  e.family("lockstep_game_messages_total", "counter",
           "Clients' game messages for the rules, by outcome.");
  e.sample("lockstep_game_messages_total{result=\"delivered\"}", total.game_messages_delivered);
  e.sample("lockstep_game_messages_total{result=\"oversize\"}", total.game_messages_oversize);
  e.sample("lockstep_game_messages_total{result=\"over_rate\"}", total.game_messages_over_rate);
  e.sample("lockstep_game_messages_total{result=\"refused\"}", total.game_messages_other);
  e.one("lockstep_desync_reports_total", "counter", "Clients that reported a state hash mismatch.",
        stats.desync_reports);
  e.one("lockstep_snapshots_sent_total", "counter", "Snapshots sent to thin clients.",
        total.snapshots_sent);
}

void expose_traffic(Exposition& e, const ServerStats& stats, const RoomStats& total) {
  e.one("lockstep_received_bytes_total", "counter", "Wire bytes received from room members.",
        total.bytes_in);
  e.one("lockstep_sent_bytes_total", "counter", "Wire bytes sent to room members.",
        total.bytes_out);
  e.one("lockstep_slow_consumer_disconnects_total", "counter",
        "Clients dropped because their outgoing queue hit the limit.",
        stats.slow_consumer_disconnects);
  e.one("lockstep_session_queue_high_water_bytes", "gauge",
        "Largest outgoing queue any session has had.", stats.max_session_queued_bytes);
  e.one("lockstep_session_queue_limit_bytes", "gauge", "Outgoing queue limit of a session.",
        stats.queue_limit_bytes);
  e.one("lockstep_timeouts_total", "counter", "Sessions closed for silence or a stuck write.",
        stats.timeouts);
  e.one("lockstep_protocol_errors_total", "counter", "Fatal Errors sent (the session ends).",
        stats.protocol_errors);
  e.one("lockstep_input_errors_total", "counter", "Non-fatal Errors sent (an input refused).",
        stats.input_errors);
  e.family("lockstep_errors_sent_total", "counter", "Error frames sent, by code.");
  for (size_t i = 0; i < stats.errors_by_code.size(); ++i) {
    e.sample(fmt::format("lockstep_errors_sent_total{{code=\"{}\"}}",
                         schema::error_code_name(static_cast<schema::ErrorCode>(i))),
             stats.errors_by_code[i]);
  }
}

void expose_admission(Exposition& e, const AdmissionStats& a) {
  e.family("lockstep_hellos_total", "counter",
           "Hellos by join-token check: ok, or why the connection was refused.");
  for (size_t i = 0; i < a.token_refusals.size(); ++i) {
    e.sample(fmt::format("lockstep_hellos_total{{token=\"{}\"}}",
                         i == 0 ? "ok" : auth::token_error_name(static_cast<auth::TokenError>(i))),
             a.token_refusals[i]);
  }
  e.family("lockstep_connections_closed_by_limit_total", "counter",
           "Connections refused or closed by a per-address or per-connection limit.");
  e.sample("lockstep_connections_closed_by_limit_total{limit=\"connections_per_ip\"}",
           a.refused_per_ip_connections);
  e.sample("lockstep_connections_closed_by_limit_total{limit=\"rooms_per_ip_per_minute\"}",
           a.refused_room_rate);
  e.sample("lockstep_connections_closed_by_limit_total{limit=\"frames_per_s\"}", a.over_frame_rate);
  e.sample("lockstep_connections_closed_by_limit_total{limit=\"bytes_per_s\"}", a.over_byte_rate);
  e.sample("lockstep_connections_closed_by_limit_total{limit=\"hello_timeout\"}", a.hello_timeouts);
  e.sample("lockstep_connections_closed_by_limit_total{limit=\"resync_requests_per_minute\"}",
           a.over_resync_budget);
}

void expose_threads(Exposition& e, const ServerStats& stats, const ExpositionExtras& extras) {
  e.one("lockstep_threads", "gauge", "Worker threads the rooms run on.", stats.threads);
  // One family per worker figure, a sample per worker labelled with its index.
  const auto per_thread = [&](const char* name, const char* type, const char* help, auto value) {
    e.family(name, type, help);
    for (size_t t = 0; t < stats.thread_list.size(); ++t)
      e.sample_double(fmt::format("{}{{thread=\"{}\"}}", name, t),
                      static_cast<double>(value(stats.thread_list[t])));
  };
  per_thread("lockstep_thread_rooms", "gauge", "Live rooms on each worker thread.",
             [](const auto& w) { return w.rooms; });
  per_thread("lockstep_thread_clients", "gauge", "Connected clients of the rooms on each worker.",
             [](const auto& w) { return w.clients; });
  per_thread("lockstep_thread_busy_seconds_total", "counter",
             "Time each worker spent running its rooms' ticks.",
             [](const auto& w) { return w.busy_s; });
  per_thread("lockstep_thread_busy_ratio", "gauge",
             "Share of the uptime each worker spent running ticks (rate() of the busy seconds for "
             "a recent window).",
             [](const auto& w) { return w.busy_ratio; });
  e.family("lockstep_file_writes_total", "counter",
           "Replay files handed to the file-writing thread, by outcome (dropped: its queue was "
           "full; abandoned: a match recording given up because too much of it waited for the "
           "writer).");
  e.sample("lockstep_file_writes_total{result=\"written\"}", stats.file_writes);
  e.sample("lockstep_file_writes_total{result=\"failed\"}", stats.file_writes_failed);
  e.sample("lockstep_file_writes_total{result=\"dropped\"}", stats.file_writes_dropped);
  e.sample("lockstep_file_writes_total{result=\"abandoned\"}", stats.file_writes_abandoned);

  if (!extras.threads.empty()) {
    e.family("lockstep_thread_cpu_seconds_total", "counter",
             "CPU time (user + system) of each thread of the process.");
    for (const ThreadLoad& t : extras.threads) {
      e.sample_double(fmt::format("lockstep_thread_cpu_seconds_total{{tid=\"{}\",name=\"{}\"}}",
                                  t.tid, label_value(t.name)),
                      t.cpu_seconds);
    }
  }
}

void expose_listener(Exposition& e, const ExpositionExtras& extras) {
  e.one("lockstep_http_requests_total", "counter", "Requests answered by the metrics listener.",
        extras.http_requests);
  e.one("lockstep_http_rejected_total", "counter",
        "Metrics listener requests answered 4xx or connections refused over its limit.",
        extras.http_rejected);
  if (extras.agones) {
    e.family("lockstep_agones_calls_total", "counter", "Calls to the Agones SDK sidecar.");
    e.sample("lockstep_agones_calls_total{result=\"ok\"}", extras.agones_counters.calls_ok);
    e.sample("lockstep_agones_calls_total{result=\"failed\"}", extras.agones_counters.calls_failed);
  }
}

}  // namespace

std::string prometheus_text(const ServerStats& stats, const ExpositionExtras& extras) {
  const Totals totals = add_up(stats);
  Exposition e;
  expose_process(e, stats, extras);
  expose_rooms(e, stats, totals);
  expose_ticks(e, totals.rooms);
  expose_lateness(e, totals.rooms.lateness);
  expose_inputs(e, stats, totals.rooms);
  expose_traffic(e, stats, totals.rooms);
  expose_admission(e, stats.admission);
  expose_threads(e, stats, extras);
  expose_listener(e, extras);
  return e.take();
}

std::vector<ThreadLoad> process_thread_loads() {
  std::vector<ThreadLoad> loads;
#ifdef __linux__
  const long ticks_per_second = sysconf(_SC_CLK_TCK);
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr || ticks_per_second <= 0) {
    if (dir != nullptr) closedir(dir);
    return loads;
  }
  while (const dirent* entry = readdir(dir)) {
    if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
    std::ifstream file(std::string("/proc/self/task/") + entry->d_name + "/stat");
    std::string line;
    if (!std::getline(file, line)) continue;
    // "tid (comm) state ppid ...": comm may hold spaces and parentheses; fields after the last
    // ')' are space-separated, utime and stime being the 12th and 13th of them.
    const size_t open = line.find('(');
    const size_t close = line.rfind(')');
    if (open == std::string::npos || close == std::string::npos || close < open) continue;
    std::istringstream rest(line.substr(close + 1));
    std::string field;
    uint64_t utime = 0;
    uint64_t stime = 0;
    for (int i = 1; i <= 13 && (rest >> field); ++i) {
      if (i == 12) utime = std::strtoull(field.c_str(), nullptr, 10);
      if (i == 13) stime = std::strtoull(field.c_str(), nullptr, 10);
    }
    ThreadLoad load;
    load.tid = std::atoi(entry->d_name);
    load.name = line.substr(open + 1, close - open - 1);
    load.cpu_seconds = static_cast<double>(utime + stime) / static_cast<double>(ticks_per_second);
    loads.push_back(std::move(load));
  }
  closedir(dir);
  std::sort(loads.begin(), loads.end(),
            [](const ThreadLoad& a, const ThreadLoad& b) { return a.tid < b.tid; });
#endif
  return loads;
}

std::string ops_config_error(const OpsConfig& config) {
  if (config.metrics_port < -1 || config.metrics_port > 65535) {
    return fmt::format("metrics port {} is not -1 (off) or 0..65535", config.metrics_port);
  }
  if (config.max_request_bytes < 256) return "max request bytes must be at least 256";
  if (config.request_timeout.count() <= 0) return "the request timeout must be positive";
  if (config.max_http_connections == 0) return "max HTTP connections must be at least 1";
  if (config.publish_interval.count() <= 0) return "the publish interval must be positive";
  if (config.stale_after <= config.publish_interval) {
    return "the staleness limit must be longer than the publish interval";
  }
  if (config.agones && config.agones_health_interval.count() <= 0) {
    return "the Agones health interval must be positive";
  }
  return {};
}

void add_ops_options(CLI::App& app, OpsConfig* config) {
  using std::chrono::milliseconds;
  app.add_option("--metrics-port", config->metrics_port,
                 "HTTP port for /metrics (Prometheus), /healthz and /readyz; -1 = off, 0 = "
                 "ephemeral")
      ->check(CLI::Range(-1, 65535))
      ->capture_default_str();
  app.add_option("--metrics-bind", config->metrics_bind, "Address of the metrics listener")
      ->capture_default_str();
  app.add_option_function<int64_t>(
         "--metrics-publish-ms",
         [config](int64_t v) { config->publish_interval = milliseconds(v); },
         "How often the server's thread publishes counters for the metrics listener")
      ->check(CLI::Range(int64_t{10}, int64_t{60'000}))
      ->default_str(std::to_string(config->publish_interval.count()));
  app.add_option_function<int64_t>(
         "--health-stale-ms", [config](int64_t v) { config->stale_after = milliseconds(v); },
         "/healthz fails when the server's thread has not published counters for this long")
      ->check(CLI::Range(int64_t{100}, int64_t{600'000}))
      ->default_str(std::to_string(config->stale_after.count()));
  app.add_flag("--agones", config->agones,
               "Run the Agones lifecycle: Ready, Health, a rooms label and Shutdown through the "
               "SDK sidecar's HTTP API");
  app.add_option("--agones-port", config->agones_port,
                 "The SDK sidecar's HTTP port (0 = $AGONES_SDK_HTTP_PORT, else 9358)")
      ->capture_default_str();
  app.add_option_function<int64_t>(
         "--agones-health-ms",
         [config](int64_t v) { config->agones_health_interval = milliseconds(v); },
         "How often to send Health to Agones")
      ->check(CLI::Range(int64_t{100}, int64_t{60'000}))
      ->default_str(std::to_string(config->agones_health_interval.count()));
  app.add_option("--agones-shutdown-when-idle", config->agones_shutdown_when_idle,
                 "Ask Agones to shut the server down once every room has closed after a match")
      ->capture_default_str();
}

}  // namespace lockstep::server
