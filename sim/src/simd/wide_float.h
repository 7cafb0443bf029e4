// Floats in lock step, four (W4) or eight (W8) at a time: the contact solver's lanes (one
// manifold per lane).
//
// Every operation is one IEEE-754 single-precision operation per lane (+ − × ÷ √, ordered
// comparisons, bit selects), so a lane computes exactly what the scalar code `a + b`, `a < b`,
// `std::sqrt(a)` computes, on every target and with every implementation below:
//   - SSE2 on x86 (x86-64, and 32-bit x86 built with -msse2 as the sim is);
//   - NEON on aarch64 (vdivq/vsqrtq are IEEE there; -ffp-contract=off keeps the multiplies and
//     adds apart, as for scalar code);
//   - wasm SIMD128 on wasm32 (f32x4 arithmetic is IEEE there, as the scalar f32 operations);
//   - four scalar floats everywhere else, or with -DLOCKSTEP_SIMD_SCALAR.
// The determinism matrix runs all four and compares the bits. There is deliberately no min, max
// or abs: SSE's minps, NEON's fmin and std::min disagree on NaN and signed zeros; write the
// comparison and the select the scalar code means.
//
// The operations themselves are in wide_float_ops.inl, the body of this namespace: on x86 the
// contact solver's passes are compiled again for AVX and AVX-512 (contact_lanes_avx.cpp), which
// include that body again into namespaces wide_avx and wide_avx512 with W8 as one 256-bit
// register.
#pragma once

#include <cstdint>
#include <cstring>

#include "simd/instruction_set.h"

#if defined(LOCKSTEP_SIMD_SSE2)
#define LOCKSTEP_WIDE_SSE2 1
#include <emmintrin.h>
#elif defined(LOCKSTEP_SIMD_NEON)
#define LOCKSTEP_WIDE_NEON 1
#include <arm_neon.h>
#elif defined(LOCKSTEP_SIMD_WASM)
#define LOCKSTEP_WIDE_WASM 1
#include <wasm_simd128.h>
#else
#define LOCKSTEP_WIDE_PORTABLE 1
#include <cmath>
#endif

// Every operation is always inlined, even at -O0: each is one instruction (or a few), and a
// call per operation slows the unoptimised builds that a game's debug build predicts with. Inlining
// changes no result: the same IEEE operations run in the same order.
#define LOCKSTEP_WIDE_INLINE [[gnu::always_inline]] inline

namespace lockstep::sim::wide {

#include "simd/wide_float_ops.inl"  // IWYU pragma: export

}  // namespace lockstep::sim::wide
