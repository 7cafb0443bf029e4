// friction_block_detail::solve_boundary for four, eight or sixteen points at once: the template
// solve_boundary_wide<W> (W = wide::W4, W8 or W16). No include guard: the body of an anonymous
// namespace, included by friction_block_wide.cpp (the W4 and W8 functions of
// friction_block_wide.h), contact_lanes.cpp (the passes) and, on x86, contact_lanes_kernel.inl
// (`wide` = wide_avx or wide_avx512, under contact_lanes_avx.cpp's target pragmas). The includer
// provides <cfloat>, friction_block_wide.h and solver/friction_block.h.
//
// Why. The contact solver solves eight manifolds in lock step (kLaneCount, contact_lanes.h), one
// per SIMD lane, and about half of pyramid3d's friction blocks end on the circle, where the scalar
// secular-equation solve was the largest single cost of the step (bench/README.md). Here one
// instruction stream serves eight points.
//
// Exactness. Every lane performs the scalar code's float operations, in its order and with its
// operands (wide::W4 is one IEEE-754 operation per lane; -ffp-contract=off as everywhere in sim),
// so each value a lane computes has the scalar value's bits. Branches become per-lane selects of
// values computed on both sides: a select takes no rounding, and a value computed for a lane that
// the scalar code would not compute (a Newton step when s3 ≤ 0, 1/d for d ≤ 0) is never selected
// into its state. The Newton/bisection loop runs while any lane iterates; a lane that stops
// (converged, `next == t`) keeps its t from then on (the `run` mask), and as one evaluation is a
// function of t alone, its u, n² and flags stay the bits the scalar code breaks with. All lanes
// share the iteration counter, so the cap stops them where the scalar code does. The rare tail — an
// aimed answer the float proof cannot place inside (R or J tiny or huge) — calls the scalar
// function for that lane, which is exact by construction.

// The scalar solve's constants (friction_block.h), so both stop at the same iteration.
using friction_block_detail::kCircleTolerance2;
using friction_block_detail::kInsideMargin;
using friction_block_detail::kMaxIterations;

// One body for every width: W is wide::W4, W8 (two W4: two dependency chains in flight) or W16
// (the AVX kernel's two batches side by side).
template <class W>
typename wide::Lanes<W>::Mask solve_boundary_wide(const FrictionEigenWide<W>& eig, W vx, W vy,
                                                  W radius, typename wide::Lanes<W>::Mask lanes,
                                                  W* jx, W* jy) {
  using L = wide::Lanes<W>;
  using Mask = typename L::Mask;
  const W zero = L::splat(0.0f);
  const W one = L::splat(1.0f);

  const W abs_vx = wide::abs_as_scalar(vx), abs_vy = wide::abs_as_scalar(vy);
  const W v_max = select(abs_vx < abs_vy, abs_vy, abs_vx);
  // v_max ≤ 0 (or NaN): the scalar code's unreachable interior answer J = 0.
  const Mask started = lanes & (v_max > zero);

  const W hx = -vx / v_max, hy = -vy / v_max;
  const W len2 = hx * hx + hy * hy;
  const W len = wide::sqrt(len2);
  const W e1x = eig.e1x, e1y = eig.e1y;
  const W e2x = -e1y, e2y = e1x;
  const W h1 = e1x * hx + e1y * hy, h2 = e2x * hx + e2y * hy;
  const W sigma = eig.s * (radius / v_max);
  const W a1 = eig.k1 * sigma, a2 = eig.k2 * sigma;

  W lo = len - a1;
  lo = select(lo > zero, lo, zero);
  W hi = len - a2;
  hi = select(hi > zero, hi, zero);
  hi = select(hi < lo, lo, hi);

  const W jensen = len - (h1 * h1 * a1 + h2 * h2 * a2) / len2;
  W t = select(jensen > lo, select(jensen < hi, jensen, hi), lo);

  const W half = L::splat(0.5f);
  const W flt_max = L::splat(FLT_MAX);
  const W tolerance = L::splat(kCircleTolerance2), minus_tolerance = -tolerance;
  // Only t is frozen when a lane stops: the evaluation is a function of t alone, so evaluating a
  // stopped lane again gives its final u, n², `finite` and `converged` the same bits, and lo, hi
  // are not used after the loop. (Where a denominator is ≤ 0 the scalar code keeps the previous
  // u; `finite` is false there, and u of a lane that ends non-finite is never used.)
  W p1, p2, n2;
  Mask finite, converged;
  Mask run = started;
  for (int iteration = 0;; ++iteration) {
    const W d1 = a1 + t, d2 = a2 + t;
    const W q1 = one / d1, q2 = one / d2;
    p1 = h1 * q1;
    p2 = h2 * q2;
    n2 = p1 * p1 + p2 * p2;
    finite = (d1 > zero) & (d2 > zero) & (n2 <= flt_max);
    // |n² − 1| ≤ tol as two comparisons: the same answer for every n², NaN included.
    const W n2_error = n2 - one;
    converged = finite & (n2_error <= tolerance) & (n2_error >= minus_tolerance);
    run = and_not(run, converged);
    if (iteration + 1 == kMaxIterations || !wide::any(run)) break;
    const Mask feasible = and_not(finite, n2 > one);  // the scalar code's else branch
    lo = select(feasible, lo, t);
    hi = select(feasible, t, hi);
    W next = half * lo + half * hi;
    // s3 is 0 where u is not finite: no Newton step there (the quotient is not used).
    const W s3 = p1 * p1 * q1 + p2 * p2 * q2;
    const W n = wide::sqrt(n2);
    const W newton = t + n2 * (n - one) / s3;
    const Mask take_newton = finite & (s3 > zero) & (newton > lo);
    next = select(take_newton, select(newton < hi, newton, hi), next);
    run = and_not(run, next == t);
    if (!wide::any(run)) break;
    t = select(run, next, t);
  }

  // Unbounded after the iterations: invalid_mass (J = 0, not solved), as the scalar code.
  const Mask bounded = started & finite;
  const W ux = p1 * e1x + p2 * e2x, uy = p1 * e1y + p2 * e2y;
  const Mask on_circle = (t > zero) | (n2 > one);
  const W margin = L::splat(kInsideMargin);
  W scale = select(on_circle, radius * margin, radius);
  const Mask exhausted = and_not(bounded & on_circle, converged);  // rare: the bracket ran out
  if (wide::any(exhausted)) {
    const W n = wide::sqrt(n2);
    scale = select(exhausted, select(n > zero, (radius / n) * margin, zero), scale);
  }
  W out_x = select(bounded, scale * ux, zero);
  W out_y = select(bounded, scale * uy, zero);

  // friction_block_detail::inside_disk_aimed per lane.
  const W j_len2 = out_x * out_x + out_y * out_y;
  const W r2 = radius * radius;
  const Mask proven = (r2 >= L::splat(friction_block_detail::kAimedTestMin)) & (r2 <= flt_max) &
                      (j_len2 <= L::splat(friction_block_detail::kAimedBand) * r2);
  Mask solved = lanes & (~started | finite);
  const int rare = wide::bits(and_not(bounded, proven));
  if (rare != 0) {
    // Rare: the exact disk test and the shrink retries; the scalar function for those lanes.
    alignas(16) float f[9][L::kCount];
    const W rows[9] = {eig.s, eig.k1, eig.k2, eig.e1x, eig.e1y, vx, vy, radius, out_x};
    for (int r = 0; r < 9; ++r)
      wide::store(f[r], rows[r]);
    alignas(16) float fy[L::kCount];
    wide::store(fy, out_y);
    int solved_bits = wide::bits(solved);
    for (int i = 0; i < L::kCount; ++i) {
      if (((rare >> i) & 1) == 0) continue;
      FrictionEigen e;
      e.s = f[0][i];
      e.k1 = f[1][i];
      e.k2 = f[2][i];
      e.e1 = Vec2{f[3][i], f[4][i]};
      const FrictionBlockResult r =
          friction_block_detail::solve_boundary(e, Vec2{f[5][i], f[6][i]}, f[7][i]);
      f[8][i] = r.impulse.x;
      fy[i] = r.impulse.y;
      solved_bits = r.solved() ? solved_bits | (1 << i) : solved_bits & ~(1 << i);
    }
    out_x = L::load(f[8]);
    out_y = L::load(fy);
    solved = L::mask(solved_bits);
  }
  *jx = out_x;
  *jy = out_y;
  return solved;
}
