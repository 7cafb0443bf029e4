// InputDedup against a plain model: the same operations, answered by a linear scan of every
// remembered (sequence, frame, tick) in ring order. The hashed index must give the same answer
// to every lookup, through ring wrap-around, forgets and colliding sequences.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "input_dedup.h"
#include "test_math.h"

namespace {

using lockstep::server::InputDedup;

// The model: per player a ring of entries scanned whole (what the index replaces).
class Model {
 public:
  Model(uint32_t players, uint32_t entries, uint64_t memory)
      : entries_(entries),
        memory_(memory),
        ring_(players, std::vector<Entry>(entries)),
        next_(players, 0) {}
  bool is_repeat(uint32_t player, uint32_t sequence, uint64_t now, uint64_t frame) const {
    for (const Entry& e : ring_[player - 1]) {
      if (e.frame != 0 && e.sequence == sequence && e.frame != frame && e.tick + memory_ > now)
        return true;
    }
    return false;
  }
  void remember(uint32_t player, uint32_t sequence, uint64_t now, uint64_t frame) {
    ring_[player - 1][next_[player - 1]] = {now, frame, sequence};
    next_[player - 1] = (next_[player - 1] + 1) % entries_;
  }
  void forget(uint32_t player) {
    for (Entry& e : ring_[player - 1])
      e = Entry{};
    next_[player - 1] = 0;
  }

 private:
  struct Entry {
    uint64_t tick = 0, frame = 0;
    uint32_t sequence = 0;
  };
  uint32_t entries_;
  uint64_t memory_;
  std::vector<std::vector<Entry>> ring_;
  std::vector<uint32_t> next_;
};

struct Rng : lockstep::testing::TestRng {
  uint32_t below(uint32_t n) { return static_cast<uint32_t>(next() % n); }
};

// `sequence_span` small makes sequences collide and repeat often; large makes them mostly new.
void run_against_model(uint32_t entries, uint32_t sequence_span, uint64_t seed) {
  constexpr uint32_t kPlayers = 3;
  constexpr uint64_t kMemory = 50;
  InputDedup dedup(kPlayers, entries, kMemory);
  Model model(kPlayers, entries, kMemory);
  Rng rng{seed};
  uint64_t tick = 1, frame = 0;
  uint32_t repeats = 0, lookups = 0;
  for (int op = 0; op < 60000; ++op) {
    if (rng.below(8) == 0) ++tick;
    const uint32_t player = 1 + rng.below(kPlayers);
    const uint32_t roll = rng.below(1000);
    if (roll == 0) {
      dedup.forget(player);
      model.forget(player);
      continue;
    }
    ++frame;
    // A frame of 1–3 inputs, sometimes sharing a sequence (allowed within one frame), and now
    // and then an old frame id (a resend of the same frame).
    const uint64_t frame_id = roll < 20 && frame > 5 ? frame - 1 - rng.below(5) : frame;
    const uint32_t base = rng.below(sequence_span);
    const uint32_t count = 1 + rng.below(3);
    for (uint32_t k = 0; k < count; ++k) {
      const uint32_t sequence = rng.below(4) == 0 ? base : base + k;
      const bool expected = model.is_repeat(player, sequence, tick, frame_id);
      ASSERT_EQ(dedup.is_repeat(player, sequence, tick, frame_id), expected)
          << "op " << op << " player " << player << " sequence " << sequence;
      ++lookups;
      if (expected) {
        ++repeats;
        continue;
      }
      dedup.remember(player, sequence, tick, frame_id);
      model.remember(player, sequence, tick, frame_id);
    }
  }
  // The scenario must exercise both answers, or the comparison proves little.
  EXPECT_GT(repeats, lookups / 50);
  EXPECT_LT(repeats, lookups);
}

TEST(InputDedup, MatchesTheLinearModelWithCollidingSequences) {
  run_against_model(64, 200, 1);
}

TEST(InputDedup, MatchesTheLinearModelThroughRingWrapAround) {
  run_against_model(16, 60, 2);
}

TEST(InputDedup, MatchesTheLinearModelAtTheRoomsRingSize) {
  run_against_model(1024, 5000, 3);
}

TEST(InputDedup, RepeatsOnlyAcrossFramesAndWithinMemory) {
  InputDedup dedup(2, 8, 10);
  dedup.remember(1, 42, 100, 7);
  EXPECT_FALSE(dedup.is_repeat(1, 42, 100, 7));  // the same frame may repeat a sequence
  EXPECT_TRUE(dedup.is_repeat(1, 42, 105, 8));   // another frame: a resend
  EXPECT_FALSE(dedup.is_repeat(2, 42, 105, 8));  // another player's sequence space
  EXPECT_FALSE(dedup.is_repeat(1, 42, 110, 8));  // remembered for 10 ticks only
  EXPECT_FALSE(dedup.is_repeat(0, 42, 105, 8));  // no player 0
  EXPECT_FALSE(dedup.is_repeat(3, 42, 105, 8));  // nor beyond the room's players
  dedup.forget(1);
  EXPECT_FALSE(dedup.is_repeat(1, 42, 105, 8));
}

}  // namespace
