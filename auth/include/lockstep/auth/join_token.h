// Join tokens: what a game's backend gives a player so that a server lets it into one room.
//
// A token is a compact binary record, signed with a key the backend shares with the servers
// (libsodium crypto_auth: HMAC-SHA512-256, 32-byte tag) and written as base64url text without
// padding. Layout (little-endian), then the tag over all of it:
//   u8 version (1) · u8 flags (bit 0: any player) · u16 player · u64 expiry (Unix s) ·
//   16-byte id (random: tells tokens apart for the replay check) · u8 room length · room ·
//   u16 user-data length · user data (≤ 256 bytes, opaque to the server)
// The user data is signed, not secret: anyone holding the token can read it (`inspect`).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace lockstep::auth {

inline constexpr uint8_t kTokenVersion = 1;
inline constexpr size_t kKeyBytes = 32;
inline constexpr size_t kTokenIdBytes = 16;
inline constexpr size_t kMaxRoomBytes = 64;
inline constexpr size_t kMaxUserDataBytes = 256;

using Key = std::array<uint8_t, kKeyBytes>;
using TokenId = std::array<uint8_t, kTokenIdBytes>;

struct JoinClaims {
  std::string room;
  std::optional<uint32_t> player;  // a player id (1..65535), or any free one
  uint64_t expires_unix_s = 0;
  TokenId id{};  // mint_token fills it with random bytes
  std::string user_data;
};

/// A fresh random key.
Key generate_key();
/// Reads a key file: 64 hex digits (surrounding whitespace ignored). False and *error otherwise.
bool load_key_file(const std::string& path, Key* out, std::string* error);
/// The key as 64 hex digits (what load_key_file reads).
std::string key_to_hex(const Key& key);

/// Signs `claims` (with a fresh random id) into token text; "" and *error when a field is over
/// its limit (room, user data, player 0).
std::string mint_token(const Key& key, const JoinClaims& claims, std::string* error);

enum class TokenError : uint8_t {
  none = 0,
  missing,        // no token at all
  malformed,      // not base64url, wrong length or layout, unknown version
  bad_signature,  // the tag does not match under this key
  expired,
  too_long_lived,  // expires further ahead than the server accepts
  wrong_room,
  replayed,    // already used (the server's UsedTokens)
  store_full,  // the server remembers as many unexpired tokens as it may
};
inline constexpr size_t kTokenErrorCount = 9;
const char* token_error_name(TokenError error);

/// Checks the signature, the expiry against now_unix_s and the room; *out gets the claims when
/// the result is none. The tag is compared in constant time.
TokenError verify_token(const Key& key, std::string_view text, std::string_view room,
                        uint64_t now_unix_s, JoinClaims* out);

/// Decodes the layout without checking the signature (for inspection only); false and *error
/// when malformed.
bool decode_token_unverified(std::string_view text, JoinClaims* out, std::string* error);

/// Seconds since the Unix epoch (the clock tokens' expiry is in).
uint64_t unix_now_s();

}  // namespace lockstep::auth
