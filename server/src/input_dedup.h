// Idempotent inputs: (player, PlayerInput.sequence) names an input. A room remembers, per player
// id, the sequences it accepted in the last `memory_ticks` ticks (a ring of fixed size, taken at
// creation); an input whose sequence was already accepted from another InputFrame of that player
// is a repeat (a resend, perhaps after a reconnect) and is dropped, so it is applied once.
// Inputs of one frame may share a sequence (they were sent once, together): only a repeat across
// frames is dropped. docs/protocol.md, "Repeated inputs".
//
// Each player's ring is indexed by an open-addressing table of ring slots keyed by sequence
// (twice the ring's size, linear probing, backward-shift deletion when the ring overwrites an
// entry), so a lookup reads a few slots instead of the whole ring: with 1,024 entries a player
// the linear scan it replaces read 24 KB per input, a tenth of a loaded server's time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace lockstep::server {

class InputDedup final {
 public:
  /// `entries_per_player` sequences per player id (at most 32,767), each remembered for
  /// `memory_ticks` ticks (or until the ring wraps, when a player sends more than that many
  /// inputs in the span).
  InputDedup(uint32_t players, uint32_t entries_per_player, uint64_t memory_ticks);

  /// True when player `player` (1-based) had `sequence` accepted from a frame other than
  /// `frame_id` within memory_ticks of `now_tick`.
  bool is_repeat(uint32_t player, uint32_t sequence, uint64_t now_tick, uint64_t frame_id) const;
  /// Remembers an accepted input (`frame_id` ≥ 1: 0 marks an empty entry and is ignored).
  void remember(uint32_t player, uint32_t sequence, uint64_t now_tick, uint64_t frame_id);
  /// Forgets a player id's sequences (another client took the id).
  void forget(uint32_t player);

 private:
  struct Entry {
    uint64_t tick = 0;
    uint64_t frame_id = 0;  // 0 = empty
    uint32_t sequence = 0;
  };
  static constexpr uint16_t kNoSlot = 0xffff;

  uint32_t home(uint32_t sequence) const;  // the sequence's first table slot
  void unindex(uint32_t player, uint16_t ring_slot);

  uint32_t entries_per_player_;
  uint32_t table_size_;  // per player: a power of two ≥ 2 × entries_per_player_
  uint64_t memory_ticks_;
  std::vector<Entry> entries_;   // players × entries_per_player_
  std::vector<uint16_t> table_;  // players × table_size_: ring slots, kNoSlot = free
  std::vector<uint32_t> next_;   // per player: the ring's next slot
};

}  // namespace lockstep::server
