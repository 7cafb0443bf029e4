// Which vector instructions the sim uses: decided here once, for every file with a SIMD path
// (simd/wide_float.h, collide_box.cpp, the contact solver's kernels in solver/). README.md in
// this folder explains the scheme and why every path gives the same bits.
//
// Baseline, fixed at compile time by the target:
//   LOCKSTEP_SIMD_SSE2   x86-64, and 32-bit x86 built with -msse2 (the sim always is: CMake)
//   LOCKSTEP_SIMD_NEON   aarch64
//   LOCKSTEP_SIMD_WASM   wasm32 built with -msimd128 (the sim always is: the toolchain file)
//   none of them         everything else, or -DLOCKSTEP_SIMD_SCALAR: scalar code
// Extra kernels of the contact solver's passes, chosen at run time by CPUID (x86, gcc or clang):
//   LOCKSTEP_SIMD_AVX_KERNEL     the passes compiled again for AVX (off with -DLOCKSTEP_NO_AVX,
//                                CMake LOCKSTEP_AVX_KERNEL=OFF)
//   LOCKSTEP_SIMD_AVX512_KERNEL  and for AVX-512 F + VL, on x86-64 only (32 vector registers;
//                                32-bit mode has 8, so nothing to gain there)
#pragma once

#if !defined(LOCKSTEP_SIMD_SCALAR) && \
    (defined(__SSE2__) || defined(_M_X64) || (defined(_M_IX86_FP) && _M_IX86_FP >= 2))
#define LOCKSTEP_SIMD_SSE2 1
#elif !defined(LOCKSTEP_SIMD_SCALAR) && defined(__aarch64__)
#define LOCKSTEP_SIMD_NEON 1
#elif !defined(LOCKSTEP_SIMD_SCALAR) && defined(__wasm_simd128__)
#define LOCKSTEP_SIMD_WASM 1
#endif

#if defined(LOCKSTEP_SIMD_SSE2) && !defined(LOCKSTEP_NO_AVX) && \
    (defined(__GNUC__) || defined(__clang__)) &&                \
    (defined(__x86_64__) || (defined(__i386__) && defined(__SSE2__)))
#define LOCKSTEP_SIMD_AVX_KERNEL 1
#if defined(__x86_64__)
#define LOCKSTEP_SIMD_AVX512_KERNEL 1
#endif
#endif
