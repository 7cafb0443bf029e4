// libFuzzer harness of the WebSocket entry: one in-process lockstep server with its WebSocket
// listener (an Origin allow-list, short timeouts) that lives for the whole run, and one raw
// connection per input. The input says how the connection starts — raw bytes from the first one
// (the HTTP upgrade itself is fuzzed), an upgrade with an allowed Origin, one with a refused
// Origin, or an allowed upgrade followed by a valid Hello — and then a list of WebSocket frames
// built from its bytes: opcode and FIN bit, masked or not, length, payload (valid protocol frames
// with a byte changed among them), or raw bytes.
//
// Checked after every input (a breach aborts, a finding):
//   - every binary message the server sent is exactly one protocol frame that decodes;
//   - the server's thread answers a stats request;
//   - once the connection is closed, the server closes every session (none leaks).
// The bridge's pure rules (classify_ws_message, FrameSplitter) also run over the raw input.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>

#include "../../server/src/websocket_listener.h"
#include "lockstep/schema/frame.h"
#include "lockstep/schema/limits.h"
#include "lockstep/schema/messages.h"
#include "lockstep/server/server.h"

namespace {

using namespace lockstep;
using Clock = std::chrono::steady_clock;

constexpr auto kConditionTimeout = std::chrono::seconds(20);
constexpr auto kReadWindow = std::chrono::milliseconds(150);
constexpr int kMaxFrames = 16;

[[noreturn]] void finding(const std::string& what) {
  std::fprintf(stderr, "fuzz_websocket: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

struct Fixture {
  std::unique_ptr<server::Server> server;
  std::thread thread;
  uint16_t ws_port = 0;

  Fixture() {
    server::ServerConfig c;
    c.bind_address = "127.0.0.1";
    c.port = 0;
    c.ws_port = 0;
    c.ws_allowed_origins = {"http://game.example"};
    c.tick_rate_hz = 240;
    c.max_rooms = 4;
    c.empty_room_grace = std::chrono::milliseconds(2000);
    c.player_leave_grace = std::chrono::milliseconds(50);
    c.hello_timeout = std::chrono::milliseconds(300);
    c.read_timeout = std::chrono::milliseconds(1500);
    c.flush_timeout = std::chrono::milliseconds(300);
    c.stats_log_interval = std::chrono::milliseconds(0);
    c.replay_dir = "";
    c.max_rooms_per_ip_per_minute = 0;  // every connection here shares one address
    c.max_connections_per_ip = 0;
    c.handle_signals = false;
    spdlog::set_level(spdlog::level::off);
    server = std::make_unique<server::Server>(c);
    std::string error;
    if (!server->start(&error)) finding("the server does not start: " + error);
    ws_port = server->ws_port();
    thread = std::thread([this] { server->run(); });
  }
};

Fixture& fixture() {
  static Fixture* f = new Fixture();  // deliberately never destroyed
  return *f;
}

struct Script {
  std::span<const uint8_t> data;
  size_t at = 0;
  bool done() const { return at >= data.size(); }
  uint8_t byte() { return at < data.size() ? data[at++] : 0; }
  std::span<const uint8_t> bytes(size_t n) {
    n = std::min(n, data.size() - std::min(at, data.size()));
    std::span<const uint8_t> out = data.subspan(at, n);
    at += n;
    return out;
  }
};

void append(std::vector<uint8_t>* out, std::string_view text) {
  out->insert(out->end(), text.begin(), text.end());
}

void upgrade(std::vector<uint8_t>* out, std::string_view origin) {
  append(out,
         "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
         "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nOrigin: ");
  append(out, origin);
  append(out, "\r\n\r\n");
}

/// One client-to-server frame: FIN/opcode byte, mask bit and length, mask, masked payload.
void ws_frame(std::vector<uint8_t>* out, uint8_t first, bool masked,
              std::span<const uint8_t> payload) {
  out->push_back(first);
  const size_t n = payload.size();
  const uint8_t mask_bit = masked ? 0x80 : 0;
  if (n < 126) {
    out->push_back(static_cast<uint8_t>(mask_bit | n));
  } else {
    out->push_back(mask_bit | 126);
    out->push_back(static_cast<uint8_t>(n >> 8));
    out->push_back(static_cast<uint8_t>(n));
  }
  const std::array<uint8_t, 4> mask = {0x11, 0x22, 0x33, 0x44};
  if (masked) out->insert(out->end(), mask.begin(), mask.end());
  for (size_t i = 0; i < n; ++i)
    out->push_back(masked ? static_cast<uint8_t>(payload[i] ^ mask[i % 4]) : payload[i]);
}

/// The bytes of one input's connection.
std::vector<uint8_t> build_stream(Script& s) {
  std::vector<uint8_t> out;
  const uint8_t start = s.byte() % 4;
  if (start == 0) {
    const std::span<const uint8_t> raw = s.bytes(s.data.size());
    out.assign(raw.begin(), raw.end());
    return out;
  }
  upgrade(&out, start == 2 ? "http://evil.example" : "http://game.example");
  if (start == 3) {
    schema::Hello hello;
    hello.room = "fuzz";
    hello.player_name = "ws";
    ws_frame(&out, 0x82, true, schema::encode_frame(hello));
  }
  for (int i = 0; i < kMaxFrames && !s.done(); ++i) {
    const uint8_t kind = s.byte();
    const uint8_t first = s.byte();
    const size_t length = s.byte() | (kind & 0x40 ? size_t{s.byte()} << 8 : 0);
    switch (kind & 0x3) {
      case 0: {  // a frame of the input's bytes
        ws_frame(&out, first, (kind & 0x80) == 0, s.bytes(length));
        break;
      }
      case 1: {  // a valid Ping or Hello frame with one byte changed, as a binary message
        schema::Hello hello;
        hello.room = "fuzz";
        std::vector<uint8_t> frame = (first & 1) != 0 ? schema::encode_frame(schema::Ping{length})
                                                      : schema::encode_frame(hello);
        frame[length % frame.size()] ^= static_cast<uint8_t>(s.byte() | 1);
        ws_frame(&out, 0x82, true, frame);
        break;
      }
      case 2: {  // a valid Ping frame, whole
        ws_frame(&out, 0x82, true, schema::encode_frame(schema::Ping{length}));
        break;
      }
      default: {  // raw bytes
        const std::span<const uint8_t> raw = s.bytes(length);
        out.insert(out.end(), raw.begin(), raw.end());
      }
    }
  }
  return out;
}

/// Checks what the server sent: after the HTTP head, frames whose binary messages are each one
/// protocol frame that decodes.
void check_replies(const std::vector<uint8_t>& in) {
  const std::string text(in.begin(), in.end());
  const size_t head_end = text.find("\r\n\r\n");
  if (head_end == std::string::npos || text.rfind("HTTP/1.1 101", 0) != 0) return;
  size_t at = head_end + 4;
  std::vector<uint8_t> message;
  while (at + 2 <= in.size()) {
    const uint8_t first = in[at], second = in[at + 1];
    if ((second & 0x80) != 0) finding("a masked frame from the server");
    uint64_t n = second & 0x7f;
    size_t header = 2;
    if (n == 126) {
      if (at + 4 > in.size()) return;
      n = uint64_t{in[at + 2]} << 8 | in[at + 3];
      header = 4;
    } else if (n == 127) {
      if (at + 10 > in.size()) return;
      n = 0;
      for (size_t k = 0; k < 8; ++k)
        n = n << 8 | in[at + 2 + k];
      header = 10;
    }
    if (at + header + n > in.size()) return;  // cut off by the read window
    const uint8_t opcode = first & 0x0f;
    if (opcode == 0x2 || opcode == 0x0) {
      message.insert(message.end(), in.begin() + static_cast<std::ptrdiff_t>(at + header),
                     in.begin() + static_cast<std::ptrdiff_t>(at + header + n));
      if ((first & 0x80) != 0) {
        if (message.size() < schema::kFrameHeaderBytes) finding("a message shorter than a frame");
        const uint32_t length =
            schema::decode_frame_header(std::span(message).first<schema::kFrameHeaderBytes>());
        if (length != message.size() - schema::kFrameHeaderBytes) {
          finding("a binary message that is not one frame");
        }
        schema::Message decoded;
        if (!schema::decode_body(std::span(message).subspan(schema::kFrameHeaderBytes), &decoded)
                 .ok()) {
          finding("a frame from the server that does not decode");
        }
        message.clear();
      }
    } else if (opcode == 0x1) {
      finding("a text message from the server");
    }
    at += header + static_cast<size_t>(n);
  }
}

std::vector<uint8_t> exchange(uint16_t port, const std::vector<uint8_t>& out) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) finding("socket() failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    finding("cannot connect to the WebSocket port");
  }
  size_t sent = 0;
  std::vector<uint8_t> in;
  std::array<uint8_t, 65536> buffer{};
  const Clock::time_point until = Clock::now() + kReadWindow;
  while (Clock::now() < until) {
    pollfd p{fd, static_cast<short>(POLLIN | (sent < out.size() ? POLLOUT : 0)), 0};
    if (poll(&p, 1, 10) < 0) break;
    if ((p.revents & POLLOUT) != 0 && sent < out.size()) {
      const ssize_t n = send(fd, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
      if (n > 0) sent += static_cast<size_t>(n);
    }
    if ((p.revents & POLLIN) != 0) {
      const ssize_t n = recv(fd, buffer.data(), buffer.size(), 0);
      if (n <= 0) break;
      in.insert(in.end(), buffer.begin(), buffer.begin() + n);
    }
    if ((p.revents & (POLLHUP | POLLERR)) != 0) break;
  }
  close(fd);
  return in;
}

void check_sessions_close() {
  const Clock::time_point deadline = Clock::now() + kConditionTimeout;
  for (;;) {
    std::optional<server::ServerStats> stats = fixture().server->collect_stats(
        std::chrono::duration_cast<std::chrono::milliseconds>(kConditionTimeout));
    if (!stats) finding("the server's thread does not answer a stats request");
    if (stats->sessions_open == 0) return;
    if (Clock::now() > deadline) {
      finding(std::to_string(stats->sessions_open) + " sessions open after their client left");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> input(data, size);
  // The bridge's rules over the raw bytes: never a crash, and a forwarded message is one frame
  // or a length over the cap.
  if (server::classify_ws_message(true, input) == server::WsMessageVerdict::forward) {
    const uint32_t length = schema::decode_frame_header(input.first<schema::kFrameHeaderBytes>());
    if (length <= schema::kMaxClientFrameBytes && length != size - schema::kFrameHeaderBytes) {
      finding("classify_ws_message forwarded a message that is not one frame");
    }
  }
  server::FrameSplitter splitter(schema::kMaxClientFrameBytes);
  size_t whole = 0;
  (void)splitter.feed(input, [&](std::span<const uint8_t> frame) { whole += frame.size(); });
  if (whole > size) finding("FrameSplitter made bytes up");

  Script script{input};
  const std::vector<uint8_t> stream = build_stream(script);
  check_replies(exchange(fixture().ws_port, stream));
  check_sessions_close();
  return 0;
}
