// InputWindow: the window policy, repeats and the slots of a room's future ticks.
#include "input_window.h"

#include <algorithm>

#include <fmt/format.h>

namespace lockstep::server {

InputWindow::InputWindow(const InputWindowConfig& config)
    : config_(config),
      slot_capacity_(config.max_players * config.max_inputs_per_player_per_tick),
      slots_(config.window_ticks),
      slot_inputs_(size_t{config.window_ticks} * slot_capacity_),
      slot_player_counts_(size_t{config.window_ticks} * config.max_players),
      dedup_(config.max_players, config.dedup_entries_per_player, config.dedup_memory_ticks),
      dedup_owner_(config.max_players) {}

void InputWindow::claim(uint32_t player, const std::string& client) {
  if (player < 1 || player > config_.max_players) return;
  if (dedup_owner_[player - 1] == client) return;
  dedup_.forget(player);
  dedup_owner_[player - 1] = client;
}

size_t InputWindow::open_slot(uint64_t tick) {
  const size_t index = static_cast<size_t>(tick % config_.window_ticks);
  TickSlot& slot = slots_[index];
  if (slot.tick != tick) {  // the slot last held a tick already stepped
    slot.tick = tick;
    slot.count = 0;
    const size_t players = config_.max_players;
    std::fill_n(slot_player_counts_.begin() + static_cast<std::ptrdiff_t>(index * players), players,
                uint16_t{0});
  }
  return index;
}

uint32_t InputWindow::player_count(uint32_t player, uint64_t tick) const {
  const size_t index = static_cast<size_t>(tick % config_.window_ticks);
  if (slots_[index].tick != tick) return 0;  // the slot is free or holds an older tick
  return slot_player_counts_[index * config_.max_players + (player - 1)];
}

uint64_t InputWindow::first_tick_with_room(uint32_t player, uint64_t from, uint64_t end,
                                           uint64_t inputs) const {
  for (uint64_t tick = from; tick < end; ++tick) {
    if (player_count(player, tick) + inputs <= config_.max_inputs_per_player_per_tick) return tick;
  }
  return from;  // no tick has room: the inputs over the cap are refused at `from`
}

InputOffer InputWindow::offer(uint32_t player, const schema::InputFrame& frame, uint64_t next_tick,
                              uint64_t backlog_ticks, const InputCheck& check) {
  InputOffer result;
  const uint64_t count = frame.inputs.size();
  if (player < 1 || player > config_.max_players) {
    counters_.rejected += count;
    result.error = schema::ErrorCode::input_rejected;
    result.reason = fmt::format("player {} has no place in this room", player);
    result.rejected = static_cast<uint32_t>(count);
    return result;
  }
  const uint64_t window = config_.window_ticks;
  uint64_t target = frame.target_tick;
  if (target < next_tick) {
    counters_.late += count;
    if (config_.late_policy == LateInputPolicy::drop) {
      counters_.late_dropped += count;
      result.error = schema::ErrorCode::input_late;
      result.reason =
          fmt::format("InputFrame {} for tick {} arrived when tick {} was next: dropped",
                      frame.sequence, frame.target_tick, next_tick);
      result.rejected = static_cast<uint32_t>(count);
      return result;
    }
    // Frames that were late together (a burst after a stall, a queue flushed at once) would all
    // land on one tick and go over its cap: each goes to the first tick from next_tick on where
    // this player still has room for the whole frame, so an honest client loses none of them.
    target = first_tick_with_room(player, next_tick, next_tick + window, count);
  }
  if (target >= next_tick + window && target < next_tick + window + backlog_ticks) {
    // The client's clock follows the schedule; this room is behind it (ticks due but not run:
    // an overloaded machine). The input is on time by the schedule, so it is applied at the
    // latest tick the window holds instead of being refused.
    counters_.behind_schedule += count;
    target = next_tick + window - 1;
  }
  if (target >= next_tick + window) {
    counters_.rejected += count;
    result.error = schema::ErrorCode::input_rejected;
    result.reason =
        fmt::format("InputFrame {} targets tick {}, beyond the input window (ticks {}..{})",
                    frame.sequence, target, next_tick, next_tick + window - 1);
    result.rejected = static_cast<uint32_t>(count);
    return result;
  }
  result.target_tick = target;
  const size_t slot_index = open_slot(target);
  TickSlot& slot = slots_[slot_index];
  uint16_t& player_count = slot_player_counts_[slot_index * config_.max_players + (player - 1)];
  sim::Input* slot_inputs = &slot_inputs_[slot_index * slot_capacity_];
  std::string first_reason;
  const uint64_t frame_id = ++frames_seen_;
  for (sim::Input input : frame.inputs) {
    if (input.player == 0) input.player = player;  // the server knows who sent it
    if (dedup_.is_repeat(player, input.sequence, next_tick, frame_id)) {
      ++result.duplicates;  // already accepted once: dropped without an Error (a resend)
      continue;
    }
    std::string why = check(input);
    if (why.empty() && player_count >= config_.max_inputs_per_player_per_tick) {
      why = fmt::format("more than {} inputs for tick {}", config_.max_inputs_per_player_per_tick,
                        target);
    }
    if (why.empty() && slot.count >= slot_capacity_) why = "the tick's input buffer is full";
    if (!why.empty()) {
      if (result.rejected++ == 0) first_reason = std::move(why);
      continue;
    }
    slot_inputs[slot.count++] = input;
    ++player_count;
    ++result.accepted;
    dedup_.remember(player, input.sequence, next_tick, frame_id);
  }
  counters_.duplicate += result.duplicates;
  if (result.rejected > 0) {
    counters_.rejected += result.rejected;
    result.error = schema::ErrorCode::input_rejected;
    result.reason = fmt::format("{} of {} inputs of InputFrame {} rejected; first: {}",
                                result.rejected, count, frame.sequence, first_reason);
  }
  return result;
}

std::span<const sim::Input> InputWindow::take(uint64_t tick) {
  const size_t index = static_cast<size_t>(tick % config_.window_ticks);
  TickSlot& slot = slots_[index];
  if (slot.tick != tick) return {};
  const std::span<const sim::Input> inputs(&slot_inputs_[index * slot_capacity_], slot.count);
  slot.tick = 0;
  slot.count = 0;
  return inputs;
}

}  // namespace lockstep::server
