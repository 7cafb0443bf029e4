// A room's game messages: the small messages clients send for the rules ("ready", a chat line),
// checked against the size and rate limits and held until the rules see them.
//
// Pure logic, like the input window: the room passes in the tick it last stepped, so every case
// is testable without sockets or a world (tests/server_game_messages_test.cpp).
//
// Rate: a token bucket per player counted in ticks, so the same arrival ticks give the same
// verdicts on any machine. The bucket holds max_per_s messages (one second deep) and refills
// max_per_s messages per tick_rate_hz ticks, kept in integer units of 1/tick_rate_hz of a
// message (one message costs tick_rate_hz units, a tick adds max_per_s units): nothing is
// rounded. A player's first message finds the bucket full; a player who leaves and joins again
// keeps its bucket (reconnecting does not refill it).
//
// Delivery: the accepted messages wait in arrival order; after the room's next step the rules
// see them (RoomRules::on_message) and the match recording records them, both at that tick.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace lockstep::server {

struct GameMessageLimits {
  uint32_t max_bytes = 256;  // bytes per message (1..schema::kMaxGameMessageBytes)
  uint32_t max_per_s = 10;   // messages per second per player; 0 = no limit
  uint32_t tick_rate_hz = 60;
  uint32_t max_players = 4;     // player ids 1..max_players
  uint32_t max_pending = 1024;  // messages waiting for one tick, all players together
};

enum class GameMessageVerdict : uint8_t { accepted, empty, oversize, over_rate, bad_player };

/// One accepted message: who sent it and its bytes.
struct PendingGameMessage {
  uint32_t player = 0;
  std::vector<uint8_t> data;
};

class GameMessageInbox final {
 public:
  explicit GameMessageInbox(const GameMessageLimits& limits);

  /// A message from `player` arriving after the room stepped tick `last_tick`. Accepted ones
  /// wait for the next tick; otherwise *reason says why (one line, for the client's Error).
  GameMessageVerdict offer(uint32_t player, uint64_t last_tick, std::span<const uint8_t> data,
                           std::string* reason);
  /// The messages waiting, in arrival order.
  std::span<const PendingGameMessage> pending() const { return pending_; }
  /// Empties the waiting list (after the rules and the recording have seen it).
  void clear() { pending_.clear(); }
  const GameMessageLimits& limits() const { return limits_; }

 private:
  struct Bucket {
    uint64_t units = 0;
    uint64_t last_tick = 0;
    bool used = false;
  };
  GameMessageLimits limits_;
  std::vector<Bucket> buckets_;  // [player − 1]
  std::vector<PendingGameMessage> pending_;
};

const char* game_message_verdict_name(GameMessageVerdict verdict);

}  // namespace lockstep::server
