// libFuzzer harness, stateful: one in-process lockstep server (loopback, join tokens required,
// 240 Hz, short timeouts, replay windows on) that lives for the whole fuzzing run, driven by
// scripts of operations from four fake clients. A fuzz input is a script: each operation picks a
// client and what it does — connect, send raw bytes, send a valid Hello (with a valid token, one
// for another room, an expired one, garbage, or the client's last one again), a valid
// InputFrame aimed near the room's current tick, a Ping / DesyncReport / ResyncRequest, a valid
// frame with one byte changed, half a frame (a slowloris), stop or resume reading, close.
//
// After every script, what a hostile client must never break is checked, and a breach is a
// finding (abort):
//   - every frame the server sent decodes (the client's frame cap, the message decoder);
//   - the server's thread answers a stats request;
//   - every room that is open keeps ticking (its tick grows within a few seconds);
//   - once the script's clients have closed, the server closes every session (none leaks);
//   - the heap stays under a bound (rooms are capped at 8, so memory is bounded too).
// Run it with scripts/fuzz.sh fuzz_server_session SECONDS; each input takes a few milliseconds
// of waiting for ticks, so it runs at tens to hundreds of inputs a second, not thousands.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sanitizer/allocator_interface.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "lockstep/auth/join_token.h"
#include "lockstep/schema/frame.h"
#include "lockstep/schema/limits.h"
#include "lockstep/schema/messages.h"
#include "lockstep/server/server.h"

#include <spdlog/spdlog.h>

// Leak checks are off: the server's thread allocates and frees while an input runs, so
// libFuzzer would see every input as a possible leak and scan the heap after each (60 ms an
// input); the heap bound below checks what matters here, that the server's memory stays bounded.
extern "C" const char* __asan_default_options() {
  return "detect_leaks=0";
}

namespace {

using namespace lockstep;
using Clock = std::chrono::steady_clock;

constexpr int kClients = 4;
constexpr int kMaxOps = 96;
constexpr uint64_t kHeapBoundBytes = uint64_t{768} << 20;
constexpr auto kConditionTimeout = std::chrono::seconds(8);  // generous: a busy machine

[[noreturn]] void finding(const std::string& what) {
  std::fprintf(stderr, "fuzz_server_session: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

// The server, started once on first use and never stopped (libFuzzer exits the process).
struct Fixture {
  auth::Key key{};
  std::filesystem::path dir;
  std::unique_ptr<server::Server> server;
  std::thread thread;
  uint16_t port = 0;

  Fixture() {
    char pattern[] = "/tmp/fuzz_server_session.XXXXXX";
    if (mkdtemp(pattern) == nullptr) finding("mkdtemp failed");
    dir = pattern;
    key = auth::generate_key();
    const std::filesystem::path key_path = dir / "server.key";
    std::ofstream(key_path) << auth::key_to_hex(key) << "\n";
    server::ServerConfig c;
    c.bind_address = "127.0.0.1";
    c.port = 0;
    c.tick_rate_hz = 240;
    c.max_rooms = 8;
    c.empty_room_grace = std::chrono::milliseconds(3000);  // rooms outlive most scripts
    c.player_leave_grace = std::chrono::milliseconds(50);
    c.hello_timeout = std::chrono::milliseconds(300);
    c.read_timeout = std::chrono::milliseconds(1500);
    c.flush_timeout = std::chrono::milliseconds(300);
    c.stats_log_interval = std::chrono::milliseconds(0);
    c.replay_dir = (dir / "replays").string();
    c.replay_window_seconds = 1;
    c.replay_dump_interval = std::chrono::milliseconds(60'000);
    c.dump_replays_on_shutdown = false;
    c.token_key_file = key_path.string();
    c.max_rooms_per_ip_per_minute = 0;  // every client here shares one address
    c.max_connections_per_ip = 0;
    c.socket_send_buffer_bytes = 16 * 1024;  // a client that stops reading fills up quickly
    c.handle_signals = false;
    spdlog::set_level(spdlog::level::off);  // thousands of refused clients a second
    server = std::make_unique<server::Server>(c);
    std::string error;
    if (!server->start(&error)) finding("the server does not start: " + error);
    port = server->port();
    thread = std::thread([this] { server->run(); });
  }
};

Fixture& fixture() {
  static Fixture* f = new Fixture();  // deliberately never destroyed
  return *f;
}

// Reads operation arguments from the fuzz input; zeros once it runs out.
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

struct FakeClient {
  int fd = -1;
  bool reading = true;
  schema::FrameDecoder decoder{schema::kMaxServerFrameBytes};
  std::vector<uint8_t> buffer = std::vector<uint8_t>(64 * 1024);
  uint64_t last_tick = 0;
  uint32_t sequence = 1;
  std::string room;
  std::string last_token;

  bool open() const { return fd >= 0; }

  void connect_to(uint16_t port) {
    if (open()) return;
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) finding("socket() failed");
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
      finding("cannot connect to the server");
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    decoder.reset();
    reading = true;
    last_tick = 0;
    room.clear();
  }

  void close() {
    if (!open()) return;
    ::close(fd);
    fd = -1;
  }

  // Everything the server sent so far must be well-formed frames of valid messages.
  void drain() {
    while (open() && reading) {
      const ssize_t n = ::recv(fd, buffer.data(), buffer.size(), MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        close();  // the server closed us (a limit, a fatal Error): fine
        return;
      }
      if (n < 0) return;
      const schema::FrameError error = decoder.feed_all(
          std::span<const uint8_t>(buffer.data(), static_cast<size_t>(n)),
          [this](std::span<const uint8_t> body) {
            schema::Message message;
            const schema::DecodeResult r = schema::decode_body(body, &message);
            if (!r.ok()) finding("the server sent a frame that does not decode: " + r.detail);
            if (const auto* tick = std::get_if<schema::TickFrame>(&message)) {
              last_tick = tick->tick;
            } else if (const auto* welcome = std::get_if<schema::Welcome>(&message)) {
              last_tick = welcome->current_tick;
            }
          });
      if (error != schema::FrameError::none) finding("the server sent a malformed frame");
    }
  }

  // Sends what the socket takes now; a server that stops reading us is allowed (it closes us).
  void send(std::span<const uint8_t> bytes) {
    for (int tries = 0; open() && !bytes.empty() && tries < 50; ++tries) {
      const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        bytes = bytes.subspan(static_cast<size_t>(n));
        continue;
      }
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        close();
        return;
      }
      drain();
      pollfd p{fd, POLLOUT, 0};
      ::poll(&p, 1, 2);
    }
  }
  void send(const schema::Message& message) {
    const std::vector<uint8_t> frame = schema::encode_frame(message);
    send(frame);
  }
};

const char* const kRooms[] = {"r0", "r1", "r2"};

std::string token_for(Script& s, FakeClient& c, const std::string& room) {
  const Fixture& f = fixture();
  auth::JoinClaims claims;
  claims.room = room;
  claims.expires_unix_s = auth::unix_now_s() + 60;
  const uint8_t player = s.byte();
  if (player % 3 != 0) claims.player = 1u + player % 5u;  // 5 is past the room's 4 slots
  std::string error;
  switch (s.byte() % 6) {
    case 0:
      return "";  // no token
    case 1:
      claims.room = kRooms[(s.byte() % 3)];  // perhaps another room's
      break;
    case 2:
      claims.expires_unix_s = auth::unix_now_s() - 5;  // expired
      break;
    case 3: {  // garbage
      const std::span<const uint8_t> junk = s.bytes(s.byte() % 64);
      return std::string(junk.begin(), junk.end());
    }
    case 4:
      if (!c.last_token.empty()) return c.last_token;  // replayed
      break;
    default:
      break;  // valid for the room
  }
  std::string token = auth::mint_token(f.key, claims, &error);
  if (token.empty()) token = "x";  // e.g. an expiry mint refuses: still a bad token
  return token;
}

sim::Input input_from(Script& s, uint32_t player, uint32_t sequence) {
  sim::Input in;
  in.player = player;
  in.sequence = sequence;
  in.body = sim::BodyId{s.byte() % 16u, 0};
  for (int k = 0; k < 3; ++k) {
    in.linear_impulse[k] = static_cast<int8_t>(s.byte()) * 4096;
    in.angular_impulse[k] = static_cast<int8_t>(s.byte()) * 64;
  }
  in.buttons = s.byte();
  in.flags = s.byte() & 0x7u;  // includes bits no build knows (rejected as bad input)
  return in;
}

void run_op(Script& s, FakeClient (&clients)[kClients]) {
  const uint8_t op = s.byte();
  FakeClient& c = clients[op & 3];
  const uint16_t port = fixture().port;
  switch ((op >> 2) % 10) {
    case 0:
      c.connect_to(port);
      break;
    case 1:  // raw bytes
      c.send(s.bytes(s.byte()));
      break;
    case 2: {  // a Hello
      schema::Hello hello;
      hello.room = kRooms[s.byte() % 3];
      hello.player_name = "fuzz";
      const uint8_t mode = s.byte();
      hello.mode = (mode & 1) ? schema::ClientMode::thin : schema::ClientMode::lockstep;
      hello.snapshot_rate_hz = static_cast<uint16_t>(mode >> 1);
      if ((mode & 0x80) != 0) hello.scene = "nope";
      hello.auth_token = token_for(s, c, hello.room);
      c.last_token = hello.auth_token;
      c.room = hello.room;
      c.send(hello);
      break;
    }
    case 3: {  // an InputFrame near the room's tick
      c.drain();
      schema::InputFrame frame;
      frame.target_tick = c.last_tick + static_cast<uint64_t>(static_cast<int8_t>(s.byte()));
      frame.sequence = c.sequence;
      const int count = s.byte() % 5;
      const uint32_t player = 1 + s.byte() % 4;
      for (int i = 0; i < count; ++i)
        frame.inputs.push_back(input_from(s, player, (s.byte() & 1) ? c.sequence : 0));
      c.sequence += (s.byte() & 3);  // sometimes the same sequence again: a duplicate
      c.send(frame);
      break;
    }
    case 4:
      switch (s.byte() % 3) {
        case 0:
          c.send(schema::Ping{static_cast<uint64_t>(Clock::now().time_since_epoch().count())});
          break;
        case 1:
          c.send(schema::DesyncReport{c.last_tick, 1, 2});
          break;
        default:
          c.send(schema::ResyncRequest{"fuzz"});
          break;
      }
      break;
    case 5: {  // a valid frame with one byte changed
      schema::InputFrame frame;
      frame.target_tick = c.last_tick + 2;
      frame.sequence = c.sequence++;
      frame.inputs.push_back(input_from(s, 1, 0));
      std::vector<uint8_t> bytes = schema::encode_frame(frame);
      const uint8_t at = s.byte();
      bytes[at % bytes.size()] ^= static_cast<uint8_t>(s.byte() | 1);
      c.send(bytes);
      break;
    }
    case 6:
      if ((s.byte() & 1) != 0 && c.open()) {
        ::shutdown(c.fd, SHUT_WR);
      } else {
        c.close();
      }
      break;
    case 7:  // let the server run a little
      for (FakeClient& each : clients)
        each.drain();
      std::this_thread::sleep_for(std::chrono::milliseconds(s.byte() % 8));
      break;
    case 8:
      c.reading = !c.reading;
      break;
    default: {  // half a frame: a length that promises more than follows
      const uint32_t length = 8 + (uint32_t{s.byte()} << 8 | s.byte());
      const uint8_t prefix[4] = {static_cast<uint8_t>(length), static_cast<uint8_t>(length >> 8),
                                 static_cast<uint8_t>(length >> 16),
                                 static_cast<uint8_t>(length >> 24)};
      c.send(prefix);
      c.send(s.bytes(s.byte() % 16));
      break;
    }
  }
}

server::ServerStats stats_or_finding() {
  std::optional<server::ServerStats> stats = fixture().server->collect_stats(
      std::chrono::duration_cast<std::chrono::milliseconds>(kConditionTimeout));
  if (!stats) finding("the server's thread does not answer a stats request");
  return *stats;
}

// Every room open now must step again.
void check_rooms_tick() {
  const server::ServerStats before = stats_or_finding();
  const Clock::time_point deadline = Clock::now() + kConditionTimeout;
  for (size_t i = 0; i < before.live_rooms; ++i) {
    const server::RoomStats& room = before.rooms[i];
    if (!room.open) continue;  // stopping (its grace ran out): it closes, it need not tick
    for (;;) {
      const server::ServerStats now = stats_or_finding();
      bool advanced = true;  // a room that closed since is fine
      for (size_t k = 0; k < now.live_rooms; ++k) {
        const server::RoomStats& later = now.rooms[k];
        if (later.name == room.name && later.open && later.tick <= room.tick) advanced = false;
      }
      if (advanced) break;
      if (Clock::now() > deadline) finding("room " + room.name + " stopped ticking");
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
}

// With every client of the script closed, the server must close every session.
void check_sessions_close() {
  const Clock::time_point deadline = Clock::now() + kConditionTimeout;
  for (;;) {
    const server::ServerStats now = stats_or_finding();
    if (now.sessions_open == 0) return;
    if (Clock::now() > deadline) {
      finding(std::to_string(now.sessions_open) + " sessions still open after their clients left");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)fixture();
  Script script{std::span<const uint8_t>(data, size)};
  // Kept from input to input (their decoders' buffers are large) but closed after each one.
  static FakeClient clients[kClients];
  for (FakeClient& c : clients) {
    c.sequence = 1;
    c.last_token.clear();
  }
  for (int ops = 0; ops < kMaxOps && !script.done(); ++ops)
    run_op(script, clients);
  for (FakeClient& c : clients)
    c.drain();
  check_rooms_tick();
  for (FakeClient& c : clients)
    c.close();
  check_sessions_close();
  const size_t heap = __sanitizer_get_current_allocated_bytes();
  if (heap > kHeapBoundBytes) finding("heap at " + std::to_string(heap >> 20) + " MiB");
  return 0;
}
