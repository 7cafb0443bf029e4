// Commands that move an existing body (set_pose, set_velocity, apply_impulse, move_kinematic,
// respawn): checked when queued like every command, applied by the step's apply_commands in
// command_less order, after the spawns and destroys that come before them in that order. They
// reuse Command's pose and velocity fields (docs/gameplay.md, Commands), so their wire and snapshot
// encodings are the spawn's.
#include <cmath>

#include "island.h"
#include "world_data.h"

namespace lockstep::sim {

namespace {

bool within_coordinates(Vec3 p) {
  return std::fabs(p.x) <= kMaxCoordinate && std::fabs(p.y) <= kMaxCoordinate &&
         std::fabs(p.z) <= kMaxCoordinate;
}

bool speed_within(Vec3 v, float max) {
  return length_squared(v) <= max * max;
}

bool axes_within(Vec3 v, float max) {
  return std::fabs(v.x) <= max && std::fabs(v.y) <= max && std::fabs(v.z) <= max;
}

// Moves a body and wakes what it concerns (as World::set_transform does).
void place_body(WorldData& w, uint32_t slot, Vec3 position, Quat orientation) {
  if (w.bodies[slot].type == BodyType::dynamic) {
    wake_body(w, slot);
  } else {
    wake_contacts_of(w, slot);
  }
  w.bodies[slot].position = position;
  w.bodies[slot].orientation = normalize(orientation);
  refresh_body_derived(w, slot);
  if (w.bodies[slot].type != BodyType::dynamic) wake_overlapping(w, slot);
}

}  // namespace

const char* command_type_name(CommandType type) {
  switch (type) {
    case CommandType::spawn:
      return "spawn";
    case CommandType::destroy:
      return "destroy";
    case CommandType::add_score:
      return "add_score";
    case CommandType::set_pose:
      return "set_pose";
    case CommandType::set_velocity:
      return "set_velocity";
    case CommandType::apply_impulse:
      return "apply_impulse";
    case CommandType::move_kinematic:
      return "move_kinematic";
    case CommandType::respawn:
      return "respawn";
    case CommandType::set_state:
      return "set_state";
    case CommandType::add_state:
      return "add_state";
    case CommandType::emit_event:
      return "emit_event";
  }
  return "?";
}

bool is_body_command(CommandType type) {
  return type == CommandType::set_pose || type == CommandType::set_velocity ||
         type == CommandType::apply_impulse || type == CommandType::move_kinematic ||
         type == CommandType::respawn;
}

Error check_body_command_fields(const WorldDef& def, const Command& c) {
  if (c.body.is_null()) return Error::null_handle;
  if (!is_finite(c.position) || !is_finite(c.orientation) || !is_finite(c.linear_velocity) ||
      !is_finite(c.angular_velocity)) {
    return Error::non_finite;
  }
  const bool has_pose = c.type == CommandType::set_pose || c.type == CommandType::move_kinematic ||
                        c.type == CommandType::respawn;
  if (has_pose) {
    if (!within_coordinates(c.position)) return Error::invalid_argument;
    if (!(dot(c.orientation, c.orientation) >= 1.0e-6f)) return Error::invalid_argument;
  }
  if (c.type == CommandType::set_velocity || c.type == CommandType::respawn) {
    if (!speed_within(c.linear_velocity, def.max_linear_speed) ||
        !speed_within(c.angular_velocity, def.max_angular_speed)) {
      return Error::invalid_argument;
    }
  }
  if (c.type == CommandType::apply_impulse) {
    if (!axes_within(c.linear_velocity, def.max_input_linear_impulse) ||
        !axes_within(c.angular_velocity, def.max_input_angular_impulse)) {
      return Error::input_out_of_range;
    }
  }
  return Error::none;
}

Error check_body_command_target(const Command& c, BodyType type) {
  switch (c.type) {
    case CommandType::apply_impulse:
      return type == BodyType::dynamic ? Error::none : Error::wrong_body_type;
    case CommandType::move_kinematic:
      return type == BodyType::kinematic ? Error::none : Error::wrong_body_type;
    default:
      return type == BodyType::static_body ? Error::wrong_body_type : Error::none;
  }
}

Error apply_body_command(WorldData& w, const Command& c) {
  uint32_t slot = 0;
  Error e = resolve_body(w, c.body, &slot);
  if (e != Error::none) return e;  // e.g. destroyed by an earlier command of the tick
  e = check_body_command_target(c, w.bodies[slot].type);
  if (e != Error::none) return e;
  BodySolverState& s = w.solver_bodies[slot];
  switch (c.type) {
    case CommandType::set_pose:
      place_body(w, slot, c.position, c.orientation);
      break;
    case CommandType::set_velocity:
      s.linear_velocity = c.linear_velocity;
      s.angular_velocity = c.angular_velocity;
      wake_body(w, slot);
      break;
    case CommandType::apply_impulse: {
      // linear_velocity holds the linear impulse (N·s, at the centre of mass), angular_velocity
      // the angular impulse (N·m·s).
      const Vec3 v = s.linear_velocity + s.inv_mass * c.linear_velocity;
      const Vec3 omega = s.angular_velocity + s.inv_inertia_world * c.angular_velocity;
      if (!is_finite(v) || !is_finite(omega)) return Error::invalid_argument;
      s.linear_velocity = v;
      s.angular_velocity = omega;
      wake_body(w, slot);
      break;
    }
    case CommandType::move_kinematic: {
      // The velocities that carry the body to the target pose over this step. The rotation is the
      // shortest arc; ω = 2·(q_target·q⁻¹).xyz / dt gives its axis exactly and its angle θ as
      // twice the sine of θ/2 (no trigonometry in the sim): exact for small turns per step.
      const BodyRecord& r = w.bodies[slot];
      const float inv_dt = 1.0f / w.def.dt_s;
      const Vec3 v = (c.position - r.position) * inv_dt;
      Quat dq = normalize(c.orientation) * conjugate(r.orientation);
      if (dq.w < 0.0f) dq = Quat{-dq.x, -dq.y, -dq.z, -dq.w};
      const Vec3 omega = Vec3{dq.x, dq.y, dq.z} * (2.0f * inv_dt);
      if (!speed_within(v, w.def.max_linear_speed) ||
          !speed_within(omega, w.def.max_angular_speed)) {
        return Error::invalid_argument;
      }
      s.linear_velocity = v;
      s.angular_velocity = omega;
      wake_body(w, slot);
      break;
    }
    case CommandType::respawn:
      place_body(w, slot, c.position, c.orientation);
      s.linear_velocity = c.linear_velocity;
      s.angular_velocity = c.angular_velocity;
      if (w.bodies[slot].type == BodyType::dynamic) wake_body(w, slot);
      w.bodies[slot].sleep_timer_s = 0.0f;
      break;
    default:
      return Error::invalid_argument;
  }
  w.hash_dirty = true;
  return Error::none;
}

}  // namespace lockstep::sim
