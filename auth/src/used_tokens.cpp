#include "lockstep/auth/used_tokens.h"

namespace lockstep::auth {

void UsedTokens::drop_expired(uint64_t now_unix_s) {
  while (!by_expiry_.empty() && by_expiry_.begin()->first < now_unix_s) {
    ids_.erase(by_expiry_.begin()->second);
    by_expiry_.erase(by_expiry_.begin());
  }
}

TokenError UsedTokens::use(const TokenId& id, uint64_t expires_unix_s, uint64_t now_unix_s) {
  drop_expired(now_unix_s);
  if (ids_.count(id) != 0) return TokenError::replayed;
  if (ids_.size() >= capacity_) return TokenError::store_full;
  ids_.insert(id);
  by_expiry_.emplace(expires_unix_s, id);
  return TokenError::none;
}

}  // namespace lockstep::auth
