// What the server does against hostile clients before and around a room (docs/security.md):
// join tokens (with the memory of used ones), connections per address, rooms created per
// address per minute, and the counters of every refusal. One per server, on its control thread.
// Per-connection budgets (frames/s, bytes/s, the Hello deadline) live in Session and are
// counted here from whatever thread the session runs on: those three counters are atomics.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "lockstep/auth/join_token.h"
#include "lockstep/auth/used_tokens.h"
#include "lockstep/server/config.h"
#include "lockstep/server/server.h"

namespace lockstep::server {

class Guard final {
 public:
  using Clock = std::chrono::steady_clock;
  /// Loads the token key when config names one; false and *error when it cannot be read.
  bool init(const ServerConfig& config, std::string* error);
  bool tokens_required() const { return key_.has_value(); }

  /// A connection from `address` (an IP, no port): false when that address has its
  /// max_connections_per_ip open already (counted).
  bool connection_opened(const std::string& address);
  void connection_closed(const std::string& address);

  /// Checks a Hello's token for `room`: none, or why not (counted per reason). On success the
  /// token is used up and *player holds the id it admits as (0 = any).
  auth::TokenError check_token(const std::string& token, const std::string& room, uint32_t* player);
  /// May `address` create a room now? false (counted) over max_rooms_per_ip_per_minute.
  bool may_create_room(const std::string& address, Clock::time_point now);
  void room_created(const std::string& address, Clock::time_point now);

  // Any thread.
  void count_frame_rate() { over_frame_rate_.fetch_add(1, std::memory_order_relaxed); }
  void count_byte_rate() { over_byte_rate_.fetch_add(1, std::memory_order_relaxed); }
  void count_resync_budget() { over_resync_budget_.fetch_add(1, std::memory_order_relaxed); }
  void count_hello_timeout() { hello_timeouts_.fetch_add(1, std::memory_order_relaxed); }
  /// On the control thread.
  AdmissionStats stats() const {
    AdmissionStats s = stats_;
    s.over_frame_rate = over_frame_rate_.load(std::memory_order_relaxed);
    s.over_byte_rate = over_byte_rate_.load(std::memory_order_relaxed);
    s.hello_timeouts = hello_timeouts_.load(std::memory_order_relaxed);
    s.over_resync_budget = over_resync_budget_.load(std::memory_order_relaxed);
    return s;
  }

 private:
  ServerConfig config_;
  std::optional<auth::Key> key_;
  std::unique_ptr<auth::UsedTokens> used_;
  std::map<std::string, uint32_t> connections_;                     // by address
  std::map<std::string, std::deque<Clock::time_point>> creations_;  // last minute's, by address
  AdmissionStats stats_;                                            // but for the four below
  std::atomic<uint64_t> over_frame_rate_{0}, over_byte_rate_{0}, hello_timeouts_{0},
      over_resync_budget_{0};
};

/// The address part of "address:port" (IPv6 too: the part before the last ':').
std::string address_of(const std::string& remote);

}  // namespace lockstep::server
