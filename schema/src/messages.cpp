// The message codec: plain structs ↔ one FlatBuffers Envelope per frame.
//
// Layout of a frame: our 4-byte little-endian length (frame.h), then a FlatBuffer finished with
// the "LSW1" identifier and *no* size prefix of its own. FinishSizePrefixed gives the same
// bytes except for alignment: it aligns the buffer including its prefix, so the body that
// FrameDecoder hands over (prefix stripped, placed at an aligned address) has every 8-byte
// field at 4 mod 8. We send the first form; decoding takes both (decode_verified). Finishing
// without a prefix and writing the header ourselves costs nothing: the builder's bytes are
// copied once into the returned vector either way.
//
// Decoding never trusts the body: size and identifier first, then the Verifier (depth and table
// limits from limits.h), then range checks on what the Verifier cannot know (enum values,
// string caps, paired vectors). *out is written only on success.
#include "lockstep/schema/messages.h"

#include <flatbuffers/flatbuffers.h>

#include <cmath>
#include <cstring>
#include <string_view>
#include <type_traits>

#include "lockstep/schema/compact_codec.h"
#include "lockstep/schema/frame.h"
#include "lockstep/schema/level_file.h"
#include "lockstep/schema/limits.h"
#include "lockstep/schema/protocol_generated.h"
#include "lockstep/schema/world_codec.h"
#include "lockstep/sim/world.h"

namespace lockstep::schema {
namespace {

namespace fb = flatbuffers;
namespace wire = lockstep::wire;

// Our enums mirror the wire enums value for value; a change to either must show up here.
static_assert(static_cast<uint16_t>(ErrorCode::auth_failed) ==
              static_cast<uint16_t>(wire::ErrorCode::AuthFailed));
static_assert(static_cast<uint16_t>(ErrorCode::unknown_scene) ==
              static_cast<uint16_t>(wire::ErrorCode::UnknownScene));
static_assert(static_cast<uint16_t>(wire::ErrorCode::MAX) == static_cast<uint16_t>(kLastErrorCode));
static_assert(static_cast<uint8_t>(ClientMode::thin) ==
              static_cast<uint8_t>(wire::ClientMode::Thin));
static_assert(static_cast<uint8_t>(wire::ClientMode::MAX) ==
              static_cast<uint8_t>(ClientMode::thin));
// Union member k (1-based) is variant alternative k - 1: checked per type in wire_type().
static_assert(std::variant_size_v<Message> == static_cast<size_t>(wire::Message::MAX));

// The largest scalar in protocol.fbs is 64-bit, so a body read in place needs 8-byte alignment.
constexpr uintptr_t kBodyAlignBytes = 8;
// A FlatBuffer with identifier: root offset (4) + identifier (4).
constexpr size_t kMinBodyBytes = sizeof(fb::uoffset_t) + fb::kFileIdentifierLength;

template <class T>
constexpr size_t variant_index() {
  size_t index = 0;
  bool found = false;
  [&]<size_t... I>(std::index_sequence<I...>) {
    ((std::is_same_v<T, std::variant_alternative_t<I, Message>> ? (index = I, found = true)
                                                                : false),
     ...);
  }
  (std::make_index_sequence<std::variant_size_v<Message>>{});
  return found ? index : std::variant_size_v<Message>;
}

template <class T>
constexpr wire::Message wire_type() {
  return static_cast<wire::Message>(variant_index<T>() + 1);
}
static_assert(wire_type<Hello>() == wire::Message::Hello);
static_assert(wire_type<Welcome>() == wire::Message::Welcome);
static_assert(wire_type<Snapshot>() == wire::Message::Snapshot);
static_assert(wire_type<InputFrame>() == wire::Message::InputFrame);
static_assert(wire_type<TickFrame>() == wire::Message::TickFrame);
static_assert(wire_type<DesyncReport>() == wire::Message::DesyncReport);
static_assert(wire_type<ResyncRequest>() == wire::Message::ResyncRequest);
static_assert(wire_type<Ping>() == wire::Message::Ping);
static_assert(wire_type<Pong>() == wire::Message::Pong);
static_assert(wire_type<ErrorMessage>() == wire::Message::Error);
static_assert(wire_type<Disconnect>() == wire::Message::Disconnect);
static_assert(wire_type<GameMessage>() == wire::Message::GameMessage);

constexpr const char* kMessageNames[] = {
    "Hello",         "Welcome", "Snapshot", "InputFrame", "TickFrame",  "DesyncReport",
    "ResyncRequest", "Ping",    "Pong",     "Error",      "Disconnect", "GameMessage",
};
static_assert(std::size(kMessageNames) == std::variant_size_v<Message>);

// ---- encoding ----

// Cuts a free-text reason to the cap, backing off to a UTF-8 character boundary.
std::string_view capped_reason(const std::string& reason) {
  if (reason.size() <= kMaxReasonBytes) return reason;
  size_t length = kMaxReasonBytes;
  while (length > 0 && (static_cast<uint8_t>(reason[length]) & 0xC0u) == 0x80u)
    --length;
  return std::string_view(reason.data(), length);
}

fb::Offset<fb::String> create_string(fb::FlatBufferBuilder& builder, std::string_view text) {
  return builder.CreateString(text.data(), text.size());
}

fb::Offset<void> encode_message(fb::FlatBufferBuilder& builder, const Hello& m) {
  // Children (strings, vectors) must be finished before their table starts.
  auto room = create_string(builder, m.room);
  auto player_name = create_string(builder, m.player_name);
  auto auth_token = create_string(builder, m.auth_token);
  auto scene = create_string(builder, m.scene);
  return wire::CreateHello(builder, m.protocol_version, m.min_protocol_version, room, player_name,
                           auth_token, static_cast<wire::ClientMode>(m.mode), m.snapshot_rate_hz,
                           scene, m.physics_revision)
      .Union();
}

// The Welcome's level table: the digest, and the geometry when it is carried.
fb::Offset<wire::Level> encode_level(fb::FlatBufferBuilder& builder, const Welcome& m) {
  if (m.level_digest == 0 && !m.level_carried) return 0;
  return encode_level_table(builder, m.level_digest, m.level_carried, m.level_meshes,
                            m.level_heightfields);
}

fb::Offset<void> encode_message(fb::FlatBufferBuilder& builder, const Welcome& m) {
  fb::Offset<wire::WorldDef> world_def;
  if (m.world_def) world_def = encode_world_def(builder, *m.world_def);
  const fb::Offset<wire::Level> level = encode_level(builder, m);
  auto scene = create_string(builder, m.scene);
  uint32_t* index1 = nullptr;
  auto owned_bodies = builder.CreateUninitializedVector(m.owned_bodies.size(), &index1);
  for (sim::BodyId body : m.owned_bodies)
    *index1++ = fb::EndianScalar(body.index1);
  uint32_t* generation = nullptr;
  auto owned_generations = builder.CreateUninitializedVector(m.owned_bodies.size(), &generation);
  for (sim::BodyId body : m.owned_bodies)
    *generation++ = fb::EndianScalar(body.generation);
  return wire::CreateWelcome(builder, m.protocol_version, m.player_id, m.tick_rate_hz,
                             m.input_delay_ticks, scene, m.world_def_fingerprint, m.current_tick,
                             m.ns_into_tick, owned_bodies, owned_generations, m.snapshot_rate_hz,
                             m.snapshot_interval_ticks, world_def, m.input_window_ticks,
                             m.schedule_moved_ns, m.physics_revision, level)
      .Union();
}

fb::Offset<void> encode_message(fb::FlatBufferBuilder& builder, const Snapshot& m) {
  auto state = builder.CreateVector(m.state.data(), m.state.size());
  return wire::CreateSnapshot(builder, m.tick, state, m.state_hash).Union();
}

// InputFrame and TickFrame are compact bodies since protocol 4 (compact_frame below); their
// FlatBuffers tables stay in the schema, unsent, so the union keeps its numbering.
fb::Offset<void> encode_message(fb::FlatBufferBuilder&, const InputFrame&) {
  return 0;
}

fb::Offset<void> encode_message(fb::FlatBufferBuilder&, const TickFrame&) {
  return 0;
}

// The whole frame of a compact message (header and body), or an empty vector for the others.
std::vector<uint8_t> compact_frame(const Message& message) {
  std::vector<uint8_t> frame;
  const auto* tick = std::get_if<TickFrame>(&message);
  const auto* input = std::get_if<InputFrame>(&message);
  if (tick == nullptr && input == nullptr) return frame;
  const size_t inputs = tick != nullptr ? tick->inputs.size() : input->inputs.size();
  frame.reserve(kFrameHeaderBytes +
                compact::max_body_bytes(inputs, tick != nullptr ? tick->commands.size() : 0));
  frame.resize(kFrameHeaderBytes);
  if (tick != nullptr) {
    compact::append_tick(tick->tick, tick->state_hash, std::nullopt, tick->inputs, tick->commands,
                         &frame);
  } else {
    compact::append_input_frame(input->target_tick, input->sequence, input->inputs, &frame);
  }
  encode_frame_header(static_cast<uint32_t>(frame.size() - kFrameHeaderBytes),
                      std::span<uint8_t, kFrameHeaderBytes>(frame.data(), kFrameHeaderBytes));
  return frame;
}

DecodeResult decode_compact(std::span<const uint8_t> body, Message* out) {
  std::string why;
  switch (body[0] & compact::kKindMask) {
    case compact::kKindTickFrame: {
      compact::Tick tick;
      if (!compact::read_tick(body, false, &tick, &why)) {
        return DecodeResult{DecodeError::malformed, why};
      }
      *out =
          TickFrame{tick.tick, std::move(tick.inputs), tick.state_hash, std::move(tick.commands)};
      return {};
    }
    case compact::kKindInputFrame: {
      compact::InputFrame frame;
      if (!compact::read_input_frame(body, &frame, &why)) {
        return DecodeResult{DecodeError::malformed, why};
      }
      *out = InputFrame{frame.target_tick, frame.sequence, std::move(frame.inputs)};
      return {};
    }
    default:
      return DecodeResult{DecodeError::unknown_message,
                          "compact body of unknown kind " +
                              std::to_string(body[0] & compact::kKindMask) + " (a newer peer?)"};
  }
}

fb::Offset<void> encode_message(fb::FlatBufferBuilder& builder, const DesyncReport& m) {
  return wire::CreateDesyncReport(builder, m.tick, m.client_hash, m.server_hash).Union();
}

fb::Offset<void> encode_message(fb::FlatBufferBuilder& builder, const ResyncRequest& m) {
  auto reason = create_string(builder, capped_reason(m.reason));
  return wire::CreateResyncRequest(builder, reason).Union();
}

fb::Offset<void> encode_message(fb::FlatBufferBuilder& builder, const Ping& m) {
  return wire::CreatePing(builder, m.client_time_ns).Union();
}

fb::Offset<void> encode_message(fb::FlatBufferBuilder& builder, const Pong& m) {
  return wire::CreatePong(builder, m.client_time_ns, m.server_tick, m.ns_into_tick,
                          m.schedule_moved_ns)
      .Union();
}

fb::Offset<void> encode_message(fb::FlatBufferBuilder& builder, const ErrorMessage& m) {
  auto reason = create_string(builder, capped_reason(m.reason));
  return wire::CreateError(builder, static_cast<wire::ErrorCode>(m.code), reason, m.fatal,
                           m.server_protocol_version, m.server_min_protocol_version)
      .Union();
}

fb::Offset<void> encode_message(fb::FlatBufferBuilder& builder, const Disconnect& m) {
  auto reason = create_string(builder, capped_reason(m.reason));
  return wire::CreateDisconnect(builder, static_cast<wire::ErrorCode>(m.code), reason).Union();
}

fb::Offset<void> encode_message(fb::FlatBufferBuilder& builder, const GameMessage& m) {
  auto data = builder.CreateVector(m.data);
  return wire::CreateGameMessage(builder, data).Union();
}

// Builder's first block: enough for every message but snapshots and big input batches, which
// get their payload size on top, so a frame is built without the builder reallocating.
size_t initial_builder_bytes(const Message& message) {
  constexpr size_t kBaseBytes = 512;
  if (const auto* snapshot = std::get_if<Snapshot>(&message)) {
    return kBaseBytes + snapshot->state.size();
  }
  if (const auto* game = std::get_if<GameMessage>(&message)) return kBaseBytes + game->data.size();
  return kBaseBytes;
}

// ---- decoding ----

DecodeResult fail(DecodeError error, std::string detail) {
  return DecodeResult{error, std::move(detail)};
}

// Reads an optional string under a cap; a missing string is empty.
bool read_string(const fb::String* text, size_t max_bytes, const char* field, std::string* out,
                 DecodeResult* result) {
  if (text == nullptr) {
    out->clear();
    return true;
  }
  if (text->size() > max_bytes) {
    *result =
        fail(DecodeError::bad_value, std::string(field) + " is " + std::to_string(text->size()) +
                                         " bytes (cap " + std::to_string(max_bytes) + ")");
    return false;
  }
  out->assign(text->c_str(), text->size());
  return true;
}

bool read_error_code(wire::ErrorCode code, const char* field, ErrorCode* out,
                     DecodeResult* result) {
  const auto value = static_cast<uint16_t>(code);
  if (value > static_cast<uint16_t>(wire::ErrorCode::MAX)) {
    *result = fail(DecodeError::bad_value,
                   std::string(field) + " " + std::to_string(value) + " is not an ErrorCode");
    return false;
  }
  *out = static_cast<ErrorCode>(value);
  return true;
}

DecodeResult decode_message(const wire::Hello& in, Message* out) {
  DecodeResult result;
  Hello m;
  m.protocol_version = in.protocol_version();
  m.min_protocol_version = in.min_protocol_version();
  if (!read_string(in.room(), kMaxNameBytes, "Hello.room", &m.room, &result) ||
      !read_string(in.player_name(), kMaxNameBytes, "Hello.player_name", &m.player_name, &result) ||
      !read_string(in.auth_token(), kMaxTokenBytes, "Hello.auth_token", &m.auth_token, &result)) {
    return result;
  }
  const auto mode = static_cast<uint8_t>(in.mode());
  if (mode > static_cast<uint8_t>(wire::ClientMode::MAX)) {
    return fail(DecodeError::bad_value, "Hello.mode " + std::to_string(mode) + " is not a mode");
  }
  m.mode = static_cast<ClientMode>(mode);
  m.snapshot_rate_hz = in.snapshot_rate_hz();
  if (!read_string(in.scene(), kMaxNameBytes, "Hello.scene", &m.scene, &result)) return result;
  m.physics_revision = in.physics_revision();
  *out = std::move(m);
  return result;
}

// Welcome.level into *m (world_codec.h, decode_level_table).
bool decode_level(const wire::Level& in, Welcome* m, std::string* why) {
  return decode_level_table(in, &m->level_digest, &m->level_carried, &m->level_meshes,
                            &m->level_heightfields, why);
}

DecodeResult decode_message(const wire::Welcome& in, Message* out) {
  DecodeResult result;
  Welcome m;
  m.protocol_version = in.protocol_version();
  m.player_id = in.player_id();
  m.tick_rate_hz = in.tick_rate_hz();
  m.input_delay_ticks = in.input_delay_ticks();
  if (!read_string(in.scene(), kMaxNameBytes, "Welcome.scene", &m.scene, &result)) return result;
  m.world_def_fingerprint = in.world_def_fingerprint();
  m.current_tick = in.current_tick();
  m.ns_into_tick = in.ns_into_tick();
  const auto* index1 = in.owned_bodies();
  const auto* generation = in.owned_generations();
  const uint32_t count = index1 != nullptr ? index1->size() : 0;
  const uint32_t generations = generation != nullptr ? generation->size() : 0;
  if (count != generations) {
    return fail(DecodeError::bad_value, "Welcome.owned_bodies has " + std::to_string(count) +
                                            " entries but owned_generations " +
                                            std::to_string(generations));
  }
  m.owned_bodies.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    m.owned_bodies.push_back(sim::BodyId{index1->Get(i), generation->Get(i)});
  }
  m.snapshot_rate_hz = in.snapshot_rate_hz();
  m.snapshot_interval_ticks = in.snapshot_interval_ticks();
  m.input_window_ticks = in.input_window_ticks();
  m.schedule_moved_ns = in.schedule_moved_ns();
  m.physics_revision = in.physics_revision();
  if (const wire::WorldDef* def = in.world_def()) {
    sim::WorldDef world_def;
    std::string why;
    if (!decode_world_def(*def, &world_def, &why)) {
      return fail(DecodeError::bad_value, "Welcome.world_def: " + why);
    }
    const sim::Error invalid = sim::validate_world_def(world_def);
    if (invalid != sim::Error::none) {
      return fail(DecodeError::bad_value,
                  std::string("Welcome.world_def is not valid: ") + sim::error_message(invalid));
    }
    if (sim::world_def_fingerprint(world_def) != m.world_def_fingerprint) {
      return fail(DecodeError::bad_value,
                  "Welcome.world_def does not hash to Welcome.world_def_fingerprint");
    }
    m.world_def = world_def;
  }
  if (const wire::Level* level = in.level()) {
    std::string why;
    if (!decode_level(*level, &m, &why))
      return fail(DecodeError::bad_value, "Welcome.level: " + why);
  }
  *out = std::move(m);
  return result;
}

DecodeResult decode_message(const wire::Snapshot& in, Message* out) {
  Snapshot m;
  m.tick = in.tick();
  if (const auto* state = in.state()) m.state.assign(state->begin(), state->end());
  m.state_hash = in.state_hash();
  *out = std::move(m);
  return {};
}

// The v3 tables of the two compact messages: a protocol 4 peer never sends them.
DecodeResult decode_message(const wire::InputFrame&, Message*) {
  return fail(DecodeError::unknown_message,
              "InputFrame as a FlatBuffers table is protocol 3; protocol 4 sends a compact body");
}

DecodeResult decode_message(const wire::TickFrame&, Message*) {
  return fail(DecodeError::unknown_message,
              "TickFrame as a FlatBuffers table is protocol 3; protocol 4 sends a compact body");
}

DecodeResult decode_message(const wire::DesyncReport& in, Message* out) {
  *out = DesyncReport{in.tick(), in.client_hash(), in.server_hash()};
  return {};
}

DecodeResult decode_message(const wire::ResyncRequest& in, Message* out) {
  DecodeResult result;
  ResyncRequest m;
  if (!read_string(in.reason(), kMaxReasonBytes, "ResyncRequest.reason", &m.reason, &result)) {
    return result;
  }
  *out = std::move(m);
  return result;
}

DecodeResult decode_message(const wire::Ping& in, Message* out) {
  *out = Ping{in.client_time_ns()};
  return {};
}

DecodeResult decode_message(const wire::Pong& in, Message* out) {
  *out = Pong{in.client_time_ns(), in.server_tick(), in.ns_into_tick(), in.schedule_moved_ns()};
  return {};
}

DecodeResult decode_message(const wire::Error& in, Message* out) {
  DecodeResult result;
  ErrorMessage m;
  if (!read_error_code(in.code(), "Error.code", &m.code, &result) ||
      !read_string(in.reason(), kMaxReasonBytes, "Error.reason", &m.reason, &result)) {
    return result;
  }
  m.fatal = in.fatal();
  m.server_protocol_version = in.server_protocol_version();
  m.server_min_protocol_version = in.server_min_protocol_version();
  *out = std::move(m);
  return result;
}

DecodeResult decode_message(const wire::Disconnect& in, Message* out) {
  DecodeResult result;
  Disconnect m;
  if (!read_error_code(in.code(), "Disconnect.code", &m.code, &result) ||
      !read_string(in.reason(), kMaxReasonBytes, "Disconnect.reason", &m.reason, &result)) {
    return result;
  }
  *out = std::move(m);
  return result;
}

DecodeResult decode_message(const wire::GameMessage& in, Message* out) {
  // An empty one is well-formed: the server refuses it as a message (message_rejected).
  const auto* data = in.data();
  if (data == nullptr) {
    *out = GameMessage{};
    return {};
  }
  if (data->size() > kMaxGameMessageBytes) {
    return fail(DecodeError::bad_value, "GameMessage.data has " + std::to_string(data->size()) +
                                            " bytes, over the codec's cap of " +
                                            std::to_string(kMaxGameMessageBytes));
  }
  *out = GameMessage{std::vector<uint8_t>(data->begin(), data->end())};
  return {};
}

// Decodes a verified, identified, aligned body.
DecodeResult decode_verified(const uint8_t* body, size_t size, Message* out) {
  fb::Verifier::Options options;
  options.max_depth = kVerifierMaxDepth;
  options.max_tables = kVerifierMaxTables;
  fb::Verifier verifier(body, size, options);
  const wire::Envelope* envelope = nullptr;
  std::vector<uint64_t> prefixed;  // a re-prefixed copy, read in place below
  if (wire::VerifyEnvelopeBuffer(verifier)) {
    envelope = wire::GetEnvelope(body);
  } else {
    // A body built with FinishSizePrefixed (a common first try) is aligned as if its 4-byte
    // length were still in front of it, so its 64-bit fields fail the check above while a
    // message without any passes. Accept them all alike: put the length back in front, in a
    // copy, and verify that as a size-prefixed buffer, alignment included.
    prefixed.resize((size + 4 + sizeof(uint64_t) - 1) / sizeof(uint64_t));
    uint8_t* copy = reinterpret_cast<uint8_t*>(prefixed.data());
    const uint32_t length = static_cast<uint32_t>(size);
    for (int b = 0; b < 4; ++b)
      copy[b] = static_cast<uint8_t>(length >> (8 * b));
    std::memcpy(copy + 4, body, size);
    fb::Verifier prefixed_verifier(copy, size + 4, options);
    if (!wire::VerifySizePrefixedEnvelopeBuffer(prefixed_verifier)) {
      return fail(DecodeError::verifier,
                  "FlatBuffers verifier rejected the " + std::to_string(size) + "-byte body");
    }
    envelope = wire::GetSizePrefixedEnvelope(copy);
  }
  const wire::Message type = envelope->message_type();
  if (type == wire::Message::NONE) {
    return fail(DecodeError::no_message, "envelope carries no message");
  }
  if (static_cast<uint8_t>(type) > static_cast<uint8_t>(wire::Message::MAX)) {
    return fail(
        DecodeError::unknown_message,
        "unknown message type " + std::to_string(static_cast<unsigned>(type)) + " (a newer peer?)");
  }
  if (envelope->message() == nullptr) {
    return fail(DecodeError::no_message, std::string("envelope names ") +
                                             kMessageNames[static_cast<size_t>(type) - 1] +
                                             " but carries no table");
  }
  switch (type) {
    case wire::Message::Hello:
      return decode_message(*envelope->message_as_Hello(), out);
    case wire::Message::Welcome:
      return decode_message(*envelope->message_as_Welcome(), out);
    case wire::Message::Snapshot:
      return decode_message(*envelope->message_as_Snapshot(), out);
    case wire::Message::InputFrame:
      return decode_message(*envelope->message_as_InputFrame(), out);
    case wire::Message::TickFrame:
      return decode_message(*envelope->message_as_TickFrame(), out);
    case wire::Message::DesyncReport:
      return decode_message(*envelope->message_as_DesyncReport(), out);
    case wire::Message::ResyncRequest:
      return decode_message(*envelope->message_as_ResyncRequest(), out);
    case wire::Message::Ping:
      return decode_message(*envelope->message_as_Ping(), out);
    case wire::Message::Pong:
      return decode_message(*envelope->message_as_Pong(), out);
    case wire::Message::Error:
      return decode_message(*envelope->message_as_Error(), out);
    case wire::Message::Disconnect:
      return decode_message(*envelope->message_as_Disconnect(), out);
    case wire::Message::GameMessage:
      return decode_message(*envelope->message_as_GameMessage(), out);
    case wire::Message::NONE:
      break;
  }
  return fail(DecodeError::unknown_message, "unhandled message type");
}

}  // namespace

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::none:
      return "none";
    case ErrorCode::version_mismatch:
      return "version_mismatch";
    case ErrorCode::bad_frame:
      return "bad_frame";
    case ErrorCode::unknown_message:
      return "unknown_message";
    case ErrorCode::not_joined:
      return "not_joined";
    case ErrorCode::room_full:
      return "room_full";
    case ErrorCode::too_many_rooms:
      return "too_many_rooms";
    case ErrorCode::input_rejected:
      return "input_rejected";
    case ErrorCode::input_late:
      return "input_late";
    case ErrorCode::slow_consumer:
      return "slow_consumer";
    case ErrorCode::timeout:
      return "timeout";
    case ErrorCode::server_shutdown:
      return "server_shutdown";
    case ErrorCode::desync:
      return "desync";
    case ErrorCode::bad_request:
      return "bad_request";
    case ErrorCode::auth_failed:
      return "auth_failed";
    case ErrorCode::unknown_scene:
      return "unknown_scene";
    case ErrorCode::scene_mismatch:
      return "scene_mismatch";
    case ErrorCode::message_rejected:
      return "message_rejected";
  }
  return "unknown_error_code";
}

const char* message_name(const Message& message) {
  if (message.valueless_by_exception()) return "valueless";
  return kMessageNames[message.index()];
}

const char* decode_error_name(DecodeError error) {
  switch (error) {
    case DecodeError::none:
      return "none";
    case DecodeError::too_short:
      return "too_short";
    case DecodeError::bad_identifier:
      return "bad_identifier";
    case DecodeError::verifier:
      return "verifier";
    case DecodeError::no_message:
      return "no_message";
    case DecodeError::unknown_message:
      return "unknown_message";
    case DecodeError::bad_value:
      return "bad_value";
    case DecodeError::malformed:
      return "malformed";
  }
  return "unknown_decode_error";
}

std::vector<uint8_t> encode_frame(const Message& message) {
  if (std::vector<uint8_t> frame = compact_frame(message); !frame.empty()) return frame;
  fb::FlatBufferBuilder builder(initial_builder_bytes(message));
  const auto type = static_cast<wire::Message>(message.index() + 1);
  const fb::Offset<void> body =
      std::visit([&](const auto& m) { return encode_message(builder, m); }, message);
  builder.Finish(wire::CreateEnvelope(builder, type, body), wire::EnvelopeIdentifier());

  const size_t body_bytes = builder.GetSize();
  std::vector<uint8_t> frame(kFrameHeaderBytes + body_bytes);
  encode_frame_header(static_cast<uint32_t>(body_bytes),
                      std::span<uint8_t, kFrameHeaderBytes>(frame.data(), kFrameHeaderBytes));
  std::memcpy(frame.data() + kFrameHeaderBytes, builder.GetBufferPointer(), body_bytes);
  return frame;
}

SharedFrame encode_shared_frame(const Message& message) {
  return std::make_shared<const std::vector<uint8_t>>(encode_frame(message));
}

DecodeResult decode_body(std::span<const uint8_t> body, Message* out) {
  if (compact::is_compact(body)) {
    Message scratch;
    return decode_compact(body, out != nullptr ? out : &scratch);
  }
  if (body.size() < kMinBodyBytes) {
    return fail(DecodeError::too_short, "body of " + std::to_string(body.size()) +
                                            " bytes is shorter than a FlatBuffer with "
                                            "identifier (" +
                                            std::to_string(kMinBodyBytes) + ")");
  }
  if (body.size() >= FLATBUFFERS_MAX_BUFFER_SIZE) {
    return fail(DecodeError::verifier, "body of " + std::to_string(body.size()) +
                                           " bytes is over the FlatBuffers size limit");
  }
  if (!fb::BufferHasIdentifier(body.data(), wire::EnvelopeIdentifier())) {
    return fail(DecodeError::bad_identifier, "file identifier is not LSW1");
  }
  Message scratch;
  Message* target = out != nullptr ? out : &scratch;
  // The Verifier checks alignment relative to the buffer start; reading in place needs it in
  // memory too. FrameDecoder's bodies are aligned; anything else is decoded from a copy.
  if (reinterpret_cast<uintptr_t>(body.data()) % kBodyAlignBytes != 0) {
    std::vector<uint64_t> aligned((body.size() + sizeof(uint64_t) - 1) / sizeof(uint64_t));
    std::memcpy(aligned.data(), body.data(), body.size());
    return decode_verified(reinterpret_cast<const uint8_t*>(aligned.data()), body.size(), target);
  }
  return decode_verified(body.data(), body.size(), target);
}

}  // namespace lockstep::schema
