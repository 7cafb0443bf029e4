// Agones SDK calls over plain HTTP/1.1, one connection per call, each bounded by a deadline.
#include "agones.h"

#include <asio/co_spawn.hpp>
#include <asio/connect.hpp>
#include <asio/detached.hpp>
#include <asio/experimental/as_tuple.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/read_until.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/write.hpp>
#include <cstdlib>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace lockstep::server {
namespace {

constexpr auto use_nothrow = asio::experimental::as_tuple(asio::use_awaitable);
constexpr std::chrono::milliseconds kCallTimeout{2'000};
constexpr std::chrono::milliseconds kReadyRetry{1'000};
constexpr std::chrono::milliseconds kPoll{200};  // how often the room count is looked at
constexpr size_t kMaxAnswerHeadBytes = 16 * 1024;

uint64_t open_rooms(const ServerStats& stats) {
  uint64_t open = 0;
  for (size_t r = 0; r < stats.live_rooms && r < stats.rooms.size(); ++r)
    open += stats.rooms[r].open ? 1 : 0;
  return open;
}

}  // namespace

uint16_t agones_sdk_port(uint16_t configured) {
  if (configured != 0) return configured;
  if (const char* env = std::getenv("AGONES_SDK_HTTP_PORT"); env != nullptr && *env != '\0') {
    char* end = nullptr;
    const unsigned long value = std::strtoul(env, &end, 10);
    if (*end == '\0' && value > 0 && value <= 65535) return static_cast<uint16_t>(value);
    spdlog::warn("AGONES_SDK_HTTP_PORT='{}' is not a port; using 9358", env);
  }
  return 9358;
}

AgonesClient::AgonesClient(asio::io_context& io, const OpsConfig& config, uint16_t port,
                           Latest latest)
    : io_(io), config_(config), port_(port), latest_(std::move(latest)) {}

void AgonesClient::start() {
  asio::co_spawn(
      io_, [this] { return run(); }, asio::detached);
}

AgonesCounters AgonesClient::counters() const {
  AgonesCounters c;
  c.calls_ok = calls_ok_.load();
  c.calls_failed = calls_failed_.load();
  c.ready_sent = ready_sent_.load();
  c.shutdown_sent = shutdown_sent_.load();
  return c;
}

asio::awaitable<void> AgonesClient::sleep(std::chrono::milliseconds duration) {
  asio::steady_timer timer(io_, duration);
  co_await timer.async_wait(use_nothrow);
}

asio::awaitable<bool> AgonesClient::call(const char* method, const char* path,
                                         const std::string& body) {
  std::error_code ec;
  const std::string host = config_.agones_host == "localhost" ? "127.0.0.1" : config_.agones_host;
  const asio::ip::address address = asio::ip::make_address(host, ec);
  if (ec) {
    spdlog::warn("agones: bad sidecar address '{}'", config_.agones_host);
    calls_failed_.fetch_add(1);
    co_return false;
  }
  auto socket = std::make_shared<asio::ip::tcp::socket>(io_);
  asio::steady_timer deadline(io_, kCallTimeout);
  deadline.async_wait([socket](std::error_code wait_error) {
    if (wait_error) return;
    std::error_code ignored;
    socket->close(ignored);  // ends the pending connect / write / read
  });
  bool ok = false;
  int status = 0;
  auto [connect_error] =
      co_await socket->async_connect(asio::ip::tcp::endpoint(address, port_), use_nothrow);
  if (!connect_error) {
    const std::string request = fmt::format(
        "{} {} HTTP/1.1\r\nHost: {}:{}\r\nContent-Type: application/json\r\n"
        "Content-Length: {}\r\nConnection: close\r\n\r\n{}",
        method, path, config_.agones_host, port_, body.size(), body);
    auto [write_error, written] =
        co_await asio::async_write(*socket, asio::buffer(request), use_nothrow);
    if (!write_error) {
      std::string answer;
      auto [read_error, head] = co_await asio::async_read_until(
          *socket, asio::dynamic_buffer(answer, kMaxAnswerHeadBytes), "\r\n", use_nothrow);
      // "HTTP/1.1 200 OK"
      if (!read_error && answer.size() >= 12 && answer.compare(0, 5, "HTTP/") == 0) {
        const size_t space = answer.find(' ');
        if (space != std::string::npos) status = std::atoi(answer.c_str() + space + 1);
      }
      ok = status >= 200 && status < 300;
    }
  }
  deadline.cancel();
  std::error_code ignored;
  socket->close(ignored);
  if (ok) {
    calls_ok_.fetch_add(1);
    spdlog::debug("agones: {} {} -> {}", method, path, status);
  } else {
    calls_failed_.fetch_add(1);
    spdlog::debug("agones: {} {} failed ({})", method, path,
                  status != 0 ? fmt::format("HTTP {}", status) : std::string("no answer"));
  }
  co_return ok;
}

asio::awaitable<void> AgonesClient::run() {
  // Ready: the sidecar may come up after us, so retry until it answers.
  for (uint64_t attempt = 1;; ++attempt) {
    if (co_await call("POST", "/ready", "{}")) break;
    if (attempt == 1 || attempt % 30 == 0) {
      spdlog::warn("agones: Ready not accepted by the sidecar on {}:{} yet (attempt {}); retrying",
                   config_.agones_host, port_, attempt);
    }
    co_await sleep(kReadyRetry);
  }
  ready_sent_ = true;
  spdlog::info("agones: Ready sent to the sidecar on {}:{}", config_.agones_host, port_);

  using Clock = std::chrono::steady_clock;
  Clock::time_point next_health = Clock::now();
  int64_t labelled_rooms = -1;
  for (;;) {
    if (Clock::now() >= next_health) {
      next_health = Clock::now() + config_.agones_health_interval;
      co_await call("POST", "/health", "{}");
    }
    if (const std::shared_ptr<const ServerStats> stats = latest_(); stats != nullptr) {
      const uint64_t open = open_rooms(*stats);
      if (static_cast<int64_t>(open) != labelled_rooms) {
        const std::string body =
            fmt::format("{{\"key\":\"{}\",\"value\":\"{}\"}}", kAgonesRoomsLabel, open);
        if (co_await call("PUT", "/metadata/label", body))
          labelled_rooms = static_cast<int64_t>(open);
      }
      if (config_.agones_shutdown_when_idle && !shutdown_sent_ && stats->rooms_closed > 0 &&
          open == 0) {
        if (co_await call("POST", "/shutdown", "{}")) {
          shutdown_sent_ = true;
          spdlog::info("agones: every room has closed after a match: Shutdown sent");
        }
      }
    }
    co_await sleep(kPoll);
  }
}

}  // namespace lockstep::server
