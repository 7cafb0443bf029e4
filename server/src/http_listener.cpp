// The operations HTTP listener: accept, read one bounded request head under a deadline, answer,
// close.
#include "http_listener.h"

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/experimental/as_tuple.hpp>
#include <asio/read_until.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/write.hpp>
#include <string_view>
#include <utility>

#include <fmt/format.h>

namespace lockstep::server {
namespace {

constexpr auto use_nothrow = asio::experimental::as_tuple(asio::use_awaitable);

const char* reason_phrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 431:
      return "Request Header Fields Too Large";
    case 503:
      return "Service Unavailable";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Unknown";
  }
}

HttpResponse plain(int status, std::string body) {
  HttpResponse response;
  response.status = status;
  response.body = std::move(body);
  return response;
}

bool is_token_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

}  // namespace

ParsedHead parse_http_head(const std::string& head) {
  ParsedHead parsed;
  parsed.status = 400;
  const size_t line_end = head.find("\r\n");
  if (line_end == std::string::npos) return parsed;
  const std::string_view line(head.data(), line_end);
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    return parsed;
  }
  const std::string_view method = line.substr(0, sp1);
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  if (method.empty() || method.size() > 16) return parsed;
  for (char c : method) {
    if (c < 'A' || c > 'Z') return parsed;
  }
  if (target.empty() || target[0] != '/') return parsed;
  for (char c : target) {
    if (static_cast<unsigned char>(c) <= 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
      return parsed;
    }
  }
  if (version != "HTTP/1.1" && version != "HTTP/1.0") {
    if (version.substr(0, 5) == "HTTP/") parsed.status = 505;
    return parsed;
  }
  // Header lines: "name: value", the name a token.
  size_t at = line_end + 2;
  while (at < head.size()) {
    const size_t end = head.find("\r\n", at);
    if (end == std::string::npos) return parsed;
    if (end == at) break;  // the blank line
    const std::string_view header(head.data() + at, end - at);
    const size_t colon = header.find(':');
    if (colon == std::string_view::npos || colon == 0) return parsed;
    for (char c : header.substr(0, colon)) {
      if (!is_token_char(c)) return parsed;
    }
    at = end + 2;
  }
  parsed.status = 0;
  parsed.request.method = std::string(method);
  parsed.request.path = std::string(target.substr(0, target.find('?')));
  return parsed;
}

std::string http_response_text(const HttpResponse& response, bool head_only) {
  std::string text = fmt::format(
      "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n"
      "Cache-Control: no-store\r\n",
      response.status, reason_phrase(response.status), response.content_type, response.body.size());
  if (!response.allow.empty()) text += "Allow: " + response.allow + "\r\n";
  text += "\r\n";
  if (!head_only) text += response.body;
  return text;
}

HttpListener::HttpListener(asio::io_context& io, HttpListenerLimits limits, HttpHandler handler)
    : io_(io), limits_(limits), handler_(std::move(handler)), acceptor_(io) {}

bool HttpListener::open(const std::string& address, uint16_t port, std::string* error) {
  std::error_code ec;
  const asio::ip::address ip = asio::ip::make_address(address, ec);
  if (ec) {
    *error = fmt::format("bad metrics bind address '{}': {}", address, ec.message());
    return false;
  }
  const asio::ip::tcp::endpoint endpoint(ip, port);
  acceptor_.open(endpoint.protocol(), ec);
  if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(endpoint, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    *error = fmt::format("cannot listen for metrics on {}:{}: {}", address, port, ec.message());
    std::error_code ignored;
    acceptor_.close(ignored);
    return false;
  }
  port_ = acceptor_.local_endpoint(ec).port();
  return true;
}

void HttpListener::start() {
  asio::co_spawn(
      io_, [this] { return accept_loop(); }, asio::detached);
}

void HttpListener::close() {
  std::error_code ignored;
  acceptor_.close(ignored);
}

asio::awaitable<void> HttpListener::accept_loop() {
  for (;;) {
    auto [ec, socket] = co_await acceptor_.async_accept(use_nothrow);
    if (!acceptor_.is_open() || ec == asio::error::operation_aborted) co_return;
    if (ec) {
      asio::steady_timer backoff(io_, std::chrono::milliseconds(50));  // e.g. out of descriptors
      co_await backoff.async_wait(use_nothrow);
      continue;
    }
    if (connections_ >= limits_.max_connections) {
      rejected_.fetch_add(1, std::memory_order_relaxed);
      std::error_code ignored;
      socket.close(ignored);
      continue;
    }
    ++connections_;
    asio::co_spawn(
        io_, [this, s = std::move(socket)]() mutable { return serve(std::move(s)); },
        asio::detached);
  }
}

asio::awaitable<void> HttpListener::serve(asio::ip::tcp::socket socket_in) {
  auto socket = std::make_shared<asio::ip::tcp::socket>(std::move(socket_in));
  auto timed_out = std::make_shared<bool>(false);
  asio::steady_timer deadline(io_);
  auto arm = [&deadline, socket, timed_out](std::chrono::milliseconds after) {
    deadline.expires_after(after);
    deadline.async_wait([socket, timed_out](std::error_code ec) {
      if (ec) return;
      *timed_out = true;
      std::error_code ignored;
      socket->cancel(ignored);
    });
  };
  arm(limits_.request_timeout);

  std::string buffer;
  auto [read_error, head_size] = co_await asio::async_read_until(
      *socket, asio::dynamic_buffer(buffer, limits_.max_request_bytes), "\r\n\r\n", use_nothrow);
  HttpResponse response;
  bool head_only = false;
  bool answer = true;
  if (read_error) {
    if (*timed_out) {
      response = plain(408, "the request did not arrive in time\n");
    } else if (read_error == asio::error::not_found) {
      response =
          plain(431, fmt::format("the request head is over {} bytes\n", limits_.max_request_bytes));
    } else if (buffer.empty()) {
      answer = false;  // connected and left
    } else {
      response = plain(400, "the request ended before its blank line\n");
    }
  } else {
    const ParsedHead parsed = parse_http_head(buffer.substr(0, head_size));
    if (parsed.status != 0) {
      response = plain(parsed.status, "malformed request\n");
    } else {
      head_only = parsed.request.method == "HEAD";
      response = handler_(parsed.request);
    }
  }
  if (answer) {
    requests_.fetch_add(1, std::memory_order_relaxed);
    if (response.status >= 400 && response.status < 500) {
      rejected_.fetch_add(1, std::memory_order_relaxed);
    }
    // A fresh deadline for the answer: a client that does not read cannot hold the connection.
    *timed_out = false;
    arm(limits_.request_timeout);
    const std::string text = http_response_text(response, head_only);
    co_await asio::async_write(*socket, asio::buffer(text), use_nothrow);
  }
  deadline.cancel();
  std::error_code ignored;
  socket->shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  socket->close(ignored);
  --connections_;
}

}  // namespace lockstep::server
