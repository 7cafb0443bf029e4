// The exact 2x2 friction block (docs/physics.md, section 3).
//
// Problem. minimise F(J) = ½ JᵀK J + vᵀJ over |J| ≤ R, with K symmetric positive definite
// (kg⁻¹), v = v_free (m/s), R = μ·J_n (N·s). F is strictly convex, so the KKT point is the
// unique minimiser: either J0 = −K⁻¹v lies in the disk (λ = 0), or
//   (K + λI) J = g := −v,  |J| = R,  λ > 0.
//
// Why the eigenbasis. With K = k1·e1e1ᵀ + k2·e2e2ᵀ (k1 ≥ k2 > 0, closed form, one sqrt) the
// shifted system is diagonal: J(λ) = Σ gᵢ/(kᵢ + λ)·eᵢ with gᵢ = eᵢ·g, so |J(λ)|² is the sum
// of two squares and an evaluation costs two reciprocals and a sqrt, no 2x2 solve per λ.
//
// Scaling. Write J = R·u, g = |g|·ĝ and λ = τ·|g|/R. Then (κᵢ + τ)·uᵢ = ĝᵢ with
// κᵢ = kᵢ·R/|g|, and the circle is |u| = 1. On the boundary τ lies in
//   [max(0, 1 − κ1), max(0, 1 − κ2)] ⊂ [0, 1]
// (|u(τ)| lies between 1/(κ1 + τ) and 1/(κ2 + τ)), whatever the units or magnitudes of the
// inputs. The code never forms ĝ: with h = g/v_max (v_max the largest |entry| of v, so h has an
// entry ±1 and L = |h| is in [1, √2]) it multiplies the system by L, (aᵢ + t)·uᵢ = hᵢ with
// aᵢ = κᵢ·L = kᵢ·R/v_max and t = τ·L ∈ [max(0, L − a1), max(0, L − a2)]: the same equation
// and bracket without the normalisation's divide on the path to the first evaluation;
// λ = t·v_max/R. K is also divided by its mean eigenvalue before the eigen-decomposition (done
// once per point and step by the solver) so that no square over- or underflows for any finite
// positive definite K.
//
// Secular equation. n(t) = |u(t)| decreases in t; we solve φ(t) = 1/n(t) − 1 = 0 (Moré and
// Sorensen's form: φ is concave and nearly linear, exactly linear when k1 = k2). Newton:
//   φ' = S3/n³ with S3 = Σ uᵢ²/(aᵢ + t),   t ← t + n²(n − 1)/S3.
// From the infeasible side (n ≥ 1) concavity keeps Newton monotone and below the root, so it
// converges quadratically without overshooting. The start is the Jensen bound of the root,
// t0 = L − Σ hᵢ²aᵢ/L² (convexity of 1/x² gives n(t0) ≥ 1), clamped into the bracket: exact when h
// is an eigenvector and never left of lo. pyramid3d: 2.0 evaluations per solve (2.4 from lo);
// warm starts from the previous Gauss-Seidel pass were measured and did worse (the root moves
// too much between passes, often past the bracket).
//
// Safeguard. The bracket [lo, hi] (lo infeasible side n > 1, hi feasible side n ≤ 1) is updated
// at every evaluation; a Newton step below lo (or not finite) is replaced by bisection, one past
// hi (possible only by rounding, the root then being at hi) by hi. The iteration count is capped
// and every stopping test is a float comparison, so the same inputs give the same bits on every
// IEEE-754 target. The iteration stops at |n² − 1| ≤ 2^-20 (|n − 1| ≤ 2^-21), tested before the
// square root, which is then taken only for a Newton step. The answer is J = R·(1 − 2^-20)·u:
// u solves the shifted system exactly (up to rounding), so the stationarity residual
// (K + λI)J − g is 2^-20·g, and |J| is within 2^-21 + 2^-20 of R, aimed inside. (If the bracket
// is exhausted before convergence, J = R·(1 − 2^-20)·u/n.) A float test with a margin proves the
// aimed J inside the disk exactly (inside_disk_aimed); only when it cannot (R or J tiny or huge)
// does the exact test run (inside_disk) and pull J inwards by a few ulps if rounding put it
// outside; J = 0 is the last resort.
#include "solver/friction_block.h"

#include <cfloat>
#include <cmath>

namespace lockstep::sim {
namespace {

using friction_block_detail::kCircleTolerance2;
using friction_block_detail::kInsideMargin;
using friction_block_detail::kMaxIterations;
constexpr float kShrink = 1.0f - 9.53674316e-7f;  // 1 − 2^-20 per retry
constexpr int kShrinkRetries = 3;

float abs_float(float x) {
  return x < 0 ? -x : x;
}

}  // namespace

namespace friction_block_detail {

// Is x² + y² ≤ R² for the float values themselves (exact), and is the float length computed as
// everyone computes it (math.h `length`: sqrt(dot)) ≤ R too? Products of two floats are exact in
// double (48-bit significands, exponents far inside double's range), and IEEE double + − × is
// correctly rounded on every target, so this comparison is exact and portable: a rounded sum below
// R² (or above) decides, and a tie is settled by the exact error term of the sum (Knuth's TwoSum).
bool inside_disk_exact(Vec2 j, float radius) {
  if (!is_finite(j.x) || !is_finite(j.y)) return false;
  const double x2 = static_cast<double>(j.x) * static_cast<double>(j.x);
  const double y2 = static_cast<double>(j.y) * static_cast<double>(j.y);
  const double r2 = static_cast<double>(radius) * static_cast<double>(radius);
  const double sum = x2 + y2;
  if (sum > r2) return false;
  if (sum == r2) {
    const double y_part = sum - x2;
    const double error = (x2 - (sum - y_part)) + (y2 - y_part);  // x2 + y2 = sum + error
    if (error > 0) return false;
  }
  // The float length is meaningful only while |J|² is a normal float (|J| in ~[1e-19, 1e19]
  // N·s); outside that the exact test alone decides.
  const float len2 = dot(j, j);
  if (!(len2 >= FLT_MIN && len2 <= FLT_MAX)) return true;
  return std::sqrt(len2) <= radius;
}

FrictionBlockResult solve_boundary(const FrictionEigen& eig, Vec2 v_free, float radius) {
  FrictionBlockResult out;
  out.status = FrictionBlockStatus::boundary;

  // g = −v scaled by its largest entry (no square of a large or tiny number): h = g/v_max, with
  // L = |h| in [1, √2]; in the eigenbasis h1 = e1·h, h2 = e2·h.
  const float v_max =
      abs_float(v_free.x) < abs_float(v_free.y) ? abs_float(v_free.y) : abs_float(v_free.x);
  if (!(v_max > 0)) {  // J0 = 0 was interior; unreachable, kept for safety
    out.status = FrictionBlockStatus::interior;
    return out;
  }
  const Vec2 h{-v_free.x / v_max, -v_free.y / v_max};  // largest entry ±1
  const float len2 = dot(h, h);
  const float len = std::sqrt(len2);
  const Vec2 e1 = eig.e1;
  const Vec2 e2{-e1.y, e1.x};
  const float h1 = dot(e1, h), h2 = dot(e2, h);
  // aᵢ = κᵢ·L = kᵢ·s·R/v_max and t = τ·L: (κᵢ + τ)uᵢ = ĝᵢ is (aᵢ + t)uᵢ = hᵢ.
  const float sigma = eig.s * (radius / v_max);  // kg⁻¹ · N·s / (m/s): dimensionless
  const float a1 = eig.k1 * sigma, a2 = eig.k2 * sigma;

  float lo = len - a1;  // n(lo) ≥ 1 (NaN-safe comparisons: NaN → 0)
  if (!(lo > 0)) lo = 0;
  float hi = len - a2;  // n(hi) ≤ 1
  if (!(hi > 0)) hi = 0;
  if (hi < lo) hi = lo;

  // Start at the Jensen bound of the root: by convexity of 1/x², with weights hᵢ²/L² summing to 1,
  // n(t)² = Σ hᵢ²/(aᵢ + t)² ≥ L²/(ā + t)² for ā = Σ hᵢ²aᵢ/L², so n(L − ā) ≥ 1: the infeasible
  // side, from which Newton is monotone. Exact when h is an eigenvector (a box sliding along its
  // principal axes), and never below lo (ā ≤ a1).
  const float jensen = len - (h1 * h1 * a1 + h2 * h2 * a2) / len2;
  float t = jensen > lo ? (jensen < hi ? jensen : hi) : lo;
  // u(t) in the eigenbasis and n² = |u(t)|², always for the current t; `finite` false means u(t)
  // is unbounded: a2 + t == 0, which happens only at t = 0 for a2 == 0 (K singular at float
  // precision, the far infeasible side).
  float p1 = 0, p2 = 0, n2 = 0;
  bool finite = false, converged = false;
  for (int iteration = 0;; ++iteration) {
    const float d1 = a1 + t, d2 = a2 + t;
    float q1 = 0, q2 = 0;
    finite = d1 > 0 && d2 > 0;
    if (finite) {
      q1 = 1.0f / d1;
      q2 = 1.0f / d2;
      p1 = h1 * q1;
      p2 = h2 * q2;
      n2 = p1 * p1 + p2 * p2;
      finite = n2 <= FLT_MAX;
    }
    // |n² − 1| ≤ 2^-20 puts n within 2^-21 of 1, without waiting for the square root.
    converged = finite && abs_float(n2 - 1.0f) <= kCircleTolerance2;
    if (converged) break;
    if (iteration + 1 == kMaxIterations) break;
    if (!finite || n2 > 1.0f) {
      lo = t;
    } else {
      hi = t;
    }
    float next = 0.5f * lo + 0.5f * hi;  // bisection unless Newton stays in the bracket
    const float s3 = finite ? p1 * p1 * q1 + p2 * p2 * q2 : 0.0f;
    if (s3 > 0) {
      const float n = std::sqrt(n2);
      const float newton = t + n2 * (n - 1.0f) / s3;
      // Past hi only by rounding (from the left Newton stays below the root, which is ≤ hi):
      // the root is at hi then, so go there rather than halving towards it many times.
      if (newton > lo) next = newton < hi ? newton : hi;
    }
    if (next == t) break;  // bracket exhausted at float resolution
    t = next;
  }

  // Still unbounded after the iterations: K is singular at float precision (k2/k1 below ~1e-45)
  // and passed the det > 0 test by rounding; treat it as the invalid mass it numerically is.
  if (!finite) {
    out.status = FrictionBlockStatus::invalid_mass;
    return out;
  }

  // t = 0 with n ≤ 1 is an interior answer after all (J0 overflowed in its first evaluation):
  // keep u as it is. Converged, |u| is within 2^-21 of 1 and J = R·u aimed 2^-20 inside; else
  // (bracket exhausted) J = R·u/|u| aimed the same (|u| == 0 there only by underflow: J = 0).
  const Vec2 u = p1 * e1 + p2 * e2;  // |u| = n
  const bool on_circle = t > 0 || n2 > 1.0f;
  float scale = radius;
  if (on_circle) {
    if (converged) {
      scale = radius * kInsideMargin;
    } else {
      const float n = std::sqrt(n2);
      scale = n > 0 ? (radius / n) * kInsideMargin : 0.0f;
    }
  }
  Vec2 j = scale * u;
  // Aimed 2^-20 inside, J passes the float proof unless R is tiny or huge (or the bracket was
  // exhausted in the denormal range); the exact test and the shrinking run only then.
  if (!inside_disk_aimed(j, radius)) {
    bool inside = inside_disk(j, radius);
    for (int retry = 0; retry < kShrinkRetries && !inside; ++retry) {
      j = kShrink * j;
      inside = inside_disk(j, radius);
    }
    if (!inside) j = Vec2{};  // rounding in the denormal range: give up safely
  }
  out.impulse = j;

  const float lambda = t * (v_max / radius);  // τ·|g|/R = (t/L)·(v_max·L)/R
  out.lambda = is_finite(lambda) ? lambda : FLT_MAX;
  if (!(out.lambda > 0)) {
    out.lambda = 0;
    out.status = FrictionBlockStatus::interior;
  }
  return out;
}

}  // namespace friction_block_detail

// Symmetric 2x2 eigen-decomposition of K / s (s = mean eigenvalue): eigenvalues k1 ≥ k2 ≥ 0
// (dimensionless, k1 + k2 ≈ 2) and the unit eigenvector e1 of k1 (e2 = perp(e1)). A function of
// K alone: the solver computes it once per point and step (prepare), not once per iteration.
FrictionEigen friction_block_eigen(TangentMass k) {
  const float s = 0.5f * k.a + 0.5f * k.c;  // mean eigenvalue (kg⁻¹), > 0 since det > 0
  const float a = k.a / s, b = k.b / s, c = k.c / s;  // a + c ≈ 2, |b| < 1
  const float half_diff = 0.5f * (a - c);
  const float r = std::sqrt(half_diff * half_diff + b * b);
  FrictionEigen out;
  out.s = s;
  out.k1 = 0.5f * (a + c) + r;
  // det / k1 rather than mean − r, which cancels when K is ill-conditioned.
  out.k2 = (a * c - b * b) / out.k1;
  if (!(out.k2 > 0)) out.k2 = 0;  // K singular to float precision; the bracket copes with 0
  // Eigenvector from the row without cancellation, (hd + r, b) or (b, r − hd), divided by its
  // larger entry (≥ r ≥ |b|) so that normalising it can neither over- nor underflow.
  Vec2 e;
  if (half_diff >= 0) {
    const float p = half_diff + r;
    e = {1, p > 0 ? b / p : 0.0f};  // p == 0 only for K = s·I: any basis is an eigenbasis
  } else {
    e = {b / (r - half_diff), 1};
  }
  const float inv_len = 1.0f / std::sqrt(dot(e, e));
  out.e1 = inv_len * e;
  return out;
}

FrictionBlockResult solve_friction_block_prepared(TangentMass k, float det, FrictionEigen* eigen,
                                                  Vec2 v_free, float radius) {
  FrictionBlockResult out;  // zero impulse, zero multiplier
  if (!(det > 0)) {
    out.status = FrictionBlockStatus::invalid_mass;
    return out;
  }
  if (!is_finite(radius) || radius < 0) {
    out.status = FrictionBlockStatus::invalid_radius;
    return out;
  }
  if (!is_finite(v_free.x) || !is_finite(v_free.y)) {
    out.status = FrictionBlockStatus::invalid_velocity;
    return out;
  }
  if (radius == 0) {
    out.status = FrictionBlockStatus::zero_radius;
    return out;
  }
  // Unconstrained minimiser J0 = −K⁻¹v; overflow makes it non-finite, which sends it on.
  const Vec2 j0{(k.b * v_free.y - k.c * v_free.x) / det, (k.b * v_free.x - k.a * v_free.y) / det};
  if (friction_block_detail::inside_disk(j0, radius)) {
    out.impulse = j0;
    out.status = FrictionBlockStatus::interior;
    return out;
  }
  if (!(eigen->s > 0)) *eigen = friction_block_eigen(k);
  return friction_block_detail::solve_boundary(*eigen, v_free, radius);
}

FrictionBlockResult solve_friction_block(TangentMass k, Vec2 v_free, float radius) {
  FrictionEigen eigen;  // computed only if the answer is on the circle
  return solve_friction_block_prepared(k, friction_block_det(k), &eigen, v_free, radius);
}

float friction_block_objective(TangentMass k, Vec2 v_free, Vec2 impulse) {
  const Vec2 k_j{k.a * impulse.x + k.b * impulse.y, k.b * impulse.x + k.c * impulse.y};
  return 0.5f * dot(impulse, k_j) + dot(v_free, impulse);
}

}  // namespace lockstep::sim
