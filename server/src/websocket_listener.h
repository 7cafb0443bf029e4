// The WebSocket listener: browser clients reach the same sessions as TCP clients.
//
// Each accepted WebSocket is bridged to an ordinary Session through a connected pair of local
// stream sockets: the session owns one end exactly as it owns a TCP socket (admission, Hello and
// token checks, budgets, limits, queue, metrics, hand-over to a room's thread: all unchanged),
// and the bridge owns the other. A binary message holds one protocol frame (the 4-byte length and
// the body) and is written to the pair as it is; bytes the session writes are cut into frames
// again and each sent as one binary message. So the protocol has one implementation, and a
// WebSocket client sees the very bytes a TCP client sees.
//
// What the WebSocket layer adds is checked here, before anything reaches the session:
// - the handshake's Origin against ServerConfig::ws_allowed_origins (403 otherwise);
// - text messages (closed with 1003), messages over the client frame cap plus framing (websocketpp
//   closes with 1009 before it buffers more), and a message that is not exactly one frame (1007).
//   A frame whose length is over the cap goes through as it is, so the session answers with the
//   Error a TCP client would get;
// - a client that sends faster than its session reads, or reads slower than its session writes:
//   both sides are bounded (the outgoing side by the session's own queue, which fills once the
//   bridge stops reading while the browser's socket is full).
// Nothing is sent on the WebSocket but the session's own frames, so nothing is sent before a
// Hello is verified, as on TCP.
//
// Threads: the listener and its bridges run on the control thread (ServerCore::io); a session
// handed over to a room's worker keeps its end of the pair, which is only a descriptor.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace lockstep::server {

struct ServerCore;

/// What the bridge does with one incoming WebSocket message (a pure rule, unit-tested and fuzzed).
enum class WsMessageVerdict : uint8_t {
  forward,        // one whole frame, or a length over the cap (the session answers that)
  text,           // a text message: close 1003
  not_one_frame,  // shorter than 4 bytes, or the length disagrees with the size: close 1007
};
WsMessageVerdict classify_ws_message(bool binary, std::span<const uint8_t> payload);

/// Largest message the WebSocket layer buffers: the client frame cap plus its length prefix.
uint64_t ws_max_message_bytes();

/// Whether `origin` may open a WebSocket under `allowed` (empty list: any, and none).
bool ws_origin_allowed(const std::vector<std::string>& allowed, const std::string& origin);

/// Splits the bytes a session wrote into whole frames (length + body); a partial frame is kept
/// for the next call. False when a length exceeds `max_frame_bytes` (never from our server).
class FrameSplitter final {
 public:
  explicit FrameSplitter(uint32_t max_frame_bytes) : max_frame_bytes_(max_frame_bytes) {}
  template <class OnFrame>
  bool feed(std::span<const uint8_t> bytes, OnFrame&& on_frame);

 private:
  uint32_t max_frame_bytes_;
  std::vector<uint8_t> pending_;
};

class WebSocketListener final {
 public:
  explicit WebSocketListener(ServerCore& core);
  ~WebSocketListener();
  WebSocketListener(const WebSocketListener&) = delete;
  WebSocketListener& operator=(const WebSocketListener&) = delete;

  /// Binds bind_address:ws_port and starts accepting; false and *error on failure.
  bool listen(std::string* error);
  uint16_t port() const;
  /// Stops accepting; open bridges end with their sessions.
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

template <class OnFrame>
bool FrameSplitter::feed(std::span<const uint8_t> bytes, OnFrame&& on_frame) {
  pending_.insert(pending_.end(), bytes.begin(), bytes.end());
  size_t at = 0;
  while (pending_.size() - at >= 4) {
    const uint32_t length = uint32_t{pending_[at]} | uint32_t{pending_[at + 1]} << 8 |
                            uint32_t{pending_[at + 2]} << 16 | uint32_t{pending_[at + 3]} << 24;
    if (length > max_frame_bytes_) return false;
    if (pending_.size() - at - 4 < length) break;
    on_frame(std::span<const uint8_t>(pending_.data() + at, 4 + size_t{length}));
    at += 4 + size_t{length};
  }
  pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(at));
  return true;
}

}  // namespace lockstep::server
