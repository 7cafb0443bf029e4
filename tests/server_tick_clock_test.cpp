// The room tick clock: the shared integer tick schedule, no drift, bounded catch-up, and the
// lateness counters and histogram. Time is passed in, so nothing here sleeps.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>
#include <vector>

#include "lockstep/schema/tick_schedule.h"
#include "lockstep/server/tick_clock.h"

namespace {

using namespace std::chrono_literals;
using lockstep::schema::max_schedule_tick;
using lockstep::schema::tick_due_offset_ns;
using lockstep::schema::ticks_due_by;
using lockstep::server::LatenessHistogram;
using lockstep::server::TickClock;
using lockstep::server::TickClockConfig;
using Time = TickClock::Clock::time_point;
using std::chrono::nanoseconds;

// floor(n·1e9/rate) straight from the definition; exact in uint64 while n·1e9 < 1.8e19.
uint64_t naive_offset_ns(uint64_t n, uint64_t rate_hz) {
  return n * 1'000'000'000u / rate_hz;
}

TickClockConfig config_60hz(uint32_t max_catch_up = 4) {
  TickClockConfig config;
  config.tick_rate_hz = 60;
  config.max_catch_up_ticks = max_catch_up;
  config.late_threshold = 2ms;
  return config;
}

const Time kStart = Time(123s + 456789ns);  // an arbitrary, non-round start

TEST(TickSchedule, DueOffsetsMatchTheDefinition) {
  static_assert(tick_due_offset_ns(60, 60) == 1'000'000'000);  // tick 60 at exactly 1 s
  static_assert(tick_due_offset_ns(1, 60) == 16'666'666);
  static_assert(tick_due_offset_ns(0, 60) == 0);
  for (uint64_t n = 0; n <= 100'000; ++n) {
    ASSERT_EQ(static_cast<uint64_t>(tick_due_offset_ns(n, 60)), naive_offset_ns(n, 60)) << n;
  }
  std::mt19937_64 rng(42);
  for (uint32_t rate : {1u, 7u, 30u, 60u, 64u, 120u, 144u, 999u, 1000u}) {
    for (int i = 0; i < 2000; ++i) {
      // n·1e9 < 1e19 keeps the naive form exact; the schedule covers ticks up to rate·2^32.
      const uint64_t n = rng() % std::min<uint64_t>(10'000'000'000u, max_schedule_tick(rate) + 1);
      ASSERT_EQ(static_cast<uint64_t>(tick_due_offset_ns(n, rate)), naive_offset_ns(n, rate))
          << "rate " << rate << " tick " << n;
    }
  }
}

TEST(TickSchedule, TicksPastTheRangeAreClampedNotOverflowed) {
  // 2^32 s at 1000 Hz: the largest product is 4.29e18 ns, inside int64.
  constexpr uint64_t kLast = max_schedule_tick(1000);
  static_assert(tick_due_offset_ns(kLast, 1000) == (int64_t{1} << 32) * 1'000'000'000);
  EXPECT_EQ(tick_due_offset_ns(kLast + 1, 1000), tick_due_offset_ns(kLast, 1000));
  EXPECT_EQ(tick_due_offset_ns(UINT64_MAX, 1000), tick_due_offset_ns(kLast, 1000));
  EXPECT_EQ(ticks_due_by(INT64_MAX, 1000), kLast + 1);
}

TEST(TickSchedule, TicksDueByInvertsTheDueOffsets) {
  EXPECT_EQ(ticks_due_by(-1, 60), 0u);
  EXPECT_EQ(ticks_due_by(0, 60), 1u);  // tick 0 is due at its own due time
  std::mt19937_64 rng(7);
  for (uint32_t rate : {1u, 60u, 144u, 1000u}) {
    for (int i = 0; i < 5000; ++i) {
      const uint64_t n = 1 + rng() % std::min<uint64_t>(5'000'000'000u, max_schedule_tick(rate));
      const int64_t due = tick_due_offset_ns(n, rate);
      // At its due time tick n is due (n+1 ticks: 0..n); one nanosecond before, it is not.
      ASSERT_EQ(ticks_due_by(due, rate), n + 1) << "rate " << rate << " tick " << n;
      ASSERT_EQ(ticks_due_by(due - 1, rate), n) << "rate " << rate << " tick " << n;
    }
  }
}

TEST(TickClock, NoDriftOverAMillionTicksAt60Hz) {
  // Adding a rounded period (16,666,667 ns) would put tick 1,000,000 at 16,666.667000 s, 333 µs
  // late; due times computed from n stay within 1 ns of n/60 s forever.
  TickClock clock(config_60hz(), kStart);
  constexpr uint64_t kTicks = 1'000'000;
  for (uint64_t n = 0; n < kTicks; ++n) {
    const Time due = clock.due_time(n);
    ASSERT_EQ(static_cast<uint64_t>((due - kStart).count()), naive_offset_ns(n, 60)) << n;
    if (n % 60 == 0) {
      ASSERT_EQ(due - kStart, std::chrono::seconds(n / 60)) << n;
    }
    // A timer that wakes exactly on time starts exactly one tick, zero late.
    ASSERT_EQ(clock.advance(due), 1u) << n;
  }
  EXPECT_EQ(clock.next_tick(), kTicks);
  EXPECT_EQ(clock.due_time(kTicks) - kStart, nanoseconds(16'666'666'666'666));
  EXPECT_EQ(clock.counters().ticks_started, kTicks);
  EXPECT_EQ(clock.counters().late_ticks, 0u);
  EXPECT_EQ(clock.counters().max_lateness, 0ns);
  EXPECT_EQ(clock.lateness().quantile(0.99), 0ns);
}

TEST(TickClock, EarlyWakesStartNothing) {
  TickClock clock(config_60hz(), kStart);
  EXPECT_EQ(clock.advance(kStart - 1ns), 0u);
  EXPECT_EQ(clock.advance(kStart), 1u);
  EXPECT_EQ(clock.advance(clock.due_time(1) - 1ns), 0u);
  EXPECT_EQ(clock.next_deadline(), clock.due_time(1));
  EXPECT_EQ(clock.counters().ticks_started, 1u);
}

TEST(TickClock, CatchUpIsCappedPerWakeAndTheRestIsPostponedNotSkipped) {
  TickClock clock(config_60hz(/*max_catch_up=*/4), kStart);
  const Time now = clock.due_time(10);  // ticks 0..10 due: 11 ticks
  EXPECT_EQ(clock.backlog_ticks(now), 11u);
  EXPECT_EQ(clock.advance(now), 4u);
  EXPECT_EQ(clock.next_tick(), 4u);
  EXPECT_EQ(clock.backlog_ticks(now), 7u);
  EXPECT_LE(clock.next_deadline(), now);  // the next wake comes at once
  EXPECT_EQ(clock.counters().capped_wakes, 1u);
  EXPECT_EQ(clock.advance(now), 4u);
  EXPECT_EQ(clock.advance(now), 3u);  // the last 3, and the cap was not what stopped it
  EXPECT_EQ(clock.advance(now), 0u);
  EXPECT_EQ(clock.counters().capped_wakes, 2u);
  EXPECT_EQ(clock.counters().ticks_started, 11u);
  EXPECT_EQ(clock.next_tick(), 11u);
  EXPECT_GT(clock.next_deadline(), now);
  // Tick 0 started 10 ticks late: 166,666,666 ns.
  EXPECT_EQ(clock.counters().max_lateness, nanoseconds(166'666'666));
  EXPECT_EQ(clock.counters().late_ticks, 10u);  // tick 10 itself was on time
}

TEST(TickClock, ABacklogOverTheBoundMovesTheScheduleLaterOnce) {
  TickClockConfig config = config_60hz(4);
  config.max_backlog_ticks = 10;
  TickClock clock(config, kStart);
  EXPECT_EQ(clock.advance(kStart), 1u);  // tick 0
  // 10 ticks due and not started: at the bound, not over it. No slip.
  const Time at_bound = clock.due_time(10);
  EXPECT_EQ(clock.backlog_ticks(at_bound), 10u);
  EXPECT_EQ(clock.advance(at_bound), 4u);
  EXPECT_EQ(clock.epoch(), 0u);
  EXPECT_EQ(clock.start(), kStart);
  // The machine stalls: 100 ticks are due. The schedule moves so that the next tick (5) is due
  // at this instant, and the slip is exactly how far tick 5 was behind.
  const Time stalled = clock.due_time(105) + 3ms;
  const nanoseconds behind = stalled - clock.due_time(5);
  EXPECT_EQ(clock.advance(stalled), 1u);  // tick 5, now on time; tick 6 is a period away
  EXPECT_EQ(clock.epoch(), 1u);
  EXPECT_EQ(clock.counters().slips, 1u);
  EXPECT_EQ(clock.counters().slipped, behind);
  EXPECT_EQ(clock.due_time(5), stalled);
  EXPECT_EQ(clock.next_tick(), 6u);
  // Ticks are still due at whole-schedule offsets from the new start: no hole, no drift.
  EXPECT_EQ(clock.due_time(65) - clock.due_time(5), 1s);
  EXPECT_EQ(clock.backlog_ticks(stalled), 0u);
  EXPECT_EQ(clock.position(stalled).tick, 5u);
  // Back on the new schedule, nothing slips again.
  for (uint64_t tick = 6; tick < 200; ++tick)
    ASSERT_EQ(clock.advance(clock.due_time(tick)), 1u) << tick;
  EXPECT_EQ(clock.epoch(), 1u);
}

TEST(TickClock, ARoomAtTwiceItsCapacityStaysWithinTheBoundOfItsSchedule) {
  // Every step takes two periods: the room runs at half rate. Each wake it measures its
  // backlog; with slipping it never exceeds the bound by more than the ticks one wake runs.
  TickClockConfig config = config_60hz(4);
  config.max_backlog_ticks = 16;
  TickClock clock(config, kStart);
  Time now = kStart;
  const nanoseconds step = 2 * nanoseconds(16'666'667);
  uint64_t max_backlog = 0;
  for (int wake = 0; wake < 2000; ++wake) {
    const uint32_t due = clock.advance(now);
    now += step * due;
    max_backlog = std::max(max_backlog, clock.backlog_ticks(now));
    if (due == 0) now = clock.next_deadline();
  }
  EXPECT_GT(clock.epoch(), 10u);
  EXPECT_LE(max_backlog, 16u + 2 * 4u);
  EXPECT_GT(clock.next_tick(), 2000u);  // it kept stepping all along
}

TEST(TickClock, ZeroBacklogBoundNeverSlips) {
  TickClock clock(config_60hz(4), kStart);
  clock.advance(kStart);
  clock.advance(clock.due_time(100'000));
  EXPECT_EQ(clock.epoch(), 0u);
  EXPECT_EQ(clock.start(), kStart);
}

TEST(TickClock, LateTicksAreCountedAboveTheThreshold) {
  TickClock clock(config_60hz(), kStart);
  const nanoseconds lateness[] = {0ns, 1ms, 2ms, 2ms + 1ns, 15ms};  // threshold 2 ms
  for (uint64_t n = 0; n < std::size(lateness); ++n) {
    ASSERT_EQ(clock.advance(clock.due_time(n) + lateness[n]), 1u);
  }
  EXPECT_EQ(clock.counters().late_ticks, 2u);
  EXPECT_EQ(clock.counters().max_lateness, 15ms);
  EXPECT_EQ(clock.lateness().count(), std::size(lateness));
}

TEST(TickClock, LatenessPercentilesFromTheHistogram) {
  // 1000 ticks: 980 start 100 µs late, 20 start 5 ms late. p50 = 100 µs, p99 = 5 ms; a bucket
  // is at most 12.5% wide, so each reading lies in [true, true × 1.125].
  TickClock clock(config_60hz(/*max_catch_up=*/1), kStart);
  for (uint64_t n = 0; n < 1000; ++n) {
    const nanoseconds late = n % 50 == 7 ? nanoseconds(5ms) : nanoseconds(100us);
    ASSERT_EQ(clock.advance(clock.due_time(n) + late), 1u);
  }
  const LatenessHistogram& h = clock.lateness();
  EXPECT_EQ(h.count(), 1000u);
  EXPECT_GE(h.quantile(0.50), 100us);
  EXPECT_LE(h.quantile(0.50), nanoseconds(112'500));
  EXPECT_GE(h.quantile(0.99), 5ms);
  EXPECT_LE(h.quantile(0.99), 5ms);  // capped at the max, which is exactly 5 ms
  EXPECT_EQ(h.quantile(1.0), 5ms);
  EXPECT_EQ(h.max(), 5ms);
  EXPECT_EQ(h.mean(), nanoseconds((980 * 100'000 + 20 * 5'000'000) / 1000));
  EXPECT_EQ(clock.counters().late_ticks, 20u);
}

TEST(LatenessHistogram, BucketsAreContiguousAndAtMostAnEighthWide) {
  EXPECT_EQ(LatenessHistogram::bucket_lower_ns(0), 0u);
  EXPECT_EQ(LatenessHistogram::bucket_lower_ns(1), 1024u);
  EXPECT_EQ(LatenessHistogram::bucket_lower_ns(LatenessHistogram::kBucketCount - 1),
            uint64_t{1} << 36);
  for (size_t i = 0; i + 1 < LatenessHistogram::kBucketCount; ++i) {
    const uint64_t lower = LatenessHistogram::bucket_lower_ns(i);
    const uint64_t upper = LatenessHistogram::bucket_upper_ns(i);
    ASSERT_LT(lower, upper) << i;
    ASSERT_EQ(upper, LatenessHistogram::bucket_lower_ns(i + 1)) << i;
    ASSERT_EQ(LatenessHistogram::bucket_index(lower), i) << i;
    ASSERT_EQ(LatenessHistogram::bucket_index(upper - 1), i) << i;
    if (i > 0) {
      ASSERT_LE((upper - lower) * 8, lower) << i;
    }
  }
  EXPECT_EQ(LatenessHistogram::bucket_index(UINT64_MAX), LatenessHistogram::kBucketCount - 1);
}

TEST(LatenessHistogram, PercentilesOfAKnownSpreadAndMerging) {
  // Values 10 µs, 20 µs, …, 10 ms in a shuffled order: the 500th is 5 ms, the 990th 9.9 ms.
  std::vector<int64_t> values;
  for (int64_t i = 1; i <= 1000; ++i)
    values.push_back(i * 10'000);
  std::shuffle(values.begin(), values.end(), std::mt19937_64(3));
  LatenessHistogram whole, first_half, second_half;
  for (size_t i = 0; i < values.size(); ++i) {
    whole.record(nanoseconds(values[i]));
    (i < 500 ? first_half : second_half).record(nanoseconds(values[i]));
  }
  const auto within_bucket = [](nanoseconds got, int64_t truth_ns) {
    return got.count() >= truth_ns && got.count() <= truth_ns + truth_ns / 8;
  };
  EXPECT_TRUE(within_bucket(whole.quantile(0.5), 5'000'000)) << whole.quantile(0.5).count();
  EXPECT_TRUE(within_bucket(whole.quantile(0.99), 9'900'000)) << whole.quantile(0.99).count();
  EXPECT_TRUE(within_bucket(whole.quantile(0.001), 10'000)) << whole.quantile(0.001).count();
  EXPECT_EQ(whole.quantile(1.0), 10ms);

  first_half.merge(second_half);
  EXPECT_EQ(first_half.count(), whole.count());
  EXPECT_EQ(first_half.max(), whole.max());
  for (size_t i = 0; i < LatenessHistogram::kBucketCount; ++i) {
    ASSERT_EQ(first_half.bucket_count(i), whole.bucket_count(i)) << i;
  }

  LatenessHistogram empty;
  EXPECT_EQ(empty.quantile(0.5), 0ns);
  EXPECT_EQ(empty.mean(), 0ns);
  empty.record(-5ns);  // a negative duration counts as zero
  EXPECT_EQ(empty.bucket_count(0), 1u);
  EXPECT_EQ(empty.max(), 0ns);
  whole.clear();
  EXPECT_EQ(whole.count(), 0u);
  EXPECT_EQ(whole.quantile(0.5), 0ns);
}

TEST(TickClock, PositionIsWhatAPongReports) {
  TickClock clock(config_60hz(), kStart);
  auto p = clock.position(clock.due_time(42) + 5ns);
  EXPECT_EQ(p.tick, 42u);
  EXPECT_EQ(p.since_due, 5ns);
  p = clock.position(clock.due_time(43) - 1ns);
  EXPECT_EQ(p.tick, 42u);
  EXPECT_EQ(p.since_due, nanoseconds(16'666'665));  // tick 43 is due at 716,666,666 ns
  p = clock.position(kStart - 3ns);
  EXPECT_EQ(p.tick, 0u);
  EXPECT_EQ(p.since_due, -3ns);
  // The position follows the schedule, not the ticks started.
  EXPECT_EQ(clock.next_tick(), 0u);
}

TEST(TickClock, ConfigIsValidatedAndClamped) {
  TickClockConfig config;
  EXPECT_EQ(lockstep::server::tick_clock_config_error(config), nullptr);
  config.tick_rate_hz = 0;
  EXPECT_NE(lockstep::server::tick_clock_config_error(config), nullptr);
  config.tick_rate_hz = 1001;
  EXPECT_NE(lockstep::server::tick_clock_config_error(config), nullptr);
  config.tick_rate_hz = 60;
  config.max_catch_up_ticks = 0;
  EXPECT_NE(lockstep::server::tick_clock_config_error(config), nullptr);

  config.tick_rate_hz = 0;  // clamped to 1 Hz, catch-up to 1: never a division by zero
  TickClock clock(config, kStart);
  EXPECT_EQ(clock.config().tick_rate_hz, 1u);
  EXPECT_EQ(clock.due_time(1) - kStart, 1s);
  EXPECT_EQ(clock.advance(kStart + 10s), 1u);
}

}  // namespace
