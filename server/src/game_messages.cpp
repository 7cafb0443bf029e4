// The size and rate checks of game messages (game_messages.h).
#include "game_messages.h"

#include <algorithm>

#include <fmt/format.h>

namespace lockstep::server {

GameMessageInbox::GameMessageInbox(const GameMessageLimits& limits)
    : limits_(limits), buckets_(limits.max_players) {
  pending_.reserve(std::min<uint32_t>(limits.max_pending, 64));
}

GameMessageVerdict GameMessageInbox::offer(uint32_t player, uint64_t last_tick,
                                           std::span<const uint8_t> data, std::string* reason) {
  if (player < 1 || player > buckets_.size()) {
    *reason = player == 0 ? "spectators cannot send game messages"
                          : fmt::format("player {} is not a player of this room", player);
    return GameMessageVerdict::bad_player;
  }
  if (data.empty()) {
    *reason = "an empty game message";
    return GameMessageVerdict::empty;
  }
  if (data.size() > limits_.max_bytes) {
    *reason = fmt::format("game message of {} bytes refused: the room takes at most {} bytes",
                          data.size(), limits_.max_bytes);
    return GameMessageVerdict::oversize;
  }
  if (pending_.size() >= limits_.max_pending) {
    *reason = fmt::format("game message refused: {} messages already wait for tick {}",
                          pending_.size(), last_tick + 1);
    return GameMessageVerdict::over_rate;
  }
  if (limits_.max_per_s != 0) {
    // Units of 1/tick_rate_hz of a message (see the top of game_messages.h).
    const uint64_t cost = limits_.tick_rate_hz;
    const uint64_t capacity = uint64_t{limits_.max_per_s} * cost;
    Bucket& bucket = buckets_[player - 1];
    if (!bucket.used) {
      bucket = Bucket{capacity, last_tick, true};
    } else if (last_tick > bucket.last_tick) {
      const uint64_t ticks = last_tick - bucket.last_tick;
      const uint64_t refill = ticks >= capacity ? capacity : ticks * limits_.max_per_s;
      bucket.units = std::min(capacity, bucket.units + refill);
      bucket.last_tick = last_tick;
    }
    if (bucket.units < cost) {
      *reason = fmt::format("game message refused: over {} messages per second", limits_.max_per_s);
      return GameMessageVerdict::over_rate;
    }
    bucket.units -= cost;
  }
  pending_.push_back(PendingGameMessage{player, std::vector<uint8_t>(data.begin(), data.end())});
  return GameMessageVerdict::accepted;
}

const char* game_message_verdict_name(GameMessageVerdict verdict) {
  switch (verdict) {
    case GameMessageVerdict::accepted:
      return "accepted";
    case GameMessageVerdict::empty:
      return "empty";
    case GameMessageVerdict::oversize:
      return "oversize";
    case GameMessageVerdict::over_rate:
      return "over_rate";
    case GameMessageVerdict::bad_player:
      return "bad_player";
  }
  return "?";
}

}  // namespace lockstep::server
