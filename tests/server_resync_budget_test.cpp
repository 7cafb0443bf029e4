// ResyncBudget (server/src/resync_budget.h) with the time passed in: the burst, the doubling
// backoff and its cap, folding, forgetting after a quiet minute, and the request budget.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>

#include "resync_budget.h"

namespace {

using namespace std::chrono_literals;
using lockstep::server::ResyncBudget;
using lockstep::server::ResyncBudgetConfig;
using lockstep::server::ResyncVerdict;
using Clock = ResyncBudget::Clock;

const Clock::time_point t0 = Clock::time_point{} + 1000s;

TEST(ResyncBudget, BurstIsServedAtOnceThenTheWaitDoublesUpToItsCap) {
  ResyncBudgetConfig config;  // burst 2, backoff 1 s, max 16 s
  config.max_requests_per_minute = 0;
  ResyncBudget budget(config, t0);
  EXPECT_EQ(budget.request(t0).verdict, ResyncVerdict::serve);
  EXPECT_EQ(budget.request(t0 + 10ms).verdict, ResyncVerdict::serve);
  // Each later resync waits 1, 2, 4, 8, 16, 16 s after the one before.
  Clock::time_point now = t0 + 10ms;
  for (const auto wait : {1s, 2s, 4s, 8s, 16s, 16s}) {
    const ResyncBudget::Decision d = budget.request(now + 1ms);
    ASSERT_EQ(d.verdict, ResyncVerdict::defer);
    EXPECT_EQ(d.due, now + wait);
    EXPECT_FALSE(budget.take_due(d.due - 1ms));
    EXPECT_TRUE(budget.take_due(d.due));
    EXPECT_FALSE(budget.take_due(d.due));  // once
    now = d.due;
  }
  EXPECT_EQ(budget.sent(), 8u);
  EXPECT_EQ(budget.wait_after(0), 0ms);
  EXPECT_EQ(budget.wait_after(2), 1000ms);
  EXPECT_EQ(budget.wait_after(40), 16000ms);  // no overflow however long the run
}

TEST(ResyncBudget, RequestsWhileOneIsDeferredAreFoldedIntoIt) {
  ResyncBudgetConfig config;
  config.burst = 1;
  config.max_requests_per_minute = 0;
  ResyncBudget budget(config, t0);
  EXPECT_EQ(budget.request(t0).verdict, ResyncVerdict::serve);
  const ResyncBudget::Decision d = budget.request(t0 + 1ms);
  ASSERT_EQ(d.verdict, ResyncVerdict::defer);
  for (int i = 0; i < 1000; ++i) {
    const ResyncBudget::Decision again = budget.request(t0 + 2ms);
    EXPECT_EQ(again.verdict, ResyncVerdict::fold);
    EXPECT_EQ(again.due, d.due);
  }
  EXPECT_TRUE(budget.take_due(d.due));
  EXPECT_EQ(budget.sent(), 2u);  // a thousand requests, one more snapshot
  EXPECT_EQ(budget.requests(), 1002u);
}

TEST(ResyncBudget, AQuietMinuteStartsOverWithTheBurst) {
  ResyncBudgetConfig config;
  config.max_requests_per_minute = 0;
  ResyncBudget budget(config, t0);
  EXPECT_EQ(budget.request(t0).verdict, ResyncVerdict::serve);
  EXPECT_EQ(budget.request(t0).verdict, ResyncVerdict::serve);
  // 59 s later: past the 1-s wait, still in the run.
  EXPECT_EQ(budget.request(t0 + 59s).verdict, ResyncVerdict::serve);
  EXPECT_EQ(budget.sent_in_a_row(), 3u);
  EXPECT_EQ(budget.request(t0 + 59s + 60s).verdict, ResyncVerdict::serve);
  EXPECT_EQ(budget.sent_in_a_row(), 1u);
}

TEST(ResyncBudget, RequestsOverTheMinutesBudgetAreOverAndItRefills) {
  ResyncBudgetConfig config;
  config.max_requests_per_minute = 12;
  ResyncBudget budget(config, t0);
  for (int i = 0; i < 12; ++i)
    EXPECT_NE(budget.request(t0).verdict, ResyncVerdict::over_budget) << i;
  EXPECT_EQ(budget.request(t0).verdict, ResyncVerdict::over_budget);
  // One request back every 5 s (12 a minute).
  EXPECT_EQ(budget.request(t0 + 4900ms).verdict, ResyncVerdict::over_budget);
  EXPECT_NE(budget.request(t0 + 5100ms).verdict, ResyncVerdict::over_budget);
  EXPECT_EQ(budget.request(t0 + 5200ms).verdict, ResyncVerdict::over_budget);
  // Never more than a minute's worth saved up.
  for (int i = 0; i < 12; ++i)
    EXPECT_NE(budget.request(t0 + 3600s).verdict, ResyncVerdict::over_budget) << i;
  EXPECT_EQ(budget.request(t0 + 3600s).verdict, ResyncVerdict::over_budget);
}

TEST(ResyncBudget, AnHonestClientThatResyncsNowAndThenIsServedAtOnceForEver) {
  ResyncBudget budget(ResyncBudgetConfig{}, t0);
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(budget.request(t0 + i * 61s).verdict, ResyncVerdict::serve) << i;
  }
}

}  // namespace
