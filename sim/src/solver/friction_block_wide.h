// The boundary case of the friction block (friction_block.h) for four or eight points at once, one
// per lane of wide::W4 (W8): the contact solver's lanes (one manifold per lane). Every
// lane gets the bits friction_block_detail::solve_boundary gives it.
#pragma once

#include "simd/wide_float.h"

namespace lockstep::sim {

/// friction_block_eigen results of four (eight) points, one per lane (FrictionEigen's fields).
template <class W>
struct FrictionEigenWide {
  W s, k1, k2, e1x, e1y;
};
using FrictionEigenW4 = FrictionEigenWide<wide::W4>;
using FrictionEigenW8 = FrictionEigenWide<wide::W8>;

/// For every lane set in `lanes`: exactly what friction_block_detail::solve_boundary(eigen_i,
/// {vx_i, vy_i}, radius_i) returns for that lane — the impulse bits in *jx, *jy, and whether it
/// was solved (interior or boundary: bit set in the returned mask; invalid_mass: clear, J = 0).
/// Lanes not in `lanes` are don't-care: any contents (NaN, inf, 0) are safe, their output is not.
wide::M4 solve_boundary_wide(const FrictionEigenW4& eigen, wide::W4 vx, wide::W4 vy,
                             wide::W4 radius, wide::M4 lanes, wide::W4* jx, wide::W4* jy);
/// The same for eight lanes (two W4 in flight: the Newton loop is latency-bound, so eight lanes
/// cost little more than four).
wide::M8 solve_boundary_wide(const FrictionEigenW8& eigen, wide::W8 vx, wide::W8 vy,
                             wide::W8 radius, wide::M8 lanes, wide::W8* jx, wide::W8* jy);

}  // namespace lockstep::sim
