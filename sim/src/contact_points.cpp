// World::contact_points: the warm-start cache read back as world-space points and normals, for
// tools that show what a body touches (lockstep-replay view). The cache keeps each point in body
// A's frame (the midpoint between the surfaces where the narrowphase found it) and the manifold
// normal in A's frame too, so A's current pose places both.
#include "broadphase.h"
#include "world_data.h"

namespace lockstep::sim {

uint32_t World::contact_points(BodyId id, std::span<ContactPointView> out) const {
  const WorldData& w = *data_;
  if (id.is_null() || !is_alive(id)) return 0;
  const uint32_t slot = id.index1 - 1;
  uint32_t found = 0;
  for (uint32_t m = 0; m < w.cache.manifold_count; ++m) {
    const CachedManifold& cm = w.cache.manifolds[m];
    const uint32_t slot_a = pair_slot_a(cm.key), slot_b = pair_slot_b(cm.key);
    if (slot_a != slot && slot_b != slot) continue;
    const BodyRecord& a = w.bodies[slot_a];
    const uint32_t other = slot_a == slot ? slot_b : slot_a;
    // The normal points from B to A: towards `id` when it is A, away from it when it is B.
    Vec3 normal = rotate(a.orientation, cm.reference.normal);
    if (slot_a != slot) normal = -normal;
    for (uint32_t i = 0; i < cm.point_count; ++i, ++found) {
      if (found >= out.size()) continue;
      const CachedPoint& cp = w.cache.points[cm.first_point + i];
      ContactPointView& v = out[found];
      v.other = BodyId{other + 1, w.bodies[other].generation};
      v.point = a.position + rotate(a.orientation, cp.local_anchor_a);
      v.normal = normal;
      v.separation_m = cp.reference_separation_m;
      v.normal_impulse = cp.normal_impulse;
    }
  }
  return found;
}

}  // namespace lockstep::sim
