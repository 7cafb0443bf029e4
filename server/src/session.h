// One client connection: a reader, a writer and a watchdog coroutine on one thread (so no strand
// is needed), a FrameDecoder with the client frame cap, and an outgoing queue of shared frames
// bounded in bytes.
//
// States: handshake (only Hello is allowed) → joined (a room member) → closing (a last frame
// may be queued; incoming bytes are read and dropped so the close is a FIN, not a reset that
// could destroy the frames still in flight) → closed.
//
// Threads: a connection starts on the control thread (ServerCore::io), which checks its Hello
// and finds or makes its room. When that room lives on another worker, the session hands the
// connection over (hand_over): it releases the socket's descriptor, and a new Session on the
// room's io_context adopts it with the Hello, the bytes read past it and the counters, then
// joins there; the old object ends without closing anything. From then on the session is
// touched only on its room's thread; the control thread reaches it by dispatch (executor()).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <asio/any_io_executor.hpp>
#include <asio/awaitable.hpp>
#include <asio/cancellation_signal.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/steady_timer.hpp>

#include "lockstep/schema/frame.h"
#include "lockstep/schema/messages.h"
#include "lockstep/server/server.h"
#include "resync_budget.h"

namespace lockstep::server {

struct ServerCore;
class Room;

/// Bytes of every queue kept free for the last frame (Error or Disconnect, reason ≤ 1 KiB), so
/// that frame always fits and the queue still never exceeds its limit.
inline constexpr uint64_t kControlReserveBytes = 2048;

class Session final : public std::enable_shared_from_this<Session> {
 public:
  using Clock = std::chrono::steady_clock;
  enum class State : uint8_t { handshake, joined, closing, closed };

  Session(ServerCore& core, asio::ip::tcp::socket socket, uint64_t id, std::string remote);
  ~Session();

  /// Spawns the reader, writer and watchdog coroutines.
  void start();
  /// The executor it runs on (fixed at construction); any thread.
  const asio::any_io_executor& executor() const { return executor_; }

  /// Queues a frame; false when the session is closing or the frame would overflow the queue
  /// (the session is then closed with slow_consumer).
  bool send(const schema::SharedFrame& frame);
  /// Queues the snapshot that answers this client's ResyncRequest: its bytes are taken from the
  /// client's byte budget first (max_bytes_per_s), so asking costs what the answer weighs.
  bool send_resync_snapshot(const schema::SharedFrame& frame);
  /// Sends a non-fatal Error frame (input-level problems); counted, logged once per kind.
  void input_error(schema::ErrorCode code, const std::string& detail);
  /// Sends a fatal Error frame and closes once it is flushed; counted, logged once per kind.
  void protocol_error(schema::ErrorCode code, const std::string& detail);
  /// Leaves the room, optionally drops the queued frames, queues `last_frame` (may be null)
  /// and closes once the queue is flushed or flush_timeout passes.
  void begin_close(const schema::SharedFrame& last_frame, bool keep_queue, std::string reason);
  /// Closes the socket now; idempotent.
  void close_now(const std::string& reason);

  /// Called by Room::join / Room::leave.
  void set_room(std::shared_ptr<Room> room, uint32_t player_id);
  void clear_room();

  uint64_t id() const { return id_; }
  State state() const { return state_; }
  const std::string& remote() const { return remote_; }
  const std::string& player_name() const { return player_name_; }
  schema::ClientMode mode() const { return mode_; }
  uint32_t player_id() const { return player_id_; }
  uint64_t queued_bytes() const { return queued_bytes_; }
  ClientSummary summary() const;

 private:
  asio::awaitable<void> reader();
  asio::awaitable<void> writer();
  asio::awaitable<void> watchdog();

  /// A join reserved in a room (Room::reserve_join), released when this is destroyed: after the
  /// join was made, or when the connection went before it could be.
  class JoinReservation final {
   public:
    explicit JoinReservation(std::shared_ptr<Room> room) : room_(std::move(room)) {}
    JoinReservation(JoinReservation&& other) noexcept = default;
    JoinReservation& operator=(JoinReservation&& other) noexcept;
    ~JoinReservation();
    Room* operator->() const { return room_.get(); }

   private:
    std::shared_ptr<Room> room_;
  };

  /// A Hello accepted on the control thread for a room on another worker.
  struct PendingJoin {
    JoinReservation room;
    schema::Hello hello;
    uint16_t protocol_version = 0;
    uint32_t token_player = 0;
  };

  /// Feeds read bytes to the decoder and handles whole frames; false once the connection was
  /// handed over to another thread (this object is then done).
  bool consume(std::span<const uint8_t> bytes);
  void handle_body(std::span<const uint8_t> body);
  void on_hello(const schema::Hello& hello);
  /// A ResyncRequest: served, deferred or folded by the resync budget, or the connection closed.
  void on_resync_request();
  /// Moves the connection to pending_join_'s room thread with `unread` (bytes read after the
  /// Hello); on the control thread.
  void hand_over(std::span<const uint8_t> unread);
  /// On the room's thread: joins, then starts reading (the unread bytes first).
  void start_joined(PendingJoin join);
  /// Counts an Error of `code` and logs it once per kind; returns the frame to send.
  schema::SharedFrame count_error(schema::ErrorCode code, const std::string& detail, bool fatal);
  void slow_consumer(uint64_t frame_bytes);
  void wake_writer();
  /// Records the queue's size in the high-water marks.
  void note_queued_bytes();
  /// Takes `n` written bytes off the front of the queue.
  void account_written(size_t n);
  /// Drops the queued frames not begun: all but the one partly written and the closing frame.
  void drop_unstarted_frames();

  ServerCore& core_;
  asio::ip::tcp::socket socket_;
  const asio::any_io_executor executor_;
  asio::steady_timer write_wakeup_;  // the writer waits on it while the queue is empty
  asio::steady_timer watchdog_timer_;
  uint64_t id_ = 0;
  std::string remote_;
  State state_ = State::handshake;

  // Incoming.
  schema::FrameDecoder decoder_;
  std::optional<PendingJoin> pending_join_;
  std::vector<uint8_t> unread_;  // bytes read by the control thread after the Hello
  std::array<uint8_t, 8192> read_buffer_{};
  Clock::time_point last_read_;

  // Outgoing: frames in order; head_written_ bytes of the first are on the wire. A write takes
  // what the socket accepts (async_write_some), so the writer always knows which frame is partly
  // sent and a close can drop every frame after it (write_cancel_ ends a write that waits).
  std::deque<schema::SharedFrame> queue_;
  size_t head_written_ = 0;
  uint64_t queued_bytes_ = 0;          // all of queue_, the partly written frame included
  Clock::time_point write_started_{};  // of the write in progress; epoch when idle
  asio::cancellation_signal write_cancel_;
  bool write_pending_ = false;
  bool drop_unstarted_ = false;        // drop_unstarted_frames() once the pending write returns
  bool closing_frame_queued_ = false;  // the queue's last frame is the closing Error/Disconnect
  Clock::time_point close_deadline_{};
  bool peer_eof_ = false;  // the peer's FIN arrived
  bool fin_sent_ = false;  // ours went out (closing, queue flushed)

  // Membership.
  std::shared_ptr<Room> room_;
  uint32_t player_id_ = 0;
  std::string player_name_;
  schema::ClientMode mode_ = schema::ClientMode::lockstep;
  Clock::time_point opened_;
  Clock::time_point closed_at_{};
  std::string end_reason_;

  // Counters.
  uint64_t bytes_in_ = 0, bytes_out_ = 0, frames_in_ = 0, frames_out_ = 0;
  uint64_t max_queued_bytes_ = 0;
  uint64_t errors_sent_ = 0;
  uint32_t logged_kinds_ = 0;  // bit per ErrorCode already logged for this connection
  // Rate budgets (max_frames_per_s, max_bytes_per_s): refilled continuously, one second deep.
  double frame_budget_ = 0, byte_budget_ = 0;
  Clock::time_point budget_refilled_{};
  ResyncBudget resync_budget_;
  /// Takes n bytes (and a frame per completed body, by the caller) from the budgets; false
  /// (and the session closing) when one runs out.
  bool spend_bytes(uint64_t n);
  bool spend_frame();
};

}  // namespace lockstep::server
