// lockstep-token: join tokens (docs/security.md).
//   lockstep-token keygen --key-file F                 write a new random key (64 hex digits)
//   lockstep-token mint --key-file F --room R [--player N] [--ttl-s S] [--user-data TEXT]
//                                                      print a token as the last line
//   lockstep-token inspect TOKEN [--key-file F] [--room R]   print its fields (and check it)
// Exit 0 on success, 1 when inspect finds the token invalid, 2 on bad arguments or files.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "lockstep/auth/join_token.h"

namespace {

using namespace lockstep;

int fail(const std::string& message) {
  std::fprintf(stderr, "lockstep-token: %s\n", message.c_str());
  return 2;
}

std::string hex(const auth::TokenId& id) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (const uint8_t b : id) {
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"lockstep-token: mint and inspect join tokens"};
  app.require_subcommand(1);
  std::string key_file, room, user_data, token;
  uint32_t player = 0;
  uint64_t ttl_s = 300;

  CLI::App* keygen = app.add_subcommand("keygen", "write a new random key to --key-file");
  keygen->add_option("--key-file", key_file, "file to create (mode 0600)")->required();

  CLI::App* mint = app.add_subcommand("mint", "sign a token; printed as the last line");
  mint->add_option("--key-file", key_file, "the key shared with the servers")->required();
  mint->add_option("--room", room, "the room the token admits to")->required();
  mint->add_option("--player", player, "the player id it admits as (default: any free one)")
      ->check(CLI::Range(1, 65535));
  mint->add_option("--ttl-s", ttl_s, "seconds until it expires")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{1}, uint64_t{86400}));
  mint->add_option("--user-data", user_data, "opaque text for the game (<= 256 bytes, signed)");

  CLI::App* inspect = app.add_subcommand("inspect", "print a token's fields");
  inspect->add_option("TOKEN", token, "token text")->required();
  inspect->add_option("--key-file", key_file, "also check the signature with this key");
  inspect->add_option("--room", room, "also check the room");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 64;
  }

  if (*keygen) {
    const auth::Key key = auth::generate_key();
    std::ofstream out(key_file, std::ios::trunc);
    if (!out) return fail("cannot write " + key_file);
    out << auth::key_to_hex(key) << "\n";
    out.close();
    std::error_code ec;  // the key is a secret: owner-only
    std::filesystem::permissions(
        key_file, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write,
        std::filesystem::perm_options::replace, ec);
    std::printf("wrote a new key to %s\n", key_file.c_str());
    return 0;
  }
  std::string error;
  auth::Key key{};
  if (!key_file.empty() && !auth::load_key_file(key_file, &key, &error)) return fail(error);
  if (*mint) {
    auth::JoinClaims claims;
    claims.room = room;
    if (player != 0) claims.player = player;
    claims.expires_unix_s = auth::unix_now_s() + ttl_s;
    claims.user_data = user_data;
    const std::string text = auth::mint_token(key, claims, &error);
    if (text.empty()) return fail(error);
    std::printf("%s\n", text.c_str());
    return 0;
  }
  auth::JoinClaims claims;
  if (!auth::decode_token_unverified(token, &claims, &error)) return fail(error);
  const uint64_t now = auth::unix_now_s();
  std::printf("room: %s\nplayer: %s\nexpires_unix_s: %llu (%s)\nid: %s\nuser_data: %s\n",
              claims.room.c_str(), claims.player ? std::to_string(*claims.player).c_str() : "any",
              static_cast<unsigned long long>(claims.expires_unix_s),
              claims.expires_unix_s > now
                  ? ("in " + std::to_string(claims.expires_unix_s - now) + " s").c_str()
                  : "expired",
              hex(claims.id).c_str(), claims.user_data.c_str());
  if (!key_file.empty()) {
    auth::JoinClaims checked;
    const auth::TokenError e =
        auth::verify_token(key, token, room.empty() ? claims.room : room, now, &checked);
    std::printf("valid: %s\n", e == auth::TokenError::none ? "yes" : auth::token_error_name(e));
    return e == auth::TokenError::none ? 0 : 1;
  }
  return 0;
}
