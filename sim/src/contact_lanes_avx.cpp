// The contact solver's passes and prepare_batch (contact_lanes_passes.h) compiled a second time for
// AVX, on x86: wide_avx::W8 is one 256-bit register instead of two 128-bit ones, so a pass issues
// about half the vector instructions. contact_lanes.cpp calls these only when best_lane_kernel()
// says the CPU and the OS support AVX.
//
// Same bits. AVX's vaddps, vsubps, vmulps, vdivps, vsqrtps and ordered compares are IEEE-754
// single-precision operations per lane, exactly as SSE2's (no FMA: nothing here enables it, and
// -ffp-contract=off forbids contraction anyway); selects are bitwise and/andnot/or. So every lane
// computes what the baseline passes compute — tests/sim_contact_lanes_test.cpp compares the two
// kernels with memcmp on random scenes and whole worlds.
//
// No shared symbols. Only code after the target pragma is compiled for AVX, and all of it lives in
// namespaces of its own (wide_avx; avx_lanes and its anonymous namespace) or is one of the two
// entry points below: no inline function of a shared header is ever emitted with AVX instructions,
// which the linker could otherwise pick for a caller on a CPU without AVX.
#include "contact_lanes.h"

#if defined(LOCKSTEP_LANES_AVX)

#include <immintrin.h>

#include <bit>
#include <cfloat>
#include <utility>

#include "friction_block_wide.h"
#include "lockstep/sim/friction_block.h"
#include "wide_float.h"

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx")
#endif

namespace lockstep::sim::wide_avx {
#define LOCKSTEP_WIDE_AVX 1
#include "wide_float_ops.h"
#undef LOCKSTEP_WIDE_AVX
}  // namespace lockstep::sim::wide_avx

namespace lockstep::sim::avx_lanes {
namespace wide = lockstep::sim::wide_avx;
namespace {

#include "friction_block_wide_body.h"
// (the passes call solve_boundary_lanes: this order)
#include "contact_lanes_passes.h"

}  // namespace
}  // namespace lockstep::sim::avx_lanes

namespace lockstep::sim {

void warm_start_lanes_avx(const ContactLanes& lanes, std::span<SolverVelocity> velocities) {
  avx_lanes::warm_start_all<true>(lanes, velocities);
}

void prepare_batch_avx(const SolverSettings& settings, const PrepareInputs& in, ManifoldLanes* m,
                       PointLanes* rows, EigenLanes* eigens, SolverCounters* counters) {
  avx_lanes::prepare_batch(settings, in, m, rows, eigens, counters);
}

void solve_lanes_avx(ContactLanes* lanes, std::span<SolverVelocity> velocities, bool use_bias,
                     SolverCounters* counters) {
  avx_lanes::solve_all<true>(lanes, velocities, use_bias, counters);
}

}  // namespace lockstep::sim

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#endif  // LOCKSTEP_LANES_AVX
