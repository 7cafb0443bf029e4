// The body of namespace lockstep::sim::wide (wide_float.h says what the types promise). No include
// guard: wide_float.h includes it into namespace wide, and contact_lanes_kernel.inl again into
// namespaces wide_avx and wide_avx512 with LOCKSTEP_WIDE_AVX defined (W8 in one 256-bit register,
// under a target("avx") or target("avx512f,avx512vl") pragma), so that the instruction sets never
// share a symbol.

#if defined(LOCKSTEP_WIDE_SSE2)
struct W4 {
  __m128 v;
};
struct M4 {  // all-ones or all-zeros per lane
  __m128 v;
};
LOCKSTEP_WIDE_INLINE W4 load(const float* p) {  // any alignment
  return {_mm_loadu_ps(p)};
}
LOCKSTEP_WIDE_INLINE void store(float* p, W4 a) {
  _mm_storeu_ps(p, a.v);
}
LOCKSTEP_WIDE_INLINE W4 splat(float s) {
  return {_mm_set1_ps(s)};
}
LOCKSTEP_WIDE_INLINE W4 operator+(W4 a, W4 b) {
  return {_mm_add_ps(a.v, b.v)};
}
LOCKSTEP_WIDE_INLINE W4 operator-(W4 a, W4 b) {
  return {_mm_sub_ps(a.v, b.v)};
}
LOCKSTEP_WIDE_INLINE W4 operator*(W4 a, W4 b) {
  return {_mm_mul_ps(a.v, b.v)};
}
LOCKSTEP_WIDE_INLINE W4 operator/(W4 a, W4 b) {
  return {_mm_div_ps(a.v, b.v)};
}
LOCKSTEP_WIDE_INLINE W4 sqrt(W4 a) {
  return {_mm_sqrt_ps(a.v)};
}
LOCKSTEP_WIDE_INLINE W4 operator-(W4 a) {  // sign flip, as scalar −a
  return {_mm_xor_ps(a.v, _mm_set1_ps(-0.0f))};
}
LOCKSTEP_WIDE_INLINE M4 operator<(W4 a, W4 b) {
  return {_mm_cmplt_ps(a.v, b.v)};
}
LOCKSTEP_WIDE_INLINE M4 operator<=(W4 a, W4 b) {
  return {_mm_cmple_ps(a.v, b.v)};
}
LOCKSTEP_WIDE_INLINE M4 operator>(W4 a, W4 b) {
  return {_mm_cmpgt_ps(a.v, b.v)};
}
LOCKSTEP_WIDE_INLINE M4 operator>=(W4 a, W4 b) {
  return {_mm_cmpge_ps(a.v, b.v)};
}
LOCKSTEP_WIDE_INLINE M4 operator==(W4 a, W4 b) {
  return {_mm_cmpeq_ps(a.v, b.v)};
}
LOCKSTEP_WIDE_INLINE M4 operator!=(W4 a, W4 b) {  // true for NaN, as scalar !=
  return {_mm_cmpneq_ps(a.v, b.v)};
}
LOCKSTEP_WIDE_INLINE M4 operator&(M4 a, M4 b) {
  return {_mm_and_ps(a.v, b.v)};
}
LOCKSTEP_WIDE_INLINE M4 operator|(M4 a, M4 b) {
  return {_mm_or_ps(a.v, b.v)};
}
LOCKSTEP_WIDE_INLINE M4 operator~(M4 a) {
  return {_mm_xor_ps(a.v, _mm_castsi128_ps(_mm_set1_epi32(-1)))};
}
LOCKSTEP_WIDE_INLINE M4 and_not(M4 a, M4 b) {  // a & ~b
  return {_mm_andnot_ps(b.v, a.v)};
}
LOCKSTEP_WIDE_INLINE W4 select(M4 m, W4 a, W4 b) {  // m ? a : b per lane
  return {_mm_or_ps(_mm_and_ps(m.v, a.v), _mm_andnot_ps(m.v, b.v))};
}
LOCKSTEP_WIDE_INLINE int bits(M4 m) {  // bit i set when lane i is true
  return _mm_movemask_ps(m.v);
}
LOCKSTEP_WIDE_INLINE M4 lane_mask(int bits4) {
  return {_mm_castsi128_ps(
      _mm_setr_epi32(-(bits4 & 1), -((bits4 >> 1) & 1), -((bits4 >> 2) & 1), -((bits4 >> 3) & 1)))};
}
/// Rows (x, y, z, w) of four lanes ↔ columns: r0..r3 become x-, y-, z- and w-vectors in place.
LOCKSTEP_WIDE_INLINE void transpose(W4& r0, W4& r1, W4& r2, W4& r3) {
  _MM_TRANSPOSE4_PS(r0.v, r1.v, r2.v, r3.v);
}
#elif defined(LOCKSTEP_WIDE_NEON)
struct W4 {
  float32x4_t v;
};
struct M4 {
  uint32x4_t v;
};
LOCKSTEP_WIDE_INLINE W4 load(const float* p) {
  return {vld1q_f32(p)};
}
LOCKSTEP_WIDE_INLINE void store(float* p, W4 a) {
  vst1q_f32(p, a.v);
}
LOCKSTEP_WIDE_INLINE W4 splat(float s) {
  return {vdupq_n_f32(s)};
}
LOCKSTEP_WIDE_INLINE W4 operator+(W4 a, W4 b) {
  return {vaddq_f32(a.v, b.v)};
}
LOCKSTEP_WIDE_INLINE W4 operator-(W4 a, W4 b) {
  return {vsubq_f32(a.v, b.v)};
}
LOCKSTEP_WIDE_INLINE W4 operator*(W4 a, W4 b) {
  return {vmulq_f32(a.v, b.v)};
}
LOCKSTEP_WIDE_INLINE W4 operator/(W4 a, W4 b) {
  return {vdivq_f32(a.v, b.v)};
}
LOCKSTEP_WIDE_INLINE W4 sqrt(W4 a) {
  return {vsqrtq_f32(a.v)};
}
LOCKSTEP_WIDE_INLINE W4 operator-(W4 a) {
  return {vnegq_f32(a.v)};
}
LOCKSTEP_WIDE_INLINE M4 operator<(W4 a, W4 b) {
  return {vcltq_f32(a.v, b.v)};
}
LOCKSTEP_WIDE_INLINE M4 operator<=(W4 a, W4 b) {
  return {vcleq_f32(a.v, b.v)};
}
LOCKSTEP_WIDE_INLINE M4 operator>(W4 a, W4 b) {
  return {vcgtq_f32(a.v, b.v)};
}
LOCKSTEP_WIDE_INLINE M4 operator>=(W4 a, W4 b) {
  return {vcgeq_f32(a.v, b.v)};
}
LOCKSTEP_WIDE_INLINE M4 operator==(W4 a, W4 b) {
  return {vceqq_f32(a.v, b.v)};
}
LOCKSTEP_WIDE_INLINE M4 operator!=(W4 a, W4 b) {
  return {vmvnq_u32(vceqq_f32(a.v, b.v))};
}
LOCKSTEP_WIDE_INLINE M4 operator&(M4 a, M4 b) {
  return {vandq_u32(a.v, b.v)};
}
LOCKSTEP_WIDE_INLINE M4 operator|(M4 a, M4 b) {
  return {vorrq_u32(a.v, b.v)};
}
LOCKSTEP_WIDE_INLINE M4 operator~(M4 a) {
  return {vmvnq_u32(a.v)};
}
LOCKSTEP_WIDE_INLINE M4 and_not(M4 a, M4 b) {
  return {vbicq_u32(a.v, b.v)};
}
LOCKSTEP_WIDE_INLINE W4 select(M4 m, W4 a, W4 b) {
  return {vbslq_f32(m.v, a.v, b.v)};
}
LOCKSTEP_WIDE_INLINE int bits(M4 m) {
  const uint32x4_t weights = {1, 2, 4, 8};
  return static_cast<int>(vaddvq_u32(vandq_u32(m.v, weights)));
}
LOCKSTEP_WIDE_INLINE M4 lane_mask(int bits4) {
  const uint32x4_t weights = {1, 2, 4, 8};
  return {vtstq_u32(vdupq_n_u32(static_cast<uint32_t>(bits4)), weights)};
}
LOCKSTEP_WIDE_INLINE void transpose(W4& r0, W4& r1, W4& r2, W4& r3) {
  const float32x4_t t0 = vzip1q_f32(r0.v, r2.v), t1 = vzip2q_f32(r0.v, r2.v);
  const float32x4_t t2 = vzip1q_f32(r1.v, r3.v), t3 = vzip2q_f32(r1.v, r3.v);
  r0.v = vzip1q_f32(t0, t2);
  r1.v = vzip2q_f32(t0, t2);
  r2.v = vzip1q_f32(t1, t3);
  r3.v = vzip2q_f32(t1, t3);
}
#elif defined(LOCKSTEP_WIDE_WASM)
// f32x4 add, sub, mul, div and sqrt are IEEE-754 and correctly rounded, as wasm's scalar f32
// operations; comparisons give all-ones lanes; f32x4.ne is true for NaN, as scalar !=.
struct W4 {
  v128_t v;
};
struct M4 {
  v128_t v;
};
LOCKSTEP_WIDE_INLINE W4 load(const float* p) {  // any alignment
  return {wasm_v128_load(p)};
}
LOCKSTEP_WIDE_INLINE void store(float* p, W4 a) {
  wasm_v128_store(p, a.v);
}
LOCKSTEP_WIDE_INLINE W4 splat(float s) {
  return {wasm_f32x4_splat(s)};
}
LOCKSTEP_WIDE_INLINE W4 operator+(W4 a, W4 b) {
  return {wasm_f32x4_add(a.v, b.v)};
}
LOCKSTEP_WIDE_INLINE W4 operator-(W4 a, W4 b) {
  return {wasm_f32x4_sub(a.v, b.v)};
}
LOCKSTEP_WIDE_INLINE W4 operator*(W4 a, W4 b) {
  return {wasm_f32x4_mul(a.v, b.v)};
}
LOCKSTEP_WIDE_INLINE W4 operator/(W4 a, W4 b) {
  return {wasm_f32x4_div(a.v, b.v)};
}
LOCKSTEP_WIDE_INLINE W4 sqrt(W4 a) {
  return {wasm_f32x4_sqrt(a.v)};
}
LOCKSTEP_WIDE_INLINE W4 operator-(W4 a) {  // sign flip, as scalar −a
  return {wasm_f32x4_neg(a.v)};
}
LOCKSTEP_WIDE_INLINE M4 operator<(W4 a, W4 b) {
  return {wasm_f32x4_lt(a.v, b.v)};
}
LOCKSTEP_WIDE_INLINE M4 operator<=(W4 a, W4 b) {
  return {wasm_f32x4_le(a.v, b.v)};
}
LOCKSTEP_WIDE_INLINE M4 operator>(W4 a, W4 b) {
  return {wasm_f32x4_gt(a.v, b.v)};
}
LOCKSTEP_WIDE_INLINE M4 operator>=(W4 a, W4 b) {
  return {wasm_f32x4_ge(a.v, b.v)};
}
LOCKSTEP_WIDE_INLINE M4 operator==(W4 a, W4 b) {
  return {wasm_f32x4_eq(a.v, b.v)};
}
LOCKSTEP_WIDE_INLINE M4 operator!=(W4 a, W4 b) {  // true for NaN, as scalar !=
  return {wasm_f32x4_ne(a.v, b.v)};
}
LOCKSTEP_WIDE_INLINE M4 operator&(M4 a, M4 b) {
  return {wasm_v128_and(a.v, b.v)};
}
LOCKSTEP_WIDE_INLINE M4 operator|(M4 a, M4 b) {
  return {wasm_v128_or(a.v, b.v)};
}
LOCKSTEP_WIDE_INLINE M4 operator~(M4 a) {
  return {wasm_v128_not(a.v)};
}
LOCKSTEP_WIDE_INLINE M4 and_not(M4 a, M4 b) {  // a & ~b
  return {wasm_v128_andnot(a.v, b.v)};
}
LOCKSTEP_WIDE_INLINE W4 select(M4 m, W4 a, W4 b) {  // m ? a : b per lane
  return {wasm_v128_bitselect(a.v, b.v, m.v)};
}
LOCKSTEP_WIDE_INLINE int bits(M4 m) {  // bit i set when lane i is true
  return static_cast<int>(wasm_i32x4_bitmask(m.v));
}
LOCKSTEP_WIDE_INLINE M4 lane_mask(int bits4) {
  return {
      wasm_i32x4_make(-(bits4 & 1), -((bits4 >> 1) & 1), -((bits4 >> 2) & 1), -((bits4 >> 3) & 1))};
}
LOCKSTEP_WIDE_INLINE void transpose(W4& r0, W4& r1, W4& r2, W4& r3) {
  const v128_t t0 = wasm_i32x4_shuffle(r0.v, r1.v, 0, 4, 1, 5);  // x0 x1 y0 y1
  const v128_t t1 = wasm_i32x4_shuffle(r0.v, r1.v, 2, 6, 3, 7);  // z0 z1 w0 w1
  const v128_t t2 = wasm_i32x4_shuffle(r2.v, r3.v, 0, 4, 1, 5);  // x2 x3 y2 y3
  const v128_t t3 = wasm_i32x4_shuffle(r2.v, r3.v, 2, 6, 3, 7);  // z2 z3 w2 w3
  r0.v = wasm_i32x4_shuffle(t0, t2, 0, 1, 4, 5);
  r1.v = wasm_i32x4_shuffle(t0, t2, 2, 3, 6, 7);
  r2.v = wasm_i32x4_shuffle(t1, t3, 0, 1, 4, 5);
  r3.v = wasm_i32x4_shuffle(t1, t3, 2, 3, 6, 7);
}
#else
struct W4 {
  float f[4];
};
struct M4 {
  uint32_t m[4];
};
namespace detail {
template <typename F>
LOCKSTEP_WIDE_INLINE W4 map(W4 a, W4 b, F f) {
  W4 r;
  for (int i = 0; i < 4; ++i)
    r.f[i] = f(a.f[i], b.f[i]);
  return r;
}
template <typename F>
LOCKSTEP_WIDE_INLINE M4 compare(W4 a, W4 b, F f) {
  M4 r;
  for (int i = 0; i < 4; ++i)
    r.m[i] = f(a.f[i], b.f[i]) ? 0xffffffffu : 0u;
  return r;
}
}  // namespace detail
LOCKSTEP_WIDE_INLINE W4 load(const float* p) {
  W4 r;
  std::memcpy(r.f, p, sizeof r.f);
  return r;
}
LOCKSTEP_WIDE_INLINE void store(float* p, W4 a) {
  std::memcpy(p, a.f, sizeof a.f);
}
LOCKSTEP_WIDE_INLINE W4 splat(float s) {
  return {{s, s, s, s}};
}
LOCKSTEP_WIDE_INLINE W4 operator+(W4 a, W4 b) {
  return detail::map(a, b, [](float x, float y) { return x + y; });
}
LOCKSTEP_WIDE_INLINE W4 operator-(W4 a, W4 b) {
  return detail::map(a, b, [](float x, float y) { return x - y; });
}
LOCKSTEP_WIDE_INLINE W4 operator*(W4 a, W4 b) {
  return detail::map(a, b, [](float x, float y) { return x * y; });
}
LOCKSTEP_WIDE_INLINE W4 operator/(W4 a, W4 b) {
  return detail::map(a, b, [](float x, float y) { return x / y; });
}
LOCKSTEP_WIDE_INLINE W4 sqrt(W4 a) {
  W4 r;
  for (int i = 0; i < 4; ++i)
    r.f[i] = std::sqrt(a.f[i]);
  return r;
}
LOCKSTEP_WIDE_INLINE W4 operator-(W4 a) {
  W4 r;
  for (int i = 0; i < 4; ++i)
    r.f[i] = -a.f[i];
  return r;
}
LOCKSTEP_WIDE_INLINE M4 operator<(W4 a, W4 b) {
  return detail::compare(a, b, [](float x, float y) { return x < y; });
}
LOCKSTEP_WIDE_INLINE M4 operator<=(W4 a, W4 b) {
  return detail::compare(a, b, [](float x, float y) { return x <= y; });
}
LOCKSTEP_WIDE_INLINE M4 operator>(W4 a, W4 b) {
  return detail::compare(a, b, [](float x, float y) { return x > y; });
}
LOCKSTEP_WIDE_INLINE M4 operator>=(W4 a, W4 b) {
  return detail::compare(a, b, [](float x, float y) { return x >= y; });
}
LOCKSTEP_WIDE_INLINE M4 operator==(W4 a, W4 b) {
  return detail::compare(a, b, [](float x, float y) { return x == y; });
}
LOCKSTEP_WIDE_INLINE M4 operator!=(W4 a, W4 b) {
  return detail::compare(a, b, [](float x, float y) { return x != y; });
}
LOCKSTEP_WIDE_INLINE M4 operator&(M4 a, M4 b) {
  return {{a.m[0] & b.m[0], a.m[1] & b.m[1], a.m[2] & b.m[2], a.m[3] & b.m[3]}};
}
LOCKSTEP_WIDE_INLINE M4 operator|(M4 a, M4 b) {
  return {{a.m[0] | b.m[0], a.m[1] | b.m[1], a.m[2] | b.m[2], a.m[3] | b.m[3]}};
}
LOCKSTEP_WIDE_INLINE M4 operator~(M4 a) {
  return {{~a.m[0], ~a.m[1], ~a.m[2], ~a.m[3]}};
}
LOCKSTEP_WIDE_INLINE M4 and_not(M4 a, M4 b) {
  return {{a.m[0] & ~b.m[0], a.m[1] & ~b.m[1], a.m[2] & ~b.m[2], a.m[3] & ~b.m[3]}};
}
LOCKSTEP_WIDE_INLINE W4 select(M4 m, W4 a, W4 b) {
  W4 r;
  for (int i = 0; i < 4; ++i)
    r.f[i] = m.m[i] != 0 ? a.f[i] : b.f[i];
  return r;
}
LOCKSTEP_WIDE_INLINE int bits(M4 m) {
  return static_cast<int>((m.m[0] & 1) | ((m.m[1] & 1) << 1) | ((m.m[2] & 1) << 2) |
                          ((m.m[3] & 1) << 3));
}
LOCKSTEP_WIDE_INLINE M4 lane_mask(int bits4) {
  M4 r;
  for (int i = 0; i < 4; ++i)
    r.m[i] = ((bits4 >> i) & 1) != 0 ? 0xffffffffu : 0u;
  return r;
}
LOCKSTEP_WIDE_INLINE void transpose(W4& r0, W4& r1, W4& r2, W4& r3) {
  W4* rows[4] = {&r0, &r1, &r2, &r3};
  for (int i = 0; i < 4; ++i) {
    for (int j = i + 1; j < 4; ++j) {
      const float t = rows[i]->f[j];
      rows[i]->f[j] = rows[j]->f[i];
      rows[j]->f[i] = t;
    }
  }
}
#endif

LOCKSTEP_WIDE_INLINE W4 zero() {
  return splat(0.0f);
}
LOCKSTEP_WIDE_INLINE bool any(M4 m) {
  return bits(m) != 0;
}
LOCKSTEP_WIDE_INLINE bool all(M4 m) {
  return bits(m) == 0xf;
}
/// Lane i of `a` (reads memory: for the rare per-lane fallbacks, not the hot path).
LOCKSTEP_WIDE_INLINE float lane(W4 a, int i) {
  alignas(16) float f[4];
  store(f, a);
  return f[i];
}
/// `a` with lane i replaced by `value`.
LOCKSTEP_WIDE_INLINE W4 with_lane(W4 a, int i, float value) {
  alignas(16) float f[4];
  store(f, a);
  f[i] = value;
  return load(f);
}
LOCKSTEP_WIDE_INLINE W4& operator+=(W4& a, W4 b) {
  return a = a + b;
}
LOCKSTEP_WIDE_INLINE W4& operator-=(W4& a, W4 b) {
  return a = a - b;
}
/// Scalar `x < 0 ? -x : x` per lane (−0 stays −0, as the scalar code's abs_float).
LOCKSTEP_WIDE_INLINE W4 abs_as_scalar(W4 x) {
  return select(x < zero(), -x, x);
}

// ---- wider values --------------------------------------------------------------------------

/// What code written once for every width needs (friction_block_wide.inl, the contact
/// solver's passes): the mask type, the lane count, and the width's splat, load and lane mask.
template <class W>
struct Lanes;
LOCKSTEP_WIDE_INLINE W4
splat4(float s) {  // Lanes<W4>'s members are named splat and load themselves
  return splat(s);
}
LOCKSTEP_WIDE_INLINE W4 load4(const float* p) {
  return load(p);
}
template <>
struct Lanes<W4> {
  using Mask = M4;
  static constexpr int kCount = 4;
  LOCKSTEP_WIDE_INLINE static W4 splat(float s) { return splat4(s); }
  LOCKSTEP_WIDE_INLINE static W4 load(const float* p) { return load4(p); }
  LOCKSTEP_WIDE_INLINE static M4 mask(int lane_bits) { return lane_mask(lane_bits); }
};

/// Two values of one width side by side: twice the lanes in two independent dependency chains.
/// The contact solver's passes are bound by the latency of each point's row (velocity → impulse
/// → velocity), not by arithmetic, so two sets of lanes in flight nearly halve the time per
/// lane. W8 is a pair of W4 where eight lanes have no register of their own (everything but the
/// AVX kernel); W16, two batches of the contact solver side by side (contact_lanes.h), is a pair
/// of W8 everywhere. Each operation is the halves' operation on each half: the same IEEE
/// operation per lane.
template <class H>
struct Pair {
  H lo, hi;
};
/// A Pair's comparison result; `kHalf` lanes in each half.
template <class HM, int kHalf>
struct PairMask {
  HM lo, hi;
};
template <class H>
using PairMaskOf = PairMask<typename Lanes<H>::Mask, Lanes<H>::kCount>;

template <class H>
LOCKSTEP_WIDE_INLINE H lo(Pair<H> a) {
  return a.lo;
}
template <class H>
LOCKSTEP_WIDE_INLINE H hi(Pair<H> a) {
  return a.hi;
}
template <class H>
LOCKSTEP_WIDE_INLINE Pair<H> join(H lo, H hi) {
  return {lo, hi};
}
template <class H>
LOCKSTEP_WIDE_INLINE void store(float* p, Pair<H> a) {
  store(p, a.lo);
  store(p + Lanes<H>::kCount, a.hi);
}
template <class H>
LOCKSTEP_WIDE_INLINE Pair<H> operator+(Pair<H> a, Pair<H> b) {
  return {a.lo + b.lo, a.hi + b.hi};
}
template <class H>
LOCKSTEP_WIDE_INLINE Pair<H> operator-(Pair<H> a, Pair<H> b) {
  return {a.lo - b.lo, a.hi - b.hi};
}
template <class H>
LOCKSTEP_WIDE_INLINE Pair<H> operator*(Pair<H> a, Pair<H> b) {
  return {a.lo * b.lo, a.hi * b.hi};
}
template <class H>
LOCKSTEP_WIDE_INLINE Pair<H> operator/(Pair<H> a, Pair<H> b) {
  return {a.lo / b.lo, a.hi / b.hi};
}
template <class H>
LOCKSTEP_WIDE_INLINE Pair<H> operator-(Pair<H> a) {
  return {-a.lo, -a.hi};
}
template <class H>
LOCKSTEP_WIDE_INLINE Pair<H>& operator+=(Pair<H>& a, Pair<H> b) {
  return a = a + b;
}
template <class H>
LOCKSTEP_WIDE_INLINE Pair<H>& operator-=(Pair<H>& a, Pair<H> b) {
  return a = a - b;
}
template <class H>
LOCKSTEP_WIDE_INLINE Pair<H> sqrt(Pair<H> a) {
  return {sqrt(a.lo), sqrt(a.hi)};
}
template <class H>
LOCKSTEP_WIDE_INLINE Pair<H> abs_as_scalar(Pair<H> x) {
  return {abs_as_scalar(x.lo), abs_as_scalar(x.hi)};
}
template <class H>
LOCKSTEP_WIDE_INLINE PairMaskOf<H> operator<(Pair<H> a, Pair<H> b) {
  return {a.lo < b.lo, a.hi < b.hi};
}
template <class H>
LOCKSTEP_WIDE_INLINE PairMaskOf<H> operator<=(Pair<H> a, Pair<H> b) {
  return {a.lo <= b.lo, a.hi <= b.hi};
}
template <class H>
LOCKSTEP_WIDE_INLINE PairMaskOf<H> operator>(Pair<H> a, Pair<H> b) {
  return {a.lo > b.lo, a.hi > b.hi};
}
template <class H>
LOCKSTEP_WIDE_INLINE PairMaskOf<H> operator>=(Pair<H> a, Pair<H> b) {
  return {a.lo >= b.lo, a.hi >= b.hi};
}
template <class H>
LOCKSTEP_WIDE_INLINE PairMaskOf<H> operator==(Pair<H> a, Pair<H> b) {
  return {a.lo == b.lo, a.hi == b.hi};
}
template <class H>
LOCKSTEP_WIDE_INLINE PairMaskOf<H> operator!=(Pair<H> a, Pair<H> b) {  // true for NaN, as scalar !=
  return {a.lo != b.lo, a.hi != b.hi};
}
template <class HM, int N>
LOCKSTEP_WIDE_INLINE PairMask<HM, N> operator&(PairMask<HM, N> a, PairMask<HM, N> b) {
  return {a.lo & b.lo, a.hi & b.hi};
}
template <class HM, int N>
LOCKSTEP_WIDE_INLINE PairMask<HM, N> operator|(PairMask<HM, N> a, PairMask<HM, N> b) {
  return {a.lo | b.lo, a.hi | b.hi};
}
template <class HM, int N>
LOCKSTEP_WIDE_INLINE PairMask<HM, N> and_not(PairMask<HM, N> a, PairMask<HM, N> b) {  // a & ~b
  return {and_not(a.lo, b.lo), and_not(a.hi, b.hi)};
}
template <class HM, int N>
LOCKSTEP_WIDE_INLINE PairMask<HM, N> operator~(PairMask<HM, N> a) {
  return {~a.lo, ~a.hi};
}
template <class H, class HM, int N>
LOCKSTEP_WIDE_INLINE Pair<H> select(PairMask<HM, N> m, Pair<H> a,
                                    Pair<H> b) {  // m ? a : b per lane
  return {select(m.lo, a.lo, b.lo), select(m.hi, a.hi, b.hi)};
}
template <class HM, int N>
LOCKSTEP_WIDE_INLINE int bits(
    PairMask<HM, N> m) {  // bit i set when lane i is true (the low half's first)
  return static_cast<int>(static_cast<unsigned>(bits(m.lo)) |
                          (static_cast<unsigned>(bits(m.hi)) << N));
}
template <class HM, int N>
LOCKSTEP_WIDE_INLINE bool any(PairMask<HM, N> m) {
  return any(m.lo | m.hi);
}
template <class H>
struct Lanes<Pair<H>> {
  using Mask = PairMaskOf<H>;
  static constexpr int kCount = 2 * Lanes<H>::kCount;
  LOCKSTEP_WIDE_INLINE static Pair<H> splat(float s) {
    return {Lanes<H>::splat(s), Lanes<H>::splat(s)};
  }
  LOCKSTEP_WIDE_INLINE static Pair<H> load(const float* p) {
    return {Lanes<H>::load(p), Lanes<H>::load(p + Lanes<H>::kCount)};
  }
  LOCKSTEP_WIDE_INLINE static Mask mask(int lane_bits) {
    const unsigned b = static_cast<unsigned>(lane_bits);
    const unsigned half = (1u << Lanes<H>::kCount) - 1u;
    return {Lanes<H>::mask(static_cast<int>(b & half)),
            Lanes<H>::mask(static_cast<int>((b >> Lanes<H>::kCount) & half))};
  }
};

#if defined(LOCKSTEP_WIDE_AVX)
/// Eight lanes in one AVX register (the same IEEE operation per lane as W4; no FMA).
struct W8 {
  __m256 v;
};
struct M8 {
  __m256 v;
};
LOCKSTEP_WIDE_INLINE W4 lo(W8 a) {
  return {_mm256_castps256_ps128(a.v)};
}
LOCKSTEP_WIDE_INLINE W4 hi(W8 a) {
  return {_mm256_extractf128_ps(a.v, 1)};
}
LOCKSTEP_WIDE_INLINE W8 combine(W4 lo, W4 hi) {
  return {_mm256_insertf128_ps(_mm256_castps128_ps256(lo.v), hi.v, 1)};
}
LOCKSTEP_WIDE_INLINE W8 load8(const float* p) {
  return {_mm256_loadu_ps(p)};
}
LOCKSTEP_WIDE_INLINE void store(float* p, W8 a) {
  _mm256_storeu_ps(p, a.v);
}
LOCKSTEP_WIDE_INLINE W8 splat8(float s) {
  return {_mm256_set1_ps(s)};
}
LOCKSTEP_WIDE_INLINE W8 operator+(W8 a, W8 b) {
  return {_mm256_add_ps(a.v, b.v)};
}
LOCKSTEP_WIDE_INLINE W8 operator-(W8 a, W8 b) {
  return {_mm256_sub_ps(a.v, b.v)};
}
LOCKSTEP_WIDE_INLINE W8 operator*(W8 a, W8 b) {
  return {_mm256_mul_ps(a.v, b.v)};
}
LOCKSTEP_WIDE_INLINE W8 operator/(W8 a, W8 b) {
  return {_mm256_div_ps(a.v, b.v)};
}
LOCKSTEP_WIDE_INLINE W8 operator-(W8 a) {
  return {_mm256_xor_ps(a.v, _mm256_set1_ps(-0.0f))};
}
LOCKSTEP_WIDE_INLINE M8 operator<(W8 a, W8 b) {
  return {_mm256_cmp_ps(a.v, b.v, _CMP_LT_OS)};
}
LOCKSTEP_WIDE_INLINE M8 operator<=(W8 a, W8 b) {
  return {_mm256_cmp_ps(a.v, b.v, _CMP_LE_OS)};
}
LOCKSTEP_WIDE_INLINE M8 operator>(W8 a, W8 b) {
  return {_mm256_cmp_ps(a.v, b.v, _CMP_GT_OS)};
}
LOCKSTEP_WIDE_INLINE M8 operator>=(W8 a, W8 b) {
  return {_mm256_cmp_ps(a.v, b.v, _CMP_GE_OS)};
}
LOCKSTEP_WIDE_INLINE M8 operator==(W8 a, W8 b) {
  return {_mm256_cmp_ps(a.v, b.v, _CMP_EQ_OQ)};
}
LOCKSTEP_WIDE_INLINE M8 operator!=(W8 a, W8 b) {  // true for NaN, as scalar !=
  return {_mm256_cmp_ps(a.v, b.v, _CMP_NEQ_UQ)};
}
LOCKSTEP_WIDE_INLINE M8 operator&(M8 a, M8 b) {
  return {_mm256_and_ps(a.v, b.v)};
}
LOCKSTEP_WIDE_INLINE M8 operator|(M8 a, M8 b) {
  return {_mm256_or_ps(a.v, b.v)};
}
LOCKSTEP_WIDE_INLINE M8 and_not(M8 a, M8 b) {  // a & ~b
  return {_mm256_andnot_ps(b.v, a.v)};
}
LOCKSTEP_WIDE_INLINE W8 select(M8 m, W8 a,
                               W8 b) {  // m ? a : b per lane (m is all-ones or all-zeros)
  return {_mm256_or_ps(_mm256_and_ps(m.v, a.v), _mm256_andnot_ps(m.v, b.v))};
}
LOCKSTEP_WIDE_INLINE int bits(M8 m) {
  return _mm256_movemask_ps(m.v);
}
LOCKSTEP_WIDE_INLINE bool any(M8 m) {
  return bits(m) != 0;
}
LOCKSTEP_WIDE_INLINE M8 lane_mask8(int bits8) {
  const __m128 lo = lane_mask(bits8 & 0xf).v, hi = lane_mask((bits8 >> 4) & 0xf).v;
  return {_mm256_insertf128_ps(_mm256_castps128_ps256(lo), hi, 1)};
}
LOCKSTEP_WIDE_INLINE W8& operator+=(W8& a, W8 b) {
  return a = a + b;
}
LOCKSTEP_WIDE_INLINE W8& operator-=(W8& a, W8 b) {
  return a = a - b;
}
LOCKSTEP_WIDE_INLINE W8 sqrt(W8 a) {
  return {_mm256_sqrt_ps(a.v)};
}
LOCKSTEP_WIDE_INLINE M8 operator~(M8 a) {
  return {_mm256_xor_ps(a.v, _mm256_castsi256_ps(_mm256_set1_epi32(-1)))};
}
LOCKSTEP_WIDE_INLINE W8 abs_as_scalar(W8 x) {
  return select(x < splat8(0.0f), -x, x);
}
template <>
struct Lanes<W8> {
  using Mask = M8;
  static constexpr int kCount = 8;
  LOCKSTEP_WIDE_INLINE static W8 splat(float s) { return splat8(s); }
  LOCKSTEP_WIDE_INLINE static W8 load(const float* p) { return load8(p); }
  LOCKSTEP_WIDE_INLINE static M8 mask(int lane_bits) { return lane_mask8(lane_bits); }
};
#else
/// Eight lanes as two W4 (no eight-lane register: SSE2, NEON, portable).
using W8 = Pair<W4>;
using M8 = PairMaskOf<W4>;
LOCKSTEP_WIDE_INLINE W8 combine(W4 lo, W4 hi) {
  return {lo, hi};
}
LOCKSTEP_WIDE_INLINE W8 load8(const float* p) {
  return Lanes<W8>::load(p);
}
LOCKSTEP_WIDE_INLINE W8 splat8(float s) {
  return Lanes<W8>::splat(s);
}
LOCKSTEP_WIDE_INLINE M8 lane_mask8(int bits8) {
  return Lanes<W8>::mask(bits8);
}
#endif
LOCKSTEP_WIDE_INLINE float lane(W8 a, int i) {
  return i < 4 ? lane(lo(a), i) : lane(hi(a), i - 4);
}
LOCKSTEP_WIDE_INLINE W8 with_lane(W8 a, int i, float value) {
  return i < 4 ? combine(with_lane(lo(a), i, value), hi(a))
               : combine(lo(a), with_lane(hi(a), i - 4, value));
}

/// Sixteen lanes: two batches of the contact solver side by side (contact_lanes.h).
using W16 = Pair<W8>;
using M16 = PairMaskOf<W8>;
