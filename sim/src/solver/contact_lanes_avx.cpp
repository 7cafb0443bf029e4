// The contact solver's passes and prepare_batch (contact_lanes_passes.inl) compiled twice more on
// x86: for AVX (wide_avx::W8 is one 256-bit register instead of two 128-bit ones, so a pass issues
// about half the vector instructions) and, on x86-64, for AVX-512 F + VL (the same instructions
// with 32 registers instead of 16). contact_lanes.cpp calls a copy only when
// lane_kernel_available() says the CPU and the OS support it.
//
// Same bits. AVX's vaddps, vsubps, vmulps, vdivps, vsqrtps and ordered compares are IEEE-754
// single-precision operations per lane, exactly as SSE2's (no FMA: AVX-512 makes it available, but
// nothing here calls it and -ffp-contract=off forbids contraction); selects are bitwise
// and/andnot/or. So every lane computes what the baseline passes compute —
// tests/sim_contact_lanes_test.cpp compares the three kernels with memcmp on random scenes and
// whole worlds.
//
// No shared symbols. Only code between a target pragma and its pop is compiled for AVX or
// AVX-512, and all of it lives in namespaces of its own (wide_avx, avx_lanes; wide_avx512,
// avx512_lanes; and their anonymous namespaces): contact_lanes.cpp reaches it only through the
// copy's LaneKernelCode (kLaneKernelAvx, kLaneKernelAvx512), and no inline function of a shared
// header is ever emitted with AVX instructions, which the linker could otherwise pick for a caller
// on a CPU without AVX. scripts/check-avx-isolation.sh checks the built library, and that the AVX
// copy uses no AVX-512 register.
#include "solver/contact_lanes.h"

#if defined(LOCKSTEP_SIMD_AVX_KERNEL)

#include <immintrin.h>

#include <bit>
#include <cfloat>
#include <type_traits>
#include <utility>

#include "simd/wide_float.h"
#include "solver/friction_block.h"
#include "solver/friction_block_wide.h"

#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 warns inside its own AVX-512 headers (the `_mm512_undefined_*` operand of builtins "may
// be used uninitialized") once a function is compiled for AVX-512: a known false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

// ---- AVX -------------------------------------------------------------------------------------
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx")
#endif

#define LOCKSTEP_KERNEL_WIDE wide_avx
#define LOCKSTEP_KERNEL_LANES avx_lanes
#define LOCKSTEP_KERNEL_CODE kLaneKernelAvx
#include "solver/contact_lanes_kernel.inl"
#undef LOCKSTEP_KERNEL_CODE
#undef LOCKSTEP_KERNEL_LANES
#undef LOCKSTEP_KERNEL_WIDE

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

// ---- AVX-512 ---------------------------------------------------------------------------------
// The same source once more, for x86-64 CPUs with AVX-512 F and VL. W8 stays one 256-bit register
// and every operation is the same VEX/EVEX instruction on it (the same bits); what changes is
// that the compiler has 32 vector registers instead of 16, and the sixteen-lane passes (two
// batches side by side) spill far less. pyramid3d 300 ticks 2.22 -> 2.14 s. 512-bit registers were
// measured and are not used: their division and square root are slower, and the passes wait on
// those (2.43 -> 2.50 s).
#if defined(LOCKSTEP_SIMD_AVX512_KERNEL)

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512vl"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512vl")
#endif

#define LOCKSTEP_KERNEL_WIDE wide_avx512
#define LOCKSTEP_KERNEL_LANES avx512_lanes
#define LOCKSTEP_KERNEL_CODE kLaneKernelAvx512
#include "solver/contact_lanes_kernel.inl"
#undef LOCKSTEP_KERNEL_CODE
#undef LOCKSTEP_KERNEL_LANES
#undef LOCKSTEP_KERNEL_WIDE

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#endif  // LOCKSTEP_SIMD_AVX512_KERNEL

#endif  // LOCKSTEP_SIMD_AVX_KERNEL
