// The WebSocket listener and its bridges (websocket_listener.h says how they fit the sessions).
#include "websocket_listener.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <deque>
#include <map>

#include <spdlog/spdlog.h>
#include <asio/local/connect_pair.hpp>
#include <asio/local/stream_protocol.hpp>
#include <asio/steady_timer.hpp>
#include <asio/write.hpp>

#include "lockstep/schema/limits.h"
#include "server_core.h"
#include "websocket_endpoint.h"

namespace lockstep::server {

namespace {

// WebSocket close codes (RFC 6455, 7.4.1).
constexpr uint16_t kCloseNormal = 1000;
constexpr uint16_t kCloseUnsupportedData = 1003;
constexpr uint16_t kCloseInvalidPayload = 1007;
constexpr uint16_t kClosePolicyViolation = 1008;
constexpr uint16_t kCloseInternalError = 1011;
constexpr uint16_t kCloseTryAgainLater = 1013;
// A client's messages waiting to be written to its session, at most: a client this far ahead of
// its session's reading is closed (the session's own byte and frame budgets act long before).
constexpr size_t kMaxPendingInBytes = 1u << 20;
// How often a bridge whose browser socket is full looks again (it reads no more from its session
// meanwhile, so the session's own bounded queue takes the backlog).
constexpr auto kDrainPoll = std::chrono::milliseconds(5);

uint32_t read_le32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

}  // namespace

WsMessageVerdict classify_ws_message(bool binary, std::span<const uint8_t> payload) {
  if (!binary) return WsMessageVerdict::text;
  if (payload.size() < 4) return WsMessageVerdict::not_one_frame;
  const uint32_t length = read_le32(payload.data());
  // Over the cap: the session reads the length, and refuses it as it does on TCP.
  if (length > schema::kMaxClientFrameBytes) return WsMessageVerdict::forward;
  if (payload.size() - 4 != length) return WsMessageVerdict::not_one_frame;
  return WsMessageVerdict::forward;
}

uint64_t ws_max_message_bytes() {
  return uint64_t{schema::kMaxClientFrameBytes} + 4;
}

bool ws_origin_allowed(const std::vector<std::string>& allowed, const std::string& origin) {
  if (allowed.empty()) return true;
  return std::find(allowed.begin(), allowed.end(), origin) != allowed.end();
}

namespace {

/// One WebSocket joined to one Session through a local socket pair.
class Bridge final : public std::enable_shared_from_this<Bridge> {
 public:
  Bridge(WsEndpoint& ws, uint64_t connection, asio::io_context& io, uint64_t queue_limit_bytes)
      : ws_(ws),
        connection_(connection),
        pipe_(io),
        drain_timer_(io),
        splitter_(schema::kMaxServerFrameBytes),
        queue_limit_bytes_(queue_limit_bytes) {}

  asio::local::stream_protocol::socket& pipe() { return pipe_; }

  void start_reading() {
    pipe_.async_read_some(asio::buffer(read_buffer_),
                          [self = shared_from_this()](std::error_code ec, size_t n) {
                            self->on_session_bytes(ec, n);
                          });
  }

  /// A message from the browser.
  void on_message(bool binary, const std::string& payload) {
    if (closed_) return;
    const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(payload.data()),
                                         payload.size());
    switch (classify_ws_message(binary, bytes)) {
      case WsMessageVerdict::text:
        close(kCloseUnsupportedData,
              "text messages are not accepted: send each protocol frame as one binary message");
        return;
      case WsMessageVerdict::not_one_frame:
        close(kCloseInvalidPayload,
              "a binary message must hold exactly one frame: a 4-byte little-endian length, "
              "then that many bytes");
        return;
      case WsMessageVerdict::forward:
        break;
    }
    if (pending_in_bytes_ + bytes.size() > kMaxPendingInBytes) {
      close(kClosePolicyViolation, "sending faster than the server reads");
      return;
    }
    pending_in_.emplace_back(bytes.begin(), bytes.end());
    pending_in_bytes_ += bytes.size();
    if (!writing_) write_next();
  }

  /// The browser's side is gone: the session sees the end of its stream.
  void on_ws_closed() {
    ws_closed_ = true;
    end_pipe();
  }

 private:
  void write_next() {
    if (pending_in_.empty() || !pipe_.is_open()) {
      writing_ = false;
      return;
    }
    writing_ = true;
    asio::async_write(pipe_, asio::buffer(pending_in_.front()),
                      [self = shared_from_this()](std::error_code ec, size_t) {
                        self->pending_in_bytes_ -= self->pending_in_.front().size();
                        self->pending_in_.pop_front();
                        if (ec) {
                          self->writing_ = false;
                          return;  // the session closed its end: the read side ends the bridge
                        }
                        self->write_next();
                      });
  }

  void on_session_bytes(std::error_code ec, size_t n) {
    if (ec) {
      // The session closed (after its last frame, as on TCP): close the WebSocket cleanly.
      close(kCloseNormal, "connection closed by the server");
      return;
    }
    const bool whole = splitter_.feed(std::span<const uint8_t>(read_buffer_.data(), n),
                                      [this](std::span<const uint8_t> frame) {
                                        ws_.send(connection_, frame.data(), frame.size());
                                      });
    if (!whole) {
      close(kCloseInternalError, "server frame over its cap");
      return;
    }
    read_when_drained();
  }

  /// Reads on once the browser has taken most of what was sent; until then the session's queue
  /// holds the backlog (and drops a client that never catches up, as on TCP).
  void read_when_drained() {
    if (closed_) return;
    if (ws_.buffered_bytes(connection_) <= queue_limit_bytes_) {
      start_reading();
      return;
    }
    drain_timer_.expires_after(kDrainPoll);
    drain_timer_.async_wait([self = shared_from_this()](std::error_code wait_error) {
      if (!wait_error) self->read_when_drained();
    });
  }

  void close(uint16_t code, const std::string& reason) {
    if (closed_) return;
    closed_ = true;
    if (!ws_closed_) ws_.close(connection_, code, reason);
    end_pipe();
  }

  void end_pipe() {
    closed_ = true;
    std::error_code ignored;
    drain_timer_.cancel();
    pipe_.close(ignored);
  }

  WsEndpoint& ws_;
  uint64_t connection_;
  asio::local::stream_protocol::socket pipe_;
  asio::steady_timer drain_timer_;
  FrameSplitter splitter_;
  uint64_t queue_limit_bytes_;
  std::array<uint8_t, 16384> read_buffer_{};
  std::deque<std::vector<uint8_t>> pending_in_;
  size_t pending_in_bytes_ = 0;
  bool writing_ = false;
  bool closed_ = false;
  bool ws_closed_ = false;
};

}  // namespace

struct WebSocketListener::Impl {
  ServerCore& core;
  std::unique_ptr<WsEndpoint> ws;
  std::map<uint64_t, std::shared_ptr<Bridge>> bridges;
  uint64_t refused_origins = 0;

  explicit Impl(ServerCore& c) : core(c) {}

  bool allow_origin(const std::string& origin) {
    if (ws_origin_allowed(core.config.ws_allowed_origins, origin)) return true;
    if (++refused_origins == 1) {
      spdlog::warn("refusing a WebSocket from Origin '{}': not in --ws-allow-origin (logged once)",
                   origin);
    }
    return false;
  }

  void opened(uint64_t connection, const std::string& remote) {
    auto bridge = std::make_shared<Bridge>(*ws, connection, core.io, core.queue_limit_bytes);
    std::error_code ec;
    asio::local::stream_protocol::socket session_end(core.io);
    asio::local::connect_pair(bridge->pipe(), session_end, ec);
    asio::ip::tcp::socket session_socket(core.io);
    if (!ec) {
      // The session's end in a tcp::socket: Session reads, writes, shuts down and hands over a
      // descriptor, which a stream socket pair supports as a TCP socket does.
      const int fd = session_end.release(ec);
      if (!ec) session_socket.assign(asio::ip::tcp::v4(), fd, ec);
    }
    if (ec) {
      spdlog::warn("WebSocket from {}: no socket pair: {}", remote, ec.message());
      ws->close(connection, kCloseInternalError, "server error");
      return;
    }
    if (!core.admit(std::move(session_socket), remote)) {
      ws->close(connection, kCloseTryAgainLater, "the server is full");
      return;
    }
    bridges.emplace(connection, bridge);
    bridge->start_reading();
  }

  void closed(uint64_t connection) {
    auto it = bridges.find(connection);
    if (it == bridges.end()) return;
    it->second->on_ws_closed();
    bridges.erase(it);
  }

  void message(uint64_t connection, bool binary, const std::string& payload) {
    auto it = bridges.find(connection);
    if (it != bridges.end()) it->second->on_message(binary, payload);
  }
};

WebSocketListener::WebSocketListener(ServerCore& core) : impl_(std::make_unique<Impl>(core)) {
  Impl& m = *impl_;
  WsEndpoint::Handlers handlers;
  handlers.allow_origin = [&m](const std::string& origin) { return m.allow_origin(origin); };
  handlers.opened = [&m](uint64_t id, const std::string& remote) { m.opened(id, remote); };
  handlers.message = [&m](uint64_t id, bool binary, const std::string& payload) {
    m.message(id, binary, payload);
  };
  handlers.closed = [&m](uint64_t id) { m.closed(id); };
  m.ws = std::make_unique<WsEndpoint>(core.io, std::move(handlers), ws_max_message_bytes());
}

WebSocketListener::~WebSocketListener() = default;

bool WebSocketListener::listen(std::string* error) {
  const ServerConfig& config = impl_->core.config;
  return impl_->ws->listen(config.bind_address, static_cast<uint16_t>(config.ws_port), error);
}

uint16_t WebSocketListener::port() const {
  return impl_->ws->port();
}

void WebSocketListener::stop() {
  impl_->ws->stop_listening();
}

}  // namespace lockstep::server
