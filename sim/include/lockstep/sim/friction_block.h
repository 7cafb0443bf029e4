// The exact 2x2 friction block of one contact point (the friction-block study, seed 000).
//
//   minimise  F(J) = ½ JᵀK J + v_freeᵀJ   subject to |J| ≤ R = μ·J_n
//
// K is the symmetric tangent inverse-mass matrix (kg⁻¹), v_free the tangent relative velocity
// without this point's accumulated friction (m/s), J the total tangent impulse (N·s). Inside the
// disk the unconstrained minimiser −K⁻¹v_free is the answer; otherwise (K + λI)J = −v_free with
// |J| = R for the unique multiplier λ ≥ 0. Radial clamping of the unconstrained impulse is a
// different (and worse) answer and is never used.
#pragma once

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

/// Solves the block; never returns a point outside the disk, never returns a non-finite value.
FrictionBlockResult solve_friction_block(TangentMass k, Vec2 v_free, float radius);

/// F(J) = ½ JᵀK J + v_freeᵀJ (J), for tests and diagnostics.
float friction_block_objective(TangentMass k, Vec2 v_free, Vec2 impulse);

/// v_free for a warm-started solve: v_current − K·J_old (seed 000, "热启动").
Vec2 friction_free_velocity(TangentMass k, Vec2 v_current, Vec2 j_old);

}  // namespace lockstep::sim
