// The server's WebSocket listener (ServerConfig::ws_port) with a raw WebSocket client: a join
// that runs like TCP's, and every kind of bad input a browser-side peer can send (text, a message
// that is not one frame, an over-cap length, an over-size message, fragments, a bad Origin, no
// Hello, too many connections from one address). Also the bridge's pure rules.
//
// The client speaks just enough RFC 6455 to test the server: the upgrade request, masked frames
// out (FIN and opcode chosen by the test, so fragments can be sent), unmasked frames in.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <asio/connect.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/read.hpp>
#include <asio/read_until.hpp>
#include <asio/streambuf.hpp>
#include <asio/write.hpp>

#include "lockstep/schema/limits.h"
#include "lockstep/schema/messages.h"
#include "net_test_harness.h"
#include "websocket_listener.h"

namespace {

using namespace lockstep;
using net_test::InProcessServer;

constexpr uint8_t kText = 0x1, kBinary = 0x2, kContinuation = 0x0, kClose = 0x8, kPing = 0x9;

struct WsFrame {
  uint8_t opcode = 0;
  std::vector<uint8_t> payload;
  uint16_t close_code() const {
    return payload.size() >= 2 ? static_cast<uint16_t>(payload[0] << 8 | payload[1]) : 0;
  }
  std::string close_reason() const {
    return payload.size() > 2 ? std::string(payload.begin() + 2, payload.end()) : std::string();
  }
};

class WsClient {
 public:
  /// Connects and sends the upgrade request with `origin` ("" = no Origin header); status() is
  /// the HTTP status of the answer (101 when upgraded).
  WsClient(uint16_t port, const std::string& origin = "") : socket_(io_) {
    socket_.connect({asio::ip::make_address("127.0.0.1"), port});
    std::string request =
        "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n";
    if (!origin.empty()) request += "Origin: " + origin + "\r\n";
    request += "\r\n";
    asio::write(socket_, asio::buffer(request));
    std::error_code ec;
    asio::read_until(socket_, head_, "\r\n\r\n", ec);
    std::string line;
    std::istream in(&head_);
    std::getline(in, line);
    if (line.size() > 12) status_ = std::stoi(line.substr(9, 3));
    // Skip the rest of the head; what follows it stays in head_ for the frame reader.
    for (std::string header; std::getline(in, header) && header != "\r";) {
    }
  }

  int status() const { return status_; }

  void send(uint8_t opcode, const std::vector<uint8_t>& payload, bool fin = true) {
    std::vector<uint8_t> out;
    out.push_back(static_cast<uint8_t>((fin ? 0x80 : 0) | opcode));
    const size_t n = payload.size();
    if (n < 126) {
      out.push_back(static_cast<uint8_t>(0x80 | n));
    } else if (n < 65536) {
      out.insert(out.end(), {0x80 | 126, static_cast<uint8_t>(n >> 8), static_cast<uint8_t>(n)});
    } else {
      out.push_back(0x80 | 127);
      for (int shift = 56; shift >= 0; shift -= 8)
        out.push_back(static_cast<uint8_t>(uint64_t{n} >> shift));
    }
    const std::array<uint8_t, 4> mask = {0x37, 0xfa, 0x21, 0x3d};
    out.insert(out.end(), mask.begin(), mask.end());
    for (size_t i = 0; i < n; ++i)
      out.push_back(payload[i] ^ mask[i % 4]);
    std::error_code ec;
    asio::write(socket_, asio::buffer(out), ec);
  }

  void send_message(const schema::Message& message) {
    send(kBinary, schema::encode_frame(message));
  }

  /// The next frame, or nullopt when the connection ended (or kHangGuard passed).
  std::optional<WsFrame> read() {
    uint8_t header[2];
    if (!read_exact(header, 2)) return std::nullopt;
    uint64_t n = header[1] & 0x7f;
    if (n == 126) {
      uint8_t b[2];
      if (!read_exact(b, 2)) return std::nullopt;
      n = uint64_t{b[0]} << 8 | b[1];
    } else if (n == 127) {
      uint8_t b[8];
      if (!read_exact(b, 8)) return std::nullopt;
      n = 0;
      for (uint8_t x : b)
        n = n << 8 | x;
    }
    WsFrame frame;
    frame.opcode = header[0] & 0x0f;
    frame.payload.resize(n);
    if (n != 0 && !read_exact(frame.payload.data(), n)) return std::nullopt;
    return frame;
  }

  /// The next protocol message (skipping pings), or nullopt at a close or the end.
  std::optional<schema::Message> read_message(WsFrame* close = nullptr) {
    for (;;) {
      std::optional<WsFrame> frame = read();
      if (!frame) return std::nullopt;
      if (frame->opcode == kPing) continue;
      if (frame->opcode == kClose) {
        if (close != nullptr) *close = *frame;
        return std::nullopt;
      }
      EXPECT_EQ(frame->opcode, kBinary);
      EXPECT_GE(frame->payload.size(), 4u);
      schema::Message message;
      EXPECT_TRUE(schema::decode_body(std::span(frame->payload).subspan(4), &message).ok());
      return message;
    }
  }

  /// Reads until the close frame; every protocol message before it lands in *messages.
  std::optional<WsFrame> read_until_close(std::vector<schema::Message>* messages = nullptr) {
    WsFrame close;
    for (;;) {
      std::optional<schema::Message> m = read_message(&close);
      if (!m) return close.opcode == kClose ? std::optional<WsFrame>(close) : std::nullopt;
      if (messages != nullptr) messages->push_back(std::move(*m));
    }
  }

 private:
  bool read_exact(uint8_t* out, uint64_t n) {
    // First what the head's read took past it.
    while (n > 0 && head_.size() > 0) {
      const size_t take = std::min<size_t>(n, head_.size());
      asio::buffer_copy(asio::buffer(out, take), head_.data());
      head_.consume(take);
      out += take;
      n -= take;
    }
    if (n == 0) return true;
    std::error_code ec;
    asio::read(socket_, asio::buffer(out, n), ec);
    return !ec;
  }

  asio::io_context io_;
  asio::ip::tcp::socket socket_;
  asio::streambuf head_;
  int status_ = 0;
};

server::ServerConfig ws_config() {
  server::ServerConfig config = net_test::loopback_config();
  config.ws_port = 0;
  config.scene = "bounce";
  return config;
}

schema::Hello hello(const std::string& room = "ws") {
  schema::Hello h;
  h.room = room;
  h.player_name = "browser";
  return h;
}

template <class T>
bool holds(const std::optional<schema::Message>& m) {
  return m && std::holds_alternative<T>(*m);
}

TEST(WebSocketRules, OneBinaryFrameIsForwarded) {
  std::vector<uint8_t> frame = schema::encode_frame(hello());
  EXPECT_EQ(server::classify_ws_message(true, frame), server::WsMessageVerdict::forward);
  EXPECT_EQ(server::classify_ws_message(false, frame), server::WsMessageVerdict::text);
  frame.push_back(0);
  EXPECT_EQ(server::classify_ws_message(true, frame), server::WsMessageVerdict::not_one_frame);
  EXPECT_EQ(server::classify_ws_message(true, std::vector<uint8_t>{1, 0}),
            server::WsMessageVerdict::not_one_frame);
  // A length over the cap is the session's to refuse, as on TCP.
  EXPECT_EQ(server::classify_ws_message(true, std::vector<uint8_t>{0xff, 0xff, 0xff, 0x7f}),
            server::WsMessageVerdict::forward);
  EXPECT_EQ(server::ws_max_message_bytes(), uint64_t{schema::kMaxClientFrameBytes} + 4);
}

TEST(WebSocketRules, OriginAllowList) {
  EXPECT_TRUE(server::ws_origin_allowed({}, ""));
  EXPECT_TRUE(server::ws_origin_allowed({}, "http://anything"));
  const std::vector<std::string> allowed = {"https://game.example"};
  EXPECT_TRUE(server::ws_origin_allowed(allowed, "https://game.example"));
  EXPECT_FALSE(server::ws_origin_allowed(allowed, "https://game.example.evil"));
  EXPECT_FALSE(server::ws_origin_allowed(allowed, ""));
}

TEST(WebSocketRules, SplitterCutsWholeFramesAcrossReads) {
  const std::vector<uint8_t> a = schema::encode_frame(hello("a"));
  const std::vector<uint8_t> b = schema::encode_frame(hello("bb"));
  std::vector<uint8_t> stream = a;
  stream.insert(stream.end(), b.begin(), b.end());
  server::FrameSplitter splitter(1024);
  std::vector<std::vector<uint8_t>> frames;
  auto collect = [&](std::span<const uint8_t> f) { frames.emplace_back(f.begin(), f.end()); };
  for (size_t at = 0; at < stream.size(); at += 3) {
    const size_t n = std::min<size_t>(3, stream.size() - at);
    ASSERT_TRUE(splitter.feed(std::span(stream).subspan(at, n), collect));
  }
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0], a);
  EXPECT_EQ(frames[1], b);
  server::FrameSplitter small(8);
  EXPECT_FALSE(small.feed(std::vector<uint8_t>{9, 0, 0, 0}, collect));
}

TEST(WebSocket, JoinsAndFollowsTheRoomLikeTcp) {
  InProcessServer server(ws_config());
  ASSERT_TRUE(server.started());
  ASSERT_NE(server.server().ws_port(), 0);
  WsClient client(server.server().ws_port(), "http://page.example");
  ASSERT_EQ(client.status(), 101);
  client.send_message(hello());
  std::optional<schema::Message> welcome = client.read_message();
  ASSERT_TRUE(holds<schema::Welcome>(welcome));
  EXPECT_EQ(std::get<schema::Welcome>(*welcome).scene, "bounce");
  ASSERT_TRUE(holds<schema::Snapshot>(client.read_message()));
  // TickFrames follow one per tick, each one message.
  uint64_t last = 0;
  for (int i = 0; i < 5; ++i) {
    std::optional<schema::Message> m = client.read_message();
    while (m && !std::holds_alternative<schema::TickFrame>(*m))
      m = client.read_message();
    ASSERT_TRUE(holds<schema::TickFrame>(m));
    const uint64_t tick = std::get<schema::TickFrame>(*m).tick;
    if (last != 0) {
      EXPECT_EQ(tick, last + 1);
    }
    last = tick;
  }
  // A Ping is answered as on TCP.
  client.send_message(schema::Ping{12345});
  std::optional<schema::Message> m = client.read_message();
  while (m && !std::holds_alternative<schema::Pong>(*m))
    m = client.read_message();
  ASSERT_TRUE(holds<schema::Pong>(m));
  EXPECT_EQ(std::get<schema::Pong>(*m).client_time_ns, 12345u);
  // The session is an ordinary one: counted with the others.
  server::ServerStats stats;
  EXPECT_TRUE(
      server.stats_eventually([](const auto& s) { return s.connections_accepted == 1; }, &stats));
}

TEST(WebSocket, FragmentedMessageIsOneFrame) {
  InProcessServer server(ws_config());
  ASSERT_TRUE(server.started());
  WsClient client(server.server().ws_port());
  ASSERT_EQ(client.status(), 101);
  const std::vector<uint8_t> frame = schema::encode_frame(hello());
  const size_t half = frame.size() / 2;
  client.send(kBinary, std::vector<uint8_t>(frame.begin(), frame.begin() + half), false);
  client.send(kContinuation, std::vector<uint8_t>(frame.begin() + half, frame.end()), true);
  EXPECT_TRUE(holds<schema::Welcome>(client.read_message()));
}

TEST(WebSocket, TextMessageIsRefused) {
  InProcessServer server(ws_config());
  ASSERT_TRUE(server.started());
  WsClient client(server.server().ws_port());
  ASSERT_EQ(client.status(), 101);
  client.send(kText, {'h', 'i'});
  std::vector<schema::Message> before;
  std::optional<WsFrame> close = client.read_until_close(&before);
  ASSERT_TRUE(close);
  EXPECT_EQ(close->close_code(), 1003);
  EXPECT_NE(close->close_reason().find("binary"), std::string::npos) << close->close_reason();
  EXPECT_TRUE(before.empty()) << "nothing is sent before a Hello";
}

TEST(WebSocket, MessageThatIsNotOneFrameIsRefused) {
  InProcessServer server(ws_config());
  ASSERT_TRUE(server.started());
  WsClient client(server.server().ws_port());
  ASSERT_EQ(client.status(), 101);
  std::vector<uint8_t> two = schema::encode_frame(hello());
  const std::vector<uint8_t> ping = schema::encode_frame(schema::Ping{1});
  two.insert(two.end(), ping.begin(), ping.end());
  client.send(kBinary, two);
  std::vector<schema::Message> before;
  std::optional<WsFrame> close = client.read_until_close(&before);
  ASSERT_TRUE(close);
  EXPECT_EQ(close->close_code(), 1007);
  EXPECT_TRUE(before.empty());
}

TEST(WebSocket, LengthOverTheCapGetsTheTcpError) {
  InProcessServer server(ws_config());
  ASSERT_TRUE(server.started());
  WsClient client(server.server().ws_port());
  ASSERT_EQ(client.status(), 101);
  const uint32_t length = schema::kMaxClientFrameBytes + 1;
  client.send(kBinary, {static_cast<uint8_t>(length), static_cast<uint8_t>(length >> 8),
                        static_cast<uint8_t>(length >> 16), static_cast<uint8_t>(length >> 24)});
  std::vector<schema::Message> messages;
  std::optional<WsFrame> close = client.read_until_close(&messages);
  ASSERT_TRUE(close);
  EXPECT_EQ(close->close_code(), 1000);
  ASSERT_EQ(messages.size(), 1u);
  ASSERT_TRUE(std::holds_alternative<schema::ErrorMessage>(messages[0]));
  const auto& error = std::get<schema::ErrorMessage>(messages[0]);
  EXPECT_EQ(error.code, schema::ErrorCode::bad_frame);
  EXPECT_TRUE(error.fatal);
}

TEST(WebSocket, MessageOverTheLimitIsRefusedBeforeItIsBuffered) {
  InProcessServer server(ws_config());
  ASSERT_TRUE(server.started());
  WsClient client(server.server().ws_port());
  ASSERT_EQ(client.status(), 101);
  std::vector<uint8_t> big(server::ws_max_message_bytes() + 1, 0);
  client.send(kBinary, big);
  std::vector<schema::Message> before;
  std::optional<WsFrame> close = client.read_until_close(&before);
  ASSERT_TRUE(close);
  EXPECT_EQ(close->close_code(), 1009);
  EXPECT_TRUE(before.empty());
}

TEST(WebSocket, OriginOutsideTheAllowListIsRefused) {
  server::ServerConfig config = ws_config();
  config.ws_allowed_origins = {"https://game.example"};
  InProcessServer server(config);
  ASSERT_TRUE(server.started());
  EXPECT_EQ(WsClient(server.server().ws_port(), "https://evil.example").status(), 403);
  EXPECT_EQ(WsClient(server.server().ws_port()).status(), 403);
  WsClient allowed(server.server().ws_port(), "https://game.example");
  ASSERT_EQ(allowed.status(), 101);
  allowed.send_message(hello());
  EXPECT_TRUE(holds<schema::Welcome>(allowed.read_message()));
  // A refused handshake never became a session.
  server::ServerStats stats;
  EXPECT_TRUE(
      server.stats_eventually([](const auto& s) { return s.connections_accepted == 1; }, &stats));
}

TEST(WebSocket, NoHelloTimesOutWithTheTcpError) {
  server::ServerConfig config = ws_config();
  config.hello_timeout = std::chrono::milliseconds(200);
  InProcessServer server(config);
  ASSERT_TRUE(server.started());
  WsClient client(server.server().ws_port());
  ASSERT_EQ(client.status(), 101);
  std::vector<schema::Message> messages;
  std::optional<WsFrame> close = client.read_until_close(&messages);
  ASSERT_TRUE(close);
  ASSERT_EQ(messages.size(), 1u) << "only the Error, nothing before it";
  ASSERT_TRUE(std::holds_alternative<schema::ErrorMessage>(messages[0]));
  EXPECT_EQ(std::get<schema::ErrorMessage>(messages[0]).code, schema::ErrorCode::timeout);
}

TEST(WebSocket, ConnectionsPerAddressCountWithTcp) {
  server::ServerConfig config = ws_config();
  config.max_connections_per_ip = 1;
  InProcessServer server(config);
  ASSERT_TRUE(server.started());
  WsClient first(server.server().ws_port());
  ASSERT_EQ(first.status(), 101);
  first.send_message(hello());
  ASSERT_TRUE(holds<schema::Welcome>(first.read_message()));
  WsClient second(server.server().ws_port());
  ASSERT_EQ(second.status(), 101);
  std::optional<WsFrame> close = second.read_until_close();
  ASSERT_TRUE(close);
  EXPECT_EQ(close->close_code(), 1013);
}

TEST(WebSocket, ClosedBrowserEndsItsSession) {
  InProcessServer server(ws_config());
  ASSERT_TRUE(server.started());
  {
    WsClient client(server.server().ws_port());
    ASSERT_EQ(client.status(), 101);
    client.send_message(hello());
    ASSERT_TRUE(holds<schema::Welcome>(client.read_message()));
    client.send(kClose, {0x03, 0xe8});
    client.read_until_close();
  }
  server::ServerStats stats;
  EXPECT_TRUE(server.stats_eventually([](const auto& s) { return s.sessions_open == 0; }, &stats))
      << stats.sessions_open;
}

}  // namespace
