// One x86 copy of the lanes kernel: the body of a target region of contact_lanes_avx.cpp, which
// defines LOCKSTEP_KERNEL_WIDE and LOCKSTEP_KERNEL_LANES (the copy's own namespaces) and
// LOCKSTEP_KERNEL_CODE (its LaneKernelCode) before including it. No include guard: included once
// per copy. W8 is one 256-bit register (wide_float_ops.inl with LOCKSTEP_WIDE_AVX).

namespace lockstep::sim::LOCKSTEP_KERNEL_WIDE {
#define LOCKSTEP_WIDE_AVX 1
#include "simd/wide_float_ops.inl"
#undef LOCKSTEP_WIDE_AVX
}  // namespace lockstep::sim::LOCKSTEP_KERNEL_WIDE

namespace lockstep::sim::LOCKSTEP_KERNEL_LANES {
namespace wide = lockstep::sim::LOCKSTEP_KERNEL_WIDE;
namespace {

#include "solver/friction_block_wide.inl"
// (the passes call solve_boundary_wide: this order)
#include "solver/contact_lanes_passes.inl"

}  // namespace
}  // namespace lockstep::sim::LOCKSTEP_KERNEL_LANES

namespace lockstep::sim {
// Two batches of one colour side by side in the passes (contact_lanes.h).
extern const LaneKernelCode LOCKSTEP_KERNEL_CODE = {
    &LOCKSTEP_KERNEL_LANES::prepare_batch, &LOCKSTEP_KERNEL_LANES::warm_start_all<true>,
    &LOCKSTEP_KERNEL_LANES::solve_all<true>, &LOCKSTEP_KERNEL_LANES::restitute_all};
}  // namespace lockstep::sim
