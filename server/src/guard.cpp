#include "guard.h"

#include <spdlog/spdlog.h>

namespace lockstep::server {

static_assert(kTokenRefusalReasons == auth::kTokenErrorCount);

bool Guard::init(const ServerConfig& config, std::string* error) {
  config_ = config;
  used_ = std::make_unique<auth::UsedTokens>(config.used_token_capacity);
  if (config.token_key_file.empty()) {
    spdlog::warn(
        "no --token-key-file: the server is open, anyone who reaches the port may join any room "
        "and create rooms (docs/security.md)");
    return true;
  }
  auth::Key key{};
  if (!auth::load_key_file(config.token_key_file, &key, error)) return false;
  key_ = key;
  spdlog::info("join tokens required (key from {})", config.token_key_file);
  return true;
}

bool Guard::connection_opened(const std::string& address) {
  uint32_t& open = connections_[address];
  if (config_.max_connections_per_ip != 0 && open >= config_.max_connections_per_ip) {
    if (open == 0) connections_.erase(address);
    ++stats_.refused_per_ip_connections;
    return false;
  }
  ++open;
  return true;
}

void Guard::connection_closed(const std::string& address) {
  auto it = connections_.find(address);
  if (it == connections_.end()) return;
  if (--it->second == 0) connections_.erase(it);
}

auth::TokenError Guard::check_token(const std::string& token, const std::string& room,
                                    uint32_t* player) {
  *player = 0;
  if (!key_) return auth::TokenError::none;
  const uint64_t now = auth::unix_now_s();
  auth::JoinClaims claims;
  auth::TokenError e = auth::verify_token(*key_, token, room, now, &claims);
  if (e == auth::TokenError::none && claims.expires_unix_s > now + config_.max_token_ttl_s)
    e = auth::TokenError::too_long_lived;
  if (e == auth::TokenError::none) e = used_->use(claims.id, claims.expires_unix_s, now);
  ++stats_.token_refusals[static_cast<size_t>(e)];  // [none] counts the tokens accepted
  if (e == auth::TokenError::none) *player = claims.player.value_or(0);
  return e;
}

bool Guard::may_create_room(const std::string& address, Clock::time_point now) {
  if (config_.max_rooms_per_ip_per_minute == 0) return true;
  auto it = creations_.find(address);
  if (it == creations_.end()) return true;
  std::deque<Clock::time_point>& times = it->second;
  while (!times.empty() && now - times.front() >= std::chrono::minutes(1))
    times.pop_front();
  if (times.empty()) {
    creations_.erase(it);
    return true;
  }
  if (times.size() >= config_.max_rooms_per_ip_per_minute) {
    ++stats_.refused_room_rate;
    return false;
  }
  return true;
}

void Guard::room_created(const std::string& address, Clock::time_point now) {
  if (config_.max_rooms_per_ip_per_minute == 0) return;
  creations_[address].push_back(now);
}

std::string address_of(const std::string& remote) {
  const size_t colon = remote.rfind(':');
  return colon == std::string::npos ? remote : remote.substr(0, colon);
}

}  // namespace lockstep::server
