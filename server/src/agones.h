// The Agones game-server lifecycle through the SDK sidecar's HTTP API (REST gateway on
// localhost:$AGONES_SDK_HTTP_PORT): Ready once the server listens (retried: the sidecar may
// start after us), Health every few seconds, a label with the open room count whenever it
// changes, and Shutdown once the last room has closed after a match. Runs on the ops thread's
// io_context and reads only the counters the server's thread published.
#pragma once

#include <asio/awaitable.hpp>
#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "lockstep/server/ops.h"

namespace lockstep::server {

/// The label Agones shows as agones.dev/sdk-<key> on the GameServer.
inline constexpr const char* kAgonesRoomsLabel = "lockstep-rooms";

class AgonesClient final {
 public:
  using Latest = std::function<std::shared_ptr<const ServerStats>()>;
  /// `port` already resolved (config or environment).
  AgonesClient(asio::io_context& io, const OpsConfig& config, uint16_t port, Latest latest);
  void start();
  AgonesCounters counters() const;

 private:
  asio::awaitable<void> run();
  /// One request on a new connection; true on a 2xx answer.
  asio::awaitable<bool> call(const char* method, const char* path, const std::string& body);
  asio::awaitable<void> sleep(std::chrono::milliseconds duration);

  asio::io_context& io_;
  OpsConfig config_;
  uint16_t port_;
  Latest latest_;
  std::atomic<uint64_t> calls_ok_{0};
  std::atomic<uint64_t> calls_failed_{0};
  std::atomic<bool> ready_sent_{false};
  std::atomic<bool> shutdown_sent_{false};
};

/// The sidecar's port: `configured` when not 0, else $AGONES_SDK_HTTP_PORT, else 9358.
uint16_t agones_sdk_port(uint16_t configured);

}  // namespace lockstep::server
