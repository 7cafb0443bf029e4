// The WebSocket endpoint: websocketpp's handshake and framing behind an interface of plain types.
//
// websocketpp 0.8 compiles as C++17 only (its constructors spelled with template arguments are
// ill-formed in C++20), so its one translation unit (websocket_endpoint.cpp) is built as C++17 in
// an object library of its own and nothing else includes it. Connections are named by an id;
// every call and callback is on the io_context's thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace asio {
class io_context;
}

namespace lockstep::server {

class WsEndpoint final {
 public:
  struct Handlers {
    /// The handshake's Origin header ("" when absent): false refuses it with 403.
    std::function<bool(const std::string& origin)> allow_origin;
    /// A WebSocket is open; `remote` is "address:port".
    std::function<void(uint64_t connection, const std::string& remote)> opened;
    /// One whole message (reassembled from its fragments), at most max_message_bytes.
    std::function<void(uint64_t connection, bool binary, const std::string& payload)> message;
    /// The connection is gone (closed by either side, or failed); no callback follows for it.
    std::function<void(uint64_t connection)> closed;
  };

  /// max_message_bytes: a bigger message closes its connection with 1009 before it is buffered.
  WsEndpoint(asio::io_context& io, Handlers handlers, uint64_t max_message_bytes);
  ~WsEndpoint();
  WsEndpoint(const WsEndpoint&) = delete;
  WsEndpoint& operator=(const WsEndpoint&) = delete;

  bool listen(const std::string& address, uint16_t port, std::string* error);
  uint16_t port() const;
  void stop_listening();

  /// Queues a binary message; false when the connection is gone.
  bool send(uint64_t connection, const uint8_t* data, size_t size);
  /// Bytes queued on the connection and not yet written to its socket.
  size_t buffered_bytes(uint64_t connection) const;
  /// Starts the closing handshake with a status code (RFC 6455) and a reason.
  void close(uint64_t connection, uint16_t code, const std::string& reason);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lockstep::server
