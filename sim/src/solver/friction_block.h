// The exact 2x2 friction block of one contact point (docs/physics.md, section 3).
//
//   minimise  F(J) = ½ JᵀK J + v_freeᵀJ   subject to |J| ≤ R = μ·J_n
//
// K is the symmetric tangent inverse-mass matrix (kg⁻¹), v_free the tangent relative velocity
// without this point's accumulated friction (m/s), J the total tangent impulse (N·s). Inside the
// disk the unconstrained minimiser −K⁻¹v_free is the answer; otherwise (K + λI)J = −v_free with
// |J| = R for the unique multiplier λ ≥ 0. Radial clamping of the unconstrained impulse is a
// different (and worse) answer and is never used.
#pragma once

#include <cfloat>
#include <cstdint>

#include "lockstep/sim/math.h"

namespace lockstep::sim {

/// Symmetric 2x2 matrix [[a, b], [b, c]] (kg⁻¹).
struct TangentMass {
  float a = 0, b = 0, c = 0;
};

enum class FrictionBlockStatus : uint8_t {
  interior = 0,          // unconstrained minimiser inside the disk
  boundary = 1,          // on the circle, λ > 0
  zero_radius = 2,       // R == 0: J = 0
  invalid_mass = 3,      // K not finite or not positive definite: skipped, J = 0
  invalid_radius = 4,    // R negative or not finite: skipped, J = 0
  invalid_velocity = 5,  // v_free not finite: skipped, J = 0
};

struct FrictionBlockResult {
  Vec2 impulse{};    // N·s, |impulse| ≤ radius always
  float lambda = 0;  // kg⁻¹, the multiplier (0 when interior)
  FrictionBlockStatus status = FrictionBlockStatus::interior;
  /// True when the block was actually solved (interior, boundary or zero radius).
  bool solved() const { return status <= FrictionBlockStatus::zero_radius; }
};

/// The eigen-decomposition of K / s that the boundary case uses, s = (a + c)/2 the mean eigenvalue
/// (kg⁻¹): k1 ≥ k2 ≥ 0 (dimensionless) and the unit eigenvector e1 of k1. Depends on K alone.
struct FrictionEigen {
  float s = 0;  // 0: not computed yet (a valid K has s > 0)
  float k1 = 1, k2 = 1;
  Vec2 e1{1, 0};
};

/// The eigen-decomposition of a valid K (friction_block_det(K) > 0).
FrictionEigen friction_block_eigen(TangentMass k);

/// det K when K is finite and positive definite (a valid block), else 0.
inline float friction_block_det(TangentMass k) {
  const float det = k.a * k.c - k.b * k.b;
  if (!is_finite(k.a) || !is_finite(k.b) || !is_finite(k.c) || !(k.a > 0) || !(k.c > 0) ||
      !is_finite(det) || !(det > 0)) {
    return 0.0f;
  }
  return det;
}

namespace friction_block_detail {
// The boundary solve's constants, shared by the scalar code and its lanes
// (friction_block_wide.inl), which must stop where it stops.
// Evaluations of the secular function; Newton needs 1–4, bisection fallback has room.
inline constexpr int kMaxIterations = 20;
// |n² − 1| at which the iteration stops (|n − 1| ≤ 2^-21: 8 float ulps of 1, a few times the
// evaluation noise).
inline constexpr float kCircleTolerance2 = 9.53674316e-7f;  // 2^-20
// The boundary answer aims inside the circle by more than the tolerance and rounding, so the
// float test proves it inside.
inline constexpr float kInsideMargin = 1.0f - 9.53674316e-7f;  // 1 − 2^-20

/// The exact disk test of solve_friction_block (friction_block.cpp): x² + y² ≤ R² for the float
/// values themselves, and the float length sqrt(dot) ≤ R too.
bool inside_disk_exact(Vec2 j, float radius);
/// The boundary case of solve_friction_block (−K⁻¹v_free outside the disk); K, R, v_free valid.
FrictionBlockResult solve_boundary(const FrictionEigen& eigen, Vec2 v_free, float radius);

// The float proof of inside_disk for a boundary answer aimed 2^-20 inside:
//   fl(x² + y²) ≤ fl((1 − 2^-21)·fl(R²)).
// With u = 2^-24, fl(x² + y²) ≥ (x² + y²)(1 − u)² and fl(R²) ≤ R²(1 + u) when nothing under- or
// overflows, so x² + y² ≤ (1 − 8u)·R²·(1 + u)²/(1 − u)² < R², and the float length
// sqrt(fl(x² + y²)) ≤ R·(1 + u)·sqrt(1 − 8u) < R rounds to at most R. R² ≥ 2^-100 keeps the
// absolute error of a subnormal square (≤ 2^-150) far below the slack.
inline constexpr float kAimedBand = 1.0f - 4.76837158e-7f;  // 1 − 2^-21
inline constexpr float kAimedTestMin = 7.88860905e-31f;     // 2^-100 (R², N²·s²)

// The float pre-test of inside_disk (and of the solver's lanes): |J|² ≤ (1 − 2^-21)·R² (float)
// proves J inside, as above; |J|² ≥ (1 + 2^-20)·R² proves it outside, since then
// x² + y² ≥ (1 + 16u)·R²·(1 − u)²/(1 + u)² > R². Both need R² in [2^-100, FLT_MAX] and |J|²
// finite. Only the rest — J0 within a few ulps of the circle — takes the exact test, so the bands
// decide which path runs, never the answer. (Until 2026-12 the bands were 0.99 and 1.01: the
// same answers, but a J0 that had converged onto the circle took the slow exact test.)
inline constexpr float kInsideBand = kAimedBand;
inline constexpr float kOutsideBand = 1.0f + 9.53674316e-7f;  // 1 + 2^-20
inline constexpr float kBandTestMin = kAimedTestMin;

/// True only if J is inside the disk as inside_disk_exact decides; false: undecided.
inline bool inside_disk_aimed(Vec2 j, float radius) {
  const float len2 = j.x * j.x + j.y * j.y;  // NaN or +inf fails the comparison
  const float r2 = radius * radius;
  return r2 >= kAimedTestMin && r2 <= FLT_MAX && len2 <= kAimedBand * r2;
}

/// Same answer as inside_disk_exact, deciding by a float pre-test away from the circle.
inline bool inside_disk(Vec2 j, float radius) {
  const float len2 = j.x * j.x + j.y * j.y;  // NaN or overflow fails the range test below
  const float r2 = radius * radius;
  if (radius > 0 && r2 >= kBandTestMin && r2 <= FLT_MAX && len2 <= FLT_MAX) {
    if (len2 <= kInsideBand * r2) return true;
    if (len2 >= kOutsideBand * r2) return false;
  }
  return inside_disk_exact(j, radius);
}
}  // namespace friction_block_detail

/// solve_friction_block for a K prepared once: `det` = friction_block_det(k) (0: invalid K).
/// `eigen` caches friction_block_eigen(k) across calls with the same K: s == 0 until the first
/// answer on the circle computes it. Same bits as solve_friction_block(k, v_free, radius).
FrictionBlockResult solve_friction_block_prepared(TangentMass k, float det, FrictionEigen* eigen,
                                                  Vec2 v_free, float radius);

/// solve_friction_block_prepared with its common case inline: valid inputs and an answer inside
/// the disk. Same bits.
inline FrictionBlockResult solve_friction_block_fast(TangentMass k, float det, FrictionEigen* eigen,
                                                     Vec2 v_free, float radius) {
  if (det > 0 && radius > 0 && radius <= FLT_MAX && v_free.x >= -FLT_MAX && v_free.x <= FLT_MAX &&
      v_free.y >= -FLT_MAX && v_free.y <= FLT_MAX) {
    const Vec2 j0{(k.b * v_free.y - k.c * v_free.x) / det, (k.b * v_free.x - k.a * v_free.y) / det};
    if (friction_block_detail::inside_disk(j0, radius)) {
      FrictionBlockResult out;
      out.impulse = j0;
      out.status = FrictionBlockStatus::interior;
      return out;
    }
    // Valid inputs, J0 outside: what solve_friction_block_prepared would do, without checking
    // the inputs and computing J0 again.
    if (!(eigen->s > 0)) *eigen = friction_block_eigen(k);
    return friction_block_detail::solve_boundary(*eigen, v_free, radius);
  }
  return solve_friction_block_prepared(k, det, eigen, v_free, radius);
}

/// Solves the block; never returns a point outside the disk, never returns a non-finite value.
FrictionBlockResult solve_friction_block(TangentMass k, Vec2 v_free, float radius);

/// F(J) = ½ JᵀK J + v_freeᵀJ (J), for tests and diagnostics.
float friction_block_objective(TangentMass k, Vec2 v_free, Vec2 impulse);

/// v_free for a warm-started solve: v_current − K·J_old (the warm start: docs/physics.md, section
/// 5).
inline Vec2 friction_free_velocity(TangentMass k, Vec2 v_current, Vec2 j_old) {
  const Vec2 k_j{k.a * j_old.x + k.b * j_old.y, k.b * j_old.x + k.c * j_old.y};
  return v_current - k_j;
}

}  // namespace lockstep::sim
