// solve_boundary_wide (sim/src/solver/friction_block_wide.h): four (and eight) friction blocks on
// the circle at once must give, lane by lane, exactly the bits of the scalar
// friction_block_detail::solve_boundary — impulse and solved flag — for every input, whatever the
// other lanes hold. The expected values are the scalar function's, an independent implementation
// of the same algorithm (the scalar function's own accuracy is sim_friction_block_test's concern).
// Tolerance: none, the comparison is memcmp of the floats.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <type_traits>

#include "solver/friction_block.h"
#include "solver/friction_block_wide.h"
#include "test_math.h"

namespace {

using lockstep::sim::friction_block_det;
using lockstep::sim::friction_block_eigen;
using lockstep::sim::FrictionBlockResult;
using lockstep::sim::FrictionBlockStatus;
using lockstep::sim::FrictionEigen;
using lockstep::sim::FrictionEigenW4;
using lockstep::sim::FrictionEigenWide;
using lockstep::sim::solve_boundary_wide;
using lockstep::sim::TangentMass;
using lockstep::sim::Vec2;
namespace wide = lockstep::sim::wide;
namespace detail = lockstep::sim::friction_block_detail;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

struct Lane {
  FrictionEigen eigen;
  Vec2 v;
  float radius = 0;
};

struct Rng : lockstep::testing::TestRng {
  double range(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  double log_range(double lo_exp10, double hi_exp10) {
    return std::pow(10.0, range(lo_exp10, hi_exp10));
  }
  bool coin(double p) { return uniform() < p; }
  uint32_t below(uint32_t n) { return static_cast<uint32_t>(next() % n); }
  void unit(double* c, double* s) {  // uniform unit vector by rejection
    for (;;) {
      const double x = range(-1, 1), y = range(-1, 1), r2 = x * x + y * y;
      if (r2 > 1e-4 && r2 <= 1) {
        *c = x / std::sqrt(r2);
        *s = y / std::sqrt(r2);
        return;
      }
    }
  }
  float bits() {  // any float: NaNs, infinities, subnormals, zeros of both signs
    const uint32_t b = static_cast<uint32_t>(next() >> 32);
    float f;
    std::memcpy(&f, &b, sizeof f);
    return f;
  }
  float garbage() {
    switch (below(8)) {
      case 0:
        return kNaN;
      case 1:
        return kInf;
      case 2:
        return -kInf;
      case 3:
        return 0.0f;
      case 4:
        return -0.0f;
      case 5:
        return FLT_MAX;
      case 6:
        return FLT_TRUE_MIN;
      default:
        return bits();
    }
  }
};

// K = R·diag(l1, l2)·Rᵀ rounded to float; false when it is not a valid block in float.
bool make_mass(Rng& rng, double l1, double l2, bool axis_aligned, TangentMass* k) {
  double c = 1, s = 0;
  if (!axis_aligned) rng.unit(&c, &s);
  k->a = static_cast<float>(l1 * c * c + l2 * s * s);
  k->b = static_cast<float>((l1 - l2) * c * s);
  k->c = static_cast<float>(l1 * s * s + l2 * c * c);
  return friction_block_det(*k) > 0;
}

// J0 = −K⁻¹v in double.
double unconstrained_length(TangentMass k, Vec2 v) {
  const double det = static_cast<double>(k.a) * k.c - static_cast<double>(k.b) * k.b;
  const double x = (static_cast<double>(k.b) * v.y - static_cast<double>(k.c) * v.x) / det;
  const double y = (static_cast<double>(k.b) * v.x - static_cast<double>(k.a) * v.y) / det;
  return std::sqrt(x * x + y * y);
}

// A lane the contact solver could send: valid K, finite v, R > 0 with J0 outside the disk (mostly;
// the scaling can overflow or underflow, which the comparison does not mind), in families that
// reach the scalar code's branches.
Lane make_lane(Rng& rng) {
  const uint32_t family = rng.below(16);  // 0–8 the edges, 9–15 plain
  double l1 = rng.log_range(-3, 1);       // kg⁻¹: boxes of ~10 kg to ~10 t
  double cond = rng.log_range(0, 3);
  double v_scale = rng.log_range(-3, 1.5);  // m/s
  bool axis_aligned = rng.coin(0.1);
  bool along_eigenvector = rng.coin(0.1);
  switch (family) {
    case 0:
      cond = rng.log_range(3, 8);
      break;  // ill-conditioned
    case 1:
      cond = rng.log_range(7, 12);
      break;  // near singular in float
    case 2:
      cond = 1;
      break;  // K = s·I
    case 3:
      along_eigenvector = true;
      axis_aligned = rng.coin(0.5);
      break;
    case 4:
      l1 *= rng.log_range(-25, 25);
      v_scale *= rng.log_range(-25, 25);
      break;
    default:
      break;
  }
  TangentMass k;
  // Not a valid block in float (det underflowed or overflowed): a milder one.
  while (!make_mass(rng, l1, l1 / cond, axis_aligned, &k)) {
    l1 = rng.log_range(-3, 1);
    cond = rng.log_range(0, 3);
  }
  Lane lane;
  lane.eigen = friction_block_eigen(k);
  double c = 1, s = 0;
  rng.unit(&c, &s);
  lane.v = Vec2{static_cast<float>(v_scale * c), static_cast<float>(v_scale * s)};
  if (along_eigenvector) {
    const Vec2 e = rng.coin(0.5) ? lane.eigen.e1 : Vec2{-lane.eigen.e1.y, lane.eigen.e1.x};
    const float m = static_cast<float>(rng.coin(0.5) ? v_scale : -v_scale);
    lane.v = Vec2{m * e.x, m * e.y};
    if (axis_aligned && rng.coin(0.5)) lane.v = rng.coin(0.5) ? Vec2{m, 0} : Vec2{0, m};
  }
  // R below |J0|: slightly (the root near t = 0) or far (the root near the bracket's top).
  const double j0 = unconstrained_length(k, lane.v);
  const double f = rng.coin(0.5) ? 1.0 - rng.log_range(-7.5, -1) : rng.log_range(-5, -0.05);
  lane.radius = static_cast<float>(j0 * f);
  if (family == 5) lane.radius = static_cast<float>(rng.log_range(-31, -29));  // tiny (1e-30)
  if (family == 6) lane.radius = static_cast<float>(rng.log_range(29, 31));    // huge (1e30)
  if (family == 7) lane.v = Vec2{lane.v.x * 1e-30f, lane.v.y * 1e-30f};        // tiny v
  if (family == 8) lane.v = Vec2{lane.v.x * 1e30f, lane.v.y * 1e30f};          // huge v
  if (!(lane.radius > 0) || !std::isfinite(lane.radius)) lane.radius = FLT_MIN;
  return lane;
}

// A lane outside every precondition, active anyway: the answer must still match bit for bit.
Lane make_wild_lane(Rng& rng) {
  Lane lane = make_lane(rng);
  float* fields[] = {&lane.eigen.s,    &lane.eigen.k1, &lane.eigen.k2, &lane.eigen.e1.x,
                     &lane.eigen.e1.y, &lane.v.x,      &lane.v.y,      &lane.radius};
  const uint32_t n = 1 + rng.below(3);
  for (uint32_t i = 0; i < n; ++i) {
    float* field = fields[rng.below(8)];
    switch (rng.below(4)) {
      case 0:
        *field = rng.garbage();
        break;
      case 1:
        *field = 0.0f;
        break;  // e.g. k2 = 0: K singular, a2 + t == 0 at t = 0
      case 2:
        *field = -*field;
        break;
      default:
        *field = static_cast<float>(*field * rng.log_range(-40, 40));
        break;
    }
  }
  return lane;
}

Lane make_garbage_lane(Rng& rng) {
  Lane lane;
  lane.eigen.s = rng.garbage();
  lane.eigen.k1 = rng.garbage();
  lane.eigen.k2 = rng.garbage();
  lane.eigen.e1 = Vec2{rng.garbage(), rng.garbage()};
  lane.v = Vec2{rng.garbage(), rng.garbage()};
  lane.radius = rng.garbage();
  return lane;
}

struct Tally {
  int lanes = 0, mismatches = 0;
  int boundary = 0, interior = 0, invalid = 0, exact_tail = 0;
  void print() const {
    std::printf(
        "%d lanes: %d boundary, %d interior, %d invalid_mass, %d through the exact test; "
        "%d mismatches\n",
        lanes, boundary, interior, invalid, exact_tail, mismatches);
  }
};

bool same_bits(float a, float b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

// Solves the N lanes (4: wide::W4, 8: wide::W8) both ways and compares the lanes in `mask`.
template <int N>
void compare(const Lane (&lanes)[N], int mask, Tally* tally) {
  using W = std::conditional_t<N == 4, wide::W4, wide::W8>;
  using L = wide::Lanes<W>;
  alignas(16) float f[8][N];
  for (int i = 0; i < N; ++i) {
    f[0][i] = lanes[i].eigen.s;
    f[1][i] = lanes[i].eigen.k1;
    f[2][i] = lanes[i].eigen.k2;
    f[3][i] = lanes[i].eigen.e1.x;
    f[4][i] = lanes[i].eigen.e1.y;
    f[5][i] = lanes[i].v.x;
    f[6][i] = lanes[i].v.y;
    f[7][i] = lanes[i].radius;
  }
  const FrictionEigenWide<W> eigen{L::load(f[0]), L::load(f[1]), L::load(f[2]), L::load(f[3]),
                                   L::load(f[4])};
  W jx, jy;
  const int solved = wide::bits(solve_boundary_wide(eigen, L::load(f[5]), L::load(f[6]),
                                                    L::load(f[7]), L::mask(mask), &jx, &jy));
  alignas(16) float out_x[N], out_y[N];
  wide::store(out_x, jx);
  wide::store(out_y, jy);
  for (int i = 0; i < N; ++i) {
    if (((mask >> i) & 1) == 0) continue;
    const Lane& lane = lanes[i];
    const FrictionBlockResult r = detail::solve_boundary(lane.eigen, lane.v, lane.radius);
    ++tally->lanes;
    tally->boundary += r.status == FrictionBlockStatus::boundary;
    tally->interior += r.status == FrictionBlockStatus::interior;
    tally->invalid += r.status == FrictionBlockStatus::invalid_mass;
    // An answer the aimed float proof cannot place inside went through the exact-test tail.
    tally->exact_tail += r.solved() && !detail::inside_disk_aimed(r.impulse, lane.radius);
    const bool wide_solved = ((solved >> i) & 1) != 0;
    if (same_bits(out_x[i], r.impulse.x) && same_bits(out_y[i], r.impulse.y) &&
        wide_solved == r.solved()) {
      continue;
    }
    if (++tally->mismatches <= 5) {
      std::printf(
          "mismatch lane %d: s %a k1 %a k2 %a e1 (%a, %a) v (%a, %a) R %a\n"
          "  scalar (%a, %a) solved %d, wide (%a, %a) solved %d\n",
          i, static_cast<double>(lane.eigen.s), static_cast<double>(lane.eigen.k1),
          static_cast<double>(lane.eigen.k2), static_cast<double>(lane.eigen.e1.x),
          static_cast<double>(lane.eigen.e1.y), static_cast<double>(lane.v.x),
          static_cast<double>(lane.v.y), static_cast<double>(lane.radius),
          static_cast<double>(r.impulse.x), static_cast<double>(r.impulse.y), r.solved() ? 1 : 0,
          static_cast<double>(out_x[i]), static_cast<double>(out_y[i]), wide_solved ? 1 : 0);
    }
  }
}

TEST(FrictionBlockWide, MatchesScalarOnSolverLikeLanes) {
  Rng rng{0x7e1d'0001};
  Tally tally;
  for (int call = 0; call < 100000; ++call) {
    Lane lanes[4];
    for (Lane& lane : lanes)
      lane = make_lane(rng);
    compare(lanes, 0xf, &tally);
  }
  tally.print();
  EXPECT_EQ(tally.mismatches, 0) << "of " << tally.lanes << " lanes";
  // The families reach the rare branches too (else this test would not guard them).
  EXPECT_GT(tally.boundary, 300000);
  EXPECT_GT(tally.interior, 1000);
  EXPECT_GT(tally.exact_tail, 1000);
}

TEST(FrictionBlockWide, PartialMasksIgnoreGarbageLanes) {
  Rng rng{0x7e1d'0002};
  Tally tally;
  for (int call = 0; call < 30000; ++call) {
    const int mask = static_cast<int>(rng.below(16));
    Lane lanes[4];
    for (int i = 0; i < 4; ++i)
      lanes[i] = ((mask >> i) & 1) != 0 ? make_lane(rng) : make_garbage_lane(rng);
    compare(lanes, mask, &tally);
  }
  tally.print();
  EXPECT_EQ(tally.mismatches, 0) << "of " << tally.lanes << " lanes";
  EXPECT_GT(tally.lanes, 50000);
}

TEST(FrictionBlockWide, MatchesScalarOutsideThePreconditions) {
  Rng rng{0x7e1d'0003};
  Tally tally;
  for (int call = 0; call < 30000; ++call) {
    const int mask = 1 + static_cast<int>(rng.below(15));
    Lane lanes[4];
    for (Lane& lane : lanes)
      lane = rng.coin(0.5) ? make_wild_lane(rng) : make_lane(rng);
    compare(lanes, mask, &tally);
  }
  tally.print();
  EXPECT_EQ(tally.mismatches, 0) << "of " << tally.lanes << " lanes";
  EXPECT_GT(tally.invalid, 100);   // unbounded u: invalid_mass, J = 0, not solved
  EXPECT_GT(tally.interior, 100);  // v_max ≤ 0 or t = 0 with n ≤ 1
}

TEST(FrictionBlockWide, NoLanesSolvesNothing) {
  const wide::W4 nan = wide::splat(kNaN);
  const FrictionEigenW4 eigen{nan, nan, nan, nan, nan};
  wide::W4 jx, jy;
  EXPECT_EQ(wide::bits(solve_boundary_wide(eigen, nan, nan, nan, wide::lane_mask(0), &jx, &jy)), 0);
}

// Eight lanes (wide::W8, the contact solver's width): the same body compiled for two W4 (or one
// AVX register), so the same comparisons with masks over eight lanes.
TEST(FrictionBlockWide, EightLanesMatchScalar) {
  Rng rng{0x7e1d'0008};
  Tally tally;
  for (int call = 0; call < 40000; ++call) {
    const int mask = call % 2 == 0 ? 0xff : static_cast<int>(rng.below(256));
    Lane lanes[8];
    for (int i = 0; i < 8; ++i) {
      if (((mask >> i) & 1) == 0) {
        lanes[i] = make_garbage_lane(rng);
      } else {
        lanes[i] = rng.coin(0.2) ? make_wild_lane(rng) : make_lane(rng);
      }
    }
    compare(lanes, mask, &tally);
  }
  tally.print();
  EXPECT_EQ(tally.mismatches, 0) << "of " << tally.lanes << " lanes";
  EXPECT_GT(tally.boundary, 150000);
  EXPECT_GT(tally.interior, 100);
  EXPECT_GT(tally.invalid, 100);
  EXPECT_GT(tally.exact_tail, 100);
}

TEST(FrictionBlockWide, EightLanesNoLanesSolveNothing) {
  const wide::W8 nan = wide::splat8(kNaN);
  const FrictionEigenWide<wide::W8> eigen{nan, nan, nan, nan, nan};
  wide::W8 jx, jy;
  EXPECT_EQ(wide::bits(solve_boundary_wide(eigen, nan, nan, nan, wide::lane_mask8(0), &jx, &jy)),
            0);
}

}  // namespace
