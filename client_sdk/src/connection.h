// The client's transport: one TCP connection to a server, run by Asio coroutines.
//
// Coroutines (all on one io_context, so none of them needs a lock against another):
//   run      resolve, connect, TCP_NODELAY, queue Hello, spawn the rest
//   reader   socket → FrameDecoder (cap checked before the body is buffered) → decode_body
//            (Verifier) → Pong to time sync, everything else to the inbound queue
//   writer   drains the bounded send queue, several frames per write
//   pinger   a Ping every ping_interval once welcomed
//   watchdog closes the connection when connecting, or silence, outlasts its deadline
// The io_context runs either on the connection's own thread (run_thread) or inside poll_io() on
// the caller's thread. The caller's side talks to it only through thread-safe doors: send(),
// close(), pop()/wait, the time-sync queries and the atomic counters.
#pragma once

#include <array>
#include <asio.hpp>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <variant>

#include "lockstep/client_sdk/time_sync.h"
#include "lockstep/schema/frame.h"
#include "lockstep/schema/messages.h"

namespace lockstep::client_sdk::detail {

struct ConnectionConfig {
  std::chrono::milliseconds ping_interval{250};
  std::chrono::milliseconds connect_timeout{5000};
  std::chrono::milliseconds read_timeout{10000};
  uint32_t max_frame_bytes = 0;
  size_t max_send_queue_bytes = 0;
  size_t max_pending_messages = 0;
};

/// The connection ended (always the last thing the inbound queue yields).
struct ConnectionEnd {
  schema::ErrorCode code = schema::ErrorCode::none;
  std::string reason;
};

using Inbound = std::variant<schema::Message, ConnectionEnd>;

struct TransportCounters {
  std::atomic<uint64_t> bytes_in{0};
  std::atomic<uint64_t> bytes_out{0};
  std::atomic<uint64_t> frames_in{0};
  std::atomic<uint64_t> frames_out{0};
  std::atomic<uint64_t> pongs{0};
  // Pongs that said the room had moved its schedule later again (it cannot keep up).
  std::atomic<uint64_t> schedule_moves{0};
};

/// Round-trip figures from time sync (a copy, taken under its lock).
struct RttFigures {
  std::chrono::nanoseconds last{0};
  std::chrono::nanoseconds min{0};
  std::chrono::nanoseconds smoothed{0};
};

class Connection final {
 public:
  explicit Connection(const ConnectionConfig& config);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  /// Queues the connect coroutine; nothing runs until run_thread() or poll_io().
  void start(std::string host, uint16_t port, const schema::Hello& hello);
  /// Runs the io_context on a thread of its own from now on.
  void run_thread();
  bool threaded() const { return thread_.joinable(); }

  /// Poll-driven: runs ready handlers, blocking up to `wait` until an inbound message is queued.
  void poll_io(std::chrono::nanoseconds wait);
  /// Threaded: blocks up to `wait` until an inbound message is queued.
  void wait_inbound(std::chrono::nanoseconds wait);
  /// Takes the oldest inbound item; false when there is none. Any thread.
  bool pop(Inbound* out);

  /// Queues an encoded frame for sending. Any thread.
  void send(schema::SharedFrame frame);
  /// Ends the connection with a reason (a ConnectionEnd is queued). Any thread.
  void close(schema::ErrorCode code, std::string reason);

  /// TimeSync::target_tick at `now`, but never further past the newest TickFrame's (or
  /// Snapshot's) tick than the delay + the round trip + a tick, nor past the room's input window
  /// (which the room is sure to accept), and never at or before that newest tick (the room has
  /// stepped it: an input for it would be late); nothing before the Welcome.
  /// *capped (optional) says whether that bound lowered it. Any thread.
  std::optional<uint64_t> target_tick(SteadyTime now, uint32_t input_delay_ticks,
                                      bool* capped = nullptr) const;
  std::optional<uint64_t> estimated_server_tick(SteadyTime now) const;
  RttFigures rtt() const;
  std::chrono::nanoseconds rtt_quantile(double q) const;
  const TransportCounters& counters() const { return counters_; }

 private:
  asio::awaitable<void> run(std::string host, uint16_t port, schema::SharedFrame hello);
  asio::awaitable<void> reader();
  asio::awaitable<void> writer();
  asio::awaitable<void> pinger();
  asio::awaitable<void> watchdog();
  void handle_body(std::span<const uint8_t> body);
  void enqueue(schema::SharedFrame frame);
  void push_inbound(Inbound item, bool bounded);
  void end(schema::ErrorCode code, std::string reason);

  ConnectionConfig config_;
  // io_context first: it must outlive every io object below (and destroys the coroutine frames).
  asio::io_context io_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_;
  asio::ip::tcp::resolver resolver_;
  asio::ip::tcp::socket socket_;
  asio::steady_timer write_signal_;  // cancelled to wake the writer
  asio::steady_timer ping_timer_;
  asio::steady_timer watchdog_timer_;
  std::thread thread_;

  // io-side state (touched only by handlers on io_).
  bool closed_ = false;
  bool connected_ = false;
  bool welcomed_ = false;
  std::chrono::steady_clock::time_point deadline_{};  // watchdog: connect, then read deadline
  std::chrono::steady_clock::time_point hello_sent_{};
  std::deque<schema::SharedFrame> send_queue_;
  size_t send_queue_bytes_ = 0;
  schema::FrameDecoder decoder_;

  // Shared with the caller's thread.
  mutable std::mutex inbound_mutex_;
  std::condition_variable inbound_ready_;
  std::deque<Inbound> inbound_;

  mutable std::mutex time_mutex_;
  std::optional<TimeSync> time_sync_;
  static constexpr size_t kRttRing = 1024;
  std::array<int64_t, kRttRing> rtt_ring_ns_{};
  size_t rtt_count_ = 0;             // samples ever recorded
  uint64_t schedule_moved_ns_ = 0;   // the newest Pong's (under time_mutex_)
  uint64_t newest_room_tick_ = 0;    // newest TickFrame or Snapshot tick (under time_mutex_)
  bool have_room_tick_ = false;      // (under time_mutex_)
  uint32_t input_window_ticks_ = 0;  // from the Welcome; 0 = not said (under time_mutex_)

  TransportCounters counters_;
};

}  // namespace lockstep::client_sdk::detail
