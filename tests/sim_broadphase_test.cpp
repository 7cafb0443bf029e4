// Broadphase: the pair set against a brute-force O(n²) reference on random boxes, over many
// updates (coherent sorting, axis switches, bands), with statics spanning the scene, touching
// boxes, equal coordinates, slots inserted and removed, and more pairs than capacity.
//
// The reference is written independently of broadphase.cpp: every pair of live slots, the
// closed-interval overlap test on the three axes, at least one dynamic body, keys sorted, the
// lowest `capacity` kept. The comparison is exact (keys and counts are integers).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "broadphase.h"
#include "shape.h"

namespace lockstep::sim {
namespace {

struct Reference {
  std::vector<uint64_t> pairs;
  uint32_t dropped = 0;
};

bool overlap_closed(const Aabb& a, const Aabb& b) {
  return !(a.upper.x < b.lower.x || b.upper.x < a.lower.x || a.upper.y < b.lower.y ||
           b.upper.y < a.lower.y || a.upper.z < b.lower.z || b.upper.z < a.lower.z);
}

Reference brute_force(const std::vector<uint32_t>& live, const std::vector<Aabb>& boxes,
                      const std::vector<uint8_t>& dynamic, uint32_t capacity) {
  Reference r;
  for (size_t i = 0; i < live.size(); ++i) {
    for (size_t j = i + 1; j < live.size(); ++j) {
      uint32_t a = live[i], b = live[j];
      if (!dynamic[a] && !dynamic[b]) continue;
      if (!overlap_closed(boxes[a], boxes[b])) continue;
      uint64_t lo = a < b ? a : b, hi = a < b ? b : a;
      r.pairs.push_back(pair_key(static_cast<uint32_t>(lo), static_cast<uint32_t>(hi)));
    }
  }
  std::sort(r.pairs.begin(), r.pairs.end());
  if (r.pairs.size() > capacity) {
    r.dropped = static_cast<uint32_t>(r.pairs.size() - capacity);
    r.pairs.resize(capacity);
  }
  return r;
}

std::vector<uint64_t> result(const Broadphase& bp) {
  return std::vector<uint64_t>(bp.pairs.begin(), bp.pairs.begin() + bp.pair_count);
}

// A random scene generator. `grid` > 0 snaps every coordinate to multiples of it, so many boxes
// share bounds exactly (ties in the sort, touching faces).
struct Scene {
  std::mt19937 rng;
  std::vector<Aabb> boxes;
  std::vector<uint8_t> dynamic;
  std::vector<uint32_t> live;

  explicit Scene(uint32_t seed, uint32_t max_slots)
      : rng(seed), boxes(max_slots), dynamic(max_slots, 0) {}

  float uniform(float lo, float hi) { return std::uniform_real_distribution<float>(lo, hi)(rng); }
  float snap(float v, float grid) { return grid > 0.0f ? grid * std::round(v / grid) : v; }

  // A box of half-size in [0.05, max_half] centred in [-spread, spread] per axis (spread may
  // differ per axis: flat and elongated layouts exercise the axis choice and the bands).
  Aabb random_box(Vec3 spread, float max_half, float grid) {
    Vec3 c{uniform(-spread.x, spread.x), uniform(-spread.y, spread.y),
           uniform(-spread.z, spread.z)};
    Vec3 h{uniform(0.05f, max_half), uniform(0.05f, max_half), uniform(0.05f, max_half)};
    Aabb a{c - h, c + h};
    a.lower = {snap(a.lower.x, grid), snap(a.lower.y, grid), snap(a.lower.z, grid)};
    a.upper = {snap(a.upper.x, grid), snap(a.upper.y, grid), snap(a.upper.z, grid)};
    a.upper = max_elements(a.upper, a.lower);  // snapping keeps lower ≤ upper
    return a;
  }
};

void expect_matches(const Broadphase& bp, const Scene& s, uint32_t capacity, const char* what,
                    int step) {
  Reference ref = brute_force(s.live, s.boxes, s.dynamic, capacity);
  ASSERT_EQ(bp.pair_count, ref.pairs.size()) << what << " step " << step;
  EXPECT_EQ(bp.dropped_pairs, ref.dropped) << what << " step " << step;
  EXPECT_EQ(result(bp), ref.pairs) << what << " step " << step;
}

struct Config {
  const char* name;
  uint32_t bodies;
  Vec3 spread;
  float max_half;
  float grid;
  float static_share;  // fraction of bodies that are not dynamic
  uint32_t capacity;
  bool add_floor_and_walls;
};

void run_config(const Config& c, uint32_t seed) {
  const uint32_t max_slots = c.bodies + 8;
  Scene s(seed, max_slots);
  Broadphase bp;
  broadphase_init(bp, max_slots, c.capacity);
  uint32_t slot = 0;
  if (c.add_floor_and_walls) {
    // A ground box as the plane gives it (±1e6 sideways, top at 0) and two walls spanning x.
    s.boxes[slot] =
        Aabb{{-kPlaneExtent, -kPlaneExtent, -kPlaneExtent}, {kPlaneExtent, 0, kPlaneExtent}};
    s.live.push_back(slot++);
    float w = c.spread.x + 1.0f;
    s.boxes[slot] = Aabb{{-w, -1, c.spread.z}, {w, c.spread.y + 1, c.spread.z + 1}};
    s.live.push_back(slot++);
    s.boxes[slot] = Aabb{{-w, -1, -c.spread.z - 1}, {w, c.spread.y + 1, -c.spread.z}};
    s.live.push_back(slot++);
  }
  for (uint32_t i = 0; i < c.bodies; ++i, ++slot) {
    s.boxes[slot] = s.random_box(c.spread, c.max_half, c.grid);
    s.dynamic[slot] = s.uniform(0.0f, 1.0f) >= c.static_share ? 1 : 0;
    s.live.push_back(slot);
  }
  for (uint32_t v : s.live)
    broadphase_insert(bp, v);

  for (int step = 0; step < 12; ++step) {
    broadphase_update(bp, s.boxes, s.dynamic);
    expect_matches(bp, s, c.capacity, c.name, step);
    if (::testing::Test::HasFailure()) return;
    // Move the dynamic bodies a little (coherent), sometimes a lot.
    const float jump = step % 4 == 3 ? 3.0f : 0.1f;
    for (uint32_t v : s.live) {
      if (!s.dynamic[v]) continue;
      Vec3 d{s.uniform(-jump, jump), s.uniform(-jump, jump), s.uniform(-jump, jump)};
      s.boxes[v].lower += d;
      s.boxes[v].upper += d;
      s.boxes[v].lower = {s.snap(s.boxes[v].lower.x, c.grid), s.snap(s.boxes[v].lower.y, c.grid),
                          s.snap(s.boxes[v].lower.z, c.grid)};
      s.boxes[v].upper = {s.snap(s.boxes[v].upper.x, c.grid), s.snap(s.boxes[v].upper.y, c.grid),
                          s.snap(s.boxes[v].upper.z, c.grid)};
    }
    // Remove a live slot and insert a new one in a free slot, now and then.
    if (step % 3 == 1 && s.live.size() > 4) {
      size_t k = static_cast<size_t>(s.rng() % s.live.size());
      broadphase_remove(bp, s.live[k]);
      s.live.erase(s.live.begin() + static_cast<std::ptrdiff_t>(k));
    }
    if (step % 3 == 2 && slot < max_slots) {
      s.boxes[slot] = s.random_box(c.spread, c.max_half, c.grid);
      s.dynamic[slot] = 1;
      s.live.push_back(slot);
      broadphase_insert(bp, slot++);
    }
  }
}

TEST(Broadphase, MatchesBruteForceOnRandomBoxes) {
  const Config configs[] = {
      {"cube", 300, {10, 10, 10}, 1.0f, 0.0f, 0.1f, 100000, false},
      {"flat floor walls", 600, {30, 2, 30}, 0.8f, 0.0f, 0.0f, 100000, true},
      {"elongated z", 400, {3, 3, 60}, 1.0f, 0.0f, 0.2f, 100000, true},
      {"grid ties", 400, {6, 6, 6}, 1.0f, 0.5f, 0.2f, 100000, false},
      {"dense ties", 200, {2, 2, 2}, 1.0f, 0.25f, 0.3f, 100000, true},
      {"mostly static", 300, {15, 3, 15}, 1.0f, 0.0f, 0.9f, 100000, true},
      {"over capacity", 300, {5, 5, 5}, 1.5f, 0.0f, 0.1f, 50, true},
      {"over capacity ties", 200, {3, 3, 3}, 1.0f, 0.5f, 0.2f, 7, false},
      {"capacity one", 50, {2, 2, 2}, 1.0f, 0.0f, 0.0f, 1, false},
      {"tiny", 3, {1, 1, 1}, 1.0f, 0.0f, 0.0f, 16, false},
  };
  for (const Config& c : configs) {
    for (uint32_t seed = 1; seed <= 3; ++seed) {
      SCOPED_TRACE(c.name);
      run_config(c, seed);
      if (HasFailure()) return;
    }
  }
}

// Hand-checked cases: faces touching exactly overlap (closed intervals), a gap of one ulp does
// not, static–static and kinematic–static pairs are never reported, −0 equals +0.
TEST(Broadphase, TouchingStaticAndSignedZero) {
  std::vector<Aabb> boxes(6);
  std::vector<uint8_t> dynamic = {1, 1, 0, 0, 1, 1};
  boxes[0] = {{0, 0, 0}, {1, 1, 1}};
  boxes[1] = {{1, 0, 0}, {2, 1, 1}};     // touches 0 at x = 1
  boxes[2] = {{-5, -5, -5}, {5, 0, 5}};  // static floor, touches 0, 1 at y = 0
  boxes[3] = {{-5, -5, -5}, {5, 0, 5}};  // static twin: no static–static pair
  boxes[4] = {{std::nextafter(2.0f, 3.0f), 0, 0}, {3, 1, 1}};  // one ulp right of 1
  boxes[5] = {{-1, -0.0f, -1}, {-0.5f, 1, -0.5f}};             // −0 touches the floor's +0
  Broadphase bp;
  broadphase_init(bp, 6, 64);
  for (uint32_t i = 0; i < 6; ++i)
    broadphase_insert(bp, i);
  broadphase_update(bp, boxes, dynamic);
  // 4 misses 1 by an ulp in x but rests on the floor (its lower y is 0).
  const std::vector<uint64_t> expected = {pair_key(0, 1), pair_key(0, 2), pair_key(0, 3),
                                          pair_key(1, 2), pair_key(1, 3), pair_key(2, 4),
                                          pair_key(2, 5), pair_key(3, 4), pair_key(3, 5)};
  EXPECT_EQ(result(bp), expected);
  EXPECT_EQ(bp.dropped_pairs, 0u);
}

// Nothing dynamic: no pairs; clearing forgets every slot.
TEST(Broadphase, NoDynamicBodiesAndClear) {
  std::vector<Aabb> boxes(3, Aabb{{0, 0, 0}, {1, 1, 1}});
  std::vector<uint8_t> dynamic = {0, 0, 0};
  Broadphase bp;
  broadphase_init(bp, 3, 8);
  for (uint32_t i = 0; i < 3; ++i)
    broadphase_insert(bp, i);
  broadphase_update(bp, boxes, dynamic);
  EXPECT_EQ(bp.pair_count, 0u);
  dynamic[1] = 1;
  broadphase_update(bp, boxes, dynamic);
  EXPECT_EQ(result(bp), (std::vector<uint64_t>{pair_key(0, 1), pair_key(1, 2)}));
  broadphase_clear(bp);
  broadphase_update(bp, boxes, dynamic);
  EXPECT_EQ(bp.pair_count, 0u);
}

}  // namespace
}  // namespace lockstep::sim
