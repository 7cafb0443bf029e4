// TickPhases: a worker's rooms spread over the tick period, rooms of one slot in phase.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "tick_phases.h"

namespace lockstep::server {
namespace {

using Clock = TickPhases::Clock;
using std::chrono::nanoseconds;

// A 60 Hz period is 16,666,666.67 ns: tick n of a schedule is due at start + floor(n·1e9/60).
Clock::time_point due(Clock::time_point start, uint64_t tick) {
  return start + nanoseconds(static_cast<int64_t>(tick * 1'000'000'000ull / 60));
}

TEST(TickPhases, TheStartLiesWithinOnePeriodBeforeNowSoTickOneIsStillAhead) {
  TickPhases phases(60);
  Clock::time_point now = Clock::time_point{} + std::chrono::seconds(1000);
  for (int i = 0; i < 100; ++i) {
    const Clock::time_point start = phases.place(now);
    EXPECT_LE(start, now);
    EXPECT_GT(due(start, 1), now) << i;
    now += nanoseconds(1'234'567);  // joins at arbitrary instants
  }
}

TEST(TickPhases, RoomsSpreadOverEverySlotBeforeAnySlotTakesASecond) {
  TickPhases phases(60);
  Clock::time_point now = Clock::time_point{} + std::chrono::seconds(5);
  for (uint32_t i = 0; i < TickPhases::kSlots; ++i) {
    phases.place(now);  // all at one instant: a burst of new rooms
    now += nanoseconds(1000);
  }
  for (uint32_t k = 0; k < TickPhases::kSlots; ++k)
    EXPECT_EQ(phases.rooms_in_slot(k), 1u) << k;
  for (uint32_t i = 0; i < 3 * TickPhases::kSlots; ++i)
    phases.place(now);
  for (uint32_t k = 0; k < TickPhases::kSlots; ++k)
    EXPECT_EQ(phases.rooms_in_slot(k), 4u) << k;
}

TEST(TickPhases, RoomsOfOneSlotFallDueTogetherForEver) {
  // Two rooms placed in the same slot, a period and a bit apart: their ticks are due within a
  // nanosecond of each other, at tick 1 and a day of ticks later.
  TickPhases phases(60);
  const Clock::time_point t0 = Clock::time_point{} + std::chrono::seconds(77);
  std::vector<Clock::time_point> starts;
  for (uint32_t i = 0; i < TickPhases::kSlots; ++i)
    starts.push_back(phases.place(t0));
  const Clock::time_point later = t0 + nanoseconds(16'666'667 * 3 + 5'000);
  const Clock::time_point a = phases.place(later);
  const uint32_t slot = phases.slot_of(a);
  Clock::time_point b{};
  for (const Clock::time_point s : starts) {
    if (phases.slot_of(s) == slot) b = s;
  }
  ASSERT_NE(b, Clock::time_point{});
  // Their schedules' ticks: find, for tick 1 of `a`, the tick of `b` due closest to it.
  const uint64_t day = 60ull * 86'400;
  for (const uint64_t n : {uint64_t{1}, day}) {
    const Clock::time_point ta = due(a, n);
    const int64_t ticks_apart = (ta - b).count() * 60 / 1'000'000'000;
    int64_t best = INT64_MAX;
    for (int64_t m = ticks_apart - 1; m <= ticks_apart + 1; ++m) {
      best = std::min(best, std::abs((ta - due(b, static_cast<uint64_t>(m))).count()));
    }
    EXPECT_LE(best, 1) << "tick " << n;
  }
}

TEST(TickPhases, RemovedRoomsFreeTheirSlotAndMovedSchedulesCountWhereTheyAre) {
  TickPhases phases(60);
  const Clock::time_point now = Clock::time_point{} + std::chrono::seconds(3);
  const Clock::time_point first = phases.place(now);
  const uint32_t slot = phases.slot_of(first);
  EXPECT_EQ(phases.rooms_in_slot(slot), 1u);
  phases.remove(first);
  EXPECT_EQ(phases.rooms_in_slot(slot), 0u);
  phases.remove(first);  // never below zero
  EXPECT_EQ(phases.rooms_in_slot(slot), 0u);
  // A schedule that slipped to an arbitrary instant counts in the slot nearest its phase.
  const Clock::time_point moved = first + nanoseconds(16'666'667 / TickPhases::kSlots * 5 + 100);
  phases.add(moved);
  EXPECT_EQ(phases.rooms_in_slot(phases.slot_of(moved)), 1u);
  EXPECT_EQ(phases.slot_of(moved), (slot + 5) % TickPhases::kSlots);
}

TEST(TickPhases, AnyRateFromOneToAThousandHertzKeepsTheStartWithinAPeriod) {
  for (const uint32_t rate : {1u, 7u, 30u, 60u, 128u, 1000u}) {
    TickPhases phases(rate);
    Clock::time_point now = Clock::time_point{} + std::chrono::hours(24 * 400);
    const int64_t period = 1'000'000'000 / rate;
    for (int i = 0; i < 50; ++i) {
      const Clock::time_point start = phases.place(now);
      EXPECT_LE(start, now);
      EXPECT_LT((now - start).count(), period + 1) << rate;
      now += nanoseconds(987'654 + i);
    }
  }
}

}  // namespace
}  // namespace lockstep::server
