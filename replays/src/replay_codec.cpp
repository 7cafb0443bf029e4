// Replay records ↔ plain structs. Decoding never trusts a payload: identifier first, then the
// Verifier with the limits.h caps, then checks on what the Verifier cannot know (enum ranges).
// Payloads sit at arbitrary offsets in a record file (4 mod 8 after the 12-byte record header),
// so they are copied into an aligned scratch buffer before the Verifier and the accessors see
// them; FlatBuffers reads 8-byte fields in place.
#include "replay_codec.h"

#include <cstring>

#include <flatbuffers/flatbuffers.h>

#include "lockstep/replays/record_file.h"
#include "lockstep/schema/limits.h"
#include "lockstep/schema/player_input_codec.h"
#include "lockstep/schema/replay_generated.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace lockstep::replays::detail {
namespace fb = flatbuffers;
namespace rp = lockstep::replay;

struct RecordEncoder::Impl {
  explicit Impl(size_t initial_bytes) : builder(initial_bytes) {}
  fb::FlatBufferBuilder builder;
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

fb::Offset<rp::WorldDef> encode_world_def(fb::FlatBufferBuilder& b, const sim::WorldDef& d) {
  fb::Offset<fb::Vector<fb::Offset<rp::BodyTemplate>>> templates;
  const uint32_t template_count =
      d.template_count <= sim::kMaxBodyTemplates ? d.template_count : sim::kMaxBodyTemplates;
  if (template_count > 0) {
    std::vector<fb::Offset<rp::BodyTemplate>> list;
    for (uint32_t i = 0; i < template_count; ++i) {
      const sim::BodyTemplate& t = d.templates[i];
      const auto name = b.CreateString(t.name, strnlen(t.name, sizeof(t.name)));
      const sim::ShapeDef& s = t.shape;
      list.push_back(rp::CreateBodyTemplate(
          b, name, static_cast<uint8_t>(t.type), static_cast<uint8_t>(s.type), s.radius,
          s.half_extents.x, s.half_extents.y, s.half_extents.z, s.half_height, s.plane_normal.x,
          s.plane_normal.y, s.plane_normal.z, s.plane_offset, s.density, s.friction, s.restitution,
          s.category, s.mask, s.sensor, t.linear_damping, t.angular_damping, t.allow_sleep,
          t.bullet));
    }
    templates = b.CreateVector(list);
  }
  rp::WorldDefBuilder w(b);
  w.add_max_commands_per_tick(d.max_commands_per_tick);
  if (template_count > 0) w.add_templates(templates);
  w.add_dt_s(d.dt_s);
  w.add_gravity_x(d.gravity.x);
  w.add_gravity_y(d.gravity.y);
  w.add_gravity_z(d.gravity.z);
  w.add_velocity_iterations(d.velocity_iterations);
  w.add_relax_iterations(d.relax_iterations);
  w.add_substeps(d.substeps);
  w.add_contact_hertz(d.contact_hertz);
  w.add_contact_damping_ratio(d.contact_damping_ratio);
  w.add_linear_slop_m(d.linear_slop_m);
  w.add_max_bias_velocity(d.max_bias_velocity);
  w.add_restitution_threshold(d.restitution_threshold);
  w.add_contact_margin_m(d.contact_margin_m);
  w.add_max_speculative_margin_m(d.max_speculative_margin_m);
  w.add_max_angular_speed(d.max_angular_speed);
  w.add_max_linear_speed(d.max_linear_speed);
  w.add_max_input_linear_impulse(d.max_input_linear_impulse);
  w.add_max_input_angular_impulse(d.max_input_angular_impulse);
  w.add_max_bodies(d.max_bodies);
  w.add_max_contact_pairs(d.max_contact_pairs);
  w.add_max_contact_points(d.max_contact_points);
  w.add_max_candidate_pairs(d.max_candidate_pairs);
  w.add_max_events(d.max_events);
  w.add_max_inputs_per_tick(d.max_inputs_per_tick);
  w.add_measure_stage_times(d.measure_stage_times);
  w.add_enable_sleep(d.enable_sleep);
  w.add_sleep_speed_threshold_mps(d.sleep_speed_threshold_mps);
  w.add_time_to_sleep_s(d.time_to_sleep_s);
  w.add_contact_reuse_distance_m(d.contact_reuse_distance_m);
  w.add_contact_reuse_angle_rad(d.contact_reuse_angle_rad);
  w.add_max_input_linear_velocity(d.max_input_linear_velocity);
  w.add_max_input_angular_velocity(d.max_input_angular_velocity);
  return w.Finish();
}

// Absent fields read as the schema default (0), which is what was written: the builder leaves
// out fields equal to their default, and every default here is 0.
// Templates beyond the capacity, bad names or enum values: false with *error set.
bool decode_world_def(const rp::WorldDef& w, sim::WorldDef* out, std::string* error) {
  sim::WorldDef& d = *out;
  d = sim::WorldDef{};
  d.dt_s = w.dt_s();
  d.gravity = {w.gravity_x(), w.gravity_y(), w.gravity_z()};
  d.velocity_iterations = w.velocity_iterations();
  d.relax_iterations = w.relax_iterations();
  d.substeps = w.substeps();
  d.contact_hertz = w.contact_hertz();
  d.contact_damping_ratio = w.contact_damping_ratio();
  d.linear_slop_m = w.linear_slop_m();
  d.max_bias_velocity = w.max_bias_velocity();
  d.restitution_threshold = w.restitution_threshold();
  d.contact_margin_m = w.contact_margin_m();
  d.max_speculative_margin_m = w.max_speculative_margin_m();
  d.max_angular_speed = w.max_angular_speed();
  d.max_linear_speed = w.max_linear_speed();
  d.max_input_linear_impulse = w.max_input_linear_impulse();
  d.max_input_angular_impulse = w.max_input_angular_impulse();
  d.max_bodies = w.max_bodies();
  d.max_contact_pairs = w.max_contact_pairs();
  d.max_contact_points = w.max_contact_points();
  d.max_candidate_pairs = w.max_candidate_pairs();
  d.max_events = w.max_events();
  d.max_inputs_per_tick = w.max_inputs_per_tick();
  d.measure_stage_times = w.measure_stage_times();
  d.enable_sleep = w.enable_sleep();
  d.sleep_speed_threshold_mps = w.sleep_speed_threshold_mps();
  d.time_to_sleep_s = w.time_to_sleep_s();
  d.contact_reuse_distance_m = w.contact_reuse_distance_m();
  d.contact_reuse_angle_rad = w.contact_reuse_angle_rad();
  d.max_input_linear_velocity = w.max_input_linear_velocity();
  d.max_input_angular_velocity = w.max_input_angular_velocity();
  // 0 is no valid capacity: a file written before the field carries the default.
  d.max_commands_per_tick = w.max_commands_per_tick() != 0 ? w.max_commands_per_tick()
                                                           : sim::WorldDef{}.max_commands_per_tick;
  d.template_count = 0;
  if (const auto* templates = w.templates()) {
    if (templates->size() > sim::kMaxBodyTemplates) {
      *error = "header WorldDef with " + std::to_string(templates->size()) +
               " templates (at most " + std::to_string(sim::kMaxBodyTemplates) + ")";
      return false;
    }
    for (const rp::BodyTemplate* t : *templates) {
      sim::BodyTemplate& o = d.templates[d.template_count];
      const std::string_view name = t->name() ? t->name()->string_view() : std::string_view();
      if (!sim::set_template_name(&o, name) ||
          t->type() > static_cast<uint8_t>(sim::BodyType::dynamic) ||
          t->shape_type() > static_cast<uint8_t>(sim::ShapeType::plane)) {
        *error = "header WorldDef template " + std::to_string(d.template_count) +
                 " has a bad name, body type or shape type";
        return false;
      }
      o.type = static_cast<sim::BodyType>(t->type());
      sim::ShapeDef& s = o.shape;
      s.type = static_cast<sim::ShapeType>(t->shape_type());
      s.radius = t->radius();
      s.half_extents = {t->half_x(), t->half_y(), t->half_z()};
      s.half_height = t->half_height();
      s.plane_normal = {t->plane_normal_x(), t->plane_normal_y(), t->plane_normal_z()};
      s.plane_offset = t->plane_offset();
      s.density = t->density();
      s.friction = t->friction();
      s.restitution = t->restitution();
      s.category = t->category();
      s.mask = t->mask();
      s.sensor = t->sensor();
      o.linear_damping = t->linear_damping();
      o.angular_damping = t->angular_damping();
      o.allow_sleep = t->allow_sleep();
      o.bullet = t->bullet();
      ++d.template_count;
    }
  }
  return true;
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
  const auto def = encode_world_def(b, h.world_def);
  const auto scene = b.CreateString(h.scene);
  const auto room = b.CreateString(h.room);
  const uint64_t fingerprint =
      h.world_def_fingerprint ? h.world_def_fingerprint : sim::world_def_fingerprint(h.world_def);
  const auto header = rp::CreateHeader(
      b, h.format_version, version, def, fingerprint, h.tick_rate_hz, scene, h.first_tick,
      h.writer == ReplayWriterKind::client ? rp::WriterKind::Client : rp::WriterKind::Server,
      h.player_id, room);
  return finish(b, rp::Record::Header, header.Union());
}

std::span<const uint8_t> RecordEncoder::keyframe(uint64_t tick, uint64_t state_hash,
                                                 std::span<const uint8_t> snapshot) {
  fb::FlatBufferBuilder& b = impl_->builder;
  b.Clear();
  const auto bytes = b.CreateVector(snapshot.data(), snapshot.size());
  return finish(b, rp::Record::Keyframe, rp::CreateKeyframe(b, tick, state_hash, bytes).Union());
}

std::span<const uint8_t> RecordEncoder::tick(uint64_t tick, std::span<const sim::Input> inputs,
                                             uint64_t authoritative_hash,
                                             std::optional<uint64_t> client_hash) {
  fb::FlatBufferBuilder& b = impl_->builder;
  b.Clear();
  const auto velocities = schema::create_player_input_velocities(b, inputs);
  const auto vector = schema::create_player_inputs(b, inputs);
  rp::TickBuilder t(b);
  t.add_tick(tick);
  t.add_inputs(vector);
  if (!velocities.IsNull()) t.add_input_velocities(velocities);
  t.add_authoritative_hash(authoritative_hash);
  if (client_hash) t.add_client_hash(*client_hash);
  return finish(b, rp::Record::Tick, t.Finish().Union());
}

bool decode_record(std::span<const uint8_t> payload, std::vector<uint8_t>* scratch,
                   DecodedRecord* out, std::string* error) {
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
    case rp::Record::Header: {
      const rp::Header* h = record->record_as_Header();
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
      if (!decode_world_def(*h->world_def(), &o.world_def, error)) return false;
      o.world_def_fingerprint = h->world_def_fingerprint();
      o.tick_rate_hz = h->tick_rate_hz();
      o.scene = string_or_empty(h->scene());
      o.first_tick = h->first_tick();
      o.writer = h->writer() == rp::WriterKind::Client ? ReplayWriterKind::client
                                                       : ReplayWriterKind::server;
      o.player_id = h->player_id();
      o.room = string_or_empty(h->room());
      return true;
    }
    case rp::Record::Keyframe: {
      const rp::Keyframe* k = record->record_as_Keyframe();
      if (!k->snapshot()) {
        *error = "keyframe record without a snapshot";
        return false;
      }
      out->kind = RecordKind::keyframe;
      out->keyframe.tick = k->tick();
      out->keyframe.state_hash = k->state_hash();
      out->keyframe.snapshot.assign(k->snapshot()->begin(), k->snapshot()->end());
      return true;
    }
    case rp::Record::Tick: {
      const rp::Tick* t = record->record_as_Tick();
      out->kind = RecordKind::tick;
      ReplayTick& o = out->tick;
      o.tick = t->tick();
      o.authoritative_hash = t->authoritative_hash();
      o.client_hash = t->client_hash();
      schema::read_player_inputs(t->inputs(), &o.inputs);
      if (!schema::read_player_input_velocities(t->input_velocities(), &o.inputs)) {
        *error =
            "replay tick " + std::to_string(o.tick) + ": input_velocities is not one per input";
        return false;
      }
      return true;
    }
    default:
      *error = "replay record of an unknown kind (" +
               std::to_string(static_cast<unsigned>(record->record_type())) + ")";
      return false;
  }
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
