// A room's input window: which tick an incoming InputFrame lands in, whether it is late, ahead or
// a repeat, and the fixed-capacity slots that hold the inputs until their tick is stepped.
//
// Pure logic, like TickClock: the room passes in where it stands (the next tick it will step and
// how many ticks its schedule is ahead of it) and a check of each input against its world, so
// every case is testable without sockets or a world (tests/server_input_window_test.cpp).
//
// Slots: a ring of window_ticks slots (slot = target tick mod window), each holding up to
// max_players × max_inputs_per_player_per_tick inputs, all taken at construction; nothing grows
// per tick. A slot still marked with a tick already stepped is reused by the next target that maps
// to it.
//
// An InputFrame whose target_tick is t, when the room's next tick is n (docs/protocol.md, Inputs):
//   t < n                    late: refused under drop (input_late); under apply_next_tick,
//                            applied at the first tick from n on where the player has room for
//                            the whole frame under its cap (n itself unless a burst of late
//                            frames filled it), so frames late together are not refused;
//   n ≤ t < n + window       taken as stamped;
//   n + window ≤ t < n + window + backlog
//                            the room is behind its schedule and the client's clock is not:
//                            applied at the window's last tick, n + window − 1;
//   beyond                   refused (input_rejected).
// Then each input: a repeat of a sequence the player had accepted from an earlier frame is
// dropped silently (input_dedup.h); one the room's check refuses, one over the per-player cap of
// its tick, or one that does not fit the slot is refused. A late input counts against the cap of
// the tick it is moved to, like any other input for that tick; a frame larger than the cap by
// itself is moved to n and its excess refused.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "input_dedup.h"
#include "lockstep/schema/messages.h"
#include "lockstep/server/config.h"
#include "lockstep/sim/types.h"

namespace lockstep::server {

struct InputWindowConfig {
  uint32_t window_ticks = 64;                    // ≥ 1
  uint32_t max_players = 4;                      // player ids 1..max_players
  uint32_t max_inputs_per_player_per_tick = 16;  // ≥ 1
  LateInputPolicy late_policy = LateInputPolicy::apply_next_tick;
  uint32_t dedup_entries_per_player = 1024;  // InputDedup
  uint64_t dedup_memory_ticks = 600;         // InputDedup
};

struct InputWindowCounters {
  uint64_t late = 0;             // inputs of frames stamped for a tick already stepped
  uint64_t late_dropped = 0;     // of those, refused under the drop policy
  uint64_t behind_schedule = 0;  // moved to the window's last tick (the room is behind)
  uint64_t duplicate = 0;        // repeats dropped without an Error
  uint64_t rejected = 0;         // refused here (window, check, caps), input_late not included
};

/// What became of one InputFrame.
struct InputOffer {
  /// none, or the Error the sender gets (input_late or input_rejected) with its reason.
  schema::ErrorCode error = schema::ErrorCode::none;
  std::string reason;
  uint64_t target_tick = 0;  // the tick its inputs were put in (0 when the frame was refused)
  uint32_t accepted = 0;
  uint32_t duplicates = 0;
  uint32_t rejected = 0;
};

class InputWindow final {
 public:
  /// Checks one input of a player against the room's world: empty when it may be buffered,
  /// else why not.
  using InputCheck = std::function<std::string(const sim::Input& input)>;

  explicit InputWindow(const InputWindowConfig& config);

  /// Takes player `player`'s (1..max_players) frame when the room's next tick is `next_tick` and
  /// its schedule is `backlog_ticks` ahead of it. An input naming player 0 is the sender's.
  InputOffer offer(uint32_t player, const schema::InputFrame& frame, uint64_t next_tick,
                   uint64_t backlog_ticks, const InputCheck& check);

  /// The inputs buffered for `tick`, in arrival order, and the slot freed; valid until the next
  /// offer(). Call it once per tick, in tick order.
  std::span<const sim::Input> take(uint64_t tick);

  /// Client `client` now holds player id `player`: a client other than the last holder starts
  /// with no remembered sequences (its sequences are its own); the same one keeps them.
  void claim(uint32_t player, const std::string& client);

  uint32_t window_ticks() const { return config_.window_ticks; }
  /// Inputs one tick holds at most (every player at its cap).
  uint32_t slot_capacity() const { return slot_capacity_; }
  const InputWindowCounters& counters() const { return counters_; }

 private:
  struct TickSlot {
    uint64_t tick = 0;   // the target tick whose inputs the slot holds (0 = none yet)
    uint32_t count = 0;  // inputs held
  };

  /// The slot of `tick`, emptied first when it still holds an older tick.
  size_t open_slot(uint64_t tick);
  /// Inputs `player` has buffered for `tick`.
  uint32_t player_count(uint32_t player, uint64_t tick) const;
  /// The first tick in [from, end) where `player` has room for `inputs` more, else `from`.
  uint64_t first_tick_with_room(uint32_t player, uint64_t from, uint64_t end,
                                uint64_t inputs) const;

  InputWindowConfig config_;
  uint32_t slot_capacity_ = 0;
  std::vector<TickSlot> slots_;
  std::vector<sim::Input> slot_inputs_;       // window × slot_capacity_
  std::vector<uint16_t> slot_player_counts_;  // window × max_players
  InputDedup dedup_;
  std::vector<std::string> dedup_owner_;  // [player − 1]: the client that last held the id
  uint64_t frames_seen_ = 0;              // the frame ids InputDedup tells frames apart by
  InputWindowCounters counters_;
};

}  // namespace lockstep::server
