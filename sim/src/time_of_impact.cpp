// Time of impact of a bullet body against the static shapes along its motion in one step.
//
// Speculative contacts (step.cpp, size_margins: margins sized by speed, at most
// max_speculative_margin_m) stop anything that moves less than the margin in a step. A body flagged
// `bullet` may move farther: after the substeps its motion of the step, from the pose it started at
// to the pose it ended at, is swept against every static body whose box its swept box overlaps (the
// broadphase grew a bullet's box by its whole travel), and when the sweep hits one the body goes
// back to the pose of the first hit, keeping its velocity: the next step's speculative contact, a
// few millimetres away, then stops or bounces it at the surface instead of behind it.
//
// The sweep is conservative advancement along the translation d (the end orientation is kept
// along the whole sweep: a projectile's turn within one step is ignored). At parameter t the
// pose is start + t·d; collide() with a margin longer than the remaining travel gives a
// separation s that is never more than the true distance (a separating axis' gap, or the exact
// closest distance for spheres, capsules and planes). No point of the shape moves more than |d|
// per unit of t, so nothing is hit before t + (s − target)/|d|: advancing by that never steps
// over a surface. A shape already within `target` at the start is left to its contacts (a bullet
// sliding on a floor must not be pinned to where it began). Otherwise the sweep ends at the
// first t whose separation is within `target` (a hit), at
// t ≥ 1 (no hit) or after kMaxAdvances advances (no hit reported: the speculative contact is the
// fallback). Only + − × ÷ and sqrt, in a fixed order: the same bits on every platform.
#include "time_of_impact.h"

#include <cmath>

#include "collide.h"

namespace lockstep::sim {

namespace {

constexpr int kMaxAdvances = 32;

}  // namespace

float time_of_impact(const ShapeDef& moving, Vec3 start, Vec3 end, Quat orientation,
                     const ShapeDef& fixed, const Transform& fixed_pose,
                     const ShapeLibrary& library, float target) {
  const Vec3 d = end - start;
  const float travel = length(d);
  if (!(travel > target)) return 1.0f;  // moves less than the tolerance: nothing to sweep
  float t = 0.0f;
  for (int i = 0; i < kMaxAdvances; ++i) {
    const Vec3 p = start + t * d;
    ManifoldPoint deepest;
    Vec3 normal{};
    if (!deepest_point(moving, Transform{p, orientation}, fixed, fixed_pose, library,
                       (1.0f - t) * travel + target, &deepest, &normal)) {
      return 1.0f;  // farther than the rest of the travel
    }
    const float s = deepest.separation;
    if (s <= target) return t > 0.0f ? t : 1.0f;  // touching from the start: the contacts' job
    t += (s - 0.5f * target) / travel;
    if (!(t < 1.0f)) return 1.0f;
  }
  return 1.0f;
}

}  // namespace lockstep::sim
