// The server's memory of tokens already used: a token joins once. Bounded: at most `capacity`
// unexpired ids are held (expired ones are dropped as time passes); when full, a new token is
// refused (store_full) rather than an old one forgotten, which would let it be replayed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <utility>

#include "lockstep/auth/join_token.h"

namespace lockstep::auth {

class UsedTokens final {
 public:
  explicit UsedTokens(size_t capacity) : capacity_(capacity) {}
  /// Records a token's first use: none, replayed (seen before) or store_full.
  TokenError use(const TokenId& id, uint64_t expires_unix_s, uint64_t now_unix_s);
  size_t size() const { return ids_.size(); }

 private:
  void drop_expired(uint64_t now_unix_s);
  size_t capacity_;
  std::set<TokenId> ids_;
  std::multimap<uint64_t, TokenId> by_expiry_;
};

}  // namespace lockstep::auth
