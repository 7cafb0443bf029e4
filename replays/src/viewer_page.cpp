// The replay viewer's page: re-simulation of the runs, quantised per-tick poses, contacts, the
// hashes and the diff, written into the HTML template as JSON and base64 blobs.
//
// Pose stream of a run, per tick: varint(entry count), then per entry, in body-table order:
//   varint(gap << 1 | gone)   gap = table index − (previous entry's index + 1)
//   unless gone: position as 3 zigzag varints, the change of round(x · 1024) since the body's last
//   entry (0 before its first), then the orientation as u32 LE "smallest three": bits 30..31 the
//   index of the largest |component| (made positive), three 10-bit fields the others (x·√2 mapped
//   from [−1, 1] to 0..1022), in x, y, z, w order without the largest.
// A body appears when it spawns or its quantised pose changes, and once as gone when it dies:
// sleeping bodies cost nothing. Contact stream, per tick: varint(point count), then per point
// varint(body table index), varint(other table index), 3 zigzag varints round(p · 1024), the
// normal as 3 int8 (·127), one byte 1 when touching (separation ≤ 0).
#include "lockstep/replays/viewer_page.h"

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <set>

#include "replay_step.h"

namespace lockstep::replays {
namespace {

constexpr float kQuantaPerMetre = 1024.0f;

class ByteWriter {
 public:
  void varint(uint64_t v) {
    while (v >= 0x80) {
      bytes_.push_back(static_cast<uint8_t>(v | 0x80));
      v >>= 7;
    }
    bytes_.push_back(static_cast<uint8_t>(v));
  }
  void zigzag(int64_t v) {
    varint((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63));
  }
  void u32(uint32_t v) {
    for (int i = 0; i < 4; ++i)
      bytes_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  void u8(uint8_t v) { bytes_.push_back(v); }
  const std::vector<uint8_t>& bytes() const { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

int32_t quantise(float metres) {
  const float clamped = std::clamp(metres, -1.0e6f, 1.0e6f);
  return static_cast<int32_t>(std::lround(clamped * kQuantaPerMetre));
}

uint32_t pack_orientation(const sim::Quat& q) {
  const float c[4] = {q.x, q.y, q.z, q.w};
  int largest = 0;
  for (int i = 1; i < 4; ++i)
    if (std::fabs(c[i]) > std::fabs(c[largest])) largest = i;
  const float sign = c[largest] < 0 ? -1.0f : 1.0f;
  uint32_t packed = static_cast<uint32_t>(largest) << 30;
  int shift = 20;
  for (int i = 0; i < 4; ++i) {
    if (i == largest) continue;
    const float v = std::clamp(sign * c[i] * 1.41421356f, -1.0f, 1.0f);
    packed |= static_cast<uint32_t>(std::lround((v + 1.0f) * 511.0f)) << shift;
    shift -= 10;
  }
  return packed;
}

uint64_t body_key(sim::BodyId id) {
  return (static_cast<uint64_t>(id.index1) << 32) | id.generation;
}

std::string body_name(sim::BodyId id) {
  return std::to_string(id.index1) + ":" + std::to_string(id.generation);
}

// Every body either run shows, in order of first appearance (slot order within a tick).
struct BodyTable {
  std::map<uint64_t, uint32_t> index_of;
  std::vector<sim::BodyView> views;  // as first seen: type, shape, owner

  uint32_t index(const sim::BodyView& v) {
    const auto [it, added] = index_of.emplace(body_key(v.id), static_cast<uint32_t>(views.size()));
    if (added) views.push_back(v);
    return it->second;
  }
  std::optional<uint32_t> find(sim::BodyId id) const {
    const auto it = index_of.find(body_key(id));
    if (it == index_of.end()) return std::nullopt;
    return it->second;
  }
};

// One run's pose stream and re-simulated hashes, tick after tick.
class RunWriter {
 public:
  void record(const sim::World& world, BodyTable* table) {
    if (ticks_ == 0) first_tick_ = world.tick();
    ++ticks_;
    hashes_.push_back(world.state_hash());
    ids_.resize(world.body_count());
    ids_.resize(world.list_bodies(ids_));
    struct Entry {
      uint32_t index;
      bool gone;
      int32_t position[3];
      uint32_t orientation;
    };
    std::vector<Entry> entries;
    std::vector<uint8_t> seen(last_.size(), 0);
    for (const sim::BodyId id : ids_) {
      sim::BodyView v;
      if (world.get_body(id, &v) != sim::Error::none) continue;
      const uint32_t index = table->index(v);
      if (index >= last_.size()) {
        last_.resize(index + 1);
        seen.resize(index + 1, 0);
      }
      seen[index] = 1;
      Entry e{index,
              false,
              {quantise(v.position.x), quantise(v.position.y), quantise(v.position.z)},
              pack_orientation(v.orientation)};
      Last& l = last_[index];
      if (l.alive && l.orientation == e.orientation && l.position[0] == e.position[0] &&
          l.position[1] == e.position[1] && l.position[2] == e.position[2])
        continue;
      entries.push_back(e);
    }
    for (uint32_t i = 0; i < last_.size(); ++i)
      if (last_[i].alive && !seen[i]) entries.push_back(Entry{i, true, {0, 0, 0}, 0});
    std::sort(entries.begin(), entries.end(),
              [](const Entry& a, const Entry& b) { return a.index < b.index; });
    out_.varint(entries.size());
    int64_t previous = -1;
    for (const Entry& e : entries) {
      out_.varint((static_cast<uint64_t>(e.index - previous - 1) << 1) | (e.gone ? 1 : 0));
      previous = e.index;
      Last& l = last_[e.index];
      if (e.gone) {
        l.alive = false;
        continue;
      }
      for (int k = 0; k < 3; ++k) {
        out_.zigzag(static_cast<int64_t>(e.position[k]) - l.position[k]);
        l.position[k] = e.position[k];
      }
      out_.u32(e.orientation);
      l.orientation = e.orientation;
      l.alive = true;
    }
  }

  // The contact points of `watched` bodies (table indices) at this tick.
  void record_contacts(const sim::World& world, const BodyTable& table,
                       const std::vector<sim::BodyId>& watched) {
    std::vector<sim::ContactPointView> points(64);
    uint32_t total = 0;
    ByteWriter tick;
    for (const sim::BodyId id : watched) {
      const std::optional<uint32_t> index = table.find(id);
      if (!index) continue;
      uint32_t n = world.contact_points(id, points);
      if (n > points.size()) {
        points.resize(n);
        n = world.contact_points(id, points);
      }
      for (uint32_t i = 0; i < n; ++i) {
        const sim::ContactPointView& p = points[i];
        const std::optional<uint32_t> other = table.find(p.other);
        tick.varint(*index);
        tick.varint(other ? *other : *index);
        tick.zigzag(quantise(p.point.x));
        tick.zigzag(quantise(p.point.y));
        tick.zigzag(quantise(p.point.z));
        for (const float c : {p.normal.x, p.normal.y, p.normal.z})
          tick.u8(static_cast<uint8_t>(
              static_cast<int8_t>(std::lround(std::clamp(c, -1.0f, 1.0f) * 127.0f))));
        tick.u8(p.separation_m <= 0.0f ? 1 : 0);
        ++total;
      }
    }
    contacts_.varint(total);
    for (const uint8_t b : tick.bytes())
      contacts_.u8(b);
  }

  uint64_t first_tick() const { return first_tick_; }
  uint64_t ticks() const { return ticks_; }
  const std::vector<uint64_t>& hashes() const { return hashes_; }
  const std::vector<uint8_t>& poses() const { return out_.bytes(); }
  const std::vector<uint8_t>& contacts() const { return contacts_.bytes(); }

 private:
  struct Last {
    bool alive = false;
    int32_t position[3] = {0, 0, 0};
    uint32_t orientation = 0;
  };
  uint64_t first_tick_ = 0;
  uint64_t ticks_ = 0;
  std::vector<uint64_t> hashes_;
  std::vector<Last> last_;
  std::vector<sim::BodyId> ids_;
  ByteWriter out_;
  ByteWriter contacts_;
};

// Steps `world` over the tick record of `tick`; with `follow_keyframes`, a later keyframe whose
// hash is not the re-simulated one replaces the state: the writer's own world left its inputs
// there (a client's live state at a desync), and the viewer shows what the writer had.
bool advance(const LoadedReplay& replay, uint64_t tick, bool follow_keyframes, sim::World* world,
             std::string* error) {
  detail::step_replay_tick(*world,
                           replay.ticks[static_cast<size_t>(tick - replay.header.first_tick - 1)]);
  if (!follow_keyframes) return true;
  const ReplayKeyframe* k = detail::keyframe_at(replay, tick);
  if (k == nullptr || k->state_hash == world->state_hash()) return true;
  const sim::Error e = world->restore_snapshot(k->snapshot);
  if (e != sim::Error::none) {
    *error = "keyframe at tick " + std::to_string(tick) +
             " cannot be restored: " + sim::error_message(e);
    return false;
  }
  return true;
}

std::string number(double value) {
  if (value != value) return "\"NaN\"";
  if (value - value != 0) return value > 0 ? "\"Infinity\"" : "\"-Infinity\"";
  char text[32];
  std::snprintf(text, sizeof(text), "%.9g", value);
  return text;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '<') {
      out += "\\u003c";  // never "</script>" inside the page's script element
    } else if (u < 0x20) {
      char esc[8];
      std::snprintf(esc, sizeof(esc), "\\u%04x", u);
      out += esc;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string base64(const std::vector<uint8_t>& bytes) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const uint32_t v = (uint32_t{bytes[i]} << 16) | (uint32_t{bytes[i + 1]} << 8) | bytes[i + 2];
    for (int s = 18; s >= 0; s -= 6)
      out += kAlphabet[(v >> s) & 63];
  }
  if (i < bytes.size()) {
    uint32_t v = uint32_t{bytes[i]} << 16;
    if (i + 1 < bytes.size()) v |= uint32_t{bytes[i + 1]} << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

// A solid's drawing in body space: vertices, and faces as vertex index lists, each convex and
// counter-clockwise seen from outside (the page fans them into triangles).
struct PolyMesh {
  std::vector<sim::Vec3> v;
  std::vector<std::vector<uint32_t>> f;
};

void add_hull(const sim::HullView& h, const sim::Transform& pose, PolyMesh* mesh) {
  const uint32_t base = static_cast<uint32_t>(mesh->v.size());
  for (uint32_t i = 0; i < h.vertex_count; ++i)
    mesh->v.push_back(pose.p + sim::rotate(pose.q, h.vertices[i]));
  uint32_t at = 0;
  for (uint32_t f = 0; f < h.face_count; ++f) {
    std::vector<uint32_t> face;
    for (uint32_t k = 0; k < h.face_sizes[f]; ++k)
      face.push_back(base + h.face_indices[at++]);
    mesh->f.push_back(std::move(face));
  }
}

void add_box(sim::Vec3 half, const sim::Transform& pose, PolyMesh* mesh) {
  const uint32_t base = static_cast<uint32_t>(mesh->v.size());
  for (int i = 0; i < 8; ++i) {
    const sim::Vec3 corner{(i & 1) ? half.x : -half.x, (i & 2) ? half.y : -half.y,
                           (i & 4) ? half.z : -half.z};
    mesh->v.push_back(pose.p + sim::rotate(pose.q, corner));
  }
  // Corner i has bit 0 for +x, bit 1 for +y, bit 2 for +z; each face counter-clockwise outside.
  const uint32_t faces[6][4] = {{1, 3, 7, 5}, {0, 4, 6, 2}, {2, 6, 7, 3},
                                {0, 1, 5, 4}, {4, 5, 7, 6}, {0, 2, 3, 1}};
  for (const auto& face : faces)
    mesh->f.push_back({base + face[0], base + face[1], base + face[2], base + face[3]});
}

// A sphere (half_height 0) or a capsule along its local y, as rings of quads.
void add_round(float radius, float half_height, const sim::Transform& pose, PolyMesh* mesh) {
  constexpr int kRings = 8, kSegments = 12;
  const uint32_t base = static_cast<uint32_t>(mesh->v.size());
  for (int i = 0; i <= kRings; ++i) {
    const double th = 3.14159265358979 * i / kRings;
    const float lift = i <= kRings / 2 ? half_height : -half_height;
    for (int j = 0; j < kSegments; ++j) {
      const double ph = 2 * 3.14159265358979 * j / kSegments;
      const sim::Vec3 p{static_cast<float>(std::sin(th) * std::cos(ph)) * radius,
                        static_cast<float>(std::cos(th)) * radius + lift,
                        static_cast<float>(std::sin(th) * std::sin(ph)) * radius};
      mesh->v.push_back(pose.p + sim::rotate(pose.q, p));
    }
  }
  for (int i = 0; i < kRings; ++i) {
    for (int j = 0; j < kSegments; ++j) {
      const uint32_t a = base + static_cast<uint32_t>(i * kSegments + j);
      const uint32_t b = base + static_cast<uint32_t>(i * kSegments + (j + 1) % kSegments);
      // The page takes a face's normal from its first three corners: at the top pole a and b are
      // one point, so the top ring's quads start below it.
      if (i == 0) {
        mesh->f.push_back({b + kSegments, a + kSegments, a, b});
      } else {
        mesh->f.push_back({a, b, b + kSegments, a + kSegments});
      }
    }
  }
}

std::string mesh_json(const PolyMesh& mesh) {
  std::string out = "{\"v\":[";
  for (size_t i = 0; i < mesh.v.size(); ++i) {
    if (i) out += ',';
    out += number(mesh.v[i].x) + "," + number(mesh.v[i].y) + "," + number(mesh.v[i].z);
  }
  out += "],\"f\":[";
  for (size_t f = 0; f < mesh.f.size(); ++f) {
    out += f ? ",[" : "[";
    for (size_t k = 0; k < mesh.f[f].size(); ++k) {
      if (k) out += ',';
      out += std::to_string(mesh.f[f][k]);
    }
    out += ']';
  }
  return out + "]}";
}

// A hull's or a compound's drawing, as "hull_index":N,"hull":{"v":[x,y,z,...],"f":[[i,...],...]}
// (a compound's children in one mesh, "compound_index":N).
std::string hull_json(const sim::World& world, const sim::ShapeDef& s) {
  PolyMesh mesh;
  sim::HullView h;
  if (s.type == sim::ShapeType::hull) {
    if (world.get_hull(s.hull, &h) != sim::Error::none) return "";
    add_hull(h, sim::Transform{}, &mesh);
    return ",\"hull_index\":" + std::to_string(s.hull) + ",\"hull\":" + mesh_json(mesh);
  }
  sim::CompoundView c;
  if (s.type != sim::ShapeType::compound || world.get_compound(s.compound, &c) != sim::Error::none)
    return "";
  for (uint32_t i = 0; i < c.child_count; ++i) {
    const sim::ShapeDef& child = c.children[i];
    const sim::Transform pose{c.positions[i], c.orientations[i]};
    if (child.type == sim::ShapeType::box) {
      add_box(child.half_extents, pose, &mesh);
    } else if (child.type == sim::ShapeType::hull) {
      if (world.get_hull(child.hull, &h) == sim::Error::none) add_hull(h, pose, &mesh);
    } else {
      add_round(child.radius, child.type == sim::ShapeType::capsule ? child.half_height : 0.0f,
                pose, &mesh);
    }
  }
  return ",\"compound_index\":" + std::to_string(s.compound) + ",\"hull\":" + mesh_json(mesh);
}

// The page draws with 16-bit indices and three corners per triangle of its own: a level shape of
// more triangles than that is left undrawn (its bodies still move over it).
constexpr uint64_t kMaxDrawnLevelTriangles = 65535 / 3;

// A mesh's or a heightfield's triangles in body space, as "level_index":N,"hull":{...} with one
// face per triangle, from the replay header's level; "" when the header has no such shape or it
// is too large to draw.
std::string level_json(const ReplayHeader& header, const sim::ShapeDef& s) {
  PolyMesh mesh;
  if (s.type == sim::ShapeType::mesh) {
    if (s.mesh >= header.level_meshes.size()) return "";
    const sim::SceneMesh& m = header.level_meshes[s.mesh];
    if (m.indices.size() / 3 > kMaxDrawnLevelTriangles) return "";
    mesh.v = m.vertices;
    for (size_t i = 0; i + 2 < m.indices.size(); i += 3)
      mesh.f.push_back({m.indices[i], m.indices[i + 1], m.indices[i + 2]});
    return ",\"level_index\":" + std::to_string(s.mesh) + ",\"hull\":" + mesh_json(mesh);
  }
  if (s.type != sim::ShapeType::heightfield || s.mesh >= header.level_heightfields.size())
    return "";
  const sim::SceneHeightfield& h = header.level_heightfields[s.mesh];
  if (h.columns < 2 || h.rows < 2 ||
      2 * uint64_t{h.columns - 1} * (h.rows - 1) > kMaxDrawnLevelTriangles)
    return "";
  for (uint32_t r = 0; r < h.rows; ++r) {
    for (uint32_t c = 0; c < h.columns; ++c) {
      mesh.v.push_back({static_cast<float>(c) * h.spacing_x, h.heights[r * h.columns + c],
                        static_cast<float>(r) * h.spacing_z});
    }
  }
  // Each cell cut along the diagonal from (c, r) to (c + 1, r + 1), fronts up (+y), as the sim
  // cuts it.
  for (uint32_t r = 0; r + 1 < h.rows; ++r) {
    for (uint32_t c = 0; c + 1 < h.columns; ++c) {
      const uint32_t a = r * h.columns + c, b = a + 1, d = a + h.columns, e = d + 1;
      mesh.f.push_back({a, d, e});
      mesh.f.push_back({a, e, b});
    }
  }
  return ",\"level_index\":" + std::to_string(s.mesh) + ",\"hull\":" + mesh_json(mesh);
}

std::string body_json(const sim::World& world, const ReplayHeader& header, const sim::BodyView& v) {
  const sim::ShapeDef& s = v.shape;
  return "{\"id\":\"" + body_name(v.id) + "\",\"type\":\"" + detail::body_type_name(v.type) +
         "\",\"shape\":\"" + detail::shape_type_name(s.type) +
         "\",\"owner\":" + std::to_string(v.owner_player) +
         ",\"sensor\":" + (s.sensor ? "true" : "false") + ",\"r\":" + number(s.radius) +
         ",\"hx\":" + number(s.half_extents.x) + ",\"hy\":" + number(s.half_extents.y) +
         ",\"hz\":" + number(s.half_extents.z) + ",\"hh\":" + number(s.half_height) + ",\"n\":[" +
         number(s.plane_normal.x) + "," + number(s.plane_normal.y) + "," +
         number(s.plane_normal.z) + "],\"d\":" + number(s.plane_offset) + hull_json(world, s) +
         level_json(header, s) + "}";
}

std::string hashes_json(const std::vector<std::optional<uint64_t>>& hashes) {
  std::string out = "[";
  for (size_t i = 0; i < hashes.size(); ++i) {
    if (i) out += ',';
    out += hashes[i] ? "\"" + detail::hex64(*hashes[i]) + "\"" : "null";
  }
  return out + "]";
}

// The hash a file records for `tick` (its writer's), or none outside it.
std::optional<uint64_t> recorded_hash(const LoadedReplay& r, uint64_t tick, bool client) {
  if (tick < r.header.first_tick || tick > r.last_tick()) return std::nullopt;
  if (tick == r.header.first_tick) {
    const ReplayKeyframe* k = detail::keyframe_at(r, tick);
    return k ? std::optional<uint64_t>(k->state_hash) : std::nullopt;
  }
  const ReplayTick& t = r.ticks[static_cast<size_t>(tick - r.header.first_tick - 1)];
  return client ? t.client_hash : std::optional<uint64_t>(t.authoritative_hash);
}

void replace(std::string* text, const std::string& marker, const std::string& value) {
  const size_t at = text->find(marker);
  if (at != std::string::npos) text->replace(at, marker.size(), value);
}

std::string file_label(const LoadedReplay& r) {
  if (r.header.writer == ReplayWriterKind::client)
    return "client (player " + std::to_string(r.header.player_id) + ")";
  return "server";
}

// The desync, by diff_replays' rules: against the other file, or for a client file alone,
// between the server's view of the match (its authoritative hashes, re-simulated from the
// first keyframe) and the client's own (its hashes, its keyframes). None for a server file alone.
std::optional<DiffResult> find_desync(const LoadedReplay& replay, const LoadedReplay* against,
                                      const ViewerOptions& options, std::string* other_label) {
  if (against != nullptr) {
    *other_label = file_label(*against) + " file";
    return diff_replays(replay, *against, options.max_fields);
  }
  if (replay.header.writer != ReplayWriterKind::client) return std::nullopt;
  LoadedReplay server_view;
  server_view.header = replay.header;
  server_view.header.writer = ReplayWriterKind::server;
  server_view.keyframes = {replay.keyframes.front()};
  server_view.ticks = replay.ticks;
  for (ReplayTick& t : server_view.ticks)
    t.client_hash.reset();
  *other_label = "client's own state";
  return diff_replays(server_view, replay, options.max_fields);
}

// The bodies whose contacts the page shows: every body of a small world, else owned and
// differing bodies and the asked ones; in key order.
std::vector<sim::BodyId> watched_bodies(const sim::World& world, const ViewerOptions& options,
                                        const std::optional<DiffResult>& diff) {
  std::set<uint64_t> watched_keys;
  std::vector<sim::BodyId> ids(world.body_count());
  ids.resize(world.list_bodies(ids));
  for (const sim::BodyId id : ids) {
    sim::BodyView v;
    if (world.get_body(id, &v) != sim::Error::none) continue;
    if (ids.size() <= kViewerAllContactsBodies || v.owner_player != 0)
      watched_keys.insert(body_key(id));
    for (const uint32_t slot : options.contact_bodies)
      if (slot == id.index1) watched_keys.insert(body_key(id));
  }
  if (diff)
    for (const FieldDiff& f : diff->fields)
      if (!f.body.is_null()) watched_keys.insert(body_key(f.body));
  std::vector<sim::BodyId> watched;
  for (const uint64_t key : watched_keys)
    watched.push_back(sim::BodyId{static_cast<uint32_t>(key >> 32), static_cast<uint32_t>(key)});
  return watched;
}

// Run B: from the divergent tick, the other file's writer state (its newest keyframe at or
// before the tick, re-simulated, following its later keyframes), up to `last_tick`.
bool record_other_run(const LoadedReplay& other, uint64_t divergent, uint64_t last_tick,
                      BodyTable* table, RunWriter* run_b, std::string* error) {
  std::unique_ptr<sim::World> world_b = simulate_replay_to(other, divergent, error);
  if (!world_b) return false;
  const ReplayKeyframe* k = detail::keyframe_at(other, divergent);
  if (k != nullptr && k->state_hash != world_b->state_hash() &&
      world_b->restore_snapshot(k->snapshot) != sim::Error::none) {
    *error = "keyframe at tick " + std::to_string(divergent) + " cannot be restored";
    return false;
  }
  run_b->record(*world_b, table);
  for (uint64_t t = divergent + 1; t <= std::min(other.last_tick(), last_tick); ++t) {
    if (!advance(other, t, true, world_b.get(), error)) return false;
    run_b->record(*world_b, table);
  }
  return true;
}

// The page's "hashes" member: per tick of run A's window, re-simulated, recorded
// (authoritative), the client's own and the other file's.
std::string hashes_meta(const LoadedReplay& replay, const LoadedReplay* against,
                        const RunWriter& run_a) {
  const bool client_file = replay.header.writer == ReplayWriterKind::client;
  std::vector<std::optional<uint64_t>> resim, recorded, client, other_hashes;
  for (uint64_t t = replay.header.first_tick; t <= replay.last_tick(); ++t) {
    resim.push_back(run_a.hashes()[static_cast<size_t>(t - replay.header.first_tick)]);
    recorded.push_back(recorded_hash(replay, t, false));
    if (client_file) client.push_back(recorded_hash(replay, t, true));
    if (against != nullptr)
      other_hashes.push_back(
          recorded_hash(*against, t, against->header.writer == ReplayWriterKind::client));
  }
  return "\"hashes\":{\"resim\":" + hashes_json(resim) + ",\"recorded\":" + hashes_json(recorded) +
         ",\"client\":" + (client_file ? hashes_json(client) : "null") +
         ",\"other\":" + (against != nullptr ? hashes_json(other_hashes) : "null") + "}";
}

// The page's "desync" member: the first divergent tick, the differing fields and the bodies
// they belong to (indices into the body table), or null.
std::string desync_meta(const std::optional<DiffResult>& diff, std::optional<uint64_t> divergent,
                        const std::string& other_label, const BodyTable& table) {
  if (!divergent) return "\"desync\":null";
  std::string meta =
      "\"desync\":{\"first_tick\":" + std::to_string(*divergent) +
      ",\"compared_tick\":" + std::to_string(diff->compared_tick.value_or(*divergent)) +
      ",\"note\":" + json_string(diff->note) + ",\"other\":" + json_string(other_label) +
      ",\"fields\":[";
  std::set<uint32_t> differing;
  for (size_t i = 0; i < diff->fields.size(); ++i) {
    const FieldDiff& f = diff->fields[i];
    if (i) meta += ",\n";
    meta += "{\"body\":\"" + body_name(f.body) + "\",\"field\":" + json_string(f.field) +
            ",\"a\":" + number(f.value_a) + ",\"b\":" + number(f.value_b) +
            ",\"ulps\":" + std::to_string(f.ulps) + "}";
    if (const std::optional<uint32_t> index = table.find(f.body)) differing.insert(*index);
  }
  meta += "],\"bodies\":[";
  bool first_body = true;
  for (const uint32_t index : differing) {
    if (!first_body) meta += ',';
    first_body = false;
    meta += std::to_string(index);
  }
  return meta + "]}";
}

// What the page shows of the game besides bodies: the game state at each tick it changes, the game
// events of every tick, and (from the file) the clients' game messages; and the positions of the
// dynamic bodies the first camera frames.
class GameTrack {
 public:
  void record(const sim::World& world) {
    if (states_.empty()) first_tick_box(world);
    std::string text = game_state_text(world);
    if (states_.empty() || states_.back().second != text)
      states_.emplace_back(world.tick(), std::move(text));
    for (const sim::GameEvent& e : world.game_events())
      events_.push_back({world.tick(), e});
    // At most ~64k samples per axis: every tick of a small world, every few ticks of a big one.
    ids_.resize(world.body_count());
    ids_.resize(world.list_bodies(ids_));
    size_t dynamic = 0;
    for (const sim::BodyId id : ids_) {
      sim::BodyView v;
      if (world.get_body(id, &v) != sim::Error::none || v.type != sim::BodyType::dynamic) continue;
      ++dynamic;
      if (dynamic_samples_++ % sample_every_ != 0) continue;
      const float p[3] = {v.position.x, v.position.y, v.position.z};
      for (int k = 0; k < 3; ++k)
        samples_[k].push_back(p[k]);
      extent_ = std::max(extent_, body_extent(v.shape));
    }
    if (samples_[0].size() > kMaxSamples) {
      for (std::vector<float>& axis : samples_) {
        std::vector<float> kept;
        for (size_t i = 0; i < axis.size(); i += 2)
          kept.push_back(axis[i]);
        axis.swap(kept);
      }
      sample_every_ *= 2;
    }
  }

  // The frame: percentiles of the dynamic bodies' positions, else the first tick's solid bodies.
  void frame(ViewerPage* page) {
    if (samples_[0].empty()) {
      for (int k = 0; k < 3; ++k) {
        page->frame_lo[k] = first_lo_[k];
        page->frame_hi[k] = first_hi_[k];
      }
      page->frame_from = "bodies at the first tick";
      return;
    }
    for (int k = 0; k < 3; ++k) {
      std::vector<float>& axis = samples_[k];
      const size_t lo = axis.size() * 2 / 100, hi = axis.size() - 1 - axis.size() * 2 / 100;
      std::nth_element(axis.begin(), axis.begin() + static_cast<std::ptrdiff_t>(lo), axis.end());
      page->frame_lo[k] = axis[lo] - extent_;
      std::nth_element(axis.begin(), axis.begin() + static_cast<std::ptrdiff_t>(hi), axis.end());
      page->frame_hi[k] = axis[hi] + extent_;
    }
    page->frame_from = "dynamic bodies over the match";
  }

  std::string meta(const LoadedReplay& replay, const ViewerPage& page) const {
    std::string out = ",\"frame\":{\"lo\":[" + number(page.frame_lo[0]) + "," +
                      number(page.frame_lo[1]) + "," + number(page.frame_lo[2]) + "],\"hi\":[" +
                      number(page.frame_hi[0]) + "," + number(page.frame_hi[1]) + "," +
                      number(page.frame_hi[2]) + "],\"from\":" + json_string(page.frame_from) +
                      "},\"game_state\":[";
    for (size_t i = 0; i < states_.size(); ++i)
      out += (i ? ",[" : "[") + std::to_string(states_[i].first) + "," +
             json_string(states_[i].second) + "]";
    out += "],\"game_events\":[";
    for (size_t i = 0; i < events_.size(); ++i) {
      const sim::GameEvent& e = events_[i].second;
      out += (i ? ",[" : "[") + std::to_string(events_[i].first) + "," + std::to_string(e.type) +
             "," + std::to_string(e.player) + "," + std::to_string(e.value) + "]";
    }
    out += "],\"game_messages\":[";
    bool first = true;
    for (const ReplayGameMessage& m : replay.game_messages) {
      if (m.tick < replay.header.first_tick || m.tick > replay.last_tick()) continue;
      out += (first ? "[" : ",[") + std::to_string(m.tick) + "," + std::to_string(m.player) + "," +
             json_string(std::string(m.data.begin(), m.data.end())) + "]";
      first = false;
    }
    return out + "]";
  }

  size_t events() const { return events_.size(); }
  size_t state_changes() const { return states_.empty() ? 0 : states_.size() - 1; }

 private:
  static constexpr size_t kMaxSamples = 65536;
  // The non-plane, non-sensor bodies of the first tick (the frame of a world without dynamic
  // bodies).
  void first_tick_box(const sim::World& world) {
    bool any = false;
    ids_.resize(world.body_count());
    ids_.resize(world.list_bodies(ids_));
    for (const sim::BodyId id : ids_) {
      sim::BodyView v;
      if (world.get_body(id, &v) != sim::Error::none || v.shape.type == sim::ShapeType::plane ||
          v.shape.sensor)
        continue;
      const float p[3] = {v.position.x, v.position.y, v.position.z};
      const float r = body_extent(v.shape);
      for (int k = 0; k < 3; ++k) {
        first_lo_[k] = any ? std::min(first_lo_[k], p[k] - r) : p[k] - r;
        first_hi_[k] = any ? std::max(first_hi_[k], p[k] + r) : p[k] + r;
      }
      any = true;
    }
  }
  static float body_extent(const sim::ShapeDef& s) {
    if (s.type == sim::ShapeType::sphere) return s.radius;
    if (s.type == sim::ShapeType::capsule) return s.radius + s.half_height;
    return std::max({s.half_extents.x, s.half_extents.y, s.half_extents.z, s.radius});
  }
  std::vector<std::pair<uint64_t, std::string>> states_;
  std::vector<std::pair<uint64_t, sim::GameEvent>> events_;
  std::vector<float> samples_[3];
  std::vector<sim::BodyId> ids_;
  uint64_t dynamic_samples_ = 0, sample_every_ = 1;
  float extent_ = 0;
  float first_lo_[3] = {-5, -5, -5}, first_hi_[3] = {5, 5, 5};
};

}  // namespace

ViewerPage make_viewer_page(const LoadedReplay& replay, const LoadedReplay* against,
                            const ViewerOptions& options) {
  ViewerPage page;
  const auto start = std::chrono::steady_clock::now();
  const bool client_file = replay.header.writer == ReplayWriterKind::client;

  std::string other_label;
  const std::optional<DiffResult> diff = find_desync(replay, against, options, &other_label);
  if (diff && !diff->ok) {
    page.error = diff->error;
    return page;
  }
  const std::optional<uint64_t> divergent = diff ? diff->first_divergent_tick : std::nullopt;

  // Run A: this file; a client file alone is shown as the server saw the match, its own
  // state (run B) over it from the divergence on.
  BodyTable table;
  RunWriter run_a, run_b;
  std::string error;
  std::unique_ptr<sim::World> world = make_replay_world(replay, &error);
  if (!world) {
    page.error = error;
    return page;
  }
  const bool a_follows_keyframes = !(client_file && against == nullptr);
  const std::vector<sim::BodyId> watched = watched_bodies(*world, options, diff);
  GameTrack game;
  run_a.record(*world, &table);
  run_a.record_contacts(*world, table, watched);
  game.record(*world);
  for (uint64_t t = replay.header.first_tick + 1; t <= replay.last_tick(); ++t) {
    if (!advance(replay, t, a_follows_keyframes, world.get(), &error)) {
      page.error = error;
      return page;
    }
    run_a.record(*world, &table);
    run_a.record_contacts(*world, table, watched);
    game.record(*world);
  }
  game.frame(&page);
  if (options.frame) {
    for (int k = 0; k < 3; ++k) {
      page.frame_lo[k] = (*options.frame)[static_cast<size_t>(k)];
      page.frame_hi[k] = (*options.frame)[static_cast<size_t>(k) + 3];
    }
    page.frame_from = "given";
  }
  const LoadedReplay* other = against != nullptr ? against : (client_file ? &replay : nullptr);
  if (divergent && other != nullptr && *divergent >= other->header.first_tick &&
      *divergent <= other->last_tick() &&
      !record_other_run(*other, *divergent, replay.last_tick(), &table, &run_b, &error)) {
    page.error = error;
    return page;
  }
  page.simulate_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  std::string meta = "{\"file_writer\":" + json_string(file_label(replay)) +
                     ",\"scene\":" + json_string(replay.header.scene) +
                     ",\"room\":" + json_string(replay.header.room) +
                     ",\"tick_rate_hz\":" + std::to_string(replay.header.tick_rate_hz) +
                     ",\"first_tick\":" + std::to_string(replay.header.first_tick) +
                     ",\"last_tick\":" + std::to_string(replay.last_tick()) +
                     ",\"quanta_per_metre\":" + number(kQuantaPerMetre) + ",\"bodies\":[";
  for (size_t i = 0; i < table.views.size(); ++i) {
    if (i) meta += ",\n";
    meta += body_json(*world, replay.header, table.views[i]);
  }
  meta += "]," + hashes_meta(replay, against, run_a);
  meta +=
      ",\"run_b\":" + (run_b.ticks() > 0 ? "{\"first_tick\":" + std::to_string(run_b.first_tick()) +
                                               ",\"ticks\":" + std::to_string(run_b.ticks()) +
                                               ",\"label\":" + json_string(other_label) + "}"
                                         : std::string("null"));
  meta += ",\"contact_bodies\":[";
  bool first = true;
  for (const sim::BodyId id : watched) {
    const std::optional<uint32_t> index = table.find(id);
    if (!index) continue;
    if (!first) meta += ',';
    first = false;
    meta += std::to_string(*index);
  }
  meta += "]," + desync_meta(diff, divergent, other_label, table) + game.meta(replay, page) + "}";

  // The blobs first: base64 has no '_' or '/*', so no marker can appear inside them, while the
  // JSON carries free text (room names).
  page.html = viewer_page_template();
  replace(&page.html, "LOCKSTEP_POSES_A", base64(run_a.poses()));
  replace(&page.html, "LOCKSTEP_POSES_B", base64(run_b.poses()));
  replace(&page.html, "LOCKSTEP_CONTACTS", base64(run_a.contacts()));
  replace(&page.html, "/*LOCKSTEP_META*/null", meta);
  page.ok = true;
  page.first_tick = replay.header.first_tick;
  page.last_tick = replay.last_tick();
  page.bodies = static_cast<uint32_t>(table.views.size());
  page.first_divergent_tick = divergent;
  page.fields = diff ? diff->fields.size() : 0;
  page.pose_bytes = run_a.poses().size();
  page.other_pose_bytes = run_b.poses().size();
  page.contact_bytes = run_a.contacts().size();
  page.game_events = game.events();
  page.game_state_changes = game.state_changes();
  for (const ReplayGameMessage& m : replay.game_messages)
    page.game_messages += m.tick >= page.first_tick && m.tick <= page.last_tick;
  return page;
}

}  // namespace lockstep::replays
