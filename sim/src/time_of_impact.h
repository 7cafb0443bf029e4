// Time of impact of a shape translating from one position to another against a fixed shape
// (bullet bodies; time_of_impact.cpp has the method and why it never steps over a surface).
#pragma once

#include "compound.h"
#include "lockstep/sim/math.h"
#include "lockstep/sim/types.h"

namespace lockstep::sim {

/// The first t in [0, 1) at which `moving`, at start + t·(end − start) with `orientation`, comes
/// within `target` (m) of `fixed`; 1 when it does not within the travel, or when it is within
/// `target` already at the start (its contacts keep it out).
float time_of_impact(const ShapeDef& moving, Vec3 start, Vec3 end, Quat orientation,
                     const ShapeDef& fixed, const Transform& fixed_pose,
                     const ShapeLibrary& library, float target);

}  // namespace lockstep::sim
