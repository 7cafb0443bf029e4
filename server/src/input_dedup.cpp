#include "input_dedup.h"

#include <algorithm>

namespace lockstep::server {

namespace {

constexpr uint32_t kMaxEntries = 32767;  // ring slots fit a uint16_t below kNoSlot

uint32_t table_size_for(uint32_t entries) {
  uint32_t size = 2;
  while (size < 2 * entries)
    size *= 2;
  return size;
}

}  // namespace

InputDedup::InputDedup(uint32_t players, uint32_t entries_per_player, uint64_t memory_ticks)
    : entries_per_player_(std::clamp<uint32_t>(entries_per_player, 1, kMaxEntries)),
      table_size_(table_size_for(entries_per_player_)),
      memory_ticks_(memory_ticks),
      entries_(static_cast<std::size_t>(players) * entries_per_player_),
      table_(static_cast<std::size_t>(players) * table_size_, kNoSlot),
      next_(players, 0) {}

uint32_t InputDedup::home(uint32_t sequence) const {
  // Fibonacci hashing: consecutive sequences (the usual case) land far apart.
  return static_cast<uint32_t>((uint64_t{sequence} * 0x9E3779B97F4A7C15ull) >> 32) &
         (table_size_ - 1);
}

bool InputDedup::is_repeat(uint32_t player, uint32_t sequence, uint64_t now_tick,
                           uint64_t frame_id) const {
  if (player == 0 || player > next_.size()) return false;
  const Entry* ring = &entries_[static_cast<std::size_t>(player - 1) * entries_per_player_];
  const uint16_t* table = &table_[static_cast<std::size_t>(player - 1) * table_size_];
  // Every remembered entry of this sequence sits in the probe run from its home slot to the
  // first free slot (there is always one: the table is at most half full).
  for (uint32_t i = home(sequence);; i = (i + 1) & (table_size_ - 1)) {
    const uint16_t slot = table[i];
    if (slot == kNoSlot) return false;
    const Entry& e = ring[slot];
    if (e.sequence == sequence && e.frame_id != frame_id && e.tick + memory_ticks_ > now_tick)
      return true;
  }
}

void InputDedup::unindex(uint32_t player, uint16_t ring_slot) {
  const Entry* ring = &entries_[static_cast<std::size_t>(player - 1) * entries_per_player_];
  uint16_t* table = &table_[static_cast<std::size_t>(player - 1) * table_size_];
  const uint32_t mask = table_size_ - 1;
  uint32_t hole = home(ring[ring_slot].sequence);
  while (table[hole] != ring_slot)
    hole = (hole + 1) & mask;
  // Backward-shift deletion: pull later members of the run into the hole when the hole lies
  // on their probe path (between their home and where they sit), so no lookup meets a gap.
  for (uint32_t j = (hole + 1) & mask; table[j] != kNoSlot; j = (j + 1) & mask) {
    const uint32_t h = home(ring[table[j]].sequence);
    const bool on_path = hole <= j ? (h <= hole || h > j) : (h <= hole && h > j);
    if (on_path) {
      table[hole] = table[j];
      hole = j;
    }
  }
  table[hole] = kNoSlot;
}

void InputDedup::remember(uint32_t player, uint32_t sequence, uint64_t now_tick,
                          uint64_t frame_id) {
  if (player == 0 || player > next_.size() || frame_id == 0) return;
  uint32_t& next = next_[player - 1];
  Entry& e = entries_[static_cast<std::size_t>(player - 1) * entries_per_player_ + next];
  if (e.frame_id != 0) unindex(player, static_cast<uint16_t>(next));
  e = Entry{now_tick, frame_id, sequence};
  uint16_t* table = &table_[static_cast<std::size_t>(player - 1) * table_size_];
  uint32_t i = home(sequence);
  while (table[i] != kNoSlot)
    i = (i + 1) & (table_size_ - 1);
  table[i] = static_cast<uint16_t>(next);
  next = (next + 1) % entries_per_player_;
}

void InputDedup::forget(uint32_t player) {
  if (player == 0 || player > next_.size()) return;
  Entry* e = &entries_[static_cast<std::size_t>(player - 1) * entries_per_player_];
  for (uint32_t i = 0; i < entries_per_player_; ++i)
    e[i] = Entry{};
  uint16_t* table = &table_[static_cast<std::size_t>(player - 1) * table_size_];
  std::fill(table, table + table_size_, kNoSlot);
  next_[player - 1] = 0;
}

}  // namespace lockstep::server
