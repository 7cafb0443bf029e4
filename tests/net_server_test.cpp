// lockstep-server over real loopback sockets: join and late join, inputs at their target tick,
// malformed frames and bad inputs, slow consumers, deadlines, thin clients, resync and desync
// reports, version negotiation, graceful shutdown, configuration.
//
// The server runs on port 0 in a background thread (net_test_harness.h). The clients here are
// deliberately raw — a socket plus the schema codec (encode_frame / FrameDecoder / decode_body),
// not the client SDK — so they can send anything, stop reading, or misbehave. Each one checks
// the server independently: it restores the join snapshot into its own sim::World, applies
// every TickFrame's inputs, steps, and compares the hash with the server's.
//
// Tests wait for messages and counters, not for time, and assert no durations: a machine busy
// with other work must pass them. Every wait is bounded by a hang guard; ctest adds a TIMEOUT.
#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <asio/connect.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/write.hpp>

#include "lockstep/auth/join_token.h"
#include "lockstep/schema/frame.h"
#include "lockstep/schema/limits.h"
#include "lockstep/schema/messages.h"
#include "lockstep/schema/protocol_generated.h"
#include "lockstep/server/config.h"
#include "lockstep/server/room_rules.h"
#include "lockstep/server/server.h"
#include "lockstep/sim/scene.h"
#include "lockstep/sim/version.h"
#include "lockstep/sim/world.h"
#include "net_test_harness.h"

namespace {

using namespace std::chrono_literals;
namespace schema = lockstep::schema;
namespace server = lockstep::server;
namespace sim = lockstep::sim;
namespace auth = lockstep::auth;
namespace wire = lockstep::wire;
namespace net_test = lockstep::net_test;
using asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using schema::ErrorCode;
using schema::Message;

// Any wait for a reply: a reply that has not come by then never will (a hang guard only; no test
// asserts how long a reply took, since a machine busy with other work may take seconds).
constexpr auto kReplyTimeout = net_test::kHangGuard;

// ---- a raw client --------------------------------------------------------------------------

class RawClient {
 public:
  /// Connects to 127.0.0.1:port; receive_buffer_bytes > 0 sets SO_RCVBUF before connecting.
  explicit RawClient(uint16_t port, int receive_buffer_bytes = 0)
      : socket_(io_), decoder_(schema::kMaxServerFrameBytes) {
    socket_.open(tcp::v4());
    if (receive_buffer_bytes > 0) {
      socket_.set_option(asio::socket_base::receive_buffer_size(receive_buffer_bytes));
    }
    socket_.connect(tcp::endpoint(asio::ip::address_v4::loopback(), port));
    socket_.set_option(tcp::no_delay(true));
  }

  void send(const Message& message) { send_bytes(schema::encode_frame(message)); }
  void send_bytes(std::span<const uint8_t> bytes) {
    std::error_code ec;
    asio::write(socket_, asio::buffer(bytes.data(), bytes.size()), ec);
    // A write may fail once the server has closed us; the reads say what happened.
  }
  void shutdown_send() {
    std::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_send, ignored);
  }
  void close() {
    std::error_code ignored;
    socket_.close(ignored);
    closed_ = true;
  }

  /// The next message, or nothing on timeout or end of stream.
  std::optional<Message> receive(std::chrono::milliseconds timeout) {
    const Clock::time_point deadline = Clock::now() + timeout;
    while (pending_.empty() && !closed_ && Clock::now() < deadline)
      read_chunk(buffer_.size(), deadline);
    if (pending_.empty()) return std::nullopt;
    Message message = std::move(pending_.front());
    pending_.pop_front();
    return message;
  }

  /// Reads `bytes` more bytes off the socket (their messages wait for receive()); false on
  /// timeout or end of stream.
  bool read_bytes(uint64_t bytes, std::chrono::milliseconds timeout) {
    const Clock::time_point deadline = Clock::now() + timeout;
    const uint64_t target = bytes_read_ + bytes;
    while (bytes_read_ < target && !closed_ && Clock::now() < deadline)
      read_chunk(std::min<uint64_t>(buffer_.size(), target - bytes_read_), deadline);
    return bytes_read_ >= target;
  }
  /// Bytes read off the socket so far.
  uint64_t bytes_read() const { return bytes_read_; }

  /// The next message of type T, skipping others (Pongs, Errors…) into *skipped if given.
  template <class T>
  std::optional<T> receive_of(std::chrono::milliseconds timeout,
                              std::vector<Message>* skipped = nullptr) {
    const Clock::time_point deadline = Clock::now() + timeout;
    for (;;) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      std::optional<Message> message = receive(std::max(left, 0ms));
      if (!message) return std::nullopt;
      if (T* value = std::get_if<T>(&*message)) return std::move(*value);
      if (skipped != nullptr) skipped->push_back(std::move(*message));
    }
  }

  /// Reads until the server closes; every message read goes to *messages. False on timeout.
  bool read_until_closed(std::chrono::milliseconds timeout, std::vector<Message>* messages) {
    const Clock::time_point deadline = Clock::now() + timeout;
    while (Clock::now() < deadline) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      std::optional<Message> message = receive(left);
      if (message) {
        messages->push_back(std::move(*message));
      } else if (closed_) {
        return true;
      }
    }
    return closed_;
  }

  bool closed() const { return closed_; }
  bool reset() const { return reset_; }
  /// Frame bytes read so far (headers included), all and Snapshots only.
  uint64_t bytes_in() const { return bytes_in_; }
  uint64_t snapshot_bytes_in() const { return snapshot_bytes_in_; }
  uint64_t largest_snapshot() const { return largest_snapshot_; }

 private:
  /// Waits until `deadline` for bytes and feeds at most `max_bytes` of them to the decoder.
  void read_chunk(uint64_t max_bytes, Clock::time_point deadline) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return;
    pollfd pfd{socket_.native_handle(), POLLIN, 0};
    if (::poll(&pfd, 1, static_cast<int>(left.count())) <= 0) return;
    std::error_code ec;
    const size_t n = socket_.read_some(asio::buffer(buffer_.data(), max_bytes), ec);
    if (ec) {
      closed_ = true;
      reset_ = ec != asio::error::eof;
      return;
    }
    bytes_read_ += n;
    const schema::FrameError error = decoder_.feed_all(
        std::span<const uint8_t>(buffer_.data(), n), [this](std::span<const uint8_t> body) {
          Message message;
          const schema::DecodeResult result = schema::decode_body(body, &message);
          EXPECT_TRUE(result.ok()) << "the server sent an undecodable frame: " << result.detail;
          bytes_in_ += schema::kFrameHeaderBytes + body.size();
          if (std::holds_alternative<schema::Snapshot>(message)) {
            snapshot_bytes_in_ += schema::kFrameHeaderBytes + body.size();
            largest_snapshot_ =
                std::max<uint64_t>(largest_snapshot_, schema::kFrameHeaderBytes + body.size());
          }
          if (result.ok()) pending_.push_back(std::move(message));
        });
    EXPECT_EQ(error, schema::FrameError::none) << decoder_.error_text();
  }

  asio::io_context io_;
  tcp::socket socket_;
  schema::FrameDecoder decoder_;
  std::array<uint8_t, 1 << 16> buffer_{};
  uint64_t bytes_read_ = 0;
  std::deque<Message> pending_;
  bool closed_ = false;
  bool reset_ = false;
  uint64_t bytes_in_ = 0, snapshot_bytes_in_ = 0, largest_snapshot_ = 0;
};

// ---- the server in a background thread -----------------------------------------------------

// Raw clients never Ping, so the read timeout is far beyond any test's length except where a
// test sets its own; replay files are net_replay_test's concern, so none are written here.
server::ServerConfig test_config() {
  server::ServerConfig config = net_test::loopback_config();
  config.tick_rate_hz = 60;
  config.read_timeout = 120'000ms;
  config.flush_timeout = 1000ms;
  config.empty_room_grace = 1000ms;
  return config;
}

using ServerRunner = net_test::InProcessServer;

// ---- joining and verifying -----------------------------------------------------------------

sim::Scene make_scene(const std::string& name = "inputs") {
  sim::Scene scene;
  EXPECT_TRUE(sim::make_builtin_scene(name, &scene));
  return scene;
}

schema::Hello hello(const std::string& room, const std::string& name,
                    schema::ClientMode mode = schema::ClientMode::lockstep,
                    uint16_t snapshot_rate_hz = 0) {
  schema::Hello h;
  h.room = room;
  h.player_name = name;
  h.mode = mode;
  h.snapshot_rate_hz = snapshot_rate_hz;
  return h;
}

// A joined lockstep client that verifies every TickFrame against its own world.
struct Player {
  std::unique_ptr<RawClient> client;
  schema::Welcome welcome;
  schema::Snapshot snapshot;
  std::unique_ptr<sim::World> world;
  std::map<uint64_t, uint64_t> hashes;           // tick → server hash, as received
  std::map<uint64_t, schema::TickFrame> frames;  // every frame received
  std::vector<Message> others;                   // non-TickFrame messages received after join
  std::vector<uint64_t> others_after_tick;       // last TickFrame tick before each of them
  std::vector<Clock::time_point> others_at;      // when each of them was read
  uint64_t last_tick = 0;
  bool gap = false;         // a TickFrame tick did not follow the previous one
  uint64_t mismatches = 0;  // local hash != server hash

  /// Reads and verifies TickFrames until `tick` has been seen; false on timeout.
  bool pump_until(uint64_t tick, std::chrono::milliseconds timeout = kReplyTimeout) {
    const Clock::time_point deadline = Clock::now() + timeout;
    while (last_tick < tick) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) return false;
      std::optional<Message> message = client->receive(left);
      if (!message) return false;
      handle(std::move(*message));
    }
    return true;
  }
  /// Reads and verifies whatever arrives for `duration`.
  void pump_for(std::chrono::milliseconds duration) {
    const Clock::time_point deadline = Clock::now() + duration;
    for (;;) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) return;
      std::optional<Message> message = client->receive(left);
      if (!message) return;
      handle(std::move(*message));
    }
  }
  void handle(Message message) {
    auto* frame = std::get_if<schema::TickFrame>(&message);
    if (frame == nullptr) {
      others.push_back(std::move(message));
      others_after_tick.push_back(last_tick);
      others_at.push_back(Clock::now());
      return;
    }
    if (frame->tick != last_tick + 1) gap = true;
    last_tick = frame->tick;
    for (const sim::Input& input : frame->inputs)
      EXPECT_EQ(world->queue_input(input), sim::Error::none) << "tick " << frame->tick;
    world->step();
    if (world->tick() != frame->tick || world->state_hash() != frame->state_hash) ++mismatches;
    hashes[frame->tick] = frame->state_hash;
    frames[frame->tick] = std::move(*frame);
  }
  /// Reads and verifies TickFrames until an Error arrives (a raw read past them would leave a
  /// gap in the verified ticks); none on timeout.
  std::optional<schema::ErrorMessage> pump_until_error(
      std::chrono::milliseconds timeout = kReplyTimeout) {
    const size_t seen = others_of<schema::ErrorMessage>().size();
    const Clock::time_point deadline = Clock::now() + timeout;
    for (;;) {
      const std::vector<schema::ErrorMessage> errors = others_of<schema::ErrorMessage>();
      if (errors.size() > seen) return errors[seen];
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) return std::nullopt;
      std::optional<Message> message = client->receive(left);
      if (!message) return std::nullopt;
      handle(std::move(*message));
    }
  }
  template <class T>
  std::vector<T> others_of() const {
    std::vector<T> out;
    for (const Message& m : others) {
      if (const T* value = std::get_if<T>(&m)) out.push_back(*value);
    }
    return out;
  }
};

/// Connects, says Hello, and expects Welcome then Snapshot (restored into a local world).
Player join(uint16_t port, const std::string& room, const std::string& name) {
  Player p;
  p.client = std::make_unique<RawClient>(port);
  p.client->send(hello(room, name));
  std::optional<Message> first = p.client->receive(kReplyTimeout);
  EXPECT_TRUE(first && std::holds_alternative<schema::Welcome>(*first))
      << (first ? schema::message_name(*first) : "nothing");
  if (first && std::holds_alternative<schema::Welcome>(*first)) {
    p.welcome = std::get<schema::Welcome>(*first);
  }
  std::optional<Message> second = p.client->receive(kReplyTimeout);
  EXPECT_TRUE(second && std::holds_alternative<schema::Snapshot>(*second))
      << (second ? schema::message_name(*second) : "nothing");
  if (second && std::holds_alternative<schema::Snapshot>(*second)) {
    p.snapshot = std::get<schema::Snapshot>(*second);
  }
  p.world = sim::build_world(make_scene());
  EXPECT_NE(p.world, nullptr);
  EXPECT_EQ(p.world->restore_snapshot(p.snapshot.state), sim::Error::none);
  EXPECT_EQ(p.world->tick(), p.snapshot.tick);
  EXPECT_EQ(p.world->state_hash(), p.snapshot.state_hash);
  p.last_tick = p.snapshot.tick;
  return p;
}

/// Waits for an Error frame (skipping other messages); nothing on timeout.
std::optional<schema::ErrorMessage> wait_error(RawClient& client,
                                               std::chrono::milliseconds timeout = kReplyTimeout) {
  return client.receive_of<schema::ErrorMessage>(timeout);
}

/// Bodies of the scene owned by `player`, from a world the test builds itself.
std::vector<sim::BodyId> bodies_owned_by(uint32_t player) {
  std::unique_ptr<sim::World> world = sim::build_world(make_scene());
  std::vector<sim::BodyId> ids(world->body_count());
  ids.resize(world->list_bodies(ids));
  std::vector<sim::BodyId> owned;
  for (sim::BodyId id : ids) {
    sim::BodyView view;
    EXPECT_EQ(world->get_body(id, &view), sim::Error::none);
    if (view.owner_player == player && view.type == sim::BodyType::dynamic) owned.push_back(id);
  }
  return owned;
}

sim::Input push(uint32_t player, uint32_t sequence, sim::BodyId body, int32_t x_impulse) {
  sim::Input input;
  input.player = player;
  input.sequence = sequence;
  input.body = body;
  input.linear_impulse[0] = x_impulse;
  return input;
}

bool same_input(const sim::Input& a, const sim::Input& b) {
  return a.player == b.player && a.sequence == b.sequence && a.body == b.body &&
         std::equal(a.linear_impulse, a.linear_impulse + 3, b.linear_impulse) &&
         std::equal(a.angular_impulse, a.angular_impulse + 3, b.angular_impulse) &&
         a.buttons == b.buttons;
}

std::vector<uint8_t> header(uint32_t body_bytes) {
  std::vector<uint8_t> out(4);
  schema::encode_frame_header(body_bytes, std::span<uint8_t, 4>(out.data(), 4));
  return out;
}

// ---- join, late join, identical hashes ------------------------------------------------------

TEST(NetServer, JoinGetsWelcomeSnapshotThenConsecutiveTickFrames) {
  ServerRunner runner(test_config());
  const Clock::time_point before_open = Clock::now();  // the first Hello opens the room
  Player p = join(runner.port(), "alpha", "p1");
  const Clock::time_point joined_at = Clock::now();

  // The Welcome, checked against a scene and world the test builds itself.
  const sim::Scene scene = make_scene();
  EXPECT_EQ(p.welcome.protocol_version, schema::kProtocolVersion);
  EXPECT_EQ(p.welcome.player_id, 1u);
  EXPECT_EQ(p.welcome.tick_rate_hz, 60);
  EXPECT_EQ(p.welcome.input_delay_ticks, 2);
  EXPECT_EQ(p.welcome.input_window_ticks, 64u);  // the default window
  EXPECT_EQ(p.welcome.scene, "inputs");
  EXPECT_EQ(p.welcome.world_def_fingerprint, sim::world_def_fingerprint(scene.def));
  const std::vector<sim::BodyId> owned = bodies_owned_by(1);
  ASSERT_EQ(owned.size(), 4u);  // the inputs scene: 4 players × 4 spheres
  EXPECT_EQ(p.welcome.owned_bodies, owned);
  // The join opened the room: its snapshot is the scene as built, tick 0.
  EXPECT_EQ(p.snapshot.tick, 0u);
  // Welcome's tick is the schedule's (time sync): never behind the world, never ahead of the
  // time since the room opened, and within one 60 Hz period of its due time.
  EXPECT_LE(p.snapshot.tick, p.welcome.current_tick);
  EXPECT_TRUE(net_test::could_be_due(p.welcome.current_tick, 60, before_open, joined_at))
      << p.welcome.current_tick;
  EXPECT_LT(p.welcome.ns_into_tick, 16'666'667u);

  // 31 consecutive TickFrames whose hashes this client reproduces.
  ASSERT_TRUE(p.pump_until(p.snapshot.tick + 31));
  const Clock::time_point last_read_at = Clock::now();
  EXPECT_FALSE(p.gap);
  EXPECT_EQ(p.mismatches, 0u);
  EXPECT_EQ(p.hashes.size(), 31u);
  // Not faster than 60 Hz: tick 31 is due 517 ms after the room opened. (Slower is not tested
  // here: a busy machine delays ticks; server_tick_clock_test checks the schedule itself.)
  EXPECT_TRUE(net_test::could_be_due(p.last_tick, 60, before_open, last_read_at))
      << "tick " << p.last_tick << " read "
      << std::chrono::duration_cast<std::chrono::milliseconds>(last_read_at - before_open).count()
      << " ms after the room opened";
}

// With two workers, a second room goes to worker 1: the connection is read on the control
// thread until its Hello, then handed to that worker. Frames sent in the same write as the Hello
// (read with it, before the handover) must reach the room after the join, in order.
TEST(NetServer, FramesSentWithTheHelloFollowTheConnectionToItsRoomsThread) {
  server::ServerConfig config = test_config();
  config.threads = 2;
  ServerRunner server(config);
  ASSERT_TRUE(server.started());
  Player first = join(server.port(), "first", "p1");  // worker 0
  RawClient client(server.port());
  std::vector<uint8_t> bytes = schema::encode_frame(hello("second", "p2"));
  for (uint64_t ping = 1; ping <= 3; ++ping) {
    const std::vector<uint8_t> frame = schema::encode_frame(schema::Ping{ping});
    bytes.insert(bytes.end(), frame.begin(), frame.end());
  }
  client.send_bytes(bytes);
  std::optional<Message> welcome = client.receive(kReplyTimeout);
  ASSERT_TRUE(welcome && std::holds_alternative<schema::Welcome>(*welcome))
      << (welcome ? schema::message_name(*welcome) : "nothing");
  std::optional<Message> snapshot = client.receive(kReplyTimeout);
  ASSERT_TRUE(snapshot && std::holds_alternative<schema::Snapshot>(*snapshot))
      << (snapshot ? schema::message_name(*snapshot) : "nothing");
  for (uint64_t ping = 1; ping <= 3; ++ping) {
    const std::optional<schema::Pong> pong = client.receive_of<schema::Pong>(kReplyTimeout);
    ASSERT_TRUE(pong.has_value()) << "Pong " << ping;
    EXPECT_EQ(pong->client_time_ns, ping);
  }
  const server::ServerStats stats = server.stats();
  ASSERT_EQ(stats.thread_list.size(), 2u);
  EXPECT_EQ(stats.thread_list[0].rooms, 1u);
  EXPECT_EQ(stats.thread_list[1].rooms, 1u);
  EXPECT_EQ(stats.sessions_open, 2u);
  EXPECT_EQ(stats.protocol_errors, 0u);
}

TEST(NetServer, LateJoinerSeesTheSameHashesAsEarlyJoiner) {
  ServerRunner runner(test_config());
  Player early = join(runner.port(), "alpha", "early");
  ASSERT_TRUE(early.pump_until(early.snapshot.tick + 20));
  Player late = join(runner.port(), "alpha", "late");
  EXPECT_EQ(late.welcome.player_id, 2u);
  EXPECT_GT(late.snapshot.tick, early.snapshot.tick + 10);
  const uint64_t end = late.snapshot.tick + 30;
  ASSERT_TRUE(late.pump_until(end));
  ASSERT_TRUE(early.pump_until(end));
  EXPECT_FALSE(early.gap);
  EXPECT_FALSE(late.gap);
  EXPECT_EQ(early.mismatches, 0u);
  EXPECT_EQ(late.mismatches, 0u);
  // The late joiner's snapshot is the state the early joiner reached at that tick.
  ASSERT_TRUE(early.hashes.count(late.snapshot.tick));
  EXPECT_EQ(early.hashes[late.snapshot.tick], late.snapshot.state_hash);
  size_t compared = 0;
  for (const auto& [tick, hash] : late.hashes) {
    ASSERT_TRUE(early.hashes.count(tick)) << tick;
    EXPECT_EQ(early.hashes[tick], hash) << "tick " << tick;
    ++compared;
  }
  EXPECT_EQ(compared, 30u);
}

TEST(NetServer, RoomsAreSeparateAndFillUp) {
  server::ServerConfig config = test_config();
  config.max_players_per_room = 1;
  config.max_rooms = 2;
  ServerRunner runner(config);
  Player a = join(runner.port(), "one", "a");
  Player b = join(runner.port(), "two", "b");
  EXPECT_EQ(a.welcome.player_id, 1u);
  EXPECT_EQ(b.welcome.player_id, 1u);  // another room, its own player 1

  RawClient full(runner.port());
  full.send(hello("one", "c"));
  std::optional<schema::ErrorMessage> error = wait_error(full);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->code, ErrorCode::room_full);
  EXPECT_TRUE(error->fatal);
  std::vector<Message> rest;
  EXPECT_TRUE(full.read_until_closed(kReplyTimeout, &rest));

  RawClient third_room(runner.port());
  third_room.send(hello("three", "d"));
  error = wait_error(third_room);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->code, ErrorCode::too_many_rooms);
  EXPECT_TRUE(third_room.read_until_closed(kReplyTimeout, &rest));

  ASSERT_TRUE(a.pump_until(a.last_tick + 5));
  EXPECT_EQ(a.mismatches, 0u);
}

// ---- inputs --------------------------------------------------------------------------------

TEST(NetServer, InputAppearsInTheTickFrameOfItsTargetTickSorted) {
  server::ServerConfig config = test_config();
  config.input_window_ticks = 128;
  ServerRunner runner(config);
  Player p = join(runner.port(), "alpha", "p1");
  const std::vector<sim::BodyId> owned = bodies_owned_by(1);
  ASSERT_EQ(owned.size(), 4u);
  ASSERT_TRUE(p.pump_until(p.snapshot.tick + 1));
  // The room has stepped at least last_tick, so 90 ticks on is inside the 128-tick window; it is
  // late only if this thread falls 1.5 s behind the server's between here and its arrival.
  const uint64_t target = p.last_tick + 90;
  schema::InputFrame frame;
  frame.target_tick = target;
  frame.sequence = 1;
  // Out of order on purpose; player 0 is filled in by the server.
  frame.inputs = {push(1, 3, owned[2], 3 << 10), push(0, 1, owned[0], 1 << 10),
                  push(1, 2, owned[1], -(2 << 10))};
  p.client->send(frame);
  ASSERT_TRUE(p.pump_until(target + 3));
  EXPECT_FALSE(p.gap);
  EXPECT_EQ(p.mismatches, 0u);  // this client applied them too and got the server's hashes
  ASSERT_TRUE(p.frames.count(target));
  const std::vector<sim::Input>& applied = p.frames[target].inputs;
  ASSERT_EQ(applied.size(), 3u);
  // Sorted by (player, sequence, …), the order the world applies them.
  EXPECT_TRUE(same_input(applied[0], push(1, 1, owned[0], 1 << 10)));
  EXPECT_TRUE(same_input(applied[1], push(1, 2, owned[1], -(2 << 10))));
  EXPECT_TRUE(same_input(applied[2], push(1, 3, owned[2], 3 << 10)));
  for (const auto& [tick, tick_frame] : p.frames) {
    if (tick != target) {
      EXPECT_TRUE(tick_frame.inputs.empty()) << "tick " << tick;
    }
  }
  EXPECT_TRUE(p.others_of<schema::ErrorMessage>().empty());
  const server::ServerStats stats = runner.stats();
  ASSERT_EQ(stats.rooms.size(), 1u);
  EXPECT_EQ(stats.rooms[0].inputs_accepted, 3u);
  EXPECT_EQ(stats.rooms[0].inputs_rejected, 0u);
  EXPECT_EQ(stats.rooms[0].inputs_late, 0u);
}

// (player, sequence) names an input: the same sequence in a second InputFrame is a resend and is
// dropped (counted), never applied twice, even when the resend targets another tick.
TEST(NetServer, RepeatedInputIsAppliedOnce) {
  server::ServerConfig config = test_config();
  config.input_window_ticks = 128;
  ServerRunner runner(config);
  Player p = join(runner.port(), "alpha", "p1");
  const std::vector<sim::BodyId> owned = bodies_owned_by(1);
  ASSERT_TRUE(p.pump_until(p.snapshot.tick + 1));
  const uint64_t target = p.last_tick + 60;
  const sim::Input input = push(1, 5, owned[0], 1 << 10);
  p.client->send(schema::InputFrame{target, 1, {input}});
  p.client->send(schema::InputFrame{target + 1, 2, {input}});  // a resend, one tick later
  // Inputs of one frame may share a sequence: both of these are applied (sent once).
  p.client->send(
      schema::InputFrame{target + 2, 3, {push(1, 6, owned[1], 1 << 10), push(1, 6, owned[2], 1)}});
  ASSERT_TRUE(p.pump_until(target + 4));
  EXPECT_EQ(p.mismatches, 0u);
  uint64_t applied = 0;
  for (const auto& [tick, frame] : p.frames)
    for (const sim::Input& in : frame.inputs)
      applied += same_input(in, input) ? 1 : 0;
  EXPECT_EQ(applied, 1u);
  ASSERT_TRUE(p.frames.count(target));
  EXPECT_EQ(p.frames[target].inputs.size(), 1u);
  EXPECT_TRUE(p.frames[target + 1].inputs.empty());
  EXPECT_EQ(p.frames[target + 2].inputs.size(), 2u);
  EXPECT_TRUE(p.others_of<schema::ErrorMessage>().empty());  // a resend is not an error
  const server::ServerStats stats = runner.stats();
  ASSERT_EQ(stats.rooms.size(), 1u);
  EXPECT_EQ(stats.rooms[0].inputs_accepted, 3u);
  EXPECT_EQ(stats.rooms[0].inputs_duplicate, 1u);
}

// A client that reconnects (same name, same player id) and resends what it sent before the drop
// does not get it applied twice; another client that later takes the id starts afresh.
TEST(NetServer, RepeatedInputAcrossAReconnectIsAppliedOnce) {
  server::ServerConfig config = test_config();
  config.input_window_ticks = 128;
  ServerRunner runner(config);
  const std::vector<sim::BodyId> owned = bodies_owned_by(1);
  const sim::Input input = push(1, 11, owned[0], 1 << 10);
  Player keeper = join(runner.port(), "alpha", "keeper");  // keeps the room open
  {
    Player p = join(runner.port(), "alpha", "p2");
    ASSERT_EQ(p.welcome.player_id, 2u);
    ASSERT_TRUE(p.pump_until(p.snapshot.tick + 1));
    p.client->send(
        schema::InputFrame{p.last_tick + 20, 1, {push(2, 11, bodies_owned_by(2)[0], 1)}});
    ASSERT_TRUE(p.pump_until(p.last_tick + 25));
  }  // the connection drops
  server::ServerStats stats;
  ASSERT_TRUE(runner.stats_eventually(
      [](const server::ServerStats& s) { return s.rooms.size() == 1 && s.rooms[0].clients == 1; },
      &stats));
  Player again = join(runner.port(), "alpha", "p2");
  ASSERT_EQ(again.welcome.player_id, 2u);
  ASSERT_TRUE(again.pump_until(again.snapshot.tick + 1));
  const sim::Input resent = push(2, 11, bodies_owned_by(2)[0], 1);
  again.client->send(schema::InputFrame{again.last_tick + 10, 1, {resent}});
  ASSERT_TRUE(runner.stats_eventually(
      [](const server::ServerStats& s) { return s.rooms[0].inputs_duplicate == 1; }, &stats));
  EXPECT_EQ(stats.rooms[0].inputs_accepted, 1u);
  // A different client in the same id: its sequence 11 is its own.
  again.client.reset();
  ASSERT_TRUE(runner.stats_eventually(
      [](const server::ServerStats& s) { return s.rooms[0].clients == 1; }, &stats));
  Player other = join(runner.port(), "alpha", "someone-else");
  ASSERT_EQ(other.welcome.player_id, 2u);
  ASSERT_TRUE(other.pump_until(other.snapshot.tick + 1));
  other.client->send(schema::InputFrame{other.last_tick + 10, 1, {resent}});
  ASSERT_TRUE(runner.stats_eventually(
      [](const server::ServerStats& s) { return s.rooms[0].inputs_accepted == 2; }, &stats));
  EXPECT_EQ(stats.rooms[0].inputs_duplicate, 1u);
  (void)input;
  (void)keeper;
}

TEST(NetServer, OwnerZeroBodiesArePushedByNoPlayerWhenTheSceneHasOwners) {
  // docs/scene-format.md, `owner`: in a scene where some bodies have owners (inputs: 16 owned
  // spheres), a body with owner 0 is moved by contacts only; another player's body is refused
  // too. Only in a scene without any owner may every player push every dynamic body.
  ServerRunner runner(test_config());
  Player p = join(runner.port(), "alpha", "p1");
  const std::vector<sim::BodyId> unowned = bodies_owned_by(0);
  ASSERT_FALSE(unowned.empty());
  ASSERT_TRUE(p.pump_until(p.snapshot.tick + 1));
  p.client->send(schema::InputFrame{p.last_tick + 30, 1, {push(1, 1, unowned.front(), 1 << 10)}});
  std::optional<schema::ErrorMessage> error = wait_error(*p.client);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->code, ErrorCode::input_rejected);
  EXPECT_FALSE(error->fatal);
  EXPECT_NE(error->reason.find("is not owned by player 1 (owner: 0)"), std::string::npos)
      << error->reason;
  p.client->send(schema::InputFrame{p.last_tick + 30, 2, {push(1, 2, bodies_owned_by(2)[0], 1)}});
  error = wait_error(*p.client);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->code, ErrorCode::input_rejected);
  EXPECT_NE(error->reason.find("(owner: 2)"), std::string::npos) << error->reason;

  // In a scene without owners (pile) every player may push every dynamic body.
  server::ServerConfig config = test_config();
  config.scene = "pile";
  ServerRunner sandbox(config);
  RawClient client(sandbox.port());
  client.send(hello("beta", "p1"));
  std::optional<schema::Welcome> welcome = client.receive_of<schema::Welcome>(kReplyTimeout);
  ASSERT_TRUE(welcome);
  EXPECT_EQ(welcome->owned_bodies.size(), 1000u);  // all of the pile's dynamic bodies
}

TEST(NetServer, LateInputIsAppliedAtTheNextTick) {
  ServerRunner runner(test_config());
  Player p = join(runner.port(), "alpha", "p1");
  const std::vector<sim::BodyId> owned = bodies_owned_by(1);
  ASSERT_TRUE(p.pump_until(p.snapshot.tick + 2));
  const uint64_t sent_after = p.last_tick;
  schema::InputFrame frame;
  frame.target_tick = 1;  // long past
  frame.sequence = 9;
  frame.inputs = {push(1, 9, owned[3], 5 << 10)};
  p.client->send(frame);
  // The Ping is read after the InputFrame: its Pong's tick (the schedule's position then) is at
  // least the tick the room had stepped when the input arrived.
  p.client->send(schema::Ping{1});
  std::optional<schema::Pong> pong;
  const Clock::time_point deadline = Clock::now() + kReplyTimeout;
  while (!pong || p.last_tick < pong->server_tick + 1) {
    ASSERT_LT(Clock::now(), deadline) << "no Pong, or no TickFrames after it";
    ASSERT_TRUE(p.pump_until(p.last_tick + 1));
    const std::vector<schema::Pong> pongs = p.others_of<schema::Pong>();
    if (!pongs.empty()) pong = pongs.front();
  }
  uint64_t found_at = 0;
  for (const auto& [tick, tick_frame] : p.frames) {
    if (tick_frame.inputs.size() == 1 && same_input(tick_frame.inputs[0], frame.inputs[0])) {
      found_at = tick;
    }
  }
  // Applied by the first step after it arrived: after the last frame we had seen, and no later
  // than the tick after the one the Pong names.
  EXPECT_GT(found_at, sent_after);
  EXPECT_LE(found_at, pong->server_tick + 1);
  EXPECT_EQ(p.mismatches, 0u);
  const server::ServerStats stats = runner.stats();
  ASSERT_EQ(stats.rooms.size(), 1u);
  EXPECT_EQ(stats.rooms[0].inputs_late, 1u);
  EXPECT_EQ(stats.rooms[0].inputs_late_dropped, 0u);
  EXPECT_EQ(stats.rooms[0].inputs_accepted, 1u);
}

TEST(NetServer, RoomBehindItsScheduleAppliesInputsStampedByTheSchedule) {
  server::ServerConfig config = test_config();
  config.input_window_ticks = 8;
  // The schedule must not move here: this is the room still catching up, within its bound.
  config.max_schedule_lag_ticks = 1000;
  config.rules = "slow-steps";
  std::atomic<bool> slow{false};
  ServerRunner runner(config, nullptr, net_test::slow_steps_factory(&slow, 40ms));
  ASSERT_TRUE(runner.started());
  Player p = join(runner.port(), "alpha", "p1");
  const std::vector<sim::BodyId> owned = bodies_owned_by(1);
  ASSERT_TRUE(p.pump_until(p.snapshot.tick + 2));
  // Slow steps until the schedule (a Pong names its position) is well past the window counted
  // from the room's last stepped tick.
  slow = true;
  constexpr uint64_t kBehind = 8 + 20;
  std::optional<schema::Pong> pong;
  size_t pongs_seen = 0;
  const Clock::time_point deadline = Clock::now() + 4 * kReplyTimeout;
  while (!pong || pong->server_tick < p.last_tick + kBehind) {
    ASSERT_LT(Clock::now(), deadline) << "the room never fell behind";
    p.client->send(schema::Ping{1});
    while (p.others_of<schema::Pong>().size() == pongs_seen) {
      ASSERT_LT(Clock::now(), deadline) << "no Pong";
      ASSERT_TRUE(p.pump_until(p.last_tick + 1));  // TickFrames keep coming, one per slow step
    }
    pong = p.others_of<schema::Pong>()[pongs_seen++];
  }
  // What a client whose clock follows the schedule sends: the schedule's tick + its delay.
  schema::InputFrame frame;
  frame.target_tick = pong->server_tick + 2;
  frame.sequence = 1;
  frame.inputs = {push(1, 1, owned[0], 5 << 10)};
  p.client->send(frame);
  slow = false;
  uint64_t found_at = 0;
  const Clock::time_point found_deadline = Clock::now() + kReplyTimeout;
  while (found_at == 0) {
    ASSERT_LT(Clock::now(), found_deadline) << "the input never appeared in a TickFrame";
    ASSERT_TRUE(p.pump_until(p.last_tick + 1));
    const schema::TickFrame& last = p.frames.rbegin()->second;
    if (last.inputs.size() == 1 && same_input(last.inputs[0], frame.inputs[0])) {
      found_at = last.tick;
    }
  }
  EXPECT_LE(found_at, frame.target_tick);  // the window's last tick, before its stamped one
  EXPECT_TRUE(p.others_of<schema::ErrorMessage>().empty());
  EXPECT_EQ(p.mismatches, 0u);
  const server::ServerStats stats = runner.stats();
  ASSERT_EQ(stats.rooms.size(), 1u);
  EXPECT_EQ(stats.rooms[0].inputs_behind_schedule, 1u);
  EXPECT_EQ(stats.rooms[0].schedule_slips, 0u);  // within its (raised) lag bound
  EXPECT_EQ(pong->schedule_moved_ns, 0u);
  EXPECT_EQ(stats.rooms[0].inputs_rejected, 0u);
  EXPECT_EQ(stats.rooms[0].inputs_accepted, 1u);
}

TEST(NetServer, LateInputIsDroppedUnderDropPolicy) {
  server::ServerConfig config = test_config();
  config.late_input_policy = server::LateInputPolicy::drop;
  ServerRunner runner(config);
  Player p = join(runner.port(), "alpha", "p1");
  const std::vector<sim::BodyId> owned = bodies_owned_by(1);
  ASSERT_TRUE(p.pump_until(p.snapshot.tick + 2));
  schema::InputFrame frame;
  frame.target_tick = p.last_tick;  // already stepped
  frame.sequence = 4;
  frame.inputs = {push(1, 4, owned[0], 5 << 10)};
  p.client->send(frame);
  ASSERT_TRUE(p.pump_until(p.last_tick + 10));
  const std::vector<schema::ErrorMessage> errors = p.others_of<schema::ErrorMessage>();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].code, ErrorCode::input_late);
  EXPECT_FALSE(errors[0].fatal);
  for (const auto& [tick, tick_frame] : p.frames)
    EXPECT_TRUE(tick_frame.inputs.empty()) << "tick " << tick;
  EXPECT_FALSE(p.client->closed());
  const server::ServerStats stats = runner.stats();
  ASSERT_EQ(stats.rooms.size(), 1u);
  EXPECT_EQ(stats.rooms[0].inputs_late, 1u);
  EXPECT_EQ(stats.rooms[0].inputs_late_dropped, 1u);
  EXPECT_EQ(stats.rooms[0].inputs_accepted, 0u);
}

struct BadInputCase {
  const char* name;
  // Builds the InputFrame from the next tick to be stepped and the player's bodies.
  std::function<schema::InputFrame(uint64_t next_tick)> make;
  uint32_t expected_rejected;  // inputs_rejected counted by the room
};

class NetServerBadInput : public ::testing::TestWithParam<int> {};

std::vector<BadInputCase> bad_input_cases() {
  const std::vector<sim::BodyId> mine = bodies_owned_by(1);
  const std::vector<sim::BodyId> theirs = bodies_owned_by(2);
  const std::vector<sim::BodyId> nobodys = bodies_owned_by(0);
  std::vector<BadInputCase> cases;
  cases.push_back({"body_owned_by_another_player",
                   [=](uint64_t next) {
                     return schema::InputFrame{next + 10, 1, {push(1, 1, theirs[0], 1024)}};
                   },
                   1});
  cases.push_back({"body_nobody_owns",
                   [=](uint64_t next) {
                     // A dynamic body with owner 0: in a scene with owners, nobody may push it.
                     return schema::InputFrame{next + 10, 2, {push(1, 1, nobodys[0], 1024)}};
                   },
                   1});
  cases.push_back(
      {"body_that_does_not_exist",
       [=](uint64_t next) {
         return schema::InputFrame{next + 10, 2, {push(1, 1, sim::BodyId{999, 1}, 1024)}};
       },
       1});
  cases.push_back({"other_player_in_the_input",
                   [=](uint64_t next) {
                     return schema::InputFrame{next + 10, 3, {push(2, 1, mine[0], 1024)}};
                   },
                   1});
  cases.push_back({"impulse_out_of_range",
                   [=](uint64_t next) {
                     // The world refuses it when the tick is stepped (WorldDef input limits).
                     return schema::InputFrame{next + 10, 4, {push(1, 1, mine[0], INT32_MAX)}};
                   },
                   1});
  cases.push_back({"too_many_inputs_for_one_tick",
                   [=](uint64_t next) {
                     schema::InputFrame frame{next + 10, 5, {}};
                     for (uint32_t i = 0; i < 17; ++i)  // the limit is 16 per player per tick
                       frame.inputs.push_back(push(1, i, mine[i % 4], 0));
                     return frame;
                   },
                   1});
  cases.push_back({"target_beyond_the_window",
                   [=](uint64_t next) {
                     // The window is 64 ticks; 200 stays beyond it however far the room
                     // has moved since `next` was seen.
                     return schema::InputFrame{next + 200, 6, {push(1, 1, mine[0], 1024)}};
                   },
                   1});
  return cases;
}

TEST_P(NetServerBadInput, IsRejectedWithAnErrorAndTheConnectionStays) {
  const BadInputCase bad = bad_input_cases()[static_cast<size_t>(GetParam())];
  SCOPED_TRACE(bad.name);
  ServerRunner runner(test_config());
  Player p = join(runner.port(), "alpha", "p1");
  ASSERT_TRUE(p.pump_until(p.snapshot.tick + 1));
  const schema::InputFrame frame = bad.make(p.last_tick + 1);
  p.client->send(frame);
  // Each input is counted accepted or refused when its tick is stepped (or refused at once), so
  // once all are counted, every applied input and every Error precede the next TickFrame.
  server::ServerStats stats;
  ASSERT_TRUE(runner.stats_eventually(
      [&](const server::ServerStats& s) {
        return s.rooms.size() == 1 &&
               s.rooms[0].inputs_accepted + s.rooms[0].inputs_rejected == frame.inputs.size();
      },
      &stats));
  ASSERT_TRUE(p.pump_until(stats.rooms[0].tick + 1));
  const std::vector<schema::ErrorMessage> errors = p.others_of<schema::ErrorMessage>();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].code, ErrorCode::input_rejected) << errors[0].reason;
  EXPECT_FALSE(errors[0].fatal);
  EXPECT_FALSE(p.client->closed());
  EXPECT_FALSE(p.gap);
  EXPECT_EQ(p.mismatches, 0u);
  size_t applied = 0;
  for (const auto& [tick, tick_frame] : p.frames)
    applied += tick_frame.inputs.size();
  stats = runner.stats();
  ASSERT_EQ(stats.rooms.size(), 1u);
  EXPECT_EQ(stats.rooms[0].inputs_rejected, bad.expected_rejected);
  EXPECT_EQ(applied, frame.inputs.size() - bad.expected_rejected);
  EXPECT_EQ(stats.rooms[0].inputs_accepted, applied);
  EXPECT_EQ(stats.input_errors, 1u);
  EXPECT_EQ(stats.protocol_errors, 0u);
}

INSTANTIATE_TEST_SUITE_P(Cases, NetServerBadInput, ::testing::Range(0, 7),
                         [](const ::testing::TestParamInfo<int>& param_info) {
                           return std::string(
                               bad_input_cases()[static_cast<size_t>(param_info.param)].name);
                         });

// ---- malformed frames and protocol violations ----------------------------------------------

struct MalformedCase {
  const char* name;
  bool join_first;  // send Hello (and take Welcome + Snapshot) before the bad bytes
  std::function<std::vector<uint8_t>()> bytes;
  bool then_shutdown_send;
  ErrorCode expected;
};

std::vector<uint8_t> hello_frame() {
  return schema::encode_frame(hello("alpha", "bad"));
}

std::vector<MalformedCase> malformed_cases() {
  std::vector<MalformedCase> cases;
  cases.push_back({"truncated", false,
                   [] {
                     std::vector<uint8_t> frame = hello_frame();
                     frame.resize(frame.size() / 2);  // the stream ends inside the frame
                     return frame;
                   },
                   true, ErrorCode::bad_frame});
  cases.push_back({"length_shorter_than_the_flatbuffer", false,
                   [] {
                     std::vector<uint8_t> frame = hello_frame();
                     const uint32_t body = static_cast<uint32_t>(frame.size() - 4);
                     std::vector<uint8_t> out = header(body - 8);
                     out.insert(out.end(), frame.begin() + 4, frame.end() - 8);
                     return out;
                   },
                   false, ErrorCode::bad_frame});
  cases.push_back({"random_bytes", false,
                   [] {
                     std::mt19937 rng(12345);
                     std::vector<uint8_t> out = header(256);
                     for (int i = 0; i < 256; ++i)
                       out.push_back(static_cast<uint8_t>(rng()));
                     return out;
                   },
                   false, ErrorCode::bad_frame});
  cases.push_back({"wrong_file_identifier", false,
                   [] {
                     std::vector<uint8_t> frame = hello_frame();
                     std::memcpy(frame.data() + 4 + 4, "XXXX", 4);  // body offset 4: identifier
                     return frame;
                   },
                   false, ErrorCode::bad_frame});
  cases.push_back({"over_the_cap", false, [] { return header(schema::kMaxClientFrameBytes + 1); },
                   false, ErrorCode::bad_frame});
  cases.push_back({"zero_length", false, [] { return header(0); }, false, ErrorCode::bad_frame});
  cases.push_back({"message_before_hello", false,
                   [] {
                     return schema::encode_frame(schema::InputFrame{10, 1, {}});
                   },
                   false, ErrorCode::not_joined});
  cases.push_back(
      {"unknown_union_member", true,
       [] {
         flatbuffers::FlatBufferBuilder builder;
         auto ping = wire::CreatePing(builder, 5);
         builder.FinishSizePrefixed(
             wire::CreateEnvelope(builder, static_cast<wire::Message>(200), ping.Union()), "LSW1");
         return std::vector<uint8_t>(builder.GetBufferPointer(),
                                     builder.GetBufferPointer() + builder.GetSize());
       },
       false, ErrorCode::unknown_message});
  cases.push_back({"server_message_from_a_client", true,
                   [] {
                     return schema::encode_frame(schema::TickFrame{5, {}, 7, {}});
                   },
                   false, ErrorCode::unknown_message});
  cases.push_back({"random_bytes_after_join", true,
                   [] {
                     std::mt19937 rng(777);
                     std::vector<uint8_t> out = header(100);
                     for (int i = 0; i < 100; ++i)
                       out.push_back(static_cast<uint8_t>(rng()));
                     out[4] &= 0xFC;  // a FlatBuffer's first byte (a compact one is the next case)
                     return out;
                   },
                   false, ErrorCode::bad_frame});
  cases.push_back({"malformed_compact_input_frame_after_join", true,
                   [] {
                     // InputFrame kind with inputs, target tick 1, sequence 2, then a group count
                     // that the bytes left cannot hold.
                     std::vector<uint8_t> out = header(8);
                     for (uint8_t b : {0x06, 0x01, 0x02, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F})
                       out.push_back(b);
                     return out;
                   },
                   false, ErrorCode::bad_frame});
  cases.push_back({"game_message_over_the_codec_cap", true,
                   [] {
                     return schema::encode_frame(schema::GameMessage{
                         std::vector<uint8_t>(schema::kMaxGameMessageBytes + 1, 'x')});
                   },
                   false, ErrorCode::bad_frame});
  cases.push_back({"game_message_without_its_table", true,
                   [] {
                     flatbuffers::FlatBufferBuilder builder;
                     builder.Finish(wire::CreateEnvelope(builder, wire::Message::GameMessage, 0),
                                    "LSW1");
                     std::vector<uint8_t> out = header(builder.GetSize());
                     out.insert(out.end(), builder.GetBufferPointer(),
                                builder.GetBufferPointer() + builder.GetSize());
                     return out;
                   },
                   false, ErrorCode::bad_frame});
  cases.push_back({"game_message_before_hello", false,
                   [] {
                     return schema::encode_frame(schema::GameMessage{{'h', 'i'}});
                   },
                   false, ErrorCode::not_joined});
  return cases;
}

class NetServerMalformed : public ::testing::TestWithParam<int> {};

TEST_P(NetServerMalformed, ClosesThatConnectionWhileTheRoomKeepsTicking) {
  const MalformedCase bad = malformed_cases()[static_cast<size_t>(GetParam())];
  SCOPED_TRACE(bad.name);
  ServerRunner runner(test_config());
  Player observer = join(runner.port(), "alpha", "observer");
  ASSERT_TRUE(observer.pump_until(observer.snapshot.tick + 3));

  RawClient client(runner.port());
  if (bad.join_first) {
    client.send(hello("alpha", "bad"));
    ASSERT_TRUE(client.receive_of<schema::Welcome>(kReplyTimeout));
    ASSERT_TRUE(client.receive_of<schema::Snapshot>(kReplyTimeout));
  }
  client.send_bytes(bad.bytes());
  if (bad.then_shutdown_send) client.shutdown_send();
  std::vector<Message> received;
  ASSERT_TRUE(client.read_until_closed(kReplyTimeout, &received)) << "the server did not close";
  EXPECT_FALSE(client.reset()) << "closed with a reset: the Error frame may have been lost";
  // The last message is the fatal Error with the expected code.
  ASSERT_FALSE(received.empty());
  const auto* error = std::get_if<schema::ErrorMessage>(&received.back());
  ASSERT_NE(error, nullptr) << schema::message_name(received.back());
  EXPECT_EQ(error->code, bad.expected) << error->reason;
  EXPECT_TRUE(error->fatal);
  EXPECT_FALSE(error->reason.empty());

  // The observer kept receiving every tick, before, during and after.
  const uint64_t after = observer.last_tick;
  ASSERT_TRUE(observer.pump_until(after + 10));
  EXPECT_FALSE(observer.gap);
  EXPECT_EQ(observer.mismatches, 0u);
  EXPECT_TRUE(observer.others_of<schema::ErrorMessage>().empty());

  server::ServerStats stats;
  // The server closes its side at our FIN (or after flush_timeout): only the observer stays.
  client.shutdown_send();
  EXPECT_TRUE(runner.stats_eventually(
      [](const server::ServerStats& s) { return s.sessions_open == 1; }, &stats));
  EXPECT_EQ(stats.protocol_errors, 1u);
  EXPECT_EQ(stats.errors_by_code[static_cast<size_t>(bad.expected)], 1u);
  ASSERT_EQ(stats.rooms.size(), 1u);
  EXPECT_EQ(stats.rooms[0].clients, 1u);
  EXPECT_EQ(stats.rooms[0].protocol_errors, bad.join_first ? 1u : 0u);
}

INSTANTIATE_TEST_SUITE_P(Cases, NetServerMalformed, ::testing::Range(0, 14),
                         [](const ::testing::TestParamInfo<int>& param_info) {
                           return std::string(
                               malformed_cases()[static_cast<size_t>(param_info.param)].name);
                         });

// Sends `h` and reads until the server closes: the one frame it sent must be a fatal
// version_mismatch Error stating the server's versions. Returns its reason ("" after a failure).
std::string version_refusal(uint16_t port, const schema::Hello& h) {
  RawClient client(port);
  client.send(h);
  std::vector<Message> received;
  if (!client.read_until_closed(kReplyTimeout, &received) || received.size() != 1) {
    ADD_FAILURE() << "expected one frame and the close, got " << received.size() << " frames";
    return "";
  }
  const auto* error = std::get_if<schema::ErrorMessage>(&received[0]);
  if (error == nullptr) {
    ADD_FAILURE() << "not an Error: " << schema::message_name(received[0]);
    return "";
  }
  EXPECT_EQ(error->code, ErrorCode::version_mismatch);
  EXPECT_TRUE(error->fatal);
  EXPECT_EQ(error->server_protocol_version, schema::kProtocolVersion);
  EXPECT_EQ(error->server_min_protocol_version, schema::kMinProtocolVersion);
  return error->reason;
}

// Game messages over the room's size or rate limit: a non-fatal message_rejected Error to that
// client, counted by kind, and the client keeps receiving and verifying every tick; messages
// within the limits are delivered (counted) at the next tick.
TEST(NetServer, GameMessagesOverTheSizeOrRateAreRefusedAndThePlayerKeepsPlaying) {
  server::ServerConfig config = test_config();
  config.max_game_message_bytes = 16;
  config.max_game_messages_per_s = 2;  // a burst of 2, then one per 30 ticks at 60 Hz
  ServerRunner runner(config);
  Player p = join(runner.port(), "alpha", "chatty");
  ASSERT_TRUE(p.pump_until(p.snapshot.tick + 2));

  p.client->send(schema::GameMessage{std::vector<uint8_t>(17, 'x')});
  std::optional<schema::ErrorMessage> error = p.pump_until_error();
  ASSERT_TRUE(error);
  EXPECT_EQ(error->code, ErrorCode::message_rejected);
  EXPECT_FALSE(error->fatal);
  EXPECT_NE(error->reason.find("17 bytes"), std::string::npos) << error->reason;
  EXPECT_NE(error->reason.find("at most 16"), std::string::npos) << error->reason;

  // Eight at once: the bucket holds two, so at least six are refused for the rate.
  for (int i = 0; i < 8; ++i)
    p.client->send(schema::GameMessage{std::vector<uint8_t>(16, static_cast<uint8_t>('a' + i))});
  error = p.pump_until_error();
  ASSERT_TRUE(error);
  EXPECT_EQ(error->code, ErrorCode::message_rejected);
  EXPECT_FALSE(error->fatal);
  EXPECT_NE(error->reason.find("2 messages per second"), std::string::npos) << error->reason;

  // Still in the room: every tick after the refusals arrives and verifies.
  const uint64_t from = p.last_tick;
  ASSERT_TRUE(p.pump_until(from + 10));
  EXPECT_FALSE(p.gap);
  EXPECT_EQ(p.mismatches, 0u);
  server::ServerStats stats;
  ASSERT_TRUE(runner.stats_eventually(
      [](const server::ServerStats& s) {
        return s.rooms.size() == 1 &&
               s.rooms[0].game_messages_delivered + s.rooms[0].game_messages_over_rate == 8;
      },
      &stats));
  const server::RoomStats& room = stats.rooms[0];
  EXPECT_EQ(room.game_messages_oversize, 1u);
  EXPECT_GE(room.game_messages_over_rate, 6u);
  EXPECT_GE(room.game_messages_delivered, 2u);
  EXPECT_EQ(room.protocol_errors, 0u);
  EXPECT_EQ(room.clients, 1u);
  EXPECT_EQ(stats.errors_by_code[static_cast<size_t>(ErrorCode::message_rejected)],
            1 + room.game_messages_over_rate);
}

TEST(NetServer, VersionMismatchNamesBothRanges) {
  ServerRunner runner(test_config());
  schema::Hello h = hello("alpha", "future");
  h.protocol_version = 7;
  h.min_protocol_version = 6;
  const std::string reason = version_refusal(runner.port(), h);
  EXPECT_NE(reason.find("server speaks 4..5"), std::string::npos) << reason;
  EXPECT_NE(reason.find("client 6..7"), std::string::npos) << reason;
}

TEST(NetServer, OverlappingVersionsNegotiateTheHighestCommonOne) {
  ServerRunner runner(test_config());
  RawClient client(runner.port());
  schema::Hello h = hello("alpha", "newer");
  h.protocol_version = 7;  // speaks 1..7; we speak 4..5
  h.min_protocol_version = 1;
  client.send(h);
  std::optional<schema::Welcome> welcome = client.receive_of<schema::Welcome>(kReplyTimeout);
  ASSERT_TRUE(welcome);
  EXPECT_EQ(welcome->protocol_version, 5);
}

TEST(NetServer, OlderClientsGetAClearVersionMismatch) {
  // Version 3 sent TickFrame and InputFrame as FlatBuffers tables: it could not read the compact
  // bodies of version 4. Version 2 lacked Welcome.world_def and TickFrame.commands (it would
  // desync at the first join), and version 1 neither. Hello and Error kept their bytes since
  // version 1, so every one of them reads the refusal.
  const struct {
    uint16_t min, max;
    const char* reason;
  } clients[] = {{3, 3, "server speaks 4..5, client 3..3"},
                 {1, 2, "server speaks 4..5, client 1..2"}};
  ServerRunner runner(test_config());
  for (const auto& c : clients) {
    SCOPED_TRACE(c.reason);
    schema::Hello h = hello("alpha", "old");
    h.protocol_version = c.max;
    h.min_protocol_version = c.min;
    const std::string reason = version_refusal(runner.port(), h);
    EXPECT_NE(reason.find(c.reason), std::string::npos) << reason;
  }
}

TEST(NetServer, ALockstepClientOfAnotherPhysicsRevisionIsRefusedByName) {
  // Its world would step differently from the room's and diverge at the first contact: refused
  // before any room is made. A thin client (snapshots only) and a client that does not state its
  // revision (0: older than the field) are let in, and every Welcome states the server's.
  ServerRunner runner(test_config());
  schema::Hello other = hello("alpha", "other-build");
  other.physics_revision = sim::kPhysicsRevision + 1;
  const std::string reason = version_refusal(runner.port(), other);
  const std::string expected = "server simulates physics revision " +
                               std::to_string(sim::kPhysicsRevision) + ", client " +
                               std::to_string(sim::kPhysicsRevision + 1);
  EXPECT_NE(reason.find(expected), std::string::npos) << reason;
  server::ServerStats stats;
  ASSERT_TRUE(runner.stats_eventually(
      [](const server::ServerStats& s) { return s.protocol_errors == 1u; }, &stats));
  EXPECT_TRUE(stats.rooms.empty());
  const struct {
    uint32_t revision;
    schema::ClientMode mode;
    const char* name;
  } admitted[] = {{sim::kPhysicsRevision + 1, schema::ClientMode::thin, "thin-other-build"},
                  {0, schema::ClientMode::lockstep, "unstated"},
                  {sim::kPhysicsRevision, schema::ClientMode::lockstep, "same-build"}};
  for (const auto& a : admitted) {
    SCOPED_TRACE(a.name);
    RawClient client(runner.port());
    schema::Hello h = hello("alpha", a.name);
    h.physics_revision = a.revision;
    h.mode = a.mode;
    if (a.mode == schema::ClientMode::thin) h.snapshot_rate_hz = 10;
    client.send(h);
    std::optional<schema::Welcome> welcome = client.receive_of<schema::Welcome>(kReplyTimeout);
    ASSERT_TRUE(welcome);
    EXPECT_EQ(welcome->physics_revision, sim::kPhysicsRevision);
  }
}

TEST(NetServer, FramesBuiltWithFinishSizePrefixedAreTakenLikeOthers) {
  // FinishSizePrefixed writes our 4-byte length itself but aligns the body as if it were still
  // prefixed: a Hello (no 64-bit field) and a Ping (one) must both be taken.
  ServerRunner runner(test_config());
  RawClient client(runner.port());
  const auto send_prefixed = [&client](flatbuffers::FlatBufferBuilder& builder, auto message,
                                       wire::Message type) {
    builder.FinishSizePrefixed(wire::CreateEnvelope(builder, type, message.Union()),
                               wire::EnvelopeIdentifier());
    client.send_bytes(std::span<const uint8_t>(builder.GetBufferPointer(), builder.GetSize()));
  };
  flatbuffers::FlatBufferBuilder hello_builder;
  send_prefixed(hello_builder,
                wire::CreateHelloDirect(hello_builder, schema::kProtocolVersion,
                                        schema::kMinProtocolVersion, "alpha", "prefixed"),
                wire::Message::Hello);
  std::vector<Message> skipped;
  ASSERT_TRUE(client.receive_of<schema::Welcome>(kReplyTimeout, &skipped));
  flatbuffers::FlatBufferBuilder ping_builder;
  send_prefixed(ping_builder, wire::CreatePing(ping_builder, 0x0123'4567'89AB'CDEFull),
                wire::Message::Ping);
  const std::optional<schema::Pong> pong = client.receive_of<schema::Pong>(kReplyTimeout, &skipped);
  ASSERT_TRUE(pong);
  EXPECT_EQ(pong->client_time_ns, 0x0123'4567'89AB'CDEFull);
  for (const Message& m : skipped)
    EXPECT_FALSE(std::holds_alternative<schema::ErrorMessage>(m)) << schema::message_name(m);
}

// ---- slow consumers, deadlines, heartbeats --------------------------------------------------

TEST(NetServer, ClientThatStopsReadingIsDroppedAndItsQueueStaysBounded) {
  server::ServerConfig config = test_config();
  constexpr uint64_t kLimit = 512u << 10;  // the inputs scene's largest snapshot is ~305 KiB
  config.queue_limit_bytes = kLimit;
  config.socket_send_buffer_bytes = 16u << 10;  // keep the kernel from absorbing much
  config.max_snapshot_rate_hz = 60;
  config.flush_timeout = 60'000ms;  // time for the test to read what was flushed, however slow
  ServerRunner runner(config);
  Player observer = join(runner.port(), "alpha", "observer");

  // A thin client asking for a snapshot every tick (~14 KB each), never reading.
  RawClient sloth(runner.port(), 4096);
  sloth.send(hello("alpha", "sloth", schema::ClientMode::thin, 60));
  const Clock::time_point deadline = Clock::now() + kReplyTimeout;
  server::ServerStats stats;
  while (Clock::now() < deadline) {
    observer.pump_for(50ms);
    stats = runner.stats();
    if (stats.slow_consumer_disconnects > 0) break;
  }
  ASSERT_EQ(stats.slow_consumer_disconnects, 1u);
  // The queue filled up to within one snapshot of the limit and never past it.
  EXPECT_LE(stats.max_session_queued_bytes, kLimit);
  EXPECT_GT(stats.max_session_queued_bytes, kLimit / 2);
  EXPECT_EQ(stats.queue_limit_bytes, kLimit);

  // What was in flight, then Disconnect{slow_consumer}, then the end of the stream.
  std::vector<Message> received;
  ASSERT_TRUE(sloth.read_until_closed(kReplyTimeout, &received));
  ASSERT_FALSE(received.empty());
  EXPECT_TRUE(std::holds_alternative<schema::Welcome>(received.front()));
  const auto* bye = std::get_if<schema::Disconnect>(&received.back());
  ASSERT_NE(bye, nullptr) << schema::message_name(received.back());
  EXPECT_EQ(bye->code, ErrorCode::slow_consumer);

  // The room never waited for it.
  ASSERT_TRUE(observer.pump_until(observer.last_tick + 10));
  EXPECT_FALSE(observer.gap);
  EXPECT_EQ(observer.mismatches, 0u);
  stats = runner.stats();
  ASSERT_EQ(stats.rooms.size(), 1u);
  EXPECT_EQ(stats.rooms[0].slow_consumers, 1u);
  EXPECT_LE(stats.max_session_queued_bytes, kLimit);
}

TEST(NetServer, ASlowSpectatorGetsItsDisconnectRightAfterTheFrameBeingWritten) {
  // A spectator that stops reading, reads a little (so the server has a long queue to write
  // from), and stops again. When its queue overflows, the server must not make it take a batch
  // of queued snapshots first: the Disconnect comes right after the frame partly on the wire,
  // so a client that reads again soon gets it, and the stream ends on a frame boundary.
  server::ServerConfig config = test_config();
  constexpr uint64_t kLimit = 2u << 20;
  config.queue_limit_bytes = kLimit;
  config.socket_send_buffer_bytes = 16u << 10;  // keep the kernel from absorbing much
  config.max_snapshot_rate_hz = 60;
  config.flush_timeout = 60'000ms;  // time for the test to read the end, however slow
  ServerRunner runner(config);
  Player observer = join(runner.port(), "alpha", "observer");

  RawClient sloth(runner.port(), 4096);
  sloth.send(hello("alpha", "sloth", schema::ClientMode::thin, 60));
  const auto wait_for = [&](auto condition) {
    const Clock::time_point deadline = Clock::now() + kReplyTimeout;
    server::ServerStats stats = runner.stats();
    while (!condition(stats) && Clock::now() < deadline) {
      observer.pump_for(20ms);
      stats = runner.stats();
    }
    return condition(stats);
  };
  ASSERT_TRUE(wait_for(
      [](const server::ServerStats& s) { return s.max_session_queued_bytes > kLimit / 2; }));
  ASSERT_TRUE(sloth.read_bytes(64u << 10, kReplyTimeout));
  const uint64_t paused_at = sloth.bytes_read();
  ASSERT_TRUE(
      wait_for([](const server::ServerStats& s) { return s.slow_consumer_disconnects > 0; }));

  std::vector<Message> received;
  ASSERT_TRUE(sloth.read_until_closed(kReplyTimeout, &received));
  ASSERT_FALSE(received.empty());
  const auto* bye = std::get_if<schema::Disconnect>(&received.back());
  ASSERT_NE(bye, nullptr) << schema::message_name(received.back());
  EXPECT_EQ(bye->code, ErrorCode::slow_consumer);
  // What the kernel buffers held when it overflowed (tens of KiB here), the rest of one ~29 KB
  // snapshot and the Disconnect: far less than the up to 32 snapshots of a write batch.
  const uint64_t after_pause = sloth.bytes_read() - paused_at;
  std::printf("read after the pause: %llu bytes\n", static_cast<unsigned long long>(after_pause));
  EXPECT_LT(after_pause, 256u << 10);
  EXPECT_LE(runner.stats().max_session_queued_bytes, kLimit);
}

TEST(NetServer, SilentClientTimesOutWhilePingingClientStays) {
  server::ServerConfig config = test_config();
  // The pinger sends every ~20 ms: only a machine that holds this thread back for a whole
  // timeout could make it miss one. The silent client goes after 3 s, whatever the load.
  config.read_timeout = 3000ms;
  ServerRunner runner(config);
  const Clock::time_point before_open = Clock::now();  // the first Hello opens the room
  Player silent = join(runner.port(), "alpha", "silent");
  Player pinger = join(runner.port(), "alpha", "pinger");
  // Ping until the silent client has been dropped and at least 5 Pongs came back.
  uint64_t pings = 0;
  size_t pongs = 0;
  const Clock::time_point deadline = Clock::now() + kReplyTimeout;
  while (!silent.client->closed() || pongs < 5) {
    ASSERT_LT(Clock::now(), deadline)
        << pongs << " Pongs, silent client closed " << silent.client->closed();
    pinger.client->send(schema::Ping{++pings});
    pinger.pump_for(20ms);
    silent.pump_for(5ms);  // reads what has arrived, the Error and the end of the stream too
    pongs = pinger.others_of<schema::Pong>().size();
  }
  for (size_t i = 0; i < pinger.others.size(); ++i) {
    const auto* pong = std::get_if<schema::Pong>(&pinger.others[i]);
    if (pong == nullptr) continue;
    // The schedule's position when the Ping arrived: at least the last tick this client had
    // read before the Pong (sent before it), and no tick that could not yet be due when the
    // Pong was read.
    EXPECT_GE(pong->server_tick, pinger.others_after_tick[i]);
    EXPECT_TRUE(net_test::could_be_due(pong->server_tick, 60, before_open, pinger.others_at[i]))
        << "Pong for tick " << pong->server_tick;
    EXPECT_LT(pong->ns_into_tick, 16'666'667u);  // within one 60 Hz period of its due time
  }
  EXPECT_TRUE(pinger.others_of<schema::ErrorMessage>().empty());
  EXPECT_FALSE(pinger.client->closed());

  ASSERT_FALSE(silent.others.empty());
  const auto* error = std::get_if<schema::ErrorMessage>(&silent.others.back());
  ASSERT_NE(error, nullptr) << schema::message_name(silent.others.back());
  EXPECT_EQ(error->code, ErrorCode::timeout);
  EXPECT_TRUE(error->fatal);
  EXPECT_EQ(runner.stats().timeouts, 1u);
}

// ---- thin clients, resync, desync reports --------------------------------------------------

TEST(NetServer, ThinClientGetsSnapshotsAtTheGrantedRateAndNoTickFrames) {
  server::ServerConfig config = test_config();
  config.max_snapshot_rate_hz = 20;
  ServerRunner runner(config);
  RawClient thin(runner.port());
  thin.send(hello("alpha", "dashboard", schema::ClientMode::thin, 30));  // more than allowed
  std::optional<schema::Welcome> welcome = thin.receive_of<schema::Welcome>(kReplyTimeout);
  ASSERT_TRUE(welcome);
  EXPECT_EQ(welcome->player_id, 0u);  // spectators own nothing
  EXPECT_TRUE(welcome->owned_bodies.empty());
  EXPECT_EQ(welcome->snapshot_rate_hz, 20);
  std::vector<uint64_t> ticks;
  std::vector<Message> others;
  while (ticks.size() < 6) {
    std::optional<schema::Snapshot> snapshot =
        thin.receive_of<schema::Snapshot>(kReplyTimeout, &others);
    ASSERT_TRUE(snapshot);
    std::unique_ptr<sim::World> world = sim::build_world(make_scene());
    ASSERT_EQ(world->restore_snapshot(snapshot->state), sim::Error::none);
    EXPECT_EQ(world->state_hash(), snapshot->state_hash);
    ticks.push_back(snapshot->tick);
  }
  for (size_t i = 1; i < ticks.size(); ++i)
    EXPECT_EQ(ticks[i], ticks[i - 1] + 3) << "20 Hz at 60 Hz is every 3rd tick";
  EXPECT_TRUE(others.empty()) << schema::message_name(others.front());

  // A spectator cannot push bodies.
  thin.send(schema::InputFrame{ticks.back() + 10, 1, {push(0, 1, bodies_owned_by(1)[0], 1)}});
  std::optional<schema::ErrorMessage> error = wait_error(thin);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->code, ErrorCode::input_rejected);
  EXPECT_FALSE(error->fatal);
}

TEST(NetServer, ThinClientsGrantedIntervalIsExactInTheWelcome) {
  // 7 Hz asked at 60 Hz: whole ticks between snapshots, so every ceil(60 / 7) = 9 ticks, which
  // is 6.67 Hz. The Welcome's interval says exactly that; its rate is the same, rounded down.
  server::ServerConfig config = test_config();
  config.max_snapshot_rate_hz = 20;
  ServerRunner runner(config);
  RawClient thin(runner.port());
  thin.send(hello("alpha", "dashboard", schema::ClientMode::thin, 7));
  std::optional<schema::Welcome> welcome = thin.receive_of<schema::Welcome>(kReplyTimeout);
  ASSERT_TRUE(welcome);
  EXPECT_EQ(welcome->snapshot_interval_ticks, 9u);
  EXPECT_EQ(welcome->snapshot_rate_hz, 6);
  std::vector<uint64_t> ticks;
  while (ticks.size() < 4) {
    std::optional<schema::Snapshot> snapshot = thin.receive_of<schema::Snapshot>(kReplyTimeout);
    ASSERT_TRUE(snapshot);
    ticks.push_back(snapshot->tick);
  }
  // The first is the join snapshot; the stream follows at the announced interval.
  for (size_t i = 2; i < ticks.size(); ++i)
    EXPECT_EQ(ticks[i], ticks[i - 1] + welcome->snapshot_interval_ticks);

  // Lockstep players get TickFrames every tick and no interval.
  RawClient player(runner.port());
  player.send(hello("alpha", "p1"));
  std::optional<schema::Welcome> player_welcome = player.receive_of<schema::Welcome>(kReplyTimeout);
  ASSERT_TRUE(player_welcome);
  EXPECT_EQ(player_welcome->snapshot_interval_ticks, 0u);
}

TEST(NetServer, ResyncRequestGetsASnapshotOfTheCurrentTick) {
  ServerRunner runner(test_config());
  Player p = join(runner.port(), "alpha", "p1");
  ASSERT_TRUE(p.pump_until(p.snapshot.tick + 3));
  p.client->send(schema::ResyncRequest{"test"});
  std::optional<schema::Snapshot> snapshot;
  const Clock::time_point deadline = Clock::now() + kReplyTimeout;
  while (!snapshot && Clock::now() < deadline) {
    std::optional<Message> message = p.client->receive(kReplyTimeout);
    ASSERT_TRUE(message);
    if (auto* s = std::get_if<schema::Snapshot>(&*message)) {
      snapshot = *s;
    } else {
      p.handle(std::move(*message));
    }
  }
  ASSERT_TRUE(snapshot);
  // It follows the TickFrame of its tick and carries that tick's hash.
  EXPECT_EQ(snapshot->tick, p.last_tick);
  EXPECT_EQ(snapshot->state_hash, p.hashes[p.last_tick]);
  std::unique_ptr<sim::World> world = sim::build_world(make_scene());
  ASSERT_EQ(world->restore_snapshot(snapshot->state), sim::Error::none);
  EXPECT_EQ(world->state_hash(), snapshot->state_hash);
}

TEST(NetServer, DesyncReportIsCountedAndReachesTheHook) {
  std::atomic<int> hook_calls{0};
  std::promise<server::DesyncEvent> seen;
  ServerRunner runner(test_config(), [&](const server::DesyncEvent& event) {
    if (hook_calls.fetch_add(1) == 0) seen.set_value(event);
  });
  Player p = join(runner.port(), "alpha", "p1");
  ASSERT_TRUE(p.pump_until(p.snapshot.tick + 2));
  p.client->send(schema::DesyncReport{p.last_tick, 0x1234, p.hashes[p.last_tick]});
  std::future<server::DesyncEvent> future = seen.get_future();
  ASSERT_EQ(future.wait_for(kReplyTimeout), std::future_status::ready);
  const server::DesyncEvent event = future.get();
  EXPECT_EQ(event.room, "alpha");
  EXPECT_EQ(event.player_id, 1u);
  EXPECT_EQ(event.player_name, "p1");
  EXPECT_EQ(event.report.tick, p.last_tick);
  EXPECT_EQ(event.report.client_hash, 0x1234u);
  EXPECT_GE(event.room_tick, p.last_tick);
  const server::ServerStats stats = runner.stats();
  EXPECT_EQ(stats.desync_reports, 1u);
  ASSERT_EQ(stats.rooms.size(), 1u);
  EXPECT_EQ(stats.rooms[0].desync_reports, 1u);
  ASSERT_TRUE(p.pump_until(p.last_tick + 3));  // still in the room, not an error
  EXPECT_TRUE(p.others_of<schema::ErrorMessage>().empty());
  p.client->close();
  runner.stop();
  EXPECT_EQ(hook_calls.load(), 1);
}

// ---- shutdown and room lifetime ------------------------------------------------------------

TEST(NetServer, GracefulShutdownDisconnectsEveryClientAndRunReturns) {
  server::ServerConfig config = test_config();
  // Longer than the hang guard: run() returns in time only if the server closes each session
  // at the client's FIN instead of waiting out the flush timeout.
  config.flush_timeout = 600'000ms;
  ServerRunner runner(config);
  Player a = join(runner.port(), "alpha", "a");
  Player b = join(runner.port(), "beta", "b");
  RawClient lurker(runner.port());  // connected, no Hello yet
  ASSERT_TRUE(a.pump_until(a.snapshot.tick + 2));
  ASSERT_TRUE(b.pump_until(b.snapshot.tick + 2));
  // The server must have accepted the lurker before it stops accepting: one session each.
  server::ServerStats before;
  ASSERT_TRUE(runner.stats_eventually(
      [](const server::ServerStats& s) { return s.sessions_open == 3; }, &before))
      << before.sessions_open << " sessions open";

  runner.server().request_shutdown();
  for (RawClient* client : {a.client.get(), b.client.get(), &lurker}) {
    std::vector<Message> received;
    ASSERT_TRUE(client->read_until_closed(kReplyTimeout, &received));
    ASSERT_FALSE(received.empty());
    const auto* bye = std::get_if<schema::Disconnect>(&received.back());
    ASSERT_NE(bye, nullptr) << schema::message_name(received.back());
    EXPECT_EQ(bye->code, ErrorCode::server_shutdown);
    EXPECT_FALSE(client->reset());
    client->close();  // our FIN lets the server close at once instead of at flush_timeout
  }
  EXPECT_TRUE(runner.stop());  // run() returned, long before flush_timeout
  const server::ServerStats stats = runner.server().stats();
  EXPECT_EQ(stats.sessions_open, 0u);
  ASSERT_EQ(stats.rooms.size(), 2u);
  for (const server::RoomStats& room : stats.rooms) {
    EXPECT_FALSE(room.open);
    EXPECT_GT(room.tick, 0u);
  }
  const std::string json = server::summary_json(stats);
  EXPECT_NE(json.find("\"name\":\"alpha\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"lateness_p99_us\""), std::string::npos);
  EXPECT_NE(json.find("\"bytes_out_per_s\""), std::string::npos);
}

TEST(NetServer, EmptyRoomClosesAfterItsGracePeriodAndKeepsItsSummary) {
  server::ServerConfig config = test_config();
  config.empty_room_grace = 200ms;
  ServerRunner runner(config);
  {
    Player p = join(runner.port(), "alpha", "p1");
    ASSERT_TRUE(p.pump_until(p.snapshot.tick + 5));
    p.client->send(schema::Disconnect{ErrorCode::none, "bye"});
  }
  server::ServerStats stats;
  const Clock::time_point deadline = Clock::now() + kReplyTimeout;
  while (Clock::now() < deadline) {
    stats = runner.stats();
    if (!stats.rooms.empty() && !stats.rooms[0].open) break;
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_EQ(stats.rooms.size(), 1u);
  EXPECT_FALSE(stats.rooms[0].open);
  EXPECT_EQ(stats.rooms[0].clients, 0u);
  EXPECT_EQ(stats.rooms[0].clients_joined, 1u);
  ASSERT_EQ(stats.rooms[0].client_list.size(), 1u);
  EXPECT_EQ(stats.rooms[0].client_list[0].name, "p1");
  EXPECT_GT(stats.rooms[0].client_list[0].bytes_out, 0u);
  // The same name opens a fresh room: player 1 again, at the scene as built.
  Player again = join(runner.port(), "alpha", "p2");
  EXPECT_EQ(again.welcome.player_id, 1u);
  EXPECT_EQ(again.snapshot.tick, 0u);
}

// A Hello that arrives while its room is closing on its worker (empty past its grace, the control
// thread not told yet) gets a fresh room of that name; the summary keeps both. The close hook
// holds the old room's report to the control thread, so the test sits in that state for as long
// as it needs, on any number of threads.
TEST(NetServer, AHelloForARoomClosingOnItsWorkerGetsAFreshRoom) {
  server::ServerConfig config = test_config();
  config.empty_room_grace = 50ms;
  std::mutex mutex;
  std::condition_variable closed_on_worker;
  std::function<void()> held_report;  // the first room's; declared before the server
  bool held = false;
  server::RoomCloseHook hook = [&](const std::string&, std::function<void()> report) {
    std::lock_guard<std::mutex> lock(mutex);
    if (held) {
      report();  // any later room: as without a hook
      return;
    }
    held = true;
    held_report = std::move(report);
    closed_on_worker.notify_all();
  };
  ServerRunner runner(config, nullptr, nullptr, hook);
  {
    Player p = join(runner.port(), "alpha", "p1");
    ASSERT_TRUE(p.pump_until(p.snapshot.tick + 5));
    p.client->send(schema::Disconnect{ErrorCode::none, "bye"});
  }
  {
    std::unique_lock<std::mutex> lock(mutex);
    ASSERT_TRUE(closed_on_worker.wait_for(lock, net_test::kHangGuard, [&] { return held; }));
  }
  // Closed on its worker, still listed by the control thread.
  server::ServerStats stats = runner.stats();
  EXPECT_EQ(stats.live_rooms, 1u);
  EXPECT_EQ(stats.rooms_closed, 0u);

  // The same name: a Welcome into a fresh room (not "room closing"; the stats below show it is
  // another room).
  Player again = join(runner.port(), "alpha", "p2");
  EXPECT_EQ(again.welcome.player_id, 1u);
  ASSERT_TRUE(again.pump_until(again.snapshot.tick + 5));
  stats = runner.stats();
  ASSERT_EQ(stats.live_rooms, 2u);  // the new one, and the old one set aside until its report
  ASSERT_EQ(stats.rooms.size(), 2u);
  EXPECT_EQ(stats.rooms[0].name, "alpha");
  EXPECT_EQ(stats.rooms[1].name, "alpha");

  // The old room's report reaches the control thread: it is closed and summarised, the new one
  // stays open.
  std::function<void()> report;
  {
    std::lock_guard<std::mutex> lock(mutex);
    report = std::move(held_report);
  }
  report();
  ASSERT_TRUE(runner.stats_eventually(
      [](const server::ServerStats& s) { return s.rooms_closed == 1; }, &stats));
  EXPECT_EQ(stats.live_rooms, 1u);
  ASSERT_EQ(stats.rooms.size(), 2u);
  EXPECT_TRUE(stats.rooms[0].open);
  EXPECT_EQ(stats.rooms[0].clients, 1u);
  EXPECT_FALSE(stats.rooms[1].open);
  EXPECT_EQ(stats.rooms[1].clients, 0u);
  ASSERT_EQ(stats.rooms[1].client_list.size(), 1u);
  EXPECT_EQ(stats.rooms[1].client_list[0].name, "p1");
  EXPECT_EQ(stats.closed_rooms_total.clients_joined, 1u);
  const std::string json = server::summary_json(stats);
  const size_t first = json.find("\"name\":\"alpha\"");
  ASSERT_NE(first, std::string::npos) << json;
  EXPECT_NE(json.find("\"name\":\"alpha\"", first + 1), std::string::npos) << json;
}

// The summary keeps the newest summary_closed_rooms closed rooms; the count and the totals keep
// every one.
TEST(NetServer, TheSummaryKeepsTheConfiguredNumberOfClosedRooms) {
  server::ServerConfig config = test_config();
  config.empty_room_grace = 50ms;
  config.summary_closed_rooms = 1;
  ServerRunner runner(config);
  server::ServerStats stats;
  for (const char* room : {"first", "second"}) {
    {
      Player p = join(runner.port(), room, "p");
      ASSERT_TRUE(p.pump_until(p.snapshot.tick + 2));
      p.client->send(schema::Disconnect{ErrorCode::none, "bye"});
    }
    const uint64_t closed_before = stats.rooms_closed;
    ASSERT_TRUE(runner.stats_eventually(
        [&](const server::ServerStats& s) { return s.rooms_closed == closed_before + 1; }, &stats));
  }
  EXPECT_EQ(stats.live_rooms, 0u);
  ASSERT_EQ(stats.rooms.size(), 1u);
  EXPECT_EQ(stats.rooms[0].name, "second");
  EXPECT_EQ(stats.closed_rooms_total.clients_joined, 2u);
  const std::string json = server::summary_json(stats);
  EXPECT_NE(json.find("\"rooms_closed\":2"), std::string::npos) << json;
}

// ---- configuration -------------------------------------------------------------------------

TEST(NetServerConfig, FlagsAndConfigFileFillTheConfig) {
  const std::string path =
      ::testing::TempDir() + "lockstep_server_test_" + std::to_string(::getpid()) + ".toml";
  {
    std::ofstream file(path);
    file
        << "tick-rate = 30\nmax-players = 8\nlate-inputs = \"drop\"\nscene = \"pile\"\n"
           "read-timeout-ms = 1234\nresync-backoff-ms = 250\nmax-resync-requests-per-minute = 30\n";
  }
  server::ServerConfig config;
  CLI::App app;
  server::add_server_options(app, &config);
  std::vector<std::string> args = {"--queue-limit-bytes",
                                   "4000000",
                                   "--config",
                                   path,
                                   "--scene",
                                   "bounce",
                                   "--port",
                                   "9000",
                                   "--resync-burst",
                                   "3",
                                   "--resync-max-backoff-ms",
                                   "8000"};
  std::reverse(args.begin(), args.end());  // CLI11 takes them last-first
  ASSERT_NO_THROW(app.parse(args));
  EXPECT_EQ(config.tick_rate_hz, 30u);
  EXPECT_EQ(config.max_players_per_room, 8u);
  EXPECT_EQ(config.late_input_policy, server::LateInputPolicy::drop);
  EXPECT_EQ(config.read_timeout, 1234ms);
  EXPECT_EQ(config.scene, "bounce");  // a flag beats the file
  EXPECT_EQ(config.port, 9000);
  EXPECT_EQ(config.queue_limit_bytes, 4000000u);
  EXPECT_EQ(config.input_delay_ticks, 2u);  // untouched default
  EXPECT_EQ(config.resync_burst, 3u);
  EXPECT_EQ(config.resync_backoff, 250ms);
  EXPECT_EQ(config.resync_max_backoff, 8000ms);
  EXPECT_EQ(config.max_resync_requests_per_minute, 30u);
  EXPECT_TRUE(server::server_config_error(config).empty());
  std::remove(path.c_str());

  CLI::App bad;
  server::ServerConfig ignored;
  server::add_server_options(bad, &ignored);
  std::vector<std::string> bad_args = {"sometimes", "--late-inputs"};
  EXPECT_THROW(bad.parse(bad_args), CLI::ParseError);
}

TEST(NetServerConfig, StartRefusesBadConfigurations) {
  struct Case {
    const char* name;
    std::function<void(server::ServerConfig&)> change;
    const char* expected_text;
  };
  const std::vector<Case> cases = {
      {"unknown scene", [](server::ServerConfig& c) { c.scene = "nope"; }, "unknown scene"},
      {"queue below a snapshot", [](server::ServerConfig& c) { c.queue_limit_bytes = 4096; },
       "queue limit"},
      {"delay beyond window",
       [](server::ServerConfig& c) {
         c.input_window_ticks = 4;
         c.input_delay_ticks = 4;
       },
       "input delay"},
      {"tick rate", [](server::ServerConfig& c) { c.tick_rate_hz = 0; }, "tick rate"},
      {"input window memory",
       [](server::ServerConfig& c) {
         c.input_window_ticks = 4096;
         c.max_players_per_room = 1024;
         c.max_inputs_per_player_per_tick = 1024;
       },
       "buffered inputs per room"},
      {"bind address", [](server::ServerConfig& c) { c.bind_address = "not-an-ip"; },
       "bind address"},
      {"resync backoff over its cap",
       [](server::ServerConfig& c) {
         c.resync_backoff = std::chrono::milliseconds(5000);
         c.resync_max_backoff = std::chrono::milliseconds(100);
       },
       "resync backoff"},
      {"no resync backoff", [](server::ServerConfig& c) { c.resync_backoff = {}; },
       "resync backoff"},
  };
  for (const Case& c : cases) {
    server::ServerConfig config = test_config();
    c.change(config);
    server::Server s(config);
    std::string error;
    EXPECT_FALSE(s.start(&error)) << c.name;
    EXPECT_NE(error.find(c.expected_text), std::string::npos) << c.name << ": " << error;
  }
}

}  // namespace

// ---- hostile clients (docs/security.md) ---------------------------------------------------

namespace {

// A key written to a temporary file, as an operator would give it with --token-key-file.
struct KeyFile {
  auth::Key key = auth::generate_key();
  std::string path =
      std::string(::testing::TempDir()) + "/lockstep_token_" + std::to_string(::getpid()) + ".key";
  KeyFile() { std::ofstream(path) << auth::key_to_hex(key) << "\n"; }
  ~KeyFile() { std::remove(path.c_str()); }
};

std::string mint(const auth::Key& key, const std::string& room, uint32_t player = 0,
                 int64_t ttl_s = 60) {
  auth::JoinClaims claims;
  claims.room = room;
  if (player != 0) claims.player = player;
  claims.expires_unix_s = static_cast<uint64_t>(static_cast<int64_t>(auth::unix_now_s()) + ttl_s);
  std::string error;
  const std::string token = auth::mint_token(key, claims, &error);
  EXPECT_FALSE(token.empty()) << error;
  return token;
}

schema::Hello hello_with_token(const std::string& room, const std::string& name,
                               const std::string& token) {
  schema::Hello h = hello(room, name);
  h.auth_token = token;
  return h;
}

// One fatal Error of `code` whose reason holds `needle`, then the server closes the connection.
void expect_refused(RawClient& client, ErrorCode code, const std::string& needle) {
  std::vector<Message> messages;
  ASSERT_TRUE(client.read_until_closed(kReplyTimeout, &messages)) << "not closed";
  size_t errors = 0;
  for (const Message& m : messages) {
    if (const auto* e = std::get_if<schema::ErrorMessage>(&m)) {
      ++errors;
      EXPECT_EQ(e->code, code) << e->reason;
      EXPECT_TRUE(e->fatal);
      EXPECT_NE(e->reason.find(needle), std::string::npos) << e->reason;
    }
  }
  EXPECT_EQ(errors, 1u);
}

size_t refusals(const server::ServerStats& s, auth::TokenError e) {
  return s.admission.token_refusals[static_cast<size_t>(e)];
}

}  // namespace

TEST(NetHostile, EveryTokenFailureIsRefusedCountedAndCreatesNoRoom) {
  KeyFile key;
  server::ServerConfig config = test_config();
  config.token_key_file = key.path;
  ServerRunner runner(config);
  const auth::Key other = auth::generate_key();
  struct Case {
    const char* name;
    std::string token;
    auth::TokenError expected;
  };
  const std::vector<Case> cases = {
      {"missing", "", auth::TokenError::missing},
      {"garbage", "not-a-token!", auth::TokenError::malformed},
      {"bad signature", mint(other, "alpha"), auth::TokenError::bad_signature},
      {"expired", mint(key.key, "alpha", 0, -5), auth::TokenError::expired},
      {"wrong room", mint(key.key, "beta"), auth::TokenError::wrong_room},
      {"too long-lived", mint(key.key, "alpha", 0, 7200), auth::TokenError::too_long_lived},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    RawClient client(runner.port());
    client.send(hello_with_token("alpha", "mallory", c.token));
    expect_refused(client, ErrorCode::auth_failed, auth::token_error_name(c.expected));
  }
  server::ServerStats stats = runner.stats();
  EXPECT_TRUE(stats.rooms.empty());  // no Hello above made a room
  for (const Case& c : cases)
    EXPECT_EQ(refusals(stats, c.expected), 1u) << c.name;

  // A good token joins once; the same token again is a replay.
  const std::string token = mint(key.key, "alpha");
  RawClient first(runner.port());
  first.send(hello_with_token("alpha", "alice", token));
  ASSERT_TRUE(first.receive_of<schema::Welcome>(kReplyTimeout));
  RawClient replay(runner.port());
  replay.send(hello_with_token("alpha", "mallory", token));
  expect_refused(replay, ErrorCode::auth_failed, "replayed");
  stats = runner.stats();
  EXPECT_EQ(refusals(stats, auth::TokenError::replayed), 1u);
  EXPECT_EQ(refusals(stats, auth::TokenError::none), 1u);
  EXPECT_EQ(stats.errors_by_code[static_cast<size_t>(ErrorCode::auth_failed)], cases.size() + 1);
  // The summary an operator reads names every refusal by its reason.
  const std::string summary = server::summary_json(stats);
  EXPECT_NE(summary.find("\"token_refusals\":{\"missing\":1,"), std::string::npos) << summary;
  EXPECT_NE(summary.find("\"replayed\":1"), std::string::npos) << summary;
  EXPECT_NE(summary.find("\"tokens_accepted\":1,"), std::string::npos) << summary;
}

TEST(NetHostile, HonestClientWithATokenPlaysAsItsPlayer) {
  KeyFile key;
  server::ServerConfig config = test_config();
  config.token_key_file = key.path;
  ServerRunner runner(config);
  RawClient client(runner.port());
  client.send(hello_with_token("alpha", "alice", mint(key.key, "alpha", 3)));
  const std::optional<schema::Welcome> welcome = client.receive_of<schema::Welcome>(kReplyTimeout);
  ASSERT_TRUE(welcome);
  EXPECT_EQ(welcome->player_id, 3u);  // the id the token names, not the lowest free one
  const std::optional<schema::Snapshot> snapshot =
      client.receive_of<schema::Snapshot>(kReplyTimeout);
  ASSERT_TRUE(snapshot);
  sim::Scene scene = make_scene();
  std::unique_ptr<sim::World> world = sim::build_world(scene);
  ASSERT_EQ(world->restore_snapshot(snapshot->state), sim::Error::none);
  // Ten TickFrames, each verified against this client's own step.
  for (int i = 0; i < 10; ++i) {
    const std::optional<schema::TickFrame> frame =
        client.receive_of<schema::TickFrame>(kReplyTimeout);
    ASSERT_TRUE(frame);
    for (const sim::Input& in : frame->inputs)
      ASSERT_EQ(world->queue_input(in), sim::Error::none);
    world->step();
    ASSERT_EQ(world->tick(), frame->tick);
    EXPECT_EQ(world->state_hash(), frame->state_hash);
  }
}

TEST(NetHostile, FramesPerSecondOverTheBudgetCloseTheConnection) {
  server::ServerConfig config = test_config();
  config.max_frames_per_s = 50;
  ServerRunner runner(config);
  RawClient client(runner.port());
  client.send(hello("alpha", "p1"));
  ASSERT_TRUE(client.receive_of<schema::Welcome>(kReplyTimeout));
  std::vector<uint8_t> pings;
  for (int i = 0; i < 200; ++i) {
    const std::vector<uint8_t> f = schema::encode_frame(schema::Ping{static_cast<uint64_t>(i)});
    pings.insert(pings.end(), f.begin(), f.end());
  }
  client.send_bytes(pings);
  expect_refused(client, ErrorCode::bad_request, "frames per second");
  EXPECT_EQ(runner.stats().admission.over_frame_rate, 1u);
}

TEST(NetHostile, BytesPerSecondOverTheBudgetCloseTheConnection) {
  server::ServerConfig config = test_config();
  config.max_bytes_per_s = 4096;
  ServerRunner runner(config);
  RawClient client(runner.port());
  client.send(hello("alpha", "p1"));
  ASSERT_TRUE(client.receive_of<schema::Welcome>(kReplyTimeout));
  std::vector<uint8_t> pings;  // 400 small frames (under the frame budget), > 4 KiB
  for (int i = 0; i < 400; ++i) {
    const std::vector<uint8_t> f = schema::encode_frame(schema::Ping{static_cast<uint64_t>(i)});
    pings.insert(pings.end(), f.begin(), f.end());
  }
  ASSERT_GT(pings.size(), 8192u);
  client.send_bytes(pings);
  expect_refused(client, ErrorCode::bad_request, "bytes per second");
  EXPECT_EQ(runner.stats().admission.over_byte_rate, 1u);
}

// Resync snapshots one client may be sent in `elapsed` under `config`'s budget (ResyncBudget)
// when it asks all the time: the burst, then one per wait (backoff doubled up to its cap).
uint64_t resyncs_allowed(const server::ServerConfig& config, Clock::duration elapsed) {
  uint64_t allowed = config.resync_burst;
  Clock::duration at{};
  std::chrono::milliseconds wait = config.resync_backoff;
  for (;;) {
    at += wait;
    if (at > elapsed) return allowed;
    ++allowed;
    wait = std::min(wait * 2, config.resync_max_backoff);
  }
}

TEST(NetHostile, AResyncStormGetsSnapshotsOnlyAsTheBackoffAllowsAndOthersKeepTicking) {
  server::ServerConfig config = test_config();
  config.max_resync_requests_per_minute = 0;  // this test is about the backoff alone
  config.resync_backoff = 100ms;              // short, so the test sees several steps
  config.resync_max_backoff = 400ms;
  config.flush_timeout = 200ms;  // the watchdog, which serves deferred resyncs, wakes every 50 ms
  ServerRunner runner(config);
  Player other = join(runner.port(), "alpha", "honest");
  Player storm = join(runner.port(), "alpha", "storm");
  const uint64_t join_bytes = storm.client->bytes_in();
  const uint64_t join_snapshot_bytes = storm.client->snapshot_bytes_in();
  // ResyncRequests as fast as the frame limit lets them through (80 % of it, so the frame budget
  // never closes us), reading everything that comes back, until the backoff has had its say.
  const Clock::time_point start = Clock::now();
  uint64_t sent = 0, resync_snapshots = 0;
  while (resync_snapshots < 7 && Clock::now() - start < kReplyTimeout) {
    const double elapsed_ms =
        std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    while (static_cast<double>(sent) < 1.0 + 0.8 * elapsed_ms * config.max_frames_per_s / 1000.0) {
      storm.client->send(schema::ResyncRequest{"storm"});
      ++sent;
    }
    std::optional<Message> message = storm.client->receive(2ms);  // (1 ms rounds down to none)
    if (!message) continue;
    if (std::holds_alternative<schema::Snapshot>(*message)) ++resync_snapshots;
    ASSERT_FALSE(std::holds_alternative<schema::ErrorMessage>(*message))
        << std::get<schema::ErrorMessage>(*message).reason;
  }
  const Clock::duration elapsed = Clock::now() - start;
  ASSERT_EQ(resync_snapshots, 7u) << "the storm was not answered at all";
  ASSERT_FALSE(storm.client->closed());
  // The documented cap: the burst, then one snapshot per wait, whatever the request rate.
  const uint64_t allowed = resyncs_allowed(config, elapsed);
  EXPECT_LE(resync_snapshots, allowed);
  const uint64_t snapshot_bytes = storm.client->snapshot_bytes_in() - join_snapshot_bytes;
  const uint64_t largest_snapshot = storm.client->largest_snapshot();
  EXPECT_LE(snapshot_bytes, allowed * largest_snapshot);
  const double seconds = std::chrono::duration<double>(elapsed).count();
  const double bytes_out_per_s =
      static_cast<double>(storm.client->bytes_in() - join_bytes) / seconds;
  // Without the budget every request was answered at the next tick: a snapshot per tick.
  const double unlimited_per_s = static_cast<double>(largest_snapshot) * config.tick_rate_hz;
  std::printf(
      "resync storm: %llu requests in %.2f s, %llu resync snapshots (cap %llu), server "
      "bytes out %.0f B/s (a snapshot per tick would be %.0f B/s)\n",
      static_cast<unsigned long long>(sent), seconds,
      static_cast<unsigned long long>(resync_snapshots), static_cast<unsigned long long>(allowed),
      bytes_out_per_s, unlimited_per_s);
  EXPECT_LT(bytes_out_per_s, unlimited_per_s / 4);
  // The honest player's room kept ticking all along: every tick from its join to a second past
  // the storm's join, verified, none missing.
  ASSERT_TRUE(other.pump_until(storm.snapshot.tick + 60));
  EXPECT_FALSE(other.gap);
  EXPECT_EQ(other.mismatches, 0u);
}

TEST(NetHostile, ResyncRequestsOverTheBudgetCloseTheConnectionWithTheReason) {
  server::ServerConfig config = test_config();  // 12 requests a minute, burst 2
  ServerRunner runner(config);
  Player other = join(runner.port(), "alpha", "honest");
  Player storm = join(runner.port(), "alpha", "storm");
  std::vector<uint8_t> requests;  // as many as the frame budget takes in one go
  for (uint32_t i = 0; i + 1 < config.max_frames_per_s; ++i) {
    const std::vector<uint8_t> f = schema::encode_frame(schema::ResyncRequest{"storm"});
    requests.insert(requests.end(), f.begin(), f.end());
  }
  storm.client->send_bytes(requests);
  std::vector<Message> messages;
  ASSERT_TRUE(storm.client->read_until_closed(kReplyTimeout, &messages));
  size_t errors = 0, snapshots = 0;
  for (const Message& m : messages) {
    if (const auto* e = std::get_if<schema::ErrorMessage>(&m)) {
      ++errors;
      EXPECT_EQ(e->code, ErrorCode::bad_request);
      EXPECT_TRUE(e->fatal);
      EXPECT_NE(e->reason.find("over 12 resync requests per minute"), std::string::npos)
          << e->reason;
    }
    if (std::holds_alternative<schema::Snapshot>(m)) ++snapshots;
  }
  EXPECT_EQ(errors, 1u);
  EXPECT_LE(snapshots, config.resync_burst);  // a thousand requests, the burst at most
  EXPECT_EQ(runner.stats().admission.over_resync_budget, 1u);
  ASSERT_TRUE(other.pump_until(other.last_tick + 30));
  EXPECT_FALSE(other.gap);
  EXPECT_EQ(other.mismatches, 0u);
}

TEST(NetHostile, ConnectionsPerAddressAreCapped) {
  server::ServerConfig config = test_config();
  config.max_connections_per_ip = 2;
  ServerRunner runner(config);
  RawClient a(runner.port()), b(runner.port());
  a.send(hello("alpha", "a"));
  b.send(hello("alpha", "b"));
  ASSERT_TRUE(a.receive_of<schema::Welcome>(kReplyTimeout));
  ASSERT_TRUE(b.receive_of<schema::Welcome>(kReplyTimeout));
  RawClient c(runner.port());  // accepted by the kernel, closed by the server at once
  std::vector<Message> messages;
  EXPECT_TRUE(c.read_until_closed(kReplyTimeout, &messages));
  EXPECT_TRUE(messages.empty());
  server::ServerStats stats;
  EXPECT_TRUE(runner.stats_eventually(
      [](const server::ServerStats& s) { return s.admission.refused_per_ip_connections == 1; },
      &stats));
  // A slot frees when one leaves.
  a.close();
  ASSERT_TRUE(runner.stats_eventually(
      [](const server::ServerStats& s) { return s.sessions_open == 1; }, &stats));
  RawClient d(runner.port());
  d.send(hello("alpha", "d"));
  EXPECT_TRUE(d.receive_of<schema::Welcome>(kReplyTimeout));
}

TEST(NetHostile, RoomsCreatedPerAddressPerMinuteAreCapped) {
  server::ServerConfig config = test_config();
  config.max_rooms_per_ip_per_minute = 2;
  ServerRunner runner(config);
  RawClient r1(runner.port()), r2(runner.port()), r3(runner.port()), again(runner.port());
  r1.send(hello("one", "a"));
  ASSERT_TRUE(r1.receive_of<schema::Welcome>(kReplyTimeout));
  r2.send(hello("two", "a"));
  ASSERT_TRUE(r2.receive_of<schema::Welcome>(kReplyTimeout));
  r3.send(hello("three", "a"));
  expect_refused(r3, ErrorCode::too_many_rooms, "rooms in the last minute");
  again.send(hello("one", "b"));  // joining a room that exists is not creating one
  EXPECT_TRUE(again.receive_of<schema::Welcome>(kReplyTimeout));
  const server::ServerStats stats = runner.stats();
  EXPECT_EQ(stats.admission.refused_room_rate, 1u);
  EXPECT_EQ(stats.rooms.size(), 2u);
}

TEST(NetHostile, AConnectionWithoutHelloIsClosedAtTheHelloDeadline) {
  server::ServerConfig config = test_config();
  config.hello_timeout = 300ms;  // the read timeout stays at 120 s
  ServerRunner runner(config);
  RawClient silent(runner.port());
  expect_refused(silent, ErrorCode::timeout, "no Hello within 300 ms");
  EXPECT_EQ(runner.stats().admission.hello_timeouts, 1u);
}
