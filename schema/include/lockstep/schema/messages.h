// The wire protocol's messages as plain C++ values, and the one codec that turns them into
// frames and back. FlatBuffers types never leave schema/: the server and the client SDK see
// these structs only, and both use this codec (no second copy of encoding or verification).
//
// A frame is 4-byte little-endian length + body (see frame.h): a FlatBuffer, or for TickFrame
// and InputFrame a compact body (compact_codec.h). encode_frame returns the whole frame, ready
// to write; decode_body takes one frame body (what FrameDecoder yields) and checks it before
// anything reads it: the compact parser's range checks, or the file identifier and the
// FlatBuffers Verifier with kVerifierMaxDepth / kVerifierMaxTables.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "lockstep/sim/scene.h"
#include "lockstep/sim/types.h"
#include "lockstep/sim/version.h"

namespace lockstep::schema {

/// Protocol versions this build speaks (Hello/Welcome negotiate within the overlap).
/// 2: Hello.scene, Welcome.snapshot_interval_ticks, ErrorCode unknown_scene and scene_mismatch.
/// 3: Welcome.world_def (the room's WorldDef and templates: a client builds its world from the
/// Welcome and the join Snapshot) and TickFrame.commands (spawns, destroys and scores the step
/// applied before its inputs).
/// 4: TickFrame and InputFrame travel as compact bodies (varints, inputs grouped by player, zero
/// fields left out; docs/protocol.md), no longer as FlatBuffers tables.
/// 5: GameMessage (client → server, for the room's rules) and ErrorCode message_rejected. A
/// version 4 peer is still spoken to: it just cannot send game messages.
/// Older versions are no longer spoken: a v3 peer could not read the compact bodies, so it gets
/// a clear version_mismatch instead (Hello and Error keep their v3 bytes for that).
inline constexpr uint16_t kProtocolVersion = 5;
inline constexpr uint16_t kMinProtocolVersion = 4;

/// Caps on strings, checked by decode_body (bad_value beyond): room, player and scene names;
/// auth tokens; free-text reasons. encode_frame truncates a longer reason (it is only for logs)
/// and leaves the others to the caller.
inline constexpr size_t kMaxNameBytes = 64;
inline constexpr size_t kMaxTokenBytes = 1024;
inline constexpr size_t kMaxReasonBytes = 1024;
/// The largest GameMessage the codec takes (bad_value beyond); a server's own limit is at most
/// this (ServerConfig::max_game_message_bytes).
inline constexpr size_t kMaxGameMessageBytes = 4096;
/// The first protocol version with GameMessage.
inline constexpr uint16_t kFirstVersionWithGameMessages = 5;

enum class ClientMode : uint8_t { lockstep = 0, thin = 1 };

/// Mirrors wire.ErrorCode in protocol.fbs.
enum class ErrorCode : uint16_t {
  none = 0,
  version_mismatch = 1,
  bad_frame = 2,
  unknown_message = 3,
  not_joined = 4,
  room_full = 5,
  too_many_rooms = 6,
  input_rejected = 7,
  input_late = 8,
  slow_consumer = 9,
  timeout = 10,
  server_shutdown = 11,
  desync = 12,
  bad_request = 13,
  auth_failed = 14,
  unknown_scene = 15,
  scene_mismatch = 16,
  message_rejected = 17,  // v5: a GameMessage over the room's size or rate limit (not fatal)
};
/// The last ErrorCode (messages.cpp checks it is the wire enum's last too): arrays indexed by
/// code take kErrorCodeCount entries.
inline constexpr ErrorCode kLastErrorCode = ErrorCode::message_rejected;
inline constexpr size_t kErrorCodeCount = static_cast<size_t>(kLastErrorCode) + 1;
const char* error_code_name(ErrorCode code);

struct Hello {
  uint16_t protocol_version = kProtocolVersion;
  uint16_t min_protocol_version = kMinProtocolVersion;
  std::string room;
  std::string player_name;
  std::string auth_token;
  ClientMode mode = ClientMode::lockstep;
  uint16_t snapshot_rate_hz = 0;
  std::string scene;  // "" = the server's default scene
  // The simulation this client runs (sim/version.h); 0 from clients older than the field.
  uint32_t physics_revision = sim::kPhysicsRevision;
};

struct Welcome {
  uint16_t protocol_version = kProtocolVersion;
  uint32_t player_id = 0;
  uint16_t tick_rate_hz = 60;
  uint16_t input_delay_ticks = 2;
  std::string scene;
  uint64_t world_def_fingerprint = 0;
  uint64_t current_tick = 0;
  uint64_t ns_into_tick = 0;
  std::vector<sim::BodyId> owned_bodies;
  uint16_t snapshot_rate_hz = 0;  // thin: tick_rate_hz / snapshot_interval_ticks, rounded down
  uint32_t snapshot_interval_ticks = 0;  // thin: a Snapshot every this many ticks; 0 otherwise
  // The room's WorldDef, templates included (v3). Decoding checks that it is valid and that it
  // hashes to world_def_fingerprint.
  std::optional<sim::WorldDef> world_def;
  uint32_t input_window_ticks = 0;  // inputs for ticks next..next + this − 1 are accepted
  uint64_t schedule_moved_ns = 0;   // as in Pong
  // The simulation the server runs (sim/version.h); 0 from servers older than the field.
  uint32_t physics_revision = sim::kPhysicsRevision;
  // The room's level geometry (sim/level.h): its digest (0: no level), and the meshes and
  // heightfields themselves when `level_carried`; a level over the server's
  // --max-welcome-level-bytes comes as the digest alone and the client loads its own copy.
  // Decoding checks the tables' shapes and that the carried content hashes to the digest.
  uint64_t level_digest = 0;
  bool level_carried = false;
  std::vector<sim::SceneMesh> level_meshes;
  std::vector<sim::SceneHeightfield> level_heightfields;
};

struct Snapshot {
  uint64_t tick = 0;
  std::vector<uint8_t> state;  // sim::World::save_snapshot bytes
  uint64_t state_hash = 0;
};

struct InputFrame {
  uint64_t target_tick = 0;
  uint32_t sequence = 0;
  std::vector<sim::Input> inputs;
};

struct TickFrame {
  uint64_t tick = 0;
  std::vector<sim::Input> inputs;  // in the order they were applied
  uint64_t state_hash = 0;
  std::vector<sim::Command> commands;  // v3: applied before the inputs, in command_less order
};

struct DesyncReport {
  uint64_t tick = 0;
  uint64_t client_hash = 0;
  uint64_t server_hash = 0;
};

struct ResyncRequest {
  std::string reason;
};

struct Ping {
  uint64_t client_time_ns = 0;
};

struct Pong {
  uint64_t client_time_ns = 0;
  uint64_t server_tick = 0;
  uint64_t ns_into_tick = 0;
  // How much later than at its opening the room's schedule runs: it grows each time the room,
  // unable to keep up, moves its schedule (server docs, "A room that cannot keep up").
  uint64_t schedule_moved_ns = 0;
};

struct ErrorMessage {
  ErrorCode code = ErrorCode::none;
  std::string reason;
  bool fatal = false;
  uint16_t server_protocol_version = kProtocolVersion;
  uint16_t server_min_protocol_version = kMinProtocolVersion;
};

struct Disconnect {
  ErrorCode code = ErrorCode::none;
  std::string reason;
};

/// Client → server (v5): the game's own bytes for the room's rules (at most kMaxGameMessageBytes;
/// the server refuses an empty one).
struct GameMessage {
  std::vector<uint8_t> data;
};

using Message = std::variant<Hello, Welcome, Snapshot, InputFrame, TickFrame, DesyncReport,
                             ResyncRequest, Ping, Pong, ErrorMessage, Disconnect, GameMessage>;

/// Name of the message kind ("Hello", "TickFrame", …) for logs and errors.
const char* message_name(const Message& message);

/// An encoded frame (length prefix + FlatBuffer), immutable so one buffer can be shared by
/// every session it is broadcast to.
using SharedFrame = std::shared_ptr<const std::vector<uint8_t>>;

/// Encodes a message as a complete frame (4-byte LE length + FlatBuffer with identifier).
std::vector<uint8_t> encode_frame(const Message& message);
/// encode_frame into a shared buffer (encode once, send to many).
SharedFrame encode_shared_frame(const Message& message);

enum class DecodeError : uint8_t {
  none = 0,
  too_short,        // fewer bytes than a FlatBuffer with identifier
  bad_identifier,   // not "LSW1"
  verifier,         // the FlatBuffers Verifier rejected it (bounds, depth, tables)
  no_message,       // an Envelope without a message
  unknown_message,  // a union member this build does not know (a newer peer)
  bad_value,        // a field out of its documented range (e.g. an enum value)
  malformed,        // a compact body that does not parse (truncated, overlong varint, …)
};
const char* decode_error_name(DecodeError error);

struct DecodeResult {
  DecodeError error = DecodeError::none;
  std::string detail;  // one line for logs and Error frames
  bool ok() const { return error == DecodeError::none; }
};

/// Verifies and decodes one frame body (without its length prefix) into *out.
DecodeResult decode_body(std::span<const uint8_t> body, Message* out);

}  // namespace lockstep::schema
