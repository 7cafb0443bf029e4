// Session: framing, decoding, the bounded write queue, deadlines and the close handshake.
#include "session.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <asio/bind_cancellation_slot.hpp>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/experimental/as_tuple.hpp>
#include <asio/post.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/write.hpp>

#include "lockstep/schema/limits.h"
#include "lockstep/sim/version.h"
#include "room.h"
#include "server_core.h"

namespace lockstep::server {
namespace {

ResyncBudgetConfig resync_budget_config(const ServerConfig& c) {
  ResyncBudgetConfig r;
  r.burst = c.resync_burst;
  r.backoff = c.resync_backoff;
  r.max_backoff = c.resync_max_backoff;
  r.max_requests_per_minute = c.max_resync_requests_per_minute;
  return r;
}

constexpr auto use_nothrow = asio::experimental::as_tuple(asio::use_awaitable);

// Frames gathered into one write: enough to send a burst of ticks in one syscall.
constexpr size_t kMaxWriteBatch = 32;

// Client-chosen text goes into logs and JSON: keep printable ASCII, cap the length.
std::string sanitize_name(const std::string& text) {
  std::string out;
  out.reserve(std::min(text.size(), schema::kMaxNameBytes));
  for (char c : text) {
    if (out.size() >= schema::kMaxNameBytes) break;
    out.push_back(c >= 0x20 && c < 0x7f ? c : '?');
  }
  return out;
}

size_t code_index(schema::ErrorCode code) {
  return std::min<size_t>(static_cast<size_t>(code), kErrorCodeCount - 1);
}

}  // namespace

Session::Session(ServerCore& core, asio::ip::tcp::socket socket, uint64_t id, std::string remote)
    : core_(core),
      socket_(std::move(socket)),
      executor_(socket_.get_executor()),
      write_wakeup_(socket_.get_executor()),
      watchdog_timer_(socket_.get_executor()),
      id_(id),
      remote_(std::move(remote)),
      decoder_(schema::kMaxClientFrameBytes),
      resync_budget_(resync_budget_config(core.config), Clock::now()) {
  opened_ = last_read_ = budget_refilled_ = Clock::now();
  frame_budget_ = static_cast<double>(core.config.max_frames_per_s);
  byte_budget_ = static_cast<double>(core.config.max_bytes_per_s);
}

bool Session::spend_bytes(uint64_t n) {
  const ServerConfig& c = core_.config;
  const Clock::time_point now = Clock::now();
  const double elapsed_s = std::chrono::duration<double>(now - budget_refilled_).count();
  budget_refilled_ = now;
  frame_budget_ = std::min(static_cast<double>(c.max_frames_per_s),
                           frame_budget_ + elapsed_s * static_cast<double>(c.max_frames_per_s));
  byte_budget_ = std::min(static_cast<double>(c.max_bytes_per_s),
                          byte_budget_ + elapsed_s * static_cast<double>(c.max_bytes_per_s));
  if (c.max_bytes_per_s == 0) return true;
  byte_budget_ -= static_cast<double>(n);
  if (byte_budget_ >= 0) return true;
  core_.guard.count_byte_rate();
  protocol_error(schema::ErrorCode::bad_request,
                 fmt::format("over {} bytes per second", c.max_bytes_per_s));
  return false;
}

bool Session::spend_frame() {
  const ServerConfig& c = core_.config;
  if (c.max_frames_per_s == 0) return true;
  frame_budget_ -= 1.0;
  if (frame_budget_ >= 0) return true;
  core_.guard.count_frame_rate();
  protocol_error(schema::ErrorCode::bad_request,
                 fmt::format("over {} frames per second", c.max_frames_per_s));
  return false;
}

Session::~Session() {
  spdlog::trace("session {} destroyed", id_);
}

void Session::start() {
  spdlog::debug("session {} connected from {}", id_, remote_);
  const asio::any_io_executor& executor = executor_;
  asio::co_spawn(
      executor, [self = shared_from_this()] { return self->reader(); }, asio::detached);
  asio::co_spawn(
      executor, [self = shared_from_this()] { return self->writer(); }, asio::detached);
  asio::co_spawn(
      executor, [self = shared_from_this()] { return self->watchdog(); }, asio::detached);
}

// ---- reading -------------------------------------------------------------------------------

asio::awaitable<void> Session::reader() {
  if (!unread_.empty()) {
    // Bytes the control thread read after the Hello (hand_over): they come first.
    const std::vector<uint8_t> unread = std::move(unread_);
    unread_.clear();
    if (state_ == State::closed) co_return;
    consume(unread);
  }
  for (;;) {
    auto [ec, n] = co_await socket_.async_read_some(asio::buffer(read_buffer_), use_nothrow);
    if (state_ == State::closed) co_return;
    if (ec) {
      if (ec == asio::error::eof && state_ != State::closing) {
        // The peer finished sending: fine between frames, a truncated frame otherwise.
        if (decoder_.finish() != schema::FrameError::none) {
          peer_eof_ = true;
          protocol_error(schema::ErrorCode::bad_frame, decoder_.error_text());
        } else {
          close_now("peer closed the connection");
        }
      } else if (ec == asio::error::eof && !fin_sent_) {
        peer_eof_ = true;  // closing: the writer closes once our last frame is out
      } else {
        close_now(ec == asio::error::eof ? end_reason_ : "read failed: " + ec.message());
      }
      co_return;
    }
    bytes_in_ += n;
    last_read_ = Clock::now();
    if ((state_ == State::handshake || state_ == State::joined) && !spend_bytes(n)) continue;
    // While closing, bytes are read and dropped until the peer's FIN (a close with unread
    // data would send a reset, which may destroy our last frame before the peer reads it).
    if (!consume(std::span<const uint8_t>(read_buffer_.data(), n))) co_return;
  }
}

bool Session::consume(std::span<const uint8_t> bytes) {
  while (!bytes.empty() && (state_ == State::handshake || state_ == State::joined)) {
    bytes = bytes.subspan(decoder_.feed(bytes));
    if (decoder_.has_frame() && spend_frame()) handle_body(decoder_.frame());
    if (pending_join_) {
      hand_over(bytes);
      return false;
    }
    if (decoder_.error() != schema::FrameError::none) {
      protocol_error(schema::ErrorCode::bad_frame, decoder_.error_text());
    }
  }
  return true;
}

void Session::handle_body(std::span<const uint8_t> body) {
  ++frames_in_;
  schema::Message message;
  const schema::DecodeResult result = schema::decode_body(body, &message);
  if (!result.ok()) {
    const schema::ErrorCode code = result.error == schema::DecodeError::unknown_message
                                       ? schema::ErrorCode::unknown_message
                                       : schema::ErrorCode::bad_frame;
    protocol_error(code,
                   fmt::format("{}: {}", schema::decode_error_name(result.error), result.detail));
    return;
  }
  if (state_ == State::handshake) {
    if (const auto* hello = std::get_if<schema::Hello>(&message)) {
      on_hello(*hello);
    } else {
      protocol_error(schema::ErrorCode::not_joined,
                     fmt::format("{} before Hello", schema::message_name(message)));
    }
    return;
  }
  if (state_ != State::joined || room_ == nullptr) return;
  if (const auto* input = std::get_if<schema::InputFrame>(&message)) {
    room_->on_input(*this, *input);
  } else if (const auto* ping = std::get_if<schema::Ping>(&message)) {
    send(schema::encode_shared_frame(room_->make_pong(ping->client_time_ns)));
  } else if (std::holds_alternative<schema::Pong>(message)) {
    // A heartbeat answer: receiving it already moved the read deadline.
  } else if (const auto* report = std::get_if<schema::DesyncReport>(&message)) {
    room_->on_desync_report(*this, *report);
  } else if (std::holds_alternative<schema::ResyncRequest>(message)) {
    on_resync_request();
  } else if (const auto* game = std::get_if<schema::GameMessage>(&message)) {
    room_->on_game_message(*this, *game);
  } else if (const auto* bye = std::get_if<schema::Disconnect>(&message)) {
    begin_close(nullptr, false, "left: " + sanitize_name(bye->reason));
  } else if (std::holds_alternative<schema::Hello>(message)) {
    protocol_error(schema::ErrorCode::bad_request, "a second Hello");
  } else {
    protocol_error(schema::ErrorCode::unknown_message,
                   fmt::format("{} is not a client message", schema::message_name(message)));
  }
}

void Session::on_resync_request() {
  const ResyncBudget::Decision decision = resync_budget_.request(Clock::now());
  switch (decision.verdict) {
    case ResyncVerdict::serve:
      room_->on_resync_request(*this);
      break;
    case ResyncVerdict::defer:  // the watchdog serves it when due
    case ResyncVerdict::fold:
      break;
    case ResyncVerdict::over_budget:
      core_.guard.count_resync_budget();
      protocol_error(
          schema::ErrorCode::bad_request,
          fmt::format("over {} resync requests per minute ({} asked, {} snapshots sent): a client "
                      "whose hashes keep diverging cannot be healed by snapshots",
                      core_.config.max_resync_requests_per_minute, resync_budget_.requests(),
                      resync_budget_.sent()));
      break;
  }
}

bool Session::send_resync_snapshot(const schema::SharedFrame& frame) {
  if (state_ != State::joined || !spend_bytes(frame->size())) return false;
  return send(frame);
}

void Session::on_hello(const schema::Hello& hello) {
  // Versions: the overlap of [client min, client max] and ours; the highest common one wins.
  const uint16_t low = std::max(hello.min_protocol_version, schema::kMinProtocolVersion);
  const uint16_t high = std::min(hello.protocol_version, schema::kProtocolVersion);
  if (hello.min_protocol_version > hello.protocol_version || low > high) {
    protocol_error(
        schema::ErrorCode::version_mismatch,
        fmt::format("server speaks {}..{}, client {}..{}", schema::kMinProtocolVersion,
                    schema::kProtocolVersion, hello.min_protocol_version, hello.protocol_version));
    return;
  }
  // The simulation: a lockstep client of another physics revision would step the room's world
  // differently and diverge at its first contact. A thin client only shows the server's
  // snapshots. 0 is a client older than the field, taken on trust.
  if (hello.mode == schema::ClientMode::lockstep && hello.physics_revision != 0 &&
      hello.physics_revision != sim::kPhysicsRevision) {
    protocol_error(schema::ErrorCode::version_mismatch,
                   fmt::format("server simulates physics revision {}, client {}: a lockstep "
                               "client must be built from the server's lockstep version",
                               sim::kPhysicsRevision, hello.physics_revision));
    return;
  }
  player_name_ = sanitize_name(hello.player_name);
  mode_ = hello.mode;
  const std::string room_name =
      hello.room.empty() ? core_.config.default_room : sanitize_name(hello.room);
  // Checked before any room is looked up or made: an unauthenticated Hello creates nothing.
  uint32_t token_player = 0;
  const auth::TokenError token =
      core_.guard.check_token(hello.auth_token, room_name, &token_player);
  if (token != auth::TokenError::none) {
    protocol_error(schema::ErrorCode::auth_failed,
                   fmt::format("join token refused: {}", auth::token_error_name(token)));
    return;
  }
  const std::string address = address_of(remote_);
  const Clock::time_point now = Clock::now();
  const bool creates = core_.rooms.count(room_name) == 0;
  if (creates && !core_.guard.may_create_room(address, now)) {
    protocol_error(schema::ErrorCode::too_many_rooms,
                   fmt::format("this address created {} rooms in the last minute",
                               core_.config.max_rooms_per_ip_per_minute));
    return;
  }
  schema::ErrorCode code = schema::ErrorCode::none;
  std::string reason;
  std::shared_ptr<Room> room = core_.find_or_create_room(room_name, hello.scene, &code, &reason);
  if (room == nullptr) {
    protocol_error(code, reason);
    return;
  }
  if (creates) core_.guard.room_created(address, now);
  if (room->io().get_executor() != executor_) {
    // The room lives on another worker: the reader hands the connection over (consume).
    pending_join_ = PendingJoin{JoinReservation(std::move(room)), hello, high, token_player};
    return;
  }
  code = room->join(shared_from_this(), hello, high, &reason, token_player);
  room->release_join();
  if (code != schema::ErrorCode::none) protocol_error(code, reason);
}

void Session::hand_over(std::span<const uint8_t> unread) {
  auto self = shared_from_this();  // the server's map holds the only other reference
  PendingJoin join = std::move(*pending_join_);
  pending_join_.reset();
  std::error_code ec;
  const asio::ip::tcp::endpoint local = socket_.local_endpoint(ec);
  asio::ip::tcp::socket moved(join.room->io());
  if (!ec) {
    // Nothing is pending on the socket here (the reader is running; nothing was written before
    // the Welcome), so the release cancels nothing.
    const asio::ip::tcp::socket::native_handle_type fd = socket_.release(ec);
    if (!ec) moved.assign(local.protocol(), fd, ec);
  }
  if (ec) {
    spdlog::warn("session {} ({}): cannot move to its room's thread: {}", id_, remote_,
                 ec.message());
    close_now("handover failed: " + ec.message());
    return;
  }
  auto next = std::make_shared<Session>(core_, std::move(moved), id_, remote_);
  // What this connection has been so far carries over (summaries, budgets, the read deadline).
  next->opened_ = opened_;
  next->last_read_ = last_read_;
  next->frame_budget_ = frame_budget_;
  next->byte_budget_ = byte_budget_;
  next->budget_refilled_ = budget_refilled_;
  next->resync_budget_ = resync_budget_;
  next->bytes_in_ = bytes_in_;
  next->frames_in_ = frames_in_;
  next->player_name_ = player_name_;
  next->mode_ = mode_;
  next->unread_.assign(unread.begin(), unread.end());
  core_.sessions[id_] = next;
  // This object is done: its writer and watchdog end at their next wake; no close, no count.
  state_ = State::closed;
  write_wakeup_.cancel();
  watchdog_timer_.cancel();
  asio::post(next->executor_,
             [next, join = std::move(join)]() mutable { next->start_joined(std::move(join)); });
}

Session::JoinReservation& Session::JoinReservation::operator=(JoinReservation&& other) noexcept {
  if (this != &other) {
    if (room_ != nullptr) room_->release_join();
    room_ = std::move(other.room_);
  }
  return *this;
}

Session::JoinReservation::~JoinReservation() {
  if (room_ != nullptr) room_->release_join();
}

void Session::start_joined(PendingJoin join) {
  // Joined before the coroutines start: co_spawn may run the reader at once on this thread, and
  // the unread bytes it takes first (Inputs, Pings) need a member.
  std::string reason;
  const schema::ErrorCode code = join.room->join(shared_from_this(), join.hello,
                                                 join.protocol_version, &reason, join.token_player);
  if (code != schema::ErrorCode::none) protocol_error(code, reason);
  start();
}

// ---- writing -------------------------------------------------------------------------------

bool Session::send(const schema::SharedFrame& frame) {
  if (state_ != State::handshake && state_ != State::joined) return false;
  const uint64_t size = frame->size();
  if (queued_bytes_ + size + kControlReserveBytes > core_.queue_limit_bytes) {
    slow_consumer(size);
    return false;
  }
  queue_.push_back(frame);
  queued_bytes_ += size;
  note_queued_bytes();
  wake_writer();
  return true;
}

void Session::note_queued_bytes() {
  max_queued_bytes_ = std::max(max_queued_bytes_, queued_bytes_);
  core_.note_queued_bytes(queued_bytes_);
}

void Session::wake_writer() {
  write_wakeup_.cancel();  // the writer re-checks the queue whenever its wait ends
}

asio::awaitable<void> Session::writer() {
  std::vector<asio::const_buffer> buffers;
  buffers.reserve(kMaxWriteBatch);
  for (;;) {
    if (state_ == State::closed) co_return;
    if (queue_.empty()) {
      if (state_ == State::closing) {
        // Everything is out: send our FIN; the socket closes at the peer's FIN (or deadline).
        std::error_code ignored;
        socket_.shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
        fin_sent_ = true;
        if (peer_eof_) close_now(end_reason_);
        co_return;
      }
      write_wakeup_.expires_at(Clock::time_point::max());
      co_await write_wakeup_.async_wait(use_nothrow);
      continue;
    }
    // One write_some per batch: it returns once the socket took any bytes, so a client that
    // reads slowly never has a whole batch promised to it (see begin_close).
    const size_t batch = std::min(queue_.size(), kMaxWriteBatch);
    buffers.clear();
    buffers.push_back(asio::buffer(*queue_[0]) + head_written_);
    for (size_t i = 1; i < batch; ++i)
      buffers.push_back(asio::buffer(*queue_[i]));
    write_started_ = Clock::now();
    write_pending_ = true;
    auto [ec, written] = co_await socket_.async_write_some(
        buffers, asio::bind_cancellation_slot(write_cancel_.slot(), use_nothrow));
    write_pending_ = false;
    write_started_ = Clock::time_point{};
    if (state_ == State::closed) co_return;
    account_written(written);
    if (drop_unstarted_) {
      drop_unstarted_ = false;
      drop_unstarted_frames();
      note_queued_bytes();
    }
    if (ec == asio::error::operation_aborted && state_ == State::closing) continue;
    if (ec) {
      close_now("write failed: " + ec.message());
      co_return;
    }
  }
}

void Session::account_written(size_t n) {
  bytes_out_ += n;
  while (n > 0 && !queue_.empty()) {
    const size_t left = queue_.front()->size() - head_written_;
    if (n < left) {
      head_written_ += n;
      return;
    }
    n -= left;
    queued_bytes_ -= queue_.front()->size();
    queue_.pop_front();
    head_written_ = 0;
    ++frames_out_;
  }
}

void Session::drop_unstarted_frames() {
  const size_t first = head_written_ > 0 ? 1 : 0;
  const size_t end = queue_.size() - (closing_frame_queued_ && !queue_.empty() ? 1 : 0);
  if (first >= end) return;
  for (size_t i = first; i < end; ++i)
    queued_bytes_ -= queue_[i]->size();
  queue_.erase(queue_.begin() + static_cast<std::ptrdiff_t>(first),
               queue_.begin() + static_cast<std::ptrdiff_t>(end));
}

void Session::slow_consumer(uint64_t frame_bytes) {
  bump(core_.slow_consumer_disconnects);
  bump(core_.errors_by_code[code_index(schema::ErrorCode::slow_consumer)]);
  if (room_ != nullptr) room_->count_slow_consumer();
  const std::string detail =
      fmt::format("outgoing queue of {} B plus a {} B frame would pass the limit of {} B",
                  queued_bytes_, frame_bytes, core_.queue_limit_bytes);
  spdlog::warn("session {} ({}, player {} '{}'): slow consumer: {}", id_, remote_, player_id_,
               player_name_, detail);
  begin_close(
      schema::encode_shared_frame(schema::Disconnect{schema::ErrorCode::slow_consumer, detail}),
      false, "slow consumer");
}

// ---- errors and closing --------------------------------------------------------------------

schema::SharedFrame Session::count_error(schema::ErrorCode code, const std::string& detail,
                                         bool fatal) {
  const size_t index = code_index(code);
  bump(core_.errors_by_code[index]);
  bump(fatal ? core_.protocol_errors : core_.input_errors);
  if (room_ != nullptr) room_->count_error(fatal);
  ++errors_sent_;
  const uint32_t bit = 1u << index;
  if ((logged_kinds_ & bit) == 0) {
    logged_kinds_ |= bit;
    spdlog::warn("session {} ({}, player {} '{}'): {} {}: {} (logged once per connection)", id_,
                 remote_, player_id_, player_name_, fatal ? "closing on" : "rejected,",
                 schema::error_code_name(code), detail);
  }
  schema::ErrorMessage error;
  error.code = code;
  error.reason = detail;
  error.fatal = fatal;
  return schema::encode_shared_frame(error);
}

void Session::input_error(schema::ErrorCode code, const std::string& detail) {
  if (state_ != State::joined) return;
  send(count_error(code, detail, false));
}

void Session::protocol_error(schema::ErrorCode code, const std::string& detail) {
  if (state_ == State::closing || state_ == State::closed) return;
  const schema::SharedFrame frame = count_error(code, detail, true);
  begin_close(frame, false, fmt::format("{}: {}", schema::error_code_name(code), detail));
}

void Session::begin_close(const schema::SharedFrame& last_frame, bool keep_queue,
                          std::string reason) {
  if (state_ == State::closing || state_ == State::closed) return;
  auto self = shared_from_this();
  state_ = State::closing;
  end_reason_ = std::move(reason);
  close_deadline_ = Clock::now() + core_.config.flush_timeout;
  if (room_ != nullptr) room_->leave(*this, end_reason_);
  if (!keep_queue) {
    // The last frame goes right after the one partly written: the rest are dropped. A write that
    // waits for the socket may still hold them, so it is ended first (partial cancellation: the
    // socket stays usable for the rest of that frame) and the writer drops them.
    if (write_pending_) {
      drop_unstarted_ = true;
      write_cancel_.emit(asio::cancellation_type::partial);
    } else {
      drop_unstarted_frames();
    }
  }
  // The reserve kept free by send() guarantees the last frame fits under the limit; a queue
  // still to be dropped keeps at most one frame beside it.
  const bool fits =
      last_frame != nullptr &&
      (drop_unstarted_ || queued_bytes_ + last_frame->size() <= core_.queue_limit_bytes);
  if (fits) {
    queue_.push_back(last_frame);
    queued_bytes_ += last_frame->size();
    closing_frame_queued_ = true;
    if (!drop_unstarted_) note_queued_bytes();
  }
  spdlog::debug("session {} closing: {}", id_, end_reason_);
  wake_writer();
}

void Session::close_now(const std::string& reason) {
  if (state_ == State::closed) return;
  auto self = shared_from_this();  // the server's map may hold the last reference
  if (end_reason_.empty()) end_reason_ = reason;
  if (room_ != nullptr) room_->leave(*this, end_reason_);
  state_ = State::closed;
  closed_at_ = Clock::now();
  std::error_code ignored;
  socket_.close(ignored);
  write_wakeup_.cancel();
  watchdog_timer_.cancel();
  spdlog::debug("session {} ({}) closed: {} (in {} B, out {} B)", id_, remote_, reason, bytes_in_,
                bytes_out_);
  core_.session_closed(id_);
}

asio::awaitable<void> Session::watchdog() {
  using std::chrono::milliseconds;
  const milliseconds period =
      std::clamp(std::min(core_.config.read_timeout, core_.config.flush_timeout) / 4,
                 milliseconds(5), milliseconds(250));
  for (;;) {
    watchdog_timer_.expires_after(period);
    co_await watchdog_timer_.async_wait(use_nothrow);
    if (state_ == State::closed) co_return;
    const Clock::time_point now = Clock::now();
    if (state_ == State::closing) {
      if (now >= close_deadline_) close_now(end_reason_);
      continue;
    }
    if (state_ == State::joined && room_ != nullptr && resync_budget_.take_due(now)) {
      room_->on_resync_request(*this);  // a request the backoff held back
    }
    if (state_ == State::handshake && now - opened_ > core_.config.hello_timeout) {
      core_.guard.count_hello_timeout();
      protocol_error(schema::ErrorCode::timeout,
                     fmt::format("no Hello within {} ms", core_.config.hello_timeout.count()));
    } else if (now - last_read_ > core_.config.read_timeout) {
      bump(core_.timeouts);
      protocol_error(schema::ErrorCode::timeout,
                     fmt::format("nothing received for {} ms (send Pings)",
                                 core_.config.read_timeout.count()));
    } else if (write_started_ != Clock::time_point{} &&
               now - write_started_ > core_.config.read_timeout) {
      // The peer has not taken a byte for a whole read timeout: as good as a full queue.
      slow_consumer(0);
    }
  }
}

// ---- membership ----------------------------------------------------------------------------

void Session::set_room(std::shared_ptr<Room> room, uint32_t player_id) {
  room_ = std::move(room);
  player_id_ = player_id;
  state_ = State::joined;
}

void Session::clear_room() {
  room_.reset();
}

ClientSummary Session::summary() const {
  ClientSummary s;
  s.player_id = player_id_;
  s.name = player_name_;
  s.mode = mode_;
  s.connected = state_ != State::closed;
  const Clock::time_point end = state_ == State::closed ? closed_at_ : Clock::now();
  s.connected_s = std::chrono::duration<double>(end - opened_).count();
  s.bytes_in = bytes_in_;
  s.bytes_out = bytes_out_;
  s.frames_in = frames_in_;
  s.frames_out = frames_out_;
  s.max_queued_bytes = max_queued_bytes_;
  s.errors = errors_sent_;
  s.end_reason = end_reason_;
  return s;
}

}  // namespace lockstep::server
