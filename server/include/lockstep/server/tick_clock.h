// A room's fixed-rate tick schedule with absolute deadlines, and how late each tick started.
//
// Tick n is due at start + floor(n·1e9/rate) ns (schema/tick_schedule.h): every due time is
// computed from n, never by adding periods, so the schedule cannot drift. The clock is pure
// logic, time is passed in, so the room's timer loop is
//
//   for (;;) {
//     co_await timer.async_wait_until(clock.next_deadline());
//     for (uint32_t n = clock.advance(steady_clock::now()); n > 0; --n) step_and_broadcast();
//   }
//
// Catch-up: when a wake finds more ticks due than max_catch_up_ticks, the extra ticks are not
// skipped — a lockstep tick sequence has no holes — but postponed: next_deadline() is then
// already past, so the next wake comes at once and starts the next batch. The cap only bounds
// how long one wake holds the room's thread; a room that fell behind runs flat out, a batch per
// wake, until it is back on schedule, and the lateness it measured says so.
//
// Slipping: a room that cannot keep up (a machine with more work than cores) would fall further
// behind for ever, and the clients, whose clocks follow the schedule, would stamp their inputs
// ever further past the room's real tick. So when more than max_backlog_ticks are due at a wake,
// the schedule itself moves: start is pushed later so that the next tick is due now. The room
// then runs as fast as the machine lets it, never more than max_backlog_ticks behind its own
// schedule; every slip is counted (epoch() numbers them) and its time added up, and a Pong carries
// that total so that clients' clocks follow the move.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace lockstep::server {

/// Counts of durations in fixed log-spaced buckets: 8 linear sub-buckets per power of two
/// from 1.024 µs up to 2^36 ns (68.7 s), so a bucket is at most 12.5% of its lower bound wide;
/// below 1.024 µs is one bucket, at or above 2^36 ns another. Fixed size (≈1.7 KB), no
/// allocation; histograms of several rooms merge by adding counts.
class LatenessHistogram final {
 public:
  static constexpr int kSubBucketBits = 3;
  static constexpr int kMinOctave = 10;  // values < 2^10 ns share bucket 0
  static constexpr int kMaxOctave = 35;  // values ≥ 2^36 ns share the last bucket
  static constexpr size_t kBucketCount =
      1 + static_cast<size_t>(kMaxOctave - kMinOctave + 1) * (size_t{1} << kSubBucketBits) + 1;

  /// Counts one duration (negative durations count as 0).
  void record(std::chrono::nanoseconds duration);
  /// Adds another histogram's counts.
  void merge(const LatenessHistogram& other);
  void clear();

  uint64_t count() const { return count_; }
  std::chrono::nanoseconds max() const { return std::chrono::nanoseconds(max_ns_); }
  /// Mean of the recorded durations (exact; 0 when empty).
  std::chrono::nanoseconds mean() const;
  /// Sum of the recorded durations in ns (saturating).
  uint64_t sum_ns() const { return sum_ns_; }
  /// An upper bound of the q-quantile (0 < q ≤ 1): the last nanosecond of the bucket that holds
  /// it, capped at max(). Within one bucket width of the true value; 0 when empty.
  std::chrono::nanoseconds quantile(double q) const;

  uint64_t bucket_count(size_t index) const { return counts_[index]; }
  static size_t bucket_index(uint64_t duration_ns);
  /// First nanosecond value of a bucket.
  static uint64_t bucket_lower_ns(size_t index);
  /// One past the last nanosecond value of a bucket (UINT64_MAX for the last bucket).
  static uint64_t bucket_upper_ns(size_t index);

 private:
  std::array<uint64_t, kBucketCount> counts_{};
  uint64_t count_ = 0;
  uint64_t max_ns_ = 0;
  uint64_t sum_ns_ = 0;  // saturating
};

struct TickClockConfig {
  uint32_t tick_rate_hz = 60;       // 1..schema::kMaxTickRateHz
  uint32_t max_catch_up_ticks = 4;  // ticks started per wake at most, ≥ 1
  /// More ticks due than this at a wake slips the schedule (above); 0 = never slip.
  uint32_t max_backlog_ticks = 0;
  /// A tick that starts more than this after its due time counts as late. 2 ms is 12% of a
  /// 60 Hz tick and far above a healthy timer's wake-up jitter (tens of µs).
  std::chrono::nanoseconds late_threshold{2'000'000};
};

/// nullptr when `config` is valid, else what is wrong with it (static storage).
const char* tick_clock_config_error(const TickClockConfig& config);

struct TickClockCounters {
  uint64_t ticks_started = 0;
  uint64_t late_ticks = 0;    // started more than late_threshold after their due time
  uint64_t capped_wakes = 0;  // wakes that hit max_catch_up_ticks and left due ticks behind
  std::chrono::nanoseconds max_lateness{0};
  uint64_t slips = 0;                   // times the schedule was moved later
  std::chrono::nanoseconds slipped{0};  // by how much in all
};

/// Where the schedule stands at an instant: the last tick due and how long ago it was due.
/// Before tick 0 is due: tick 0 and a negative since_due. This is what a Pong reports.
struct SchedulePosition {
  uint64_t tick = 0;
  std::chrono::nanoseconds since_due{0};
};

class TickClock final {
 public:
  using Clock = std::chrono::steady_clock;
  static_assert(std::is_same_v<Clock::duration, std::chrono::nanoseconds>,
                "the schedule is in integer nanoseconds");

  /// Tick 0 is due at `start`. Invalid config values are clamped into range (check them first
  /// with tick_clock_config_error()).
  TickClock(const TickClockConfig& config, Clock::time_point start);

  /// Starts the ticks due at `now`, at most max_catch_up_ticks of them, recording how late
  /// each one is (now − its due time); returns how many to run (0 when woken early).
  uint32_t advance(Clock::time_point now);

  /// The first tick not started yet.
  uint64_t next_tick() const { return next_tick_; }
  /// When `tick` is due: start + floor(tick·1e9/rate) ns.
  Clock::time_point due_time(uint64_t tick) const;
  /// When to wake next: the due time of next_tick() (already past while catching up).
  Clock::time_point next_deadline() const { return due_time(next_tick_); }
  /// Ticks due by `now` that have not been started.
  uint64_t backlog_ticks(Clock::time_point now) const;
  /// The schedule's position at `now`, independent of which ticks have been started.
  SchedulePosition position(Clock::time_point now) const;

  const TickClockConfig& config() const { return config_; }
  /// When tick 0 is due; moved later by each slip.
  Clock::time_point start() const { return start_; }
  /// The schedule's number: 0 until the first slip, +1 each slip.
  uint64_t epoch() const { return counters_.slips; }
  const TickClockCounters& counters() const { return counters_; }
  const LatenessHistogram& lateness() const { return lateness_; }

 private:
  TickClockConfig config_;
  Clock::time_point start_;
  uint64_t next_tick_ = 0;
  TickClockCounters counters_;
  LatenessHistogram lateness_;
};

}  // namespace lockstep::server
