// Defaults and validation of world and body definitions.
#include <cmath>

#include "lockstep/sim/world.h"
#include "world_data.h"

namespace lockstep::sim {

WorldDef default_world_def() {
  return WorldDef{};
}

BodyDef default_body_def() {
  return BodyDef{};
}

namespace {

// NaN/inf first (non_finite), then the range (invalid_argument), so callers learn the real cause.
Error check_range(float value, float lo, float hi) {
  if (!std::isfinite(value)) return Error::non_finite;
  if (!(value >= lo && value <= hi)) return Error::invalid_argument;
  return Error::none;
}

Error check_capacity(uint32_t value, uint32_t hi) {
  return (value >= 1 && value <= hi) ? Error::none : Error::invalid_argument;
}

}  // namespace

Error validate_world_def(const WorldDef& def) {
  // Finiteness of every float first: a NaN anywhere is reported as such.
  const float floats[] = {def.dt_s,
                          def.gravity.x,
                          def.gravity.y,
                          def.gravity.z,
                          def.contact_hertz,
                          def.contact_damping_ratio,
                          def.linear_slop_m,
                          def.max_bias_velocity,
                          def.restitution_threshold,
                          def.contact_margin_m,
                          def.max_speculative_margin_m,
                          def.contact_reuse_distance_m,
                          def.contact_reuse_angle_rad,
                          def.max_angular_speed,
                          def.max_linear_speed,
                          def.max_input_linear_impulse,
                          def.max_input_angular_impulse,
                          def.max_input_linear_velocity,
                          def.max_input_angular_velocity,
                          def.sleep_speed_threshold_mps,
                          def.time_to_sleep_s};
  for (float f : floats) {
    if (!std::isfinite(f)) return Error::non_finite;
  }
  // dt in (0, 1]: a zero step would divide by zero in the bias terms.
  if (!(def.dt_s > 0.0f && def.dt_s <= 1.0f)) return Error::invalid_argument;
  Error e = Error::none;
  const float g = kMaxGravity;
  if ((e = check_range(def.gravity.x, -g, g)) != Error::none) return e;
  if ((e = check_range(def.gravity.y, -g, g)) != Error::none) return e;
  if ((e = check_range(def.gravity.z, -g, g)) != Error::none) return e;
  if (def.velocity_iterations < 1 || def.velocity_iterations > kMaxVelocityIterations) {
    return Error::invalid_argument;
  }
  if (def.relax_iterations > kMaxVelocityIterations) return Error::invalid_argument;
  if (def.substeps < 1 || def.substeps > kMaxSubsteps) return Error::invalid_argument;
  if ((e = check_range(def.contact_hertz, 0.0f, 1.0e4f)) != Error::none) return e;
  if ((e = check_range(def.contact_damping_ratio, 0.0f, 1.0e4f)) != Error::none) return e;
  if ((e = check_range(def.linear_slop_m, 0.0f, 1.0f)) != Error::none) return e;
  if ((e = check_range(def.max_bias_velocity, 0.0f, 1.0e3f)) != Error::none) return e;
  if ((e = check_range(def.restitution_threshold, 0.0f, 1.0e3f)) != Error::none) return e;
  if ((e = check_range(def.contact_margin_m, 0.0f, 1.0f)) != Error::none) return e;
  if ((e = check_range(def.max_speculative_margin_m, def.contact_margin_m, 100.0f)) !=
      Error::none) {
    return e;
  }
  if ((e = check_range(def.contact_reuse_distance_m, 0.0f, 1.0f)) != Error::none) return e;
  if ((e = check_range(def.contact_reuse_angle_rad, 0.0f, 0.5f)) != Error::none) return e;
  if ((e = check_range(def.max_angular_speed, 0.0f, 1.0e4f)) != Error::none) return e;
  if ((e = check_range(def.max_linear_speed, 0.0f, 1.0e5f)) != Error::none) return e;
  if (!(def.max_angular_speed > 0.0f) || !(def.max_linear_speed > 0.0f)) {
    return Error::invalid_argument;
  }
  if ((e = check_range(def.max_input_linear_impulse, 0.0f, 1.0e9f)) != Error::none) return e;
  if ((e = check_range(def.max_input_angular_impulse, 0.0f, 1.0e9f)) != Error::none) return e;
  if ((e = check_range(def.max_input_linear_velocity, 0.0f, 1.0e5f)) != Error::none) return e;
  if ((e = check_range(def.max_input_angular_velocity, 0.0f, 1.0e4f)) != Error::none) return e;
  if ((e = check_range(def.sleep_speed_threshold_mps, 0.0f, 1.0e3f)) != Error::none) return e;
  // > 0: a body must be at rest for at least one step (island.cpp caps the timer at this value).
  if ((e = check_range(def.time_to_sleep_s, 0.0f, kMaxTimeToSleep)) != Error::none) return e;
  if (!(def.time_to_sleep_s > 0.0f)) return Error::invalid_argument;
  if ((e = check_capacity(def.max_bodies, kMaxBodiesLimit)) != Error::none) return e;
  if ((e = check_capacity(def.max_contact_pairs, kMaxContactPairsLimit)) != Error::none) return e;
  if ((e = check_capacity(def.max_contact_points, kMaxContactPointsLimit)) != Error::none) return e;
  if ((e = check_capacity(def.max_candidate_pairs, kMaxCandidatePairsLimit)) != Error::none) {
    return e;
  }
  if ((e = check_capacity(def.max_events, kMaxEventsLimit)) != Error::none) return e;
  if ((e = check_capacity(def.max_inputs_per_tick, kMaxInputsLimit)) != Error::none) return e;
  return Error::none;
}

}  // namespace lockstep::sim
