// lockstep-server: the authoritative lockstep server (docs/server.md).
//
// Usage:
//   lockstep-server [--port 7777] [--bind 0.0.0.0] [--tick-rate 60] [--input-delay 2]
//                   [--scene inputs|FILE] [--scene-dir DIR] [--max-rooms N] [--max-players N]
//                   [--queue-limit-bytes B]
//                   [--config FILE] [--log-level info] [--stats-json FILE]
//                   [--metrics-port P] [--metrics-bind A] [--agones] ...
//   lockstep-server --help     lists every option; a config file (TOML/INI) takes the same
//                              long names as keys, e.g. `tick-rate = 30`.
//
// Output: logs (levels, timestamps) on stderr; on stdout one line `listening port=N` once the
// socket is bound (then `metrics port=N` with --metrics-port), and at exit one line `summary
// {json}` (per room: ticks, late ticks, lateness p50/p99/max, inputs, bytes, and per-client bytes
// out) for scripts.
//
// SIGINT/SIGTERM: stop accepting, Disconnect{server_shutdown} to every client, flush (bounded
// by --flush-timeout-ms), print the summary, exit 0. A second signal stops at once.
// Exit status: 0 after a shutdown; 1 when the server cannot start; 2 on bad flags.
#include <cstdio>
#include <fstream>
#include <string>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include "lockstep/server/config.h"
#include "lockstep/server/ops.h"
#include "lockstep/server/server.h"

int main(int argc, char** argv) {
  using namespace lockstep::server;
  ServerConfig config;
  config.handle_signals = true;
  CLI::App app{"lockstep-server: authoritative deterministic lockstep physics server"};
  add_server_options(app, &config);
  OpsConfig ops_config;
  add_ops_options(app, &ops_config);
  std::string log_level = "info";
  std::string stats_json_path;
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error or off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}))
      ->capture_default_str();
  app.add_option("--stats-json", stats_json_path, "Also write the final summary JSON to FILE");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // --help prints and exits 0
  }

  auto logger = spdlog::stderr_color_mt("lockstep-server");
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("%Y-%m-%d %H:%M:%S.%e [%^%l%$] %v");
  spdlog::set_level(spdlog::level::from_str(log_level));

  Server server(config);
  std::string error;
  if (!server.start(&error)) {
    spdlog::error("cannot start: {}", error);
    return 1;
  }
  // Metrics, health and Agones on a thread of their own (docs/deploy.md), fed by the server's
  // thread with a copy of its counters every publish interval.
  OpsService ops(ops_config);
  if (!ops.start(&error)) {
    spdlog::error("cannot start: {}", error);
    return 1;
  }
  if (ops_config.metrics_port >= 0 || ops_config.agones) {
    server.set_stats_publisher(ops_config.publish_interval,
                               [&ops](const ServerStats& stats) { ops.publish(stats); });
  }
  std::printf("listening port=%u\n", static_cast<unsigned>(server.port()));
  if (ops.metrics_port() != 0) {
    std::printf("metrics port=%u\n", static_cast<unsigned>(ops.metrics_port()));
  }
  std::fflush(stdout);

  server.run();
  ops.stop();

  const ServerStats stats = server.stats();
  for (const RoomStats& room : stats.rooms)
    spdlog::info("final: {}", room_summary_line(room));
  const std::string json = summary_json(stats);
  std::printf("summary %s\n", json.c_str());
  std::fflush(stdout);
  if (!stats_json_path.empty()) {
    std::ofstream out(stats_json_path);
    out << json << '\n';
    if (!out) spdlog::error("cannot write {}", stats_json_path);
  }
  spdlog::info("stopped");
  return 0;
}
