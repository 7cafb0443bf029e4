// Small float vector math for the simulation.
//
// Determinism: every function here uses only + - * / sqrt and comparisons, written as
// explicit left-to-right expressions. The sim target is compiled with -ffp-contract=off (a
// PUBLIC flag, so every consumer inlining these gets it too), so no FMA contraction can change
// a rounding. Do not add libm transcendentals here (see docs/determinism.md).
#pragma once

#include <cmath>
#include <cstdint>

namespace lockstep::sim {

struct Vec2 {
  float x = 0, y = 0;
};

struct Vec3 {
  float x = 0, y = 0, z = 0;
};

/// Unit quaternion (x, y, z vector part; w scalar part).
struct Quat {
  float x = 0, y = 0, z = 0, w = 1;
};

/// 3x3 matrix stored as three columns.
struct Mat3 {
  Vec3 c0{1, 0, 0}, c1{0, 1, 0}, c2{0, 0, 1};
};

/// Rigid transform: rotate by q, then translate by p.
struct Transform {
  Vec3 p{};
  Quat q{};
};

// ---- Vec2 -------------------------------------------------------------------------------------
constexpr Vec2 operator+(Vec2 a, Vec2 b) {
  return {a.x + b.x, a.y + b.y};
}
constexpr Vec2 operator-(Vec2 a, Vec2 b) {
  return {a.x - b.x, a.y - b.y};
}
constexpr Vec2 operator*(float s, Vec2 a) {
  return {s * a.x, s * a.y};
}
constexpr float dot(Vec2 a, Vec2 b) {
  return a.x * b.x + a.y * b.y;
}
inline float length(Vec2 a) {
  return std::sqrt(dot(a, a));
}

// ---- Vec3 -------------------------------------------------------------------------------------
constexpr Vec3 operator+(Vec3 a, Vec3 b) {
  return {a.x + b.x, a.y + b.y, a.z + b.z};
}
constexpr Vec3 operator-(Vec3 a, Vec3 b) {
  return {a.x - b.x, a.y - b.y, a.z - b.z};
}
constexpr Vec3 operator-(Vec3 a) {
  return {-a.x, -a.y, -a.z};
}
constexpr Vec3 operator*(float s, Vec3 a) {
  return {s * a.x, s * a.y, s * a.z};
}
constexpr Vec3 operator*(Vec3 a, float s) {
  return {a.x * s, a.y * s, a.z * s};
}
constexpr Vec3& operator+=(Vec3& a, Vec3 b) {
  return a = a + b;
}
constexpr Vec3& operator-=(Vec3& a, Vec3 b) {
  return a = a - b;
}
constexpr bool operator==(Vec3 a, Vec3 b) {
  return a.x == b.x && a.y == b.y && a.z == b.z;
}

constexpr float dot(Vec3 a, Vec3 b) {
  return a.x * b.x + a.y * b.y + a.z * b.z;
}
constexpr Vec3 cross(Vec3 a, Vec3 b) {
  return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
}
constexpr float length_squared(Vec3 a) {
  return dot(a, a);
}
inline float length(Vec3 a) {
  return std::sqrt(dot(a, a));
}
constexpr Vec3 mul_elements(Vec3 a, Vec3 b) {
  return {a.x * b.x, a.y * b.y, a.z * b.z};
}
constexpr Vec3 min_elements(Vec3 a, Vec3 b) {
  return {a.x < b.x ? a.x : b.x, a.y < b.y ? a.y : b.y, a.z < b.z ? a.z : b.z};
}
constexpr Vec3 max_elements(Vec3 a, Vec3 b) {
  return {a.x > b.x ? a.x : b.x, a.y > b.y ? a.y : b.y, a.z > b.z ? a.z : b.z};
}
constexpr Vec3 abs_elements(Vec3 a) {
  return {a.x < 0 ? -a.x : a.x, a.y < 0 ? -a.y : a.y, a.z < 0 ? -a.z : a.z};
}
constexpr float element(Vec3 a, int i) {
  return i == 0 ? a.x : (i == 1 ? a.y : a.z);
}

/// a normalized; returns `fallback` when |a| is zero or not finite.
inline Vec3 normalize_or(Vec3 a, Vec3 fallback) {
  float len = length(a);
  if (!(len > 1e-20f) || !std::isfinite(len)) return fallback;
  float inv = 1.0f / len;
  return a * inv;
}

inline bool is_finite(float f) {
  return std::isfinite(f);
}
inline bool is_finite(Vec3 a) {
  return std::isfinite(a.x) && std::isfinite(a.y) && std::isfinite(a.z);
}

/// Two unit vectors t1, t2 with (t1, t2, n) right-handed and orthonormal; n must be unit.
/// Branch on the smallest component so the basis is well conditioned (no trig needed).
inline void tangent_basis(Vec3 n, Vec3* t1, Vec3* t2) {
  Vec3 a = abs_elements(n);
  Vec3 axis = (a.x <= a.y && a.x <= a.z) ? Vec3{1, 0, 0}
              : (a.y <= a.z)             ? Vec3{0, 1, 0}
                                         : Vec3{0, 0, 1};
  *t1 = normalize_or(cross(axis, n), Vec3{1, 0, 0});
  *t2 = cross(n, *t1);
}

// ---- Quat -------------------------------------------------------------------------------------
// Every term is added, a subtracted one as the product of a negated factor (the same bits: −x is
// exact, and s + (−p) is s − p): lanes that mix + and − let g++ 12's vectorizer at
// -march=x86-64-v3 fuse them into vfmsubadd despite -ffp-contract=off, which rounds once where
// every other target rounds twice (the determinism matrix caught it).
constexpr Quat operator*(Quat a, Quat b) {
  return {a.w * b.x + a.x * b.w + a.y * b.z + (-a.z) * b.y,
          a.w * b.y + (-a.x) * b.z + a.y * b.w + a.z * b.x,
          a.w * b.z + a.x * b.y + (-a.y) * b.x + a.z * b.w,
          a.w * b.w + (-a.x) * b.x + (-a.y) * b.y + (-a.z) * b.z};
}
constexpr Quat conjugate(Quat q) {
  return {-q.x, -q.y, -q.z, q.w};
}
constexpr float dot(Quat a, Quat b) {
  return a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w;
}
inline bool is_finite(Quat q) {
  return std::isfinite(q.x) && std::isfinite(q.y) && std::isfinite(q.z) && std::isfinite(q.w);
}

/// q normalized; identity when |q| is zero or not finite.
inline Quat normalize(Quat q) {
  float len = std::sqrt(dot(q, q));
  if (!(len > 1e-20f) || !std::isfinite(len)) return Quat{};
  float inv = 1.0f / len;
  return {q.x * inv, q.y * inv, q.z * inv, q.w * inv};
}

/// Rotate v by unit quaternion q: v + 2w(u×v) + 2u×(u×v).
constexpr Vec3 rotate(Quat q, Vec3 v) {
  Vec3 u{q.x, q.y, q.z};
  Vec3 t = 2.0f * cross(u, v);
  return v + q.w * t + cross(u, t);
}
constexpr Vec3 inv_rotate(Quat q, Vec3 v) {
  return rotate(conjugate(q), v);
}

/// Rotation of `half_angle_cos`/`half_angle_sin` about a unit axis, for callers that already
/// have the half-angle sine and cosine (no trig in the sim).
constexpr Quat quat_from_axis_half_angle(Vec3 axis, float half_cos, float half_sin) {
  return {axis.x * half_sin, axis.y * half_sin, axis.z * half_sin, half_cos};
}

// ---- Mat3 -------------------------------------------------------------------------------------
constexpr Vec3 operator*(const Mat3& m, Vec3 v) {
  return m.c0 * v.x + m.c1 * v.y + m.c2 * v.z;
}
constexpr Mat3 operator*(const Mat3& a, const Mat3& b) {
  return {a * b.c0, a * b.c1, a * b.c2};
}
constexpr Mat3 transpose(const Mat3& m) {
  return {{m.c0.x, m.c1.x, m.c2.x}, {m.c0.y, m.c1.y, m.c2.y}, {m.c0.z, m.c1.z, m.c2.z}};
}
constexpr Mat3 diagonal(Vec3 d) {
  return {{d.x, 0, 0}, {0, d.y, 0}, {0, 0, d.z}};
}

/// Rotation matrix of a unit quaternion.
constexpr Mat3 to_mat3(Quat q) {
  float xx = q.x * q.x, yy = q.y * q.y, zz = q.z * q.z;
  float xy = q.x * q.y, xz = q.x * q.z, yz = q.y * q.z;
  float wx = q.w * q.x, wy = q.w * q.y, wz = q.w * q.z;
  return {{1 - 2 * (yy + zz), 2 * (xy + wz), 2 * (xz - wy)},
          {2 * (xy - wz), 1 - 2 * (xx + zz), 2 * (yz + wx)},
          {2 * (xz + wy), 2 * (yz - wx), 1 - 2 * (xx + yy)}};
}

/// R · diag(d) · Rᵀ: a body-frame diagonal tensor expressed in world space.
constexpr Mat3 rotate_diagonal(const Mat3& r, Vec3 d) {
  Mat3 rd{r.c0 * d.x, r.c1 * d.y, r.c2 * d.z};
  return rd * transpose(r);
}

// ---- Transform --------------------------------------------------------------------------------
constexpr Vec3 transform_point(const Transform& t, Vec3 v) {
  return rotate(t.q, v) + t.p;
}
constexpr Vec3 inv_transform_point(const Transform& t, Vec3 v) {
  return inv_rotate(t.q, v - t.p);
}

}  // namespace lockstep::sim
