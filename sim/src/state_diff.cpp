#include "lockstep/sim/state_diff.h"

#include <bit>
#include <cstdint>

#include "lockstep/sim/world.h"

namespace lockstep::sim {
namespace {

constexpr int kFloatFields = 19;

// The body's float fields in their fixed comparison order (kFloatFieldNames).
void float_fields(const BodyView& v, float values[kFloatFields]) {
  const float all[kFloatFields] = {v.position.x,           v.position.y,
                                   v.position.z,           v.orientation.x,
                                   v.orientation.y,        v.orientation.z,
                                   v.orientation.w,        v.linear_velocity.x,
                                   v.linear_velocity.y,    v.linear_velocity.z,
                                   v.angular_velocity.x,   v.angular_velocity.y,
                                   v.angular_velocity.z,   v.mass_kg,
                                   v.shape.radius,         v.shape.half_extents.x,
                                   v.shape.half_extents.y, v.shape.half_extents.z,
                                   v.sleep_timer_s};
  for (int i = 0; i < kFloatFields; ++i)
    values[i] = all[i];
}

constexpr const char* kFloatFieldNames[kFloatFields] = {
    "position.x",           "position.y",
    "position.z",           "orientation.x",
    "orientation.y",        "orientation.z",
    "orientation.w",        "linear_velocity.x",
    "linear_velocity.y",    "linear_velocity.z",
    "angular_velocity.x",   "angular_velocity.y",
    "angular_velocity.z",   "mass_kg",
    "shape.radius",         "shape.half_extents.x",
    "shape.half_extents.y", "shape.half_extents.z",
    "sleep_timer_s"};

std::vector<BodyId> bodies_of(const World& world) {
  std::vector<BodyId> ids(world.body_count());
  ids.resize(world.list_bodies(ids));
  return ids;
}

}  // namespace

std::vector<StateFieldDiff> diff_state(const World& a, const World& b, size_t max_fields) {
  std::vector<StateFieldDiff> diffs;
  const auto add = [&](BodyId id, const char* field, double va, double vb, bool is_float) {
    if (diffs.size() < max_fields) diffs.push_back({id, 0, field, va, vb, is_float});
  };
  const std::vector<BodyId> ids_a = bodies_of(a), ids_b = bodies_of(b);
  // Both lists are in slot order (index1 ascending): merge them.
  size_t i = 0, j = 0;
  while (i < ids_a.size() || j < ids_b.size()) {
    if (j == ids_b.size() || (i < ids_a.size() && ids_a[i].index1 < ids_b[j].index1)) {
      add(ids_a[i++], "alive", 1, 0, false);
      continue;
    }
    if (i == ids_a.size() || ids_b[j].index1 < ids_a[i].index1) {
      add(ids_b[j++], "alive", 0, 1, false);
      continue;
    }
    const BodyId id = ids_a[i];
    if (ids_a[i].generation != ids_b[j].generation) {
      add(id, "generation", ids_a[i].generation, ids_b[j].generation, false);
    } else {
      BodyView va, vb;
      a.get_body(id, &va);
      b.get_body(id, &vb);
      if (va.type != vb.type)
        add(id, "type", static_cast<double>(va.type), static_cast<double>(vb.type), false);
      if (va.owner_player != vb.owner_player)
        add(id, "owner_player", va.owner_player, vb.owner_player, false);
      if (va.asleep != vb.asleep) add(id, "asleep", va.asleep ? 1 : 0, vb.asleep ? 1 : 0, false);
      float fa[kFloatFields], fb[kFloatFields];
      float_fields(va, fa);
      float_fields(vb, fb);
      for (int f = 0; f < kFloatFields; ++f) {
        if (std::bit_cast<uint32_t>(fa[f]) != std::bit_cast<uint32_t>(fb[f]))
          add(id, kFloatFieldNames[f], fa[f], fb[f], true);
      }
    }
    ++i;
    ++j;
  }
  for (uint32_t p = 1; p <= kMaxPlayers && diffs.size() < max_fields; ++p) {
    if (a.score(p) != b.score(p))
      diffs.push_back({BodyId{}, p, "score", static_cast<double>(a.score(p)),
                       static_cast<double>(b.score(p)), false});
  }
  return diffs;
}

}  // namespace lockstep::sim
