// friction_block_detail::solve_boundary (friction_block.cpp) for four or eight points at once: the
// exported functions of friction_block_wide.h, on the template of friction_block_wide.inl (which
// says why every lane gets the scalar function's bits). The template has the same name; the
// explicit <W> in the calls below picks it (a plain call would pick these functions themselves).
#include "solver/friction_block_wide.h"

#include <cfloat>

#include "solver/friction_block.h"

namespace lockstep::sim {
namespace {

#include "solver/friction_block_wide.inl"

}  // namespace

wide::M4 solve_boundary_wide(const FrictionEigenW4& eigen, wide::W4 vx, wide::W4 vy,
                             wide::W4 radius, wide::M4 lanes, wide::W4* jx, wide::W4* jy) {
  return solve_boundary_wide<wide::W4>(eigen, vx, vy, radius, lanes, jx, jy);
}

wide::M8 solve_boundary_wide(const FrictionEigenW8& eigen, wide::W8 vx, wide::W8 vy,
                             wide::W8 radius, wide::M8 lanes, wide::W8* jx, wide::W8* jy) {
  return solve_boundary_wide<wide::W8>(eigen, vx, vy, radius, lanes, jx, jy);
}

}  // namespace lockstep::sim
