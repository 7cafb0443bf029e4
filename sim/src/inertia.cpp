// Inertia tensors (inertia.h). Jacobi rotations in a fixed sweep order with strict comparisons,
// and only +, −, ×, ÷ and sqrt: the same bits on every target.
#include "inertia.h"

#include <cmath>

#include "collide_internal.h"

namespace lockstep::sim::inertia_detail {

using collide_detail::abs_f;

void add_outer(Sym3* m, Vec3 u, Vec3 v, float scale) {
  const float uu[3] = {u.x, u.y, u.z}, vv[3] = {v.x, v.y, v.z};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      m->a[i][j] += scale * uu[i] * vv[j];
}

void jacobi_eigen(Sym3 m, Vec3* values, Mat3* vectors) {
  float v[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
  for (int sweep = 0; sweep < 16; ++sweep) {
    bool rotated = false;
    for (int p = 0; p < 2; ++p) {
      for (int q = p + 1; q < 3; ++q) {
        const float apq = m.a[p][q];
        const float scale = abs_f(m.a[p][p]) + abs_f(m.a[q][q]);
        if (!(abs_f(apq) > 1.0e-6f * scale)) continue;
        rotated = true;
        // The rotation angle θ with tan 2θ = 2·apq / (aqq − app), by the stable root of
        // t² + 2τt − 1 = 0.
        const float tau = (m.a[q][q] - m.a[p][p]) / (2.0f * apq);
        const float t = (tau >= 0.0f ? 1.0f : -1.0f) / (abs_f(tau) + std::sqrt(1.0f + tau * tau));
        const float c = 1.0f / std::sqrt(1.0f + t * t);
        const float s = t * c;
        for (int k = 0; k < 3; ++k) {
          const float mkp = m.a[k][p], mkq = m.a[k][q];
          m.a[k][p] = c * mkp - s * mkq;
          m.a[k][q] = s * mkp + c * mkq;
        }
        for (int k = 0; k < 3; ++k) {
          const float mpk = m.a[p][k], mqk = m.a[q][k];
          m.a[p][k] = c * mpk - s * mqk;
          m.a[q][k] = s * mpk + c * mqk;
        }
        for (int k = 0; k < 3; ++k) {
          const float vkp = v[k][p], vkq = v[k][q];
          v[k][p] = c * vkp - s * vkq;
          v[k][q] = s * vkp + c * vkq;
        }
      }
    }
    if (!rotated) break;
  }
  *values = Vec3{m.a[0][0], m.a[1][1], m.a[2][2]};
  *vectors =
      Mat3{{v[0][0], v[1][0], v[2][0]}, {v[0][1], v[1][1], v[2][1]}, {v[0][2], v[1][2], v[2][2]}};
}

Quat quat_from_mat3(const Mat3& r) {
  const float m00 = r.c0.x, m11 = r.c1.y, m22 = r.c2.z;
  const float trace = m00 + m11 + m22;
  Quat q;
  if (trace > 0.0f) {
    const float s = 2.0f * std::sqrt(1.0f + trace);
    q = Quat{(r.c1.z - r.c2.y) / s, (r.c2.x - r.c0.z) / s, (r.c0.y - r.c1.x) / s, 0.25f * s};
  } else if (m00 > m11 && m00 > m22) {
    const float s = 2.0f * std::sqrt(1.0f + m00 - m11 - m22);
    q = Quat{0.25f * s, (r.c1.x + r.c0.y) / s, (r.c2.x + r.c0.z) / s, (r.c1.z - r.c2.y) / s};
  } else if (m11 > m22) {
    const float s = 2.0f * std::sqrt(1.0f + m11 - m00 - m22);
    q = Quat{(r.c1.x + r.c0.y) / s, 0.25f * s, (r.c2.y + r.c1.z) / s, (r.c2.x - r.c0.z) / s};
  } else {
    const float s = 2.0f * std::sqrt(1.0f + m22 - m00 - m11);
    q = Quat{(r.c2.x + r.c0.z) / s, (r.c2.y + r.c1.z) / s, 0.25f * s, (r.c0.y - r.c1.x) / s};
  }
  return normalize(q);
}

bool principal_axes(const Sym3& inertia, Vec3* moments, Quat* frame) {
  Vec3 values;
  Mat3 axes;
  jacobi_eigen(inertia, &values, &axes);
  if (!(values.x > 0.0f && values.y > 0.0f && values.z > 0.0f)) return false;
  if (dot(cross(axes.c0, axes.c1), axes.c2) < 0.0f) axes.c2 = -axes.c2;
  *moments = values;
  *frame = quat_from_mat3(axes);
  return true;
}

}  // namespace lockstep::sim::inertia_detail
