// Where within the tick period each room of one worker ticks, so that their ticks spread over
// the period instead of falling due together.
//
// Every room of a server ticks at the same rate, so each room's schedule has a phase: when in
// the period its ticks fall due. A room's schedule begins at its first join, and rooms whose
// first joins came close together (a burst of matches starting, a fleet restarting) would tick in
// step: all their ticks due at one instant, the last of them started a whole queue of steps late
// although the worker is idle most of the period. A worker keeps a count of its rooms per slot of
// the period (kSlots of them), and a room that starts ticking takes the emptiest slot: its tick 0
// is then put up to one period in the past (it is the scene as built, there is nothing to run),
// so its tick 1 falls due in that slot. Rooms of one slot share its phase to the nanosecond, so
// their timers fall due together and one wake of the thread runs them all, one after another:
// fewer wake-ups than a phase per room, and a slot's few rooms wait at most for each other. Nothing else changes: the schedule is as absolute as
// before, a Welcome says exactly where in it the room is, and clients follow it as they do any
// schedule.
//
// Pure logic, time passed in (tests/server_tick_phases_test.cpp); one per worker, used only on
// that worker's thread.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>

namespace lockstep::server {

class TickPhases final {
 public:
  using Clock = std::chrono::steady_clock;
  /// Slots per period: at 60 Hz, 32 slots are 0.52 ms each. Fewer, wider slots share more wakes
  /// but make a slot's last room wait longer for the others (a slot of 16 at 60 Hz held 7 or 8
  /// of 120 rooms and their clients' inputs, over a millisecond of work).
  static constexpr uint32_t kSlots = 32;

  /// Phases are counted from `origin` (any fixed instant; the clock's epoch by default).
  explicit TickPhases(uint32_t tick_rate_hz, Clock::time_point origin = Clock::time_point{});

  /// The start (tick 0's due time) of a schedule that begins at `now`: in (now − period, now],
  /// with tick 1 due in the slot that has the fewest rooms (ties: the first one due from now on).
  /// Counts the room in that slot.
  Clock::time_point place(Clock::time_point now);
  /// A room stopped, or its schedule moved (then `add` its new start): forgets a schedule
  /// started at `start` (a count of that slot, never below 0).
  void remove(Clock::time_point start);
  /// Counts a schedule started at `start` in its slot.
  void add(Clock::time_point start);

  /// Rooms counted in `slot` (< kSlots).
  uint32_t rooms_in_slot(uint32_t slot) const { return rooms_[slot]; }
  /// The slot a schedule started at `start` ticks in.
  uint32_t slot_of(Clock::time_point start) const;

 private:
  /// Where in the period `t` lies, in 1/rate ns: [0, 1e9).
  int64_t scaled_phase(Clock::time_point t) const;

  uint32_t rate_;
  Clock::time_point origin_;
  std::array<uint32_t, kSlots> rooms_{};
};

}  // namespace lockstep::server
