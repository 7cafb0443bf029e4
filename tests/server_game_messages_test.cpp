// A room's game messages without sockets (server/src/game_messages.h): the size limit, the rate
// limit as a token bucket counted in ticks, and the arrival order the rules see.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "game_messages.h"

namespace lockstep::server {
namespace {

std::vector<uint8_t> bytes(size_t n, uint8_t value = 'x') {
  return std::vector<uint8_t>(n, value);
}

GameMessageLimits limits(uint32_t max_bytes, uint32_t max_per_s, uint32_t tick_rate_hz = 60) {
  GameMessageLimits l;
  l.max_bytes = max_bytes;
  l.max_per_s = max_per_s;
  l.tick_rate_hz = tick_rate_hz;
  l.max_players = 4;
  return l;
}

TEST(GameMessageInbox, TakesMessagesUpToTheSizeLimitInArrivalOrder) {
  GameMessageInbox inbox(limits(8, 0));
  std::string reason;
  EXPECT_EQ(inbox.offer(2, 10, bytes(8, 'a'), &reason), GameMessageVerdict::accepted);
  EXPECT_EQ(inbox.offer(1, 10, bytes(1, 'b'), &reason), GameMessageVerdict::accepted);
  EXPECT_EQ(inbox.offer(1, 10, bytes(9), &reason), GameMessageVerdict::oversize);
  EXPECT_NE(reason.find("9 bytes"), std::string::npos) << reason;
  EXPECT_NE(reason.find("at most 8"), std::string::npos) << reason;
  ASSERT_EQ(inbox.pending().size(), 2u);
  EXPECT_EQ(inbox.pending()[0].player, 2u);
  EXPECT_EQ(inbox.pending()[0].data, bytes(8, 'a'));
  EXPECT_EQ(inbox.pending()[1].player, 1u);
  inbox.clear();
  EXPECT_TRUE(inbox.pending().empty());
}

TEST(GameMessageInbox, RefusesEmptyMessagesAndSpectators) {
  GameMessageInbox inbox(limits(8, 0));
  std::string reason;
  EXPECT_EQ(inbox.offer(1, 0, {}, &reason), GameMessageVerdict::empty);
  EXPECT_EQ(inbox.offer(0, 0, bytes(1), &reason), GameMessageVerdict::bad_player);
  EXPECT_NE(reason.find("spectators"), std::string::npos) << reason;
  EXPECT_EQ(inbox.offer(5, 0, bytes(1), &reason), GameMessageVerdict::bad_player);
  EXPECT_TRUE(inbox.pending().empty());
}

TEST(GameMessageInbox, RateIsABucketOneSecondDeepRefilledPerTick) {
  // 3 per second at 60 Hz: a burst of 3, then one more every 20 ticks.
  GameMessageInbox inbox(limits(8, 3));
  std::string reason;
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(inbox.offer(1, 100, bytes(1), &reason), GameMessageVerdict::accepted) << i;
  EXPECT_EQ(inbox.offer(1, 100, bytes(1), &reason), GameMessageVerdict::over_rate);
  EXPECT_NE(reason.find("3 messages per second"), std::string::npos) << reason;
  // Another player has a bucket of its own.
  EXPECT_EQ(inbox.offer(2, 100, bytes(1), &reason), GameMessageVerdict::accepted);
  // 19 ticks later not quite one message has come back; at 20 it has.
  EXPECT_EQ(inbox.offer(1, 119, bytes(1), &reason), GameMessageVerdict::over_rate);
  EXPECT_EQ(inbox.offer(1, 120, bytes(1), &reason), GameMessageVerdict::accepted);
  EXPECT_EQ(inbox.offer(1, 120, bytes(1), &reason), GameMessageVerdict::over_rate);
  // A long silence refills the bucket to its depth, no more.
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(inbox.offer(1, 100'000, bytes(1), &reason), GameMessageVerdict::accepted) << i;
  EXPECT_EQ(inbox.offer(1, 100'000, bytes(1), &reason), GameMessageVerdict::over_rate);
  EXPECT_EQ(inbox.pending().size(), 8u);
}

TEST(GameMessageInbox, SameArrivalTicksGiveSameVerdicts) {
  // The bucket counts ticks, not wall time: two inboxes fed the same ticks agree exactly.
  GameMessageInbox a(limits(8, 7, 30)), b(limits(8, 7, 30));
  std::string reason;
  for (uint64_t i = 0; i < 500; ++i) {
    const uint64_t tick = i * 3 / 4;
    const uint32_t player = 1 + static_cast<uint32_t>(i % 2);
    EXPECT_EQ(a.offer(player, tick, bytes(1), &reason), b.offer(player, tick, bytes(1), &reason));
  }
  EXPECT_EQ(a.pending().size(), b.pending().size());
  EXPECT_GT(a.pending().size(), 0u);
  EXPECT_LT(a.pending().size(), 500u);
}

TEST(GameMessageInbox, PendingListIsBounded) {
  GameMessageLimits l = limits(8, 0);
  l.max_pending = 5;
  GameMessageInbox inbox(l);
  std::string reason;
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(inbox.offer(1, 0, bytes(1), &reason), GameMessageVerdict::accepted);
  EXPECT_EQ(inbox.offer(2, 0, bytes(1), &reason), GameMessageVerdict::over_rate);
  EXPECT_NE(reason.find("already wait"), std::string::npos) << reason;
}

}  // namespace
}  // namespace lockstep::server
