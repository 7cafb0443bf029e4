// Contact constraints: the normal row and the 2x2 friction block per manifold point, solved by
// sequential impulses with warm starting. The sign table is in contact_solver.cpp.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "lockstep/sim/friction_block.h"
#include "lockstep/sim/math.h"

namespace lockstep::sim {

/// What the solver touches every iteration, per body slot (hot data; 64 bytes, one cache line).
/// Static and kinematic bodies have inv_mass 0 and a zero inverse inertia, and are never written.
struct BodySolverState {
  Vec3 linear_velocity{};                                   // m/s
  Vec3 angular_velocity{};                                  // rad/s
  float inv_mass = 0;                                       // 1/kg
  Mat3 inv_inertia_world{{0, 0, 0}, {0, 0, 0}, {0, 0, 0}};  // R·diag(I⁻¹)·Rᵀ, 1/(kg·m²)
};
static_assert(sizeof(BodySolverState) == 64, "keep the hot body data one cache line");

/// One manifold point as the narrowphase gives it, plus its warm-start impulses (match_warm_start).
/// prepare_contacts turns it into a SolverPoint; the iterations never read this.
struct ContactPoint {
  Vec3 anchor_a{};        // r_A: body A's centre to the point, world axes (m)
  Vec3 anchor_b{};        // r_B (m)
  Vec3 local_anchor_a{};  // r_A in body A's frame (m): warm-start matching by position
  float separation_m = 0;
  uint32_t feature = 0;
  float normal_impulse = 0;  // warm start λ_n (N·s)
  Vec2 tangent_impulse{};    // warm start J along (t1, t2) (N·s)
};

/// The velocities the iterations read and write, per body slot (32 bytes; the pads keep each
/// vector 16-byte aligned and are always 0). Gathered from BodySolverState before the passes and
/// scattered back after them (gather_velocities, scatter_velocities).
struct SolverVelocity {
  Vec3 linear{};  // m/s
  float pad0 = 0;
  Vec3 angular{};  // rad/s
  float pad1 = 0;
};
static_assert(sizeof(SolverVelocity) == 32, "two 16-byte rows");

/// One manifold point as a constraint: what the iterations read and write (hot; 184 bytes).
/// The Jacobian rows are precomputed: with r×d and I⁻¹(r×d) per body and direction d (n, t1, t2)
/// a relative velocity is three dot products and an impulse two scaled adds per body.
struct SolverPoint {
  Vec3 rn_a{}, rn_b{};              // r_A×n, r_B×n (m)
  Vec3 in_a{}, in_b{};              // I_A⁻¹(r_A×n), I_B⁻¹(r_B×n) (1/(kg·m))
  Vec3 rt1_a{}, rt2_a{};            // r_A×t1, r_A×t2 (m)
  Vec3 rt1_b{}, rt2_b{};            // r_B×t1, r_B×t2 (m)
  Vec3 it1_a{}, it2_a{};            // I_A⁻¹(r_A×t1), I_A⁻¹(r_A×t2) (1/(kg·m))
  Vec3 it1_b{}, it2_b{};            // I_B⁻¹(r_B×t1), I_B⁻¹(r_B×t2) (1/(kg·m))
  float normal_mass = 0;            // 1/K (kg); 0 when the row is skipped (K ≈ 0 or not finite)
  float target_velocity = 0;        // normal velocity the row drives towards (m/s): bias, bounce or
                                    // the speculative allowance (negative)
  float relax_target_velocity = 0;  // the same without the Baumgarte bias (m/s)
  TangentMass tangent_mass{};       // K_t (1/kg)
  float tangent_det = 0;            // friction_block_det(K_t): 0 when the block is invalid
  float normal_impulse = 0;         // accumulated λ_n ≥ 0 (N·s)
  Vec2 tangent_impulse{};           // accumulated J along (t1, t2) (N·s)
};
static_assert(sizeof(SolverPoint) == 184, "hot point data: 46 floats");

/// One manifold (a body pair with at least one point) as a constraint.
struct ContactConstraint {
  uint64_t key = 0;  // pair_key(slot_a, slot_b), slot_a < slot_b
  uint32_t slot_a = 0, slot_b = 0;
  Vec3 normal{0, 1, 0};  // unit, from B to A
  Vec3 tangent1{1, 0, 0}, tangent2{0, 0, 1};
  float friction = 0;     // combined μ
  float restitution = 0;  // combined e
  uint32_t first_point = 0;
  uint32_t point_count = 0;
  // Written by prepare_contacts for the iterations:
  float inv_mass_a = 0, inv_mass_b = 0;  // 1/kg; 0 for non-dynamic bodies (never written)
  uint32_t active_count = 0;             // points with a normal row (normal_mass > 0)
  Vec3 mass_n_a{}, mass_n_b{};           // mA⁻¹·n, mB⁻¹·n (1/kg)
  Vec3 mass_t1_a{}, mass_t2_a{};         // mA⁻¹·t1, mA⁻¹·t2 (1/kg)
  Vec3 mass_t1_b{}, mass_t2_b{};         // mB⁻¹·t1, mB⁻¹·t2 (1/kg)
  // Centroid row: the active points pushed together, see contact_solver.cpp.
  Vec3 centroid_rn_a{}, centroid_rn_b{};  // c_A×n, c_B×n at the mean anchors (m)
  Vec3 centroid_in_a{}, centroid_in_b{};  // I⁻¹(c×n) (1/(kg·m))
  float centroid_mass = 0;                // 1/K at the centroid (kg); 0 = no centroid row
  float centroid_target = 0;              // mean target velocity of the active points (m/s)
  float centroid_relax_target = 0;        // mean relax target velocity (m/s)
};

/// The warm-start cache: last step's manifolds, sorted by key, with their impulses.
struct CachedManifold {
  uint64_t key = 0;
  uint32_t first_point = 0;
  uint32_t point_count = 0;
};
struct CachedPoint {
  uint32_t feature = 0;
  float normal_impulse = 0;  // N·s
  Vec3 friction_impulse{};   // world vector (N·s), re-projected on the next step's tangents
  Vec3 local_anchor_a{};     // the point in body A's frame (m), for matching by position
};
struct ContactCache {
  std::vector<CachedManifold> manifolds;
  uint32_t manifold_count = 0;
  std::vector<CachedPoint> points;
  uint32_t point_count = 0;
};

struct SolverSettings {
  float dt_s = 0;
  float inv_dt = 0;
  float baumgarte = 0;
  float linear_slop_m = 0;
  float max_bias_velocity = 0;
  float restitution_threshold = 0;
  Vec3 gravity{};  // m/s², to take this step's gravity out of the closing speed for restitution
};

struct SolverCounters {
  uint32_t skipped_normal_rows = 0;
  uint32_t skipped_friction_rows = 0;
  uint32_t warm_started_points = 0;
};

/// Combined friction and restitution of two shapes (rules documented in contact_solver.cpp).
float combine_friction(float mu_a, float mu_b);
float combine_restitution(float e_a, float e_b);

/// Copies matching impulses of last step's cache into this step's points (merge join on keys,
/// then feature ids, then nearest position), re-projecting friction onto the new tangents.
void match_warm_start(std::span<const ContactConstraint> constraints,
                      std::span<ContactPoint> points, const ContactCache& cache,
                      SolverCounters* counters);

/// Effective masses, Jacobians and target velocities, from the velocities before warm starting:
/// fills `solver_points` from `points`, index for index, and empties the cache of K_t
/// eigen-decompositions (cold: filled and read by the iterations for answers on the circle).
void prepare_contacts(std::span<ContactConstraint> constraints,
                      std::span<const ContactPoint> points, std::span<SolverPoint> solver_points,
                      std::span<FrictionEigen> friction_eigens,
                      std::span<const BodySolverState> bodies, const SolverSettings& settings,
                      SolverCounters* counters);

/// Copies the bodies' velocities into the iterations' compact array (every slot).
void gather_velocities(std::span<const BodySolverState> bodies,
                       std::span<SolverVelocity> velocities);

/// Copies the iterations' velocities back into the dynamic bodies (the others never change).
void scatter_velocities(std::span<const SolverVelocity> velocities,
                        std::span<BodySolverState> bodies);

/// Applies the matched accumulated impulses.
void warm_start_contacts(std::span<const ContactConstraint> constraints,
                         std::span<const SolverPoint> points, std::span<SolverVelocity> velocities);

/// One Gauss-Seidel pass over every contact: per manifold the centroid row, then per point the
/// normal row and the friction block. `use_bias` false is a relax pass (targets without bias).
void solve_contacts(std::span<const ContactConstraint> constraints, std::span<SolverPoint> points,
                    std::span<FrictionEigen> friction_eigens, std::span<SolverVelocity> velocities,
                    bool use_bias, SolverCounters* counters);

/// Writes this step's manifolds and impulses into `cache` (sorted by key, as the constraints).
void store_contact_cache(std::span<const ContactConstraint> constraints,
                         std::span<const ContactPoint> points,
                         std::span<const SolverPoint> solver_points, ContactCache* cache);

}  // namespace lockstep::sim
