// The room's input window as pure logic: on time, late (both policies), ahead of the window,
// behind schedule, repeats, the per-player cap and the room's own check, without sockets.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "input_window.h"

namespace {

using lockstep::schema::ErrorCode;
using lockstep::schema::InputFrame;
using lockstep::server::InputOffer;
using lockstep::server::InputWindow;
using lockstep::server::InputWindowConfig;
using lockstep::server::LateInputPolicy;
using lockstep::sim::Input;

InputWindowConfig small_window(LateInputPolicy late = LateInputPolicy::apply_next_tick) {
  InputWindowConfig config;
  config.window_ticks = 8;
  config.max_players = 2;
  config.max_inputs_per_player_per_tick = 3;
  config.late_policy = late;
  config.dedup_entries_per_player = 64;
  config.dedup_memory_ticks = 600;
  return config;
}

Input input(uint32_t sequence, uint32_t player = 0) {
  Input in;
  in.player = player;
  in.sequence = sequence;
  in.body.index1 = 1;
  in.linear_impulse[0] = 1024;
  return in;
}

InputFrame frame(uint64_t target_tick, std::vector<Input> inputs, uint32_t sequence = 7) {
  InputFrame f;
  f.target_tick = target_tick;
  f.sequence = sequence;
  f.inputs = std::move(inputs);
  return f;
}

const InputWindow::InputCheck kAcceptAll = [](const Input&) { return std::string(); };

std::vector<uint32_t> sequences_at(InputWindow& window, uint64_t tick) {
  std::vector<uint32_t> out;
  for (const Input& in : window.take(tick))
    out.push_back(in.sequence);
  return out;
}

TEST(InputWindow, OnTimeInputsWaitForTheirTickInArrivalOrder) {
  InputWindow window(small_window());
  const InputOffer offer = window.offer(1, frame(12, {input(5), input(4)}), 10, 0, kAcceptAll);
  EXPECT_EQ(offer.error, ErrorCode::none);
  EXPECT_EQ(offer.target_tick, 12u);
  EXPECT_EQ(offer.accepted, 2u);
  EXPECT_TRUE(window.take(10).empty());
  EXPECT_TRUE(window.take(11).empty());
  const std::span<const Input> taken = window.take(12);
  ASSERT_EQ(taken.size(), 2u);
  EXPECT_EQ(taken[0].sequence, 5u);
  EXPECT_EQ(taken[0].player, 1u);  // player 0 is the sender
  EXPECT_EQ(taken[1].sequence, 4u);
  EXPECT_TRUE(window.take(12).empty());  // taken once
  EXPECT_EQ(window.counters().late + window.counters().rejected, 0u);
}

TEST(InputWindow, LateInputsGoToTheNextTickUnderApplyNextTick) {
  InputWindow window(small_window());
  const InputOffer offer = window.offer(2, frame(3, {input(1), input(2)}), 10, 0, kAcceptAll);
  EXPECT_EQ(offer.error, ErrorCode::none);
  EXPECT_EQ(offer.target_tick, 10u);
  EXPECT_EQ(window.counters().late, 2u);
  EXPECT_EQ(window.counters().late_dropped, 0u);
  EXPECT_EQ(sequences_at(window, 10), (std::vector<uint32_t>{1, 2}));
}

TEST(InputWindow, LateInputsAreRefusedUnderDrop) {
  InputWindow window(small_window(LateInputPolicy::drop));
  const InputOffer offer = window.offer(1, frame(9, {input(1)}, 41), 10, 0, kAcceptAll);
  EXPECT_EQ(offer.error, ErrorCode::input_late);
  EXPECT_EQ(offer.reason, "InputFrame 41 for tick 9 arrived when tick 10 was next: dropped");
  EXPECT_EQ(window.counters().late, 1u);
  EXPECT_EQ(window.counters().late_dropped, 1u);
  EXPECT_EQ(window.counters().rejected, 0u);
  EXPECT_TRUE(window.take(10).empty());
}

TEST(InputWindow, TheWindowEndsAtNextTickPlusWindowMinusOne) {
  InputWindow window(small_window());
  // Next tick 10, window 8: ticks 10..17.
  EXPECT_EQ(window.offer(1, frame(17, {input(1)}), 10, 0, kAcceptAll).error, ErrorCode::none);
  const InputOffer ahead = window.offer(1, frame(18, {input(2)}, 3), 10, 0, kAcceptAll);
  EXPECT_EQ(ahead.error, ErrorCode::input_rejected);
  EXPECT_EQ(ahead.reason, "InputFrame 3 targets tick 18, beyond the input window (ticks 10..17)");
  EXPECT_EQ(window.counters().rejected, 1u);
  EXPECT_EQ(sequences_at(window, 17), (std::vector<uint32_t>{1}));
}

TEST(InputWindow, ARoomBehindItsScheduleTakesInputsAtTheWindowsLastTick) {
  InputWindow window(small_window());
  // Three ticks due but not stepped: targets 18..20 are on time by the schedule.
  for (uint64_t target : {18u, 20u}) {
    const InputOffer offer =
        window.offer(1, frame(target, {input(static_cast<uint32_t>(target))}), 10, 3, kAcceptAll);
    EXPECT_EQ(offer.error, ErrorCode::none) << target;
    EXPECT_EQ(offer.target_tick, 17u) << target;
  }
  EXPECT_EQ(window.counters().behind_schedule, 2u);
  EXPECT_EQ(window.offer(1, frame(21, {input(21)}), 10, 3, kAcceptAll).error,
            ErrorCode::input_rejected);
  EXPECT_EQ(sequences_at(window, 17), (std::vector<uint32_t>{18, 20}));
}

TEST(InputWindow, ARepeatFromAnotherFrameIsDroppedSilently) {
  InputWindow window(small_window());
  EXPECT_EQ(window.offer(1, frame(11, {input(100)}), 10, 0, kAcceptAll).accepted, 1u);
  // The same sequence again (a resend), even for another tick: dropped, no Error.
  const InputOffer resend = window.offer(1, frame(12, {input(100), input(101)}), 10, 0, kAcceptAll);
  EXPECT_EQ(resend.error, ErrorCode::none);
  EXPECT_EQ(resend.duplicates, 1u);
  EXPECT_EQ(resend.accepted, 1u);
  EXPECT_EQ(window.counters().duplicate, 1u);
  // Another player's sequence 100 is its own.
  EXPECT_EQ(window.offer(2, frame(12, {input(100)}), 10, 0, kAcceptAll).accepted, 1u);
  // Inputs of one frame may share a sequence: all are applied.
  EXPECT_EQ(window.offer(1, frame(13, {input(300), input(300)}), 10, 0, kAcceptAll).accepted, 2u);
  EXPECT_EQ(sequences_at(window, 11), (std::vector<uint32_t>{100}));
  EXPECT_EQ(sequences_at(window, 12), (std::vector<uint32_t>{101, 100}));
}

TEST(InputWindow, AReconnectKeepsItsSequencesAndANewcomerStartsAfresh) {
  InputWindow window(small_window());
  window.claim(1, "alice");
  EXPECT_EQ(window.offer(1, frame(11, {input(5)}), 10, 0, kAcceptAll).accepted, 1u);
  window.claim(1, "alice");  // the same client again: its resend is a repeat
  EXPECT_EQ(window.offer(1, frame(12, {input(5)}), 10, 0, kAcceptAll).duplicates, 1u);
  window.claim(1, "bob");  // another client took the id
  EXPECT_EQ(window.offer(1, frame(12, {input(5)}), 10, 0, kAcceptAll).accepted, 1u);
}

TEST(InputWindow, LateInputsCountAgainstTheCapOfTheTickTheyAreMovedTo) {
  InputWindow window(small_window());
  // Cap 3 per player per tick: two on time for tick 10; a late frame of two does not fit beside
  // them and goes to tick 11, a late one of one fills tick 10.
  EXPECT_EQ(window.offer(1, frame(10, {input(1), input(2)}), 10, 0, kAcceptAll).accepted, 2u);
  const InputOffer late = window.offer(1, frame(8, {input(3), input(4)}), 10, 0, kAcceptAll);
  EXPECT_EQ(late.error, ErrorCode::none);
  EXPECT_EQ(late.accepted, 2u);
  EXPECT_EQ(late.target_tick, 11u);
  EXPECT_EQ(window.offer(1, frame(9, {input(5)}), 10, 0, kAcceptAll).target_tick, 10u);
  // The other player has a cap of its own.
  EXPECT_EQ(window.offer(2, frame(10, {input(1), input(2), input(3)}), 10, 0, kAcceptAll).accepted,
            3u);
  EXPECT_EQ(sequences_at(window, 10), (std::vector<uint32_t>{1, 2, 5, 1, 2, 3}));
  EXPECT_EQ(sequences_at(window, 11), (std::vector<uint32_t>{3, 4}));
  EXPECT_EQ(window.counters().late, 3u);
  EXPECT_EQ(window.counters().rejected, 0u);
}

TEST(InputWindow, ABurstOfLateFramesSpreadsOverTheNextTicksInOrder) {
  InputWindow window(small_window());
  // A client stalled and then flushed five frames of two inputs, all for ticks already stepped.
  // Under the cap of 3, one frame fits a tick: the five go to ticks 10..14, in the order sent.
  for (uint32_t i = 0; i < 5; ++i) {
    const InputOffer offer = window.offer(
        1, frame(4 + i, {input(2 * i + 1), input(2 * i + 2)}, 20 + i), 10, 0, kAcceptAll);
    EXPECT_EQ(offer.error, ErrorCode::none) << offer.reason;
    EXPECT_EQ(offer.target_tick, 10u + i);
  }
  for (uint32_t i = 0; i < 5; ++i)
    EXPECT_EQ(sequences_at(window, 10 + i), (std::vector<uint32_t>{2 * i + 1, 2 * i + 2}));
  EXPECT_EQ(window.counters().late, 10u);
  EXPECT_EQ(window.counters().rejected, 0u);
}

TEST(InputWindow, OnTimeInputsOverTheCapAndALateFrameLargerThanTheCapAreRefused) {
  InputWindow window(small_window());
  // Stamped for tick 12 on time: held to tick 12's cap, never moved.
  const InputOffer on_time =
      window.offer(1, frame(12, {input(1), input(2), input(3), input(4)}), 10, 0, kAcceptAll);
  EXPECT_EQ(on_time.error, ErrorCode::input_rejected);
  EXPECT_EQ(on_time.accepted, 3u);
  EXPECT_EQ(on_time.reason,
            "1 of 4 inputs of InputFrame 7 rejected; first: more than 3 inputs for tick 12");
  // A late frame that no tick could hold whole is moved to the next tick and its excess refused.
  const InputOffer late =
      window.offer(1, frame(8, {input(5), input(6), input(7), input(8)}), 10, 0, kAcceptAll);
  EXPECT_EQ(late.target_tick, 10u);
  EXPECT_EQ(late.accepted, 3u);
  EXPECT_EQ(late.reason,
            "1 of 4 inputs of InputFrame 7 rejected; first: more than 3 inputs for tick 10");
  // When every tick of the window is full, a late frame is refused at the next tick.
  InputWindow full(small_window());
  for (uint64_t tick = 10; tick < 18; ++tick) {
    const uint32_t s = static_cast<uint32_t>(3 * tick);
    EXPECT_EQ(full.offer(1, frame(tick, {input(s), input(s + 1), input(s + 2)}), 10, 0, kAcceptAll)
                  .accepted,
              3u);
  }
  const InputOffer no_room = full.offer(1, frame(9, {input(1)}), 10, 0, kAcceptAll);
  EXPECT_EQ(no_room.accepted, 0u);
  EXPECT_EQ(no_room.reason,
            "1 of 1 inputs of InputFrame 7 rejected; first: more than 3 inputs for tick 10");
}

TEST(InputWindow, TheRoomsCheckRefusesSomeInputsOfAFrameAndNotOthers) {
  InputWindow window(small_window());
  const InputWindow::InputCheck odd_only = [](const Input& in) {
    return in.sequence % 2 == 1 ? std::string() : "body 1:0 is not owned by player 1";
  };
  const InputOffer offer =
      window.offer(1, frame(11, {input(1), input(2), input(3), input(4)}), 10, 0, odd_only);
  EXPECT_EQ(offer.error, ErrorCode::input_rejected);
  EXPECT_EQ(offer.accepted, 2u);
  EXPECT_EQ(offer.reason,
            "2 of 4 inputs of InputFrame 7 rejected; first: body 1:0 is not owned by player 1");
  EXPECT_EQ(sequences_at(window, 11), (std::vector<uint32_t>{1, 3}));
  // A refused input is not remembered: sent again and accepted, it is no repeat.
  EXPECT_EQ(window.offer(1, frame(12, {input(2)}), 10, 0, kAcceptAll).accepted, 1u);
}

TEST(InputWindow, ASlotHoldingAnOldTickIsReusedEmpty) {
  InputWindow window(small_window());
  // Tick 11's inputs are never taken (say the room stopped taking them); tick 19 maps to the
  // same slot and must not see them, nor inherit their count against the cap.
  EXPECT_EQ(window.offer(1, frame(11, {input(1), input(2), input(3)}), 10, 0, kAcceptAll).accepted,
            3u);
  EXPECT_EQ(window.offer(1, frame(19, {input(4), input(5), input(6)}), 12, 0, kAcceptAll).accepted,
            3u);
  EXPECT_TRUE(window.take(11).empty());
  EXPECT_EQ(sequences_at(window, 19), (std::vector<uint32_t>{4, 5, 6}));
}

TEST(InputWindow, APlayerIdWithoutAPlaceIsRefusedNotTrusted) {
  InputWindow window(small_window());
  for (uint32_t player : {0u, 3u, 1000u}) {
    const InputOffer offer = window.offer(player, frame(11, {input(1)}), 10, 0, kAcceptAll);
    EXPECT_EQ(offer.error, ErrorCode::input_rejected) << player;
    EXPECT_EQ(offer.accepted, 0u);
  }
  window.claim(0, "nobody");  // ignored
  window.claim(5, "nobody");
  EXPECT_TRUE(window.take(11).empty());
}

TEST(InputWindow, AnEmptyFrameIsAcceptedAndChangesNothing) {
  InputWindow window(small_window());
  const InputOffer offer = window.offer(1, frame(11, {}), 10, 0, kAcceptAll);
  EXPECT_EQ(offer.error, ErrorCode::none);
  EXPECT_EQ(offer.accepted, 0u);
  EXPECT_TRUE(window.take(11).empty());
}

}  // namespace
