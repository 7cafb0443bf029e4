// Inertia tensors: a symmetric 3×3 matrix, its principal axes by Jacobi rotations, and the
// quaternion of the axes. Shared by the hull builder and the compound builder.
#pragma once

#include "lockstep/sim/math.h"

namespace lockstep::sim::inertia_detail {

/// A symmetric 3×3 matrix's entries, row-major.
struct Sym3 {
  float a[3][3] = {};
};

/// m += scale · u vᵀ.
void add_outer(Sym3* m, Vec3 u, Vec3 v, float scale);

/// Cyclic Jacobi: rotates the off-diagonal entries to zero. Writes the eigenvalues and the
/// eigenvectors as the columns of *vectors. Entries smaller than a millionth of the diagonal are
/// left, so a tensor that is diagonal up to rounding keeps the identity frame.
void jacobi_eigen(Sym3 m, Vec3* values, Mat3* vectors);

/// The unit quaternion of a rotation matrix (columns orthonormal, determinant +1).
Quat quat_from_mat3(const Mat3& r);

/// The principal moments and frame of an inertia tensor, the frame right-handed: false when a
/// moment is not positive.
bool principal_axes(const Sym3& inertia, Vec3* moments, Quat* frame);

}  // namespace lockstep::sim::inertia_detail
