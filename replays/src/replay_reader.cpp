// Reading replays back: loading (every record checked), rebuilding the world, verification,
// diffs, and the JSON / CSV views used by lockstep-replay.
#include <algorithm>
#include <bit>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <ostream>

#include "lockstep/replays/record_file.h"
#include "lockstep/replays/replay_reader.h"
#include "lockstep/schema/level_file.h"
#include "lockstep/sim/scene.h"
#include "lockstep/sim/state_diff.h"
#include "replay_codec.h"
#include "replay_step.h"

namespace lockstep::replays {
namespace {

std::string at_record(uint64_t index, uint64_t offset) {
  return "record " + std::to_string(index) + " at byte " + std::to_string(offset) + ": ";
}

}  // namespace

using detail::hex64;
using detail::keyframe_at;

bool load_replay(std::span<const uint8_t> bytes, LoadedReplay* out, std::string* error,
                 uint64_t max_world_bytes) {
  LoadedReplay replay;
  replay.file_bytes = bytes.size();
  RecordReader reader(bytes);
  std::vector<uint8_t> scratch;
  detail::DecodedRecord record;
  std::span<const uint8_t> payload;
  bool have_header = false;
  while (true) {
    const uint64_t offset = reader.offset_bytes();
    const uint64_t index = reader.records_read();
    const RecordError status = reader.next(&payload);
    if (status != RecordError::none) break;
    std::string why;
    // Since format 8 a tick record may code its inputs against the tick record before it.
    const bool has_reference = have_header && !replay.ticks.empty() &&
                               replay.header.format_version >= kFirstFormatWithInputReference;
    if (!detail::decode_record(payload, &scratch, &record, &why,
                               has_reference ? &replay.ticks.back().inputs : nullptr)) {
      *error = at_record(index, offset) + why;
      return false;
    }
    if (!have_header) {
      if (record.kind != detail::RecordKind::header) {
        *error = at_record(index, offset) + "the file does not start with a header record";
        return false;
      }
      if (record.header.format_version > kReplayFormatVersion) {
        *error = "replay format version " + std::to_string(record.header.format_version) +
                 " is newer than this build reads (" + std::to_string(kReplayFormatVersion) +
                 "); written by lockstep " + record.header.lockstep_version;
        return false;
      }
      if (record.header.format_version == 0) {
        *error = at_record(index, offset) + "replay format version 0 is invalid";
        return false;
      }
      // The level counts with the world: its trees and copies are made when the world is.
      const schema::LevelView level =
          schema::view_level(record.header.level_meshes, record.header.level_heightfields);
      const uint64_t world_bytes =
          sim::world_memory_bytes(record.header.world_def) + sim::level_memory_bytes(level.def());
      if (world_bytes > max_world_bytes) {
        *error = at_record(index, offset) + "the header's WorldDef and level need " +
                 std::to_string((world_bytes + (1 << 20) - 1) >> 20) +
                 " MiB to simulate, over the memory budget of " +
                 std::to_string(max_world_bytes >> 20) + " MiB (--memory-budget-mb)";
        return false;
      }
      replay.header = std::move(record.header);
      have_header = true;
      continue;
    }
    if (record.kind == detail::RecordKind::header) {
      *error = at_record(index, offset) + "a second header record";
      return false;
    }
    if (record.kind == detail::RecordKind::keyframe) {
      const uint64_t expected =
          replay.keyframes.empty() ? replay.header.first_tick : replay.last_tick();
      if (record.keyframe.tick != expected) {
        *error = at_record(index, offset) + "keyframe for tick " +
                 std::to_string(record.keyframe.tick) + " where tick " + std::to_string(expected) +
                 " was expected";
        return false;
      }
      if (record.keyframe_is_delta) {
        // Its base is the keyframe before it in this file; without one it cannot be rebuilt.
        if (replay.keyframes.empty()) {
          *error = at_record(index, offset) + "delta keyframe for tick " +
                   std::to_string(record.keyframe.tick) +
                   " with no keyframe before it in the file to apply it to";
          return false;
        }
        if (!detail::apply_keyframe_delta(replay.keyframes.back().snapshot, &record, &why)) {
          *error = at_record(index, offset) + why;
          return false;
        }
      }
      replay.keyframes.push_back(std::move(record.keyframe));
      continue;
    }
    if (record.kind == detail::RecordKind::game_message) {
      // Written after the record of its tick, so it names a tick the file holds already.
      const uint64_t tick = record.game_message.tick;
      if (replay.keyframes.empty() || tick <= replay.header.first_tick ||
          tick > replay.last_tick() ||
          (!replay.game_messages.empty() && tick < replay.game_messages.back().tick)) {
        *error = at_record(index, offset) + "game message for tick " + std::to_string(tick) +
                 " out of order (the file is at tick " + std::to_string(replay.last_tick()) + ")";
        return false;
      }
      replay.game_messages.push_back(std::move(record.game_message));
      continue;
    }
    if (replay.keyframes.empty()) {
      *error = at_record(index, offset) + "a tick record before the first keyframe";
      return false;
    }
    if (record.tick.tick != replay.last_tick() + 1) {
      *error = at_record(index, offset) + "tick " + std::to_string(record.tick.tick) +
               " out of order (expected " + std::to_string(replay.last_tick() + 1) + ")";
      return false;
    }
    replay.ticks.push_back(std::move(record.tick));
  }
  replay.records = reader.records_read();
  switch (reader.error()) {
    case RecordError::end_of_file:
      replay.integrity = "intact: " + std::to_string(replay.records) + " records, " +
                         std::to_string(replay.file_bytes) + " bytes";
      break;
    case RecordError::truncated:
      replay.truncated = true;
      replay.integrity =
          "truncated (" + reader.message() + "); read up to the last complete record";
      break;
    case RecordError::bad_magic:
      *error = "not a lockstep replay file: " + reader.message();
      return false;
    default:
      *error = reader.message();
      return false;
  }
  if (!have_header) {
    *error = "replay file has no header record (" + replay.integrity + ")";
    return false;
  }
  if (replay.keyframes.empty()) {
    *error = "replay file has no keyframe record (" + replay.integrity + ")";
    return false;
  }
  *out = std::move(replay);
  return true;
}

bool load_replay_file(const std::string& path, LoadedReplay* out, std::string* error,
                      uint64_t max_world_bytes) {
  std::ifstream file(path, std::ios::binary | std::ios::ate);
  if (!file) {
    *error = "cannot open " + path + ": " + std::strerror(errno);
    return false;
  }
  const std::streamoff size = file.tellg();
  // 4 GiB, or 1 GiB where size_t is 32 bits (i686, wasm32): the whole file is read into memory.
  constexpr uint64_t kMaxFileBytes = sizeof(size_t) >= 8 ? uint64_t{4} << 30 : uint64_t{1} << 30;
  if (size < 0 || static_cast<uint64_t>(size) > kMaxFileBytes) {
    *error = "cannot read " + path + ": size unknown or over " +
             std::to_string(kMaxFileBytes >> 30) + " GiB";
    return false;
  }
  std::vector<uint8_t> bytes(static_cast<size_t>(size));
  file.seekg(0);
  if (!file.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(size))) {
    *error = "cannot read " + path;
    return false;
  }
  if (!load_replay(bytes, out, error, max_world_bytes)) {
    *error = path + ": " + *error;
    return false;
  }
  return true;
}

std::unique_ptr<sim::World> make_replay_world(const LoadedReplay& replay, std::string* error) {
  const ReplayHeader& h = replay.header;
  // Another simulation would step the same ticks differently and report a divergence at the
  // first contact that is not in the match. 0: a file older than the field, taken on trust.
  if (h.physics_revision != 0 && h.physics_revision != sim::kPhysicsRevision) {
    *error = "recorded with physics revision " + std::to_string(h.physics_revision) +
             " (lockstep " + h.lockstep_version + "); this build simulates revision " +
             std::to_string(sim::kPhysicsRevision) +
             ": re-simulate it with a build of the recording's revision";
    return nullptr;
  }
  const uint64_t fingerprint = sim::world_def_fingerprint(h.world_def);
  if (fingerprint != h.world_def_fingerprint) {
    *error = "WorldDef fingerprint mismatch: the file says " + hex64(h.world_def_fingerprint) +
             ", its WorldDef hashes to " + hex64(fingerprint) + " in this build";
    return nullptr;
  }
  if (!h.scene.empty()) {
    sim::Scene scene;
    if (!sim::make_builtin_scene(h.scene, &scene)) {
      *error = "scene '" + h.scene + "' is not built into this lockstep build (" +
               lockstep_version_string() + ")";
      return nullptr;
    }
    const uint64_t scene_fingerprint = sim::world_def_fingerprint(scene.def);
    if (scene_fingerprint != h.world_def_fingerprint) {
      *error = "WorldDef fingerprint mismatch: the file says " + hex64(h.world_def_fingerprint) +
               ", scene '" + h.scene + "' of this build has " + hex64(scene_fingerprint);
      return nullptr;
    }
  }
  sim::Error sim_error = sim::Error::none;
  const schema::LevelView level = schema::view_level(h.level_meshes, h.level_heightfields);
  std::unique_ptr<sim::World> world = sim::World::create(h.world_def, level.def(), &sim_error);
  if (!world) {
    *error =
        std::string("the file's WorldDef or level is refused: ") + sim::error_message(sim_error);
    return nullptr;
  }
  const ReplayKeyframe& keyframe = replay.keyframes.front();
  sim_error = world->restore_snapshot(keyframe.snapshot);
  if (sim_error != sim::Error::none) {
    *error = "keyframe at tick " + std::to_string(keyframe.tick) +
             " cannot be restored: " + sim::error_message(sim_error);
    return nullptr;
  }
  if (world->tick() != keyframe.tick || world->state_hash() != keyframe.state_hash) {
    *error = "keyframe at tick " + std::to_string(keyframe.tick) +
             " restores to a different state (tick " + std::to_string(world->tick()) + ", hash " +
             hex64(world->state_hash()) + ", recorded " + hex64(keyframe.state_hash) + ")";
    return nullptr;
  }
  return world;
}

namespace detail {

const char* body_type_name(sim::BodyType type) {
  switch (type) {
    case sim::BodyType::static_body:
      return "static";
    case sim::BodyType::kinematic:
      return "kinematic";
    case sim::BodyType::dynamic:
      return "dynamic";
  }
  return "unknown";
}

const char* shape_type_name(sim::ShapeType type) {
  switch (type) {
    case sim::ShapeType::sphere:
      return "sphere";
    case sim::ShapeType::box:
      return "box";
    case sim::ShapeType::capsule:
      return "capsule";
    case sim::ShapeType::plane:
      return "plane";
    case sim::ShapeType::hull:
      return "hull";
    case sim::ShapeType::compound:
      return "compound";
    case sim::ShapeType::mesh:
      return "mesh";
    case sim::ShapeType::heightfield:
      return "heightfield";
  }
  return "unknown";
}

std::string hex64(uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof(text), "%016" PRIx64, value);
  return text;
}

uint32_t step_replay_tick(sim::World& world, const ReplayTick& tick) {
  const sim::WorldCounters before = world.counters();
  world.step(sim::TickInput{tick.commands, tick.inputs});
  const sim::WorldCounters& after = world.counters();
  return static_cast<uint32_t>((after.commands_rejected - before.commands_rejected) +
                               (after.inputs_rejected - before.inputs_rejected));
}

const ReplayKeyframe* keyframe_at(const LoadedReplay& replay, uint64_t tick) {
  for (const ReplayKeyframe& k : replay.keyframes)
    if (k.tick == tick) return &k;
  return nullptr;
}

}  // namespace detail

std::unique_ptr<sim::World> simulate_replay_to(const LoadedReplay& replay, uint64_t tick,
                                               std::string* error) {
  if (tick < replay.header.first_tick || tick > replay.last_tick()) {
    *error = "tick " + std::to_string(tick) + " is outside the replay (ticks " +
             std::to_string(replay.header.first_tick) + ".." + std::to_string(replay.last_tick()) +
             ")";
    return nullptr;
  }
  std::unique_ptr<sim::World> world = make_replay_world(replay, error);
  if (!world) return nullptr;
  // The newest keyframe at or before `tick` is the writer's own state there.
  const ReplayKeyframe* start = &replay.keyframes.front();
  for (const ReplayKeyframe& k : replay.keyframes)
    if (k.tick <= tick) start = &k;
  if (start != &replay.keyframes.front()) {
    const sim::Error e = world->restore_snapshot(start->snapshot);
    if (e != sim::Error::none) {
      *error = "keyframe at tick " + std::to_string(start->tick) +
               " cannot be restored: " + sim::error_message(e);
      return nullptr;
    }
  }
  const uint64_t first = replay.header.first_tick;
  for (uint64_t t = start->tick + 1; t <= tick; ++t)
    detail::step_replay_tick(*world, replay.ticks[static_cast<size_t>(t - first - 1)]);
  return world;
}

VerifyResult verify_replay(const LoadedReplay& replay, const VerifyOptions& options) {
  VerifyResult result;
  std::unique_ptr<sim::World> world = make_replay_world(replay, &result.error);
  if (!world) return result;
  const auto start = std::chrono::steady_clock::now();
  const uint64_t total = replay.ticks.size();
  for (uint64_t i = 0; i < total; ++i) {
    const ReplayTick& tick = replay.ticks[static_cast<size_t>(i)];
    result.rejected_inputs += detail::step_replay_tick(*world, tick);
    if (tick.client_hash && *tick.client_hash != tick.authoritative_hash &&
        !result.first_client_mismatch_tick)
      result.first_client_mismatch_tick = tick.tick;
    if (world->state_hash() != tick.authoritative_hash) {
      result.first_divergent_tick = tick.tick;
      result.expected_hash = tick.authoritative_hash;
      result.actual_hash = world->state_hash();
      break;
    }
    ++result.ticks_verified;
    if (options.progress && (i % 64 == 63 || i + 1 == total)) options.progress(i + 1, total);
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.ok = !result.first_divergent_tick;
  return result;
}

uint64_t float_ulp_distance(float a, float b) {
  if (a != a || b != b) return std::numeric_limits<uint64_t>::max();
  // Map the sign-magnitude bit patterns onto a line where adjacent floats are 1 apart.
  const auto line = [](float f) {
    const uint32_t bits = std::bit_cast<uint32_t>(f);
    return (bits & 0x8000'0000u) ? -static_cast<int64_t>(bits & 0x7fff'ffffu)
                                 : static_cast<int64_t>(bits);
  };
  const int64_t d = line(a) - line(b);
  return static_cast<uint64_t>(d < 0 ? -d : d);
}

namespace {

std::vector<sim::BodyId> bodies_of(const sim::World& world) {
  std::vector<sim::BodyId> ids(world.body_count());
  ids.resize(world.list_bodies(ids));
  return ids;
}

}  // namespace

std::vector<FieldDiff> diff_worlds(const sim::World& a, const sim::World& b, size_t max_fields) {
  std::vector<FieldDiff> diffs;
  for (const sim::StateFieldDiff& d : sim::diff_state(a, b, max_fields)) {
    const uint64_t ulps = d.is_float ? float_ulp_distance(static_cast<float>(d.value_a),
                                                          static_cast<float>(d.value_b))
                                     : 0;
    // A player's score is a field of the null body: "score[P]".
    std::string field = d.player != 0 ? "score[" + std::to_string(d.player) + "]" : d.field;
    diffs.push_back({d.body, std::move(field), d.value_a, d.value_b, ulps});
  }
  return diffs;
}

namespace {

// The writer's state at `tick`: its keyframe there, or a re-simulation from its newest earlier
// keyframe. *reproduced is false when the re-simulated hash is not the hash the writer recorded.
std::unique_ptr<sim::World> writer_state_at(const LoadedReplay& replay, uint64_t tick,
                                            bool* reproduced, std::string* error) {
  std::unique_ptr<sim::World> world = simulate_replay_to(replay, tick, error);
  if (!world) return nullptr;
  if (keyframe_at(replay, tick)) {
    *reproduced = true;
  } else {
    const ReplayTick& record =
        replay.ticks[static_cast<size_t>(tick - replay.header.first_tick - 1)];
    *reproduced = world->state_hash() == record.writer_hash();
  }
  return world;
}

}  // namespace

DiffResult diff_replays(const LoadedReplay& a, const LoadedReplay& b, size_t max_fields) {
  DiffResult result;
  if (a.header.world_def_fingerprint != b.header.world_def_fingerprint) {
    result.error = "the replays have different WorldDefs (fingerprints " +
                   hex64(a.header.world_def_fingerprint) + " and " +
                   hex64(b.header.world_def_fingerprint) + "): not the same match";
    return result;
  }
  const uint64_t first = std::max(a.header.first_tick, b.header.first_tick);
  const uint64_t last = std::min(a.last_tick(), b.last_tick());
  if (first > last) {
    result.error = "the replays share no ticks (" + std::to_string(a.header.first_tick) + ".." +
                   std::to_string(a.last_tick()) + " and " + std::to_string(b.header.first_tick) +
                   ".." + std::to_string(b.last_tick()) + ")";
    return result;
  }
  result.common_first_tick = first;
  result.common_last_tick = last;
  const auto hash_at = [](const LoadedReplay& r, uint64_t t) -> std::optional<uint64_t> {
    if (t == r.header.first_tick) {
      const ReplayKeyframe* k = keyframe_at(r, t);
      return k ? std::optional<uint64_t>(k->state_hash) : std::nullopt;
    }
    return r.ticks[static_cast<size_t>(t - r.header.first_tick - 1)].writer_hash();
  };
  for (uint64_t t = first; t <= last; ++t) {
    const std::optional<uint64_t> ha = hash_at(a, t), hb = hash_at(b, t);
    if (ha && hb && *ha != *hb) {
      result.first_divergent_tick = t;
      break;
    }
  }
  result.ok = true;
  if (!result.first_divergent_tick) return result;

  uint64_t t = *result.first_divergent_tick;
  bool reproduced_a = false, reproduced_b = false;
  std::unique_ptr<sim::World> wa = writer_state_at(a, t, &reproduced_a, &result.error);
  std::unique_ptr<sim::World> wb =
      wa ? writer_state_at(b, t, &reproduced_b, &result.error) : nullptr;
  if (!wa || !wb) {
    result.ok = false;
    return result;
  }
  result.note = "states at tick " + std::to_string(t) + " from each file's keyframes and inputs";
  if (!reproduced_a || !reproduced_b) {
    // A writer's world left its own inputs (nondeterminism or an outside edit): its states are
    // only known at its keyframes. Compare at its first keyframe after the divergence.
    const LoadedReplay& odd = !reproduced_a ? a : b;
    const ReplayKeyframe* next = nullptr;
    for (const ReplayKeyframe& k : odd.keyframes)
      if (k.tick > t && k.tick <= last) {
        next = &k;
        break;
      }
    const char* which = !reproduced_a ? "A" : "B";
    if (next) {
      t = next->tick;
      wa = writer_state_at(a, t, &reproduced_a, &result.error);
      wb = wa ? writer_state_at(b, t, &reproduced_b, &result.error) : nullptr;
      if (!wa || !wb) {
        result.ok = false;
        return result;
      }
      result.note =
          std::string("file ") + which + "'s recorded hash at tick " +
          std::to_string(*result.first_divergent_tick) +
          " does not follow from its inputs; states compared at its next keyframe, tick " +
          std::to_string(t);
    } else {
      result.note = std::string("file ") + which + "'s recorded hash at tick " + std::to_string(t) +
                    " does not follow from its inputs and it has no later keyframe; the states "
                    "compared are re-simulated";
    }
  }
  result.compared_tick = t;
  result.fields = diff_worlds(*wa, *wb, max_fields);
  return result;
}

namespace {

void append_float(std::string* out, float value) {
  char text[32];
  if (value != value || value - value != 0) {
    *out += '"';
    std::snprintf(text, sizeof(text), "%g", static_cast<double>(value));
    *out += text;
    *out += '"';
    return;
  }
  std::snprintf(text, sizeof(text), "%.9g", static_cast<double>(value));
  *out += text;
}

void append_vec(std::string* out, const float* values, int count) {
  *out += '[';
  for (int i = 0; i < count; ++i) {
    if (i) *out += ',';
    append_float(out, values[i]);
  }
  *out += ']';
}

}  // namespace

std::string game_state_text(const sim::World& world) {
  std::vector<sim::BodyId> ids(world.body_count());
  ids.resize(world.list_bodies(ids));
  std::vector<uint32_t> players;
  for (const sim::BodyId id : ids) {
    sim::BodyView v;
    if (world.get_body(id, &v) == sim::Error::none && v.owner_player != 0) {
      players.push_back(v.owner_player);
    }
  }
  for (uint32_t p = 1; p <= sim::kMaxPlayers; ++p) {
    if (world.score(p) != 0) players.push_back(p);
  }
  std::sort(players.begin(), players.end());
  players.erase(std::unique(players.begin(), players.end()), players.end());
  const auto per_player = [&players](uint32_t field, const sim::World& w) {
    std::string out;
    for (const uint32_t p : players) {
      if (!out.empty()) out += ',';
      out += std::to_string(p) + ":" + std::to_string(w.state(field, p));
    }
    return out.empty() ? std::string("-") : out;
  };
  std::string out = "score=" + per_player(sim::kScoreStateField, world);
  const std::span<const sim::StateFieldDef> fields = world.state_fields();
  for (uint32_t f = 0; f < fields.size(); ++f) {
    out += ';';
    out.append(fields[f].name, strnlen(fields[f].name, sizeof(fields[f].name)));
    out += '=';
    out += fields[f].scope == sim::StateScope::room ? std::to_string(world.state(f))
                                                    : per_player(f, world);
  }
  return out;
}

std::string dump_state_json(const sim::World& world) {
  std::string out = "{\"tick\":" + std::to_string(world.tick()) + ",\"state_hash\":\"" +
                    hex64(world.state_hash()) + "\",\"bodies\":[";
  bool first = true;
  for (const sim::BodyId id : bodies_of(world)) {
    sim::BodyView v;
    if (world.get_body(id, &v) != sim::Error::none) continue;
    if (!first) out += ',';
    first = false;
    out += "\n{\"index1\":" + std::to_string(id.index1) +
           ",\"generation\":" + std::to_string(id.generation) + ",\"type\":\"" +
           detail::body_type_name(v.type) +
           "\",\"owner_player\":" + std::to_string(v.owner_player) +
           ",\"asleep\":" + (v.asleep ? "true" : "false") + ",\"mass_kg\":";
    append_float(&out, v.mass_kg);
    const float position[3] = {v.position.x, v.position.y, v.position.z};
    const float orientation[4] = {v.orientation.x, v.orientation.y, v.orientation.z,
                                  v.orientation.w};
    const float linear[3] = {v.linear_velocity.x, v.linear_velocity.y, v.linear_velocity.z};
    const float angular[3] = {v.angular_velocity.x, v.angular_velocity.y, v.angular_velocity.z};
    const float half_extents[3] = {v.shape.half_extents.x, v.shape.half_extents.y,
                                   v.shape.half_extents.z};
    out += ",\"position\":";
    append_vec(&out, position, 3);
    out += ",\"orientation\":";
    append_vec(&out, orientation, 4);
    out += ",\"linear_velocity\":";
    append_vec(&out, linear, 3);
    out += ",\"angular_velocity\":";
    append_vec(&out, angular, 3);
    out += ",\"shape\":{\"type\":\"";
    out += detail::shape_type_name(v.shape.type);
    out += "\",\"radius\":";
    append_float(&out, v.shape.radius);
    out += ",\"half_extents\":";
    append_vec(&out, half_extents, 3);
    out += ",\"half_height\":";
    append_float(&out, v.shape.half_height);
    out += "}}";
  }
  out += "\n],\"scores\":{";
  bool first_score = true;
  for (uint32_t p = 1; p <= sim::kMaxPlayers; ++p) {
    if (world.score(p) == 0) continue;
    if (!first_score) out += ',';
    first_score = false;
    out += "\"" + std::to_string(p) + "\":" + std::to_string(world.score(p));
  }
  out += "}}\n";
  return out;
}

bool export_csv(const LoadedReplay& replay, std::ostream& out, std::string* error) {
  std::unique_ptr<sim::World> world = make_replay_world(replay, error);
  if (!world) return false;
  std::vector<sim::BodyId> ids(world->def().max_bodies);
  char line[256];
  out << "tick,body_index1,body_generation,px,py,pz,qx,qy,qz,qw\n";
  const auto write_tick = [&] {
    const uint32_t count = world->list_bodies(ids);
    for (uint32_t i = 0; i < count; ++i) {
      sim::BodyView v;
      if (world->get_body(ids[i], &v) != sim::Error::none) continue;
      std::snprintf(line, sizeof(line), "%" PRIu64 ",%u,%u,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g\n",
                    world->tick(), ids[i].index1, ids[i].generation,
                    static_cast<double>(v.position.x), static_cast<double>(v.position.y),
                    static_cast<double>(v.position.z), static_cast<double>(v.orientation.x),
                    static_cast<double>(v.orientation.y), static_cast<double>(v.orientation.z),
                    static_cast<double>(v.orientation.w));
      out << line;
    }
  };
  write_tick();
  for (const ReplayTick& tick : replay.ticks) {
    detail::step_replay_tick(*world, tick);
    write_tick();
  }
  if (!out) {
    *error = "writing the CSV failed";
    return false;
  }
  return true;
}

}  // namespace lockstep::replays
