// The contact solver's iterations, eight manifolds at once.
//
// Colouring. Manifolds are coloured greedily in pair-key order: each takes the lowest of 64
// colours that neither of its dynamic bodies has yet (static and kinematic bodies are never
// written, so any number of manifolds of one colour may share them). Manifolds of one colour
// touch disjoint dynamic bodies, so solving them one after another or all at once is the same
// computation: a colour is cut into batches of kLaneCount = 8, one manifold per lane, grouped
// by point count (4, 3, 2, 1; key order inside a group) so that a batch's lanes have as many
// point rows. A manifold that finds all 64 colours taken (both bodies together in 64+ manifolds: a
// platform carrying a crowd) goes to the overflow batches, whose lanes are solved one after
// another.
// Every pass solves the colours in order 0, 1, … 63, then the overflow (in key order).
// Consecutive batches of one colour and point count are marked `pairs_with_next`: the AVX kernel
// solves such a pair at once (sixteen lanes, two dependency chains), which is the same
// computation for the same reason.
//
// Lanes. Each batch holds its manifolds' data transposed, one float per lane (ManifoldLanes and,
// per point index, PointLanes), and the iterations do on each lane the float operations of
// contact_lanes_passes.inl's formulas with wide::W8 (two W4: SSE2, NEON or four scalars, one IEEE
// operation per lane: the same bits everywhere). Lanes without a manifold, and point rows beyond
// a lane's point count, have a zero effective mass and are masked off: nothing they compute is
// applied or stored (a masked lane may add +0 to a velocity, which changes nothing because the
// passes never see −0: gather_velocities). So the batch width never changes a bit
// (tests/sim_contact_lanes_test.cpp solves every batch at once and lane by lane and compares).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "collide.h"
#include "simd/instruction_set.h"
#include "solver/contact_solver.h"

namespace lockstep::sim {

// On x86 the passes are also compiled for AVX (contact_lanes_avx.cpp: W8 in one 256-bit register,
// the same IEEE operation per lane, so the same bits) and chosen at run time when the CPU has it.
// simd/instruction_set.h decides which copies exist (LOCKSTEP_SIMD_AVX_KERNEL, ..._AVX512_KERNEL).

// The passes' small helpers (contact_lanes_passes.inl) are always inlined: gcc otherwise calls the
// sixteen-lane ones, passing their values through memory.
#define LOCKSTEP_LANES_INLINE [[gnu::always_inline]] inline

/// Which compiled copy of the passes runs: the build's own instruction set, AVX, or AVX with
/// AVX-512's 32 registers (contact_lanes_avx.cpp). All give the same bits.
enum class LaneKernel : uint8_t { baseline, avx, avx512 };

/// The fastest kernel this build and this CPU can run.
LaneKernel best_lane_kernel();

/// Whether this build and this CPU can run `kernel` (baseline: always).
bool lane_kernel_available(LaneKernel kernel);

inline constexpr uint32_t kSolverColours = 64;
inline constexpr uint32_t kLaneCount = 8;  // two wide::W4 (wide::W8)
inline constexpr uint32_t kNoLane = 0xffffffffu;

/// A 3-vector over the lanes: x[i], y[i], z[i] belong to lane i.
struct alignas(16) Vec3Lanes {
  float x[kLaneCount], y[kLaneCount], z[kLaneCount];
};

/// A 3x3 matrix over the lanes, by columns (as Mat3).
struct alignas(16) Mat3Lanes {
  Vec3Lanes c0, c1, c2;
};

/// Up to kLaneCount manifolds (lanes) of one colour, or of the overflow.
struct alignas(16) ManifoldLanes {
  uint32_t slot_a[kLaneCount],
      slot_b[kLaneCount];  // velocity slots; padding lanes use the zero slot
  Vec3Lanes normal, tangent1, tangent2;
  float inv_mass_a[kLaneCount],
      inv_mass_b[kLaneCount];              // 1/kg; 0 for non-dynamic bodies and padding
  Mat3Lanes inv_inertia_a, inv_inertia_b;  // world, as prepared (1/(kg·m²))
  float friction[kLaneCount];
  Vec3Lanes centroid_rn_a, centroid_rn_b, centroid_in_a, centroid_in_b;
  float centroid_mass[kLaneCount];        // 0: no centroid row in that lane
  float centroid_inv_mass[kLaneCount];    // K(centroid) = 1/centroid_mass; 0 without the row
  float points_mass[kLaneCount];          // Σ 1/K over the active points (the soft mode's mass)
  float centroid_separation[kLaneCount];  // mean s₀ of the active points (m)
  // Soft contact coefficients of the lane (Softness: static_contact when a body is not dynamic).
  float bias_rate[kLaneCount], mass_scale[kLaneCount], impulse_scale[kLaneCount];
  float restitution[kLaneCount];
  float active_count[kLaneCount];   // points with a normal row, as a float (≥ 1 where used)
  uint32_t constraint[kLaneCount];  // index into the constraints; kNoLane for padding
  uint32_t first_point_lanes = 0;   // index of this batch's first PointLanes
  uint32_t point_rows = 0;          // the largest point count of its lanes
  uint32_t lanes = 0;               // bit i: lane i holds a manifold
  uint32_t sequential = 0;          // 1: overflow batch, lanes solved one after another
  uint32_t pairs_with_next = 0;     // 1: the next batch has this colour and point count
  uint32_t bounce_lanes = 0;        // bit i: lane i has a point that may bounce (restitution)
};

/// Point k of the manifolds of a batch: what every pass streams (96 bytes per point).
/// The Jacobians are built from the anchors in the pass: r×d costs less than reading it.
struct alignas(16) PointLanes {
  Vec3Lanes anchor_a, anchor_b;       // r_A, r_B (m)
  Vec3Lanes in_a, in_b;               // I_A⁻¹(r_A×n), I_B⁻¹(r_B×n) (1/(kg·m))
  float normal_mass[kLaneCount];      // 1/K (kg); 0: no row (no point in this lane, or skipped)
  float separation[kLaneCount];       // s₀, at the narrowphase (m; < 0: overlap)
  float normal_velocity[kLaneCount];  // vn₀ before the step, for restitution; 0 once bounced (m/s)
  float max_normal_impulse[kLaneCount];  // the largest accumulated λ_n of this step (N·s)
  float tangent_a[kLaneCount], tangent_b[kLaneCount], tangent_c[kLaneCount];  // K_t (1/kg)
  float tangent_det[kLaneCount];                                       // friction_block_det(K_t)
  float normal_impulse[kLaneCount];                                    // accumulated λ_n (N·s)
  float tangent_impulse_x[kLaneCount], tangent_impulse_y[kLaneCount];  // accumulated J (N·s)
  uint32_t point[kLaneCount];  // index into the contact points; kNoLane for padding
};
static_assert(sizeof(PointLanes) == 24 * 4 * kLaneCount, "24 rows of lanes");

/// friction_block_eigen(K_t) of point k of the manifolds of a batch (FrictionEigen's fields, per
/// lane): prepared with the point, read only by friction blocks that end on the circle.
struct alignas(16) EigenLanes {
  float s[kLaneCount], k1[kLaneCount], k2[kLaneCount], e1x[kLaneCount], e1y[kLaneCount];
};

/// What prepare reads per lane besides the lanes it fills (gathered lane by lane by
/// prepare_contact_lanes; prepare_batch then works on the eight lanes at once).
struct PrepareInputs {
  Vec3Lanes va, wa, vb, wb;  // body velocities before warm starting
  float restitution[kLaneCount];
  float separation[kMaxManifoldPoints][kLaneCount];  // m
  int has_point[kMaxManifoldPoints];                 // bit i: lane i has a point in row k
};

/// Capacity of the batches for `max_contact_pairs` manifolds: kLaneCount per batch, plus one
/// partial batch per non-empty group (colour × point count, overflow included).
inline uint32_t max_manifold_lanes(uint32_t max_contact_pairs) {
  const uint32_t groups = (kSolverColours + 1) * kMaxManifoldPoints;
  return max_contact_pairs / kLaneCount +
         (max_contact_pairs < groups ? max_contact_pairs : groups) + 1;
}

/// Capacity of the point rows for `max_contact_points` points: a group of manifolds with p
/// points each fills ceil(n/8)·p ≤ floor(n·p/8) + p rows, and the groups' p sum to
/// 65 · (4 + 3 + 2 + 1) (kMaxManifoldPoints down to 1).
inline uint32_t max_point_lane_rows(uint32_t max_contact_points) {
  return max_contact_points / kLaneCount +
         (kSolverColours + 1) * (kMaxManifoldPoints * (kMaxManifoldPoints + 1) / 2) + 1;
}

struct ContactLanes {
  std::vector<ManifoldLanes> batches;   // max_manifold_lanes(max_contact_pairs)
  std::vector<PointLanes> point_lanes;  // max_point_lane_rows(max_contact_points)
  std::vector<EigenLanes> eigens;       // one per PointLanes (cold: the circle only)
  std::vector<uint64_t> body_colours;   // per body slot: colours taken (scratch)
  std::vector<uint8_t> colour_of;       // per constraint (scratch)
  uint32_t batch_count = 0;
  uint32_t point_lane_count = 0;
  uint32_t zero_slot = 0;  // a velocity slot that is always zero and never written
  uint32_t colours_used = 0;
  uint32_t overflow_manifolds = 0;
  // The passes' constants for this step (prepare_contact_lanes sets them).
  float inv_substep = 0;  // 1/h
  float linear_slop_m = 0;
  float max_bias_velocity = 0;
  float restitution_threshold = 0;
  float gravity_step = 0;       // |g|·dt: how much faster than before the step a contact may meet
  Vec3 gravity_substep{};       // g·h: one substep's kick (restitution)
  uint32_t bounce_batches = 0;  // batches with a point that may bounce (restitution)
  LaneKernel kernel = LaneKernel::baseline;  // best_lane_kernel() at init; tests may pick either
};

/// Sizes every array for a world (all memory at creation). `max_contact_points` defaults to the
/// most `max_contact_pairs` manifolds can hold.
void contact_lanes_init(ContactLanes* lanes, uint32_t max_bodies, uint32_t max_contact_pairs,
                        uint32_t max_contact_points = 0);

/// Colours this step's manifolds and assigns them to batches and lanes (no data yet).
void build_contact_lanes(std::span<const ContactConstraint> constraints,
                         std::span<const BodySolverState> bodies, uint32_t slot_count,
                         ContactLanes* lanes);

/// Effective masses, Jacobians and target velocities of every lane, from the velocities before
/// warm starting, with the warm-start impulses of `points` (match_warm_start).
void prepare_contact_lanes(std::span<const ContactConstraint> constraints,
                           std::span<const ContactPoint> points,
                           std::span<const BodySolverState> bodies, const SolverSettings& settings,
                           ContactLanes* lanes, SolverCounters* counters);

/// Applies the accumulated (warm-start) impulses of every batch.
void warm_start_wide(const ContactLanes& lanes, std::span<SolverVelocity> velocities);

/// One pass over every batch (colour by colour); `use_bias` false is a relax pass. `deltas`
/// holds, per body slot, how far it moved since the step began (linear: Δp in m, angular: Δθ in
/// rad), from which each row recomputes its separation.
void solve_wide(ContactLanes* lanes, std::span<SolverVelocity> velocities,
                std::span<const SolverVelocity> deltas, bool use_bias, SolverCounters* counters);

/// The restitution pass: points that met this step and approached faster than the threshold
/// before it are driven to vn = −e·vn₀, once each (contact_lanes_passes.inl).
void restitute_wide(ContactLanes* lanes, std::span<SolverVelocity> velocities,
                    std::span<const SolverVelocity> deltas);

/// One compiled copy of the vector code: prepare_contact_lanes' per-batch half, warm_start_wide
/// and solve_wide. contact_lanes.cpp has the baseline's; contact_lanes_avx.cpp the x86 copies.
struct LaneKernelCode {
  void (*prepare_batch)(const SolverSettings& settings, const PrepareInputs& in, ManifoldLanes* m,
                        PointLanes* rows, EigenLanes* eigens, SolverCounters* counters);
  void (*warm_start)(const ContactLanes& lanes, std::span<SolverVelocity> velocities);
  void (*solve)(ContactLanes* lanes, std::span<SolverVelocity> velocities,
                std::span<const SolverVelocity> deltas, bool use_bias, SolverCounters* counters);
  void (*restitute)(ContactLanes* lanes, std::span<SolverVelocity> velocities,
                    std::span<const SolverVelocity> deltas);
};
#if defined(LOCKSTEP_SIMD_AVX_KERNEL)
extern const LaneKernelCode kLaneKernelAvx;  // call only when lane_kernel_available(avx)
#endif
#if defined(LOCKSTEP_SIMD_AVX512_KERNEL)
extern const LaneKernelCode kLaneKernelAvx512;  // only when lane_kernel_available(avx512)
#endif

/// Copies the accumulated impulses back into the points (for the warm-start cache).
void unpack_contact_lanes(const ContactLanes& lanes, std::span<ContactPoint> points);

}  // namespace lockstep::sim
