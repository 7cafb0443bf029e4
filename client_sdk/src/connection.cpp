// The client's transport: connect, framed reads through the verifier, a bounded send queue,
// pings feeding time sync, and a watchdog. See connection.h for the coroutine map.
#include "connection.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace lockstep::client_sdk::detail {
namespace {

using Clock = std::chrono::steady_clock;
using asio::use_awaitable;

// One read takes what the kernel has, up to this; FrameDecoder copies bodies out of it.
constexpr size_t kReadChunkBytes = 64 * 1024;
// Frames gathered into one write (Pings and InputFrames are small; one syscall for many).
constexpr size_t kMaxFramesPerWrite = 64;

uint64_t steady_ns(Clock::time_point t) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
}

}  // namespace

Connection::Connection(const ConnectionConfig& config)
    : config_(config),
      work_(asio::make_work_guard(io_)),
      resolver_(io_),
      socket_(io_),
      write_signal_(io_),
      ping_timer_(io_),
      watchdog_timer_(io_),
      decoder_(config.max_frame_bytes) {}

Connection::~Connection() {
  io_.stop();
  if (thread_.joinable()) thread_.join();
  // Close the socket before the io_context destroys the suspended coroutines waiting on it.
  asio::error_code ignored;
  socket_.close(ignored);
}

void Connection::start(std::string host, uint16_t port, const schema::Hello& hello) {
  deadline_ = Clock::now() + config_.connect_timeout;
  asio::co_spawn(io_, run(std::move(host), port, schema::encode_shared_frame(hello)),
                 asio::detached);
  asio::co_spawn(io_, watchdog(), asio::detached);
}

void Connection::run_thread() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] { io_.run(); });
}

void Connection::poll_io(std::chrono::nanoseconds wait) {
  if (io_.stopped()) io_.restart();
  io_.poll();
  const Clock::time_point until = Clock::now() + wait;
  auto have_inbound = [this] {
    std::lock_guard lock(inbound_mutex_);
    return !inbound_.empty();
  };
  while (!have_inbound() && Clock::now() < until) {
    if (io_.run_one_until(until) == 0) break;  // timed out, or no work left
  }
  io_.poll();
}

void Connection::wait_inbound(std::chrono::nanoseconds wait) {
  std::unique_lock lock(inbound_mutex_);
  inbound_ready_.wait_for(lock, wait, [this] { return !inbound_.empty(); });
}

bool Connection::pop(Inbound* out) {
  std::lock_guard lock(inbound_mutex_);
  if (inbound_.empty()) return false;
  *out = std::move(inbound_.front());
  inbound_.pop_front();
  return true;
}

void Connection::send(schema::SharedFrame frame) {
  asio::post(io_, [this, frame = std::move(frame)]() mutable { enqueue(std::move(frame)); });
}

void Connection::close(schema::ErrorCode code, std::string reason) {
  asio::post(io_,
             [this, code, reason = std::move(reason)]() mutable { end(code, std::move(reason)); });
}

std::optional<uint64_t> Connection::target_tick(SteadyTime now, uint32_t input_delay_ticks,
                                                bool* capped) const {
  std::lock_guard lock(time_mutex_);
  if (capped != nullptr) *capped = false;
  if (!time_sync_) return std::nullopt;
  std::optional<uint64_t> target = time_sync_->target_tick(now, input_delay_ticks);
  if (!target || !have_room_tick_ || input_window_ticks_ == 0) return target;
  // Where the room will be when the input arrives, seen from the TickFrames instead of the
  // clock: the newest tick we have + the round trip (the frame's way here and the input's way
  // there) + the delay + one tick of slack for a tick under way. On schedule this is above the
  // clock's stamp (by a one-way trip and a tick); it binds only when the room runs behind the
  // schedule our clock follows (an overloaded server, or its last move of the schedule not
  // heard of yet), and keeps the input's lead bounded there. Never past the input window, which
  // the room is sure to accept.
  const uint64_t period_ns = 1'000'000'000u / time_sync_->config().tick_rate_hz;
  const uint64_t rtt_ticks =
      static_cast<uint64_t>(std::max<int64_t>(0, time_sync_->smoothed_rtt().count())) / period_ns +
      1;
  const uint64_t lead = std::min<uint64_t>(input_window_ticks_, input_delay_ticks + rtt_ticks + 1);
  if (*target > newest_room_tick_ + lead) {
    if (capped != nullptr) *capped = true;
    target = newest_room_tick_ + lead;
  }
  // A clock estimate that lags the room (its samples queued behind a busy machine) must not
  // stamp a tick the room has already stepped: the next one is the earliest still on time.
  return std::max(*target, newest_room_tick_ + 1);
}

std::optional<uint64_t> Connection::estimated_server_tick(SteadyTime now) const {
  std::lock_guard lock(time_mutex_);
  if (!time_sync_) return std::nullopt;
  return time_sync_->estimated_server_tick(now);
}

RttFigures Connection::rtt() const {
  std::lock_guard lock(time_mutex_);
  if (!time_sync_) return {};
  return {time_sync_->last_rtt(), time_sync_->min_rtt(), time_sync_->smoothed_rtt()};
}

std::chrono::nanoseconds Connection::rtt_quantile(double q) const {
  std::vector<int64_t> samples;
  {
    std::lock_guard lock(time_mutex_);
    const size_t n = std::min(rtt_count_, kRttRing);
    samples.assign(rtt_ring_ns_.begin(), rtt_ring_ns_.begin() + static_cast<ptrdiff_t>(n));
  }
  if (samples.empty()) return std::chrono::nanoseconds(0);
  q = std::clamp(q, 0.0, 1.0);
  // Nearest rank: the smallest sample with at least q of the samples at or below it.
  size_t rank = static_cast<size_t>(q * static_cast<double>(samples.size()) + 0.999999);
  rank = std::clamp<size_t>(rank, 1, samples.size());
  std::nth_element(samples.begin(), samples.begin() + static_cast<ptrdiff_t>(rank - 1),
                   samples.end());
  return std::chrono::nanoseconds(samples[rank - 1]);
}

// ---- coroutines ---------------------------------------------------------------------------

asio::awaitable<void> Connection::run(std::string host, uint16_t port, schema::SharedFrame hello) {
  asio::error_code ec;
  const asio::ip::tcp::resolver::results_type endpoints = co_await resolver_.async_resolve(
      host, std::to_string(port), asio::redirect_error(use_awaitable, ec));
  if (closed_) co_return;
  if (ec) {
    end(schema::ErrorCode::none, "cannot resolve " + host + ": " + ec.message());
    co_return;
  }
  co_await asio::async_connect(socket_, endpoints, asio::redirect_error(use_awaitable, ec));
  if (closed_) co_return;
  if (ec) {
    end(schema::ErrorCode::none,
        "cannot connect to " + host + ":" + std::to_string(port) + ": " + ec.message());
    co_return;
  }
  // Inputs and pings are small and latency-bound: send them now, not after Nagle's delay.
  socket_.set_option(asio::ip::tcp::no_delay(true), ec);
  connected_ = true;
  deadline_ = Clock::now() + config_.read_timeout;
  hello_sent_ = Clock::now();
  enqueue(std::move(hello));
  asio::co_spawn(io_, writer(), asio::detached);
  asio::co_spawn(io_, reader(), asio::detached);
}

asio::awaitable<void> Connection::reader() {
  std::vector<uint8_t> chunk(kReadChunkBytes);
  while (!closed_) {
    asio::error_code ec;
    const size_t n = co_await socket_.async_read_some(asio::buffer(chunk),
                                                      asio::redirect_error(use_awaitable, ec));
    if (closed_) co_return;
    if (ec) {
      if (ec == asio::error::eof) {
        end(schema::ErrorCode::none, "the server closed the connection");
      } else {
        end(schema::ErrorCode::none, "read failed: " + ec.message());
      }
      co_return;
    }
    counters_.bytes_in.fetch_add(n, std::memory_order_relaxed);
    deadline_ = Clock::now() + config_.read_timeout;
    const schema::FrameError error = decoder_.feed_all(std::span<const uint8_t>(chunk.data(), n),
                                                       [this](std::span<const uint8_t> body) {
                                                         if (!closed_) handle_body(body);
                                                       });
    if (error != schema::FrameError::none) {
      end(schema::ErrorCode::bad_frame, "bad frame from the server: " + decoder_.error_text());
      co_return;
    }
  }
}

asio::awaitable<void> Connection::writer() {
  std::vector<asio::const_buffer> buffers;
  buffers.reserve(kMaxFramesPerWrite);
  while (!closed_) {
    if (send_queue_.empty()) {
      asio::error_code ec;
      write_signal_.expires_at(Clock::time_point::max());
      co_await write_signal_.async_wait(asio::redirect_error(use_awaitable, ec));
      continue;  // woken by enqueue() (cancel) or by end()
    }
    // The frames stay in the queue (alive) until their write completes.
    buffers.clear();
    size_t bytes = 0;
    const size_t frames = std::min(send_queue_.size(), kMaxFramesPerWrite);
    for (size_t i = 0; i < frames; ++i) {
      buffers.emplace_back(asio::buffer(*send_queue_[i]));
      bytes += send_queue_[i]->size();
    }
    asio::error_code ec;
    co_await asio::async_write(socket_, buffers, asio::redirect_error(use_awaitable, ec));
    if (closed_) co_return;
    if (ec) {
      end(schema::ErrorCode::none, "write failed: " + ec.message());
      co_return;
    }
    for (size_t i = 0; i < frames; ++i)
      send_queue_.pop_front();
    send_queue_bytes_ -= bytes;
    counters_.bytes_out.fetch_add(bytes, std::memory_order_relaxed);
    counters_.frames_out.fetch_add(frames, std::memory_order_relaxed);
  }
}

asio::awaitable<void> Connection::pinger() {
  while (!closed_) {
    schema::Ping ping;
    ping.client_time_ns = steady_ns(Clock::now());
    enqueue(schema::encode_shared_frame(ping));
    asio::error_code ec;
    ping_timer_.expires_after(config_.ping_interval);
    co_await ping_timer_.async_wait(asio::redirect_error(use_awaitable, ec));
  }
}

asio::awaitable<void> Connection::watchdog() {
  // The deadline only moves forward while we sleep, so wake at it and look again.
  while (!closed_) {
    if (Clock::now() >= deadline_) {
      if (connected_) {
        end(schema::ErrorCode::timeout,
            "nothing from the server for " + std::to_string(config_.read_timeout.count()) + " ms");
      } else {
        end(schema::ErrorCode::timeout,
            "connect timed out after " + std::to_string(config_.connect_timeout.count()) + " ms");
      }
      co_return;
    }
    asio::error_code ec;
    watchdog_timer_.expires_at(deadline_);
    co_await watchdog_timer_.async_wait(asio::redirect_error(use_awaitable, ec));
  }
}

// ---- io-side helpers ------------------------------------------------------------------------

void Connection::handle_body(std::span<const uint8_t> body) {
  const Clock::time_point received = Clock::now();
  counters_.frames_in.fetch_add(1, std::memory_order_relaxed);
  schema::Message message;
  const schema::DecodeResult result = schema::decode_body(body, &message);
  if (!result.ok()) {
    end(schema::ErrorCode::bad_frame, std::string("bad frame from the server: ") +
                                          schema::decode_error_name(result.error) + ": " +
                                          result.detail);
    return;
  }
  if (const auto* pong = std::get_if<schema::Pong>(&message)) {
    // Timestamps are taken here, on the io side, so that poll latency stays out of the rtt.
    std::lock_guard lock(time_mutex_);
    if (time_sync_ && pong->schedule_moved_ns > schedule_moved_ns_) {
      // The room moved its schedule later (TimeSync takes it into account).
      schedule_moved_ns_ = pong->schedule_moved_ns;
      counters_.schedule_moves.fetch_add(1, std::memory_order_relaxed);
    }
    if (time_sync_) {
      TimeSample sample;
      sample.client_send = SteadyTime(std::chrono::nanoseconds(pong->client_time_ns));
      sample.server_tick = pong->server_tick;
      sample.server_since_due = std::chrono::nanoseconds(pong->ns_into_tick);
      sample.server_schedule_moved = std::chrono::nanoseconds(pong->schedule_moved_ns);
      sample.client_receive = received;
      if (time_sync_->add_sample(sample) == SampleVerdict::accepted) {
        rtt_ring_ns_[rtt_count_ % kRttRing] = time_sync_->last_rtt().count();
        ++rtt_count_;
      }
    }
    counters_.pongs.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (const auto* welcome = std::get_if<schema::Welcome>(&message); welcome && !welcomed_) {
    welcomed_ = true;
    {
      // Hello → Welcome is a round trip too: the estimate exists from the first moment on.
      std::lock_guard lock(time_mutex_);
      time_sync_.emplace(TimeSyncConfig{welcome->tick_rate_hz, std::chrono::seconds(10)});
      input_window_ticks_ = welcome->input_window_ticks;
      TimeSample sample;
      sample.client_send = hello_sent_;
      sample.server_tick = welcome->current_tick;
      sample.server_since_due = std::chrono::nanoseconds(welcome->ns_into_tick);
      sample.server_schedule_moved = std::chrono::nanoseconds(welcome->schedule_moved_ns);
      schedule_moved_ns_ = welcome->schedule_moved_ns;
      sample.client_receive = received;
      time_sync_->add_sample(sample);
    }
    asio::co_spawn(io_, pinger(), asio::detached);
  }
  const uint64_t* room_tick = nullptr;
  if (const auto* frame = std::get_if<schema::TickFrame>(&message)) room_tick = &frame->tick;
  if (const auto* snapshot = std::get_if<schema::Snapshot>(&message)) room_tick = &snapshot->tick;
  if (room_tick != nullptr) {
    std::lock_guard lock(time_mutex_);
    if (!have_room_tick_ || *room_tick > newest_room_tick_) newest_room_tick_ = *room_tick;
    have_room_tick_ = true;
  }
  const bool is_disconnect = std::holds_alternative<schema::Disconnect>(message);
  schema::Disconnect disconnect;
  if (is_disconnect) disconnect = std::get<schema::Disconnect>(message);
  push_inbound(std::move(message), true);
  // The server said goodbye: the session reports its reason; the end below is for the record.
  if (is_disconnect) end(disconnect.code, disconnect.reason);
}

void Connection::enqueue(schema::SharedFrame frame) {
  if (closed_) return;
  if (send_queue_bytes_ + frame->size() > config_.max_send_queue_bytes) {
    end(schema::ErrorCode::slow_consumer, "send queue over " +
                                              std::to_string(config_.max_send_queue_bytes) +
                                              " bytes: the server is not reading");
    return;
  }
  send_queue_bytes_ += frame->size();
  send_queue_.push_back(std::move(frame));
  write_signal_.cancel();
}

void Connection::push_inbound(Inbound item, bool bounded) {
  {
    std::lock_guard lock(inbound_mutex_);
    if (!bounded || inbound_.size() < config_.max_pending_messages) {
      inbound_.push_back(std::move(item));
      bounded = false;
    }
  }
  if (bounded) {
    // Still set: the queue was full. The game has stopped polling; stop buffering for it.
    end(schema::ErrorCode::slow_consumer, "over " + std::to_string(config_.max_pending_messages) +
                                              " received messages not taken by poll()");
    return;
  }
  inbound_ready_.notify_all();
}

void Connection::end(schema::ErrorCode code, std::string reason) {
  if (closed_) return;
  closed_ = true;
  asio::error_code ignored;
  resolver_.cancel();
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
  write_signal_.cancel();
  ping_timer_.cancel();
  watchdog_timer_.cancel();
  work_.reset();  // let run() return once the coroutines have unwound
  push_inbound(ConnectionEnd{code, std::move(reason)}, false);
}

}  // namespace lockstep::client_sdk::detail
