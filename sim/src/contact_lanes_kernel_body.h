// One x86 copy of the lanes kernel: the body of a target region of contact_lanes_avx.cpp, which
// defines LOCKSTEP_KERNEL_WIDE and LOCKSTEP_KERNEL_LANES (the copy's own namespaces) and
// LOCKSTEP_KERNEL_CODE (its LaneKernelCode) before including it. No include guard: included once
// per copy. W8 is one 256-bit register (wide_float_ops.h with LOCKSTEP_WIDE_AVX).

namespace lockstep::sim::LOCKSTEP_KERNEL_WIDE {
#define LOCKSTEP_WIDE_AVX 1
#include "wide_float_ops.h"
#undef LOCKSTEP_WIDE_AVX
}  // namespace lockstep::sim::LOCKSTEP_KERNEL_WIDE

namespace lockstep::sim::LOCKSTEP_KERNEL_LANES {
namespace wide = lockstep::sim::LOCKSTEP_KERNEL_WIDE;
namespace {

#include "friction_block_wide_body.h"
// (the passes call solve_boundary_lanes: this order)
#include "contact_lanes_passes.h"

}  // namespace
}  // namespace lockstep::sim::LOCKSTEP_KERNEL_LANES

namespace lockstep::sim {
// Two batches of one colour side by side in the passes (contact_lanes.h).
extern const LaneKernelCode LOCKSTEP_KERNEL_CODE = {
    &LOCKSTEP_KERNEL_LANES::prepare_batch, &LOCKSTEP_KERNEL_LANES::warm_start_all<true>,
    &LOCKSTEP_KERNEL_LANES::solve_all<true>, &LOCKSTEP_KERNEL_LANES::restitute_all};
}  // namespace lockstep::sim
