// Replay records ↔ plain structs. Decoding never trusts a payload: identifier first, then the
// Verifier with the limits.h caps, then checks on what the Verifier cannot know (enum ranges).
// Payloads sit at arbitrary offsets in a record file (4 mod 8 after the 12-byte record header),
// so they are copied into an aligned scratch buffer before the Verifier and the accessors see
// them; FlatBuffers reads 8-byte fields in place.
#include "replay_codec.h"

#include <algorithm>
#include <cstring>

#include <flatbuffers/flatbuffers.h>

#include "lockstep/replays/record_file.h"
#include "lockstep/schema/compact_codec.h"
#include "lockstep/schema/limits.h"
#include "lockstep/schema/player_input_codec.h"
#include "lockstep/schema/replay_generated.h"
#include "lockstep/schema/world_codec.h"
#include "replay_step.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace lockstep::replays::detail {
namespace fb = flatbuffers;
namespace rp = lockstep::replay;

struct RecordEncoder::Impl {
  explicit Impl(size_t initial_bytes) : builder(initial_bytes) {}
  fb::FlatBufferBuilder builder;
  std::vector<uint8_t> compact;       // tick records (their capacity is kept between records)
  std::vector<uint8_t> delta;         // a delta keyframe's XORed snapshot, before packing
  std::vector<uint8_t> packed_delta;  // and packed, to compare with the packed snapshot
};

RecordEncoder::RecordEncoder(size_t initial_bytes) : impl_(new Impl(initial_bytes)) {}
RecordEncoder::~RecordEncoder() {
  delete impl_;
}

namespace {

std::span<const uint8_t> finish(fb::FlatBufferBuilder& builder, rp::Record type,
                                fb::Offset<void> record) {
  const auto root = rp::CreateReplayRecord(builder, type, record);
  rp::FinishReplayRecordBuffer(builder, root);  // plain Finish: record_file frames it
  return {builder.GetBufferPointer(), builder.GetSize()};
}

std::string string_or_empty(const fb::String* s) {
  return s ? s->str() : std::string();
}

}  // namespace

std::span<const uint8_t> RecordEncoder::header(const ReplayHeader& h) {
  fb::FlatBufferBuilder& b = impl_->builder;
  b.Clear();
  const auto version = b.CreateString(h.lockstep_version.empty() ? lockstep_version_string()
                                                                 : h.lockstep_version.c_str());
  const auto def = schema::encode_world_def(b, h.world_def);
  const auto scene = b.CreateString(h.scene);
  const auto room = b.CreateString(h.room);
  // A world without level geometry writes no level table, as files before format 10.
  fb::Offset<lockstep::wire::Level> level;
  if (!h.level_meshes.empty() || !h.level_heightfields.empty()) {
    level = schema::encode_level_table(b, replay_level_digest(h), true, h.level_meshes,
                                       h.level_heightfields);
  }
  const uint64_t fingerprint =
      h.world_def_fingerprint ? h.world_def_fingerprint : sim::world_def_fingerprint(h.world_def);
  const auto header = rp::CreateHeader(
      b, h.format_version, version, def, fingerprint, h.tick_rate_hz, scene, h.first_tick,
      h.writer == ReplayWriterKind::client ? rp::WriterKind::Client : rp::WriterKind::Server,
      h.player_id, room, h.physics_revision, level);
  return finish(b, rp::Record::Header, header.Union());
}

std::span<const uint8_t> RecordEncoder::keyframe(uint64_t tick, uint64_t state_hash,
                                                 std::span<const uint8_t> snapshot,
                                                 std::span<const uint8_t> base) {
  fb::FlatBufferBuilder& b = impl_->builder;
  b.Clear();
  // Since format 6 the snapshot is packed (a keyframe is mostly zero bytes). Since format 7 a
  // later keyframe may be XORed with the one before it first: the bytes of bodies that did not
  // move (and of every field that kept its value) become zeros, which the packing drops. Where
  // the layouts do not line up the delta can pack worse than the snapshot: the smaller is kept.
  std::vector<uint8_t>& packed = impl_->compact;
  packed.clear();
  schema::compact::append_packed(snapshot, &packed);
  bool is_delta = false;
  if (!base.empty()) {
    std::vector<uint8_t>& delta = impl_->delta;
    delta.assign(snapshot.begin(), snapshot.end());
    const size_t common = std::min(snapshot.size(), base.size());
    for (size_t i = 0; i < common; ++i)
      delta[i] ^= base[i];
    std::vector<uint8_t>& packed_delta = impl_->packed_delta;
    packed_delta.clear();
    schema::compact::append_packed(delta, &packed_delta);
    // The delta also carries its snapshot's 8-byte checksum.
    if (packed_delta.size() + 8 < packed.size()) {
      packed.swap(packed_delta);
      is_delta = true;
    }
  }
  const auto bytes = b.CreateVector(packed.data(), packed.size());
  rp::KeyframeBuilder k(b);
  k.add_tick(tick);
  k.add_state_hash(state_hash);
  if (is_delta) {
    k.add_snapshot_delta(bytes);
    k.add_snapshot_xxh3(XXH3_64bits(snapshot.data(), snapshot.size()));
  } else {
    k.add_snapshot_packed(bytes);
  }
  return finish(b, rp::Record::Keyframe, k.Finish().Union());
}

std::span<const uint8_t> RecordEncoder::tick(uint64_t tick, std::span<const sim::Input> inputs,
                                             uint64_t authoritative_hash,
                                             std::optional<uint64_t> client_hash,
                                             std::span<const sim::Command> commands,
                                             std::optional<std::span<const sim::Input>> previous) {
  // Since format 6 a tick record is the compact body of its tick's TickFrame (the wire's
  // bytes), with the client's hash flagged in client-written files; not a FlatBuffer. Since
  // format 8 its inputs are coded against the previous tick record's when there is one.
  std::vector<uint8_t>& out = impl_->compact;
  out.clear();
  schema::compact::append_tick(tick, authoritative_hash, client_hash, inputs, commands, &out,
                               previous);
  return out;
}

namespace {

// A tick record of format 6 or later: the compact body of its tick's TickFrame.
bool decode_compact_tick(std::span<const uint8_t> payload, DecodedRecord* out, std::string* error,
                         const std::vector<sim::Input>* previous_tick_inputs) {
  schema::compact::Tick tick;
  std::optional<std::span<const sim::Input>> reference;
  if (previous_tick_inputs != nullptr) reference = *previous_tick_inputs;
  if (!schema::compact::read_tick(payload, true, &tick, error, reference)) {
    // Name the tick when at least its number is readable.
    size_t at = 1;
    uint64_t number = 0;
    std::string unreadable;
    const bool named = schema::compact::read_varint(payload, &at, &number, &unreadable);
    *error = (named ? "replay tick " + std::to_string(number) : std::string("replay tick record")) +
             ": " + *error;
    return false;
  }
  out->kind = RecordKind::tick;
  ReplayTick& o = out->tick;
  o.tick = tick.tick;
  o.authoritative_hash = tick.state_hash;
  o.client_hash = tick.client_hash;
  o.inputs = std::move(tick.inputs);
  o.commands = std::move(tick.commands);
  return true;
}

bool decode_header(const rp::Header* h, DecodedRecord* out, std::string* error) {
  // The Verifier accepts a union whose type is set while its table is absent.
  if (!h) {
    *error = "header record without its table";
    return false;
  }
  if (!h->world_def()) {
    *error = "header record without a WorldDef";
    return false;
  }
  if (h->writer() != rp::WriterKind::Server && h->writer() != rp::WriterKind::Client) {
    *error = "header record with an unknown writer kind";
    return false;
  }
  out->kind = RecordKind::header;
  ReplayHeader& o = out->header;
  o.format_version = h->format_version();
  o.lockstep_version = string_or_empty(h->lockstep_version());
  if (!schema::decode_world_def(*h->world_def(), &o.world_def, error)) {
    *error = "header " + *error;
    return false;
  }
  o.world_def_fingerprint = h->world_def_fingerprint();
  o.tick_rate_hz = h->tick_rate_hz();
  o.scene = string_or_empty(h->scene());
  o.first_tick = h->first_tick();
  o.writer =
      h->writer() == rp::WriterKind::Client ? ReplayWriterKind::client : ReplayWriterKind::server;
  o.player_id = h->player_id();
  o.room = string_or_empty(h->room());
  o.physics_revision = h->physics_revision();
  o.level_meshes.clear();
  o.level_heightfields.clear();
  if (const lockstep::wire::Level* level = h->level()) {
    uint64_t digest = 0;
    bool carried = false;
    std::string why;
    if (!schema::decode_level_table(*level, &digest, &carried, &o.level_meshes,
                                    &o.level_heightfields, &why)) {
      *error = "header level: " + why;
      return false;
    }
    if (!carried && digest != 0) {
      // A file is read alone: there is no copy of the level anywhere else to load.
      *error = "header level: the geometry of level " + hex64(digest) + " is not in the file";
      return false;
    }
  }
  return true;
}

bool decode_keyframe(const rp::Keyframe* k, DecodedRecord* out, std::string* error) {
  if (!k) {
    *error = "keyframe record without its table";
    return false;
  }
  const int forms =
      (k->snapshot() ? 1 : 0) + (k->snapshot_packed() ? 1 : 0) + (k->snapshot_delta() ? 1 : 0);
  if (forms == 0) {
    *error = "keyframe record without a snapshot";
    return false;
  }
  if (forms > 1) {
    *error = "keyframe record with more than one snapshot";
    return false;
  }
  if (k->snapshot_delta() && !k->snapshot_xxh3().has_value()) {
    *error = "delta keyframe record without the checksum of its snapshot";
    return false;
  }
  out->kind = RecordKind::keyframe;
  out->keyframe.tick = k->tick();
  out->keyframe.state_hash = k->state_hash();
  out->keyframe_is_delta = k->snapshot_delta() != nullptr;
  out->keyframe_snapshot_xxh3 = k->snapshot_xxh3().value_or(0);
  if (k->snapshot()) {  // formats up to 5
    out->keyframe.snapshot.assign(k->snapshot()->begin(), k->snapshot()->end());
    return true;
  }
  const auto* packed = k->snapshot_delta() ? k->snapshot_delta() : k->snapshot_packed();
  if (!schema::compact::read_packed(std::span<const uint8_t>(packed->data(), packed->size()),
                                    schema::kMaxReplayRecordBytes, &out->keyframe.snapshot,
                                    error)) {
    *error = (out->keyframe_is_delta ? "delta keyframe record: " : "keyframe record: ") + *error;
    return false;
  }
  return true;
}

// A tick record of formats up to 5: a FlatBuffers table.
bool decode_table_tick(const rp::Tick* t, DecodedRecord* out, std::string* error) {
  if (!t) {
    *error = "tick record without its table";
    return false;
  }
  out->kind = RecordKind::tick;
  ReplayTick& o = out->tick;
  o.tick = t->tick();
  o.authoritative_hash = t->authoritative_hash();
  o.client_hash = t->client_hash();
  schema::read_player_inputs(t->inputs(), &o.inputs);
  if (!schema::read_player_input_velocities(t->input_velocities(), &o.inputs)) {
    *error = "replay tick " + std::to_string(o.tick) + ": input_velocities is not one per input";
    return false;
  }
  std::string why;
  if (!schema::read_world_commands(t->commands(), &o.commands, &why)) {
    *error = "replay tick " + std::to_string(o.tick) + ": " + why;
    return false;
  }
  return true;
}

}  // namespace

bool decode_record(std::span<const uint8_t> payload, std::vector<uint8_t>* scratch,
                   DecodedRecord* out, std::string* error,
                   const std::vector<sim::Input>* previous_tick_inputs) {
  if (schema::compact::is_compact(payload)) {
    return decode_compact_tick(payload, out, error, previous_tick_inputs);
  }
  // Header and keyframe records, and the tick records of formats up to 5: FlatBuffers.
  if (payload.size() < 8 ||
      !fb::BufferHasIdentifier(payload.data(), rp::ReplayRecordIdentifier())) {
    std::string id;
    for (size_t i = 4; i < 8 && i < payload.size(); ++i) {
      const char c = static_cast<char>(payload[i]);
      id += (c >= 0x20 && c < 0x7f) ? c : '?';
    }
    *error = "not a replay record (file identifier '" + id + "', expected '" +
             rp::ReplayRecordIdentifier() + "')";
    return false;
  }
  scratch->assign(payload.begin(), payload.end());  // vector storage is suitably aligned
  fb::Verifier::Options options;
  options.max_depth = schema::kVerifierMaxDepth;
  options.max_tables = schema::kVerifierMaxTables;
  fb::Verifier verifier(scratch->data(), scratch->size(), options);
  if (!rp::VerifyReplayRecordBuffer(verifier)) {
    *error = "replay record fails FlatBuffers verification";
    return false;
  }
  const rp::ReplayRecord* record = rp::GetReplayRecord(scratch->data());
  switch (record->record_type()) {
    case rp::Record::Header:
      return decode_header(record->record_as_Header(), out, error);
    case rp::Record::Keyframe:
      return decode_keyframe(record->record_as_Keyframe(), out, error);
    case rp::Record::Tick:
      return decode_table_tick(record->record_as_Tick(), out, error);
    case rp::Record::GameMessage: {
      const rp::GameMessage* m = record->record_as_GameMessage();
      if (m == nullptr || m->data() == nullptr || m->data()->size() == 0) {
        *error = "game message record without its bytes";
        return false;
      }
      out->kind = RecordKind::game_message;
      out->game_message.tick = m->tick();
      out->game_message.player = m->player();
      out->game_message.data.assign(m->data()->begin(), m->data()->end());
      return true;
    }
    default:
      *error = "replay record of an unknown kind (" +
               std::to_string(static_cast<unsigned>(record->record_type())) + ")";
      return false;
  }
}

bool apply_keyframe_delta(std::span<const uint8_t> base, DecodedRecord* record,
                          std::string* error) {
  std::vector<uint8_t>& snapshot = record->keyframe.snapshot;
  const size_t common = std::min(snapshot.size(), base.size());
  for (size_t i = 0; i < common; ++i)
    snapshot[i] ^= base[i];
  record->keyframe_is_delta = false;
  const uint64_t rebuilt = XXH3_64bits(snapshot.data(), snapshot.size());
  if (rebuilt != record->keyframe_snapshot_xxh3) {
    *error = "delta keyframe for tick " + std::to_string(record->keyframe.tick) +
             ": the snapshot rebuilt from it has checksum " + hex64(rebuilt) + ", recorded " +
             hex64(record->keyframe_snapshot_xxh3) +
             " (a corrupt delta, or not the keyframe it was made against)";
    return false;
  }
  return true;
}

std::span<const uint8_t> RecordEncoder::game_message(uint64_t tick, uint32_t player,
                                                     std::span<const uint8_t> data) {
  fb::FlatBufferBuilder& b = impl_->builder;
  b.Clear();
  const auto bytes = b.CreateVector(data.data(), data.size());
  return finish(b, rp::Record::GameMessage, rp::CreateGameMessage(b, tick, player, bytes).Union());
}

namespace {
void put_le(std::vector<uint8_t>* out, uint64_t value, size_t bytes) {
  for (size_t i = 0; i < bytes; ++i)
    out->push_back(static_cast<uint8_t>(value >> (8 * i)));
}
}  // namespace

void append_file_header(std::vector<uint8_t>* out) {
  out->insert(out->end(), kRecordFileMagic, kRecordFileMagic + 4);
  put_le(out, kRecordFormatVersion, 2);
  put_le(out, 0, 2);
}

void append_record(std::vector<uint8_t>* out, std::span<const uint8_t> payload) {
  put_le(out, payload.size(), 4);
  put_le(out, XXH3_64bits(payload.data(), payload.size()), 8);
  out->insert(out->end(), payload.begin(), payload.end());
}

}  // namespace lockstep::replays::detail
