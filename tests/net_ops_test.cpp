// The operations endpoints over real loopback sockets: /metrics, /healthz and /readyz answers,
// malformed, oversized and slow requests, the Prometheus exposition of known counters, and the
// Agones lifecycle recorded by a stand-in for the SDK sidecar.
#include <gtest/gtest.h>
#include <poll.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/experimental/as_tuple.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/read.hpp>
#include <asio/read_until.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/write.hpp>

#include "http_listener.h"  // server/src: the request-head parser
#include "lockstep/schema/frame.h"
#include "lockstep/schema/messages.h"
#include "lockstep/server/ops.h"
#include "lockstep/server/server.h"
#include "net_test_harness.h"

namespace lockstep {
namespace {

using namespace std::chrono_literals;
using asio::ip::tcp;
using net_test::eventually;
using net_test::kHangGuard;

// ---- a blocking HTTP client ----------------------------------------------------------------

/// A connection to 127.0.0.1:port that reads until the server closes it.
class RawHttp {
 public:
  explicit RawHttp(uint16_t port) : socket_(io_) {
    socket_.connect(tcp::endpoint(asio::ip::address_v4::loopback(), port));
  }
  void send(const std::string& bytes) {
    std::error_code ec;
    asio::write(socket_, asio::buffer(bytes), ec);
  }
  void shutdown_send() {
    std::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_send, ignored);
  }
  /// Everything until the end of the stream (or kHangGuard).
  std::string read_all() {
    std::string out;
    const auto deadline = std::chrono::steady_clock::now() + kHangGuard;
    char buffer[4096];
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd pfd{socket_.native_handle(), POLLIN, 0};
      if (::poll(&pfd, 1, 100) <= 0) continue;
      std::error_code ec;
      const size_t n = socket_.read_some(asio::buffer(buffer), ec);
      if (ec) return out;
      out.append(buffer, n);
    }
    ADD_FAILURE() << "the connection did not end within the hang guard";
    return out;
  }

 private:
  asio::io_context io_;
  tcp::socket socket_;
};

std::string request(uint16_t port, const std::string& bytes) {
  RawHttp http(port);
  http.send(bytes);
  return http.read_all();
}
std::string get(uint16_t port, const std::string& path, const std::string& method = "GET") {
  return request(port, method + " " + path + " HTTP/1.1\r\nHost: test\r\n\r\n");
}
int status_of(const std::string& response) {
  if (response.rfind("HTTP/1.1 ", 0) != 0 || response.size() < 12) return 0;
  return std::atoi(response.c_str() + 9);
}
std::string body_of(const std::string& response) {
  const size_t at = response.find("\r\n\r\n");
  return at == std::string::npos ? std::string() : response.substr(at + 4);
}
/// The value of an exposition line `name value` (the exact series name, labels included); -1
/// when there is no such line (every series here is ≥ 0).
double sample(const std::string& text, const std::string& series) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind(series + " ", 0) == 0) {
      return std::strtod(line.c_str() + series.size() + 1, nullptr);
    }
  }
  return -1;
}

// ---- a server with the ops service ----------------------------------------------------------

class OpsServer {
 public:
  OpsServer(server::ServerConfig config, server::OpsConfig ops_config)
      : server_(config), ops_(ops_config) {
    std::string error;
    started_ = server_.start(&error);
    EXPECT_TRUE(started_) << error;
    EXPECT_TRUE(ops_.start(&error)) << error;
    server_.set_stats_publisher(ops_config.publish_interval,
                                [this](const server::ServerStats& s) { ops_.publish(s); });
    if (started_) thread_ = std::thread([this] { server_.run(); });
  }
  ~OpsServer() {
    stop_server();
    ops_.stop();
  }
  void stop_server() {
    if (!thread_.joinable()) return;
    server_.request_shutdown();
    thread_.join();
  }
  uint16_t port() const { return server_.port(); }
  uint16_t metrics_port() const { return ops_.metrics_port(); }
  server::OpsService& ops() { return ops_; }

 private:
  server::Server server_;
  server::OpsService ops_;
  bool started_ = false;
  std::thread thread_;
};

/// Loopback metrics listener on an ephemeral port; `request_timeout` short only where a test
/// waits for it (elsewhere a busy machine must not turn a request into a 408).
server::OpsConfig metrics_config(std::chrono::milliseconds request_timeout = 10s) {
  server::OpsConfig ops;
  ops.metrics_port = 0;
  ops.metrics_bind = "127.0.0.1";
  ops.publish_interval = 20ms;
  ops.request_timeout = request_timeout;
  return ops;
}

/// A lockstep client that says Hello to `room` (which opens it) and stays until destroyed.
class Joiner {
 public:
  Joiner(uint16_t port, const std::string& room) : socket_(io_) {
    socket_.connect(tcp::endpoint(asio::ip::address_v4::loopback(), port));
    schema::Hello hello;
    hello.room = room;
    hello.player_name = "ops";
    const std::vector<uint8_t> frame = schema::encode_frame(schema::Message(hello));
    asio::write(socket_, asio::buffer(frame.data(), frame.size()));
  }

 private:
  asio::io_context io_;
  tcp::socket socket_;
};

// ---- the request-head parser -----------------------------------------------------------------

TEST(OpsHttp, ParsesRequestHeadsAndRefusesMalformedOnes) {
  server::ParsedHead ok = server::parse_http_head("GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_EQ(ok.status, 0);
  EXPECT_EQ(ok.request.method, "GET");
  EXPECT_EQ(ok.request.path, "/metrics");  // the query is not part of the path
  EXPECT_EQ(server::parse_http_head("HEAD / HTTP/1.0\r\n\r\n").status, 0);
  EXPECT_EQ(server::parse_http_head("get /metrics HTTP/1.1\r\n\r\n").status, 400);
  EXPECT_EQ(server::parse_http_head("GET metrics HTTP/1.1\r\n\r\n").status, 400);
  EXPECT_EQ(server::parse_http_head("GET /metrics\r\n\r\n").status, 400);
  EXPECT_EQ(server::parse_http_head("GET  /metrics HTTP/1.1\r\n\r\n").status, 400);
  EXPECT_EQ(server::parse_http_head("GET /metrics HTTP/1.1\r\nno colon\r\n\r\n").status, 400);
  EXPECT_EQ(server::parse_http_head("GET /metrics HTTP/1.1\r\n: empty name\r\n\r\n").status, 400);
  EXPECT_EQ(server::parse_http_head("GET /a\x01 HTTP/1.1\r\n\r\n").status, 400);
  EXPECT_EQ(server::parse_http_head("GET /metrics HTTP/2.0\r\n\r\n").status, 505);
  EXPECT_EQ(server::parse_http_head("\x16\x03\x01garbage\r\n\r\n").status, 400);
  EXPECT_EQ(server::parse_http_head("").status, 400);
}

// ---- the exposition --------------------------------------------------------------------------

TEST(OpsMetrics, ExpositionAddsOpenAndClosedRoomsAndBucketsTheLateness) {
  server::ServerStats stats;
  server::RoomStats open;
  open.open = true;
  open.tick = 100;
  open.clients = 2;
  open.inputs_rejected = 3;
  open.lateness.record(100us);  // < 2^17 ns
  open.lateness.record(100us);
  open.lateness.record(100us);
  open.lateness.record(3ms);          // < 2^22 ns
  server::RoomStats stopping = open;  // a live room that is shutting down: counted, not open
  stopping.open = false;
  stopping.clients = 0;
  server::RoomStats closed;
  closed.tick = 50;
  closed.inputs_rejected = 1;
  closed.lateness.record(1s);  // < 2^30 ns
  server::add_room_counters(&stats.closed_rooms_total, closed);
  stats.rooms = {open, stopping, closed};  // the closed one is listed, and in the totals once
  stats.live_rooms = 2;
  stats.rooms_closed = 1;
  stats.desync_reports = 7;

  const std::string text = server::prometheus_text(stats, server::ExpositionExtras{});
  EXPECT_EQ(sample(text, "lockstep_rooms"), 1.0);
  EXPECT_EQ(sample(text, "lockstep_rooms_closed_total"), 1.0);
  EXPECT_EQ(sample(text, "lockstep_clients"), 2.0);
  EXPECT_EQ(sample(text, "lockstep_ticks_total"), 250.0);
  EXPECT_EQ(sample(text, "lockstep_inputs_total{result=\"rejected\"}"), 7.0);
  EXPECT_EQ(sample(text, "lockstep_desync_reports_total"), 7.0);
  EXPECT_EQ(sample(text, "lockstep_tick_lateness_seconds_count"), 9.0);
  EXPECT_EQ(sample(text, "lockstep_tick_lateness_seconds_bucket{le=\"+Inf\"}"), 9.0);
  // Cumulative counts at the power-of-two bounds, read back by their numeric bound.
  auto bucket = [&text](double bound_ns) {
    std::istringstream lines(text);
    std::string line;
    const std::string prefix = "lockstep_tick_lateness_seconds_bucket{le=\"";
    while (std::getline(lines, line)) {
      if (line.rfind(prefix, 0) != 0 || line[prefix.size()] == '+') continue;
      const double le = std::strtod(line.c_str() + prefix.size(), nullptr);
      if (std::abs(le * 1e9 - bound_ns) < 1e-3) {
        return std::strtod(line.c_str() + line.find("} ") + 2, nullptr);
      }
    }
    return -1.0;
  };
  EXPECT_EQ(bucket(65536), 0.0);
  EXPECT_EQ(bucket(131072), 6.0);
  EXPECT_EQ(bucket(2097152), 6.0);
  EXPECT_EQ(bucket(4194304), 8.0);
  EXPECT_EQ(bucket(1073741824), 9.0);
  const double sum = sample(text, "lockstep_tick_lateness_seconds_sum");
  EXPECT_NEAR(sum, 6 * 100e-6 + 2 * 3e-3 + 1.0, 1e-9);
  // Every line is a comment or `series value`, and ends the text with a newline.
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');
}

// ---- the endpoints ---------------------------------------------------------------------------

TEST(OpsHttp, ServesMetricsHealthAndReadiness) {
  OpsServer server(net_test::loopback_config(), metrics_config());
  const uint16_t port = server.metrics_port();
  ASSERT_NE(port, 0);
  ASSERT_TRUE(eventually([&] { return status_of(get(port, "/healthz")) == 200; }));
  EXPECT_EQ(body_of(get(port, "/healthz")), "ok\n");
  EXPECT_EQ(status_of(get(port, "/readyz")), 200);
  EXPECT_EQ(status_of(get(port, "/healthz?verbose=1")), 200);

  const std::string metrics = get(port, "/metrics");
  EXPECT_EQ(status_of(metrics), 200);
  EXPECT_NE(metrics.find("Content-Type: text/plain; version=0.0.4"), std::string::npos);
  EXPECT_EQ(sample(body_of(metrics), "lockstep_up"), 1.0);
  EXPECT_EQ(sample(body_of(metrics), "lockstep_ready"), 1.0);
  EXPECT_NE(body_of(metrics).find("lockstep_thread_cpu_seconds_total{"), std::string::npos);

  const std::string head = get(port, "/metrics", "HEAD");
  EXPECT_EQ(status_of(head), 200);
  EXPECT_EQ(body_of(head), "");  // headers only
  EXPECT_EQ(head.find("Content-Length: 0\r\n"), std::string::npos);

  // A room opened by a client shows up in the counters.
  Joiner joiner(server.port(), "ops-room");
  std::string text;
  EXPECT_TRUE(eventually([&] {
    text = body_of(get(port, "/metrics"));
    return sample(text, "lockstep_rooms") == 1.0 && sample(text, "lockstep_clients") == 1.0 &&
           sample(text, "lockstep_ticks_total") > 0;
  })) << text;

  // Shutting down: no longer ready, still healthy while its counters are fresh.
  server.stop_server();
  EXPECT_EQ(status_of(get(port, "/readyz")), 503);
  EXPECT_EQ(sample(body_of(get(port, "/metrics")), "lockstep_ready"), 0.0);
}

TEST(OpsHttp, RefusesWhatItDoesNotServe) {
  OpsServer server(net_test::loopback_config(), metrics_config());
  const uint16_t port = server.metrics_port();
  ASSERT_NE(port, 0);
  EXPECT_EQ(status_of(get(port, "/")), 404);
  EXPECT_EQ(status_of(get(port, "/metrics/extra")), 404);
  const std::string post = get(port, "/metrics", "POST");
  EXPECT_EQ(status_of(post), 405);
  EXPECT_NE(post.find("Allow: GET, HEAD\r\n"), std::string::npos);
  EXPECT_EQ(status_of(get(port, "/healthz", "DELETE")), 405);
  EXPECT_EQ(status_of(request(port, "BLAH\r\n\r\n")), 400);
  EXPECT_EQ(status_of(request(port, "GET /metrics HTTP/9.9\r\n\r\n")), 505);
  // Binary noise ending in a blank line.
  EXPECT_EQ(status_of(request(port, std::string("\x16\x03\x01\x00\xff\r\n\r\n", 9))), 400);
  // The head ends with the stream, before its blank line.
  {
    RawHttp http(port);
    http.send("GET /metrics HTTP/1.1\r\nHost: x\r\n");
    http.shutdown_send();
    EXPECT_EQ(status_of(http.read_all()), 400);
  }
}

TEST(OpsHttp, AnswersAnOversizedHeadWith431AndCloses) {
  OpsServer server(net_test::loopback_config(), metrics_config());
  const uint16_t port = server.metrics_port();
  ASSERT_NE(port, 0);
  const std::string huge =
      "GET /metrics HTTP/1.1\r\nX-Pad: " + std::string(20'000, 'a') + "\r\n\r\n";
  const std::string response = request(port, huge);
  EXPECT_EQ(status_of(response), 431) << response.substr(0, 200);
  // The listener still serves afterwards.
  EXPECT_TRUE(eventually([&] { return status_of(get(port, "/healthz")) == 200; }));
}

TEST(OpsHttp, ASlowClientTimesOutWithoutHoldingOthersUp) {
  OpsServer server(net_test::loopback_config(), metrics_config(300ms));
  const uint16_t port = server.metrics_port();
  ASSERT_NE(port, 0);
  RawHttp slow(port);
  slow.send("GET /hea");  // and nothing more
  RawHttp silent(port);   // sends nothing at all
  // Others are served while those two wait.
  EXPECT_TRUE(eventually([&] { return status_of(get(port, "/healthz")) == 200; }));
  // Both are answered 408 once the request timeout has passed, and closed.
  const std::string slow_answer = slow.read_all();
  EXPECT_EQ(status_of(slow_answer), 408) << slow_answer;
  EXPECT_EQ(status_of(silent.read_all()), 408);
}

TEST(OpsHttp, ClosesConnectionsOverItsLimitUnanswered) {
  server::OpsConfig ops = metrics_config();
  ops.max_http_connections = 2;
  OpsServer server(net_test::loopback_config(), ops);
  const uint16_t port = server.metrics_port();
  ASSERT_NE(port, 0);
  auto first = std::make_unique<RawHttp>(port);  // accepted in order, idle
  auto second = std::make_unique<RawHttp>(port);
  RawHttp third(port);
  third.send("GET /healthz HTTP/1.1\r\n\r\n");
  EXPECT_EQ(third.read_all(), "");  // closed without an answer
  first.reset();                    // the two idle ones leave: room again
  second.reset();
  std::string text;
  EXPECT_TRUE(eventually([&] {
    text = body_of(get(port, "/metrics"));
    return sample(text, "lockstep_http_rejected_total") >= 1;
  })) << text;
}

// ---- Agones ----------------------------------------------------------------------------------

/// A stand-in for the Agones SDK sidecar: records "METHOD path body" of every request and
/// answers 200 (or 503 to the first `refuse_ready` Ready calls).
class SidecarRecorder {
 public:
  explicit SidecarRecorder(int refuse_ready = 0) : refuse_ready_(refuse_ready), acceptor_(io_) {
    acceptor_.open(tcp::v4());
    acceptor_.bind(tcp::endpoint(asio::ip::address_v4::loopback(), 0));
    acceptor_.listen();
    port_ = acceptor_.local_endpoint().port();
    asio::co_spawn(io_, accept_loop(), asio::detached);
    thread_ = std::thread([this] { io_.run(); });
  }
  ~SidecarRecorder() {
    io_.stop();
    thread_.join();
  }
  uint16_t port() const { return port_; }
  std::vector<std::string> calls() const {
    std::lock_guard lock(mutex_);
    return calls_;
  }
  size_t count(const std::string& call) const {
    const std::vector<std::string> all = calls();
    return static_cast<size_t>(std::count(all.begin(), all.end(), call));
  }

 private:
  asio::awaitable<void> accept_loop() {
    constexpr auto nothrow = asio::experimental::as_tuple(asio::use_awaitable);
    for (;;) {
      auto [ec, socket] = co_await acceptor_.async_accept(nothrow);
      if (ec) co_return;
      std::string buffer;
      auto [read_error, head] = co_await asio::async_read_until(
          socket, asio::dynamic_buffer(buffer), "\r\n\r\n", nothrow);
      if (read_error) continue;
      const std::string start = buffer.substr(0, buffer.find("\r\n"));
      size_t length = 0;
      if (const size_t at = buffer.find("Content-Length: "); at != std::string::npos) {
        length = std::strtoul(buffer.c_str() + at + 16, nullptr, 10);
      }
      while (buffer.size() < head + length) {
        char more[512];
        auto [more_error, n] = co_await socket.async_read_some(asio::buffer(more), nothrow);
        if (more_error) break;
        buffer.append(more, n);
      }
      const std::string method = start.substr(0, start.find(' '));
      const std::string path =
          start.substr(start.find(' ') + 1, start.rfind(' ') - start.find(' ') - 1);
      const std::string call = method + " " + path + " " + buffer.substr(head, length);
      bool refuse = false;
      {
        std::lock_guard lock(mutex_);
        if (path == "/ready" && refused_ < refuse_ready_) {
          ++refused_;
          refuse = true;
        }
        calls_.push_back((refuse ? "refused " : "") + call);
      }
      const std::string answer =
          refuse ? "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n"
                 : "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                   "Content-Length: 2\r\n\r\n{}";
      co_await asio::async_write(socket, asio::buffer(answer), nothrow);
    }
  }

  int refuse_ready_;
  int refused_ = 0;
  asio::io_context io_;
  tcp::acceptor acceptor_;
  uint16_t port_ = 0;
  mutable std::mutex mutex_;
  std::vector<std::string> calls_;
  std::thread thread_;
};

server::OpsConfig agones_config(uint16_t port) {
  server::OpsConfig ops;
  ops.agones = true;
  ops.agones_port = port;
  ops.agones_health_interval = 50ms;
  ops.publish_interval = 20ms;
  return ops;
}

size_t index_of(const std::vector<std::string>& calls, const std::string& call) {
  for (size_t i = 0; i < calls.size(); ++i) {
    if (calls[i] == call) return i;
  }
  return SIZE_MAX;
}

TEST(OpsAgones, ReadyHealthRoomLabelThenShutdownWhenTheLastRoomCloses) {
  SidecarRecorder sidecar;
  server::ServerConfig config = net_test::loopback_config();
  config.empty_room_grace = 50ms;
  OpsServer server(config, agones_config(sidecar.port()));
  const std::string ready = "POST /ready {}";
  const std::string health = "POST /health {}";
  const std::string label0 = R"(PUT /metadata/label {"key":"lockstep-rooms","value":"0"})";
  const std::string label1 = R"(PUT /metadata/label {"key":"lockstep-rooms","value":"1"})";
  const std::string shutdown = "POST /shutdown {}";
  ASSERT_TRUE(eventually([&] { return sidecar.count(health) >= 2 && sidecar.count(label0) == 1; }));
  EXPECT_EQ(sidecar.calls().front(), ready);
  EXPECT_EQ(sidecar.count(ready), 1u);
  EXPECT_EQ(sidecar.count(shutdown), 0u);  // no match yet: an idle fresh server stays up
  {
    Joiner joiner(server.port(), "match");
    ASSERT_TRUE(eventually([&] { return sidecar.count(label1) == 1; }));
  }  // the client leaves; the empty room closes after its grace
  ASSERT_TRUE(eventually([&] { return sidecar.count(shutdown) == 1; }));
  const std::vector<std::string> calls = sidecar.calls();
  const size_t first_label0 = index_of(calls, label0);
  const size_t at_label1 = index_of(calls, label1);
  size_t last_label0 = 0;
  for (size_t i = 0; i < calls.size(); ++i) {
    if (calls[i] == label0) last_label0 = i;
  }
  EXPECT_LT(first_label0, at_label1);
  EXPECT_LT(at_label1, last_label0);                  // back to 0 rooms...
  EXPECT_LT(last_label0, index_of(calls, shutdown));  // ...then Shutdown
  // The sidecar has the call before the server has read its answer: wait for the counter.
  EXPECT_TRUE(eventually([&] { return server.ops().agones_counters().shutdown_sent; }));
}

TEST(OpsAgones, RetriesReadyUntilTheSidecarAcceptsIt) {
  SidecarRecorder sidecar(/*refuse_ready=*/2);
  OpsServer server(net_test::loopback_config(), agones_config(sidecar.port()));
  ASSERT_TRUE(eventually([&] { return sidecar.count("POST /ready {}") == 1; }));
  EXPECT_EQ(sidecar.count("refused POST /ready {}"), 2u);
  EXPECT_TRUE(eventually([&] { return server.ops().agones_counters().ready_sent; }));
  // The two refusals at least (a call that misses its deadline on a busy machine adds one).
  EXPECT_GE(server.ops().agones_counters().calls_failed, 2u);
  // Nothing else is sent before Ready is accepted.
  const std::vector<std::string> calls = sidecar.calls();
  EXPECT_EQ(calls[0], "refused POST /ready {}");
  EXPECT_EQ(calls[1], "refused POST /ready {}");
  EXPECT_EQ(calls[2], "POST /ready {}");
}

TEST(OpsConfig, RejectsBadValues) {
  server::OpsConfig ops;
  EXPECT_EQ(server::ops_config_error(ops), "");
  ops.metrics_port = 70000;
  EXPECT_NE(server::ops_config_error(ops), "");
  ops = server::OpsConfig{};
  ops.stale_after = ops.publish_interval;
  EXPECT_NE(server::ops_config_error(ops), "");
  ops = server::OpsConfig{};
  ops.metrics_port = 0;
  ops.metrics_bind = "not an address";
  server::OpsService service(ops);
  std::string error;
  EXPECT_FALSE(service.start(&error));
  EXPECT_NE(error.find("not an address"), std::string::npos) << error;
}

}  // namespace
}  // namespace lockstep
