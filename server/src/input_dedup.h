// Idempotent inputs: (player, PlayerInput.sequence) names an input. A room remembers, per player
// id, the sequences it accepted in the last `memory_ticks` ticks (a ring of fixed size, taken at
// creation); an input whose sequence was already accepted from another InputFrame of that player
// is a repeat (a resend, perhaps after a reconnect) and is dropped, so it is applied once.
// Inputs of one frame may share a sequence (they were sent once, together): only a repeat across
// frames is dropped. docs/protocol.md, "Repeated inputs".
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace lockstep::server {

class InputDedup final {
 public:
  /// `entries_per_player` sequences per player id, each remembered for `memory_ticks` ticks
  /// (or until the ring wraps, when a player sends more than that many inputs in the span).
  InputDedup(uint32_t players, uint32_t entries_per_player, uint64_t memory_ticks);

  /// True when player `player` (1-based) had `sequence` accepted from a frame other than
  /// `frame_id` within memory_ticks of `now_tick`.
  bool is_repeat(uint32_t player, uint32_t sequence, uint64_t now_tick, uint64_t frame_id) const;
  /// Remembers an accepted input.
  void remember(uint32_t player, uint32_t sequence, uint64_t now_tick, uint64_t frame_id);
  /// Forgets a player id's sequences (another client took the id).
  void forget(uint32_t player);

 private:
  struct Entry {
    uint64_t tick = 0;
    uint64_t frame_id = 0;  // 0 = empty
    uint32_t sequence = 0;
  };
  uint32_t entries_per_player_;
  uint64_t memory_ticks_;
  std::vector<Entry> entries_;  // players × entries_per_player_
  std::vector<uint32_t> next_;  // per player: the ring's next slot
};

}  // namespace lockstep::server
