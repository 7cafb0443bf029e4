// Whether two shapes overlap or touch: the overlap queries' exact test (no contact points).
#pragma once

#include "compound.h"
#include "lockstep/sim/math.h"
#include "lockstep/sim/types.h"

namespace lockstep::sim {

/// True when the shapes share at least one point (closed sets: touching counts). Any pair of
/// sphere, capsule, box, hull and plane except plane–plane (false); `library` has the hulls.
bool shapes_overlap(const ShapeDef& a, const Transform& xa, const ShapeDef& b, const Transform& xb,
                    const ShapeLibrary& library);

}  // namespace lockstep::sim
