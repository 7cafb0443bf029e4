// Operations side of lockstep-server: Prometheus metrics, health and readiness endpoints, and
// the Agones game-server lifecycle, all on one thread of their own.
//
//   OpsService ops(ops_config);
//   if (!ops.start(&error)) die(error);  // binds the metrics port, starts the ops thread
//   server.set_stats_publisher(ops_config.publish_interval,
//                              [&ops](const ServerStats& s) { ops.publish(s); });
//   server.run();
//   ops.stop();
//
// The server's thread hands over a copy of its counters every publish_interval (a shared
// pointer swapped atomically); a scrape or an Agones call only ever reads the latest copy, so
// neither waits for nor locks anything on the rooms' thread. Totals are added up over the rooms
// at scrape time, so counters kept per room (or, later, per io thread) need no shared state.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "lockstep/server/server.h"

namespace CLI {
class App;
}

namespace lockstep::server {

struct OpsConfig {
  // ---- metrics and health (HTTP/1.1) -------------------------------------------------------
  /// Port of the HTTP listener serving /metrics, /healthz and /readyz; -1 = none, 0 = an
  /// ephemeral port (OpsService::metrics_port() reports it).
  int metrics_port = -1;
  std::string metrics_bind = "0.0.0.0";
  /// A request's line and headers must fit in this many bytes (else 431).
  uint32_t max_request_bytes = 8192;
  /// A client has this long to send its request and read the answer (else 408 / closed).
  std::chrono::milliseconds request_timeout{5'000};
  uint32_t max_http_connections = 64;  // more are closed at once
  /// How often the server's thread publishes its counters.
  std::chrono::milliseconds publish_interval{500};
  /// /healthz fails when the last publication is older than this (the server's thread is stuck).
  std::chrono::milliseconds stale_after{10'000};

  // ---- Agones -------------------------------------------------------------------------------
  bool agones = false;
  std::string agones_host = "127.0.0.1";
  /// The SDK sidecar's HTTP port; 0 = $AGONES_SDK_HTTP_PORT, else 9358.
  uint16_t agones_port = 0;
  std::chrono::milliseconds agones_health_interval{2'000};
  /// Shutdown is asked once every room has closed after at least one room was opened.
  bool agones_shutdown_when_idle = true;
};

/// Empty when usable, else what is wrong.
std::string ops_config_error(const OpsConfig& config);
/// --metrics-port, --metrics-bind, --agones, --agones-port, --agones-health-ms, ... bound to
/// the fields of *config.
void add_ops_options(CLI::App& app, OpsConfig* config);

/// CPU time one thread of this process has used (Linux /proc; empty elsewhere).
struct ThreadLoad {
  int tid = 0;
  std::string name;
  double cpu_seconds = 0;
};
std::vector<ThreadLoad> process_thread_loads();

/// Counters of the Agones client, for its own metrics and for tests.
struct AgonesCounters {
  uint64_t calls_ok = 0;
  uint64_t calls_failed = 0;
  bool ready_sent = false;
  bool shutdown_sent = false;
};

/// Extra lines of the exposition besides the server's counters.
struct ExpositionExtras {
  double stats_age_seconds = 0;
  bool ready = false;
  std::vector<ThreadLoad> threads;
  bool agones = false;
  AgonesCounters agones_counters;
  uint64_t http_requests = 0;
  uint64_t http_rejected = 0;  // 4xx answers and connections over the limit
};

/// The Prometheus text exposition (format 0.0.4) of `stats`: totals over the open rooms plus
/// every closed room, gauges of the open ones, the tick lateness histogram.
std::string prometheus_text(const ServerStats& stats, const ExpositionExtras& extras);

class OpsService final {
 public:
  explicit OpsService(const OpsConfig& config);
  ~OpsService();
  OpsService(const OpsService&) = delete;
  OpsService& operator=(const OpsService&) = delete;

  /// Binds the metrics listener (when configured), starts the ops thread and the Agones client
  /// (when configured). False and *error when it cannot; call once.
  bool start(std::string* error);
  /// The bound metrics port (the ephemeral one with 0); 0 without a listener.
  uint16_t metrics_port() const { return metrics_port_; }
  /// Stores a copy of the server's counters; any thread, never blocks on the ops thread.
  void publish(const ServerStats& stats);
  /// Stops the listener and the Agones client and joins the thread; idempotent.
  void stop();
  AgonesCounters agones_counters() const;

  struct Impl;

 private:
  OpsConfig config_;
  std::unique_ptr<Impl> impl_;
  std::thread thread_;
  uint16_t metrics_port_ = 0;
};

}  // namespace lockstep::server
