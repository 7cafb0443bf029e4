#include "lockstep/auth/join_token.h"

#include <sodium.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

namespace lockstep::auth {

namespace {

// version, flags, player, expiry, id, room length, user-data length; then the tag.
constexpr size_t kFixedBytes = 1 + 1 + 2 + 8 + kTokenIdBytes + 1 + 2;
constexpr size_t kTagBytes = crypto_auth_BYTES;
constexpr size_t kMaxTokenBytes = kFixedBytes + kMaxRoomBytes + kMaxUserDataBytes + kTagBytes;
constexpr uint8_t kFlagAnyPlayer = 1;

bool sodium_ready() {
  static const bool ok = sodium_init() >= 0;
  return ok;
}

void put(std::vector<uint8_t>* out, uint64_t value, size_t bytes) {
  for (size_t i = 0; i < bytes; ++i)
    out->push_back(static_cast<uint8_t>(value >> (8 * i)));
}

uint64_t get(const uint8_t* p, size_t bytes) {
  uint64_t v = 0;
  for (size_t i = 0; i < bytes; ++i)
    v |= uint64_t{p[i]} << (8 * i);
  return v;
}

bool from_base64url(std::string_view text, std::vector<uint8_t>* out) {
  if (text.empty() || text.size() > (kMaxTokenBytes * 4) / 3 + 4) return false;
  out->assign(text.size(), 0);
  size_t len = 0;
  const char* end = nullptr;
  if (sodium_base642bin(out->data(), out->size(), text.data(), text.size(), nullptr, &len, &end,
                        sodium_base64_VARIANT_URLSAFE_NO_PADDING) != 0 ||
      end != text.data() + text.size())
    return false;
  out->resize(len);
  return true;
}

// Parses the layout of `bytes` (tag included) into *out; the signed length in *signed_bytes.
bool parse(const std::vector<uint8_t>& bytes, JoinClaims* out, size_t* signed_bytes,
           std::string* error) {
  if (bytes.size() < kFixedBytes + kTagBytes) {
    *error = "too short for a join token";
    return false;
  }
  const uint8_t* p = bytes.data();
  if (p[0] != kTokenVersion) {
    *error = "token version " + std::to_string(p[0]) + " (this build reads " +
             std::to_string(kTokenVersion) + ")";
    return false;
  }
  const uint8_t flags = p[1];
  if ((flags & ~kFlagAnyPlayer) != 0) {
    *error = "unknown flag bits";
    return false;
  }
  const auto player = static_cast<uint32_t>(get(p + 2, 2));
  out->expires_unix_s = get(p + 4, 8);
  std::memcpy(out->id.data(), p + 12, kTokenIdBytes);
  size_t at = 12 + kTokenIdBytes;
  const size_t room_len = p[at++];
  if (room_len > kMaxRoomBytes || at + room_len + 2 > bytes.size()) {
    *error = "room length out of range";
    return false;
  }
  out->room.assign(reinterpret_cast<const char*>(p + at), room_len);
  at += room_len;
  const auto user_len = static_cast<size_t>(get(p + at, 2));
  at += 2;
  if (user_len > kMaxUserDataBytes || at + user_len + kTagBytes != bytes.size()) {
    *error = "user-data length out of range";
    return false;
  }
  out->user_data.assign(reinterpret_cast<const char*>(p + at), user_len);
  at += user_len;
  if ((flags & kFlagAnyPlayer) != 0) {
    if (player != 0) {
      *error = "a player id on an any-player token";
      return false;
    }
    out->player.reset();
  } else {
    if (player == 0) {
      *error = "player 0";
      return false;
    }
    out->player = player;
  }
  *signed_bytes = at;
  return true;
}

}  // namespace

Key generate_key() {
  Key key{};
  if (sodium_ready()) crypto_auth_keygen(key.data());
  return key;
}

std::string key_to_hex(const Key& key) {
  std::string hex(kKeyBytes * 2 + 1, '\0');
  sodium_bin2hex(hex.data(), hex.size(), key.data(), key.size());
  hex.resize(kKeyBytes * 2);
  return hex;
}

bool load_key_file(const std::string& path, Key* out, std::string* error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = "cannot open key file " + path;
    return false;
  }
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.pop_back();
  size_t start = 0;
  while (start < text.size() && std::isspace(static_cast<unsigned char>(text[start])))
    ++start;
  text.erase(0, start);
  size_t len = 0;
  const char* end = nullptr;
  if (!sodium_ready() || text.size() != kKeyBytes * 2 ||
      sodium_hex2bin(out->data(), out->size(), text.data(), text.size(), nullptr, &len, &end) !=
          0 ||
      len != kKeyBytes || end != text.data() + text.size()) {
    *error = "key file " + path + " does not hold 64 hex digits (a 32-byte key)";
    return false;
  }
  return true;
}

std::string mint_token(const Key& key, const JoinClaims& claims, std::string* error) {
  if (!sodium_ready()) {
    *error = "libsodium failed to initialise";
    return {};
  }
  if (claims.room.empty() || claims.room.size() > kMaxRoomBytes) {
    *error = "room must be 1.." + std::to_string(kMaxRoomBytes) + " bytes";
    return {};
  }
  if (claims.user_data.size() > kMaxUserDataBytes) {
    *error = "user data over " + std::to_string(kMaxUserDataBytes) + " bytes";
    return {};
  }
  if (claims.player && (*claims.player == 0 || *claims.player > 65535)) {
    *error = "player must be 1..65535";
    return {};
  }
  std::vector<uint8_t> bytes;
  bytes.reserve(kMaxTokenBytes);
  bytes.push_back(kTokenVersion);
  bytes.push_back(claims.player ? 0 : kFlagAnyPlayer);
  put(&bytes, claims.player.value_or(0), 2);
  put(&bytes, claims.expires_unix_s, 8);
  TokenId id{};
  randombytes_buf(id.data(), id.size());
  bytes.insert(bytes.end(), id.begin(), id.end());
  bytes.push_back(static_cast<uint8_t>(claims.room.size()));
  bytes.insert(bytes.end(), claims.room.begin(), claims.room.end());
  put(&bytes, claims.user_data.size(), 2);
  bytes.insert(bytes.end(), claims.user_data.begin(), claims.user_data.end());
  uint8_t tag[kTagBytes];
  crypto_auth(tag, bytes.data(), bytes.size(), key.data());
  bytes.insert(bytes.end(), tag, tag + kTagBytes);
  std::string text(
      sodium_base64_ENCODED_LEN(bytes.size(), sodium_base64_VARIANT_URLSAFE_NO_PADDING), '\0');
  sodium_bin2base64(text.data(), text.size(), bytes.data(), bytes.size(),
                    sodium_base64_VARIANT_URLSAFE_NO_PADDING);
  text.resize(std::strlen(text.c_str()));
  return text;
}

bool decode_token_unverified(std::string_view text, JoinClaims* out, std::string* error) {
  if (!sodium_ready()) {
    *error = "libsodium failed to initialise";
    return false;
  }
  std::vector<uint8_t> bytes;
  if (!from_base64url(text, &bytes)) {
    *error = "not base64url text of a join token";
    return false;
  }
  size_t signed_bytes = 0;
  return parse(bytes, out, &signed_bytes, error);
}

TokenError verify_token(const Key& key, std::string_view text, std::string_view room,
                        uint64_t now_unix_s, JoinClaims* out) {
  if (text.empty()) return TokenError::missing;
  if (!sodium_ready()) return TokenError::malformed;
  std::vector<uint8_t> bytes;
  if (!from_base64url(text, &bytes)) return TokenError::malformed;
  JoinClaims claims;
  size_t signed_bytes = 0;
  std::string why;
  if (!parse(bytes, &claims, &signed_bytes, &why)) return TokenError::malformed;
  if (crypto_auth_verify(bytes.data() + signed_bytes, bytes.data(), signed_bytes, key.data()) != 0)
    return TokenError::bad_signature;
  if (claims.expires_unix_s <= now_unix_s) return TokenError::expired;
  if (claims.room != room) return TokenError::wrong_room;
  *out = std::move(claims);
  return TokenError::none;
}

const char* token_error_name(TokenError error) {
  switch (error) {
    case TokenError::none:
      return "none";
    case TokenError::missing:
      return "missing";
    case TokenError::malformed:
      return "malformed";
    case TokenError::bad_signature:
      return "bad_signature";
    case TokenError::expired:
      return "expired";
    case TokenError::too_long_lived:
      return "too_long_lived";
    case TokenError::wrong_room:
      return "wrong_room";
    case TokenError::replayed:
      return "replayed";
    case TokenError::store_full:
      return "store_full";
  }
  return "unknown";
}

uint64_t unix_now_s() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::seconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

}  // namespace lockstep::auth
