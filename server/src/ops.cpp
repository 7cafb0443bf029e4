// OpsService: the metrics / health listener and the Agones client on one thread, reading the
// counters the server's thread publishes.
#include <pthread.h>

#include <atomic>
#include <optional>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>

#include "agones.h"
#include "http_listener.h"
#include "lockstep/server/ops.h"

namespace lockstep::server {

struct OpsService::Impl {
  using Clock = std::chrono::steady_clock;
  struct Published {
    ServerStats stats;
    Clock::time_point at;
  };

  asio::io_context io{1};
  asio::executor_work_guard<asio::io_context::executor_type> work = asio::make_work_guard(io);
  std::atomic<std::shared_ptr<const Published>> latest;
  std::optional<HttpListener> listener;
  std::optional<AgonesClient> agones;
  bool stopped = false;
};

OpsService::OpsService(const OpsConfig& config)
    : config_(config), impl_(std::make_unique<Impl>()) {}

OpsService::~OpsService() {
  stop();
}

bool OpsService::start(std::string* error) {
  if (std::string problem = ops_config_error(config_); !problem.empty()) {
    *error = problem;
    return false;
  }
  Impl& impl = *impl_;
  const OpsConfig config = config_;
  Impl* shared = impl_.get();
  if (config_.metrics_port >= 0) {
    HttpListenerLimits limits;
    limits.max_request_bytes = config_.max_request_bytes;
    limits.request_timeout = config_.request_timeout;
    limits.max_connections = config_.max_http_connections;
    impl.listener.emplace(impl.io, limits, [shared, config](const HttpRequest& request) {
      HttpResponse response;
      const bool known =
          request.path == "/metrics" || request.path == "/healthz" || request.path == "/readyz";
      if (!known) {
        response.status = 404;
        response.body = "not found: try /metrics, /healthz or /readyz\n";
        return response;
      }
      if (request.method != "GET" && request.method != "HEAD") {
        response.status = 405;
        response.allow = "GET, HEAD";
        response.body = "only GET and HEAD\n";
        return response;
      }
      const std::shared_ptr<const Impl::Published> latest = shared->latest.load();
      const double age_s =
          latest == nullptr
              ? 0.0
              : std::chrono::duration<double>(Impl::Clock::now() - latest->at).count();
      const bool fresh =
          latest != nullptr && age_s * 1000.0 < static_cast<double>(config.stale_after.count());
      const bool ready = fresh && latest->stats.accepting;
      if (request.path == "/healthz") {
        response.status = fresh ? 200 : 503;
        response.body = latest == nullptr ? "starting\n"
                        : fresh           ? "ok\n"
                                          : fmt::format("stale: no counters for {:.1f} s\n", age_s);
      } else if (request.path == "/readyz") {
        response.status = ready ? 200 : 503;
        response.body = ready ? "ready\n" : fresh ? "not accepting\n" : "not healthy\n";
      } else {
        if (latest == nullptr) {
          response.status = 503;
          response.body = "no counters published yet\n";
          return response;
        }
        ExpositionExtras extras;
        extras.stats_age_seconds = age_s;
        extras.ready = ready;
        extras.threads = process_thread_loads();
        extras.http_requests = shared->listener->requests();
        extras.http_rejected = shared->listener->rejected();
        if (shared->agones) {
          extras.agones = true;
          extras.agones_counters = shared->agones->counters();
        }
        response.content_type = "text/plain; version=0.0.4; charset=utf-8";
        response.body = prometheus_text(latest->stats, extras);
      }
      return response;
    });
    if (!impl.listener->open(config_.metrics_bind, static_cast<uint16_t>(config_.metrics_port),
                             error)) {
      impl.listener.reset();
      return false;
    }
    metrics_port_ = impl.listener->port();
    impl.listener->start();
    spdlog::info("metrics on http://{}:{}/metrics (also /healthz, /readyz)", config_.metrics_bind,
                 metrics_port_);
  }
  if (config_.agones) {
    impl.agones.emplace(impl.io, config_, agones_sdk_port(config_.agones_port), [shared] {
      const std::shared_ptr<const Impl::Published> latest = shared->latest.load();
      return latest == nullptr ? nullptr
                               : std::shared_ptr<const ServerStats>(latest, &latest->stats);
    });
    impl.agones->start();
  }
  thread_ = std::thread([shared] {
#ifdef __linux__
    pthread_setname_np(pthread_self(), "lockstep-ops");
#endif
    shared->io.run();
  });
  return true;
}

void OpsService::publish(const ServerStats& stats) {
  auto published = std::make_shared<Impl::Published>();
  published->stats = stats;
  published->at = Impl::Clock::now();
  impl_->latest.store(std::move(published));
}

void OpsService::stop() {
  if (impl_->stopped) return;
  impl_->stopped = true;
  impl_->work.reset();
  impl_->io.stop();
  if (thread_.joinable()) thread_.join();
  if (impl_->listener) impl_->listener->close();
}

AgonesCounters OpsService::agones_counters() const {
  return impl_->agones ? impl_->agones->counters() : AgonesCounters{};
}

}  // namespace lockstep::server
