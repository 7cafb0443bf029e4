// The contact solver over batches of eight manifolds: colouring, prepare, warm start and the
// passes on wide::W8 lanes. The formulas, the sign table and the row order (per manifold the
// centroid row, then per point the normal row and the friction block) are contact_solver.cpp's;
// contact_lanes.h says why lanes and colours give every manifold of a colour the same
// computation, whatever else shares its batch.
// The passes themselves are in contact_lanes_passes.inl, compiled here and, on x86-64, twice more
// (AVX and AVX-512 targets) in contact_lanes_avx.cpp; best_lane_kernel picks one at run time.
#include "solver/contact_lanes.h"

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <type_traits>
#include <utility>

#include "collide.h"
#include "simd/wide_float.h"
#include "solver/friction_block_wide.h"

namespace lockstep::sim {

void contact_lanes_init(ContactLanes* lanes, uint32_t max_bodies, uint32_t max_contact_pairs,
                        uint32_t max_contact_points) {
  if (max_contact_points == 0) max_contact_points = max_contact_pairs * kMaxManifoldPoints;
  const uint32_t batches = max_manifold_lanes(max_contact_pairs);
  const size_t rows = max_point_lane_rows(max_contact_points);
  lanes->batches.assign(batches, ManifoldLanes{});
  lanes->point_lanes.assign(rows, PointLanes{});
  lanes->eigens.assign(rows, EigenLanes{});
  lanes->body_colours.assign(max_bodies, 0);
  lanes->colour_of.assign(max_contact_pairs, 0);
  lanes->batch_count = 0;
  lanes->point_lane_count = 0;
  lanes->zero_slot = max_bodies;  // the velocity array has one slot more than the bodies
  lanes->kernel = best_lane_kernel();
}

bool lane_kernel_available(LaneKernel kernel) {
  switch (kernel) {
    case LaneKernel::baseline:
      return true;
    case LaneKernel::avx:
#if defined(LOCKSTEP_SIMD_AVX_KERNEL)
      // The CPU and the OS (saved ymm state) support AVX: libgcc / compiler-rt check both.
      return __builtin_cpu_supports("avx");
#else
      return false;
#endif
    case LaneKernel::avx512:
#if defined(LOCKSTEP_SIMD_AVX512_KERNEL)
      // The same for AVX-512 F and VL (the OS saves the opmask and upper register state).
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl");
#else
      return false;
#endif
  }
  return false;
}

LaneKernel best_lane_kernel() {
  for (LaneKernel kernel : {LaneKernel::avx512, LaneKernel::avx}) {
    if (lane_kernel_available(kernel)) return kernel;
  }
  return LaneKernel::baseline;
}

void build_contact_lanes(std::span<const ContactConstraint> constraints,
                         std::span<const BodySolverState> bodies, uint32_t slot_count,
                         ContactLanes* lanes) {
  constexpr uint32_t kOverflow = kSolverColours;
  uint64_t* const taken = lanes->body_colours.data();
  std::fill(taken, taken + slot_count, uint64_t{0});

  // Colours, greedily in key order.
  uint32_t count[kSolverColours + 1] = {};
  for (size_t i = 0; i < constraints.size(); ++i) {
    const ContactConstraint& c = constraints[i];
    const bool dynamic_a = bodies[c.slot_a].inv_mass > 0.0f;
    const bool dynamic_b = bodies[c.slot_b].inv_mass > 0.0f;
    const uint64_t used = (dynamic_a ? taken[c.slot_a] : 0) | (dynamic_b ? taken[c.slot_b] : 0);
    uint32_t colour = kOverflow;
    if (used != ~uint64_t{0}) {
      colour = static_cast<uint32_t>(std::countr_one(used));
      const uint64_t bit = uint64_t{1} << colour;
      if (dynamic_a) taken[c.slot_a] |= bit;
      if (dynamic_b) taken[c.slot_b] |= bit;
    }
    lanes->colour_of[i] = static_cast<uint8_t>(colour);
    ++count[colour];
  }

  // Batches: colour after colour, the overflow last. Inside a colour the manifolds are grouped
  // by point count (4, 3, 2, 1), in key order inside a group, so that a batch's lanes have the
  // same number of point rows (a sphere's single point no longer idles through a box's four).
  // The order inside a colour changes nothing: its manifolds share no dynamic body. The
  // overflow, solved lane by lane, is grouped the same way: a fixed order, and the point rows
  // stay within max_point_lane_rows.
  constexpr uint32_t kPoints = kMaxManifoldPoints;
  constexpr uint32_t kGroups = (kSolverColours + 1) * kPoints;
  constexpr uint32_t kFirstOverflowGroup = kSolverColours * kPoints;
  auto group_of = [](uint32_t colour, uint32_t point_count) {
    const uint32_t points = point_count < 1 ? 1 : (point_count > kPoints ? kPoints : point_count);
    return colour * kPoints + (kPoints - points);
  };
  uint32_t group_count[kGroups] = {};
  for (size_t i = 0; i < constraints.size(); ++i)
    ++group_count[group_of(lanes->colour_of[i], constraints[i].point_count)];
  uint32_t first_batch[kGroups];
  uint32_t batch_count = 0;
  for (uint32_t g = 0; g < kGroups; ++g) {
    first_batch[g] = batch_count;
    batch_count += (group_count[g] + kLaneCount - 1) / kLaneCount;
  }
  lanes->colours_used = 0;
  for (uint32_t colour = 0; colour < kOverflow; ++colour)
    if (count[colour] > 0) ++lanes->colours_used;
  lanes->overflow_manifolds = count[kOverflow];
  ManifoldLanes* const batches = lanes->batches.data();
  for (uint32_t b = 0; b < batch_count; ++b) {
    batches[b].lanes = 0;
    batches[b].sequential = b >= first_batch[kFirstOverflowGroup] ? 1u : 0u;
    batches[b].pairs_with_next = 0;
    for (uint32_t lane = 0; lane < kLaneCount; ++lane)
      batches[b].constraint[lane] = kNoLane;
  }
  uint32_t filled[kGroups] = {};
  for (size_t i = 0; i < constraints.size(); ++i) {
    const uint32_t g = group_of(lanes->colour_of[i], constraints[i].point_count);
    const uint32_t n = filled[g]++;
    ManifoldLanes& m = batches[first_batch[g] + n / kLaneCount];
    m.constraint[n % kLaneCount] = static_cast<uint32_t>(i);
    m.lanes |= 1u << (n % kLaneCount);
  }

  // Point rows: as many as the batch's largest manifold.
  uint32_t point_lane_count = 0;
  for (uint32_t b = 0; b < batch_count; ++b) {
    ManifoldLanes& m = batches[b];
    uint32_t rows = 0;
    for (uint32_t lane = 0; lane < kLaneCount; ++lane) {
      if (m.constraint[lane] != kNoLane) {
        rows = std::max(rows, constraints[m.constraint[lane]].point_count);
      }
    }
    m.first_point_lanes = point_lane_count;
    m.point_rows = rows;
    point_lane_count += rows;
  }
  // Consecutive batches of one group (one colour, one point count) share no dynamic body: the
  // passes may solve two of them at once when they have as many point rows.
  for (uint32_t g = 0; g < kFirstOverflowGroup; ++g) {
    const uint32_t batches_in_group = (group_count[g] + kLaneCount - 1) / kLaneCount;
    for (uint32_t j = first_batch[g]; j + 1 < first_batch[g] + batches_in_group; ++j)
      batches[j].pairs_with_next = batches[j].point_rows == batches[j + 1].point_rows ? 1u : 0u;
  }
  lanes->batch_count = batch_count;
  lanes->point_lane_count = point_lane_count;
}

namespace {

void set3(Vec3Lanes* d, uint32_t lane, Vec3 v) {
  d->x[lane] = v.x;
  d->y[lane] = v.y;
  d->z[lane] = v.z;
}

void set_mat3(Mat3Lanes* d, uint32_t lane, const Mat3& m) {
  set3(&d->c0, lane, m.c0);
  set3(&d->c1, lane, m.c1);
  set3(&d->c2, lane, m.c2);
}

// A lane without a manifold (or a point row beyond the lane's manifold): zero, no row.
void clear_manifold_lane(ManifoldLanes* m, uint32_t lane, uint32_t zero_slot) {
  m->slot_a[lane] = zero_slot;
  m->slot_b[lane] = zero_slot;
  for (Vec3Lanes* v : {&m->normal, &m->tangent1, &m->tangent2, &m->centroid_rn_a, &m->centroid_rn_b,
                       &m->centroid_in_a, &m->centroid_in_b}) {
    set3(v, lane, Vec3{});
  }
  set_mat3(&m->inv_inertia_a, lane, Mat3{{0, 0, 0}, {0, 0, 0}, {0, 0, 0}});
  set_mat3(&m->inv_inertia_b, lane, Mat3{{0, 0, 0}, {0, 0, 0}, {0, 0, 0}});
  m->inv_mass_a[lane] = 0.0f;
  m->inv_mass_b[lane] = 0.0f;
  m->friction[lane] = 0.0f;
  m->centroid_mass[lane] = 0.0f;
  m->centroid_inv_mass[lane] = 0.0f;
  m->points_mass[lane] = 0.0f;
  m->centroid_separation[lane] = 0.0f;
  m->bias_rate[lane] = 0.0f;
  m->mass_scale[lane] = 1.0f;
  m->impulse_scale[lane] = 0.0f;
  m->restitution[lane] = 0.0f;
  m->active_count[lane] = 1.0f;
}

void clear_point_lane(PointLanes* p, uint32_t lane) {
  for (Vec3Lanes* v : {&p->anchor_a, &p->anchor_b, &p->in_a, &p->in_b})
    set3(v, lane, Vec3{});
  for (float* f : {p->normal_mass, p->separation, p->normal_velocity, p->max_normal_impulse,
                   p->tangent_a, p->tangent_b, p->tangent_c, p->tangent_det, p->normal_impulse,
                   p->tangent_impulse_x, p->tangent_impulse_y}) {
    f[lane] = 0.0f;
  }
  p->point[lane] = kNoLane;
}

// Support mass scaling: the factor on the lower body's inverse mass and inertia in a manifold
// that rests a heavier body on a lighter one (1 otherwise), `a_above` telling which is lower.
//
// Gauss-Seidel passes the load of a heavy body to the ground through the light one below it a
// little per pass, and each soft row gives in proportion to its load over its effective mass: a
// 100 kg box on a 1 kg box sinks 3.7 cm and a light bridge under a heavy load tips. Here the row
// between them sees the support as if it weighed as much as what it carries (the impulses still
// hold the upper body exactly; the support just takes less of the push, as in shock
// propagation), so the load stops at the support instead of sinking through it. Only for
// manifolds whose normal is within 45° of "up" and whose bodies close slower than
// support_speed (twice a step of gravity: resting contacts): an impact between them, a light
// body thrown up into a heavy one above, keeps its true masses, so no momentum is invented.
float support_scale(const ContactConstraint& c, const BodySolverState& a, const BodySolverState& b,
                    const SolverSettings& s, bool* a_above) {
  // Equal masses (most stacks) and static or kinematic bodies: nothing to scale.
  if (a.inv_mass <= 0.0f || b.inv_mass <= 0.0f || a.inv_mass == b.inv_mass) return 1.0f;
  const float up = dot(c.normal, s.up);  // the normal points from B to A
  constexpr float kCos45 = 0.70710678f;
  *a_above = up > 0.0f;
  if (up < kCos45 && up > -kCos45) return 1.0f;
  const float inv_upper = *a_above ? a.inv_mass : b.inv_mass;
  const float inv_lower = *a_above ? b.inv_mass : a.inv_mass;
  if (!(inv_lower > inv_upper)) return 1.0f;
  const float closing = dot(c.normal, b.linear_velocity - a.linear_velocity);
  if (closing > s.support_speed) return 1.0f;
  return inv_upper / inv_lower;
}

Mat3 scaled(const Mat3& m, float k) {
  return Mat3{k * m.c0, k * m.c1, k * m.c2};
}

// One manifold's inputs into lane `lane` (scalar copies: the points are read in colour order).
void gather_lane(const ContactConstraint& c, std::span<const ContactPoint> contact_points,
                 std::span<const BodySolverState> bodies, const SolverSettings& settings,
                 ManifoldLanes* m, PointLanes* rows, uint32_t lane, PrepareInputs* in) {
  const BodySolverState& a = bodies[c.slot_a];
  const BodySolverState& b = bodies[c.slot_b];
  bool a_above = false;
  const float support = support_scale(c, a, b, settings, &a_above);
  m->slot_a[lane] = c.slot_a;
  m->slot_b[lane] = c.slot_b;
  set3(&m->normal, lane, c.normal);
  set3(&m->tangent1, lane, c.tangent1);
  set3(&m->tangent2, lane, c.tangent2);
  if (support == 1.0f) {
    m->inv_mass_a[lane] = a.inv_mass;
    m->inv_mass_b[lane] = b.inv_mass;
    set_mat3(&m->inv_inertia_a, lane, a.inv_inertia_world);
    set_mat3(&m->inv_inertia_b, lane, b.inv_inertia_world);
  } else {
    const float ka = a_above ? 1.0f : support, kb = a_above ? support : 1.0f;
    m->inv_mass_a[lane] = ka * a.inv_mass;
    m->inv_mass_b[lane] = kb * b.inv_mass;
    set_mat3(&m->inv_inertia_a, lane, scaled(a.inv_inertia_world, ka));
    set_mat3(&m->inv_inertia_b, lane, scaled(b.inv_inertia_world, kb));
  }
  m->friction[lane] = c.friction;
  in->restitution[lane] = c.restitution;
  set3(&in->va, lane, a.linear_velocity);
  set3(&in->wa, lane, a.angular_velocity);
  set3(&in->vb, lane, b.linear_velocity);
  set3(&in->wb, lane, b.angular_velocity);
  for (uint32_t k = 0; k < m->point_rows; ++k) {
    PointLanes& p = rows[k];
    if (k >= c.point_count) {
      clear_point_lane(&p, lane);
      in->separation[k][lane] = 0.0f;
      continue;
    }
    const ContactPoint& cp = contact_points[c.first_point + k];
    set3(&p.anchor_a, lane, cp.anchor_a);
    set3(&p.anchor_b, lane, cp.anchor_b);
    p.normal_impulse[lane] = cp.normal_impulse;
    p.tangent_impulse_x[lane] = cp.tangent_impulse.x;
    p.tangent_impulse_y[lane] = cp.tangent_impulse.y;
    p.point[lane] = c.first_point + k;
    // The rest offset deepens the separation the rows see (update_rest_offsets).
    in->separation[k][lane] = cp.separation_m - cp.rest_offset_m;
    in->has_point[k] |= 1 << lane;
  }
}

void clear_lane(ManifoldLanes* m, PointLanes* rows, uint32_t lane, uint32_t zero_slot,
                PrepareInputs* in) {
  clear_manifold_lane(m, lane, zero_slot);
  in->restitution[lane] = 0.0f;
  for (Vec3Lanes* v : {&in->va, &in->wa, &in->vb, &in->wb})
    set3(v, lane, Vec3{});
  for (uint32_t k = 0; k < m->point_rows; ++k) {
    clear_point_lane(&rows[k], lane);
    in->separation[k][lane] = 0.0f;
  }
}

}  // namespace

namespace {

#include "solver/friction_block_wide.inl"
// (the passes call solve_boundary_wide: this order)
#include "solver/contact_lanes_passes.inl"

// The baseline passes solve one batch at a time: two at once (W16, four xmm registers per value)
// run out of SSE2's sixteen registers and were slower. The AVX kernel pairs them
// (contact_lanes_avx.cpp). bench/README.md (session 5) has both measurements.
constexpr bool kPairBaseline = false;

const LaneKernelCode kLaneKernelBaseline = {&prepare_batch, &warm_start_all<kPairBaseline>,
                                            &solve_all<kPairBaseline>, &restitute_all};

// The copy of the vector code `kernel` names (a kernel this build lacks: the baseline).
const LaneKernelCode& code_of(LaneKernel kernel) {
  switch (kernel) {
    case LaneKernel::baseline:
      break;
    case LaneKernel::avx:
#if defined(LOCKSTEP_SIMD_AVX_KERNEL)
      return kLaneKernelAvx;
#else
      break;
#endif
    case LaneKernel::avx512:
#if defined(LOCKSTEP_SIMD_AVX512_KERNEL)
      return kLaneKernelAvx512;
#else
      break;
#endif
  }
  return kLaneKernelBaseline;
}

}  // namespace

void prepare_contact_lanes(std::span<const ContactConstraint> constraints,
                           std::span<const ContactPoint> points,
                           std::span<const BodySolverState> bodies, const SolverSettings& settings,
                           ContactLanes* lanes, SolverCounters* counters) {
  const LaneKernelCode& code = code_of(lanes->kernel);
  lanes->inv_substep = settings.inv_substep;
  lanes->linear_slop_m = settings.linear_slop_m;
  lanes->max_bias_velocity = settings.max_bias_velocity;
  lanes->restitution_threshold = settings.restitution_threshold;
  lanes->bounce_batches = 0;
  lanes->gravity_step = settings.gravity_step;
  lanes->gravity_substep = settings.gravity_substep;
  for (uint32_t i = 0; i < lanes->batch_count; ++i) {
    ManifoldLanes& m = lanes->batches[i];
    PointLanes* const rows = &lanes->point_lanes[m.first_point_lanes];
    EigenLanes* const eigens = &lanes->eigens[m.first_point_lanes];
    alignas(16) PrepareInputs in;
    for (int& bits : in.has_point)
      bits = 0;
    for (uint32_t lane = 0; lane < kLaneCount; ++lane) {
      const uint32_t index = m.constraint[lane];
      if (index != kNoLane) {
        gather_lane(constraints[index], points, bodies, settings, &m, rows, lane, &in);
      } else {
        clear_lane(&m, rows, lane, lanes->zero_slot, &in);
      }
    }
    code.prepare_batch(settings, in, &m, rows, eigens, counters);
    lanes->bounce_batches += m.bounce_lanes != 0 ? 1u : 0u;
  }
}

void warm_start_wide(const ContactLanes& lanes, std::span<SolverVelocity> velocities) {
  code_of(lanes.kernel).warm_start(lanes, velocities);
}

void solve_wide(ContactLanes* lanes, std::span<SolverVelocity> velocities,
                std::span<const SolverVelocity> deltas, bool use_bias, SolverCounters* counters) {
  code_of(lanes->kernel).solve(lanes, velocities, deltas, use_bias, counters);
}

void restitute_wide(ContactLanes* lanes, std::span<SolverVelocity> velocities,
                    std::span<const SolverVelocity> deltas) {
  if (lanes->bounce_batches == 0) return;  // nothing may bounce this step
  code_of(lanes->kernel).restitute(lanes, velocities, deltas);
}

void unpack_contact_lanes(const ContactLanes& lanes, std::span<ContactPoint> points) {
  for (uint32_t i = 0; i < lanes.point_lane_count; ++i) {
    const PointLanes& p = lanes.point_lanes[i];
    for (uint32_t lane = 0; lane < kLaneCount; ++lane) {
      if (p.point[lane] == kNoLane) continue;
      ContactPoint& s = points[p.point[lane]];
      s.normal_impulse = p.normal_impulse[lane];
      s.tangent_impulse = {p.tangent_impulse_x[lane], p.tangent_impulse_y[lane]};
    }
  }
}

}  // namespace lockstep::sim
