// A small HTTP/1.1 listener for operations endpoints (metrics, health), on an io_context of its
// own: one request per connection (Connection: close), GET and HEAD only, request line and
// headers bounded in size and time. Not a general web server: no bodies, no keep-alive, no
// chunked encoding.
#pragma once

#include <asio/awaitable.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace lockstep::server {

struct HttpRequest {
  std::string method;  // "GET", "HEAD"
  std::string path;    // the target without its query string
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::string allow;  // the Allow header of a 405
};

/// Answers a parsed request: the body, or 404 for an unknown path, 405 (with allow) for a
/// method the path does not take. Runs on the listener's thread; must not block.
using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

struct HttpListenerLimits {
  uint32_t max_request_bytes = 8192;
  std::chrono::milliseconds request_timeout{5'000};
  uint32_t max_connections = 64;
};

/// What a raw request head parses to: a request, or the status to refuse it with.
struct ParsedHead {
  int status = 0;  // 0 = ok, else 400 / 405 / 505
  HttpRequest request;
};
/// Parses "METHOD SP target SP HTTP/1.x CRLF (header CRLF)* CRLF" (the head only).
ParsedHead parse_http_head(const std::string& head);
/// "HTTP/1.1 <status> <reason>" with Content-Type, Content-Length and Connection: close.
std::string http_response_text(const HttpResponse& response, bool head_only);

class HttpListener final {
 public:
  HttpListener(asio::io_context& io, HttpListenerLimits limits, HttpHandler handler);
  /// Binds and listens; false and *error when it cannot.
  bool open(const std::string& address, uint16_t port, std::string* error);
  uint16_t port() const { return port_; }
  /// Starts accepting on the io_context.
  void start();
  /// Stops accepting; open connections end at their deadline or when the io_context stops.
  void close();

  uint64_t requests() const { return requests_.load(std::memory_order_relaxed); }
  uint64_t rejected() const { return rejected_.load(std::memory_order_relaxed); }

 private:
  asio::awaitable<void> accept_loop();
  asio::awaitable<void> serve(asio::ip::tcp::socket socket);

  asio::io_context& io_;
  HttpListenerLimits limits_;
  HttpHandler handler_;
  asio::ip::tcp::acceptor acceptor_;
  uint16_t port_ = 0;
  uint32_t connections_ = 0;
  std::atomic<uint64_t> requests_{0};
  std::atomic<uint64_t> rejected_{0};
};

}  // namespace lockstep::server
