#include "input_dedup.h"

namespace lockstep::server {

InputDedup::InputDedup(uint32_t players, uint32_t entries_per_player, uint64_t memory_ticks)
    : entries_per_player_(entries_per_player > 0 ? entries_per_player : 1),
      memory_ticks_(memory_ticks),
      entries_(static_cast<std::size_t>(players) * entries_per_player_),
      next_(players, 0) {}

bool InputDedup::is_repeat(uint32_t player, uint32_t sequence, uint64_t now_tick,
                           uint64_t frame_id) const {
  if (player == 0 || player > next_.size()) return false;
  // A linear scan: a few hundred entries of 24 bytes, cheaper than a hash map's upkeep here.
  const Entry* e = &entries_[static_cast<std::size_t>(player - 1) * entries_per_player_];
  for (uint32_t i = 0; i < entries_per_player_; ++i) {
    if (e[i].frame_id != 0 && e[i].sequence == sequence && e[i].frame_id != frame_id &&
        e[i].tick + memory_ticks_ > now_tick)
      return true;
  }
  return false;
}

void InputDedup::remember(uint32_t player, uint32_t sequence, uint64_t now_tick,
                          uint64_t frame_id) {
  if (player == 0 || player > next_.size()) return;
  uint32_t& next = next_[player - 1];
  entries_[static_cast<std::size_t>(player - 1) * entries_per_player_ + next] = {now_tick, frame_id,
                                                                                 sequence};
  next = (next + 1) % entries_per_player_;
}

void InputDedup::forget(uint32_t player) {
  if (player == 0 || player > next_.size()) return;
  Entry* e = &entries_[static_cast<std::size_t>(player - 1) * entries_per_player_];
  for (uint32_t i = 0; i < entries_per_player_; ++i)
    e[i] = Entry{};
  next_[player - 1] = 0;
}

}  // namespace lockstep::server
