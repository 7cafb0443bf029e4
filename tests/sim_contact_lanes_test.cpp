// The contact solver's colouring and lanes (contact_lanes.h).
//
// 1. The colouring: checked against a greedy colouring written here (lowest colour free on both
//    dynamic bodies, in key order) and against the layout rules: every manifold in exactly one
//    lane, colours in order and contiguous, grouped by point count inside a colour and keys
//    increasing inside a group, no dynamic body twice in a batch solved at once, the overflow
//    last and sequential, the point rows consistent.
// 2. The claim the batches rest on: the lanes of a non-sequential batch solved at once give the
//    same bits as the same lanes solved one after another (every batch marked sequential).
//    Compared with memcmp: velocities, every point lane (impulses included) and the counters.
// 3. What is never written: the zero slot and the non-dynamic bodies' velocities keep their bits.
// 4. A world whose platform carries 80 boxes (81 manifolds on one dynamic body, so the overflow
//    is used every step): no overflow status, no allocation, nothing sinks, two worlds agree.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <set>
#include <vector>

#include "alloc_counter.h"
#include "broadphase.h"
#include "lockstep/sim/scene.h"
#include "lockstep/sim/world.h"
#include "solver/contact_lanes.h"
#include "solver/contact_solver.h"
#include "solver/friction_block.h"
#include "test_math.h"
#include "world_data.h"

namespace {

using lockstep::sim::BodyDef;
using lockstep::sim::BodyId;
using lockstep::sim::BodySolverState;
using lockstep::sim::BodyType;
using lockstep::sim::BodyView;
using lockstep::sim::ContactConstraint;
using lockstep::sim::ContactLanes;
using lockstep::sim::ContactPoint;
using lockstep::sim::EigenLanes;
using lockstep::sim::Error;
using lockstep::sim::FrictionEigen;
using lockstep::sim::kLaneCount;
using lockstep::sim::kNoLane;
using lockstep::sim::kSolverColours;
using lockstep::sim::LaneKernel;
using lockstep::sim::ManifoldLanes;
using lockstep::sim::Mat3;
using lockstep::sim::pair_key;
using lockstep::sim::PointLanes;
using lockstep::sim::ShapeType;
using lockstep::sim::SolverCounters;
using lockstep::sim::SolverSettings;
using lockstep::sim::SolverVelocity;
using lockstep::sim::Vec2;
using lockstep::sim::Vec3;
using lockstep::sim::World;
using lockstep::sim::WorldDef;

constexpr uint32_t kOverflowColour = kSolverColours;

struct Rng : lockstep::testing::TestRng {
  float range(double lo, double hi) { return static_cast<float>(lo + (hi - lo) * uniform()); }
  uint32_t below(uint32_t n) { return static_cast<uint32_t>(uniform() * n); }
  Vec3 vec(double lo, double hi) { return {range(lo, hi), range(lo, hi), range(lo, hi)}; }
  // A unit vector (normalised in double, so the float is unit to within an ulp or two).
  Vec3 unit() {
    for (;;) {
      const double x = 2 * uniform() - 1, y = 2 * uniform() - 1, z = 2 * uniform() - 1;
      const double l = std::sqrt(x * x + y * y + z * z);
      if (l > 0.1 && l <= 1.0) {
        return {static_cast<float>(x / l), static_cast<float>(y / l), static_cast<float>(z / l)};
      }
    }
  }
};

// Symmetric; positive definite while |off| · 1.5 < the smallest diagonal (diagonal dominance).
Mat3 inverse_inertia(float d0, float d1, float d2, float off) {
  return {{d0, off, 0.5f * off}, {off, d1, -off}, {0.5f * off, -off, d2}};
}

bool is_dynamic(const BodySolverState& b) {
  return b.inv_mass > 0.0f;
}

// ---- scenes of solver data ----------------------------------------------------------------------

struct SolverScene {
  std::vector<BodySolverState> bodies;
  std::vector<ContactConstraint> constraints;  // sorted by key
  std::vector<ContactPoint> points;
  SolverSettings settings;
};

SolverSettings default_settings() {
  return lockstep::sim::make_solver_settings(1.0f / 60.0f, 4, 30.0f, 10.0f, 0.005f, 2.0f, 1.0f);
}

struct SceneShape {
  uint32_t bodies = 60;
  uint32_t random_pairs = 150;
  uint32_t hub_pairs = 0;  // extra manifolds on body `hub` (beyond 64: overflow)
  uint32_t hub = 3;        // a dynamic slot
  float friction_lo = 0.2f, friction_hi = 1.0f;
  float speed = 2.0f;         // |velocity component| ≤ speed (m/s, rad/s)
  float warm_impulse = 1.0f;  // warm-start λ_n ≤ this (N·s), |J| ≤ half of it
};

// Every 7th slot static (zero velocity), every 11th kinematic (moving, but inv_mass 0): the
// colouring must ignore both, and neither may ever be written.
bool slot_is_static(uint32_t slot) {
  return slot % 7 == 6;
}
bool slot_is_kinematic(uint32_t slot) {
  return slot % 11 == 10 && !slot_is_static(slot);
}

SolverScene random_scene(uint64_t seed, const SceneShape& shape) {
  Rng rng{seed};
  SolverScene s;
  s.settings = default_settings();
  s.bodies.resize(shape.bodies);
  for (uint32_t i = 0; i < shape.bodies; ++i) {
    BodySolverState& b = s.bodies[i];
    if (slot_is_static(i)) continue;  // all zero
    b.linear_velocity = rng.vec(-shape.speed, shape.speed);
    b.angular_velocity = rng.vec(-shape.speed, shape.speed);
    if (slot_is_kinematic(i)) continue;  // moves, inv_mass 0, zero inverse inertia
    b.inv_mass = rng.range(0.05, 2.0);
    b.inv_inertia_world = inverse_inertia(rng.range(0.3, 2.0), rng.range(0.3, 2.0),
                                          rng.range(0.3, 2.0), rng.range(-0.1, 0.1));
  }

  std::set<uint64_t> keys;
  auto add_pair = [&](uint32_t a, uint32_t b) {
    if (a == b) return;
    if (a > b) std::swap(a, b);
    if (!is_dynamic(s.bodies[a]) && !is_dynamic(s.bodies[b])) return;  // the world makes none
    keys.insert(pair_key(a, b));
  };
  for (uint32_t i = 0; i < shape.random_pairs; ++i)
    add_pair(rng.below(shape.bodies), rng.below(shape.bodies));
  for (uint32_t i = 0; i < shape.hub_pairs && i + 1 < shape.bodies; ++i) {
    add_pair(shape.hub, (shape.hub + 1 + i) % shape.bodies);
  }

  for (const uint64_t key : keys) {  // std::set: increasing keys
    ContactConstraint c;
    c.key = key;
    c.slot_a = lockstep::sim::pair_slot_a(key);
    c.slot_b = lockstep::sim::pair_slot_b(key);
    c.normal = rng.unit();
    lockstep::sim::tangent_basis(c.normal, &c.tangent1, &c.tangent2);
    c.friction = rng.range(shape.friction_lo, shape.friction_hi);
    c.restitution = rng.uniform() < 0.3 ? rng.range(0.2, 0.8) : 0.0f;
    c.first_point = static_cast<uint32_t>(s.points.size());
    c.point_count = 1 + rng.below(4);
    for (uint32_t k = 0; k < c.point_count; ++k) {
      ContactPoint p;
      p.anchor_a = rng.vec(-0.6, 0.6);
      p.anchor_b = rng.vec(-0.6, 0.6);
      p.local_anchor_a = p.anchor_a;
      p.separation_m = rng.range(-0.04, 0.01);
      p.feature = k;
      // A third cold (first contact), the rest warm.
      if (rng.uniform() < 0.67) {
        p.normal_impulse = rng.range(0.0, shape.warm_impulse);
        p.tangent_impulse = {rng.range(-0.5, 0.5) * shape.warm_impulse,
                             rng.range(-0.5, 0.5) * shape.warm_impulse};
      }
      s.points.push_back(p);
    }
    s.constraints.push_back(c);
  }
  return s;
}

// ---- the colouring, written independently ----------------------------------------------------

// Greedy in key order: the lowest colour neither dynamic body has taken; kOverflowColour when
// all 64 are taken.
std::vector<uint32_t> reference_colours(const std::vector<ContactConstraint>& constraints,
                                        const std::vector<BodySolverState>& bodies) {
  std::vector<std::vector<bool>> taken(bodies.size(), std::vector<bool>(kSolverColours, false));
  std::vector<uint32_t> colour(constraints.size(), kOverflowColour);
  for (size_t i = 0; i < constraints.size(); ++i) {
    const ContactConstraint& c = constraints[i];
    const bool da = is_dynamic(bodies[c.slot_a]), db = is_dynamic(bodies[c.slot_b]);
    for (uint32_t k = 0; k < kSolverColours; ++k) {
      if ((da && taken[c.slot_a][k]) || (db && taken[c.slot_b][k])) continue;
      colour[i] = k;
      if (da) taken[c.slot_a][k] = true;
      if (db) taken[c.slot_b][k] = true;
      break;
    }
  }
  return colour;
}

// Every rule of the layout (contact_lanes.h), after build_contact_lanes.
void check_layout(const std::vector<ContactConstraint>& constraints,
                  const std::vector<BodySolverState>& bodies, const ContactLanes& lanes) {
  SCOPED_TRACE(testing::Message() << constraints.size() << " manifolds");
  for (size_t i = 1; i < constraints.size(); ++i)
    ASSERT_LT(constraints[i - 1].key, constraints[i].key) << "test input must be sorted";
  ASSERT_LE(lanes.batch_count, lanes.batches.size());
  ASSERT_LE(size_t{lanes.point_lane_count}, lanes.point_lanes.size());
  const std::vector<uint32_t> colour = reference_colours(constraints, bodies);

  // The reference layout: colour after colour, the overflow last; inside a colour (and the
  // overflow) the manifolds with 4, then 3, 2, 1 points, in key order; kLaneCount a batch.
  std::vector<std::vector<uint32_t>> expected;  // constraint indices per batch
  std::vector<uint32_t> expected_colour;
  uint32_t colours_used = 0, overflow = 0;
  for (uint32_t k = 0; k <= kOverflowColour; ++k) {
    uint32_t in_colour = 0;
    for (uint32_t points = 4; points >= 1; --points) {
      std::vector<uint32_t> members;
      for (uint32_t i = 0; i < constraints.size(); ++i) {
        if (colour[i] != k) continue;
        if (constraints[i].point_count != points) continue;
        members.push_back(i);
      }
      in_colour += static_cast<uint32_t>(members.size());
      for (size_t first = 0; first < members.size(); first += kLaneCount) {
        const size_t last = std::min(members.size(), first + kLaneCount);
        expected.emplace_back(members.begin() + static_cast<std::ptrdiff_t>(first),
                              members.begin() + static_cast<std::ptrdiff_t>(last));
        expected_colour.push_back(k);
      }
    }
    if (k < kOverflowColour && in_colour > 0) ++colours_used;
    if (k == kOverflowColour) overflow = in_colour;
  }
  EXPECT_EQ(lanes.colours_used, colours_used);
  EXPECT_LE(lanes.colours_used, kSolverColours);
  EXPECT_EQ(lanes.overflow_manifolds, overflow);
  ASSERT_EQ(lanes.batch_count, expected.size());

  std::vector<uint32_t> seen(constraints.size(), 0);
  uint32_t next_point_lanes = 0;
  for (uint32_t b = 0; b < lanes.batch_count; ++b) {
    SCOPED_TRACE(testing::Message() << "batch " << b);
    const ManifoldLanes& m = lanes.batches[b];
    const std::vector<uint32_t>& want = expected[b];
    // Lanes filled from lane 0, the bits saying which.
    uint32_t bits = 0, rows = 0;
    for (uint32_t lane = 0; lane < kLaneCount; ++lane) {
      if (lane < want.size()) {
        EXPECT_EQ(m.constraint[lane], want[lane]) << "lane " << lane;
        bits |= 1u << lane;
        rows = std::max(rows, constraints[want[lane]].point_count);
      } else {
        EXPECT_EQ(m.constraint[lane], kNoLane) << "lane " << lane;
      }
      if (m.constraint[lane] != kNoLane && m.constraint[lane] < constraints.size()) {
        ++seen[m.constraint[lane]];
      }
    }
    EXPECT_EQ(m.lanes, bits);
    EXPECT_EQ(m.sequential, expected_colour[b] == kOverflowColour ? 1u : 0u);
    EXPECT_EQ(m.point_rows, rows);
    EXPECT_EQ(m.first_point_lanes, next_point_lanes);
    next_point_lanes += m.point_rows;
    // Paired with the next batch (the AVX kernel solves the two at once) exactly when both are of
    // one colour, not the overflow, with as many points per manifold and point rows.
    const bool pairable =
        b + 1 < lanes.batch_count && expected_colour[b] != kOverflowColour &&
        expected_colour[b + 1] == expected_colour[b] && !want.empty() && !expected[b + 1].empty() &&
        constraints[want[0]].point_count == constraints[expected[b + 1][0]].point_count &&
        lanes.batches[b + 1].point_rows == m.point_rows;
    EXPECT_EQ(m.pairs_with_next, pairable ? 1u : 0u);

    // The property the lanes rest on, checked on the batch as built (whatever the reference),
    // with the next batch when the two are solved at once.
    if (m.sequential == 0) {
      std::vector<uint32_t> dynamic_slots;
      const uint32_t solved_together = m.pairs_with_next != 0 ? 2 * kLaneCount : kLaneCount;
      for (uint32_t l = 0; l < solved_together && b + l / kLaneCount < lanes.batch_count; ++l) {
        const ManifoldLanes& mb = lanes.batches[b + l / kLaneCount];
        const uint32_t lane = l % kLaneCount;
        if (mb.constraint[lane] == kNoLane || mb.constraint[lane] >= constraints.size()) continue;
        const ContactConstraint& c = constraints[mb.constraint[lane]];
        for (const uint32_t slot : {c.slot_a, c.slot_b}) {
          if (!is_dynamic(bodies[slot])) continue;
          EXPECT_EQ(std::count(dynamic_slots.begin(), dynamic_slots.end(), slot), 0)
              << "dynamic slot " << slot << " twice in batches solved at once";
          dynamic_slots.push_back(slot);
        }
      }
    }
  }
  EXPECT_EQ(lanes.point_lane_count, next_point_lanes);
  for (size_t i = 0; i < constraints.size(); ++i)
    EXPECT_EQ(seen[i], 1u) << "constraint " << i << " must be in exactly one lane";

  // The reference colouring itself is proper (no dynamic body twice in a colour) and greedy
  // (every colour below a manifold's is taken by one of its dynamic bodies): a check of the
  // reference, so that the layout comparison above compares with something right.
  for (uint32_t i = 0; i < constraints.size(); ++i) {
    const ContactConstraint& ci = constraints[i];
    for (uint32_t j = 0; j < i; ++j) {
      const ContactConstraint& cj = constraints[j];
      if (colour[i] != colour[j] || colour[i] == kOverflowColour) continue;
      for (const uint32_t slot : {ci.slot_a, ci.slot_b}) {
        if (!is_dynamic(bodies[slot])) continue;
        EXPECT_FALSE(slot == cj.slot_a || slot == cj.slot_b) << "reference colour clash";
      }
    }
  }
}

// ---- running the passes ---------------------------------------------------------------------

struct SolveResult {
  std::vector<SolverVelocity> velocities;  // every slot and the zero slot
  std::vector<PointLanes> point_lanes;     // the first point_lane_count
  std::vector<ManifoldLanes> batches;      // the first batch_count, as prepared
  std::vector<EigenLanes> eigens;          // the first point_lane_count, as prepared
  std::vector<ContactPoint> points;        // after unpack_contact_lanes
  SolverCounters counters;
  uint32_t zero_slot = 0;
  uint32_t batches_at_once = 0;  // non-sequential batches with two lanes or more
  uint32_t sequential_batches = 0;
  uint32_t paired_batches = 0;  // batches solved together with the next one by the AVX kernel
};

enum class Mode {
  as_built,          // as build_contact_lanes made them
  all_sequential,    // every batch's lanes one after another
  overflow_at_once,  // the overflow batches solved at once: invalid (they share a body)
};

SolveResult solve(const SolverScene& s, Mode mode, uint32_t bias_passes = 8,
                  uint32_t relax_passes = 4,
                  LaneKernel kernel = lockstep::sim::best_lane_kernel()) {
  const auto body_count = static_cast<uint32_t>(s.bodies.size());
  ContactLanes lanes;
  lockstep::sim::contact_lanes_init(&lanes, body_count,
                                    static_cast<uint32_t>(s.constraints.size()));
  lanes.kernel = kernel;
  SolveResult r;
  r.zero_slot = lanes.zero_slot;
  r.velocities.assign(body_count + 1, SolverVelocity{});
  r.points = s.points;
  lockstep::sim::build_contact_lanes(s.constraints, s.bodies, body_count, &lanes);
  lockstep::sim::prepare_contact_lanes(s.constraints, s.points, s.bodies, s.settings, &lanes,
                                       &r.counters);
  r.batches.assign(lanes.batches.begin(), lanes.batches.begin() + lanes.batch_count);
  r.eigens.assign(lanes.eigens.begin(), lanes.eigens.begin() + lanes.point_lane_count);
  for (uint32_t b = 0; b < lanes.batch_count; ++b) {
    ManifoldLanes& m = lanes.batches[b];
    if (mode == Mode::all_sequential) m.sequential = 1;
    if (mode == Mode::overflow_at_once) m.sequential = 0;
    if (m.sequential != 0) ++r.sequential_batches;
    if (m.sequential == 0 && std::popcount(m.lanes) >= 2) ++r.batches_at_once;
    if (m.sequential == 0 && m.pairs_with_next != 0) ++r.paired_batches;
  }
  const std::span<SolverVelocity> v(r.velocities.data(), body_count);
  lockstep::sim::gather_velocities(s.bodies, v);
  lockstep::sim::warm_start_wide(lanes, r.velocities);
  // Body displacements since the step began: made up but fixed, so the rows' separations move.
  std::vector<SolverVelocity> deltas(body_count + 1, SolverVelocity{});
  for (uint32_t i = 0; i < body_count; ++i) {
    const float f = 1.0e-4f * static_cast<float>(i % 7) - 3.0e-4f;
    deltas[i].linear = {f, -f, 0.5f * f};
    deltas[i].angular = {0.5f * f, f, -f};
  }
  for (uint32_t i = 0; i < bias_passes; ++i)
    lockstep::sim::solve_wide(&lanes, r.velocities, deltas, true, &r.counters);
  for (uint32_t i = 0; i < relax_passes; ++i)
    lockstep::sim::solve_wide(&lanes, r.velocities, deltas, false, &r.counters);
  lockstep::sim::restitute_wide(&lanes, r.velocities, deltas);
  lockstep::sim::unpack_contact_lanes(lanes, r.points);
  r.point_lanes.assign(lanes.point_lanes.begin(),
                       lanes.point_lanes.begin() + lanes.point_lane_count);
  return r;
}

bool same_bytes(const void* a, const void* b, size_t n) {
  return std::memcmp(a, b, n) == 0;
}

// Both runs bit for bit: velocities of every slot, every point lane, the unpacked impulses and
// the counters. On a mismatch, names the first differing slot or point.
void expect_identical(const SolveResult& x, const SolveResult& y) {
  ASSERT_EQ(x.velocities.size(), y.velocities.size());
  ASSERT_EQ(x.point_lanes.size(), y.point_lanes.size());
  for (size_t i = 0; i < x.velocities.size(); ++i) {
    EXPECT_TRUE(same_bytes(&x.velocities[i], &y.velocities[i], sizeof(SolverVelocity)))
        << "velocity slot " << i << ": " << x.velocities[i].linear.x << " vs "
        << y.velocities[i].linear.x;
  }
  for (size_t i = 0; i < x.point_lanes.size(); ++i) {
    EXPECT_TRUE(same_bytes(&x.point_lanes[i], &y.point_lanes[i], sizeof(PointLanes)))
        << "point lanes " << i;
  }
  for (size_t i = 0; i < x.points.size(); ++i) {
    EXPECT_TRUE(same_bytes(&x.points[i], &y.points[i], sizeof(ContactPoint))) << "point " << i;
  }
  // What prepare wrote (each kernel prepares with its own instructions); the bytes up to the last
  // field (the struct's tail padding is indeterminate).
  constexpr size_t kBatchBytes = offsetof(ManifoldLanes, pairs_with_next) + sizeof(uint32_t);
  ASSERT_EQ(x.batches.size(), y.batches.size());
  for (size_t i = 0; i < x.batches.size(); ++i) {
    EXPECT_TRUE(same_bytes(&x.batches[i], &y.batches[i], kBatchBytes)) << "batch " << i;
  }
  ASSERT_EQ(x.eigens.size(), y.eigens.size());
  for (size_t i = 0; i < x.eigens.size(); ++i) {
    EXPECT_TRUE(same_bytes(&x.eigens[i], &y.eigens[i], sizeof(EigenLanes))) << "eigens " << i;
  }
  EXPECT_EQ(x.counters.skipped_normal_rows, y.counters.skipped_normal_rows);
  EXPECT_EQ(x.counters.skipped_friction_rows, y.counters.skipped_friction_rows);
  EXPECT_EQ(x.counters.warm_started_points, y.counters.warm_started_points);
}

// Never written: the zero slot (all zero bits, pads included) and every non-dynamic body (the
// bits it was gathered with); the pads of every slot stay zero.
void expect_unwritten(const SolverScene& s, const SolveResult& r) {
  const SolverVelocity zero{};
  ASSERT_EQ(r.zero_slot, s.bodies.size());
  EXPECT_TRUE(same_bytes(&r.velocities[r.zero_slot], &zero, sizeof zero)) << "zero slot written";
  for (size_t i = 0; i < s.bodies.size(); ++i) {
    const SolverVelocity& v = r.velocities[i];
    EXPECT_EQ(std::bit_cast<uint32_t>(v.pad0), 0u) << "slot " << i;
    EXPECT_EQ(std::bit_cast<uint32_t>(v.pad1), 0u) << "slot " << i;
    if (is_dynamic(s.bodies[i])) continue;
    EXPECT_TRUE(same_bytes(&v.linear, &s.bodies[i].linear_velocity, sizeof(Vec3))) << "slot " << i;
    EXPECT_TRUE(same_bytes(&v.angular, &s.bodies[i].angular_velocity, sizeof(Vec3)))
        << "slot " << i;
  }
}

// Points whose friction ends on the circle |J| = μ·λ_n, and strictly inside it. The 1e-4
// relative band is rounding room around the circle (the boundary answer is aimed 2^-20 inside,
// ~1e-6); interior answers in these scenes are not that close to it by chance, and a point is
// counted in one class only.
struct FrictionClasses {
  uint32_t on_circle = 0, inside = 0;
};
FrictionClasses classify_friction(const SolverScene& s, const SolveResult& r) {
  FrictionClasses f;
  for (const ContactConstraint& c : s.constraints) {
    for (uint32_t k = 0; k < c.point_count; ++k) {
      const ContactPoint& p = r.points[c.first_point + k];
      const double radius = double{c.friction} * p.normal_impulse;
      if (!(radius > 1e-6)) continue;
      const double j = std::hypot(double{p.tangent_impulse.x}, double{p.tangent_impulse.y});
      if (j >= radius * (1 - 1e-4)) {
        ++f.on_circle;
      } else {
        ++f.inside;
      }
    }
  }
  return f;
}

// ---- 1. colouring ----------------------------------------------------------------------------

TEST(ContactLanes, LayoutOfRandomScenes) {
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    SCOPED_TRACE(testing::Message() << "seed " << seed);
    SceneShape shape;
    shape.bodies = 20 + static_cast<uint32_t>(seed * 13 % 90);
    shape.random_pairs = 30 + static_cast<uint32_t>(seed * 37 % 300);
    if (seed % 3 == 0) {  // every third: a hub past 64 manifolds
      shape.bodies = 100;
      shape.hub_pairs = 90;
    }
    const SolverScene s = random_scene(seed, shape);
    ContactLanes lanes;
    lockstep::sim::contact_lanes_init(&lanes, static_cast<uint32_t>(s.bodies.size()),
                                      static_cast<uint32_t>(s.constraints.size()));
    lockstep::sim::build_contact_lanes(s.constraints, s.bodies,
                                       static_cast<uint32_t>(s.bodies.size()), &lanes);
    check_layout(s.constraints, s.bodies, lanes);
    if (shape.hub_pairs > 0) {
      // The hub alone has > 64 manifolds: the overflow must be used.
      EXPECT_GT(lanes.overflow_manifolds, 0u);
      EXPECT_EQ(lanes.colours_used, kSolverColours);
    }
    // Build again on the same arrays (scratch left from the first build): the same layout.
    const std::vector<ManifoldLanes> first(lanes.batches.begin(),
                                           lanes.batches.begin() + lanes.batch_count);
    lockstep::sim::build_contact_lanes(s.constraints, s.bodies,
                                       static_cast<uint32_t>(s.bodies.size()), &lanes);
    for (uint32_t b = 0; b < lanes.batch_count; ++b) {
      EXPECT_TRUE(
          same_bytes(first[b].constraint, lanes.batches[b].constraint, sizeof first[b].constraint));
      EXPECT_EQ(first[b].lanes, lanes.batches[b].lanes);
    }
  }
}

// One dynamic body in 100 manifolds: colours 0..63 take one manifold each (key order), the
// other 36 go to the overflow: 8 sequential batches after the 64 colours.
TEST(ContactLanes, StarOfOneDynamicBodyOverflowsPast64) {
  for (const bool leaves_dynamic : {true, false}) {
    SCOPED_TRACE(leaves_dynamic ? "dynamic leaves" : "static leaves");
    std::vector<BodySolverState> bodies(101);
    for (uint32_t i = 0; i < bodies.size(); ++i) {
      if (i == 0 || leaves_dynamic) bodies[i].inv_mass = 1.0f;
    }
    std::vector<ContactConstraint> constraints(100);
    for (uint32_t i = 0; i < 100; ++i) {
      constraints[i].slot_a = 0;
      constraints[i].slot_b = i + 1;
      constraints[i].key = pair_key(0, i + 1);
      constraints[i].point_count = 1 + i % 4;
    }
    ContactLanes lanes;
    lockstep::sim::contact_lanes_init(&lanes, 101, 100);
    lockstep::sim::build_contact_lanes(constraints, bodies, 101, &lanes);
    check_layout(constraints, bodies, lanes);
    EXPECT_EQ(lanes.colours_used, 64u);
    EXPECT_EQ(lanes.overflow_manifolds, 36u);
    // The overflow, grouped by point count (4, 3, 2, 1): 9 manifolds each (i = 64..99 has every
    // i % 4 nine times), so a full batch of 8 and a batch of 1 per group.
    ASSERT_EQ(lanes.batch_count, 64u + 8u);
    for (uint32_t b = 0; b < 64; ++b) {
      EXPECT_EQ(lanes.batches[b].constraint[0], b);
      EXPECT_EQ(lanes.batches[b].lanes, 1u);
      EXPECT_EQ(lanes.batches[b].sequential, 0u);
    }
    for (uint32_t b = 64; b < 72; ++b) {
      const uint32_t points = 4 - (b - 64) / 2;  // the group's point count
      const uint32_t first = 64 + (points - 1) + ((b - 64) % 2 == 0 ? 0 : 8 * 4);
      EXPECT_EQ(lanes.batches[b].sequential, 1u);
      EXPECT_EQ(lanes.batches[b].constraint[0], first);
      EXPECT_EQ(lanes.batches[b].lanes, (b - 64) % 2 == 0 ? 0xffu : 0x01u);
      EXPECT_EQ(lanes.batches[b].point_rows, points);
    }
  }
}

// The same star around a static body: static bodies never count, so it is one colour of 100
// manifolds, 13 batches solved at once, no overflow.
TEST(ContactLanes, StarOfOneStaticBodyIsOneColour) {
  std::vector<BodySolverState> bodies(101);
  for (uint32_t i = 1; i < bodies.size(); ++i)
    bodies[i].inv_mass = 1.0f;
  std::vector<ContactConstraint> constraints(100);
  for (uint32_t i = 0; i < 100; ++i) {
    constraints[i].slot_a = 0;
    constraints[i].slot_b = i + 1;
    constraints[i].key = pair_key(0, i + 1);
    constraints[i].point_count = 4;
  }
  ContactLanes lanes;
  lockstep::sim::contact_lanes_init(&lanes, 101, 100);
  lockstep::sim::build_contact_lanes(constraints, bodies, 101, &lanes);
  check_layout(constraints, bodies, lanes);
  EXPECT_EQ(lanes.colours_used, 1u);
  EXPECT_EQ(lanes.overflow_manifolds, 0u);
  EXPECT_EQ(lanes.batch_count, 13u);
  EXPECT_EQ(lanes.point_lane_count, 13u * 4u);
}

// prepare_contact_lanes puts each manifold's points in its lane's rows, in order, and marks the
// rows beyond a lane's manifold (and the padding lanes) as empty, on the zero slot. The friction
// block's eigen-decomposition, computed there on the lanes, has friction_block_eigen's bits.
TEST(ContactLanes, PrepareFillsEveryLaneFromItsManifold) {
  SceneShape shape;
  shape.hub_pairs = 80;
  shape.bodies = 100;
  const SolverScene s = random_scene(77, shape);
  ContactLanes lanes;
  const auto n = static_cast<uint32_t>(s.bodies.size());
  lockstep::sim::contact_lanes_init(&lanes, n, static_cast<uint32_t>(s.constraints.size()));
  lockstep::sim::build_contact_lanes(s.constraints, s.bodies, n, &lanes);
  SolverCounters counters;
  lockstep::sim::prepare_contact_lanes(s.constraints, s.points, s.bodies, s.settings, &lanes,
                                       &counters);
  int eigens_checked = 0;
  for (uint32_t b = 0; b < lanes.batch_count; ++b) {
    const ManifoldLanes& m = lanes.batches[b];
    for (uint32_t lane = 0; lane < kLaneCount; ++lane) {
      const uint32_t ci = m.constraint[lane];
      if (ci == kNoLane) {
        EXPECT_EQ(m.slot_a[lane], lanes.zero_slot);
        EXPECT_EQ(m.slot_b[lane], lanes.zero_slot);
        EXPECT_EQ(m.inv_mass_a[lane], 0.0f);
        EXPECT_EQ(m.inv_mass_b[lane], 0.0f);
      } else {
        EXPECT_EQ(m.slot_a[lane], s.constraints[ci].slot_a);
        EXPECT_EQ(m.slot_b[lane], s.constraints[ci].slot_b);
      }
      const uint32_t count = ci == kNoLane ? 0 : s.constraints[ci].point_count;
      for (uint32_t k = 0; k < m.point_rows; ++k) {
        const PointLanes& p = lanes.point_lanes[m.first_point_lanes + k];
        if (k < count) {
          EXPECT_EQ(p.point[lane], s.constraints[ci].first_point + k);
          const ContactPoint& cp = s.points[s.constraints[ci].first_point + k];
          EXPECT_EQ(p.anchor_a.x[lane], cp.anchor_a.x);
          EXPECT_EQ(p.anchor_b.z[lane], cp.anchor_b.z);
          EXPECT_GT(p.normal_mass[lane], 0.0f);  // K > 0: dynamic body, SPD inertia
          // The eigen-decomposition of K_t, prepared on the lanes: the scalar function's bits.
          const FrictionEigen e = lockstep::sim::friction_block_eigen(
              {p.tangent_a[lane], p.tangent_b[lane], p.tangent_c[lane]});
          const EigenLanes& el = lanes.eigens[m.first_point_lanes + k];
          ASSERT_GT(p.tangent_det[lane], 0.0f);
          EXPECT_TRUE(same_bytes(&el.s[lane], &e.s, 4) && same_bytes(&el.k1[lane], &e.k1, 4) &&
                      same_bytes(&el.k2[lane], &e.k2, 4) && same_bytes(&el.e1x[lane], &e.e1.x, 4) &&
                      same_bytes(&el.e1y[lane], &e.e1.y, 4))
              << "batch " << b << " lane " << lane << " row " << k;
          ++eigens_checked;
        } else {
          EXPECT_EQ(p.point[lane], kNoLane);
          EXPECT_EQ(p.normal_mass[lane], 0.0f);
          EXPECT_EQ(p.normal_impulse[lane], 0.0f);
        }
      }
    }
  }
  EXPECT_GT(eigens_checked, 100);
}

// ---- 2. lanes at once = lanes one by one ----------------------------------------------------

void expect_lanes_equal_sequential(const SolverScene& s, FrictionClasses* friction) {
  const SolveResult at_once = solve(s, Mode::as_built);
  const SolveResult one_by_one = solve(s, Mode::all_sequential);
  // The comparison is only worth something if batches really hold several lanes.
  EXPECT_GT(at_once.batches_at_once, 0u);
  EXPECT_EQ(one_by_one.batches_at_once, 0u);
  expect_identical(at_once, one_by_one);
  expect_unwritten(s, at_once);
  expect_unwritten(s, one_by_one);
  // And the passes did something: some dynamic body's velocity moved.
  bool moved = false;
  for (size_t i = 0; i < s.bodies.size(); ++i) {
    moved = moved ||
            !same_bytes(&at_once.velocities[i].linear, &s.bodies[i].linear_velocity, sizeof(Vec3));
  }
  EXPECT_TRUE(moved);
  const FrictionClasses f = classify_friction(s, at_once);
  friction->on_circle += f.on_circle;
  friction->inside += f.inside;
}

TEST(ContactLanes, LanesAtOnceEqualLanesOneByOne) {
  FrictionClasses friction;
  for (uint64_t seed = 100; seed < 108; ++seed) {
    SCOPED_TRACE(testing::Message() << "seed " << seed);
    SceneShape shape;
    shape.bodies = 40 + static_cast<uint32_t>(seed % 5) * 20;
    shape.random_pairs = 120 + static_cast<uint32_t>(seed % 3) * 60;
    shape.hub_pairs = seed % 2 == 0 ? 75 : 10;
    expect_lanes_equal_sequential(random_scene(seed, shape), &friction);
  }
  // Both friction answers were exercised: the inline interior lanes and the scalar fallback.
  EXPECT_GT(friction.on_circle, 50u);
  EXPECT_GT(friction.inside, 50u);
}

// Low friction and fast sliding (radius μ·λ_n small against K⁻¹·v_t): most blocks end on the
// circle, so most friction rows go through the per-lane scalar fallback.
TEST(ContactLanes, LanesAtOnceEqualLanesOneByOneOnTheFrictionCircle) {
  FrictionClasses friction;
  for (uint64_t seed = 200; seed < 204; ++seed) {
    SCOPED_TRACE(testing::Message() << "seed " << seed);
    SceneShape shape;
    shape.bodies = 60;
    shape.random_pairs = 200;
    shape.hub_pairs = 70;
    shape.friction_lo = 0.005f;
    shape.friction_hi = 0.03f;
    shape.speed = 16.0f;
    expect_lanes_equal_sequential(random_scene(seed, shape), &friction);
  }
  EXPECT_GT(friction.on_circle, 5 * friction.inside);
}

// High friction and slow bodies: nearly every block inside the disk (the all-lanes path).
TEST(ContactLanes, LanesAtOnceEqualLanesOneByOneInsideTheDisk) {
  FrictionClasses friction;
  for (uint64_t seed = 300; seed < 304; ++seed) {
    SCOPED_TRACE(testing::Message() << "seed " << seed);
    SceneShape shape;
    shape.bodies = 60;
    shape.random_pairs = 200;
    shape.friction_lo = 2.0f;
    shape.friction_hi = 5.0f;
    shape.speed = 0.05f;
    shape.warm_impulse = 0.02f;
    expect_lanes_equal_sequential(random_scene(seed, shape), &friction);
  }
  EXPECT_GT(friction.inside, friction.on_circle);
}

// The comparison can fail: overflow batches share the hub, and solving their lanes at once
// (each lane reading the hub's velocity before the others wrote it) must change the bits.
TEST(ContactLanes, SharedBodySolvedAtOnceIsDetected) {
  SceneShape shape;
  shape.bodies = 100;
  shape.random_pairs = 50;
  shape.hub_pairs = 90;
  const SolverScene s = random_scene(42, shape);
  const SolveResult right = solve(s, Mode::as_built);
  const SolveResult wrong = solve(s, Mode::overflow_at_once);
  ASSERT_GT(right.sequential_batches, 0u);
  ASSERT_EQ(wrong.sequential_batches, 0u);
  const auto hub = shape.hub;
  EXPECT_FALSE(same_bytes(&right.velocities[hub], &wrong.velocities[hub], sizeof(SolverVelocity)));
}

// A kinematic body with a velocity, in manifolds with dynamic bodies in every lane of several
// batches, and a static one: their velocity entries keep their exact bits, and the zero slot
// (read by every padding lane) stays zero.
TEST(ContactLanes, ZeroSlotAndNonDynamicBodiesAreNeverWritten) {
  SceneShape shape;
  shape.bodies = 23;  // slots 6, 13, 20 static; 10, 21 kinematic
  shape.random_pairs = 60;
  shape.hub_pairs = 0;
  SolverScene s = random_scene(9, shape);
  // Make sure both kinds are in contact: every dynamic slot touches slot 10 (kinematic) and
  // slot 6 (static).
  ASSERT_TRUE(slot_is_kinematic(10));
  ASSERT_TRUE(slot_is_static(6));
  ASSERT_FALSE(is_dynamic(s.bodies[10]));
  EXPECT_NE(s.bodies[10].linear_velocity.x, 0.0f);
  uint32_t touching = 0;
  for (const ContactConstraint& c : s.constraints) {
    touching += (c.slot_a == 10 || c.slot_b == 10 || c.slot_a == 6 || c.slot_b == 6) ? 1 : 0;
  }
  EXPECT_GT(touching, 4u);
  for (const Mode mode : {Mode::as_built, Mode::all_sequential}) {
    const SolveResult r = solve(s, mode, 10, 4);
    expect_unwritten(s, r);
  }
}

// Real manifolds: a World's constraints, points (with their warm start) and bodies after some
// steps of the built-in pyramid scene, re-solved both ways outside the world.
TEST(ContactLanes, WorldDataLanesAtOnceEqualLanesOneByOne) {
  lockstep::sim::Scene scene;
  ASSERT_TRUE(lockstep::sim::make_builtin_scene("pyramid", &scene));
  Error error = Error::none;
  std::unique_ptr<World> world = lockstep::sim::build_world(scene, &error);
  ASSERT_EQ(error, Error::none);
  ASSERT_NE(world, nullptr);
  for (int i = 0; i < 30; ++i)
    ASSERT_TRUE(world->step().ok());
  const lockstep::sim::WorldData& w = world_data(*world);
  check_layout({w.constraints.begin(), w.constraints.begin() + w.constraint_count},
               {w.solver_bodies.begin(), w.solver_bodies.begin() + w.slot_count}, w.lanes);
  SolverScene s;
  s.bodies.assign(w.solver_bodies.begin(), w.solver_bodies.begin() + w.slot_count);
  s.constraints.assign(w.constraints.begin(), w.constraints.begin() + w.constraint_count);
  s.points.assign(w.points.begin(), w.points.begin() + w.point_count);
  s.settings = default_settings();
  ASSERT_GT(s.constraints.size(), 20u);
  FrictionClasses friction;
  expect_lanes_equal_sequential(s, &friction);
}

// ---- 3b. the AVX and AVX-512 copies of the passes = the baseline passes -----------------------

// On x86 with AVX the passes and prepare run from contact_lanes_avx.cpp (W8 in one 256-bit
// register; with AVX-512 the same instructions and 32 registers); each must give the baseline's
// bits, velocities, impulses, prepared lanes and counters alike, on the friction circle, inside
// the disk, through the overflow and on a world's real manifolds. A kernel this build or CPU
// cannot run is skipped (the baseline is then all there is).
std::vector<LaneKernel> vector_kernels() {
  std::vector<LaneKernel> out;
  for (LaneKernel k : {LaneKernel::avx, LaneKernel::avx512}) {
    if (lockstep::sim::lane_kernel_available(k)) out.push_back(k);
  }
  return out;
}

const char* kernel_name(LaneKernel k) {
  return k == LaneKernel::avx ? "avx" : (k == LaneKernel::avx512 ? "avx512" : "baseline");
}

TEST(ContactLanes, VectorKernelsEqualBaseline) {
  const std::vector<LaneKernel> kernels = vector_kernels();
  if (kernels.empty()) GTEST_SKIP() << "no AVX kernel here";
  FrictionClasses friction;
  uint32_t paired = 0;
  for (uint64_t seed = 500; seed < 512; ++seed) {
    SCOPED_TRACE(testing::Message() << "seed " << seed);
    SceneShape shape;
    shape.bodies = 60 + static_cast<uint32_t>(seed % 3) * 20;
    shape.random_pairs = 200;
    shape.hub_pairs = seed % 4 == 0 ? 80 : 10;  // 80: the overflow too
    if (seed % 2 == 0) {                        // mostly on the friction circle
      shape.friction_lo = 0.05f;
      shape.friction_hi = 0.2f;
      shape.speed = 8.0f;
    }
    const SolverScene s = random_scene(seed, shape);
    const SolveResult baseline = solve(s, Mode::as_built, 8, 4, LaneKernel::baseline);
    for (LaneKernel kernel : kernels) {
      SCOPED_TRACE(kernel_name(kernel));
      const SolveResult vector = solve(s, Mode::as_built, 8, 4, kernel);
      expect_identical(baseline, vector);
      paired += vector.paired_batches;
    }
    const FrictionClasses f = classify_friction(s, baseline);
    friction.on_circle += f.on_circle;
    friction.inside += f.inside;
  }
  EXPECT_GT(friction.on_circle, 100u);
  EXPECT_GT(friction.inside, 100u);
  EXPECT_GT(paired, 10u * kernels.size()) << "the two-batch path was not exercised";
}

// Worlds of the built-in pyramid3d scene, one per kernel: the same state hash after every step.
TEST(ContactLanes, VectorKernelWorldHashesEqualBaseline) {
  const std::vector<LaneKernel> kernels = vector_kernels();
  if (kernels.empty()) GTEST_SKIP() << "no AVX kernel here";
  lockstep::sim::Scene scene;
  ASSERT_TRUE(lockstep::sim::make_builtin_scene("pyramid3d", &scene));
  Error error = Error::none;
  std::unique_ptr<World> baseline = lockstep::sim::build_world(scene, &error);
  ASSERT_EQ(error, Error::none);
  world_data(*baseline).lanes.kernel = LaneKernel::baseline;
  std::vector<std::unique_ptr<World>> vector;
  for (LaneKernel kernel : kernels) {
    vector.push_back(lockstep::sim::build_world(scene, &error));
    ASSERT_EQ(error, Error::none);
    world_data(*vector.back()).lanes.kernel = kernel;
  }
  EXPECT_EQ(world_data(*vector.back()).lanes.kernel, lockstep::sim::best_lane_kernel());
  // 40 ticks: the layers have landed (every contact kind is in play) and, under ASan in CI, the
  // test stays short enough not to starve the timing-sensitive net tests running beside it.
  for (int i = 0; i < 40; ++i) {
    ASSERT_TRUE(baseline->step().ok());
    for (size_t k = 0; k < kernels.size(); ++k) {
      ASSERT_TRUE(vector[k]->step().ok());
      ASSERT_EQ(vector[k]->state_hash(), baseline->state_hash())
          << kernel_name(kernels[k]) << ", tick " << i + 1;
    }
  }
  EXPECT_GT(baseline->last_step_stats().contact_points, 20000u);
}

// ---- 4. a platform carrying a crowd, in a World --------------------------------------------

constexpr float kPlatformHalf = 5.0f;  // m (x and z)
constexpr float kPlatformHalfHeight = 0.25f;
constexpr float kBoxHalf = 0.2f;
constexpr int kBoxes = 80;

struct PlatformWorld {
  std::unique_ptr<World> world;
  BodyId platform;
  std::vector<BodyId> boxes;
};

PlatformWorld make_platform_world() {
  WorldDef def = lockstep::sim::default_world_def();
  def.max_bodies = 128;
  def.max_contact_pairs = 1024;
  def.max_contact_points = 4096;
  def.max_candidate_pairs = 4096;
  def.max_events = 1024;
  def.enable_sleep = false;  // the overflow batches are solved every tick, not only until it rests
  PlatformWorld p;
  Error error = Error::invalid_argument;
  p.world = World::create(def, &error);
  EXPECT_EQ(error, Error::none);
  if (p.world == nullptr) return p;

  BodyDef floor = lockstep::sim::default_body_def();
  floor.type = BodyType::static_body;
  floor.shape.type = ShapeType::plane;
  floor.shape.plane_normal = {0, 1, 0};
  floor.shape.plane_offset = 0;
  BodyId id{};
  EXPECT_EQ(p.world->create_body(floor, &id), Error::none);

  BodyDef platform = lockstep::sim::default_body_def();
  platform.type = BodyType::dynamic;
  platform.shape.type = ShapeType::box;
  platform.shape.half_extents = {kPlatformHalf, kPlatformHalfHeight, kPlatformHalf};
  platform.position = {0, kPlatformHalfHeight, 0};
  EXPECT_EQ(p.world->create_body(platform, &p.platform), Error::none);

  // A 9x9 grid minus the last cell, 1.1 m apart: no box touches another, each rests on the
  // platform (80 manifolds on it, plus the floor's: 81 > 64 colours).
  for (int i = 0; i < kBoxes; ++i) {
    BodyDef box = lockstep::sim::default_body_def();
    box.type = BodyType::dynamic;
    box.shape.type = ShapeType::box;
    box.shape.half_extents = {kBoxHalf, kBoxHalf, kBoxHalf};
    box.position = {1.1f * static_cast<float>(i % 9 - 4),
                    2 * kPlatformHalfHeight + kBoxHalf + 0.002f,
                    1.1f * static_cast<float>(i / 9 - 4)};
    EXPECT_EQ(p.world->create_body(box, &id), Error::none);
    p.boxes.push_back(id);
  }
  return p;
}

TEST(ContactLanes, PlatformCarryingEightyBoxes) {
  PlatformWorld a = make_platform_world();
  PlatformWorld b = make_platform_world();
  ASSERT_NE(a.world, nullptr);
  ASSERT_NE(b.world, nullptr);
  ASSERT_EQ(a.world->state_hash(), b.world->state_hash());

  constexpr int kTicks = 120;
  std::vector<uint32_t> overflow_status(kTicks, 0), overflow_manifolds(kTicks, 0);
  std::vector<uint64_t> hash_a(kTicks, 0), hash_b(kTicks, 0);
  uint64_t allocations = 0;
  {
    lockstep::testing::AllocationCounter counter;
    for (int t = 0; t < kTicks; ++t) {
      overflow_status[t] = a.world->step().overflow | b.world->step().overflow;
      overflow_manifolds[t] = world_data(*a.world).lanes.overflow_manifolds;
      hash_a[t] = a.world->state_hash();
      hash_b[t] = b.world->state_hash();
    }
    allocations = counter.count();
  }
  EXPECT_EQ(allocations, 0u) << "the step allocated";
  for (int t = 0; t < kTicks; ++t) {
    EXPECT_EQ(overflow_status[t], 0u) << "tick " << t;
    EXPECT_EQ(hash_a[t], hash_b[t]) << "tick " << t;
    // 81 manifolds on the platform from the first contact on (the boxes start 2 mm above it,
    // inside the 2 cm contact margin): 17 of them in the overflow.
    EXPECT_GE(overflow_manifolds[t], 17u) << "tick " << t;
  }
  // The final lanes are a realistic colouring too.
  const lockstep::sim::WorldData& w = world_data(*a.world);
  check_layout({w.constraints.begin(), w.constraints.begin() + w.constraint_count},
               {w.solver_bodies.begin(), w.solver_bodies.begin() + w.slot_count}, w.lanes);

  // Nothing sinks: the platform on the floor, every box on the platform, each within 1 cm
  // (linear slop 5 mm, plus what the bias leaves of a 5 t platform's load in one step).
  constexpr float kSink = 0.01f;
  BodyView platform;
  ASSERT_EQ(a.world->get_body(a.platform, &platform), Error::none);
  EXPECT_GT(platform.position.y - kPlatformHalfHeight, -kSink);
  EXPECT_LT(std::fabs(platform.position.x), 1e-3f);  // symmetric load: no drift (m)
  const float top = platform.position.y + kPlatformHalfHeight;
  float max_speed = 0;
  for (const BodyId id : a.boxes) {
    BodyView box;
    ASSERT_EQ(a.world->get_body(id, &box), Error::none);
    EXPECT_GT(box.position.y - kBoxHalf, top - kSink);
    EXPECT_LT(box.position.y - kBoxHalf, top + kSink);  // and none jumped off
    const Vec3 v = box.linear_velocity;
    max_speed = std::max(max_speed, std::sqrt(v.x * v.x + v.y * v.y + v.z * v.z));
  }
  // At rest after 2 s: 1 cm/s is far above the residual jitter of a settled contact and far
  // below anything sliding or bouncing.
  EXPECT_LT(max_speed, 0.01f);
}

// The sign of a zero. A dynamic body at rest with −0 components (an angular velocity set to −0
// survives the world's damping) in a separating manifold whose warm-start friction is (−0, −0)
// (a zero cached impulse re-projected on new tangents) is idle in its friction row. Alone,
// solve_batch skips the row (no lane works); in a batch with a working lane it adds the +0
// impulse of a masked lane, and −0 + (+0) = +0. gather_velocities adds +0 so that no velocity in
// the passes is −0 (sums give −0 only from −0 + −0): this test failed before that.
TEST(ContactLanes, NegativeZeroVelocityAtOnceEqualsOneByOne) {
  SolverScene s;
  s.settings = default_settings();
  s.bodies.resize(3);  // 0, 1 dynamic; 2 static
  for (uint32_t i = 0; i < 2; ++i) {
    s.bodies[i].inv_mass = 1.0f;
    s.bodies[i].inv_inertia_world = inverse_inertia(1.0f, 1.2f, 0.8f, 0.05f);
  }
  s.bodies[0].linear_velocity = {-0.0f, -0.0f, -0.0f};
  s.bodies[0].angular_velocity = {-0.0f, -0.0f, -0.0f};
  s.bodies[1].linear_velocity = {-1.0f, 1.0f, 0.5f};  // closing on its contact, and sliding
  for (uint32_t i = 0; i < 2; ++i) {
    ContactConstraint c;
    c.slot_a = i;
    c.slot_b = 2;
    c.key = pair_key(i, 2);
    c.normal = {-0.6f, -0.8f, 0.0f};  // n.x < 0, t1.x > 0, t2.x = +0: the x row keeps −0 alone
    c.tangent1 = {0.8f, -0.6f, 0.0f};
    c.tangent2 = {0.0f, 0.0f, 1.0f};
    c.friction = 0.5f;
    c.first_point = i;
    c.point_count = 1;
    s.constraints.push_back(c);
    ContactPoint p;
    p.anchor_a = {0.3f, -0.5f, 0.2f};
    p.anchor_b = {0.3f, 0.0f, 0.2f};
    p.separation_m = i == 0 ? 0.5f : -0.01f;  // manifold 0 separating: λ_n = 0, friction idle
    if (i == 0) p.tangent_impulse = {-0.0f, -0.0f};
    s.points.push_back(p);
  }
  const SolveResult at_once = solve(s, Mode::as_built);
  const SolveResult one_by_one = solve(s, Mode::all_sequential);
  ASSERT_EQ(at_once.batches_at_once, 1u);  // both manifolds in one batch (the static is shared)
  // Fails today: slot 0's linear.x is +0 at once, −0 one by one.
  expect_identical(at_once, one_by_one);
}

}  // namespace
