// Client time sync: the server tick estimate from ping/pong samples, its accuracy under jitter,
// the least-rtt choice, the window, and the rejection of absurd samples.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <vector>

#include "lockstep/client_sdk/time_sync.h"

namespace {

using namespace std::chrono_literals;
using lockstep::client_sdk::SampleVerdict;
using lockstep::client_sdk::SteadyTime;
using lockstep::client_sdk::TimeSample;
using lockstep::client_sdk::TimeSync;
using lockstep::client_sdk::TimeSyncConfig;
using std::chrono::nanoseconds;

constexpr int64_t kPeriodNs = 1'000'000'000 / 60;  // 16,666,666 (rounded down)
constexpr int64_t kHalfTickNs = kPeriodNs / 2;

// floor(n·1e9/60) straight from the definition (exact for the ticks used here).
int64_t naive_due_ns(int64_t n) {
  return n * 1'000'000'000 / 60;
}

// A server whose tick 0 was due at client time `epoch`, answering pings on its schedule.
// Everything here is computed from the definition, not with the code under test.
struct FakeServer {
  SteadyTime epoch;

  int64_t last_tick_due(SteadyTime t) const {
    const int64_t elapsed = (t - epoch).count();
    int64_t n = elapsed * 60 / 1'000'000'000;
    while (naive_due_ns(n + 1) <= elapsed)
      ++n;
    while (n > 0 && naive_due_ns(n) > elapsed)
      --n;
    return n;
  }

  // A ping sent at t0 that spends `up` on the way there and `down` on the way back.
  TimeSample exchange(SteadyTime t0, nanoseconds up, nanoseconds down) const {
    const SteadyTime reply = t0 + up;
    const int64_t tick = last_tick_due(reply);
    TimeSample sample;
    sample.client_send = t0;
    sample.server_tick = static_cast<uint64_t>(tick);
    sample.server_since_due = (reply - epoch) - nanoseconds(naive_due_ns(tick));
    sample.client_receive = reply + down;
    return sample;
  }
};

TimeSyncConfig config_60hz() {
  TimeSyncConfig config;
  config.tick_rate_hz = 60;
  return config;
}

// Client clock at 5000 s; the server's tick 0 was due 1234.567890123 s earlier on it.
const SteadyTime kClientStart = SteadyTime(5000s);
const FakeServer kServer{kClientStart - nanoseconds(1'234'567'890'123)};

int64_t estimate_error_ns(const TimeSync& sync, SteadyTime now) {
  return sync.server_schedule_time(now)->count() - (now - kServer.epoch).count();
}

TEST(ClientTimeSync, NoEstimateBeforeTheFirstSample) {
  TimeSync sync(config_60hz());
  EXPECT_FALSE(sync.has_estimate());
  EXPECT_FALSE(sync.server_schedule_time(kClientStart).has_value());
  EXPECT_FALSE(sync.estimated_server_tick(kClientStart).has_value());
  EXPECT_FALSE(sync.target_tick(kClientStart, 3).has_value());
  EXPECT_EQ(sync.min_rtt(), 0ns);
}

TEST(ClientTimeSync, ExactSampleGivesTheExactTickAtEveryBoundary) {
  // Symmetric legs, even rtt: the estimate has no error, so the estimated tick flips exactly at
  // the server's due times.
  TimeSync sync(config_60hz());
  ASSERT_EQ(sync.add_sample(kServer.exchange(kClientStart, 20ms, 20ms)), SampleVerdict::accepted);
  for (int64_t n = 74'000; n < 74'200; ++n) {
    const SteadyTime due = kServer.epoch + nanoseconds(naive_due_ns(n));
    ASSERT_EQ(sync.estimated_server_tick(due), static_cast<uint64_t>(n));
    ASSERT_EQ(sync.estimated_server_tick(due - 1ns), static_cast<uint64_t>(n - 1));
    ASSERT_EQ(sync.target_tick(due, 3), static_cast<uint64_t>(n + 3));
  }
  EXPECT_EQ(sync.estimated_server_tick(kServer.epoch - 1s), 0u);  // before tick 0: tick 0
  EXPECT_EQ(sync.min_rtt(), 40ms);
  EXPECT_EQ(sync.uncertainty(), 20ms);
}

TEST(ClientTimeSync, JitterUnderATickKeepsEveryEstimateWithinHalfATick) {
  // Each leg 20 ms plus up to 16 ms of jitter: a sample's error is half the difference of its
  // legs, < 8 ms, under half a tick (8.33 ms) from the very first sample on.
  TimeSync sync(config_60hz());
  std::mt19937_64 rng(11);
  for (int i = 0; i < 300; ++i) {
    const SteadyTime t0 = kClientStart + i * 250ms;
    const nanoseconds up = 20ms + nanoseconds(rng() % 16'000'000);
    const nanoseconds down = 20ms + nanoseconds(rng() % 16'000'000);
    const TimeSample sample = kServer.exchange(t0, up, down);
    ASSERT_EQ(sync.add_sample(sample), SampleVerdict::accepted);
    for (nanoseconds later : {0ns, nanoseconds(100ms), nanoseconds(240ms)}) {
      const SteadyTime now = sample.client_receive + later;
      ASSERT_LT(std::abs(estimate_error_ns(sync, now)), kHalfTickNs) << "sample " << i;
      // The tick itself is then off by at most one, and only near a boundary.
      const int64_t truth = kServer.last_tick_due(now);
      const auto tick = static_cast<int64_t>(*sync.estimated_server_tick(now));
      ASSERT_LE(std::abs(tick - truth), 1) << "sample " << i;
    }
  }
  EXPECT_EQ(sync.window_size(), TimeSync::kWindowSamples);
  EXPECT_EQ(sync.counters().accepted, 300u);
}

TEST(ClientTimeSync, HeavyQueueingIsFilteredByTheLeastRttSample) {
  // Legs of 22 ms up / 18 ms down plus, half of the time, up to 200 ms of queueing each; every
  // 8th ping meets empty queues. The least-rtt sample then has error exactly (22 − 18)/2 = 2 ms,
  // while the latest sample alone is often off by tens of milliseconds.
  TimeSync sync(config_60hz());
  std::mt19937_64 rng(5);
  int64_t worst_latest_sample_error_ns = 0;
  for (int i = 0; i < 400; ++i) {
    const SteadyTime t0 = kClientStart + i * 250ms;
    const bool quiet = i % 8 == 3;
    const auto queueing = [&] {
      return quiet || rng() % 2 == 0 ? 0ns : nanoseconds(rng() % 200'000'000);
    };
    const nanoseconds up = 22ms + queueing();
    const nanoseconds down = 18ms + queueing();
    const TimeSample sample = kServer.exchange(t0, up, down);
    ASSERT_EQ(sync.add_sample(sample), SampleVerdict::accepted);
    worst_latest_sample_error_ns =
        std::max(worst_latest_sample_error_ns, std::abs((up - down).count()) / 2);
    if (i < 3) continue;  // before the first quiet ping
    const SteadyTime now = sample.client_receive + 10ms;
    ASSERT_LE(std::abs(estimate_error_ns(sync, now) - 2'000'000), 1) << "sample " << i;
    ASSERT_EQ(sync.min_rtt(), 40ms);
  }
  EXPECT_GT(worst_latest_sample_error_ns, 4 * kHalfTickNs);  // the jitter was real
  EXPECT_GT(sync.smoothed_rtt(), sync.min_rtt());
}

TEST(ClientTimeSync, PicksTheLeastRttSampleAndSmoothsRtt) {
  TimeSync sync(config_60hz());
  // A: rtt 100 ms, badly asymmetric; B: rtt 30 ms (the best); C: rtt 60 ms.
  const TimeSample a = kServer.exchange(kClientStart, 90ms, 10ms);
  const TimeSample b = kServer.exchange(kClientStart + 1s, 10ms, 20ms);
  const TimeSample c = kServer.exchange(kClientStart + 2s, 50ms, 10ms);
  ASSERT_EQ(sync.add_sample(a), SampleVerdict::accepted);
  ASSERT_EQ(sync.add_sample(b), SampleVerdict::accepted);
  ASSERT_EQ(sync.add_sample(c), SampleVerdict::accepted);
  EXPECT_EQ(sync.min_rtt(), 30ms);
  EXPECT_EQ(sync.last_rtt(), 60ms);
  // B assumes the reply at t0 + 15 ms; it really came at t0 + 10 ms, so the server was 5 ms
  // further along than B believes: the estimate runs exactly 5 ms behind the truth.
  const SteadyTime now = kClientStart + 3s;
  EXPECT_EQ(estimate_error_ns(sync, now), -5'000'000);
  // SRTT with gain 1/8: 100 → 100 + (30 − 100)/8 = 91.25 → 91.25 + (60 − 91.25)/8 = 87.34375.
  EXPECT_EQ(sync.smoothed_rtt(), nanoseconds(87'343'750));
}

TEST(ClientTimeSync, TheBestSampleAgesOutOfTheWindow) {
  TimeSync sync(config_60hz());
  SteadyTime t0 = kClientStart;
  const auto send = [&](nanoseconds rtt) {
    ASSERT_EQ(sync.add_sample(kServer.exchange(t0, rtt / 2, rtt / 2)), SampleVerdict::accepted);
    t0 += 1s;
  };
  for (int i = 0; i < 16; ++i)
    send(50ms);
  send(10ms);
  EXPECT_EQ(sync.min_rtt(), 10ms);
  for (int i = 0; i < 15; ++i)
    send(50ms);
  EXPECT_EQ(sync.min_rtt(), 10ms);  // still among the 16 newest
  send(50ms);
  EXPECT_EQ(sync.min_rtt(), 50ms);  // the route's delay grew; the estimate follows
  EXPECT_EQ(sync.window_size(), TimeSync::kWindowSamples);
}

TEST(ClientTimeSync, ReorderedSamplesGiveTheSameEstimate) {
  std::mt19937_64 rng(9);
  std::vector<TimeSample> samples;
  for (int i = 0; i < 40; ++i) {
    samples.push_back(kServer.exchange(kClientStart + i * 500ms,
                                       15ms + nanoseconds(rng() % 30'000'000),
                                       15ms + nanoseconds(rng() % 30'000'000)));
  }
  TimeSync in_order(config_60hz());
  for (const TimeSample& s : samples)
    ASSERT_EQ(in_order.add_sample(s), SampleVerdict::accepted);
  std::shuffle(samples.begin(), samples.end(), rng);
  TimeSync shuffled(config_60hz());
  for (const TimeSample& s : samples) {
    const SampleVerdict verdict = shuffled.add_sample(s);
    ASSERT_TRUE(verdict == SampleVerdict::accepted || verdict == SampleVerdict::stale);
  }
  // Either way the window is the 16 newest pings by send time.
  const SteadyTime now = kClientStart + 30s;
  EXPECT_EQ(shuffled.server_schedule_time(now), in_order.server_schedule_time(now));
  EXPECT_EQ(shuffled.min_rtt(), in_order.min_rtt());
  EXPECT_EQ(shuffled.counters().accepted + shuffled.counters().stale, 40u);
}

TEST(ClientTimeSync, AbsurdAndDuplicateSamplesAreRejectedAndCounted) {
  TimeSync sync(config_60hz());
  TimeSample negative = kServer.exchange(kClientStart, 10ms, 10ms);
  negative.client_receive = negative.client_send - 1ns;
  EXPECT_EQ(sync.add_sample(negative), SampleVerdict::negative_rtt);
  EXPECT_FALSE(sync.has_estimate());  // a rejected sample never feeds the estimate

  const TimeSample good = kServer.exchange(kClientStart + 1s, 10ms, 10ms);
  ASSERT_EQ(sync.add_sample(good), SampleVerdict::accepted);
  const auto estimate = sync.server_schedule_time(kClientStart + 2s);

  // A negative rtt would otherwise be the "best" sample and wreck the estimate.
  TimeSample wild = kServer.exchange(kClientStart + 2s, 10ms, 10ms);
  wild.client_receive = wild.client_send - 500ms;
  EXPECT_EQ(sync.add_sample(wild), SampleVerdict::negative_rtt);
  TimeSample slow = kServer.exchange(kClientStart + 3s, 6s, 6s);
  EXPECT_EQ(sync.add_sample(slow), SampleVerdict::rtt_too_large);
  TimeSample before_due = kServer.exchange(kClientStart + 4s, 10ms, 10ms);
  before_due.server_since_due = -1ns;
  EXPECT_EQ(sync.add_sample(before_due), SampleVerdict::bad_server_time);
  TimeSample far_after_due = kServer.exchange(kClientStart + 5s, 10ms, 10ms);
  far_after_due.server_since_due = 2min;
  EXPECT_EQ(sync.add_sample(far_after_due), SampleVerdict::bad_server_time);
  TimeSample huge_tick = kServer.exchange(kClientStart + 6s, 10ms, 10ms);
  huge_tick.server_tick = UINT64_MAX;
  EXPECT_EQ(sync.add_sample(huge_tick), SampleVerdict::bad_server_time);
  TimeSample duplicate = good;
  duplicate.client_receive -= 5ms;  // same ping answered twice
  EXPECT_EQ(sync.add_sample(duplicate), SampleVerdict::duplicate);

  EXPECT_EQ(sync.server_schedule_time(kClientStart + 2s), estimate);
  EXPECT_EQ(sync.window_size(), 1u);
  const auto& counters = sync.counters();
  EXPECT_EQ(counters.accepted, 1u);
  EXPECT_EQ(counters.negative_rtt, 2u);
  EXPECT_EQ(counters.rtt_too_large, 1u);
  EXPECT_EQ(counters.bad_server_time, 3u);
  EXPECT_EQ(counters.duplicates, 1u);
  EXPECT_NE(std::string(lockstep::client_sdk::sample_verdict_message(SampleVerdict::negative_rtt))
                .find("negative"),
            std::string::npos);

  // Stale: a full window refuses a ping older than all of it.
  for (int i = 0; i < 16; ++i) {
    ASSERT_EQ(sync.add_sample(kServer.exchange(kClientStart + 10s + i * 1s, 10ms, 10ms)),
              SampleVerdict::accepted);
  }
  EXPECT_EQ(sync.add_sample(kServer.exchange(kClientStart, 10ms, 10ms)), SampleVerdict::stale);
  EXPECT_EQ(sync.counters().stale, 1u);
}

}  // namespace

namespace {

// A room that could not keep up moved its schedule 100 ms later. The sample taken before the
// move with the least rtt must stay the best one: it is kept against the schedule as it was at
// the opening, and the newest move is added back when estimating.
TEST(TimeSync, AMovedScheduleIsFollowedWithoutLosingTheBestSample) {
  const SteadyTime epoch = SteadyTime(1000s);
  FakeServer before{epoch};
  TimeSync sync(config_60hz());
  // A precise sample (10 µs each way) before the move.
  const SteadyTime t0 = epoch + 5s;
  ASSERT_EQ(sync.add_sample(before.exchange(t0, 10us, 10us)), SampleVerdict::accepted);
  // The schedule moves 100 ms later: the same room now answers as a server whose tick 0 was due
  // 100 ms later, and says how far it moved. This sample is imprecise (40 ms up, 2 ms down: its
  // midpoint guess is 19 ms off).
  const nanoseconds moved = 100ms;
  FakeServer after{epoch + moved};
  const SteadyTime t1 = epoch + 6s;
  TimeSample late = after.exchange(t1, 40ms, 2ms);
  late.server_schedule_moved = moved;
  ASSERT_EQ(sync.add_sample(late), SampleVerdict::accepted);
  EXPECT_EQ(sync.schedule_moved(), moved);
  EXPECT_EQ(sync.min_rtt(), 20us);  // the precise sample is still the best
  // The estimate is the moved schedule's tick, to within the precise sample's error (±10 µs):
  // checked at instants away from a tick boundary.
  for (int i = 0; i < 50; ++i) {
    const SteadyTime now =
        epoch + moved + 7s + nanoseconds(naive_due_ns(i)) + nanoseconds(kHalfTickNs);
    ASSERT_EQ(sync.estimated_server_tick(now), static_cast<uint64_t>(after.last_tick_due(now)))
        << i;
  }
  // A schedule moved by more than anything real is refused.
  TimeSample absurd = after.exchange(t1 + 1s, 10us, 10us);
  absurd.server_schedule_moved = std::chrono::hours(24 * 365 * 100);
  EXPECT_EQ(sync.add_sample(absurd), SampleVerdict::bad_server_time);
  TimeSample negative = after.exchange(t1 + 2s, 10us, 10us);
  negative.server_schedule_moved = -1ns;
  EXPECT_EQ(sync.add_sample(negative), SampleVerdict::bad_server_time);
}

}  // namespace
