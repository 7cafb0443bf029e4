// Contact constraints: the normal row and the 2x2 friction block per manifold point, solved by
// sequential impulses with warm starting. The sign table is at the top of contact_lanes_passes.inl.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "lockstep/sim/math.h"
#include "solver/friction_block.h"

namespace lockstep::sim {

/// Below this inverse effective mass (1/kg, i.e. an effective mass above 1e10 kg) a row cannot
/// move anything and dividing by K would only amplify rounding: the row is skipped.
inline constexpr float kMinInverseMass = 1.0e-10f;

/// What the solver touches every iteration, per body slot (hot data; 64 bytes, one cache line).
/// Static and kinematic bodies have inv_mass 0 and a zero inverse inertia, and are never written.
struct BodySolverState {
  Vec3 linear_velocity{};                                   // m/s
  Vec3 angular_velocity{};                                  // rad/s
  float inv_mass = 0;                                       // 1/kg
  Mat3 inv_inertia_world{{0, 0, 0}, {0, 0, 0}, {0, 0, 0}};  // R·diag(I⁻¹)·Rᵀ, 1/(kg·m²)
};
static_assert(sizeof(BodySolverState) == 64, "keep the hot body data one cache line");

/// One manifold point as the narrowphase gives it, plus its impulses: the warm start in
/// (match_warm_start), this step's accumulated impulses out (unpack_contact_lanes). The
/// iterations never read this (prepare_contact_lanes packs it into lanes).
struct ContactPoint {
  Vec3 anchor_a{};  // r_A: body A's centre to the point, world axes (m)
  Vec3 anchor_b{};  // r_B (m)
  // r_A in body A's frame (m) where the narrowphase found the point (a reused manifold keeps it,
  // step.cpp): warm-start matching by position, and with reference_separation the point's
  // place on both surfaces.
  Vec3 local_anchor_a{};
  float separation_m = 0;
  uint32_t feature = 0;
  float reference_separation_m = 0;  // separation_m when the narrowphase found the point
  float normal_impulse = 0;          // warm start λ_n (N·s)
  Vec2 tangent_impulse{};            // warm start J along (t1, t2) (N·s)
  float rest_offset_m = 0;           // the spring's rest offset (update_rest_offsets; m, ≥ 0)
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

/// The relative pose of a pair when the narrowphase last ran for it, in body A's frame: B's
/// origin, B's rotation relative to A's, and the manifold normal. While the pair's relative pose
/// stays within the WorldDef reuse bounds of it, the points found then are reused (step.cpp).
struct ManifoldReference {
  Vec3 position{};
  Quat rotation{};
  Vec3 normal{0, 1, 0};
};

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
  ManifoldReference reference;  // the pose the points were found at (manifold reuse)
};

/// The warm-start cache: last step's manifolds, sorted by key, with their impulses.
struct CachedManifold {
  uint64_t key = 0;
  uint32_t first_point = 0;
  uint32_t point_count = 0;
  ManifoldReference reference;
};
struct CachedPoint {
  uint32_t feature = 0;
  float normal_impulse = 0;  // N·s
  Vec3 friction_impulse{};   // world vector (N·s), re-projected on the next step's tangents
  Vec3 local_anchor_a{};     // the point in body A's frame (m), for matching by position
  float reference_separation_m = 0;  // ContactPoint's
  float rest_offset_m = 0;           // ContactPoint's
};
struct ContactCache {
  std::vector<CachedManifold> manifolds;
  uint32_t manifold_count = 0;
  std::vector<CachedPoint> points;
  uint32_t point_count = 0;
};

/// The rest offset's lag (update_rest_offsets): how many seconds a manifold's offset takes to
/// follow its load. A shorter lag rings: a 50-box column on the stiff-contact setting stands at
/// 0.4 s and above, sways 5–7 cm at 0.3 s and falls at 0.17 s.
inline constexpr float kRestOffsetLag = 0.75f;  // s

/// The largest rest offset, in linear slops (update_rest_offsets): 1 cm at the defaults, where a
/// contact under n unit boxes needs about 0.55·n mm. It bounds what a squeeze that cannot be
/// undone (a kinematic press) winds the offset up to: unbounded, a unit box pressed 3.4 cm into
/// the ground rose 4.5 cm above its rest when the press lifted; with this bound and the reset
/// beyond a slop's gap 1.2 cm (0.7 cm without rest offsets, where the spring gives back its
/// compression).
inline constexpr float kRestOffsetSlops = 10.0f;

/// Soft contact coefficients for one substep (Box2D v3's soft step): an overlap row's impulse is
/// −normal_mass·mass_scale·(vn + bias) − impulse_scale·λ, with bias = bias_rate·(s + slop) for
/// s < −slop. From a spring of `hertz` and damping ratio ζ over a substep h: ω = 2π·hertz,
/// a1 = 2ζ + hω, a2 = hω·a1, a3 = 1/(1 + a2): bias_rate = ω/a1, mass_scale = a2·a3,
/// impulse_scale = a3. hertz = 0 is a rigid row without position correction.
struct Softness {
  float bias_rate = 0;      // 1/s
  float mass_scale = 1;     // 1: rigid
  float impulse_scale = 0;  // 0: rigid
};
Softness make_softness(float hertz, float damping_ratio, float substep_s);

struct SolverSettings {
  float dt_s = 0;
  float inv_dt = 0;
  float substep_s = 0;      // h = dt / substeps
  float inv_substep = 0;    // 1/h
  Softness contact;         // between two dynamic bodies
  Softness static_contact;  // against a static or kinematic body: twice as stiff
  float linear_slop_m = 0;
  float max_bias_velocity = 0;
  float restitution_threshold = 0;
  float gravity_step = 0;  // |g|·dt (m/s)
  Vec3 gravity_substep{};  // g·h (m/s): one substep's kick, as integrate_velocities applies it
  // Support mass scaling (gather_lane in contact_lanes.cpp): `up` is −g/|g| (zero without
  // gravity); a manifold between two dynamic bodies whose normal is within 45° of `up` and whose
  // bodies close slower than `support_speed` treats the lower body as at least as heavy as the
  // upper one.
  Vec3 up{};
  float support_speed = 0;  // m/s
};

/// The soft step's settings for a world: the contact hertz is capped at a quarter of the substep
/// rate (a stiffer spring than the substep can follow would ring).
SolverSettings make_solver_settings(float dt_s, uint32_t substeps, float contact_hertz,
                                    float damping_ratio, float linear_slop_m,
                                    float max_bias_velocity, float restitution_threshold);

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

/// The rest offsets of this step's points (docs/physics.md, "Rest offset"), after
/// match_warm_start has carried last step's over with the impulses: each manifold's offset grows
/// by dt/kRestOffsetLag times its points' mean overlap beyond half the linear slop (and shrinks
/// by as much where they overlap less), within [0, bound]. The bound follows the load: the slop
/// plus four times the compression the manifold's warm-start impulses need from the spring, at
/// most kRestOffsetSlops slops, so a contact that loses its load loses its offset with it; a
/// point apart by more than the slop has none. prepare_contact_lanes subtracts a point's offset
/// from its separation, so the soft row pushes as if the point overlapped that much more: the
/// spring's rest compression under a load is integrated away and a resting contact settles at half
/// the slop whatever it carries.
void update_rest_offsets(std::span<const ContactConstraint> constraints,
                         std::span<ContactPoint> points, std::span<const BodySolverState> bodies,
                         const SolverSettings& settings);

/// Copies the bodies' velocities into the iterations' compact array (every slot).
void gather_velocities(std::span<const BodySolverState> bodies,
                       std::span<SolverVelocity> velocities);

/// Copies the iterations' velocities back into the dynamic bodies (the others never change).
void scatter_velocities(std::span<const SolverVelocity> velocities,
                        std::span<BodySolverState> bodies);

/// Writes this step's manifolds and impulses into `cache` (sorted by key, as the constraints).
void store_contact_cache(std::span<const ContactConstraint> constraints,
                         std::span<const ContactPoint> points, ContactCache* cache);

}  // namespace lockstep::sim
