// The canonical state stream: one little-endian encoder used by the state hash and by
// snapshots, and the snapshot reader that validates everything before touching the world.
//
// Every field is written explicitly (floats as the bits of their IEEE-754 pattern, uint32 LE),
// so padding and host endianness never reach the bytes; the one struct copied whole
// (CachedPoint, little-endian hosts only) is checked at compile time to have no padding.
//
// State encoding (version kStateVersion):
//   u32 state version, u64 WorldDef fingerprint, u64 tick,
//   u32 slot count (1 + highest slot ever used), per slot:
//     u32 generation, u8 alive, and for live slots:
//     u8 body type, shape (the fields of its list in fields.h but the bools: u8 type, f32 radius,
//     f32×3 half extents, f32 half height, f32×3 plane normal, f32 plane offset, f32 density,
//     f32 friction, f32 restitution, u32 collision category, u32 collision mask),
//     u32 owner player, f32 linear damping, f32 angular damping, f32×3 position,
//     f32×4 orientation (x y z w), f32×3 linear velocity, f32×3 angular velocity,
//     f32 mass, f32×3 principal inertia,
//     u8 flags (bit 0 allow sleep, bit 1 asleep, bit 2 bullet, then the shape's bools in list
//     order from bit 3: the sensor flag), f32 rest
//     timer, u32 island (the smallest slot of a sleeping body's island, else 0)
//                                                                       (152 bytes per body)
//   u32 warm-start manifold count, per manifold (ascending keys):
//     u64 pair key (slot a | child a << 28) << 32 | (slot b | child b << 28), the children
//     of compounds that the manifold is between (0 for a plain shape), u8 point count, the
//     reference pose the points were found at (f32×3 B's
//     origin and f32×4 B's rotation in body A's frame, f32×3 normal in A's frame), per point:
//     u32 feature, f32 normal impulse, f32×3 friction impulse (world), f32×3 point in body A's
//     frame and f32 separation, both when the narrowphase found it, f32 rest offset (0 to
//     kRestOffsetSlops linear slops, state version 6)
//   u32 overlapping sensor pair count, per pair (ascending keys): u64 pair key
//   u32 queued input count, per input (in the total input order):
//     u32 player, u32 sequence, u32 body index1, u32 body generation, i32×3 linear,
//     i32×3 angular, u32 buttons, u32 flags, i32×3 target linear velocity, i32×3 target
//     angular velocity
//   u32 queued command count, per command (in command_less order): u8 type, u32 sequence,
//     u32 template index, f32×3 position, f32×4 orientation, f32×3 linear velocity, f32×3
//     angular velocity, u32 owner player, u32 body index1, u32 body generation, i32 score delta
//   u32 scored player count N (the highest player whose score is not 0, else 0), then the
//     scores of players 1..N as i32
//   only in a world with game state fields (so a world without them encodes as before):
//     u32 field count, per field: 32 name bytes, u8 scope, u8 type, i32 default, then a room
//     field's i32 value, or a player field's u32 count N (the highest player whose value is not
//     the default, else 0) and the values of players 1..N as i32
//
// Snapshot = "LSSN", u32 snapshot version, u64 total bytes, the state encoding, and
// u64 XXH3-64 of every byte before it. The state hash is XXH3-64 of the state encoding alone.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <memory>
#include <type_traits>

#include "collide.h"
#include "lockstep/sim/fields.h"
#include "lockstep/sim/world.h"
#include "state_stream.h"
#include "world_data.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace lockstep::sim {

namespace {

// State 2: sleep, bullets; 3: manifold reuse, collision filters; 4: velocity inputs, commands;
// 5: add_score commands and players' scores; 6: the contact points' rest offsets.
constexpr uint32_t kStateVersion = 6;
constexpr uint32_t kSnapshotVersion = 6;  // 6: state version 6
constexpr uint8_t kSnapshotMagic[4] = {'L', 'S', 'S', 'N'};
constexpr size_t kSnapshotHeaderBytes = 16;  // magic, version, total size
constexpr size_t kSnapshotTrailerBytes = 8;  // checksum
// 2: relax; 3: soft step, sleeping; 4: reuse; 5: input velocity limits, commands, templates.
constexpr uint32_t kDefEncodingVersion = 5;

// Bytes of a field of type T in the encodings: enums are u8, floats and u32 four bytes each.
// Bools take no bytes of their own (they are bits of a flags byte).
template <class T>
constexpr size_t encoded_bytes() {
  if constexpr (std::is_same_v<T, bool>) {
    return 0;
  } else if constexpr (std::is_enum_v<T>) {
    static_assert(sizeof(T) == 1);
    return 1;
  } else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, uint32_t>) {
    return 4;
  } else if constexpr (std::is_same_v<T, Quat>) {
    return 16;
  } else {
    static_assert(std::is_same_v<T, Vec3>, "a field type the state encoding does not know");
    return 12;
  }
}

// A shape's bytes in the state encoding, and its bools, which are bits of the body's flags byte
// from bit kShapeFlagShift on.
constexpr size_t shape_state_bytes() {
  size_t n = 0;
  Fields<ShapeDef>::visit(
      [&n](const Field&, auto member) { n += encoded_bytes<field_type_t<decltype(member)>>(); });
  return n;
}
constexpr int shape_bool_count() {
  int n = 0;
  Fields<ShapeDef>::visit([&n](const Field&, auto member) {
    if (std::is_same_v<field_type_t<decltype(member)>, bool>) ++n;
  });
  return n;
}
constexpr int kShapeFlagShift = 3;
constexpr int kShapeFlagBits = shape_bool_count();
static_assert(kShapeFlagShift + kShapeFlagBits <= 8, "the body's flags byte is full");

constexpr size_t kStateHeaderBytes = 4 + 8 + 8 + 4;
constexpr size_t kSlotBytes = 4 + 1;
constexpr size_t kShapeBytes = shape_state_bytes();
// Bytes of a shape's fields that the encoding leaves out for its type (field_encoded_if_used).
constexpr size_t shape_bytes_left_out(ShapeType type) {
  size_t n = 0;
  Fields<ShapeDef>::visit([&n, type](const Field& field, auto member) {
    if ((field.flags & field_encoded_if_used) != 0 && (field.shapes & shape_bit(type)) == 0)
      n += encoded_bytes<field_type_t<decltype(member)>>();
  });
  return n;
}
constexpr size_t kLiveBodyBytes =
    1 + kShapeBytes + 4 + 2 * 4 + 3 * 4 + 4 * 4 + 3 * 4 + 3 * 4 + 4 + 3 * 4 + 1 + 4 + 4;
constexpr size_t kManifoldBytes = 8 + 1 + 3 * 4 + 4 * 4 + 3 * 4;
constexpr size_t kPointBytes = 4 + 4 + 3 * 4 + 3 * 4 + 4 + 4;
constexpr size_t kInputBytes = 4 * 4 + 6 * 4 + 4 + 4 + 6 * 4;
constexpr size_t kCommandBytes = 1 + 4 + 4 + 3 * 4 + 4 * 4 + 3 * 4 + 3 * 4 + 4 + 4 + 4 + 4;

constexpr size_t kStateFieldBytes = (kMaxStateNameBytes + 1) + 1 + 1 + 4;
constexpr size_t kMaxGameStateBytes =
    4 + kMaxStateFields * (kStateFieldBytes + 4 + static_cast<size_t>(kMaxStatePlayers) * 4);

// The state hash's chunk (update_state_hash), and its scratch: a chunk less a byte (a flush
// keeps fewer than a chunk's bytes), the counts written between two flushes, and the largest
// record that follows them (a body with its slot, a manifold with its points, an input, a
// command, or the scores and the game state that end the encoding).
constexpr size_t kChunkBytes = 16 * 1024;
constexpr size_t kLargestRecordBytes =
    std::max({kSlotBytes + kLiveBodyBytes, kManifoldBytes + kMaxManifoldPoints* kPointBytes,
              size_t{8}, kInputBytes, kCommandBytes, size_t{kMaxPlayers} * 4 + kMaxGameStateBytes});
constexpr size_t kHashScratchBytes = kChunkBytes + kStateHeaderBytes + 5 * 4 + kLargestRecordBytes;

// Players 1..N of a player field, N the highest player whose value is not the default.
uint32_t state_player_count(const WorldData& w, uint32_t field) {
  const int32_t* values = &w.state_values[static_cast<size_t>(field) * kMaxStatePlayers];
  uint32_t n = kMaxStatePlayers;
  while (n > 0 && values[n - 1] == w.state_fields[field].default_value)
    --n;
  return n;
}

size_t game_state_bytes(const WorldData& w) {
  if (w.state_field_count == 0) return 0;
  size_t n = 4;
  for (uint32_t f = 0; f < w.state_field_count; ++f) {
    n += kStateFieldBytes + 4;
    if (w.state_fields[f].scope == StateScope::player) n += size_t{state_player_count(w, f)} * 4;
  }
  return n;
}

// Players 1..N where N is the highest player with a nonzero score (0 when none has one).
uint32_t scored_player_count(const WorldData& w) {
  uint32_t n = kMaxPlayers;
  while (n > 0 && w.scores[n - 1] == 0)
    --n;
  return n;
}
// At most: a hull shape also writes its hull index, a compound shape its compound index, a mesh
// or heightfield its level index (field_encoded_if_used), the others none; so no shape writes
// two of them, and the bound counts all three.
static_assert(kSlotBytes + kLiveBodyBytes == 164);

// A CachedPoint has no padding and its fields in encoding order (u32 feature, f32 normal
// impulse, f32×3 friction impulse, f32×3 anchor, f32 separation, f32 rest offset), so on
// little-endian hosts its bytes are its encoding and the encoder copies the points of a
// manifold at once.
static_assert(sizeof(CachedPoint) == kPointBytes && offsetof(CachedPoint, normal_impulse) == 4 &&
              offsetof(CachedPoint, friction_impulse) == 8 &&
              offsetof(CachedPoint, local_anchor_a) == 20 &&
              offsetof(CachedPoint, reference_separation_m) == 32 &&
              offsetof(CachedPoint, rest_offset_m) == 36 && sizeof(Vec3) == 12);
static_assert(std::is_trivially_copyable_v<CachedPoint>);

constexpr bool kLittleEndianHost = std::endian::native == std::endian::little;

// A manifold or sensor pair key as the encodings write it: (slot a | child a << 28) << 32 |
// (slot b | child b << 28). A pair without compound children is slot a << 32 | slot b, as it was
// before compounds, so worlds without them hash as they did.
constexpr int kEncodedChildShift = 28;
uint64_t encode_key(uint64_t key) {
  const uint64_t a = pair_slot_a(key) | key_child_a(key) << kEncodedChildShift;
  const uint64_t b = pair_slot_b(key) | key_child_b(key) << kEncodedChildShift;
  return a << 32 | b;
}
// The other way; false for slots or children out of range.
bool decode_key(uint64_t encoded, uint64_t* key) {
  const uint32_t a = static_cast<uint32_t>(encoded >> 32), b = static_cast<uint32_t>(encoded);
  constexpr uint32_t kSlotMask = (1u << kEncodedChildShift) - 1;
  const uint32_t slot_a = a & kSlotMask, slot_b = b & kSlotMask;
  const uint32_t child_a = a >> kEncodedChildShift, child_b = b >> kEncodedChildShift;
  if (slot_a >= kMaxBodiesLimit || slot_b >= kMaxBodiesLimit || child_a >= kMaxCompoundChildren ||
      child_b >= kMaxCompoundChildren) {
    return false;
  }
  *key = manifold_key(pair_key(slot_a, slot_b), child_a, child_b);
  return true;
}

// Little-endian writer into a caller-provided buffer that must be large enough. On
// little-endian hosts a u32 is its own encoding, so it is copied whole (the hot path of the
// per-step state hash); elsewhere it is written byte by byte.
struct Writer {
  uint8_t* out;
  size_t n = 0;
  void u8(uint8_t v) { out[n++] = v; }
  void u32(uint32_t v) {
    if constexpr (kLittleEndianHost) {
      std::memcpy(out + n, &v, 4);
      n += 4;
    } else {
      out[n++] = static_cast<uint8_t>(v);
      out[n++] = static_cast<uint8_t>(v >> 8);
      out[n++] = static_cast<uint8_t>(v >> 16);
      out[n++] = static_cast<uint8_t>(v >> 24);
    }
  }
  void u64(uint64_t v) {
    u32(static_cast<uint32_t>(v));
    u32(static_cast<uint32_t>(v >> 32));
  }
  void i32(int32_t v) { u32(static_cast<uint32_t>(v)); }
  void f32(float v) { u32(std::bit_cast<uint32_t>(v)); }
  void vec3(Vec3 v) {
    f32(v.x);
    f32(v.y);
    f32(v.z);
  }
  void quat(Quat q) {
    f32(q.x);
    f32(q.y);
    f32(q.z);
    f32(q.w);
  }
  // A field's value, as encoded_bytes<T>() counts it.
  template <class T>
  void value(const T& v) {
    if constexpr (std::is_enum_v<T>) {
      u8(static_cast<uint8_t>(v));
    } else if constexpr (std::is_same_v<T, float>) {
      f32(v);
    } else if constexpr (std::is_same_v<T, uint32_t>) {
      u32(v);
    } else if constexpr (std::is_same_v<T, Quat>) {
      quat(v);
    } else {
      static_assert(std::is_same_v<T, Vec3>, "a field type the state encoding does not know");
      vec3(v);
    }
  }
};

// Bounds-checked little-endian reader; a read past the end sets `failed` and yields zeros.
struct Reader {
  const uint8_t* in;
  size_t size;
  size_t n = 0;
  bool failed = false;
  bool take(size_t bytes) {
    if (failed || size - n < bytes) {
      failed = true;
      return false;
    }
    return true;
  }
  uint8_t u8() { return take(1) ? in[n++] : 0; }
  uint32_t u32() {
    if (!take(4)) return 0;
    uint32_t v = static_cast<uint32_t>(in[n]) | static_cast<uint32_t>(in[n + 1]) << 8 |
                 static_cast<uint32_t>(in[n + 2]) << 16 | static_cast<uint32_t>(in[n + 3]) << 24;
    n += 4;
    return v;
  }
  uint64_t u64() {
    const uint64_t lo = u32();
    const uint64_t hi = u32();
    return lo | hi << 32;
  }
  int32_t i32() { return static_cast<int32_t>(u32()); }
  float f32() { return std::bit_cast<float>(u32()); }
  Vec3 vec3() {
    Vec3 v;
    v.x = f32();
    v.y = f32();
    v.z = f32();
    return v;
  }
  Quat quat() {
    Quat q;
    q.x = f32();
    q.y = f32();
    q.z = f32();
    q.w = f32();
    return q;
  }
  // A field's value as Writer::value wrote it; false for an enum byte out of range.
  template <class T>
  bool value(T* out) {
    if constexpr (std::is_enum_v<T>) {
      const uint8_t raw = u8();
      *out = static_cast<T>(raw);
      return valid_enum_value<T>(raw);
    } else if constexpr (std::is_same_v<T, float>) {
      *out = f32();
    } else if constexpr (std::is_same_v<T, uint32_t>) {
      *out = u32();
    } else {
      static_assert(std::is_same_v<T, Vec3>, "a field type the state encoding does not know");
      *out = vec3();
    }
    return true;
  }
};

// A body's shape in the state encoding: its fields in list order but the bools, which it returns
// as the bits of the body's flags byte they take. Inlined: an out-of-line call kept the write
// position in memory (a third of the hash time on pile).
[[gnu::always_inline]] inline uint8_t write_shape(Writer& o, const ShapeDef& shape) {
  uint8_t flags = 0;
  int bit = kShapeFlagShift;
  for_each_field(shape, [&o, &flags, &bit, &shape](const Field& field, const auto& value) {
    if ((field.flags & field_encoded_if_used) != 0 && (field.shapes & shape_bit(shape.type)) == 0)
      return;
    if constexpr (std::is_same_v<std::remove_cvref_t<decltype(value)>, bool>) {
      flags = static_cast<uint8_t>(flags | (value ? 1 : 0) << bit++);
    } else {
      o.value(value);
    }
  });
  return flags;
}

// Writes the state encoding to `out`. After every body, manifold, sensor pair, input and command,
// flush(out, n) returns the new write position: the state hash feeds the bytes to XXH3 in
// cache-sized chunks and rewinds, so its scratch holds a chunk and what one record adds
// (kHashScratchBytes).
template <class Flush>
size_t encode_state(const WorldData& w, uint8_t* out, Flush&& flush) {
  Writer o{out};
  o.u32(kStateVersion);
  o.u64(w.def_fingerprint);
  o.u64(w.tick);
  o.u32(w.slot_count);
  for (uint32_t slot = 0; slot < w.slot_count; ++slot) {
    const BodyRecord& r = w.bodies[slot];
    o.u32(r.generation);
    o.u8(r.alive ? 1 : 0);
    if (!r.alive) continue;
    const BodySolverState& s = w.solver_bodies[slot];
    o.u8(static_cast<uint8_t>(r.type));
    const uint8_t shape_flags = write_shape(o, r.shape);
    o.u32(r.owner_player);
    o.f32(r.linear_damping);
    o.f32(r.angular_damping);
    o.vec3(r.position);
    o.quat(r.orientation);
    o.vec3(s.linear_velocity);
    o.vec3(s.angular_velocity);
    o.f32(r.mass_kg);
    o.vec3(r.inertia);
    o.u8(static_cast<uint8_t>((r.allow_sleep ? 1 : 0) | (r.asleep ? 2 : 0) | (r.bullet ? 4 : 0) |
                              shape_flags));
    o.f32(r.sleep_timer_s);
    o.u32(r.island);
    o.n = flush(o.out, o.n);
  }
  o.u32(w.cache.manifold_count);
  for (uint32_t m = 0; m < w.cache.manifold_count; ++m) {
    const CachedManifold& cm = w.cache.manifolds[m];
    o.u64(encode_key(cm.key));
    o.u8(static_cast<uint8_t>(cm.point_count));
    o.vec3(cm.reference.position);
    o.quat(cm.reference.rotation);
    o.vec3(cm.reference.normal);
    const CachedPoint* points = w.cache.points.data() + cm.first_point;
    if constexpr (kLittleEndianHost) {
      // The points are ~80% of the bytes; their layout is exactly their encoding here.
      std::memcpy(o.out + o.n, points, cm.point_count * kPointBytes);
      o.n += cm.point_count * kPointBytes;
    } else {
      for (uint32_t i = 0; i < cm.point_count; ++i) {
        o.u32(points[i].feature);
        o.f32(points[i].normal_impulse);
        o.vec3(points[i].friction_impulse);
        o.vec3(points[i].local_anchor_a);
        o.f32(points[i].reference_separation_m);
        o.f32(points[i].rest_offset_m);
      }
    }
    o.n = flush(o.out, o.n);
  }
  o.u32(w.sensor_pair_count);
  for (uint32_t i = 0; i < w.sensor_pair_count; ++i) {
    o.u64(encode_key(w.sensor_pairs[i]));
    o.n = flush(o.out, o.n);
  }
  o.u32(w.input_count);
  for (uint32_t i = 0; i < w.input_count; ++i) {
    const Input& in = w.inputs[i];
    o.u32(in.player);
    o.u32(in.sequence);
    o.u32(in.body.index1);
    o.u32(in.body.generation);
    for (int k = 0; k < 3; ++k)
      o.i32(in.linear_impulse[k]);
    for (int k = 0; k < 3; ++k)
      o.i32(in.angular_impulse[k]);
    o.u32(in.buttons);
    o.u32(in.flags);
    for (int k = 0; k < 3; ++k)
      o.i32(in.linear_velocity[k]);
    for (int k = 0; k < 3; ++k)
      o.i32(in.angular_velocity[k]);
    o.n = flush(o.out, o.n);
  }
  o.u32(w.command_count);
  for (uint32_t i = 0; i < w.command_count; ++i) {
    const Command& c = w.commands[i];
    o.u8(static_cast<uint8_t>(c.type));
    o.u32(c.sequence);
    o.u32(c.template_index);
    o.vec3(c.position);
    o.quat(c.orientation);
    o.vec3(c.linear_velocity);
    o.vec3(c.angular_velocity);
    o.u32(c.owner_player);
    o.u32(c.body.index1);
    o.u32(c.body.generation);
    o.i32(c.score_delta);
    o.n = flush(o.out, o.n);
  }
  const uint32_t scored = scored_player_count(w);
  o.u32(scored);
  for (uint32_t p = 0; p < scored; ++p)
    o.i32(w.scores[p]);
  if (w.state_field_count > 0) {
    o.u32(w.state_field_count);
    for (uint32_t f = 0; f < w.state_field_count; ++f) {
      const StateFieldDef& field = w.state_fields[f];
      for (char c : field.name)
        o.u8(static_cast<uint8_t>(c));
      o.u8(static_cast<uint8_t>(field.scope));
      o.u8(static_cast<uint8_t>(field.type));
      o.i32(field.default_value);
      const int32_t* values = &w.state_values[static_cast<size_t>(f) * kMaxStatePlayers];
      if (field.scope == StateScope::room) {
        o.i32(values[0]);
        continue;
      }
      const uint32_t players = state_player_count(w, f);
      o.u32(players);
      for (uint32_t p = 0; p < players; ++p)
        o.i32(values[p]);
    }
  }
  return o.n;
}

// A definition in the WorldDef fingerprint: its fields in list order, floats, u32 and enums as
// in the state encoding, a template name byte by byte, a nested definition in place, each run of
// adjacent bools as one byte (bit i the run's i-th; a nested list ends a run), and only the
// first template_count templates. Fields that change no result (measure_stage_times) are left out.
class DefinitionWriter {
 public:
  DefinitionWriter(Writer& out, const WorldDef& def)
      : out_(out),
        template_count_(def.template_count <= kMaxBodyTemplates ? def.template_count : 0),
        hull_count_(def.hull_count <= kMaxHulls ? def.hull_count : 0),
        compound_count_(def.compound_count <= kMaxCompounds ? def.compound_count : 0) {}

  template <class T>
  void fields(const T& object) {
    if constexpr (std::is_same_v<T, CompoundDef>) {
      child_count_ = object.child_count <= kMaxCompoundChildren ? object.child_count : 0;
    }
    for_each_field(object, [this, &object](const Field& field, const auto& value) {
      if ((field.flags & field_not_simulated) != 0) return;
      if ((field.flags & field_encoded_if_used) != 0 && !in_use(object, field)) return;
      this->value(value);
    });
    flush_bits();
  }

  // Bytes enough for a T (every bool counted as a byte of its own).
  template <class T>
  static constexpr size_t max_bytes() {
    size_t n = 0;
    Fields<T>::visit([&n](const Field&, auto member) {
      using M = field_type_t<decltype(member)>;
      if constexpr (kHasFields<M>) {
        n += max_bytes<M>();
      } else if constexpr (std::is_same_v<M, BodyTemplate[kMaxBodyTemplates]>) {
        n += kMaxBodyTemplates * max_bytes<BodyTemplate>();
      } else if constexpr (std::is_same_v<M, HullDef[kMaxHulls]>) {
        n += kMaxHulls * (sizeof(uint32_t) + kMaxHullPoints * encoded_bytes<Vec3>());
      } else if constexpr (std::is_same_v<M, CompoundDef[kMaxCompounds]>) {
        n += kMaxCompounds * max_bytes<CompoundDef>();
      } else if constexpr (std::is_same_v<M, CompoundChild[kMaxCompoundChildren]>) {
        n += kMaxCompoundChildren * max_bytes<CompoundChild>();
      } else if constexpr (std::is_same_v<M, bool> || std::is_array_v<M>) {
        n += sizeof(M);
      } else {
        n += encoded_bytes<M>();
      }
    });
    return n;
  }

 private:
  bool in_use(const ShapeDef& shape, const Field& field) const {
    return (field.shapes & shape_bit(shape.type)) != 0;
  }
  bool in_use(const WorldDef&, const Field& field) const {
    const bool compounds = field.name == "compound_count" || field.name == "compounds";
    return compounds ? compound_count_ != 0 : hull_count_ != 0;
  }
  template <class T>
  bool in_use(const T&, const Field&) const {
    return true;
  }

  template <class T>
  void value(const T& v) {
    if constexpr (std::is_same_v<T, bool>) {
      if (bit_count_ == 8) flush_bits();
      bits_ = static_cast<uint8_t>(bits_ | (v ? 1 : 0) << bit_count_++);
      return;
    }
    flush_bits();
    if constexpr (kHasFields<T>) {
      fields(v);
    } else if constexpr (std::is_same_v<T, BodyTemplate[kMaxBodyTemplates]>) {
      for (uint32_t i = 0; i < template_count_; ++i)
        fields(v[i]);
    } else if constexpr (std::is_same_v<T, HullDef[kMaxHulls]>) {
      // The first hull_count hulls, each its point count and its first point_count points.
      for (uint32_t i = 0; i < hull_count_; ++i) {
        const uint32_t n = v[i].point_count <= kMaxHullPoints ? v[i].point_count : 0;
        out_.value(n);
        for (uint32_t k = 0; k < n; ++k)
          out_.value(v[i].points[k]);
      }
    } else if constexpr (std::is_same_v<T, CompoundDef[kMaxCompounds]>) {
      for (uint32_t i = 0; i < compound_count_; ++i)
        fields(v[i]);
    } else if constexpr (std::is_same_v<T, CompoundChild[kMaxCompoundChildren]>) {
      // The first child_count children (the compound's count was written just before).
      for (uint32_t i = 0; i < child_count_; ++i)
        fields(v[i]);
    } else if constexpr (std::is_same_v<T, char[kMaxTemplateNameBytes + 1]>) {
      for (char c : v)
        out_.u8(static_cast<uint8_t>(c));
    } else if constexpr (!std::is_same_v<T, bool>) {
      out_.value(v);
    }
  }

  void flush_bits() {
    if (bit_count_ == 0) return;
    out_.u8(bits_);
    bits_ = 0;
    bit_count_ = 0;
  }

  Writer& out_;
  uint32_t template_count_;
  uint32_t hull_count_;
  uint32_t compound_count_;
  uint32_t child_count_ = 0;  // of the compound being written
  uint8_t bits_ = 0;
  int bit_count_ = 0;
};

// ---- parsing ---------------------------------------------------------------------------------

bool finite3(Vec3 v) {
  return is_finite(v);
}

// All three components +0 exactly (as island.cpp zeroes a sleeping body's velocities).
bool positive_zero3(Vec3 v) {
  return (std::bit_cast<uint32_t>(v.x) | std::bit_cast<uint32_t>(v.y) |
          std::bit_cast<uint32_t>(v.z)) == 0;
}

// A shape as write_shape wrote it; its bools stay false until read_shape_flags.
ShapeDef read_shape(Reader& in, bool* ok) {
  ShapeDef s;
  for_each_field(s, [&in, ok, &s](const Field& field, auto& value) {
    using T = std::remove_cvref_t<decltype(value)>;
    // The type comes first, so it is known when a field written only for some types is reached.
    if ((field.flags & field_encoded_if_used) != 0 && (field.shapes & shape_bit(s.type)) == 0)
      return;
    if constexpr (std::is_same_v<T, bool>) {
      value = false;
    } else if (!in.value(&value)) {
      *ok = false;
    }
  });
  return s;
}

// The shape's bools from the body's flags byte.
void read_shape_flags(uint8_t flags, ShapeDef* shape) {
  int bit = kShapeFlagShift;
  for_each_field(*shape, [flags, &bit](const Field&, auto& value) {
    if constexpr (std::is_same_v<std::remove_cvref_t<decltype(value)>, bool>) {
      value = ((flags >> bit++) & 1) != 0;
    }
  });
}

// Parses the state encoding, stage by stage in the order it was written. With kApply false it
// only validates (writing nothing but w.restore_slots); with kApply true it writes the world and
// must only run after a successful validation of the same bytes. Each stage returns
// Error::snapshot_corrupt (or a version or mismatch error for the header) at the first bad field.

// Version, fingerprint, tick and slot count; with kApply, the world emptied to take the bodies.
template <bool kApply>
Error parse_header(Reader& in, WorldData& w, uint32_t* out_slot_count) {
  const WorldDef& def = w.def;
  if (in.u32() != kStateVersion)
    return in.failed ? Error::snapshot_corrupt : Error::snapshot_version;
  if (in.u64() != w.def_fingerprint) {
    return in.failed ? Error::snapshot_corrupt : Error::snapshot_mismatch;
  }
  const uint64_t tick = in.u64();
  const uint32_t slot_count = in.u32();
  if (in.failed || slot_count > def.max_bodies) return Error::snapshot_corrupt;
  *out_slot_count = slot_count;

  if constexpr (kApply) {
    const uint32_t clear = slot_count > w.slot_count ? slot_count : w.slot_count;
    for (uint32_t slot = 0; slot < clear; ++slot) {
      w.bodies[slot] = BodyRecord{};
      w.solver_bodies[slot] = BodySolverState{};
      w.aabbs[slot] = Aabb{};
      w.dynamic_flags[slot] = 0;
    }
    w.tick = tick;
    w.slot_count = slot_count;
    w.body_count = 0;
    broadphase_clear(w.broadphase);
  }
  return Error::none;
}

// One body slot: generation, alive flag and, if alive, every field with its invariants; the
// validating pass records in w.restore_slots what the later stages check against.
template <bool kApply>
Error parse_body_slot(Reader& in, WorldData& w, uint32_t slot, uint32_t slot_count) {
  const WorldDef& def = w.def;
  const uint32_t generation = in.u32();
  const uint8_t alive = in.u8();
  if (in.failed || alive > 1) return Error::snapshot_corrupt;
  // Canonical form: the last slot counted is one that was used.
  if (slot + 1 == slot_count && !alive && generation == 0) return Error::snapshot_corrupt;
  RestoreSlot& rs = w.restore_slots[slot];
  rs = RestoreSlot{};
  rs.generation = generation;
  if (!alive) {
    if constexpr (kApply) w.bodies[slot].generation = generation;
    return Error::none;
  }
  bool ok = true;
  BodyType type = BodyType::dynamic;
  if (!in.value(&type)) ok = false;
  ShapeDef shape = read_shape(in, &ok);
  const uint32_t owner = in.u32();
  const float linear_damping = in.f32();
  const float angular_damping = in.f32();
  const Vec3 position = in.vec3();
  const Quat orientation = in.quat();
  const Vec3 linear_velocity = in.vec3();
  const Vec3 angular_velocity = in.vec3();
  const float mass = in.f32();
  const Vec3 inertia = in.vec3();
  const uint8_t sleep_flags = in.u8();
  const float sleep_timer = in.f32();
  const uint32_t island = in.u32();
  if (in.failed || !ok) return Error::snapshot_corrupt;
  read_shape_flags(sleep_flags, &shape);
  if (validate_shape(shape, w.library()) != Error::none) return Error::snapshot_corrupt;
  if ((shape.type == ShapeType::plane || shape.type == ShapeType::mesh ||
       shape.type == ShapeType::heightfield) &&
      type != BodyType::static_body) {
    return Error::snapshot_corrupt;
  }
  if (!(linear_damping >= 0.0f && linear_damping <= kMaxDamping) ||
      !(angular_damping >= 0.0f && angular_damping <= kMaxDamping)) {
    return Error::snapshot_corrupt;
  }
  // Positions and speeds may legitimately have drifted past the creation limits; they only
  // need to be finite. Orientations are unit up to rounding.
  if (!finite3(position) || !is_finite(orientation) || !finite3(linear_velocity) ||
      !finite3(angular_velocity) || !std::isfinite(mass) || !finite3(inertia)) {
    return Error::snapshot_corrupt;
  }
  const float q2 = dot(orientation, orientation);
  if (!(q2 > 0.999f && q2 < 1.001f)) return Error::snapshot_corrupt;
  if (type == BodyType::static_body &&
      (!(linear_velocity == Vec3{}) || !(angular_velocity == Vec3{}))) {
    return Error::snapshot_corrupt;
  }
  if (type == BodyType::dynamic) {
    if (!(mass > 0.0f) || !(inertia.x > 0.0f) || !(inertia.y > 0.0f) || !(inertia.z > 0.0f)) {
      return Error::snapshot_corrupt;
    }
  } else if (!(mass == 0.0f) || !(inertia == Vec3{})) {
    return Error::snapshot_corrupt;
  }
  // Sleep state as island.cpp leaves it: only dynamic bodies that may sleep rest or sleep,
  // the timer stays in [0, time_to_sleep_s], a sleeping body does not move and names its
  // island (checked against the island's root below), an awake one names none.
  const bool allow_sleep = (sleep_flags & 1) != 0;
  const bool asleep = (sleep_flags & 2) != 0;
  const bool bullet = (sleep_flags & 4) != 0;
  if ((sleep_flags >> (kShapeFlagShift + kShapeFlagBits)) != 0 || !std::isfinite(sleep_timer) ||
      !(sleep_timer >= 0.0f) || !(sleep_timer <= def.time_to_sleep_s)) {
    return Error::snapshot_corrupt;
  }
  if ((!def.enable_sleep || !allow_sleep || type != BodyType::dynamic) &&
      (asleep || !(sleep_timer == 0.0f))) {
    return Error::snapshot_corrupt;
  }
  if (asleep ? (!positive_zero3(linear_velocity) || !positive_zero3(angular_velocity) ||
                island > slot || !(sleep_timer == def.time_to_sleep_s))
             : island != 0) {
    return Error::snapshot_corrupt;
  }
  rs.alive = true;
  rs.type = type;
  rs.owner_player = owner;
  rs.asleep = asleep;
  rs.sensor = shape.sensor;
  rs.island = island;
  if constexpr (kApply) {
    BodyRecord& r = w.bodies[slot];
    r.generation = generation;
    r.alive = true;
    r.type = type;
    r.owner_player = owner;
    r.shape = shape;
    r.linear_damping = linear_damping;
    r.angular_damping = angular_damping;
    r.position = position;
    r.orientation = orientation;
    r.mass_kg = mass;
    r.inertia = inertia;
    r.allow_sleep = allow_sleep;
    r.bullet = bullet;
    r.asleep = asleep;
    r.sleep_timer_s = sleep_timer;
    r.island = island;
    BodySolverState& s = w.solver_bodies[slot];
    s.linear_velocity = linear_velocity;
    s.angular_velocity = angular_velocity;
    refresh_body_derived(w, slot);
    ++w.body_count;
    broadphase_insert(w.broadphase, slot, pack_filter(shape.category, shape.mask));
  }
  return Error::none;
}

Error check_island_roots(const WorldData& w, uint32_t slot_count) {
  // A sleeping body's island root is a sleeping body of its own island (the smallest slot).
  for (uint32_t slot = 0; slot < slot_count; ++slot) {
    const RestoreSlot& rs = w.restore_slots[slot];
    if (!rs.alive || !rs.asleep) continue;
    const RestoreSlot& root = w.restore_slots[rs.island];
    if (!root.alive || !root.asleep || root.island != rs.island) return Error::snapshot_corrupt;
  }
  return Error::none;
}

template <bool kApply>
Error parse_contact_cache(Reader& in, WorldData& w, uint32_t slot_count) {
  const WorldDef& def = w.def;
  // Warm-start cache.
  const uint32_t manifold_count = in.u32();
  if (in.failed || manifold_count > def.max_contact_pairs) return Error::snapshot_corrupt;
  uint32_t point_total = 0;
  uint64_t previous_key = 0;
  for (uint32_t m = 0; m < manifold_count; ++m) {
    uint64_t key = 0;
    const bool key_ok = decode_key(in.u64(), &key);
    const uint32_t count = in.u8();
    ManifoldReference reference;
    reference.position = in.vec3();
    reference.rotation = in.quat();
    reference.normal = in.vec3();
    if (in.failed) return Error::snapshot_corrupt;
    // The reference decides only whether the points are reused; it must still be a pose.
    const float r2 = dot(reference.rotation, reference.rotation);
    const float n2 = dot(reference.normal, reference.normal);
    if (!finite3(reference.position) || !is_finite(reference.rotation) ||
        !finite3(reference.normal) || !(r2 > 0.999f && r2 < 1.001f) ||
        !(n2 > 0.999f && n2 < 1.001f)) {
      return Error::snapshot_corrupt;
    }
    const uint32_t sa = pair_slot_a(key), sb = pair_slot_b(key);
    if (!key_ok || (m > 0 && key <= previous_key) || sa >= sb || sb >= slot_count) {
      return Error::snapshot_corrupt;
    }
    const RestoreSlot& a = w.restore_slots[sa];
    const RestoreSlot& b = w.restore_slots[sb];
    if (!a.alive || !b.alive || (a.type != BodyType::dynamic && b.type != BodyType::dynamic)) {
      return Error::snapshot_corrupt;
    }
    // A held contact (island.cpp) joins a sleeping body to a body of its island or to a
    // non-dynamic one; never to an awake dynamic body (that manifold would have woken it).
    if ((a.asleep || b.asleep) &&
        !(a.asleep && b.asleep ? a.island == b.island
                               : (a.type != BodyType::dynamic || b.type != BodyType::dynamic))) {
      return Error::snapshot_corrupt;
    }
    if (count < 1 || count > static_cast<uint32_t>(kMaxManifoldPoints) ||
        count > def.max_contact_points - point_total) {
      return Error::snapshot_corrupt;
    }
    previous_key = key;
    if constexpr (kApply) {
      CachedManifold& cm = w.cache.manifolds[m];
      cm.key = key;
      cm.first_point = point_total;
      cm.point_count = count;
      cm.reference = reference;
    }
    for (uint32_t i = 0; i < count; ++i) {
      const uint32_t feature = in.u32();
      const float normal_impulse = in.f32();
      const Vec3 friction_impulse = in.vec3();
      const Vec3 local_anchor_a = in.vec3();
      const float reference_separation = in.f32();
      const float rest_offset = in.f32();
      if (in.failed || !std::isfinite(normal_impulse) || !(normal_impulse >= 0.0f) ||
          !finite3(friction_impulse) || !finite3(local_anchor_a) ||
          !std::isfinite(reference_separation) || !(rest_offset >= 0.0f) ||
          !(rest_offset <= kRestOffsetSlops * def.linear_slop_m)) {
        return Error::snapshot_corrupt;
      }
      if constexpr (kApply) {
        CachedPoint& cp = w.cache.points[point_total + i];
        cp.feature = feature;
        cp.normal_impulse = normal_impulse;
        cp.friction_impulse = friction_impulse;
        cp.local_anchor_a = local_anchor_a;
        cp.reference_separation_m = reference_separation;
        cp.rest_offset_m = rest_offset;
      }
    }
    point_total += count;
  }
  if constexpr (kApply) {
    w.cache.manifold_count = manifold_count;
    w.cache.point_count = point_total;
  }
  return Error::none;
}

template <bool kApply>
Error parse_sensor_pairs(Reader& in, WorldData& w, uint32_t slot_count) {
  const WorldDef& def = w.def;
  // Overlapping sensor pairs: ascending keys of live bodies, exactly one a sensor.
  const uint32_t sensor_count = in.u32();
  if (in.failed || sensor_count > def.max_contact_pairs) return Error::snapshot_corrupt;
  uint64_t previous_sensor_key = 0;
  for (uint32_t i = 0; i < sensor_count; ++i) {
    uint64_t key = 0;
    const bool key_ok = decode_key(in.u64(), &key) && key == body_pair_key(key);
    if (in.failed) return Error::snapshot_corrupt;
    const uint32_t sa = pair_slot_a(key), sb = pair_slot_b(key);
    if (!key_ok || (i > 0 && key <= previous_sensor_key) || sa >= sb || sb >= slot_count) {
      return Error::snapshot_corrupt;
    }
    const RestoreSlot& a = w.restore_slots[sa];
    const RestoreSlot& b = w.restore_slots[sb];
    if (!a.alive || !b.alive || a.sensor == b.sensor ||
        (a.type != BodyType::dynamic && b.type != BodyType::dynamic)) {
      return Error::snapshot_corrupt;
    }
    previous_sensor_key = key;
    if constexpr (kApply) w.sensor_pairs[i] = key;
  }
  if constexpr (kApply) w.sensor_pair_count = sensor_count;
  return Error::none;
}

template <bool kApply>
Error parse_queued_inputs(Reader& in, WorldData& w, uint32_t slot_count) {
  const WorldDef& def = w.def;
  // Queued inputs: each must be one queue_input would accept, in the total input order.
  const uint32_t input_count = in.u32();
  if (in.failed || input_count > def.max_inputs_per_tick) return Error::snapshot_corrupt;
  Input previous{};
  for (uint32_t i = 0; i < input_count; ++i) {
    Input input;
    input.player = in.u32();
    input.sequence = in.u32();
    input.body.index1 = in.u32();
    input.body.generation = in.u32();
    for (int k = 0; k < 3; ++k)
      input.linear_impulse[k] = in.i32();
    for (int k = 0; k < 3; ++k)
      input.angular_impulse[k] = in.i32();
    input.buttons = in.u32();
    input.flags = in.u32();
    for (int k = 0; k < 3; ++k)
      input.linear_velocity[k] = in.i32();
    for (int k = 0; k < 3; ++k)
      input.angular_velocity[k] = in.i32();
    if (in.failed || input.body.index1 == 0 || input.body.index1 > slot_count) {
      return Error::snapshot_corrupt;
    }
    const RestoreSlot& rs = w.restore_slots[input.body.index1 - 1];
    // queue_input wakes the body's island, so a queued input never names a sleeping body.
    if (!rs.alive || rs.generation != input.body.generation || rs.asleep ||
        check_input_fields(w, input, rs.type, rs.owner_player) != Error::none) {
      return Error::snapshot_corrupt;
    }
    if (i > 0 && input_less(input, previous)) return Error::snapshot_corrupt;
    previous = input;
    if constexpr (kApply) w.inputs[i] = input;
  }
  if constexpr (kApply) w.input_count = input_count;
  return Error::none;
}

template <bool kApply>
Error parse_queued_commands(Reader& in, WorldData& w) {
  const WorldDef& def = w.def;
  // Queued commands: fields queue_command would accept, in command_less order. Whether a destroy's
  // body is still alive is not checked: applying the command decides that (stale_handle).
  const uint32_t command_count = in.u32();
  if (in.failed || command_count > def.max_commands_per_tick) return Error::snapshot_corrupt;
  Command previous_command{};
  for (uint32_t i = 0; i < command_count; ++i) {
    Command c;
    const uint8_t type = in.u8();
    if (type > static_cast<uint8_t>(kLastCommandType)) return Error::snapshot_corrupt;
    c.type = static_cast<CommandType>(type);
    c.sequence = in.u32();
    c.template_index = in.u32();
    c.position = in.vec3();
    c.orientation = in.quat();
    c.linear_velocity = in.vec3();
    c.angular_velocity = in.vec3();
    c.owner_player = in.u32();
    c.body.index1 = in.u32();
    c.body.generation = in.u32();
    c.score_delta = in.i32();
    if (in.failed || check_command_fields(def, c) != Error::none) return Error::snapshot_corrupt;
    if (i > 0 && command_less(c, previous_command)) return Error::snapshot_corrupt;
    previous_command = c;
    if constexpr (kApply) w.commands[i] = c;
  }
  if constexpr (kApply) w.command_count = command_count;
  return Error::none;
}

// Scores: at most kMaxPlayers, the last one nonzero (the encoding is canonical).
template <bool kApply>
Error parse_scores(Reader& in, WorldData& w) {
  const uint32_t scored = in.u32();
  if (in.failed || scored > kMaxPlayers) return Error::snapshot_corrupt;
  for (uint32_t p = 0; p < scored; ++p) {
    const int32_t score = in.i32();
    if (in.failed || (p + 1 == scored && score == 0)) return Error::snapshot_corrupt;
    if constexpr (kApply) w.scores[p] = score;
  }
  if constexpr (kApply) {
    for (uint32_t p = scored; p < kMaxPlayers; ++p)
      w.scores[p] = 0;
  }
  return Error::none;
}

// Game state: present only when fields are declared (a snapshot without it clears them). Each
// declaration is one declare_state_field would accept; a player field's list is canonical.
template <bool kApply>
Error parse_game_state(Reader& in, WorldData& w) {
  if (in.n == in.size) {
    if constexpr (kApply) {
      w.state_field_count = 0;
      std::fill(w.state_values.begin(), w.state_values.end(), 0);
    }
    return Error::none;
  }
  const uint32_t count = in.u32();
  if (in.failed || count == 0 || count > kMaxStateFields) return Error::snapshot_corrupt;
  StateFieldDef fields[kMaxStateFields];
  for (uint32_t f = 0; f < count; ++f) {
    StateFieldDef& field = fields[f];
    for (char& c : field.name)
      c = static_cast<char>(in.u8());
    const uint8_t scope = in.u8();
    const uint8_t type = in.u8();
    field.default_value = in.i32();
    if (in.failed || scope > 1 || type > 1) return Error::snapshot_corrupt;
    field.scope = static_cast<StateScope>(scope);
    field.type = static_cast<StateType>(type);
    if (check_state_field_def(field, fields, f) != Error::none) return Error::snapshot_corrupt;
    int32_t* values = &w.state_values[static_cast<size_t>(f) * kMaxStatePlayers];
    if (field.scope == StateScope::room) {
      const int32_t value = in.i32();
      if (in.failed) return Error::snapshot_corrupt;
      if constexpr (kApply) values[0] = value;
      continue;
    }
    const uint32_t players = in.u32();
    if (in.failed || players > kMaxStatePlayers) return Error::snapshot_corrupt;
    for (uint32_t p = 0; p < players; ++p) {
      const int32_t value = in.i32();
      if (in.failed || (p + 1 == players && value == field.default_value)) {
        return Error::snapshot_corrupt;
      }
      if constexpr (kApply) values[p] = value;
    }
    if constexpr (kApply) {
      for (uint32_t p = players; p < kMaxStatePlayers; ++p)
        values[p] = field.default_value;
    }
  }
  if constexpr (kApply) {
    w.state_field_count = count;
    for (uint32_t f = 0; f < kMaxStateFields; ++f)
      w.state_fields[f] = f < count ? fields[f] : StateFieldDef{};
    std::fill(w.state_values.begin() + static_cast<std::ptrdiff_t>(count * kMaxStatePlayers),
              w.state_values.end(), 0);
  }
  return Error::none;
}

template <bool kApply>
Error parse_state(Reader& in, WorldData& w) {
  uint32_t slot_count = 0;
  Error e = parse_header<kApply>(in, w, &slot_count);
  for (uint32_t slot = 0; e == Error::none && slot < slot_count; ++slot)
    e = parse_body_slot<kApply>(in, w, slot, slot_count);
  if (e == Error::none) e = check_island_roots(w, slot_count);
  if (e == Error::none) e = parse_contact_cache<kApply>(in, w, slot_count);
  if (e == Error::none) e = parse_sensor_pairs<kApply>(in, w, slot_count);
  if (e == Error::none) e = parse_queued_inputs<kApply>(in, w, slot_count);
  if (e == Error::none) e = parse_queued_commands<kApply>(in, w);
  if (e == Error::none) e = parse_scores<kApply>(in, w);
  if (e == Error::none) e = parse_game_state<kApply>(in, w);
  if (e != Error::none) return e;
  if (in.n != in.size) return Error::snapshot_corrupt;  // trailing bytes
  return Error::none;
}

uint64_t read_u64_le(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = v << 8 | p[i];
  return v;
}

void write_u64_le(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    p[i] = static_cast<uint8_t>(v >> (8 * i));
}

}  // namespace

size_t encoded_state_size(const WorldData& w) {
  size_t n = kStateHeaderBytes + static_cast<size_t>(w.slot_count) * kSlotBytes +
             static_cast<size_t>(w.body_count) * kLiveBodyBytes;
  for (uint32_t slot = 0; slot < w.slot_count; ++slot)
    if (w.bodies[slot].alive) n -= shape_bytes_left_out(w.bodies[slot].shape.type);
  n += 4 + static_cast<size_t>(w.cache.manifold_count) * kManifoldBytes +
       static_cast<size_t>(w.cache.point_count) * kPointBytes;
  n += 4 + static_cast<size_t>(w.sensor_pair_count) * 8;
  n += 4 + static_cast<size_t>(w.input_count) * kInputBytes;
  n += 4 + static_cast<size_t>(w.command_count) * kCommandBytes;
  n += 4 + static_cast<size_t>(scored_player_count(w)) * 4;
  n += game_state_bytes(w);
  return n;
}

size_t state_hash_scratch_bytes() {
  return kHashScratchBytes;
}

size_t max_encoded_state_size(const WorldDef& def) {
  return kStateHeaderBytes + static_cast<size_t>(def.max_bodies) * (kSlotBytes + kLiveBodyBytes) +
         4 + static_cast<size_t>(def.max_contact_pairs) * kManifoldBytes +
         static_cast<size_t>(def.max_contact_points) * kPointBytes + 4 +
         static_cast<size_t>(def.max_contact_pairs) * 8 + 4 +
         static_cast<size_t>(def.max_inputs_per_tick) * kInputBytes + 4 +
         static_cast<size_t>(def.max_commands_per_tick) * kCommandBytes + 4 +
         static_cast<size_t>(kMaxPlayers) * 4 + kMaxGameStateBytes;
}

void update_state_hash(const WorldData& w) {
  // Streamed in chunks that stay in cache instead of writing the whole encoding (~1 MB on
  // pyramid3d) and reading it back; XXH3's streaming form hashes the same bytes to the same value.
  XXH3_state_t state;  // on the stack: the step never allocates
  XXH3_INITSTATE(&state);
  XXH3_64bits_reset(&state);
  const size_t tail =
      encode_state(w, w.scratch.data(), [&state](const uint8_t* out, size_t n) -> size_t {
        if (n < kChunkBytes) return n;
        XXH3_64bits_update(&state, out, n);
        return 0;
      });
  XXH3_64bits_update(&state, w.scratch.data(), tail);
  w.state_hash = XXH3_64bits_digest(&state);
  w.hash_dirty = false;
}

uint64_t world_def_fingerprint(const WorldDef& requested) {
  // Over the capacities a world made from it uses: a def with its contact capacities left 0 and
  // one with the derived values written out are the same world. (Set-up code: it allocates.)
  const auto def = std::make_unique<WorldDef>(requested);
  resolve_capacities(def.get());
  uint8_t bytes[4 + DefinitionWriter::max_bytes<WorldDef>()];
  Writer o{bytes};
  o.u32(kDefEncodingVersion);
  DefinitionWriter(o, *def).fields(*def);
  return XXH3_64bits(bytes, o.n);
}

uint64_t World::state_hash() const {
  if (data_->hash_dirty) update_state_hash(*data_);
  return data_->state_hash;
}

size_t World::snapshot_size() const {
  return kSnapshotHeaderBytes + encoded_state_size(*data_) + kSnapshotTrailerBytes;
}

size_t World::max_snapshot_size() const {
  return kSnapshotHeaderBytes + max_encoded_state_size(data_->def) + kSnapshotTrailerBytes;
}

Error World::save_snapshot(std::span<uint8_t> buffer, size_t* written) const {
  const size_t total = snapshot_size();
  if (written != nullptr) *written = 0;
  if (buffer.size() < total) return Error::buffer_too_small;
  uint8_t* out = buffer.data();
  std::memcpy(out, kSnapshotMagic, 4);
  Writer header{out + 4};
  header.u32(kSnapshotVersion);
  header.u64(total);
  const size_t payload =
      encode_state(*data_, out + kSnapshotHeaderBytes, [](const uint8_t*, size_t n) { return n; });
  const size_t body = kSnapshotHeaderBytes + payload;
  write_u64_le(out + body, XXH3_64bits(out, body));
  if (written != nullptr) *written = body + kSnapshotTrailerBytes;
  return Error::none;
}

Error World::restore_snapshot(std::span<const uint8_t> bytes) {
  WorldData& w = *data_;
  const uint8_t* p = bytes.data();
  const size_t size = bytes.size();
  if (size < 4) return Error::snapshot_truncated;
  if (std::memcmp(p, kSnapshotMagic, 4) != 0) return Error::snapshot_bad_magic;
  if (size < 8) return Error::snapshot_truncated;
  Reader header{p + 4, 12};
  if (header.u32() != kSnapshotVersion) return Error::snapshot_version;
  if (size < kSnapshotHeaderBytes) return Error::snapshot_truncated;
  const uint64_t total = header.u64();
  if (total < kSnapshotHeaderBytes + kSnapshotTrailerBytes) return Error::snapshot_corrupt;
  if (size < total) return Error::snapshot_truncated;
  if (size > total) return Error::snapshot_corrupt;
  const size_t body = size - kSnapshotTrailerBytes;
  if (XXH3_64bits(p, body) != read_u64_le(p + body)) return Error::snapshot_corrupt;

  // Validate everything first; only then write the world.
  Reader check{p + kSnapshotHeaderBytes, body - kSnapshotHeaderBytes};
  const Error e = parse_state<false>(check, w);
  if (e != Error::none) return e;
  Reader apply{p + kSnapshotHeaderBytes, body - kSnapshotHeaderBytes};
  parse_state<true>(apply, w);
  for (uint32_t slot = 0; slot < w.slot_count; ++slot)
    refresh_sleeping_box(w, slot);  // a sleeping body keeps the box it fell asleep with

  w.constraint_count = 0;
  w.point_count = 0;
  w.next_cache.manifold_count = 0;
  w.next_cache.point_count = 0;
  w.hints.count = 0;  // not state (world_data.h): a restored world starts without them
  w.event_count = 0;
  w.game_event_count = 0;
  w.command_result_count = 0;
  w.stats = StepStats{};
  w.stats.tick = w.tick;
  w.stats.bodies = w.body_count;
  w.counters = WorldCounters{};
  update_state_hash(w);
  return Error::none;
}

}  // namespace lockstep::sim
