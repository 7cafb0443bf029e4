// Sort-and-sweep broadphase; see broadphase.h for the determinism argument.
#include "broadphase.h"

#include <algorithm>

namespace lockstep::sim {

void broadphase_init(Broadphase& bp, uint32_t max_bodies, uint32_t max_pairs) {
  bp.order.assign(max_bodies, 0);
  bp.order_count = 0;
  bp.pairs.assign(max_pairs, 0);
  bp.pair_count = 0;
  bp.dropped_pairs = 0;
}

void broadphase_insert(Broadphase& bp, uint32_t slot) {
  if (bp.order_count < bp.order.size()) bp.order[bp.order_count++] = slot;
}

void broadphase_remove(Broadphase& bp, uint32_t slot) {
  uint32_t n = bp.order_count;
  for (uint32_t i = 0; i < n; ++i) {
    if (bp.order[i] != slot) continue;
    for (uint32_t j = i + 1; j < n; ++j)
      bp.order[j - 1] = bp.order[j];
    bp.order_count = n - 1;
    return;
  }
}

void broadphase_clear(Broadphase& bp) {
  bp.order_count = 0;
  bp.pair_count = 0;
  bp.dropped_pairs = 0;
}

namespace {

// (lower.x, slot) strictly before. NaN never occurs (positions are validated finite), and even
// then the comparison is false, so the insertion sort still terminates.
inline bool sweep_less(const Aabb* aabbs, uint32_t a, uint32_t b) {
  float xa = aabbs[a].lower.x, xb = aabbs[b].lower.x;
  if (xa < xb) return true;
  if (xb < xa) return false;
  return a < b;
}

inline bool overlaps_yz(const Aabb& a, const Aabb& b) {
  return a.lower.y <= b.upper.y && b.lower.y <= a.upper.y && a.lower.z <= b.upper.z &&
         b.lower.z <= a.upper.z;
}

}  // namespace

void broadphase_update(Broadphase& bp, std::span<const Aabb> aabbs_span,
                       std::span<const uint8_t> dynamic) {
  const Aabb* aabbs = aabbs_span.data();
  uint32_t* order = bp.order.data();
  const uint32_t n = bp.order_count;

  // Insertion sort from last step's order: nearly sorted, so close to linear.
  for (uint32_t i = 1; i < n; ++i) {
    uint32_t slot = order[i];
    uint32_t j = i;
    while (j > 0 && sweep_less(aabbs, slot, order[j - 1])) {
      order[j] = order[j - 1];
      --j;
    }
    order[j] = slot;
  }

  uint64_t* pairs = bp.pairs.data();
  const uint32_t capacity = static_cast<uint32_t>(bp.pairs.size());
  uint32_t count = 0;
  uint32_t dropped = 0;
  bool heap = false;  // once full, pairs[] is a max-heap of the lowest keys seen so far
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t si = order[i];
    const Aabb& ai = aabbs[si];
    for (uint32_t k = i + 1; k < n; ++k) {
      const uint32_t sk = order[k];
      const Aabb& ak = aabbs[sk];
      if (ak.lower.x > ai.upper.x) break;
      if (!dynamic[si] && !dynamic[sk]) continue;
      if (!overlaps_yz(ai, ak)) continue;
      const uint64_t key = si < sk ? pair_key(si, sk) : pair_key(sk, si);
      if (count < capacity) {
        pairs[count++] = key;
        continue;
      }
      // Over capacity: keep the `capacity` lowest keys. Keys are unique, so which ones survive
      // does not depend on the order they were found in.
      ++dropped;
      if (!heap) {
        std::make_heap(pairs, pairs + count);
        heap = true;
      }
      if (key < pairs[0]) {
        std::pop_heap(pairs, pairs + count);
        pairs[count - 1] = key;
        std::push_heap(pairs, pairs + count);
      }
    }
  }
  std::sort(pairs, pairs + count);  // determinism-lint: allow (key is a total order)
  bp.pair_count = count;
  bp.dropped_pairs = dropped;
}

}  // namespace lockstep::sim
